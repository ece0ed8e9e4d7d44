//! What every front end of multi-party PSI (de Jong's thesis: Bay et al.,
//! Miyaji-Nishida, Hazay-Venkitasubramaniam) does the same way: find the participant in
//! the parties file and check the role it claims, open its links as the parties file
//! and the link settings say, and write RESULT.json. The CLI (`privset mpsi`) and the
//! Python package both call these, so a participant behaves, fails and reports alike
//! whichever front end runs it.

use std::path::PathBuf;
use std::time::Duration;

use privset_net::{Cancel, TlsFiles};
use privset_protocols::mpsi::{self, MpsiOutput, MpsiProtocol, Role};

use crate::drive::Metered;
use crate::fail::Failure;
use crate::links::{PartiesEndpoint, PartiesSpec};
use crate::parties_file::Participants;

/// RESULT.json of mpsi.
#[derive(serde::Serialize, Debug, Clone)]
pub struct MpsiReport {
    pub protocol: &'static str,
    pub mpsi_protocol: &'static str,
    /// The threshold scheme: "elgamal" or "paillier".
    pub scheme: &'static str,
    pub role: &'static str,
    pub name: String,
    pub participants: usize,
    pub items: usize,
    /// For the participants that learn the intersection.
    pub intersection_size: Option<usize>,
    pub rows: Option<usize>,
    pub rows_file: Option<PathBuf>,
    #[serde(flatten)]
    pub run: Metered,
}

impl MpsiReport {
    /// The report of participant `name` (of `participants`, holding `items`) that
    /// finished with `output`; `rows_file` is where its intersection was written, if
    /// anywhere.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        protocol: MpsiProtocol,
        scheme: &'static str,
        name: &str,
        participants: usize,
        items: usize,
        output: &MpsiOutput,
        rows_file: Option<PathBuf>,
        run: Metered,
    ) -> Self {
        let size = output.intersection.as_ref().map(Vec::len);
        let rows = rows_file.as_ref().and(size);
        MpsiReport {
            protocol: "mpsi",
            mpsi_protocol: protocol.name(),
            scheme,
            role: output.role.name(),
            name: name.to_string(),
            participants,
            items,
            intersection_size: size,
            rows,
            rows_file: rows.and(rows_file),
            run,
        }
    }
}

/// The index of `name` in `roster`, checked against the role it claims: the role
/// follows from the position (the first participant is the coordinator), so a
/// mismatch is a mistake in the parties file or the command, caught before any link.
pub fn participant(
    roster: &Participants,
    name: &str,
    protocol: MpsiProtocol,
    claimed: Role,
) -> Result<u8, Failure> {
    let me = roster.index_of(name)?;
    let role = protocol.role_of(me);
    if role != claimed {
        return Err(Failure::config(format!(
            "{name} is participant {} of the parties file, so its role in {} is {} (the first \
             participant is the {}), not {}",
            me + 1,
            protocol.name(),
            role.name(),
            protocol.role_of(mpsi::HUB).name(),
            claimed.name()
        )));
    }
    Ok(me)
}

/// How a participant reaches its peers, as a front end's settings say (the CLI's
/// flags, Python's keyword arguments).
#[derive(Clone, Debug, Default)]
pub struct LinkSettings {
    /// One shared exchange directory instead of TCP.
    pub exchange_dir: Option<PathBuf>,
    /// Listen here instead of at this participant's address in the parties file.
    pub listen: Option<String>,
    /// Exchange directory: where the private resume seed is kept.
    pub state_dir: Option<PathBuf>,
    /// The default state directory is a `.privset-state` folder next to this file (the
    /// CLI's --output; empty: the working directory).
    pub state_near: PathBuf,
    pub poll_interval: Duration,
    /// TLS files; the CA and the certificate default to the parties file's.
    pub tls_ca: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub timeout: Duration,
    pub server_name: Option<String>,
    /// The label every participant of this session shares.
    pub session: String,
}

impl LinkSettings {
    /// The TLS files of participant `me`: the CA and certificate given, else the parties
    /// file's; the key as given. Which combination is acceptable is the front end's to
    /// say, in its own words.
    pub fn tls_paths(
        &self,
        roster: &Participants,
        me: u8,
    ) -> (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>) {
        (
            self.tls_ca.clone().or_else(|| roster.ca.clone()),
            self.tls_cert
                .clone()
                .or_else(|| roster.list[usize::from(me)].certificate.clone()),
            self.tls_key.clone(),
        )
    }

