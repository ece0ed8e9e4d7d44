//! GF(2^255 - 19) and its two curves, eight elements at a time on AVX-512 IFMA: the
//! field ([`field`]), moving elements between bytes and lanes with the batched inversion
//! ([`lanes`]), the fixed exponentiations ([`exponent`]), edwards25519 points
//! ([`edwards`]) and ristretto255's encoding ([`ristretto`]). The X25519 cwPRF's
//! backend (`cwprf::x25519::ifma`), the fixed-base multiplication below, the
//! variable-base products ([`varbase`]) and the sums of received points ([`sums`],
//! [`msm`]) share them.
//!
//! Every function that touches a vector is a `#[target_feature]` function. The safe
//! entry points here are sound because a [`FixedBase`] only exists on a CPU with the
//! features ([`FixedBase::new`] checks).
//!
//! # Fixed-base multiplication
//!
//! curve25519-dalek multiplies by a fixed point with a table and serial field
//! arithmetic (its vector backend serves variable-base and multi-scalar products only),
//! about 14-21 µs a product on the Intel Xeon of docs/benchmarks.md. Exponential
//! ElGamal's bulk encryptions are nothing but such products, two per ciphertext: Ion et
//! al. 2020's encrypted Bloom filter (Fig. 4) encrypts one per filter position, about
//! 8.2 million at 100,000 items a side. [`mul_and_encode`] computes them eight at a
//! time:
//! * the scalar is recoded into 64 signed radix-16 digits in `[-8, 8]`;
//! * the table holds `j 16^i B` for `j = 1..=8` and every row `i < 64` (512 affine
//!   points, 60 KiB), so a product is 64 mixed additions and no doubling;
//! * each lane's entry is chosen by scanning the row's eight entries with masked
//!   broadcasts (no memory address depends on a digit, so the secret scalars leave no
//!   trace in the cache) and negated by a blend;
//! * the sum of several tables' products (`ρ h + m G`) shares one accumulator, and a
//!   term whose scalars are known to be small (`m` a filter bit) reads only its first
//!   rows;
//! * the tables hold the multiples of `B / 2`, so the products are halves of the
//!   results, which are then doubled and encoded at once in lanes
//!   ([`ristretto::double_and_encode`]: one batched inversion where RFC 9496's encoding
//!   would pay an inverse square root per point).

pub(crate) mod edwards;
pub(crate) mod exponent;
pub(crate) mod field;
pub(crate) mod lanes;
pub(crate) mod msm;
pub(crate) mod ristretto;
pub(crate) mod sums;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
pub(crate) mod varbase;

use core::arch::x86_64::*;

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use edwards::{D2, Niels8, Point8};
use field::Fe8;
use lanes::LANES;
use zeroize::Zeroize;

/// Radix-16 digits of a scalar below 2^253.
pub(crate) const ROWS: usize = 64;
/// Table entries per row: the multiples 1..=8 (digit 0 is the identity, not stored).
const ENTRIES: usize = 8;

/// One affine point as the limbs of `(y + x, y - x, 2d xy)`, canonical.
type NielsLimbs = [[u64; 5]; 3];

/// The table of one point `B` for [`mul_and_encode`]: entry `8 i + j - 1` is
/// `j 16^i B / 2` (the sums of its products are doubled as they are encoded).
pub(crate) struct FixedBase {
    entries: Box<[NielsLimbs]>,
}

impl std::fmt::Debug for FixedBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FixedBase(8 lanes)")
    }
}

impl FixedBase {
    /// The table of `base`; `None` on a CPU without AVX-512 F, VL and IFMA. The 512
    /// multiples of `base / 2` are computed with curve25519-dalek, encoded, and decoded
    /// into lanes: a decoded point may differ from dalek's representative by a point of
    /// order 4, which changes no sum's encoding.
    pub(crate) fn new(base: &RistrettoPoint) -> Option<FixedBase> {
        if !crate::cpu::has_avx512_ifma() {
            return None;
        }
        let mut multiples = Vec::with_capacity(ROWS * ENTRIES);
        let mut row_base = base * *HALF;
        for _ in 0..ROWS {
            let mut multiple = row_base;
            for _ in 0..ENTRIES {
                multiples.push(multiple.compress().to_bytes());
                multiple += row_base;
            }
            for _ in 0..4 {
                row_base += row_base;
            }
        }
        // SAFETY: the CPU has the features (checked above).
        let entries =
            unsafe { niels_from_encodings(&multiples) }.expect("dalek's encodings decode");
        Some(FixedBase { entries })
    }
}

