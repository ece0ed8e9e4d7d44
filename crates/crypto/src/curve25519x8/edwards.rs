//! Points of edwards25519, `-x^2 + y^2 = 1 + d x^2 y^2`, eight at a time, in the
//! extended coordinates of Hisil, Wong, Carter and Dawson ("Twisted Edwards Curves
//! Revisited", 2008): `(X : Y : Z : T)` with `x = X/Z`, `y = Y/Z`, `xy = T/Z`.
//!
//! Only what a fixed-base multiplication needs: the identity and the mixed addition of
//! an affine point given as `(y + x, y - x, 2d xy)` ("Niels" form, as curve25519-dalek
//! calls it), 7 multiplications. With `a = -1` a square and `d` a non-square, the
//! formula is complete: it holds for every pair of points, the identity and equal
//! points included, so no lane ever needs a special case.

use core::arch::x86_64::*;

use super::field::Fe8;

/// `d = -121665 / 121666`, radix 2^52.
pub(crate) const D: [u64; 5] = [
    0xb4dca135978a3,
    0x4d4141d8ab75e,
    0x779e89800700a,
    0xfe738cc740797,
    0x52036cee2b6f,
];

/// `2d`.
pub(crate) const D2: [u64; 5] = [
    0x69b9426b2f159,
    0x9a8283b156ebd,
    0xef3d13000e014,
    0xfce7198e80f2e,
    0x2406d9dc56df,
];

/// Eight points in extended coordinates.
#[derive(Clone, Copy)]
pub(crate) struct Point8 {
    pub(crate) x: Fe8,
    pub(crate) y: Fe8,
    pub(crate) z: Fe8,
    pub(crate) t: Fe8,
}

/// Eight affine points as `(y + x, y - x, 2d xy)`.
#[derive(Clone, Copy)]
pub(crate) struct Niels8 {
    pub(crate) y_plus_x: Fe8,
    pub(crate) y_minus_x: Fe8,
    pub(crate) xy2d: Fe8,
}

impl Niels8 {
    /// `-P = (-x, y)`: the two sums swap and `2d xy` changes sign, in the lanes of
    /// `mask` only (a blend, no branch).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn negate_where(&self, mask: __mmask8) -> Niels8 {
        Niels8 {
            y_plus_x: Fe8::select(mask, &self.y_plus_x, &self.y_minus_x),
            y_minus_x: Fe8::select(mask, &self.y_minus_x, &self.y_plus_x),
            xy2d: Fe8::select(mask, &self.xy2d, &self.xy2d.neg()),
        }
    }
}

impl Point8 {
    /// `(0 : 1 : 1 : 0)` in every lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn identity() -> Point8 {
        Point8 {
            x: Fe8::zero(),
            y: Fe8::one(),
            z: Fe8::one(),
            t: Fe8::zero(),
        }
    }

    /// The point whose coordinate `c` (0 to 3: X, Y, Z, T) is `coordinate(c)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn from_coordinates(mut coordinate: impl FnMut(usize) -> Fe8) -> Point8 {
        Point8 {
            x: coordinate(0),
            y: coordinate(1),
            z: coordinate(2),
            t: coordinate(3),
        }
    }

    /// `self + q` (the "madd-2008-hwcd-3" formulas with `k = 2d` folded into `q`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add_niels(&self, q: &Niels8) -> Point8 {
        let a = self.y.sub(&self.x).mul(&q.y_minus_x);
        let b = self.y.add(&self.x).mul(&q.y_plus_x);
        let c = self.t.mul(&q.xy2d);
        let d = self.z.add(&self.z);
        Point8::from_abcd(&a, &b, &c, &d)
    }

    /// The last step both additions share: `E = B - A`, `F = D - C`, `G = D + C`,
    /// `H = B + A`, and the sum `(EF : GH : FG : EH)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn from_abcd(a: &Fe8, b: &Fe8, c: &Fe8, d: &Fe8) -> Point8 {
        let (e, f, g, h) = (b.sub(a), d.sub(c), d.add(c), b.add(a));
        Point8 {
            x: e.mul(&f),
            y: g.mul(&h),
            z: f.mul(&g),
            t: e.mul(&h),
        }
    }

    /// `self + q` for two points in extended coordinates ("add-2008-hwcd-3", complete
    /// for `a = -1`): 9 multiplications.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add(&self, q: &Point8) -> Point8 {
        let a = self.y.sub(&self.x).mul(&q.y.sub(&q.x));
        let b = self.y.add(&self.x).mul(&q.y.add(&q.x));
        let c = self.t.mul(&q.t).mul(&Fe8::splat(D2));
        let zz = self.z.mul(&q.z);
        let d = zz.add(&zz);
        Point8::from_abcd(&a, &b, &c, &d)
    }
}
