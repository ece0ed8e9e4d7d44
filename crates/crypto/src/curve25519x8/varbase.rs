//! Variable-base products `s P` eight at a time, each lane its own point: what a
//! threshold-ElGamal party computes for its decryption shares `w c1_k` (Bay et al. and
//! Miyaji-Nishida's parties, `tahe::elgamal::batch`), where curve25519-dalek takes about
//! 27 µs a product in serial arithmetic.
//!
//! The points come and go as ristretto255 encodings: they are decoded and the products
//! encoded in lanes ([`super::ristretto`]), so no point crosses into dalek's
//! representation. Per lane, constant time in the scalar (a secret key share):
//! * a table of `P, 2P, ..., 8P` as [`Cached8`] (4 doublings, 3 additions);
//! * the scalar as 64 signed radix-16 digits in `[-8, 8]` ([`super::radix16`]);
//! * from the top digit down, four doublings (only the last computes `T`) and the
//!   addition of the digit's entry, read by scanning all eight entries with masked
//!   blends (no memory address depends on a digit) and negated by a blend;
//! * the scalars are halved first, and the halves of the products doubled as they are
//!   encoded ([`ristretto::double_and_encode`], one batched inversion instead of an
//!   inverse square root per product).

use core::arch::x86_64::*;

use curve25519_dalek::scalar::Scalar;
use zeroize::Zeroize;

use super::edwards::{Cached8, Point8};
use super::field::Fe8;
use super::lanes::{self, LANES};
use super::sums::{IDENTITY, StoredPoint, from_lanes, to_lanes};
use super::{
    ENCODE_BLOCK, FixedTerm, HALF, ROWS, Term, digit_vector, lane_terms, radix16, ristretto,
    term_digits,
};

