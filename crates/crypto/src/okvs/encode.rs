//! Encoding: solve the band system by Gaussian elimination in the band, then
//! back-substitution.
//!
//! Rows are kept in order of start position. A row is stored as `K` 64-bit words
//! aligned to absolute column positions (word `t` of the row holds columns
//! `64 (start / 64 + t) ..`), so adding one row to another is a word-for-word XOR at a
//! word offset, with no bit shifts; `K = ceil((band_width + 63) / 64)` covers any start.

use super::OkvsError;
use super::hashing::{BAND_WORDS, BATCH, RowHasher, shifted};
use super::params::{MAX_BAND_WIDTH, OkvsParams};
use super::tables::{GROUP_BITS, Table, build_table};

/// Tables kept by the back-substitution: a band reaches at most `MAX_BAND_WIDTH /
/// GROUP_BITS + 1` groups above its pivot's.
const RING: usize = 128;
const _: () = assert!(RING * GROUP_BITS >= MAX_BAND_WIDTH + 2 * GROUP_BITS);

/// Encodes with the shape already checked and lengths already matched.
pub(super) fn encode(
    params: &OkvsParams,
    hasher: &RowHasher,
    keys: &[u128],
    values: &[u128],
    mut fill: impl FnMut() -> u128,
) -> Result<Vec<u128>, OkvsError> {
    let m = params.columns;
    // Every column starts random and the pivot columns are overwritten below, so free
    // columns are uniform and independent, and `fill` is called exactly `columns` times
    // whatever the keys are.
    let mut store: Vec<u128> = (0..m).map(|_| fill()).collect();
    let n = keys.len();
    if n == 0 {
        return Ok(store);
    }
    if n > m {
        // More equations than unknowns: the rows are dependent whatever the seed.
        return Err(OkvsError::Singular);
    }
    let sorted = Sorted::new(hasher, keys, values);
    sorted.check_distinct()?;
    match params.band_width.div_ceil(64) {
        1 => solve::<2>(hasher, sorted, &mut store)?,
        2 => solve::<3>(hasher, sorted, &mut store)?,
        3 => solve::<4>(hasher, sorted, &mut store)?,
        _ => solve::<5>(hasher, sorted, &mut store)?,
    }
    Ok(store)
}

/// Where each bucket begins once items are ordered by bucket (`bucket_of[i] < buckets`):
/// the exclusive prefix sums of the bucket sizes.
pub(super) fn bucket_offsets(bucket_of: &[u32], buckets: usize) -> Vec<u32> {
    let mut next = vec![0u32; buckets + 1];
    for &b in bucket_of {
        next[b as usize + 1] += 1;
    }
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    next
}

/// The keys, their values and starts in order of start (a counting sort: each key is
/// written once to its place, so the input is read in order).
struct Sorted {
    starts: Vec<u32>,
    keys: Vec<u128>,
    values: Vec<u128>,
}

impl Sorted {
    fn new(hasher: &RowHasher, keys: &[u128], values: &[u128]) -> Self {
        let n = keys.len();
        let mut starts = vec![0u32; n];
        hasher.starts(keys, &mut starts);
        let mut next = bucket_offsets(&starts, hasher.range());
        let mut sorted = Self {
            starts: vec![0; n],
            keys: vec![0; n],
            values: vec![0; n],
        };
        for ((&s, &k), &v) in starts.iter().zip(keys).zip(values) {
            let slot = &mut next[s as usize];
            let p = *slot as usize;
            *slot += 1;
            sorted.starts[p] = s;
            sorted.keys[p] = k;
            sorted.values[p] = v;
        }
        sorted
    }

    /// Equal keys have equal starts, so they are neighbours in start order; a run of equal
    /// starts holds about one key, so comparing within runs is linear.
    fn check_distinct(&self) -> Result<(), OkvsError> {
        let mut run = 0;
        for p in 1..self.keys.len() {
            if self.starts[p] != self.starts[p - 1] {
                run = p;
            } else if self.keys[run..p].contains(&self.keys[p]) {
                return Err(OkvsError::DuplicateKey);
            }
        }
        Ok(())
    }
}

