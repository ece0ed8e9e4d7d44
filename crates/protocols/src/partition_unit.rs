//! One unit of a value-partitioned job: a single message from the party that produces a
//! step's data to the party that consumes it.
//!
//! A set operation whose output is an aggregate (psi-card) cannot run as one session per
//! bucket of identifiers: the receiver would learn each bucket's count, and it knows
//! which of its items fall in which bucket. The job of `privset_run::buckets::value`
//! instead streams the mqRPMT's own messages (Chen et al. 2024, Fig. 3) in units small
//! enough for memory, each unit one session of this protocol, and partitions them on
//! disk by the *values* of the doubly evaluated PRF, which carry nothing about the items.
//!
//! Every payload is a deterministic function of the job's keys and the parties' sets, so
//! a unit run again (a party killed before recording it) sends the same bytes: a rerun
//! shows the peer nothing new, and an exchange-directory replay rebuilds the same
//! messages.
//!
//! ```text
//! hello settings: version u8 (1), operation u8 (the partitioned protocol's code),
//!                 plan id [32], unit u32, producer u8 (0 receiver, 1 sender)
//! message (kind 1, producer -> consumer): the unit's payload
//! ```

use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{self, PartyId, ProtocolId};

const VERSION: u8 = 1;
const SETTINGS_LEN: usize = 1 + 1 + 32 + 4 + 1;
const KIND_PAYLOAD: u8 = 1;

/// Which unit of which job, and who produces it: both parties must name the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitId {
    /// The operation the job runs.
    pub operation: ProtocolId,
    /// The job's plan (`privset_protocols::bucket_plan`).
    pub plan: [u8; 32],
    pub unit: u32,
    /// The participant that sends the payload.
    pub producer: PartyId,
}

impl UnitId {
    fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION, self.operation.code()];
        out.extend_from_slice(&self.plan);
        out.extend_from_slice(&self.unit.to_be_bytes());
        out.push(self.producer);
        out
    }
}

/// What this party does in the unit.
enum Part {
    /// Sends this payload.
    Produce(Vec<u8>),
    /// Receives a payload of at most this many bytes.
    Consume { max_len: usize },
}

/// One party of a unit session.
pub struct Unit {
    names: [String; 2],
    me: PartyId,
    id: UnitId,
    part: Part,
    /// Sent (producer) or received (consumer).
    done: bool,
    received: Option<Vec<u8>>,
}

/// The producer's party: sends `payload` (`names[0]` is participant 0).
pub fn producer(
    names: [&str; 2],
    id: UnitId,
    payload: Vec<u8>,
    seed: [u8; 32],
) -> Result<Engine<Unit>, ProtocolError> {
    new_party(names, id.producer, id, Part::Produce(payload), seed)
}

/// The consumer's party: its output is the payload, at most `max_len` bytes.
pub fn consumer(
    names: [&str; 2],
    id: UnitId,
    max_len: usize,
    seed: [u8; 32],
) -> Result<Engine<Unit>, ProtocolError> {
    if id.producer > 1 {
        return Err(ProtocolError::Config(
            "a unit has participants 0 and 1".into(),
        ));
    }
    new_party(names, 1 - id.producer, id, Part::Consume { max_len }, seed)
}

fn new_party(
    names: [&str; 2],
    me: PartyId,
    id: UnitId,
    part: Part,
    seed: [u8; 32],
) -> Result<Engine<Unit>, ProtocolError> {
    Engine::new(
        Unit {
            names: names.map(str::to_string),
            me,
            id,
            part,
            done: false,
            received: None,
        },
        seed,
    )
}

impl Handshake for Unit {
    fn roster(&self) -> Roster {
        Roster::pair(
            ProtocolId::PartitionUnit,
            [&self.names[0], &self.names[1]],
            self.me,
        )
    }

