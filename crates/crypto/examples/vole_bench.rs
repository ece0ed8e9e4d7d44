//! Silent VOLE over GF(2^128): time of each step and bytes, both parties in one process.
//! `cargo run --release --example vole_bench -p privset-crypto -- [log2 sizes...]`
//! (default 16 20). Threads: rayon's default (RAYON_NUM_THREADS to change).

use std::time::Instant;

use privset_crypto::rng::SessionRng;
use privset_crypto::vole::{VoleParams, VoleReceiver, VoleSender};

fn main() {
    let logs: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("log2 size"))
        .collect();
    let logs = if logs.is_empty() { vec![16, 20] } else { logs };
    println!("outputs\tcode size\treceiver ms\tsender ms\tbytes r->s\tbytes s->r");
    for log in logs {
        let outputs = 1usize << log;
        let params = VoleParams::for_outputs(outputs).expect("size");
        let (mut r_rng, mut s_rng) = (SessionRng::from_os(), SessionRng::from_os());
        let t = Instant::now();
        let (receiver, first) = VoleReceiver::new(&mut r_rng, b"bench", params);
        let mut r_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let (sender, reply) = VoleSender::respond(&mut s_rng, b"bench", params, &first).unwrap();
        let mut s_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let (pending, extension) = receiver.extend(&mut r_rng, &reply).unwrap();
        r_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let (s_out, trees) = sender.finish(&mut s_rng, &extension).unwrap();
        s_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let r_out = pending.finish(&trees).unwrap();
        r_ms += t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(r_out.c.len(), s_out.b.len());
        println!(
            "2^{log}\t{}\t{r_ms:.1}\t{s_ms:.1}\t{}\t{}",
            params.code_size(),
            first.len() + extension.len(),
            reply.len() + trees.len()
        );
    }
}