/// `1 / 2` modulo the group order: results are computed halved, then doubled as they
/// are encoded ([`ristretto::double_and_encode`]).
pub(crate) static HALF: std::sync::LazyLock<Scalar> =
    std::sync::LazyLock::new(|| Scalar::from(2u8).invert());

/// Vectors whose encodings share one batched inversion: enough that the inversion's
/// exponentiation is a small part, few enough that the products stay in the cache.
pub(crate) const ENCODE_BLOCK: usize = 64;

/// The 64 signed radix-16 digits `d_i` in `[-8, 8]` with `sum d_i 16^i` the scalar
/// (little-endian bytes, below 2^255), computed with arithmetic only: the scalars are
/// secret.
pub(crate) fn radix16(bytes: &[u8; 32]) -> [i8; ROWS] {
    let mut digits = [0i8; ROWS];
    for (i, b) in bytes.iter().enumerate() {
        digits[2 * i] = (b & 15) as i8;
        digits[2 * i + 1] = (b >> 4) as i8;
    }
    for i in 0..ROWS - 1 {
        let carry = (digits[i] + 8) >> 4;
        digits[i] -= carry << 4;
        digits[i + 1] += carry;
    }
    digits
}

/// One table and the digits of one scalar per output ([`radix16`]); `rows` is how many
/// rows the scalars need.
pub(crate) struct Term<'a> {
    pub(crate) base: &'a FixedBase,
    pub(crate) digits: &'a [[i8; ROWS]],
    pub(crate) rows: usize,
}

/// The ristretto255 encodings (32 bytes each) of `sum_t s_t B_t` for every output,
/// each term a table `B_t`, one scalar per output, and the number of radix-16 rows its
/// scalars need (64 in general; 1 when every scalar is below 8, as filter bits are:
/// higher digits are then zero and their rows would add the identity).
pub(crate) fn mul_and_encode(terms: &[FixedTerm<'_>]) -> Vec<u8> {
    let n = terms.first().map_or(0, |t| t.1.len());
    if terms.is_empty() {
        return Vec::new();
    }
    let mut digits = term_digits(terms, n);
    let lane_terms = lane_terms(terms, &digits);
    let mut out = vec![0u8; 32 * n];
    // SAFETY: a term holds a `FixedBase`, which exists only on a CPU with the features.
    unsafe { mul_and_encode_lanes(&lane_terms, &mut out) };
    for d in digits.iter_mut().flatten() {
        d.zeroize();
    }
    out
}

/// A fixed-base term of a sum of products: the table, one scalar per output, and the
/// number of radix-16 rows its scalars need.
pub(crate) type FixedTerm<'a> = (&'a FixedBase, &'a [Scalar], usize);

/// Each term's scalars as radix-16 digits (secret: the caller zeroizes them).
pub(crate) fn term_digits(terms: &[FixedTerm<'_>], n: usize) -> Vec<Vec<[i8; ROWS]>> {
    terms
        .iter()
        .map(|(_, scalars, _)| {
            assert_eq!(scalars.len(), n, "one scalar per output in every term");
            scalars.iter().map(|s| radix16(s.as_bytes())).collect()
        })
        .collect()
}

/// The terms with their digits ([`term_digits`]).
pub(crate) fn lane_terms<'a>(
    terms: &[FixedTerm<'a>],
    digits: &'a [Vec<[i8; ROWS]>],
) -> Vec<Term<'a>> {
    terms
        .iter()
        .zip(digits)
        .map(|((base, _, rows), digits)| {
            assert!(*rows <= ROWS);
            Term {
                base,
                digits,
                rows: *rows,
            }
        })
        .collect()
}

/// The digit vectors of row `row` for outputs `first..first + 8` (zero past the end).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn digit_vector(digits: &[[i8; ROWS]], first: usize, row: usize) -> (__m512i, __mmask8) {
    let mut abs = [0u64; LANES];
    let mut negative: __mmask8 = 0;
    for (j, d) in digits.iter().skip(first).take(LANES).enumerate() {
        let d = d[row];
        // |d| and its sign with arithmetic (no branch on the secret digit).
        let sign = (d >> 7) as i64; // 0 or -1
        abs[j] = ((d as i64 ^ sign) - sign) as u64;
        negative |= ((sign & 1) as u8) << j;
    }
    (field::from_u64s(abs), negative)
}

