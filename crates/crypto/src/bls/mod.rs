//! BLS12-381, a Type-3 pairing `e: G1 x G2 -> Gt`, for authorized PSI (Falzon and Markatou).
//!
//! What the protocols need and nothing more: hashing into G1 (RFC 9380,
//! `BLS12381G1_XMD:SHA-256_SSWU_RO_`), validated fixed-width encodings of G1 and G2
//! points, BLS signing keys whose signatures are `h^sk` on an already hashed point
//! `h` (so one key signs both `H1(x || ID)` and `H2(H1(x || ID)^r)`), batch signature
//! verification, pairings against a fixed prepared G2 point, the short tag a pairing
//! value travels as, and the exponent-equality argument ([`eea`]).
//!
//! The arithmetic is blst's (C and assembly, through `blstrs`), the fastest maintained
//! pairing library that builds here. Every point received from a peer goes through
//! [`decode_g1`] / [`decode_g2`]: on the curve, in the prime-order subgroup, not the
//! identity.

pub mod eea;

use blstrs::Bls12;
pub use blstrs::{G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, Scalar};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::rng::SessionRng;

/// Bytes of a compressed G1 point.
pub const G1_LEN: usize = 48;
/// Bytes of a compressed G2 point.
pub const G2_LEN: usize = 96;
/// Bytes of a scalar (big-endian, canonical).
pub const SCALAR_LEN: usize = 32;
/// Bytes of the tag a pairing value travels as (see [`gt_tag`]).
pub const TAG_LEN: usize = 16;

/// Why bytes are not a usable BLS12-381 value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlsError {
    #[error("not a compressed BLS12-381 G1 point in the prime-order subgroup")]
    InvalidG1,
    #[error("not a compressed BLS12-381 G2 point in the prime-order subgroup")]
    InvalidG2,
    #[error("the identity element, which no honest party sends")]
    Identity,
    #[error("not a canonical non-zero scalar")]
    InvalidScalar,
    #[error("{got} bytes, expected {expected}")]
    Length { got: usize, expected: usize },
    #[error("signature does not verify under the judge's public key")]
    BadSignature,
    #[error("exponent-equality proof does not verify")]
    BadProof,
}

/// `H(msg)` in G1 with RFC 9380 (hash_to_curve, random-oracle variant) under `dst`.
pub fn hash_to_g1(msg: &[u8], dst: &[u8]) -> G1Projective {
    G1Projective::hash_to_curve(msg, dst, &[])
}

/// Compressed encoding of a G1 point.
pub fn encode_g1(p: &G1Affine) -> [u8; G1_LEN] {
    p.to_compressed()
}

/// Decodes a G1 point received from a peer: canonical compressed encoding, on the
/// curve, in the prime-order subgroup, not the identity.
pub fn decode_g1(bytes: &[u8]) -> Result<G1Affine, BlsError> {
    let arr: &[u8; G1_LEN] = bytes.try_into().map_err(|_| BlsError::Length {
        got: bytes.len(),
        expected: G1_LEN,
    })?;
    let p = Option::<G1Affine>::from(G1Affine::from_compressed(arr)).ok_or(BlsError::InvalidG1)?;
    if bool::from(p.is_identity()) {
        return Err(BlsError::Identity);
    }
    Ok(p)
}

/// [`decode_g1`] on `bytes.len() / G1_LEN` packed points, in parallel. `bytes` must be
/// a whole number of points (callers check lengths against announced sizes first).
pub fn decode_g1_batch(bytes: &[u8]) -> Result<Vec<G1Affine>, (usize, BlsError)> {
    if !bytes.len().is_multiple_of(G1_LEN) {
        return Err((
            bytes.len() / G1_LEN,
            BlsError::Length {
                got: bytes.len() % G1_LEN,
                expected: G1_LEN,
            },
        ));
    }
    bytes
        .par_chunks_exact(G1_LEN)
        .enumerate()
        .map(|(i, c)| decode_g1(c).map_err(|e| (i, e)))
        .collect()
}

