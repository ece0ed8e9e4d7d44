//! Many ciphertexts at once: encryption and encoding in bulk, and decryption shares of a
//! whole batch of ciphertexts under one proof.
//!
//! # One proof per batch
//!
//! The multi-party protocols ask every key holder for a decryption share of every one of
//! thousands to millions of ciphertexts. A Chaum-Pedersen proof per share (100 bytes,
//! three multiplications to verify) would cost more than the shares. Instead party `i`
//! proves all of them at once with the batched equality-of-discrete-logs argument (the
//! composite form used by, for example, RFC 9497's batched DLEQ proofs):
//!
//! * party `i` holds `w_i = λ_i x_i` and everybody knows `W_i = λ_i h_i = w_i G`, where
//!   `λ_i` is party `i`'s Lagrange coefficient at zero over **all** parties `1..=n`, so
//!   that `Σ_i w_i = x` for any threshold `t ≤ n`;
//! * its batch for ciphertexts `(c1_k, c2_k)` is `D_k = w_i c1_k` for every `k`, then a
//!   proof: the coefficients `ρ_k` (128 bits each) are hashed from the key, the party,
//!   every `c1_k`'s encoding and every `D_k`'s; with `A = Σ ρ_k c1_k` and `D = Σ ρ_k D_k` the party
//!   proves `log_G W_i = log_A D` (Chaum-Pedersen, Fiat-Shamir over SHA-512);
//! * a verifier recomputes `A` and `D` with two multi-scalar multiplications. If any
//!   `D_k ≠ w_i c1_k`, the composite relation holds for at most one value of the
//!   corresponding `ρ_k` given the others, so a cheating batch passes with probability
//!   about `2^-128`.
//!
//! The plaintext of `(c1_k, c2_k)` is zero iff `c2_k = Σ_i D_{i,k}`: combining is point
//! additions only. The catch: it takes the batch of every party, not any `t` of them.
//!
//! # Encoding in bulk
//!
//! Encryption, re-randomisation and decoding in bulk are [`crate::ahe::elgamal::bulk`]'s.
//! The ciphertexts to decrypt stay the encodings they arrived in ([`super::tested`]).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::VartimeMultiscalarMul;
use rayon::prelude::*;
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::tested::Tested;
use super::{Ciphertext, KeyShare, PublicKey};
use crate::ahe::elgamal::bulk;
use crate::ahe::elgamal::random_nonzero_scalar;
use crate::rng::SessionRng;
use crate::tahe::{TaheError, invalid};

/// Bytes of a batch of `count` shares: `D_1 ‖ … ‖ D_count ‖ e ‖ z`.
pub(super) fn batch_len(count: usize) -> usize {
    32 * count + 64
}

/// Fresh encryptions of `ms`, encoded ([`bulk::encrypt_encoded`]).
pub(super) fn encrypt_encoded(pk: &PublicKey, ms: &[Scalar], rng: &mut SessionRng) -> Vec<u8> {
    bulk::encrypt_encoded(&pk.table, ms, rng)
}

/// `ReRand(k c)` for a fresh random unit `k` per ciphertext ([`bulk::randomize_encoded`]).
pub(super) fn randomize_encoded(
    pk: &PublicKey,
    cts: &[Ciphertext],
    rng: &mut SessionRng,
) -> Vec<u8> {
    bulk::randomize_encoded(&pk.table, cts, rng)
}

/// Decodes back-to-back ciphertexts in parallel.
pub(super) fn decode_many(bytes: &[u8]) -> Result<Vec<Ciphertext>, TaheError> {
    bulk::decode_many(bytes).map_err(|e| invalid("ciphertexts", e.to_string()))
}

