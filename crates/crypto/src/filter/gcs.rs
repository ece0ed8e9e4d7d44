//! Golomb-coded set (GCS): the sorted keyed hashes of the elements, delta-coded with a
//! Rice code.
//!
//! # Parameters
//! With `n` elements and `q' = max(q, 1)` look-ups:
//! - `M = q'·2⁴⁰ + q'·2²⁰` — the inverse per-look-up false-positive rate, `q'·2⁴⁰` plus
//!   a 2⁻²⁰ relative margin that absorbs the bias of reducing a 128-bit hash mod `R`;
//! - `R = n·M` — the hash range: each element maps to `H(element) mod R`;
//! - `P = floor(log2 M)` — the Rice parameter: each sorted gap `d` is written as
//!   `d >> P` in unary (that many 1 bits, then a 0) followed by the low `P` bits.
//!
//! # False positives
//! A non-member's value is uniform on `[0, R)` up to the reduction bias: any single
//! value has probability at most `(1/R)(1 + R/2¹²⁸)`, and `R < 2¹⁰⁵` (counts are at most
//! 2³²) so the bias factor is below `1 + 2⁻²³`. It collides with one of the `n` stored
//! values with probability at most `n/R · (1 + 2⁻²³) = (1 + 2⁻²³) / M
//! < 2⁻⁴⁰/q' · (1 + 2⁻²³)/(1 + 2⁻²⁰) < 2⁻⁴⁰/q'`. Summed over `q` look-ups: `< 2⁻⁴⁰`.
//!
//! # Size
//! Gaps between `n` uniform points in `[0, n·M)` are close to exponential with mean `M`;
//! with `r = 2^P/M ∈ (½, 1]` the expected cost per element is
//! `P + 1 + 1/(e^r − 1) = log2 M + log2 r + 1 + 1/(e^r − 1)`, between `log2 M + 1.47` and
//! `log2 M + 1.58` bits. At `n = q = 100 000` that is ≈ 58.2 bits, about 727 KB.
//! The worst case is bounded exactly: the quotients sum to at most `(R − 1) >> P < 2n`
//! (because `M < 2^(P+1)`), so an encoding never exceeds `n·(P + 3)` bits
//! ([`GcsParams::max_encoded_len`]).

use rayon::prelude::*;

use super::{FP_BITS, FilterError, FilterParams, KeyedHash};

const DOMAIN: &[u8] = b"privset/filter/gcs/v1";

/// The derived GCS numbers (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcsParams {
    /// Number of elements `n`.
    pub n: u64,
    /// `M`, the inverse per-look-up false-positive rate.
    pub m: u128,
    /// Rice parameter `P = floor(log2 M)`.
    pub p: u32,
    /// Hash range `R = n·M`.
    pub range: u128,
}

impl From<&FilterParams> for GcsParams {
    fn from(params: &FilterParams) -> Self {
        let n = params.n();
        let q = params.q() as u128;
        let m = (q << FP_BITS) + (q << (FP_BITS / 2));
        let p = 127 - m.leading_zeros();
        Self {
            n,
            m,
            p,
            range: n as u128 * m,
        }
    }
}

impl GcsParams {
    /// `ceil(n·(P + 3) / 8)`: the largest encoding of `n` elements.
    pub fn max_encoded_len(&self) -> usize {
        (self.n * (self.p as u64 + 3)).div_ceil(8) as usize
    }

    fn value(&self, hash: &[u8; 32]) -> u128 {
        let mut hi = [0u8; 16];
        hi.copy_from_slice(&hash[..16]);
        u128::from_be_bytes(hi) % self.range
    }
}