    /// The links of participant `me` of a `protocol` session among `roster`, with
    /// `tls` (checked by the front end; ignored over an exchange directory).
    pub fn spec(
        &self,
        protocol: MpsiProtocol,
        roster: &Participants,
        me: u8,
        tls: Option<TlsFiles>,
        cancel: Cancel,
    ) -> Result<PartiesSpec, Failure> {
        let endpoint = PartiesEndpoint::from_flags(
            self.exchange_dir.as_deref(),
            self.listen.as_deref(),
            || roster.addresses(),
            self.state_dir.as_deref(),
            &self.state_near,
            self.poll_interval,
        )?;
        let tls = tls.filter(|_| self.exchange_dir.is_none());
        // Over an exchange directory the private key, when given, signs the link key
        // file (docs/wire.md): then every participant's certificate is needed too.
        let dir_signing_key = self.exchange_dir.as_ref().and(self.tls_key.clone());
        let identities = match (&tls, &dir_signing_key) {
            (None, None) => None,
            _ => Some(roster.identities()?),
        };
        Ok(PartiesSpec {
            endpoint,
            parties: roster.list.len(),
            me,
            topology: protocol.topology(),
            session: format!("mpsi/{}/{}", protocol.name(), self.session),
            tls,
            identities,
            dir_signing_key,
            timeout: self.timeout,
            server_name: self.server_name.clone(),
            cancel,
        })
    }
}

/// Refuses a dealer with a set and a set holder without one, naming `what` the front
/// end calls the set ("--input and --id-column", "ids").
pub fn check_holds_set(role: Role, has_set: bool, what: &str) -> Result<(), Failure> {
    match (role, has_set) {
        (Role::Dealer, true) => Err(Failure::config(format!(
            "the dealer holds no set: leave out {what}"
        ))),
        (Role::Dealer, false) | (_, true) => Ok(()),
        (_, false) => Err(Failure::config(format!("the {} needs {what}", role.name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parties_file::Participant;

    fn roster(tcp: bool) -> Participants {
        Participants {
            ca: Some("ca.pem".into()),
            list: ["hub", "b", "c"]
                .into_iter()
                .enumerate()
                .map(|(i, name)| Participant {
                    name: name.into(),
                    address: tcp.then(|| format!("127.0.0.1:{}", 7100 + i)),
                    certificate: Some(format!("{name}.pem").into()),
                })
                .collect(),
        }
    }

    #[test]
    fn the_role_follows_the_place_in_the_parties_file() {
        let r = roster(true);
        assert_eq!(
            participant(&r, "hub", MpsiProtocol::Bay, Role::Server).unwrap(),
            0
        );
        assert_eq!(
            participant(&r, "c", MpsiProtocol::MiyajiNishida, Role::Party).unwrap(),
            2
        );
        let e = participant(&r, "b", MpsiProtocol::Hazay, Role::Server).unwrap_err();
        assert!(
            e.message.contains("its role in hazay is client"),
            "{}",
            e.message
        );
        assert!(participant(&r, "z", MpsiProtocol::Bay, Role::Client).is_err());
        assert!(check_holds_set(Role::Dealer, true, "ids").is_err());
        assert!(check_holds_set(Role::Client, false, "ids").is_err());
        assert!(check_holds_set(Role::Dealer, false, "ids").is_ok());
    }

    #[test]
    fn links_come_from_the_parties_file() {
        let r = roster(true);
        let settings = LinkSettings {
            tls_key: Some("b.key".into()),
            session: "s1".into(),
            ..LinkSettings::default()
        };
        // The CA and the certificate default to the parties file's.
        let (ca, cert, key) = settings.tls_paths(&r, 1);
        assert_eq!(
            (ca, cert, key),
            (
                Some("ca.pem".into()),
                Some("b.pem".into()),
                Some("b.key".into())
            )
        );
        let spec = settings
            .spec(MpsiProtocol::Bay, &r, 1, None, Cancel::default())
            .unwrap();
        assert_eq!((spec.parties, spec.me, spec.peers()), (3, 1, vec![0]));
        assert_eq!(spec.session, "mpsi/bay/s1");
        assert!(
            matches!(spec.endpoint, PartiesEndpoint::Tcp { ref addresses, .. } if addresses.len() == 3)
        );
        // An exchange directory needs no address and carries no TLS; without a key its
        // link key files are unsigned.
        let dir = LinkSettings {
            exchange_dir: Some("x".into()),
            tls_key: None,
            ..settings.clone()
        };
        let files = TlsFiles {
            ca: "ca.pem".into(),
            cert: "b.pem".into(),
            key: "b.key".into(),
        };
        let spec = dir
            .spec(
                MpsiProtocol::MiyajiNishida,
                &roster(false),
                1,
                Some(files),
                Cancel::default(),
            )
            .unwrap();
        assert!(spec.tls.is_none() && spec.peers() == vec![0, 2]);
        assert!(spec.dir_signing_key.is_none() && spec.identities.is_none());
        // With a key, it signs with it and needs every participant's certificate (the
        // roster's files do not exist here: refused, naming the file).
        let signed = LinkSettings {
            exchange_dir: Some("x".into()),
            ..settings
        };
        let e = signed
            .spec(
                MpsiProtocol::Bay,
                &roster(false),
                1,
                None,
                Cancel::default(),
            )
            .unwrap_err();
        assert!(e.message.contains("hub.pem"), "{}", e.message);
        // TCP needs every participant's address.
        let tcp = LinkSettings::default();
        assert!(
            tcp.spec(
                MpsiProtocol::Bay,
                &roster(false),
                1,
                None,
                Cancel::default()
            )
            .is_err()
        );
    }
}
