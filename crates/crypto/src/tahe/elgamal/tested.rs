//! The ciphertexts of a joint decryption (a batch of shares, a zero test), kept as the
//! encodings they arrived in.
//!
//! Every use of them reads encodings or lanes: the batch coefficients hash the `c1_k`'s
//! encodings, the shares `w c1_k` are products in lanes that take encodings, the proofs'
//! `Σ ρ_k c1_k` is a multi-scalar multiplication over the `c1_k` decoded in lanes, a
//! zero test compares its sums with the `c2_k` decoded in lanes, and a relayed
//! decryption compares the relayed sums' encodings with the `c2_k`'s. Decoding them
//! into curve25519-dalek's points (an inverse square root in serial arithmetic each)
//! was a tenth of a Miyaji-Nishida party's time (docs/benchmarks.md). On a CPU with
//! AVX-512 IFMA the `c1_k` are validated and decoded eight at a time when they arrive,
//! the `c2_k` only when a zero test needs them as points; elsewhere dalek decodes both
//! at once, as before.
//!
//! A relayed decryption never decodes the `c2_k`, so in lanes a `c2_k` that is not a
//! valid encoding equals no sum and reads as a nonzero plaintext: what the sender could
//! equally cause with a valid `c2_k` of its choosing.

#[cfg(target_arch = "x86_64")]
use curve25519_dalek::ristretto::CompressedRistretto;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::VartimeMultiscalarMul;
use rayon::prelude::*;

use super::Ciphertext;
use super::{TASK, scalar_of};
use crate::ahe::HeError;
use crate::ahe::elgamal::CIPHERTEXT_LEN;
#[cfg(target_arch = "x86_64")]
use crate::curve25519x8::{
    msm::vartime_msm,
    sums::{StoredPoint, decode_all, encode_all},
};
use crate::tahe::{TaheError, invalid};

/// Validated ciphertexts for a joint decryption ([`crate::tahe::ThresholdAhe::Tested`]).
pub struct Tested {
    /// The `c1_k`'s encodings, back to back.
    pub(super) c1_encoded: Vec<u8>,
    /// The `c2_k`'s encodings, back to back.
    pub(super) c2_encoded: Vec<u8>,
    pub(super) points: Points,
}

/// A party's own shares of a [`Tested`] ([`Tested::shares`]).
pub(super) struct OwnShares {
    /// `w c1_k`, 32 bytes each.
    pub(super) encoded: Vec<u8>,
    /// The same in lanes' form, when the lanes made them.
    #[cfg(target_arch = "x86_64")]
    pub(super) points: Option<Vec<StoredPoint>>,
}

/// The decoded points, in the form the CPU computes with.
pub(super) enum Points {
    /// curve25519-dalek's points.
    Serial(Vec<Ciphertext>),
    /// The `c1_k` decoded in lanes.
    #[cfg(target_arch = "x86_64")]
    Lanes { c1: Vec<StoredPoint> },
}

impl Tested {
    /// Number of ciphertexts.
    pub(super) fn len(&self) -> usize {
        self.c1_encoded.len() / 32
    }

    /// Back-to-back ciphertext encodings, validated as [`super::batch::decode_many`]
    /// validates them (canonical points, `c1` not the identity), with the same errors;
    /// in lanes, each `c2` only when a zero test decodes it.
    pub(super) fn from_encoded(bytes: &[u8]) -> Result<Tested, TaheError> {
        let error = |e: HeError| invalid("ciphertexts", e.to_string());
        if !bytes.len().is_multiple_of(CIPHERTEXT_LEN) {
            return Err(error(HeError::BadLength {
                len: bytes.len(),
                ct_len: CIPHERTEXT_LEN,
            }));
        }
        let mut c1_encoded = Vec::with_capacity(bytes.len() / 2);
        let mut c2_encoded = Vec::with_capacity(bytes.len() / 2);
        for c in bytes.chunks_exact(CIPHERTEXT_LEN) {
            c1_encoded.extend_from_slice(&c[..32]);
            c2_encoded.extend_from_slice(&c[32..]);
        }
        let points = decode_points(bytes, &c1_encoded).map_err(error)?;
        Ok(Tested {
            c1_encoded,
            c2_encoded,
            points,
        })
    }

