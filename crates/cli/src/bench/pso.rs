//! `privset bench pso`: the set operations of Chen et al. 2024, both parties as separate
//! processes over mutual TLS on loopback, printed in the shape of the paper's Tables 1-7
//! with the paper's Curve25519 rows beside ours, and optionally OpenMined PSI and
//! SecretFlow's ECDH-PSI measured in the same run (bench/peers/).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use privset_crypto::rng::SessionRng;

use super::pairs::{self, PairSpec, PartyResult, pair_figures};
use crate::datagen;
use crate::fail::Failure;
use crate::metrics::{MB, Prices};

#[derive(Args, Debug)]
pub struct PsoBenchArgs {
    /// Operations, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "psi,psi-card,psi-card-sum,psu,psi-share,private-id"
    )]
    pub ops: Vec<String>,
    /// Items per party, comma-separated (Chen et al. 2024: 4096,65536,1048576).
    #[arg(long, value_delimiter = ',', default_value = "4096,65536")]
    pub sizes: Vec<usize>,
    /// Groups, comma-separated (ristretto255, p256, p256-compressed, x25519).
    #[arg(long, value_delimiter = ',', default_value = "ristretto255,x25519")]
    pub groups: Vec<String>,
    /// Constructions (cwprf, poprf, vole; poprf runs only with list and prime-order groups,
    /// vole only for psi).
    #[arg(long, value_delimiter = ',', default_value = "cwprf")]
    pub mqrpmt: Vec<String>,
    /// Last-message encodings (list, bloom, gcs; ordered for psi).
    #[arg(long, value_delimiter = ',', default_value = "bloom")]
    pub last_message: Vec<String>,
    /// Threads per party (RAYON_NUM_THREADS); Chen et al. 2024, Tables 2-7 are single-threaded.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Also measure the peers (OpenMined PSI, SecretFlow ECDH-PSI) for psi and psi-card,
    /// running bench/peers/peer_bench.py with $PRIVSET_PEERS_PYTHON (set up by
    /// bench/peers/setup.sh).
    #[arg(long)]
    pub peers: bool,
    /// Read peer figures from a JSON-lines file written by bench/peers/peer_bench.py
    /// instead of running it.
    #[arg(long, value_name = "FILE.jsonl")]
    pub peer_results: Option<PathBuf>,
    /// Working directory (default: a temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One measured run.
struct Row {
    op: String,
    group: String,
    mqrpmt: String,
    last: String,
    n: usize,
    cpu: f64,
    wall: f64,
    bytes: u64,
}

/// Chen et al.'s Curve25519 rows (single thread, LAN): seconds and MB at 2^12, 2^16, 2^20.
fn paper_row(op: &str) -> Option<(&'static str, [f64; 3], [f64; 3])> {
    Some(match op {
        "psi" => ("Table 2", [0.29, 3.56, 55.11], [0.40, 6.25, 99.71]),
        "psi-card" => ("Table 4", [0.27, 3.51, 54.89], [0.27, 4.46, 71.30]),
        "psi-card-sum" => ("Table 5", [0.31, 3.73, 57.44], [0.37, 5.75, 95.30]),
        "psu" => ("Table 6", [0.30, 3.55, 55.48], [0.41, 6.48, 103.31]),
        "private-id" => ("Table 7", [0.34, 3.78, 59.76], [2.82, 12.74, 171.54]),
        _ => return None,
    })
}

