//! Exponential ElGamal's bulk operations on both paths: with the portable path forced
//! (`cpu::force_portable`, as `PRIVSET_PORTABLE=1` does), encryptions of filter bits,
//! of counts and of full scalars, the key owner's encryptions, the doubled message
//! points, re-randomized products and threshold decryption-share batches are the same
//! bytes as on the eight-lane AVX-512 IFMA path
//! (`curve25519x8`), from the same seeds, and decrypt to their messages. Its own
//! binary: forcing is process-wide.

use privset_crypto::ahe::AdditiveHe;
use privset_crypto::ahe::elgamal::{CiphertextSums, ElGamal, Params, Scalar, bulk};
use privset_crypto::cpu;
use privset_crypto::rng::SessionRng;
use sha2::Digest;

/// Held by each test while it switches paths: forcing is process-wide and the tests of
/// one binary run in parallel.
static PATHS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn random_scalars(n: usize, rng: &mut SessionRng) -> Vec<Scalar> {
    (0..n)
        .map(|_| {
            let mut wide = [0u8; 64];
            rng.fill(&mut wide);
            Scalar::from_bytes_mod_order_wide(&wide)
        })
        .collect()
}

/// Every bulk output on the path the CPU gets now, each checked by decryption.
fn outputs(n: usize) -> Vec<Vec<u8>> {
    let mut rng = SessionRng::from_seed([9; 32]);
    let (pk, sk) = ElGamal::keygen(&Params::default(), &mut rng);
    let bits: Vec<u64> = (0..n as u64).map(|i| u64::from(i % 3 == 0)).collect();
    let counts: Vec<u64> = (0..n as u64).map(|i| i * 37 % 1001).collect();
    let mut full = random_scalars(n, &mut rng);
    if n > 3 {
        full[0] = Scalar::ZERO;
        full[1] = Scalar::ONE;
        full[2] = -Scalar::ONE;
    }
    let as_scalars = |ms: &[u64]| -> Vec<Scalar> { ms.iter().map(|&m| Scalar::from(m)).collect() };
    let mut out = Vec::new();
    for (ms, encoded) in [
        (
            as_scalars(&bits),
            bulk::encrypt_bits_encoded(pk.table(), &bits, &mut rng),
        ),
        (
            as_scalars(&counts),
            bulk::encrypt_bits_encoded(pk.table(), &counts, &mut rng),
        ),
        (
            full.clone(),
            bulk::encrypt_encoded(pk.table(), &full, &mut rng),
        ),
        (
            full.clone(),
            bulk::encrypt_owner_encoded(&sk, &full, &mut rng),
        ),
    ] {
        let cts = bulk::decode_many(&encoded).expect("decodes");
        assert_eq!(
            bulk::decrypt_doubled_points(&sk, &cts),
            bulk::doubled_base_points(&ms),
            "a ciphertext does not decrypt to its message (n = {n})"
        );
        out.push(encoded);
    }
    out.push(bulk::doubled_base_points(&full).concat());
    // Re-randomized products `k c + Enc(0)` and `k (c - m G) + Enc(0)`: a zero plaintext
    // stays zero, any other becomes a random non-zero one.
    let cts = bulk::decode_many(&bulk::encrypt_encoded(pk.table(), &full, &mut rng)).unwrap();
    let zero = bulk::doubled_base_points(&[Scalar::ZERO])[0];
    for (shift, randomized) in [
        (
            Scalar::ZERO,
            bulk::randomize_encoded(pk.table(), &cts, &mut rng),
        ),
        (
            Scalar::ONE,
            bulk::randomize_difference_encoded(pk.table(), &cts, 1, &mut rng),
        ),
    ] {
        let back = bulk::decrypt_doubled_points(&sk, &bulk::decode_many(&randomized).unwrap());
        for (m, p) in full.iter().zip(&back) {
            assert_eq!(*m == shift, *p == zero, "re-randomized (n = {n})");
        }
        out.push(randomized);
    }
    // Running sums over two chunks of the bit encryptions, hits in any order and
    // repeated, one item with no hit: the sums decrypt to the sums of the bits.
    let encoded = bulk::encrypt_bits_encoded(pk.table(), &bits, &mut rng);
    let items = 7;
    let half = n / 2 * 64;
    let mut sums = CiphertextSums::new(items);
    let mut again = CiphertextSums::new(items);
    let mut want = vec![0u64; items];
    for (part, (bytes, first)) in [(&encoded[..half], 0), (&encoded[half..], n / 2)]
        .into_iter()
        .enumerate()
    {
        let count = bytes.len() / 64;
        let hits: Vec<(u32, u32)> = (0..count as u32 * 3)
            .map(|h| {
                (
                    (h * 5 + part as u32) % (items as u32 - 1),
                    h * 7 % count.max(1) as u32,
                )
            })
            .filter(|_| count > 0)
            .collect();
        for &(item, i) in &hits {
            want[item as usize] += bits[first + i as usize];
        }
        sums.add(bytes, &hits).expect("valid ciphertexts");
        again.add(bytes, &hits).expect("valid ciphertexts");
    }
    // The sums plus an encryption of -1, re-randomized (Miyaji-Nishida's dealer): zero
    // exactly where the bits summed to 1.
    let minus_one = bulk::decode_many(&bulk::encrypt_encoded(
        pk.table(),
        &[-Scalar::ONE],
        &mut rng,
    ))
    .expect("decodes")[0];
    let randomized = bulk::randomize_sums(pk.table(), again, &minus_one, &mut rng);
    let back = bulk::decrypt_doubled_points(&sk, &bulk::decode_many(&randomized).unwrap());
    for (item, p) in back.iter().enumerate() {
        assert_eq!(
            want[item] == 1,
            *p == zero,
            "randomized sum {item} (n = {n})"
        );
    }
    let sums = sums.into_ciphertexts();
    let want: Vec<Scalar> = want.iter().map(|&w| Scalar::from(w)).collect();
    assert_eq!(
        bulk::decrypt_doubled_points(&sk, &sums),
        bulk::doubled_base_points(&want),
        "running sums (n = {n})"
    );
    // A bad entry is named by its index in the chunk.
    if n > 5 {
        let mut bad = encoded[..6 * 64].to_vec();
        bad[4 * 64] |= 1;
        let e = CiphertextSums::new(1)
            .add(&bad, &[(0, 1), (0, 4)])
            .unwrap_err();
        assert!(format!("{e}").contains('4'), "{e}");
    }
    out.push(randomized);
    out
}

