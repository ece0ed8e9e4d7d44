//! The receiver (P1) of the Fig. 7 operations: the mqRPMT server and the OT receiver.

use std::collections::{HashMap, HashSet};

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtReceiverKeys, OtReceiverSetup};

use super::core::{Core, DeferredWork, Session, bad_ot, impl_pso_party};
use super::mqrpmt::{self, Server};
use super::transfer::{self, SumModulus, TAG_KEY};
use super::{LastMessage, Operation, PsoConfig, PsoRole, ShareRow, kind};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{HEADER_LEN, Reader};

/// The receiver: holds `Y`; learns the operation's output.
pub struct Receiver<C: CwPrf> {
    core: Core,
    state: State<C>,
}

enum State<C: CwPrf> {
    AwaitHello,
    AwaitS1 {
        session: Session,
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
        session: Session,
        server: Server<C>,
        ot: Option<OtReceiverSetup>,
        s1: Vec<u8>,
    },
    AwaitS2 {
        session: Session,
        server: Server<C>,
        ot: Option<OtReceiverSetup>,
        absorbed: Vec<u8>,
    },
    AwaitS3 {
        session: Session,
        keys: OtReceiverKeys,
    },
    Done,
    Failed,
}

impl<C: CwPrf> Receiver<C> {
    pub(crate) fn new(config: PsoConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: Core::start(PsoRole::Receiver, config, input, seed),
            state: State::AwaitHello,
        }
    }

    fn operation(&self) -> Operation {
        self.core.config.operation
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, State::Failed) {
            State::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let session = self.core.on_hello::<C>(frame.body)?;
                if self.operation() == Operation::PsiCardSum {
                    sum_modulus(&session)?;
                }
                let server = Server::<C>::new(self.core.config.construction, &mut self.core.rng);
                let mut r1 = Vec::new();
                let ot = self.core.config.uses_ot().then(|| {
                    let (setup, first) =
                        OtReceiverSetup::new(&mut self.core.rng, &session.ctx.transcript);
                    r1.extend_from_slice(&first);
                    setup
                });
                r1.extend_from_slice(&server.evaluate_items(&session.dst, &self.core.input.ids));
                State::AwaitS1 {
                    session,
                    server,
                    ot,
                    r1,
                }
            }
            State::AwaitS1 {
                session,
                server,
                ot,
                r1,
            } => {
                // Both parties computed their first message at the same time; the
                // sender's arrives first, then ours leaves, then we evaluate the
                // sender's items while it evaluates ours.
                let frame = self.core.open(message, kind::S1)?;
                let n2 = session.peer.items as usize;
                let expected = mqrpmt::packed_len::<C>(n2, "S1")?;
                crate::wire::expect_len("S1", frame.body, expected)?;
                self.core.channel.push(kind::R1, &r1);
                State::Absorb {
                    session,
                    server,
                    ot,
                    s1: frame.body.to_vec(),
                }
            }
            State::AwaitS2 {
                session,
                server,
                ot,
                absorbed,
            } => {
                let frame = self.core.open(message, kind::S2)?;
                let mut r = Reader::new(frame.body, "S2");
                let base_reply = match ot {
                    Some(_) => Some(r.take(ot::BASE_REPLY_LEN)?),
                    None => None,
                };
                let n1 = self.core.input.ids.len();
                let n2 = session.peer.items as usize;
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                if self.core.config.last_message == LastMessage::Ordered {
                    // psi as DH-PSI: the bits are for our own items; no OT follows.
                    let mine = server.own_indicator(&absorbed, &mut r, n1, n2, &filter_key)?;
                    r.finish()?;
                    let ids = &self.core.input.ids;
                    let found: Vec<Vec<u8>> = ids
                        .iter()
                        .zip(&mine)
                        .filter(|(_, hit)| **hit)
                        .map(|(y, _)| y.clone())
                        .collect();
                    let mut out = self.core.empty_output(session.peer.items);
                    out.cardinality = Some(found.len() as u64);
                    out.items = Some(found);
                    self.core.finish(out);
                    self.state = State::Done;
                    return Ok(());
                }
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.core.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                match (ot, base_reply) {
                    (Some(setup), Some(reply)) => {
                        let (keys, extension) = setup.extend(reply, &e).map_err(bad_ot)?;
                        self.core.channel.push(kind::R2, &extension);
                        State::AwaitS3 { session, keys }
                    }
                    _ => {
                        let mut out = self.core.empty_output(session.peer.items);
                        out.cardinality = Some(e.iter().filter(|&&b| b).count() as u64);
                        self.core.finish(out);
                        State::Done
                    }
                }
            }
            State::AwaitS3 { session, keys } => {
                let frame = self.core.open(message, kind::S3)?;
                let n2 = session.peer.items as usize;
                let width = payload_width(self.operation(), &session, self.core.input.ids.len())?;
                let expected = n2.saturating_mul(width);
                crate::wire::expect_len("S3", frame.body, expected)?;
                let out = self.finish_transfer(&session, &keys, width, frame.body)?;
                self.core.finish(out);
                State::Done
            }
            State::Absorb { .. } => {
                return Err(ProtocolError::ApiMisuse(
                    "message before the deferred work was done",
                ));
            }
            State::Done | State::Failed => {
                return Err(ProtocolError::ApiMisuse("message after the end of the run"));
            }
        };
        Ok(())
    }

    /// Reads the OT payloads into the operation's output (card-sum: also queues R3).
    fn finish_transfer(
        &mut self,
        session: &Session,
        keys: &OtReceiverKeys,
        width: usize,
        payload: &[u8],
    ) -> Result<super::PsoOutput, ProtocolError> {
        let mut out = self.core.empty_output(session.peer.items);
        let cardinality = (0..keys.len()).filter(|&i| keys.choice(i)).count() as u64;
        let ids = &self.core.input.ids;
        match self.operation() {
            Operation::Psi => {
                let tag_key = session.ctx.derive_key(TAG_KEY);
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
                out.cardinality = Some(found.len() as u64);
                out.items = Some(found.into_iter().map(|j| ids[j].clone()).collect());
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
                out.items = Some(union);
            }
            Operation::PsiShare => {
                out.cardinality = Some(cardinality);
                out.shares = Some(
                    transfer::receive_shares(keys, width, payload)
                        .into_iter()
                        .map(|(i, share)| ShareRow {
                            index: i as u64,
                            share,
                        })
                        .collect(),
                );
            }
            Operation::PsiCardSum => {
                let q = sum_modulus(session)?;
                let masked = transfer::receive_sum(keys, q, payload)?;
                let mut r3 = Vec::with_capacity(24);
                r3.extend_from_slice(&cardinality.to_be_bytes());
                r3.extend_from_slice(&masked.to_be_bytes());
                self.core.channel.push(kind::R3, &r3);
                out.cardinality = Some(cardinality);
            }
            Operation::PsiCard | Operation::PrivateId => {
                unreachable!("no transfer step in {}", self.operation().name())
            }
        }
        Ok(out)
    }

    fn max_len(&self) -> usize {
        match &self.state {
            State::AwaitHello => super::hello::MAX_LEN,
            State::Absorb { .. } => 0,
            State::AwaitS1 { session, .. } => HEADER_LEN
                .saturating_add((session.peer.items as usize).saturating_mul(C::ELEMENT_LEN)),
            State::AwaitS2 { session, ot, .. } => {
                let base = if ot.is_some() { ot::BASE_REPLY_LEN } else { 0 };
                HEADER_LEN
                    .saturating_add(base)
                    .saturating_add(mqrpmt::set_max_len::<C>(
                        self.core.config.last_message,
                        self.core.input.ids.len(),
                        session.peer.items as usize,
                    ))
            }
            State::AwaitS3 { session, .. } => {
                let width = payload_width(self.operation(), session, self.core.input.ids.len())
                    .unwrap_or(0);
                HEADER_LEN.saturating_add((session.peer.items as usize).saturating_mul(width))
            }
            State::Done | State::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        let n = self.core.input.ids.len();
        match &self.state {
            State::AwaitHello => "waiting for the sender's hello".into(),
            State::AwaitS1 { session, .. } => format!(
                "evaluated our {n} items; waiting for the sender's {} items",
                session.peer.items
            ),
            State::Absorb { session, .. } => {
                format!("evaluating the sender's {} items", session.peer.items)
            }
            State::AwaitS2 { .. } => {
                "evaluated the sender's items; waiting for our set back".into()
            }
            State::AwaitS3 { .. } => "oblivious transfer: waiting for the payloads".into(),
            State::Done => "done".into(),
            State::Failed => "failed".into(),
        }
    }
}

