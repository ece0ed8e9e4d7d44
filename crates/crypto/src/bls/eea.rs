//! The exponent-equality argument of Falzon and Markatou, App. A.1 (Fig. 7): a non-interactive
//! (Fiat-Shamir) proof that `values_i = bases_i^r` for every `i` with one secret `r`.
//!
//! Prover: `z` random, `t_i = bases_i^z`, `c = H(context, bases, values, t)`,
//! `s = z + c r`; the proof is `({t_i}, s)`. Verifier: `bases_i^s == t_i * values_i^c`
//! for every `i`. Fig. 7 hashes `{t_i, w_i}`; we also hash the values and a caller
//! context (session transcript), which only narrows what a proof can be replayed for.
//!
//! Verification checks all `n` equations at once with random 128-bit weights `rho_i`:
//! `sum rho_i (s bases_i - t_i - c values_i) == 0`, one multi-scalar multiplication of
//! `3n` points rather than `2n` scalar multiplications; a false statement passes with
//! probability at most 2^-128.
//!
//! [`composite`] folds many `(base, value)` pairs into one with hash-derived weights
//! (the batched DLEQ technique of RFC 9497 Sec. 2.2.1), so a statement about a whole
//! message costs a constant-size proof: used for the key-consistency check.

use blstrs::{G1Affine, G1Projective, Scalar};
use group::Curve;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{BlsError, G1_LEN, SCALAR_LEN, decode_g1_batch, decode_scalar, encode_scalar, msm};
use super::{random_scalar, scalar_from_u128, to_affine_batch};
use crate::rng::SessionRng;

/// A proof for an `n`-pair statement: `n` commitments and one response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    pub commitments: Vec<G1Affine>,
    pub response: Scalar,
}

impl Proof {
    /// Encoded length for an `n`-pair statement.
    pub fn encoded_len(n: usize) -> usize {
        n * G1_LEN + SCALAR_LEN
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = super::encode_g1_batch(&self.commitments);
        out.extend_from_slice(&encode_scalar(&self.response));
        out
    }

    /// Decodes a proof for an `n`-pair statement; every point is validated.
    pub fn decode(bytes: &[u8], n: usize) -> Result<Self, BlsError> {
        if bytes.len() != Self::encoded_len(n) {
            return Err(BlsError::Length {
                got: bytes.len(),
                expected: Self::encoded_len(n),
            });
        }
        let (points, s) = bytes.split_at(n * G1_LEN);
        let commitments = decode_g1_batch(points).map_err(|(_, e)| e)?;
        Ok(Self {
            commitments,
            response: decode_scalar(s)?,
        })
    }
}

/// Proves `values_i = bases_i^r` for all `i` (the caller computed `values` with `r`).
pub fn prove(
    r: &Scalar,
    bases: &[G1Affine],
    values: &[G1Affine],
    context: &[u8],
    rng: &mut SessionRng,
) -> Proof {
    assert_eq!(bases.len(), values.len(), "one value per base");
    let z = random_scalar(rng);
    let t: Vec<G1Projective> = bases.par_iter().map(|b| b * z).collect();
    let commitments = to_affine_batch(&t);
    let c = challenge(context, bases, values, &commitments);
    Proof {
        commitments,
        response: z + c * r,
    }
}

/// Checks a proof that `values_i = bases_i^r` for one (unknown) `r`.
pub fn verify(
    bases: &[G1Affine],
    values: &[G1Affine],
    proof: &Proof,
    context: &[u8],
    rng: &mut SessionRng,
) -> Result<(), BlsError> {
    let n = bases.len();
    if values.len() != n || proof.commitments.len() != n {
        return Err(BlsError::BadProof);
    }
    if n == 0 {
        return Ok(());
    }
    let c = challenge(context, bases, values, &proof.commitments);
    let mut points = Vec::with_capacity(3 * n);
    let mut scalars = Vec::with_capacity(3 * n);
    for i in 0..n {
        let rho = scalar_from_u128(((rng.next_u64() as u128) << 64) | rng.next_u64() as u128);
        points.extend([bases[i], proof.commitments[i], values[i]]);
        scalars.extend([rho * proof.response, -rho, -(rho * c)]);
    }
    if bool::from(group::Group::is_identity(&msm(&points, &scalars))) {
        Ok(())
    } else {
        Err(BlsError::BadProof)
    }
}

