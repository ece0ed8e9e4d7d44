//! The zero test over every party's batch of decryption shares (`batch`'s module docs):
//! each batch's proof checked with two multi-scalar multiplications, and the shares
//! summed per ciphertext; the plaintext of `(c1_k, c2_k)` is zero iff `c2_k = Σ_i D_{i,k}`.
//!
//! On a CPU with AVX-512 IFMA the shares are decoded eight at a time
//! (`curve25519x8::sums`), both multiplications run as a bucket method in lanes
//! (`curve25519x8::msm`; `Σ ρ_k c1_k` as half of `Σ ρ_k (2 c1_k)`, the doubles the
//! coefficients hash anyway), and the sums stay in lanes until they are compared, as
//! encodings of their doubles, with the `c2_k`. Elsewhere curve25519-dalek does each
//! step. A party checking nine other parties' batches of thousands of shares spent most
//! of its time in dalek's serial decoding (docs/benchmarks.md).

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};
use rayon::prelude::*;

use super::batch::{TASK, batch_len, c1_encodings, challenge, coefficients, scalar_of, weight};
use super::{Ciphertext, PublicKey};
#[cfg(target_arch = "x86_64")]
use crate::curve25519x8::{
    msm::vartime_msm,
    sums::{StoredPoint, add_hits, decode_all, encode_all},
};
use crate::tahe::TaheError;

/// The running sums `Σ_i D_{i,k}`, which parties' batches are in them, and the tested
/// ciphertexts' `c1` from the first batch, kept for the others.
pub struct ZeroTest {
    sums: Sums,
    absorbed: Vec<bool>,
    c1: Option<C1>,
}

enum Sums {
    Serial(Vec<RistrettoPoint>),
    #[cfg(target_arch = "x86_64")]
    Lanes(Vec<StoredPoint>),
}

/// One batch's decoded shares, in the sums' form.
enum Shares {
    Serial(Vec<RistrettoPoint>),
    #[cfg(target_arch = "x86_64")]
    Lanes(Vec<StoredPoint>),
}

impl Sums {
    fn len(&self) -> usize {
        match self {
            Sums::Serial(s) => s.len(),
            #[cfg(target_arch = "x86_64")]
            Sums::Lanes(s) => s.len(),
        }
    }

    /// `sums[k] += shares[k]` for every `k`.
    fn add(&mut self, shares: Shares) {
        match (self, shares) {
            (Sums::Serial(sums), Shares::Serial(ds)) => {
                sums.par_iter_mut()
                    .zip(ds.par_iter())
                    .for_each(|(s, d)| *s += d);
            }
            #[cfg(target_arch = "x86_64")]
            (Sums::Lanes(sums), Shares::Lanes(ds)) => add_hits(sums, &ds, &diagonal(ds.len())),
            #[cfg(target_arch = "x86_64")]
            _ => unreachable!("shares are decoded in the sums' form"),
        }
    }
}

/// The tested ciphertexts' `c1_k`, their doubles' encodings (which the coefficients
/// hash) and, in lanes, those doubles decoded.
struct C1 {
    points: Vec<RistrettoPoint>,
    encoded: Vec<u8>,
    #[cfg(target_arch = "x86_64")]
    doubled: Option<Vec<StoredPoint>>,
}

pub(super) fn zero_test_new(pk: &PublicKey, count: usize) -> ZeroTest {
    #[cfg(target_arch = "x86_64")]
    let sums = if crate::cpu::ristretto_ifma() {
        Sums::Lanes(vec![crate::curve25519x8::sums::IDENTITY; count])
    } else {
        Sums::Serial(vec![RistrettoPoint::identity(); count])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let sums = Sums::Serial(vec![RistrettoPoint::identity(); count]);
    ZeroTest {
        sums,
        absorbed: vec![false; pk.parties as usize],
        c1: None,
    }
}

/// The test's [`C1`] for `cts`, recomputed when they are not the points it saw before
/// (comparing points costs a few multiplications, encoding an inverse square root).
fn cached_c1<'a>(c1: &'a mut Option<C1>, cts: &[Ciphertext], lanes: bool) -> &'a C1 {
    let points: Vec<RistrettoPoint> = cts.iter().map(|c| c.c1).collect();
    if !matches!(c1, Some(seen) if seen.points == points) {
        let encoded = c1_encodings(&points);
        #[cfg(target_arch = "x86_64")]
        let doubled = lanes.then(|| decode_lanes(&encoded).expect("encodings computed by dalek"));
        #[cfg(not(target_arch = "x86_64"))]
        let _ = lanes;
        *c1 = Some(C1 {
            points,
            encoded,
            #[cfg(target_arch = "x86_64")]
            doubled,
        });
    }
    c1.as_ref().expect("set above")
}

