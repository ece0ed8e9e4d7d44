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
use super::tables::{GROUP_BITS, Table, build_table, lookup_word};

/// Group tables the back-substitution keeps, in a ring: a row's look-ups cover whole
/// words from its pivot's word on, less than `MAX_BAND_WIDTH + 128` columns, and the 16
/// groups of a word must sit next to each other in the ring.
const RING: usize = 128;
const _: () = assert!(RING * GROUP_BITS >= MAX_BAND_WIDTH + 128 && RING.is_multiple_of(16));

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
    match params.band_width.div_ceil(64) {
        1 => solve::<2>(System::new(hasher, keys, values)?, &mut store)?,
        2 => solve::<3>(System::new(hasher, keys, values)?, &mut store)?,
        3 => solve::<4>(System::new(hasher, keys, values)?, &mut store)?,
        _ => solve::<5>(System::new(hasher, keys, values)?, &mut store)?,
    }
    Ok(store)
}

/// Where each bucket begins once items are ordered by bucket (`items` yields the bucket
/// of each item, below `buckets`): the exclusive prefix sums of the bucket sizes.
pub(super) fn bucket_offsets(items: impl Iterator<Item = usize>, buckets: usize) -> Vec<u32> {
    let mut next = vec![0u32; buckets + 1];
    for b in items {
        next[b + 1] += 1;
    }
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    next
}

/// Starts per coarse bucket of the sort by start: 1024, so a bucket's fine counts stay
/// in L1 and the coarse pass writes to about `columns / 1024` places at once.
const FINE_BITS: u32 = 10;

/// The band system: rows in order of start, with their starts and right-hand sides.
struct System<const K: usize> {
    starts: Vec<u32>,
    rows: Vec<[u64; K]>,
    values: Vec<u128>,
}

impl<const K: usize> System<K> {
    /// Hashes every key to its row and sorts the rows by start: a two-level counting
    /// sort, first by `start >> FINE_BITS` (rows go to about `columns / 1024` places, so
    /// the writes stream), then within each coarse bucket by the rest (in L2). Nothing is
    /// read from a random place, and no array is kept that is not needed: first touching
    /// fresh memory costs about 0.4 ms per MB on the VM this was measured on.
    fn new(hasher: &RowHasher, keys: &[u128], values: &[u128]) -> Result<Self, OkvsError> {
        let n = keys.len();
        let mut in_starts = vec![0u32; n];
        hasher.starts(keys, &mut in_starts);
        let coarse_buckets = (hasher.range() >> FINE_BITS) + 1;
        let offsets = bucket_offsets(
            in_starts.iter().map(|&s| (s >> FINE_BITS) as usize),
            coarse_buckets,
        );
        let mut next = offsets.clone();
        let mut starts = vec![0u32; n];
        let mut rows = vec![[0u64; K]; n];
        let mut vals = vec![0u128; n];
        let mut bands = vec![[0u64; BAND_WORDS]; BATCH];
        for ((ks, ss), vs) in keys
            .chunks(BATCH)
            .zip(in_starts.chunks(BATCH))
            .zip(values.chunks(BATCH))
        {
            hasher.bands(ks, &mut bands[..ks.len()]);
            for ((&s, &v), band) in ss.iter().zip(vs).zip(&bands) {
                let slot = &mut next[(s >> FINE_BITS) as usize];
                let p = *slot as usize;
                *slot += 1;
                starts[p] = s;
                rows[p] = shifted::<K>(band, s as usize % 64);
                vals[p] = v;
            }
        }
        drop((next, in_starts));

        // Within each coarse bucket: the order by start, then starts, rows and values
        // permuted in place.
        let fine_mask = (1u32 << FINE_BITS) - 1;
        let mut fine = vec![0u32; (1 << FINE_BITS) + 1];
        let mut order: Vec<u32> = Vec::new();
        let mut old: Vec<(u32, [u64; K], u128)> = Vec::new();
        let mut equal_rows = false;
        for b in 0..coarse_buckets {
            let (lo, hi) = (offsets[b] as usize, offsets[b + 1] as usize);
            fine.fill(0);
            for &s in &starts[lo..hi] {
                fine[(s & fine_mask) as usize + 1] += 1;
            }
            for f in 1..fine.len() {
                fine[f] += fine[f - 1];
            }
            order.clear();
            order.resize(hi - lo, 0);
            for (j, &s) in starts[lo..hi].iter().enumerate() {
                let slot = &mut fine[(s & fine_mask) as usize];
                order[*slot as usize] = j as u32;
                *slot += 1;
            }
            old.clear();
            old.extend((lo..hi).map(|p| (starts[p], rows[p], vals[p])));
            for (p, &j) in (lo..hi).zip(&order) {
                (starts[p], rows[p], vals[p]) = old[j as usize];
            }
            // Equal keys have equal rows, and rows with equal starts are neighbours now;
            // a run of equal starts holds about one row.
            let mut run = lo;
            for p in lo + 1..hi {
                if starts[p] != starts[p - 1] {
                    run = p;
                } else if rows[run..p].contains(&rows[p]) {
                    equal_rows = true;
                }
            }
        }
        if equal_rows {
            // Equal rows: a duplicate key, or (for distinct keys, with probability about
            // 2^-band_width) a singular system. Tell them apart exactly.
            let mut sorted = keys.to_vec();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return Err(OkvsError::DuplicateKey);
            }
            return Err(OkvsError::Singular);
        }
        Ok(Self {
            starts,
            rows,
            values: vals,
        })
    }
}

