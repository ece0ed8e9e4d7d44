//! The set operations of Chen et al. 2024 end to end over the in-memory pair, each checked
//! against the plaintext answer on random inputs and edge cases.
#![allow(clippy::result_large_err)] // PairError carries both sides' errors; tests only.

use std::collections::{HashMap, HashSet};

use privset_crypto::cwprf::CwPrfId;
use privset_crypto::filter::FilterKind;
use privset_crypto::group::GroupId;
use privset_crypto::rng::SessionRng;
use privset_net::memory::{Direction, HookAction, PairError, run_pair, run_pair_with};
use privset_protocols::input::Dataset;
use privset_protocols::pso::{
    self, Construction, LastMessage, Operation, PsoChoices, PsoConfig, PsoOutput, PsoRole, transfer,
};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::{PeerMisbehaved, ProtocolError};

fn id(i: u64) -> Vec<u8> {
    // Varying lengths exercise the fixed-width identifier slots.
    format!("item-{i}-{}", "x".repeat((i % 7) as usize)).into_bytes()
}

fn receiver_set(ys: &[u64]) -> Dataset {
    Dataset {
        ids: ys.iter().map(|&i| id(i)).collect(),
        ..Dataset::default()
    }
}

fn sender_set(xs: &[(u64, u64)], with_values: bool) -> Dataset {
    Dataset {
        ids: xs.iter().map(|p| id(p.0)).collect(),
        columns: if with_values {
            vec![xs.iter().map(|p| p.1).collect()]
        } else {
            vec![]
        },
        column_names: if with_values {
            vec!["v".into()]
        } else {
            vec![]
        },
        ..Dataset::default()
    }
}

fn seed(rng: &mut SessionRng) -> [u8; 32] {
    let mut s = [0u8; 32];
    rng.fill(&mut s);
    s
}

fn run(config: &PsoConfig, ys: &[u64], xs: &[(u64, u64)]) -> (PsoOutput, PsoOutput) {
    let mut rng = SessionRng::from_os();
    let values = config.operation == Operation::PsiCardSum;
    let mut r =
        pso::new_party(PsoRole::Receiver, config, receiver_set(ys), seed(&mut rng)).unwrap();
    let mut s = pso::new_party(
        PsoRole::Sender,
        config,
        sender_set(xs, values),
        seed(&mut rng),
    )
    .unwrap();
    run_pair(r.as_mut(), s.as_mut()).unwrap();
    (r.into_output().unwrap(), s.into_output().unwrap())
}

/// Random sets: `n1` receiver items, `n2` sender items, `overlap` of them shared.
fn random_sets(
    rng: &mut SessionRng,
    n1: usize,
    n2: usize,
    overlap: usize,
) -> (Vec<u64>, Vec<(u64, u64)>) {
    let base = rng.next_u64() >> 8;
    let ys: Vec<u64> = (0..n1 as u64).map(|i| base + i).collect();
    let xs = (0..n2 as u64)
        .map(|j| {
            let x = if (j as usize) < overlap {
                base + j
            } else {
                base + n1 as u64 + 1000 + j
            };
            (x, rng.below(1 << 32))
        })
        .collect();
    (ys, xs)
}

fn as_set(items: &[Vec<u8>]) -> HashSet<Vec<u8>> {
    items.iter().cloned().collect()
}