    /// The `c2_k` decoded in lanes, or an error naming the first invalid one.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn c2_lanes(&self) -> Result<Vec<StoredPoint>, TaheError> {
        decode_lanes(&self.c2_encoded).map_err(|index| {
            let e = HeError::InvalidCiphertext {
                index,
                reason: "c2 is not a canonical ristretto255 encoding".into(),
            };
            invalid("ciphertexts", e.to_string())
        })
    }
}

fn decode_points(bytes: &[u8], c1_encoded: &[u8]) -> Result<Points, HeError> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::ristretto_ifma() {
        let bad = |index: usize, reason: &str| HeError::InvalidCiphertext {
            index,
            reason: reason.into(),
        };
        if let Some(index) = c1_encoded.chunks_exact(32).position(|b| b == [0u8; 32]) {
            return Err(bad(index, "c1 is the identity"));
        }
        let c1 = decode_lanes(c1_encoded)
            .map_err(|i| bad(i, "c1 is not a canonical ristretto255 encoding"))?;
        return Ok(Points::Lanes { c1 });
    }
    let _ = c1_encoded;
    crate::ahe::elgamal::bulk::decode_many(bytes).map(Points::Serial)
}

/// Decodes back-to-back encodings in lanes, in parallel tasks, or the index of the
/// first invalid one.
#[cfg(target_arch = "x86_64")]
pub(super) fn decode_lanes(bytes: &[u8]) -> Result<Vec<StoredPoint>, usize> {
    let refs: Vec<&[u8; 32]> = bytes
        .chunks_exact(32)
        .map(|b| b.try_into().expect("32 bytes"))
        .collect();
    let parts = crate::in_order::collect_in_order(
        refs.par_chunks(TASK)
            .enumerate()
            .map(|(t, task)| decode_all(task).map_err(|i| t * TASK + i)),
    )?;
    Ok(parts.concat())
}

impl Tested {
    /// The shares `w c1_k`: in lanes from the `c1_k` decoded already, encoded and kept
    /// as points (a zero test adds them without decoding them again); else
    /// curve25519-dalek's, encoded.
    pub(super) fn shares(&self, w: &Scalar) -> OwnShares {
        match &self.points {
            Points::Serial(cts) => {
                let c1: Vec<RistrettoPoint> = cts.iter().map(|c| c.c1).collect();
                OwnShares {
                    encoded: crate::ahe::elgamal::bulk::mul_shared(&c1, w),
                    #[cfg(target_arch = "x86_64")]
                    points: None,
                }
            }
            #[cfg(target_arch = "x86_64")]
            Points::Lanes { c1 } => {
                use crate::curve25519x8::varbase::{Scalars, mul_points};
                let parts: Vec<(Vec<u8>, Vec<StoredPoint>)> = c1
                    .par_chunks(TASK)
                    .map(|task| mul_points(task, None, Scalars::Shared(w), &[], true))
                    .collect();
                let mut encoded = Vec::with_capacity(32 * c1.len());
                let mut points = Vec::with_capacity(c1.len());
                for (e, p) in parts {
                    encoded.extend_from_slice(&e);
                    points.extend_from_slice(&p);
                }
                OwnShares {
                    encoded,
                    points: Some(points),
                }
            }
        }
    }

    /// `Σ ρ_k c1_k`: a bucket method in lanes, else curve25519-dalek's.
    pub(super) fn combination(&self, rho: &[u128]) -> RistrettoPoint {
        match &self.points {
            Points::Serial(cts) => {
                let rho: Vec<Scalar> = rho.iter().map(|&r| scalar_of(r)).collect();
                RistrettoPoint::vartime_multiscalar_mul(&rho, cts.iter().map(|c| c.c1))
            }
            #[cfg(target_arch = "x86_64")]
            Points::Lanes { c1 } => dalek_point(&vartime_msm(rho, c1)),
        }
    }
}

/// A point the lanes computed, through its encoding.
#[cfg(target_arch = "x86_64")]
pub(super) fn dalek_point(p: &StoredPoint) -> RistrettoPoint {
    CompressedRistretto::from_slice(&encode_all(std::slice::from_ref(p)))
        .ok()
        .and_then(|c| c.decompress())
        .expect("an encoding computed in lanes decodes")
}
