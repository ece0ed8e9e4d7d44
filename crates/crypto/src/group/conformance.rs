//! Conformance suite every [`PrimeGroup`] runs.
//!
//! The protocols rely only on the trait's contract, so each implementation must show
//! the same behaviour: exponentiation commutes (the heart of DH-PSI), encodings are
//! canonical and round-trip, decode rejects everything that is not a non-identity
//! element, the batch fast paths agree with the element-by-element definitions, and
//! hashing is a deterministic, domain-separated function. Elements have no `PartialEq`
//! bound, so every comparison goes through the canonical encoding.
//!
//! Call [`run_all`] from a `#[test]`; the individual checks are public so a failing one
//! can be run alone.

use super::{BATCH_CHUNK, GroupError, PrimeGroup};
use crate::rng::SessionRng;

const DST: &[u8] = b"privset-conformance-v1";

fn enc<G: PrimeGroup>(e: &G::Element) -> Vec<u8> {
    let mut out = vec![0u8; G::ELEMENT_LEN];
    G::encode(e, &mut out);
    out
}

fn rng(tag: u8) -> SessionRng {
    SessionRng::from_seed([tag; 32])
}

/// Runs every check below.
pub fn run_all<G: PrimeGroup>() {
    commutativity::<G>();
    round_trip::<G>();
    rejects_invalid_encodings::<G>();
    accepted_encodings_are_canonical::<G>();
    hash_is_deterministic_and_domain_separated::<G>();
    invert_undoes_mul::<G>();
    random_scalars_differ::<G>();
    batch_hash_matches_single::<G>();
    batch_decode_matches_single::<G>();
    batch_names_bad_index::<G>();
}

/// `(x^a)^b == (x^b)^a`, and `x^a != x`.
pub fn commutativity<G: PrimeGroup>() {
    let mut r = rng(1);
    for i in 0..4u8 {
        let x = G::hash_to_group(DST, &[i]);
        let a = G::random_scalar(&mut r);
        let b = G::random_scalar(&mut r);
        let ab = G::mul(&G::mul(&x, &a), &b);
        let ba = G::mul(&G::mul(&x, &b), &a);
        assert_eq!(
            enc::<G>(&ab),
            enc::<G>(&ba),
            "exponentiation does not commute"
        );
        assert_ne!(enc::<G>(&G::mul(&x, &a)), enc::<G>(&x));
    }
}

/// `decode(encode(e))` re-encodes to the same bytes, for hashed and multiplied elements.
pub fn round_trip<G: PrimeGroup>() {
    let mut r = rng(2);
    for i in 0..16u32 {
        let k = G::random_scalar(&mut r);
        let e = G::mul(&G::hash_to_group(DST, &i.to_le_bytes()), &k);
        let bytes = enc::<G>(&e);
        assert_eq!(bytes.len(), G::ELEMENT_LEN);
        let d = G::decode(&bytes).expect("a valid encoding failed to decode");
        assert_eq!(enc::<G>(&d), bytes, "round trip changed the encoding");
    }
}

/// Fixed invalid inputs: the all-zero string (the identity's encoding, or the
/// fixed-width identity convention), all-0xff, wrong lengths, and valid encodings with
/// a byte appended or removed. None may decode; none may panic.
pub fn rejects_invalid_encodings<G: PrimeGroup>() {
    let zeros = vec![0u8; G::ELEMENT_LEN];
    assert!(
        matches!(
            G::decode(&zeros),
            Err(GroupError::Identity { index: 0 } | GroupError::NonCanonical { index: 0 })
        ),
        "the all-zero (identity) encoding was accepted"
    );
    let ff = vec![0xffu8; G::ELEMENT_LEN];
    assert_eq!(
        G::decode(&ff).err(),
        Some(GroupError::NonCanonical { index: 0 })
    );
    let mut fe = vec![0xffu8; G::ELEMENT_LEN];
    fe[0] = 0xfe;
    assert!(G::decode(&fe).is_err(), "0xfe ff.. was accepted");
    let valid = enc::<G>(&G::hash_to_group(DST, b"valid"));
    for len in [
        0,
        1,
        G::ELEMENT_LEN - 1,
        G::ELEMENT_LEN + 1,
        2 * G::ELEMENT_LEN,
    ] {
        let mut v = valid.clone();
        v.resize(len, 0);
        assert!(G::decode(&v).is_err(), "a {len}-byte string was accepted");
    }
}

/// Whatever decode accepts must be the canonical encoding: `encode(decode(b)) == b` for
/// random strings and single-bit corruptions of valid encodings.
pub fn accepted_encodings_are_canonical<G: PrimeGroup>() {
    let mut r = rng(3);
    let mut buf = vec![0u8; G::ELEMENT_LEN];
    let mut accepted = 0usize;
    for _ in 0..2000 {
        r.fill(&mut buf);
        if let Ok(e) = G::decode(&buf) {
            assert_eq!(enc::<G>(&e), buf, "accepted a non-canonical encoding");
            accepted += 1;
        }
    }
    // Random strings are mostly invalid for both groups.
    assert!(accepted < 1000, "decode accepts most random strings");
    let valid = enc::<G>(&G::hash_to_group(DST, b"flip"));
    for bit in 0..G::ELEMENT_LEN * 8 {
        let mut v = valid.clone();
        v[bit / 8] ^= 1 << (bit % 8);
        if let Ok(e) = G::decode(&v) {
            assert_eq!(enc::<G>(&e), v, "bit {bit} flip accepted non-canonically");
        }
    }
}

