//! Arithmetic in GF(2^128), the field silent VOLE and the VOLE-based OPRF work in
//! (Raghuraman, Rindal, "Blazing Fast PSI from Improved OKVS and Subfield VOLE", CCS 2022).
//!
//! An element is a `u128` whose bit `i` is the coefficient of `x^i`, in the polynomial
//! basis modulo `x^128 + x^7 + x^2 + x + 1` (the GCM polynomial, without GCM's bit
//! reflection). Addition is xor. A product is a 256-bit carry-less product, by the
//! PCLMULQDQ instruction when [`crate::cpu::gf128_clmul`] allows, by shifts otherwise,
//! then reduced with `x^128 = x^7 + x^2 + x + 1`. Both paths give the same bits.
//!
//! Only the VOLE correlation's *consistency* needs a true field product: the correlated
//! OTs give the sender `y·Δ` as `Σ_k x^k·(y_k·Δ)`, and every later product (the OPRF's
//! `Δ·H(x)`, the sender's `Δ·A`) must be the same bilinear map.

/// `x`, the generator the base VOLE's bit decomposition uses (`y = Σ_k y_k·x^k`).
pub const X: u128 = 2;

/// `a·b` in GF(2^128).
#[inline]
pub fn mul(a: u128, b: u128) -> u128 {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::gf128_clmul() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has PCLMULQDQ (checked just above).
        return unsafe { clmul::mul(a, b) };
    }
    portable_mul(a, b)
}

/// `out[i] ^= xs[i]·k` for every `i`: the sender's `K = B + A·Δ` and the OPRF's
/// `Δ·H(x)` in bulk, with the CPU check done once.
///
/// # Panics
/// If the slices differ in length.
pub fn add_mul_scalar(out: &mut [u128], xs: &[u128], k: u128) {
    assert_eq!(out.len(), xs.len(), "add_mul_scalar: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::gf128_clmul() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has PCLMULQDQ (checked just above).
        unsafe {
            clmul::add_mul_scalar(out, xs, k)
        };
        return;
    }
    for (o, &x) in out.iter_mut().zip(xs) {
        *o ^= portable_mul(x, k);
    }
}

/// `x^k` for `k < 128`.
pub fn x_pow(k: usize) -> u128 {
    debug_assert!(k < 128);
    1u128 << k
}

/// The 256-bit product of two polynomials, as (low, high) halves, by shifts.
fn portable_product(a: u128, b: u128) -> (u128, u128) {
    let (mut lo, mut hi) = (0u128, 0u128);
    for i in 0..128 {
        // Branch-free: the product's timing does not depend on its operands.
        let mask = 0u128.wrapping_sub((b >> i) & 1);
        lo ^= (a << i) & mask;
        if i > 0 {
            hi ^= (a >> (128 - i)) & mask;
        }
    }
    (lo, hi)
}

fn portable_mul(a: u128, b: u128) -> u128 {
    let (lo, hi) = portable_product(a, b);
    reduce(lo, hi)
}

