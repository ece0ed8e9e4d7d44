//! Helpers for the lane tests: big-integer conversions and the CPU check.

use rug::Integer;

pub(crate) fn field_prime() -> Integer {
    (Integer::from(1) << 255u32) - 19u32
}

pub(crate) fn to_integer(limbs: &[u64; 5]) -> Integer {
    limbs
        .iter()
        .rev()
        .fold(Integer::new(), |acc, &l| (acc << 52u32) + l)
}

/// Radix-2^52 limbs of a value below 2^256.
pub(crate) fn from_integer(x: &Integer) -> [u64; 5] {
    let mut limbs = [0u64; 5];
    for (i, limb) in limbs.iter_mut().enumerate() {
        *limb = Integer::from(x >> (52 * i as u32)).to_u64_wrapping() & ((1 << 52) - 1);
    }
    limbs
}

/// False (and a note) on a CPU without the features, where these tests cannot run.
pub(crate) fn ifma_or_skip() -> bool {
    let ok = crate::cpu::has_avx512_ifma();
    if !ok {
        eprintln!("skipped: this CPU has no AVX-512 IFMA");
    }
    ok
}
