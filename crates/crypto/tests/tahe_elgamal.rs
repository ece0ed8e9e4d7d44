//! Threshold exponential ElGamal: the shared conformance suite for several `(n, t)`,
//! and the distributed key generation (Pedersen 1991 / Feldman 1987) including
//! complaints.

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::elgamal::{
    DkgCommitments, DkgParams, DkgShare, KeyShare, ThresholdElGamal, dkg_deal, dkg_finish,
    dkg_local, dkg_public_key, dkg_verify_share,
};
use privset_crypto::tahe::{TaheError, ThresholdAhe, conformance};

fn keys(n: u32, t: u32, seed: u8) -> Vec<KeyShare> {
    dkg_local(
        &DkgParams {
            parties: n,
            threshold: t,
        },
        &mut SessionRng::from_seed([seed; 32]),
    )
    .expect("dkg")
}

#[test]
fn conformance_3_of_3() {
    conformance::run_all::<ThresholdElGamal>(&keys(3, 3, 1));
}

#[test]
fn conformance_2_of_3() {
    conformance::run_all::<ThresholdElGamal>(&keys(3, 2, 2));
}

#[test]
fn conformance_3_of_5() {
    conformance::run_all::<ThresholdElGamal>(&keys(5, 3, 3));
}

#[test]
fn conformance_1_of_1_and_1_of_4() {
    conformance::run_all::<ThresholdElGamal>(&keys(1, 1, 4));
    conformance::run_all::<ThresholdElGamal>(&keys(4, 1, 5));
}

#[test]
fn conformance_7_of_12() {
    conformance::run_all::<ThresholdElGamal>(&keys(12, 7, 6));
}

fn params(n: u32, t: u32) -> DkgParams {
    DkgParams {
        parties: n,
        threshold: t,
    }
}

#[test]
fn dkg_all_parties_agree_and_is_deterministic() {
    let ks = keys(6, 4, 10);
    let pk0 = ThresholdElGamal::encode_public_key(ks[0].public_key());
    for k in &ks {
        assert_eq!(ThresholdElGamal::encode_public_key(k.public_key()), pk0);
    }
    let again = keys(6, 4, 10);
    assert_eq!(
        ThresholdElGamal::encode_public_key(again[0].public_key()),
        pk0
    );
    let other = keys(6, 4, 11);
    assert_ne!(
        ThresholdElGamal::encode_public_key(other[0].public_key()),
        pk0
    );
}

/// Runs the DKG over encoded messages, letting `tamper` change dealer `bad`'s share for
/// `victim` (bytes) before delivery; returns each party's outcome.
fn dkg_over_bytes(
    p: &DkgParams,
    seed: u8,
    mut tamper: impl FnMut(u32, u32, &mut Vec<u8>),
) -> Vec<Result<KeyShare, TaheError>> {
    let mut rng = SessionRng::from_seed([seed; 32]);
    let dealings: Vec<_> = (1..=p.parties)
        .map(|i| dkg_deal(p, i, &mut rng).unwrap())
        .collect();
    let commitments: Vec<Vec<u8>> = dealings.iter().map(|d| d.commitments.encode()).collect();
    (1..=p.parties)
        .map(|me| {
            let cs: Vec<DkgCommitments> = commitments
                .iter()
                .enumerate()
                .map(|(i, b)| DkgCommitments::decode(b, p, i as u32 + 1))
                .collect::<Result<_, _>>()?;
            let shares: Vec<DkgShare> = dealings
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let mut b = d.shares[me as usize - 1].encode();
                    tamper(i as u32 + 1, me, &mut b);
                    DkgShare::decode(&b, p, i as u32 + 1, me)
                })
                .collect::<Result<_, _>>()?;
            dkg_finish(p, me, &cs, &shares)
        })
        .collect()
}

#[test]
fn dkg_over_encodings_matches() {
    let p = params(4, 3);
    let out = dkg_over_bytes(&p, 20, |_, _, _| {});
    let ks: Vec<KeyShare> = out.into_iter().map(|r| r.unwrap()).collect();
    conformance::thresholds::<ThresholdElGamal>(ks[0].public_key(), &ks);
}

