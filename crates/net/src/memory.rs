//! In-memory transports for tests.
//!
//! * [`pair`]: two connected [`MemoryTransport`]s over std channels, to run two parties
//!   on two threads with the real [`crate::drive`] loop.
//! * [`run_pair`] / [`run_pair_with`]: a single-threaded, lock-step harness in the
//!   spirit of quinn's test `Pair`: it shuttles messages between two parties until both
//!   finish, detects deadlock, and lets a hook tamper with, truncate, drop, duplicate or
//!   reorder any message. Deterministic, so negative tests are exact.

use std::collections::VecDeque;
use std::fmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::party::Party;

use crate::error::secs;
use crate::{ByteCounters, Transport, TransportError};

/// One end of an in-memory channel pair. Counters count message bytes (there is no
/// framing in memory).
#[derive(Debug)]
pub struct MemoryTransport {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    timeout: Duration,
    counters: ByteCounters,
}

/// Default receive timeout of [`pair`]: long enough for slow crypto in tests, short
/// enough that a deadlocked test fails instead of hanging.
pub const DEFAULT_PAIR_TIMEOUT: Duration = Duration::from_secs(60);

/// Two connected transports; each `recv` gives up after [`DEFAULT_PAIR_TIMEOUT`].
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    pair_with_timeout(DEFAULT_PAIR_TIMEOUT)
}

/// Two connected transports with the given receive timeout.
pub fn pair_with_timeout(timeout: Duration) -> (MemoryTransport, MemoryTransport) {
    let (tx_a, rx_b) = mpsc::channel();
    let (tx_b, rx_a) = mpsc::channel();
    let a = MemoryTransport {
        tx: tx_a,
        rx: rx_a,
        timeout,
        counters: ByteCounters::default(),
    };
    let b = MemoryTransport {
        tx: tx_b,
        rx: rx_b,
        timeout,
        counters: ByteCounters::default(),
    };
    (a, b)
}

impl Transport for MemoryTransport {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        self.tx
            .send(message.to_vec())
            .map_err(|_| TransportError::PeerClosed)?;
        self.counters.sent += message.len() as u64;
        Ok(())
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let message = match self.rx.recv_timeout(self.timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                return Err(TransportError::Timeout {
                    what: "waiting for an in-memory message".into(),
                    seconds: secs(self.timeout),
                });
            }
            Err(RecvTimeoutError::Disconnected) => return Err(TransportError::PeerClosed),
        };
        // The sender already allocated it; still refuse, as a socket transport would.
        if message.len() > max_len {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max: max_len as u64,
            });
        }
        self.counters.received += message.len() as u64;
        Ok(message)
    }

    fn counters(&self) -> ByteCounters {
        self.counters
    }
}

/// Which party, in [`run_pair`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "party A",
            Side::B => "party B",
        })
    }
}

/// Direction of a message, for the hook of [`run_pair_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    AtoB,
    BtoA,
}

/// What [`run_pair_with`] does with a message after the hook saw (and maybe changed) it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAction {
    /// Deliver it (as modified by the hook).
    Deliver,
    /// Lose it.
    Drop,
    /// Deliver it twice in a row.
    Duplicate,
    /// Hold it back and deliver it right after the same sender's next message (swaps two
    /// consecutive messages). Delivered last if no further message comes.
    DeliverAfterNext,
}

/// Why [`run_pair`] stopped without both parties finishing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairError {
    /// `side` failed with `error`. Its alert was delivered to the other side, whose
    /// reaction (normally [`ProtocolError::PeerAborted`]) is `peer_error`.
    #[error("{side} failed: {error}")]
    Failed {
        side: Side,
        error: ProtocolError,
        peer_error: Option<ProtocolError>,
    },
    /// Neither party can move: both wait for a message that will never come (e.g. one
    /// was dropped).
    #[error("deadlock: no message in flight and no party can move (A: {a_status}; B: {b_status})")]
    Deadlock { a_status: String, b_status: String },
}

impl PairError {
    /// The side that failed, if one did.
    pub fn side(&self) -> Option<Side> {
        match self {
            PairError::Failed { side, .. } => Some(*side),
            PairError::Deadlock { .. } => None,
        }
    }
    /// The failing side's error, if one failed.
    pub fn error(&self) -> Option<&ProtocolError> {
        match self {
            PairError::Failed { error, .. } => Some(error),
            PairError::Deadlock { .. } => None,
        }
    }
}

