//! `privset bench apsi`: judge, client and server as separate processes over mutual TLS
//! on loopback, per phase, in the shape of Table 3 of Falzon and Markatou,
//! "Re-visiting Authorized Private Set Intersection" (client set n, server set m); each
//! party's CPU against the floor of the pairings, hashes, scalar multiplications and
//! point decodings it needs, measured here on one core; and the paper's row for the
//! same (n, m) beside ours, per core.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use clap::Args;
use group::Curve;
use privset_crypto::bls;
use privset_crypto::rng::SessionRng;

use super::pairs::{number as f, read_json as json};
use crate::demo::free_port;
use crate::fail::Failure;

#[derive(Args, Debug)]
pub struct ApsiBenchArgs {
    /// Set sizes, comma-separated: `N` (n = m) or `NxM` (client n, server m; the APSI paper's
    /// Table 3 has n = 1024 or 4096 with m from 256 to 2^20).
    #[arg(long, value_delimiter = ',', default_value = "256,4096,65536")]
    pub sizes: Vec<String>,
    /// Modes: `apsi` and/or partial fractions such as `0.1`.
    #[arg(long, value_delimiter = ',', default_value = "apsi,0.1")]
    pub modes: Vec<String>,
    /// Threads per process (rayon), comma-separated: e.g. `1,2` shows the speed-up.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub threads: Vec<usize>,
    /// Working directory (default: a temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Single-core cost of each primitive, in microseconds.
struct Floor {
    hash: f64,
    mul: f64,
    pairing: f64,
    /// Decoding a received compressed G1 point: decompression (a square root) and the
    /// subgroup check, which every received point needs (DESIGN.md's security rules).
    decode: f64,
}

/// What one party must compute at least: `per_n` µs for each client item and `per_m`
/// for each server item.
#[derive(Clone, Copy)]
struct Need {
    per_n: f64,
    per_m: f64,
}

impl Need {
    fn total_ms(self, n: usize, m: usize) -> f64 {
        (self.per_n * n as f64 + self.per_m * m as f64) / 1e3
    }
}

impl Floor {
    /// The floors of the judge, the client of Intersect and the server.
    ///
    /// APSI: the judge hashes and signs each item; the client pairs each signature with
    /// `S`; the server hashes and pairs each of its items. Partial-APSI: the judge also
    /// decodes each commitment and hashes it with H2 (and hashes the `p n` opened items);
    /// the client decodes and exponentiates each of the server's blinded items and
    /// pairs each signature; the server hashes, blinds, decodes, unblinds, hashes with
    /// H2 and pairs each of its items. (The exponent-equality proofs add multi-scalar
    /// multiplications, cheaper per point than one scalar multiplication.)
    fn needs(&self, partial: Option<f64>) -> [Need; 3] {
        let need = |per_n, per_m| Need { per_n, per_m };
        let (h, k, e, d) = (self.hash, self.mul, self.pairing, self.decode);
        match partial {
            None => [need(h + k, 0.0), need(e, 0.0), need(0.0, h + e)],
            Some(p) => [
                need(d + h + k + p * h, 0.0),
                need(e, d + k),
                need(0.0, 2.0 * h + 2.0 * k + d + e),
            ],
        }
    }
}

/// The APSI paper's Table 3 (APSI, M2 MacBook, 10 cores): (n, m) -> (J, C(Inter), S) in ms.
const PAPER_TABLE_3: [(usize, usize, [f64; 3]); 8] = [
    (1 << 10, 1 << 8, [16.0, 40.0, 15.0]),
    (1 << 10, 1 << 12, [11.0, 37.0, 151.0]),
    (1 << 10, 1 << 16, [11.0, 71.0, 2354.0]),
    (1 << 10, 1 << 20, [12.0, 735.0, 38048.0]),
    (1 << 12, 1 << 8, [48.0, 136.0, 11.0]),
    (1 << 12, 1 << 12, [41.0, 157.0, 1569.0]),
    (1 << 12, 1 << 16, [41.0, 195.0, 2346.0]),
    (1 << 12, 1 << 20, [39.0, 920.0, 38679.0]),
];
const PAPER_CORES: f64 = 10.0;

fn parse_size(s: &str) -> Result<(usize, usize), Failure> {
    let bad = || Failure::input(format!("--sizes: {s:?} is not N or NxM"));
    match s.split_once('x') {
        Some((n, m)) => Ok((n.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?)),
        None => {
            let n = s.parse().map_err(|_| bad())?;
            Ok((n, n))
        }
    }
}

/// CPU microseconds per call of `f` (process CPU time: the floor is measured on this
/// thread alone, and CPU time is not inflated when other processes share the cores).
fn time_per_op(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let start = privset_run::metrics::process_cpu_seconds();
    for i in 0..n {
        f(i);
    }
    (privset_run::metrics::process_cpu_seconds() - start) * 1e6 / n as f64
}

fn measure_floor() -> Floor {
    let mut rng = SessionRng::from_os();
    let s = bls::random_scalar(&mut rng);
    let points: Vec<_> = (0..256u32)
        .map(|i| bls::hash_to_g1(&i.to_be_bytes(), b"floor").to_affine())
        .collect();
    let prepared = bls::prepare(&bls::g2_power(&s));
    let mut sink = 0u8;
    let hash = time_per_op(2000, |i| {
        sink ^=
            bls::encode_g1(&bls::hash_to_g1(&(i as u64).to_be_bytes(), b"floor").to_affine())[0];
    });
    let mul = time_per_op(2000, |i| {
        sink ^= bls::encode_g1(&(points[i % 256] * s).to_affine())[0];
    });
    let pairing = time_per_op(1000, |i| {
        sink ^= bls::gt_tag(
            &bls::pairing_prepared(&points[i % 256], &prepared),
            &[0; 32],
        )[0];
    });
    let encoded: Vec<_> = points.iter().map(bls::encode_g1).collect();
    let decode = time_per_op(2000, |i| {
        let p = bls::decode_g1(&encoded[i % 256]).expect("a valid point");
        sink ^= bls::encode_g1(&p)[1];
    });
    std::hint::black_box(sink);
    Floor {
        hash,
        mul,
        pairing,
        decode,
    }
}

fn write_ids(path: &Path, ids: impl Iterator<Item = usize>) -> Result<(), Failure> {
    let mut s = String::from("card\n");
    for i in ids {
        s.push_str(&format!("4111{i:012}\n"));
    }
    Ok(std::fs::write(path, s)?)
}

fn last_log_line(path: &Path) -> Result<serde_json::Value, Failure> {
    let text = std::fs::read_to_string(path)?;
    let line = text.lines().last().unwrap_or("{}");
    serde_json::from_str(line).map_err(|e| Failure::other(e.to_string()))
}

pub fn run(args: &ApsiBenchArgs, dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)?;
    let exe = std::env::current_exe()?;
    let certs = dir.join("certs");
    let names = ["judge", "client", "server"].map(String::from);
    privset_net::certs::generate(&certs, &names)?;
    let key = dir.join("judge.key");
    let public = dir.join("judge.pub");
    let st = Command::new(&exe)
        .args(["judge", "keygen", "--key"])
        .arg(&key)
        .arg("--public")
        .arg(&public)
        .stderr(Stdio::null())
        .status()?;
    if !st.success() {
        return Err(Failure::other("judge keygen failed"));
    }
    let floor = measure_floor();
    println!(
        "APSI benchmark (Falzon-Markatou, Re-visiting Authorized PSI): judge, client and server as separate processes over mutual TLS 1.3 on loopback; client set n, server set m, half of X in Y (or all of Y when m < n/2)."
    );
    println!(
        "Floor on one core here: hash to G1 {:.1} us, G1 scalar mult {:.1} us, pairing with a prepared G2 point + tag {:.1} us, G1 decode (decompress + subgroup check) {:.1} us.",
        floor.hash, floor.mul, floor.pairing, floor.decode
    );
    println!(
        "Comm in KB (2^10 bytes) per phase; computation = CPU ms of each process (all threads); cores = both processes' CPU over the phase's wall time (2.0: both cores busy throughout); (x) = CPU over the party's floor; per item = CPU us per client item (J, C) or server item (S)."
    );
    println!();
    println!(
        "{:>8} {:>8} {:>5} {:>3} | {:>9} {:>9} | {:>9} {:>8} {:>9} {:>10} | {:>7} {:>8} {:>5} {:>5} | {:>14} {:>14} {:>14} | check",
        "n",
        "m",
        "mode",
        "thr",
        "Auth KB",
        "Inter KB",
        "J ms",
        "C(A) ms",
        "C(I) ms",
        "S ms",
        "A wall",
        "I wall",
        "A cor",
        "I cor",
        "J us/it (x)",
        "C(I) us/it (x)",
        "S us/it (x)"
    );
    let mut compared = Vec::new();
    for size in &args.sizes {
        let (n, m) = parse_size(size)?;
        let data = dir.join(format!("n{n}-m{m}"));
        std::fs::create_dir_all(&data)?;
        write_ids(&data.join("x.csv"), 0..n)?;
        write_ids(&data.join("y.csv"), n / 2..n / 2 + m)?;
        let expected = (n - n / 2).min(m) as u64;
        for mode in &args.modes {
            let partial: Option<f64> =
                match mode.as_str() {
                    "apsi" => None,
                    p => Some(p.parse().map_err(|_| {
                        Failure::input(format!("mode {p:?}: use apsi or a fraction"))
                    })?),
                };
            for &threads in &args.threads {
                let row = run_once(&exe, &certs, &key, &public, &data, partial, threads)?;
                let ok = row.cardinality == Some(expected);
                let [fj, fc, fs] = floor.needs(partial).map(|need| need.total_ms(n, m));
                let cell = |ms: f64, items: usize, fl: f64| {
                    format!("{:>7.1} ({:.2})", ms * 1e3 / items as f64, ms / fl)
                };
                let cores = |ms: f64, wall: f64| ms / 1e3 / wall;
                println!(
                    "{:>8} {:>8} {:>5} {:>3} | {:>9.1} {:>9.1} | {:>9.0} {:>8.0} {:>9.0} {:>10.0} | {:>7.2} {:>8.2} {:>5.2} {:>5.2} | {:>14} {:>14} {:>14} | {}",
                    n,
                    m,
                    partial.map_or("apsi".to_string(), |p| format!("p{p}")),
                    threads,
                    row.auth_bytes as f64 / 1024.0,
                    row.inter_bytes as f64 / 1024.0,
                    row.judge_ms,
                    row.client_auth_ms,
                    row.client_inter_ms,
                    row.server_ms,
                    row.auth_wall,
                    row.inter_wall,
                    cores(row.judge_ms + row.client_auth_ms, row.auth_wall),
                    cores(row.client_inter_ms + row.server_ms, row.inter_wall),
                    cell(row.judge_ms, n, fj),
                    cell(row.client_inter_ms, n, fc),
                    cell(row.server_ms, m, fs),
                    if ok { "ok" } else { "MISMATCH" }
                );
                if !ok {
                    return Err(Failure::other(format!(
                        "n = {n}, m = {m}: the client found {:?} items, the plaintext answer is {expected}",
                        row.cardinality
                    )));
                }
                if partial.is_none()
                    && let Some((_, _, paper)) = PAPER_TABLE_3
                        .iter()
                        .find(|(pn, pm, _)| (*pn, *pm) == (n, m))
                {
                    compared.push((n, m, threads, row, *paper));
                }
            }
        }
    }
    if compared.is_empty() {
        println!();
        println!(
            "(the APSI paper's Table 3 has n = 1024 or 4096 and m = 256, 4096, 65536 or 1048576: e.g. --sizes 1024x65536 prints its row beside ours.)"
        );
        return Ok(());
    }
    println!();
    println!(
        "Beside the APSI paper's Table 3 (APSI; the paper: M2 MacBook, 10 cores). Per core = CPU ms here (all threads) over the paper's ms x 10 cores; < 1 is less work per core than the paper."
    );
    println!(
        "{:>6} {:>8} {:>3} | {:>24} | {:>24} | {:>26}",
        "n", "m", "thr", "J ms: ours / paper (core)", "C(I) ms: ours / paper", "S ms: ours / paper"
    );
    for (n, m, threads, row, [pj, pc, ps]) in compared {
        let cell = |ours: f64, paper: f64| {
            format!(
                "{ours:>9.0} / {paper:>6.0} ({:.2})",
                ours / (paper * PAPER_CORES)
            )
        };
        println!(
            "{n:>6} {m:>8} {threads:>3} | {:>24} | {:>24} | {:>26}",
            cell(row.judge_ms, pj),
            cell(row.client_inter_ms, pc),
            cell(row.server_ms, ps)
        );
    }
    Ok(())
}