/// Bytes the sender transfers per item for `op`, from what it announced and our own
/// set size `n1`.
fn payload_width(op: Operation, session: &Session, n1: usize) -> Result<usize, ProtocolError> {
    Ok(match op {
        Operation::Psi => transfer::tag_len(n1 as u64, session.peer.items),
        Operation::Psu | Operation::PsiShare => {
            transfer::item_width(session.peer.max_item_len as usize)
        }
        Operation::PsiCardSum => sum_modulus(session)?.bytes(),
        Operation::PsiCard | Operation::PrivateId => 0,
    })
}

fn sum_modulus(session: &Session) -> Result<SumModulus, ProtocolError> {
    SumModulus::new(session.peer.items, session.peer.max_value).ok_or_else(|| {
        PeerMisbehaved::Malformed("announced value bound and set size overflow 2^127".into()).into()
    })
}

impl<C: CwPrf> DeferredWork for Receiver<C> {
    fn has_work(&self) -> bool {
        matches!(self.state, State::Absorb { .. })
    }

    /// Evaluates the sender's items (S1) under our key.
    fn work(&mut self) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, State::Failed) {
            State::Absorb {
                session,
                server,
                ot,
                s1,
            } => {
                let absorbed = server.absorb_client_elements(&s1)?;
                State::AwaitS2 {
                    session,
                    server,
                    ot,
                    absorbed,
                }
            }
            other => other,
        };
        Ok(())
    }
}

impl_pso_party!(Receiver);
