//! Times the KKRT batched OPRF at the sizes of the Random-OT intersection-sum protocol of
//! Ion et al. 2020: for `n` items a side, `m = 1.27·n` cuckoo bins and `3m` sender
//! evaluations (an item in each of its three bins; P2 makes `3n`, so this is an upper
//! bound),
//! both parties in one process on every core, for both code widths. Prints bytes each
//! way and each party's time for the setup (base OTs and the batch) and for
//! `eval_in_bins` (three bins per item, the codeword computed once) and `eval_many`.
//!
//! `cargo run -p privset-crypto --release --example oprf_bench [n ...]`
//! (default: n = 100000 and 2^20 items, so m = 127000 and 1331691 bins)

use std::time::Instant;

use privset_crypto::oprf::{CodeWidth, OprfReceiver, OprfSender};
use privset_crypto::rng::SessionRng;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn run(m: usize, width: CodeWidth) {
    let mut r_rng = SessionRng::from_seed([1; 32]);
    let mut s_rng = SessionRng::from_seed([2; 32]);
    let inputs: Vec<[u8; 16]> = (0..m as u64)
        .map(|i| {
            let mut x = [0u8; 16];
            x[..8].copy_from_slice(&i.to_le_bytes());
            x
        })
        .collect();
    let ctx = b"oprf_bench";

    let t = Instant::now();
    let (receiver, first) = OprfReceiver::new(&mut r_rng, ctx, width);
    let r_base = ms(t);
    let t = Instant::now();
    let (sender, reply) = OprfSender::respond(&mut s_rng, ctx, width, &first).unwrap();
    let s_base = ms(t);
    let t = Instant::now();
    let (message, outputs) = receiver.finish::<16, _>(&reply, &inputs).unwrap();
    let r_finish = ms(t);
    let t = Instant::now();
    let key = sender.finish::<16>(&message, m).unwrap();
    let s_finish = ms(t);

    // 3m evaluations: each item in three bins (the first is its own bin, so a third match).
    let bins: Vec<[usize; 3]> = (0..m)
        .map(|k| [k, (k * 7 + 1) % m, (k * 13 + 5) % m])
        .collect();
    let t = Instant::now();
    let values = key.eval_in_bins(&inputs, &bins);
    let eval_bins = ms(t);
    let points: Vec<(usize, &[u8])> = inputs
        .iter()
        .zip(&bins)
        .flat_map(|(x, b)| b.iter().map(move |&bin| (bin, x.as_slice())))
        .collect();
    let t = Instant::now();
    let flat = key.eval_many(&points);
    let eval_many = ms(t);
    assert!((0..m).step_by(997).all(|k| values[k][0] == outputs[k]));
    assert!((0..m).step_by(991).all(|k| flat[3 * k] == outputs[k]));

    println!(
        "m {m} w {}: receiver -> sender {} bytes (A {} + batch {}), sender -> receiver {} bytes",
        width.bits(),
        first.len() + message.len(),
        first.len(),
        message.len(),
        reply.len()
    );
    println!(
        "  receiver: base {r_base:.1} ms + batch {r_finish:.1} ms; \
         sender: base {s_base:.1} ms + batch {s_finish:.1} ms"
    );
    println!(
        "  sender, {} evaluations: eval_in_bins {eval_bins:.1} ms ({:.0} ns each), \
         eval_many {eval_many:.1} ms ({:.0} ns each)",
        3 * m,
        eval_bins * 1e6 / (3 * m) as f64,
        eval_many * 1e6 / (3 * m) as f64,
    );
}

fn main() {
    let items: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("an item count"))
        .collect();
    let items = if items.is_empty() {
        vec![100_000, 1 << 20]
    } else {
        items
    };
    println!("{} threads", rayon::current_num_threads());
    for n in items {
        let m = n * 127 / 100;
        println!("n {n} items, m {m} bins");
        for width in [CodeWidth::Bits448, CodeWidth::Bits512] {
            run(m, width);
        }
    }
}
