//! Test-only party: a ping-pong in privset frames, deterministic from a seed, so every
//! transport can be exercised without real protocol crypto.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::party::{Outgoing, Party, PartyId};
use privset_protocols::wire::{self, HEADER_LEN, Header, ProtocolId};

pub const KIND_PING: u8 = 1;
pub const BODY_LEN: usize = 12;
pub const FRAME_LEN: usize = HEADER_LEN + BODY_LEN;
const SESSION: [u8; 16] = [7; 16];

/// Exchanges `rounds` turns each way; every turn is `burst` frames carrying a running
/// counter and a tag derived from the sender's seed. The initiator speaks first.
pub struct PingPong {
    initiator: bool,
    seed: u64,
    rounds: u32,
    burst: u32,
    outbox: VecDeque<Vec<u8>>,
    send_seq: u32,
    recv_seq: u32,
    /// Counter expected in the next received frame.
    expect: u32,
    /// Tags received from the peer, in order: the "output".
    pub received: Vec<u64>,
    failed: bool,
}

impl PingPong {
    pub fn new(initiator: bool, seed: u64) -> Self {
        Self::with_burst(initiator, seed, 3, 1)
    }

    pub fn with_burst(initiator: bool, seed: u64, rounds: u32, burst: u32) -> Self {
        let mut p = Self {
            initiator,
            seed,
            rounds,
            burst,
            outbox: VecDeque::new(),
            send_seq: 0,
            recv_seq: 0,
            expect: if initiator { burst } else { 0 },
            received: Vec::new(),
            failed: false,
        };
        if initiator {
            p.queue_turn(0);
        }
        p
    }

    fn tag(&self, counter: u32) -> u64 {
        self.seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(counter % 64)
            ^ u64::from(counter)
    }

    fn queue_turn(&mut self, turn: u32) {
        for i in 0..self.burst {
            let counter = turn * self.burst + i;
            let mut body = counter.to_be_bytes().to_vec();
            body.extend_from_slice(&self.tag(counter).to_be_bytes());
            self.outbox
                .push_back(wire::encode_frame(self.header(KIND_PING), &body));
            self.send_seq += 1;
        }
    }

    /// The initiator is participant 0, the responder 1.
    fn me(&self) -> PartyId {
        if self.initiator { 0 } else { 1 }
    }

    fn header(&self, kind: u8) -> Header<'static> {
        Header {
            protocol: ProtocolId::PiSum,
            kind,
            sender: self.me(),
            recipient: 1 - self.me(),
            session: &SESSION,
            seq: self.send_seq,
        }
    }

    fn expected_total(&self) -> usize {
        (self.rounds * self.burst) as usize
    }

    fn handle(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        let frame = wire::decode_frame(ProtocolId::PiSum, message)?;
        if frame.kind != KIND_PING {
            return Err(PeerMisbehaved::UnexpectedMessage {
                got: format!("kind {}", frame.kind),
                expected: "ping".into(),
            }
            .into());
        }
        if frame.session != SESSION {
            return Err(PeerMisbehaved::WrongSession.into());
        }
        if frame.seq != self.recv_seq {
            return Err(PeerMisbehaved::OutOfOrder {
                got: frame.seq,
                expected: self.recv_seq,
            }
            .into());
        }
        if frame.body.len() != BODY_LEN {
            return Err(PeerMisbehaved::WrongLength {
                what: "ping body",
                got: frame.body.len(),
                expected: BODY_LEN,
            }
            .into());
        }
        let counter = u32::from_be_bytes(frame.body[..4].try_into().unwrap());
        if counter != self.expect {
            return Err(PeerMisbehaved::Inconsistent(format!(
                "counter {counter}, expected {}",
                self.expect
            ))
            .into());
        }
        self.recv_seq += 1;
        self.expect += 1;
        self.received
            .push(u64::from_be_bytes(frame.body[4..].try_into().unwrap()));
        let end_of_turn = (counter + 1) % self.burst == 0;
        if end_of_turn {
            let next_turn = (counter + 1) / self.burst;
            if next_turn < 2 * self.rounds {
                self.queue_turn(next_turn);
                self.expect += self.burst;
            }
        }
        Ok(())
    }
}

impl Party for PingPong {
    fn id(&self) -> PartyId {
        self.me()
    }
    fn poll_outgoing(&mut self) -> Option<Outgoing> {
        let to = 1 - self.me();
        self.outbox.pop_front().map(|bytes| Outgoing { to, bytes })
    }
    fn awaiting(&self) -> Option<PartyId> {
        (!self.is_finished()).then_some(1 - self.me())
    }
    fn handle_message(&mut self, _from: PartyId, message: &[u8]) -> Result<(), ProtocolError> {
        if self.failed {
            return Err(ProtocolError::ApiMisuse("party already failed"));
        }
        if self.received.len() >= self.expected_total() {
            return Err(ProtocolError::ApiMisuse("party already finished"));
        }
        let r = self.handle(message);
        self.failed = r.is_err();
        r
    }
    fn max_incoming_len(&self) -> usize {
        FRAME_LEN
    }
    fn is_finished(&self) -> bool {
        !self.failed && self.outbox.is_empty() && self.received.len() >= self.expected_total()
    }
    fn status(&self) -> String {
        format!(
            "{} received {} of {}",
            if self.initiator {
                "initiator"
            } else {
                "responder"
            },
            self.received.len(),
            self.expected_total()
        )
    }
    fn alerts(&self, error: &ProtocolError) -> Vec<Outgoing> {
        vec![Outgoing {
            to: 1 - self.me(),
            bytes: wire::alert_frame(self.header(wire::KIND_ALERT), &error.to_string()),
        }]
    }
}

/// A fresh, empty temporary directory unique to this test.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "privset-net-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
