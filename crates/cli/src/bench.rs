//! `privset bench pi-sum`: both parties as separate processes over mutual TLS on
//! loopback, per size, homomorphic scheme and Z encoding; printed in the shape of
//! Ion et al. 2020, Tables 5-6 next to the deployed row.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Subcommand;
use privset_crypto::rng::SessionRng;

use crate::bench_pso;
use crate::datagen;
use crate::demo::free_port;
use crate::fail::Failure;
use crate::metrics::{MB, Prices};

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The set operations of Chen et al. 2024 (Tables 1-7), optionally beside OpenMined PSI and
    /// SecretFlow's ECDH-PSI.
    Pso(bench_pso::PsoBenchArgs),
    /// APSI and Partial-APSI (Falzon and Markatou, Table 3): judge, client and server per phase,
    /// and each party's CPU per item against the measured floor.
    Apsi(crate::bench_apsi::ApsiBenchArgs),
    /// Multi-party PSI (de Jong, Table 7.4's tests): every participant its own process;
    /// CPU, bytes, wall, memory and cost per role, and Table 7.5's comparison.
    Mpsi(crate::bench_mpsi::MpsiBenchArgs),
    /// Unbalanced labeled PSI (Cong et al. 2021): database build, query time, bytes each
    /// way and memory, beside Microsoft APSI's figures on this machine kind.
    Upsi(crate::bench_upsi::UpsiBenchArgs),
    /// PI-Sum (Ion et al. 2020): CPU per party, wall, bytes each way, peak memory, cost,
    /// with Tables 5 and 6's row of the same protocol and size beside ours.
    PiSum {
        /// Items per party, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "4096,65536,100000")]
        sizes: Vec<usize>,
        /// Protocols to run: ddh (Fig. 2), rot (Fig. 3), bloom (Fig. 4).
        #[arg(long, value_delimiter = ',', default_value = "ddh")]
        protocol: Vec<String>,
        /// Homomorphic schemes to run.
        #[arg(long, value_delimiter = ',', default_value = "paillier,elgamal")]
        he: Vec<String>,
        /// Z encodings to run.
        #[arg(long, value_delimiter = ',', default_value = "list,gcs,bloom")]
        z: Vec<String>,
        /// Parameter sets: `default` (128-bit: 3072-bit modulus, s = 2, values < 2^32)
        /// and `seed` (as deployed: 1536-bit modulus, s = 3, values and sums < 2^32).
        #[arg(long, value_delimiter = ',', default_value = "seed,default")]
        params: Vec<String>,
        /// Group.
        #[arg(long, default_value = "ristretto255")]
        group: String,
        /// The reverse variant (Ion et al. 2020, App. G, Fig. 6; DDH only): P1 learns
        /// the sum, and masks and re-randomizes every item of P2's.
        #[arg(long)]
        reverse: bool,
        /// Working directory (default: a temporary one).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

pub fn run(cmd: &BenchCommand) -> Result<(), Failure> {
    let temp = || std::env::temp_dir().join(format!("privset-bench-{}", std::process::id()));
    match cmd {
        BenchCommand::Pso(args) => bench_pso::run(args, &args.dir.clone().unwrap_or_else(temp)),
        BenchCommand::Mpsi(args) => {
            crate::bench_mpsi::run(args, &args.dir.clone().unwrap_or_else(temp))
        }
        BenchCommand::Upsi(args) => {
            crate::bench_upsi::run(args, &args.dir.clone().unwrap_or_else(temp))
        }
        BenchCommand::Apsi(args) => {
            crate::bench_apsi::run(args, &args.dir.clone().unwrap_or_else(temp))
        }
        BenchCommand::PiSum {
            sizes,
            protocol,
            he,
            z,
            params,
            group,
            reverse,
            dir,
        } => {
            let dir = dir.clone().unwrap_or_else(temp);
            let grid = PiSumGrid {
                sizes,
                protocols: protocol,
                hes: he,
                zs: z,
                params,
                group,
                reverse: *reverse,
            };
            bench_pi_sum(&dir, &grid)
        }
    }
}

/// A JSON file a benchmarked process wrote (its RESULT.json or build report).
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(&std::fs::read_to_string(path)?).map_err(|e| Failure::other(e.to_string()))
}

/// A number field of a report, NaN when absent (printed as such, never invented).
pub(crate) fn number(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

pub struct PartyResult {
    pub cpu: f64,
    pub wall: f64,
    pub sent: u64,
    pub rss: f64,
    pub cardinality: Option<u64>,
    /// pi-sum: the first column's sum; set operations: `sum`.
    pub sum: Option<u128>,
    /// Rows written (set operations with --output-rows).
    pub rows: Option<u64>,
}

/// What `bench pi-sum` runs: every combination of these.
struct PiSumGrid<'a> {
    sizes: &'a [usize],
    protocols: &'a [String],
    hes: &'a [String],
    zs: &'a [String],
    params: &'a [String],
    group: &'a str,
    reverse: bool,
}