#[test]
fn dkg_bad_share_is_a_complaint_naming_the_dealer() {
    let p = params(5, 3);
    // Dealer 2 sends party 4 a wrong (but canonical) share.
    let out = dkg_over_bytes(&p, 21, |dealer, me, b| {
        if dealer == 2 && me == 4 {
            b[8] ^= 1;
        }
    });
    for (i, r) in out.iter().enumerate() {
        if i + 1 == 4 {
            assert!(
                matches!(r, Err(TaheError::Complaint { dealer: 2, .. })),
                "{:?}",
                r.as_ref().err()
            );
        } else {
            assert!(r.is_ok());
        }
    }
    // A non-canonical share scalar is a complaint at decode time.
    let out = dkg_over_bytes(&p, 22, |dealer, me, b| {
        if dealer == 5 && me == 1 {
            b[8..].fill(0xff);
        }
    });
    assert!(matches!(
        out[0],
        Err(TaheError::Complaint { dealer: 5, .. })
    ));
    // A share addressed to someone else.
    let out = dkg_over_bytes(&p, 23, |dealer, me, b| {
        if dealer == 1 && me == 3 {
            b[4..8].copy_from_slice(&2u32.to_be_bytes());
        }
    });
    assert!(matches!(
        out[2],
        Err(TaheError::Complaint { dealer: 1, .. })
    ));
}

#[test]
fn dkg_bad_commitments_are_complaints() {
    let p = params(4, 2);
    let mut rng = SessionRng::from_seed([30; 32]);
    let dealings: Vec<_> = (1..=4)
        .map(|i| dkg_deal(&p, i, &mut rng).unwrap())
        .collect();
    let good = dealings[2].commitments.encode();
    assert_eq!(good.len(), 4 + 32 * 2);
    let dec = |b: &[u8]| DkgCommitments::decode(b, &p, 3);
    assert!(dec(&good).is_ok());
    assert!(matches!(
        DkgCommitments::decode(&good, &p, 2),
        Err(TaheError::Complaint { dealer: 2, .. })
    ));
    for l in [0, 4, good.len() - 1, good.len() + 1, good.len() + 32] {
        let mut b = good.clone();
        b.resize(l, 0);
        assert!(matches!(
            dec(&b),
            Err(TaheError::Complaint { dealer: 3, .. })
        ));
    }
    let mut b = good.clone();
    b[4..36].fill(0);
    assert!(dec(&b).is_err(), "identity C_0");
    let mut b = good.clone();
    b[36..].fill(0xff);
    assert!(dec(&b).is_err(), "non-canonical C_1");
    // Commitments that are valid points but not the dealer's: every share fails.
    let mut cs: Vec<DkgCommitments> = dealings.iter().map(|d| d.commitments.clone()).collect();
    cs[2] = dealings[1].commitments.clone();
    let share = &dealings[2].shares[0];
    assert!(matches!(
        dkg_verify_share(&p, &cs[2], share),
        Err(TaheError::Complaint { .. })
    ));
    // Missing and doubled dealers.
    let all: Vec<DkgCommitments> = dealings.iter().map(|d| d.commitments.clone()).collect();
    assert!(matches!(
        dkg_public_key(&p, &all[..3]),
        Err(TaheError::Complaint { dealer: 4, .. })
    ));
    let mut twice = all.clone();
    twice[3] = all[0].clone();
    assert!(matches!(
        dkg_public_key(&p, &twice),
        Err(TaheError::Complaint { dealer: 1, .. })
    ));
    // A wrong commitment set for another threshold.
    let p3 = params(4, 3);
    assert!(DkgCommitments::decode(&good, &p3, 3).is_err());
}

#[test]
fn dkg_missing_share_is_a_complaint() {
    let p = params(3, 2);
    let mut rng = SessionRng::from_seed([31; 32]);
    let mut dealings: Vec<_> = (1..=3)
        .map(|i| dkg_deal(&p, i, &mut rng).unwrap())
        .collect();
    let cs: Vec<DkgCommitments> = dealings.iter().map(|d| d.commitments.clone()).collect();
    let mine: Vec<DkgShare> = dealings
        .iter_mut()
        .take(2)
        .map(|d| d.shares.remove(0))
        .collect();
    assert!(matches!(
        dkg_finish(&p, 1, &cs, &mine),
        Err(TaheError::Complaint { dealer: 3, .. })
    ));
}

#[test]
fn dkg_bad_params() {
    let mut rng = SessionRng::from_seed([32; 32]);
    for (n, t) in [(0, 0), (3, 0), (3, 4), (2000, 2)] {
        assert!(dkg_deal(&params(n, t), 1, &mut rng).is_err());
    }
    assert!(dkg_deal(&params(3, 2), 0, &mut rng).is_err());
    assert!(dkg_deal(&params(3, 2), 4, &mut rng).is_err());
}

