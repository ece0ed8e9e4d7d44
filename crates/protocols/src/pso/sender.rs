//! The sender (P2) of the Fig. 7 operations: the mqRPMT client and the OT sender.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtSenderSetup};

use super::core::{Core, DeferredWork, Session, bad_ot, impl_pso_party};
use super::mqrpmt::{self, Client};
use super::transfer::{self, SumModulus, TAG_KEY};
use super::{Operation, PsoConfig, PsoRole, ShareRow, kind};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{HEADER_LEN, Reader};

/// Bytes of R3: the cardinality and the masked sum.
const R3_LEN: usize = 8 + 16;

/// The sender: holds `X` (and values for card-sum), shuffled on creation (Fig. 7 step 0)
/// so the receiver's indicator positions say nothing about the sender's input order.
pub struct Sender<C: CwPrf> {
    core: Core,
    state: State<C>,
}

enum State<C: CwPrf> {
    AwaitHello,
    AwaitR1 {
        session: Session,
        client: Client<C>,
    },
    AwaitR2 {
        session: Session,
        ot: OtSenderSetup,
    },
    AwaitR3 {
        session: Session,
        q: SumModulus,
        mask_sum: u128,
    },
    Done,
    Failed,
}

impl<C: CwPrf> Sender<C> {
    pub(crate) fn new(config: PsoConfig, input: Dataset, seed: [u8; 32]) -> Self {
        let mut core = Core::start(PsoRole::Sender, config, input, seed);
        let order = core.rng.permutation(core.input.ids.len());
        let input = &mut core.input;
        input.ids = order
            .iter()
            .map(|&i| std::mem::take(&mut input.ids[i as usize]))
            .collect();
        for column in &mut input.columns {
            *column = order.iter().map(|&i| column[i as usize]).collect();
        }
        Self {
            core,
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
                let client = Client::<C>::new(&mut self.core.rng);
                // Our evaluated items do not depend on the receiver's: send them first,
                // so both parties exponentiate at the same time.
                let own = client.evaluate_items(&session.dst, &self.core.input.ids);
                self.core.channel.push(kind::S1, &own);
                State::AwaitR1 { session, client }
            }
            State::AwaitR1 { session, client } => {
                let frame = self.core.open(message, kind::R1)?;
                let mut r = Reader::new(frame.body, "R1");
                let base_first = match self.core.config.uses_ot() {
                    true => Some(r.take(ot::BASE_FIRST_LEN)?),
                    false => None,
                };
                let n1 = session.peer.items as usize;
                let n2 = self.core.input.ids.len();
                let theirs = r.take(mqrpmt::packed_len::<C>(n1, "R1")?)?;
                r.finish()?;
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let set = client.encode_server_set(
                    theirs,
                    n2,
                    self.core.config.last_message,
                    &filter_key,
                    &mut self.core.rng,
                )?;
                let mut s2 = Vec::with_capacity(ot::BASE_REPLY_LEN + set.len());
                let ot = match base_first {
                    Some(first) => {
                        let (setup, reply) = OtSenderSetup::respond(
                            &mut self.core.rng,
                            &session.ctx.transcript,
                            first,
                        )
                        .map_err(bad_ot)?;
                        s2.extend_from_slice(&reply);
                        Some(setup)
                    }
                    None => None,
                };
                s2.extend_from_slice(&set);
                self.core.channel.push(kind::S2, &s2);
                match ot {
                    Some(ot) => State::AwaitR2 { session, ot },
                    None => {
                        let out = self.core.empty_output(session.peer.items);
                        self.core.finish(out);
                        State::Done
                    }
                }
            }
            State::AwaitR2 { session, ot } => {
                let frame = self.core.open(message, kind::R2)?;
                let keys = ot
                    .extend(frame.body, self.core.input.ids.len())
                    .map_err(bad_ot)?;
                let ids = &self.core.input.ids;
                let width = transfer::item_width(self.core.hello.max_item_len as usize);
                let mut out = self.core.empty_output(session.peer.items);
                let (payload, next) = match self.operation() {
                    Operation::Psi => {
                        let tag_key = session.ctx.derive_key(TAG_KEY);
                        let len = transfer::tag_len(session.peer.items, ids.len() as u64);
                        let payload = transfer::send_one_sided(&keys, true, len, |i| {
                            transfer::item_tag(&tag_key, &ids[i], len)
                        });
                        (payload, None)
                    }
                    Operation::Psu => {
                        let payload = transfer::send_one_sided(&keys, false, width, |i| {
                            transfer::encode_item(&ids[i], width)
                        });
                        (payload, None)
                    }
                    Operation::PsiShare => {
                        let (shares, payload) = transfer::send_shares(&keys, width, |i| {
                            transfer::encode_item(&ids[i], width)
                        });
                        out.shares = Some(
                            shares
                                .into_iter()
                                .enumerate()
                                .map(|(i, share)| ShareRow {
                                    index: i as u64,
                                    share,
                                })
                                .collect(),
                        );
                        (payload, None)
                    }
                    Operation::PsiCardSum => {
                        let q =
                            SumModulus::for_sender(ids.len() as u64, self.core.config.max_value)?;
                        let (mask_sum, payload) =
                            transfer::send_sum(&keys, q, &self.core.input.columns[0]);
                        (payload, Some((q, mask_sum)))
                    }
                    Operation::PsiCard | Operation::PrivateId => {
                        unreachable!("no transfer step in {}", self.operation().name())
                    }
                };
                self.core.channel.push(kind::S3, &payload);
                match next {
                    Some((q, mask_sum)) => State::AwaitR3 {
                        session,
                        q,
                        mask_sum,
                    },
                    None => {
                        self.core.finish(out);
                        State::Done
                    }
                }
            }
            State::AwaitR3 {
                session,
                q,
                mask_sum,
            } => {
                let frame = self.core.open(message, kind::R3)?;
                let mut r = Reader::new(frame.body, "R3");
                let cardinality = r.u64()?;
                let masked = r.u128()?;
                r.finish()?;
                let n2 = self.core.input.ids.len() as u64;
                let sum = q.reduce(masked.wrapping_sub(mask_sum));
                if cardinality > n2 || masked != q.reduce(masked) {
                    return Err(PeerMisbehaved::Inconsistent(format!(
                        "R3 announces {cardinality} matches of our {n2} items or an unreduced sum"
                    ))
                    .into());
                }
                if sum > cardinality as u128 * self.core.config.max_value as u128 {
                    // The message reaches the peer as an alert: it must not carry the sum
                    // (the receiver could unmask it from a forged S').
                    return Err(PeerMisbehaved::Inconsistent(format!(
                        "R3: the masked sum is impossible for {cardinality} values of at most {}",
                        self.core.config.max_value
                    ))
                    .into());
                }
                let mut out = self.core.empty_output(session.peer.items);
                out.cardinality = Some(cardinality);
                out.sum = Some(sum);
                self.core.finish(out);
                State::Done
            }
            State::Done | State::Failed => {
                return Err(ProtocolError::ApiMisuse("message after the end of the run"));
            }
        };
        Ok(())
    }

    fn max_len(&self) -> usize {
        match &self.state {
            State::AwaitHello => super::hello::MAX_LEN,
            State::AwaitR1 { session, .. } => {
                let base = if self.core.config.uses_ot() {
                    ot::BASE_FIRST_LEN
                } else {
                    0
                };
                HEADER_LEN
                    .saturating_add(base)
                    .saturating_add((session.peer.items as usize).saturating_mul(C::ELEMENT_LEN))
            }
            State::AwaitR2 { .. } => {
                HEADER_LEN.saturating_add(ot::extension_message_len(self.core.input.ids.len()))
            }
            State::AwaitR3 { .. } => HEADER_LEN + R3_LEN,
            State::Done | State::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            State::AwaitHello => "waiting for the receiver's hello".into(),
            State::AwaitR1 { session, .. } => format!(
                "waiting for the receiver's {} evaluated items",
                session.peer.items
            ),
            State::AwaitR2 { .. } => "sent the evaluated sets; waiting for the OT extension".into(),
            State::AwaitR3 { .. } => "sent the payloads; waiting for the masked sum".into(),
            State::Done => "done".into(),
            State::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Sender<C> {}
impl_pso_party!(Sender);