/// Checks both outputs of `op` against the plaintext answer.
fn check(config: &PsoConfig, ys: &[u64], xs: &[(u64, u64)]) {
    let (r, s) = run(config, ys, xs);
    let yset: HashSet<Vec<u8>> = ys.iter().map(|&y| id(y)).collect();
    let xset: HashSet<Vec<u8>> = xs.iter().map(|p| id(p.0)).collect();
    let inter: HashSet<Vec<u8>> = yset.intersection(&xset).cloned().collect();
    let card = inter.len() as u64;
    let ctx = format!(
        "{} {:?} n1={} n2={}",
        config.operation.name(),
        config.cwprf,
        ys.len(),
        xs.len()
    );
    assert_eq!(r.peer_items(), xs.len() as u64, "{ctx}");
    assert_eq!(s.peer_items(), ys.len() as u64, "{ctx}");
    let sender_sees_only_the_size = PsoOutput::PeerSize {
        peer_items: ys.len() as u64,
    };
    match config.operation {
        Operation::Psi => {
            let PsoOutput::Intersection { items, .. } = &r else {
                panic!("{ctx}: receiver output {r:?}");
            };
            assert_eq!(as_set(items), inter, "{ctx}");
            assert_eq!(items.len() as u64, card, "{ctx}: no duplicates");
            assert_eq!(r.cardinality(), Some(card), "{ctx}");
            assert_eq!(s, sender_sees_only_the_size, "{ctx}");
        }
        Operation::PsiCard => {
            assert!(
                matches!(r, PsoOutput::Cardinality { cardinality, .. } if cardinality == card),
                "{ctx}: {r:?}"
            );
            assert_eq!(s, sender_sees_only_the_size, "{ctx}");
        }
        Operation::PsiCardSum => {
            let sum: u128 = xs
                .iter()
                .filter(|p| yset.contains(&id(p.0)))
                .map(|p| p.1 as u128)
                .sum();
            assert!(
                matches!(r, PsoOutput::Cardinality { cardinality, .. } if cardinality == card),
                "{ctx}: {r:?}"
            );
            assert_eq!(
                s,
                PsoOutput::CardinalitySum {
                    cardinality: card,
                    sum,
                    peer_items: ys.len() as u64
                },
                "{ctx}"
            );
            assert_eq!(r.sum(), None);
        }
        Operation::Psu => {
            let union: HashSet<Vec<u8>> = yset.union(&xset).cloned().collect();
            let PsoOutput::Union { items: got, .. } = &r else {
                panic!("{ctx}: receiver output {r:?}");
            };
            assert_eq!(got.len(), union.len(), "{ctx}: no duplicates in the union");
            assert_eq!(as_set(got), union, "{ctx}");
            assert_eq!(s, sender_sees_only_the_size, "{ctx}");
        }
        Operation::PsiShare => {
            let PsoOutput::ReceiverShares {
                cardinality, rows, ..
            } = r
            else {
                panic!("{ctx}: receiver output {r:?}");
            };
            let PsoOutput::SenderShares {
                rows: sender_rows, ..
            } = s
            else {
                panic!("{ctx}: sender output {s:?}");
            };
            assert_eq!(cardinality, card, "{ctx}");
            let theirs: HashMap<u64, Vec<u8>> = sender_rows
                .into_iter()
                .map(|row| (row.index, row.share))
                .collect();
            assert_eq!(theirs.len(), xs.len());
            let mut opened = HashSet::new();
            for row in rows {
                let other = &theirs[&row.index];
                let joined: Vec<u8> = row.share.iter().zip(other).map(|(a, b)| a ^ b).collect();
                opened.insert(transfer::decode_item(&joined).unwrap().to_vec());
            }
            assert_eq!(opened, inter, "{ctx}");
        }
        Operation::PrivateId => {
            let (PsoOutput::PrivateId { table: rt, .. }, PsoOutput::PrivateId { table: st, .. }) =
                (&r, &s)
            else {
                panic!("{ctx}: outputs {r:?} {s:?}");
            };
            assert_eq!(rt.union, st.union, "{ctx}: both get the same union");
            let union: HashSet<Vec<u8>> = yset.union(&xset).cloned().collect();
            assert_eq!(rt.union.len(), union.len(), "{ctx}");
            // Same item, same identifier; different items, different identifiers.
            let mine: HashMap<Vec<u8>, [u8; 16]> = ys
                .iter()
                .map(|&y| id(y))
                .zip(rt.own.iter().copied())
                .collect();
            let theirs: HashMap<Vec<u8>, [u8; 16]> = xs
                .iter()
                .map(|p| id(p.0))
                .zip(st.own.iter().copied())
                .collect();
            for (item, pid) in &theirs {
                if let Some(other) = mine.get(item) {
                    assert_eq!(pid, other, "{ctx}: shared item with two identifiers");
                } else {
                    assert!(!mine.values().any(|v| v == pid), "{ctx}");
                }
            }
            for pid in rt.own.iter().chain(&st.own) {
                assert!(rt.union.binary_search(pid).is_ok());
            }
        }
    }
}

