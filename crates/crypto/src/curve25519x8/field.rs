//! Arithmetic in GF(2^255 - 19) on eight independent elements at once (AVX-512 IFMA).
//!
//! # Representation
//!
//! An [`Fe8`] holds eight field elements, one per 64-bit lane, in radix 2^52: five
//! `__m512i`, limb `i` of every lane in vector `i`, the value of a lane being
//! `sum(l_i * 2^(52 i))`. Radix 2^52 because that is what the IFMA instructions
//! multiply: `vpmadd52luq`/`vpmadd52huq` take the low 52 bits of each operand and add
//! the low or high 52 bits of the 104-bit product to a 64-bit accumulator, so a 5x5
//! schoolbook product is 25 + 25 multiply-adds with no shifting of partial products
//! (the high half of column `k` is column `k + 1`).
//!
//! # Limb bounds (the invariant every public function keeps)
//!
//! Every `Fe8` a function returns is *normalized*: limbs 0..=3 are below 2^52 and limb
//! 4 is below 2^48, so a lane is below 2^256, congruent to the element it stands for,
//! but not necessarily below `p`. The bound matters because IFMA silently ignores the
//! bits of an operand above bit 51: a multiplication input whose limb reaches 2^52 is a
//! wrong result, not a slow one. Hence the reduction is not lazy across additions:
//! [`Fe8::add`] and [`Fe8::sub`] carry their result, which is cheap next to a product.
//! [`Fe8::canonical`] gives the unique representative below `p`, needed for output,
//! comparisons and signs. The one exception is [`Fe8Unreduced`], a product before its
//! final carry, which the ladder uses for values that are only added or subtracted.
//!
//! Every function is straight-line code on all lanes: no branch or memory index depends
//! on a lane's value. Conditional moves are blends under a lane mask.

use core::arch::x86_64::*;

const MASK52: u64 = (1 << 52) - 1;
const MASK47: u64 = (1 << 47) - 1;

/// `2^260 mod p`: a column of weight `2^(52 (k + 5))` folds onto column `k` times 608.
const FOLD_260: u64 = 608;
/// `2^255 mod p`.
const FOLD_255: u64 = 19;

/// `4p` in radix 2^52: added before a subtraction so that every limb stays
/// non-negative (each limb of `4p` exceeds the largest normalized limb).
const FOUR_P: [u64; 5] = [
    4 * ((1 << 52) - 19),
    4 * MASK52,
    4 * MASK52,
    4 * MASK52,
    4 * MASK47,
];

/// `sqrt(-1) = 2^((p - 1) / 4) mod p`.
pub(crate) const SQRT_M1: [u64; 5] = [
    0xe1b274a0ea0b0,
    0x6ad2fe478c4e,
    0xdfbd7a72f4318,
    0xdf0b2b4d00993,
    0x2b8324804fc1,
];

/// Eight field elements, one per lane, normalized (see the module documentation).
#[derive(Clone, Copy)]
pub(crate) struct Fe8([__m512i; 5]);

/// The eight 64-bit lanes of a vector.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn to_u64s(v: __m512i) -> [u64; 8] {
    // SAFETY: both types are 64 bytes of plain integers; every bit pattern is valid.
    unsafe { core::mem::transmute::<__m512i, [u64; 8]>(v) }
}

/// A vector of eight 64-bit lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(crate) fn from_u64s(v: [u64; 8]) -> __m512i {
    // SAFETY: as in `to_u64s`.
    unsafe { core::mem::transmute::<[u64; 8], __m512i>(v) }
}

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// Carries limbs below 2^63 into a normalized element. The excess above bit 255 is
/// folded first (times 19 into limb 0), then one carry pass runs from limb 0 to limb
/// 4, which ends below `2^47 + 2^12`: no carry can wrap around again.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn normalize(mut r: [__m512i; 5]) -> Fe8 {
    let m52 = splat(MASK52);
    let top = _mm512_srli_epi64::<47>(r[4]);
    r[4] = _mm512_and_si512(r[4], splat(MASK47));
    r[0] = _mm512_madd52lo_epu64(r[0], top, splat(FOLD_255));
    for i in 0..4 {
        let carry = _mm512_srli_epi64::<52>(r[i]);
        r[i] = _mm512_and_si512(r[i], m52);
        r[i + 1] = _mm512_add_epi64(r[i + 1], carry);
    }
    Fe8(r)
}

