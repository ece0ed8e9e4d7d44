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
//!   every `c1_k` and every `D_k`; with `A = Σ ρ_k c1_k` and `D = Σ ρ_k D_k` the party
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

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};
use rayon::prelude::*;
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::{Ciphertext, KeyShare, PublicKey, lagrange_at_zero};
use crate::ahe::elgamal::bulk::{self, double_and_compress, half};
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

/// Ciphertexts hashed per step of the batch coefficients.
const TASK: usize = 1024;

/// `λ_i` over all parties `1..=n`.
fn weight(parties: u32, party: u32) -> Scalar {
    let all: Vec<u32> = (1..=parties).collect();
    lagrange_at_zero(&all)[party as usize - 1]
}

/// The doubles of the `c1_k`, compressed: what the batch coefficients hash of the
/// ciphertexts. Binding `2 c1` is binding `c1` (doubling is a bijection in a group of
/// odd order), and the batch compression is four times cheaper. A zero test keeps them
/// for every party's batch ([`ZeroTest`]).
fn c1_encodings(c1s: &[RistrettoPoint]) -> Vec<u8> {
    c1s.par_chunks(TASK)
        .flat_map_iter(|chunk| {
            RistrettoPoint::double_and_compress_batch(chunk)
                .into_iter()
                .flat_map(|c| c.to_bytes())
        })
        .collect()
}

/// The coefficients `ρ_k` for `c1_encoded` ([`c1_encodings`]) and the shares `ds`.
fn coefficients(pk: &PublicKey, party: u32, c1_encoded: &[u8], ds: &[u8]) -> Vec<Scalar> {
    let count = c1_encoded.len() / 32;
    let mut h = Sha512::new();
    h.update(b"privset/tahe/elgamal/batch/v1");
    h.update(pk.digest);
    h.update(party.to_be_bytes());
    h.update((count as u64).to_be_bytes());
    h.update(c1_encoded);
    h.update(ds);
    let seed: [u8; 64] = h.finalize().into();
    (0..count as u64)
        .into_par_iter()
        .map(|k| {
            let mut h = Sha512::new();
            h.update(seed);
            h.update(k.to_be_bytes());
            let d = h.finalize();
            let mut b = [0u8; 32];
            b[..16].copy_from_slice(&d[..16]);
            Scalar::from_bytes_mod_order(b)
        })
        .collect()
}

