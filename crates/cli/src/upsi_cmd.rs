//! `privset upsi db build|add|remove|rotate-key|set-preset|info`, `privset upsi serve` and `privset upsi
//! query`: unbalanced labeled PSI (Cong et al. 2021) between a server holding a large
//! database and clients with small sets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use privset_protocols::upsi::{Client, Oprf};
use privset_protocols::{Meter, Party};
use privset_run::output_rows;
use privset_run::upsi::{
    DatabaseSpec, QueryReport, Rows, UpsiService, build_database, check_client_items, check_rows,
    info, match_rows, read_database, read_rows, update_database, write_database,
};

use crate::apsi_cmd::{ListenArgs, drive_client, fresh_seed, serve_sessions};
use crate::connect::TlsArgs;
use crate::fail::Failure;
use crate::input_args::InputArgs;
use crate::metrics::Stopwatch;
use crate::progress::Progress;
use crate::run::PriceArgs;
use crate::run::write_json;

#[derive(Subcommand, Debug)]
pub enum UpsiCommand {
    /// The server's database: build it from a file, add or remove items, describe it.
    Db {
        #[command(subcommand)]
        which: DbCommand,
    },
    /// Answer clients' queries from a database, several sessions at once; a changed
    /// database file is picked up without disturbing sessions in flight.
    Serve(Box<ServeArgs>),
    /// Ask a server which of this set's items it holds, and their labels.
    Query(Box<QueryArgs>),
}

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Build a database from an input file (all cores).
    Build(Box<BuildArgs>),
    /// Insert items (or replace their labels) without a rebuild.
    Add(Box<ChangeArgs>),
    /// Remove items without a rebuild.
    Remove(Box<ChangeArgs>),
    /// Replace the OPRF key (every item hashed again, labels re-encrypted); clients'
    /// earlier results say nothing about the new hashes.
    RotateKey {
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// The new key's group (default: the database's own); moves a database built
        /// on ristretto255 to X25519.
        #[arg(long, value_enum)]
        oprf: Option<OprfArg>,
    },
    /// Move a database to another built-in preset of the same data layout (ring,
    /// plaintext prime, slots per item, table, bin size) without a rebuild: for files
    /// built before a release changed a preset's moduli or levels.
    SetPreset {
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// The preset's name (`privset upsi db info` shows the current one).
        #[arg(long, value_name = "NAME")]
        preset: String,
    },
    /// Print a database's preset, size and label length.
    Info {
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub source: InputArgs,
    /// Columns whose cells form each item's label (returned to clients that hold the
    /// item). None: an unlabeled database.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub label_column: Vec<String>,
    /// Bytes of every label (1 to 1,024; default: the longest in the input). Leave room
    /// for labels added later. One label column's cell is stored as it is (a 1-byte score
    /// fits in 1); with several columns each cell takes 2 bytes more, for its length.
    #[arg(long, value_name = "N")]
    pub label_bytes: Option<usize>,
    /// Parameter preset (default: chosen from the input's size and --client-items).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// The OPRF's group.
    #[arg(long, value_enum, default_value_t = OprfArg::X25519)]
    pub oprf: OprfArg,
    /// Most items a client will query with (chooses the preset).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub client_items: usize,
    /// The database file to write (mode 0600: it holds the OPRF key).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Also write the build's figures (items, preset, time, CPU, peak memory) as JSON.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The group of a database's OPRF.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OprfArg {
    /// X25519 on Montgomery u-coordinates (eight lanes on CPUs with AVX-512 IFMA).
    X25519,
    /// ristretto255 (databases built before X25519 was the default).
    Ristretto255,
}

impl OprfArg {
    pub fn oprf(self) -> Oprf {
        match self {
            OprfArg::X25519 => Oprf::X25519,
            OprfArg::Ristretto255 => Oprf::Ristretto255,
        }
    }
}

