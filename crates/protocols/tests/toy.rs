//! The toy sum over the in-memory n-party harness: star and mesh, and the errors a
//! broken link or a misconfigured participant must produce.
#![allow(clippy::result_large_err)] // HarnessError carries every party's error; tests only.

use privset_net::memory::{HarnessError, HookAction, LinkHook, run_parties, run_parties_with};
use privset_protocols::engine::Engine;
use privset_protocols::party::{Party, PartyId};
use privset_protocols::toy::{self, Form, KIND_VALUE, ToySum, ToySumConfig};
use privset_protocols::wire::HEADER_LEN;
use privset_protocols::{PeerMisbehaved, ProtocolError};

fn value(i: usize) -> u64 {
    // Large values, so the total needs more than 64 bits.
    u64::MAX - 1000 + i as u64 * 97
}

fn parties_with(n: usize, form: Form, count: impl Fn(usize) -> usize) -> Vec<Engine<ToySum>> {
    (0..n)
        .map(|i| {
            let config = ToySumConfig {
                parties: count(i),
                me: i as PartyId,
                form,
                value: value(i),
            };
            toy::new_party(config, [i as u8 + 1; 32]).unwrap()
        })
        .collect()
}

fn parties(n: usize, form: Form) -> Vec<Engine<ToySum>> {
    parties_with(n, form, |_| n)
}

fn run(parties: &mut [Engine<ToySum>], hook: &mut LinkHook<'_>) -> Result<(), HarnessError> {
    let mut refs: Vec<&mut dyn Party> = parties.iter_mut().map(|p| p as &mut dyn Party).collect();
    run_parties_with(&mut refs, hook).map(|_| ())
}

fn check_totals(n: usize, form: Form) {
    let mut ps = parties(n, form);
    let mut refs: Vec<&mut dyn Party> = ps.iter_mut().map(|p| p as &mut dyn Party).collect();
    let counters = run_parties(&mut refs).unwrap();
    let expected: u128 = (0..n).map(|i| u128::from(value(i))).sum();
    assert!(expected > u128::from(u64::MAX));
    for (i, p) in ps.into_iter().enumerate() {
        assert_eq!(p.into_output(), Some(expected), "participant {i}, {form:?}");
    }
    // Star: the hub moves the most bytes; a spoke talks to the hub only.
    if form == Form::Star {
        assert!(counters[0].sent > counters[1].sent);
    } else {
        assert_eq!(counters[0].sent, counters[1].sent);
    }
}

#[test]
fn star_and_mesh_of_3_and_10() {
    for n in [2, 3, 10] {
        check_totals(n, Form::Star);
        check_totals(n, Form::Mesh);
    }
}

#[test]
fn tampered_session_id_is_a_typed_error() {
    for form in [Form::Star, Form::Mesh] {
        let mut ps = parties(3, form);
        // The first value message on the link 2 -> 0 (after the hello): flip a session
        // id byte.
        let err = run(&mut ps, &mut |from, to, index, m| {
            if (from, to, index) == (2, 0, 1) {
                m[9] ^= 1;
            }
            HookAction::Deliver
        })
        .unwrap_err();
        match err {
            HarnessError::Failed {
                party,
                error,
                peer_errors,
            } => {
                assert_eq!(party, 0, "{form:?}");
                let ProtocolError::PeerMisbehaved(fault) = &error else {
                    panic!("{error}");
                };
                assert_eq!(fault.root(), &PeerMisbehaved::WrongSession);
                assert!(
                    error.to_string().contains("party 2 (participant 2)"),
                    "{error}"
                );
                // Participant 0's alerts reach those waiting for it.
                assert!(
                    peer_errors
                        .iter()
                        .all(|(_, e)| matches!(e, ProtocolError::PeerAborted(_))),
                    "{peer_errors:?}"
                );
            }
            other => panic!("{form:?}: {other}"),
        }
    }
}

