//! Authorized PSI (Falzon-Markatou, "Re-visiting Authorized PSI") for Python: the judge's keys, the client's signature set,
//! and the four parties (judge and client of Authorize, client and server of
//! Intersect) as one native class driving the same `privset_protocols::apsi` state
//! machines, key files, signature files, policies and reports as `privset judge` and
//! `privset apsi` (`privset_run::apsi`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use privset_crypto::bls::{PublicKey, SecretKey};
use privset_crypto::rng::SessionRng;
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::apsi::authorize::{self, ClientConfig, JudgeConfig};
use privset_protocols::apsi::intersect::{self, ServerConfig};
use privset_protocols::apsi::signatures::{SignatureSet, SignedItem};
use privset_protocols::apsi::{
    self as protocol, AllowList, Mode, PartialFraction, Policy, validate_client_id, validate_items,
};
use privset_protocols::{Engine, Party};
use privset_run::apsi::{self as files, JudgeService, PolicySpec, ServerService};
use privset_run::{Failure, Metered, Service};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3::{PyTraverseError, PyVisit};

use crate::errors::{self, IntoPy};
use crate::input::{Input, InputData};
use crate::link::{self, LinkArgs};
use crate::play::{self, Paired, Playable};
use crate::serve::{self, ServeArgs};

/// The judge's BLS12-381 signing key (the CLI's `judge.key` file).
#[pyclass(frozen, module = "privset._native")]
pub struct JudgeKey {
    key: Arc<SecretKey>,
}

#[pymethods]
impl JudgeKey {
    /// A fresh key from the OS CSPRNG.
    #[staticmethod]
    fn generate() -> Self {
        Self {
            key: Arc::new(SecretKey::generate(&mut SessionRng::from_os())),
        }
    }

    /// Reads a key written by `save` or `privset judge keygen`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let key = files::read_secret_key(&path).py_err(py)?;
        Ok(Self { key: Arc::new(key) })
    }

    /// Writes the secret key (mode 0600) and, if `public` is given, the public key, in
    /// the CLI's formats.
    #[pyo3(signature = (path, public=None))]
    fn save(&self, py: Python<'_>, path: PathBuf, public: Option<PathBuf>) -> PyResult<()> {
        files::write_secret_key(&path, &self.key).py_err(py)?;
        if let Some(public) = public {
            files::write_public_key(&public, &self.key.public_key()).py_err(py)?;
        }
        Ok(())
    }

    /// The public key to give clients' and servers' operators.
    #[getter]
    fn public_key(&self) -> JudgePublicKey {
        JudgePublicKey {
            key: self.key.public_key(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "JudgeKey(<secret>, fingerprint={:?})",
            self.public_key().fingerprint()
        )
    }
}

/// The judge's public key (the CLI's `judge.pub` file): what clients and servers trust.
#[pyclass(frozen, eq, module = "privset._native")]
#[derive(PartialEq)]
pub struct JudgePublicKey {
    key: PublicKey,
}

#[pymethods]
impl JudgePublicKey {
    /// Reads a public key written by `save` or `privset judge keygen`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        Ok(Self {
            key: files::read_public_key(&path).py_err(py)?,
        })
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        files::write_public_key(&path, &self.key).py_err(py)
    }

    /// The first 8 bytes of SHA-256 of the key, hex (as `privset judge keygen` prints).
    #[getter]
    fn fingerprint(&self) -> String {
        hex::encode(&self.key.fingerprint()[..8])
    }

    fn __repr__(&self) -> String {
        format!("JudgePublicKey(fingerprint={:?})", self.fingerprint())
    }
}

/// A client's authorization: the judge's signatures on its items, reused by every
/// Intersect run (the CLI's `--signatures` file). Partial-APSI sets hold the client's
/// secret exponent: keep them as private as the items.
#[pyclass(frozen, module = "privset._native")]
pub struct Signatures {
    sigs: Arc<SignatureSet>,
}

#[pymethods]
impl Signatures {
    /// Reads and validates a signature file; with `client_id`, checks it was issued to
    /// that client.
    #[staticmethod]
    #[pyo3(signature = (path, client_id=None))]
    fn load(py: Python<'_>, path: PathBuf, client_id: Option<String>) -> PyResult<Self> {
        let sigs =
            files::read_signatures(&path, client_id.as_deref().map(str::as_bytes)).py_err(py)?;
        Ok(Self {
            sigs: Arc::new(sigs),
        })
    }