#[derive(Args, Debug)]
pub struct ChangeArgs {
    #[command(flatten)]
    pub source: InputArgs,
    /// The label columns (add on a labeled database).
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub label_column: Vec<String>,
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub listen: ListenArgs,
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Seconds between looks at the database file for changes.
    #[arg(long, value_name = "SECS", default_value_t = 2)]
    pub reload_interval: u64,
    /// MiB of the database's polynomials to hold ready for queries (about 20 times
    /// their packed size); the rest are converted during each query, which makes it
    /// slower. The default holds a labeled 2^20-item database whole.
    #[arg(long, value_name = "MIB", default_value_t = privset_protocols::upsi::db::DEFAULT_CACHE_BYTES >> 20)]
    pub cache_mb: usize,
}

#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The server's HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub source: InputArgs,
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// The matches: the id columns, then the label's cells (label_1, ...); Parquet if
    /// the name ends in .parquet, else CSV.
    #[arg(long, value_name = "FILE.csv|FILE.parquet")]
    pub output_rows: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PriceArgs,
}

pub fn run(cmd: &UpsiCommand) -> Result<(), Failure> {
    match cmd {
        UpsiCommand::Db { which } => match which {
            DbCommand::Build(args) => build(args),
            DbCommand::Add(args) => change(args, true),
            DbCommand::Remove(args) => change(args, false),
            DbCommand::RotateKey { db, oprf } => {
                let started = Instant::now();
                let (items, oprf) = update_database(db, |database| {
                    // Written to the file, never queried here: no bundle is held ready.
                    database.set_cache_bytes(0);
                    let mut progress = Progress::new("upsi db rotate-key", Some(database.meter()));
                    let oprf = oprf.map_or(database.oprf(), OprfArg::oprf);
                    database
                        .rotate_key_to(oprf, &mut privset_crypto::rng::SessionRng::from_os())?;
                    database.prepare()?;
                    progress.finish();
                    Ok((database.len(), oprf))
                })?;
                eprintln!(
                    "upsi db rotate-key: {} items under a new {} OPRF key in {:.1} s -> {}",
                    items,
                    oprf.name(),
                    started.elapsed().as_secs_f64(),
                    db.display()
                );
                Ok(())
            }
            DbCommand::SetPreset { db, preset } => {
                let started = Instant::now();
                let (items, from) = update_database(db, |database| {
                    database.set_cache_bytes(0);
                    let from = database.preset().to_toml();
                    database.set_preset(privset_protocols::upsi::Preset::named(preset)?)?;
                    let mut progress = Progress::new("upsi db set-preset", Some(database.meter()));
                    database.prepare()?;
                    progress.finish();
                    Ok((database.len(), from))
                })?;
                eprintln!(
                    "upsi db set-preset: {} items moved to preset {} in {:.1} s -> {}\nwas:\n{from}",
                    items,
                    preset,
                    started.elapsed().as_secs_f64(),
                    db.display()
                );
                Ok(())
            }
            DbCommand::Info { db } => {
                let db_file = read_database(db)?;
                println!(
                    "{}",
                    serde_json::to_string_pretty(&info(&db_file)).unwrap_or_default()
                );
                Ok(())
            }
        },
        UpsiCommand::Serve(args) => serve(args),
        UpsiCommand::Query(args) => query(args),
    }
}

fn build(args: &BuildArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let stopwatch = Stopwatch::start();
    let keys = args.source.keys()?;
    let rows = read_rows(&args.source.input, &keys, &args.label_column)?;
    eprintln!(
        "upsi db build: read {} items from {} in {:.1} s; hashing (OPRF) and computing the bins' polynomials on every core",
        rows.ids.len(),
        args.source.input.display(),
        started.elapsed().as_secs_f64()
    );
    let meter = Arc::new(Meter::new());
    let mut progress = Progress::new("upsi db build", Some(Arc::clone(&meter)));
    let spec = DatabaseSpec {
        preset: args.preset.as_deref(),
        client_items: args.client_items,
        label_bytes: args.label_bytes,
        oprf: args.oprf.oprf(),
    };
    let db = build_database(rows, &spec, 0, meter)?;
    progress.status("writing the database file");
    write_database(&args.db, &db)?;
    progress.finish();
    eprintln!(
        "upsi db build: {} items, preset {}, labels of {} bytes, {} bin bundles, {:.1} s -> {}",
        db.len(),
        db.preset().name,
        db.label_len(),
        db.bundle_counts().iter().sum::<u32>(),
        started.elapsed().as_secs_f64(),
        args.db.display()
    );
    if let Some(path) = &args.output {
        let (cpu, wall) = stopwatch.elapsed();
        let mut report = info(&db);
        report["wall_seconds"] = wall.into();
        report["cpu_seconds"] = cpu.into();
        report["peak_rss_mib"] = privset_run::metrics::peak_rss_mib().into();
        report["file_bytes"] = std::fs::metadata(&args.db)
            .map(|m| m.len())
            .unwrap_or(0)
            .into();
        write_json(path, &report)?;
    }
    Ok(())
}

