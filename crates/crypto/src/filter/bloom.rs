//! Partitioned Bloom filter.
//!
//! The bit array is split into `k` partitions of `s` bits; each element sets exactly
//! one bit in every partition, chosen by its own 64-bit word of keyed-hash output. A
//! look-up is positive when all `k` of its bits are set.
//!
//! # Parameters
//! With `n ≥ 1` elements and `q' = max(q, 1)` look-ups:
//! - `k = 40 + ceil(log2 q')` partitions (hash functions), so `2⁻ᵏ ≤ 2⁻⁴⁰/q'`;
//! - `s = ceil(1.442718 · n) + 1` bits per partition, i.e. `s − 1 ≥ (n / ln 2)(1 + 2⁻¹⁶)`;
//! - `m = k·s` bits in total, sent as `ceil(m/8)` bytes (bit `i` is bit `i mod 8`,
//!   least significant first, of byte `i/8`; padding bits are zero).
//!
//! # False positives
//! Partitions are independent (distinct hash words), so a non-member's FP probability
//! is the product over partitions of the probability its bit there is set. A bit index
//! is `(w · s) >> 64` for a uniform 64-bit word `w`, so every bit has probability
//! `p ≤ (1 + ε)/s` with `ε = s/2⁶⁴ < 2⁻³⁰`; a given bit is then set with probability
//! `1 − (1 − p)ⁿ ≤ 1 − e^(−n·p/(1−p)) ≤ 1 − e^(−ln 2) = ½`, the margin `(1 + 2⁻¹⁶)` in `s`
//! covering `ε` and the `1/(1 − p)` term. Hence FP ≤ `2⁻ᵏ ≤ 2⁻⁴⁰/q'` per look-up, and
//! `≤ 2⁻⁴⁰` over all `q` (union bound). Unlike the textbook `(1 − e^(−kn/m))ᵏ`
//! approximation this bound is exact for small `n` too, which is why the filter is
//! partitioned; plain double hashing was rejected because its `≈ n/m²` floor
//! (two elements sharing both base hashes) is far above 2⁻⁴⁰ at realistic sizes.
//!
//! # Size
//! `k · s ≈ 1.4427 · n · (40 + log2 q)` bits: about 1.03 MB at `n = q = 100 000`,
//! ≈ 1.4× the GCS, in exchange for look-ups that touch ≈ 2 hash blocks instead of a
//! binary search.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{FP_BITS, FilterError, FilterParams, KeyedHash, ceil_log2};

const DOMAIN: &[u8] = b"privset/filter/bloom/v1";

/// `1/ln 2 · (1 + 2⁻¹⁶)` rounded up, as a fraction over 10⁶.
const BITS_PER_ELEMENT_PER_PARTITION_MICRO: u64 = 1_442_718;

/// The derived Bloom numbers (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BloomParams {
    /// Number of elements `n`.
    pub n: u64,
    /// Number of partitions (= hash functions) `k`.
    pub k: u32,
    /// Bits per partition `s` (0 for the empty set).
    pub s: u64,
}

impl From<&FilterParams> for BloomParams {
    fn from(params: &FilterParams) -> Self {
        Self::new(params.n(), params.q())
    }
}

impl BloomParams {
    /// The numbers for `n` elements and `q` look-ups (`max(q, 1)` is used).
    pub fn new(n: u64, q: u64) -> Self {
        let k = FP_BITS + ceil_log2(q.max(1));
        let s = if n == 0 {
            0
        } else {
            (n * BITS_PER_ELEMENT_PER_PARTITION_MICRO).div_ceil(1_000_000) + 1
        };
        Self { n, k, s }
    }

    /// The bit of partition `i` for the element's word `w` (see [`element_words`]).
    pub fn bit(&self, i: u32, w: u64) -> u64 {
        bit_index(self.s, i, w)
    }

    /// Total bits `m = k·s`.
    pub fn bits(&self) -> u64 {
        self.k as u64 * self.s
    }

    /// The exact encoded length, `ceil(m/8)` bytes.
    pub fn encoded_len(&self) -> usize {
        self.bits().div_ceil(8) as usize
    }
}

/// Produces the `k` 64-bit words of an element lazily: the keyed hash itself supplies
/// words 0–3, then `SHA-256(d ‖ j)` for `j = 1, 2, …` supplies four more each.
struct Words {
    d: [u8; 32],
    block: [u8; 32],
    /// Which block `block` holds.
    current: u32,
}

impl Words {
    fn new(d: [u8; 32]) -> Self {
        Self {
            d,
            block: d,
            current: 0,
        }
    }