    /// Writes the signature file (mode 0600).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        files::write_signatures(&path, &self.sigs).py_err(py)
    }

    /// "apsi" or "partial-apsi".
    #[getter]
    fn mode(&self) -> &'static str {
        self.sigs.mode.name()
    }

    #[getter]
    fn client_id(&self) -> String {
        String::from_utf8_lossy(&self.sigs.client_id).into_owned()
    }

    /// The key of the judge that signed.
    #[getter]
    fn judge_public_key(&self) -> JudgePublicKey {
        JudgePublicKey {
            key: self.sigs.judge_key,
        }
    }

    /// How the items were made from rows at authorize (`{"key-columns": "1",
    /// "normalize": "trim", "hash-ids": "none"}`, as the client stated them), stated
    /// to the server by every intersect; None for a file saved before they were
    /// recorded.
    #[getter]
    fn key_settings<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(settings) = &self.sigs.key_settings else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        for (name, value) in settings.iter() {
            dict.set_item(name, value)?;
        }
        Ok(Some(dict))
    }

    /// The authorized items, as bytes, in the order they were authorized.
    #[getter]
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.sigs.items.iter().map(|x| PyBytes::new(py, x)))
    }

    fn __len__(&self) -> usize {
        self.sigs.items.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Signatures(mode={:?}, client_id={:?}, items={})",
            self.mode(),
            self.client_id(),
            self.sigs.items.len()
        )
    }
}

/// A judge policy written in Python: `policy(client_id: bytes, items: list[bytes])`
/// returns True to accept, False or a reason (str) to reject. It runs on the judge's
/// thread, taking the GIL for the call only. If it raises, the client is told only
/// that the policy failed (the exception may hold the judge's data); the exception
/// itself is kept in `raised` and re-raised by the judge's `run`.
struct PythonPolicy {
    callable: Arc<Py<PyAny>>,
    raised: Arc<Mutex<Option<PyErr>>>,
}

/// The reason a client is given when the judge's Python policy raised.
const POLICY_FAILED: &str = "the judge's policy failed";

impl Policy for PythonPolicy {
    fn check(&self, client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String> {
        Python::attach(|py| {
            let listed = PyList::new(py, items.iter().map(|x| PyBytes::new(py, x)))
                .map_err(|_| POLICY_FAILED.to_string())?;
            let answer = match self
                .callable
                .call1(py, (PyBytes::new(py, client_id), listed))
            {
                Ok(answer) => answer,
                Err(e) => {
                    *self.raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return Err(POLICY_FAILED.into());
                }
            };
            let answer = answer.bind(py);
            if let Ok(accept) = answer.extract::<bool>() {
                return if accept {
                    Ok(())
                } else {
                    Err("the judge's policy rejected the set".into())
                };
            }
            if let Ok(reason) = answer.cast::<PyString>() {
                return Err(reason.to_string());
            }
            let type_name = answer
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into());
            Err(format!(
                "the judge's policy returned a {type_name}, not True, False or a reason"
            ))
        })
    }
}

/// What a Python callable policy raised in the last run, for the judge to re-raise.
type RaisedError = Arc<Mutex<Option<PyErr>>>;

/// Where a judge's policy comes from: the CLI's `allow:` / `exec:` forms, an
/// allowlist given as data, or a Python callable; built once, shared by every run.
struct PolicySource {
    policy: Arc<dyn Policy>,
    /// A Python callable: the callable (for the garbage collector) and what it raised
    /// in the last run, for the judge's `run` to re-raise.
    python: Option<(Arc<Py<PyAny>>, RaisedError)>,
}

impl PolicySource {
    fn rust(policy: Arc<dyn Policy>) -> Self {
        Self {
            policy,
            python: None,
        }
    }

    fn python(callable: Py<PyAny>) -> Self {
        let callable = Arc::new(callable);
        let raised = Arc::new(Mutex::new(None));
        Self {
            policy: Arc::new(PythonPolicy {
                callable: callable.clone(),
                raised: raised.clone(),
            }),
            python: Some((callable, raised)),
        }
    }

