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
//!
//! psi-card-sum, psu and private-id add transfer units ([`Transfer`]): an oblivious
//! transfer on one part's indicator bits, its randomness drawn from each party's job
//! secret so that a rerun repeats it exactly. psi-card-sum's is Chen et al. 2024, Fig. 7
//! (the receiver gets the masked sum of the sender's values over its matches); psu's is
//! the one-sided transfer of their PSU (the receiver gets the sender's identifiers that
//! are not in its set, and nothing of the others); private-id's is the same transfer of
//! the sender's private identifiers (their Fig. 8).
//!
//! ```text
//! hello settings: as above (producer 1), then announced u64 (psi-card-sum: the sender's
//!                 value bound; psu, private-id: its identifier slot width; 0 from the
//!                 receiver),
//!                 count u64 (the part's elements)
//! kind 2, receiver -> sender: base-OT first message
//! kind 3, sender -> receiver: base-OT reply
//! kind 4, receiver -> sender: OT extension on the part's indicator bits
//! kind 5, sender -> receiver: psi-card-sum: r_i + v_i - int(K1_i) per element
//!         (transfer::send_sum); psu: enc(y_i) ^ pad(K0_i) per element
//!         (transfer::send_one_sided)
//! ```

use privset_crypto::ot::{self, OtReceiverKeys, OtReceiverSetup, OtSenderSetup};
use privset_crypto::rng::SessionRng;

