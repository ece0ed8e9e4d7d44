//! Costs of the additively homomorphic schemes at intersection-sum sizes (Ion et al. 2020,
//! Sec. 3.2, Sec. 5.1 and App. B): `cargo run -p privset-crypto --release --example
//! ahe_bench [FILTER]`; with a filter (`rlwe`, `paillier`, `elgamal`, `deployment`), only the
//! schemes whose label contains it run.

use std::time::Instant;

use privset_crypto::ahe::elgamal::{self, ElGamal};
use privset_crypto::ahe::paillier::{self, Paillier};
use privset_crypto::ahe::rlwe::{self, Rlwe};
use privset_crypto::ahe::{AdditiveHe, ColumnBounds, SubsetSum};
use privset_crypto::rng::SessionRng;

const ITEMS: usize = 100_000;

fn bounds_small() -> ColumnBounds {
    ColumnBounds {
        items: ITEMS,
        max_value: u32::MAX as u64,
        max_sum: u32::MAX as u128,
    }
}

fn bounds_large() -> ColumnBounds {
    ColumnBounds {
        items: ITEMS,
        max_value: u32::MAX as u64,
        max_sum: u32::MAX as u128 * ITEMS as u128,
    }
}

/// Values whose total fits `bounds_small` (each below 2^32 / items).
fn values(rng: &mut SessionRng) -> Vec<u64> {
    let cap = (u32::MAX as u64) / ITEMS as u64;
    (0..ITEMS).map(|_| rng.below(cap + 1)).collect()
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn run<H: SubsetSum>(
    name: &str,
    params: &H::Params,
    layout: impl Fn(&H::PublicKey, &ColumnBounds) -> String,
) {
    println!("== {name} ==");
    let mut rng = SessionRng::from_seed([7; 32]);
    let t = Instant::now();
    let (pk, sk) = H::keygen(params, &mut rng);
    println!(
        "keygen: {:.3} s; public key {} bytes",
        secs(t),
        H::encode_public_key(&pk).len()
    );
    for (label, b) in [
        ("max_sum 2^32-1", bounds_small()),
        ("max_sum (2^32-1)*1e5", bounds_large()),
    ] {
        match H::column_ciphertexts(&pk, &b) {
            Ok(n) => println!(
                "bounds {label}: {}; column = {n} ciphertexts = {} bytes; sum output = {} ciphertexts",
                layout(&pk, &b),
                n * H::ciphertext_len(&pk),
                H::sum_ciphertexts(&pk, &b).unwrap_or(0),
            ),
            Err(e) => println!("bounds {label}: {e}"),
        }
    }
    for (label, b) in [
        ("max_sum 2^32-1", bounds_small()),
        ("max_sum (2^32-1)*1e5", bounds_large()),
    ] {
        if H::column_ciphertexts(&pk, &b).is_ok() {
            time::<H>(&pk, &sk, label, &b, &mut rng);
        }
    }
    println!();
}

/// encrypt_column / sum_selected / decrypt_sum at `b`, every item selected.
fn time<H: SubsetSum>(
    pk: &H::PublicKey,
    sk: &H::SecretKey,
    label: &str,
    b: &ColumnBounds,
    rng: &mut SessionRng,
) {
    let vals = if b.max_sum < ITEMS as u128 * u32::MAX as u128 {
        values(rng)
    } else {
        (0..ITEMS).map(|_| rng.below(u32::MAX as u64 + 1)).collect()
    };
    // Warm up (builds the owner's fixed-base table).
    let warm = ColumnBounds { items: 1, ..*b };
    let t = Instant::now();
    H::encrypt_column(pk, sk, &warm, &vals[..1], rng).unwrap();
    println!(
        "[{label}] first encryption (incl. table build): {:.3} s",
        secs(t)
    );
    let t = Instant::now();
    let col = H::encrypt_column(pk, sk, b, &vals, rng).unwrap();
    let el = secs(t);
    let n = H::column_ciphertexts(pk, b).unwrap();
    println!(
        "[{label}] encrypt_column ({ITEMS} items): {el:.3} s total, {:.1} us per ciphertext (2 threads), {} bytes",
        el * 1e6 / n as f64,
        col.len()
    );
    let all: Vec<usize> = (0..ITEMS).collect();
    let t = Instant::now();
    let sum = H::sum_selected(pk, b, &col, &all, rng).unwrap();
    println!(
        "[{label}] sum_selected ({ITEMS} of {ITEMS} selected): {:.3} s, {} bytes out",
        secs(t),
        sum.len()
    );
    let t = Instant::now();
    let s = H::decrypt_sum(sk, b, &sum).unwrap();
    println!("[{label}] decrypt_sum: {:.3} s", secs(t));
    assert_eq!(s, vals.iter().map(|&v| v as u128).sum::<u128>());
}

/// The reverse variant's per-item work (Ion et al. 2020, App. G): the owner's
/// `encrypt_each`, the other party's `mask_each`, the owner's `open_masked_sum` of half
/// of them; the best of three runs of each, since this machine is shared.
fn reverse(params: &paillier::Params) {
    println!(
        "== reverse variant, Paillier {{{}, {}}} ==",
        params.modulus_bits, params.s
    );
    let mut rng = SessionRng::from_seed([9; 32]);
    let (pk, sk) = Paillier::keygen(params, &mut rng);
    let b = bounds_small();
    let vals = values(&mut rng);
    let best = |f: &mut dyn FnMut()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                secs(t)
            })
            .fold(f64::INFINITY, f64::min)
    };
    let t = Instant::now();
    let mut col = Paillier::encrypt_each(&pk, &sk, &b, &vals, &mut rng).unwrap();
    println!("encrypt_each, first (incl. table): {:.3} s", secs(t));
    let el = best(&mut || col = Paillier::encrypt_each(&pk, &sk, &b, &vals, &mut rng).unwrap());
    println!("encrypt_each ({ITEMS} items): {el:.3} s");
    let t = Instant::now();
    let (mut masked, mut masks) = Paillier::mask_each(&pk, &col, &mut rng).unwrap();
    println!("mask_each, first (incl. table): {:.3} s", secs(t));
    let el = best(&mut || (masked, masks) = Paillier::mask_each(&pk, &col, &mut rng).unwrap());
    println!("mask_each ({ITEMS} items): {el:.3} s");
    let half: Vec<usize> = (0..ITEMS).step_by(2).collect();
    let mut opened = Vec::new();
    let el = best(&mut || opened = Paillier::open_masked_sum(&sk, &masked, &half).unwrap());
    println!("open_masked_sum ({} items): {el:.3} s", half.len());
    let sum = Paillier::unmask_sum(&pk, &b, &opened, &masks, &half).unwrap();
    assert_eq!(sum, half.iter().map(|&i| vals[i] as u128).sum::<u128>());
    println!();
}