#[test]
fn public_key_consistency_is_checked() {
    let ks = keys(5, 3, 40);
    let pk = ks[0].public_key();
    let b = ThresholdElGamal::encode_public_key(pk);
    assert_eq!(b.len(), 8 + 32 * 6);
    // Swap two verification keys: valid points, inconsistent polynomial.
    let mut x = b.clone();
    let (h1, h4) = (x[40..72].to_vec(), x[136..168].to_vec());
    x[40..72].copy_from_slice(&h4);
    x[136..168].copy_from_slice(&h1);
    assert!(ThresholdElGamal::decode_public_key(&x, 5).is_err());
    // Replace the joint key with a verification key.
    let mut x = b.clone();
    let h2 = x[72..104].to_vec();
    x[8..40].copy_from_slice(&h2);
    assert!(ThresholdElGamal::decode_public_key(&x, 5).is_err());
    // Another threshold in the header.
    let mut x = b.clone();
    x[4..8].copy_from_slice(&2u32.to_be_bytes());
    assert!(ThresholdElGamal::decode_public_key(&x, 5).is_err());
}

#[test]
fn shares_bind_the_key() {
    // Shares made under one key do not verify under another with the same n, t.
    let a = keys(3, 2, 50);
    let b = keys(3, 2, 51);
    let mut rng = SessionRng::from_seed([52; 32]);
    let pa = a[0].public_key();
    let c = ThresholdElGamal::encrypt(pa, &ThresholdElGamal::scalar_from_u64(pa, 3), &mut rng);
    let s = ThresholdElGamal::decryption_share(&b[0], &c, &mut rng);
    assert!(matches!(
        ThresholdElGamal::verify_share(pa, &c, &s),
        Err(TaheError::BadShare { party: 1, .. })
    ));
}

#[test]
fn combine_refuses_undecryptable_bounds() {
    let ks = keys(3, 2, 60);
    let pk = ks[0].public_key().clone().with_table_bits(10).unwrap();
    let mut rng = SessionRng::from_seed([61; 32]);
    let c = ThresholdElGamal::encrypt(&pk, &ThresholdElGamal::scalar_from_u64(&pk, 5), &mut rng);
    let sh: Vec<_> = ks[..2]
        .iter()
        .map(|k| ThresholdElGamal::decryption_share(k, &c, &mut rng))
        .collect();
    assert_eq!(
        ThresholdElGamal::combine(&pk, &c, &sh, (1 << 32) - 1),
        Ok(5)
    );
    assert!(matches!(
        ThresholdElGamal::combine(&pk, &c, &sh, 1 << 32),
        Err(TaheError::Parameters(_))
    ));
    assert!(pk.clone().with_table_bits(0).is_err());
}

/// The one-round n-out-of-n key: every party agrees, the key passes the conformance
/// suite, and a contribution with a bad proof, from another session or claiming another
/// party is a complaint naming its sender.
#[test]
fn joint_key_in_one_round() {
    use privset_crypto::tahe::elgamal::joint::{
        KeyContribution, contribute, joint_key_share, joint_public_key,
    };
    for n in [1u32, 3, 5] {
        let context = b"session transcript";
        let mut rng = SessionRng::from_seed([40 + n as u8; 32]);
        let (secrets, contributions): (Vec<_>, Vec<_>) = (1..=n)
            .map(|i| contribute(n, i, context, &mut rng).expect("contribute"))
            .unzip();
        let wire: Vec<Vec<u8>> = contributions.iter().map(KeyContribution::encode).collect();
        let decoded: Vec<KeyContribution> = wire
            .iter()
            .enumerate()
            .map(|(i, b)| KeyContribution::decode(b, n, i as u32 + 1, context).expect("decode"))
            .collect();
        let shares: Vec<KeyShare> = secrets
            .iter()
            .map(|s| joint_key_share(s, &decoded).expect("key share"))
            .collect();
        let pk = joint_public_key(n, &decoded).expect("public key");
        for ks in &shares {
            assert_eq!(
                ThresholdElGamal::encode_public_key(ks.public_key()),
                ThresholdElGamal::encode_public_key(&pk)
            );
        }
        conformance::run_all::<ThresholdElGamal>(&shares);
        if n > 1 {
            // Another session's transcript, another claimed party, a flipped byte.
            assert!(matches!(
                KeyContribution::decode(&wire[1], n, 2, b"another session"),
                Err(TaheError::Complaint { dealer: 2, .. })
            ));
            assert!(matches!(
                KeyContribution::decode(&wire[1], n, 1, context),
                Err(TaheError::Complaint { dealer: 1, .. })
            ));
            let mut flipped = wire[1].clone();
            flipped[70] ^= 1;
            assert!(KeyContribution::decode(&flipped, n, 2, context).is_err());
            // A contribution missing, or one given twice.
            assert!(joint_public_key(n, &decoded[1..]).is_err());
            let mut twice = decoded.clone();
            twice[0] = decoded[1].clone();
            assert!(joint_public_key(n, &twice).is_err());
        }
    }
}

