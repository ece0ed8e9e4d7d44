//! The KKRT batched OPRF: the receiver's outputs are the sender's evaluations at its
//! inputs and at nothing else, for both code widths and around every chunk boundary;
//! contexts separate; malformed, truncated and oversized messages are refused with
//! typed errors before anything is allocated; a tampered row breaks exactly its bin;
//! replays are exact.

use privset_crypto::oprf::{
    BASE_FIRST_LEN, CodeWidth, MAX_COUNT, OprfError, OprfReceiver, OprfSender, OprfSenderKey,
};
use privset_crypto::rng::SessionRng;

/// Every message of one run, and both outputs.
struct Run<const L: usize> {
    first: [u8; BASE_FIRST_LEN],
    reply: Vec<u8>,
    message: Vec<u8>,
    outputs: Vec<[u8; L]>,
    key: OprfSenderKey<L>,
}

fn random_inputs(count: usize, seed: u8) -> Vec<Vec<u8>> {
    let mut rng = SessionRng::from_seed([seed; 32]);
    (0..count)
        .map(|_| {
            // Lengths 0..=70, past one SHA-256 block of input.
            let len = rng.below(71) as usize;
            let mut x = vec![0u8; len];
            rng.fill(&mut x);
            x
        })
        .collect()
}

fn run_with<const L: usize>(
    seeds: (u8, u8),
    ctxs: (&[u8], &[u8]),
    width: CodeWidth,
    inputs: &[Vec<u8>],
) -> Run<L> {
    let mut r_rng = SessionRng::from_seed([seeds.0; 32]);
    let mut s_rng = SessionRng::from_seed([seeds.1; 32]);
    let (receiver, first) = OprfReceiver::new(&mut r_rng, ctxs.0, width);
    let (sender, reply) = OprfSender::respond(&mut s_rng, ctxs.1, width, &first).unwrap();
    assert_eq!(reply.len(), width.base_reply_len());
    let (message, outputs) = receiver.finish::<L, _>(&reply, inputs).unwrap();
    assert_eq!(message.len(), width.message_len(inputs.len()));
    assert_eq!(message.len(), inputs.len() * width.bits() / 8);
    let key = sender.finish::<L>(&message, inputs.len()).unwrap();
    Run {
        first,
        reply,
        message,
        outputs: outputs.to_vec(),
        key,
    }
}

fn run(width: CodeWidth, inputs: &[Vec<u8>]) -> Run<16> {
    run_with((1, 2), (b"ctx", b"ctx"), width, inputs)
}

#[test]
fn outputs_are_the_senders_evaluations_at_the_inputs() {
    for width in [CodeWidth::Bits448, CodeWidth::Bits512] {
        // Around a 128-row block and a 4096-row chunk.
        for count in [0usize, 1, 2, 127, 128, 129, 4095, 4096, 4097, 9000] {
            let inputs = random_inputs(count, count as u8);
            let r = run(width, &inputs);
            assert_eq!(r.key.len(), count);
            assert_eq!(r.key.width(), width);
            for (i, x) in inputs.iter().enumerate() {
                assert_eq!(
                    r.key.eval(i, x),
                    r.outputs[i],
                    "{width:?} bin {i} of {count}"
                );
            }
            let points: Vec<(usize, &[u8])> = inputs
                .iter()
                .enumerate()
                .map(|(i, x)| (i, x.as_slice()))
                .collect();
            assert_eq!(r.key.eval_many(&points), r.outputs, "{width:?} {count}");
        }
    }
}

