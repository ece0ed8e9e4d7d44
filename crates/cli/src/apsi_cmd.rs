//! `privset judge keygen|serve` and `privset apsi authorize|serve|intersect`: the three
//! parties of authorized PSI (Falzon-Markatou, "Re-visiting Authorized PSI"), each its
//! own process.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use privset_crypto::bls::SecretKey;
use privset_crypto::rng::SessionRng;
use privset_protocols::apsi::authorize::{self, JudgeConfig};
use privset_protocols::apsi::intersect::{self, ServerConfig};
use privset_protocols::apsi::{DEFAULT_MAX_PEER_ITEMS, Mode, PartialFraction};
use privset_protocols::{Engine, Party};
use privset_run::apsi::{
    AuthorizeReport, IntersectReport, JudgeOutcome, PolicySpec, ServerOutcome, read_ids,
    read_public_key, read_secret_key, read_signatures, write_public_key, write_secret_key,
    write_signatures,
};

use crate::connect::TlsArgs;
use crate::fail::Failure;
use crate::metrics::Stopwatch;
use crate::pi_sum_cmd::write_json;
use crate::run::{self, Metered, PriceArgs};

#[derive(Subcommand, Debug)]
pub enum JudgeCommand {
    /// Make the judge's BLS12-381 key pair.
    Keygen {
        /// Secret key file to write (mode 0600).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Public key file to write (give it to clients' and servers' operators).
        #[arg(long, value_name = "FILE")]
        public: PathBuf,
    },
    /// Authorize clients' sets, one session after another.
    Serve(Box<JudgeServeArgs>),
}

#[derive(Subcommand, Debug)]
pub enum ApsiCommand {
    /// Get the judge's signatures on the client's set (once; reused by every intersect).
    Authorize(Box<AuthorizeArgs>),
    /// Answer clients' intersect requests with this server's set, one after another.
    Serve(Box<ServeArgs>),
    /// Intersect (a subset of) the authorized items with a server's set.
    Intersect(Box<IntersectArgs>),
}

/// Flags of the long-running listeners (judge and APSI server).
#[derive(Args, Debug, Clone)]
pub struct ListenArgs {
    /// Listen on HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Stop after this many sessions (default: serve until killed).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<u64>,
    /// Append one JSON line per session (who, sizes, verdict, bytes, time) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct JudgeServeArgs {
    #[command(flatten)]
    pub listen: ListenArgs,
    /// The judge's secret key (from `privset judge keygen`).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// `allow:FILE.csv` (every item shown must be in the file's first column, or in
    /// --policy-column) or `exec:COMMAND` (run with `sh -c`, the items on stdin one per
    /// line and the client ID in $PRIVSET_CLIENT_ID; it accepts by printing `accept`
    /// and exiting 0, anything else rejects and its first output line is the reason).
    #[arg(long, value_name = "allow:FILE|exec:COMMAND")]
    pub policy: String,
    /// Column of the allowlist CSV to read (default: the first).
    #[arg(long, value_name = "NAME")]
    pub policy_column: Option<String>,
    /// Seconds an exec policy may take before the set is rejected.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub policy_timeout: u64,
    /// Partial-APSI: open this fraction of each client's items (0 < P <= 1).
    #[arg(long, value_name = "P")]
    pub partial: Option<f64>,
    /// Partial-APSI: do not bind the client's key to later intersect runs (Sec. 5.2).
    #[arg(long)]
    pub no_key_consistency: bool,
    /// Largest client set accepted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PEER_ITEMS)]
    pub max_items: u64,
}

