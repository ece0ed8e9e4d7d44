//! RFC 9380 `hash_to_curve` for Curve25519 with Elligator 2, after `hash_to_field`:
//! `P = 8 (map(u0) + map(u1))`, keeping only the Montgomery u-coordinate, on eight
//! items at once.
//!
//! This is the suite `curve25519_XMD:SHA-512_ELL2_RO_`. The edwards25519 suite that the
//! scalar path uses (curve25519-dalek) maps the same two field elements with the same
//! Elligator 2 map followed by the birational map to Edwards form; that map is a group
//! isomorphism and `u = (1 + y) / (1 - y)` undoes it, so both give the same u.
//!
//! Everything is straight-line: the items are the party's private data, so the choices
//! of the map (which root, which candidate, the sign) are lane-mask selects.

use super::ladder::double;
use crate::curve25519x8::exponent;
use crate::curve25519x8::field::{Fe8, SQRT_M1};

/// The Montgomery coefficient `A` of `v^2 = u^3 + A u^2 + u` (RFC 9380's `J`).
const A: u64 = 486_662;

/// `2^((p + 3) / 8) mod p` (RFC 9380 G.2.1 `c2`).
const C2: [u64; 5] = [
    0xe1b274a0ea0b1,
    0x6ad2fe478c4e,
    0xdfbd7a72f4318,
    0xdf0b2b4d00993,
    0x2b8324804fc1,
];

/// A point of Curve25519 as `(xn / xd, y)`, the form the straight-line map returns.
struct MapPoint {
    xn: Fe8,
    xd: Fe8,
    y: Fe8,
}

/// The values of `map_to_curve_elligator2_curve25519` (RFC 9380 Appendix G.2.1, with
/// `Z = 2`) before its one exponentiation. The map is cut there so that the
/// exponentiations of the two maps of a hash can run interleaved.
struct MapStart {
    /// `2 u^2`.
    tv1: Fe8,
    /// `x1 = x1n / xd = -A / (1 + 2 u^2)`.
    x1n: Fe8,
    xd: Fe8,
    /// `g(x1) = gx1 / gxd`.
    gx1: Fe8,
    gxd: Fe8,
    /// `gx1 gxd^3`.
    tv3: Fe8,
    /// `gx1 gxd^7`, to be raised to `(p - 5) / 8`.
    base: Fe8,
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn map_start(u: &Fe8) -> MapStart {
    let tv1 = u.square().mul_small(2);
    let xd = tv1.add(&Fe8::one()); // non-zero: -1/2 is not a square mod p
    let x1n = Fe8::splat([A, 0, 0, 0, 0]).neg();
    let tv2 = xd.square();
    let gxd = tv2.mul(&xd);
    let gx1 = tv1.mul_small(A).mul(&x1n).add(&tv2).mul(&x1n);
    let gxd2 = gxd.square();
    let tv3 = gxd2.mul(&gxd).mul(&gx1);
    let base = gxd2.square().mul(&tv3);
    MapStart {
        tv1,
        x1n,
        xd,
        gx1,
        gxd,
        tv3,
        base,
    }
}

/// The rest of the map, given `root = base^((p - 5) / 8)`.
/// `y11 = gx1 gxd^3 (gx1 gxd^7)^((p - 5) / 8)` is a square root of `g(x1)` when it has
/// one, or that times a root of unity otherwise; a fixed multiple of it is a candidate
/// for `g(x2) = 2 u^2 g(x1)`; squaring the candidates tells which of `x1`, `x2` is on
/// the curve.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn map_finish(u: &Fe8, s: &MapStart, root: &Fe8) -> MapPoint {
    let sqrt_m1 = Fe8::splat(SQRT_M1);
    let y11 = root.mul(&s.tv3);
    let y12 = y11.mul(&sqrt_m1);
    let e1 = y11.square().mul(&s.gxd).equals(&s.gx1);
    let y1 = Fe8::select(e1, &y12, &y11);

    let x2n = s.x1n.mul(&s.tv1); // x2 = 2 u^2 x1
    let y21 = y11.mul(u).mul(&Fe8::splat(C2));
    let y22 = y21.mul(&sqrt_m1);
    let gx2 = s.gx1.mul(&s.tv1);
    let e2 = y21.square().mul(&s.gxd).equals(&gx2);
    let y2 = Fe8::select(e2, &y22, &y21);

    let e3 = y1.square().mul(&s.gxd).equals(&s.gx1); // g(x1) is a square: x = x1
    let xn = Fe8::select(e3, &x2n, &s.x1n);
    let y = Fe8::select(e3, &y2, &y1);
    // The sign convention of RFC 9380: y ends odd for x1 and even for x2 (negate when
    // e3 XOR sgn0(y)).
    let flip = e3 ^ y.is_odd();
    let y = Fe8::select(flip, &y, &y.neg());
    MapPoint { xn, xd: s.xd, y }
}