fn config(
    op: Operation,
    cwprf: CwPrfId,
    construction: Construction,
    last: LastMessage,
) -> PsoConfig {
    PsoConfig {
        cwprf,
        construction,
        last_message: last,
        ..PsoConfig::new(op)
    }
}

const RISTRETTO: CwPrfId = CwPrfId::Group(GroupId::Ristretto255);
const BLOOM: LastMessage = LastMessage::Set(SetEncoding::Filter(FilterKind::Bloom));

/// Edge cases every operation must get right.
/// A receiver set and a sender set with values.
type Sets = (Vec<u64>, Vec<(u64, u64)>);

fn edge_cases(rng: &mut SessionRng) -> Vec<Sets> {
    let (ys, xs) = random_sets(rng, 300, 250, 120);
    let identical: Vec<(u64, u64)> = ys.iter().map(|&y| (y, 5)).collect();
    vec![
        (ys.clone(), xs),
        (vec![], vec![]),
        (vec![], vec![(1, 3)]),
        (vec![1], vec![]),
        (vec![1], vec![(1, 7)]),
        (vec![1], vec![(2, 7)]),
        ((0..40).collect(), (100..130).map(|i| (i, i)).collect()),
        (ys, identical),
    ]
}

#[test]
fn every_operation_matches_plaintext_on_random_and_edge_inputs() {
    let mut rng = SessionRng::from_os();
    for op in Operation::ALL {
        for (ys, xs) in edge_cases(&mut rng) {
            check(&config(op, RISTRETTO, Construction::Cwprf, BLOOM), &ys, &xs);
        }
    }
}

/// Private-ID on X25519 draws blinds until one has an unblinding key (about half do);
/// the edges, each run with fresh keys.
#[test]
fn private_id_on_x25519_matches_plaintext_on_the_edges() {
    let mut rng = SessionRng::from_os();
    let gcs = LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs));
    for (ys, xs) in edge_cases(&mut rng) {
        let c = config(
            Operation::PrivateId,
            CwPrfId::X25519,
            Construction::Cwprf,
            gcs,
        );
        check(&c, &ys, &xs);
    }
}

#[test]
fn every_group_construction_and_last_message() {
    let mut rng = SessionRng::from_os();
    let (ys, xs) = random_sets(&mut rng, 200, 150, 70);
    let lasts = [
        LastMessage::LIST,
        BLOOM,
        LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs)),
    ];
    for cwprf in CwPrfId::ALL {
        for last in lasts {
            for op in [Operation::Psi, Operation::PsiCardSum, Operation::Psu] {
                check(&config(op, cwprf, Construction::Cwprf, last), &ys, &xs);
            }
        }
        if cwprf.is_permutation() {
            for op in Operation::ALL {
                if op != Operation::PrivateId {
                    check(
                        &config(op, cwprf, Construction::Poprf, LastMessage::LIST),
                        &ys,
                        &xs,
                    );
                }
            }
        }
        check(
            &config(
                Operation::PrivateId,
                cwprf,
                Construction::Cwprf,
                LastMessage::LIST,
            ),
            &ys,
            &xs,
        );
    }
}