struct Row {
    auth_bytes: u64,
    inter_bytes: u64,
    judge_ms: f64,
    client_auth_ms: f64,
    client_inter_ms: f64,
    server_ms: f64,
    auth_wall: f64,
    inter_wall: f64,
    cardinality: Option<u64>,
}

fn run_once(
    exe: &Path,
    certs: &Path,
    key: &Path,
    public: &Path,
    data: &Path,
    partial: Option<f64>,
    threads: usize,
) -> Result<Row, Failure> {
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
    let mode: Vec<String> = partial.map_or(vec![], |p| vec!["--partial".into(), p.to_string()]);
    let spawn = |args: Vec<String>| -> Result<Child, Failure> {
        Command::new(exe)
            .args(args)
            .env("RAYON_NUM_THREADS", threads.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Failure::other(format!("cannot start {}: {e}", exe.display())))
    };
    let wait = |mut c: Child, what: &str| -> Result<(), Failure> {
        if c.wait()?.success() {
            Ok(())
        } else {
            Err(Failure::other(format!(
                "{what} failed (rerun it by hand to see why)"
            )))
        }
    };
    let p = |name: &str| data.join(name).display().to_string();
    let _ = std::fs::remove_file(data.join("judge.jsonl"));
    let _ = std::fs::remove_file(data.join("server.jsonl"));
    // Authorize.
    let addr = format!("127.0.0.1:{}", free_port()?);
    let mut judge = vec!["judge", "serve", "--listen", &addr, "--max-sessions", "1"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    judge.extend(["--key".into(), key.display().to_string()]);
    judge.extend(["--policy".into(), format!("allow:{}", p("x.csv"))]);
    judge.extend(["--log".into(), p("judge.jsonl")]);
    judge.extend(tls("judge"));
    judge.extend(mode.clone());
    let judge = spawn(judge)?;
    let mut client: Vec<String> = [
        "apsi",
        "authorize",
        "--judge",
        &addr,
        "--client-id",
        "bench",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    client.extend([
        "--input".into(),
        p("x.csv"),
        "--id-column".into(),
        "card".into(),
    ]);
    client.extend([
        "--signatures".into(),
        p("x.sig"),
        "--output".into(),
        p("auth.json"),
    ]);
    client.extend(tls("client"));
    client.extend(mode.clone());
    wait(spawn(client)?, "apsi authorize")?;
    wait(judge, "judge serve")?;
    // Intersect.
    let addr = format!("127.0.0.1:{}", free_port()?);
    let mut server: Vec<String> = ["apsi", "serve", "--listen", &addr, "--max-sessions", "1"]
        .into_iter()
        .map(String::from)
        .collect();
    server.extend(["--judge-public".into(), public.display().to_string()]);
    server.extend([
        "--input".into(),
        p("y.csv"),
        "--id-column".into(),
        "card".into(),
    ]);
    server.extend(["--log".into(), p("server.jsonl")]);
    server.extend(tls("server"));
    server.extend(mode);
    let server = spawn(server)?;
    let mut client: Vec<String> = ["apsi", "intersect", "--peer", &addr, "--client-id", "bench"]
        .into_iter()
        .map(String::from)
        .collect();
    client.extend(["--judge-public".into(), public.display().to_string()]);
    client.extend(["--signatures".into(), p("x.sig")]);
    client.extend([
        "--input".into(),
        p("x.csv"),
        "--id-column".into(),
        "card".into(),
    ]);
    client.extend(["--output".into(), p("inter.json")]);
    client.extend(tls("client"));
    wait(spawn(client)?, "apsi intersect")?;
    wait(server, "apsi serve")?;
    let j = last_log_line(&data.join("judge.jsonl"))?;
    let s = last_log_line(&data.join("server.jsonl"))?;
    let a = json(&data.join("auth.json"))?;
    let i = json(&data.join("inter.json"))?;
    Ok(Row {
        auth_bytes: a["bytes_sent"].as_u64().unwrap_or(0)
            + a["bytes_received"].as_u64().unwrap_or(0),
        inter_bytes: i["bytes_sent"].as_u64().unwrap_or(0)
            + i["bytes_received"].as_u64().unwrap_or(0),
        judge_ms: f(&j, "cpu_seconds") * 1e3,
        client_auth_ms: f(&a, "cpu_seconds") * 1e3,
        client_inter_ms: f(&i, "cpu_seconds") * 1e3,
        server_ms: f(&s, "cpu_seconds") * 1e3,
        auth_wall: f(&a, "wall_seconds"),
        inter_wall: f(&i, "wall_seconds"),
        cardinality: i["cardinality"].as_u64(),
    })
}