/// Folds the ten columns of a product (each below `9 * 2^52`, column 9 below 2^44) into
/// five limbs below 2^56 (not normalized: see [`Fe8Unreduced`]). Column `k + 5` has
/// weight `2^260 * 2^(52 k)`, i.e. 608 times column `k`; it is split into its low 52
/// bits `u` (multiplied by 608 with IFMA, the high half landing in column `k + 1`) and
/// the rest `v = t >> 52` (below 2^4, so `608 v` is tiny and added to column `k + 1`).
/// Column 9 is below 2^44 (its only term is the high half of `a_4 b_4 < 2^96`), so the
/// high half of `608 t_9` (below 2^2) is the only part that wraps around a second time,
/// onto column 0.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn reduce_columns(t: [__m512i; 10]) -> [__m512i; 5] {
    let m52 = splat(MASK52);
    let c608 = splat(FOLD_260);
    let mut r = [t[0], t[1], t[2], t[3], t[4]];
    for k in 0..4 {
        let u = _mm512_and_si512(t[k + 5], m52);
        let v = _mm512_srli_epi64::<52>(t[k + 5]);
        r[k] = _mm512_madd52lo_epu64(r[k], u, c608);
        r[k + 1] = _mm512_madd52hi_epu64(r[k + 1], u, c608);
        r[k + 1] = _mm512_madd52lo_epu64(r[k + 1], v, c608);
    }
    r[4] = _mm512_madd52lo_epu64(r[4], t[9], c608);
    let wrap = _mm512_madd52hi_epu64(_mm512_setzero_si512(), t[9], c608);
    r[0] = _mm512_madd52lo_epu64(r[0], wrap, c608);
    // Each limb: its column (< 9 * 2^52), the low half of 608 u (< 2^52), the high
    // half of the previous 608 u (< 2^10), 608 v (< 2^15): below 2^56.
    r
}

/// `2^10 p` in radix 2^52: every limb exceeds 2^56, the bound of an unreduced limb, so
/// `a + 2^10 p - b` has no negative limb; the sum stays below 2^63.
const P_TIMES_1024: [u64; 5] = [
    1024 * ((1 << 52) - 19),
    1024 * MASK52,
    1024 * MASK52,
    1024 * MASK52,
    1024 * MASK47,
];

/// A product before its final carry: limbs below 2^56, so *not* a valid multiplication
/// operand. The ladder keeps its state in this form because each state element is only
/// ever added, subtracted or swapped (and those carry their result anyway), which
/// saves eight of the eighteen carry passes of a ladder step.
#[derive(Clone, Copy)]
pub(crate) struct Fe8Unreduced([__m512i; 5]);

impl Fe8Unreduced {
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add(&self, b: &Fe8Unreduced) -> Fe8 {
        let mut r = self.0;
        for (r, b) in r.iter_mut().zip(b.0) {
            *r = _mm512_add_epi64(*r, b);
        }
        normalize(r)
    }

    /// `self - b` as `self + 2^10 p - b`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn sub(&self, b: &Fe8Unreduced) -> Fe8 {
        let mut r = self.0;
        for i in 0..5 {
            r[i] = _mm512_sub_epi64(_mm512_add_epi64(r[i], splat(P_TIMES_1024[i])), b.0[i]);
        }
        normalize(r)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn normalize(&self) -> Fe8 {
        normalize(self.0)
    }

    /// Swaps `a` and `b` in the lanes where `swap` is all ones, with XOR masking.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn conditional_swap(a: &mut Fe8Unreduced, b: &mut Fe8Unreduced, swap: __m512i) {
        for (a, b) in a.0.iter_mut().zip(b.0.iter_mut()) {
            let t = _mm512_and_si512(_mm512_xor_si512(*a, *b), swap);
            *a = _mm512_xor_si512(*a, t);
            *b = _mm512_xor_si512(*b, t);
        }
    }
}

