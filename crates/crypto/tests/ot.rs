//! Semi-honest OT (Chou-Orlandi base OTs + SoftSpokenOT extension): correctness of the random
//! OTs, chosen-message OT over `pad`, refusal of malformed messages, context binding
//! and deterministic replay.

use privset_crypto::ot::{
    BASE_FIRST_LEN, BASE_REPLY_LEN, KAPPA, MAX_COUNT, OtError, OtReceiverKeys, OtReceiverSetup,
    OtSenderKeys, OtSenderSetup, SUBSPACE_BITS, extension_message_len, pad,
};
use privset_crypto::rng::SessionRng;

/// Every message of one run, and both outputs.
struct Run {
    first: [u8; BASE_FIRST_LEN],
    reply: Vec<u8>,
    u: Vec<u8>,
    receiver: OtReceiverKeys,
    sender: OtSenderKeys,
}

fn random_choices(count: usize, seed: u8) -> Vec<bool> {
    let mut rng = SessionRng::from_seed([seed; 32]);
    (0..count).map(|_| rng.next_u64() & 1 == 1).collect()
}

fn run_with(seeds: (u8, u8), ctxs: (&[u8], &[u8]), choices: &[bool]) -> Run {
    let mut r_rng = SessionRng::from_seed([seeds.0; 32]);
    let mut s_rng = SessionRng::from_seed([seeds.1; 32]);
    let (r_setup, first) = OtReceiverSetup::new(&mut r_rng, ctxs.0);
    let (s_setup, reply) = OtSenderSetup::respond(&mut s_rng, ctxs.1, &first).unwrap();
    assert_eq!(reply.len(), BASE_REPLY_LEN);
    let (receiver, u) = r_setup.extend(&reply, choices).unwrap();
    assert_eq!(u.len(), extension_message_len(choices.len()));
    let sender = s_setup.extend(&u, choices.len()).unwrap();
    Run {
        first,
        reply,
        u,
        receiver,
        sender,
    }
}

fn run(choices: &[bool]) -> Run {
    run_with((1, 2), (b"ctx", b"ctx"), choices)
}

fn setups(ctx: &[u8]) -> (OtReceiverSetup, OtSenderSetup, Vec<u8>) {
    let (r, first) = OtReceiverSetup::new(&mut SessionRng::from_seed([5; 32]), ctx);
    let (s, reply) =
        OtSenderSetup::respond(&mut SessionRng::from_seed([6; 32]), ctx, &first).unwrap();
    (r, s, reply)
}

#[test]
fn random_ot_keys_match_the_choice() {
    for count in [0usize, 1, 7, 128, 129, 1000, 100_000] {
        let choices = random_choices(count, count as u8);
        let Run {
            receiver, sender, ..
        } = run(&choices);
        assert_eq!(receiver.len(), count);
        assert_eq!(sender.len(), count);
        assert_eq!(receiver.is_empty(), count == 0);
        assert_eq!(sender.is_empty(), count == 0);
        for (i, &c) in choices.iter().enumerate() {
            assert_eq!(receiver.choice(i), c, "choice {i} of {count}");
            assert_eq!(receiver.key(i), sender.key(i, c), "key {i} of {count}");
            assert_ne!(
                receiver.key(i),
                sender.key(i, !c),
                "other key {i} of {count}"
            );
        }
        // Keys are distinct across OTs and bits (no row or column got lost).
        let mut all: Vec<[u8; 32]> = (0..count)
            .flat_map(|i| [*sender.key(i, false), *sender.key(i, true)])
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 2 * count);
    }
}

#[test]
fn constant_choices_work() {
    // All-zero and all-one choices exercise the corrections with c = 0 and c = all ones.
    for bit in [false, true] {
        let choices = vec![bit; 300];
        let Run {
            receiver, sender, ..
        } = run(&choices);
        for i in 0..300 {
            assert_eq!(receiver.key(i), sender.key(i, bit));
            assert_ne!(receiver.key(i), sender.key(i, !bit));
        }
    }
}