#[test]
fn both_paths_give_the_same_bytes() {
    let _paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    // Empty, one item, a ragged lane group, and past one task (1,024) with ragged ends.
    for n in [0, 1, 9, 2_500] {
        cpu::force_portable(false);
        let fast_is_ifma = cpu::ristretto_ifma();
        let fast = outputs(n);
        cpu::force_portable(true);
        assert!(
            !cpu::ristretto_ifma(),
            "forcing must turn the IFMA path off"
        );
        let portable = outputs(n);
        cpu::force_portable(false);
        let names = [
            "bits",
            "counts",
            "scalars",
            "owner",
            "doubled points",
            "re-randomized",
            "re-randomized differences",
            "re-randomized sums",
        ];
        assert_eq!(fast.len(), portable.len());
        for (what, (f, p)) in names.iter().zip(fast.iter().zip(&portable)) {
            assert_eq!(f, p, "{what} differ between the paths (n = {n})");
        }
        if !fast_is_ifma {
            eprintln!("this CPU has no AVX-512 IFMA: both runs took curve25519-dalek");
        }
    }
}

/// A threshold zero test on the path the CPU gets now: the verdicts for ciphertexts of
/// zero and non-zero plaintexts, then the errors for a share that is not an encoding
/// and for a batch whose proof does not verify, as text.
fn zero_test_outcomes(n: usize) -> Vec<String> {
    use privset_crypto::tahe::ThresholdAhe;
    use privset_crypto::tahe::elgamal::{DkgParams, ThresholdElGamal, dkg_local};
    let mut rng = SessionRng::from_seed([12; 32]);
    let params = DkgParams {
        parties: 3,
        threshold: 2,
    };
    let ks = dkg_local(&params, &mut rng).expect("dkg");
    let pk = ks[0].public_key();
    let cts: Vec<_> = (0..n)
        .map(|k| ThresholdElGamal::encrypt(pk, &Scalar::from((k % 3 == 0) as u64), &mut rng))
        .collect();
    let cts = ThresholdElGamal::tested_from_ciphertexts(pk, &cts);
    let batches: Vec<Vec<u8>> = ks
        .iter()
        .map(|k| ThresholdElGamal::share_batch(k, &cts, &mut rng))
        .collect();
    let mut test = ThresholdElGamal::zero_test_new(pk, n);
    for (p, b) in batches.iter().enumerate() {
        ThresholdElGamal::zero_test_absorb(pk, &mut test, &cts, p as u32 + 1, b).expect("valid");
    }
    let verdicts = ThresholdElGamal::zero_test_finish(pk, test, &cts).expect("all batches");
    let want: Vec<bool> = (0..n).map(|k| k % 3 != 0).collect();
    assert_eq!(verdicts, want, "zero iff the plaintext is 0 (n = {n})");
    // The batches themselves (shares and proofs, from the same stream), by digest.
    let mut out: Vec<String> = batches
        .iter()
        .map(|b| format!("{:x}", sha2::Sha256::digest(b)))
        .collect();
    out.push(format!("{verdicts:?}"));
    if n > 2 {
        let mut not_point = batches[1].clone();
        not_point[2 * 32] |= 1;
        let mut wrong = batches[1].clone();
        wrong[..32].copy_from_slice(&batches[1][32..64]);
        for bad in [not_point, wrong] {
            let mut test = ThresholdElGamal::zero_test_new(pk, n);
            let e = ThresholdElGamal::zero_test_absorb(pk, &mut test, &cts, 2, &bad).unwrap_err();
            out.push(e.to_string());
        }
    }
    out
}

#[test]
fn zero_tests_agree_on_both_paths() {
    let _paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    // One ciphertext, a ragged lane group, and past one decoding task (1,024).
    for n in [1, 9, 1_500] {
        cpu::force_portable(false);
        let fast = zero_test_outcomes(n);
        cpu::force_portable(true);
        let portable = zero_test_outcomes(n);
        cpu::force_portable(false);
        assert_eq!(fast, portable, "n = {n}");
    }
}