pub fn run(args: &PsoBenchArgs, dir: &Path) -> Result<(), Failure> {
    let exe = std::env::current_exe()?;
    let certs = dir.join("certs");
    privset_net::certs::generate(&certs, &["receiver".to_string(), "sender".to_string()])?;
    let prices = Prices::default();
    let env = vec![("RAYON_NUM_THREADS".to_string(), args.threads.to_string())];
    println!(
        "Set operations (Chen et al. 2024); receiver and sender as separate processes over mutual TLS 1.3 on loopback, {} thread(s) each; 16-byte (128-bit) items, half of them shared (Chen et al. 2024, Sec. 7.2).",
        args.threads
    );
    println!(
        "CPU = user+system seconds of both processes; MB = 2^20 bytes; cents at $0.01/CPU-hour and $0.08/GB (Ion et al. 2020, Table 1)."
    );
    println!();
    println!(
        "{:>12} {:>15} {:>6} {:>5} {:>8} | {:>8} {:>8} {:>8} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>7} | {:>8} | check",
        "op",
        "group",
        "mqrpmt",
        "last",
        "items",
        "CPU rcv",
        "CPU snd",
        "CPU sum",
        "wall",
        "rcv->snd",
        "snd->rcv",
        "total",
        "RSS r",
        "RSS s",
        "cents"
    );
    let mut rng = SessionRng::from_os();
    let mut rows = Vec::new();
    for &n in &args.sizes {
        let data = dir.join(format!("data-{n}"));
        let expected = datagen::write_pair(
            &data,
            n,
            n,
            n / 2,
            u32::MAX as u64,
            datagen::item128_id,
            &mut rng,
        )?;
        for op in &args.ops {
            for group in &args.groups {
                for mqrpmt in &args.mqrpmt {
                    for last in &args.last_message {
                        let first = group == &args.groups[0] && last == &args.last_message[0];
                        if !combination_runs(op, group, mqrpmt, last, first) {
                            continue;
                        }
                        let spec = PairSpec {
                            command: op,
                            roles: ["receiver", "sender"],
                            second_has_values: op == "psi-card-sum",
                            env: &env,
                        };
                        // vole has no group or last message: asking for one is refused.
                        let settings: &[&str] = if mqrpmt == "vole" {
                            &["--mqrpmt", mqrpmt]
                        } else {
                            &["--group", group, "--mqrpmt", mqrpmt, "--last-message", last]
                        };
                        let mut extra: Vec<String> =
                            settings.iter().map(|s| s.to_string()).collect();
                        extra.push("--output-rows".into());
                        extra.push(data.join(format!("{op}-rows.csv")).display().to_string());
                        // Each party writes its own rows file: keep them apart.
                        let (r, s) = run_pair_rows(&exe, &spec, &data, &certs, &extra)?;
                        let ok = check(op, n, &expected, &r, &s);
                        let cpu = r.cpu + s.cpu;
                        let total = r.sent + s.sent;
                        println!(
                            "{:>12} {:>15} {:>6} {:>5} {:>8} | {} | {}",
                            op,
                            group,
                            mqrpmt,
                            last,
                            n,
                            pair_figures(&r, &s, &prices),
                            if ok { "ok" } else { "MISMATCH" }
                        );
                        if !ok {
                            return Err(Failure::other(format!(
                                "{op} at {n} items does not match the plaintext answer"
                            )));
                        }
                        rows.push(Row {
                            op: op.clone(),
                            group: group.clone(),
                            mqrpmt: mqrpmt.clone(),
                            last: last.clone(),
                            n,
                            cpu,
                            wall: r.wall.max(s.wall),
                            bytes: total,
                        });
                    }
                }
            }
        }
    }
    print_paper_shape(args, &rows);
    let peers = match (&args.peer_results, args.peers) {
        (Some(file), _) => Some(read_peers(file)?),
        (None, true) => Some(run_peers(args, dir)?),
        (None, false) => None,
    };
    if let Some(peers) = peers {
        print_peer_comparison(&rows, &peers);
    }
    Ok(())
}

/// Runs the pair with each party writing its rows to its own file.
fn run_pair_rows(
    exe: &Path,
    spec: &PairSpec<'_>,
    data: &Path,
    certs: &Path,
    extra: &[String],
) -> Result<(PartyResult, PartyResult), Failure> {
    // The flag names one file and both processes would write it: suffix it per role.
    let rows_at = extra
        .iter()
        .position(|a| a == "--output-rows")
        .map(|i| i + 1);
    let mut receiver_extra = extra.to_vec();
    let mut sender_extra = extra.to_vec();
    if let Some(i) = rows_at {
        receiver_extra[i] = format!("{}.receiver", extra[i]);
        sender_extra[i] = format!("{}.sender", extra[i]);
    }
    pairs::run_pair_split(exe, spec, data, certs, &receiver_extra, &sender_extra)
}

/// `first`: the first group and last message asked for. vole uses neither, so it runs
/// once per size, under those.
fn combination_runs(op: &str, group: &str, mqrpmt: &str, last: &str, first: bool) -> bool {
    if mqrpmt == "vole" {
        return op == "psi" && first;
    }
    if last == "ordered" {
        return op == "psi" && mqrpmt == "cwprf";
    }
    if mqrpmt == "poprf" {
        return last == "list" && group != "x25519" && op != "private-id";
    }
    true
}

fn check(
    op: &str,
    n: usize,
    expected: &datagen::Expected,
    r: &PartyResult,
    s: &PartyResult,
) -> bool {
    let card = expected.cardinality;
    let n = n as u64;
    match op {
        "psi" => r.cardinality == Some(card) && r.rows == Some(card),
        "psi-card" => r.cardinality == Some(card),
        "psi-card-sum" => {
            r.cardinality == Some(card)
                && s.cardinality == Some(card)
                && s.sum == Some(expected.sum)
        }
        "psu" => r.rows == Some(2 * n - card),
        "psi-share" => r.cardinality == Some(card) && r.rows == Some(card) && s.rows == Some(n),
        "private-id" => r.rows == Some(2 * n - card) && s.rows == Some(2 * n - card),
        _ => false,
    }
}

