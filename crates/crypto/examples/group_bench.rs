//! Micro-benchmarks of the group and filter primitives.
//!
//! `cargo run -p privset-crypto --release --example group_bench`
//!
//! Single operations are timed on one thread; the batch methods and filter encoding
//! use every core (rayon), and their per-element figure is wall time / elements.

use std::hint::black_box;
use std::time::Instant;

use privset_crypto::filter::{FilterKind, FilterParams, SetFilter, encode};
use privset_crypto::group::PrimeGroup;
use privset_crypto::group::p256::P256;
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;

const BATCH: usize = 65_536;
const FILTER_N: usize = 100_000;

fn us_per(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_secs_f64() * 1e6 / ops as f64
}

fn bench_group<G: PrimeGroup>(name: &str, reps: usize) {
    let dst = b"privset-bench";
    let mut rng = SessionRng::from_seed([1; 32]);
    let k = G::random_scalar(&mut rng);

    let t = Instant::now();
    let elements: Vec<G::Element> = (0..reps as u64)
        .map(|i| G::hash_to_group(dst, &i.to_le_bytes()))
        .collect();
    let hash = us_per(t, reps);

    let t = Instant::now();
    let multiplied: Vec<G::Element> = elements.iter().map(|e| G::mul(e, &k)).collect();
    let mul = us_per(t, reps);

    let mut packed = vec![0u8; reps * G::ELEMENT_LEN];
    let t = Instant::now();
    for (e, out) in multiplied
        .iter()
        .zip(packed.chunks_exact_mut(G::ELEMENT_LEN))
    {
        G::encode(e, out);
    }
    let enc = us_per(t, reps);

    let t = Instant::now();
    for e in packed.chunks_exact(G::ELEMENT_LEN) {
        black_box(G::decode(e).unwrap());
    }
    let dec = us_per(t, reps);

    let items: Vec<[u8; 8]> = (0..BATCH as u64).map(|i| i.to_le_bytes()).collect();
    let t = Instant::now();
    let batch = G::hash_mul_encode_batch(dst, &items, &k);
    let hme = us_per(t, BATCH);
    let t = Instant::now();
    black_box(G::decode_mul_encode_batch(&batch, &k).unwrap());
    let dme = us_per(t, BATCH);

    println!(
        "{name:<13} hash_to_group {hash:7.2} µs  mul {mul:7.2} µs  encode {enc:6.2} µs  \
         decode {dec:6.2} µs"
    );
    println!(
        "{name:<13} hash_mul_encode_batch {hme:6.2} µs/elt  decode_mul_encode_batch \
         {dme:6.2} µs/elt   ({BATCH} elements, {} threads)",
        rayon::current_num_threads()
    );
}

fn bench_filter(kind: FilterKind) {
    let mut rng = SessionRng::from_seed([2; 32]);
    let element_len = 32;
    let mut set = vec![0u8; FILTER_N * element_len];
    rng.fill(&mut set);
    let key = [9u8; 32];
    let params = FilterParams::new(kind, FILTER_N, FILTER_N);

    let t = Instant::now();
    let bytes = encode(&params, &key, &set, element_len);
    let enc_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let filter = SetFilter::decode(&params, &key, &bytes).unwrap();
    let dec_ms = t.elapsed().as_secs_f64() * 1e3;

    let mut probe = vec![0u8; FILTER_N * element_len];
    rng.fill(&mut probe);
    let t = Instant::now();
    let hits = probe
        .chunks_exact(element_len)
        .filter(|e| filter.contains(e))
        .count();
    let look = us_per(t, FILTER_N);
    assert!(set.chunks_exact(element_len).all(|e| filter.contains(e)));

    println!(
        "{:<5} n=q={FILTER_N}: {} bytes ({:.2} bits/elt, max {}), encode {enc_ms:.1} ms, \
         decode {dec_ms:.1} ms, contains {look:.2} µs, {hits} false positives",
        kind.name(),
        bytes.len(),
        bytes.len() as f64 * 8.0 / FILTER_N as f64,
        params.max_encoded_len(),
    );
}

fn main() {
    bench_group::<Ristretto255>("ristretto255", 4000);
    bench_group::<P256>("p256", 1000);
    bench_filter(FilterKind::Gcs);
    bench_filter(FilterKind::Bloom);
}
