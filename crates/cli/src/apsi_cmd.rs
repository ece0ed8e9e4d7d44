//! `privset judge keygen|serve` and `privset apsi authorize|serve|intersect`: the three
//! parties of authorized PSI (Falzon-Markatou, "Re-visiting Authorized PSI"), each its
//! own process.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, Subcommand};
use privset_crypto::bls::SecretKey;
use privset_crypto::rng::SessionRng;
use privset_net::Cancel;
use privset_protocols::Party;
use privset_protocols::apsi::authorize::{self, JudgeConfig};
use privset_protocols::apsi::intersect::{self, ServerConfig};
use privset_protocols::apsi::{DEFAULT_MAX_PEER_ITEMS, Mode, PartialFraction};
use privset_run::allow_clients::AllowList;
use privset_run::apsi::{
    AuthorizeReport, IntersectReport, JudgeService, PolicySpec, ServerService, intersect_settings,
    read_keyed_ids, read_public_key, read_secret_key, read_signatures, write_public_key,
    write_secret_key, write_signatures,
};
use privset_run::{Reporter, ServeOptions, Service, endpoint, output_rows};

use crate::connect::TlsArgs;
use crate::fail::Failure;
use crate::input_args::InputArgs;
use crate::metrics::Stopwatch;
use crate::run::write_json;
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
    /// Authorize clients' sets, several sessions at once (--max-concurrent).
    Serve(Box<JudgeServeArgs>),
}

#[derive(Subcommand, Debug)]
pub enum ApsiCommand {
    /// Get the judge's signatures on the client's set (once; reused by every intersect).
    Authorize(Box<AuthorizeArgs>),
    /// Answer clients' intersect requests with this server's set, several at once.
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
    /// Stop after this many sessions have ended (default: serve until killed).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<u64>,
    /// Serve up to N sessions at once, each on its own thread (further clients wait
    /// for a slot after their hello). --timeout bounds each whole session, handshake
    /// included.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_concurrent: u64,
    /// Seconds a connection may take, from its accept, to complete the TLS handshake
    /// and send its hello. Until then it holds no session slot; past it, it is
    /// dropped (logged on stderr).
    #[arg(long, value_name = "SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub handshake_timeout: u64,
    /// Serve only the clients FILE lists, one a line: the name their certificate is
    /// issued for, or `sha256:` and their certificate's SHA-256 fingerprint; `#`
    /// starts a comment. Others are refused with the TLS alert access_denied.
    #[arg(long, value_name = "FILE")]
    pub allow_clients: Option<PathBuf>,
    /// Also append the JSON line of every session (who, sizes, verdict, bytes, time;
    /// printed on stdout) to FILE.
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
    #[command(flatten)]
    pub source: InputArgs,
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
    #[command(flatten)]
    pub source: InputArgs,
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
    #[command(flatten)]
    pub source: InputArgs,
    #[arg(long)]
    pub no_key_consistency: bool,
    /// Largest server set accepted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PEER_ITEMS)]
    pub max_server_items: u64,
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// The intersection (header: the id column names), Parquet if the name ends in
    /// .parquet, else CSV.
    #[arg(long, value_name = "FILE.csv|FILE.parquet")]
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
    let service = JudgeService::new(config, key, policy.build());
    serve_sessions(&args.listen, Arc::new(service))
}

/// Serves sessions of `service` on --listen, up to --max-concurrent at once, each cut
/// off after --timeout, until --max-sessions have ended: one JSON line per session on
/// stdout (and appended to --log), refused connections on stderr.
pub(crate) fn serve_sessions(args: &ListenArgs, service: Arc<dyn Service>) -> Result<(), Failure> {
    let role = service.role();
    let allow_clients = match &args.allow_clients {
        Some(path) => Some(Arc::new(AllowList::read(path)?)),
        None => None,
    };
    let listener = args.tls.bind(&args.listen)?;
    let opts = ServeOptions {
        tls: args.tls.tls_files()?,
        max_sessions: args.max_sessions,
        max_concurrent: usize::try_from(args.max_concurrent).unwrap_or(usize::MAX),
        timeout: Duration::from_secs(args.tls.timeout),
        handshake_timeout: Duration::from_secs(args.handshake_timeout),
        max_pending: endpoint::DEFAULT_MAX_PENDING,
        max_pending_per_address: endpoint::DEFAULT_MAX_PENDING_PER_ADDRESS,
        allow_clients,
        cancel: Cancel::new(),
    };
    if opts.allow_clients.is_some() && opts.tls.is_none() {
        return Err(Failure::config(
            "--allow-clients needs TLS: a plaintext client has no certificate to check",
        ));
    }
    let log = match &args.log {
        Some(path) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| Failure::other(format!("cannot open {}: {e}", path.display())))?,
        )),
        None => None,
    };
    let allowed = match &opts.allow_clients {
        Some(list) => format!("clients allowed: the {} in --allow-clients", list.len()),
        None => "any client the CA vouches for".into(),
    };
    eprintln!(
        "privset {role}: listening on {} (up to {} sessions at once, {allowed})",
        args.listen, args.max_concurrent
    );
    let reporter = Reporter {
        on_session: Box::new(move |session| {
            let line = serde_json::to_string(session).unwrap_or_default();
            println!("{line}");
            if let Some(file) = &log {
                let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = writeln!(f, "{line}") {
                    eprintln!("privset {role}: cannot append to the log: {e}");
                }
            }
        }),
        on_refused: Box::new(move |peer, e| {
            eprintln!("privset {role}: connection from {peer} refused: {e}");
        }),
    };
    let summary = privset_run::serve(&listener, &opts, service, Arc::new(reporter))?;
    eprintln!(
        "privset {role}: {} sessions served ({} failed), {} connections refused",
        summary.sessions, summary.failed, summary.refused
    );
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
pub(crate) fn drive_client(
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
        notice: None,
    };
    let (metered, _) = run::drive_metered(party, link, label, stopwatch, prices.prices())?;
    Ok(metered)
}

pub(crate) fn fresh_seed() -> [u8; 32] {
    SessionRng::from_os().seed()
}

fn authorize_cmd(args: &AuthorizeArgs) -> Result<(), Failure> {
    let stopwatch = Stopwatch::start();
    let keys = args.source.keys()?;
    let items = read_keyed_ids(&args.source.input, &keys)?;
    let config = authorize::ClientConfig {
        client_id: args.client_id.as_bytes().to_vec(),
        partial: fraction(args.partial)?,
        key_consistency: !args.no_key_consistency,
        key_settings: keys.agreed(),
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
    let keys = args.source.keys()?;
    let items = read_keyed_ids(&args.source.input, &keys)?;
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
    let service = ServerService::new(config, items.into(), keys.agreed())?;
    serve_sessions(&args.listen, Arc::new(service))
}

fn intersect_cmd(args: &IntersectArgs) -> Result<(), Failure> {
    let stopwatch = Stopwatch::start();
    let judge_key = read_public_key(&args.judge_public)?;
    let sigs = read_signatures(&args.signatures, Some(args.client_id.as_bytes()))?;
    let keys = args.source.keys()?;
    let settings = intersect_settings(&sigs, &keys.agreed())?;
    let subset = read_keyed_ids(&args.source.input, &keys)?;
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
            args.source.input.display(),
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
    client.agree(settings)?;
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
        let records: Vec<Vec<Vec<u8>>> = out.intersection.iter().map(|x| keys.split(x)).collect();
        output_rows::write_rows(path, &keys.output_columns(), &records)?;
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
