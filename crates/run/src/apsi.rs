//! Authorized PSI (Falzon-Markatou, "Re-visiting Authorized PSI") as every front end
//! runs it: the judge's key files, the
//! signature file, the judge's policy as the operator gives it (`allow:FILE.csv` or
//! `exec:COMMAND`), and the reports of the four parties (authorize client, judge,
//! intersect client, server). The CLI (`privset judge`, `privset apsi`) and the Python
//! package (`privset.Apsi*`) both use these, so files written by one are read by the
//! other and reports have the same fields.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use privset_crypto::bls::{PublicKey, SecretKey};
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::apsi::authorize::{self, JudgeConfig, JudgeOutput};
use privset_protocols::apsi::intersect::{self, ClientOutput, ServerConfig, ServerOutput};
use privset_protocols::apsi::signatures::SignatureSet;
use privset_protocols::apsi::{AllowList, Mode, Policy, validate_items};
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::{Engine, Party};
use zeroize::Zeroizing;

use crate::csv_input::{self, Columns};
use crate::drive::Metered;
use crate::endpoint::{ServedParty, Service};
use crate::fail::Failure;
use crate::keys::{Keys, check_recorded};
use crate::link::write_private;
use crate::source::{self, InputSpec};

const SECRET_HEADER: &str = "privset judge secret key (BLS12-381) v1";
const PUBLIC_HEADER: &str = "privset judge public key (BLS12-381 G2) v1";

/// Longest key file read: a header line and one hex line, with room to spare.
const MAX_KEY_FILE: u64 = 4096;

/// The key bytes of a key file; the text and the bytes are wiped when dropped (the
/// secret key's file holds the judge's signing key).
fn read_key_file(path: &Path, header: &str) -> Result<Zeroizing<Vec<u8>>, Failure> {
    let cannot = |e: std::io::Error| Failure::input(format!("cannot read {}: {e}", path.display()));
    let mut text = Zeroizing::new(String::new());
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE).read_to_string(&mut text))
        .map_err(cannot)?;
    let mut lines = text.lines();
    if lines.next() != Some(header) {
        return Err(Failure::input(format!(
            "{} is not a {header} file",
            path.display()
        )));
    }
    hex::decode(lines.next().unwrap_or("").trim())
        .map(Zeroizing::new)
        .map_err(|_| Failure::input(format!("{}: the key is not hex", path.display())))
}

/// The judge's secret key from its file (written by [`write_secret_key`]).
pub fn read_secret_key(path: &Path) -> Result<SecretKey, Failure> {
    SecretKey::from_bytes(&read_key_file(path, SECRET_HEADER)?)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

/// The judge's public key from its file (written by [`write_public_key`]).
pub fn read_public_key(path: &Path) -> Result<PublicKey, Failure> {
    PublicKey::from_bytes(&read_key_file(path, PUBLIC_HEADER)?)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

/// Writes the judge's secret key, readable by its owner only.
pub fn write_secret_key(path: &Path, key: &SecretKey) -> Result<(), Failure> {
    let bytes = Zeroizing::new(key.to_bytes());
    let hex = Zeroizing::new(hex::encode(bytes.as_slice()));
    let text = Zeroizing::new(format!("{SECRET_HEADER}\n{}\n", hex.as_str()));
    write_private(path, text.as_bytes())
}

/// Writes the judge's public key (for clients' and servers' operators).
pub fn write_public_key(path: &Path, key: &PublicKey) -> Result<(), Failure> {
    let text = format!("{PUBLIC_HEADER}\n{}\n", hex::encode(key.to_bytes()));
    std::fs::write(path, text)
        .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))
}

/// A signature file, validated, checked to belong to `client_id` when one is given.
pub fn read_signatures(path: &Path, client_id: Option<&[u8]>) -> Result<SignatureSet, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    let sigs = SignatureSet::decode(&bytes)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    if let Some(id) = client_id
        && sigs.client_id != id
    {
        return Err(Failure::input(format!(
            "{} was issued to client {:?}, not {:?}",
            path.display(),
            String::from_utf8_lossy(&sigs.client_id),
            String::from_utf8_lossy(id)
        )));
    }
    Ok(sigs)
}

/// The key settings an Intersect client states: those its signature set records (the
/// signed items were made with them at Authorize), which the input it is given now
/// must share, or else its items would miss their signatures and be left out for a
/// reason nobody is told; the input's own for a signature file that records none
/// (version 1). A difference is refused naming the setting.
pub fn intersect_settings(
    sigs: &SignatureSet,
    input: &AgreedSettings,
) -> Result<AgreedSettings, Failure> {
    let Some(recorded) = &sigs.key_settings else {
        return Ok(input.clone());
    };
    check_recorded(
        recorded,
        "signature file",
        input,
        "make the input's identifiers as at authorize",
    )?;
    Ok(recorded.clone())
}

/// Writes a signature file, readable by its owner only (Partial-APSI files hold `r`).
pub fn write_signatures(path: &Path, sigs: &SignatureSet) -> Result<(), Failure> {
    write_private(path, &sigs.encode())
}

