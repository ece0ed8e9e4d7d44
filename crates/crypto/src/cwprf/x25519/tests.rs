//! The batch functions through the public trait, and the two backends against each
//! other (the scalar one is exercised explicitly, whatever the CPU).

use rug::Integer;

use super::*;

fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::Scalar];
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx512_ifma() {
        all.push(Backend::Ifma);
    } else {
        eprintln!("only the scalar backend: this CPU has no AVX-512 IFMA");
    }
    all
}

fn items(n: usize) -> Vec<Vec<u8>> {
    (0..n as u32).map(|i| i.to_be_bytes().to_vec()).collect()
}

fn encode(u: &Integer) -> [u8; 32] {
    let mut bytes = u.to_digits::<u8>(rug::integer::Order::Lsf);
    bytes.resize(32, 0);
    bytes.try_into().unwrap()
}

fn field_prime() -> Integer {
    (Integer::from(1) << 255u32) - 19u32
}

/// A u-coordinate on the twist (some small u whose right-hand side is a non-square).
fn twist_point() -> [u8; 32] {
    let p = field_prime();
    let u = (2u32..)
        .find(|&u| !scalar::on_curve(&Integer::from(u), &p))
        .unwrap();
    encode(&Integer::from(u))
}

#[test]
fn commutes_and_differs_per_key() {
    let mut rng = SessionRng::from_seed([7; 32]);
    let k1 = X25519::random_key(&mut rng);
    let k2 = X25519::random_key(&mut rng);
    let items = items(300);
    let a = X25519::hash_eval_batch(b"dst", &items, &k1);
    let b = X25519::hash_eval_batch(b"dst", &items, &k2);
    assert_ne!(a, b);
    let ab = X25519::eval_batch(&a, &k2).unwrap();
    let ba = X25519::eval_batch(&b, &k1).unwrap();
    assert_eq!(ab, ba);
    X25519::validate_batch(&ab).unwrap();
}

#[test]
fn clamped_key_for_is_clamped_and_acts_as_its_scalar() {
    let mut rng = SessionRng::from_seed([3; 32]);
    let mut found = 0;
    for _ in 0..200 {
        let mut wide = [0u8; 64];
        rng.fill(&mut wide);
        let s = Scalar::from_bytes_mod_order_wide(&wide);
        if let Some(key) = clamped_key_for(&s) {
            found += 1;
            assert_eq!(key.0[0] & 7, 0, "a multiple of the cofactor");
            assert_eq!(key.0[31] >> 6, 1, "bit 254 set, bit 255 clear");
            assert_eq!(key.clamped_scalar(), s);
        }
    }
    // About half of all scalars have a clamped representative (200 draws: 5.6 standard
    // deviations either side).
    assert!((60..=140).contains(&found), "{found} of 200");
}

/// `F_unblind(F_key(F_blind(H(x))))` for every item: a blinded OPRF's round trip.
fn blinded_round_trip(
    backend: Backend,
    items: &[Vec<u8>],
    blind: &X25519Key,
    key: &X25519Key,
    unblind: &X25519Key,
) -> Vec<u8> {
    let blinded = X25519::hash_eval_with(backend, b"dst", items, blind);
    let answered = X25519::eval_with(backend, &blinded, key).unwrap();
    X25519::eval_with(backend, &answered, unblind).unwrap()
}

/// `F_u(F_k2(F_b(H(x)))) = F_k2(F_k(H(x)))` for the unblinding key `u` of `(b, k)`, on
/// both backends: the identity private-ID's distributed OPRF rests on.
#[test]
fn the_unblinding_key_removes_the_blind() {
    let mut rng = SessionRng::from_seed([5; 32]);
    let items = items(40);
    let other = X25519::random_key(&mut rng);
    let mut found = 0;
    for _ in 0..24 {
        let key = X25519::random_key(&mut rng);
        let blind = X25519::random_key(&mut rng);
        let Some(unblind) = X25519::unblinding_key(&blind, &key) else {
            continue;
        };
        found += 1;
        for backend in backends() {
            let expected = X25519::eval_with(
                backend,
                &X25519::hash_eval_with(backend, b"dst", &items, &key),
                &other,
            )
            .unwrap();
            let unblinded = blinded_round_trip(backend, &items, &blind, &other, &unblind);
            assert_eq!(unblinded, expected, "{backend:?}");
        }
    }
    assert!(found >= 4, "{found} of 24 blinds had an unblinding key");
}

/// `F_u(F_k(F_b(H(x)))) = F_k(H(x))` for the inverse key `u` of the blind `b`, on both
/// backends: the identity unbalanced PSI's OPRF client rests on (it does not know `k`).
/// A key without an inverse key is declined, about half of the time.
#[test]
fn the_inverse_key_removes_a_blind_under_an_unknown_key() {
    let mut rng = SessionRng::from_seed([6; 32]);
    let items = items(40);
    let key = X25519::random_key(&mut rng);
    let mut found = 0;
    for _ in 0..24 {
        let blind = X25519::random_key(&mut rng);
        let Some(inverse) = X25519::invert_key(&blind) else {
            continue;
        };
        found += 1;
        assert_eq!(
            inverse.clamped_scalar() * blind.clamped_scalar(),
            Scalar::ONE
        );
        for backend in backends() {
            let expected = X25519::hash_eval_with(backend, b"dst", &items, &key);
            let unblinded = blinded_round_trip(backend, &items, &blind, &key, &inverse);
            assert_eq!(unblinded, expected, "{backend:?}");
        }
    }
    assert!(
        (4..=20).contains(&found),
        "{found} of 24 blinds had an inverse key"
    );
}