/// The coefficients `ρ_k` (below `2^128`) for the ciphertexts whose `c1_k`'s encodings
/// are `c1_encoded` and the shares `ds`: one SHA-512 of everything gives the seed
/// ([`expand`]).
pub(super) fn coefficients(pk: &PublicKey, party: u32, c1_encoded: &[u8], ds: &[u8]) -> Vec<u128> {
    let count = c1_encoded.len() / 32;
    let mut h = Sha512::new();
    h.update(b"privset/tahe/elgamal/batch/v2");
    h.update(pk.digest);
    h.update(party.to_be_bytes());
    h.update((count as u64).to_be_bytes());
    h.update(c1_encoded);
    h.update(ds);
    expand(&h.finalize(), count)
}

/// `count` coefficients below `2^128` from `seed`: each SHA-512 of the seed and a
/// counter gives four.
pub(super) fn expand(seed: &[u8], count: usize) -> Vec<u128> {
    let mut rho: Vec<u128> = (0..count.div_ceil(4) as u64)
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut h = Sha512::new();
            h.update(seed);
            h.update(k.to_be_bytes());
            let d = h.finalize();
            (0..4).map(move |j| {
                u128::from_le_bytes(d[16 * j..16 * (j + 1)].try_into().expect("16 bytes"))
            })
        })
        .collect();
    rho.truncate(count);
    rho
}

pub(super) fn challenge(
    pk: &PublicKey,
    party: u32,
    a_star: &RistrettoPoint,
    d_star: &RistrettoPoint,
    a: &RistrettoPoint,
    b: &RistrettoPoint,
) -> Scalar {
    let mut h = Sha512::new();
    h.update(b"privset/tahe/elgamal/batch-dleq/v1");
    h.update(pk.digest);
    h.update(party.to_be_bytes());
    for p in [a_star, d_star, a, b] {
        h.update(p.compress().as_bytes());
    }
    Scalar::from_bytes_mod_order_wide(&h.finalize().into())
}

/// A proof's `e ‖ z` (64 bytes), each a canonical scalar, or the reason it is not.
pub(super) fn proof_scalars(bytes: &[u8]) -> Result<(Scalar, Scalar), String> {
    let scalar = |b: &[u8]| -> Option<Scalar> {
        Option::from(Scalar::from_canonical_bytes(b.try_into().ok()?))
    };
    let e = scalar(&bytes[..32]).ok_or("e is not canonical")?;
    let z = scalar(&bytes[32..64]).ok_or("z is not canonical")?;
    Ok((e, z))
}

/// Checks `party`'s Chaum-Pedersen proof `(e, z)` that `log_G W_i = log_A D` for
/// `A = a_star`, `D = d_star`; the error is [`TaheError::BadShare`].
pub(super) fn check_proof(
    pk: &PublicKey,
    party: u32,
    a_star: &RistrettoPoint,
    d_star: &RistrettoPoint,
    (e, z): (Scalar, Scalar),
) -> Result<(), TaheError> {
    let weighted_key = pk.weighted[party as usize - 1];
    let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&-e, &weighted_key, &z);
    let b = RistrettoPoint::vartime_multiscalar_mul([z, -e], [*a_star, *d_star]);
    if challenge(pk, party, a_star, d_star, &a, &b) != e {
        return Err(TaheError::BadShare {
            party,
            reason: "the proof of correct decryption of the batch does not verify".into(),
        });
    }
    Ok(())
}

/// Party `ks.index`'s batch of weighted shares `D_k = w_i c1_k` with one proof.
pub(super) fn share_batch(ks: &KeyShare, tested: &Tested, rng: &mut SessionRng) -> Vec<u8> {
    let pk = &ks.pk;
    let mut w = pk.weight(ks.index) * ks.x;
    let mut out = tested.shares(&w).encoded;
    let rho = coefficients(pk, ks.index, &tested.c1_encoded, &out);
    let a_star = tested.combination(&rho);
    let d_star = a_star * w;
    let mut k = random_nonzero_scalar(rng);
    let a = &k * RISTRETTO_BASEPOINT_TABLE;
    let b = a_star * k;
    let e = challenge(pk, ks.index, &a_star, &d_star, &a, &b);
    let z = k + e * w;
    k.zeroize();
    w.zeroize();
    out.extend_from_slice(e.as_bytes());
    out.extend_from_slice(z.as_bytes());
    out
}
