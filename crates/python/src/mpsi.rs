//! A multi-party PSI participant (de Jong's thesis: Bay et al., Miyaji-Nishida,
//! Hazay-Venkitasubramaniam) for Python: the same `mpsi::new_party` state machine the
//! CLI's `privset mpsi` drives, placed in the session by the same parties file, over the
//! same links (`privset_run::mpsi`), with the same RESULT.json, and the intersection
//! with the caller's own rows pointed at.

use std::path::PathBuf;
use std::sync::Arc;

use privset_net::{Cancel, TlsFiles};
use privset_protocols::mpsi::{self, MpsiConfig, MpsiKey, MpsiOutput, MpsiProtocol, Role};
use privset_protocols::{OutputParty, Party};
use privset_run::mpsi::{self as mpsi_run, LinkSettings, MpsiReport};
use privset_run::parties_file::Participants;
use privset_run::{Failure, Metered};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::errors::{self, IntoPy};
use crate::input::{Input, InputData};
use crate::link;
use crate::play::{self, Playable};
use privset_protocols::agreed::AgreedSettings;

/// One participant's protocol, role, set and settings, validated.
#[pyclass(frozen, module = "privset._native")]
pub struct MpsiParty {
    spec: Arc<Spec>,
}

struct Spec {
    protocol: MpsiProtocol,
    role: Role,
    /// `None` for the dealer, who holds no set.
    input: Option<Arc<InputData>>,
    max_items: u64,
    max_peer_items: u64,
    /// The threshold key: ElGamal agreed in the session, or a dealt Paillier key.
    key: MpsiKey,
}

impl Spec {
    /// The smallest session this participant fits and its place there: three
    /// participants, or as many as a dealt key's holders (and the share's own index).
    fn smallest_session(&self, me: u8) -> (usize, u8) {
        match self.key.holders() {
            None => (3, me),
            // The coordinator stays participant 0 (and is refused if given a share); a
            // holder takes its share's place (or place 1, and is refused without one).
            Some(holders) => (
                holders as usize + 1,
                match me {
                    mpsi::HUB => mpsi::HUB,
                    _ => self.key.holder_index().map_or(1, |i| i as u8),
                },
            ),
        }
    }

    /// This participant as participant `me` of a session among `names`.
    fn config(&self, names: Vec<String>, me: u8) -> MpsiConfig {
        MpsiConfig {
            protocol: self.protocol,
            names,
            me,
            items: self
                .input
                .as_ref()
                .map(|i| i.dataset.ids.clone())
                .unwrap_or_default(),
            max_items: self.max_items,
            max_peer_items: self.max_peer_items,
            key: self.key.clone(),
        }
    }

    fn items(&self) -> usize {
        self.input.as_ref().map_or(0, |i| i.dataset.ids.len())
    }
}

/// The participant of one run: its place in the session.
struct Seat {
    spec: Arc<Spec>,
    config: MpsiConfig,
    /// The parties file's roster digest, agreed in the hellos (sessions among separate
    /// processes; in one process every participant shares one roster).
    roster: Option<String>,
}

impl Seat {
    /// `spec` as participant `me` among `names`, checked as the CLI checks it before
    /// opening any link.
    fn new(spec: Arc<Spec>, names: Vec<String>, me: u8) -> Result<Self, Failure> {
        let config = spec.config(names, me);
        mpsi::new_party(config.clone(), [0; 32])?;
        Ok(Seat {
            spec,
            config,
            roster: None,
        })
    }
}

impl Playable for Seat {
    type Machine = Box<dyn OutputParty<MpsiOutput>>;
    type Outcome = (MpsiReport, MpsiOutput);

    fn label(&self) -> String {
        self.config.names[usize::from(self.config.me)].clone()
    }

    fn machine(&self, seed: [u8; 32]) -> Result<Self::Machine, Failure> {
        let mut party = mpsi::new_party(self.config.clone(), seed)?;
        let stated = match &self.spec.input {
            Some(input) => input.agreed.clone(),
            None => AgreedSettings::no_input(),
        };
        party.agree(match &self.roster {
            Some(roster) => stated.with("roster", roster.clone()),
            None => stated,
        })?;
        Ok(party)
    }

    fn party(machine: &mut Self::Machine) -> &mut dyn Party {
        machine.as_mut()
    }

    fn outcome(&self, machine: Self::Machine, run: Metered) -> Result<Self::Outcome, Failure> {
        let output = machine.into_output().ok_or_else(play::no_output)?;
        let report = MpsiReport::new(
            self.spec.protocol,
            self.config.key.scheme_name(),
            &self.label(),
            self.config.names.len(),
            self.spec.items(),
            &output,
            None,
            run,
        );
        Ok((report, output))
    }
}

/// RESULT.json and the intersection as `(own_row | None, identifier bytes)` (`None`
/// for the participants that learn none).
type PyOutcome<'py> = (String, Option<Bound<'py, PyList>>);