#[test]
fn other_points_give_other_outputs() {
    let count = 600;
    let inputs = random_inputs(count, 7);
    let r = run(CodeWidth::default(), &inputs);
    let mut seen = std::collections::HashSet::new();
    for (i, x) in inputs.iter().enumerate() {
        assert!(seen.insert(r.outputs[i]), "bin {i}: repeated output");
        // Another input in the same bin, and the same input in the other bins.
        let mut other = x.clone();
        other.push(0);
        assert_ne!(r.key.eval(i, &other), r.outputs[i], "bin {i}");
        for j in [(i + 1) % count, (i + 299) % count] {
            let y = r.key.eval(j, x);
            assert_ne!(y, r.outputs[i], "bin {i} vs {j}");
            if inputs[j] != *x {
                assert_ne!(y, r.outputs[j], "bin {j}");
            }
        }
    }
    // Equal inputs in different bins give unrelated outputs.
    let same = vec![b"alice@example.com".to_vec(); 3];
    let r = run(CodeWidth::default(), &same);
    assert_ne!(r.outputs[0], r.outputs[1]);
    assert_ne!(r.outputs[1], r.outputs[2]);
}

#[test]
fn batched_evaluations_agree_with_single_ones() {
    let count = 5000;
    let inputs = random_inputs(count, 9);
    let r = run(CodeWidth::Bits448, &inputs);
    // Items outside the set too, each in three bins (some repeated).
    let items = random_inputs(3000, 10);
    let bins: Vec<[usize; 3]> = (0..items.len())
        .map(|k| [k % count, (7 * k + 3) % count, (7 * k + 3) % count])
        .collect();
    let many = r.key.eval_in_bins(&items, &bins);
    for (k, (x, bins)) in items.iter().zip(&bins).enumerate() {
        for (b, &bin) in bins.iter().enumerate() {
            assert_eq!(many[k][b], r.key.eval(bin, x), "item {k} bin {bin}");
        }
    }
    let own: Vec<[usize; 1]> = (0..count).map(|i| [i]).collect();
    let at_inputs = r.key.eval_in_bins(&inputs, &own);
    assert!(at_inputs.iter().zip(&r.outputs).all(|(a, b)| a[0] == *b));
}

#[test]
fn output_length_is_the_callers() {
    let inputs = random_inputs(300, 11);
    let short: Run<8> = run_with((1, 2), (b"ctx", b"ctx"), CodeWidth::default(), &inputs);
    let long: Run<32> = run_with((1, 2), (b"ctx", b"ctx"), CodeWidth::default(), &inputs);
    for (i, x) in inputs.iter().enumerate() {
        assert_eq!(short.key.eval(i, x), short.outputs[i]);
        assert_eq!(long.key.eval(i, x), long.outputs[i]);
        // One hash, cut to the length.
        assert_eq!(short.outputs[i][..], long.outputs[i][..8]);
    }
}

#[test]
fn a_large_batch_matches() {
    let count = 1 << 16;
    let inputs: Vec<Vec<u8>> = (0..count as u64)
        .map(|i| i.to_le_bytes().to_vec())
        .collect();
    let r = run(CodeWidth::default(), &inputs);
    let points: Vec<(usize, &[u8])> = inputs
        .iter()
        .enumerate()
        .map(|(i, x)| (i, x.as_slice()))
        .collect();
    assert_eq!(r.key.eval_many(&points), r.outputs);
    // Shifted by one bin, nothing matches.
    let shifted: Vec<(usize, &[u8])> = inputs
        .iter()
        .enumerate()
        .map(|(i, x)| ((i + 1) % count, x.as_slice()))
        .collect();
    let outputs: std::collections::HashSet<[u8; 16]> = r.outputs.iter().copied().collect();
    assert!(
        r.key
            .eval_many(&shifted)
            .iter()
            .all(|y| !outputs.contains(y))
    );
}

