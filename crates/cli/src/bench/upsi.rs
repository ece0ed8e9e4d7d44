//! `privset bench upsi`: unbalanced labeled PSI (Cong et al. 2021) with the database
//! builder, the server and the client as separate processes over mutual TLS on
//! loopback, printed beside Microsoft APSI's figures measured on this machine kind and
//! the paper's own rows.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use clap::Args;

use super::pairs::{number as f, read_json as json};
use crate::demo::free_port;
use crate::fail::Failure;
use crate::metrics::MB;
use crate::upsi_cmd::OprfArg;

#[derive(Args, Debug)]
pub struct UpsiBenchArgs {
    /// Server items x client items, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "65536x1024,1048576x1024")]
    pub cases: Vec<String>,
    /// Label bytes (0: unlabeled), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,16")]
    pub labels: Vec<usize>,
    /// Queries per case against the one served database (the median is printed).
    #[arg(long, default_value_t = 3)]
    pub queries: usize,
    /// The server's `--cache-mb` (default: `upsi serve`'s).
    #[arg(long, value_name = "MIB")]
    pub cache_mb: Option<usize>,
    /// Working directory (default: a temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The databases' OPRF group.
    #[arg(long, value_enum, default_value_t = OprfArg::X25519)]
    pub oprf: OprfArg,
}

/// Microsoft APSI 0.12.0 on this machine kind (2 vCPU; client and server in one
/// process; 1,024-item queries, half hits; median of 5; `../shared/peers/apsi` of the
/// team's notes): server items, label bytes, DB build s, query s, up MB, down MB, RSS MB.
const APSI: [(usize, usize, &str, &str, f64, &str, f64); 4] = [
    (1 << 16, 0, "1.40", "0.84", 2.23, "0.23", 197.0),
    (1 << 16, 16, "13.45", "0.94", 2.23, "1.08", 395.0),
    (1 << 20, 0, "18.7-20.0", "1.02-1.47", 2.23, "1.71", 1254.0),
    (
        1 << 20,
        16,
        "255-271",
        "1.88-2.14",
        2.23,
        "6.73-6.86",
        4430.0,
    ),
];