#[test]
fn truncated_value_is_a_typed_error() {
    let mut ps = parties(3, Form::Mesh);
    let err = run(&mut ps, &mut |from, to, index, m| {
        if (from, to, index) == (1, 2, 1) {
            assert_eq!(m[6], KIND_VALUE);
            m.truncate(HEADER_LEN + 4);
            m[29..33].copy_from_slice(&4u32.to_be_bytes());
        }
        HookAction::Deliver
    })
    .unwrap_err();
    let HarnessError::Failed { party, error, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(party, 2);
    assert!(
        matches!(
            &error,
            ProtocolError::PeerMisbehaved(f) if matches!(f.root(), PeerMisbehaved::WrongLength { what: "value", .. })
        ),
        "{error}"
    );
}

#[test]
fn duplicated_message_is_out_of_order() {
    let mut ps = parties(3, Form::Star);
    let err = run(&mut ps, &mut |from, to, index, _| {
        if (from, to, index) == (0, 1, 0) {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    })
    .unwrap_err();
    let HarnessError::Failed { party, error, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(party, 1);
    assert!(
        matches!(
            &error,
            ProtocolError::PeerMisbehaved(f) if matches!(f.root(), PeerMisbehaved::OutOfOrder {
                got: 0,
                expected: 1
            })
        ),
        "{error}"
    );
}

#[test]
fn dropped_message_is_reported_as_deadlock() {
    for form in [Form::Star, Form::Mesh] {
        let mut ps = parties(4, form);
        let err = run(&mut ps, &mut |from, to, index, _| {
            if (from, to, index) == (3, 0, 1) {
                HookAction::Drop
            } else {
                HookAction::Deliver
            }
        })
        .unwrap_err();
        let HarnessError::Deadlock { statuses } = err else {
            panic!("{form:?}: {err}");
        };
        assert!(
            statuses[0].contains("waiting for party 3's value"),
            "{statuses:?}"
        );
    }
}

#[test]
fn another_count_is_incompatible() {
    for form in [Form::Star, Form::Mesh] {
        // Participant 2 of 4 believes there are 5.
        let mut ps = parties_with(4, form, |i| if i == 2 { 5 } else { 4 });
        let err = run(&mut ps, &mut |_, _, _, _| HookAction::Deliver).unwrap_err();
        let HarnessError::Failed { error, .. } = err else {
            panic!("{form:?}: {err}");
        };
        match error {
            ProtocolError::Incompatible(why) => {
                assert!(why.contains("participant count"), "{why}");
                assert!(why.contains("announces"), "{why}");
            }
            other => panic!("{form:?}: {other}"),
        }
    }
}

#[test]
fn another_form_is_incompatible() {
    let mut ps = parties(3, Form::Star);
    ps[2] = toy::new_party(
        ToySumConfig {
            parties: 3,
            me: 2,
            form: Form::Mesh,
            value: 1,
        },
        [9; 32],
    )
    .unwrap();
    let err = run(&mut ps, &mut |_, _, _, _| HookAction::Deliver).unwrap_err();
    let HarnessError::Failed { error, .. } = err else {
        panic!("{err}");
    };
    assert!(
        matches!(&error, ProtocolError::Incompatible(why) if why.contains("form")),
        "{error}"
    );
}

#[test]
fn bad_configuration_is_refused_before_sending() {
    let bad = |parties, me| {
        toy::new_party(
            ToySumConfig {
                parties,
                me,
                form: Form::Star,
                value: 0,
            },
            [0; 32],
        )
        .err()
        .unwrap()
    };
    assert!(matches!(bad(3, 3), ProtocolError::Config(_)));
    assert!(matches!(bad(1, 0), ProtocolError::Config(_)));
    assert!(matches!(bad(256, 0), ProtocolError::Config(_)));
}

#[test]
fn replay_from_the_same_seed_is_identical() {
    let frames = |ps: &mut Vec<Engine<ToySum>>| {
        let mut log = Vec::new();
        run(ps, &mut |from, to, _, m| {
            log.push((from, to, m.clone()));
            HookAction::Deliver
        })
        .unwrap();
        log
    };
    assert_eq!(
        frames(&mut parties(5, Form::Mesh)),
        frames(&mut parties(5, Form::Mesh))
    );
}
