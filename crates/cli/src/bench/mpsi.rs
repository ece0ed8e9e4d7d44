//! `privset bench mpsi`: de Jong's benchmark tests (thesis Table 7.4: 10 parties x 1,000
//! items, 15 x 2,000, 20 x 3,000; 10-character licence plates; an intersection of 3),
//! every participant a separate `privset mpsi` process over mutual TLS on loopback,
//! printing per role CPU, bytes each way, wall, peak memory and cost, and the comparison
//! of Table 7.5 (how much more CPU and bytes Miyaji-Nishida and
//! Hazay-Venkitasubramaniam take than Bay et al.) beside the thesis's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use clap::Args;
use privset_crypto::rng::SessionRng;

use crate::fail::Failure;

#[derive(Args, Debug)]
pub struct MpsiBenchArgs {
    /// The thesis's benchmark tests to run (1, 2, 3; `--tests` alone: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1,2,3")]
    pub tests: Vec<usize>,
    /// Other sizes, `PARTIESxITEMS` (participants including the server or dealer),
    /// comma-separated: e.g. `10x65536`.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Protocols to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bay,miyaji-nishida,hazay"
    )]
    pub protocols: Vec<String>,
    /// Items every participant holds (the thesis: 3).
    #[arg(long, default_value_t = 3)]
    pub common: usize,
    /// Seconds a participant may wait for another.
    #[arg(long, default_value_t = 3600)]
    pub timeout: u64,
    /// Working directory (default: a temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The threshold scheme: elgamal (the key agreed in each session) or paillier (a
    /// key dealt for each size first, as `privset mpsi-deal` does; not counted in the
    /// figures).
    #[arg(long, default_value = "elgamal")]
    pub scheme: String,
    /// --scheme paillier: bits of the modulus (3,072 for 128-bit security).
    #[arg(long, default_value_t = privset_run::mpsi_keys::SECURE_MODULUS_BITS)]
    pub modulus_bits: u32,
    /// A run not finished after this many seconds is stopped and reported as such (the
    /// issue's rule for the Paillier rows: 30 minutes).
    #[arg(long, default_value_t = 1800)]
    pub max_seconds: u64,
}

/// The thesis's Table 7.5: how much more Miyaji-Nishida and Hazay-Venkitasubramaniam
/// need than Bay et al., in percent, for tests 1-3 (computation, then communication;
/// dealer/server, party/client, total).
const THESIS_CPU: [(&str, [[i32; 3]; 3]); 2] = [
    (
        "miyaji-nishida",
        [[623, 431, 302], [491, 995, 1576], [518, 831, 1114]],
    ),
    (
        "hazay",
        [[2108, 3019, 3239], [-85, -75, -57], [359, 823, 1138]],
    ),
];
const THESIS_BYTES: [(&str, [[i32; 3]; 3]); 2] = [
    (
        "miyaji-nishida",
        [[112, 102, 99], [1807, 2728, 3688], [281, 277, 279]],
    ),
    ("hazay", [[-96, -96, -96], [-96, -96, -96], [-96, -96, -96]]),
];

/// One participant's figures (from its RESULT.json).
#[derive(Clone, Copy, Default, Debug)]
struct Figures {
    cpu: f64,
    wall: f64,
    sent: u64,
    received: u64,
    rss: f64,
    cents: f64,
}

impl Figures {
    fn read(path: &Path) -> Result<Self, Failure> {
        let text = std::fs::read_to_string(path)?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Failure::other(format!("{}: {e}", path.display())))?;
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        Ok(Self {
            cpu: f("cpu_seconds"),
            wall: f("wall_seconds"),
            sent: v["bytes_sent"].as_u64().unwrap_or(0),
            received: v["bytes_received"].as_u64().unwrap_or(0),
            rss: f("peak_rss_mib"),
            cents: f("cost_cents"),
        })
    }
}

/// A run's result: the coordinator, the set holders, the end-to-end wall time.
struct Outcome {
    hub: Figures,
    holders: Vec<Figures>,
    wall: f64,
    intersection: Option<u64>,
}

impl Outcome {
    fn total_cpu(&self) -> f64 {
        self.hub.cpu + self.holders.iter().map(|f| f.cpu).sum::<f64>()
    }
    fn total_bytes(&self) -> u64 {
        self.hub.sent + self.holders.iter().map(|f| f.sent).sum::<u64>()
    }
    fn holder_mean(&self, f: impl Fn(&Figures) -> f64) -> f64 {
        self.holders.iter().map(f).sum::<f64>() / self.holders.len().max(1) as f64
    }
}