    /// The exception the Python policy raised during the last run, if any.
    fn take_raised(&self) -> Option<PyErr> {
        let (_, raised) = self.python.as_ref()?;
        raised.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// One APSI party with its settings, ready to run any number of times.
enum Spec {
    Judge {
        config: JudgeConfig,
        key: Arc<SecretKey>,
        policy: PolicySource,
    },
    Authorize {
        config: ClientConfig,
        input: Arc<InputData>,
    },
    Intersect {
        sigs: Arc<SignatureSet>,
        signed: Vec<SignedItem>,
        unauthorized: Vec<Vec<u8>>,
        input: Arc<InputData>,
        judge_key: PublicKey,
        key_consistency: bool,
        max_server_items: u64,
        /// The key settings stated to the server (`files::intersect_settings`).
        key_settings: AgreedSettings,
    },
    Server {
        config: ServerConfig,
        /// The input's identifiers, shared by every run (never copied per run).
        items: Arc<[Vec<u8>]>,
        /// How they were made from rows, stated in every run.
        key_settings: AgreedSettings,
    },
}

/// The state machine of one run of a [`Spec`] (boxed: the parties differ in size).
enum Machine {
    Judge(Box<Engine<authorize::Judge>>),
    Authorize(Box<Engine<authorize::Client>>),
    Intersect(Box<Engine<intersect::Client>>),
    Server(Box<Engine<intersect::Server>>),
}

/// A finished run: the report (JSON) and what the party keeps.
pub(crate) struct Outcome {
    json: String,
    signatures: Option<SignatureSet>,
    intersection: Option<Vec<Vec<u8>>>,
}

fn json(report: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string(report).map_err(|e| Failure::other(e.to_string()))
}

impl Spec {
    fn role(&self) -> &'static str {
        match self {
            Spec::Judge { .. } => "judge",
            Spec::Authorize { .. } | Spec::Intersect { .. } => "client",
            Spec::Server { .. } => "server",
        }
    }

    /// Which sub-protocol: "authorize" or "intersect".
    fn phase(&self) -> &'static str {
        match self {
            Spec::Judge { .. } | Spec::Authorize { .. } => "authorize",
            Spec::Intersect { .. } | Spec::Server { .. } => "intersect",
        }
    }
}

impl Playable for Spec {
    type Machine = Machine;
    type Outcome = Outcome;

    fn label(&self) -> String {
        self.names().0.to_string()
    }

    fn machine(&self, seed: [u8; 32]) -> Result<Machine, Failure> {
        Ok(match self {
            Spec::Judge {
                config,
                key,
                policy,
            } => {
                let judge = authorize::Judge::new(
                    config.clone(),
                    key.clone(),
                    policy.policy.clone(),
                    seed,
                )?;
                Machine::Judge(Box::new(judge))
            }
            Spec::Authorize { config, input } => {
                let ids = input.dataset.ids.clone();
                Machine::Authorize(Box::new(authorize::Client::new(config.clone(), ids, seed)?))
            }
            Spec::Intersect {
                sigs,
                signed,
                judge_key,
                key_consistency,
                max_server_items,
                key_settings,
                ..
            } => {
                let mut client = intersect::Client::new(
                    sigs,
                    signed.clone(),
                    judge_key,
                    *key_consistency,
                    *max_server_items,
                    seed,
                )?;
                client.agree(key_settings.clone())?;
                Machine::Intersect(Box::new(client))
            }
            Spec::Server {
                config,
                items,
                key_settings,
            } => {
                let mut server = intersect::Server::new(config.clone(), items.clone(), seed)?;
                server.agree(key_settings.clone())?;
                Machine::Server(Box::new(server))
            }
        })
    }

    fn party(machine: &mut Machine) -> &mut dyn Party {
        match machine {
            Machine::Judge(m) => m.as_mut(),
            Machine::Authorize(m) => m.as_mut(),
            Machine::Intersect(m) => m.as_mut(),
            Machine::Server(m) => m.as_mut(),
        }
    }

    fn outcome(&self, machine: Machine, run: Metered) -> Result<Outcome, Failure> {
        let missing = play::no_output;
        let plain = |json| Outcome {
            json,
            signatures: None,
            intersection: None,
        };
        match (self, machine) {
            (Spec::Judge { config, .. }, Machine::Judge(m)) => {
                let mode = if config.partial.is_some() {
                    Mode::Partial
                } else {
                    Mode::Full
                };
                let out = m.into_output().ok_or_else(missing)?;
                Ok(plain(json(&files::JudgeReport::new(mode, &out, run))?))
            }
            (Spec::Authorize { .. }, Machine::Authorize(m)) => {
                let sigs = m.into_output().ok_or_else(missing)?;
                Ok(Outcome {
                    json: json(&files::AuthorizeReport::new(&sigs, None, run))?,
                    signatures: Some(sigs),
                    intersection: None,
                })
            }
            (
                Spec::Intersect {
                    sigs, unauthorized, ..
                },
                Machine::Intersect(m),
            ) => {
                let out = m.into_output().ok_or_else(missing)?;
                let rows = Some(out.intersection.len() as u64);
                let report = files::IntersectReport::new(sigs, &out, unauthorized.len(), rows, run);
                Ok(Outcome {
                    json: json(&report)?,
                    signatures: None,
                    intersection: Some(out.intersection),
                })
            }
            (Spec::Server { config, .. }, Machine::Server(m)) => {
                let out = m.into_output().ok_or_else(missing)?;
                Ok(plain(json(&files::ServerReport::new(
                    config.mode,
                    &out,
                    run,
                ))?))
            }
            _ => Err(Failure::other("an APSI machine of another role")),
        }
    }
}

