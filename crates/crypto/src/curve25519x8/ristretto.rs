//! ristretto255's encoding and decoding (RFC 9496, Sec. 4.3.1-4.3.2) on eight points at
//! once. The encoding of a group element is unique, so these give exactly the bytes of
//! curve25519-dalek's `compress` whatever representative of the element a lane holds.
//!
//! Straight-line on the lanes: every choice (the rotation, the signs) is a blend.

use core::arch::x86_64::*;

use super::edwards::{D, Point8};
use super::exponent;
use super::field::{Fe8, SQRT_M1};
use super::lanes;

/// `1 / sqrt(a - d)` with `a = -1`, the non-negative root (RFC 9496 `INVSQRT_A_MINUS_D`).
pub(crate) const INVSQRT_A_MINUS_D: [u64; 5] = [
    0x8fdaa805d40ea,
    0x175a4172be99c,
    0xe01d8409d2f16,
    0xfca216c27b91f,
    0x786c8905cfaf,
];

/// `|x|`: `x` or `-x`, whichever is even (RFC 9496 `CT_ABS`, "non-negative").
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn abs(x: &Fe8) -> Fe8 {
    Fe8::select(x.is_odd(), x, &x.neg())
}

/// RFC 9496 `SQRT_RATIO_M1(1, v)` for `N` vectors whose exponentiations interleave:
/// `(was_square, |1 / sqrt(v)|)`, the root being `|sqrt(i / v)|` when `v` is not a
/// square (and 0 for `v = 0`, with `was_square` false).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn inv_sqrt<const N: usize>(v: &[Fe8; N]) -> ([__mmask8; N], [Fe8; N]) {
    let mut v3 = *v;
    let mut v7 = *v;
    for i in 0..N {
        v3[i] = v[i].square().mul(&v[i]);
        v7[i] = v3[i].square().mul(&v[i]);
    }
    let pow = exponent::pow_p_minus_5_over_8(&v7);
    let one = Fe8::one();
    let minus_one = one.neg();
    let sqrt_m1 = Fe8::splat(SQRT_M1);
    let minus_sqrt_m1 = sqrt_m1.neg();
    let mut was_square = [0; N];
    let mut roots = pow;
    for i in 0..N {
        let r = v3[i].mul(&pow[i]);
        let check = v[i].mul(&r.square());
        let correct = check.equals(&one);
        let flipped = check.equals(&minus_one);
        let flipped_i = check.equals(&minus_sqrt_m1);
        let r = Fe8::select(flipped | flipped_i, &r, &r.mul(&sqrt_m1));
        roots[i] = abs(&r);
        was_square[i] = correct | flipped;
    }
    (was_square, roots)
}

/// The canonical field element `s` encoding each point (RFC 9496 Sec. 4.3.2), for `N`
/// vectors at once.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn encode<const N: usize>(points: &[Point8; N]) -> [Fe8; N] {
    let mut u1 = [Fe8::zero(); N];
    let mut u2 = [Fe8::zero(); N];
    let mut radicand = [Fe8::zero(); N];
    for (i, p) in points.iter().enumerate() {
        u1[i] = p.z.add(&p.y).mul(&p.z.sub(&p.y));
        u2[i] = p.x.mul(&p.y);
        radicand[i] = u1[i].mul(&u2[i].square());
    }
    let (_, inv) = inv_sqrt(&radicand);
    let sqrt_m1 = Fe8::splat(SQRT_M1);
    let invsqrt_a_minus_d = Fe8::splat(INVSQRT_A_MINUS_D);
    let mut out = [Fe8::zero(); N];
    for (i, p) in points.iter().enumerate() {
        let den1 = inv[i].mul(&u1[i]);
        let den2 = inv[i].mul(&u2[i]);
        let z_inv = den1.mul(&den2).mul(&p.t);
        let ix0 = p.x.mul(&sqrt_m1);
        let iy0 = p.y.mul(&sqrt_m1);
        let enchanted_denominator = den1.mul(&invsqrt_a_minus_d);
        let rotate = p.t.mul(&z_inv).is_odd();
        let x = Fe8::select(rotate, &p.x, &iy0);
        let y = Fe8::select(rotate, &p.y, &ix0);
        let den_inv = Fe8::select(rotate, &den2, &enchanted_denominator);
        let y = Fe8::select(x.mul(&z_inv).is_odd(), &y, &y.neg());
        out[i] = abs(&den_inv.mul(&p.z.sub(&y))).canonical();
    }
    out
}

