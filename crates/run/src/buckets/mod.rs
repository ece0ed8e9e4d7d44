//! Bucketed runs: a set operation too large for one machine's memory, run as many
//! small sessions that survive crashes.
//!
//! 1. **Stage** (before any traffic): the input is read once as a stream and its rows
//!    spilled to files under the state directory by a private random hash, so that
//!    duplicates meet in one file; each file is then checked (duplicates, values) in
//!    memory of its own size. Bad input stops the run here, as an unbucketed run would.
//! 2. **Plan**: the parties agree on the bucket count and a partition key in the
//!    session of [`privset_protocols::bucket_plan`] (the key from both parties' salts).
//! 3. **Route**: the staged rows go to one file per bucket, by a keyed hash of the
//!    identifier, so an item of either party lands in the same bucket.
//! 4. **Run**: each bucket pair is one session of the protocol on a set of at most a
//!    bucket's size, every bucket padded with random dummies to one public size, so the
//!    sessions reveal the set sizes (as an unbucketed run does) and nothing about how
//!    the items fall into buckets. Each finished bucket is recorded; a party started
//!    again with the same command continues with the buckets not yet finished.
//!
//! [`job`] keeps the state directory; [`runner`] runs a job this way. An operation whose
//! output is an aggregate (psi-card, psi-card-sum, pi-sum; [`operation`]) cannot run per
//! identifier bucket; [`value`] streams its messages instead, partitioned by PRF values.

pub mod job;
mod lanes;
pub mod operation;
pub mod rendezvous;
pub mod runner;
pub mod spill;
pub mod value;

use std::hash::BuildHasher;
use std::path::Path;

use privset_protocols::input::{self, Dataset, DuplicatePolicy, Row};
use sha2::{Digest, Sha256};

use crate::fail::Failure;
use crate::source::{self, RowStream};
use spill::{Record, SpillReader, SpillWriter};

/// Items per bucket `auto` aims at (of the larger set): a session of this size runs in
/// a few hundred MiB.
pub const DEFAULT_TARGET: u64 = 1 << 20;

/// Bytes of write buffer shared by all the spill files open at once.
const SPILL_BUFFERS: usize = 64 << 20;

/// The largest number of staging files (all open at once while staging, under the
/// usual limit of 1,024 open files): each is checked in memory alone.
const MAX_SPILLS: u32 = 512;

/// Bucket files open at once while routing (more buckets take more passes).
const ROUTE_FILES: u32 = 256;

/// Failure probability of the padding bound, over all buckets: 2^-40.
const PAD_SECURITY_BITS: f64 = 40.0;

/// The bucket of `id` under the plan's `key`: the top of a 64-bit keyed hash, scaled
/// to `buckets` (no modulo bias beyond 2^-64 per bucket).
pub fn bucket_of(key: &[u8; 32], id: &[u8], buckets: u32) -> u32 {
    let mut h = Sha256::new();
    h.update(b"privset/v1/bucket/");
    h.update(key);
    h.update(id);
    let digest = h.finalize();
    let x = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    ((u128::from(x) * u128::from(buckets)) >> 64) as u32
}

/// The public size every bucket of a party with `items` items is padded to: a bound
/// that `buckets` binomial bucket sizes all stay under except with probability
/// 2^-40 (Chernoff: P[X >= mu + t] <= exp(-t^2 / (2 (mu + t/3)))). One bucket holds
/// everything, unpadded.
pub fn padded_size(items: u64, buckets: u32) -> u64 {
    if buckets <= 1 {
        return items;
    }
    let mu = items as f64 / f64::from(buckets);
    let l = f64::from(buckets).ln() + PAD_SECURITY_BITS * std::f64::consts::LN_2;
    let t = l / 3.0 + ((l / 3.0).powi(2) + 2.0 * mu * l).sqrt();
    ((mu + t).ceil() as u64).min(items)
}

/// How the user's rows were staged: enough to read them back and to blame a line.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Staged {
    /// Staging files.
    pub spills: u32,
    /// Value columns per record.
    pub columns: usize,
    /// Items after de-duplication.
    pub items: u64,
    /// Bytes of the longest identifier (psu's sender sizes its identifier slots by it).
    #[serde(default)]
    pub max_id_len: usize,
    /// The input's name and kind, for errors found when a staging file is checked.
    pub what: String,
    pub columnar: bool,
}

/// How many staging files for an input of `bytes` bytes: about 16 MiB of input each.
pub fn spill_count(bytes: u64) -> u32 {
    (bytes / (16 << 20)).clamp(1, u64::from(MAX_SPILLS)) as u32
}

/// Step 1: spills `rows` into `spills` files in `dir` (by a private random hash, so
/// duplicates meet) and checks each file as the unbucketed run checks the whole input.
pub fn stage(
    rows: RowStream<'_>,
    value_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
    dir: &Path,
    spills: u32,
) -> Result<Staged, Failure> {
    let what = rows.what().to_string();
    let columnar = rows.is_columnar();
    let hasher = std::collections::hash_map::RandomState::new();
    let buffer = (SPILL_BUFFERS / spills as usize).clamp(4096, 1 << 20);
    let mut writers = (0..spills)
        .map(|s| SpillWriter::create(&spill_path(dir, s), buffer))
        .collect::<Result<Vec<_>, _>>()?;
    let mut values = Vec::with_capacity(value_names.len());
    let mut max_id_len = 0;
    for row in rows {
        let row = row?;
        max_id_len = max_id_len.max(row.id.len());
        values.clear();
        for (cell, name) in row.values.iter().zip(value_names) {
            values.push(
                input::parse_value(cell, row.line, name, max_value)
                    .map_err(|e| source::build_failure(e, &what, columnar))?,
            );
        }
        let s = (hasher.hash_one(&row.id) % u64::from(spills)) as usize;
        writers[s].write(row.line, &row.id, &values)?;
    }
    for w in writers {
        w.finish()?;
    }
    let mut staged = Staged {
        spills,
        columns: value_names.len(),
        items: 0,
        max_id_len,
        what,
        columnar,
    };
    for s in 0..spills {
        staged.items += read_staged(dir, &staged, s, value_names, policy, max_value)?
            .ids
            .len() as u64;
    }
    Ok(staged)
}