/// Same input, same output; a different DST or message gives a different element.
pub fn hash_is_deterministic_and_domain_separated<G: PrimeGroup>() {
    let a = enc::<G>(&G::hash_to_group(DST, b"message"));
    assert_eq!(a, enc::<G>(&G::hash_to_group(DST, b"message")));
    assert_ne!(a, enc::<G>(&G::hash_to_group(b"another-dst", b"message")));
    assert_ne!(a, enc::<G>(&G::hash_to_group(DST, b"messagf")));
    // The empty message and a DST longer than 255 bytes (RFC 9380 §5.3.3) both work.
    let long_dst = [b'd'; 300];
    let e = enc::<G>(&G::hash_to_group(&long_dst, b""));
    assert!(G::decode(&e).is_ok());
    assert_ne!(e, enc::<G>(&G::hash_to_group(&long_dst[..255], b"")));
}

/// `(x^k)^(1/k) == x`.
pub fn invert_undoes_mul<G: PrimeGroup>() {
    let mut r = rng(4);
    for i in 0..4u8 {
        let x = G::hash_to_group(DST, &[b'i', i]);
        let k = G::random_scalar(&mut r);
        let back = G::mul(&G::mul(&x, &k), &G::invert_scalar(&k));
        assert_eq!(enc::<G>(&back), enc::<G>(&x));
    }
}

/// Two draws give different exponents (observed through their effect on an element).
pub fn random_scalars_differ<G: PrimeGroup>() {
    let mut r = rng(5);
    let x = G::hash_to_group(DST, b"x");
    let a = G::random_scalar(&mut r);
    let b = G::random_scalar(&mut r);
    assert_ne!(enc::<G>(&G::mul(&x, &a)), enc::<G>(&G::mul(&x, &b)));
}

/// `hash_mul_encode_batch` equals `encode(hash(item)^k)` item by item, across a chunk
/// boundary, and handles the empty input.
pub fn batch_hash_matches_single<G: PrimeGroup>() {
    let mut r = rng(6);
    let k = G::random_scalar(&mut r);
    let items: Vec<Vec<u8>> = (0..(BATCH_CHUNK + 3) as u32)
        .map(|i| format!("item-{i}").into_bytes())
        .collect();
    let batch = G::hash_mul_encode_batch(DST, &items, &k);
    assert_eq!(batch.len(), items.len() * G::ELEMENT_LEN);
    for (i, item) in items.iter().enumerate() {
        if i % 37 != 0 && i + 3 < items.len() {
            continue; // a sample is enough; the expensive part is the single path
        }
        let one = enc::<G>(&G::mul(&G::hash_to_group(DST, item), &k));
        assert_eq!(
            &batch[i * G::ELEMENT_LEN..(i + 1) * G::ELEMENT_LEN],
            &one[..],
            "batch element {i} differs"
        );
    }
    assert!(G::hash_mul_encode_batch::<Vec<u8>>(DST, &[], &k).is_empty());
}

/// `decode_mul_encode_batch` equals `encode(decode(e)^k)` element by element.
pub fn batch_decode_matches_single<G: PrimeGroup>() {
    let mut r = rng(7);
    let k1 = G::random_scalar(&mut r);
    let k2 = G::random_scalar(&mut r);
    let items: Vec<[u8; 4]> = (0..(BATCH_CHUNK + 5) as u32)
        .map(|i| i.to_be_bytes())
        .collect();
    let packed = G::hash_mul_encode_batch(DST, &items, &k1);
    let out = G::decode_mul_encode_batch(&packed, &k2).expect("valid batch rejected");
    assert_eq!(out.len(), packed.len());
    for i in (0..items.len()).step_by(41).chain([items.len() - 1]) {
        let e = &packed[i * G::ELEMENT_LEN..(i + 1) * G::ELEMENT_LEN];
        let one = enc::<G>(&G::mul(&G::decode(e).unwrap(), &k2));
        assert_eq!(&out[i * G::ELEMENT_LEN..(i + 1) * G::ELEMENT_LEN], &one[..]);
    }
    // Commutativity through the batch paths: (H^k1)^k2 == (H^k2)^k1.
    let other = G::decode_mul_encode_batch(&G::hash_mul_encode_batch(DST, &items, &k2), &k1)
        .expect("valid batch rejected");
    assert_eq!(out, other);
    assert_eq!(G::decode_mul_encode_batch(&[], &k1), Ok(Vec::new()));
}

/// An invalid element makes the batch fail with that element's index; a length that is
/// not a multiple of `ELEMENT_LEN` is `BadLength`.
pub fn batch_names_bad_index<G: PrimeGroup>() {
    let mut r = rng(8);
    let k = G::random_scalar(&mut r);
    let items: Vec<[u8; 2]> = (0..(BATCH_CHUNK + 20) as u16)
        .map(|i| i.to_be_bytes())
        .collect();
    let packed = G::hash_mul_encode_batch(DST, &items, &k);
    let len = G::ELEMENT_LEN;
    for bad_index in [0, 7, BATCH_CHUNK + 11] {
        let mut p = packed.clone();
        p[bad_index * len..(bad_index + 1) * len].fill(0xff);
        assert_eq!(
            G::decode_mul_encode_batch(&p, &k),
            Err(GroupError::NonCanonical { index: bad_index })
        );
        p[bad_index * len..(bad_index + 1) * len].fill(0);
        let err = G::decode_mul_encode_batch(&p, &k).unwrap_err();
        assert!(
            matches!(err, GroupError::Identity { index } | GroupError::NonCanonical { index }
                if index == bad_index),
            "identity at {bad_index} reported as {err:?}"
        );
    }
    assert_eq!(
        G::decode_mul_encode_batch(&packed[..packed.len() - 1], &k),
        Err(GroupError::BadLength {
            len: packed.len() - 1,
            element_len: len
        })
    );
}