#[derive(Args, Debug)]
pub struct AuthorizeArgs {
    /// The judge's HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub judge: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// This client's ID (the judge binds every signature to it).
    #[arg(long, value_name = "ID")]
    pub client_id: String,
    /// CSV input with a header row.
    #[arg(long, value_name = "FILE.csv")]
    pub input: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub id_column: String,
    /// Where to write the signatures (mode 0600: Partial-APSI files hold the secret r).
    #[arg(long, value_name = "FILE")]
    pub signatures: PathBuf,
    /// Partial-APSI: reveal at most this fraction of the items to the judge.
    #[arg(long, value_name = "P")]
    pub partial: Option<f64>,
    #[arg(long)]
    pub no_key_consistency: bool,
    /// Write the run's figures (bytes, time, cost) as JSON here.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PriceArgs,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub listen: ListenArgs,
    /// The judge's public key.
    #[arg(long, value_name = "FILE")]
    pub judge_public: PathBuf,
    #[arg(long, value_name = "FILE.csv")]
    pub input: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub id_column: String,
    /// Partial-APSI (the value is the judge's; any P in (0, 1] selects the mode).
    #[arg(long, value_name = "P")]
    pub partial: Option<f64>,
    #[arg(long)]
    pub no_key_consistency: bool,
}

#[derive(Args, Debug)]
pub struct IntersectArgs {
    /// The server's HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[arg(long, value_name = "FILE")]
    pub judge_public: PathBuf,
    #[arg(long, value_name = "ID")]
    pub client_id: String,
    #[arg(long, value_name = "FILE")]
    pub signatures: PathBuf,
    /// The items to intersect (a subset of the authorized ones; others are reported
    /// and left out).
    #[arg(long, value_name = "FILE.csv")]
    pub input: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub id_column: String,
    #[arg(long)]
    pub no_key_consistency: bool,
    /// Largest server set accepted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PEER_ITEMS)]
    pub max_server_items: u64,
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// The intersection as CSV (header: the id column's name).
    #[arg(long, value_name = "FILE.csv")]
    pub output_rows: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PriceArgs,
}

fn fraction(p: Option<f64>) -> Result<Option<PartialFraction>, Failure> {
    p.map(PartialFraction::new)
        .transpose()
        .map_err(Failure::from)
}

pub fn run_judge(cmd: &JudgeCommand) -> Result<(), Failure> {
    match cmd {
        JudgeCommand::Keygen { key, public } => {
            let sk = SecretKey::generate(&mut SessionRng::from_os());
            write_secret_key(key, &sk)?;
            write_public_key(public, &sk.public_key())?;
            eprintln!(
                "judge key pair written: {} (secret), {} (public, fingerprint {})",
                key.display(),
                public.display(),
                hex::encode(&sk.public_key().fingerprint()[..8])
            );
            Ok(())
        }
        JudgeCommand::Serve(args) => judge_serve(args),
    }
}

fn judge_serve(args: &JudgeServeArgs) -> Result<(), Failure> {
    let key = Arc::new(read_secret_key(&args.key)?);
    let config = JudgeConfig {
        partial: fraction(args.partial)?,
        key_consistency: !args.no_key_consistency,
        max_items: args.max_items,
    };
    let policy = PolicySpec::parse(
        &args.policy,
        args.policy_column.as_deref(),
        Duration::from_secs(args.policy_timeout),
    )
    .map_err(|f| Failure {
        message: format!("--policy: {}", f.message),
        ..f
    })?;
    if let PolicySpec::Allow(items) = &policy {
        eprintln!("privset judge: {} items on the allowlist", items.len());
    }
    let policy = policy.build();
    serve_sessions(&args.listen, "judge", &mut |seed| {
        Ok(Box::new(authorize::Judge::new(
            config.clone(),
            key.clone(),
            policy.clone(),
            seed,
        )?))
    })
}

/// One session of a long-running listener: a party, and what to log once it is done.
trait Session: Party {
    fn summary(self: Box<Self>) -> serde_json::Value;
}

impl Session for Engine<authorize::Judge> {
    fn summary(self: Box<Self>) -> serde_json::Value {
        outcome_json(self.into_output().as_ref().map(JudgeOutcome::from))
    }
}

