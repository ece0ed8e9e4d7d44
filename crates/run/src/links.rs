//! How a participant of an n-party session reaches its peers: TCP links to every
//! participant it talks to (mutual TLS unless the front end was told otherwise), or one
//! shared exchange directory with a private resume seed. The n-party counterpart of
//! [`crate::link::LinkSpec`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use privset_net::dir::{self, DirOptions};
use privset_net::sealed_dir::LinkSigner;
use privset_net::{Cancel, ConnectOptions, Identity, LinkPlan, LinkSet, Security, TlsFiles};
use privset_protocols::engine::Topology;
use privset_protocols::party::PartyId;

use crate::fail::Failure;
use crate::link::{fresh_seed, join_exchange_dir};

/// Where the participants are.
#[derive(Clone, Debug)]
pub enum PartiesEndpoint {
    /// Every participant's HOST:PORT, by index; this participant listens on its own
    /// (or on `listen`) when it accepts any connection.
    Tcp {
        addresses: Vec<String>,
        listen: Option<String>,
    },
    /// One shared directory for the whole session.
    ExchangeDir {
        dir: PathBuf,
        /// Where this participant keeps its resume seed; never inside the shared one.
        state_dir: PathBuf,
        /// Pause between looks for a peer's next file.
        poll_interval: Duration,
    },
}

impl PartiesEndpoint {
    /// The endpoint a front end's flags describe: one shared exchange directory (the
    /// private state directory defaulting to a `.privset-state` folder next to
    /// `output`), or TCP links to `addresses` (asked for only then: an exchange
    /// directory needs none).
    pub fn from_flags(
        exchange_dir: Option<&Path>,
        listen: Option<&str>,
        addresses: impl FnOnce() -> Result<Vec<String>, Failure>,
        state_dir: Option<&Path>,
        output: &Path,
        poll_interval: Duration,
    ) -> Result<Self, Failure> {
        Ok(match exchange_dir {
            Some(dir) => {
                if listen.is_some() {
                    return Err(Failure::config(
                        "--listen is for TCP links, not --exchange-dir",
                    ));
                }
                PartiesEndpoint::ExchangeDir {
                    dir: dir.to_path_buf(),
                    state_dir: state_dir.map(Path::to_path_buf).unwrap_or_else(|| {
                        crate::link::default_state_dir(output.parent().unwrap_or(Path::new("")))
                    }),
                    poll_interval,
                }
            }
            None => PartiesEndpoint::Tcp {
                addresses: addresses()?,
                listen: listen.map(str::to_string),
            },
        })
    }
}

/// Everything needed to open one participant's links.
#[derive(Clone, Debug)]
pub struct PartiesSpec {
    pub endpoint: PartiesEndpoint,
    /// Number of participants.
    pub parties: usize,
    /// This participant's index.
    pub me: PartyId,
    pub topology: Topology,
    /// Shared by every participant (keeps concurrent sessions at the same addresses
    /// apart).
    pub session: String,
    /// Mutual TLS files for TCP links; `None` = plaintext (asked for explicitly).
    pub tls: Option<TlsFiles>,
    /// Every participant's name and certificate: with mutual TLS, each link is
    /// accepted only from the certificate listed for that participant; over an exchange
    /// directory with [`PartiesSpec::dir_signing_key`], each peer's link key file must
    /// be signed by it. `None`: any certificate the CA vouches for (the toy sum's demo
    /// only), or unsigned link keys.
    pub identities: Option<Vec<Identity>>,
    /// Exchange directory: this participant's private key (PEM), to sign its link key
    /// file with (`None`: unsigned, and peers' unchecked).
    pub dir_signing_key: Option<PathBuf>,
    /// How long to wait for the peers (connections, or any one message).
    pub timeout: Duration,
    /// Name to verify every listening peer's certificate against (default: its host).
    pub server_name: Option<String>,
    pub cancel: Cancel,
}

/// The open links of one participant.
pub struct PartyLinks {
    pub links: LinkSet,
    /// The `transport` field of RESULT.json.
    pub kind: &'static str,
    /// Exchange directory runs: the file holding this participant's seed, to delete on
    /// success.
    pub seed_file: Option<PathBuf>,
    pub seed: [u8; 32],
    /// What a front end should tell the user about how the seed was chosen.
    pub notice: Option<String>,
}

impl PartiesSpec {
    /// The participants this one talks to, in index order.
    pub fn peers(&self) -> Vec<PartyId> {
        self.topology.peers_of(self.parties, self.me)
    }

    /// Opens a link to every peer.
    pub fn open(&self) -> Result<PartyLinks, Failure> {
        if !(2..=255).contains(&self.parties) || usize::from(self.me) >= self.parties {
            return Err(Failure::config(format!(
                "a session has 2 to 255 participants and this one must be among them (got {}, index {})",
                self.parties, self.me
            )));
        }
        match &self.endpoint {
            PartiesEndpoint::Tcp { addresses, listen } => {
                if addresses.len() != self.parties {
                    return Err(Failure::config(format!(
                        "{} addresses for {} participants: give one per participant, in index order",
                        addresses.len(),
                        self.parties
                    )));
                }
                let (security, kind) = match &self.tls {
                    Some(files) => (Security::MutualTls(files.clone()), "tcp+mtls"),
                    None => (Security::Plaintext, "tcp-plaintext"),
                };
                let plan = LinkPlan {
                    addresses: addresses.clone(),
                    me: self.me,
                    topology: self.topology,
                    session: self.session.clone(),
                    security,
                    listen: listen.clone(),
                    identities: self.identities.clone(),
                };
                let opts = ConnectOptions {
                    connect_timeout: self.timeout,
                    handshake_timeout: self.timeout,
                    io_timeout: self.timeout,
                    server_name: self.server_name.clone(),
                    cancel: self.cancel.clone(),
                };
                Ok(PartyLinks {
                    links: plan.open(&opts)?,
                    kind,
                    seed_file: None,
                    seed: fresh_seed(),
                    notice: None,
                })
            }
            PartiesEndpoint::ExchangeDir {
                dir,
                state_dir,
                poll_interval,
            } => {
                let role = dir::participant_role(self.me);
                let opts = DirOptions {
                    poll_interval: *poll_interval,
                    timeout: self.timeout,
                    cancel: self.cancel.clone(),
                };
                let run = join_exchange_dir(state_dir, dir, &role, opts)?;
                // With this participant's key, its link key file is signed, and every
                // peer's must be signed by the certificate the roster lists for it.
                let signer = self
                    .dir_signing_key
                    .as_deref()
                    .map(LinkSigner::from_key_file)
                    .transpose()?;
                let certificates: Option<Vec<Vec<u8>>> = match (&signer, &self.identities) {
                    (Some(_), Some(ids)) => {
                        Some(ids.iter().map(|id| id.certificate.clone()).collect())
                    }
                    _ => None,
                };
                let keys = run.place.publish_key(&run.seed, signer.as_ref())?;
                Ok(PartyLinks {
                    links: run.place.seal_links(
                        keys,
                        self.me,
                        &self.peers(),
                        certificates.as_deref(),
                    ),
                    kind: "exchange-dir",
                    notice: run.origin.notice(dir),
                    seed_file: Some(run.seed_file),
                    seed: run.seed,
                })
            }
        }
    }
}