    fn word(&mut self, i: u32) -> u64 {
        let wanted = i / 4;
        if wanted != self.current {
            self.block = if wanted == 0 {
                self.d
            } else {
                let mut h = Sha256::new();
                h.update(self.d);
                h.update(wanted.to_be_bytes());
                h.finalize().into()
            };
            self.current = wanted;
        }
        let off = (i % 4) as usize * 8;
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.block[off..off + 8]);
        u64::from_be_bytes(w)
    }
}

/// The bit for partition `i` given its word: `i·s + (w·s >> 64)`.
fn bit_index(s: u64, i: u32, w: u64) -> u64 {
    i as u64 * s + ((w as u128 * s as u128) >> 64) as u64
}

/// The `k` hash words of every element under `key`, element by element (`k` words
/// each): the filter's bits for any partition size `s` follow with [`BloomParams::bit`],
/// so one hashing serves filters of different sizes (the same `k`). For protocols that
/// keep a Bloom filter in a form of their own (encrypted, one ciphertext per bit).
pub fn element_words(k: u32, key: &[u8; 32], elements: &[&[u8]]) -> Vec<u64> {
    let h = KeyedHash::new(DOMAIN, key);
    let mut out = vec![0u64; elements.len() * k as usize];
    if k == 0 {
        return out;
    }
    out.par_chunks_mut(k as usize)
        .zip(elements.par_iter())
        .for_each(|(slot, e)| {
            let mut w = Words::new(h.hash(e));
            for (i, x) in slot.iter_mut().enumerate() {
                *x = w.word(i as u32);
            }
        });
    out
}

