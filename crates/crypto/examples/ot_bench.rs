//! Times 2^20 random OTs (Chou-Orlandi base OTs + SoftSpokenOT extension), both parties in one
//! process, with every core and then on one thread; then the chosen-message masking of
//! 8-byte values with `pad`.
//!
//! `cargo run -p privset-crypto --release --example ot_bench [log2 count]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use privset_crypto::ot::{OtReceiverSetup, OtSenderSetup, pad};
use privset_crypto::rng::SessionRng;

struct Timing {
    base: Duration,
    receiver_extend: Duration,
    sender_extend: Duration,
    bytes: [usize; 3],
}

fn run(count: usize) -> Timing {
    let mut r_rng = SessionRng::from_seed([1; 32]);
    let mut s_rng = SessionRng::from_seed([2; 32]);
    let choices: Vec<bool> = (0..count).map(|_| r_rng.next_u64() & 1 == 1).collect();
    let ctx = b"ot_bench";

    let t = Instant::now();
    let (r_setup, first) = OtReceiverSetup::new(&mut r_rng, ctx);
    let (s_setup, reply) = OtSenderSetup::respond(&mut s_rng, ctx, &first).unwrap();
    let base = t.elapsed();

    let t = Instant::now();
    let (r_keys, u) = r_setup.extend(&reply, &choices).unwrap();
    let receiver_extend = t.elapsed();

    let t = Instant::now();
    let s_keys = s_setup.extend(&u, count).unwrap();
    let sender_extend = t.elapsed();

    for i in (0..count).step_by(4099) {
        assert_eq!(r_keys.key(i), s_keys.key(i, choices[i]));
    }
    Timing {
        base,
        receiver_extend,
        sender_extend,
        bytes: [first.len(), reply.len(), u.len()],
    }
}

fn report(label: &str, count: usize, t: &Timing) {
    let total = t.base + t.receiver_extend + t.sender_extend;
    println!(
        "{label}: base OTs {:.1} ms, receiver extend {:.1} ms, sender extend {:.1} ms, \
         total {:.1} ms ({:.0} ns/OT)",
        t.base.as_secs_f64() * 1e3,
        t.receiver_extend.as_secs_f64() * 1e3,
        t.sender_extend.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e9 / count as f64,
    );
}

fn main() {
    let log2: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("log2 count"))
        .unwrap_or(20);
    let count = 1usize << log2;
    println!("{count} random OTs (2^{log2})");

    let all = run(count);
    let sent: usize = all.bytes.iter().sum();
    println!(
        "bytes: A {} + B {} + extension {} = {} ({:.2} bytes/OT)",
        all.bytes[0],
        all.bytes[1],
        all.bytes[2],
        sent,
        sent as f64 / count as f64
    );
    report(
        &format!("{} threads", rayon::current_num_threads()),
        count,
        &all,
    );

    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| run(count));
    report("1 thread ", count, &one);

    // Chosen 8-byte messages: the sender masks two per OT, the receiver unmasks one.
    let key = [7u8; 32];
    let mut mask = [0u8; 8];
    let t = Instant::now();
    for i in 0..count {
        mask[0] = i as u8;
        pad(black_box(&key), &mut mask);
        black_box(&mask);
    }
    println!(
        "pad, 8 bytes: {:.0} ns each (3 per chosen-message OT, one thread)",
        t.elapsed().as_secs_f64() * 1e9 / count as f64
    );
}
