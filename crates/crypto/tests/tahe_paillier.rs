//! Threshold Paillier / Damgard-Jurik: the shared conformance suite for several
//! `(n, t, s)` on the fixed test primes, the dealer's checks, safe-prime generation, and
//! public-key validation.

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::paillier::{
    Dealer, KeyShare, Params, PublicKey, ThresholdPaillier, insecure_test_primes,
    insecure_test_primes_alt, safe_prime,
};
use privset_crypto::tahe::{TaheError, ThresholdAhe, conformance};
use rug::Integer;
use rug::integer::IsPrime;

fn keys(bits: u32, s: u32, n: u32, t: u32, seed: u8) -> (PublicKey, Vec<KeyShare>) {
    let (p, q) = insecure_test_primes(bits).unwrap();
    Dealer::new(Params {
        modulus_bits: bits,
        s,
        parties: n,
        threshold: t,
    })
    .unwrap()
    .deal_with_primes(&p, &q, &mut SessionRng::from_seed([seed; 32]))
    .unwrap()
}

#[test]
fn conformance_3_of_3() {
    conformance::run_all::<ThresholdPaillier>(&keys(1024, 1, 3, 3, 1).1);
}

#[test]
fn conformance_2_of_3() {
    conformance::run_all::<ThresholdPaillier>(&keys(1024, 1, 3, 2, 2).1);
}

#[test]
fn conformance_3_of_5_s2() {
    conformance::run_all::<ThresholdPaillier>(&keys(1024, 2, 5, 3, 3).1);
}

#[test]
fn conformance_1_of_1() {
    conformance::run_all::<ThresholdPaillier>(&keys(1024, 1, 1, 1, 4).1);
}

#[test]
fn full_plaintexts_and_negatives() {
    let (pk, ks) = keys(1024, 2, 4, 2, 10);
    let mut rng = SessionRng::from_seed([11; 32]);
    let ns = pk.plaintext_modulus().clone();
    for m in [
        Integer::from(0),
        Integer::from(u64::MAX) + 1u32,
        Integer::from(&ns - 1u32),
        Integer::from(&ns >> 1),
    ] {
        let c = ThresholdPaillier::encrypt(&pk, &m, &mut rng);
        let sh: Vec<_> = [4u32, 2]
            .iter()
            .map(|&i| ThresholdPaillier::decryption_share(&ks[i as usize - 1], &c, &mut rng))
            .collect();
        assert_eq!(ThresholdPaillier::combine_integer(&pk, &c, &sh), Ok(m));
    }
    // -5 + 7 = 2
    let a = ThresholdPaillier::encrypt(
        &pk,
        &ThresholdPaillier::scalar_neg(&pk, &Integer::from(5)),
        &mut rng,
    );
    let b = ThresholdPaillier::encrypt(&pk, &Integer::from(7), &mut rng);
    let c = ThresholdPaillier::add(&pk, &a, &b);
    let sh: Vec<_> = ks[..2]
        .iter()
        .map(|k| ThresholdPaillier::decryption_share(k, &c, &mut rng))
        .collect();
    assert_eq!(ThresholdPaillier::combine(&pk, &c, &sh, 10), Ok(2));
}

#[test]
fn dealer_checks_its_primes() {
    let (p, q) = insecure_test_primes(1024).unwrap();
    let params = Params {
        modulus_bits: 1024,
        s: 1,
        parties: 3,
        threshold: 2,
    };
    let d = Dealer::new(params).unwrap();
    let mut rng = SessionRng::from_seed([20; 32]);
    assert!(d.deal_with_primes(&p, &p, &mut rng).is_err(), "p = q");
    // A prime that is not safe: next prime after p.
    let not_safe = {
        let mut x = Integer::from(&p + 2u32).next_prime();
        while Integer::from(&x >> 1).is_probably_prime(30) != IsPrime::No {
            x = Integer::from(&x + 2u32).next_prime();
        }
        x
    };
    assert!(d.deal_with_primes(&not_safe, &q, &mut rng).is_err());
    let composite = Integer::from(&p + 2u32);
    assert!(d.deal_with_primes(&composite, &q, &mut rng).is_err());
    // Wrong size.
    let (p2, _) = insecure_test_primes(2048).unwrap();
    assert!(d.deal_with_primes(&p2, &q, &mut rng).is_err());
    // Bad parameters.
    for bad in [
        Params {
            modulus_bits: 512,
            ..params
        },
        Params {
            modulus_bits: 1000,
            ..params
        },
        Params { s: 0, ..params },
        Params { s: 5, ..params },
        Params {
            threshold: 4,
            ..params
        },
        Params {
            threshold: 0,
            ..params
        },
        Params {
            parties: 0,
            threshold: 0,
            ..params
        },
    ] {
        assert!(Dealer::new(bad).is_err(), "{bad:?}");
    }
    assert_eq!(Params::new(5, 3).modulus_bits, 3072);
}

