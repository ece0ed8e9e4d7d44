//! Times the random-band OKVS (`privset_crypto::okvs`) at 2^16, 2^20 and 2^24 keys:
//! encode, decode on one thread and on every core, expansion and bytes. With `failure`,
//! measures instead how often encoding fails at band widths below the chosen one, the
//! evidence behind the parameters (module docs of `okvs`).
//!
//! `cargo run -p privset-crypto --release --example okvs_bench [log2 sizes...]`
//! `cargo run -p privset-crypto --release --example okvs_bench failure [log2 n] [trials] [widths...]`

use std::time::Instant;

use privset_crypto::okvs::{self, OkvsError, OkvsParams};
use privset_crypto::rng::SessionRng;

fn random_u128(rng: &mut SessionRng) -> u128 {
    ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
}

fn seed(rng: &mut SessionRng) -> [u8; okvs::OKVS_SEED_LEN] {
    let mut s = [0u8; okvs::OKVS_SEED_LEN];
    rng.fill(&mut s);
    s
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// CPU time this thread has run, in nanoseconds (Linux's schedstat), or 0 where unknown.
/// The machine may be shared, so one-thread times are CPU times, not wall-clock ones.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Runs `f` on a one-thread rayon pool; returns its result, the CPU milliseconds it took
/// (wall-clock ones where schedstat is missing).
fn one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> (T, f64) {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
        .install(|| {
            let (c, t) = (thread_cpu_ns(), Instant::now());
            let r = f();
            let cpu = thread_cpu_ns() - c;
            let ms = if cpu > 0 { cpu as f64 / 1e6 } else { ms(t) };
            (r, ms)
        })
}

fn timing(log2: u32) {
    let n = 1usize << log2;
    let mut rng = SessionRng::from_seed([5; 32]);
    let keys: Vec<u128> = (0..n).map(|_| random_u128(&mut rng)).collect();
    let values: Vec<u128> = (0..n).map(|_| random_u128(&mut rng)).collect();
    let params = OkvsParams::for_items(n).expect("a supported size");
    let s = seed(&mut rng);

    // Enough runs for about 2^22 keys in all (the CPU clock may tick coarsely, so one
    // short run can read low or high), one at 2^24; times are means over the runs.
    let runs = ((1usize << 22) / n).clamp(1, 64);
    let (st, enc) = one_thread(|| {
        let mut store = Vec::new();
        for _ in 0..runs {
            store = okvs::encode(&params, &s, &keys, &values, || random_u128(&mut rng))
                .expect("encoding succeeds");
        }
        store
    });
    let (store, enc) = (st, enc / runs as f64);
    let mut out = vec![0u128; n];
    let (_, dec1) = one_thread(|| {
        for _ in 0..runs {
            okvs::decode(&params, &s, &store, &keys, &mut out).expect("decodes");
        }
    });
    let dec1 = dec1 / runs as f64;
    assert_eq!(out, values, "decoding returns the values");
    out.fill(0);
    let t = Instant::now();
    for _ in 0..runs {
        okvs::decode(&params, &s, &store, &keys, &mut out).expect("decodes");
    }
    let decn = ms(t) / runs as f64;
    assert_eq!(out, values, "decoding returns the values");
    println!(
        "2^{log2}: columns {} band {} expansion {:.4} bytes {} | encode {:.1} ms | decode {:.1} ms one thread, {:.1} ms wall on {} threads ({runs} runs)",
        params.columns,
        params.band_width,
        params.columns as f64 / n as f64,
        params.encoded_len(),
        enc,
        dec1,
        decn,
        rayon::current_num_threads(),
    );
}

/// Encoding failures at reduced band widths (the expansion of `for_items`).
fn failure(log2: u32, trials: usize, widths: &[usize]) {
    let n = 1usize << log2;
    let base = OkvsParams::for_items(n).expect("a supported size");
    println!(
        "n = 2^{log2}, columns {} (expansion {:.4}), chosen band {}, {trials} trials per width",
        base.columns,
        base.columns as f64 / n as f64,
        base.band_width
    );
    let mut rng = SessionRng::from_seed([6; 32]);
    let values = vec![0u128; n];
    for &w in widths {
        let params = OkvsParams {
            band_width: w,
            ..base
        };
        let t = Instant::now();
        let (fails, _) = one_thread(|| {
            (0..trials)
                .filter(|_| {
                    let keys: Vec<u128> = (0..n).map(|_| random_u128(&mut rng)).collect();
                    let s = seed(&mut rng);
                    match okvs::encode(&params, &s, &keys, &values, || 0) {
                        Ok(_) => false,
                        Err(OkvsError::Singular) => true,
                        Err(e) => panic!("{e}"),
                    }
                })
                .count()
        });
        let rate = fails as f64 / trials as f64;
        println!(
            "w {w:3}: {fails:6} / {trials} failed, rate {rate:.2e}, -log2 {:.2} ({:.1} s)",
            if fails > 0 {
                -rate.log2()
            } else {
                f64::INFINITY
            },
            t.elapsed().as_secs_f64()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("failure") {
        let log2 = args.get(1).map_or(14, |a| a.parse().expect("log2 n"));
        let trials = args.get(2).map_or(10_000, |a| a.parse().expect("trials"));
        let widths: Vec<usize> = if args.len() > 3 {
            args[3..]
                .iter()
                .map(|a| a.parse().expect("width"))
                .collect()
        } else {
            (4..=12).map(|k| k * 8).collect()
        };
        failure(log2, trials, &widths);
        return;
    }
    // One-thread times are CPU times, robust to a shared machine but not immune to it
    // (caches, memory bandwidth): say how shared it was.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!(
            "load average {} on {} cores",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    let sizes: Vec<u32> = if args.is_empty() {
        vec![16, 20, 24]
    } else {
        args.iter().map(|a| a.parse().expect("log2 size")).collect()
    };
    for log2 in sizes {
        timing(log2);
    }
}
