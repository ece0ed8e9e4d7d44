//! Which code each fast path runs on this CPU, chosen at run time.
//!
//! privset is built for x86-64-v2 (`.cargo/config.toml`), so one binary or wheel runs on
//! any x86-64 machine of the last fifteen years, and picks its fastest code when it
//! starts:
//! * privset's own AVX-512 IFMA code (the X25519 cwPRF in eight lanes, its SHA-512 in
//!   eight lanes, `cwprf::x25519::ifma`) is made of `#[target_feature]` functions, called
//!   only when [`x25519_ifma`] says the CPU has AVX-512 F, VL and IFMA;
//! * privset's Montgomery arithmetic for Paillier / Damgard-Jurik (`bignum`: eight
//!   independent products or powers at once, 52-bit limbs), when [`bignum_ifma`] says
//!   so; GMP otherwise;
//! * privset's ristretto255 fixed-base products for exponential ElGamal's bulk
//!   encryptions (`curve25519x8`: eight products at once, with RFC 9496's encoding in
//!   lanes), when [`ristretto_ifma`] says so; curve25519-dalek's tables otherwise;
//! * the polynomial arithmetic over Z_t (`bfv::zt`, the unbalanced PSI database's
//!   quadratic loops) has an AVX2 copy, run when [`zt_avx2`] says the CPU has AVX2;
//! * curve25519-dalek is built with its `avx512` backend (`--cfg
//!   curve25519_dalek_backend="avx512"` in `.cargo/config.toml`), which compiles its IFMA
//!   and AVX2 code as target-feature functions and picks one when first used;
//! * blst (BLS12-381) is built `portable`, which keeps both its ADX and its plain
//!   assembly and picks by CPUID; GMP is built as a "fat" library (one code path per CPU
//!   family, chosen at start); aws-lc, ring and the RustCrypto hashes detect their own.
//!
//! [`force_portable`] (or `PRIVSET_PORTABLE=1` in the environment) makes privset's own
//! code take its portable path on any CPU, so tests and benchmarks can compare the two
//! on one machine. It does not reach into curve25519-dalek or blst, which decide alone.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that forces privset's portable paths (`1`).
pub const PORTABLE_ENV: &str = "PRIVSET_PORTABLE";

const UNSET: u8 = 0;
const FORCED: u8 = 1;
const FREE: u8 = 2;

/// [`force_portable`]'s setting; `UNSET` until called (the environment decides).
static OVERRIDE: AtomicU8 = AtomicU8::new(UNSET);

fn env_forces_portable() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    *ENV.get_or_init(|| std::env::var(PORTABLE_ENV).is_ok_and(|v| v == "1"))
}

/// Makes privset's own code take its portable path (`true`) or its fastest path for
/// this CPU (`false`) from the next batch on, whatever `PRIVSET_PORTABLE` says.
pub fn force_portable(on: bool) {
    OVERRIDE.store(if on { FORCED } else { FREE }, Ordering::Relaxed);
}

/// True when privset's portable paths are forced (by [`force_portable`] or the
/// environment).
pub fn portable_forced() -> bool {
    match OVERRIDE.load(Ordering::Relaxed) {
        FORCED => true,
        FREE => false,
        _ => env_forces_portable(),
    }
}

/// True when the CPU has AVX-512 F, VL and IFMA (the standard library caches CPUID).
pub fn has_avx512_ifma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512ifma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True when privset's X25519 cwPRF runs on its eight-lane AVX-512 IFMA code.
pub fn x25519_ifma() -> bool {
    has_avx512_ifma() && !portable_forced()
}

/// True when the Paillier / Damgard-Jurik products and powers (`bignum`) run eight at
/// a time on AVX-512 IFMA instead of one at a time on GMP.
pub fn bignum_ifma() -> bool {
    has_avx512_ifma() && !portable_forced()
}

/// True when exponential ElGamal's bulk fixed-base products (ristretto255) run eight at
/// a time on AVX-512 IFMA (`curve25519x8`) instead of one at a time in
/// curve25519-dalek.
pub fn ristretto_ifma() -> bool {
    has_avx512_ifma() && !portable_forced()
}

