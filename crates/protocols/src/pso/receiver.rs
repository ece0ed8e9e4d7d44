//! The receiver (P1) of the Fig. 7 operations: the mqRPMT server and the OT receiver.

use std::collections::{HashMap, HashSet};

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtReceiverKeys, OtReceiverSetup};

use super::core::{Common, SENDER, bad_ot, no_message_now};
use super::mqrpmt::{self, Server};
use super::transfer::{self, TAG_KEY};
use super::{LastMessage, Operation, PsoOutput, ShareRow, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::ProtocolError;
use crate::wire::{PartyId, Reader};

/// The receiver: holds `Y`; learns the operation's output.
pub struct Receiver<C: CwPrf> {
    common: Common,
    state: State<C>,
    output: Option<PsoOutput>,
}

enum State<C: CwPrf> {
    /// Before the session is established.
    Start,
    AwaitS1 {
        server: Server<C>,
        ot: Option<OtReceiverSetup>,
        /// R1, computed but held back until the sender's S1 has arrived: the two large
        /// first messages never travel at the same time, so blocking transports cannot
        /// deadlock with both sides writing.
        r1: Vec<u8>,
    },
    /// S1 received and R1 sent; evaluating S1 is deferred work, done while the sender
    /// computes S2.
    Absorb {
        server: Server<C>,
        ot: Option<OtReceiverSetup>,
        s1: Vec<u8>,
    },
    AwaitS2 {
        server: Server<C>,
        ot: Option<OtReceiverSetup>,
        absorbed: Vec<u8>,
    },
    AwaitS3 {
        keys: OtReceiverKeys,
    },
    Done,
}

impl<C: CwPrf> Receiver<C> {
    pub(crate) fn new(common: Common) -> Self {
        Self {
            common,
            state: State::Start,
            output: None,
        }
    }

    fn operation(&self) -> Operation {
        self.common.config.operation
    }

    fn finish(&mut self, output: PsoOutput) -> State<C> {
        self.output = Some(output);
        State::Done
    }

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<State<C>, ProtocolError> {
        let n1 = self.common.input.ids.len();
        let n2 = self.common.peer_items() as usize;
        let peer_items = self.common.peer_items();
        Ok(match std::mem::replace(&mut self.state, State::Done) {
            State::AwaitS1 { server, ot, r1 } => {
                // Both parties computed their first message at the same time; the
                // sender's arrives first, then ours leaves, then we evaluate the
                // sender's items while it evaluates ours.
                let s1 = message.expect(kind::S1)?;
                let expected = mqrpmt::packed_len::<C>(n2, "S1")?;
                crate::wire::expect_len("S1", s1, expected)?;
                s.send(SENDER, kind::R1, &r1);
                State::Absorb {
                    server,
                    ot,
                    s1: s1.to_vec(),
                }
            }
            State::AwaitS2 {
                server,
                ot,
                absorbed,
            } => {
                let mut r = Reader::new(message.expect(kind::S2)?, "S2");
                let base_reply = match ot {
                    Some(_) => Some(r.take(ot::BASE_REPLY_LEN)?),
                    None => None,
                };
                let filter_key = s.ctx.derive_key(mqrpmt::FILTER_KEY);
                if self.common.config.last_message == LastMessage::Ordered {
                    // psi as DH-PSI: the bits are for our own items; no OT follows.
                    let mine = server.own_indicator(&absorbed, &mut r, n1, n2, &filter_key)?;
                    r.finish()?;
                    let items = self
                        .common
                        .input
                        .ids
                        .iter()
                        .zip(&mine)
                        .filter(|(_, hit)| **hit)
                        .map(|(y, _)| y.clone())
                        .collect();
                    return Ok(self.finish(PsoOutput::Intersection { items, peer_items }));
                }
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.common.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                match (ot, base_reply) {
                    (Some(setup), Some(reply)) => {
                        let (keys, extension) = setup.extend(reply, &e).map_err(bad_ot)?;
                        s.send(SENDER, kind::R2, &extension);
                        State::AwaitS3 { keys }
                    }
                    _ => {
                        let cardinality = e.iter().filter(|&&b| b).count() as u64;
                        self.finish(PsoOutput::Cardinality {
                            cardinality,
                            peer_items,
                        })
                    }
                }
            }
            State::AwaitS3 { keys } => {
                let payload = message.expect(kind::S3)?;
                let width = payload_width(self.operation(), &self.common)?;
                crate::wire::expect_len("S3", payload, n2.saturating_mul(width))?;
                let output = self.finish_transfer(s, &keys, width, payload)?;
                self.finish(output)
            }
            State::Start | State::Absorb { .. } | State::Done => return Err(no_message_now()),
        })
    }

    /// Reads the OT payloads into the operation's output (card-sum: also queues R3).
    fn finish_transfer(
        &mut self,
        s: &mut Session<'_>,
        keys: &OtReceiverKeys,
        width: usize,
        payload: &[u8],
    ) -> Result<PsoOutput, ProtocolError> {
        let peer_items = self.common.peer_items();
        let cardinality = (0..keys.len()).filter(|&i| keys.choice(i)).count() as u64;
        let ids = &self.common.input.ids;
        Ok(match self.operation() {
            Operation::Psi => {
                let tag_key = s.ctx.derive_key(TAG_KEY);
                let by_tag: HashMap<Vec<u8>, usize> = ids
                    .iter()
                    .enumerate()
                    .map(|(j, y)| (transfer::item_tag(&tag_key, y, width), j))
                    .collect();
                // A tag matching none of our items can only come from a filter false
                // positive (probability 2^-40 per run): it is not in the intersection.
                let mut found: Vec<usize> = transfer::receive_one_sided(keys, true, width, payload)
                    .into_iter()
                    .filter_map(|(_, tag)| by_tag.get(tag.as_slice()).copied())
                    .collect();
                found.sort_unstable();
                found.dedup();
                let items = found.into_iter().map(|j| ids[j].clone()).collect();
                PsoOutput::Intersection { items, peer_items }
            }
            Operation::Psu => {
                let mut union: Vec<Vec<u8>> = ids.clone();
                let mut seen: HashSet<Vec<u8>> = ids.iter().cloned().collect();
                for (_, slot) in transfer::receive_one_sided(keys, false, width, payload) {
                    let item = transfer::decode_item(&slot)?.to_vec();
                    if seen.insert(item.clone()) {
                        union.push(item);
                    }
                }
                PsoOutput::Union {
                    items: union,
                    peer_items,
                }
            }
            Operation::PsiShare => PsoOutput::ReceiverShares {
                cardinality,
                rows: transfer::receive_shares(keys, width, payload)
                    .into_iter()
                    .map(|(i, share)| ShareRow {
                        index: i as u64,
                        share,
                    })
                    .collect(),
                peer_items,
            },
            Operation::PsiCardSum => {
                let q = self.common.sum_modulus()?;
                let masked = transfer::receive_sum(keys, q, payload)?;
                let mut r3 = Vec::with_capacity(24);
                r3.extend_from_slice(&cardinality.to_be_bytes());
                r3.extend_from_slice(&masked.to_be_bytes());
                s.send(SENDER, kind::R3, &r3);
                PsoOutput::Cardinality {
                    cardinality,
                    peer_items,
                }
            }
            // psi-card ends at S2 (no OT); private-id is a party of its own.
            Operation::PsiCard | Operation::PrivateId => {
                return Err(ProtocolError::ApiMisuse(
                    "psi-card and private-id have no transfer step",
                ));
            }
        })
    }
}

impl<C: CwPrf> Protocol for Receiver<C> {
    type Output = PsoOutput;

    type Handshake = Common;

    fn handshake(&mut self) -> &mut Common {
        &mut self.common
    }

    /// Evaluates our items (and prepares the OT) while the sender evaluates its own; R1
    /// is held back until S1 has arrived: the two large first messages never travel at
    /// the same time, so blocking transports cannot deadlock with both sides writing.
    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.common.start::<C>(s.ctx);
        let server = Server::<C>::new(self.common.config.construction, s.rng);
        let mut r1 = Vec::new();
        let ot = self.common.config.uses_ot().then(|| {
            let (setup, first) = OtReceiverSetup::new(s.rng, &s.ctx.transcript);
            r1.extend_from_slice(&first);
            setup
        });
        r1.extend_from_slice(&server.evaluate_items(
            (s.meter, "R1: hashing and evaluating our items"),
            self.common.dst(),
            &self.common.input.ids,
        ));
        self.state = State::AwaitS1 { server, ot, r1 };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            State::AwaitS1 { .. } | State::AwaitS2 { .. } | State::AwaitS3 { .. } => Some(SENDER),
            State::Start | State::Absorb { .. } | State::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let n1 = self.common.input.ids.len();
        let n2 = self.common.peer_items() as usize;
        match &self.state {
            State::AwaitS1 { .. } => n2.saturating_mul(C::ELEMENT_LEN),
            State::AwaitS2 { ot, .. } => {
                let base = if ot.is_some() { ot::BASE_REPLY_LEN } else { 0 };
                base.saturating_add(mqrpmt::set_max_len::<C>(
                    self.common.config.last_message,
                    n1,
                    n2,
                ))
            }
            State::AwaitS3 { .. } => {
                let width = payload_width(self.operation(), &self.common).unwrap_or(0);
                n2.saturating_mul(width)
            }
            State::Start | State::Absorb { .. } | State::Done => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        matches!(self.state, State::Absorb { .. })
    }

    /// Evaluates the sender's items (S1) under our key.
    fn do_deferred_work(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        if let State::Absorb { server, ot, s1 } = std::mem::replace(&mut self.state, State::Done) {
            let absorbed = server
                .absorb_client_elements((s.meter, "S1: evaluating the sender's items"), &s1)?;
            self.state = State::AwaitS2 {
                server,
                ot,
                absorbed,
            };
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn status(&self) -> String {
        let n = self.common.input.ids.len();
        let n2 = self.common.peer_items();
        match &self.state {
            State::Start => "starting".into(),
            State::AwaitS1 { .. } => {
                format!("evaluated our {n} items; waiting for the sender's {n2} items")
            }
            State::Absorb { .. } => format!("evaluating the sender's {n2} items"),
            State::AwaitS2 { .. } => {
                "evaluated the sender's items; waiting for our set back".into()
            }
            State::AwaitS3 { .. } => "oblivious transfer: waiting for the payloads".into(),
            State::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}

/// Bytes the sender transfers per item for `op`, from what it announced and our own
/// set size.
fn payload_width(op: Operation, common: &Common) -> Result<usize, ProtocolError> {
    let n1 = common.input.ids.len() as u64;
    Ok(match op {
        Operation::Psi => transfer::tag_len(n1, common.peer_items()),
        Operation::Psu | Operation::PsiShare => {
            transfer::item_width(common.peer().max_item_len as usize)
        }
        Operation::PsiCardSum => common.sum_modulus()?.bytes(),
        Operation::PsiCard | Operation::PrivateId => 0,
    })
}