    fn kind_name(kind: u8) -> &'static str {
        match kind {
            KIND_PAYLOAD => "a partition unit's payload",
            _ => "an unknown partition-unit message",
        }
    }

    fn settings(&self) -> Vec<u8> {
        self.id.encode()
    }

    fn max_settings_len(&self) -> usize {
        SETTINGS_LEN
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "partition-unit hello");
        let version = r.u8()?;
        if version != VERSION {
            return Err(ProtocolError::Incompatible(format!(
                "partition-unit version: this party speaks {VERSION}, the peer {version}"
            )));
        }
        let operation = r.u8()?;
        let plan: [u8; 32] = r.array()?;
        let unit = r.u32()?;
        let producer = r.u8()?;
        r.finish()?;
        if operation != self.id.operation.code() || plan != self.id.plan {
            return Err(ProtocolError::Incompatible(
                "the peer runs another partitioned job (operation or plan differ)".into(),
            ));
        }
        if unit != self.id.unit || producer != self.id.producer {
            return Err(PeerMisbehaved::Malformed(format!(
                "the peer runs unit {unit} (produced by participant {producer}), this party \
                 unit {} (produced by participant {})",
                self.id.unit, self.id.producer
            ))
            .into());
        }
        Ok(())
    }
}

impl Protocol for Unit {
    /// The consumer's payload; `None` for the producer.
    type Output = Option<Vec<u8>>;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        if let Part::Produce(payload) = &mut self.part {
            let payload = std::mem::take(payload);
            session.send(session.peer(), KIND_PAYLOAD, &payload);
            self.done = true;
        }
        Ok(())
    }

    fn handle(
        &mut self,
        _session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let body = message.expect(KIND_PAYLOAD)?;
        // The transports refuse a longer frame before reading it; checked here too for
        // a driver that does not.
        if let Part::Consume { max_len } = self.part
            && body.len() > max_len
        {
            return Err(PeerMisbehaved::Malformed(format!(
                "unit {}: a payload of {} bytes, more than the {max_len} it may have",
                self.id.unit,
                body.len()
            ))
            .into());
        }
        self.received = Some(body.to_vec());
        self.done = true;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.part {
            Part::Consume { .. } if !self.done => Some(self.id.producer),
            _ => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match self.part {
            Part::Consume { max_len } => max_len,
            Part::Produce(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn status(&self) -> String {
        match self.part {
            Part::Produce(_) => format!("sending unit {}", self.id.unit),
            Part::Consume { .. } => format!("receiving unit {}", self.id.unit),
        }
    }

    fn into_output(self) -> Option<Option<Vec<u8>>> {
        self.done.then_some(self.received)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::party::Party;

    fn id(unit: u32) -> UnitId {
        UnitId {
            operation: ProtocolId::PsiCard,
            plan: [9; 32],
            unit,
            producer: 1,
        }
    }

    fn exchange(a: &mut dyn Party, b: &mut dyn Party) -> Option<String> {
        let mut err = None;
        for _ in 0..4 {
            while let Some(m) = a.poll_outgoing() {
                if let Err(e) = b.handle_message(0, &m.bytes) {
                    err.get_or_insert(e.to_string());
                }
            }
            while let Some(m) = b.poll_outgoing() {
                if let Err(e) = a.handle_message(1, &m.bytes) {
                    err.get_or_insert(e.to_string());
                }
            }
        }
        err
    }

    #[test]
    fn the_consumer_gets_the_payload_and_a_mismatch_or_oversize_is_refused() {
        let names = ["receiver", "sender"];
        let mut c = consumer(names, id(3), 5, [1; 32]).unwrap();
        let mut p = producer(names, id(3), b"hello".to_vec(), [2; 32]).unwrap();
        assert_eq!(exchange(&mut c, &mut p), None);
        assert_eq!(c.into_output(), Some(Some(b"hello".to_vec())));
        assert_eq!(p.into_output(), Some(None));

        let mut c = consumer(names, id(3), 4, [1; 32]).unwrap();
        let mut p = producer(names, id(3), b"hello".to_vec(), [2; 32]).unwrap();
        assert!(exchange(&mut c, &mut p).is_some());
        assert_eq!(c.into_output(), None);

        let mut c = consumer(names, id(3), 5, [1; 32]).unwrap();
        let mut p = producer(names, id(4), b"hello".to_vec(), [2; 32]).unwrap();
        let err = exchange(&mut c, &mut p).unwrap();
        assert!(err.contains("unit 4"), "{err}");
        assert_eq!(c.into_output(), None);
    }
}