/// Chen et al.'s table shape: one row per variant, time then MB per size, with the paper's
/// Curve25519 row of the same table.
fn print_paper_shape(args: &PsoBenchArgs, rows: &[Row]) {
    println!();
    println!(
        "In the shape of Chen et al. 2024, Tables 1-7 (time = wall seconds, {} thread(s) per party; paper: single thread, LAN, i7-11700):",
        args.threads
    );
    for op in &args.ops {
        let head: Vec<String> = args.sizes.iter().map(|n| format!("n={n}")).collect();
        println!();
        println!(
            "{op:<14} {:<36} | time (s) {} | CPU (s) {} | MB {}",
            "",
            head.join(" "),
            head.join(" "),
            head.join(" ")
        );
        let mut variants: Vec<(String, String, String)> = Vec::new();
        for r in rows.iter().filter(|r| &r.op == op) {
            let v = (r.group.clone(), r.mqrpmt.clone(), r.last.clone());
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        for (g, m, l) in variants {
            let cell = |n: usize, f: &dyn Fn(&Row) -> f64| {
                rows.iter()
                    .find(|r| {
                        &r.op == op && r.group == g && r.mqrpmt == m && r.last == l && r.n == n
                    })
                    .map_or(format!("{:>8}", "-"), |r| format!("{:>8.2}", f(r)))
            };
            let times: Vec<String> = args.sizes.iter().map(|&n| cell(n, &|r| r.wall)).collect();
            let cpus: Vec<String> = args.sizes.iter().map(|&n| cell(n, &|r| r.cpu)).collect();
            let mbs: Vec<String> = args
                .sizes
                .iter()
                .map(|&n| cell(n, &|r| r.bytes as f64 / MB))
                .collect();
            println!(
                "  privset {:<29} | {} | {} | {}",
                format!("{g}/{m}/{l}"),
                times.join(" "),
                cpus.join(" "),
                mbs.join(" ")
            );
        }
        if let Some((table, secs, mbs)) = paper_row(op) {
            let pick = |v: &[f64; 3]| -> Vec<String> {
                args.sizes
                    .iter()
                    .map(|&n| match n {
                        4096 => format!("{:>8.2}", v[0]),
                        65536 => format!("{:>8.2}", v[1]),
                        1048576 => format!("{:>8.2}", v[2]),
                        _ => format!("{:>8}", "-"),
                    })
                    .collect()
            };
            println!(
                "  Chen et al. 2024 {table}, Curve25519 {:<10} | {} | {} | {}",
                "",
                pick(&secs).join(" "),
                vec![format!("{:>8}", "-"); args.sizes.len()].join(" "),
                pick(&mbs).join(" ")
            );
        }
    }
}

/// One peer measurement (a line of bench/peers/peer_bench.py's output).
struct PeerRow {
    peer: String,
    op: String,
    n: usize,
    cpu: f64,
    bytes: u64,
}

fn read_peers(file: &Path) -> Result<Vec<PeerRow>, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", file.display())))?;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| Failure::input(format!("{}: {e}", file.display())))?;
        out.push(PeerRow {
            peer: format!(
                "{}/{}",
                v["peer"].as_str().unwrap_or("?"),
                v["variant"].as_str().unwrap_or("-")
            ),
            op: v["op"].as_str().unwrap_or("?").to_string(),
            n: v["n"].as_u64().unwrap_or(0) as usize,
            cpu: v["cpu_s_total"].as_f64().unwrap_or(f64::NAN),
            bytes: v["bytes_total"].as_u64().unwrap_or(0),
        });
    }
    Ok(out)
}

fn run_peers(args: &PsoBenchArgs, dir: &Path) -> Result<Vec<PeerRow>, Failure> {
    let python = std::env::var("PRIVSET_PEERS_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/privset-peers-venv/bin/python")
    });
    let out = dir.join("peers.jsonl");
    let sizes: Vec<String> = args.sizes.iter().map(|n| n.to_string()).collect();
    let status = Command::new(&python)
        .arg("bench/peers/peer_bench.py")
        .args([
            "--sizes",
            &sizes.join(","),
            "--peers",
            "openmined,secretflow",
            "--out",
        ])
        .arg(&out)
        .status()
        .map_err(|e| {
            Failure::other(format!(
                "cannot run {python} (run bench/peers/setup.sh, or set PRIVSET_PEERS_PYTHON): {e}"
            ))
        })?;
    if !status.success() {
        return Err(Failure::other(format!("peer benchmark failed: {status}")));
    }
    read_peers(&out)
}

fn print_peer_comparison(rows: &[Row], peers: &[PeerRow]) {
    println!();
    println!(
        "Against the peers (same machine; CPU = both parties' CPU seconds; ratio = privset / peer):"
    );
    println!(
        "{:>9} {:>8} {:>12} {:>34} | {:>9} {:>9} {:>7} | {:>9} {:>9} {:>7}",
        "op",
        "items",
        "peer",
        "privset variant",
        "CPU us",
        "CPU peer",
        "ratio",
        "MB us",
        "MB peer",
        "ratio"
    );
    for p in peers {
        for r in rows.iter().filter(|r| r.op == p.op && r.n == p.n) {
            println!(
                "{:>9} {:>8} {:>27} {:>34} | {:>9.2} {:>9.2} {:>7.3} | {:>9.2} {:>9.2} {:>7.3}",
                p.op,
                p.n,
                p.peer,
                format!("{}/{}/{}", r.group, r.mqrpmt, r.last),
                r.cpu,
                p.cpu,
                r.cpu / p.cpu,
                r.bytes as f64 / MB,
                p.bytes as f64 / MB,
                r.bytes as f64 / p.bytes.max(1) as f64
            );
        }
    }
}
