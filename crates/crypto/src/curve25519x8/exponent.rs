//! The fixed exponentiations of GF(2^255 - 19): inversion, the square-root candidate
//! of Elligator 2, the Legendre symbol. All share the classic chain for
//! `z^(2^250 - 1)` (254 squarings, 11 multiplications).
//!
//! Each squaring waits for the previous one, so one chain leaves the multiply-add units
//! mostly idle; the functions take `N` independent vectors and interleave their chains
//! operation by operation (the callers pass two).

use core::arch::x86_64::__mmask8;

use super::field::Fe8;

// Plain loops over the arrays, not `core::array::from_fn`: its closure is compiled
// without this module's target features, so it was neither inlined nor free of copies
// (a call and a 320-byte move per squaring, a third of the exponentiation's time).

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn mul<const N: usize>(a: &[Fe8; N], b: &[Fe8; N]) -> [Fe8; N] {
    let mut r = *a;
    for (r, b) in r.iter_mut().zip(b) {
        *r = r.mul(b);
    }
    r
}

/// `x^(2^k)`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn square_times<const N: usize>(x: &[Fe8; N], k: u32) -> [Fe8; N] {
    let mut r = *x;
    for _ in 0..k {
        for r in r.iter_mut() {
            *r = r.square();
        }
    }
    r
}

/// `(z^(2^250 - 1), z^11)`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn pow_2_250_minus_1<const N: usize>(z: &[Fe8; N]) -> ([Fe8; N], [Fe8; N]) {
    let z2 = square_times(z, 1);
    let z9 = mul(&square_times(&z2, 2), z);
    let z11 = mul(&z9, &z2);
    let e5 = mul(&square_times(&z11, 1), &z9); // 2^5 - 1
    let e10 = mul(&square_times(&e5, 5), &e5);
    let e20 = mul(&square_times(&e10, 10), &e10);
    let e40 = mul(&square_times(&e20, 20), &e20);
    let e50 = mul(&square_times(&e40, 10), &e10);
    let e100 = mul(&square_times(&e50, 50), &e50);
    let e200 = mul(&square_times(&e100, 100), &e100);
    let e250 = mul(&square_times(&e200, 50), &e50);
    (e250, z11)
}

/// `z^(p - 2) = z^-1` (Fermat), lane by lane; zero maps to zero. The exponent is
/// `(2^250 - 1) 2^5 + 11`. Called once per chunk (batched inversion), hence one vector.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn invert(z: &Fe8) -> Fe8 {
    let (e250, z11) = pow_2_250_minus_1(&[*z]);
    mul(&square_times(&e250, 5), &z11)[0]
}

/// `z^((p - 5) / 8) = z^((2^250 - 1) 4 + 1)`, the exponent of the square-root
/// candidate in RFC 9380's Elligator 2 for this field.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn pow_p_minus_5_over_8<const N: usize>(z: &[Fe8; N]) -> [Fe8; N] {
    let (e250, _) = pow_2_250_minus_1(z);
    mul(&square_times(&e250, 2), z)
}

/// The lanes where the Legendre symbol `z^((p - 1) / 2) = z^((2^250 - 1) 16 + 6)` is
/// 1 (non-zero squares; it is `p - 1` for non-squares and 0 for zero).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn is_nonzero_square<const N: usize>(z: &[Fe8; N]) -> [__mmask8; N] {
    let (e250, _) = pow_2_250_minus_1(z);
    let z3 = mul(&square_times(z, 1), z);
    let symbol = mul(&square_times(&e250, 4), &square_times(&z3, 1));
    let mut squares = [0; N];
    for (m, s) in squares.iter_mut().zip(&symbol) {
        *m = s.equals(&Fe8::one());
    }
    squares
}
