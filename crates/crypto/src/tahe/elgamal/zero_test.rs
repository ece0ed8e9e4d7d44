//! The zero test over every party's batch of decryption shares (`batch`'s module docs):
//! each batch's proof checked with two multi-scalar multiplications, and the shares
//! summed per ciphertext; the plaintext of `(c1_k, c2_k)` is zero iff `c2_k = Σ_i D_{i,k}`.
//!
//! On a CPU with AVX-512 IFMA the shares are decoded eight at a time
//! (`curve25519x8::sums`), both multiplications run as a bucket method in lanes
//! (`curve25519x8::msm`, over the `c1_k` that [`Tested`] decoded in lanes), and the sums
//! stay in lanes, compared there with the `c2_k` that [`Tested`] decoded.
//! Elsewhere curve25519-dalek does each step. A party checking nine other parties'
//! batches of thousands of shares spent most of its time in dalek's serial decoding
//! (docs/benchmarks.md). A party's own batch is added without checking its proof
//! ([`zero_test_absorb_own`]).

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};
use rayon::prelude::*;

use super::batch::{batch_len, check_proof, coefficients, proof_scalars};
use super::tested::{Points, Tested};
use super::{KeyShare, PublicKey};
use super::{TASK, scalar_of};
#[cfg(target_arch = "x86_64")]
use crate::curve25519x8::{
    msm::vartime_msm,
    sums::{StoredPoint, add_hits, encode_all, equal_all},
};
use crate::tahe::TaheError;

/// The running sums `Σ_i D_{i,k}` and which parties' batches are in them.
pub struct ZeroTest {
    pub(super) sums: Sums,
    pub(super) absorbed: Vec<bool>,
}

pub(super) enum Sums {
    Serial(Vec<RistrettoPoint>),
    #[cfg(target_arch = "x86_64")]
    Lanes(Vec<StoredPoint>),
}

/// One batch's decoded shares, in the sums' form.
pub(super) enum Shares {
    Serial(Vec<RistrettoPoint>),
    #[cfg(target_arch = "x86_64")]
    Lanes(Vec<StoredPoint>),
}

impl Sums {
    pub(super) fn len(&self) -> usize {
        match self {
            Sums::Serial(s) => s.len(),
            #[cfg(target_arch = "x86_64")]
            Sums::Lanes(s) => s.len(),
        }
    }

    /// `sums[k] += shares[k]` for every `k`.
    pub(super) fn add(&mut self, shares: Shares) {
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

    /// The shares of `bytes` (32 bytes each), decoded in the sums' form, or the index of
    /// the first that is not a canonical encoding.
    pub(super) fn decode(&self, bytes: &[u8]) -> Result<Shares, usize> {
        match self {
            Sums::Serial(_) => crate::in_order::collect_in_order(
                bytes.par_chunks_exact(32).enumerate().map(|(k, b)| {
                    CompressedRistretto::from_slice(b)
                        .ok()
                        .and_then(|c| c.decompress())
                        .ok_or(k)
                }),
            )
            .map(Shares::Serial),
            #[cfg(target_arch = "x86_64")]
            Sums::Lanes(_) => super::tested::decode_lanes(bytes).map(Shares::Lanes),
        }
    }
}

impl Sums {
    /// The sums' encodings, 32 bytes each (what a relay sends).
    pub(super) fn encode(&self) -> Vec<u8> {
        match self {
            Sums::Serial(sums) => sums
                .par_iter()
                .flat_map_iter(|s| s.compress().to_bytes())
                .collect(),
            #[cfg(target_arch = "x86_64")]
            Sums::Lanes(sums) => sums
                .par_chunks(TASK)
                .map(encode_all)
                .collect::<Vec<_>>()
                .concat(),
        }
    }

    /// `Σ ρ_k S_k` over the sums.
    pub(super) fn combination(&self, rho: &[u128]) -> RistrettoPoint {
        match self {
            Sums::Serial(sums) => serial_combination(rho, sums),
            #[cfg(target_arch = "x86_64")]
            Sums::Lanes(sums) => super::tested::dalek_point(&vartime_msm(rho, sums)),
        }
    }
}

impl From<Shares> for Sums {
    /// Decoded points taken as the sums themselves (the sums a relay sent).
    fn from(shares: Shares) -> Sums {
        match shares {
            Shares::Serial(points) => Sums::Serial(points),
            #[cfg(target_arch = "x86_64")]
            Shares::Lanes(points) => Sums::Lanes(points),
        }
    }
}

impl Shares {
    /// `Σ ρ_k D_k` over the shares.
    pub(super) fn combination(&self, rho: &[u128]) -> RistrettoPoint {
        match self {
            Shares::Serial(ds) => serial_combination(rho, ds),
            #[cfg(target_arch = "x86_64")]
            Shares::Lanes(ds) => super::tested::dalek_point(&vartime_msm(rho, ds)),
        }
    }
}

/// `Σ ρ_k P_k` in curve25519-dalek.
fn serial_combination(rho: &[u128], points: &[RistrettoPoint]) -> RistrettoPoint {
    let rho: Vec<Scalar> = rho.iter().map(|&r| scalar_of(r)).collect();
    RistrettoPoint::vartime_multiscalar_mul(&rho, points)
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
    }
}

