//! `privset bench pi-sum`: both parties as separate processes over mutual TLS on
//! loopback, per size, homomorphic scheme and Z encoding; printed in the shape of
//! Ion et al. 2020, Tables 5-6 next to the deployed row.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};

use privset_crypto::rng::SessionRng;

use super::pairs::{PairSpec, pair_figures, run_pair};
use crate::datagen;
use crate::fail::Failure;
use crate::metrics::Prices;

/// What `bench pi-sum` runs: every combination of these.
pub(super) struct PiSumGrid<'a> {
    pub sizes: &'a [usize],
    pub protocols: &'a [String],
    pub hes: &'a [String],
    pub zs: &'a [String],
    pub params: &'a [String],
    pub group: &'a str,
    pub reverse: bool,
}

pub(super) fn bench_pi_sum(dir: &Path, grid: &PiSumGrid<'_>) -> Result<(), Failure> {
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
