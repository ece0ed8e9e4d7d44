//! Paillier / Damgard-Jurik specifics beyond the shared conformance suite (which runs
//! from the crate's unit tests): known-answer decryption for s = 1, 2, 3, the CRT path
//! against the textbook path, structural rejections, and the slot layout.

use privset_crypto::ahe::paillier::{Ciphertext, Paillier, Params, PublicKey};
use privset_crypto::ahe::{AdditiveHe, ColumnBounds, HeError, SubsetSum};
use privset_crypto::rng::SessionRng;
use rug::Integer;
use rug::integer::Order;

fn key(bits: u32, s: u32, seed: u8) -> (PublicKey, privset_crypto::ahe::paillier::SecretKey) {
    Paillier::keygen(
        &Params {
            modulus_bits: bits,
            s,
        },
        &mut SessionRng::from_seed([seed; 32]),
    )
}

fn ct_bytes(pk: &PublicKey, c: &Integer) -> Vec<u8> {
    let mut out = vec![0u8; Paillier::ciphertext_len(pk)];
    let digits = c.to_digits::<u8>(Order::Msf);
    let off = out.len() - digits.len();
    out[off..].copy_from_slice(&digits);
    out
}

#[test]
fn known_plaintexts_s1_s2_s3() {
    for s in 1..=3u32 {
        let (pk, sk) = key(1024, s, 10 + s as u8);
        let n = pk.n().clone();
        assert_eq!(n.significant_bits(), 1024);
        let ns = pk.plaintext_modulus().clone();
        let ns1 = pk.ciphertext_modulus().clone();
        assert_eq!(Paillier::ciphertext_len(&pk), 128 * (s as usize + 1));
        let g = Integer::from(&n + 1u32);
        let r = Integer::from(0x1234_5678_9abc_def1u64);
        let rn = Integer::from(r.pow_mod_ref(&ns, &ns1).unwrap());
        let mut rng = SessionRng::from_seed([s as u8; 32]);
        for m in [
            Integer::from(0),
            Integer::from(1),
            Integer::from(42),
            Integer::from(u64::MAX) + 17u32,
            Integer::from(&n - 1u32),
            Integer::from(&n + 5u32),
            Integer::from(&ns - 1u32),
            Integer::from(&ns >> 3),
        ] {
            // Textbook encryption, independent of the implementation.
            let mut c = Integer::from(g.pow_mod_ref(&m, &ns1).unwrap());
            c *= &rn;
            c %= &ns1;
            let ct = Ciphertext(c);
            let m = m.modulo(&ns);
            assert_eq!(Paillier::decrypt_integer(&sk, &ct), m, "CRT, s = {s}");
            assert_eq!(sk.decrypt_no_crt(&ct.0), m, "textbook, s = {s}");
            let owner = Paillier::encrypt_owner(&sk, &m, &mut rng);
            assert_eq!(Paillier::decrypt_integer(&sk, &owner), m);
            let full = Paillier::encrypt_integer(&pk, &m, &mut rng);
            assert_eq!(Paillier::decrypt_integer(&sk, &full), m);
            // Decoding accepts them.
            Paillier::decode_ciphertext(&pk, &ct_bytes(&pk, &full.0)).unwrap();
        }
        // Plaintexts wrap modulo n^s.
        let a = Paillier::encrypt_integer(&pk, &Integer::from(&ns - 1u32), &mut rng);
        let b = Paillier::encrypt(&pk, 3, &mut rng);
        assert_eq!(
            Paillier::decrypt_integer(&sk, &Paillier::add(&pk, &a, &b)),
            2
        );
    }
}

#[test]
fn decode_rejects_non_units_and_out_of_range() {
    let (pk, _sk) = key(1024, 2, 20);
    let n = pk.n().clone();
    let ns1 = pk.ciphertext_modulus().clone();
    for bad in [
        Integer::from(0),
        n.clone(),
        Integer::from(&n * 12345u32),
        Integer::from(&ns1 - &n),
        ns1.clone(),
        Integer::from(&ns1 + 1u32),
    ] {
        let b = if bad.significant_bits() as usize > 8 * Paillier::ciphertext_len(&pk) {
            continue;
        } else {
            ct_bytes(&pk, &bad)
        };
        assert!(
            matches!(
                Paillier::decode_ciphertext(&pk, &b),
                Err(HeError::InvalidCiphertext { .. })
            ),
            "accepted {bad}"
        );
    }
    assert!(Paillier::decode_ciphertext(&pk, &ct_bytes(&pk, &Integer::from(1))).is_ok());
}

#[test]
fn public_key_validation() {
    let p1024 = Params {
        modulus_bits: 1024,
        s: 2,
    };
    let (pk, _sk) = key(1024, 2, 30);
    let (pk_big, _sk2) = key(1088, 2, 31);
    let bytes = Paillier::encode_public_key(&pk);
    assert!(Paillier::decode_public_key(&bytes, &p1024).is_ok());
    // A key of another size, or another s, is refused.
    let big = Paillier::encode_public_key(&pk_big);
    assert!(Paillier::decode_public_key(&big, &p1024).is_err());
    assert!(
        Paillier::decode_public_key(
            &bytes,
            &Params {
                modulus_bits: 1088,
                s: 2
            }
        )
        .is_err()
    );
    assert!(
        Paillier::decode_public_key(
            &bytes,
            &Params {
                modulus_bits: 1024,
                s: 3
            }
        )
        .is_err()
    );
    // Even modulus.
    let mut even = bytes.clone();
    even[4 + 127] &= 0xfe;
    assert!(Paillier::decode_public_key(&even, &p1024).is_err());
    // Short modulus (top bit cleared).
    let mut short = bytes.clone();
    short[4] &= 0x7f;
    assert!(Paillier::decode_public_key(&short, &p1024).is_err());
    // h = 0.
    let mut h0 = bytes.clone();
    h0[4 + 128..].fill(0);
    assert!(Paillier::decode_public_key(&h0, &p1024).is_err());
}