#[test]
fn very_unbalanced_one_against_100k() {
    let mut rng = SessionRng::from_os();
    let (ys, xs) = random_sets(&mut rng, 100_000, 1, 1);
    for op in [Operation::Psi, Operation::PsiCardSum, Operation::Psu] {
        check(&config(op, RISTRETTO, Construction::Cwprf, BLOOM), &ys, &xs);
    }
    let (ys, xs) = random_sets(&mut rng, 1, 100_000, 1);
    for op in [Operation::Psi, Operation::PsiCard, Operation::PsiShare] {
        check(
            &config(op, CwPrfId::X25519, Construction::Cwprf, BLOOM),
            &ys,
            &xs,
        );
    }
    check(
        &config(
            Operation::Psi,
            RISTRETTO,
            Construction::Poprf,
            LastMessage::LIST,
        ),
        &ys,
        &xs,
    );
}

#[test]
fn card_sum_at_the_value_bound() {
    let xs: Vec<(u64, u64)> = (0..50).map(|i| (i, u32::MAX as u64)).collect();
    let ys: Vec<u64> = (0..50).collect();
    check(
        &config(Operation::PsiCardSum, RISTRETTO, Construction::Cwprf, BLOOM),
        &ys,
        &xs,
    );
    let mut c = config(Operation::PsiCardSum, RISTRETTO, Construction::Cwprf, BLOOM);
    c.max_value = u64::MAX;
    let xs: Vec<(u64, u64)> = (0..50).map(|i| (i, u64::MAX - i)).collect();
    check(&c, &ys, &xs);
}

#[test]
fn unusable_settings_are_refused_before_anything_is_sent() {
    let d = receiver_set(&[1, 2]);
    let refuse = |c: &PsoConfig, role: PsoRole, d: Dataset| {
        pso::new_party(role, c, d, [0; 32])
            .err()
            .expect("must be refused")
    };
    let bad = config(Operation::Psi, RISTRETTO, Construction::Poprf, BLOOM);
    assert!(matches!(
        refuse(&bad, PsoRole::Receiver, d.clone()),
        ProtocolError::Config(_)
    ));
    let bad = config(
        Operation::Psi,
        CwPrfId::X25519,
        Construction::Poprf,
        LastMessage::LIST,
    );
    assert!(matches!(
        refuse(&bad, PsoRole::Receiver, d.clone()),
        ProtocolError::Config(_)
    ));
    let bad = config(
        Operation::PrivateId,
        RISTRETTO,
        Construction::Poprf,
        LastMessage::LIST,
    );
    assert!(matches!(
        refuse(&bad, PsoRole::Sender, d.clone()),
        ProtocolError::Config(_)
    ));
    // card-sum sender without values; psi with values.
    let cs = config(Operation::PsiCardSum, RISTRETTO, Construction::Cwprf, BLOOM);
    assert!(matches!(
        refuse(&cs, PsoRole::Sender, d.clone()),
        ProtocolError::Input(_)
    ));
    let psi = config(Operation::Psi, RISTRETTO, Construction::Cwprf, BLOOM);
    assert!(matches!(
        refuse(&psi, PsoRole::Sender, sender_set(&[(1, 1)], true)),
        ProtocolError::Input(_)
    ));
}