/// A zero test keeps the ciphertexts' encodings from its first batch for the next ones:
/// batches made on other ciphertexts of the same count still verify (and match their
/// own ciphertexts, not the cached ones), and a batch checked against the wrong
/// ciphertexts fails.
#[test]
fn zero_test_batches_on_other_ciphertexts_verify_against_their_own() {
    let ks = keys(3, 3, 20);
    let pk = ks[0].public_key();
    let mut rng = SessionRng::from_seed([21; 32]);
    let zero = curve25519_dalek::scalar::Scalar::ZERO;
    let mut cts = || -> Vec<_> {
        (0..40)
            .map(|_| ThresholdElGamal::encrypt(pk, &zero, &mut rng))
            .collect()
    };
    let tested = |cts: Vec<_>| ThresholdElGamal::tested_from_ciphertexts(pk, &cts);
    let (a, b) = (tested(cts()), tested(cts()));
    let mut rng = SessionRng::from_seed([22; 32]);
    let batch =
        |p: usize, cts: &_, rng: &mut SessionRng| ThresholdElGamal::share_batch(&ks[p], cts, rng);
    let (a1, b2, a3) = (
        batch(0, &a, &mut rng),
        batch(1, &b, &mut rng),
        batch(2, &a, &mut rng),
    );
    let mut test = ThresholdElGamal::zero_test_new(pk, ThresholdElGamal::tested_len(&a));
    ThresholdElGamal::zero_test_absorb(pk, &mut test, &a, 1, &a1).expect("party 1 on a");
    ThresholdElGamal::zero_test_absorb(pk, &mut test, &b, 2, &b2).expect("party 2 on b");
    ThresholdElGamal::zero_test_absorb(pk, &mut test, &a, 3, &a3).expect("party 3 on a");
    let mut other = ThresholdElGamal::zero_test_new(pk, ThresholdElGamal::tested_len(&a));
    ThresholdElGamal::zero_test_absorb(pk, &mut other, &a, 1, &a1).expect("party 1 on a");
    let err = ThresholdElGamal::zero_test_absorb(pk, &mut other, &a, 2, &b2).unwrap_err();
    assert!(matches!(err, TaheError::BadShare { party: 2, .. }), "{err}");
}

/// A `c2` that is not a canonical encoding (its `c1` valid) is refused: when the
/// ciphertexts arrive (serial decoding), or by the zero test that needs it as a point
/// (lanes, where only the `c1` are decoded on arrival).
#[test]
fn an_invalid_c2_is_refused_by_the_zero_test() {
    let shares = keys(3, 3, 9);
    let pk = ThresholdElGamal::share_public_key(&shares[0]).clone();
    let mut rng = SessionRng::from_seed([10; 32]);
    let zero = ThresholdElGamal::scalar_from_u64(&pk, 0);
    let mut encoded = ThresholdElGamal::encrypt_encoded(&pk, &vec![zero; 20], &mut rng);
    // Ciphertext 13's c2: 0xff... is above the field's modulus.
    encoded[13 * 64 + 32..14 * 64].fill(0xff);
    let tested = match ThresholdElGamal::tested_from_encoded(&pk, &encoded) {
        Err(e) => {
            assert!(e.to_string().contains("13"), "{e}");
            return;
        }
        Ok(tested) => tested,
    };
    let mut test = ThresholdElGamal::zero_test_new(&pk, 20);
    for ks in &shares {
        let batch = ThresholdElGamal::share_batch(ks, &tested, &mut rng);
        ThresholdElGamal::zero_test_absorb_own(ks, &mut test, &tested, &batch).expect("own");
    }
    let e = ThresholdElGamal::zero_test_finish(&pk, test, &tested).expect_err("refused");
    assert!(
        matches!(e, TaheError::Invalid { .. }) && e.to_string().contains("13"),
        "{e}"
    );
}
