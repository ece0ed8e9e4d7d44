//! The unbalanced PSI database's polynomial arithmetic per bin, as the build runs it:
//! the matching polynomial from a bin's roots and the label polynomials interpolated
//! through them (three label parts sharing the points), at each built-in preset's bin
//! size and plaintext prime. One core.
//!
//! `cargo run --release -p privset-protocols --example upsi_poly_bench`

use std::time::Instant;

use privset_crypto::bfv::zt as poly;
use privset_crypto::rng::SessionRng;
use privset_protocols::upsi::preset::Preset;

fn main() {
    let mut rng = SessionRng::from_seed([1u8; 32]);
    let parts = 3;
    println!("preset        t         bin | from_roots ms | interpolate x{parts} ms");
    for preset in Preset::built_in() {
        let (t, n) = (preset.plain_modulus, preset.max_items_per_bin);
        let mut xs: Vec<u64> = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::new();
        while xs.len() < n {
            let x = rng.next_u64() % t;
            if seen.insert(x) {
                xs.push(x);
            }
        }
        let ys: Vec<Vec<u64>> = (0..parts)
            .map(|_| (0..n).map(|_| rng.next_u64() % t).collect())
            .collect();
        let reps = 5;
        let start = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(poly::from_roots(std::hint::black_box(&xs), t));
        }
        let roots_ms = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
        let start = Instant::now();
        let mut out = Vec::new();
        for _ in 0..reps {
            out = poly::interpolate_many(std::hint::black_box(&xs), &ys, t);
        }
        let interp_ms = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
        for (p, y) in out.iter().zip(&ys) {
            for i in [0, n / 2, n - 1] {
                assert_eq!(poly::eval(p, xs[i], t), y[i], "interpolation is wrong");
            }
        }
        println!(
            "{:<10} {:>8} {:>8} | {:>13.3} | {:>17.3}",
            preset.name, t, n, roots_ms, interp_ms
        );
    }
}