#[test]
fn safe_primes_are_safe() {
    let mut rng = SessionRng::from_seed([30; 32]);
    for bits in [64u32, 128, 256] {
        let p = safe_prime(bits, &mut rng);
        assert_eq!(p.significant_bits(), bits);
        assert!(p.get_bit(bits - 2), "top two bits set");
        assert_ne!(p.is_probably_prime(40), IsPrime::No);
        assert_ne!(Integer::from(&p >> 1).is_probably_prime(40), IsPrime::No);
    }
    for (bits, pair) in [
        (1024, insecure_test_primes(1024)),
        (2048, insecure_test_primes(2048)),
    ] {
        let (p, q) = pair.unwrap();
        for x in [&p, &q] {
            assert_eq!(x.significant_bits(), bits / 2);
            assert_ne!(Integer::from(x >> 1).is_probably_prime(40), IsPrime::No);
        }
        assert_eq!(Integer::from(&p * &q).significant_bits(), bits);
    }
}

#[test]
fn fresh_safe_prime_key_small() {
    // The whole generation path at the smallest allowed size (512-bit safe primes).
    let d = Dealer::new(Params {
        modulus_bits: 1024,
        s: 1,
        parties: 3,
        threshold: 2,
    })
    .unwrap();
    let (pk, ks) = d.deal(&mut SessionRng::from_seed([31; 32])).unwrap();
    conformance::thresholds::<ThresholdPaillier>(&pk, &ks);
}

#[test]
fn shares_bind_the_key() {
    let (pa, _) = keys(1024, 1, 3, 2, 40);
    let (alt_p, alt_q) = insecure_test_primes_alt();
    let (_, kb) = Dealer::new(Params {
        modulus_bits: 1024,
        s: 1,
        parties: 3,
        threshold: 2,
    })
    .unwrap()
    .deal_with_primes(&alt_p, &alt_q, &mut SessionRng::from_seed([41; 32]))
    .unwrap();
    // Same modulus, another dealing: shares of one do not verify under the other.
    let (_, kc) = keys(1024, 1, 3, 2, 42);
    let mut rng = SessionRng::from_seed([43; 32]);
    let c = ThresholdPaillier::encrypt(&pa, &Integer::from(3), &mut rng);
    let s = ThresholdPaillier::decryption_share(&kc[0], &c, &mut rng);
    assert!(matches!(
        ThresholdPaillier::verify_share(&pa, &c, &s),
        Err(TaheError::BadShare { party: 1, .. })
    ));
    // Another modulus: the share's c_i is not even a valid element for this key,
    // or fails its proof.
    let s = ThresholdPaillier::decryption_share(&kb[1], &c, &mut rng);
    assert!(ThresholdPaillier::verify_share(&pa, &c, &s).is_err());
}

#[test]
fn public_key_validation() {
    let (pk, _) = keys(1024, 1, 3, 2, 50);
    let b = ThresholdPaillier::encode_public_key(&pk);
    assert_eq!(b.len(), 16 + 128 + 256 * 4);
    let dec = |x: &[u8]| ThresholdPaillier::decode_public_key(x, 10);
    assert!(dec(&b).is_ok());
    // Even n.
    let mut x = b.clone();
    x[16 + 127] &= 0xfe;
    assert!(dec(&x).is_err());
    // An odd 1024-bit n divisible by 3 (Δ = 3! is then not invertible).
    let n = pk.n().clone();
    let mut m3 = Integer::from(&n - n.mod_u(3));
    if m3.is_even() {
        m3 -= 3u32;
    }
    let mut x = b.clone();
    x[16..144].copy_from_slice(&m3.to_digits::<u8>(rug::integer::Order::Msf));
    assert!(dec(&x).is_err(), "n divisible by 3 with 3 parties");
    // Short n (top byte zero).
    let mut x = b.clone();
    x[16] = 0;
    assert!(dec(&x).is_err());
    // v = 0, and v_1 = n (not coprime to n).
    let mut x = b.clone();
    x[144..400].fill(0);
    assert!(dec(&x).is_err());
    let mut x = b.clone();
    let mut nb = vec![0u8; 256];
    let digits = n.to_digits::<u8>(rug::integer::Order::Msf);
    nb[256 - digits.len()..].copy_from_slice(&digits);
    x[400..656].copy_from_slice(&nb);
    assert!(dec(&x).is_err());
    // Header: s, sizes.
    for (pos, val) in [
        (12usize, 0u32),
        (12, 5),
        (8, 1000),
        (8, 2048),
        (4, 4),
        (0, 2),
    ] {
        let mut x = b.clone();
        x[pos..pos + 4].copy_from_slice(&val.to_be_bytes());
        assert!(dec(&x).is_err(), "header word {pos} = {val}");
    }
}