#[test]
fn parameter_validation() {
    for (bits, s) in [
        (1000, 2),
        (1056, 2),
        (512, 1),
        (1024, 0),
        (1024, 5),
        (3072, 9),
    ] {
        assert!(
            matches!(
                Params {
                    modulus_bits: bits,
                    s
                }
                .validate(),
                Err(HeError::Parameters(_))
            ),
            "{bits}/{s}"
        );
    }
    assert!(Params::default().validate().is_ok());
    assert_eq!(
        Params::default(),
        Params {
            modulus_bits: 3072,
            s: 2
        }
    );
    assert_eq!(
        Params::SEED_DEPLOYED,
        Params {
            modulus_bits: 1536,
            s: 3
        }
    );
}

#[test]
fn layout_is_minimal_and_safe() {
    for (bits, s) in [(1024u32, 1u32), (1024, 3), (1536, 3)] {
        let (pk, _sk) = key(bits, s, 40 + s as u8);
        let p_bits = pk.plaintext_modulus().significant_bits() as u64 - 1;
        for max_sum in [
            0u128,
            1,
            (1 << 32) - 1,
            ((1u128 << 32) - 1) * 100_000,
            1 << 100,
        ] {
            let b = ColumnBounds {
                items: 10,
                max_value: 1,
                max_sum,
            };
            let lay = Paillier::layout(&pk, &b).unwrap();
            let (k, l, u) = (lay.k as u64, lay.slots as u64, lay.u as u64);
            assert_eq!(u, (128 - max_sum.leading_zeros()) as u64);
            assert_eq!(l, p_bits / k);
            // The owner's statistical distance L·2^u/(2^k − 2^u) + 2^(u−k+1) is at most 2^-40
            // (module docs), and the next narrower width would not be.
            let distance = |k: u64, l: u64| {
                let (two_u, two_k) = (2f64.powi(u as i32), 2f64.powi(k as i32));
                l as f64 * two_u / (two_k - two_u) + 2.0 * two_u / two_k
            };
            assert!(
                distance(k, l) <= 2f64.powi(-40) * (1.0 + 1e-12),
                "max_sum {max_sum}: k {k}, L {l}"
            );
            let lp = p_bits / (k - 1);
            assert!(
                k - 1 <= u + 40 || distance(k - 1, lp) > 2f64.powi(-40),
                "max_sum {max_sum}: k {k} is not minimal"
            );
            assert_eq!(Paillier::sum_ciphertexts(&pk, &b).unwrap(), l as usize);
            assert_eq!(
                Paillier::column_ciphertexts(&pk, &b).unwrap(),
                10usize.div_ceil(l as usize)
            );
        }
        let huge = ColumnBounds {
            items: 1,
            max_value: 1,
            max_sum: u128::MAX,
        };
        if p_bits < 128 + 41 {
            assert!(Paillier::layout(&pk, &huge).is_err());
        }
    }
}

#[test]
fn sum_outputs_hide_non_target_slots() {
    // Decrypting the raw outputs: every slot below 2^k, nothing above k*L, and the
    // target slots are masked (not equal to the per-position sums).
    let (pk, sk) = key(1024, 1, 50);
    let bounds = ColumnBounds {
        items: 100,
        max_value: 1000,
        max_sum: 100_000,
    };
    let lay = Paillier::layout(&pk, &bounds).unwrap();
    let values: Vec<u64> = (0..100).map(|i| 1000 - i).collect();
    let mut rng = SessionRng::from_seed([51; 32]);
    let col = Paillier::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).unwrap();
    let sel: Vec<usize> = (0..100).filter(|i| i % 3 != 0).collect();
    let out = Paillier::sum_selected(&pk, &bounds, &col, &sel, &mut rng).unwrap();
    let ct = Paillier::ciphertext_len(&pk);
    let mut unmasked_targets = 0;
    let mut small_junk = 0;
    for (j, chunk) in out.chunks(ct).enumerate() {
        let c = Paillier::decode_ciphertext(&pk, chunk).unwrap();
        let m = Paillier::decrypt_integer(&sk, &c);
        assert!(m.significant_bits() <= lay.k * lay.slots as u32);
        let sj: u64 = sel
            .iter()
            .filter(|&&i| i % lay.slots == j)
            .map(|&i| values[i])
            .sum();
        let y = Integer::from(&m >> (lay.k * j as u32)).keep_bits(lay.k);
        if y == sj {
            unmasked_targets += 1;
        }
        // Junk slots carry a mask of about k - 1 bits, not the bare junk (< 2^17 here).
        for jj in (0..lay.slots).filter(|&jj| jj != j) {
            let v = Integer::from(&m >> (lay.k * jj as u32)).keep_bits(lay.k);
            if v.significant_bits() <= 17 {
                small_junk += 1;
            }
        }
    }
    assert!(unmasked_targets <= 1);
    assert_eq!(small_junk, 0);
    assert_eq!(
        Paillier::decrypt_sum(&sk, &bounds, &out),
        Ok(sel.iter().map(|&i| values[i] as u128).sum())
    );
}