#[test]
fn contexts_and_sessions_separate() {
    let inputs = random_inputs(200, 12);
    let a = run(CodeWidth::default(), &inputs);
    // The parties disagree on the context: nothing matches.
    let split: Run<16> = run_with((1, 2), (b"ctx", b"other"), CodeWidth::default(), &inputs);
    for (i, x) in inputs.iter().enumerate() {
        assert_ne!(split.key.eval(i, x), split.outputs[i], "bin {i}");
    }
    // Same context, the same randomness: a replay is exact.
    let again = run(CodeWidth::default(), &inputs);
    assert_eq!(a.first, again.first);
    assert_eq!(a.reply, again.reply);
    assert_eq!(a.message, again.message);
    assert_eq!(a.outputs, again.outputs);
    // Another context or other randomness: unrelated outputs.
    let other_ctx: Run<16> = run_with((1, 2), (b"ctx2", b"ctx2"), CodeWidth::default(), &inputs);
    let other_seed: Run<16> = run_with((3, 4), (b"ctx", b"ctx"), CodeWidth::default(), &inputs);
    for i in 0..inputs.len() {
        assert_ne!(a.outputs[i], other_ctx.outputs[i]);
        assert_ne!(a.outputs[i], other_seed.outputs[i]);
    }
}

#[test]
fn malformed_first_messages_are_refused() {
    let mut rng = SessionRng::from_seed([2; 32]);
    let width = CodeWidth::default();
    for len in [0usize, 31, 33, 64] {
        let err = OprfSender::respond(&mut rng, b"ctx", width, &vec![1u8; len]).unwrap_err();
        assert_eq!(
            err,
            OprfError::WrongLength {
                what: "base-OT first message",
                expected: 32,
                got: len
            }
        );
    }
    // The identity, a non-canonical encoding, and bytes that decode to no point.
    for bad in [[0u8; 32], [0xff; 32], [0x01; 32]] {
        let err = OprfSender::respond(&mut rng, b"ctx", width, &bad).unwrap_err();
        assert_eq!(err, OprfError::InvalidPoint { index: 0 });
    }
}

#[test]
fn malformed_base_replies_are_refused() {
    let inputs = random_inputs(10, 13);
    let width = CodeWidth::default();
    let fresh = || {
        let mut r_rng = SessionRng::from_seed([1; 32]);
        let mut s_rng = SessionRng::from_seed([2; 32]);
        let (receiver, first) = OprfReceiver::new(&mut r_rng, b"ctx", width);
        let (_, reply) = OprfSender::respond(&mut s_rng, b"ctx", width, &first).unwrap();
        (receiver, reply)
    };
    // Truncated, one point short, oversized.
    for len in [0usize, 1, 16384 - 32, 16384 - 1, 16384 + 1, 16384 + 32] {
        let (receiver, reply) = fresh();
        let mut bad = reply.clone();
        bad.resize(len, 7);
        let err = receiver.finish::<16, _>(&bad, &inputs).unwrap_err();
        assert_eq!(
            err,
            OprfError::WrongLength {
                what: "base-OT reply",
                expected: 16384,
                got: len
            }
        );
    }
    // An invalid point is named by its index.
    for (j, garbage) in [(0usize, [0u8; 32]), (300, [0xff; 32]), (511, [0x01; 32])] {
        let (receiver, mut reply) = fresh();
        reply[j * 32..(j + 1) * 32].copy_from_slice(&garbage);
        let err = receiver.finish::<16, _>(&reply, &inputs).unwrap_err();
        assert_eq!(err, OprfError::InvalidPoint { index: j });
    }
    // The parties disagree on the width: caught by the length.
    let mut r_rng = SessionRng::from_seed([1; 32]);
    let mut s_rng = SessionRng::from_seed([2; 32]);
    let (receiver, first) = OprfReceiver::new(&mut r_rng, b"ctx", CodeWidth::Bits448);
    let (_, reply) = OprfSender::respond(&mut s_rng, b"ctx", CodeWidth::Bits512, &first).unwrap();
    let err = receiver.finish::<16, _>(&reply, &inputs).unwrap_err();
    assert!(matches!(
        err,
        OprfError::WrongLength {
            expected: 14336,
            got: 16384,
            ..
        }
    ));
}