impl Session for Engine<intersect::Server> {
    fn summary(self: Box<Self>) -> serde_json::Value {
        outcome_json(self.into_output().as_ref().map(ServerOutcome::from))
    }
}

/// A session's outcome in the log line (null when it ended without one).
fn outcome_json(outcome: Option<impl serde::Serialize>) -> serde_json::Value {
    outcome
        .and_then(|o| serde_json::to_value(o).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Accepts sessions on one listener, one after another (each uses every core), until
/// --max-sessions. A failed session (bad TLS, a misbehaving client) is logged and the
/// listener goes on; every session is logged to stderr and, with --log, as a JSON line.
fn serve_sessions(
    args: &ListenArgs,
    role: &str,
    new_session: &mut dyn FnMut([u8; 32]) -> Result<Box<dyn Session>, Failure>,
) -> Result<(), Failure> {
    let listener = args.tls.bind(&args.listen)?;
    eprintln!("privset {role}: listening on {}", args.listen);
    let mut served = 0u64;
    while args.max_sessions.is_none_or(|max| served < max) {
        // Wait for a client as long as it takes; --timeout bounds each message.
        let accepted = args.tls.accept_on(&listener, Duration::from_secs(3600));
        let (mut transport, kind) = match accepted {
            Ok(link) => link,
            Err(f) if f.message.contains("waiting for the peer") => continue,
            Err(f) => {
                eprintln!("privset {role}: connection refused: {}", f.message);
                continue;
            }
        };
        served += 1;
        let stopwatch = Stopwatch::start();
        let mut seed = [0u8; 32];
        SessionRng::from_os().fill(&mut seed);
        let mut session = new_session(seed)?;
        let result = privset_net::drive(session.as_mut(), transport.as_mut(), &mut |_| {});
        let (cpu, wall) = stopwatch.elapsed();
        let counters = transport.counters();
        let mut line = serde_json::json!({
            "role": role,
            "session": served,
            "transport": kind,
            "ok": result.is_ok(),
            "bytes_sent": counters.sent,
            "bytes_received": counters.received,
            "cpu_seconds": cpu,
            "wall_seconds": wall,
            "peak_rss_mib": crate::metrics::peak_rss_mib(),
        });
        if let Err(e) = &result {
            line["error"] = e.to_string().into();
        }
        line["outcome"] = session.summary();
        eprintln!("privset {role}: {line}");
        if let Some(path) = &args.log {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| Failure::other(format!("cannot open {}: {e}", path.display())))?;
            writeln!(f, "{line}")?;
        }
    }
    Ok(())
}

pub fn run_apsi(cmd: &ApsiCommand) -> Result<(), Failure> {
    match cmd {
        ApsiCommand::Authorize(args) => authorize_cmd(args),
        ApsiCommand::Serve(args) => serve_cmd(args),
        ApsiCommand::Intersect(args) => intersect_cmd(args),
    }
}

/// Drives a client party over a fresh connection to `addr`, metered.
fn drive_client(
    party: &mut dyn Party,
    tls: &TlsArgs,
    addr: &str,
    label: &str,
    stopwatch: &Stopwatch,
    prices: &PriceArgs,
) -> Result<Metered, Failure> {
    let (transport, kind) = tls.connect(addr)?;
    let link = privset_run::Link {
        transport,
        kind,
        seed_file: None,
        seed: [0; 32],
    };
    let (metered, _) = run::drive_metered(party, link, label, stopwatch, prices.prices())?;
    Ok(metered)
}

fn fresh_seed() -> [u8; 32] {
    SessionRng::from_os().seed()
}

fn authorize_cmd(args: &AuthorizeArgs) -> Result<(), Failure> {
    let stopwatch = Stopwatch::start();
    let items = read_ids(&args.input, &args.id_column)?;
    let config = authorize::ClientConfig {
        client_id: args.client_id.as_bytes().to_vec(),
        partial: fraction(args.partial)?,
        key_consistency: !args.no_key_consistency,
    };
    let mut client = authorize::Client::new(config, items, fresh_seed())?;
    let run = drive_client(
        &mut client,
        &args.tls,
        &args.judge,
        "apsi authorize",
        &stopwatch,
        &args.prices,
    )?;
    let sigs = client
        .into_output()
        .ok_or_else(|| Failure::other("the judge ended the session without signatures"))?;
    write_signatures(&args.signatures, &sigs)?;
    let report = AuthorizeReport::new(&sigs, Some(&args.signatures), run);
    eprintln!(
        "apsi authorize: {} items signed ({}), {} bytes sent, {} received, {:.2} s CPU -> {}",
        report.items,
        report.mode,
        report.run.bytes_sent,
        report.run.bytes_received,
        report.run.cpu_seconds,
        args.signatures.display()
    );
    if let Some(path) = &args.output {
        write_json(path, &report)?;
    }
    Ok(())
}

fn serve_cmd(args: &ServeArgs) -> Result<(), Failure> {
    let judge_key = read_public_key(&args.judge_public)?;
    let items = read_ids(&args.input, &args.id_column)?;
    let mode = match fraction(args.partial)? {
        Some(_) => Mode::Partial,
        None => Mode::Full,
    };
    let config = ServerConfig {
        mode,
        key_consistency: !args.no_key_consistency,
        judge_key,
    };
    eprintln!(
        "privset apsi server: {} items ({})",
        items.len(),
        mode.name()
    );
    let items: Arc<[Vec<u8>]> = items.into();
    serve_sessions(&args.listen, "apsi server", &mut |seed| {
        Ok(Box::new(intersect::Server::new(
            config.clone(),
            items.clone(),
            seed,
        )?))
    })
}

fn intersect_cmd(args: &IntersectArgs) -> Result<(), Failure> {
    let stopwatch = Stopwatch::start();
    let judge_key = read_public_key(&args.judge_public)?;
    let sigs = read_signatures(&args.signatures, Some(args.client_id.as_bytes()))?;
    let subset = read_ids(&args.input, &args.id_column)?;
    let (signed, unsigned) = sigs.select(&subset);
    if !unsigned.is_empty() {
        let shown: Vec<String> = unsigned
            .iter()
            .take(5)
            .map(|x| format!("{:?}", String::from_utf8_lossy(x)))
            .collect();
        eprintln!(
            "apsi intersect: {} items of {} have no signature and are left out (e.g. {})",
            unsigned.len(),
            args.input.display(),
            shown.join(", ")
        );
    }
    let mut client = intersect::Client::new(
        &sigs,
        signed,
        &judge_key,
        !args.no_key_consistency,
        args.max_server_items,
        fresh_seed(),
    )?;
    let run = drive_client(
        &mut client,
        &args.tls,
        &args.peer,
        "apsi intersect",
        &stopwatch,
        &args.prices,
    )?;
    let out = client
        .into_output()
        .ok_or_else(|| Failure::other("the server ended the session without a result"))?;
    if let Some(path) = &args.output_rows {
        let mut w = csv::Writer::from_path(path)
            .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))?;
        w.write_record([args.id_column.as_bytes()])
            .and_then(|_| {
                out.intersection
                    .iter()
                    .try_for_each(|x| w.write_record([x.as_slice()]))
            })
            .and_then(|_| w.flush().map_err(csv::Error::from))
            .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))?;
    }
    let rows = args
        .output_rows
        .as_ref()
        .map(|_| out.intersection.len() as u64);
    let report = IntersectReport::new(&sigs, &out, unsigned.len(), rows, run);
    eprintln!(
        "apsi intersect: {} of {} authorized items in the server's {} ({} left out), {} bytes sent, {} received, {:.2} s CPU -> {}",
        report.cardinality,
        report.items_used,
        report.server_items,
        report.unauthorized_items,
        report.run.bytes_sent,
        report.run.bytes_received,
        report.run.cpu_seconds,
        args.output.display()
    );
    write_json(&args.output, &report)
}