fn bench_pi_sum(dir: &Path, grid: &PiSumGrid<'_>) -> Result<(), Failure> {
    let exe = std::env::current_exe()?;
    let certs = dir.join("certs");
    privset_net::certs::generate(&certs, &["p1".to_string(), "p2".to_string()])?;
    let prices = Prices::default();
    let group = grid.group;
    println!(
        "PI-Sum benchmark ({group}); both parties as separate processes over mutual TLS 1.3 on loopback, every item in the intersection (Ion et al. 2020, Sec. 5.1)."
    );
    println!(
        "MB = 2^20 bytes, cost in cents at $0.01/CPU-hour and $0.08/GB (Ion et al. 2020, Table 1). CPU = user+system seconds of each process (all threads)."
    );
    if grid.reverse {
        println!(
            "Reverse variant (Ion et al. 2020, App. G, Fig. 6): P1 learns the sum; the paper rows are the forward protocol's."
        );
    }
    println!(
        "`paper` rows: Ion et al. 2020, Tables 5-6 for the same protocol and size (one thread of a Xeon E5-1650 v3, both parties' time, network excluded; RLWE values except the deployed DDH + Paillier row)."
    );
    println!();
    println!(
        "{:>8} {:>6} {:>8} {:>9} {:>6} | {:>8} {:>8} {:>8} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>7} | {:>8} | check",
        "items",
        "proto",
        "params",
        "he",
        "Z",
        "CPU p1",
        "CPU p2",
        "CPU sum",
        "wall",
        "p1->p2",
        "p2->p1",
        "total",
        "RSS p1",
        "RSS p2",
        "cents"
    );
    let mut rng = SessionRng::from_os();
    let mut datasets: HashMap<(usize, u64), (PathBuf, datagen::Expected)> = HashMap::new();
    for &n in grid.sizes {
        for protocol in grid.protocols {
            for p in grid.params {
                for he in grid.hes {
                    let (modulus, s, value_bound, sum_bound) = parameter_set(p, he, n)?;
                    let (data, expected) = match datasets.entry((n, value_bound)) {
                        Entry::Occupied(e) => e.into_mut(),
                        Entry::Vacant(e) => {
                            let data = dir.join(format!("data-{n}-{value_bound}"));
                            let expected = datagen::write_pair(
                                &data,
                                n,
                                n,
                                n,
                                value_bound,
                                datagen::email_id,
                                &mut rng,
                            )?;
                            e.insert((data, expected))
                        }
                    };
                    // Z is the DDH protocol's; the others run once.
                    let zs: &[String] = if protocol == "ddh" {
                        grid.zs
                    } else {
                        &grid.zs[..1.min(grid.zs.len())]
                    };
                    for z in zs {
                        let mut extra = vec![
                            "--protocol".to_string(),
                            protocol.clone(),
                            "--group".to_string(),
                            group.to_string(),
                            "--values-he".into(),
                            he.clone(),
                            "--z-encoding".into(),
                            z.clone(),
                            "--he-modulus-bits".into(),
                            modulus.to_string(),
                            "--dj-s".into(),
                            s.to_string(),
                            "--value-bound".into(),
                            value_bound.to_string(),
                        ];
                        if let Some(b) = sum_bound {
                            extra.extend(["--sum-bound".to_string(), b.to_string()]);
                        }
                        if grid.reverse {
                            extra.push("--reverse".into());
                        }
                        let spec = PairSpec {
                            command: "pi-sum",
                            roles: ["p1", "p2"],
                            second_has_values: true,
                            env: &[],
                        };
                        let (r1, r2) = run_pair(&exe, &spec, data, &certs, &extra)?;
                        let ok = r1.cardinality == Some(expected.cardinality)
                            && r2.cardinality == Some(expected.cardinality)
                            && if grid.reverse { r1.sum } else { r2.sum } == Some(expected.sum);
                        let z_shown = if protocol == "ddh" { z.as_str() } else { "-" };
                        println!(
                            "{:>8} {:>6} {:>8} {:>9} {:>6} | {} | {}",
                            n,
                            protocol,
                            p,
                            he,
                            z_shown,
                            pair_figures(&r1, &r2, &prices),
                            if ok { "ok" } else { "MISMATCH" }
                        );
                        if !ok {
                            return Err(Failure::other(format!(
                                "benchmark result for {n} items does not match the plaintext"
                            )));
                        }
                    }
                    if let Some(row) = paper_row(protocol, he, n) {
                        let blank = "";
                        println!(
                            "{n:>8} {:>6} {blank:>8} {:>9} {blank:>6} | {blank:>8} {blank:>8} {:>8.2} {blank:>7} | {blank:>8} {blank:>8} {:>8.3} | {blank:>7} {blank:>7} | {:>8.4} |",
                            "paper", row.label, row.seconds, row.mb, row.cents
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// One row of Ion et al. 2020, Tables 5 (both parties' seconds on one thread, MB) and 6
/// (cents).
struct PaperRow {
    label: &'static str,
    seconds: f64,
    mb: f64,
    cents: f64,
}

/// Ion et al. 2020, Tables 5-6 at the sizes they list: (items, DDH + Paillier, DDH +
/// RLWE, Random-OT + RLWE, Bloom filter + RLWE), each (seconds, MB, cents).
/// Per protocol column: (seconds, MB, cents).
type PaperCells = [(f64, f64, f64); 4];

#[rustfmt::skip]
const PAPER_TABLES_5_6: [(usize, PaperCells); 11] = [
    (1000, [(0.81, 0.08, 0.0008), (0.49, 0.14, 0.0011), (9.89, 1.33, 0.0131), (18.24, 8.25, 0.0695)]),
    (2000, [(1.55, 0.16, 0.0017), (0.96, 0.21, 0.0018), (19.61, 2.52, 0.0251), (36.60, 16.76, 0.1410)]),
    (3000, [(2.29, 0.24, 0.0025), (1.42, 0.30, 0.0026), (29.66, 3.74, 0.0374), (56.22, 25.41, 0.2140)]),
    (4000, [(3.04, 0.33, 0.0033), (1.88, 0.37, 0.0033), (39.33, 4.94, 0.0494), (74.28, 34.11, 0.2871)]),
    (5000, [(3.79, 0.41, 0.0042), (2.34, 0.47, 0.0041), (48.72, 6.16, 0.0616), (93.29, 42.90, 0.3610)]),
    (10000, [(7.47, 0.81, 0.0084), (4.72, 0.87, 0.0078), (97.67, 12.22, 0.1245), (191.34, 87.33, 0.7354)]),
    (20000, [(14.81, 1.62, 0.0167), (9.61, 1.71, 0.0153), (196.86, 24.55, 0.2456), (383.75, 177.82, 1.4958)]),
    (30000, [(22.15, 2.43, 0.0251), (14.16, 2.54, 0.0228), (294.95, 36.73, 0.3689), (582.56, 269.51, 2.2673)]),
    (40000, [(29.63, 3.24, 0.0335), (18.73, 3.37, 0.0303), (399.50, 49.02, 0.4939), (782.62, 361.98, 3.0453)]),
    (50000, [(37.08, 4.05, 0.0419), (23.26, 4.20, 0.0377), (492.17, 61.34, 0.6159), (987.30, 455.04, 3.8293)]),
    (100000, [(74.46, 8.11, 0.0840), (47.40, 8.34, 0.0753), (989.88, 123.21, 1.237), (1988.47, 925.98, 7.7865)]),
];

/// The paper's row for a protocol, value scheme and size, when Tables 5-6 list one.
fn paper_row(protocol: &str, he: &str, n: usize) -> Option<PaperRow> {
    let (column, label) = match (protocol, he) {
        ("ddh", "paillier") => (0, "ddh+pai"),
        ("ddh", "rlwe") => (1, "ddh+rlwe"),
        ("rot", _) => (2, "rot+rlwe"),
        ("bloom", _) => (3, "bf+rlwe"),
        _ => return None,
    };
    let (_, row) = PAPER_TABLES_5_6.iter().find(|(items, _)| *items == n)?;
    let (seconds, mb, cents) = row[column];
    Some(PaperRow {
        label,
        seconds,
        mb,
        cents,
    })
}

/// (modulus bits, Damgard-Jurik s, value bound, sum bound) of a named parameter set.
///
/// `seed`: as deployed (Ion et al. 2020, Sec. 3.2): values and their sums below 2^32.
/// `default`: 128-bit Paillier, 32-bit values with the never-wrapping default sum bound;
/// exponential ElGamal can only decrypt sums below 2^44 (App. B.2), so its rows scale the
/// values down to keep every sum below 2^40.
fn parameter_set(name: &str, he: &str, n: usize) -> Result<(u32, u32, u64, Option<u128>), Failure> {
    let n = n.max(1) as u64;
    match (name, he) {
        ("seed", _) => Ok((1536, 3, u32::MAX as u64 / n, Some(u32::MAX as u128))),
        ("default", "elgamal") => Ok((3072, 2, ((1u64 << 40) / n).min(u32::MAX as u64), None)),
        ("default", _) => Ok((3072, 2, u32::MAX as u64, None)),
        (other, _) => Err(Failure::input(format!(
            "unknown parameter set {other:?} (seed, default)"
        ))),
    }
}

/// The measured columns of a pair's row: CPU of each party, their sum and the wall
/// time; MB each way and in total; peak RSS of each; cost in cents.
pub fn pair_figures(a: &PartyResult, b: &PartyResult, prices: &Prices) -> String {
    let cpu = a.cpu + b.cpu;
    let total = a.sent + b.sent;
    format!(
        "{:>8.2} {:>8.2} {:>8.2} {:>7.2} | {:>8.3} {:>8.3} {:>8.3} | {:>7.0} {:>7.0} | {:>8.5}",
        a.cpu,
        b.cpu,
        cpu,
        a.wall.max(b.wall),
        a.sent as f64 / MB,
        b.sent as f64 / MB,
        total as f64 / MB,
        a.rss,
        b.rss,
        prices.cents(cpu, total)
    )
}

/// One benchmark pair: which subcommand, the two role names (the first listens and
/// reads `p1.csv`, the second connects and reads `p2.csv`), and whether the second
/// holds the value column.
pub struct PairSpec<'a> {
    pub command: &'a str,
    pub roles: [&'a str; 2],
    pub second_has_values: bool,
    /// Extra environment for both processes (e.g. `RAYON_NUM_THREADS`).
    pub env: &'a [(String, String)],
}

/// Runs both parties as separate processes over mutual TLS on loopback and reads their
/// RESULT.json files.
pub fn run_pair(
    exe: &Path,
    spec: &PairSpec<'_>,
    data: &Path,
    certs: &Path,
    extra: &[String],
) -> Result<(PartyResult, PartyResult), Failure> {
    run_pair_split(exe, spec, data, certs, extra, extra)
}

/// [`run_pair`] with different extra flags for each party.
pub fn run_pair_split(
    exe: &Path,
    spec: &PairSpec<'_>,
    data: &Path,
    certs: &Path,
    first_extra: &[String],
    second_extra: &[String],
) -> Result<(PartyResult, PartyResult), Failure> {
    let port = free_port()?;
    let spawn = |role: &str, file: &str, link: [&str; 2], values: bool, extra: &[String]| {
        let mut c = Command::new(exe);
        c.args([spec.command, "--role", role, link[0], link[1]])
            .arg("--input")
            .arg(data.join(file))
            .args(["--id-column", "id"])
            .arg("--tls-ca")
            .arg(certs.join("ca.pem"))
            .arg("--tls-cert")
            .arg(certs.join(format!("{role}.pem")))
            .arg("--tls-key")
            .arg(certs.join(format!("{role}.key")))
            .arg("--output")
            .arg(data.join(format!("{role}-result.json")))
            .args(extra)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stderr(std::process::Stdio::null());
        if values {
            c.args(["--value-column", "value"]);
        }
        c.spawn()
            .map_err(|e| Failure::other(format!("cannot start {}: {e}", exe.display())))
    };
    let addr = format!("127.0.0.1:{port}");
    let [first, second] = spec.roles;
    let mut a = spawn(first, "p1.csv", ["--listen", &addr], false, first_extra)?;
    let mut b = spawn(
        second,
        "p2.csv",
        ["--peer", &addr],
        spec.second_has_values,
        second_extra,
    )?;
    let sb = b.wait()?;
    let sa = a.wait()?;
    if !sa.success() || !sb.success() {
        return Err(Failure::other(format!(
            "a benchmark party failed ({first}: {sa}, {second}: {sb}); rerun the pair by hand with the flags {first_extra:?} to see why"
        )));
    }
    Ok((
        read_result(&data.join(format!("{first}-result.json")))?,
        read_result(&data.join(format!("{second}-result.json")))?,
    ))
}

fn read_result(path: &Path) -> Result<PartyResult, Failure> {
    let text = std::fs::read_to_string(path)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Failure::other(e.to_string()))?;
    Ok(PartyResult {
        cpu: v["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        wall: v["wall_seconds"].as_f64().unwrap_or(f64::NAN),
        sent: v["bytes_sent"].as_u64().unwrap_or(0),
        rss: v["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
        cardinality: v["cardinality"].as_u64(),
        sum: v["sums"]
            .get(0)
            .or(v.get("sum"))
            .and_then(|s| s.as_u64())
            .map(|s| s as u128),
        rows: v["rows"].as_u64(),
    })
}