impl Paired for Spec {
    fn names(&self) -> (&'static str, &'static str) {
        match self {
            Spec::Judge { .. } => ("judge", "client"),
            Spec::Authorize { .. } => ("client", "judge"),
            Spec::Intersect { .. } => ("client", "server"),
            Spec::Server { .. } => ("server", "client"),
        }
    }
}

/// One party of authorized PSI: judge, authorize client, intersect client or server.
#[pyclass(frozen, module = "privset._native")]
pub struct ApsiParty {
    spec: Arc<Spec>,
}

fn fraction(py: Python<'_>, partial: Option<f64>) -> PyResult<Option<PartialFraction>> {
    partial
        .map(PartialFraction::new)
        .transpose()
        .map_err(Failure::from)
        .py_err(py)
}

/// `(row, item)` pairs for Python: the caller's 0-based row of each item (None for a
/// CSV input).
fn rows<'py>(
    py: Python<'py>,
    input: &InputData,
    items: &[Vec<u8>],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for x in items {
        list.append((input.row_of(x), PyBytes::new(py, x)))?;
    }
    Ok(list)
}

/// What Python gets from a run: `(json, signatures, intersection, unauthorized)`; the
/// last three are None where the role has none. Item lists hold `(row, bytes)`.
type PyOutcome<'py> = (
    String,
    Option<Signatures>,
    Option<Bound<'py, PyList>>,
    Option<Bound<'py, PyList>>,
);

impl ApsiParty {
    fn new(spec: Spec) -> Self {
        Self {
            spec: Arc::new(spec),
        }
    }

    /// A judge whose Python policy raised during the run raises that exception (the
    /// client was told only that the policy failed).
    fn policy_raised<T>(&self, result: PyResult<T>) -> PyResult<T> {
        let raised = match &*self.spec {
            Spec::Judge { policy, .. } => policy.take_raised(),
            _ => None,
        };
        match raised {
            Some(e) => Err(e),
            None => result,
        }
    }

    fn to_python<'py>(&self, py: Python<'py>, outcome: Outcome) -> PyResult<PyOutcome<'py>> {
        let signatures = outcome.signatures.map(|s| Signatures { sigs: Arc::new(s) });
        let (intersection, unauthorized) = match (&*self.spec, outcome.intersection) {
            (
                Spec::Intersect {
                    input,
                    unauthorized,
                    ..
                },
                Some(found),
            ) => (
                Some(rows(py, input, &found)?),
                Some(rows(py, input, unauthorized)?),
            ),
            _ => (None, None),
        };
        Ok((outcome.json, signatures, intersection, unauthorized))
    }
}

