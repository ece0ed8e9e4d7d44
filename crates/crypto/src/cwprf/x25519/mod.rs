//! The X25519 fast mode of Chen et al. 2024, Sec. 7.5: the cwPRF `F_k(u) = X25519(k, u)` on
//! Montgomery u-coordinates of Curve25519.
//!
//! Why it is a cwPRF. `X25519(k, u)` is the u-coordinate of `[clamp(k)]P` for either
//! point `P = (u, ±v)`; the u-coordinate does not depend on the sign, and scalar
//! multiplications commute, so `X25519(k1, X25519(k2, u)) = X25519(k2, X25519(k1, u))`.
//! Clamping makes every key a multiple of the cofactor 8, so outputs lie in the
//! prime-order subgroup (order `l`, about 2^252), where `u -> X25519(k, u)` for a random
//! key is the DDH weak PRF of Chen et al. 2024, Sec. 4.2 written in x-only form.
//!
//! Inverse keys. On that subgroup a clamped key `k` acts as `k mod l`, so `F_k` is a
//! permutation there, inverted by `k^-1 mod l`; but that inverse is a key only when some
//! clamped scalar (a multiple of 8 in `[2^254, 2^255)`) is congruent to it, which holds
//! for about half of all keys. [`CwPrf::unblinding_key`] finds the clamped scalar for
//! `key / blind` when there is one ([`clamped_key_for`]), and [`CwPrf::invert_key`] the
//! one for `1 / blind`; private-ID and unbalanced PSI's OPRF client draw blinds until
//! there is, which conditions the blind on an event of probability about 1/2 (at most
//! one bit of its 251). The permuted OPRF, which inverts fixed keys, stays on
//! prime-order groups.
//!
//! Hashing. The paper hashes straight to 32 bytes, since every string is the
//! u-coordinate of a point on the curve *or on its quadratic twist*. We do not: the
//! curve/twist bit of `H(x)` is preserved by `F_k` (a twist point stays on the twist),
//! so the peer would learn one bit of a public function of each of our items. Instead
//! `H` is RFC 9380 `hash_to_curve` with Elligator 2 (suite
//! `edwards25519_XMD:SHA-512_ELL2_RO_`, constant time), whose output is a uniform point
//! of the prime-order subgroup; we keep its Montgomery u-coordinate.
//!
//! Received elements must be canonical (`u < p`), on the curve (not the twist: checked
//! with a Legendre symbol on public data), and not of small order; anything else is
//! rejected with a [`GroupError`].
//!
//! Two backends compute the same bytes, chosen once per batch call at run time
//! (`crate::cpu`: a portable x86-64-v2 build still gets the IFMA code on a CPU that has
//! it; `PRIVSET_PORTABLE=1` forces the scalar one):
//! * [`ifma`] (x86-64 with AVX-512 F/VL/IFMA): eight elements at once in radix 2^52, a
//!   Montgomery ladder shared by the eight lanes, the Elligator 2 map and the Legendre
//!   symbol in lanes, and one batched inversion per chunk and phase.
//! * [`scalar`] (any CPU): aws-lc's X25519, curve25519-dalek's `hash_to_curve`, GMP's
//!   Legendre symbol, one element at a time.
//!
//! Both are constant time in the key and in the hashed items.

// Target-feature functions can only be called in `unsafe` blocks (after detection).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod ifma;
mod scalar;
#[cfg(test)]
mod tests;

use curve25519_dalek::Scalar;
use rayon::prelude::*;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use super::{CwPrf, CwPrfId};
use crate::group::{BATCH_CHUNK, GroupError};
use crate::rng::SessionRng;

/// Bytes of one u-coordinate.
pub const ELEMENT_LEN: usize = 32;
/// Suite name folded into domain-separation tags.
pub const SUITE: &str = "edwards25519_XMD:SHA-512_ELL2_RO_";

/// Curve25519 (Montgomery form) in the X25519 fast mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct X25519;

/// An X25519 private key (32 random bytes; clamped by the function itself).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct X25519Key([u8; 32]);

impl X25519Key {
    /// The scalar this key multiplies by (RFC 7748 clamping), reduced mod `l`: how it
    /// acts on the prime-order subgroup.
    fn clamped_scalar(&self) -> Scalar {
        let mut bytes = Zeroizing::new(self.0);
        bytes[0] &= 248;
        bytes[31] &= 127;
        bytes[31] |= 64;
        Scalar::from_bytes_mod_order(*bytes)
    }
}

/// The key whose clamped scalar acts as `s` on the prime-order subgroup, if there is
/// one. A clamped scalar is `8 t` with `2^251 <= t < 2^252`; it acts as `s` exactly when
/// `t = s / 8 mod l` (there is one `t` below `l`, and `l < 2^253` leaves no other in
/// range), so the key exists when that `t` has bit 251 as its highest bit. The result is
/// already clamped, which the X25519 function then leaves unchanged.
fn clamped_key_for(s: &Scalar) -> Option<X25519Key> {
    let t = Zeroizing::new(s * Scalar::from(8u64).invert());
    let t = Zeroizing::new(t.to_bytes());
    if t[31] >> 3 != 1 {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, byte) in k.iter_mut().enumerate() {
        let low = if i == 0 { 0 } else { t[i - 1] >> 5 };
        *byte = (t[i] << 3) | low;
    }
    Some(X25519Key(k))
}