/// `hi·x^128 + lo` modulo `x^128 + x^7 + x^2 + x + 1`. `hi·(x^7 + x^2 + x + 1)` spills at
/// most 7 bits past `x^127`; they are folded in once more, which cannot spill again.
#[inline(always)]
fn reduce(lo: u128, hi: u128) -> u128 {
    let spill = (hi >> 127) ^ (hi >> 126) ^ (hi >> 121);
    let folded = lo ^ hi ^ (hi << 1) ^ (hi << 2) ^ (hi << 7);
    folded ^ spill ^ (spill << 1) ^ (spill << 2) ^ (spill << 7)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod clmul {
    use std::arch::x86_64::{__m128i, _mm_clmulepi64_si128, _mm_set_epi64x, _mm_xor_si128};

    #[inline(always)]
    fn to_m128(x: u128) -> __m128i {
        // SAFETY: plain integer to vector conversion; SSE2 is part of x86-64.
        unsafe { _mm_set_epi64x((x >> 64) as u64 as i64, x as u64 as i64) }
    }

    #[inline(always)]
    fn from_m128(x: __m128i) -> u128 {
        // SAFETY: same size, every bit pattern valid for both.
        unsafe { std::mem::transmute::<__m128i, u128>(x) }
    }

    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    pub(super) unsafe fn mul(a: u128, b: u128) -> u128 {
        let (a, b) = (to_m128(a), to_m128(b));
        let lo = _mm_clmulepi64_si128::<0x00>(a, b);
        let hi = _mm_clmulepi64_si128::<0x11>(a, b);
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128::<0x10>(a, b),
            _mm_clmulepi64_si128::<0x01>(a, b),
        );
        let (lo, hi, mid) = (from_m128(lo), from_m128(hi), from_m128(mid));
        super::reduce(lo ^ (mid << 64), hi ^ (mid >> 64))
    }

    #[target_feature(enable = "pclmulqdq")]
    pub(super) unsafe fn add_mul_scalar(out: &mut [u128], xs: &[u128], k: u128) {
        for (o, &x) in out.iter_mut().zip(xs) {
            // SAFETY: this function's own target feature is the one `mul` needs.
            *o ^= unsafe { mul(x, k) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SessionRng;

    fn random(rng: &mut SessionRng) -> u128 {
        let mut b = [0u8; 16];
        rng.fill(&mut b);
        u128::from_le_bytes(b)
    }

    #[test]
    fn the_two_paths_agree() {
        let mut rng = SessionRng::from_seed([3; 32]);
        for _ in 0..2000 {
            let (a, b) = (random(&mut rng), random(&mut rng));
            assert_eq!(mul(a, b), portable_mul(a, b));
        }
        assert_eq!(
            mul(u128::MAX, u128::MAX),
            portable_mul(u128::MAX, u128::MAX)
        );
    }

    #[test]
    fn field_laws_hold() {
        let mut rng = SessionRng::from_seed([4; 32]);
        for _ in 0..500 {
            let (a, b, c) = (random(&mut rng), random(&mut rng), random(&mut rng));
            assert_eq!(mul(a, b), mul(b, a));
            assert_eq!(mul(mul(a, b), c), mul(a, mul(b, c)));
            assert_eq!(mul(a, b ^ c), mul(a, b) ^ mul(a, c));
            assert_eq!(mul(a, 1), a);
            assert_eq!(mul(a, 0), 0);
        }
    }

    #[test]
    fn x_to_the_128_is_the_reduction_polynomial() {
        // x^127 · x = x^128 = x^7 + x^2 + x + 1.
        assert_eq!(mul(x_pow(127), X), 0x87);
        assert_eq!(mul(x_pow(64), x_pow(64)), 0x87);
        // x^127 · x^127 = x^254 = x^126 · (x^7 + x^2 + x + 1)
        //               = x^133 + x^128 + x^127 + x^126, folded once more.
        let x133 = mul(x_pow(5), 0x87);
        assert_eq!(
            mul(x_pow(127), x_pow(127)),
            x133 ^ 0x87 ^ x_pow(127) ^ x_pow(126)
        );
    }

    #[test]
    fn every_nonzero_element_has_an_inverse() {
        // a^(2^128 - 2) = a^-1 (Fermat), by square-and-multiply.
        let mut rng = SessionRng::from_seed([5; 32]);
        for _ in 0..4 {
            let a = random(&mut rng) | 1;
            let (mut power, mut base) = (1u128, a);
            let e = u128::MAX - 1;
            for i in 0..128 {
                if (e >> i) & 1 == 1 {
                    power = mul(power, base);
                }
                base = mul(base, base);
            }
            assert_eq!(mul(power, a), 1);
        }
    }

    #[test]
    fn bulk_matches_one_by_one() {
        let mut rng = SessionRng::from_seed([6; 32]);
        let k = random(&mut rng);
        let xs: Vec<u128> = (0..100).map(|_| random(&mut rng)).collect();
        let mut out: Vec<u128> = (0..100).map(|_| random(&mut rng)).collect();
        let expected: Vec<u128> = out.iter().zip(&xs).map(|(o, &x)| o ^ mul(x, k)).collect();
        add_mul_scalar(&mut out, &xs, k);
        assert_eq!(out, expected);
    }
}
