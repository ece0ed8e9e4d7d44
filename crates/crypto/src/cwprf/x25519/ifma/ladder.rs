//! The RFC 7748 Montgomery ladder on eight u-coordinates at once, all with the same
//! scalar.
//!
//! Because every lane uses the same key, the conditional swap is the same in all lanes:
//! the key bit becomes an all-zeros or all-ones vector by arithmetic (never a branch or
//! an index), and the swap is an XOR under that mask. The ladder returns projective
//! `(x2 : z2)`; the caller inverts `z2` for a whole chunk at once (see `lanes`).

use core::arch::x86_64::*;

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::curve25519x8::field::{Fe8, Fe8Unreduced};

/// `(A - 2) / 4` for Curve25519 (`A = 486662`), the constant of the doubling formula.
const A24: u64 = 121_665;

/// An X25519 scalar after RFC 7748 clamping (bits 0..=2 and 255 cleared, bit 254 set).
/// Zeroized on drop: it is the secret key.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(in crate::cwprf::x25519) struct ClampedScalar([u8; 32]);

impl ClampedScalar {
    pub(in crate::cwprf::x25519) fn new(key: &[u8; 32]) -> Self {
        let mut k = *key;
        k[0] &= 248;
        k[31] &= 127;
        k[31] |= 64;
        let clamped = ClampedScalar(k);
        k.zeroize();
        clamped
    }

    /// Bit `t` as 0 or 1 (a fixed byte and shift for each public `t`).
    fn bit(&self, t: usize) -> u64 {
        u64::from((self.0[t / 8] >> (t % 8)) & 1)
    }
}

/// x-only doubling of `(x : z)`: `(AA BB : E (AA + a24 E))` with `A = x + z`,
/// `B = x - z`, `E = AA - BB` (RFC 7748's formulas).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn double(x: &Fe8, z: &Fe8) -> (Fe8, Fe8) {
    let aa = x.add(z).square();
    let bb = x.sub(z).square();
    let e = aa.sub(&bb);
    (aa.mul(&bb), e.mul(&aa.add(&e.mul_small(A24))))
}

/// `[k] P` for the eight points with affine u-coordinates `u`, as projective
/// `(x2 : z2)`. `z2` is zero exactly when the result is the point at infinity (u of
/// small order). Any lane value works, as in RFC 7748 (non-canonical or twist inputs
/// included).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn ladder(k: &ClampedScalar, u: &Fe8) -> (Fe8, Fe8) {
    // The state is kept unreduced: it only enters additions, subtractions and swaps.
    let (mut x2, mut z2) = (Fe8::one().unreduced(), Fe8::zero().unreduced());
    let (mut x3, mut z3) = (u.unreduced(), Fe8::one().unreduced());
    let mut swap = 0u64;
    // Bits 2..=0 of a clamped scalar are zero: their steps would only double (x2 : z2)
    // and compute an (x3 : z3) nobody reads, so they are three doublings after the loop.
    for t in (3..255).rev() {
        let bit = k.bit(t);
        swap ^= bit;
        let mask = _mm512_set1_epi64(swap.wrapping_neg() as i64);
        Fe8Unreduced::conditional_swap(&mut x2, &mut x3, mask);
        Fe8Unreduced::conditional_swap(&mut z2, &mut z3, mask);
        swap = bit;

        let a = x2.add(&z2);
        let b = x2.sub(&z2);
        let c = x3.add(&z3);
        let d = x3.sub(&z3);
        let aa = a.square();
        let bb = b.square();
        let e = aa.sub(&bb);
        let da = d.mul_unreduced(&a);
        let cb = c.mul_unreduced(&b);
        x3 = da.add(&cb).square_unreduced();
        z3 = u.mul_unreduced(&da.sub(&cb).square());
        x2 = aa.mul_unreduced(&bb);
        z2 = e.mul_unreduced(&aa.unreduced().add(&e.mul_small_unreduced(A24)));
    }
    let mask = _mm512_set1_epi64(swap.wrapping_neg() as i64);
    Fe8Unreduced::conditional_swap(&mut x2, &mut x3, mask);
    Fe8Unreduced::conditional_swap(&mut z2, &mut z3, mask);
    let (mut x, mut z) = (x2.normalize(), z2.normalize());
    for _ in 0..3 {
        (x, z) = double(&x, &z);
    }
    (x, z)
}