/// One staging file as a checked, de-duplicated dataset.
fn read_staged(
    dir: &Path,
    staged: &Staged,
    s: u32,
    value_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, Failure> {
    let records = SpillReader::open(&spill_path(dir, s), staged.columns)?
        .collect::<Result<Vec<Record>, _>>()?;
    let rows = records.into_iter().map(|r| Row {
        line: r.line,
        id: r.id,
        values: r.values.iter().map(u64::to_string).collect(),
        segment: None,
    });
    input::build_dataset(rows, value_names, policy, max_value)
        .map_err(|e| source::build_failure(e, &staged.what, staged.columnar))
}

/// Step 3: routes the staged rows into one file per bucket under `key`; returns the
/// largest bucket's size.
pub fn route(
    dir: &Path,
    staged: &Staged,
    value_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
    key: &[u8; 32],
    buckets: u32,
) -> Result<u64, Failure> {
    let buffer = (SPILL_BUFFERS / buckets as usize).clamp(4096, 1 << 20);
    let per_pass = ROUTE_FILES;
    let mut largest = 0;
    let mut first = 0;
    while first < buckets {
        let last = (first + per_pass).min(buckets);
        let mut writers = (first..last)
            .map(|b| SpillWriter::create(&bucket_path(dir, b), buffer))
            .collect::<Result<Vec<_>, _>>()?;
        for s in 0..staged.spills {
            let ds = read_staged(dir, staged, s, value_names, policy, max_value)?;
            let mut values = vec![0u64; ds.columns.len()];
            for (i, id) in ds.ids.iter().enumerate() {
                let b = bucket_of(key, id, buckets);
                if (first..last).contains(&b) {
                    for (v, column) in values.iter_mut().zip(&ds.columns) {
                        *v = column[i];
                    }
                    writers[(b - first) as usize].write(0, id, &values)?;
                }
            }
        }
        for w in writers {
            largest = largest.max(w.finish()?);
        }
        first = last;
    }
    Ok(largest)
}

/// Step 4's input: bucket `b` of this party, padded with dummies drawn from
/// `dummy_seed` to `padded` items, and how many of them are real (the first ones).
/// Dummies have value 0 and are 32 pseudorandom bytes, which no real identifier of
/// either party equals but with probability 2^-256 per pair.
pub fn load_bucket(
    dir: &Path,
    b: u32,
    columns: &[String],
    padded: u64,
    dummy_seed: [u8; 32],
) -> Result<(Dataset, usize), Failure> {
    let mut ds = Dataset {
        columns: vec![Vec::new(); columns.len()],
        column_names: columns.to_vec(),
        ..Dataset::default()
    };
    for r in SpillReader::open(&bucket_path(dir, b), columns.len())? {
        let r = r?;
        ds.ids.push(r.id);
        for (c, v) in ds.columns.iter_mut().zip(r.values) {
            c.push(v);
        }
    }
    let real = ds.ids.len() as u64;
    if real > padded {
        return Err(Failure::other(format!(
            "bucket {b} holds {real} items, more than the public bucket size {padded}: the \
             job's state is inconsistent; remove its state directory to start over"
        )));
    }
    let mut rng = privset_crypto::rng::SessionRng::from_seed(dummy_seed);
    for _ in real..padded {
        let mut dummy = vec![0u8; 32];
        rng.fill(&mut dummy);
        ds.ids.push(dummy);
        for c in &mut ds.columns {
            c.push(0);
        }
    }
    Ok((ds, real as usize))
}

fn spill_path(dir: &Path, s: u32) -> std::path::PathBuf {
    dir.join("stage").join(format!("{s:05}.bin"))
}

fn bucket_path(dir: &Path, b: u32) -> std::path::PathBuf {
    dir.join("bucket").join(format!("{b:07}.bin"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_sizes_stay_under_the_padded_size_and_the_padding_is_small() {
        assert_eq!(padded_size(1000, 1), 1000);
        assert_eq!(padded_size(0, 8), 0);
        assert_eq!(padded_size(5, 64), 5);
        let m = padded_size(1 << 26, 64);
        let overhead = m as f64 / f64::from(1 << 20) - 1.0;
        assert!(overhead > 0.0 && overhead < 0.01, "{m}");
        // Simulated: 2^16 items into 16 buckets under a random key.
        let key = [7u8; 32];
        let mut sizes = vec![0u64; 16];
        for i in 0u32..1 << 16 {
            sizes[bucket_of(&key, &i.to_be_bytes(), 16) as usize] += 1;
        }
        let bound = padded_size(1 << 16, 16);
        assert!(
            sizes.iter().all(|&s| s <= bound && s > 0),
            "{sizes:?} {bound}"
        );
    }
}