fn challenge(
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

/// Party `ks.index`'s batch of weighted shares `D_k = w_i c1_k` with one proof.
pub(super) fn share_batch(ks: &KeyShare, cts: &[Ciphertext], rng: &mut SessionRng) -> Vec<u8> {
    let pk = &ks.pk;
    let mut w = weight(pk.parties, ks.index) * ks.x;
    // D_k as the doubles of (w/2) c1_k, for the batch compression.
    let mut w_half = w * half();
    let mut out: Vec<u8> = cts
        .par_chunks(TASK)
        .map(|chunk| {
            let halves: Vec<RistrettoPoint> = chunk.iter().map(|c| c.c1 * w_half).collect();
            let mut out = Vec::with_capacity(32 * chunk.len());
            double_and_compress(&halves, &mut out);
            out
        })
        .collect::<Vec<_>>()
        .concat();
    w_half.zeroize();
    let c1s: Vec<RistrettoPoint> = cts.iter().map(|c| c.c1).collect();
    let rho = coefficients(pk, ks.index, &c1_encodings(&c1s), &out);
    let a_star = RistrettoPoint::vartime_multiscalar_mul(&rho, &c1s);
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

/// The running sums `Σ_i D_{i,k}` and which parties' batches are in them, with the
/// tested ciphertexts' [`c1_encodings`] from the first batch, kept for the others.
pub struct ZeroTest {
    sums: Vec<RistrettoPoint>,
    absorbed: Vec<bool>,
    c1: Option<(Vec<RistrettoPoint>, Vec<u8>)>,
}

pub(super) fn zero_test_new(pk: &PublicKey, count: usize) -> ZeroTest {
    ZeroTest {
        sums: vec![RistrettoPoint::identity(); count],
        absorbed: vec![false; pk.parties as usize],
        c1: None,
    }
}

/// `c1s`' encodings from the test's cache when the test saw the same points before
/// (comparing points costs a few multiplications, encoding an inverse square root).
fn cached_c1_encodings(test: &mut ZeroTest, c1s: Vec<RistrettoPoint>) -> &[u8] {
    let same = matches!(&test.c1, Some((seen, _)) if *seen == c1s);
    if !same {
        let encoded = c1_encodings(&c1s);
        test.c1 = Some((c1s, encoded));
    }
    &test.c1.as_ref().expect("set above").1
}

pub(super) fn zero_test_absorb(
    pk: &PublicKey,
    test: &mut ZeroTest,
    cts: &[Ciphertext],
    party: u32,
    batch: &[u8],
) -> Result<(), TaheError> {
    let bad = |reason: String| TaheError::BadShare { party, reason };
    if party == 0 || party > pk.parties {
        return Err(TaheError::UnknownParty {
            party,
            parties: pk.parties,
        });
    }
    if test.absorbed[party as usize - 1] {
        return Err(TaheError::DuplicateShare { party });
    }
    if test.sums.len() != cts.len() {
        return Err(TaheError::Parameters(format!(
            "a zero test of {} ciphertexts given {}",
            test.sums.len(),
            cts.len()
        )));
    }
    if batch.len() != batch_len(cts.len()) {
        return Err(bad(format!(
            "a batch of {} bytes for {} ciphertexts ({} expected)",
            batch.len(),
            cts.len(),
            batch_len(cts.len())
        )));
    }
    let (ds_bytes, proof) = batch.split_at(32 * cts.len());
    let scalar = |b: &[u8]| -> Option<Scalar> {
        Option::from(Scalar::from_canonical_bytes(b.try_into().ok()?))
    };
    let e = scalar(&proof[..32]).ok_or_else(|| bad("e is not canonical".into()))?;
    let z = scalar(&proof[32..]).ok_or_else(|| bad("z is not canonical".into()))?;
    let ds: Vec<RistrettoPoint> = ds_bytes
        .par_chunks_exact(32)
        .enumerate()
        .map(|(k, b)| {
            CompressedRistretto::from_slice(b)
                .ok()
                .and_then(|c| c.decompress())
                .ok_or_else(|| {
                    bad(format!(
                        "share {k} is not a canonical ristretto255 encoding"
                    ))
                })
        })
        .collect::<Result<_, _>>()?;
    let c1s: Vec<RistrettoPoint> = cts.iter().map(|c| c.c1).collect();
    let rho = coefficients(pk, party, cached_c1_encodings(test, c1s), ds_bytes);
    let c1s = &test.c1.as_ref().expect("cached above").0;
    let (a_star, d_star) = rayon::join(
        || RistrettoPoint::vartime_multiscalar_mul(&rho, c1s),
        || RistrettoPoint::vartime_multiscalar_mul(&rho, &ds),
    );
    let weighted_key = pk.verification[party as usize - 1] * weight(pk.parties, party);
    let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&-e, &weighted_key, &z);
    let b = RistrettoPoint::vartime_multiscalar_mul([z, -e], [a_star, d_star]);
    if challenge(pk, party, &a_star, &d_star, &a, &b) != e {
        return Err(bad(
            "the proof of correct decryption of the batch does not verify".into(),
        ));
    }
    test.sums
        .par_iter_mut()
        .zip(ds.par_iter())
        .for_each(|(s, d)| *s += d);
    test.absorbed[party as usize - 1] = true;
    Ok(())
}

pub(super) fn zero_test_finish(test: ZeroTest, cts: &[Ciphertext]) -> Result<Vec<bool>, TaheError> {
    if let Some(i) = test.absorbed.iter().position(|a| !a) {
        return Err(TaheError::MissingShares {
            party: i as u32 + 1,
        });
    }
    if test.sums.len() != cts.len() {
        return Err(TaheError::Parameters(format!(
            "a zero test of {} ciphertexts given {}",
            test.sums.len(),
            cts.len()
        )));
    }
    Ok(cts
        .par_iter()
        .zip(test.sums.par_iter())
        .map(|(c, s)| (c.c2 - s).is_identity())
        .collect())
}