fn change(args: &ChangeArgs, add: bool) -> Result<(), Failure> {
    let started = Instant::now();
    let keys = args.source.keys()?;
    // Read the rows before taking the database's lock: other writers wait only for the
    // change itself.
    let rows = read_rows(
        &args.source.input,
        &keys,
        if add { &args.label_column } else { &[] },
    )?;
    let (before, after) = update_database(&args.db, |db| {
        check_rows(db, &rows)?;
        db.set_cache_bytes(0);
        if add && db.label_len() > 0 && args.label_column.is_empty() {
            return Err(Failure::config(
                "this database is labeled: give --label-column for the items added",
            ));
        }
        let Rows { ids, labels, .. } = rows.into_layout(db.label_layout(), db.label_len())?;
        let before = db.len();
        let mut rng = privset_crypto::rng::SessionRng::from_os();
        let mut progress = Progress::new("upsi db", Some(db.meter()));
        if add {
            db.insert(&ids, &labels, &mut rng)?;
        } else {
            db.remove(&ids);
        }
        db.prepare()?;
        progress.finish();
        Ok((before, db.len()))
    })?;
    eprintln!(
        "upsi db {}: {} -> {} items in {:.1} s -> {}",
        if add { "add" } else { "remove" },
        before,
        after,
        started.elapsed().as_secs_f64(),
        args.db.display()
    );
    Ok(())
}

fn serve(args: &ServeArgs) -> Result<(), Failure> {
    let service = Arc::new(UpsiService::open(
        &args.db,
        privset_run::upsi::mib(args.cache_mb),
    )?);
    let db = service.database();
    eprintln!(
        "privset upsi server: {} items, preset {}, labels of {} bytes",
        db.len(),
        db.preset().name,
        db.label_len()
    );
    drop(db);
    let path = args.db.display().to_string();
    service.watch(
        Duration::from_secs(args.reload_interval.max(1)),
        move |result| match result {
            Ok(db) => eprintln!(
                "privset upsi server: {path} changed: {} items now (sessions in flight keep the old database)",
                db.len()
            ),
            Err(e) => eprintln!(
                "privset upsi server: {path} changed but does not load ({}); still serving the previous database",
                e.message
            ),
        },
    );
    serve_sessions(&args.listen, service)
}

fn query(args: &QueryArgs) -> Result<(), Failure> {
    let stopwatch = Stopwatch::start();
    let keys = args.source.keys()?;
    let items = read_rows(&args.source.input, &keys, &[])?.ids;
    check_client_items(items.len())?;
    let mut client = Client::new(items.clone(), fresh_seed())?;
    client.agree(keys.agreed())?;
    let run = drive_client(
        &mut client,
        &args.tls,
        &args.peer,
        "upsi query",
        &stopwatch,
        &args.prices,
    )?;
    let out = client
        .into_output()
        .ok_or_else(|| Failure::other("the server ended the session without an answer"))?;
    let rows = match &args.output_rows {
        Some(path) => {
            let (header, rows) = match_rows(&keys, &items, &out);
            output_rows::write_rows(path, &header, &rows)?;
            Some(rows.len() as u64)
        }
        None => None,
    };
    let report = QueryReport::new(&out, items.len(), rows, run);
    eprintln!(
        "upsi query: {} of {} items in the server's set (preset {}, false-positive probability 2^{:.0}), {} bytes sent, {} received, {:.2} s wall -> {}",
        report.matches,
        report.items,
        report.preset,
        report.false_positive_log2,
        report.run.bytes_sent,
        report.run.bytes_received,
        report.run.wall_seconds,
        args.output.display()
    );
    write_json(&args.output, &report)
}
