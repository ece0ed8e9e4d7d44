//! The X25519 fast mode of seed 001 Sec. 7.5: the cwPRF `F_k(u) = X25519(k, u)` on
//! Montgomery u-coordinates of Curve25519.
//!
//! Why it is a cwPRF. `X25519(k, u)` is the u-coordinate of `[clamp(k)]P` for either
//! point `P = (u, ±v)`; the u-coordinate does not depend on the sign, and scalar
//! multiplications commute, so `X25519(k1, X25519(k2, u)) = X25519(k2, X25519(k1, u))`.
//! Clamping makes every key a multiple of the cofactor 8, so outputs lie in the
//! prime-order subgroup (order `l`, about 2^252), where `u -> X25519(k, u)` for a random
//! key is the DDH weak PRF of seed 001 Sec. 4.2 written in x-only form. It is not a
//! permutation of that group with a computable inverse (clamped keys are not uniform
//! mod `l`), so this mode serves the cwPRF mqRPMT (Fig. 3) and not the permuted OPRF.
//!
//! Hashing. The paper hashes straight to 32 bytes, since every string is the
//! u-coordinate of a point on the curve *or on its quadratic twist*. We do not: the
//! curve/twist bit of `H(x)` is preserved by `F_k` (a twist point stays on the twist),
//! so the peer would learn one bit of a public function of each of our items. Instead
//! `H` is RFC 9380 `hash_to_curve` with Elligator 2 (suite
//! `edwards25519_XMD:SHA-512_ELL2_RO_`, curve25519-dalek's implementation, constant
//! time), whose output is a uniform point of the prime-order subgroup; we keep its
//! Montgomery u-coordinate.
//!
//! Received elements must be canonical (`u < p`), on the curve (not the twist: checked
//! with a Legendre symbol on public data), and not of small order; anything else is
//! rejected with a [`GroupError`].
//!
//! The scalar multiplication is aws-lc's X25519 (x-only Montgomery ladder, constant
//! time), the fastest measured on these machines (DEPENDENCIES.md).

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey};
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::montgomery::MontgomeryPoint;
use rayon::prelude::*;
use rug::Integer;
use sha2_011::Sha512;
use zeroize::{Zeroize, ZeroizeOnDrop};

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

fn field_prime() -> Integer {
    (Integer::from(1) << 255u32) - 19u32
}

/// `u^3 + A u^2 + u mod p` is a non-zero square: `u` is the u-coordinate of a point on
/// the curve (not the twist) other than (0, 0).
fn on_curve(u: &Integer, p: &Integer) -> bool {
    let u2 = Integer::from(u * u) % p;
    let rhs = (Integer::from(&u2 * u) + Integer::from(&u2 * 486_662u32) + u) % p;
    rhs != 0 && rhs.legendre(p) == 1
}

fn to_integer(le: &[u8; 32]) -> Integer {
    Integer::from_digits(le, rug::integer::Order::Lsf)
}

/// Checks a received u-coordinate: canonical and on the curve.
fn check_element(bytes: &[u8], p: &Integer) -> Result<(), GroupError> {
    let le: [u8; 32] = bytes
        .try_into()
        .map_err(|_| GroupError::NonCanonical { index: 0 })?;
    let u = to_integer(&le);
    if u >= *p || !on_curve(&u, p) {
        return Err(GroupError::NonCanonical { index: 0 });
    }
    Ok(())
}

impl X25519 {
    /// `H(msg)`: the u-coordinates of RFC 9380 `hash_to_curve` for a chunk of items
    /// (one batched inversion for the conversion to Montgomery form).
    fn hash_to_u_batch<I: AsRef<[u8]>>(dst: &[u8], items: &[I]) -> Vec<MontgomeryPoint> {
        let points: Vec<EdwardsPoint> = items
            .iter()
            .map(|item| EdwardsPoint::hash_to_curve::<Sha512>(&[item.as_ref()], &[dst]))
            .collect();
        EdwardsPoint::to_montgomery_batch(&points)
    }

    fn private_key(key: &X25519Key) -> PrivateKey {
        PrivateKey::from_private_key(&agreement::X25519, &key.0)
            .expect("any 32 bytes are an X25519 private key")
    }