#[test]
fn malformed_messages_are_refused() {
    let inputs = random_inputs(100, 14);
    let width = CodeWidth::default();
    let fresh = || {
        let mut r_rng = SessionRng::from_seed([1; 32]);
        let mut s_rng = SessionRng::from_seed([2; 32]);
        let (receiver, first) = OprfReceiver::new(&mut r_rng, b"ctx", width);
        let (sender, reply) = OprfSender::respond(&mut s_rng, b"ctx", width, &first).unwrap();
        let (message, _) = receiver.finish::<16, _>(&reply, &inputs).unwrap();
        (sender, message)
    };
    // Truncated, oversized, and a count the message does not carry.
    for (len, count) in [
        (0usize, 100usize),
        (6399, 100),
        (6401, 100),
        (6464, 100),
        (6400, 99),
        (6400, 101),
    ] {
        let (sender, message) = fresh();
        let mut bad = message.clone();
        bad.resize(len, 0);
        let err = sender.finish::<16>(&bad, count).unwrap_err();
        assert_eq!(
            err,
            OprfError::WrongLength {
                what: "OPRF message",
                expected: 64 * count,
                got: len
            }
        );
    }
    // A count beyond the limit is refused before its length is even computed.
    let (sender, message) = fresh();
    assert_eq!(
        sender.finish::<16>(&message, usize::MAX).unwrap_err(),
        OprfError::TooMany {
            count: usize::MAX,
            max: MAX_COUNT
        }
    );
    let (sender, message) = fresh();
    assert!(matches!(
        sender.finish::<16>(&message, MAX_COUNT + 1).unwrap_err(),
        OprfError::TooMany { .. }
    ));
}

#[test]
fn a_garbled_row_breaks_exactly_its_bin() {
    let count = 300;
    let inputs = random_inputs(count, 15);
    let width = CodeWidth::default();
    let mut r_rng = SessionRng::from_seed([1; 32]);
    let mut s_rng = SessionRng::from_seed([2; 32]);
    let (receiver, first) = OprfReceiver::new(&mut r_rng, b"ctx", width);
    let (sender, reply) = OprfSender::respond(&mut s_rng, b"ctx", width, &first).unwrap();
    let (mut message, outputs) = receiver.finish::<16, _>(&reply, &inputs).unwrap();
    // Every bit of row 77 flipped: q_77 moves by s, which is non-zero.
    for byte in &mut message[77 * 64..78 * 64] {
        *byte ^= 0xff;
    }
    let key = sender.finish::<16>(&message, count).unwrap();
    for (i, x) in inputs.iter().enumerate() {
        assert_eq!(key.eval(i, x) == outputs[i], i != 77, "bin {i}");
    }
    // Pure garbage of the right length: no panic, no match.
    let mut r_rng = SessionRng::from_seed([1; 32]);
    let mut s_rng = SessionRng::from_seed([2; 32]);
    let (_, first) = OprfReceiver::new(&mut r_rng, b"ctx", width);
    let (sender, _) = OprfSender::respond(&mut s_rng, b"ctx", width, &first).unwrap();
    let key = sender.finish::<16>(&vec![0xa5; 64 * count], count).unwrap();
    assert!((0..count).all(|i| key.eval(i, &inputs[i]) != outputs[i]));
}

#[test]
#[should_panic(expected = "OPRF bin 5 out of range 5")]
fn evaluating_past_the_last_bin_is_a_caller_bug() {
    let inputs = random_inputs(5, 16);
    let r = run(CodeWidth::default(), &inputs);
    r.key.eval(5, b"x");
}

#[test]
fn the_base_reply_ignores_the_inputs() {
    // Steps 1 and 2 can run before the inputs exist; the message is all that carries them.
    let a = run(CodeWidth::default(), &random_inputs(50, 17));
    let b = run(CodeWidth::default(), &random_inputs(50, 18));
    assert_eq!(a.first, b.first);
    assert_eq!(a.reply, b.reply);
    assert_ne!(a.message, b.message);
}
