//! Per-operation costs of the threshold schemes on one core:
//! `cargo run -p privset-crypto --release --example tahe_bench`.
//!
//! Threshold ElGamal (ristretto255) with n = 10 parties, and threshold Paillier with
//! n = 10 at a 2048-bit modulus (fixed test primes) and at the default 3072-bit modulus
//! (two fresh 1536-bit safe primes, whose generation is timed once). Set
//! `TAHE_BENCH_SKIP_3072=1` to skip the 3072-bit part.

use std::time::{Duration, Instant};

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::ThresholdAhe;
use privset_crypto::tahe::elgamal::{
    DkgCommitments, DkgParams, ThresholdElGamal, dkg_deal, dkg_finish, dkg_local,
};
use privset_crypto::tahe::paillier::{
    Dealer, Params, ThresholdPaillier, insecure_test_primes, safe_prime,
};

const PARTIES: u32 = 10;

/// Mean time of `f` over at least `min_iters` runs and at least ~1 s.
fn time<T>(min_iters: u32, mut f: impl FnMut() -> T) -> Duration {
    let start = Instant::now();
    let mut iters = 0u32;
    while iters < min_iters || start.elapsed() < Duration::from_millis(1000) {
        std::hint::black_box(f());
        iters += 1;
        if iters >= 100_000 {
            break;
        }
    }
    start.elapsed() / iters
}

fn show(label: &str, d: Duration) {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        println!("  {label:<44} {us:>10.1} µs");
    } else {
        println!("  {label:<44} {:>10.2} ms", us / 1000.0);
    }
}

fn ops<S: ThresholdAhe>(shares: &[S::KeyShare]) {
    let pk = S::share_public_key(&shares[0]).clone();
    let t = S::threshold(&pk);
    let mut rng = SessionRng::from_seed([1; 32]);
    let m = S::scalar_from_u64(&pk, 12345);
    let c = S::encrypt(&pk, &m, &mut rng);
    let c2 = S::encrypt(&pk, &m, &mut rng);
    let k = S::random_unit(&pk, &mut rng);
    println!(
        "  (ciphertext {} B, decryption share {} B, public key {} B; n = {}, t = {t})",
        S::ciphertext_len(&pk),
        S::share_len(&pk),
        S::encode_public_key(&pk).len(),
        S::parties(&pk)
    );
    show("encrypt", time(3, || S::encrypt(&pk, &m, &mut rng)));
    show("add", time(3, || S::add(&pk, &c, &c2)));
    show(
        "mul_scalar (random full-size unit)",
        time(3, || S::mul_scalar(&pk, &c, &k)),
    );
    show("rerandomize", time(3, || S::rerandomize(&pk, &c, &mut rng)));
    show(
        "decryption share with proof",
        time(3, || S::decryption_share(&shares[0], &c, &mut rng)),
    );
    let sh: Vec<S::DecryptionShare> = shares[..t as usize]
        .iter()
        .map(|ks| S::decryption_share(ks, &c, &mut rng))
        .collect();
    show(
        "verify one share",
        time(3, || S::verify_share(&pk, &c, &sh[0]).unwrap()),
    );
    show(
        &format!("combine {t} shares (verification included)"),
        time(3, || S::combine(&pk, &c, &sh, 1 << 20).unwrap()),
    );
    show(
        &format!("is_zero, {t} shares (verification included)"),
        time(3, || S::is_zero(&pk, &c, &sh).unwrap()),
    );
    let b = S::encode_ciphertext(&pk, &c);
    show(
        "decode ciphertext (validation)",
        time(3, || S::decode_ciphertext(&pk, &b).unwrap()),
    );
    let sb = S::encode_share(&pk, &sh[0]);
    show(
        "decode share (validation)",
        time(3, || S::decode_share(&pk, &sb).unwrap()),
    );
    let pkb = S::encode_public_key(&pk);
    show(
        "decode public key (validation)",
        time(1, || S::decode_public_key(&pkb, 1000).unwrap()),
    );
}

fn elgamal() {
    for t in [PARTIES, PARTIES / 2 + 1] {
        println!("== threshold ElGamal (ristretto255), n = {PARTIES}, t = {t} ==");
        let params = DkgParams {
            parties: PARTIES,
            threshold: t,
        };
        let mut rng = SessionRng::from_seed([2; 32]);
        // DKG per party: round 1 (deal) and round 2 (verify n shares, derive the keys).
        show(
            "DKG round 1 per party (deal)",
            time(3, || dkg_deal(&params, 1, &mut rng).unwrap()),
        );
        let mut dealings: Vec<_> = (1..=PARTIES)
            .map(|i| dkg_deal(&params, i, &mut rng).unwrap())
            .collect();
        let cs: Vec<DkgCommitments> = dealings.iter().map(|d| d.commitments.clone()).collect();
        let mine: Vec<_> = dealings.iter_mut().map(|d| d.shares.remove(0)).collect();
        show(
            "DKG round 2 per party (verify, derive keys)",
            time(3, || dkg_finish(&params, 1, &cs, &mine).unwrap()),
        );
        let shares = dkg_local(&params, &mut rng).unwrap();
        ops::<ThresholdElGamal>(&shares);
    }
}

fn paillier(bits: u32, p: &rug::Integer, q: &rug::Integer) {
    let t = PARTIES / 2 + 1;
    println!("== threshold Paillier, {bits}-bit n, s = 1, n = {PARTIES}, t = {t} ==");
    let dealer = Dealer::new(Params {
        modulus_bits: bits,
        s: 1,
        parties: PARTIES,
        threshold: t,
    })
    .unwrap();
    let mut rng = SessionRng::from_seed([3; 32]);
    let start = Instant::now();
    let (_, shares) = dealer.deal_with_primes(p, q, &mut rng).unwrap();
    show("dealer: deal from given primes (n = 10)", start.elapsed());
    ops::<ThresholdPaillier>(&shares);
}

fn main() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("single-threaded pool");
    elgamal();
    let (p, q) = insecure_test_primes(2048).unwrap();
    paillier(2048, &p, &q);
    if std::env::var_os("TAHE_BENCH_SKIP_3072").is_some() {
        return;
    }
    println!("== safe primes for the default 3072-bit modulus ==");
    let mut rng = SessionRng::from_os();
    let start = Instant::now();
    let p = safe_prime(1536, &mut rng);
    let tp = start.elapsed();
    let start = Instant::now();
    let q = safe_prime(1536, &mut rng);
    let tq = start.elapsed();
    show("1536-bit safe prime (first)", tp);
    show("1536-bit safe prime (second)", tq);
    paillier(3072, &p, &q);
}
