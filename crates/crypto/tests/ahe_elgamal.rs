//! Exponential ElGamal specifics beyond the shared conformance suite (which runs from
//! the crate's unit tests): encoding edge cases and decryption limits.

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use privset_crypto::ahe::elgamal::{ElGamal, Params};
use privset_crypto::ahe::{AdditiveHe, ColumnBounds, HeError, SubsetSum};
use privset_crypto::rng::SessionRng;

#[test]
fn ciphertext_identity_rules() {
    let (pk, sk) = ElGamal::keygen(&Params::default(), &mut SessionRng::from_seed([1; 32]));
    let g = RISTRETTO_BASEPOINT_POINT.compress().to_bytes();
    // c1 = G, c2 = identity: allowed (c2 may be the identity).
    let mut b = [0u8; 64];
    b[..32].copy_from_slice(&g);
    assert!(ElGamal::decode_ciphertext(&pk, &b).is_ok());
    // c1 = identity: rejected.
    let mut b = [0u8; 64];
    b[32..].copy_from_slice(&g);
    assert!(matches!(
        ElGamal::decode_ciphertext(&pk, &b),
        Err(HeError::InvalidCiphertext { .. })
    ));
    // Non-canonical field element (p = 2^255 - 19 itself, encoded little-endian).
    let mut nc = [0xffu8; 32];
    nc[0] = 0xed;
    nc[31] = 0x7f;
    let mut b = [0u8; 64];
    b[..32].copy_from_slice(&nc);
    assert!(ElGamal::decode_ciphertext(&pk, &b).is_err());
    // Public key: identity and garbage refused.
    assert!(ElGamal::decode_public_key(&[0u8; 32], &Params::default()).is_err());
    assert!(ElGamal::decode_public_key(&nc, &Params::default()).is_err());
    assert!(ElGamal::decode_public_key(&g, &Params { max_table_bits: 0 }).is_err());
    let _ = sk;
}

#[test]
fn undecryptable_bounds_are_refused() {
    let (pk, sk) = ElGamal::keygen(&Params::default(), &mut SessionRng::from_seed([2; 32]));
    let mut rng = SessionRng::from_seed([3; 32]);
    // 2^44 - 1 is the largest range with the default 2^22 table.
    let ok = ColumnBounds {
        items: 1,
        max_value: 5,
        max_sum: (1 << 44) - 1,
    };
    assert_eq!(ElGamal::sum_ciphertexts(&pk, &ok), Ok(1));
    let col = ElGamal::encrypt_column(&pk, &sk, &ok, &[5], &mut rng).unwrap();
    let sum = ElGamal::sum_selected(&pk, &ok, &col, &[0], &mut rng).unwrap();
    assert_eq!(ElGamal::decrypt_sum(&sk, &ok, &sum), Ok(5));
    for max_sum in [1u128 << 44, u64::MAX as u128 + 1, u128::MAX] {
        let b = ColumnBounds { max_sum, ..ok };
        let is_param = |r: Result<_, HeError>| matches!(r, Err(HeError::Parameters(_)));
        assert!(is_param(ElGamal::column_ciphertexts(&pk, &b).map(|_| ())));
        assert!(is_param(
            ElGamal::encrypt_column(&pk, &sk, &b, &[5], &mut rng).map(|_| ())
        ));
        assert!(is_param(
            ElGamal::sum_selected(&pk, &b, &col, &[0], &mut rng).map(|_| ())
        ));
        assert!(is_param(ElGamal::decrypt_sum(&sk, &b, &sum).map(|_| ())));
    }
    let c = ElGamal::encrypt(&pk, 1, &mut rng);
    assert!(matches!(
        ElGamal::decrypt(&sk, &c, u64::MAX),
        Err(HeError::Parameters(_))
    ));
}

#[test]
fn large_sum_decrypts() {
    // A 2^36-range sum with the default 2^20 table: ~2^16 giant steps.
    let (pk, sk) = ElGamal::keygen(&Params::default(), &mut SessionRng::from_seed([4; 32]));
    let mut rng = SessionRng::from_seed([5; 32]);
    let m = (1u64 << 36) - 3;
    let c = ElGamal::encrypt(&pk, m, &mut rng);
    assert_eq!(ElGamal::decrypt(&sk, &c, 1 << 36), Ok(m));
    assert!(ElGamal::decrypt(&sk, &c, m - 1).is_err());
}
