//! In-memory pair and lock-step harness, including tampering hooks.

mod common;

use std::thread;

use common::{FRAME_LEN, PingPong};
use privset_net::memory::{Direction, HookAction, PairError, Side};
use privset_net::{RunError, Transport, drive, pair, run_pair, run_pair_with};
use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::wire::{self, ProtocolId};

#[test]
fn lock_step_run_completes_with_counters() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let (ca, cb) = run_pair(&mut a, &mut b).unwrap();
    assert_eq!(ca.sent, 3 * FRAME_LEN as u64);
    assert_eq!((ca.sent, ca.received), (cb.received, cb.sent));
    assert_eq!(a.received.len(), 3);
    assert_eq!(b.received.len(), 3);
}

fn failed(err: PairError) -> (Side, ProtocolError, Option<ProtocolError>) {
    match err {
        PairError::Failed {
            side,
            error,
            peer_error,
        } => (side, error, peer_error),
        other => panic!("expected a failure, got {other}"),
    }
}

#[test]
fn tampered_message_is_rejected_and_alert_delivered() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let err = run_pair_with(&mut a, &mut b, &mut |dir, i, m| {
        if dir == Direction::AtoB && i == 1 {
            m[0] ^= 1; // break the magic
        }
        HookAction::Deliver
    })
    .unwrap_err();
    let (side, error, peer_error) = failed(err);
    assert_eq!(side, Side::B);
    assert_eq!(error, PeerMisbehaved::BadMagic.into());
    assert!(
        matches!(peer_error, Some(ProtocolError::PeerAborted(ref r)) if r.contains("bad magic")),
        "{peer_error:?}"
    );
}

#[test]
fn truncated_message_is_rejected() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let err = run_pair_with(&mut a, &mut b, &mut |dir, i, m| {
        if dir == Direction::BtoA && i == 0 {
            m.truncate(m.len() - 3);
        }
        HookAction::Deliver
    })
    .unwrap_err();
    let (side, error, _) = failed(err);
    assert_eq!(side, Side::A);
    assert!(
        matches!(
            error,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::WrongLength { .. })
        ),
        "{error}"
    );
}

#[test]
fn oversized_message_is_refused_by_the_harness() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let err = run_pair_with(&mut a, &mut b, &mut |dir, _, m| {
        if dir == Direction::AtoB {
            m.resize(10_000, 0);
        }
        HookAction::Deliver
    })
    .unwrap_err();
    let (side, error, _) = failed(err);
    assert_eq!(side, Side::B);
    assert!(error.to_string().contains("exceeds"), "{error}");
}

#[test]
fn dropped_message_is_a_named_deadlock() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let err = run_pair_with(&mut a, &mut b, &mut |dir, i, _| {
        if dir == Direction::AtoB && i == 1 {
            HookAction::Drop
        } else {
            HookAction::Deliver
        }
    })
    .unwrap_err();
    assert!(matches!(err, PairError::Deadlock { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("deadlock") && text.contains("initiator received 1 of 3"),
        "{text}"
    );
}

#[test]
fn duplicated_message_is_rejected_as_replay() {
    let (mut a, mut b) = (PingPong::new(true, 1), PingPong::new(false, 2));
    let err = run_pair_with(&mut a, &mut b, &mut |dir, i, _| {
        if dir == Direction::AtoB && i == 0 {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    })
    .unwrap_err();
    let (side, error, _) = failed(err);
    assert_eq!(side, Side::B);
    assert_eq!(
        error,
        PeerMisbehaved::OutOfOrder {
            got: 0,
            expected: 1
        }
        .into()
    );
}

#[test]
fn reordered_messages_are_rejected() {
    let (mut a, mut b) = (
        PingPong::with_burst(true, 1, 2, 2),
        PingPong::with_burst(false, 2, 2, 2),
    );
    // Sanity: the burst variant runs clean.
    run_pair(
        &mut PingPong::with_burst(true, 1, 2, 2),
        &mut PingPong::with_burst(false, 2, 2, 2),
    )
    .unwrap();
    let err = run_pair_with(&mut a, &mut b, &mut |dir, i, _| {
        if dir == Direction::AtoB && i == 0 {
            HookAction::DeliverAfterNext
        } else {
            HookAction::Deliver
        }
    })
    .unwrap_err();
    let (side, error, _) = failed(err);
    assert_eq!(side, Side::B);
    assert_eq!(
        error,
        PeerMisbehaved::OutOfOrder {
            got: 1,
            expected: 0
        }
        .into()
    );
}

#[test]
fn threaded_pair_with_drive() {
    let (mut ta, mut tb) = pair();
    let h = thread::spawn(move || {
        let mut b = PingPong::new(false, 2);
        drive(&mut b, &mut tb, &mut |_| {}).map(|()| (b.received, tb.counters()))
    });
    let mut a = PingPong::new(true, 1);
    let mut statuses = Vec::new();
    drive(&mut a, &mut ta, &mut |s| statuses.push(s.to_string())).unwrap();
    let (b_received, cb) = h.join().unwrap().unwrap();
    assert_eq!(b_received.len(), 3);
    assert_eq!(ta.counters().sent, cb.received);
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("initiator received 0 of 3")
    );
    assert_eq!(
        statuses.last().map(String::as_str),
        Some("initiator received 3 of 3")
    );
}

#[test]
fn drive_sends_alert_on_protocol_error() {
    let (mut ta, mut tb) = pair();
    let h = thread::spawn(move || drive(&mut PingPong::new(true, 1), &mut ta, &mut |_| {}));
    let first = tb.recv(1000).unwrap();
    assert!(wire::decode_frame(ProtocolId::PiSum, &first).is_ok());
    tb.send(b"garbage").unwrap();
    let err = h.join().unwrap().unwrap_err();
    assert!(
        matches!(err, RunError::Protocol(ProtocolError::PeerMisbehaved(_))),
        "{err}"
    );
    let alert = tb.recv(10_000).unwrap();
    let reason = wire::decode_frame(ProtocolId::PiSum, &alert).unwrap_err();
    assert!(
        matches!(reason, ProtocolError::PeerAborted(ref r) if r.contains("shorter than")),
        "{reason}"
    );
}

#[test]
fn drive_refuses_oversized_message_and_alerts() {
    let (mut ta, mut tb) = pair();
    let h = thread::spawn(move || drive(&mut PingPong::new(true, 1), &mut ta, &mut |_| {}));
    tb.recv(1000).unwrap();
    tb.send(&[0u8; FRAME_LEN + 1]).unwrap();
    let err = h.join().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Transport(privset_net::TransportError::TooLarge { .. })
        ),
        "{err}"
    );
    let alert = tb.recv(10_000).unwrap();
    assert!(matches!(
        wire::decode_frame(ProtocolId::PiSum, &alert),
        Err(ProtocolError::PeerAborted(_))
    ));
}
