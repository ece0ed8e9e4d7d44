//! In-memory transports for tests.
//!
//! * [`pair`]: two connected [`MemoryTransport`]s over std channels, to run two parties
//!   on two threads with the real [`crate::drive`] loop.
//! * [`run_parties`] / [`run_parties_with`]: a single-threaded, lock-step harness in the
//!   spirit of quinn's test `Pair` for any number of parties: it shuttles messages until
//!   every party finishes, detects deadlock, and lets a hook tamper with, truncate, drop,
//!   duplicate or reorder any message on any link. Deterministic, so negative tests are
//!   exact. [`run_pair`] / [`run_pair_with`] are its two-party form.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::party::{Outgoing, Party, PartyId};

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

/// What the harness does with a message after the hook saw (and maybe changed) it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAction {
    /// Deliver it (as modified by the hook).
    Deliver,
    /// Lose it.
    Drop,
    /// Deliver it twice in a row.
    Duplicate,
    /// Hold it back and deliver it right after the same link's next message (swaps two
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

/// Why [`run_parties`] stopped without every party finishing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// Participant `party` failed with `error`. Its alerts were delivered to the peers
    /// waiting for it; `peer_errors` are their reactions (normally
    /// [`ProtocolError::PeerAborted`]).
    #[error("participant {party} failed: {error}")]
    Failed {
        party: PartyId,
        error: ProtocolError,
        peer_errors: Vec<(PartyId, ProtocolError)>,
    },
    /// No party can move: each waits for a message that will never come.
    #[error("deadlock: no message in flight and no party can move ({})", statuses.join("; "))]
    Deadlock { statuses: Vec<String> },
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