#[pymethods]
impl ApsiParty {
    /// Lets Python's garbage collector see a judge's policy callable, so a cycle through
    /// it (a policy that refers to its own judge) can be collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Spec::Judge {
            policy:
                PolicySource {
                    python: Some((callable, _)),
                    ..
                },
            ..
        } = &*self.spec
        {
            visit.call(callable.as_ref())?;
        }
        Ok(())
    }

    /// The judge. `policy`: an `Input` (the allowlist), a str (`allow:FILE.csv` or
    /// `exec:COMMAND`, as `privset judge serve --policy`) or a callable
    /// `policy(client_id: bytes, items: list[bytes]) -> bool | str`.
    /// `allow_column`: the column of an `allow:FILE.csv` allowlist (default: the first).
    #[staticmethod]
    #[pyo3(signature = (key, policy, *, partial, key_consistency, max_items, policy_timeout, allow_column=None))]
    #[allow(clippy::too_many_arguments)]
    fn judge(
        py: Python<'_>,
        key: &JudgeKey,
        policy: &Bound<'_, PyAny>,
        partial: Option<f64>,
        key_consistency: bool,
        max_items: &Bound<'_, PyAny>,
        policy_timeout: f64,
        allow_column: Option<&str>,
    ) -> PyResult<Self> {
        let max_items = errors::u64_arg(py, "max_items", max_items)?;
        let timeout: Duration = link::seconds(py, "policy_timeout", policy_timeout)?;
        let policy = if let Ok(allow) = policy.cast::<Input>() {
            let ids = allow.get().data.dataset.ids.iter().cloned();
            PolicySource::rust(Arc::new(AllowList::new(ids)))
        } else if let Ok(spec) = policy.extract::<String>() {
            PolicySource::rust(
                PolicySpec::parse(&spec, allow_column, timeout)
                    .py_err(py)?
                    .build(),
            )
        } else if policy.is_callable() {
            PolicySource::python(policy.clone().unbind())
        } else {
            return Err(errors::config(
                py,
                "policy must be an allowlist of identifiers, 'allow:FILE.csv', 'exec:COMMAND' or a callable",
            ));
        };
        let config = JudgeConfig {
            partial: fraction(py, partial)?,
            key_consistency,
            max_items,
        };
        Ok(Self::new(Spec::Judge {
            config,
            key: key.key.clone(),
            policy,
        }))
    }

    /// The client of Authorize: asks the judge to sign `input` for `client_id`.
    #[staticmethod]
    #[pyo3(signature = (input, *, client_id, partial, key_consistency))]
    fn authorize(
        py: Python<'_>,
        input: &Input,
        client_id: &str,
        partial: Option<f64>,
        key_consistency: bool,
    ) -> PyResult<Self> {
        let config = ClientConfig {
            client_id: client_id.as_bytes().to_vec(),
            partial: fraction(py, partial)?,
            key_consistency,
            key_settings: input.data.agreed.clone(),
        };
        validate_client_id(&config.client_id)
            .and_then(|()| validate_items(&input.data.dataset.ids))
            .map_err(Failure::from)
            .py_err(py)?;
        Ok(Self::new(Spec::Authorize {
            config,
            input: input.data.clone(),
        }))
    }

    /// The client of Intersect: the items of `input` that `signatures` covers (others
    /// are reported and left out), against a server trusting `judge_public`.
    /// `signed_items`: `input` is the signature set's own items (already made into
    /// identifiers), so the settings it states are the set's, never checked against
    /// the input's.
    #[staticmethod]
    #[pyo3(signature = (signatures, input, *, judge_public, key_consistency, max_server_items, signed_items=false))]
    fn intersect(
        py: Python<'_>,
        signatures: &Signatures,
        input: &Input,
        judge_public: &JudgePublicKey,
        key_consistency: bool,
        max_server_items: &Bound<'_, PyAny>,
        signed_items: bool,
    ) -> PyResult<Self> {
        let max_server_items = errors::u64_arg(py, "max_server_items", max_server_items)?;
        let sigs = signatures.sigs.clone();
        let key_settings = match (&sigs.key_settings, signed_items) {
            (Some(recorded), true) => recorded.clone(),
            (None, true) => {
                return Err(errors::config(
                    py,
                    "these signatures were saved before privset recorded how their items were \
                     made from rows, so the settings to state to the server are unknown: pass \
                     the ids with the id_column, normalize, phone_region and hash_ids used at \
                     authorize, or authorize again",
                ));
            }
            (_, false) => files::intersect_settings(&sigs, &input.data.agreed).py_err(py)?,
        };
        let (signed, unauthorized) = sigs.select(&input.data.dataset.ids);
        // Checks the judge key and the key-consistency token now, before any run.
        intersect::Client::check(&sigs, &judge_public.key, key_consistency)
            .map_err(Failure::from)
            .py_err(py)?;
        Ok(Self::new(Spec::Intersect {
            sigs,
            signed,
            unauthorized,
            input: input.data.clone(),
            judge_key: judge_public.key,
            key_consistency,
            max_server_items,
            key_settings,
        }))
    }

    /// The server of Intersect, honouring signatures of `judge_public`; `partial`: the
    /// judge's Partial-APSI fraction (any value in (0, 1] selects the mode, as the
    /// CLI's `--partial`).
    #[staticmethod]
    #[pyo3(signature = (input, *, judge_public, partial, key_consistency))]
    fn server(
        py: Python<'_>,
        input: &Input,
        judge_public: &JudgePublicKey,
        partial: Option<f64>,
        key_consistency: bool,
    ) -> PyResult<Self> {
        let mode = match fraction(py, partial)? {
            Some(_) => Mode::Partial,
            None => Mode::Full,
        };
        let config = ServerConfig {
            mode,
            key_consistency,
            judge_key: judge_public.key,
        };
        validate_items(&input.data.dataset.ids)
            .map_err(Failure::from)
            .py_err(py)?;
        Ok(Self::new(Spec::Server {
            config,
            items: input.data.dataset.ids.as_slice().into(),
            key_settings: input.data.agreed.clone(),
        }))
    }

    /// "judge", "client" or "server".
    #[getter]
    fn role(&self) -> &'static str {
        self.spec.role()
    }

    /// "authorize" or "intersect".
    #[getter]
    fn phase(&self) -> &'static str {
        self.spec.phase()
    }

    /// Runs against the peer reached as `link` says.
    #[pyo3(signature = (link, prices, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        link: LinkArgs,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<PyOutcome<'py>> {
        let outcome = play::remote(py, self.spec.clone(), link, prices, progress.as_ref());
        let outcome = self.policy_raised(outcome)?;
        self.to_python(py, outcome)
    }

    /// A judge or server: serves sessions on `listen` until `max_sessions` have ended
    /// (or Ctrl-C), up to `max_concurrent` at once, each cut off after `timeout`
    /// seconds; on the shared Rust endpoint, the GIL released. Returns the session log
    /// lines (JSON), in the order the sessions ended.
    #[pyo3(signature = (listen, *, tls, insecure_no_tls, max_sessions, max_concurrent, timeout, handshake_timeout=5.0, allow_clients=None))]
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &self,
        py: Python<'_>,
        listen: String,
        tls: Option<(PathBuf, PathBuf, PathBuf)>,
        insecure_no_tls: bool,
        max_sessions: Option<u64>,
        max_concurrent: usize,
        timeout: f64,
        handshake_timeout: f64,
        allow_clients: Option<PathBuf>,
    ) -> PyResult<Vec<String>> {
        let service: Arc<dyn Service> = match &*self.spec {
            Spec::Server {
                config,
                items,
                key_settings,
            } => Arc::new(
                ServerService::new(config.clone(), items.clone(), key_settings.clone())
                    .py_err(py)?,
            ),
            Spec::Judge {
                config,
                key,
                policy,
            } => Arc::new(JudgeService::new(
                config.clone(),
                key.clone(),
                policy.policy.clone(),
            )),
            _ => {
                return Err(errors::config(
                    py,
                    "only the judge and the server serve sessions; a client runs with run()",
                ));
            }
        };
        let args = ServeArgs {
            listen,
            tls,
            insecure_no_tls,
            max_sessions,
            max_concurrent,
            timeout,
            handshake_timeout,
            allow_clients,
        };
        let lines = serve::serve(py, self.spec.role(), service, args)?;
        // A raising Python policy rejected its sessions ("the judge's policy failed",
        // in their log lines); the exception is not re-raised from a whole serve.
        if let Spec::Judge { policy, .. } = &*self.spec {
            let _ = policy.take_raised();
        }
        Ok(lines)
    }

    /// Runs this party and `other` (the other role of the same phase) in this process.
    #[pyo3(signature = (other, timeout, prices, progress=None))]
    fn run_local<'py>(
        &self,
        py: Python<'py>,
        other: &ApsiParty,
        timeout: f64,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(PyOutcome<'py>, PyOutcome<'py>)> {
        if self.spec.phase() != other.spec.phase() || self.spec.role() == other.spec.role() {
            return Err(errors::config(
                py,
                format!(
                    "a local APSI run pairs the judge with an authorize client, or an intersect client with a \
                     server; not a {} {} with a {} {}",
                    self.spec.phase(),
                    self.spec.role(),
                    other.spec.phase(),
                    other.spec.role()
                ),
            ));
        }
        let outcomes = play::local(
            py,
            self.spec.clone(),
            other.spec.clone(),
            timeout,
            prices,
            progress.as_ref(),
        );
        let (mine, theirs) = other.policy_raised(self.policy_raised(outcomes))?;
        Ok((self.to_python(py, mine)?, other.to_python(py, theirs)?))
    }
}

/// Largest set the judge (and the client, from the server) accepts by default.
pub(crate) const DEFAULT_MAX_ITEMS: u64 = protocol::DEFAULT_MAX_PEER_ITEMS;