impl Fe8 {
    /// The same element in all eight lanes, from its radix-2^52 limbs (normalized).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn splat(limbs: [u64; 5]) -> Fe8 {
        Fe8([
            splat(limbs[0]),
            splat(limbs[1]),
            splat(limbs[2]),
            splat(limbs[3]),
            splat(limbs[4]),
        ])
    }

    /// Eight elements from their limb vectors (limb `i` of every lane in vector `i`),
    /// which must be normalized.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn from_vectors(limbs: [__m512i; 5]) -> Fe8 {
        Fe8(limbs)
    }

    /// The limb vectors (limb `i` of every lane in vector `i`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn vectors(&self) -> [__m512i; 5] {
        self.0
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn zero() -> Fe8 {
        Fe8::splat([0; 5])
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn one() -> Fe8 {
        Fe8::splat([1, 0, 0, 0, 0])
    }

    /// Eight elements from their limbs, lane `j` from `lanes[j]`. Each limb array must
    /// be normalized (limbs 0..=3 below 2^52, limb 4 below 2^48).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn from_lanes(lanes: &[[u64; 5]; 8]) -> Fe8 {
        let limb = |i: usize| {
            from_u64s([
                lanes[0][i],
                lanes[1][i],
                lanes[2][i],
                lanes[3][i],
                lanes[4][i],
                lanes[5][i],
                lanes[6][i],
                lanes[7][i],
            ])
        };
        Fe8([limb(0), limb(1), limb(2), limb(3), limb(4)])
    }

    /// The limbs of each lane (as stored: normalized, not necessarily canonical).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn to_lanes(self) -> [[u64; 5]; 8] {
        let limbs = [
            to_u64s(self.0[0]),
            to_u64s(self.0[1]),
            to_u64s(self.0[2]),
            to_u64s(self.0[3]),
            to_u64s(self.0[4]),
        ];
        let mut lanes = [[0u64; 5]; 8];
        for (j, lane) in lanes.iter_mut().enumerate() {
            for (i, limb) in lane.iter_mut().enumerate() {
                *limb = limbs[i][j];
            }
        }
        lanes
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn add(&self, b: &Fe8) -> Fe8 {
        let mut r = self.0;
        for (r, b) in r.iter_mut().zip(b.0) {
            *r = _mm512_add_epi64(*r, b);
        }
        normalize(r)
    }

    /// `self - b`, computed as `self + 4p - b` so that no limb goes negative.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn sub(&self, b: &Fe8) -> Fe8 {
        let mut r = self.0;
        for i in 0..5 {
            r[i] = _mm512_sub_epi64(_mm512_add_epi64(r[i], splat(FOUR_P[i])), b.0[i]);
        }
        normalize(r)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn neg(&self) -> Fe8 {
        Fe8::zero().sub(self)
    }

    /// Schoolbook product: column `i + j` gets the low halves of `a_i b_j`, column
    /// `i + j + 1` the high halves. A column sums at most 9 terms below 2^52.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn mul(&self, b: &Fe8) -> Fe8 {
        self.mul_unreduced(b).normalize()
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn mul_unreduced(&self, b: &Fe8) -> Fe8Unreduced {
        let (a, b) = (&self.0, &b.0);
        let mut t = [_mm512_setzero_si512(); 10];
        for i in 0..5 {
            for j in 0..5 {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], b[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], b[j]);
            }
        }
        Fe8Unreduced(reduce_columns(t))
    }

    /// `self^2`: the ten cross products are computed once and doubled (a shift of the
    /// column sums, since IFMA cannot take a doubled limb of up to 2^53 as input), then
    /// the five squares are added: 30 multiply-adds instead of 50.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn square(&self) -> Fe8 {
        self.square_unreduced().normalize()
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn square_unreduced(&self) -> Fe8Unreduced {
        let a = &self.0;
        let mut t = [_mm512_setzero_si512(); 10];
        for i in 0..5 {
            for j in i + 1..5 {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], a[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], a[j]);
            }
        }
        for column in t.iter_mut() {
            *column = _mm512_add_epi64(*column, *column);
        }
        for i in 0..5 {
            t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a[i], a[i]);
            t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a[i], a[i]);
        }
        Fe8Unreduced(reduce_columns(t))
    }

    /// `self * c` for a small constant `c < 2^20`: the low half of `a_i c` stays in
    /// limb `i`, the high half goes to limb `i + 1`, and that of limb 4 (below 2^16)
    /// wraps around to limb 0 times 608.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn mul_small(&self, c: u64) -> Fe8 {
        self.mul_small_unreduced(c).normalize()
    }

    /// As [`Fe8::mul_small`], before the carry (limbs below 2^53).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn mul_small_unreduced(&self, c: u64) -> Fe8Unreduced {
        debug_assert!(c < 1 << 20);
        let a = &self.0;
        let c = splat(c);
        let zero = _mm512_setzero_si512();
        let mut r = [zero; 5];
        for i in 0..5 {
            r[i] = _mm512_madd52lo_epu64(r[i], a[i], c);
        }
        for i in 0..4 {
            r[i + 1] = _mm512_madd52hi_epu64(r[i + 1], a[i], c);
        }
        let wrap = _mm512_madd52hi_epu64(zero, a[4], c);
        r[0] = _mm512_madd52lo_epu64(r[0], wrap, splat(FOLD_260));
        Fe8Unreduced(r)
    }

    /// The same element as an [`Fe8Unreduced`] (a normalized limb is below 2^56).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn unreduced(&self) -> Fe8Unreduced {
        Fe8Unreduced(self.0)
    }

    /// The unique representative below `p`. After folding the bits above 255 the
    /// value `v` is below `2^255 + 2^209 < 2p`; `v >= p` exactly when `v + 19` reaches
    /// 2^255, in which case the result is `v + 19 - 2^255`. Both paths are computed as
    /// arithmetic on the 0/1 quotient, with no branch.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn canonical(&self) -> Fe8 {
        let m52 = splat(MASK52);
        let m47 = splat(MASK47);
        let carry_through = |mut r: [__m512i; 5]| {
            for i in 0..4 {
                let carry = _mm512_srli_epi64::<52>(r[i]);
                r[i] = _mm512_and_si512(r[i], m52);
                r[i + 1] = _mm512_add_epi64(r[i + 1], carry);
            }
            r
        };
        let mut v = self.0;
        let top = _mm512_srli_epi64::<47>(v[4]);
        v[4] = _mm512_and_si512(v[4], m47);
        v[0] = _mm512_madd52lo_epu64(v[0], top, splat(FOLD_255));
        let v = carry_through(v);
        let mut w = v;
        w[0] = _mm512_add_epi64(w[0], splat(FOLD_255));
        let w = carry_through(w);
        let quotient = _mm512_srli_epi64::<47>(w[4]);
        let mut r = v;
        r[0] = _mm512_madd52lo_epu64(r[0], quotient, splat(FOLD_255));
        let mut r = carry_through(r);
        r[4] = _mm512_and_si512(r[4], m47);
        Fe8(r)
    }

    /// Lanes whose element is zero (mod p).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn is_zero(&self) -> __mmask8 {
        let c = self.canonical().0;
        let any = _mm512_or_si512(
            _mm512_or_si512(c[0], c[1]),
            _mm512_or_si512(_mm512_or_si512(c[2], c[3]), c[4]),
        );
        _mm512_cmpeq_epi64_mask(any, _mm512_setzero_si512())
    }

    /// Lanes where `self == b` (mod p).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn equals(&self, b: &Fe8) -> __mmask8 {
        self.sub(b).is_zero()
    }

    /// Lanes whose canonical representative is odd (RFC 9380 `sgn0` for this field).
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn is_odd(&self) -> __mmask8 {
        let low = self.canonical().0[0];
        _mm512_test_epi64_mask(low, splat(1))
    }

    /// Lane by lane: `if_true` where `mask` is set, `if_false` elsewhere.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(crate) fn select(mask: __mmask8, if_false: &Fe8, if_true: &Fe8) -> Fe8 {
        let mut r = if_false.0;
        for (r, t) in r.iter_mut().zip(if_true.0) {
            *r = _mm512_mask_blend_epi64(mask, *r, t);
        }
        Fe8(r)
    }
}