/// Like [`run_pair`], but every message passes through `hook(direction, index, message)`
/// first, where `index` counts that sender's messages from 0. The hook may modify the
/// bytes (tamper, truncate, extend) and chooses what happens to them.
#[allow(clippy::result_large_err)]
pub fn run_pair_with(
    a: &mut dyn Party,
    b: &mut dyn Party,
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> Result<(ByteCounters, ByteCounters), PairError> {
    let a_id = a.id();
    let side = |p: PartyId| if p == a_id { Side::A } else { Side::B };
    let mut parties: [&mut dyn Party; 2] = [&mut *a, &mut *b];
    let result = run_parties_with(&mut parties, &mut |from, _to, index, message| {
        let direction = match side(from) {
            Side::A => Direction::AtoB,
            Side::B => Direction::BtoA,
        };
        hook(direction, index, message)
    });
    match result {
        Ok(counters) => Ok((counters[0], counters[1])),
        Err(HarnessError::Failed {
            party,
            error,
            mut peer_errors,
        }) => Err(PairError::Failed {
            side: side(party),
            error,
            peer_error: peer_errors.pop().map(|(_, e)| e),
        }),
        Err(HarnessError::Deadlock { mut statuses }) => {
            let b_status = statuses.pop().unwrap_or_default();
            let a_status = statuses.pop().unwrap_or_default();
            Err(PairError::Deadlock { a_status, b_status })
        }
    }
}

/// Runs every party of a session to completion in lock step, delivering every message
/// unchanged. Returns each party's byte counters, in the order given.
#[allow(clippy::result_large_err)]
pub fn run_parties(parties: &mut [&mut dyn Party]) -> Result<Vec<ByteCounters>, HarnessError> {
    run_parties_with(parties, &mut |_, _, _, _| HookAction::Deliver)
}

/// The hook of [`run_parties_with`]: `(from, to, index on that link, message)`.
pub type LinkHook<'a> = dyn FnMut(PartyId, PartyId, u32, &mut Vec<u8>) -> HookAction + 'a;

/// One party and its bookkeeping in the harness.
struct Slot<'a, 'p> {
    party: &'a mut &'p mut dyn Party,
    /// Messages on their way *to* this party, per sender, in order.
    inbox: BTreeMap<PartyId, VecDeque<Vec<u8>>>,
    /// Per recipient: index of this party's next message to it, and a message held back
    /// by [`HookAction::DeliverAfterNext`].
    sent: BTreeMap<PartyId, (u32, Option<Vec<u8>>)>,
    counters: ByteCounters,
}

/// Like [`run_parties`], but every message passes through `hook(from, to, index,
/// message)` first, where `index` counts the messages on that link (from `from` to `to`)
/// from 0. The hook may modify the bytes and chooses what happens to them; a reorder
/// holds a message back behind the same link's next one.
///
/// A single-threaded, lock-step harness in the spirit of quinn's test `Pair`: it
/// shuttles messages until every party finishes, detects deadlock, and is
/// deterministic, so negative tests are exact.
#[allow(clippy::result_large_err)]
pub fn run_parties_with(
    parties: &mut [&mut dyn Party],
    hook: &mut LinkHook<'_>,
) -> Result<Vec<ByteCounters>, HarnessError> {
    let mut slots: Vec<Slot<'_, '_>> = parties
        .iter_mut()
        .map(|party| Slot {
            party,
            inbox: BTreeMap::new(),
            sent: BTreeMap::new(),
            counters: ByteCounters::default(),
        })
        .collect();
    let position: BTreeMap<PartyId, usize> = slots
        .iter()
        .enumerate()
        .map(|(i, s)| (s.party.id(), i))
        .collect();
    loop {
        let mut progress = false;
        // Collect outgoing messages, through the hook, into the recipients' inboxes.
        for i in 0..slots.len() {
            let from = slots[i].party.id();
            while let Some(Outgoing { to, bytes }) = slots[i].party.poll_outgoing() {
                progress = true;
                let mut message = bytes;
                slots[i].counters.sent += message.len() as u64;
                let (index, held) = slots[i].sent.entry(to).or_default();
                let n = *index;
                *index += 1;
                let action = hook(from, to, n, &mut message);
                let mut deliver = Vec::new();
                match action {
                    HookAction::Deliver => deliver.push(message),
                    HookAction::Drop => {}
                    HookAction::Duplicate => {
                        deliver.push(message.clone());
                        deliver.push(message);
                    }
                    HookAction::DeliverAfterNext => {
                        // Release any older held message first, then hold this one.
                        deliver.extend(held.replace(message));
                    }
                }
                if action != HookAction::DeliverAfterNext {
                    deliver.extend(held.take());
                }
                let Some(&j) = position.get(&to) else {
                    continue;
                };
                slots[j].inbox.entry(from).or_default().extend(deliver);
            }
        }
        if slots.iter().all(|s| s.party.is_finished()) {
            return Ok(slots.iter().map(|s| s.counters).collect());
        }
        // Let each party do its deferred work, or deliver it one message.
        for i in 0..slots.len() {
            if slots[i].party.is_finished() {
                continue;
            }
            let result = if slots[i].party.has_deferred_work() {
                progress = true;
                slots[i].party.do_deferred_work()
            } else {
                let Some(from) = slots[i].party.awaiting() else {
                    continue;
                };
                let Some(message) = slots[i].inbox.get_mut(&from).and_then(VecDeque::pop_front)
                else {
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
                    slots[i].party.handle_message(from, &message)
                }
            };
            if let Err(error) = result {
                let party = slots[i].party.id();
                let mut peer_errors = Vec::new();
                for alert in slots[i].party.alerts(&error) {
                    let Some(&j) = position.get(&alert.to) else {
                        continue;
                    };
                    let peer = &mut slots[j].party;
                    if !peer.is_finished()
                        && peer.awaiting() == Some(party)
                        && let Err(e) = peer.handle_message(party, &alert.bytes)
                    {
                        peer_errors.push((alert.to, e));
                    }
                }
                return Err(HarnessError::Failed {
                    party,
                    error,
                    peer_errors,
                });
            }
        }
        if !progress {
            // Nothing was sent or delivered: release held messages, or give up.
            let mut released = false;
            for i in 0..slots.len() {
                let from = slots[i].party.id();
                let held: Vec<(PartyId, Vec<u8>)> = slots[i]
                    .sent
                    .iter_mut()
                    .filter_map(|(&to, (_, h))| h.take().map(|m| (to, m)))
                    .collect();
                for (to, m) in held {
                    if let Some(&j) = position.get(&to) {
                        slots[j].inbox.entry(from).or_default().push_back(m);
                        released = true;
                    }
                }
            }
            if !released {
                return Err(HarnessError::Deadlock {
                    statuses: slots.iter().map(status).collect(),
                });
            }
        }
    }
}

fn status(slot: &Slot<'_, '_>) -> String {
    let id = slot.party.id();
    if slot.party.is_finished() {
        format!("{id}: finished")
    } else {
        format!("{id}: waiting, {}", slot.party.status())
    }
}
