//! Synthetic inputs for the demo and the benchmarks, with their plaintext answer.

use std::io::Write;
use std::path::Path;

use privset_crypto::rng::SessionRng;

use crate::fail::Failure;

/// What the generated sets should give.
pub struct Expected {
    pub cardinality: u64,
    pub sum: u128,
}

/// E-mail-like identifiers (26 bytes), as in the ad-measurement use case.
pub fn email_id(i: usize) -> String {
    format!("user-{i:09}@example.com")
}

/// 16-byte identifiers: the 128-bit items of Chen et al.'s benchmarks (Sec. 7.2).
pub fn item128_id(i: usize) -> String {
    format!("{i:016}")
}

/// Writes `p1.csv` (column `id`) and `p2.csv` (columns `id,value`) into `dir`:
/// `n1` and `n2` items of which `overlap` are shared, values uniform in `0..=max_value`.
pub fn write_pair(
    dir: &Path,
    n1: usize,
    n2: usize,
    overlap: usize,
    max_value: u64,
    id: fn(usize) -> String,
    rng: &mut SessionRng,
) -> Result<Expected, Failure> {
    assert!(overlap <= n1.min(n2));
    std::fs::create_dir_all(dir)?;
    let mut p1 = std::io::BufWriter::new(std::fs::File::create(dir.join("p1.csv"))?);
    writeln!(p1, "id")?;
    for i in 0..n1 {
        writeln!(p1, "{}", id(i))?;
    }
    p1.flush()?;
    let mut p2 = std::io::BufWriter::new(std::fs::File::create(dir.join("p2.csv"))?);
    writeln!(p2, "id,value")?;
    let mut sum = 0u128;
    for j in 0..n2 {
        // The first `overlap` of P2's items are P1's first `overlap`; the rest are new.
        let i = if j < overlap { j } else { n1 + j };
        let v = if max_value == u64::MAX {
            rng.next_u64()
        } else {
            rng.below(max_value + 1)
        };
        if j < overlap {
            sum += v as u128;
        }
        writeln!(p2, "{},{v}", id(i))?;
    }
    p2.flush()?;
    Ok(Expected {
        cardinality: overlap as u64,
        sum,
    })
}