/// The defaults every front end gets from one place: psi runs vole unless a
/// Diffie-Hellman setting is asked for; the other operations run the cwPRF mqRPMT; a
/// Diffie-Hellman setting beside an explicit vole is refused, not ignored.
#[test]
fn settings_not_asked_for_take_the_cheaper_construction() {
    let none = PsoChoices::default();
    let psi = none.resolve(Operation::Psi).unwrap();
    assert_eq!(psi.construction, Construction::Vole);
    for op in Operation::ALL.into_iter().filter(|&o| o != Operation::Psi) {
        let c = none.resolve(op).unwrap();
        assert_eq!(c.construction, Construction::Cwprf, "{}", op.name());
        assert_eq!((c.cwprf, c.last_message), (RISTRETTO, BLOOM));
    }
    let group = PsoChoices {
        cwprf: Some(CwPrfId::X25519),
        ..none
    };
    let c = group.resolve(Operation::Psi).unwrap();
    assert_eq!(
        (c.construction, c.cwprf),
        (Construction::Cwprf, CwPrfId::X25519)
    );
    let ordered = PsoChoices {
        last_message: Some(LastMessage::Ordered),
        ..none
    };
    let c = ordered.resolve(Operation::Psi).unwrap();
    assert_eq!(
        (c.construction, c.last_message),
        (Construction::Cwprf, LastMessage::Ordered)
    );
    for asked in [group, ordered] {
        let contradiction = PsoChoices {
            construction: Some(Construction::Vole),
            ..asked
        };
        let e = contradiction.resolve(Operation::Psi).unwrap_err();
        assert!(
            matches!(&e, ProtocolError::Config(m) if m.contains("--mqrpmt vole")),
            "{e}"
        );
    }
    let bounds = PsoChoices {
        max_value: Some(7),
        max_peer_items: Some(9),
        ..none
    };
    let c = bounds.resolve(Operation::PsiCardSum).unwrap();
    assert_eq!((c.max_value, c.max_peer_items), (7, 9));
}

/// Runs psi with a hook and returns the error of the side that failed first.
fn run_tampered(
    op: Operation,
    rc: &PsoConfig,
    sc: &PsoConfig,
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> ProtocolError {
    let mut rng = SessionRng::from_os();
    let (ys, xs) = random_sets(&mut rng, 30, 30, 10);
    let values = op == Operation::PsiCardSum;
    let mut r = pso::new_party(PsoRole::Receiver, rc, receiver_set(&ys), seed(&mut rng)).unwrap();
    let mut s =
        pso::new_party(PsoRole::Sender, sc, sender_set(&xs, values), seed(&mut rng)).unwrap();
    match run_pair_with(r.as_mut(), s.as_mut(), hook) {
        Err(PairError::Failed { error, .. }) => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

const HEADER: usize = privset_protocols::wire::HEADER_LEN;

#[test]
fn malformed_messages_are_rejected_with_typed_errors() {
    let c = config(Operation::Psi, RISTRETTO, Construction::Cwprf, BLOOM);
    let deliver = HookAction::Deliver;
    // Receiver -> sender is A->B. Message 1 is R1: [OT A][elements].
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m.truncate(m.len() - 5);
        }
        deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::WrongLength { .. })
        ),
        "{e}"
    );
    // An identity element (all zero) in R1.
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            let at = HEADER + 32;
            m[at..at + 32].fill(0);
        }
        deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidElement { .. })
        ),
        "{e}"
    );
    // A corrupted OT base reply (S2 starts with it).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::BtoA && i == 2 {
            m[HEADER..HEADER + 32].fill(0xff);
        }
        deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidOt(_))
        ),
        "{e}"
    );
    // A truncated OT extension (R2).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            m.truncate(m.len() - 1);
        }
        deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e}");
    // An identity element among the sender's evaluated items (S1).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::BtoA && i == 1 {
            m[HEADER..HEADER + 32].fill(0);
        }
        deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidElement { .. })
        ),
        "{e}"
    );
    // Payload slots of the wrong total length (S3).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::BtoA && i == 3 {
            m.push(0);
        }
        deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e}");
    // A message replayed (sequence numbers).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, _| {
        if d == Direction::AtoB && i == 1 {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e}");
    // card-sum: an impossible masked sum in R3.
    let cs = config(Operation::PsiCardSum, RISTRETTO, Construction::Cwprf, BLOOM);
    let e = run_tampered(Operation::PsiCardSum, &cs, &cs, &mut |d, i, m| {
        if d == Direction::AtoB && i == 3 {
            let at = HEADER;
            m[at..at + 8].copy_from_slice(&1000u64.to_be_bytes());
        }
        deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Inconsistent(_))
        ),
        "{e}"
    );
    // Mismatched settings end at the hello.
    let other = config(Operation::Psi, CwPrfId::X25519, Construction::Cwprf, BLOOM);
    let e = run_tampered(Operation::Psi, &c, &other, &mut |_, _, _| deliver);
    assert!(matches!(e, ProtocolError::Incompatible(_)), "{e}");
    let list = config(
        Operation::Psi,
        RISTRETTO,
        Construction::Cwprf,
        LastMessage::LIST,
    );
    let e = run_tampered(Operation::Psi, &c, &list, &mut |_, _, _| deliver);
    assert!(matches!(e, ProtocolError::Incompatible(_)), "{e}");
    // An announced set size above the limit.
    let mut small = c.clone();
    small.max_peer_items = 5;
    let e = run_tampered(Operation::Psi, &small, &c, &mut |_, _, _| deliver);
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::TooLarge { .. })
        ),
        "{e}"
    );
}

