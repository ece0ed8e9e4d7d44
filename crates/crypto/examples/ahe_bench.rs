//! Costs of the additively homomorphic schemes at intersection-sum sizes (Ion et al. 2020,
//! Sec. 3.2 and App. B): `cargo run -p privset-crypto --release --example ahe_bench`.

use std::time::Instant;

use privset_crypto::ahe::elgamal::{self, ElGamal};
use privset_crypto::ahe::paillier::{self, Paillier};
use privset_crypto::ahe::{ColumnBounds, SubsetSum};
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
    println!("keygen: {:.3} s", secs(t));
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
    let b = bounds_small();
    let vals = values(&mut rng);
    // Warm up (builds the owner's fixed-base table).
    let warm = ColumnBounds { items: 1, ..b };
    let t = Instant::now();
    H::encrypt_column(&pk, &sk, &warm, &vals[..1], &mut rng).unwrap();
    println!("first encryption (incl. table build): {:.3} s", secs(t));
    let t = Instant::now();
    let col = H::encrypt_column(&pk, &sk, &b, &vals, &mut rng).unwrap();
    let el = secs(t);
    let n = H::column_ciphertexts(&pk, &b).unwrap();
    println!(
        "encrypt_column (max_sum 2^32-1, {ITEMS} items): {el:.3} s total, {:.1} us per ciphertext (2 threads), {} bytes",
        el * 1e6 / n as f64,
        col.len()
    );
    let all: Vec<usize> = (0..ITEMS).collect();
    let t = Instant::now();
    let sum = H::sum_selected(&pk, &b, &col, &all, &mut rng).unwrap();
    println!(
        "sum_selected ({ITEMS} of {ITEMS} selected): {:.3} s, {} bytes out",
        secs(t),
        sum.len()
    );
    let t = Instant::now();
    let s = H::decrypt_sum(&sk, &b, &sum).unwrap();
    println!("decrypt_sum: {:.3} s", secs(t));
    assert_eq!(s, vals.iter().map(|&v| v as u128).sum::<u128>());
    println!();
}

fn main() {
    println!("threads: {}", rayon::current_num_threads());
    let pl = |pk: &paillier::PublicKey, b: &ColumnBounds| match Paillier::layout(pk, b) {
        Ok(l) => format!("k = {} bits, L = {} slots", l.k, l.slots),
        Err(e) => e.to_string(),
    };
    run::<Paillier>(
        "Paillier-DJ {1536, 3} (Ion et al. 2020 deployment)",
        &paillier::Params::SEED_DEPLOYED,
        pl,
    );
    run::<Paillier>(
        "Paillier-DJ {3072, 2} (default)",
        &paillier::Params::default(),
        pl,
    );
    run::<ElGamal>(
        "Exponential ElGamal / ristretto255",
        &elgamal::Params::default(),
        |_, _| "no packing (1 item per ciphertext)".into(),
    );
}