/// Packs G1 points, compressed, back to back.
pub fn encode_g1_batch(points: &[G1Affine]) -> Vec<u8> {
    let mut out = vec![0u8; points.len() * G1_LEN];
    out.par_chunks_exact_mut(G1_LEN)
        .zip(points.par_iter())
        .for_each(|(o, p)| o.copy_from_slice(&p.to_compressed()));
    out
}

/// Projective to affine for many points at once (one inversion).
pub fn to_affine_batch(points: &[G1Projective]) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::identity(); points.len()];
    G1Projective::batch_normalize(points, &mut out);
    out
}

/// Compressed encoding of a G2 point.
pub fn encode_g2(p: &G2Affine) -> [u8; G2_LEN] {
    p.to_compressed()
}

/// Decodes a G2 point received from a peer (as [`decode_g1`]).
pub fn decode_g2(bytes: &[u8]) -> Result<G2Affine, BlsError> {
    let arr: &[u8; G2_LEN] = bytes.try_into().map_err(|_| BlsError::Length {
        got: bytes.len(),
        expected: G2_LEN,
    })?;
    let p = Option::<G2Affine>::from(G2Affine::from_compressed(arr)).ok_or(BlsError::InvalidG2)?;
    if bool::from(p.is_identity()) {
        return Err(BlsError::Identity);
    }
    Ok(p)
}

/// `g2^s`: the server's per-run element `S` of Falzon and Markatou, Figs. 2-3.
pub fn g2_power(s: &Scalar) -> G2Affine {
    (G2Projective::generator() * s).to_affine()
}

/// A uniformly random non-zero scalar.
pub fn random_scalar(rng: &mut SessionRng) -> Scalar {
    loop {
        let mut limbs = [0u64; 4];
        for l in &mut limbs {
            *l = rng.next_u64();
        }
        // q < 2^255: drop the top bit, then reject the (about half) values >= q.
        limbs[3] &= u64::MAX >> 1;
        if let Some(s) = Option::<Scalar>::from(Scalar::from_u64s_le(&limbs))
            && !bool::from(ff::Field::is_zero(&s))
        {
            return s;
        }
    }
}

/// A scalar from 128 bits (challenges and batching coefficients: 128-bit soundness).
pub fn scalar_from_u128(v: u128) -> Scalar {
    Scalar::from_u64s_le(&[v as u64, (v >> 64) as u64, 0, 0]).unwrap()
}

/// Big-endian canonical encoding of a scalar.
pub fn encode_scalar(s: &Scalar) -> [u8; SCALAR_LEN] {
    s.to_bytes_be()
}

/// Decodes a canonical non-zero scalar.
pub fn decode_scalar(bytes: &[u8]) -> Result<Scalar, BlsError> {
    let arr: &[u8; SCALAR_LEN] = bytes.try_into().map_err(|_| BlsError::Length {
        got: bytes.len(),
        expected: SCALAR_LEN,
    })?;
    let s = Option::<Scalar>::from(Scalar::from_bytes_be(arr)).ok_or(BlsError::InvalidScalar)?;
    if bool::from(ff::Field::is_zero(&s)) {
        return Err(BlsError::InvalidScalar);
    }
    Ok(s)
}

/// `s^-1` for a non-zero scalar.
pub fn invert_scalar(s: &Scalar) -> Scalar {
    Option::from(ff::Field::invert(s)).expect("non-zero scalar")
}

/// The judge's BLS signing key. A signature is `h^sk` for a point `h` the caller hashed
/// (BLS, Falzon and Markatou, Sec. 3.4); the public key is `g2^sk`.
pub struct SecretKey(Scalar);

impl SecretKey {
    pub fn generate(rng: &mut SessionRng) -> Self {
        Self(random_scalar(rng))
    }

