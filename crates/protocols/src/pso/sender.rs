//! The sender (P2) of the Fig. 7 operations: the mqRPMT client and the OT sender.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtSenderSetup};

use super::core::{Common, RECEIVER, bad_ot, no_message_now};
use super::mqrpmt::{self, Client};
use super::transfer::{self, SumModulus, TAG_KEY};
use super::{Operation, PsoOutput, ShareRow, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{PartyId, Reader};

/// Bytes of R3: the cardinality and the masked sum.
const R3_LEN: usize = 8 + 16;

/// The sender: holds `X` (and values for card-sum), shuffled once the session starts
/// (Fig. 7 step 0) so the receiver's indicator positions say nothing about the sender's
/// input order.
pub struct Sender<C: CwPrf> {
    common: Common,
    state: State<C>,
    output: Option<PsoOutput>,
}

enum State<C: CwPrf> {
    /// Before the session is established.
    Start,
    AwaitR1 {
        client: Client<C>,
    },
    AwaitR2 {
        ot: OtSenderSetup,
    },
    AwaitR3 {
        q: SumModulus,
        mask_sum: u128,
    },
    Done,
}

impl<C: CwPrf> Sender<C> {
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

    /// Fig. 7 step 0: shuffles the items (and values) under the session's randomness.
    fn shuffle(&mut self, s: &mut Session<'_>) {
        let input = &mut self.common.input;
        let order = s.rng.permutation(input.ids.len());
        input.ids = order
            .iter()
            .map(|&i| std::mem::take(&mut input.ids[i as usize]))
            .collect();
        for column in &mut input.columns {
            *column = order.iter().map(|&i| column[i as usize]).collect();
        }
    }

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<State<C>, ProtocolError> {
        let peer_items = self.common.peer_items();
        Ok(match std::mem::replace(&mut self.state, State::Done) {
            State::AwaitR1 { client } => {
                let mut r = Reader::new(message.expect(kind::R1)?, "R1");
                let base_first = match self.common.config.uses_ot() {
                    true => Some(r.take(ot::BASE_FIRST_LEN)?),
                    false => None,
                };
                let n1 = peer_items as usize;
                let n2 = self.common.input.ids.len();
                let theirs = r.take(mqrpmt::packed_len::<C>(n1, "R1")?)?;
                r.finish()?;
                let filter_key = s.ctx.derive_key(mqrpmt::FILTER_KEY);
                let set = client.encode_server_set(
                    (s.meter, "S2: evaluating the receiver's items"),
                    theirs,
                    n2,
                    self.common.config.last_message,
                    &filter_key,
                    s.rng,
                )?;
                let mut s2 = Vec::with_capacity(ot::BASE_REPLY_LEN + set.len());
                let ot = match base_first {
                    Some(first) => {
                        let (setup, reply) =
                            OtSenderSetup::respond(s.rng, &s.ctx.transcript, first)
                                .map_err(bad_ot)?;
                        s2.extend_from_slice(&reply);
                        Some(setup)
                    }
                    None => None,
                };
                s2.extend_from_slice(&set);
                s.send(RECEIVER, kind::S2, &s2);
                match ot {
                    Some(ot) => State::AwaitR2 { ot },
                    None => self.finish(PsoOutput::PeerSize { peer_items }),
                }
            }
            State::AwaitR2 { ot } => {
                let keys = ot
                    .extend(message.expect(kind::R2)?, self.common.input.ids.len())
                    .map_err(bad_ot)?;
                let ids = &self.common.input.ids;
                let width = transfer::item_width(self.common.hello.max_item_len as usize);
                let (payload, next) = match self.operation() {
                    Operation::Psi => {
                        let tag_key = s.ctx.derive_key(TAG_KEY);
                        let len = transfer::tag_len(peer_items, ids.len() as u64);
                        let payload = transfer::send_one_sided(&keys, true, len, |i| {
                            transfer::item_tag(&tag_key, &ids[i], len)
                        });
                        (payload, Err(PsoOutput::PeerSize { peer_items }))
                    }
                    Operation::Psu => {
                        let payload = transfer::send_one_sided(&keys, false, width, |i| {
                            transfer::encode_item(&ids[i], width)
                        });
                        (payload, Err(PsoOutput::PeerSize { peer_items }))
                    }
                    Operation::PsiShare => {
                        let (shares, payload) = transfer::send_shares(&keys, width, |i| {
                            transfer::encode_item(&ids[i], width)
                        });
                        let rows = shares
                            .into_iter()
                            .enumerate()
                            .map(|(i, share)| ShareRow {
                                index: i as u64,
                                share,
                            })
                            .collect();
                        (payload, Err(PsoOutput::SenderShares { rows, peer_items }))
                    }
                    Operation::PsiCardSum => {
                        let q =
                            SumModulus::for_sender(ids.len() as u64, self.common.config.max_value)?;
                        let (mask_sum, payload) =
                            transfer::send_sum(&keys, q, &self.common.input.columns[0]);
                        (payload, Ok(State::AwaitR3 { q, mask_sum }))
                    }
                    // psi-card ends at S2 (no OT); private-id is a party of its own.
                    Operation::PsiCard | Operation::PrivateId => {
                        return Err(ProtocolError::ApiMisuse(
                            "psi-card and private-id have no transfer step",
                        ));
                    }
                };
                s.send(RECEIVER, kind::S3, &payload);
                match next {
                    Ok(state) => state,
                    Err(output) => self.finish(output),
                }
            }
            State::AwaitR3 { q, mask_sum } => {
                let mut r = Reader::new(message.expect(kind::R3)?, "R3");
                let cardinality = r.u64()?;
                let masked = r.u128()?;
                r.finish()?;
                let n2 = self.common.input.ids.len() as u64;
                let sum = q.reduce(masked.wrapping_sub(mask_sum));
                if cardinality > n2 || masked != q.reduce(masked) {
                    return Err(PeerMisbehaved::Inconsistent(format!(
                        "R3 announces {cardinality} matches of our {n2} items or an unreduced sum"
                    ))
                    .into());
                }
                if sum > cardinality as u128 * self.common.config.max_value as u128 {
                    // The message reaches the peer as an alert: it must not carry the sum
                    // (the receiver could unmask it from a forged S').
                    return Err(PeerMisbehaved::Inconsistent(format!(
                        "R3: the masked sum is impossible for {cardinality} values of at most {}",
                        self.common.config.max_value
                    ))
                    .into());
                }
                self.finish(PsoOutput::CardinalitySum {
                    cardinality,
                    sum,
                    peer_items,
                })
            }
            State::Start | State::Done => return Err(no_message_now()),
        })
    }
}

impl<C: CwPrf> Protocol for Sender<C> {
    type Output = PsoOutput;

    type Handshake = Common;

    fn handshake(&mut self) -> &mut Common {
        &mut self.common
    }

    /// Our evaluated items do not depend on the receiver's: S1 leaves first, so both
    /// parties exponentiate at the same time.
    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.common.start::<C>(s.ctx);
        self.shuffle(s);
        let client = Client::<C>::new(s.rng);
        let own = client.evaluate_items(
            (s.meter, "S1: hashing and evaluating our items"),
            self.common.dst(),
            &self.common.input.ids,
        );
        s.send(RECEIVER, kind::S1, &own);
        self.state = State::AwaitR1 { client };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            State::AwaitR1 { .. } | State::AwaitR2 { .. } | State::AwaitR3 { .. } => Some(RECEIVER),
            State::Start | State::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let n2 = self.common.input.ids.len();
        match &self.state {
            State::AwaitR1 { .. } => {
                let base = if self.common.config.uses_ot() {
                    ot::BASE_FIRST_LEN
                } else {
                    0
                };
                base.saturating_add(
                    (self.common.peer_items() as usize).saturating_mul(C::ELEMENT_LEN),
                )
            }
            State::AwaitR2 { .. } => ot::extension_message_len(n2),
            State::AwaitR3 { .. } => R3_LEN,
            State::Start | State::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn status(&self) -> String {
        match &self.state {
            State::Start => "starting".into(),
            State::AwaitR1 { .. } => format!(
                "waiting for the receiver's {} evaluated items",
                self.common.peer_items()
            ),
            State::AwaitR2 { .. } => "sent the evaluated sets; waiting for the OT extension".into(),
            State::AwaitR3 { .. } => "sent the payloads; waiting for the masked sum".into(),
            State::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}