/// The identifiers of one column of an input file (duplicates kept once).
pub fn read_ids(path: &Path, column: &str) -> Result<Vec<Vec<u8>>, Failure> {
    let cols = Columns {
        id: column,
        values: &[],
        segment: None,
    };
    Ok(csv_input::read_dataset(path, &cols, DuplicatePolicy::First, 0)?.ids)
}

/// The identifiers of an input file as `keys` make them (duplicates kept once).
pub fn read_keyed_ids(path: &Path, keys: &Keys) -> Result<Vec<Vec<u8>>, Failure> {
    let spec = InputSpec {
        keys,
        values: &[],
        segment: None,
    };
    Ok(source::read_input(path, &spec, DuplicatePolicy::First, 0)?.ids)
}

fn first_column(path: &Path) -> Result<String, Failure> {
    let mut reader = csv::Reader::from_path(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    let headers = reader
        .headers()
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    headers
        .get(0)
        .map(str::to_string)
        .ok_or_else(|| Failure::input(format!("{}: no columns", path.display())))
}

/// The judge's policy as the operator gave it: `allow:FILE.csv` or `exec:COMMAND`.
/// Parsed once; [`PolicySpec::build`] makes the [`Policy`] every session shares.
pub enum PolicySpec {
    Allow(Vec<Vec<u8>>),
    Exec { command: String, timeout: Duration },
}

impl PolicySpec {
    /// `column`: the allowlist's column (default: the first); `timeout`: how long an
    /// exec policy may take before the set is rejected.
    pub fn parse(spec: &str, column: Option<&str>, timeout: Duration) -> Result<Self, Failure> {
        if let Some(file) = spec.strip_prefix("allow:") {
            let path = Path::new(file);
            let column = match column {
                Some(c) => c.to_string(),
                None => first_column(path)?,
            };
            Ok(Self::Allow(read_ids(path, &column)?))
        } else if let Some(command) = spec.strip_prefix("exec:") {
            if command.trim().is_empty() {
                return Err(Failure::input("the policy exec: needs a command"));
            }
            Ok(Self::Exec {
                command: command.to_string(),
                timeout,
            })
        } else {
            Err(Failure::input(format!(
                "the policy must be allow:FILE.csv or exec:COMMAND, not {spec:?}"
            )))
        }
    }

    pub fn build(&self) -> Arc<dyn Policy> {
        match self {
            Self::Allow(items) => Arc::new(AllowList::new(items.iter().cloned())),
            Self::Exec { command, timeout } => Arc::new(crate::exec_policy::ExecPolicy {
                command: command.clone(),
                timeout: *timeout,
            }),
        }
    }
}

/// A client ID for reports and logs: it may come from the peer, so made safe to print.
fn lossy(bytes: &[u8]) -> String {
    privset_protocols::peer_text::sanitize(bytes)
}

/// What the client of Authorize reports (`privset apsi authorize --output`).
#[derive(serde::Serialize, Debug, Clone)]
pub struct AuthorizeReport {
    pub protocol: &'static str,
    pub mode: &'static str,
    pub client_id: String,
    /// Items signed.
    pub items: u64,
    /// The signature file written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signatures: Option<String>,
    #[serde(flatten)]
    pub run: Metered,
}

impl AuthorizeReport {
    pub fn new(sigs: &SignatureSet, file: Option<&Path>, run: Metered) -> Self {
        Self {
            protocol: "apsi-authorize",
            mode: sigs.mode.name(),
            client_id: lossy(&sigs.client_id),
            items: sigs.items.len() as u64,
            signatures: file.map(|p| p.display().to_string()),
            run,
        }
    }
}

/// What the judge knows after one Authorize session: who asked, for how many items, how
/// many it saw, and its verdict. Part of [`JudgeReport`] and of `privset judge serve`'s
/// session log.
#[derive(serde::Serialize, Debug, Clone)]
pub struct JudgeOutcome {
    pub client_id: String,
    /// Items the client asked to have signed.
    pub items: u64,
    /// Items the judge saw in the clear (all for APSI, the opened ones for Partial).
    pub shown: u64,
    pub accepted: bool,
    /// The policy's reason for a rejection.
    pub reason: Option<String>,
}

impl From<&JudgeOutput> for JudgeOutcome {
    fn from(out: &JudgeOutput) -> Self {
        Self {
            client_id: lossy(&out.client_id),
            items: out.items,
            shown: out.shown,
            accepted: out.rejected.is_none(),
            reason: out.rejected.clone(),
        }
    }
}

/// What the judge reports for one Authorize session.
#[derive(serde::Serialize, Debug, Clone)]
pub struct JudgeReport {
    pub protocol: &'static str,
    pub mode: &'static str,
    #[serde(flatten)]
    pub outcome: JudgeOutcome,
    #[serde(flatten)]
    pub run: Metered,
}

impl JudgeReport {
    pub fn new(mode: Mode, out: &JudgeOutput, run: Metered) -> Self {
        Self {
            protocol: "apsi-judge",
            mode: mode.name(),
            outcome: out.into(),
            run,
        }
    }
}

/// RESULT.json of the client of Intersect (`privset apsi intersect --output`).
#[derive(serde::Serialize, Debug, Clone)]
pub struct IntersectReport {
    pub protocol: &'static str,
    pub mode: &'static str,
    pub client_id: String,
    /// Authorized items used.
    pub items_used: u64,
    /// Items of the input without a signature (left out).
    pub unauthorized_items: u64,
    pub server_items: u64,
    pub cardinality: u64,
    /// Rows written to --output-rows, if any.
    pub rows: Option<u64>,
    #[serde(flatten)]
    pub run: Metered,
}

impl IntersectReport {
    pub fn new(
        sigs: &SignatureSet,
        out: &ClientOutput,
        unauthorized: usize,
        rows: Option<u64>,
        run: Metered,
    ) -> Self {
        Self {
            protocol: "apsi-intersect",
            mode: sigs.mode.name(),
            client_id: lossy(&sigs.client_id),
            items_used: out.used,
            unauthorized_items: unauthorized as u64,
            server_items: out.server_items,
            cardinality: out.intersection.len() as u64,
            rows,
            run,
        }
    }
}

/// What the server of Intersect knows after one run: who asked, and its own set size.
/// Part of [`ServerReport`] and of `privset apsi serve`'s session log.
#[derive(serde::Serialize, Debug, Clone)]
pub struct ServerOutcome {
    pub client_id: String,
    pub items: u64,
}

impl From<&ServerOutput> for ServerOutcome {
    fn from(out: &ServerOutput) -> Self {
        Self {
            client_id: lossy(&out.client_id),
            items: out.items,
        }
    }
}

/// What the server of Intersect reports for one run.
#[derive(serde::Serialize, Debug, Clone)]
pub struct ServerReport {
    pub protocol: &'static str,
    pub mode: &'static str,
    #[serde(flatten)]
    pub outcome: ServerOutcome,
    #[serde(flatten)]
    pub run: Metered,
}

impl ServerReport {
    pub fn new(mode: Mode, out: &ServerOutput, run: Metered) -> Self {
        Self {
            protocol: "apsi-server",
            mode: mode.name(),
            outcome: out.into(),
            run,
        }
    }
}

/// A session's outcome in a log line (null when it ended without one).
fn outcome_json(outcome: Option<impl serde::Serialize>) -> serde_json::Value {
    outcome
        .and_then(|o| serde_json::to_value(o).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The server of Intersect as an endpoint serves it: its set, prepared once and shared
/// by every session (each session draws its own random order of it), and how the set
/// was made from rows, stated in every session.
pub struct ServerService {
    config: ServerConfig,
    items: Arc<[Vec<u8>]>,
    key_settings: AgreedSettings,
}

impl ServerService {
    /// Checks the items once; every session then shares them. `key_settings`: how the
    /// items were made from rows (`Keys::agreed`).
    pub fn new(
        config: ServerConfig,
        items: Arc<[Vec<u8>]>,
        key_settings: AgreedSettings,
    ) -> Result<Self, Failure> {
        validate_items(&items)?;
        Ok(Self {
            config,
            items,
            key_settings,
        })
    }

    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    pub fn items(&self) -> usize {
        self.items.len()
    }
}

impl Service for ServerService {
    fn role(&self) -> &'static str {
        "apsi server"
    }

    fn party(&self, seed: [u8; 32]) -> Result<Box<dyn ServedParty>, Failure> {
        let mut server = intersect::Server::new(self.config.clone(), self.items.clone(), seed)?;
        server.agree(self.key_settings.clone())?;
        Ok(Box::new(server))
    }
}

impl ServedParty for Engine<intersect::Server> {
    fn outcome(self: Box<Self>) -> serde_json::Value {
        outcome_json(self.into_output().as_ref().map(ServerOutcome::from))
    }
}

/// The judge as an endpoint serves it: its key and policy, shared by every session
/// (concurrent ones included; an `exec:` policy runs one command per check).
pub struct JudgeService {
    config: JudgeConfig,
    key: Arc<SecretKey>,
    policy: Arc<dyn Policy>,
}

impl JudgeService {
    pub fn new(config: JudgeConfig, key: Arc<SecretKey>, policy: Arc<dyn Policy>) -> Self {
        Self {
            config,
            key,
            policy,
        }
    }
}

impl Service for JudgeService {
    fn role(&self) -> &'static str {
        "judge"
    }

    fn party(&self, seed: [u8; 32]) -> Result<Box<dyn ServedParty>, Failure> {
        let judge = authorize::Judge::new(
            self.config.clone(),
            self.key.clone(),
            self.policy.clone(),
            seed,
        )?;
        Ok(Box::new(judge))
    }
}

impl ServedParty for Engine<authorize::Judge> {
    fn outcome(self: Box<Self>) -> serde_json::Value {
        outcome_json(self.into_output().as_ref().map(JudgeOutcome::from))
    }
}
