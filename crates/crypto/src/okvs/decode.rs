//! Decoding: `Decode(P, x)` is the XOR of the `P[start + j]` whose band bit `j` is 1.
//!
//! Done naively that is `band_width / 2` XORs of 16-byte values per key, one per set
//! bit. For many keys the subset tables of [`super::tables`] are faster: the keys are
//! bucketed by start into chunks of [`CHUNK_COLUMNS`] columns, each chunk builds the
//! tables of the columns its keys reach (they fit in L2) and takes one look-up per group
//! of columns a band covers. Chunks run in parallel. A chunk with too few keys to pay
//! for its tables decodes them naively. Both ways compute the same linear function of
//! `P`.

use rayon::prelude::*;

use super::encode::bucket_offsets;
use super::hashing::{BAND_WORDS, BATCH, RowHasher, shifted};
use super::tables::{GROUP_BITS, Table, build_table};

/// Start positions per chunk.
const CHUNK_COLUMNS: usize = 4096;

/// Below this many keys, decode naively on one thread.
const NAIVE_KEYS: usize = 1024;

/// Decodes every key into `out` (lengths already checked).
pub(super) fn decode(hasher: &RowHasher, store: &[u128], keys: &[u128], out: &mut [u128]) {
    if keys.len() < NAIVE_KEYS {
        naive(hasher, store, keys, out);
        return;
    }
    // Words of a band shifted to a group boundary.
    match (hasher.width() + GROUP_BITS - 1).div_ceil(64) {
        1 => chunked::<1>(hasher, store, keys, out),
        2 => chunked::<2>(hasher, store, keys, out),
        3 => chunked::<3>(hasher, store, keys, out),
        4 => chunked::<4>(hasher, store, keys, out),
        _ => chunked::<5>(hasher, store, keys, out),
    }
}

/// XOR of the `store` values a band selects, one set bit at a time.
#[inline]
fn xor_band(store: &[u128], start: usize, band: &[u64; BAND_WORDS]) -> u128 {
    let mut acc = 0u128;
    for (t, &word) in band.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            acc ^= store[start + t * 64 + bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
    }
    acc
}

/// Decodes key by key.
pub(super) fn naive(hasher: &RowHasher, store: &[u128], keys: &[u128], out: &mut [u128]) {
    let mut starts = [0u32; BATCH];
    let mut bands = [[0u64; BAND_WORDS]; BATCH];
    for (ks, os) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
        let len = ks.len();
        hasher.starts(ks, &mut starts[..len]);
        hasher.bands(ks, &mut bands[..len]);
        for ((o, &s), band) in os.iter_mut().zip(&starts).zip(&bands) {
            *o = xor_band(store, s as usize, band);
        }
    }
}

/// Decodes in chunks of start positions with tables; `N` words hold a band shifted to a
/// group boundary.
fn chunked<const N: usize>(hasher: &RowHasher, store: &[u128], keys: &[u128], out: &mut [u128]) {
    let n = keys.len();
    let mut starts = vec![0u32; n];
    starts
        .par_chunks_mut(BATCH)
        .zip(keys.par_chunks(BATCH))
        .for_each(|(s, k)| hasher.starts(k, s));
    let chunk_of: Vec<u32> = starts
        .iter()
        .map(|&s| (s as usize / CHUNK_COLUMNS) as u32)
        .collect();
    let chunks = hasher.range().div_ceil(CHUNK_COLUMNS);
    let offsets = bucket_offsets(&chunk_of, chunks);

    // Keys and starts in chunk order (written once each: few chunks, so the writes stream).
    let mut next = offsets.clone();
    let mut order = vec![0u32; n];
    let mut c_keys = vec![0u128; n];
    let mut c_starts = vec![0u32; n];
    for (i, &c) in chunk_of.iter().enumerate() {
        let slot = &mut next[c as usize];
        let p = *slot as usize;
        *slot += 1;
        order[p] = i as u32;
        c_keys[p] = keys[i];
        c_starts[p] = starts[i];
    }
    drop(starts);
    drop(chunk_of);

    // One job per chunk with keys, each writing its own slice of the results.
    let mut results = vec![0u128; n];
    let mut jobs = Vec::with_capacity(chunks);
    let mut rest = results.as_mut_slice();
    for c in 0..chunks {
        let (lo, hi) = (offsets[c] as usize, offsets[c + 1] as usize);
        let (res, r) = rest.split_at_mut(hi - lo);
        rest = r;
        if hi > lo {
            jobs.push((c, &c_keys[lo..hi], &c_starts[lo..hi], res));
        }
    }
    jobs.into_par_iter()
        .for_each_init(Vec::<Table>::new, |tables, (c, ks, ss, res)| {
            decode_chunk::<N>(hasher, store, c, ks, ss, res, tables)
        });
    // Results back in input order.
    for (&i, r) in order.iter().zip(&results) {
        out[i as usize] = *r;
    }
}

fn decode_chunk<const N: usize>(
    hasher: &RowHasher,
    store: &[u128],
    chunk: usize,
    keys: &[u128],
    starts: &[u32],
    res: &mut [u128],
    tables: &mut Vec<Table>,
) {
    let width = hasher.width();
    let first_group = chunk * CHUNK_COLUMNS / GROUP_BITS;
    // Groups the chunk's keys reach: a band shifted to a group boundary spans N words.
    let groups = (CHUNK_COLUMNS + N * 64) / GROUP_BITS;
    // Naively a key costs a XOR per set bit; with tables, a look-up per group it covers
    // plus its share of building them.
    let lookups = N * 64 / GROUP_BITS;
    let use_tables =
        keys.len() * (width / 2) > groups * (1 << GROUP_BITS) / 2 + keys.len() * lookups;
    if use_tables {
        tables.resize(groups, [0; 1 << GROUP_BITS]);
        for (g, table) in tables.iter_mut().enumerate() {
            build_table(table, store, (first_group + g) * GROUP_BITS);
        }
    }
    let mut bands = [[0u64; BAND_WORDS]; BATCH];
    for ((ks, ss), rs) in keys
        .chunks(BATCH)
        .zip(starts.chunks(BATCH))
        .zip(res.chunks_mut(BATCH))
    {
        hasher.bands(ks, &mut bands[..ks.len()]);
        for ((&s, r), band) in ss.iter().zip(rs.iter_mut()).zip(&bands) {
            let s = s as usize;
            if !use_tables {
                *r = xor_band(store, s, band);
                continue;
            }
            let words = shifted::<N>(band, s % GROUP_BITS);
            let mut g = s / GROUP_BITS - first_group;
            let mut acc = 0u128;
            for word in words {
                let mut x = word;
                for _ in 0..64 / GROUP_BITS {
                    acc ^= tables[g][x as usize & ((1 << GROUP_BITS) - 1)];
                    x >>= GROUP_BITS;
                    g += 1;
                }
            }
            *r = acc;
        }
    }
}
