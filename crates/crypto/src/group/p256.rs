//! NIST P-256 with RFC 9380 suite `P256_XMD:SHA-256_SSWU_RO_`, on RustCrypto's `p256`.
//!
//! P-256 has cofactor 1, so every non-identity curve point is a generator of the
//! prime-order group and no subgroup check is needed beyond "on the curve".
//!
//! Hash-to-group follows RFC 9380 §3 `hash_to_curve` with the §8.2 suite: our own
//! [`expand_message_xmd`](super::xmd) with SHA-256 to 96 bytes (L = 48 per field
//! element, §5.2 / §8.2), each 48-byte half reduced mod p (`hash_to_field`), mapped by
//! the crate's simplified SWU (§6.6.2), and the two points added (no cofactor to
//! clear). We use our expander rather than the crate's `GroupDigest` because that needs
//! sha2 0.11 and the crate's `group-digest` feature; the output is checked against
//! RFC 9380 Appendix J.1.1 in `tests/group_vectors.rs`.
//!
//! Two encodings, as Chen et al. 2024, Sec. 7.5 compares them: SEC1 compressed ([`P256`], 33
//! bytes `0x02|0x03 || x`, decoding costs a square root) and SEC1 uncompressed
//! ([`P256Uncompressed`], 65 bytes `0x04 || x || y`, decoding costs one curve-equation
//! check). The group and hashing are identical; only the wire form differs.

use p256::elliptic_curve::array::Array;
use p256::elliptic_curve::consts::U48;
use p256::elliptic_curve::ops::Reduce;
use p256::elliptic_curve::point::DecompressPoint;
use p256::elliptic_curve::sec1::{FromSec1Point, ToSec1Point};
use p256::elliptic_curve::subtle::Choice;
use p256::elliptic_curve::{BatchNormalize, Field};
use p256::hash2curve::MapToCurve;
use p256::{AffinePoint, FieldBytes, NistP256, ProjectivePoint, Scalar, Sec1Point};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::xmd::expand_message_xmd_into;
use super::{GroupError, GroupId, PrimeGroup};
use crate::rng::SessionRng;

/// The base field element type the crate's SWU map works on.
type Fe = <NistP256 as MapToCurve>::FieldElement;

/// NIST P-256 (secp256r1) with RFC 9380 hashing; `COMPRESSED` picks the SEC1 wire form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct P256Curve<const COMPRESSED: bool>;

/// P-256 with 33-byte SEC1 compressed elements.
pub type P256 = P256Curve<true>;
/// P-256 with 65-byte SEC1 uncompressed elements.
pub type P256Uncompressed = P256Curve<false>;

impl<const COMPRESSED: bool> P256Curve<COMPRESSED> {
    /// RFC 9380 `hash_to_curve` result in projective form.
    fn hash_projective(dst: &[u8], msg: &[u8]) -> ProjectivePoint {
        // hash_to_field(msg, 2): len_in_bytes = count * m * L = 2 * 1 * 48.
        let mut uniform = [0u8; 96];
        expand_message_xmd_into::<Sha256>(&[msg], dst, &mut uniform)
            .expect("96 bytes is within expand_message_xmd's limits");
        let mut u = [Fe::default(); 2];
        for (ui, chunk) in u.iter_mut().zip(uniform.chunks_exact(48)) {
            let mut wide = Array::<u8, U48>::default();
            wide.copy_from_slice(chunk);
            // OS2IP(tv) mod p, big-endian (§5.2 step 6).
            *ui = <Fe as Reduce<Array<u8, U48>>>::reduce(&wide);
        }
        NistP256::map_to_curve(u[0]) + NistP256::map_to_curve(u[1])
    }
}

impl<const COMPRESSED: bool> PrimeGroup for P256Curve<COMPRESSED> {
    const ID: GroupId = if COMPRESSED {
        GroupId::P256Compressed
    } else {
        GroupId::P256
    };
    const ELEMENT_LEN: usize = if COMPRESSED { 33 } else { 65 };