/// Eliminates, then back-substitutes into `store` (which holds random values on entry).
fn solve<const K: usize>(sys: System<K>, store: &mut [u128]) -> Result<(), OkvsError> {
    let System {
        starts,
        mut rows,
        values: mut vals,
    } = sys;
    let n = rows.len();

    // Forward elimination in start order. A row's pivot is its first set bit once the
    // earlier pivots are eliminated; it is then eliminated from the later rows that reach
    // it (those starting at or before it: rows are in start order, so they follow
    // contiguously). The rows touched are few: a pivot lags its start by O(1 / epsilon)
    // columns on average (about 6 at epsilon = 0.1, and 3.5 row additions per row).
    // Whether a later row has the pivot's bit is a coin flip, so the addition is masked
    // rather than branched on.
    let mut pivot_row = vec![u32::MAX; store.len()];
    for i in 0..n {
        let row = rows[i];
        let base = starts[i] as usize / 64;
        let Some(t) = row.iter().position(|&w| w != 0) else {
            return Err(OkvsError::Singular);
        };
        let p = (base + t) * 64 + row[t].trailing_zeros() as usize;
        pivot_row[p] = i as u32;
        let v = vals[i];
        for j in i + 1..n {
            if starts[j] as usize > p {
                break;
            }
            let d = starts[j] as usize / 64 - base;
            let (pw, pb) = (t - d, p % 64);
            let target = &mut rows[j];
            let mask = 0u64.wrapping_sub((target[pw] >> pb) & 1);
            if d == 0 {
                for u in 0..K {
                    target[u] ^= row[u] & mask;
                }
            } else {
                for u in 0..K - d {
                    target[u] ^= row[u + d] & mask;
                }
            }
            vals[j] ^= v & (((mask as u128) << 64) | mask as u128);
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
/// pivot's group, by table look-ups from the next group on. Nibbles of the pivot's word
/// at or below its group are masked to zero and look up entry 0, which is 0 in every
/// table, built or not.
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
    let first = row[t0] & (u64::MAX << last << 1);
    for (t, &word) in row.iter().enumerate().skip(t0) {
        let x = if t == t0 { first } else { word };
        if x != 0 {
            // Groups of word t: 16 (base + t) .., contiguous in the ring (RING % 16 == 0).
            let slot = (16 * (base + t)) % RING;
            let tables: &[Table; 16] = ring[slot..slot + 16].try_into().expect("16 tables");
            acc ^= lookup_word(tables, x);
        }
    }
    acc
}
