//! Moving elements between byte strings and lanes, and the batched inversion.
//!
//! A chunk of `n` elements becomes `ceil(n / 8)` vectors, element `8 v + j` in lane `j`
//! of vector `v`; the lanes past `n` are padding whose results are never read.

use core::arch::x86_64::*;

use super::exponent;
use super::field::Fe8;

pub(crate) const LANES: usize = 8;

const MASK52: u64 = (1 << 52) - 1;

/// The four little-endian 64-bit words of 32 bytes.
fn words(bytes: &[u8; 32]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (w, b) in w.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    w
}

/// Radix-2^52 limbs of a 256-bit little-endian word array (limb 4 is below 2^48, so the
/// limbs are normalized).
pub(crate) fn limbs_from_words(w: [u64; 4]) -> [u64; 5] {
    [
        w[0] & MASK52,
        ((w[0] >> 52) | (w[1] << 12)) & MASK52,
        ((w[1] >> 40) | (w[2] << 24)) & MASK52,
        ((w[2] >> 28) | (w[3] << 36)) & MASK52,
        w[3] >> 16,
    ]
}

/// RFC 7748 `decodeUCoordinate`: little-endian, bit 255 ignored. The value may be
/// non-canonical (in `[p, 2^255)`); the arithmetic reduces it.
pub(crate) fn limbs_from_u_bytes(bytes: &[u8; 32]) -> [u64; 5] {
    let mut w = words(bytes);
    w[3] &= u64::MAX >> 1;
    limbs_from_words(w)
}

/// Little-endian bytes of canonical limbs (value below `p`).
fn bytes_from_limbs(l: &[u64; 5]) -> [u8; 32] {
    let w = [
        l[0] | (l[1] << 52),
        (l[1] >> 12) | (l[2] << 40),
        (l[2] >> 24) | (l[3] << 28),
        (l[3] >> 36) | (l[4] << 16),
    ];
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(8).zip(w) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// True when the 32 little-endian bytes are a canonical field element (below
/// `p = 2^255 - 19`). Only for public data (received elements): it branches.
pub(crate) fn is_canonical(bytes: &[u8; 32]) -> bool {
    const P: [u64; 4] = [
        0xffff_ffff_ffff_ffed,
        u64::MAX,
        u64::MAX,
        0x7fff_ffff_ffff_ffff,
    ];
    let w = words(bytes);
    for i in (0..4).rev() {
        if w[i] != P[i] {
            return w[i] < P[i];
        }
    }
    false
}

/// Packs per-element limbs into vectors, padding the last one with `pad`.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn pack(elements: &[[u64; 5]], pad: [u64; 5]) -> Vec<Fe8> {
    let mut out = Vec::with_capacity(elements.len().div_ceil(LANES));
    for group in elements.chunks(LANES) {
        let mut lanes = [pad; LANES];
        lanes[..group.len()].copy_from_slice(group);
        out.push(Fe8::from_lanes(&lanes));
    }
    out
}

/// Writes the canonical encoding of the first `out.len() / 32` lanes.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn store(values: &[Fe8], out: &mut [u8]) {
    for (v, out) in values.iter().zip(out.chunks_mut(32 * LANES)) {
        let lanes = v.canonical().to_lanes();
        for (o, lane) in out.chunks_exact_mut(32).zip(&lanes) {
            o.copy_from_slice(&bytes_from_limbs(lane));
        }
    }
}

/// Replaces every lane of every vector by its inverse, zero staying zero (as
/// `z^(p - 2)` does), with Montgomery's trick across the vectors: one 8-lane
/// exponentiation for the whole slice plus three multiplications per vector, instead
/// of one exponentiation (about 265 multiplications in a serial chain) per vector.
/// Zero lanes are replaced by one before the products so that they cannot spoil the
/// other elements, and set back to zero at the end.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn invert_all(values: &mut [Fe8]) {
    let one = Fe8::one();
    let mut zero_lanes: Vec<__mmask8> = Vec::with_capacity(values.len());
    let mut prefix: Vec<Fe8> = Vec::with_capacity(values.len());
    let mut acc = one;
    for v in values.iter_mut() {
        let zero = v.is_zero();
        zero_lanes.push(zero);
        *v = Fe8::select(zero, v, &one);
        prefix.push(acc);
        acc = acc.mul(v);
    }
    // `acc` is the product of all vectors; `prefix[i]` that of the vectors before `i`.
    let mut inv = exponent::invert(&acc);
    for i in (0..values.len()).rev() {
        let inv_i = inv.mul(&prefix[i]);
        inv = inv.mul(&values[i]);
        values[i] = Fe8::select(zero_lanes[i], &inv_i, &Fe8::zero());
    }
}