/// Folds the pairs `(bases_j, values_j)` into one pair `(sum e_j bases_j, sum e_j
/// values_j)` with 128-bit weights `e_j` derived from a hash of `context` and every
/// pair. If the folded pair has exponent `r`, then so has every pair, except with
/// probability about `n / 2^128`.
pub fn composite(bases: &[G1Affine], values: &[G1Affine], context: &[u8]) -> (G1Affine, G1Affine) {
    assert_eq!(bases.len(), values.len(), "one value per base");
    let mut h = Sha256::new();
    h.update(b"privset/v1/eea-composite/");
    h.update((context.len() as u64).to_be_bytes());
    h.update(context);
    h.update((bases.len() as u64).to_be_bytes());
    absorb(&mut h, bases);
    absorb(&mut h, values);
    let seed: [u8; 32] = h.finalize().into();
    let weights: Vec<Scalar> = (0..bases.len() as u64)
        .into_par_iter()
        .map(|j| {
            let d = Sha256::new()
                .chain_update(seed)
                .chain_update(j.to_be_bytes())
                .finalize();
            scalar_from_u128(u128::from_be_bytes(d[..16].try_into().unwrap()))
        })
        .collect();
    let (m, z) = rayon::join(|| msm(bases, &weights), || msm(values, &weights));
    (m.to_affine(), z.to_affine())
}

fn absorb(h: &mut Sha256, points: &[G1Affine]) {
    for chunk in points.chunks(4096) {
        let bytes: Vec<[u8; G1_LEN]> = chunk.par_iter().map(|p| p.to_compressed()).collect();
        for b in bytes {
            h.update(b);
        }
    }
}

/// The Fiat-Shamir challenge: 128 bits of SHA-256 over the whole statement.
fn challenge(
    context: &[u8],
    bases: &[G1Affine],
    values: &[G1Affine],
    commitments: &[G1Affine],
) -> Scalar {
    let mut h = Sha256::new();
    h.update(b"privset/v1/eea/");
    h.update((context.len() as u64).to_be_bytes());
    h.update(context);
    h.update((bases.len() as u64).to_be_bytes());
    absorb(&mut h, bases);
    absorb(&mut h, values);
    absorb(&mut h, commitments);
    let d = h.finalize();
    scalar_from_u128(u128::from_be_bytes(d[..16].try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bls::hash_to_g1;

    fn statement(r: &Scalar, n: u32) -> (Vec<G1Affine>, Vec<G1Affine>) {
        let bases: Vec<G1Affine> = (0..n)
            .map(|i| hash_to_g1(&i.to_be_bytes(), b"eea-test").to_affine())
            .collect();
        let values = bases.iter().map(|b| (b * r).to_affine()).collect();
        (bases, values)
    }

    #[test]
    fn honest_proofs_verify_and_round_trip() {
        let mut rng = SessionRng::from_seed([1; 32]);
        let r = random_scalar(&mut rng);
        for n in [0u32, 1, 2, 17] {
            let (bases, values) = statement(&r, n);
            let proof = prove(&r, &bases, &values, b"ctx", &mut rng);
            verify(&bases, &values, &proof, b"ctx", &mut rng).unwrap();
            let decoded = Proof::decode(&proof.encode(), n as usize).unwrap();
            assert_eq!(decoded, proof);
        }
    }

    #[test]
    fn false_statements_and_tampering_fail() {
        let mut rng = SessionRng::from_seed([2; 32]);
        let r = random_scalar(&mut rng);
        let (bases, values) = statement(&r, 8);
        let proof = prove(&r, &bases, &values, b"ctx", &mut rng);
        // Another context (session).
        assert_eq!(
            verify(&bases, &values, &proof, b"other", &mut rng),
            Err(BlsError::BadProof)
        );
        // One value under a different exponent.
        let r2 = random_scalar(&mut rng);
        let mut mixed = values.clone();
        mixed[5] = (bases[5] * r2).to_affine();
        let p2 = prove(&r, &bases, &mixed, b"ctx", &mut rng);
        assert_eq!(
            verify(&bases, &mixed, &p2, b"ctx", &mut rng),
            Err(BlsError::BadProof)
        );
        // A proof made with a different r.
        let p3 = prove(&r2, &bases, &values, b"ctx", &mut rng);
        assert_eq!(
            verify(&bases, &values, &p3, b"ctx", &mut rng),
            Err(BlsError::BadProof)
        );
        // A tampered response.
        let mut p4 = proof.clone();
        p4.response += Scalar::from(1u64);
        assert_eq!(
            verify(&bases, &values, &p4, b"ctx", &mut rng),
            Err(BlsError::BadProof)
        );
        // Wrong sizes.
        assert!(Proof::decode(&proof.encode(), 7).is_err());
        assert_eq!(
            verify(&bases[..7], &values[..7], &proof, b"ctx", &mut rng),
            Err(BlsError::BadProof)
        );
    }

    #[test]
    fn composite_binds_every_pair() {
        let mut rng = SessionRng::from_seed([3; 32]);
        let r = random_scalar(&mut rng);
        let (bases, values) = statement(&r, 30);
        let (m, z) = composite(&bases, &values, b"ctx");
        assert_eq!((m * r).to_affine(), z);
        let mut mixed = values.clone();
        mixed[29] = (bases[29] * random_scalar(&mut rng)).to_affine();
        let (m2, z2) = composite(&bases, &mixed, b"ctx");
        assert_ne!((m2 * r).to_affine(), z2);
    }
}