use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::pso::transfer::{self, SumModulus};
use crate::pso::{MAX_ITEM_LEN, bad_ot};
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

    /// Reads the peer's id from `r` and checks it names this unit.
    fn check_peer(&self, r: &mut wire::Reader<'_>) -> Result<(), ProtocolError> {
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
        if operation != self.operation.code() || plan != self.plan {
            return Err(ProtocolError::Incompatible(
                "the peer runs another partitioned job (operation or plan differ)".into(),
            ));
        }
        if unit != self.unit || producer != self.producer {
            return Err(PeerMisbehaved::Malformed(format!(
                "the peer runs unit {unit} (produced by participant {producer}), this party \
                 unit {} (produced by participant {})",
                self.unit, self.producer
            ))
            .into());
        }
        Ok(())
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

/// Every unit's roster: the receiver is participant 0.
fn roster(names: &[String; 2], me: PartyId) -> Roster {
    Roster::pair(ProtocolId::PartitionUnit, [&names[0], &names[1]], me)
}

impl Handshake for Unit {
    fn roster(&self) -> Roster {
        roster(&self.names, self.me)
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
        self.id.check_peer(&mut r)?;
        r.finish()
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

const KIND_OT_FIRST: u8 = 2;
const KIND_OT_REPLY: u8 = 3;
const KIND_OT_EXTENSION: u8 = 4;
const KIND_SLOTS: u8 = 5;

/// What a party of a transfer unit brings.
pub enum TransferInput {
    /// The receiver: its indicator bit for each of the part's elements (set: in its own
    /// set), in the order the sender sent them.
    Choices(Vec<bool>),
    /// psi-card-sum's sender: its value for each element, in that order, and its value
    /// bound.
    Values { values: Vec<u64>, max_value: u64 },
    /// psu's sender: each element's identifier in a slot of `width` bytes
    /// ([`transfer::encode_item`]), in that order.
    Items { slots: Vec<u8>, width: usize },
}

/// What a transfer unit gives each party.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferOutput {
    /// The receiver: `sum_i int(K_i) + e_i c_i mod q`, the number of set bits, and the
    /// sender's announced value bound (which fixes `q` with the sender's set size).
    Receiver {
        masked: u128,
        matches: u64,
        max_value: u64,
    },
    /// The sender: `sum_i r_i mod q`, which it subtracts from the receiver's total.
    Sender { masks: u128 },
    /// psu's receiver: the identifiers of the part's elements not in its set.
    Items(Vec<Vec<u8>>),
    /// psu's sender: it learns nothing.
    ItemsSent,
}

enum TransferState {
    /// Receiver: sent `A`, waiting for the base-OT reply.
    AwaitReply(Box<OtReceiverSetup>),
    /// Receiver: sent the extension, waiting for the slots.
    AwaitSlots(OtReceiverKeys),
    /// Sender: waiting for `A`.
    AwaitFirst,
    /// Sender: sent the reply, waiting for the extension.
    AwaitExtension(OtSenderSetup),
    Done(TransferOutput),
    Spent,
}

/// One party of a transfer unit (psi-card-sum's sums, psu's identifiers: the unit's
/// operation says which).
pub struct Transfer {
    names: [String; 2],
    me: PartyId,
    id: UnitId,
    /// The sender's set size (all parts): with the value bound, fixes the modulus.
    sender_items: u64,
    count: u64,
    input: TransferInput,
    /// Both parties' OT randomness: from their job secrets, so a rerun repeats it.
    rng: SessionRng,
    /// The sender's value bound or slot width (the receiver's from the sender's hello).
    announced: Option<u64>,
    state: TransferState,
}

/// A party of transfer unit `id` (produced by the sender, participant 1) on a part of
/// `count` elements; `ot_seed` is private and fixed for this unit of this job.
pub fn transfer_party(
    names: [&str; 2],
    id: UnitId,
    sender_items: u64,
    input: TransferInput,
    ot_seed: [u8; 32],
    seed: [u8; 32],
) -> Result<Engine<Transfer>, ProtocolError> {
    let items = carries_items(id.operation);
    let (me, count, announced) = match &input {
        TransferInput::Choices(c) => (0, c.len() as u64, None),
        TransferInput::Values { values, max_value } if !items => {
            (1, values.len() as u64, Some(*max_value))
        }
        TransferInput::Items { slots, width } if items && valid_width(*width as u64) => {
            let count = slots.len() / width;
            if slots.len() != count * width {
                return Err(ProtocolError::Config(
                    "a transfer unit's identifier slots are not whole".into(),
                ));
            }
            (1, count as u64, Some(*width as u64))
        }
        _ => {
            return Err(ProtocolError::Config(format!(
                "a {} transfer unit cannot carry this input",
                if items {
                    "psu or private-id"
                } else {
                    "psi-card-sum"
                }
            )));
        }
    };
    if id.producer != 1 {
        return Err(ProtocolError::Config(
            "the sender leads a transfer unit".into(),
        ));
    }
    Engine::new(
        Transfer {
            names: names.map(str::to_string),
            me,
            id,
            sender_items,
            count,
            input,
            rng: SessionRng::from_seed(ot_seed),
            announced,
            state: TransferState::AwaitFirst,
        },
        seed,
    )
}

/// psu's and private-id's transfer units carry identifiers (the sender's items, or its
/// private identifiers); psi-card-sum's carry sums.
fn carries_items(operation: ProtocolId) -> bool {
    matches!(operation, ProtocolId::Psu | ProtocolId::PrivateId)
}

/// A psu identifier slot's width is [`transfer::item_width`] of a length the
/// identifiers may have.
fn valid_width(width: u64) -> bool {
    (transfer::item_width(0) as u64..=transfer::item_width(MAX_ITEM_LEN) as u64).contains(&width)
}

impl Transfer {
    /// psu's or private-id's transfer (identifiers), else psi-card-sum's (sums).
    fn items(&self) -> bool {
        carries_items(self.id.operation)
    }

    fn modulus(&self) -> Result<SumModulus, ProtocolError> {
        let max_value = self.announced.unwrap_or(0);
        SumModulus::announced(self.sender_items, max_value)
    }

    /// Bytes per element of the sender's last message.
    fn slot_len(&self) -> Result<usize, ProtocolError> {
        match self.items() {
            true => Ok(self.announced.unwrap_or(0) as usize),
            false => Ok(self.modulus()?.bytes()),
        }
    }

    /// The OT's context: this unit of this job.
    fn context(&self) -> Vec<u8> {
        let mut ctx = b"privset/v1/partitioned/transfer".to_vec();
        ctx.extend_from_slice(&self.id.plan);
        ctx.extend_from_slice(&self.id.unit.to_be_bytes());
        ctx
    }
}

impl Handshake for Transfer {
    fn roster(&self) -> Roster {
        roster(&self.names, self.me)
    }

    fn kind_name(kind: u8) -> &'static str {
        match kind {
            KIND_OT_FIRST => "a transfer unit's base-OT first message",
            KIND_OT_REPLY => "a transfer unit's base-OT reply",
            KIND_OT_EXTENSION => "a transfer unit's OT extension",
            KIND_SLOTS => "a transfer unit's masked values",
            _ => "an unknown partition-unit message",
        }
    }

    fn settings(&self) -> Vec<u8> {
        let mut out = self.id.encode();
        out.extend_from_slice(&self.announced.unwrap_or(0).to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out
    }

    fn max_settings_len(&self) -> usize {
        SETTINGS_LEN + 16
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "transfer-unit hello");
        self.id.check_peer(&mut r)?;
        let announced = r.u64()?;
        let count = r.u64()?;
        r.finish()?;
        if count != self.count {
            return Err(PeerMisbehaved::Malformed(format!(
                "transfer unit {}: the peer has {count} elements in the part, this party {}",
                self.id.unit, self.count
            ))
            .into());
        }
        if self.me == 0 {
            if self.items() && !valid_width(announced) {
                return Err(PeerMisbehaved::Malformed(format!(
                    "transfer unit {}: identifier slots of {announced} bytes",
                    self.id.unit
                ))
                .into());
            }
            self.announced = Some(announced);
            self.slot_len()?;
        }
        Ok(())
    }
}

impl Protocol for Transfer {
    type Output = TransferOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        if self.me == 0 {
            let ctx = self.context();
            let (setup, first) = OtReceiverSetup::new(&mut self.rng, &ctx);
            session.send(1, KIND_OT_FIRST, &first);
            self.state = TransferState::AwaitReply(Box::new(setup));
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let state = std::mem::replace(&mut self.state, TransferState::Spent);
        self.state = match (state, &self.input) {
            (TransferState::AwaitReply(setup), TransferInput::Choices(choices)) => {
                let reply = message.expect(KIND_OT_REPLY)?;
                let (keys, extension) = setup.extend(reply, choices).map_err(bad_ot)?;
                session.send(1, KIND_OT_EXTENSION, &extension);
                TransferState::AwaitSlots(keys)
            }
            (TransferState::AwaitSlots(keys), TransferInput::Choices(choices)) => {
                let slots = message.expect(KIND_SLOTS)?;
                let width = self.slot_len()?;
                wire::expect_len("slots", slots, choices.len().saturating_mul(width))?;
                if self.items() {
                    let items = transfer::receive_one_sided(&keys, false, width, slots)
                        .into_iter()
                        .map(|(_, slot)| transfer::decode_item(&slot).map(<[u8]>::to_vec))
                        .collect::<Result<Vec<_>, _>>()?;
                    TransferState::Done(TransferOutput::Items(items))
                } else {
                    let masked = transfer::receive_sum(&keys, self.modulus()?, slots)?;
                    TransferState::Done(TransferOutput::Receiver {
                        masked,
                        matches: choices.iter().filter(|&&c| c).count() as u64,
                        max_value: self.announced.unwrap_or(0),
                    })
                }
            }
            (
                TransferState::AwaitFirst,
                TransferInput::Values { .. } | TransferInput::Items { .. },
            ) => {
                let first = message.expect(KIND_OT_FIRST)?;
                let ctx = self.context();
                let (setup, reply) =
                    OtSenderSetup::respond(&mut self.rng, &ctx, first).map_err(bad_ot)?;
                session.send(0, KIND_OT_REPLY, &reply);
                TransferState::AwaitExtension(setup)
            }
            (TransferState::AwaitExtension(setup), TransferInput::Values { values, .. }) => {
                let extension = message.expect(KIND_OT_EXTENSION)?;
                wire::expect_len(
                    "OT extension",
                    extension,
                    ot::extension_message_len(values.len()),
                )?;
                let keys = setup.extend(extension, values.len()).map_err(bad_ot)?;
                let (masks, slots) = transfer::send_sum(&keys, self.modulus()?, values);
                session.send(0, KIND_SLOTS, &slots);
                TransferState::Done(TransferOutput::Sender { masks })
            }
            (TransferState::AwaitExtension(setup), TransferInput::Items { slots, width }) => {
                let extension = message.expect(KIND_OT_EXTENSION)?;
                let count = self.count as usize;
                wire::expect_len("OT extension", extension, ot::extension_message_len(count))?;
                let keys = setup.extend(extension, count).map_err(bad_ot)?;
                let w = *width;
                let out = transfer::send_one_sided(&keys, false, w, |i| {
                    slots[i * w..(i + 1) * w].to_vec()
                });
                session.send(0, KIND_SLOTS, &out);
                TransferState::Done(TransferOutput::ItemsSent)
            }
            _ => {
                return Err(ProtocolError::ApiMisuse(
                    "a transfer-unit message out of turn",
                ));
            }
        };
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            TransferState::AwaitReply(_) | TransferState::AwaitSlots(_) => Some(1),
            TransferState::AwaitFirst | TransferState::AwaitExtension(_) => Some(0),
            TransferState::Done(_) | TransferState::Spent => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let slot = self.slot_len().unwrap_or(0);
        match self.state {
            TransferState::AwaitReply(_) => ot::BASE_REPLY_LEN,
            TransferState::AwaitSlots(_) => (self.count as usize).saturating_mul(slot),
            TransferState::AwaitFirst => ot::BASE_FIRST_LEN,
            TransferState::AwaitExtension(_) => ot::extension_message_len(self.count as usize),
            TransferState::Done(_) | TransferState::Spent => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, TransferState::Done(_))
    }

    fn status(&self) -> String {
        format!("oblivious transfer of unit {}", self.id.unit)
    }

    fn into_output(self) -> Option<TransferOutput> {
        match self.state {
            TransferState::Done(out) => Some(out),
            _ => None,
        }
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

    /// Runs transfer unit `id` between a receiver with `choices` and a sender with
    /// `input`, their job secrets fixed and their session seeds from `salt`; returns
    /// the first error and both outputs.
    fn transfer(
        id: UnitId,
        choices: &[bool],
        input: TransferInput,
        salt: u8,
    ) -> (
        Option<String>,
        Option<TransferOutput>,
        Option<TransferOutput>,
    ) {
        let names = ["receiver", "sender"];
        let choices = TransferInput::Choices(choices.to_vec());
        let mut r = transfer_party(names, id, 100, choices, [3; 32], [salt; 32]).unwrap();
        let mut s = transfer_party(names, id, 100, input, [4; 32], [salt + 1; 32]).unwrap();
        let err = exchange(&mut r, &mut s);
        (err, r.into_output(), s.into_output())
    }

    #[test]
    fn a_transfer_unit_gives_the_masked_sum_and_a_rerun_repeats_it() {
        let choices = [true, false, true, true, false];
        let run = |salt: u8| {
            let values = TransferInput::Values {
                values: vec![5, 7, 11, 13, 17],
                max_value: 20,
            };
            let (err, r, s) = transfer(id(9), &choices, values, salt);
            assert_eq!(err, None);
            (r.unwrap(), s.unwrap())
        };
        let (r, s) = run(1);
        let (
            &TransferOutput::Receiver {
                masked,
                matches,
                max_value,
            },
            &TransferOutput::Sender { masks },
        ) = (&r, &s)
        else {
            panic!("{r:?} {s:?}");
        };
        assert_eq!((matches, max_value), (3, 20));
        let q = SumModulus::new(100, 20).unwrap();
        assert_eq!(q.reduce(masked.wrapping_sub(masks)), 5 + 11 + 13);
        // Other session seeds, the same job secrets: the same outputs.
        assert_eq!(run(7), (r, s));
    }

    #[test]
    fn a_psu_transfer_unit_gives_the_items_not_in_the_set_and_a_rerun_repeats_it() {
        let names = ["receiver", "sender"];
        let id = UnitId {
            operation: ProtocolId::Psu,
            ..id(9)
        };
        let items: Vec<&[u8]> = vec![b"ann", b"", b"bob@example.org", b"c", b"dee"];
        let width = transfer::item_width(15);
        let slots: Vec<u8> = items
            .iter()
            .flat_map(|i| transfer::encode_item(i, width))
            .collect();
        let choices = [true, false, true, false, false];
        let run = |salt: u8| {
            let input = TransferInput::Items {
                slots: slots.clone(),
                width,
            };
            transfer(id, &choices, input, salt)
        };
        let (err, r, s) = run(1);
        assert_eq!(err, None);
        let want: Vec<Vec<u8>> = vec![b"".to_vec(), b"c".to_vec(), b"dee".to_vec()];
        assert_eq!(r, Some(TransferOutput::Items(want)));
        assert_eq!(s, Some(TransferOutput::ItemsSent));
        assert_eq!(run(7).1, r);
        // Slots wider than the longest identifier allows are refused before any OT.
        let wide = transfer::item_width(MAX_ITEM_LEN + 1);
        let wide_slots = vec![0u8; 5 * wide];
        let hostile = transfer_party(
            names,
            id,
            100,
            TransferInput::Items {
                slots: wide_slots,
                width: wide,
            },
            [4; 32],
            [1; 32],
        );
        assert!(hostile.is_err());
        // A psu unit takes no values, a psi-card-sum unit no identifiers.
        let values = TransferInput::Values {
            values: vec![1],
            max_value: 1,
        };
        assert!(transfer_party(names, id, 100, values, [4; 32], [1; 32]).is_err());
    }
}
