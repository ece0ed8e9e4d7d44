//! The multi-buffer backend: X25519, RFC 9380 hashing and element validation on eight
//! elements at once with AVX-512 IFMA, for one chunk of a batch.
//!
//! Each entry point is an `unsafe fn` whose only requirement is the CPU features
//! (checked by `crate::cpu::x25519_ifma` when the backend is chosen: the functions are
//! `#[target_feature]` functions, so a portable build carries them and calls them only
//! on a CPU that has AVX-512 IFMA). Inside, the only other
//! `unsafe` is the transmute between a vector and its eight 64-bit lanes.
//!
//! Per chunk, the work is: SHA-512 for `expand_message_xmd` (hashing only), the field
//! work, and one batched inversion per phase (`lanes::invert_all`), all in lanes.
//! `F_k(H(x))` inverts twice: once to make `H(x)` affine and once after the ladder.
//! Feeding the projective `H(x)` to the ladder instead would save the first inversion
//! but cost one multiplication in each of the 255 ladder steps, while the batched
//! inversion costs about three multiplications per vector: affine it is.

mod elligator;
mod hash_to_field;
mod ladder;
mod sha512x8;
#[cfg(test)]
pub(super) mod tests;

use crate::curve25519x8::field::Fe8;
use crate::curve25519x8::lanes::LANES;
use crate::curve25519x8::{exponent, lanes};
pub(super) use ladder::ClampedScalar;

use crate::group::GroupError;

/// The Montgomery coefficient `A` of Curve25519.
const A: u64 = 486_662;
/// u = 9 (the base point), used to fill the lanes past the end of a chunk.
const PAD_U: [u64; 5] = [9, 0, 0, 0, 0];

/// The ladder for every vector, then one batched inversion, then the canonical bytes of
/// `x2 / z2` (all zero for a small-order u, as RFC 7748 computes it).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn ladder_and_store(k: &ClampedScalar, bases: &[Fe8], out: &mut [u8]) {
    let mut xs = Vec::with_capacity(bases.len());
    let mut zs = Vec::with_capacity(bases.len());
    for u in bases {
        let (x, z) = ladder::ladder(k, u);
        xs.push(x);
        zs.push(z);
    }
    lanes::store(&affine(xs, zs), out);
}

/// `x / z` for every pair (0 where `z` is 0), with one batched inversion.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn affine(mut xs: Vec<Fe8>, mut zs: Vec<Fe8>) -> Vec<Fe8> {
    lanes::invert_all(&mut zs);
    for (x, z) in xs.iter_mut().zip(&zs) {
        *x = x.mul(z);
    }
    xs
}

/// The packed u-coordinates as vectors (RFC 7748 decoding: bit 255 ignored).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn decode(packed: &[u8]) -> Vec<Fe8> {
    let mut limbs = Vec::with_capacity(packed.len() / 32);
    for bytes in packed.chunks_exact(32) {
        limbs.push(lanes::limbs_from_u_bytes(
            bytes.try_into().expect("32 bytes"),
        ));
    }
    lanes::pack(&limbs, PAD_U)
}

/// `u^3 + A u^2 + u`, the right-hand side of the curve equation.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn curve_rhs(u: &Fe8) -> Fe8 {
    u.mul(&u.square().add(&u.mul_small(A)).add(&Fe8::one()))
}

/// For each packed element: canonical (`u < p`) and on the curve, i.e.
/// `u^3 + A u^2 + u` is a non-zero square (Legendre symbol in lanes).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn on_curve(packed: &[u8], us: &[Fe8]) -> Vec<bool> {
    let mut valid = Vec::with_capacity(packed.len() / 32);
    for bytes in packed.chunks_exact(32) {
        valid.push(lanes::is_canonical(bytes.try_into().expect("32 bytes")));
    }
    // Two vectors at a time: their exponentiations interleave (see `exponent`).
    let mut squares = Vec::with_capacity(us.len());
    let mut pairs = us.chunks_exact(2);
    for pair in &mut pairs {
        let rhs: [Fe8; 2] = core::array::from_fn(|i| curve_rhs(&pair[i]));
        squares.extend(exponent::is_nonzero_square(&rhs));
    }
    for u in pairs.remainder() {
        squares.extend(exponent::is_nonzero_square(&[curve_rhs(u)]));
    }
    for (v, squares) in squares.iter().enumerate() {
        for (j, valid) in valid.iter_mut().skip(v * LANES).take(LANES).enumerate() {
            *valid &= (squares >> j) & 1 == 1;
        }
    }
    valid
}

/// `H(item)` for every item, as affine u-coordinates in lanes.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn hash_to_u<I: AsRef<[u8]>>(dst: &[u8], items: &[I]) -> Vec<Fe8> {
    let expander = hash_to_field::Expander::new(dst);
    let mut u0 = Vec::with_capacity(items.len());
    let mut u1 = Vec::with_capacity(items.len());
    for group in items.chunks(LANES) {
        let msgs: [&[u8]; LANES] =
            core::array::from_fn(|j| group.get(j).map_or(&[][..], |m| m.as_ref()));
        for [a, b] in expander.hash_to_field(&msgs).iter().take(group.len()) {
            u0.push(lanes::limbs_from_words(*a));
            u1.push(lanes::limbs_from_words(*b));
        }
    }
    let (u0, u1) = (lanes::pack(&u0, [0; 5]), lanes::pack(&u1, [0; 5]));
    let mut xs = Vec::with_capacity(u0.len());
    let mut zs = Vec::with_capacity(u0.len());
    for (a, b) in u0.iter().zip(&u1) {
        let (x, z) = elligator::hash_to_curve_u(a, b);
        xs.push(x);
        zs.push(z);
    }
    affine(xs, zs)
}

/// RFC 7748 `X25519(k, u)` for every packed u, without any validation.
///
/// # Safety
/// The CPU must have AVX-512 F, VL and IFMA ([`available`]).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) unsafe fn x25519(k: &ClampedScalar, packed: &[u8], out: &mut [u8]) {
    ladder_and_store(k, &decode(packed), out);
}

/// `F_k(H(item))` for every item of a chunk.
///
/// # Safety
/// As for [`x25519`].
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) unsafe fn hash_eval<I: AsRef<[u8]>>(
    k: &ClampedScalar,
    dst: &[u8],
    items: &[I],
    out: &mut [u8],
) {
    ladder_and_store(k, &hash_to_u(dst, items), out);
}

/// `F_k(u)` for every received u of a chunk; the first invalid element (in order) is
/// an error: `NonCanonical` when not canonical or not on the curve, else `Identity`
/// when of small order. Indices are relative to the chunk.
///
/// # Safety
/// As for [`x25519`].
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) unsafe fn eval(
    k: &ClampedScalar,
    packed: &[u8],
    out: &mut [u8],
) -> Result<(), GroupError> {
    let valid = on_curve(packed, &decode(packed));
    // SAFETY: this function has the same target features.
    unsafe { x25519(k, packed, out) };
    for (index, (valid, u)) in valid.iter().zip(out.chunks_exact(32)).enumerate() {
        if !valid {
            return Err(GroupError::NonCanonical { index });
        }
        if u.iter().all(|&b| b == 0) {
            return Err(GroupError::Identity { index });
        }
    }
    Ok(())
}

/// Checks that every packed element of a chunk is canonical and on the curve.
///
/// # Safety
/// As for [`x25519`].
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) unsafe fn validate(packed: &[u8]) -> Result<(), GroupError> {
    match on_curve(packed, &decode(packed)).iter().position(|v| !v) {
        Some(index) => Err(GroupError::NonCanonical { index }),
        None => Ok(()),
    }
}