fn to_python<'py>(
    py: Python<'py>,
    spec: &Spec,
    (mut report, output): (MpsiReport, MpsiOutput),
) -> PyResult<PyOutcome<'py>> {
    let rows = match output.intersection {
        None => None,
        Some(items) => {
            let list = PyList::empty(py);
            for item in &items {
                let row = spec.input.as_ref().and_then(|i| i.row_of(item));
                list.append((row, PyBytes::new(py, item)))?;
            }
            // The rows are handed over in memory: their count, no file.
            report.rows = Some(items.len());
            Some(list)
        }
    };
    let json = serde_json::to_string(&report)
        .map_err(|e| errors::to_py(py, Failure::other(e.to_string())))?;
    Ok((json, rows))
}

/// How to reach the other participants, as the Python layer passes it.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct SessionArgs {
    /// The parties file (`parties.toml`) and this participant's name in it.
    parties: PathBuf,
    name: String,
    listen: Option<String>,
    exchange_dir: Option<PathBuf>,
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    insecure_no_tls: bool,
    server_name: Option<String>,
    session: String,
    timeout: f64,
    poll_interval: f64,
    state_dir: Option<PathBuf>,
}

impl SessionArgs {
    fn settings(&self, py: Python<'_>) -> PyResult<LinkSettings> {
        Ok(LinkSettings {
            exchange_dir: self.exchange_dir.clone(),
            listen: self.listen.clone(),
            state_dir: self.state_dir.clone(),
            // As for two-party runs: `./.privset-state` in the working directory.
            state_near: PathBuf::new(),
            poll_interval: link::seconds(py, "poll_interval", self.poll_interval)?,
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            timeout: link::seconds(py, "timeout", self.timeout)?,
            server_name: self.server_name.clone(),
            session: self.session.clone(),
        })
    }

    /// The TLS files of participant `me`, the CA and certificate defaulting to the
    /// parties file's, with errors worded for Python callers.
    fn tls(
        &self,
        py: Python<'_>,
        settings: &LinkSettings,
        roster: &Participants,
        me: u8,
    ) -> PyResult<Option<TlsFiles>> {
        let given = self.tls_key.is_some() || self.tls_ca.is_some() || self.tls_cert.is_some();
        if self.exchange_dir.is_some() {
            if given || self.insecure_no_tls {
                return Err(errors::config(
                    py,
                    "tls= / tls_key= and insecure_no_tls= are for TCP links; an exchange directory has no TLS",
                ));
            }
            return Ok(None);
        }
        if self.insecure_no_tls {
            if given {
                return Err(errors::config(
                    py,
                    "insecure_no_tls=True cannot be combined with tls= or tls_key=",
                ));
            }
            return Ok(None);
        }
        match settings.tls_paths(roster, me) {
            (Some(ca), Some(cert), Some(key)) => Ok(Some(TlsFiles { ca, cert, key })),
            (ca, cert, _) => Err(errors::config(
                py,
                format!(
                    "TCP links use mutual TLS: pass tls_key= (this participant's private key{}{}), or \
                     tls=privset.TlsFiles(ca, cert, key), or insecure_no_tls=True on a trusted link",
                    if ca.is_none() {
                        "; the parties file names no ca"
                    } else {
                        ""
                    },
                    if cert.is_none() {
                        "; it names no certificate for this participant"
                    } else {
                        ""
                    },
                ),
            )),
        }
    }
}

fn protocol_named(py: Python<'_>, name: &str) -> PyResult<MpsiProtocol> {
    errors::named(
        py,
        "protocol",
        name,
        MpsiProtocol::from_name(name),
        "bay, miyaji-nishida, hazay",
    )
}

#[pymethods]
impl MpsiParty {
    /// Validates the settings and `input` (None for the dealer) for `role` in
    /// `protocol` ("bay", "miyaji-nishida", "hazay"), before anything is sent.
    #[new]
    #[pyo3(signature = (protocol, role, input, *, max_items, max_peer_items, paillier_key=None))]
    fn new(
        py: Python<'_>,
        protocol: &str,
        role: &str,
        input: Option<&Input>,
        max_items: &Bound<'_, PyAny>,
        max_peer_items: &Bound<'_, PyAny>,
        paillier_key: Option<PathBuf>,
    ) -> PyResult<Self> {
        let protocol = protocol_named(py, protocol)?;
        let max_items = errors::u64_arg(py, "max_items", max_items)?;
        let max_peer_items = errors::u64_arg(py, "max_peer_items", max_peer_items)?;
        let (hub, holder) = (protocol.role_of(mpsi::HUB), protocol.role_of(1));
        let (role, me) = match role {
            r if r == hub.name() => (hub, mpsi::HUB),
            r if r == holder.name() => (holder, 1),
            other => {
                return Err(errors::config(
                    py,
                    format!(
                        "the roles of {} are {} and {}, not {other:?}",
                        protocol.name(),
                        hub.name(),
                        holder.name()
                    ),
                ));
            }
        };
        mpsi_run::check_holds_set(role, input.is_some(), "ids").py_err(py)?;
        let key = match paillier_key {
            None => MpsiKey::Joint,
            Some(path) => privset_run::mpsi_keys::read_key(&path).py_err(py)?,
        };
        let spec = Arc::new(Spec {
            protocol,
            role,
            input: input.map(|i| i.data.clone()),
            max_items,
            max_peer_items,
            key,
        });
        // The settings, key and set, checked in the smallest session that has this role
        // (without the GIL: the check copies and deduplicates the set).
        let (count, me) = spec.smallest_session(me);
        let names = mpsi::default_names(protocol, count);
        let check = spec.clone();
        py.detach(move || Seat::new(check, names, me).map(drop))
            .py_err(py)?;
        Ok(Self { spec })
    }