#[test]
fn chosen_message_ot_over_pad() {
    let count = 500;
    let choices = random_choices(count, 9);
    let Run {
        receiver, sender, ..
    } = run(&choices);
    let mut msg_rng = SessionRng::from_seed([10; 32]);
    for i in 0..count {
        // Lengths 0, 8 (integers), 40 (strings), 33 and 100 (several pad blocks).
        let len = [0usize, 8, 40, 33, 100][i % 5];
        let mut m = [vec![0u8; len], vec![0u8; len]];
        msg_rng.fill(&mut m[0]);
        msg_rng.fill(&mut m[1]);
        // Sender: c_b = m_b xor pad(k_b).
        let c: Vec<Vec<u8>> = (0..2)
            .map(|b| {
                let mut mask = vec![0u8; len];
                pad(sender.key(i, b == 1), &mut mask);
                m[b].iter().zip(&mask).map(|(x, y)| x ^ y).collect()
            })
            .collect();
        // Receiver: unmask the chosen one.
        let mut mask = vec![0u8; len];
        pad(receiver.key(i), &mut mask);
        let chosen = usize::from(choices[i]);
        let got: Vec<u8> = c[chosen].iter().zip(&mask).map(|(x, y)| x ^ y).collect();
        assert_eq!(got, m[chosen], "OT {i}");
        if len >= 8 {
            let other: Vec<u8> = c[1 - chosen]
                .iter()
                .zip(&mask)
                .map(|(x, y)| x ^ y)
                .collect();
            assert_ne!(other, m[1 - chosen], "OT {i} opened both messages");
        }
    }
}

#[test]
fn pad_is_deterministic_and_key_dependent() {
    let mut a = [0u8; 70];
    let mut b = [0u8; 70];
    pad(&[1; 32], &mut a);
    pad(&[1; 32], &mut b);
    assert_eq!(a, b);
    pad(&[2; 32], &mut b);
    assert_ne!(a, b);
    // Blocks differ from each other (the counter is in the hash).
    assert_ne!(a[..32], a[32..64]);
    pad(&[1; 32], &mut []);
}

#[test]
fn wrong_lengths_are_refused() {
    let mut rng = SessionRng::from_seed([7; 32]);
    let (_, first) = OtReceiverSetup::new(&mut rng, b"ctx");
    for len in [0usize, 31, 33, 64] {
        let mut bytes = first.to_vec();
        bytes.resize(len, 0);
        assert_eq!(
            OtSenderSetup::respond(&mut rng, b"ctx", &bytes).map(|_| ()),
            Err(OtError::WrongLength {
                what: "base-OT first message",
                expected: BASE_FIRST_LEN,
                got: len
            })
        );
    }

    for len in [
        0usize,
        32,
        BASE_REPLY_LEN - 1,
        BASE_REPLY_LEN + 1,
        BASE_REPLY_LEN + 32,
    ] {
        let (r, _, mut reply) = setups(b"ctx");
        reply.resize(len, 1);
        assert_eq!(
            r.extend(&reply, &[true, false]).map(|_| ()),
            Err(OtError::WrongLength {
                what: "base-OT reply",
                expected: BASE_REPLY_LEN,
                got: len
            })
        );
    }

    for count in [0usize, 1, 8, 9, 129, 1000] {
        let (r, _, reply) = setups(b"ctx");
        let (_, u) = r.extend(&reply, &random_choices(count, 3)).unwrap();
        let expected = u.len();
        for delta in [-16isize, -1, 1, 16, 128] {
            let Some(len) = expected.checked_add_signed(delta) else {
                continue;
            };
            let (_, s, _) = setups(b"ctx");
            let mut bad = u.clone();
            bad.resize(len, 0);
            assert_eq!(
                s.extend(&bad, count).map(|_| ()),
                Err(OtError::WrongLength {
                    what: "extension message",
                    expected,
                    got: len
                })
            );
        }
        // Claiming a count whose columns are a byte longer or shorter.
        let (_, s, _) = setups(b"ctx");
        assert!(matches!(
            s.extend(&u, count + 8),
            Err(OtError::WrongLength { .. })
        ));
    }

    let (_, s, _) = setups(b"ctx");
    assert_eq!(
        s.extend(&[], MAX_COUNT + 1).map(|_| ()),
        Err(OtError::TooMany {
            count: MAX_COUNT + 1,
            max: MAX_COUNT
        })
    );
    let (_, s, _) = setups(b"ctx");
    assert!(s.extend(&[], usize::MAX).is_err());
}

#[test]
fn message_lengths() {
    // 4096 bytes of GGM level sums, then 16 corrections of ceil(count / 8) bytes.
    let fixed = 4096;
    assert_eq!(extension_message_len(0), fixed);
    assert_eq!(extension_message_len(1), fixed + KAPPA / SUBSPACE_BITS);
    assert_eq!(extension_message_len(8), fixed + 16);
    assert_eq!(extension_message_len(9), fixed + 32);
    assert_eq!(extension_message_len(1 << 20), fixed + (2 << 20));
    assert_eq!(extension_message_len(usize::MAX), usize::MAX);
    let Run { u, .. } = run(&[]);
    assert_eq!(u.len(), fixed);
}