/// The u-coordinate of `p + q` as projective `(X : Z)`, from the affine chord rule
/// `x3 = lambda^2 - A - x_p - x_q`, `lambda = (y_q - y_p) / (x_q - x_p)`. With
/// `W = xd_p xd_q`, `a = xn_p xd_q`, `b = xn_q xd_p`, `D = b - a`:
/// `X = (y_q - y_p)^2 W^3 - (A W + a + b) D^2` and `Z = D^2 W`.
///
/// The chord rule needs `x_p != x_q`; for two hash outputs that fails with probability
/// about 2^-252, and the lanes where it does are completed anyway, as curve25519-dalek's
/// complete Edwards addition would: `p = q` takes the doubling of `p`, and `p = -q`
/// already gives `Z = 0`, the point at infinity (whose u is 0; `F(H(x))` is then 0,
/// where the scalar path's aws-lc call refuses the all-zero result and panics).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn add_u(p: &MapPoint, q: &MapPoint) -> (Fe8, Fe8) {
    let w = p.xd.mul(&q.xd);
    let a = p.xn.mul(&q.xd);
    let b = q.xn.mul(&p.xd);
    let d2 = b.sub(&a).square();
    let dy2 = q.y.sub(&p.y).square();
    let w3 = w.square().mul(&w);
    let s = w.mul_small(A).add(&a).add(&b);
    let (x, z) = (dy2.mul(&w3).sub(&s.mul(&d2)), d2.mul(&w));
    let equal = d2.is_zero() & q.y.equals(&p.y);
    let (x2, z2) = double(&p.xn, &p.xd);
    (Fe8::select(equal, &x, &x2), Fe8::select(equal, &z, &z2))
}

/// `8 (map(u0) + map(u1))` as projective `(X : Z)`: the sum, then three x-only
/// doublings (cofactor clearing).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn hash_to_curve_u(u0: &Fe8, u1: &Fe8) -> (Fe8, Fe8) {
    let (s0, s1) = (map_start(u0), map_start(u1));
    let [r0, r1] = exponent::pow_p_minus_5_over_8(&[s0.base, s1.base]);
    let (q0, q1) = (map_finish(u0, &s0, &r0), map_finish(u1, &s1, &r1));
    let (mut x, mut z) = add_u(&q0, &q1);
    for _ in 0..3 {
        (x, z) = double(&x, &z);
    }
    (x, z)
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::montgomery::MontgomeryPoint;
    use curve25519_dalek::scalar::Scalar;
    use rug::Integer;

    use super::*;
    use crate::curve25519x8::lanes;
    use crate::curve25519x8::test_support::{field_prime, ifma_or_skip, to_integer};
    use crate::rng::SessionRng;

    /// `(x : z)` as canonical bytes of `x / z` (0 for `z = 0`), lane by lane.
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn affine_bytes(x: &Fe8, z: &Fe8) -> Vec<u8> {
        let mut zs = [*z];
        lanes::invert_all(&mut zs);
        let mut out = vec![0u8; 32 * 8];
        lanes::store(&[x.mul(&zs[0])], &mut out);
        out
    }

    /// For eight field elements: `8 (Q + Q)`, `Q + (-Q)` and `Q` itself, with
    /// `Q = map(u)`, as affine bytes.
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn equal_and_opposite(us: &[[u64; 5]; 8]) -> [Vec<u8>; 3] {
        let u = Fe8::from_lanes(us);
        let (x, z) = hash_to_curve_u(&u, &u);
        let start = map_start(&u);
        let [root] = exponent::pow_p_minus_5_over_8(&[start.base]);
        let q = map_finish(&u, &start, &root);
        let minus_q = MapPoint {
            xn: q.xn,
            xd: q.xd,
            y: q.y.neg(),
        };
        let (xo, zo) = add_u(&q, &minus_q);
        [
            affine_bytes(&x, &z),
            affine_bytes(&xo, &zo),
            affine_bytes(&q.xn, &q.xd),
        ]
    }

    #[test]
    fn equal_and_opposite_points_are_added_completely() {
        if !ifma_or_skip() {
            return;
        }
        let mut rng = SessionRng::from_seed([25; 32]);
        let mut us = [[0u64; 5]; 8];
        for lane in us.iter_mut() {
            let mut bytes = [0u8; 32];
            rng.fill(&mut bytes);
            *lane = lanes::limbs_from_u_bytes(&bytes);
        }
        // SAFETY: checked by `ifma_or_skip`.
        let [sum, opposite, q] = unsafe { equal_and_opposite(&us) };
        assert_eq!(opposite, vec![0u8; 32 * 8]);
        for j in 0..8 {
            let u_q = MontgomeryPoint(q[32 * j..32 * j + 32].try_into().unwrap());
            let expect = u_q * Scalar::from(16u8);
            assert_eq!(&sum[32 * j..32 * j + 32], expect.as_bytes(), "lane {j}");
        }
    }

    #[test]
    fn constants_are_the_rfc_9380_ones() {
        let p = field_prime();
        let two = Integer::from(2);
        let c2 = two
            .clone()
            .pow_mod(&(Integer::from(&p + 3) / 8u32), &p)
            .unwrap();
        assert_eq!(to_integer(&C2), c2);
        let sqrt_m1 = two.pow_mod(&(Integer::from(&p - 1) / 4u32), &p).unwrap();
        assert_eq!(to_integer(&SQRT_M1), sqrt_m1);
        assert_eq!(
            Integer::from(&sqrt_m1 * &sqrt_m1) % &p,
            Integer::from(&p - 1)
        );
    }
}
