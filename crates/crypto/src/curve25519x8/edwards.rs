//! Points of edwards25519, `-x^2 + y^2 = 1 + d x^2 y^2`, eight at a time, in the
//! extended coordinates of Hisil, Wong, Carter and Dawson ("Twisted Edwards Curves
//! Revisited", 2008): `(X : Y : Z : T)` with `x = X/Z`, `y = Y/Z`, `xy = T/Z`.
//!
//! The identity; the mixed addition of an affine point given as `(y + x, y - x,
//! 2d xy)` ("Niels" form, as curve25519-dalek calls it), 7 multiplications, which the
//! fixed-base products use; the addition of a point given as `(Y + X, Y - X, 2Z,
//! 2d T)` ([`Cached8`]), 8, and the doubling, 4 squarings and 4 multiplications, which
//! the variable-base products use. With `a = -1` a square and `d` a non-square, the
//! addition formulas are complete: they hold for every pair of points, the identity and
//! equal points included, so no lane ever needs a special case.

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

/// Eight points in extended coordinates as `(Y + X, Y - X, 2Z, 2d T)`: what
/// [`Point8::add_cached`] needs of its second operand, computed once for a table entry
/// that is added many times.
#[derive(Clone, Copy)]
pub(crate) struct Cached8 {
    pub(crate) y_plus_x: Fe8,
    pub(crate) y_minus_x: Fe8,
    pub(crate) z2: Fe8,
    pub(crate) t2d: Fe8,
}

impl Cached8 {
    /// The identity `(1, 1, 2, 0)` in every lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn identity() -> Cached8 {
        let one = Fe8::one();
        Cached8 {
            y_plus_x: one,
            y_minus_x: one,
            z2: one.add(&one),
            t2d: Fe8::zero(),
        }
    }

    /// `-P = (-X, Y, Z, -T)` in the lanes of `mask` only (a blend, no branch).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn negate_where(&self, mask: __mmask8) -> Cached8 {
        Cached8 {
            y_plus_x: Fe8::select(mask, &self.y_plus_x, &self.y_minus_x),
            y_minus_x: Fe8::select(mask, &self.y_minus_x, &self.y_plus_x),
            z2: self.z2,
            t2d: Fe8::select(mask, &self.t2d, &self.t2d.neg()),
        }
    }

    /// `other` in the lanes of `mask`, `self` in the rest.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn blend(&self, mask: __mmask8, other: &Cached8) -> Cached8 {
        Cached8 {
            y_plus_x: Fe8::select(mask, &self.y_plus_x, &other.y_plus_x),
            y_minus_x: Fe8::select(mask, &self.y_minus_x, &other.y_minus_x),
            z2: Fe8::select(mask, &self.z2, &other.z2),
            t2d: Fe8::select(mask, &self.t2d, &other.t2d),
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

    /// The point as a [`Cached8`] (one multiplication).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn cached(&self) -> Cached8 {
        Cached8 {
            y_plus_x: self.y.add(&self.x),
            y_minus_x: self.y.sub(&self.x),
            z2: self.z.add(&self.z),
            t2d: self.t.mul(&Fe8::splat(D2)),
        }
    }

    /// `self + q` ("add-2008-hwcd-3" with `q`'s factors precomputed): 8 multiplications.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add_cached(&self, q: &Cached8) -> Point8 {
        let a = self.y.sub(&self.x).mul(&q.y_minus_x);
        let b = self.y.add(&self.x).mul(&q.y_plus_x);
        let c = self.t.mul(&q.t2d);
        let d = self.z.mul(&q.z2);
        Point8::from_abcd(&a, &b, &c, &d)
    }

    /// `2 self` ("dbl-2008-hwcd" with `a = -1`): 4 squarings and 4 multiplications. It
    /// does not read `T`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn double(&self) -> Point8 {
        self.double_then(true)
    }

    /// `2^k self`, `k >= 1`: only the last doubling computes `T` (a doubling does not
    /// read it), one multiplication in eight saved on the others.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn double_times(&self, k: u32) -> Point8 {
        let mut p = *self;
        for _ in 1..k {
            p = p.double_then(false);
        }
        p.double()
    }

    /// [`Point8::double`], leaving `T` stale unless `with_t`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn double_then(&self, with_t: bool) -> Point8 {
        let a = self.x.square();
        let b = self.y.square();
        let zz = self.z.square();
        let c = zz.add(&zz);
        // E = (X + Y)^2 - A - B, G = B - A (= aA + B), F = G - C, H = -A - B (= aA - B).
        let e = self.x.add(&self.y).square().sub(&a).sub(&b);
        let g = b.sub(&a);
        let f = g.sub(&c);
        let h = a.add(&b).neg();
        Point8 {
            x: e.mul(&f),
            y: g.mul(&h),
            z: f.mul(&g),
            t: if with_t { e.mul(&h) } else { self.t },
        }
    }

    /// `self + q` for two points in extended coordinates ("add-2008-hwcd-3", complete
    /// for `a = -1`): 9 multiplications.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add(&self, q: &Point8) -> Point8 {
        self.add_cached(&q.cached())
    }
}