/// The scalars of a batch of products.
#[derive(Clone, Copy)]
pub(crate) enum Scalars<'a> {
    /// One scalar for every point.
    Shared(&'a Scalar),
    /// One scalar per point.
    Each(&'a [Scalar]),
}

/// The encodings of `s_k P_k + sum_t r_tk B_t` for the points `P_k` of `encodings` (32
/// bytes each, back to back) and the fixed-base terms `fixed` (tables `B_t` with their
/// scalars `r_tk`, as [`super::mul_and_encode`] takes them), or the index of the first
/// point that is not a ristretto255 encoding.
///
/// # Panics
/// If `encodings` is not whole encodings, a term has not one scalar per point, or the
/// CPU lacks AVX-512 IFMA (callers check `crate::cpu`).
pub(crate) fn mul_encoded(
    encodings: &[u8],
    scalars: Scalars<'_>,
    fixed: &[FixedTerm<'_>],
) -> Result<Vec<u8>, usize> {
    assert!(
        crate::cpu::has_avx512_ifma(),
        "the lane products need AVX-512 IFMA (callers check crate::cpu)"
    );
    assert!(encodings.len().is_multiple_of(32), "whole encodings");
    let n = encodings.len() / 32;
    if let Scalars::Each(each) = scalars {
        assert_eq!(each.len(), n, "one scalar per point");
    }
    // Non-canonical field elements and negative `s` fail on the bytes alone.
    if let Some(bad) = encodings.chunks_exact(32).position(|b| {
        let b: &[u8; 32] = b.try_into().expect("32 bytes");
        !lanes::is_canonical(b) || b[0] & 1 == 1
    }) {
        return Err(bad);
    }
    with_terms(fixed, n, |terms| {
        // SAFETY: the CPU has the features (checked above).
        unsafe { mul_lanes(Source::Encoded(encodings), n, scalars, terms, None) }
    })
}

/// The encodings of `s_k (P_k + Q) + sum_t r_tk B_t` for points `P_k` the lanes hold
/// already (sums kept in lanes) and an optional common `Q`: [`mul_encoded`] without the
/// decoding. With `keep`, the products as points too (empty otherwise), for a caller
/// that adds them up and would only decode the encodings again.
///
/// # Panics
/// As [`mul_encoded`].
pub(crate) fn mul_points(
    points: &[StoredPoint],
    shift: Option<&StoredPoint>,
    scalars: Scalars<'_>,
    fixed: &[FixedTerm<'_>],
    keep: bool,
) -> (Vec<u8>, Vec<StoredPoint>) {
    assert!(
        crate::cpu::has_avx512_ifma(),
        "the lane products need AVX-512 IFMA (callers check crate::cpu)"
    );
    let n = points.len();
    if let Scalars::Each(each) = scalars {
        assert_eq!(each.len(), n, "one scalar per point");
    }
    let source = Source::Points {
        points,
        shift: shift.copied().unwrap_or(IDENTITY),
    };
    let mut kept = Vec::with_capacity(if keep { n } else { 0 });
    let encoded = with_terms(fixed, n, |terms| {
        // SAFETY: the CPU has the features (checked above).
        unsafe { mul_lanes(source, n, scalars, terms, keep.then_some(&mut kept)) }
    })
    .expect("points in lanes need no decoding");
    (encoded, kept)
}

/// Runs `f` on the lane form of the fixed-base terms, then wipes their digits.
fn with_terms<T>(fixed: &[FixedTerm<'_>], n: usize, f: impl FnOnce(&[Term<'_>]) -> T) -> T {
    let mut fixed_digits = term_digits(fixed, n);
    let out = f(&lane_terms(fixed, &fixed_digits));
    for d in fixed_digits.iter_mut().flatten() {
        d.zeroize();
    }
    out
}

/// Where the variable bases come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// Encodings, 32 bytes each, decoded in lanes.
    Encoded(&'a [u8]),
    /// Points held in lanes' form, each plus `shift`.
    Points {
        points: &'a [StoredPoint],
        shift: StoredPoint,
    },
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn mul_lanes(
    source: Source<'_>,
    n: usize,
    scalars: Scalars<'_>,
    fixed: &[Term<'_>],
    mut keep: Option<&mut Vec<StoredPoint>>,
) -> Result<Vec<u8>, usize> {
    // Halves of the products are computed (the fixed tables hold halves of their
    // bases), then doubled as they are encoded.
    let halved = |s: &Scalar| {
        let mut h = s * *HALF;
        let digits = radix16(h.as_bytes());
        h.zeroize();
        digits
    };
    let mut digits = match scalars {
        Scalars::Shared(s) => vec![halved(s); n],
        Scalars::Each(each) => each.iter().map(halved).collect(),
    };
    let mut out = vec![0u8; 32 * n];
    let groups = n.div_ceil(LANES);
    let mut result = Ok(());
    let mut halves: Vec<Point8> = Vec::with_capacity(ENCODE_BLOCK + 1);
    let mut flushed = 0;
    // Two vectors at a time so that their decodings' exponentiations interleave.
    let mut g = 0;
    while g < groups {
        let pair = (groups - g).min(2);
        let points = match source {
            Source::Encoded(encodings) => {
                let first = |i: usize| (g + i.min(pair - 1)) * LANES;
                decode_pair([
                    &encodings[32 * first(0)..32 * (first(0) + LANES).min(n)],
                    &encodings[32 * first(1)..32 * (first(1) + LANES).min(n)],
                ])
            }
            Source::Points { points, shift } => {
                let shift = to_lanes(&[shift; LANES]);
                let mut out = [Ok(Point8::identity()); 2];
                for (i, o) in out.iter_mut().enumerate().take(pair) {
                    let first = (g + i) * LANES;
                    let mut group = [IDENTITY; LANES];
                    let end = (first + LANES).min(n);
                    group[..end - first].copy_from_slice(&points[first..end]);
                    *o = Ok(to_lanes(&group).add(&shift));
                }
                out
            }
        };
        for (i, point) in points.into_iter().enumerate().take(pair) {
            let first = (g + i) * LANES;
            let mut half = Point8::identity();
            match point {
                Ok(point) => {
                    half = multiply(&point, &digits[first..]);
                    if !fixed.is_empty() {
                        half = half.add(&super::product(fixed, first));
                    }
                }
                Err(j) => result = result.and(Err(first + j)),
            }
            halves.push(half);
        }
        g += pair;
        if halves.len() >= ENCODE_BLOCK || g == groups {
            let encoded = ristretto::double_and_encode(&halves);
            let end = ((flushed + halves.len()) * LANES).min(n);
            lanes::store(&encoded, &mut out[32 * flushed * LANES..32 * end]);
            if let Some(kept) = keep.as_deref_mut() {
                for (v, half) in halves.iter().enumerate() {
                    let first = (flushed + v) * LANES;
                    let stored = from_lanes(&half.double());
                    kept.extend_from_slice(&stored[..(n - first).min(LANES)]);
                }
            }
            flushed += halves.len();
            halves.clear();
        }
    }
    digits.zeroize();
    result.map(|()| out)
}

/// Two vectors of up to eight points from their encodings (canonical and even: checked
/// on the bytes), the unused lanes the identity, decoded together so that their inverse
/// square roots interleave; for each, the lane of the first that does not decode.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn decode_pair(encodings: [&[u8]; 2]) -> [Result<Point8, usize>; 2] {
    let mut limbs: [Vec<[u64; 5]>; 2] = [Vec::new(), Vec::new()];
    let mut packed = [Fe8::zero(); 2];
    for i in 0..2 {
        for b in encodings[i].chunks_exact(32) {
            limbs[i].push(lanes::limbs_from_u_bytes(b.try_into().expect("32 bytes")));
        }
        packed[i] = lanes::pack(&limbs[i], [0; 5])[0];
    }
    let decoded = ristretto::decode_n(&packed);
    let mut out = [Err(0), Err(0)];
    for i in 0..2 {
        let (x, y, valid) = decoded[i];
        out[i] = match (0..limbs[i].len()).find(|j| valid >> j & 1 == 0) {
            Some(bad) => Err(bad),
            None => Ok(Point8 {
                x,
                y,
                z: Fe8::one(),
                t: x.mul(&y),
            }),
        };
    }
    out
}

/// `d_j P_j` in each lane `j`, `d_j` the scalar of radix-16 digits `digits[j]` (lanes
/// past the end of `digits` multiply by zero).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn multiply(p: &Point8, digits: &[[i8; ROWS]]) -> Point8 {
    let table = multiples(p);
    let mut acc = Point8::identity();
    for row in (0..ROWS).rev() {
        if row != ROWS - 1 {
            acc = acc.double_times(4);
        }
        let (abs, negative) = digit_vector(digits, 0, row);
        acc = acc.add_cached(&select(&table, abs, negative));
    }
    acc
}

/// `P, 2P, ..., 8P`: the even multiples doubled from half their size, the odd ones one
/// addition of `P` above the even one below.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn multiples(p: &Point8) -> [Cached8; 8] {
    let once = p.cached();
    let mut points = [*p; 8];
    for j in 1..8 {
        // points[j] = (j + 1) P.
        points[j] = if j % 2 == 1 {
            points[(j - 1) / 2].double()
        } else {
            points[j - 1].add_cached(&once)
        };
    }
    points.map(|q| q.cached())
}

/// Each lane's entry `|d|` of `table` (the identity for digit 0), negated where `d < 0`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn select(table: &[Cached8; 8], abs: __m512i, negative: __mmask8) -> Cached8 {
    let mut chosen = Cached8::identity();
    for (j, entry) in table.iter().enumerate() {
        let mask = _mm512_cmpeq_epi64_mask(abs, _mm512_set1_epi64(j as i64 + 1));
        chosen = chosen.blend(mask, entry);
    }
    chosen.negate_where(negative)
}