    type Element = AffinePoint;
    type Scalar = Scalar;

    /// 48 random bytes reduced mod n (bias < 2⁻¹²⁸, as RFC 9380 §5 argues for L = 48),
    /// redrawn if zero.
    fn random_scalar(rng: &mut SessionRng) -> Scalar {
        let mut wide = Zeroizing::new(Array::<u8, U48>::default());
        loop {
            rng.fill(wide.as_mut_slice());
            let k = <Scalar as Reduce<Array<u8, U48>>>::reduce(&wide);
            if !bool::from(k.is_zero()) {
                return k;
            }
        }
    }

    fn invert_scalar(k: &Scalar) -> Scalar {
        // k is non-zero by construction, so the inverse exists; fall back to zero rather
        // than panic if a caller ever passes zero.
        Option::from(k.invert()).unwrap_or(Scalar::ZERO)
    }

    fn mul_scalars(a: &Scalar, b: &Scalar) -> Scalar {
        a * b
    }

    fn hash_to_group(dst: &[u8], msg: &[u8]) -> AffinePoint {
        Self::hash_projective(dst, msg).into()
    }

    fn mul(element: &AffinePoint, k: &Scalar) -> AffinePoint {
        (*element * k).into()
    }

    /// SEC1 compressed or uncompressed form. The identity (never a valid protocol value)
    /// would be written as all-zero bytes, which [`Self::decode`] rejects.
    fn encode(element: &AffinePoint, out: &mut [u8]) {
        out.copy_from_slice(element.to_sec1_point(COMPRESSED).as_bytes());
    }

    /// Compressed: accepts only `0x02|0x03 || x` with `x < p` and `x³ - 3x + b` a
    /// square. Uncompressed: only `0x04 || x || y` with `x, y < p` on the curve. Either
    /// way the canonical encoding of a non-identity point (SEC1 §2.3.4, cofactor 1).
    /// All-zero bytes (the fixed-width identity convention) is reported as the identity.
    fn decode(bytes: &[u8]) -> Result<AffinePoint, GroupError> {
        if bytes.len() != Self::ELEMENT_LEN {
            return Err(GroupError::NonCanonical { index: 0 });
        }
        if !COMPRESSED {
            if bytes.iter().all(|&b| b == 0) {
                return Err(GroupError::Identity { index: 0 });
            }
            if bytes[0] != 0x04 {
                return Err(GroupError::NonCanonical { index: 0 });
            }
            let point =
                Sec1Point::from_bytes(bytes).map_err(|_| GroupError::NonCanonical { index: 0 })?;
            return Option::from(AffinePoint::from_sec1_point(&point))
                .ok_or(GroupError::NonCanonical { index: 0 });
        }
        let y_is_odd = match bytes[0] {
            0x02 => 0u8,
            0x03 => 1u8,
            _ if bytes.iter().all(|&b| b == 0) => return Err(GroupError::Identity { index: 0 }),
            _ => return Err(GroupError::NonCanonical { index: 0 }),
        };
        let mut x = FieldBytes::default();
        x.copy_from_slice(&bytes[1..]);
        Option::from(AffinePoint::decompress(&x, Choice::from(y_is_odd)))
            .ok_or(GroupError::NonCanonical { index: 0 })
    }

    /// Projective: the affine conversion (an inversion) is shared by a chunk.
    type Product = ProjectivePoint;

    fn batch_exponent(k: &Scalar) -> Scalar {
        *k
    }

    fn mul_for_batch(element: &AffinePoint, e: &Scalar) -> ProjectivePoint {
        *element * e
    }

