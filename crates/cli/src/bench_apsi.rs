//! `privset bench apsi`: judge, client and server as separate processes over mutual TLS
//! on loopback, per phase, in the shape of seed 002 Table 3; and each party's CPU per
//! item against the floor of the pairings, hashes and scalar multiplications it needs,
//! measured here on one core.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use clap::Args;
use group::Curve;
use privset_crypto::bls;
use privset_crypto::rng::SessionRng;

use crate::demo::free_port;
use crate::fail::Failure;

#[derive(Args, Debug)]
pub struct ApsiBenchArgs {
    /// Set sizes n = m, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "256,4096,65536")]
    pub sizes: Vec<usize>,
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
}

fn time_per_op(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
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
    std::hint::black_box(sink);
    Floor { hash, mul, pairing }
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

fn json(path: &Path) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(&std::fs::read_to_string(path)?).map_err(|e| Failure::other(e.to_string()))
}

fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
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
        "APSI benchmark (seed 002): judge, client and server as separate processes over mutual TLS 1.3 on loopback; n = m, half of X in Y."
    );
    println!(
        "Floor on one core here: hash to G1 {:.1} us, G1 scalar mult {:.1} us, pairing with a prepared G2 point + tag {:.1} us.",
        floor.hash, floor.mul, floor.pairing
    );
    println!(
        "Comm in KB (2^10 bytes) per phase; computation = CPU ms of each process (all threads); per item = CPU us / item and its ratio to the floor."
    );
    println!();
    println!(
        "{:>8} {:>5} {:>7} | {:>9} {:>9} | {:>8} {:>8} {:>9} {:>9} | {:>8} {:>8} | {:>14} {:>14} {:>14} | check",
        "n=m",
        "mode",
        "threads",
        "Auth KB",
        "Inter KB",
        "J ms",
        "C(A) ms",
        "C(I) ms",
        "S ms",
        "A wall",
        "I wall",
        "J us/it (x)",
        "C(I) us/it (x)",
        "S us/it (x)"
    );
    for &n in &args.sizes {
        let data = dir.join(format!("n{n}"));
        std::fs::create_dir_all(&data)?;
        write_ids(&data.join("x.csv"), 0..n)?;
        write_ids(&data.join("y.csv"), n / 2..n / 2 + n)?;
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
                let expected = (n - n / 2) as u64;
                let ok = row.cardinality == Some(expected);
                // Floors per item (what each party must compute, on one core).
                let (fj, fc, fs) = match partial {
                    None => (
                        floor.hash + floor.mul,
                        floor.pairing,
                        floor.hash + floor.pairing,
                    ),
                    Some(p) => (
                        floor.hash + floor.mul + p * floor.hash,
                        floor.mul + floor.pairing,
                        2.0 * floor.hash + 2.0 * floor.mul + floor.pairing,
                    ),
                };
                let per = |ms: f64| ms * 1e3 / n as f64;
                let cell = |ms: f64, fl: f64| format!("{:>7.1} ({:.2})", per(ms), per(ms) / fl);
                println!(
                    "{:>8} {:>5} {:>7} | {:>9.1} {:>9.1} | {:>8.0} {:>8.0} {:>9.0} {:>9.0} | {:>8.2} {:>8.2} | {:>14} {:>14} {:>14} | {}",
                    n,
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
                    cell(row.judge_ms, fj),
                    cell(row.client_inter_ms, fc),
                    cell(row.server_ms, fs),
                    if ok { "ok" } else { "MISMATCH" }
                );
                if !ok {
                    return Err(Failure::other(format!(
                        "n = {n}: the client found {:?} items, the plaintext answer is {expected}",
                        row.cardinality
                    )));
                }
            }
        }
    }
    println!();
    println!(
        "seed 002 Table 3 (APSI, M2 MacBook, 10 cores): n = m = 2^16: Auth 123 KB... Inter 1573 KB, J 11 ms, C(Inter) 71 ms, S 2354 ms; n = m = 2^20: Inter 25166 KB, J 12 ms, C(Inter) 735 ms, S 38048 ms."
    );
    println!(
        "Per-core comparison: multiply the paper's ms by its 10 cores and ours by the threads used (CPU ms above is already all threads)."
    );
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