/// The entries of one row chosen by each lane's digit: the identity `(1, 1, 0)` for
/// digit 0, entry `|d|` otherwise, negated where `d < 0`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn select(row: &[NielsLimbs], abs: __m512i, negative: __mmask8) -> Niels8 {
    let one = _mm512_set1_epi64(1);
    let zero = _mm512_setzero_si512();
    let mut v = [[zero; 5]; 3];
    v[0][0] = one;
    v[1][0] = one;
    for (j, entry) in row.iter().enumerate() {
        let mask = _mm512_cmpeq_epi64_mask(abs, _mm512_set1_epi64(j as i64 + 1));
        for c in 0..3 {
            for l in 0..5 {
                v[c][l] = _mm512_mask_set1_epi64(v[c][l], mask, entry[c][l] as i64);
            }
        }
    }
    let niels = Niels8 {
        y_plus_x: Fe8::from_vectors(v[0]),
        y_minus_x: Fe8::from_vectors(v[1]),
        xy2d: Fe8::from_vectors(v[2]),
    };
    niels.negate_where(negative)
}

/// The sum of the terms' products for outputs `first..first + 8`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn product(terms: &[Term], first: usize) -> Point8 {
    let mut acc = Point8::identity();
    for t in terms {
        for row in 0..t.rows {
            let (abs, negative) = digit_vector(t.digits, first, row);
            let entries = &t.base.entries[ENTRIES * row..ENTRIES * (row + 1)];
            acc = acc.add_niels(&select(entries, abs, negative));
        }
    }
    acc
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn mul_and_encode_lanes(terms: &[Term], out: &mut [u8]) {
    let n = out.len() / 32;
    let groups = n.div_ceil(LANES);
    for block in (0..groups).step_by(ENCODE_BLOCK) {
        let end = (block + ENCODE_BLOCK).min(groups);
        // Halves of the results (the tables hold halves of the bases).
        let halves: Vec<Point8> = (block..end).map(|g| product(terms, g * LANES)).collect();
        let encoded = ristretto::double_and_encode(&halves);
        lanes::store(
            &encoded,
            &mut out[32 * block * LANES..32 * (end * LANES).min(n)],
        );
    }
}

/// Decodes the entries and converts them to Niels form (the decoded points are affine:
/// `Z = 1`, `T = xy`).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn niels_from_encodings(multiples: &[[u8; 32]]) -> Option<Box<[NielsLimbs]>> {
    let mut limbs = Vec::with_capacity(multiples.len());
    for bytes in multiples {
        if !lanes::is_canonical(bytes) || bytes[0] & 1 == 1 {
            return None;
        }
        limbs.push(lanes::limbs_from_u_bytes(bytes));
    }
    let d2 = Fe8::splat(D2);
    let mut entries = Vec::with_capacity(multiples.len());
    for (v, s) in lanes::pack(&limbs, [0; 5]).iter().enumerate() {
        let (x, y, valid) = ristretto::decode(s);
        let used = (multiples.len() - v * LANES).min(LANES);
        let used_lanes = (1u16 << used) - 1;
        if u16::from(valid) & used_lanes != used_lanes {
            return None;
        }
        let y_plus_x = y.add(&x).canonical().to_lanes();
        let y_minus_x = y.sub(&x).canonical().to_lanes();
        let xy2d = x.mul(&y).mul(&d2).canonical().to_lanes();
        for j in 0..used {
            entries.push([y_plus_x[j], y_minus_x[j], xy2d[j]]);
        }
    }
    Some(entries.into_boxed_slice())
}