fn main() {
    println!("threads: {}", rayon::current_num_threads());
    let filter = std::env::args().nth(1).unwrap_or_default().to_lowercase();
    let wanted = |label: &str| label.to_lowercase().contains(&filter);
    let pl = |pk: &paillier::PublicKey, b: &ColumnBounds| match Paillier::layout(pk, b) {
        Ok(l) => format!("k = {} bits, L = {} slots", l.k, l.slots),
        Err(e) => e.to_string(),
    };
    let label = "Paillier-DJ {1536, 3} (Ion et al. 2020 deployment)";
    if wanted(label) {
        run::<Paillier>(label, &paillier::Params::SEED_DEPLOYED, pl);
    }
    let label = "reverse: Paillier {1536, 1} (the deployment's modulus, unpacked)";
    if wanted(label) {
        reverse(&paillier::Params {
            modulus_bits: 1536,
            s: 1,
        });
    }
    let label = "RLWE n = 4096, q = 109 bits, t = 2^42 (default)";
    if wanted(label) {
        run::<Rlwe>(
            label,
            &rlwe::Params::default(),
            |pk, b| match Rlwe::layout(pk, b) {
                Ok(l) => format!(
                    "{} limb(s) of {} bits, {} values per ciphertext, flood 2^{:.1}",
                    l.limbs,
                    l.limb_bits,
                    l.slots,
                    (l.flood as f64).log2()
                ),
                Err(e) => e.to_string(),
            },
        );
    }
    for (label, bounds) in [
        ("RLWE Params::for_columns (sums below 2^32)", bounds_small()),
        (
            "RLWE Params::for_columns (privset's default bounds)",
            bounds_large(),
        ),
    ] {
        if wanted(label) {
            let params = rlwe::Params::for_columns(&[bounds]).unwrap();
            println!("for_columns: {params:?}");
            run::<Rlwe>(label, &params, |pk, b| match Rlwe::layout(pk, b) {
                Ok(l) => format!("{} limb(s), {} values per ciphertext", l.limbs, l.slots),
                Err(e) => e.to_string(),
            });
        }
    }
    let label = "Paillier-DJ {3072, 2} (default)";
    if wanted(label) {
        run::<Paillier>(label, &paillier::Params::default(), pl);
    }
    let label = "Exponential ElGamal / ristretto255";
    if wanted(label) {
        run::<ElGamal>(label, &elgamal::Params::default(), |_, _| {
            "no packing (1 item per ciphertext)".into()
        });
    }
}
