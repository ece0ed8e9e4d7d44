//! The portable backend, one element at a time: aws-lc's X25519 (constant-time
//! Montgomery ladder), curve25519-dalek's RFC 9380 `hash_to_curve` (edwards25519
//! suite, constant time) and a Legendre symbol from GMP (rug) on received, public
//! elements. Used where AVX-512 IFMA is missing, and as the reference in tests.

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey};
use curve25519_dalek::edwards::EdwardsPoint;
use rug::Integer;
use sha2_011::Sha512;

use super::X25519Key;
use crate::group::GroupError;

fn field_prime() -> Integer {
    (Integer::from(1) << 255u32) - 19u32
}

/// `u^3 + A u^2 + u mod p` is a non-zero square: `u` is the u-coordinate of a point on
/// the curve (not the twist) other than (0, 0).
pub(super) fn on_curve(u: &Integer, p: &Integer) -> bool {
    let u2 = Integer::from(u * u) % p;
    let rhs = (Integer::from(&u2 * u) + Integer::from(&u2 * 486_662u32) + u) % p;
    rhs != 0 && rhs.legendre(p) == 1
}

/// Checks a received u-coordinate: canonical and on the curve.
fn check_element(bytes: &[u8], p: &Integer) -> Result<(), GroupError> {
    let le: [u8; 32] = bytes
        .try_into()
        .map_err(|_| GroupError::NonCanonical { index: 0 })?;
    let u = Integer::from_digits(&le, rug::integer::Order::Lsf);
    if u >= *p || !on_curve(&u, p) {
        return Err(GroupError::NonCanonical { index: 0 });
    }
    Ok(())
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

/// `F_k(H(item))` for every item of a chunk (one batched inversion for the conversion
/// of the hashed points to Montgomery form).
pub(super) fn hash_eval<I: AsRef<[u8]>>(key: &X25519Key, dst: &[u8], items: &[I], out: &mut [u8]) {
    let private = private_key(key);
    let points: Vec<EdwardsPoint> = items
        .iter()
        .map(|item| EdwardsPoint::hash_to_curve::<Sha512>(&[item.as_ref()], &[dst]))
        .collect();
    let hashed = EdwardsPoint::to_montgomery_batch(&points);
    for (o, u) in out.chunks_exact_mut(32).zip(&hashed) {
        eval_one(&private, u.as_bytes(), o)
            .expect("a hashed point is on the curve and of large order");
    }
}

/// `F_k(u)` for every received u of a chunk, failing on the first invalid one (index
/// relative to the chunk).
pub(super) fn eval(key: &X25519Key, packed: &[u8], out: &mut [u8]) -> Result<(), GroupError> {
    let p = field_prime();
    let private = private_key(key);
    for (index, (o, u)) in out
        .chunks_exact_mut(32)
        .zip(packed.chunks_exact(32))
        .enumerate()
    {
        check_element(u, &p).map_err(|e| e.at(index))?;
        eval_one(&private, u, o).map_err(|e| e.at(index))?;
    }
    Ok(())
}

/// Checks every packed element of a chunk (index relative to the chunk).
pub(super) fn validate(packed: &[u8]) -> Result<(), GroupError> {
    let p = field_prime();
    for (index, u) in packed.chunks_exact(32).enumerate() {
        check_element(u, &p).map_err(|e| e.at(index))?;
    }
    Ok(())
}

/// RFC 7748 `X25519(k, u)` through aws-lc, the reference the tests compare the lanes
/// with; `None` for a small-order u (aws-lc refuses an all-zero result).
#[cfg(all(test, target_arch = "x86_64"))]
pub(super) fn x25519(key: &[u8; 32], u: &[u8; 32]) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    eval_one(&private_key(&X25519Key(*key)), u, &mut out).ok()?;
    Some(out)
}