/// The canonical field element `s` encoding `2 P` for each point `P` of each vector:
/// the "batched double-and-encode" of the ristretto255 design notes (Hamburg's Decaf
/// trick). The coordinates of `2 P` are products of `P`'s, so the square root that
/// [`encode`] pays an exponentiation for is known, and what is left is one inversion
/// per lane, batched over the whole slice ([`lanes::invert_all`]): about twenty
/// multiplications a point instead of about 265. A caller wanting `encode(Q)` computes
/// `Q / 2` (halving its scalars) and passes that.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn double_and_encode(points: &[Point8]) -> Vec<Fe8> {
    let d = Fe8::splat(D);
    // e = 2XY, f = Z^2 + dT^2, g = Y^2 + X^2, h = Z^2 - dT^2: 2P is (eh : fg : fh : eg)
    // up to the rotation the encoding chooses.
    let mut efgh = Vec::with_capacity(points.len());
    let mut inverses = Vec::with_capacity(points.len());
    for p in points {
        let zz = p.z.square();
        let dtt = d.mul(&p.t.square());
        let e = p.x.mul(&p.y.add(&p.y));
        let f = zz.add(&dtt);
        let g = p.y.square().add(&p.x.square());
        let h = zz.sub(&dtt);
        let (eg, fh) = (e.mul(&g), f.mul(&h));
        inverses.push(eg.mul(&fh));
        efgh.push([e, f, g, h, eg, fh]);
    }
    lanes::invert_all(&mut inverses);
    let sqrt_m1 = Fe8::splat(SQRT_M1);
    let invsqrt_a_minus_d = Fe8::splat(INVSQRT_A_MINUS_D);
    efgh.iter()
        .zip(&inverses)
        .map(|([e, f, g, h, eg, fh], inv)| {
            let z_inv = eg.mul(inv);
            let t_inv = fh.mul(inv);
            // Rotate where `T Z^-1` of 2P is negative.
            let rotate = eg.mul(&z_inv).is_odd();
            let e_r = Fe8::select(rotate, e, g);
            let g_r = Fe8::select(rotate, g, &e.neg());
            let h_r = Fe8::select(rotate, h, &f.mul(&sqrt_m1));
            let magic = Fe8::select(rotate, &invsqrt_a_minus_d, &sqrt_m1);
            let g_r = Fe8::select(h_r.mul(&e_r).mul(&z_inv).is_odd(), &g_r, &g_r.neg());
            abs(&h_r.sub(&g_r).mul(&magic.mul(&g_r.mul(&t_inv)))).canonical()
        })
        .collect()
}

/// The affine point `(x, y)` that RFC 9496 Sec. 4.3.1 decodes from each `s`, and the
/// lanes where the decoding succeeds. The caller has already checked that each `s` is
/// canonical and even (non-negative): those checks are on the bytes.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn decode(s: &Fe8) -> (Fe8, Fe8, __mmask8) {
    decode_n(&[*s])[0]
}

/// [`decode`] of `N` vectors at once: their inverse square roots' chains interleave,
/// which keeps the multiply-add units busy where one chain waits on each squaring
/// (callers pass two).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn decode_n<const N: usize>(s: &[Fe8; N]) -> [(Fe8, Fe8, __mmask8); N] {
    let one = Fe8::one();
    let d = Fe8::splat(D);
    let mut u1 = [Fe8::zero(); N];
    let mut u2 = [Fe8::zero(); N];
    let mut v = [Fe8::zero(); N];
    let mut radicand = [Fe8::zero(); N];
    for i in 0..N {
        let ss = s[i].square();
        u1[i] = one.sub(&ss);
        u2[i] = one.add(&ss);
        let u2_sqr = u2[i].square();
        v[i] = d.mul(&u1[i].square()).neg().sub(&u2_sqr);
        radicand[i] = v[i].mul(&u2_sqr);
    }
    let (was_square, inv) = inv_sqrt(&radicand);
    let mut out = [(Fe8::zero(), Fe8::zero(), 0); N];
    for i in 0..N {
        let den_x = inv[i].mul(&u2[i]);
        let den_y = inv[i].mul(&den_x).mul(&v[i]);
        let x = abs(&s[i].add(&s[i]).mul(&den_x));
        let y = u1[i].mul(&den_y);
        let t = x.mul(&y);
        out[i] = (x, y, was_square[i] & !t.is_odd() & !y.is_zero());
    }
    out
}