/// The hits `(k, k)`: point `k` added to sum `k`, for every `k < count`.
#[cfg(target_arch = "x86_64")]
fn diagonal(count: usize) -> Vec<(u32, u32)> {
    (0..count as u32).map(|k| (k, k)).collect()
}

/// The checks before a batch is read: a known party not seen yet, a test of as many
/// ciphertexts, a batch of `len` bytes.
pub(super) fn check_batch(
    pk: &PublicKey,
    test: &ZeroTest,
    tested: &Tested,
    party: u32,
    batch: &[u8],
    len: usize,
) -> Result<(), TaheError> {
    if party == 0 || party > pk.parties {
        return Err(TaheError::UnknownParty {
            party,
            parties: pk.parties,
        });
    }
    if test.absorbed[party as usize - 1] {
        return Err(TaheError::DuplicateShare { party });
    }
    check_count(test, tested)?;
    if batch.len() != len {
        return Err(TaheError::BadShare {
            party,
            reason: format!(
                "a batch of {} bytes for {} ciphertexts ({len} expected)",
                batch.len(),
                tested.len(),
            ),
        });
    }
    Ok(())
}

pub(super) fn check_count(test: &ZeroTest, tested: &Tested) -> Result<(), TaheError> {
    if test.sums.len() != tested.len() {
        return Err(TaheError::Parameters(format!(
            "a zero test of {} ciphertexts given {}",
            test.sums.len(),
            tested.len()
        )));
    }
    Ok(())
}

pub(super) fn zero_test_absorb(
    pk: &PublicKey,
    test: &mut ZeroTest,
    tested: &Tested,
    party: u32,
    batch: &[u8],
) -> Result<(), TaheError> {
    let bad = |reason: String| TaheError::BadShare { party, reason };
    check_batch(pk, test, tested, party, batch, batch_len(tested.len()))?;
    let (ds_bytes, proof) = batch.split_at(32 * tested.len());
    let scalars = proof_scalars(proof).map_err(bad)?;
    let shares = test.sums.decode(ds_bytes).map_err(|k| {
        bad(format!(
            "share {k} is not a canonical ristretto255 encoding"
        ))
    })?;
    let rho = coefficients(pk, party, &tested.c1_encoded, ds_bytes);
    // Σ ρ_k c1_k and Σ ρ_k D_k.
    let (a_star, d_star) = rayon::join(|| tested.combination(&rho), || shares.combination(&rho));
    check_proof(pk, party, &a_star, &d_star, scalars)?;
    test.sums.add(shares);
    test.absorbed[party as usize - 1] = true;
    Ok(())
}

/// The batch `ks`'s holder made itself ([`super::batch::share_batch`]): its shares are
/// added without checking the proof it made.
pub(super) fn zero_test_absorb_own(
    ks: &KeyShare,
    test: &mut ZeroTest,
    tested: &Tested,
    batch: &[u8],
) -> Result<(), TaheError> {
    check_batch(
        &ks.pk,
        test,
        tested,
        ks.index,
        batch,
        batch_len(tested.len()),
    )?;
    let shares = test
        .sums
        .decode(&batch[..32 * tested.len()])
        .map_err(|k| TaheError::Parameters(format!("own share {k} does not decode")))?;
    test.sums.add(shares);
    test.absorbed[ks.index as usize - 1] = true;
    Ok(())
}

pub(super) fn zero_test_finish(test: ZeroTest, tested: &Tested) -> Result<Vec<bool>, TaheError> {
    if let Some(i) = test.absorbed.iter().position(|a| !a) {
        return Err(TaheError::MissingShares {
            party: i as u32 + 1,
        });
    }
    check_count(&test, tested)?;
    match (test.sums, &tested.points) {
        (Sums::Serial(sums), Points::Serial(cts)) => Ok(cts
            .par_iter()
            .zip(sums.par_iter())
            .map(|(c, s)| (c.c2 - s).is_identity())
            .collect()),
        #[cfg(target_arch = "x86_64")]
        (Sums::Lanes(sums), Points::Lanes { .. }) => {
            let c2 = tested.c2_lanes()?;
            Ok(sums
                .par_chunks(TASK)
                .zip(c2.par_chunks(TASK))
                .flat_map_iter(|(s, c2)| equal_all(s, c2))
                .collect())
        }
        #[cfg(target_arch = "x86_64")]
        _ => unreachable!("a test and its ciphertexts are decoded on the same path"),
    }
}
