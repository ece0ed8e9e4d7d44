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
        for count in [1usize, 127, 129, 5000, 40_000] {
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
fn a_tampered_correction_breaks_only_its_ot() {
    let count = 1000;
    let choices = random_choices(count, 5);
    let (r, s, reply) = setups(1, 2);
    let (receiver, mut message) = r.extend(&reply, &choices).unwrap();
    // Flip OT 77's bit in the correction of tree 3: if the sender's slice 3 is
    // non-zero, OT 77's keys no longer match; no other OT changes.
    message[LEVEL_SUMS_LEN + 3 * count.div_ceil(8) + 77 / 8] ^= 1 << (77 % 8);
    let sender = s.extend(&message, count).unwrap();
    for (i, &c) in choices.iter().enumerate() {
        if i != 77 {
            assert_eq!(receiver.key(i), sender.key(i, c), "OT {i}");
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