/// Encodes the elements' hashes, sorted, as Rice-coded gaps, padded with zero bits to a
/// whole byte.
pub(super) fn encode(params: &GcsParams, key: &[u8; 32], elements: &[&[u8]]) -> Vec<u8> {
    if elements.is_empty() || params.range == 0 {
        return Vec::new();
    }
    // `params.range` may be for a different count than `elements.len()` (a caller bug
    // the decoder reports); encode consistently with the params either way.
    let h = KeyedHash::new(DOMAIN, key);
    let mut values: Vec<u128> = elements
        .par_iter()
        .map(|e| params.value(&h.hash(e)))
        .collect();
    values.par_sort_unstable();
    let mut w = BitWriter::with_capacity(params.max_encoded_len());
    let mut prev = 0u128;
    for v in values {
        let delta = v - prev;
        prev = v;
        w.write_unary(delta >> params.p);
        w.write_bits(delta, params.p);
    }
    w.finish()
}

/// A decoded GCS: the sorted hash values.
#[derive(Clone, Debug)]
pub struct Gcs {
    params: GcsParams,
    hash: KeyedHash,
    values: Vec<u128>,
}

impl Gcs {
    /// Parses exactly `n` Rice-coded gaps and nothing else (only zero padding to the
    /// next byte). Allocates at most `min(n, 8·len/(P+1))` values.
    pub(super) fn decode(
        params: &GcsParams,
        key: &[u8; 32],
        bytes: &[u8],
    ) -> Result<Self, FilterError> {
        let max = params.max_encoded_len();
        if bytes.len() > max {
            return Err(FilterError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        let n = params.n as usize;
        let p = params.p;
        // Each value takes at least P + 1 bits, which bounds what a short input can make
        // us allocate.
        let cap = n.min(bytes.len().saturating_mul(8) / (p as usize + 1));
        let mut values = Vec::with_capacity(cap);
        let mut r = BitReader::new(bytes);
        let mut prev = 0u128;
        let max_quotient = params.range >> p;
        for index in 0..n {
            let truncated = FilterError::Truncated {
                found: index,
                expected: n,
            };
            let q = r.read_unary().ok_or(truncated.clone())?;
            let low = r.read_bits(p).ok_or(truncated)?;
            if q as u128 > max_quotient {
                return Err(FilterError::OutOfRange { index });
            }
            let v = prev
                .checked_add(((q as u128) << p) | low)
                .filter(|&v| v < params.range)
                .ok_or(FilterError::OutOfRange { index })?;
            values.push(v);
            prev = v;
        }
        r.check_end(n)?;
        Ok(Self {
            params: *params,
            hash: KeyedHash::new(DOMAIN, key),
            values,
        })
    }

    pub(super) fn contains(&self, element: &[u8]) -> bool {
        if self.values.is_empty() {
            return false;
        }
        let v = self.params.value(&self.hash.hash(element));
        self.values.binary_search(&v).is_ok()
    }
}

/// MSB-first bit writer.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    bits: u32,
}

impl BitWriter {
    fn with_capacity(bytes: usize) -> Self {
        Self {
            out: Vec::with_capacity(bytes),
            acc: 0,
            bits: 0,
        }
    }

    /// Appends the low `count` bits of `value`, most significant first.
    fn write_bits(&mut self, value: u128, count: u32) {
        let mut left = count;
        while left > 0 {
            let take = left.min(56);
            left -= take;
            let chunk = ((value >> left) as u64) & ((1u64 << take) - 1);
            self.acc = (self.acc << take) | chunk;
            self.bits += take;
            while self.bits >= 8 {
                self.bits -= 8;
                self.out.push((self.acc >> self.bits) as u8);
            }
            self.acc &= (1u64 << self.bits) - 1;
        }
    }

    /// Appends `q` one bits and a zero bit.
    fn write_unary(&mut self, q: u128) {
        let mut left = q;
        while left > 0 {
            let take = left.min(56) as u32;
            self.write_bits(u128::MAX, take);
            left -= take as u128;
        }
        self.write_bits(0, 1);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.bits > 0 {
            self.out.push((self.acc << (8 - self.bits)) as u8);
        }
        self.out
    }
}

/// MSB-first bit reader over untrusted bytes; every read is bounds-checked.
struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    fn total(&self) -> usize {
        self.bytes.len() * 8
    }