    #[getter]
    fn role(&self) -> &'static str {
        self.spec.role.name()
    }

    #[getter]
    fn protocol(&self) -> &'static str {
        self.spec.protocol.name()
    }

    #[getter]
    fn scheme(&self) -> &'static str {
        self.spec.key.scheme_name()
    }

    /// The trusted dealer (`privset mpsi-deal`): a Paillier key for `holders` (in
    /// session order) written to `out` as public.key and NAME.key each; returns
    /// `(public file, [holder files], fingerprint)`.
    #[staticmethod]
    fn deal(
        py: Python<'_>,
        holders: Vec<String>,
        out: PathBuf,
        modulus_bits: u32,
    ) -> PyResult<(PathBuf, Vec<PathBuf>, String)> {
        let dealt = py
            .detach(move || privset_run::mpsi_keys::deal(&holders, modulus_bits, &out))
            .py_err(py)?;
        Ok((
            dealt.public_file,
            dealt.holder_files.into_iter().map(|(_, p)| p).collect(),
            dealt.fingerprint,
        ))
    }

    /// Runs as the participant `link["name"]` of the parties file `link["parties"]`;
    /// returns `(RESULT.json, intersection rows or None)`.
    #[pyo3(signature = (link, prices, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        link: SessionArgs,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<PyOutcome<'py>> {
        let prices = link::prices(py, prices)?;
        let settings = link.settings(py)?;
        let roster = Participants::read(&link.parties).py_err(py)?;
        let me = mpsi_run::participant(&roster, &link.name, self.spec.protocol, self.spec.role)
            .py_err(py)?;
        let (spec, names) = (self.spec.clone(), roster.names());
        let digest = roster.digest().py_err(py)?;
        let mut seat = py.detach(move || Seat::new(spec, names, me)).py_err(py)?;
        seat.roster = Some(digest);
        let tls = link.tls(py, &settings, &roster, me)?;
        let spec = settings
            .spec(self.spec.protocol, &roster, me, tls, Cancel::new())
            .py_err(py)?;
        let outcome = play::remote_session(py, Arc::new(seat), spec, prices, progress.as_ref())?;
        to_python(py, &self.spec, outcome)
    }

    /// Runs every participant of a session in this process (`parties[i]` is
    /// participant `i`, named `names[i]` or by its role), over in-memory links; returns
    /// each one's `(RESULT.json, rows)` in order.
    #[staticmethod]
    #[pyo3(signature = (parties, names, timeout, prices, progress=None))]
    fn run_session<'py>(
        py: Python<'py>,
        parties: Vec<PyRef<'py, MpsiParty>>,
        names: Option<Vec<String>>,
        timeout: f64,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<PyOutcome<'py>>> {
        let Some(first) = parties.first() else {
            return Err(errors::config(py, "a session needs participants"));
        };
        let protocol = first.spec.protocol;
        let names = names.unwrap_or_else(|| mpsi::default_names(protocol, parties.len()));
        if names.len() != parties.len() {
            return Err(errors::config(
                py,
                format!("{} names for {} participants", names.len(), parties.len()),
            ));
        }
        let mut seats = Vec::with_capacity(parties.len());
        for (i, party) in parties.iter().enumerate() {
            let want = protocol.role_of(i as u8);
            if party.spec.protocol != protocol || party.spec.role != want {
                return Err(errors::config(
                    py,
                    format!(
                        "participant {} of a {} session is the {} (the first is the {}, every other a {}), not a {} of {}",
                        i + 1,
                        protocol.name(),
                        want.name(),
                        protocol.role_of(mpsi::HUB).name(),
                        protocol.role_of(1).name(),
                        party.spec.role.name(),
                        party.spec.protocol.name()
                    ),
                ));
            }
            let seat = Seat::new(party.spec.clone(), names.clone(), i as u8).py_err(py)?;
            seats.push(Arc::new(seat));
        }
        let outcomes = play::local_session(
            py,
            seats,
            protocol.topology(),
            timeout,
            prices,
            progress.as_ref(),
        )?;
        parties
            .iter()
            .zip(outcomes)
            .map(|(party, outcome)| to_python(py, &party.spec, outcome))
            .collect()
    }
}