/// A key share travels to its party's file and back; a share of another key or another
/// party, or garbage, is refused.
#[test]
fn key_shares_round_trip_and_bind_to_their_key() {
    let (pk, ks) = keys(1024, 1, 3, 3, 20);
    for share in &ks {
        let bytes = share.encode();
        let back = KeyShare::decode(&pk, &bytes).unwrap();
        assert_eq!(back.index(), share.index());
        assert_eq!(back.encode(), bytes);
    }
    // Another party's index on this share: its verification key does not match.
    let mut swapped = ks[0].encode();
    swapped[..4].copy_from_slice(&2u32.to_be_bytes());
    assert!(KeyShare::decode(&pk, &swapped).is_err());
    // A share of another key (other primes).
    let (p, q) = insecure_test_primes_alt();
    let (other_pk, other) = Dealer::new(Params {
        modulus_bits: 1024,
        s: 1,
        parties: 3,
        threshold: 3,
    })
    .unwrap()
    .deal_with_primes(&p, &q, &mut SessionRng::from_seed([21; 32]))
    .unwrap();
    assert_ne!(other_pk.fingerprint(), pk.fingerprint());
    assert!(KeyShare::decode(&pk, &other[0].encode()).is_err());
    // Truncated, index 0, index beyond the parties, a flipped bit.
    let good = ks[1].encode();
    assert!(KeyShare::decode(&pk, &good[..good.len() - 1]).is_err());
    for index in [0u32, 4] {
        let mut bad = good.clone();
        bad[..4].copy_from_slice(&index.to_be_bytes());
        assert!(KeyShare::decode(&pk, &bad).is_err());
    }
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert!(KeyShare::decode(&pk, &flipped).is_err());
}

/// One proof covers a whole batch of shares: two valid shares swapped inside a batch,
/// or one share replaced by another valid unit, fail the batch's proof.
#[test]
fn a_batch_proof_catches_any_wrong_share_inside() {
    let (pk, ks) = keys(1024, 1, 2, 2, 30);
    let mut rng = SessionRng::from_seed([31; 32]);
    let cts: Vec<_> = (0..5u64)
        .map(|v| ThresholdPaillier::encrypt(&pk, &Integer::from(v), &mut rng))
        .collect::<Vec<_>>();
    let width = ThresholdPaillier::ciphertext_len(&pk);
    let batch = ThresholdPaillier::share_batch(&ks[0], &cts, &mut rng);
    let absorb = |b: &[u8]| {
        let mut test = ThresholdPaillier::zero_test_new(&pk, cts.len());
        ThresholdPaillier::zero_test_absorb(&pk, &mut test, &cts, 1, b)
    };
    absorb(&batch).expect("an honest batch verifies");
    let share = |b: &[u8], j: usize| b[4 + j * width..4 + (j + 1) * width].to_vec();
    let mut swapped = batch.clone();
    let (s2, s3) = (share(&batch, 2), share(&batch, 3));
    swapped[4 + 2 * width..4 + 3 * width].copy_from_slice(&s3);
    swapped[4 + 3 * width..4 + 4 * width].copy_from_slice(&s2);
    assert!(matches!(
        absorb(&swapped),
        Err(TaheError::BadShare { party: 1, .. })
    ));
    let mut replaced = batch.clone();
    let other = ThresholdPaillier::encode_ciphertext(&pk, &cts[0]);
    replaced[4 + 4 * width..4 + 5 * width].copy_from_slice(&other);
    assert!(matches!(
        absorb(&replaced),
        Err(TaheError::BadShare { party: 1, .. })
    ));
}

/// The bulk encryptions and randomizations run in parallel on forked rngs: the bytes
/// must not depend on the number of threads (parties replay their messages from a
/// seed), and must differ from one seed to the next.
#[test]
fn bulk_output_is_independent_of_the_thread_count() {
    let (pk, _) = keys(1024, 1, 3, 3, 9);
    let ms: Vec<Integer> = (0..50u32).map(Integer::from).collect();
    let run = |threads: usize, seed: u8| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let mut rng = SessionRng::from_seed([seed; 32]);
                let encoded = ThresholdPaillier::encrypt_encoded(&pk, &ms, &mut rng);
                let cts = ThresholdPaillier::decode_ciphertexts(&pk, &encoded).unwrap();
                let randomized = ThresholdPaillier::randomize_encoded(&pk, &cts, &mut rng);
                (encoded, randomized)
            })
    };
    let one = run(1, 5);
    assert_eq!(one, run(4, 5));
    let other = run(4, 6);
    assert_ne!(one.0, other.0);
    assert_ne!(one.1, other.1);
}