/// Builds the rows in start order, eliminates, back-substitutes into `store` (which
/// holds random values on entry).
fn solve<const K: usize>(
    hasher: &RowHasher,
    sorted: Sorted,
    store: &mut [u128],
) -> Result<(), OkvsError> {
    let Sorted {
        starts,
        keys,
        values: mut vals,
    } = sorted;
    let n = keys.len();
    let mut rows: Vec<[u64; K]> = Vec::with_capacity(n);
    let mut bands = vec![[0u64; BAND_WORDS]; BATCH];
    for (ks, ss) in keys.chunks(BATCH).zip(starts.chunks(BATCH)) {
        hasher.bands(ks, &mut bands[..ks.len()]);
        rows.extend(
            ss.iter()
                .zip(&bands)
                .map(|(&s, band)| shifted::<K>(band, s as usize % 64)),
        );
    }
    drop(keys);

    // Forward elimination in start order. A row's pivot is its first set bit once the
    // earlier pivots are eliminated; it is then eliminated from the later rows that reach
    // it (those starting at or before it: rows are in start order, so they follow
    // contiguously). The rows touched are few: a pivot lags its start by O(1 / epsilon)
    // columns on average (about 6 at epsilon = 0.1, and 3.5 row additions per row).
    let mut pivots = vec![0u32; n];
    for i in 0..n {
        let row = rows[i];
        let base = starts[i] as usize / 64;
        let Some(t) = row.iter().position(|&w| w != 0) else {
            return Err(OkvsError::Singular);
        };
        let p = (base + t) * 64 + row[t].trailing_zeros() as usize;
        pivots[i] = p as u32;
        let v = vals[i];
        for j in i + 1..n {
            if starts[j] as usize > p {
                break;
            }
            let bj = starts[j] as usize / 64;
            let d = bj - base;
            let (pw, pb) = (p / 64 - bj, p % 64);
            if (rows[j][pw] >> pb) & 1 == 1 {
                let target = &mut rows[j];
                for u in 0..K - d {
                    target[u] ^= row[u + d];
                }
                vals[j] ^= v;
            }
        }
    }

    // Back-substitution from the last column down: a pivot row's other bits are all in
    // later columns, which are final by then (free ones random, pivot ones solved). The
    // XOR of those columns is read from the subset tables of the column groups above the
    // pivot's own group (a group's table is built as soon as its lowest column is final),
    // kept in a ring: a band reaches at most `RING` groups up.
    let mut ring: Box<[Table; RING]> = vec![[0u128; 1 << GROUP_BITS]; RING]
        .into_boxed_slice()
        .try_into()
        .expect("RING tables");
    let mut pivot_row = vec![u32::MAX; store.len()];
    for (i, &p) in pivots.iter().enumerate() {
        pivot_row[p as usize] = i as u32;
    }
    for col in (0..store.len()).rev() {
        let r = pivot_row[col];
        if r != u32::MAX {
            let r = r as usize;
            store[col] = vals[r] ^ above_pivot(&rows[r], starts[r] as usize, col, store, &ring);
        }
        if col % GROUP_BITS == 0 {
            let g = col / GROUP_BITS;
            build_table(&mut ring[g % RING], store, col);
        }
    }
    Ok(())
}

/// XOR of the final columns a row selects above its pivot `col`: bit by bit in the
/// pivot's group, by table look-up in the groups above.
#[inline]
fn above_pivot<const K: usize>(
    row: &[u64; K],
    start: usize,
    col: usize,
    store: &[u128],
    ring: &[Table; RING],
) -> u128 {
    let base = start / 64;
    let t0 = col / 64 - base;
    let b = col % 64;
    // Last bit of the pivot's group within the word.
    let last = b | (GROUP_BITS - 1);
    let mut acc = 0u128;
    let mut own = row[t0] & (u64::MAX << b << 1) & (u64::MAX >> (63 - last));
    while own != 0 {
        acc ^= store[(base + t0) * 64 + own.trailing_zeros() as usize];
        own &= own - 1;
    }
    let mut g = col / GROUP_BITS + 1;
    let mut x = row[t0] >> last >> 1;
    let mut groups = (63 - last) / GROUP_BITS;
    let mut t = t0;
    loop {
        if x == 0 {
            g += groups;
        } else {
            for _ in 0..groups {
                acc ^= ring[g % RING][x as usize & ((1 << GROUP_BITS) - 1)];
                x >>= GROUP_BITS;
                g += 1;
            }
        }
        t += 1;
        if t == K {
            return acc;
        }
        x = row[t];
        groups = 64 / GROUP_BITS;
    }
}
