//! Private-ID (Chen et al. 2024, Sec. 6.2, Fig. 8): a distributed OPRF gives every item the
//! identifier `G_{k1,k2}(z) = Hash(H(z)^(k1 k2))`, and a PSU of the two sets gives the
//! receiver the union's identifiers, which it sends to the sender. Each party ends with
//! an identifier for each of its own items and the sorted identifiers of `X ∪ Y`;
//! identical items get identical identifiers, and nothing else is revealed (neither
//! learns which of its items the other holds).
//!
//! The distributed OPRF: each party asks the other to raise its *blinded* hashes to the
//! other's key share, and removes the blind itself, so the evaluator never sees a result.
//! The PSU is the cwPRF mqRPMT of Fig. 3 whose keys are the two blinds: its first
//! messages *are* the OPRF requests (the receiver's `H(x)^b1`, the sender's shuffled
//! `H(y)^b2`), so the PSU adds only the sender's set `{H(x)^(b1 b2)}` and the OT.
//!
//! ```text
//! receiver (X, share k1, blind b1)                 sender (Y shuffled, share k2, blind b2)
//!  (computes H(x)^b1)                               (computes H(y)^b2 meanwhile)
//!                                     <------------ S1: H(y)^b2, shuffled order
//!  R1: H(x)^b1 ------------------------------------>
//!  (S1^k1, meanwhile)                                S2: H(x)^(b1 k2)
//!                                     <------------
//!  R2: [OT base A], H(y)^(b2 k1) ------------------>
//!  (ID(x) = S2^(k1/b1),                              (the set {H(x)^(b1 b2)}, then
//!   S1^b1 = H(y)^(b2 b1), meanwhile)                  ID(y) = R2^(k2/b2), meanwhile)
//!                                     <------------ S3: [OT base reply], the set (list or filter)
//!  e_j = [H(y_j)^(b2 b1) in the set]
//!  R3: OT extension on e -------------------------->
//!                                     <------------ S4: Hash(ID(y_j)) one-sided to e_j = 0
//!  R4: sorted union of identifiers ---------------->
//! ```
//!
//! Eight exponentiations per pair of items, four per party, the two parties' running
//! side by side in every phase (the parentheses), so a run takes about the time of four.
//! Large messages alternate: R1 waits for S1, R2 for S2, and S3 for R2, so blocking
//! transports cannot deadlock.
//!
//! Why the fusion is sound (semi-honest, DDH, random oracle): with `b1` and `b2` as its
//! keys, S1, R1 and S3 are exactly a Fig. 3 mqRPMT run in which the receiver is the
//! server; R2 and S2 add each party's OPRF answers under a key share independent of the
//! blinds. The sender's view is R1, R2 and OT messages; the receiver's is S1, S2, S3 and
//! the OT payload of the identifiers it is entitled to. A party that separately ran the
//! paper's dOPRF and then the mqRPMT on the identifier elements would see the same
//! messages plus one more list of `n` PSU elements.
//!
//! Removing a blind needs the key `k / b` ([`CwPrf::unblinding_key`]): every prime-order
//! group has it, and X25519 for about half of all blinds, so a party draws its blind
//! until it has one. The paper's dOPRF is VOLE-based (symmetric-key); docs/pso/private-id.md
//! compares.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtReceiverKeys, OtReceiverSetup, OtSenderSetup};
use privset_crypto::rng::SessionRng;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::core::{Common, RECEIVER, SENDER, bad_ot, no_message_now};
use super::mqrpmt::{self, Client, Server};
use super::transfer;
use super::{Construction, PrivateIdTable, PsoOutput, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{PartyId, Reader};

/// Bytes of a private identifier.
pub const ID_LEN: usize = 16;

/// An identifier: a hash of the identifier element (the PRF output `H(z)^(k1 k2)`).
pub fn identifier(element: &[u8]) -> [u8; ID_LEN] {
    let mut h = Sha256::new();
    h.update(b"privset/v1/private-id/");
    h.update(element);
    let mut id = [0u8; ID_LEN];
    id.copy_from_slice(&h.finalize()[..ID_LEN]);
    id
}

/// The identifier of each packed identifier element.
pub fn identifiers<C: CwPrf>(packed: &[u8]) -> Vec<[u8; ID_LEN]> {
    packed
        .chunks_exact(C::ELEMENT_LEN)
        .map(identifier)
        .collect()
}

/// Blinds drawn before giving up on finding one with an unblinding key: X25519 finds one
/// for about half of all blinds (a failure here has probability about 2^-128).
const BLIND_DRAWS: usize = 128;

/// Secret keys of one private-ID party: its OPRF key share and its blind, which is also
/// its mqRPMT key, with the key that removes the blind and applies the share. A bucketed
/// job draws them from its job secret (`privset_run::buckets::value`).
pub struct Keys<C: CwPrf> {
    pub prf: Zeroizing<C::Key>,
    pub blind: Zeroizing<C::Key>,
    /// `F_unblind(F_blind(z)) = F_prf(z)`: turns `H(z)^(blind * k_other)` into the
    /// identifier element `H(z)^(k1 k2)` in one evaluation.
    pub unblind: Zeroizing<C::Key>,
}

impl<C: CwPrf> Keys<C> {
    pub fn new(rng: &mut SessionRng) -> Result<Self, ProtocolError> {
        let prf = Zeroizing::new(C::random_key(rng));
        for _ in 0..BLIND_DRAWS {
            let blind = Zeroizing::new(C::random_key(rng));
            if let Some(unblind) = C::unblinding_key(&blind, &prf) {
                return Ok(Self {
                    prf,
                    blind,
                    unblind: Zeroizing::new(unblind),
                });
            }
        }
        Err(ProtocolError::Config(format!(
            "private-id: no blind of {} has an unblinding key ({BLIND_DRAWS} draws)",
            C::ID.name()
        )))
    }
}

/// The private-ID receiver: the mqRPMT server of the PSU; sends the union back.
pub struct Receiver<C: CwPrf> {
    common: Common,
    state: State<C>,
    output: Option<PsoOutput>,
}

enum State<C: CwPrf> {
    /// Before the session is established.
    Start,
    /// R1 computed, held back until S1 has arrived: the two first large messages never
    /// travel at the same time (blocking transports cannot deadlock).
    AwaitS1 {
        keys: Keys<C>,
        r1: Vec<u8>,
    },
    /// R1 sent; answering the sender's requests (S1) is deferred work, done while the
    /// sender answers R1.
    Answer {
        keys: Keys<C>,
        requests: Vec<u8>,
    },
    AwaitS2 {
        keys: Keys<C>,
        requests: Vec<u8>,
        answers: Vec<u8>,
    },
    /// R2 sent; unblinding our identifiers and re-evaluating the sender's PSU elements
    /// are deferred work, done while the sender encodes its set and unblinds its own.
    Identify {
        keys: Keys<C>,
        ot: Box<OtReceiverSetup>,
        requests: Vec<u8>,
        answered: Vec<u8>,
    },
    AwaitS3 {
        server: Server<C>,
        ot: Box<OtReceiverSetup>,
        absorbed: Vec<u8>,
        own: Vec<[u8; ID_LEN]>,
    },
    AwaitS4 {
        ot_keys: OtReceiverKeys,
        own: Vec<[u8; ID_LEN]>,
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

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<State<C>, ProtocolError> {
        let n1 = self.common.input.ids.len();
        let n2 = self.common.peer_items() as usize;
        Ok(match std::mem::replace(&mut self.state, State::Done) {
            State::AwaitS1 { keys, r1 } => {
                let requests = message.expect(kind::S1)?;
                crate::wire::expect_len("S1", requests, mqrpmt::packed_len::<C>(n2, "S1")?)?;
                s.send(SENDER, kind::R1, &r1);
                State::Answer {
                    keys,
                    requests: requests.to_vec(),
                }
            }
            State::AwaitS2 {
                keys,
                requests,
                answers,
            } => {
                let answered = message.expect(kind::S2)?;
                crate::wire::expect_len("S2", answered, mqrpmt::packed_len::<C>(n1, "S2")?)?;
                let (ot, first) = OtReceiverSetup::new(s.rng, &s.ctx.transcript);
                let mut r2 = Vec::with_capacity(first.len() + answers.len());
                r2.extend_from_slice(&first);
                r2.extend_from_slice(&answers);
                s.send(SENDER, kind::R2, &r2);
                State::Identify {
                    keys,
                    ot: Box::new(ot),
                    requests,
                    answered: answered.to_vec(),
                }
            }
            State::AwaitS3 {
                server,
                ot,
                absorbed,
                own,
            } => {
                let filter_key = s.ctx.derive_key(mqrpmt::FILTER_KEY);
                let mut r = Reader::new(message.expect(kind::S3)?, "S3");
                let ot_reply = r.take(ot::BASE_REPLY_LEN)?;
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.common.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                let (ot_keys, extension) = ot.extend(ot_reply, &e).map_err(bad_ot)?;
                s.send(SENDER, kind::R3, &extension);
                State::AwaitS4 { ot_keys, own }
            }
            State::AwaitS4 { ot_keys, own } => {
                let transferred = message.expect(kind::S4)?;
                crate::wire::expect_len("S4", transferred, n2.saturating_mul(ID_LEN))?;
                let mut union = own.clone();
                for (_, id) in transfer::receive_one_sided(&ot_keys, false, ID_LEN, transferred) {
                    union.push(id.try_into().expect("ID_LEN-byte slots"));
                }
                union.sort_unstable();
                union.dedup();
                s.send(SENDER, kind::R4, union.as_flattened());
                self.output = Some(PsoOutput::PrivateId {
                    table: PrivateIdTable { own, union },
                    peer_items: n2 as u64,
                });
                State::Done
            }
            State::Start | State::Answer { .. } | State::Identify { .. } | State::Done => {
                return Err(no_message_now());
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

    /// Blinds our items (the OPRF requests, also the PSU's first message) while the
    /// sender blinds its own.
    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.common.start::<C>(s.ctx);
        let keys = Keys::<C>::new(s.rng)?;
        let r1 = mqrpmt::hash_eval::<C, _>(
            (s.meter, "R1: blinding our items"),
            self.common.dst(),
            &self.common.input.ids,
            &keys.blind,
        );
        self.state = State::AwaitS1 { keys, r1 };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            State::AwaitS1 { .. }
            | State::AwaitS2 { .. }
            | State::AwaitS3 { .. }
            | State::AwaitS4 { .. } => Some(SENDER),
            State::Start | State::Answer { .. } | State::Identify { .. } | State::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let n1 = self.common.input.ids.len();
        let n2 = self.common.peer_items() as usize;
        let elements = |n: usize| n.saturating_mul(C::ELEMENT_LEN);
        match &self.state {
            State::AwaitS1 { .. } => elements(n2),
            State::AwaitS2 { .. } => elements(n1),
            State::AwaitS3 { .. } => ot::BASE_REPLY_LEN.saturating_add(mqrpmt::set_max_len::<C>(
                self.common.config.last_message,
                n1,
                n2,
            )),
            State::AwaitS4 { .. } => n2.saturating_mul(ID_LEN),
            State::Start | State::Answer { .. } | State::Identify { .. } | State::Done => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        matches!(self.state, State::Answer { .. } | State::Identify { .. })
    }

    fn do_deferred_work(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, State::Done) {
            State::Answer { keys, requests } => {
                let answers = mqrpmt::eval::<C>(
                    (s.meter, "S1: answering the sender's requests"),
                    &requests,
                    &keys.prf,
                    "S1",
                )?;
                State::AwaitS2 {
                    keys,
                    requests,
                    answers,
                }
            }
            State::Identify {
                keys,
                ot,
                requests,
                answered,
            } => {
                let own = identifiers::<C>(&mqrpmt::eval::<C>(
                    (s.meter, "S2: unblinding our identifiers"),
                    &answered,
                    &keys.unblind,
                    "S2",
                )?);
                // S1 was checked when it was answered: this cannot fail.
                let server = Server::<C>::with_key(Construction::Cwprf, keys.blind);
                let absorbed = server.absorb_client_elements(
                    (s.meter, "S1: evaluating the sender's items"),
                    &requests,
                )?;
                State::AwaitS3 {
                    server,
                    ot,
                    absorbed,
                    own,
                }
            }
            other => other,
        };
        Ok(())
    }

    fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn status(&self) -> String {
        match &self.state {
            State::Start => "starting".into(),
            State::AwaitS1 { .. } => "distributed OPRF: waiting for the sender's requests".into(),
            State::Answer { .. } => "distributed OPRF: answering the sender's requests".into(),
            State::AwaitS2 { .. } => "distributed OPRF: waiting for the sender's answers".into(),
            State::Identify { .. } => {
                "unblinding our identifiers, evaluating the sender's PSU elements".into()
            }
            State::AwaitS3 { .. } => "PSU: waiting for the sender's set".into(),
            State::AwaitS4 { .. } => "PSU: waiting for the transferred identifiers".into(),
            State::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}

/// The private-ID sender: the mqRPMT client of the PSU and the OT sender; receives the
/// union.
pub struct Sender<C: CwPrf> {
    common: Common,
    state: SenderState<C>,
    output: Option<PsoOutput>,
}

enum SenderState<C: CwPrf> {
    /// Before the session is established.
    Start,
    AwaitR1 {
        keys: Keys<C>,
        /// The order S1 was sent in, which the receiver's answers and the OT follow.
        order: Vec<u32>,
    },
    /// S2 sent; encoding the receiver's requests into the PSU set is deferred work, done
    /// while the receiver answers S1.
    Encode {
        keys: Keys<C>,
        order: Vec<u32>,
        requests: Vec<u8>,
    },
    /// The set computed, held back until R2 has arrived (the receiver sends R2 as soon
    /// as S2 arrives: both sending at once could deadlock a blocking transport).
    AwaitR2 {
        keys: Keys<C>,
        order: Vec<u32>,
        set: Vec<u8>,
    },
    /// S3 sent; unblinding our identifiers is deferred work, done while the receiver
    /// tests its PSU elements against the set.
    Identify {
        unblind: Zeroizing<C::Key>,
        ot: OtSenderSetup,
        order: Vec<u32>,
        answered: Vec<u8>,
    },
    AwaitR3 {
        ot: OtSenderSetup,
        order: Vec<u32>,
        /// This party's identifiers, in input order.
        own: Vec<[u8; ID_LEN]>,
    },
    AwaitR4 {
        own: Vec<[u8; ID_LEN]>,
    },
    Done,
}

impl<C: CwPrf> Sender<C> {
    pub(crate) fn new(common: Common) -> Self {
        Self {
            common,
            state: SenderState::Start,
            output: None,
        }
    }

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<SenderState<C>, ProtocolError> {
        let n1 = self.common.peer_items() as usize;
        let n2 = self.common.input.ids.len();
        Ok(
            match std::mem::replace(&mut self.state, SenderState::Done) {
                SenderState::AwaitR1 { keys, order } => {
                    let requests = message.expect(kind::R1)?;
                    crate::wire::expect_len("R1", requests, mqrpmt::packed_len::<C>(n1, "R1")?)?;
                    let s2 = mqrpmt::eval::<C>(
                        (s.meter, "R1: answering the receiver's requests"),
                        requests,
                        &keys.prf,
                        "R1",
                    )?;
                    s.send(RECEIVER, kind::S2, &s2);
                    SenderState::Encode {
                        keys,
                        order,
                        requests: requests.to_vec(),
                    }
                }
                SenderState::AwaitR2 { keys, order, set } => {
                    let mut r = Reader::new(message.expect(kind::R2)?, "R2");
                    let first = r.take(ot::BASE_FIRST_LEN)?;
                    let answered = r.take(mqrpmt::packed_len::<C>(n2, "R2 answers")?)?;
                    r.finish()?;
                    let (ot, reply) =
                        OtSenderSetup::respond(s.rng, &s.ctx.transcript, first).map_err(bad_ot)?;
                    let mut s3 = Vec::with_capacity(reply.len() + set.len());
                    s3.extend_from_slice(&reply);
                    s3.extend_from_slice(&set);
                    s.send(RECEIVER, kind::S3, &s3);
                    SenderState::Identify {
                        unblind: keys.unblind,
                        ot,
                        order,
                        answered: answered.to_vec(),
                    }
                }
                SenderState::AwaitR3 { ot, order, own } => {
                    let ot_keys = ot.extend(message.expect(kind::R3)?, n2).map_err(bad_ot)?;
                    let s4 = transfer::send_one_sided(&ot_keys, false, ID_LEN, |j| {
                        own[order[j] as usize].to_vec()
                    });
                    s.send(RECEIVER, kind::S4, &s4);
                    SenderState::AwaitR4 { own }
                }
                SenderState::AwaitR4 { own } => {
                    let union = read_union(message.expect(kind::R4)?, n1.saturating_add(n2), &own)?;
                    self.output = Some(PsoOutput::PrivateId {
                        table: PrivateIdTable { own, union },
                        peer_items: n1 as u64,
                    });
                    SenderState::Done
                }
                SenderState::Start
                | SenderState::Encode { .. }
                | SenderState::Identify { .. }
                | SenderState::Done => return Err(no_message_now()),
            },
        )
    }
}

impl<C: CwPrf> Protocol for Sender<C> {
    type Output = PsoOutput;

    type Handshake = Common;

    fn handshake(&mut self) -> &mut Common {
        &mut self.common
    }

    /// Blinds our items in a random order (Fig. 7 step 0: the receiver sees its
    /// indicator bits in that order) while the receiver blinds its own.
    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.common.start::<C>(s.ctx);
        let keys = Keys::<C>::new(s.rng)?;
        let ids = &self.common.input.ids;
        let order = s.rng.permutation(ids.len());
        let shuffled: Vec<&[u8]> = order.iter().map(|&i| ids[i as usize].as_ref()).collect();
        let s1 = mqrpmt::hash_eval::<C, _>(
            (s.meter, "S1: blinding our items"),
            self.common.dst(),
            &shuffled,
            &keys.blind,
        );
        s.send(RECEIVER, kind::S1, &s1);
        self.state = SenderState::AwaitR1 { keys, order };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            SenderState::AwaitR1 { .. }
            | SenderState::AwaitR2 { .. }
            | SenderState::AwaitR3 { .. }
            | SenderState::AwaitR4 { .. } => Some(RECEIVER),
            SenderState::Start
            | SenderState::Encode { .. }
            | SenderState::Identify { .. }
            | SenderState::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let n1 = self.common.peer_items() as usize;
        let n2 = self.common.input.ids.len();
        let elements = |n: usize| n.saturating_mul(C::ELEMENT_LEN);
        match &self.state {
            SenderState::AwaitR1 { .. } => elements(n1),
            SenderState::AwaitR2 { .. } => ot::BASE_FIRST_LEN.saturating_add(elements(n2)),
            SenderState::AwaitR3 { .. } => ot::extension_message_len(n2),
            SenderState::AwaitR4 { .. } => n1.saturating_add(n2).saturating_mul(ID_LEN),
            SenderState::Start
            | SenderState::Encode { .. }
            | SenderState::Identify { .. }
            | SenderState::Done => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        matches!(
            self.state,
            SenderState::Encode { .. } | SenderState::Identify { .. }
        )
    }

    fn do_deferred_work(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        let n2 = self.common.input.ids.len();
        self.state = match std::mem::replace(&mut self.state, SenderState::Done) {
            SenderState::Encode {
                keys,
                order,
                requests,
            } => {
                let filter_key = s.ctx.derive_key(mqrpmt::FILTER_KEY);
                let client = Client::<C>::with_key(keys.blind.clone());
                let set = client.encode_server_set(
                    (s.meter, "S3: evaluating the receiver's items"),
                    &requests,
                    n2,
                    self.common.config.last_message,
                    &filter_key,
                    s.rng,
                )?;
                SenderState::AwaitR2 { keys, order, set }
            }
            SenderState::Identify {
                unblind,
                ot,
                order,
                answered,
            } => {
                let shuffled = identifiers::<C>(&mqrpmt::eval::<C>(
                    (s.meter, "R2: unblinding our identifiers"),
                    &answered,
                    &unblind,
                    "R2 answers",
                )?);
                let mut own = vec![[0u8; ID_LEN]; n2];
                for (id, &i) in shuffled.into_iter().zip(&order) {
                    own[i as usize] = id;
                }
                SenderState::AwaitR3 { ot, order, own }
            }
            other => other,
        };
        Ok(())
    }

    fn is_done(&self) -> bool {
        matches!(self.state, SenderState::Done)
    }

    fn status(&self) -> String {
        match &self.state {
            SenderState::Start => "starting".into(),
            SenderState::AwaitR1 { .. } => {
                "distributed OPRF: waiting for the receiver's requests".into()
            }
            SenderState::Encode { .. } => "PSU: encoding the receiver's requests".into(),
            SenderState::AwaitR2 { .. } => {
                "distributed OPRF: waiting for the receiver's answers".into()
            }
            SenderState::Identify { .. } => "distributed OPRF: unblinding our identifiers".into(),
            SenderState::AwaitR3 { .. } => "PSU: waiting for the OT extension".into(),
            SenderState::AwaitR4 { .. } => "waiting for the union identifiers".into(),
            SenderState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}

/// Checks the receiver's union: whole identifiers, strictly increasing, no more than
/// both sets together, and containing every one of our own identifiers.
fn read_union(
    body: &[u8],
    max_items: usize,
    own: &[[u8; ID_LEN]],
) -> Result<Vec<[u8; ID_LEN]>, ProtocolError> {
    if !body.len().is_multiple_of(ID_LEN) || body.len() / ID_LEN > max_items {
        return Err(PeerMisbehaved::Malformed(format!(
            "R4 of {} bytes is not a union of at most {max_items} identifiers",
            body.len()
        ))
        .into());
    }
    let union: Vec<[u8; ID_LEN]> = body
        .chunks_exact(ID_LEN)
        .map(|c| c.try_into().expect("ID_LEN-byte chunks"))
        .collect();
    if union.windows(2).any(|w| w[0] >= w[1]) {
        return Err(PeerMisbehaved::Malformed(
            "R4: union identifiers are not sorted and distinct".into(),
        )
        .into());
    }
    if own.iter().any(|id| union.binary_search(id).is_err()) {
        return Err(PeerMisbehaved::Inconsistent(
            "R4: the union lacks one of this party's identifiers".into(),
        )
        .into());
    }
    Ok(union)
}
