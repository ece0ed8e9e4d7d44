//! Per-element cost of each cwPRF on one thread: `F_k(H(x))` for own items and
//! `F_k(e)` for received elements (validation included), as the mqRPMT uses them.
//!
//! `RAYON_NUM_THREADS=1 cargo run -p privset-crypto --release --example cwprf_bench [GROUP]`
//! (one group only when named, e.g. `x25519`: handy under `perf stat`).

use std::time::Instant;

use privset_crypto::cwprf::CwPrf;
use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::group::p256::{P256, P256Uncompressed};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;

fn bench<C: CwPrf>(name: &str, n: usize) {
    let mut rng = SessionRng::from_seed([3; 32]);
    let k1 = C::random_key(&mut rng);
    let k2 = C::random_key(&mut rng);
    let items: Vec<[u8; 16]> = (0..n as u128).map(|i| i.to_le_bytes()).collect();
    let t = Instant::now();
    let once = C::hash_eval_batch(b"privset-bench", &items, &k1);
    let hash_eval = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    let twice = C::eval_batch(&once, &k2).expect("valid");
    let eval = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    C::validate_batch(&twice).expect("valid");
    let validate = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "{name:>16}: F(H(x)) {hash_eval:6.2} us   F(received) {eval:6.2} us   validate only {validate:6.2} us   ({} bytes/element)",
        C::ELEMENT_LEN
    );
}

fn main() {
    let n = 20_000;
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    println!("per element, {n} elements, threads: RAYON_NUM_THREADS or all cores");
    if wanted("ristretto255") {
        bench::<Ristretto255>("ristretto255", n);
    }
    if wanted("x25519") {
        bench::<X25519>("x25519", n);
    }
    if wanted("p256") {
        bench::<P256Uncompressed>("p256", n / 10);
    }
    if wanted("p256-compressed") {
        bench::<P256>("p256-compressed", n / 10);
    }
}