/// Runs both parties to completion in lock step, delivering every message unchanged.
/// Returns each side's byte counters (message bytes sent/received).
// A test harness: the error is returned once per run, and tests match on its fields.
#[allow(clippy::result_large_err)]
pub fn run_pair(
    a: &mut dyn Party,
    b: &mut dyn Party,
) -> Result<(ByteCounters, ByteCounters), PairError> {
    run_pair_with(a, b, &mut |_, _, _| HookAction::Deliver)
}

/// One party and its bookkeeping in the harness.
struct Slot<'p> {
    party: &'p mut dyn Party,
    side: Side,
    /// Messages on their way *to* this party.
    inbox: VecDeque<Vec<u8>>,
    /// Index of this party's next outgoing message.
    sent_index: u32,
    /// A message held back by [`HookAction::DeliverAfterNext`], bound for the peer.
    held: Option<Vec<u8>>,
    counters: ByteCounters,
}

/// Like [`run_pair`], but every message passes through `hook(direction, index, message)`
/// first, where `index` counts that sender's messages from 0. The hook may modify the
/// bytes (tamper, truncate, extend) and chooses what happens to them.
#[allow(clippy::result_large_err)]
pub fn run_pair_with(
    a: &mut dyn Party,
    b: &mut dyn Party,
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> Result<(ByteCounters, ByteCounters), PairError> {
    let mut slots = [new_slot(a, Side::A), new_slot(b, Side::B)];
    loop {
        let mut progress = false;
        // Collect outgoing messages, through the hook, into the peer's inbox.
        for i in 0..2 {
            while let Some(mut message) = slots[i].party.poll_outgoing() {
                progress = true;
                let dir = if i == 0 {
                    Direction::AtoB
                } else {
                    Direction::BtoA
                };
                let index = slots[i].sent_index;
                slots[i].sent_index += 1;
                slots[i].counters.sent += message.len() as u64;
                let action = hook(dir, index, &mut message);
                let held = slots[i].held.take();
                let inbox = &mut slots[1 - i].inbox;
                match action {
                    HookAction::Deliver => inbox.push_back(message),
                    HookAction::Drop => {}
                    HookAction::Duplicate => {
                        inbox.push_back(message.clone());
                        inbox.push_back(message);
                    }
                    HookAction::DeliverAfterNext => {
                        // Release any older held message first, then hold this one.
                        if let Some(h) = held {
                            inbox.push_back(h);
                        }
                        slots[i].held = Some(message);
                        continue;
                    }
                }
                if let Some(h) = held {
                    slots[1 - i].inbox.push_back(h);
                }
            }
        }
        if slots[0].party.is_finished() && slots[1].party.is_finished() {
            return Ok((slots[0].counters, slots[1].counters));
        }
        // Let each party do its deferred work, or deliver it one message.
        for i in 0..2 {
            if slots[i].party.is_finished() {
                continue;
            }
            let result = if slots[i].party.has_deferred_work() {
                progress = true;
                slots[i].party.do_deferred_work()
            } else {
                let Some(message) = slots[i].inbox.pop_front() else {
                    continue;
                };
                progress = true;
                slots[i].counters.received += message.len() as u64;
                let max = slots[i].party.max_incoming_len();
                if message.len() > max {
                    Err(PeerMisbehaved::Malformed(format!(
                        "message of {} bytes exceeds the {max} bytes allowed next",
                        message.len()
                    ))
                    .into())
                } else {
                    slots[i].party.handle_message(&message)
                }
            };
            if let Err(error) = result {
                let alert = slots[i].party.alert(&error);
                let peer = &mut slots[1 - i].party;
                let peer_error = if peer.is_finished() {
                    None
                } else {
                    peer.handle_message(&alert).err()
                };
                return Err(PairError::Failed {
                    side: slots[i].side,
                    error,
                    peer_error,
                });
            }
        }
        if !progress {
            // Nothing was sent or delivered: release held messages, or give up.
            let mut released = false;
            for i in 0..2 {
                if let Some(h) = slots[i].held.take() {
                    slots[1 - i].inbox.push_back(h);
                    released = true;
                }
            }
            if !released {
                return Err(PairError::Deadlock {
                    a_status: status(&slots[0]),
                    b_status: status(&slots[1]),
                });
            }
        }
    }
}

fn new_slot(party: &mut dyn Party, side: Side) -> Slot<'_> {
    Slot {
        party,
        side,
        inbox: VecDeque::new(),
        sent_index: 0,
        held: None,
        counters: ByteCounters::default(),
    }
}

fn status(slot: &Slot<'_>) -> String {
    if slot.party.is_finished() {
        "finished".into()
    } else {
        format!("waiting, {}", slot.party.status())
    }
}