    /// Compressed encodings of a chunk, with one batched inversion for all of it.
    fn encode_batch(products: &[ProjectivePoint], out: &mut [u8]) {
        let affine = ProjectivePoint::batch_normalize(products);
        for (o, p) in out.chunks_exact_mut(Self::ELEMENT_LEN).zip(affine.iter()) {
            Self::encode(p, o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::BATCH_CHUNK;
    use crate::group::conformance;

    #[test]
    fn p256_conformance() {
        conformance::run_all::<P256>();
    }

    #[test]
    fn p256_uncompressed_conformance() {
        conformance::run_all::<P256Uncompressed>();
    }

    #[test]
    fn uncompressed_rejects_off_curve_and_wrong_prefix() {
        let e = P256Uncompressed::hash_to_group(b"t", b"x");
        let mut enc = [0u8; 65];
        P256Uncompressed::encode(&e, &mut enc);
        assert_eq!(enc[0], 0x04);
        assert!(P256Uncompressed::decode(&enc).is_ok());
        let mut off = enc;
        off[64] ^= 1;
        assert!(P256Uncompressed::decode(&off).is_err());
        let mut prefix = enc;
        prefix[0] = 0x02;
        assert!(P256Uncompressed::decode(&prefix).is_err());
        assert_eq!(
            P256Uncompressed::decode(&[0u8; 65]),
            Err(GroupError::Identity { index: 0 })
        );
    }

    #[test]
    fn rejects_x_not_below_p_and_bad_prefix() {
        let e = P256::hash_to_group(b"t", b"x");
        let mut enc = [0u8; 33];
        P256::encode(&e, &mut enc);
        assert!(P256::decode(&enc).is_ok());
        // x = p (≡ 0 mod p) is never canonical.
        let p = hex_p();
        for prefix in [0x02, 0x03] {
            let mut bad = [prefix; 33];
            bad[1..].copy_from_slice(&p);
            assert_eq!(
                P256::decode(&bad),
                Err(GroupError::NonCanonical { index: 0 })
            );
        }
        for prefix in [0x00, 0x01, 0x04, 0x06, 0x07, 0xff] {
            let mut bad = enc;
            bad[0] = prefix;
            assert_eq!(
                P256::decode(&bad),
                Err(GroupError::NonCanonical { index: 0 })
            );
        }
        assert_eq!(
            P256::decode(&[0u8; 33]),
            Err(GroupError::Identity { index: 0 })
        );
        // A valid small x written as x + p (which still fits 32 bytes) is rejected.
        let mut checked = 0;
        for small in 1u8..=64 {
            let mut ok = [0u8; 33];
            ok[0] = 0x02;
            ok[32] = small;
            if P256::decode(&ok).is_err() {
                continue;
            }
            let mut big = [0u8; 33];
            big[0] = 0x02;
            let mut carry = small as u16;
            for i in (0..32).rev() {
                let v = p[i] as u16 + carry;
                big[i + 1] = v as u8;
                carry = v >> 8;
            }
            assert_eq!(carry, 0);
            assert_eq!(
                P256::decode(&big),
                Err(GroupError::NonCanonical { index: 0 })
            );
            checked += 1;
        }
        assert!(checked > 0, "no small valid x found");
        // x = 2^256 - 1 ≥ p must be rejected, not reduced.
        let mut bad = [0xffu8; 33];
        bad[0] = 0x02;
        assert!(P256::decode(&bad).is_err());
    }

    fn hex_p() -> [u8; 32] {
        // p = 2^256 - 2^224 + 2^192 + 2^96 - 1
        let mut p = [0xffu8; 32];
        p[4..8].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]);
        p[0..4].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        p[8..20].fill(0x00);
        p
    }

    #[test]
    fn batch_spans_several_chunks() {
        let items: Vec<[u8; 4]> = (0..(BATCH_CHUNK + 5) as u32)
            .map(|i| i.to_be_bytes())
            .collect();
        let mut rng = SessionRng::from_seed([5; 32]);
        let k = P256::random_scalar(&mut rng);
        let batch = P256::hash_mul_encode_batch(b"dst", &items, &k);
        for (i, item) in items.iter().enumerate().step_by(101) {
            let mut one = [0u8; 33];
            P256::encode(&P256::mul(&P256::hash_to_group(b"dst", item), &k), &mut one);
            assert_eq!(&batch[i * 33..(i + 1) * 33], &one);
        }
    }
}