/// Decodes back-to-back encodings in lanes, in parallel tasks, or the index of the
/// first invalid one.
#[cfg(target_arch = "x86_64")]
fn decode_lanes(bytes: &[u8]) -> Result<Vec<StoredPoint>, usize> {
    let refs: Vec<&[u8; 32]> = bytes
        .chunks_exact(32)
        .map(|b| b.try_into().expect("32 bytes"))
        .collect();
    let parts: Vec<Vec<StoredPoint>> = refs
        .par_chunks(TASK)
        .enumerate()
        .map(|(t, task)| decode_all(task).map_err(|i| t * TASK + i))
        .collect::<Result<_, _>>()?;
    Ok(parts.concat())
}

/// The hits `(k, k)`: point `k` added to sum `k`, for every `k < count`.
#[cfg(target_arch = "x86_64")]
fn diagonal(count: usize) -> Vec<(u32, u32)> {
    (0..count as u32).map(|k| (k, k)).collect()
}

/// A point the lanes computed, through its encoding.
#[cfg(target_arch = "x86_64")]
fn dalek_point(p: &StoredPoint) -> RistrettoPoint {
    CompressedRistretto::from_slice(&encode_all(std::slice::from_ref(p)))
        .ok()
        .and_then(|c| c.decompress())
        .expect("an encoding computed in lanes decodes")
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
    let not_canonical = |k: usize| {
        bad(format!(
            "share {k} is not a canonical ristretto255 encoding"
        ))
    };
    let lanes = !matches!(test.sums, Sums::Serial(_));
    let c1 = cached_c1(&mut test.c1, cts, lanes);
    let rho = coefficients(pk, party, &c1.encoded, ds_bytes);
    // Σ ρ_k c1_k and Σ ρ_k D_k, and the shares to add once the proof verifies.
    let (a_star, d_star, shares) = match &test.sums {
        Sums::Serial(_) => {
            let ds: Vec<RistrettoPoint> = ds_bytes
                .par_chunks_exact(32)
                .enumerate()
                .map(|(k, b)| {
                    CompressedRistretto::from_slice(b)
                        .ok()
                        .and_then(|c| c.decompress())
                        .ok_or_else(|| not_canonical(k))
                })
                .collect::<Result<_, _>>()?;
            let rho: Vec<Scalar> = rho.iter().map(|&r| scalar_of(r)).collect();
            let (a_star, d_star) = rayon::join(
                || RistrettoPoint::vartime_multiscalar_mul(&rho, &c1.points),
                || RistrettoPoint::vartime_multiscalar_mul(&rho, &ds),
            );
            (a_star, d_star, Shares::Serial(ds))
        }
        #[cfg(target_arch = "x86_64")]
        Sums::Lanes(_) => {
            let ds = decode_lanes(ds_bytes).map_err(not_canonical)?;
            let doubled = c1.doubled.as_ref().expect("decoded for a lane test");
            let (a_twice, d_star) =
                rayon::join(|| vartime_msm(&rho, doubled), || vartime_msm(&rho, &ds));
            let a_star = dalek_point(&a_twice) * crate::ahe::elgamal::bulk::half();
            (a_star, dalek_point(&d_star), Shares::Lanes(ds))
        }
    };
    let weighted_key = pk.verification[party as usize - 1] * weight(pk.parties, party);
    let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&-e, &weighted_key, &z);
    let b = RistrettoPoint::vartime_multiscalar_mul([z, -e], [a_star, d_star]);
    if challenge(pk, party, &a_star, &d_star, &a, &b) != e {
        return Err(bad(
            "the proof of correct decryption of the batch does not verify".into(),
        ));
    }
    test.sums.add(shares);
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
    match test.sums {
        Sums::Serial(sums) => Ok(cts
            .par_iter()
            .zip(sums.par_iter())
            .map(|(c, s)| (c.c2 - s).is_identity())
            .collect()),
        // c2_k = s_k iff 2 c2_k = 2 s_k (the group has odd order), and encodings are
        // canonical: compare the doubles' encodings, dalek's batch compression for c2.
        #[cfg(target_arch = "x86_64")]
        Sums::Lanes(sums) => {
            let mut doubled = sums.clone();
            add_hits(&mut doubled, &sums, &diagonal(sums.len()));
            let c2s: Vec<RistrettoPoint> = cts.iter().map(|c| c.c2).collect();
            Ok(doubled
                .par_chunks(TASK)
                .zip(c2s.par_chunks(TASK))
                .flat_map_iter(|(s, c)| {
                    let ours = encode_all(s);
                    let theirs = RistrettoPoint::double_and_compress_batch(c);
                    ours.chunks_exact(32)
                        .zip(theirs)
                        .map(|(a, b)| a == b.as_bytes())
                        .collect::<Vec<_>>()
                })
                .collect())
        }
    }
}
