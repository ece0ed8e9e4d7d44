//! Decoding: `Decode(P, x)` is the XOR of the `P[start + j]` whose band bit `j` is 1.
//!
//! Done naively that is `band_width / 2` XORs of 16-byte values per key, one per set
//! bit. For many keys subset tables are faster (`tables` module): the keys are bucketed
//! by start into chunks of [`CHUNK_COLUMNS`] columns; each chunk tabulates, for every
//! group of 8 columns its keys reach, the XOR of each of the 256 subsets of the group
//! (640 KB for a chunk, in L2), then takes one look-up per 8 columns of a band: 30
//! look-ups for a band of 232 bits instead of 116 XORs. Measured against groups of 4
//! columns (16-entry tables, twice the look-ups), bytes were twice as fast at `2^16`
//! keys and as fast at `2^20`, where building the tables costs as much as reading them.
//! Chunks run in parallel. A chunk with too few keys to pay for its tables decodes them
//! naively. Both ways compute the same linear function of `P`.

use rayon::prelude::*;

use super::encode::bucket_offsets;
use super::hashing::{BAND_WORDS, BATCH, RowHasher, shifted};
use super::tables::{ByteTable, build_byte_table};

/// Start positions per chunk.
const CHUNK_COLUMNS: usize = 1024;

/// Below this many keys, decode naively on one thread.
const NAIVE_KEYS: usize = 1024;

/// Decodes every key into `out` (lengths already checked).
pub(super) fn decode(hasher: &RowHasher, store: &[u128], keys: &[u128], out: &mut [u128]) {
    if keys.len() < NAIVE_KEYS {
        naive(hasher, store, keys, out);
        return;
    }
    // Words of a band shifted to a byte boundary.
    match (hasher.width() + 7).div_ceil(64) {
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
/// byte boundary.
fn chunked<const N: usize>(hasher: &RowHasher, store: &[u128], keys: &[u128], out: &mut [u128]) {
    let n = keys.len();
    let mut starts = vec![0u32; n];
    starts
        .par_chunks_mut(BATCH)
        .zip(keys.par_chunks(BATCH))
        .for_each(|(s, k)| hasher.starts(k, s));
    let chunks = hasher.range().div_ceil(CHUNK_COLUMNS);
    let offsets = bucket_offsets(starts.iter().map(|&s| s as usize / CHUNK_COLUMNS), chunks);

    // Keys and starts in chunk order (written once each: few chunks, so the writes stream).
    let mut next = offsets.clone();
    // Where each key went, to read its result back with independent loads (a gather)
    // rather than scatter writes, which are slower on an array this size.
    let mut place = vec![0u32; n];
    let mut c_keys = vec![0u128; n];
    let mut c_starts = vec![0u32; n];
    for (i, &s) in starts.iter().enumerate() {
        let slot = &mut next[s as usize / CHUNK_COLUMNS];
        let p = *slot as usize;
        *slot += 1;
        place[i] = p as u32;
        c_keys[p] = keys[i];
        c_starts[p] = starts[i];
    }
    drop(starts);

    // One job per chunk with keys; each overwrites its keys with their results (memory
    // is costly to first touch, so no separate array).
    let mut jobs = Vec::with_capacity(chunks);
    let mut rest = c_keys.as_mut_slice();
    for c in 0..chunks {
        let (lo, hi) = (offsets[c] as usize, offsets[c + 1] as usize);
        let (ks, r) = rest.split_at_mut(hi - lo);
        rest = r;
        if hi > lo {
            jobs.push((c, ks, &c_starts[lo..hi]));
        }
    }
    jobs.into_par_iter()
        .for_each_init(Vec::<ByteTable>::new, |tables, (c, ks, ss)| {
            decode_chunk::<N>(hasher, store, c, ks, ss, tables)
        });
    // Results back in input order.
    for (o, &p) in out.iter_mut().zip(&place) {
        *o = c_keys[p as usize];
    }
}

fn decode_chunk<const N: usize>(
    hasher: &RowHasher,
    store: &[u128],
    chunk: usize,
    keys: &mut [u128],
    starts: &[u32],
    tables: &mut Vec<ByteTable>,
) {
    let width = hasher.width();
    let first_group = chunk * CHUNK_COLUMNS / 8;
    // Groups the chunk's keys reach: a band shifted to a byte boundary spans N words.
    let groups = (CHUNK_COLUMNS + N * 64) / 8;
    // Naively a key costs a XOR per set bit; with tables, a look-up per byte of its band
    // plus its share of building them (an entry costs about half a look-up).
    let lookups = (width + 7).div_ceil(8);
    let use_tables = keys.len() * (width / 2) > groups * 128 + keys.len() * lookups;
    if use_tables {
        tables.resize(groups, [0; 256]);
        for (g, table) in tables.iter_mut().enumerate() {
            build_byte_table(table, store, (first_group + g) * 8);
        }
    }
    let mut bands = [[0u64; BAND_WORDS]; BATCH];
    for (ks, ss) in keys.chunks_mut(BATCH).zip(starts.chunks(BATCH)) {
        hasher.bands(ks, &mut bands[..ks.len()]);
        for ((&s, r), band) in ss.iter().zip(ks.iter_mut()).zip(&bands) {
            let s = s as usize;
            if !use_tables {
                *r = xor_band(store, s, band);
                continue;
            }
            let words = shifted::<N>(band, s % 8);
            let g = s / 8 - first_group;
            let mut acc = 0u128;
            for (t, &x) in words.iter().enumerate() {
                let at = g + 8 * t;
                let ts: &[ByteTable; 8] = tables[at..at + 8].try_into().expect("8 tables");
                for (k, table) in ts.iter().enumerate() {
                    acc ^= table[((x >> (8 * k)) & 255) as usize];
                }
            }
            *r = acc;
        }
    }
}