/// Which implementation computes a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Scalar,
    /// Only constructed after [`crate::cpu::x25519_ifma`] returned true.
    #[cfg(target_arch = "x86_64")]
    Ifma,
}

// The `unsafe` blocks call the IFMA backend, only when `Backend::Ifma` was detected.
#[allow(unsafe_code)]
impl Backend {
    /// The IFMA backend when the CPU has it and the portable path is not forced
    /// (`crate::cpu`); the scalar backend otherwise.
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::x25519_ifma() {
            return Backend::Ifma;
        }
        Backend::Scalar
    }

    fn hash_eval_chunk<I: AsRef<[u8]>>(
        self,
        dst: &[u8],
        items: &[I],
        key: &X25519Key,
        out: &mut [u8],
    ) {
        match self {
            Backend::Scalar => scalar::hash_eval(key, dst, items, out),
            #[cfg(target_arch = "x86_64")]
            Backend::Ifma => {
                let k = ifma::ClampedScalar::new(&key.0);
                // SAFETY: `Ifma` is only chosen when the CPU has the features.
                unsafe { ifma::hash_eval(&k, dst, items, out) }
            }
        }
    }

    fn eval_chunk(self, packed: &[u8], key: &X25519Key, out: &mut [u8]) -> Result<(), GroupError> {
        match self {
            Backend::Scalar => scalar::eval(key, packed, out),
            #[cfg(target_arch = "x86_64")]
            Backend::Ifma => {
                let k = ifma::ClampedScalar::new(&key.0);
                // SAFETY: as above.
                unsafe { ifma::eval(&k, packed, out) }
            }
        }
    }

    fn validate_chunk(self, packed: &[u8]) -> Result<(), GroupError> {
        match self {
            Backend::Scalar => scalar::validate(packed),
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Backend::Ifma => unsafe { ifma::validate(packed) },
        }
    }
}

/// A chunk-relative error moved to its place in the whole batch.
fn offset(err: GroupError, base: usize) -> GroupError {
    match err {
        GroupError::NonCanonical { index } | GroupError::Identity { index } => err.at(base + index),
        other => other,
    }
}

fn check_length(packed: &[u8]) -> Result<(), GroupError> {
    if packed.len().is_multiple_of(ELEMENT_LEN) {
        Ok(())
    } else {
        Err(GroupError::BadLength {
            len: packed.len(),
            element_len: ELEMENT_LEN,
        })
    }
}

impl X25519 {
    fn hash_eval_with<I: AsRef<[u8]> + Sync>(
        backend: Backend,
        dst: &[u8],
        items: &[I],
        key: &X25519Key,
    ) -> Vec<u8> {
        let mut out = vec![0u8; items.len() * ELEMENT_LEN];
        out.par_chunks_mut(ELEMENT_LEN * BATCH_CHUNK)
            .zip(items.par_chunks(BATCH_CHUNK))
            .for_each(|(out, items)| backend.hash_eval_chunk(dst, items, key, out));
        out
    }

    fn eval_with(backend: Backend, packed: &[u8], key: &X25519Key) -> Result<Vec<u8>, GroupError> {
        check_length(packed)?;
        let mut out = vec![0u8; packed.len()];
        let step = ELEMENT_LEN * BATCH_CHUNK;
        out.par_chunks_mut(step)
            .zip(packed.par_chunks(step))
            .enumerate()
            .try_for_each(|(chunk, (out, input))| {
                backend
                    .eval_chunk(input, key, out)
                    .map_err(|e| offset(e, chunk * BATCH_CHUNK))
            })?;
        Ok(out)
    }

    fn validate_with(backend: Backend, packed: &[u8]) -> Result<(), GroupError> {
        check_length(packed)?;
        packed
            .par_chunks(ELEMENT_LEN * BATCH_CHUNK)
            .enumerate()
            .try_for_each(|(chunk, input)| {
                backend
                    .validate_chunk(input)
                    .map_err(|e| offset(e, chunk * BATCH_CHUNK))
            })
    }
}

impl CwPrf for X25519 {
    const ID: CwPrfId = CwPrfId::X25519;
    const ELEMENT_LEN: usize = ELEMENT_LEN;
    type Key = X25519Key;

    fn random_key(rng: &mut SessionRng) -> X25519Key {
        let mut k = [0u8; 32];
        rng.fill(&mut k);
        X25519Key(k)
    }

    fn invert_key(key: &X25519Key) -> Option<X25519Key> {
        let acting = Zeroizing::new(key.clamped_scalar().invert());
        clamped_key_for(&acting)
    }

    fn unblinding_key(blind: &X25519Key, key: &X25519Key) -> Option<X25519Key> {
        let blind = Zeroizing::new(blind.clamped_scalar());
        let acting = Zeroizing::new(key.clamped_scalar() * blind.invert());
        clamped_key_for(&acting)
    }

    fn hash_eval_batch<I: AsRef<[u8]> + Sync>(dst: &[u8], items: &[I], key: &X25519Key) -> Vec<u8> {
        Self::hash_eval_with(Backend::detect(), dst, items, key)
    }

    fn eval_batch(packed: &[u8], key: &X25519Key) -> Result<Vec<u8>, GroupError> {
        Self::eval_with(Backend::detect(), packed, key)
    }

    fn validate_batch(packed: &[u8]) -> Result<(), GroupError> {
        Self::validate_with(Backend::detect(), packed)
    }
}