/// p = 2^255 - 19 little-endian: a non-canonical field element.
fn non_canonical() -> [u8; 32] {
    let mut p = [0xffu8; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    p
}

#[test]
fn invalid_points_are_refused() {
    let mut odd = [0u8; 32];
    odd[0] = 1; // s = 1 is "negative" (odd): not a canonical ristretto255 encoding.
    let mut high = [0u8; 32];
    high[31] = 0x80; // top bit set.
    let bad = [[0u8; 32], non_canonical(), odd, high, [0xff; 32]];

    let mut rng = SessionRng::from_seed([8; 32]);
    for b in &bad {
        assert_eq!(
            OtSenderSetup::respond(&mut rng, b"ctx", b).map(|_| ()),
            Err(OtError::InvalidPoint { index: 0 })
        );
    }

    for (n, b) in bad.iter().enumerate() {
        for j in [0usize, 5, KAPPA - 1] {
            let (r, _, mut reply) = setups(b"ctx");
            reply[j * 32..(j + 1) * 32].copy_from_slice(b);
            // A second bad point later: the first one is reported.
            if j + 1 < KAPPA {
                reply[(KAPPA - 1) * 32..].copy_from_slice(&bad[(n + 1) % bad.len()]);
            }
            assert_eq!(
                r.extend(&reply, &[true; 10]).map(|_| ()),
                Err(OtError::InvalidPoint { index: j })
            );
        }
    }
}

#[test]
fn refused_first_message_draws_no_randomness() {
    let (_, first) = OtReceiverSetup::new(&mut SessionRng::from_seed([1; 32]), b"ctx");
    let mut rng = SessionRng::from_seed([2; 32]);
    assert!(OtSenderSetup::respond(&mut rng, b"ctx", &[0u8; 32]).is_err());
    assert!(OtSenderSetup::respond(&mut rng, b"ctx", &first[..31]).is_err());
    let (_, after) = OtSenderSetup::respond(&mut rng, b"ctx", &first).unwrap();
    let (_, fresh) =
        OtSenderSetup::respond(&mut SessionRng::from_seed([2; 32]), b"ctx", &first).unwrap();
    assert_eq!(after, fresh);
}

#[test]
fn different_contexts_give_unrelated_keys() {
    let choices = random_choices(1000, 11);
    let Run {
        receiver, sender, ..
    } = run_with((1, 2), (b"session-a", b"session-b"), &choices);
    for i in 0..choices.len() {
        assert_ne!(receiver.key(i), sender.key(i, false));
        assert_ne!(receiver.key(i), sender.key(i, true));
    }
    // And the same randomness under another (common) context gives other keys.
    let a = run_with((1, 2), (b"session-a", b"session-a"), &choices);
    let b = run_with((1, 2), (b"session-b", b"session-b"), &choices);
    assert_eq!(a.first, b.first, "A does not depend on the context");
    for (i, &c) in choices.iter().enumerate() {
        assert_eq!(a.receiver.key(i), a.sender.key(i, c));
        assert_ne!(a.receiver.key(i), b.receiver.key(i));
    }
}

#[test]
fn same_seeds_replay_exactly() {
    let choices = random_choices(777, 12);
    let a = run_with((3, 4), (b"ctx", b"ctx"), &choices);
    let b = run_with((3, 4), (b"ctx", b"ctx"), &choices);
    assert_eq!(a.first, b.first);
    assert_eq!(a.reply, b.reply);
    assert_eq!(a.u, b.u);
    for i in 0..choices.len() {
        assert_eq!(a.receiver.key(i), b.receiver.key(i));
        assert_eq!(a.sender.key(i, false), b.sender.key(i, false));
        assert_eq!(a.sender.key(i, true), b.sender.key(i, true));
    }
    // Either party's seed changing changes its messages.
    let c = run_with((3, 5), (b"ctx", b"ctx"), &choices);
    assert_eq!(a.first, c.first);
    assert_ne!(a.reply, c.reply);
    assert_ne!(a.u, c.u);
    let d = run_with((6, 4), (b"ctx", b"ctx"), &choices);
    assert_ne!(a.first, d.first);
    assert_ne!(a.u, d.u);
}

#[test]
fn debug_does_not_print_secrets() {
    let Run {
        receiver, sender, ..
    } = run(&[true, false, true]);
    assert_eq!(format!("{receiver:?}"), "OtReceiverKeys { len: 3, .. }");
    assert_eq!(format!("{sender:?}"), "OtSenderKeys { len: 3, .. }");
    let (r, s, _) = setups(b"ctx");
    assert_eq!(format!("{r:?}"), "OtReceiverSetup { .. }");
    assert_eq!(format!("{s:?}"), "OtSenderSetup { .. }");
}