#[test]
fn private_id_rejects_a_bad_union() {
    let c = config(Operation::PrivateId, RISTRETTO, Construction::Cwprf, BLOOM);
    // The union (R4) is the receiver's fifth message (hello, R1, R2, R3, R4).
    let set_len = |m: &mut Vec<u8>| {
        let len = (m.len() - HEADER) as u32;
        m[HEADER - 4..HEADER].copy_from_slice(&len.to_be_bytes());
    };
    // Only the first identifier: the sender's 30 identifiers cannot all be there.
    let e = run_tampered(Operation::PrivateId, &c, &c, &mut |d, i, m| {
        if d == Direction::AtoB && i == 4 {
            m.truncate(HEADER + 16);
            set_len(m);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Inconsistent(_))
        ),
        "{e}"
    );
    // Two identifiers swapped: not sorted.
    let e = run_tampered(Operation::PrivateId, &c, &c, &mut |d, i, m| {
        if d == Direction::AtoB && i == 4 {
            let (a, b) = m[HEADER..HEADER + 32].split_at_mut(16);
            a.swap_with_slice(b);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Malformed(_))
        ),
        "{e}"
    );
}

/// Every private-ID message one byte short (the frame length fixed up, so that the
/// party's own checks see it), and each list of elements with its first one zeroed: a
/// typed peer error, never a panic or a wrong answer.
#[test]
fn private_id_rejects_every_malformed_message() {
    use Direction::{AtoB, BtoA};
    let gcs = LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs));
    for cwprf in [RISTRETTO, CwPrfId::X25519] {
        let c = config(Operation::PrivateId, cwprf, Construction::Cwprf, gcs);
        // Receiver (A to B): hello, R1, R2, R3, R4; sender (B to A): hello, S1 .. S4.
        for (direction, index) in [1, 2, 3, 4]
            .into_iter()
            .flat_map(|i| [(AtoB, i), (BtoA, i)])
        {
            let e = run_tampered(Operation::PrivateId, &c, &c, &mut |d, i, m| {
                if d == direction && i == index {
                    m.pop();
                    let len = (m.len() - HEADER) as u32;
                    m[HEADER - 4..HEADER].copy_from_slice(&len.to_be_bytes());
                }
                HookAction::Deliver
            });
            assert!(
                matches!(e, ProtocolError::PeerMisbehaved(_)),
                "{cwprf:?} {direction:?} {index}: {e}"
            );
        }
        // R1, S1, S2 are elements only; R2 starts with the 32-byte OT point.
        for (direction, index, at) in [(AtoB, 1, 0), (BtoA, 1, 0), (BtoA, 2, 0), (AtoB, 2, 32)] {
            let e = run_tampered(Operation::PrivateId, &c, &c, &mut |d, i, m| {
                if d == direction && i == index {
                    m[HEADER + at..HEADER + at + 32].fill(0);
                }
                HookAction::Deliver
            });
            assert!(
                matches!(
                    e,
                    ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidElement { .. })
                ),
                "{cwprf:?} {direction:?} {index}: {e}"
            );
        }
    }
}