/// Sets, for every element, one bit in each partition.
pub(super) fn encode(params: &BloomParams, key: &[u8; 32], elements: &[&[u8]]) -> Vec<u8> {
    if params.s == 0 {
        return Vec::new();
    }
    let words: Vec<AtomicU64> = (0..params.bits().div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let h = KeyedHash::new(DOMAIN, key);
    elements.par_iter().for_each(|e| {
        let mut w = Words::new(h.hash(e));
        for i in 0..params.k {
            let b = bit_index(params.s, i, w.word(i));
            words[(b / 64) as usize].fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
    });
    let mut out: Vec<u8> = words
        .into_iter()
        .flat_map(|w| w.into_inner().to_le_bytes())
        .collect();
    out.truncate(params.encoded_len());
    out
}

/// A decoded Bloom filter.
#[derive(Clone, Debug)]
pub struct Bloom {
    params: BloomParams,
    hash: KeyedHash,
    bits: Vec<u8>,
}

impl Bloom {
    /// Accepts exactly `ceil(m/8)` bytes with zero padding, and no partition holding more
    /// set bits than there are elements (an honest encoder sets at most `n` per
    /// partition; this stops a peer from sending an all-ones filter that matches
    /// everything).
    pub(super) fn decode(
        params: &BloomParams,
        key: &[u8; 32],
        bytes: &[u8],
    ) -> Result<Self, FilterError> {
        let expected = params.encoded_len();
        if bytes.len() != expected {
            return Err(FilterError::WrongLength {
                len: bytes.len(),
                expected,
            });
        }
        let m = params.bits();
        if count_ones(bytes, m, expected as u64 * 8) != 0 {
            return Err(FilterError::NonZeroPadding);
        }
        for partition in 0..params.k {
            let start = partition as u64 * params.s;
            let set = count_ones(bytes, start, start + params.s);
            if set > params.n {
                return Err(FilterError::Overfull {
                    partition: partition as usize,
                    set: set as usize,
                    elements: params.n as usize,
                });
            }
        }
        Ok(Self {
            params: *params,
            hash: KeyedHash::new(DOMAIN, key),
            bits: bytes.to_vec(),
        })
    }

    pub(super) fn contains(&self, element: &[u8]) -> bool {
        if self.params.s == 0 {
            return false;
        }
        let mut w = Words::new(self.hash.hash(element));
        (0..self.params.k).all(|i| {
            let b = bit_index(self.params.s, i, w.word(i));
            self.bits[(b / 8) as usize] >> (b % 8) & 1 == 1
        })
    }
}

/// Number of set bits with index in `start..end` (bit `i` = bit `i % 8` of byte `i / 8`).
fn count_ones(bytes: &[u8], start: u64, end: u64) -> u64 {
    let mut count = 0u64;
    let mut i = start;
    while i < end {
        let byte = bytes[(i / 8) as usize];
        if i.is_multiple_of(8) && end - i >= 8 {
            count += byte.count_ones() as u64;
            i += 8;
        } else {
            count += (byte >> (i % 8) & 1) as u64;
            i += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::{FilterKind, SetFilter, encode as encode_set};
    use super::*;
    use crate::rng::SessionRng;

    fn params(n: usize, q: usize) -> FilterParams {
        FilterParams::new(FilterKind::Bloom, n, q)
    }

    #[test]
    fn parameter_values() {
        let b = BloomParams::from(&params(100_000, 100_000));
        assert_eq!(b.k, 57);
        assert_eq!(b.s, 144_273);
        assert_eq!(BloomParams::from(&params(1, 0)).k, 40);
        assert_eq!(BloomParams::from(&params(1, 0)).s, 3);
        assert_eq!(BloomParams::from(&params(0, 9)).encoded_len(), 0);
    }

    #[test]
    fn words_match_definition() {
        let d = [7u8; 32];
        let mut w = Words::new(d);
        let first: Vec<u64> = (0..12).map(|i| w.word(i)).collect();
        assert_eq!(first[0], u64::from_be_bytes([7; 8]));
        let mut h = Sha256::new();
        h.update(d);
        h.update(2u32.to_be_bytes());
        let b2: [u8; 32] = h.finalize().into();
        assert_eq!(first[9], u64::from_be_bytes(b2[8..16].try_into().unwrap()));
        // Random access gives the same words as sequential access.
        let mut w2 = Words::new(d);
        assert_eq!(w2.word(9), first[9]);
        assert_eq!(w2.word(1), first[1]);
        assert_eq!(w2.word(5), first[5]);
    }

    /// With a tiny k the per-look-up FP (≤ 2⁻ᵏ, ≈ 2⁻ᵏ at this load) is measurable.
    #[test]
    fn false_positive_rate_sanity_at_reduced_k() {
        let mut rng = SessionRng::from_seed([31; 32]);
        let n = 2000;
        let mut set = vec![0u8; n * 32];
        rng.fill(&mut set);
        let key = [4u8; 32];
        let elements: Vec<&[u8]> = set.chunks_exact(32).collect();
        let mut bp = BloomParams::from(&params(n, 1));
        bp.k = 6;
        let bytes = encode(&bp, &key, &elements);
        let b = Bloom::decode(&bp, &key, &bytes).unwrap();
        assert!(elements.iter().all(|e| b.contains(e)));
        let trials = 64_000;
        let mut probe = [0u8; 32];
        let mut hits = 0;
        for _ in 0..trials {
            rng.fill(&mut probe);
            hits += b.contains(&probe) as usize;
        }
        // ≤ 1/64 per look-up: expect ≈ 1000 or a little below, sd ≈ 31.
        assert!((700..1150).contains(&hits), "{hits} false positives");
    }

    #[test]
    fn malformed_encodings_rejected() {
        let mut rng = SessionRng::from_seed([32; 32]);
        let n = 40;
        let mut set = vec![0u8; n * 33];
        rng.fill(&mut set);
        let key = [2u8; 32];
        let p = params(n, 7);
        let good = encode_set(&p, &key, &set, 33);
        assert_eq!(good.len(), p.max_encoded_len());
        let f = SetFilter::decode(&p, &key, &good).unwrap();
        assert!(set.chunks_exact(33).all(|e| f.contains(e)));
        for len in [0, good.len() - 1, good.len() + 1] {
            let mut b = good.clone();
            b.resize(len, 0);
            assert!(matches!(
                SetFilter::decode(&p, &key, &b),
                Err(FilterError::WrongLength { .. })
            ));
        }
        let ones = vec![0xffu8; good.len()];
        assert!(SetFilter::decode(&p, &key, &ones).is_err());
        let bp = BloomParams::from(&p);
        if bp.bits() % 8 != 0 {
            let mut b = good.clone();
            *b.last_mut().unwrap() |= 0x80;
            assert_eq!(
                SetFilter::decode(&p, &key, &b).unwrap_err(),
                FilterError::NonZeroPadding
            );
        }
        // An all-ones first partition is overfull.
        let mut b = vec![0u8; good.len()];
        for i in 0..bp.s {
            b[(i / 8) as usize] |= 1 << (i % 8);
        }
        assert!(matches!(
            SetFilter::decode(&p, &key, &b),
            Err(FilterError::Overfull { partition: 0, .. })
        ));
        // Empty set.
        assert!(SetFilter::decode(&params(0, 3), &key, &[]).is_ok());
        assert!(SetFilter::decode(&params(0, 3), &key, &[0]).is_err());
    }
}