fn parse_case(s: &str) -> Result<(usize, usize), Failure> {
    let bad = || {
        Failure::input(format!(
            "case {s:?}: expected SERVERxCLIENT, e.g. 1048576x1024"
        ))
    };
    let (a, b) = s.split_once('x').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

fn phone(i: usize) -> String {
    format!("+1555{i:09}")
}

/// Item `i`'s label cell of `bytes` characters (one label column: stored as it is).
fn label_cell(i: usize, bytes: usize) -> String {
    let digest = format!(
        "{:016x}{:016x}",
        (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        i
    );
    digest.chars().cycle().take(bytes).collect()
}

struct Query {
    wall: f64,
    up: f64,
    down: f64,
    client_rss: f64,
    server_cpu: f64,
    server_rss: f64,
}

pub fn run(args: &UpsiBenchArgs, dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)?;
    let exe = std::env::current_exe()?;
    let certs = dir.join("certs");
    privset_net::certs::generate(&certs, &["server".into(), "client".into()])?;
    let tls = |name: &str| -> Vec<String> {
        vec![
            "--tls-ca".into(),
            certs.join("ca.pem").display().to_string(),
            "--tls-cert".into(),
            certs.join(format!("{name}.pem")).display().to_string(),
            "--tls-key".into(),
            certs.join(format!("{name}.key")).display().to_string(),
        ]
    };
    println!(
        "Unbalanced labeled PSI (Cong et al. 2021): database builder, server and client as separate processes over mutual TLS 1.3 on loopback; client sets half in the server's set; query = the client's wall time from connecting to its answer (median of {}); MB = 2^20 bytes; OPRF on {}.",
        args.queries,
        args.oprf.oprf().name()
    );
    println!(
        "{:>9} {:>6} {:>4} {:>10} | {:>8} {:>8} {:>8} | {:>7} {:>7} {:>7} {:>7} | {:>8} {:>8} | check",
        "server",
        "client",
        "lbl",
        "preset",
        "build s",
        "build MB",
        "file MB",
        "query s",
        "srv CPU",
        "up MB",
        "down MB",
        "srv MB",
        "cli MB"
    );
    let mut measured = Vec::new();
    for case in &args.cases {
        let (n, m) = parse_case(case)?;
        for &label in &args.labels {
            let data = dir.join(format!("n{n}-m{m}-l{label}"));
            std::fs::create_dir_all(&data)?;
            let p = |name: &str| data.join(name).display().to_string();
            let mut table = String::from(if label > 0 {
                "phone,label\n"
            } else {
                "phone\n"
            });
            for i in 0..n {
                table.push_str(&phone(i));
                if label > 0 {
                    table.push(',');
                    table.push_str(&label_cell(i, label));
                }
                table.push('\n');
            }
            std::fs::write(data.join("server.csv"), table)?;
            let hits = m / 2;
            let mut contacts = String::from("phone\n");
            for i in 0..m {
                let id = if i < hits {
                    i * (n / hits.max(1)).max(1)
                } else {
                    n + i
                };
                contacts.push_str(&phone(id));
                contacts.push('\n');
            }
            std::fs::write(data.join("client.csv"), contacts)?;
            let expected = hits.min(n);
            // Build.
            let mut build: Vec<String> = ["upsi", "db", "build", "--id-column", "phone"]
                .into_iter()
                .map(String::from)
                .collect();
            build.extend([
                "--input".into(),
                p("server.csv"),
                "--db".into(),
                p("db.upsi"),
            ]);
            build.extend([
                "--output".into(),
                p("build.json"),
                "--client-items".into(),
                m.to_string(),
                "--oprf".into(),
                args.oprf.oprf().name().into(),
            ]);
            if label > 0 {
                build.extend([
                    "--label-column".into(),
                    "label".into(),
                    "--label-bytes".into(),
                    label.to_string(),
                ]);
            }
            let st = Command::new(&exe)
                .args(&build)
                .stderr(Stdio::null())
                .status()?;
            if !st.success() {
                return Err(Failure::other(format!("upsi db build failed for {case}")));
            }
            let built = json(&data.join("build.json"))?;
            // Serve, and wait until it listens (its load is not part of a query).
            let addr = format!("127.0.0.1:{}", free_port()?);
            let _ = std::fs::remove_file(data.join("server.jsonl"));
            let mut serve: Vec<String> = ["upsi", "serve", "--listen", &addr]
                .into_iter()
                .map(String::from)
                .collect();
            serve.extend([
                "--db".into(),
                p("db.upsi"),
                "--max-sessions".into(),
                args.queries.to_string(),
            ]);
            serve.extend(["--log".into(), p("server.jsonl")]);
            if let Some(mb) = args.cache_mb {
                serve.extend(["--cache-mb".into(), mb.to_string()]);
            }
            serve.extend(tls("server"));
            let mut server = Command::new(&exe)
                .args(&serve)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()?;
            wait_listening(&mut server)?;
            let mut queries = Vec::new();
            for q in 0..args.queries {
                let mut query: Vec<String> = [
                    "upsi",
                    "query",
                    "--peer",
                    &addr,
                    "--tls-server-name",
                    "server",
                    "--id-column",
                    "phone",
                ]
                .into_iter()
                .map(String::from)
                .collect();
                query.extend([
                    "--input".into(),
                    p("client.csv"),
                    "--output".into(),
                    p("result.json"),
                ]);
                query.extend(["--output-rows".into(), p("rows.csv")]);
                query.extend(tls("client"));
                let st = Command::new(&exe)
                    .args(&query)
                    .stderr(Stdio::null())
                    .status()?;
                if !st.success() {
                    let _ = server.kill();
                    return Err(Failure::other(format!("upsi query failed for {case}")));
                }
                let result = json(&data.join("result.json"))?;
                let matches = result["matches"].as_u64().unwrap_or(0) as usize;
                if matches != expected
                    || (label > 0 && !labels_ok(&data.join("rows.csv"), n, label)?)
                {
                    let _ = server.kill();
                    return Err(Failure::other(format!(
                        "{case}, labels {label}: {matches} matches (expected {expected}) or wrong labels"
                    )));
                }
                let log = std::fs::read_to_string(data.join("server.jsonl"))?;
                let line: serde_json::Value = log
                    .lines()
                    .nth(q)
                    .and_then(|l| serde_json::from_str(l).ok())
                    .unwrap_or_default();
                let run = &result["run"];
                queries.push(Query {
                    wall: f(run, "wall_seconds"),
                    up: f(run, "bytes_sent") / MB,
                    down: f(run, "bytes_received") / MB,
                    client_rss: f(run, "peak_rss_mib"),
                    server_cpu: f(&line, "cpu_seconds"),
                    server_rss: f(&line, "peak_rss_mib"),
                });
            }
            let _ = server.wait();
            queries.sort_by(|a, b| a.wall.total_cmp(&b.wall));
            let median = &queries[queries.len() / 2];
            println!(
                "{:>9} {:>6} {:>4} {:>10} | {:>8.2} {:>8.0} {:>8.1} | {:>7.2} {:>7.2} {:>7.2} {:>7.2} | {:>8.0} {:>8.0} | ok",
                n,
                m,
                label,
                built["preset"].as_str().unwrap_or("?"),
                f(&built, "wall_seconds"),
                f(&built, "peak_rss_mib"),
                f(&built, "file_bytes") / MB,
                median.wall,
                median.server_cpu,
                median.up,
                median.down,
                median.server_rss,
                median.client_rss,
            );
            measured.push((n, m, label));
        }
    }
    println!();
    println!(
        "Microsoft APSI 0.12.0 on this machine kind (2 vCPU; client and server in one process; 1,024-item queries, half hits; median of 5; measured 2026-11-24, not in this run):"
    );
    println!(
        "{:>9} {:>4} | {:>10} {:>10} {:>7} {:>10} {:>8}",
        "server", "lbl", "build s", "query s", "up MB", "down MB", "RSS MB"
    );
    for (n, label, build, query, up, down, rss) in APSI {
        if measured
            .iter()
            .any(|(mn, mm, ml)| *mn == n && *mm == 1024 && *ml == label)
        {
            println!("{n:>9} {label:>4} | {build:>10} {query:>10} {up:>7.2} {down:>10} {rss:>8.0}");
        }
    }
    println!(
        "Cong et al. 2021 (their machine, SEAL): 2^20 x 5,535 labeled: 3.23 s online, 5.39 MB; 2^28 x 1,024: 6.08 MB."
    );
    Ok(())
}

/// Waits for the server's "listening" line on its stderr.
fn wait_listening(server: &mut Child) -> Result<(), Failure> {
    let stderr = server
        .stderr
        .take()
        .ok_or_else(|| Failure::other("the server's stderr is not piped"))?;
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        if line?.contains("listening") {
            // Keep draining so the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok(());
        }
    }
    Err(Failure::other("upsi serve exited before listening"))
}

/// Every row's label is the generator's label for its phone number.
fn labels_ok(rows: &Path, n: usize, label: usize) -> Result<bool, Failure> {
    let text = std::fs::read_to_string(rows)?;
    Ok(text.lines().skip(1).all(|line| {
        let mut cells = line.split(',');
        let (Some(id), Some(cell)) = (cells.next(), cells.next()) else {
            return false;
        };
        id.strip_prefix("+1555")
            .and_then(|d| d.parse::<usize>().ok())
            .is_some_and(|i| i < n && cell == label_cell(i, label))
    }))
}