#[test]
fn transcripts_differ_between_runs() {
    // Fresh keys and salts each run: the same inputs give unrelated messages.
    let c = config(Operation::Psi, RISTRETTO, Construction::Cwprf, BLOOM);
    let grab = || {
        let mut seen = Vec::new();
        run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
            if d == Direction::AtoB && i == 1 {
                seen.push(m.clone());
                m.truncate(10);
            }
            HookAction::Deliver
        });
        seen
    };
    assert_ne!(grab(), grab());
}

#[test]
fn psi_tags_grow_with_the_sets() {
    // 40 + bits(n1) + bits(n2) bits, between 8 and 32 bytes.
    assert_eq!(transfer::tag_len(0, 0), 8);
    assert_eq!(transfer::tag_len(1 << 12, 1 << 12), 9);
    assert_eq!(transfer::tag_len(1 << 20, 1 << 20), 11);
    assert_eq!(transfer::tag_len(u64::MAX, u64::MAX), 21);
}

#[test]
fn ordered_psi_matches_plaintext_and_is_refused_elsewhere() {
    let mut rng = SessionRng::from_os();
    for cwprf in CwPrfId::ALL {
        for (ys, xs) in edge_cases(&mut rng) {
            check(
                &config(
                    Operation::Psi,
                    cwprf,
                    Construction::Cwprf,
                    LastMessage::Ordered,
                ),
                &ys,
                &xs,
            );
        }
    }
    let (ys, xs) = random_sets(&mut rng, 100_000, 1, 1);
    let ordered = config(
        Operation::Psi,
        CwPrfId::X25519,
        Construction::Cwprf,
        LastMessage::Ordered,
    );
    check(&ordered, &ys, &xs);
    let (ys, xs) = random_sets(&mut rng, 1, 100_000, 1);
    check(&ordered, &ys, &xs);
    // Any other operation (it would show the receiver which items match) and the
    // permuted OPRF are refused before anything is sent.
    let d = receiver_set(&[1, 2]);
    for op in Operation::ALL
        .into_iter()
        .filter(|&op| op != Operation::Psi)
    {
        let c = config(op, RISTRETTO, Construction::Cwprf, LastMessage::Ordered);
        assert!(matches!(
            pso::new_party(PsoRole::Receiver, &c, d.clone(), [0; 32]).err(),
            Some(ProtocolError::Config(_))
        ));
    }
    let c = config(
        Operation::Psi,
        RISTRETTO,
        Construction::Poprf,
        LastMessage::Ordered,
    );
    assert!(matches!(
        pso::new_party(PsoRole::Receiver, &c, d, [0; 32]).err(),
        Some(ProtocolError::Config(_))
    ));
}