    pub fn to_bytes(&self) -> [u8; SCALAR_LEN] {
        encode_scalar(&self.0)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BlsError> {
        decode_scalar(bytes).map(Self)
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey((G2Projective::generator() * self.0).to_affine())
    }

    /// `h^sk` for each point, in parallel.
    pub fn sign_points(&self, points: &[G1Affine]) -> Vec<G1Affine> {
        let signed: Vec<G1Projective> = points.par_iter().map(|h| h * self.0).collect();
        to_affine_batch(&signed)
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        // Best effort: blstrs scalars do not implement Zeroize.
        self.0 = Scalar::from(0u64);
    }
}

/// The judge's public key `pk = g2^sk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey(G2Affine);

impl PublicKey {
    pub fn to_bytes(&self) -> [u8; G2_LEN] {
        encode_g2(&self.0)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BlsError> {
        decode_g2(bytes).map(Self)
    }

    pub fn point(&self) -> &G2Affine {
        &self.0
    }

    /// SHA-256 of the encoding: how parties check they trust the same judge.
    pub fn fingerprint(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"privset/v1/bls-public-key/");
        h.update(self.to_bytes());
        h.finalize().into()
    }

    /// `pk^s` prepared for pairings (the server's per-run key of Falzon and Markatou, Figs. 2-3).
    pub fn blinded(&self, s: &Scalar) -> G2Affine {
        (self.0 * s).to_affine()
    }