fn plate(rng: &mut SessionRng) -> String {
    let letter = |r: &mut SessionRng| (b'A' + r.below(26) as u8) as char;
    let digit = |r: &mut SessionRng| (b'0' + r.below(10) as u8) as char;
    let mut s = String::with_capacity(10);
    for _ in 0..3 {
        s.push(letter(rng));
    }
    for _ in 0..4 {
        s.push(digit(rng));
    }
    for _ in 0..3 {
        s.push(letter(rng));
    }
    s
}

fn role(protocol: &str, i: usize) -> &'static str {
    match (protocol, i) {
        ("miyaji-nishida", 0) => "dealer",
        ("miyaji-nishida", _) => "party",
        (_, 0) => "server",
        _ => "client",
    }
}

fn port() -> Result<String, Failure> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(format!("127.0.0.1:{}", l.local_addr()?.port()))
}

/// A run's figures, or how long it ran before it was stopped at `--max-seconds`.
enum Run {
    Finished(Outcome),
    Stopped(f64),
}

/// Runs one protocol with `parties` participants of `items` items each.
fn run_one(
    exe: &Path,
    dir: &Path,
    protocol: &str,
    parties: usize,
    items: usize,
    args: &MpsiBenchArgs,
    keys: Option<&privset_run::mpsi_keys::Dealt>,
) -> Result<Run, Failure> {
    let work = dir.join(format!("{protocol}-{parties}x{items}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let names: Vec<String> = (0..parties).map(|i| format!("org{i}")).collect();
    privset_net::certs::generate(&work.join("certs"), &names)
        .map_err(|e| Failure::other(format!("certificates: {e}")))?;
    let mut toml = String::from("ca = \"certs/ca.pem\"\n");
    for n in &names {
        toml.push_str(&format!(
            "\n[[party]]\nname = \"{n}\"\naddress = \"{}\"\ncertificate = \"certs/{n}.pem\"\n",
            port()?
        ));
    }
    std::fs::write(work.join("parties.toml"), toml)?;
    let mut rng = SessionRng::from_seed([parties as u8; 32]);
    let common: Vec<String> = (0..args.common).map(|_| plate(&mut rng)).collect();
    let started = Instant::now();
    let mut children = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut cmd = Command::new(exe);
        cmd.args([
            "mpsi",
            "--protocol",
            protocol,
            "--role",
            role(protocol, i),
            "--name",
            name,
        ])
        .arg("--parties")
        .arg(work.join("parties.toml"))
        .arg("--tls-key")
        .arg(work.join("certs").join(format!("{name}.key")))
        .args(["--timeout", &args.timeout.to_string()])
        .arg("--output")
        .arg(work.join(format!("{name}.json")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if role(protocol, i) != "dealer" {
            let input = work.join(format!("{name}.csv"));
            let mut text = String::from("plate\n");
            for p in common
                .iter()
                .cloned()
                .chain((args.common..items).map(|_| plate(&mut rng)))
            {
                text.push_str(&p);
                text.push('\n');
            }
            std::fs::write(&input, text)?;
            cmd.arg("--input")
                .arg(&input)
                .args(["--id-column", "plate", "--duplicates", "first"]);
        }
        if protocol == "miyaji-nishida" {
            cmd.args(["--max-items", &items.to_string()]);
        }
        if let Some(keys) = keys {
            let file = match i {
                0 => &keys.public_file,
                _ => &keys.holder_files[i - 1].1,
            };
            cmd.args(["--scheme", "paillier", "--paillier-key"])
                .arg(file);
        }
        children.push(cmd.spawn()?);
    }
    let deadline = std::time::Duration::from_secs(args.max_seconds);
    let finished = loop {
        if children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(Some(_))))
        {
            break true;
        }
        if started.elapsed() >= deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    if !finished {
        for c in &mut children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&work);
        return Ok(Run::Stopped(started.elapsed().as_secs_f64()));
    }
    let mut failures = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            failures.push(format!(
                "{}: {}",
                names[i],
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let wall = started.elapsed().as_secs_f64();
    if !failures.is_empty() {
        return Err(Failure::other(format!(
            "{protocol} {parties}x{items} failed: {}",
            failures.join("; ")
        )));
    }
    let read = |i: usize| Figures::read(&work.join(format!("{}.json", names[i])));
    let first_holder: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join(format!(
            "{}.json",
            names[if protocol == "miyaji-nishida" { 1 } else { 0 }]
        )))?)
        .map_err(|e| Failure::other(e.to_string()))?;
    let outcome = Outcome {
        hub: read(0)?,
        holders: (1..parties).map(read).collect::<Result<_, _>>()?,
        wall,
        intersection: first_holder["intersection_size"].as_u64(),
    };
    let _ = std::fs::remove_dir_all(&work);
    Ok(Run::Finished(outcome))
}

fn mb(bytes: f64) -> String {
    format!("{:.2}", bytes / 1e6)
}

fn print_outcome(protocol: &str, parties: usize, items: usize, o: &Outcome) {
    let hub = role(protocol, 0);
    let holder = role(protocol, 1);
    println!(
        "{protocol:<15} {parties:>3} x {items:<6} wall {:>8.2} s   intersection {}",
        o.wall,
        o.intersection.map_or("-".into(), |n| n.to_string())
    );
    println!(
        "    {:<22} {:>9} {:>11} {:>11} {:>9} {:>9} {:>9}",
        "role", "CPU s", "sent MB", "recv MB", "wall s", "RSS MiB", "cents"
    );
    let row = |label: String, f: &Figures| {
        println!(
            "    {label:<22} {:>9.2} {:>11} {:>11} {:>9.2} {:>9.1} {:>9.5}",
            f.cpu,
            mb(f.sent as f64),
            mb(f.received as f64),
            f.wall,
            f.rss,
            f.cents
        );
    };
    row(hub.to_string(), &o.hub);
    let mean = Figures {
        cpu: o.holder_mean(|f| f.cpu),
        wall: o.holder_mean(|f| f.wall),
        sent: o.holder_mean(|f| f.sent as f64) as u64,
        received: o.holder_mean(|f| f.received as f64) as u64,
        rss: o.holder_mean(|f| f.rss),
        cents: o.holder_mean(|f| f.cents),
    };
    row(format!("{holder} (mean of {})", o.holders.len()), &mean);
    let max = |f: &dyn Fn(&Figures) -> f64| o.holders.iter().map(f).fold(0.0, f64::max);
    let peak = Figures {
        cpu: max(&|f| f.cpu),
        wall: max(&|f| f.wall),
        sent: max(&|f| f.sent as f64) as u64,
        received: max(&|f| f.received as f64) as u64,
        rss: max(&|f| f.rss),
        cents: max(&|f| f.cents),
    };
    row(format!("{holder} (max)"), &peak);
    println!(
        "    {:<22} {:>9.2} {:>11}  (all participants; cost {:.5} cents)",
        "total",
        o.total_cpu(),
        mb(o.total_bytes() as f64),
        o.hub.cents + o.holders.iter().map(|f| f.cents).sum::<f64>()
    );
}

pub fn run(args: &MpsiBenchArgs, dir: &Path) -> Result<(), Failure> {
    let exe = std::env::current_exe()?;
    std::fs::create_dir_all(dir)?;
    let mut runs: Vec<(Option<usize>, usize, usize)> = Vec::new();
    for &t in &args.tests {
        let (p, n) = match t {
            1 => (10, 1000),
            2 => (15, 2000),
            3 => (20, 3000),
            _ => {
                return Err(Failure::config(format!(
                    "the thesis has tests 1, 2 and 3, not {t}"
                )));
            }
        };
        runs.push((Some(t), p, n));
    }
    for s in &args.sizes {
        let (p, n) = s
            .split_once('x')
            .and_then(|(p, n)| Some((p.parse().ok()?, n.parse().ok()?)))
            .ok_or_else(|| Failure::config(format!("--sizes takes PARTIESxITEMS, not {s:?}")))?;
        runs.push((None, p, n));
    }
    for p in &args.protocols {
        if !["bay", "miyaji-nishida", "hazay"].contains(&p.as_str()) {
            return Err(Failure::config(format!("unknown protocol {p:?}")));
        }
    }
    let paillier = match args.scheme.as_str() {
        "elgamal" => false,
        "paillier" => true,
        other => {
            return Err(Failure::config(format!(
                "--scheme is elgamal or paillier, not {other:?}"
            )));
        }
    };
    let scheme = if paillier {
        format!("threshold Paillier, {}-bit modulus", args.modulus_bits)
    } else {
        "threshold ElGamal on ristretto255 (128-bit)".to_string()
    };
    println!(
        "privset bench mpsi: every participant its own process, mutual TLS on loopback, {scheme}, \
         Bloom filters at 2^-40 per run; runs stopped after {} s; {} cores",
        args.max_seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // (protocol, parties, items, seconds) of every run stopped at `--max-seconds`.
    let mut stopped: Vec<(String, usize, usize, f64)> = Vec::new();
    for (test, parties, items) in runs {
        println!();
        match test {
            Some(t) => println!(
                "== test {t} (de Jong, Table 7.4): {parties} parties x {items} items, intersection {}",
                args.common
            ),
            None => println!(
                "== {parties} parties x {items} items, intersection {}",
                args.common
            ),
        }
        // A protocol stopped at a size is not run at one at least as large in both
        // parties and items: it has at least as much work.
        let skip: Vec<Option<String>> = args
            .protocols
            .iter()
            .map(|p| {
                stopped
                    .iter()
                    .find(|(q, sp, si, _)| q == p && *sp <= parties && *si <= items)
                    .map(|(_, sp, si, secs)| {
                        format!(
                            "  {p:<15} not run: stopped at {sp} x {si} after {secs:.0} s, and this size is larger"
                        )
                    })
            })
            .collect();
        // The key is dealt only when some protocol runs at this size.
        let keys = match paillier && skip.iter().any(Option::is_none) {
            false => None,
            true => {
                let holders: Vec<String> = (1..parties).map(|i| format!("org{i}")).collect();
                let dealing = Instant::now();
                let keys = privset_run::mpsi_keys::deal(
                    &holders,
                    args.modulus_bits,
                    &dir.join(format!("keys-{parties}")),
                )?;
                println!(
                    "    (a {}-bit Paillier key dealt in {:.1} s, not counted below)",
                    args.modulus_bits,
                    dealing.elapsed().as_secs_f64()
                );
                Some(keys)
            }
        };
        let mut outcomes = Vec::new();
        for (p, skip) in args.protocols.iter().zip(skip) {
            if let Some(message) = skip {
                println!("{message}");
                continue;
            }
            match run_one(&exe, dir, p, parties, items, args, keys.as_ref())? {
                Run::Finished(o) => {
                    print_outcome(p, parties, items, &o);
                    outcomes.push((p.clone(), o));
                }
                Run::Stopped(secs) => {
                    println!("  {p:<15} not finished after {secs:.0} s: stopped");
                    stopped.push((p.clone(), parties, items, secs));
                }
            }
        }
        let bay = outcomes.iter().find(|(p, _)| p == "bay").map(|(_, o)| o);
        if let Some(bay) = bay {
            println!("    Table 7.5 (more than Bay et al.: ours / thesis):");
            for (p, o) in outcomes.iter().filter(|(p, _)| p != "bay") {
                let pct = |a: f64, b: f64| format!("{:+.0}%", (a / b - 1.0) * 100.0);
                let thesis = |table: &[(&str, [[i32; 3]; 3])], row: usize| {
                    test.and_then(|t| {
                        table
                            .iter()
                            .find(|(n, _)| n == p)
                            .map(|(_, v)| format!("{:+}%", v[row][t - 1]))
                    })
                    .unwrap_or_else(|| "-".into())
                };
                println!(
                    "      {p:<15} CPU: coordinator {} / {}, holder {} / {}, total {} / {};  bytes: coordinator {} / {}, holder {} / {}, total {} / {}",
                    pct(o.hub.cpu, bay.hub.cpu),
                    thesis(&THESIS_CPU, 0),
                    pct(o.holder_mean(|f| f.cpu), bay.holder_mean(|f| f.cpu)),
                    thesis(&THESIS_CPU, 1),
                    pct(o.total_cpu(), bay.total_cpu()),
                    thesis(&THESIS_CPU, 2),
                    pct(
                        o.hub.sent as f64 + o.hub.received as f64,
                        bay.hub.sent as f64 + bay.hub.received as f64
                    ),
                    thesis(&THESIS_BYTES, 0),
                    pct(
                        o.holder_mean(|f| (f.sent + f.received) as f64),
                        bay.holder_mean(|f| (f.sent + f.received) as f64)
                    ),
                    thesis(&THESIS_BYTES, 1),
                    pct(o.total_bytes() as f64, bay.total_bytes() as f64),
                    thesis(&THESIS_BYTES, 2),
                );
            }
            let fastest = outcomes
                .iter()
                .min_by(|a, b| a.1.wall.total_cmp(&b.1.wall))
                .map(|(p, _)| p.as_str())
                .unwrap_or("-");
            let lightest = outcomes
                .iter()
                .min_by_key(|(_, o)| o.total_bytes())
                .map(|(p, _)| p.as_str())
                .unwrap_or("-");
            println!(
                "    thesis's conclusions (Bay fastest, Hazay least communication): fastest here {fastest}, least bytes here {lightest}"
            );
        }
    }
    Ok(())
}