    /// Reads `count ≤ 128` bits, or `None` if the input ends first.
    fn read_bits(&mut self, count: u32) -> Option<u128> {
        if count as usize > self.total() - self.pos {
            return None;
        }
        let mut v = 0u128;
        let mut left = count;
        while left > 0 {
            let byte = self.bytes[self.pos / 8];
            let avail = 8 - (self.pos % 8) as u32;
            let take = avail.min(left);
            let bits = (byte >> (avail - take)) & ((1u16 << take) - 1) as u8;
            v = (v << take) | bits as u128;
            self.pos += take as usize;
            left -= take;
        }
        Some(v)
    }

    /// Counts one bits up to and including the terminating zero; `None` if the input
    /// ends first.
    fn read_unary(&mut self) -> Option<u64> {
        let mut q = 0u64;
        loop {
            if self.pos >= self.total() {
                return None;
            }
            let off = (self.pos % 8) as u32;
            let avail = 8 - off;
            let shifted = self.bytes[self.pos / 8] << off;
            let ones = shifted.leading_ones().min(avail);
            if ones < avail {
                q += ones as u64;
                self.pos += ones as usize + 1;
                return Some(q);
            }
            q += avail as u64;
            self.pos += avail as usize;
        }
    }

    /// After the last element only zero padding to the byte boundary may remain.
    fn check_end(&self, expected: usize) -> Result<(), FilterError> {
        let left = self.total() - self.pos;
        if left >= 8 {
            return Err(FilterError::TrailingData { expected });
        }
        if left > 0 {
            let last = self.bytes[self.bytes.len() - 1];
            if last & ((1u16 << left) - 1) as u8 != 0 {
                return Err(FilterError::NonZeroPadding);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FilterKind, SetFilter, encode as encode_set};
    use super::*;
    use crate::rng::SessionRng;

    fn params(n: usize, q: usize) -> FilterParams {
        FilterParams::new(FilterKind::Gcs, n, q)
    }

    #[test]
    fn bit_io_round_trip() {
        let mut w = BitWriter::with_capacity(0);
        w.write_bits(0b101, 3);
        w.write_unary(0);
        w.write_unary(70);
        w.write_bits(u128::MAX >> 55, 73);
        w.write_bits(1, 1);
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        assert_eq!(r.read_bits(3), Some(0b101));
        assert_eq!(r.read_unary(), Some(0));
        assert_eq!(r.read_unary(), Some(70));
        assert_eq!(r.read_bits(73), Some(u128::MAX >> 55));
        assert_eq!(r.read_bits(1), Some(1));
        assert!(r.check_end(0).is_ok());
        assert_eq!(r.read_bits(8), None);
    }

    #[test]
    fn parameter_values() {
        let g = GcsParams::from(&params(100_000, 100_000));
        assert_eq!(g.p, 56); // log2(100000·2^40) ≈ 56.6
        assert_eq!(g.max_encoded_len(), (100_000 * 59usize).div_ceil(8));
        let g0 = GcsParams::from(&params(10, 0));
        assert_eq!(g0.p, 40);
        assert_eq!(g0.m, (1u128 << 40) + (1 << 20));
    }

    #[test]
    fn size_at_100k_is_within_budget() {
        let n = 100_000;
        let mut rng = SessionRng::from_seed([21; 32]);
        let mut set = vec![0u8; n * 32];
        rng.fill(&mut set);
        let p = params(n, n);
        let bytes = encode_set(&p, &[5; 32], &set, 32);
        let bits_per = bytes.len() as f64 * 8.0 / n as f64;
        assert!(bytes.len() <= 740_000, "{} bytes", bytes.len());
        assert!(bits_per < 16.61 + 40.0 + 1.6, "{bits_per} bits per element");
        let f = SetFilter::decode(&p, &[5; 32], &bytes).unwrap();
        assert!(set.chunks_exact(32).all(|e| f.contains(e)));
    }

    /// With only `P` low bits of headroom removed (a tiny artificial M), false positives
    /// appear at the predicted rate: here we shrink the hash range by hand.
    #[test]
    fn false_positive_rate_matches_model_at_reduced_m() {
        let mut rng = SessionRng::from_seed([22; 32]);
        let n = 2000;
        let mut set = vec![0u8; n * 32];
        rng.fill(&mut set);
        let key = [6u8; 32];
        let elements: Vec<&[u8]> = set.chunks_exact(32).collect();
        // M = 64 → FP ≈ 1/64 per look-up.
        let gp = GcsParams {
            n: n as u64,
            m: 64,
            p: 6,
            range: n as u128 * 64,
        };
        let bytes = encode(&gp, &key, &elements);
        let g = Gcs::decode(&gp, &key, &bytes).unwrap();
        assert!(elements.iter().all(|e| g.contains(e)));
        let trials = 64_000;
        let mut probe = [0u8; 32];
        let mut hits = 0;
        for _ in 0..trials {
            rng.fill(&mut probe);
            hits += g.contains(&probe) as usize;
        }
        // expected 1000, sd ≈ 31
        assert!((850..1150).contains(&hits), "{hits} false positives");
        // ≈ 6 + 1.58 bits per element at r = 1
        let bits = bytes.len() as f64 * 8.0 / n as f64;
        assert!((7.3..7.9).contains(&bits), "{bits}");
    }

    #[test]
    fn malformed_encodings_rejected() {
        let mut rng = SessionRng::from_seed([23; 32]);
        let n = 50;
        let mut set = vec![0u8; n * 32];
        rng.fill(&mut set);
        let key = [8u8; 32];
        let p = params(n, 10);
        let good = encode_set(&p, &key, &set, 32);
        assert!(SetFilter::decode(&p, &key, &good).is_ok());

        // Truncated: every proper prefix fails.
        for cut in 0..good.len() {
            assert!(
                SetFilter::decode(&p, &key, &good[..cut]).is_err(),
                "prefix {cut}"
            );
        }
        // One extra byte.
        let mut longer = good.clone();
        longer.push(0);
        assert!(matches!(
            SetFilter::decode(&p, &key, &longer),
            Err(FilterError::TrailingData { .. } | FilterError::TooLong { .. })
        ));
        // Oversized.
        let huge = vec![0u8; p.max_encoded_len() + 1];
        assert!(matches!(
            SetFilter::decode(&p, &key, &huge),
            Err(FilterError::TooLong { .. })
        ));
        // Fewer / more elements than announced.
        assert!(SetFilter::decode(&params(n + 1, 10), &key, &good).is_err());
        assert!(SetFilter::decode(&params(n - 1, 10), &key, &good).is_err());
        // All-ones: unary never terminates or values leave the range.
        let ones = vec![0xffu8; good.len()];
        assert!(SetFilter::decode(&p, &key, &ones).is_err());
        // Non-zero padding bits, if this encoding has any.
        let gp = GcsParams::from(&p);
        let used_bits = {
            let mut r = BitReader::new(&good);
            for _ in 0..n {
                r.read_unary().unwrap();
                r.read_bits(gp.p).unwrap();
            }
            r.pos
        };
        if used_bits % 8 != 0 {
            let mut bad = good.clone();
            *bad.last_mut().unwrap() |= 1;
            assert_eq!(
                SetFilter::decode(&p, &key, &bad).unwrap_err(),
                FilterError::NonZeroPadding
            );
        }
        // Empty set: only the empty encoding.
        let p0 = params(0, 10);
        assert!(SetFilter::decode(&p0, &key, &[]).is_ok());
        assert!(SetFilter::decode(&p0, &key, &[0]).is_err());
    }
}