#[cfg(test)]
mod tests {
    use rug::Integer;

    use super::*;
    use crate::curve25519x8::exponent;
    use crate::curve25519x8::test_support::{field_prime, from_integer, ifma_or_skip, to_integer};

    /// Lanes of random values below 2^256 (normalized limbs), with edge cases.
    fn sample(seed: u64) -> [[u64; 5]; 8] {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut lanes = [[0u64; 5]; 8];
        for lane in lanes.iter_mut() {
            for (i, limb) in lane.iter_mut().enumerate() {
                *limb = next() & if i == 4 { (1 << 48) - 1 } else { MASK52 };
            }
        }
        let p = field_prime();
        lanes[0] = from_integer(&(Integer::from(&p - 1)));
        lanes[1] = from_integer(&p);
        lanes[2] = [MASK52, MASK52, MASK52, MASK52, (1 << 48) - 1];
        lanes[3] = [0; 5];
        lanes
    }

    #[test]
    fn matches_big_integer_arithmetic() {
        if !ifma_or_skip() {
            return;
        }
        let p = field_prime();
        for seed in 1..200u64 {
            let (xa, xb) = (sample(seed), sample(seed + 1000));
            // SAFETY: the CPU has the features (checked above).
            let results = unsafe { run_ops(&xa, &xb) };
            for j in 0..8 {
                let (a, b) = (to_integer(&xa[j]), to_integer(&xb[j]));
                let expect = [
                    Integer::from(&a + &b) % &p,
                    (Integer::from(&a - &b) % &p + &p) % &p,
                    Integer::from(&a * &b) % &p,
                    Integer::from(&a * &a) % &p,
                    Integer::from(&a * 121_665u32) % &p,
                    a.clone().pow_mod(&Integer::from(&p - 2), &p).unwrap(),
                    (Integer::from(&p - &a) % &p + &p) % &p,
                    (Integer::from(&a * &b) - Integer::from(&a * &a)).modulo(&p),
                    (Integer::from(&a * &b) + Integer::from(&a * &a)).modulo(&p),
                    (Integer::from(&a * &a) + Integer::from(&b * 121_665u32)).modulo(&p),
                ];
                for (k, e) in expect.iter().enumerate() {
                    assert_eq!(
                        to_integer(&results[k][j]),
                        *e,
                        "op {k} lane {j} seed {seed}"
                    );
                    let limbs = results[k][j];
                    assert!(limbs[..4].iter().all(|&l| l <= MASK52) && limbs[4] <= MASK47);
                }
                let legendre = Integer::from(a.legendre(&p));
                assert_eq!(
                    results[10][j][0] == 1,
                    legendre == 1,
                    "lane {j} seed {seed}"
                );
            }
        }
    }

    /// add, sub, mul, square, mul_small, invert, neg, the unreduced forms (canonical),
    /// and the square mask.
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    unsafe fn run_ops(xa: &[[u64; 5]; 8], xb: &[[u64; 5]; 8]) -> Vec<[[u64; 5]; 8]> {
        let (a, b) = (Fe8::from_lanes(xa), Fe8::from_lanes(xb));
        let mut out: Vec<[[u64; 5]; 8]> = [
            a.add(&b),
            a.sub(&b),
            a.mul(&b),
            a.square(),
            a.mul_small(121_665),
            exponent::invert(&a),
            a.neg(),
            a.mul_unreduced(&b).sub(&a.square_unreduced()),
            a.mul_unreduced(&b).add(&a.square_unreduced()),
            a.square().unreduced().add(&b.mul_small_unreduced(121_665)),
        ]
        .iter()
        .map(|r| r.canonical().to_lanes())
        .collect();
        let [squares] = exponent::is_nonzero_square(&[a]);
        let mut mask = [[0u64; 5]; 8];
        for (j, lane) in mask.iter_mut().enumerate() {
            lane[0] = u64::from(squares >> j & 1);
        }
        out.push(mask);
        out
    }
}