/// True when GF(2^128) products ([`crate::gf128`]) may use the carry-less multiply
/// instruction (PCLMULQDQ, in every x86-64 CPU since 2010).
pub fn gf128_clmul() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("pclmulqdq") && !portable_forced()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True when the polynomial arithmetic over Z_t ([`crate::bfv::zt`]) runs its AVX2
/// loops: the CPU has AVX2 and the portable path is not forced.
pub fn zt_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && !portable_forced()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// What curve25519-dalek runs on this CPU (ristretto255, Edwards hashing), following
/// its own run-time choice: IFMA when built with its `avx512` backend and the CPU has
/// it, else AVX2 when the CPU has it, else its portable 64-bit code.
pub fn dalek_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        // Built with the cfg (as .cargo/config.toml does), or with target features that
        // make dalek's build script pick the backend itself (target-cpu=native here).
        let built = cfg!(curve25519_dalek_backend = "avx512")
            || cfg!(all(
                target_feature = "avx512ifma",
                target_feature = "avx512vl"
            ));
        if built && has_avx512_ifma() {
            return "AVX-512 IFMA";
        }
        if is_x86_feature_detected!("avx2") {
            return "AVX2";
        }
    }
    "portable (64-bit serial)"
}

/// What blst runs on this CPU (BLS12-381: APSI's pairings).
pub fn blst_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("adx") && is_x86_feature_detected!("bmi2") {
        return "ADX assembly";
    }
    "plain assembly (no ADX)"
}

/// What the server's plaintext NTT (`bfv::ntt`, tfhe-ntt's kernels chosen at run time)
/// runs on this CPU.
pub fn bfv_ntt_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        return "tfhe-ntt, AVX2";
    }
    "tfhe-ntt, scalar"
}

/// The code paths this CPU gets, one per line, for `privset --version` and Python's
/// `privset.code_paths()`.
pub fn report() -> String {
    let x25519 = if x25519_ifma() {
        "AVX-512 IFMA, 8 lanes (privset)"
    } else if has_avx512_ifma() {
        "portable (aws-lc X25519), forced by PRIVSET_PORTABLE / force_portable"
    } else {
        "portable (aws-lc X25519): this CPU has no AVX-512 IFMA"
    };
    let built = if cfg!(target_feature = "avx2") {
        "built for this CPU (target-cpu with AVX2): may not run on older CPUs"
    } else {
        "portable build (x86-64-v2), fast paths chosen at run time"
    };
    format!(
        "{built}\n\
         x25519 cwPRF and its SHA-512: {x25519}\n\
         ristretto255 / Edwards (curve25519-dalek): {}\n\
         BLS12-381 (blst): {}\n\
         polynomials over Z_t (unbalanced PSI database): {}\n\
         BFV plaintext NTT (unbalanced PSI server): {}\n\
         Paillier / Damgard-Jurik products and powers: {}\n\
         ElGamal bulk encryptions (ristretto255 fixed-base products): {}\n\
         GF(2^128) products (silent VOLE): {}\n\
         big integers (GMP): fat build, chosen at start",
        dalek_backend(),
        blst_backend(),
        if zt_avx2() {
            "AVX2"
        } else {
            "portable (SSE4.2)"
        },
        bfv_ntt_backend(),
        if bignum_ifma() {
            "AVX-512 IFMA, 8 lanes (privset)"
        } else {
            "GMP, one at a time"
        },
        if ristretto_ifma() {
            "AVX-512 IFMA, 8 lanes (privset)"
        } else {
            "curve25519-dalek tables, one at a time"
        },
        if gf128_clmul() {
            "carry-less multiply (PCLMULQDQ)"
        } else {
            "portable"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forcing_the_portable_path_turns_ifma_off_and_back() {
        force_portable(true);
        assert!(portable_forced() && !x25519_ifma());
        assert!(report().contains("portable (aws-lc X25519)"));
        force_portable(false);
        assert!(!portable_forced());
        assert_eq!(x25519_ifma(), has_avx512_ifma());
    }
}