#[test]
fn backends_agree_on_every_batch_size() {
    let mut rng = SessionRng::from_seed([9; 32]);
    let key = X25519::random_key(&mut rng);
    let other = X25519::random_key(&mut rng);
    // Sizes around the 8 lanes and around BATCH_CHUNK (several chunks, a partial one).
    for n in [
        0usize,
        1,
        3,
        8,
        9,
        31,
        BATCH_CHUNK - 1,
        BATCH_CHUNK + 9,
        2 * BATCH_CHUNK + 1,
    ] {
        let items = items(n);
        let hashed: Vec<Vec<u8>> = backends()
            .into_iter()
            .map(|b| X25519::hash_eval_with(b, b"session-dst", &items, &key))
            .collect();
        assert_eq!(hashed[0].len(), 32 * n);
        assert!(hashed.windows(2).all(|w| w[0] == w[1]), "hash_eval, n {n}");
        let evaluated: Vec<Vec<u8>> = backends()
            .into_iter()
            .map(|b| X25519::eval_with(b, &hashed[0], &other).unwrap())
            .collect();
        assert!(evaluated.windows(2).all(|w| w[0] == w[1]), "eval, n {n}");
        for b in backends() {
            X25519::validate_with(b, &evaluated[0]).unwrap();
        }
    }
}

#[test]
fn invalid_elements_are_reported_at_their_index() {
    let p = field_prime();
    let mut rng = SessionRng::from_seed([8; 32]);
    let key = X25519::random_key(&mut rng);
    let n = BATCH_CHUNK + 20;
    let valid = X25519::hash_eval_batch(b"dst", &items(n), &key);
    let order8: Integer =
        "325606250916557431795983626356110631294008115727848805560023387167927233504"
            .parse()
            .unwrap();
    let mut top_bit = valid[..32].to_vec();
    top_bit[31] |= 0x80;
    let non_canonical: Vec<(&str, [u8; 32])> = vec![
        ("twist", twist_point()),
        ("zero", [0; 32]),
        ("p", encode(&p)),
        ("p + 1", encode(&Integer::from(&p + 1))),
        ("all ones", [0xff; 32]),
        ("bit 255 set", top_bit.try_into().unwrap()),
    ];
    let small_order: Vec<(&str, [u8; 32])> = vec![
        ("one", encode(&Integer::from(1))),
        ("order 8", encode(&order8)),
    ];
    // Lanes 0, 3 and 7 of the first vectors, the last of a chunk, one in the next chunk.
    for index in [0usize, 3, 7, 8, 13, BATCH_CHUNK - 1, BATCH_CHUNK, n - 1] {
        for (expect_identity, (name, bad)) in non_canonical
            .iter()
            .map(|b| (false, b))
            .chain(small_order.iter().map(|b| (true, b)))
        {
            let mut packed = valid.clone();
            packed[32 * index..32 * index + 32].copy_from_slice(bad);
            for backend in backends() {
                let got = X25519::eval_with(backend, &packed, &key);
                let expect = if expect_identity {
                    GroupError::Identity { index }
                } else {
                    GroupError::NonCanonical { index }
                };
                assert_eq!(got, Err(expect.clone()), "{name} at {index}, {backend:?}");
                let validated = X25519::validate_with(backend, &packed);
                if expect_identity {
                    // Validation checks encoding and curve only; small order is found
                    // by the evaluation.
                    assert_eq!(validated, Ok(()), "{name} at {index}, {backend:?}");
                } else {
                    assert_eq!(validated, Err(expect), "{name} at {index}, {backend:?}");
                }
            }
        }
    }
}

#[test]
fn the_first_invalid_element_of_a_chunk_wins() {
    let mut rng = SessionRng::from_seed([10; 32]);
    let key = X25519::random_key(&mut rng);
    let mut packed = X25519::hash_eval_batch(b"dst", &items(40), &key);
    packed[32 * 5..32 * 6].copy_from_slice(&encode(&Integer::from(1)));
    packed[32 * 9..32 * 10].copy_from_slice(&twist_point());
    for backend in backends() {
        assert_eq!(
            X25519::eval_with(backend, &packed, &key),
            Err(GroupError::Identity { index: 5 })
        );
        assert_eq!(
            X25519::validate_with(backend, &packed),
            Err(GroupError::NonCanonical { index: 9 })
        );
    }
}

#[test]
fn wrong_length_is_rejected() {
    let key = X25519::random_key(&mut SessionRng::from_seed([11; 32]));
    for backend in backends() {
        let err = GroupError::BadLength {
            len: 31,
            element_len: 32,
        };
        assert_eq!(
            X25519::eval_with(backend, &[1u8; 31], &key),
            Err(err.clone())
        );
        assert_eq!(X25519::validate_with(backend, &[1u8; 31]), Err(err));
        assert_eq!(X25519::eval_with(backend, &[], &key), Ok(vec![]));
    }
}