#[test]
fn ordered_psi_rejects_short_tags_and_mismatched_settings() {
    let c = config(
        Operation::Psi,
        RISTRETTO,
        Construction::Cwprf,
        LastMessage::Ordered,
    );
    // Sender -> receiver is B->A: hello (0), S1 (1), S2 = the tags (2).
    let e = run_tampered(Operation::Psi, &c, &c, &mut |d, i, m| {
        if d == Direction::BtoA && i == 2 {
            m.truncate(m.len() - 1);
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e}");
    // No OT: the ordered sender and a filter receiver disagree at the hello.
    let other = config(Operation::Psi, RISTRETTO, Construction::Cwprf, BLOOM);
    let e = run_tampered(Operation::Psi, &other, &c, &mut |_, _, _| {
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::Incompatible(_)), "{e}");
}

fn vole() -> PsoConfig {
    config(Operation::Psi, RISTRETTO, Construction::Vole, BLOOM)
}

#[test]
fn vole_psi_matches_plaintext_on_random_and_edge_inputs() {
    let mut rng = SessionRng::from_os();
    for (ys, xs) in edge_cases(&mut rng) {
        check(&vole(), &ys, &xs);
    }
    for (n1, n2, overlap) in [(1 << 16, 1 << 16, 1 << 15), (5000, 70_000, 4999)] {
        let (ys, xs) = random_sets(&mut rng, n1, n2, overlap);
        check(&vole(), &ys, &xs);
    }
}

#[test]
fn vole_psi_one_against_a_million() {
    let mut rng = SessionRng::from_os();
    let (ys, xs) = random_sets(&mut rng, 1, 1 << 20, 1);
    check(&vole(), &ys, &xs);
    let (ys, xs) = random_sets(&mut rng, 1 << 20, 1, 1);
    check(&vole(), &ys, &xs);
}

#[test]
fn vole_runs_psi_only_and_must_be_agreed() {
    for op in Operation::ALL
        .into_iter()
        .filter(|&op| op != Operation::Psi)
    {
        let c = config(op, RISTRETTO, Construction::Vole, BLOOM);
        let e = pso::new_party(PsoRole::Receiver, &c, receiver_set(&[1]), [0; 32]).err();
        assert!(matches!(e, Some(ProtocolError::Config(_))), "{}", op.name());
    }
    let dh = config(Operation::Psi, RISTRETTO, Construction::Cwprf, BLOOM);
    let e = run_tampered(Operation::Psi, &vole(), &dh, &mut |_, _, _| {
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::Incompatible(_)), "{e}");
}

#[test]
fn vole_psi_refuses_malformed_messages() {
    // Receiver -> sender (A->B): hello (0), R1 (1), R2 (2), R3 (3); the sender's
    // messages (B->A): hello (0), S1 (1), S2 (2), S3 (3). Truncating any of them, or
    // lengthening it, is refused by length before anything is read.
    for (direction, index) in [
        (Direction::AtoB, 1),
        (Direction::AtoB, 2),
        (Direction::AtoB, 3),
        (Direction::BtoA, 1),
        (Direction::BtoA, 2),
        (Direction::BtoA, 3),
    ] {
        for grow in [false, true] {
            let e = run_tampered(Operation::Psi, &vole(), &vole(), &mut |d, i, m| {
                if d == direction && i == index {
                    if grow {
                        m.extend_from_slice(&[0; 16]);
                    } else {
                        m.truncate(m.len() - 1);
                    }
                }
                HookAction::Deliver
            });
            assert!(
                matches!(e, ProtocolError::PeerMisbehaved(_)),
                "{direction:?} {index} grow {grow}: {e}"
            );
        }
    }
    // A base-OT first message that is no ristretto255 point.
    let e = run_tampered(Operation::Psi, &vole(), &vole(), &mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m[HEADER..HEADER + 32].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidVole(_))
        ),
        "{e}"
    );
    // A replayed message is refused by the framing.
    let mut kept = None;
    let e = run_tampered(Operation::Psi, &vole(), &vole(), &mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            kept = Some(m.clone());
        }
        if d == Direction::AtoB && i == 2 {
            *m = kept.clone().expect("R1 came first");
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e}");
}

#[test]
fn vole_psi_stops_when_the_key_settings_differ() {
    use privset_protocols::agreed::AgreedSettings;
    let mut rng = SessionRng::from_os();
    let (ys, xs) = random_sets(&mut rng, 30, 30, 10);
    let mut r = pso::new_party(
        PsoRole::Receiver,
        &vole(),
        receiver_set(&ys),
        seed(&mut rng),
    )
    .unwrap();
    let mut s = pso::new_party(
        PsoRole::Sender,
        &vole(),
        sender_set(&xs, false),
        seed(&mut rng),
    )
    .unwrap();
    r.agree(AgreedSettings::new().with("normalize", "email"))
        .unwrap();
    s.agree(AgreedSettings::new().with("normalize", "trim"))
        .unwrap();
    match run_pair(r.as_mut(), s.as_mut()) {
        Err(PairError::Failed { error, .. }) => {
            assert!(matches!(error, ProtocolError::Incompatible(_)), "{error}")
        }
        other => panic!("different key settings finished: {other:?}"),
    }
}