    /// Checks every `(message point, signature)` pair at once: with random 128-bit
    /// `rho_i`, `e(sum rho_i sig_i, g2) == e(sum rho_i h_i, pk)`, two multi-scalar
    /// multiplications and two Miller loops instead of two pairings per signature. A
    /// single bad signature passes with probability at most 2^-128.
    pub fn verify_batch(
        &self,
        messages: &[G1Affine],
        signatures: &[G1Affine],
        rng: &mut SessionRng,
    ) -> Result<(), BlsError> {
        assert_eq!(
            messages.len(),
            signatures.len(),
            "one signature per message"
        );
        if messages.is_empty() {
            return Ok(());
        }
        let rho: Vec<Scalar> = (0..messages.len())
            .map(|_| scalar_from_u128(((rng.next_u64() as u128) << 64) | rng.next_u64() as u128))
            .collect();
        let (sig_sum, msg_sum) = rayon::join(|| msm(signatures, &rho), || msm(messages, &rho));
        let lhs = -G2Affine::generator();
        let terms = [
            (&sig_sum.to_affine(), &G2Prepared::from(lhs)),
            (&msg_sum.to_affine(), &G2Prepared::from(self.0)),
        ];
        let terms: Vec<(&G1Affine, &G2Prepared)> = terms.iter().map(|(a, b)| (*a, *b)).collect();
        let product = Bls12::multi_miller_loop(&terms).final_exponentiation();
        if bool::from(product.is_identity()) {
            Ok(())
        } else {
            Err(BlsError::BadSignature)
        }
    }
}

/// `sum scalars_i * points_i` (blst's Pippenger; the identity for no points).
pub fn msm(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    assert_eq!(points.len(), scalars.len(), "one scalar per point");
    if points.is_empty() {
        // blst's Pippenger indexes its first point unconditionally.
        return G1Projective::identity();
    }
    let projective: Vec<G1Projective> = points.iter().map(|p| p.to_curve()).collect();
    G1Projective::multi_exp(&projective, scalars)
}

/// Prepares a fixed G2 point for many pairings with it (line functions precomputed).
pub fn prepare(q: &G2Affine) -> G2Prepared {
    G2Prepared::from(*q)
}

/// `e(p, q)` with `q` prepared.
pub fn pairing_prepared(p: &G1Affine, q: &G2Prepared) -> Gt {
    Bls12::multi_miller_loop(&[(p, q)]).final_exponentiation()
}

/// The tag a pairing value travels as: the first [`TAG_LEN`] bytes of
/// SHA-256(`key` || canonical encoding of the Gt element). `key` is per run, so tags of
/// different runs are unrelated. 128 bits keep a false match among `n * m` pairs below
/// `n * m / 2^128`.
pub fn gt_tag(value: &Gt, key: &[u8; 32]) -> [u8; TAG_LEN] {
    let mut h = Sha256::new();
    h.update(key);
    if bool::from(value.is_identity()) {
        // Only a pairing with the identity gives 1, and decoding refuses the identity;
        // torus compression is undefined there, so give it its own encoding.
        h.update([0u8; 288]);
    } else {
        // Torus-compressed (288 bytes): canonical and injective on Gt minus 1.
        let mut bytes = Vec::with_capacity(288);
        blstrs::Compress::write_compressed(*value, &mut bytes).expect("writing to a Vec");
        h.update(&bytes);
    }
    let digest = h.finalize();
    digest[..TAG_LEN].try_into().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> SessionRng {
        SessionRng::from_seed([7; 32])
    }

    #[test]
    fn signatures_verify_and_bind_the_key() {
        let mut r = rng();
        let sk = SecretKey::generate(&mut r);
        let pk = sk.public_key();
        let msgs: Vec<G1Affine> = (0..20u32)
            .map(|i| hash_to_g1(&i.to_be_bytes(), b"test").to_affine())
            .collect();
        let sigs = sk.sign_points(&msgs);
        pk.verify_batch(&msgs, &sigs, &mut r).unwrap();
        let mut bad = sigs.clone();
        bad[3] = bad[4];
        assert_eq!(
            pk.verify_batch(&msgs, &bad, &mut r),
            Err(BlsError::BadSignature)
        );
        let other = SecretKey::generate(&mut r).public_key();
        assert_eq!(
            other.verify_batch(&msgs, &sigs, &mut r),
            Err(BlsError::BadSignature)
        );
        let back = SecretKey::from_bytes(&sk.to_bytes()).unwrap();
        assert_eq!(back.public_key(), pk);
        assert_eq!(PublicKey::from_bytes(&pk.to_bytes()).unwrap(), pk);
    }

    #[test]
    fn pairing_identity_of_apsi() {
        // e(H(x)^sk, g2^s) == e(H(x), pk^s): the equation Falzon and Markatou, Fig. 2 relies on.
        let mut r = rng();
        let sk = SecretKey::generate(&mut r);
        let h = hash_to_g1(b"item", b"test").to_affine();
        let sig = sk.sign_points(&[h])[0];
        let s = random_scalar(&mut r);
        let big_s = (G2Projective::generator() * s).to_affine();
        let key = [1u8; 32];
        let client = gt_tag(&pairing_prepared(&sig, &prepare(&big_s)), &key);
        let server = gt_tag(
            &pairing_prepared(&h, &prepare(&sk.public_key().blinded(&s))),
            &key,
        );
        assert_eq!(client, server);
        let other = hash_to_g1(b"other", b"test").to_affine();
        let server_other = gt_tag(
            &pairing_prepared(&other, &prepare(&sk.public_key().blinded(&s))),
            &key,
        );
        assert_ne!(client, server_other);
        assert_ne!(
            client,
            gt_tag(&pairing_prepared(&sig, &prepare(&big_s)), &[2; 32])
        );
    }

    #[test]
    fn decoding_rejects_bad_points() {
        let p = hash_to_g1(b"x", b"test").to_affine();
        let enc = encode_g1(&p);
        assert_eq!(decode_g1(&enc).unwrap(), p);
        assert_eq!(
            decode_g1(&G1Affine::identity().to_compressed()),
            Err(BlsError::Identity)
        );
        assert!(matches!(
            decode_g1(&enc[..47]),
            Err(BlsError::Length { .. })
        ));
        let mut bad = enc;
        bad[5] ^= 1;
        // Flipping a bit of x almost surely leaves the curve or the subgroup.
        assert!(decode_g1(&bad).is_err());
        assert_eq!(decode_g1(&[0xff; 48]), Err(BlsError::InvalidG1));
        assert!(decode_g2(&[0u8; 96]).is_err());
        assert_eq!(
            decode_g2(&G2Affine::identity().to_compressed()),
            Err(BlsError::Identity)
        );
        assert_eq!(decode_scalar(&[0u8; 32]), Err(BlsError::InvalidScalar));
        assert_eq!(decode_scalar(&[0xff; 32]), Err(BlsError::InvalidScalar));
        let batch = encode_g1_batch(&[p, p]);
        assert_eq!(decode_g1_batch(&batch).unwrap(), vec![p, p]);
        let mut bad_batch = batch.clone();
        bad_batch[48..].copy_from_slice(&G1Affine::identity().to_compressed());
        assert_eq!(
            decode_g1_batch(&bad_batch).unwrap_err(),
            (1, BlsError::Identity)
        );
    }
}
