//! What an unbalanced-PSI server pays per stored plaintext in a query: the product
//! with a ciphertext (a term of a dot product), and, for a plaintext not held in
//! NTT form, its conversion from the packed form first, at each level an
//! evaluation may run at. The two set the price of the database's cache budget
//! (docs/upsi.md, "Memory").
//!
//! `cargo run --release -p privset-crypto --example bfv_bench`

use std::time::Instant;

use privset_crypto::bfv::{
    Ciphertext, FheEncrypter, HeParams, PackedPlaintext, SecretKey, encode, packed::plaintext_bytes,
};
use privset_crypto::rng::SessionRng;

fn main() {
    for (degree, t, moduli) in [
        (4096, 786_433u64, vec![36, 36, 37]),
        (8192, 4_079_617, vec![56, 56, 56, 50]),
    ] {
        let par = HeParams {
            degree,
            plain_modulus: t,
            moduli_bits: moduli.clone(),
        }
        .build()
        .expect("parameters");
        for level in 0..par.max_level() {
            let mut rng = SessionRng::from_seed([3; 32]);
            let values: Vec<u64> = (0..degree as u64).map(|i| (i * 7919) % t).collect();
            let packed = PackedPlaintext::from_slots(&par, &values).expect("packs");
            let reps = 400;
            // The first conversion at a level builds its transform (once per process).
            std::hint::black_box(packed.to_ntt(&par, level).expect("converts"));
            let started = Instant::now();
            let plaintexts: Vec<_> = (0..44)
                .map(|_| packed.to_ntt(&par, level).expect("converts"))
                .collect();
            for _ in 44..reps {
                std::hint::black_box(packed.to_ntt(&par, level).expect("converts"));
            }
            let convert = started.elapsed().as_secs_f64() * 1e6 / reps as f64;
            let sk = SecretKey::random(&par, &mut rng);
            let fresh = encode(&par, &values).expect("encodes");
            let cts: Vec<Ciphertext> = (0..44)
                .map(|_| {
                    let mut ct: Ciphertext = sk.try_encrypt(&fresh, &mut rng).expect("encrypts");
                    ct.switch_to_level(level).expect("switches");
                    ct
                })
                .collect();
            let rounds = reps / 44;
            let started = Instant::now();
            for _ in 0..rounds {
                for part in 0..2 {
                    std::hint::black_box(
                        fhe_math::rq::dot_product(cts.iter().map(|c| &c[part]), plaintexts.iter())
                            .expect("products"),
                    );
                }
            }
            let product = started.elapsed().as_secs_f64() * 1e6 / (rounds * 44) as f64;
            println!(
                "n = {degree}, q = {moduli:?}, level {level}: packed {} KB, in NTT form {} KB; \
                 conversion {convert:.0} us, product term {product:.0} us",
                packed.heap_bytes() / 1024,
                plaintext_bytes(&par, level) / 1024,
            );
        }
    }
}