    /// `X25519(k, u)`; fails if the result is the identity (u of small order).
    fn eval_one(private: &PrivateKey, u: &[u8], out: &mut [u8]) -> Result<(), GroupError> {
        let peer = UnparsedPublicKey::new(&agreement::X25519, u);
        agreement::agree(private, peer, GroupError::Identity { index: 0 }, |secret| {
            out.copy_from_slice(secret);
            Ok(())
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

    fn invert_key(_key: &X25519Key) -> Option<X25519Key> {
        None
    }

    fn compose_keys(_a: &X25519Key, _b: &X25519Key) -> Option<X25519Key> {
        None
    }

    fn hash_eval_batch<I: AsRef<[u8]> + Sync>(dst: &[u8], items: &[I], key: &X25519Key) -> Vec<u8> {
        let mut out = vec![0u8; items.len() * ELEMENT_LEN];
        out.par_chunks_mut(ELEMENT_LEN * BATCH_CHUNK)
            .zip(items.par_chunks(BATCH_CHUNK))
            .for_each(|(out, items)| {
                let private = Self::private_key(key);
                let hashed = Self::hash_to_u_batch(dst, items);
                for (o, u) in out.chunks_exact_mut(ELEMENT_LEN).zip(&hashed) {
                    Self::eval_one(&private, u.as_bytes(), o)
                        .expect("a hashed point is on the curve and of large order");
                }
            });
        out
    }

    fn eval_batch(packed: &[u8], key: &X25519Key) -> Result<Vec<u8>, GroupError> {
        if !packed.len().is_multiple_of(ELEMENT_LEN) {
            return Err(GroupError::BadLength {
                len: packed.len(),
                element_len: ELEMENT_LEN,
            });
        }
        let p = field_prime();
        let mut out = vec![0u8; packed.len()];
        let step = ELEMENT_LEN * BATCH_CHUNK;
        out.par_chunks_mut(step)
            .zip(packed.par_chunks(step))
            .enumerate()
            .try_for_each(|(chunk, (out, input))| {
                let private = Self::private_key(key);
                for (i, (o, u)) in out
                    .chunks_exact_mut(ELEMENT_LEN)
                    .zip(input.chunks_exact(ELEMENT_LEN))
                    .enumerate()
                {
                    let index = chunk * BATCH_CHUNK + i;
                    check_element(u, &p).map_err(|e| e.at(index))?;
                    Self::eval_one(&private, u, o).map_err(|e| e.at(index))?;
                }
                Ok(())
            })?;
        Ok(out)
    }

    fn validate_batch(packed: &[u8]) -> Result<(), GroupError> {
        if !packed.len().is_multiple_of(ELEMENT_LEN) {
            return Err(GroupError::BadLength {
                len: packed.len(),
                element_len: ELEMENT_LEN,
            });
        }
        let p = field_prime();
        packed
            .par_chunks(ELEMENT_LEN)
            .enumerate()
            .try_for_each(|(i, u)| check_element(u, &p).map_err(|e| e.at(i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commutes_and_differs_per_key() {
        let mut rng = SessionRng::from_seed([7; 32]);
        let k1 = X25519::random_key(&mut rng);
        let k2 = X25519::random_key(&mut rng);
        let items: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let a = X25519::hash_eval_batch(b"dst", &items, &k1);
        let b = X25519::hash_eval_batch(b"dst", &items, &k2);
        assert_ne!(a, b);
        let ab = X25519::eval_batch(&a, &k2).unwrap();
        let ba = X25519::eval_batch(&b, &k1).unwrap();
        assert_eq!(ab, ba);
        X25519::validate_batch(&ab).unwrap();
    }

    #[test]
    fn rejects_twist_non_canonical_and_small_order() {
        let p = field_prime();
        let mut rng = SessionRng::from_seed([8; 32]);
        let k = X25519::random_key(&mut rng);
        // u = 0 (small order), u = p (non-canonical), u = 2^255 - 1 (top bit).
        let mut zero = [0u8; 32];
        assert!(X25519::eval_batch(&zero, &k).is_err());
        let p_bytes = p.to_digits::<u8>(rug::integer::Order::Lsf);
        zero[..p_bytes.len()].copy_from_slice(&p_bytes);
        assert!(X25519::eval_batch(&zero, &k).is_err());
        assert!(X25519::eval_batch(&[0xff; 32], &k).is_err());
        // Find a twist point: some small u whose right-hand side is a non-square.
        let twist = (2u32..)
            .find(|&u| !on_curve(&Integer::from(u), &p))
            .unwrap();
        let mut t = [0u8; 32];
        t[..4].copy_from_slice(&twist.to_le_bytes());
        assert_eq!(
            X25519::eval_batch(&[[0u8; 32], t].concat()[32..], &k),
            Err(GroupError::NonCanonical { index: 0 })
        );
        assert!(X25519::eval_batch(&[1u8; 31], &k).is_err());
    }
}
