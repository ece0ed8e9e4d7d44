//! The correlation `c = b + a·Δ` at many sizes, the wire lengths, refused messages and
//! recorded outputs for fixed seeds.

use super::*;

fn run(outputs: usize, r_seed: u8, s_seed: u8) -> (VoleReceiverOutput, VoleSenderOutput, usize) {
    let params = VoleParams::for_outputs(outputs).unwrap();
    let (mut r_rng, mut s_rng) = (
        SessionRng::from_seed([r_seed; 32]),
        SessionRng::from_seed([s_seed; 32]),
    );
    let (receiver, first) = VoleReceiver::new(&mut r_rng, b"ctx", params);
    let (sender, reply) = VoleSender::respond(&mut s_rng, b"ctx", params, &first).unwrap();
    let (pending, extension) = receiver.extend(&mut r_rng, &reply).unwrap();
    assert_eq!(extension.len(), params.extension_len());
    let (s_out, trees) = sender.finish(&mut s_rng, &extension).unwrap();
    assert_eq!(trees.len(), params.tree_message_len());
    let r_out = pending.finish(&trees).unwrap();
    let bytes = first.len() + reply.len() + extension.len() + trees.len();
    (r_out, s_out, bytes)
}

fn assert_correlated(r: &VoleReceiverOutput, s: &VoleSenderOutput, outputs: usize) {
    assert_eq!(
        (r.a.len(), r.c.len(), s.b.len()),
        (outputs, outputs, outputs)
    );
    for i in 0..outputs {
        assert_eq!(
            r.c[i],
            s.b[i] ^ gf128::mul(r.a[i], s.delta),
            "output {i} of {outputs}"
        );
    }
}

#[test]
fn the_correlation_holds_at_many_sizes() {
    for outputs in [
        0usize, 1, 2, 100, 255, 256, 257, 1000, 4097, 65_536, 100_003,
    ] {
        let (r, s, _) = run(outputs, 1, 2);
        assert_correlated(&r, &s, outputs);
        if outputs >= 100 {
            // Pseudorandom, not degenerate: a and b are not constant.
            assert!(
                r.a.iter().any(|&x| x != r.a[0]),
                "a is constant at {outputs}"
            );
            assert!(
                s.b.iter().any(|&x| x != s.b[0]),
                "b is constant at {outputs}"
            );
            let zeros = r.a.iter().filter(|&&x| x == 0).count();
            assert_eq!(zeros, 0, "a has zero entries at {outputs}");
        }
    }
}

#[test]
fn the_correlation_holds_at_a_million() {
    let (r, s, bytes) = run(1 << 20, 3, 4);
    assert_correlated(&r, &s, 1 << 20);
    // Silent: the messages are a small fraction of the outputs' size.
    assert!(bytes < 400_000, "{bytes} bytes on the wire");
}

#[test]
fn parameters_meet_the_noise_bound() {
    for outputs in [
        0usize,
        1,
        1000,
        1 << 16,
        1 << 20,
        (1 << 20) + 12345,
        1 << 24,
    ] {
        let p = VoleParams::for_outputs(outputs).unwrap();
        assert!(p.trees >= MIN_TREES, "{p:?}");
        assert!(p.code_size() >= 2 * outputs, "{p:?}");
        // At most one extra tree of slack per MIN_TREES: the code size stays near 2k.
        assert!(
            p.code_size() <= (2 * outputs).max(2 * MIN_TREES) + (1 << p.depth),
            "{p:?}"
        );
    }
    assert!(VoleParams::for_outputs(MAX_OUTPUTS + 1).is_err());
}

#[test]
fn wrong_lengths_are_refused() {
    let params = VoleParams::for_outputs(1000).unwrap();
    let mut rng = SessionRng::from_seed([5; 32]);
    let (receiver, first) = VoleReceiver::new(&mut rng, b"ctx", params);
    assert!(VoleSender::respond(&mut rng, b"ctx", params, &first[..31]).is_err());
    let (sender, reply) = VoleSender::respond(&mut rng, b"ctx", params, &first).unwrap();
    let (pending, extension) = receiver.extend(&mut rng, &reply).unwrap();
    assert!(matches!(
        sender.finish(&mut rng, &extension[..extension.len() - 1]),
        Err(VoleError::WrongLength { .. })
    ));
    assert!(matches!(
        pending.finish(&vec![0u8; params.tree_message_len() + 16]),
        Err(VoleError::WrongLength { .. })
    ));
}

#[test]
fn a_tampered_tree_message_breaks_the_correlation() {
    let outputs = 5000;
    let params = VoleParams::for_outputs(outputs).unwrap();
    let (mut r_rng, mut s_rng) = (
        SessionRng::from_seed([6; 32]),
        SessionRng::from_seed([7; 32]),
    );
    let (receiver, first) = VoleReceiver::new(&mut r_rng, b"ctx", params);
    let (sender, reply) = VoleSender::respond(&mut s_rng, b"ctx", params, &first).unwrap();
    let (pending, extension) = receiver.extend(&mut r_rng, &reply).unwrap();
    let (s, mut trees) = sender.finish(&mut s_rng, &extension).unwrap();
    // The last tree's leaf sum: flips the value at that tree's noise position.
    let last = trees.len() - 1;
    trees[last] ^= 1;
    let r = pending.finish(&trees).unwrap();
    let broken = (0..outputs)
        .filter(|&i| r.c[i] != s.b[i] ^ gf128::mul(r.a[i], s.delta))
        .count();
    assert!(broken > outputs / 4, "only {broken} outputs broken");
}

#[test]
fn fixed_seeds_give_the_recorded_outputs() {
    let (r, s, _) = run(1000, 10, 11);
    let digest = |v: &[u128]| v.iter().fold(0u128, |acc, x| acc.rotate_left(5) ^ x);
    let got = [digest(&r.a), digest(&r.c), digest(&s.b), s.delta];
    assert_eq!(got, RECORDED, "got {got:#x?}");
}

const RECORDED: [u128; 4] = [
    0x5938e90abc94a9b6369b665736596587,
    0xa9285e5b9238e9f0ad288f9094242be2,
    0x890ed15080005428832c3b0c931288d5,
    0x781085a92ef8d3910d194d0ecce9576f,
];
