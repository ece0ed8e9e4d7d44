//! ristretto255 (RFC 9496) on curve25519-dalek.
//!
//! ristretto255 is a prime-order group built over Curve25519: every canonical 32-byte
//! string decodes to at most one element and there is no cofactor to clear, so DDH-based
//! protocols can use it directly. Hash-to-group is RFC 9380 `hash_to_ristretto255`
//! (RFC 9496 §4.3.4): `expand_message_xmd` with SHA-512 to 64 bytes, then the
//! one-way map `RistrettoPoint::from_uniform_bytes` (two Elligator maps added).

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::Sha512;
use zeroize::Zeroizing;

use super::xmd::expand_message_xmd_into;
use super::{GroupError, GroupId, PrimeGroup};
use crate::rng::SessionRng;

/// The ristretto255 group (RFC 9496).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ristretto255;

impl Ristretto255 {
    /// RFC 9496 §4.3.4 one-way map from 64 uniform bytes to an element. Exposed for the
    /// RFC 9496 Appendix A.3 known-answer tests.
    pub fn from_uniform_bytes(bytes: &[u8; 64]) -> RistrettoPoint {
        RistrettoPoint::from_uniform_bytes(bytes)
    }
}

impl PrimeGroup for Ristretto255 {
    const ID: GroupId = GroupId::Ristretto255;
    const ELEMENT_LEN: usize = 32;

    type Element = RistrettoPoint;
    type Scalar = Scalar;

    /// 64 random bytes reduced mod ℓ (bias < 2⁻²⁵⁰), redrawn in the (2⁻²⁵²) case of zero:
    /// a zero exponent would map every element to the identity.
    fn random_scalar(rng: &mut SessionRng) -> Scalar {
        let mut wide = Zeroizing::new([0u8; 64]);
        loop {
            rng.fill(wide.as_mut());
            let k = Scalar::from_bytes_mod_order_wide(&wide);
            if k != Scalar::ZERO {
                return k;
            }
        }
    }

    fn invert_scalar(k: &Scalar) -> Scalar {
        k.invert()
    }

    fn mul_scalars(a: &Scalar, b: &Scalar) -> Scalar {
        a * b
    }

    fn hash_to_group(dst: &[u8], msg: &[u8]) -> RistrettoPoint {
        let mut uniform = [0u8; 64];
        expand_message_xmd_into::<Sha512>(&[msg], dst, &mut uniform)
            .expect("64 bytes is within expand_message_xmd's limits");
        RistrettoPoint::from_uniform_bytes(&uniform)
    }

    fn mul(element: &RistrettoPoint, k: &Scalar) -> RistrettoPoint {
        element * k
    }

    fn encode(element: &RistrettoPoint, out: &mut [u8]) {
        out.copy_from_slice(element.compress().as_bytes());
    }

    /// RFC 9496 §4.3.1 decode (dalek's `decompress` rejects non-canonical field
    /// encodings, negative `s` and non-square cases), then rejects the identity, whose
    /// only canonical encoding is 32 zero bytes.
    fn decode(bytes: &[u8]) -> Result<RistrettoPoint, GroupError> {
        let compressed = CompressedRistretto::from_slice(bytes)
            .map_err(|_| GroupError::NonCanonical { index: 0 })?;
        let point = compressed
            .decompress()
            .ok_or(GroupError::NonCanonical { index: 0 })?;
        if compressed.as_bytes().iter().all(|&b| b == 0) {
            return Err(GroupError::Identity { index: 0 });
        }
        Ok(point)
    }

    type Product = RistrettoPoint;

    /// `k/2`: [`Self::encode_batch`] doubles while compressing, for free.
    fn batch_exponent(k: &Scalar) -> Scalar {
        k.div_by_2()
    }

    fn mul_for_batch(element: &RistrettoPoint, e: &Scalar) -> RistrettoPoint {
        element * e
    }

    /// `encode(2·P)` for each point with `double_and_compress_batch`: one shared
    /// inversion per chunk (≈0.5 µs per point instead of ≈3.7 µs for `compress`).
    fn encode_batch(products: &[RistrettoPoint], out: &mut [u8]) {
        let compressed = RistrettoPoint::double_and_compress_batch(products);
        for (o, c) in out
            .chunks_exact_mut(Self::ELEMENT_LEN)
            .zip(compressed.iter())
        {
            o.copy_from_slice(c.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::BATCH_CHUNK;
    use crate::group::conformance;

    #[test]
    fn ristretto_conformance() {
        conformance::run_all::<Ristretto255>();
    }

    #[test]
    fn identity_is_reported_as_identity() {
        assert_eq!(
            Ristretto255::decode(&[0u8; 32]),
            Err(GroupError::Identity { index: 0 })
        );
        let mut packed = vec![0u8; 3 * 32];
        let mut rng = SessionRng::from_seed([3; 32]);
        let k = Ristretto255::random_scalar(&mut rng);
        let e = Ristretto255::hash_to_group(b"t", b"x");
        Ristretto255::encode(&e, &mut packed[..32]);
        Ristretto255::encode(&e, &mut packed[64..]);
        assert_eq!(
            Ristretto255::decode_mul_encode_batch(&packed, &k),
            Err(GroupError::Identity { index: 1 })
        );
    }

    #[test]
    fn batch_spans_several_chunks() {
        let items: Vec<Vec<u8>> = (0..(2 * BATCH_CHUNK + 7) as u32)
            .map(|i| i.to_be_bytes().to_vec())
            .collect();
        let mut rng = SessionRng::from_seed([4; 32]);
        let k = Ristretto255::random_scalar(&mut rng);
        let batch = Ristretto255::hash_mul_encode_batch(b"dst", &items, &k);
        for (i, item) in items.iter().enumerate().step_by(97) {
            let mut one = [0u8; 32];
            Ristretto255::encode(
                &Ristretto255::mul(&Ristretto255::hash_to_group(b"dst", item), &k),
                &mut one,
            );
            assert_eq!(&batch[i * 32..(i + 1) * 32], &one);
        }
    }
}
