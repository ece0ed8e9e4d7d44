//! The extension for every tree depth `k` (the public API fixes `k` = 8; `k = 1` is
//! IKNP): keys match the choices, the other key stays apart, the wire cost is
//! `128 / k` bits per OT, and a tampered correction or level sum breaks the keys it
//! touches without a panic.

use super::*;

fn random_choices(count: usize, seed: u8) -> Vec<bool> {
    let mut rng = SessionRng::from_seed([seed; 32]);
    (0..count).map(|_| rng.next_u64() & 1 == 1).collect()
}

fn setups(r_seed: u8, s_seed: u8) -> (OtReceiverSetup, OtSenderSetup, Vec<u8>) {
    let (r, first) = OtReceiverSetup::new(&mut SessionRng::from_seed([r_seed; 32]), b"ctx");
    let (s, reply) =
        OtSenderSetup::respond(&mut SessionRng::from_seed([s_seed; 32]), b"ctx", &first).unwrap();
    (r, s, reply)
}

#[test]
fn every_depth_gives_matching_keys() {
    for k in [1usize, 2, 4, 8] {
        // Around a byte, a 128-row block and a 4096-byte stream segment (32768 OTs).
        for count in [0usize, 1, 8, 127, 128, 129, 256, 5000, 32_768, 32_769] {
            // Several sender seeds: different offsets, so different punctured leaves.
            for s_seed in [2u8, 3, 4] {
                let choices = random_choices(count, count as u8 ^ k as u8);
                let (r, s, reply) = setups(1, s_seed);
                let (receiver, message) = r.extend_with(&reply, &choices, k).unwrap();
                assert_eq!(
                    message.len(),
                    LEVEL_SUMS_LEN + KAPPA / k * count.div_ceil(8)
                );
                let sender = s.extend_with(&message, count, k).unwrap();
                for (i, &c) in choices.iter().enumerate() {
                    assert_eq!(receiver.key(i), sender.key(i, c), "k {k} OT {i} of {count}");
                    assert_ne!(
                        receiver.key(i),
                        sender.key(i, !c),
                        "k {k} OT {i} of {count}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_tampered_correction_breaks_exactly_its_ot() {
    let count = 1000;
    let choices = random_choices(count, 5);
    for s_seed in [2u8, 3, 4, 9] {
        let (r, s, reply) = setups(1, s_seed);
        // Tree 3 covers bits 24..32 of the offset: a flipped correction bit moves OT 77's
        // q row by that slice, so its keys break exactly when the slice is non-zero.
        let slice = (*s.s >> 24) & 0xff;
        let (receiver, mut message) = r.extend(&reply, &choices).unwrap();
        message[LEVEL_SUMS_LEN + 3 * count.div_ceil(8) + 77 / 8] ^= 1 << (77 % 8);
        let sender = s.extend(&message, count).unwrap();
        for (i, &c) in choices.iter().enumerate() {
            let matches = receiver.key(i) == sender.key(i, c);
            assert_eq!(matches, i != 77 || slice == 0, "OT {i}, slice {slice:#x}");
        }
    }
}

#[test]
fn level_sums_ignore_the_choices_and_corrections_carry_them() {
    let count = 300;
    let (a, b) = (random_choices(count, 1), random_choices(count, 2));
    let (r, _, reply) = setups(1, 2);
    let (_, msg_a) = r.extend(&reply, &a).unwrap();
    let (r, _, reply) = setups(1, 2);
    let (_, msg_b) = r.extend(&reply, &b).unwrap();
    assert_eq!(msg_a[..LEVEL_SUMS_LEN], msg_b[..LEVEL_SUMS_LEN]);
    let len = count.div_ceil(8);
    for (t, (ca, cb)) in msg_a[LEVEL_SUMS_LEN..]
        .chunks(len)
        .zip(msg_b[LEVEL_SUMS_LEN..].chunks(len))
        .enumerate()
    {
        for i in 0..count {
            let bit = |m: &[u8]| (m[i / 8] >> (i % 8)) & 1 == 1;
            assert_eq!(bit(ca) ^ bit(cb), a[i] ^ b[i], "tree {t} OT {i}");
        }
    }
}

#[test]
fn a_tampered_level_sum_breaks_keys_but_never_panics() {
    let count = 2000;
    let choices = random_choices(count, 6);
    let (r, s, reply) = setups(1, 2);
    let (receiver, mut message) = r.extend(&reply, &choices).unwrap();
    for byte in message[..LEVEL_SUMS_LEN].iter_mut() {
        *byte ^= 0x5a;
    }
    let sender = s.extend(&message, count).unwrap();
    let matching = (0..count)
        .filter(|&i| receiver.key(i) == sender.key(i, choices[i]))
        .count();
    assert!(
        matching < count / 100,
        "{matching} of {count} keys still match"
    );
}

#[test]
fn correlated_rows_differ_by_the_offset_exactly_where_chosen() {
    for count in [0usize, 1, 127, 128, 129, 5000] {
        let choices = random_choices(count, 11);
        let (r, s, reply) = setups(1, 2);
        let (receiver, message) = r.extend_correlated(&reply, &choices).unwrap();
        let sender = s.extend_correlated(&message, count).unwrap();
        assert_eq!((receiver.len(), sender.len()), (count, count));
        let offset = sender.offset();
        assert_ne!(offset, 0);
        for (i, &c) in choices.iter().enumerate() {
            assert_eq!(receiver.choice(i), c);
            let expected = receiver.row(i) ^ if c { offset } else { 0 };
            assert_eq!(sender.row(i), expected, "OT {i} of {count}");
            assert_eq!(receiver.key(i), sender.key(i, c));
            assert_ne!(receiver.key(i), sender.key(i, !c));
        }
    }
}

#[test]
fn correlated_keys_are_the_random_ot_keys() {
    let count = 300;
    let choices = random_choices(count, 12);
    let (r1, s1, reply1) = setups(1, 2);
    let (r2, s2, reply2) = setups(1, 2);
    let (plain_r, message) = r1.extend(&reply1, &choices).unwrap();
    let plain_s = s1.extend(&message, count).unwrap();
    let (corr_r, message) = r2.extend_correlated(&reply2, &choices).unwrap();
    let corr_s = s2.extend_correlated(&message, count).unwrap();
    for (i, &c) in choices.iter().enumerate() {
        assert_eq!(*plain_r.key(i), corr_r.key(i));
        assert_eq!(*plain_s.key(i, !c), corr_s.key(i, !c));
    }
}
