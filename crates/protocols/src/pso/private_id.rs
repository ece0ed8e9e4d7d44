//! Private-ID (seed 001 Sec. 6.2, Fig. 8): a distributed OPRF gives every item the
//! identifier `G_{k1,k2}(z) = Hash(H(z)^(k1 k2))`, then a distributional PSU on the two
//! identifier sets (the cwPRF mqRPMT applied to the identifier elements themselves, no
//! second hash-to-group, as the paper's Sec. 6.2 suggests) gives the receiver the union,
//! which it sends to the sender. Each party ends with an identifier for each of its own
//! items and the sorted identifiers of `X ∪ Y`; identical items get identical
//! identifiers, and nothing else is revealed (neither learns which of its items the other
//! holds).
//!
//! The distributed OPRF: each party asks the other to raise its *blinded* hashes to the
//! other's key, and removes the blind itself, so the evaluator never sees a result.
//!
//! ```text
//! receiver (X, k1, blind b1, PSU key a)              sender (Y, k2, blind b2, PSU key b)
//!  (computes H(x)^b1)                                 (computes H(y)^b2 meanwhile)
//!                                     <------------ S1: H(y)^b2
//!  R1: H(x)^b1 ------------------------------------>
//!  H(y)^(b2 k1), meanwhile                           S2: H(x)^(b1 k2)
//!                                     <------------
//!  R2: [OT base A], H(y)^(b2 k1) ------------------>
//!  ID(x) = (H(x)^(b1 k2))^(k1/b1), ID(x)^a           ID(y) = (H(y)^(b2 k1))^(k2/b2), ID(y)^b
//!  R3: ID(x)^a ------------------------------------>
//!                                     <------------ S3: [OT base reply], ID(y)^b shuffled
//!  ID(y)^(ba), meanwhile                             S4: {ID(x)^(ab)} (list or filter)
//!                                     <------------
//!  e_i = [ID(y_i)^(ba) in the set]
//!  R4: OT extension on e ------------------------->
//!                                     <------------ S5: Hash(ID(y_i)) one-sided to e_i = 0
//!  R5: sorted union of identifiers ---------------->
//! ```
//!
//! Every phase of one party's exponentiations runs while the other party computes its
//! own (the "meanwhile" lines), so the run takes about half the time of the ten
//! exponentiations per pair back to back. A party never sends a large message while the
//! other may be sending one too: R1 waits for S1, and S3 waits for R3.
//!
//! Removing a blind needs the key `k / b` ([`CwPrf::unblinding_key`]): every prime-order
//! group has it, and X25519 for about half of all blinds, so a party draws its blind
//! until it has one. Ten exponentiations per pair of items, against the paper's
//! VOLE-based OPRF plus four (Table 7); docs/pso/private-id.md compares.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::ot::{self, OtReceiverKeys, OtReceiverSetup, OtSenderSetup};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::core::{Core, DeferredWork, Session, bad_ot, impl_pso_party};
use super::mqrpmt::{self, Client, Server};
use super::transfer;
use super::{PrivateIdTable, PsoConfig, PsoRole, kind};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{HEADER_LEN, Reader};

/// Bytes of a private identifier.
pub const ID_LEN: usize = 16;

/// An identifier: a hash of the identifier element (the PRF output `H(z)^(k1 k2)`).
fn identifier(element: &[u8]) -> [u8; ID_LEN] {
    let mut h = Sha256::new();
    h.update(b"privset/v1/private-id/");
    h.update(element);
    let mut id = [0u8; ID_LEN];
    id.copy_from_slice(&h.finalize()[..ID_LEN]);
    id
}

fn identifiers<C: CwPrf>(packed: &[u8]) -> Vec<[u8; ID_LEN]> {
    packed
        .chunks_exact(C::ELEMENT_LEN)
        .map(identifier)
        .collect()
}

fn eval<C: CwPrf>(
    packed: &[u8],
    key: &C::Key,
    what: &'static str,
) -> Result<Vec<u8>, ProtocolError> {
    C::eval_batch(packed, key)
        .map_err(|source| PeerMisbehaved::InvalidElement { what, source }.into())
}

/// Blinds drawn before giving up on finding one with an unblinding key: X25519 finds one
/// for about half of all blinds (a failure here has probability about 2^-128).
const BLIND_DRAWS: usize = 128;

/// Secret keys of one private-ID party: its OPRF key share, its blind (with the key that
/// removes it and applies the share) and its PSU key.
struct Keys<C: CwPrf> {
    prf: Zeroizing<C::Key>,
    blind: Zeroizing<C::Key>,
    /// `F_unblind(F_blind(z)) = F_prf(z)`: turns `H(z)^(blind * k_other)` into the
    /// identifier element `H(z)^(k1 k2)` in one evaluation.
    unblind: Zeroizing<C::Key>,
    psu: Zeroizing<C::Key>,
}

impl<C: CwPrf> Keys<C> {
    fn new(core: &mut Core) -> Result<Self, ProtocolError> {
        let prf = Zeroizing::new(C::random_key(&mut core.rng));
        for _ in 0..BLIND_DRAWS {
            let blind = Zeroizing::new(C::random_key(&mut core.rng));
            if let Some(unblind) = C::unblinding_key(&blind, &prf) {
                return Ok(Self {
                    prf,
                    blind,
                    unblind: Zeroizing::new(unblind),
                    psu: Zeroizing::new(C::random_key(&mut core.rng)),
                });
            }
        }
        Err(ProtocolError::Config(format!(
            "private-id: no blind of {} has an unblinding key ({BLIND_DRAWS} draws)",
            C::ID.name()
        )))
    }
}

/// The private-ID receiver: runs the PSU as its receiver and sends the union back.
pub struct Receiver<C: CwPrf> {
    core: Core,
    state: State<C>,
}

enum State<C: CwPrf> {
    AwaitHello,
    /// R1 computed, held back until S1 has arrived: the two first large messages never
    /// travel at the same time (blocking transports cannot deadlock).
    AwaitS1 {
        session: Session,
        keys: Keys<C>,
        r1: Vec<u8>,
    },
    /// R1 sent; evaluating the sender's requests (S1) is deferred work, done while the
    /// sender answers R1.
    Reply {
        session: Session,
        keys: Keys<C>,
        requests: Vec<u8>,
    },
    AwaitS2 {
        session: Session,
        keys: Keys<C>,
        reply: Vec<u8>,
    },
    /// R2 sent; unblinding the answers and keying them for the PSU (R3) is deferred
    /// work, done while the sender unblinds its own identifiers.
    Identify {
        session: Session,
        keys: Keys<C>,
        ot: Box<OtReceiverSetup>,
        answers: Vec<u8>,
    },
    AwaitS3 {
        session: Session,
        psu_key: Zeroizing<C::Key>,
        ot: Box<OtReceiverSetup>,
        own: Vec<[u8; ID_LEN]>,
    },
    /// S3 received; absorbing the sender's PSU elements is deferred work, done while the
    /// sender encodes its set (S4).
    Absorb {
        session: Session,
        psu_key: Zeroizing<C::Key>,
        ot: Box<OtReceiverSetup>,
        own: Vec<[u8; ID_LEN]>,
        s3: Vec<u8>,
    },
    AwaitS4 {
        session: Session,
        server: Server<C>,
        ot: Box<OtReceiverSetup>,
        ot_reply: Vec<u8>,
        own: Vec<[u8; ID_LEN]>,
        absorbed: Vec<u8>,
    },
    AwaitS5 {
        session: Session,
        ot_keys: OtReceiverKeys,
        own: Vec<[u8; ID_LEN]>,
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

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        let n1 = self.core.input.ids.len();
        self.state = match std::mem::replace(&mut self.state, State::Failed) {
            State::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let session = self.core.on_hello::<C>(frame.body)?;
                let keys = Keys::<C>::new(&mut self.core)?;
                let r1 = C::hash_eval_batch(&session.dst, &self.core.input.ids, &keys.blind);
                State::AwaitS1 { session, keys, r1 }
            }
            State::AwaitS1 { session, keys, r1 } => {
                let frame = self.core.open(message, kind::S1)?;
                let n2 = session.peer.items as usize;
                crate::wire::expect_len("S1", frame.body, mqrpmt::packed_len::<C>(n2, "S1")?)?;
                self.core.channel.push(kind::R1, &r1);
                State::Reply {
                    session,
                    keys,
                    requests: frame.body.to_vec(),
                }
            }
            State::AwaitS2 {
                session,
                keys,
                reply,
            } => {
                let frame = self.core.open(message, kind::S2)?;
                crate::wire::expect_len("S2", frame.body, mqrpmt::packed_len::<C>(n1, "S2")?)?;
                let (ot, first) = OtReceiverSetup::new(&mut self.core.rng, &session.ctx.transcript);
                let mut r2 = Vec::with_capacity(first.len() + reply.len());
                r2.extend_from_slice(&first);
                r2.extend_from_slice(&reply);
                self.core.channel.push(kind::R2, &r2);
                State::Identify {
                    session,
                    keys,
                    ot: Box::new(ot),
                    answers: frame.body.to_vec(),
                }
            }
            State::AwaitS3 {
                session,
                psu_key,
                ot,
                own,
            } => {
                let frame = self.core.open(message, kind::S3)?;
                let n2 = session.peer.items as usize;
                let expected =
                    ot::BASE_REPLY_LEN.saturating_add(mqrpmt::packed_len::<C>(n2, "S3 elements")?);
                crate::wire::expect_len("S3", frame.body, expected)?;
                State::Absorb {
                    session,
                    psu_key,
                    ot,
                    own,
                    s3: frame.body.to_vec(),
                }
            }
            State::AwaitS4 {
                session,
                server,
                ot,
                ot_reply,
                own,
                absorbed,
            } => {
                let frame = self.core.open(message, kind::S4)?;
                let n2 = session.peer.items as usize;
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let mut r = Reader::new(frame.body, "S4");
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.core.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                let (ot_keys, extension) = ot.extend(&ot_reply, &e).map_err(bad_ot)?;
                self.core.channel.push(kind::R4, &extension);
                State::AwaitS5 {
                    session,
                    ot_keys,
                    own,
                }
            }
            State::AwaitS5 {
                session,
                ot_keys,
                own,
            } => {
                let frame = self.core.open(message, kind::S5)?;
                let n2 = session.peer.items as usize;
                let expected = n2.saturating_mul(ID_LEN);
                crate::wire::expect_len("S5", frame.body, expected)?;
                let mut union = own.clone();
                for (_, id) in transfer::receive_one_sided(&ot_keys, false, ID_LEN, frame.body) {
                    union.push(id.try_into().expect("ID_LEN-byte slots"));
                }
                union.sort_unstable();
                union.dedup();
                self.core.channel.push(kind::R5, union.as_flattened());
                let mut out = self.core.empty_output(session.peer.items);
                out.private_id = Some(PrivateIdTable { own, union });
                self.core.finish(out);
                State::Done
            }
            State::Reply { .. } | State::Identify { .. } | State::Absorb { .. } => {
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

    fn max_len(&self) -> usize {
        let n1 = self.core.input.ids.len();
        let elements = |n: usize| n.saturating_mul(C::ELEMENT_LEN);
        match &self.state {
            State::AwaitHello => super::hello::MAX_LEN,
            State::AwaitS1 { session, .. } => {
                HEADER_LEN.saturating_add(elements(session.peer.items as usize))
            }
            State::AwaitS2 { .. } => HEADER_LEN.saturating_add(elements(n1)),
            State::AwaitS3 { session, .. } => HEADER_LEN
                .saturating_add(ot::BASE_REPLY_LEN)
                .saturating_add(elements(session.peer.items as usize)),
            State::AwaitS4 { session, .. } => HEADER_LEN.saturating_add(mqrpmt::set_max_len::<C>(
                self.core.config.last_message,
                n1,
                session.peer.items as usize,
            )),
            State::AwaitS5 { session, .. } => {
                HEADER_LEN.saturating_add((session.peer.items as usize).saturating_mul(ID_LEN))
            }
            State::Reply { .. }
            | State::Identify { .. }
            | State::Absorb { .. }
            | State::Done
            | State::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            State::AwaitHello => "waiting for the sender's hello".into(),
            State::AwaitS1 { .. } => "distributed OPRF: waiting for the sender's requests".into(),
            State::Reply { .. } => "distributed OPRF: evaluating the sender's requests".into(),
            State::AwaitS2 { .. } => {
                "distributed OPRF: waiting for the sender's evaluations".into()
            }
            State::Identify { .. } => "distributed OPRF: unblinding our identifiers".into(),
            State::AwaitS3 { .. } => "PSU: waiting for the sender's identifiers".into(),
            State::Absorb { .. } => "PSU: evaluating the sender's identifiers".into(),
            State::AwaitS4 { .. } => "PSU: waiting for the sender's set".into(),
            State::AwaitS5 { .. } => "PSU: waiting for the transferred identifiers".into(),
            State::Done => "done".into(),
            State::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Receiver<C> {
    fn has_work(&self) -> bool {
        matches!(
            self.state,
            State::Reply { .. } | State::Identify { .. } | State::Absorb { .. }
        )
    }

    fn work(&mut self) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, State::Failed) {
            State::Reply {
                session,
                keys,
                requests,
            } => {
                let reply = eval::<C>(&requests, &keys.prf, "S1")?;
                State::AwaitS2 {
                    session,
                    keys,
                    reply,
                }
            }
            State::Identify {
                session,
                keys,
                ot,
                answers,
            } => {
                let elements = eval::<C>(&answers, &keys.unblind, "S2")?;
                let own = identifiers::<C>(&elements);
                let psu_first = eval::<C>(&elements, &keys.psu, "identifier elements")?;
                self.core.channel.push(kind::R3, &psu_first);
                State::AwaitS3 {
                    session,
                    psu_key: keys.psu.clone(),
                    ot,
                    own,
                }
            }
            State::Absorb {
                session,
                psu_key,
                ot,
                own,
                s3,
            } => {
                let (ot_reply, theirs) = s3.split_at(ot::BASE_REPLY_LEN);
                let server = Server::<C>::with_key(self.core.config.construction, psu_key);
                let absorbed = server.absorb_client_elements(theirs)?;
                State::AwaitS4 {
                    session,
                    server,
                    ot,
                    ot_reply: ot_reply.to_vec(),
                    own,
                    absorbed,
                }
            }
            other => other,
        };
        Ok(())
    }
}

impl_pso_party!(Receiver);

/// What the sender's PSU phase carries from S3 to the one-sided OT (S5).
struct SenderPsu {
    session: Session,
    ot: OtSenderSetup,
    /// This party's identifiers, in input order.
    own: Vec<[u8; ID_LEN]>,
    /// The order its PSU elements were sent in (S3), which the OT follows.
    order: Vec<u32>,
}

/// The private-ID sender: runs the PSU as its sender and receives the union.
pub struct Sender<C: CwPrf> {
    core: Core,
    state: SenderState<C>,
}

enum SenderState<C: CwPrf> {
    AwaitHello,
    AwaitR1 {
        session: Session,
        keys: Keys<C>,
    },
    AwaitR2 {
        session: Session,
        keys: Keys<C>,
    },
    /// S3 computed, held back until R3 has arrived (the receiver sends R3 right after
    /// computing it: both sending at once could deadlock a blocking transport).
    AwaitR3 {
        psu: SenderPsu,
        psu_key: Zeroizing<C::Key>,
        s3: Vec<u8>,
    },
    /// S3 sent; encoding the receiver's PSU elements into the set (S4) is deferred
    /// work, done while the receiver absorbs S3.
    Encode {
        psu: SenderPsu,
        psu_key: Zeroizing<C::Key>,
        psu_first: Vec<u8>,
    },
    AwaitR4 {
        psu: SenderPsu,
    },
    AwaitR5 {
        session: Session,
        own: Vec<[u8; ID_LEN]>,
    },
    Done,
    Failed,
}

impl<C: CwPrf> Sender<C> {
    pub(crate) fn new(config: PsoConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: Core::start(PsoRole::Sender, config, input, seed),
            state: SenderState::AwaitHello,
        }
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        let n2 = self.core.input.ids.len();
        self.state = match std::mem::replace(&mut self.state, SenderState::Failed) {
            SenderState::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let session = self.core.on_hello::<C>(frame.body)?;
                let keys = Keys::<C>::new(&mut self.core)?;
                // Computed while the receiver computes its own blinded hashes (R1).
                let s1 = C::hash_eval_batch(&session.dst, &self.core.input.ids, &keys.blind);
                self.core.channel.push(kind::S1, &s1);
                SenderState::AwaitR1 { session, keys }
            }
            SenderState::AwaitR1 { session, keys } => {
                let frame = self.core.open(message, kind::R1)?;
                let n1 = session.peer.items as usize;
                crate::wire::expect_len("R1", frame.body, mqrpmt::packed_len::<C>(n1, "R1")?)?;
                let s2 = eval::<C>(frame.body, &keys.prf, "R1")?;
                self.core.channel.push(kind::S2, &s2);
                SenderState::AwaitR2 { session, keys }
            }
            SenderState::AwaitR2 { session, keys } => {
                let frame = self.core.open(message, kind::R2)?;
                let mut r = Reader::new(frame.body, "R2");
                let first = r.take(ot::BASE_FIRST_LEN)?;
                let answered = r.take(mqrpmt::packed_len::<C>(n2, "R2 answers")?)?;
                r.finish()?;
                let elements = eval::<C>(answered, &keys.unblind, "R2 answers")?;
                let own = identifiers::<C>(&elements);
                let psu_own = eval::<C>(&elements, &keys.psu, "identifier elements")?;
                // Fig. 7 step 0: the receiver sees indicator bits in a random order.
                let order = self.core.rng.permutation(n2);
                let (ot, reply) =
                    OtSenderSetup::respond(&mut self.core.rng, &session.ctx.transcript, first)
                        .map_err(bad_ot)?;
                let mut s3 = Vec::with_capacity(reply.len() + psu_own.len());
                s3.extend_from_slice(&reply);
                for &i in &order {
                    let i = i as usize;
                    s3.extend_from_slice(&psu_own[i * C::ELEMENT_LEN..(i + 1) * C::ELEMENT_LEN]);
                }
                SenderState::AwaitR3 {
                    psu: SenderPsu {
                        session,
                        ot,
                        own,
                        order,
                    },
                    psu_key: keys.psu.clone(),
                    s3,
                }
            }
            SenderState::AwaitR3 { psu, psu_key, s3 } => {
                let frame = self.core.open(message, kind::R3)?;
                let n1 = psu.session.peer.items as usize;
                let expected = mqrpmt::packed_len::<C>(n1, "R3")?;
                crate::wire::expect_len("R3", frame.body, expected)?;
                self.core.channel.push(kind::S3, &s3);
                SenderState::Encode {
                    psu,
                    psu_key,
                    psu_first: frame.body.to_vec(),
                }
            }
            SenderState::AwaitR4 { psu } => {
                let SenderPsu {
                    session,
                    ot,
                    own,
                    order,
                } = psu;
                let frame = self.core.open(message, kind::R4)?;
                let ot_keys = ot.extend(frame.body, n2).map_err(bad_ot)?;
                let s5 = transfer::send_one_sided(&ot_keys, false, ID_LEN, |i| {
                    own[order[i] as usize].to_vec()
                });
                self.core.channel.push(kind::S5, &s5);
                SenderState::AwaitR5 { session, own }
            }
            SenderState::AwaitR5 { session, own } => {
                let frame = self.core.open(message, kind::R5)?;
                let union = read_union(
                    frame.body,
                    (session.peer.items as usize).saturating_add(n2),
                    &own,
                )?;
                let mut out = self.core.empty_output(session.peer.items);
                out.private_id = Some(PrivateIdTable { own, union });
                self.core.finish(out);
                SenderState::Done
            }
            SenderState::Encode { .. } => {
                return Err(ProtocolError::ApiMisuse(
                    "message before the deferred work was done",
                ));
            }
            SenderState::Done | SenderState::Failed => {
                return Err(ProtocolError::ApiMisuse("message after the end of the run"));
            }
        };
        Ok(())
    }

    fn max_len(&self) -> usize {
        let n2 = self.core.input.ids.len();
        let elements = |n: usize| n.saturating_mul(C::ELEMENT_LEN);
        match &self.state {
            SenderState::AwaitHello => super::hello::MAX_LEN,
            SenderState::AwaitR1 { session, .. } => {
                HEADER_LEN.saturating_add(elements(session.peer.items as usize))
            }
            SenderState::AwaitR3 { psu, .. } => {
                HEADER_LEN.saturating_add(elements(psu.session.peer.items as usize))
            }
            SenderState::AwaitR2 { .. } => HEADER_LEN
                .saturating_add(ot::BASE_FIRST_LEN)
                .saturating_add(elements(n2)),
            SenderState::AwaitR4 { .. } => HEADER_LEN.saturating_add(ot::extension_message_len(n2)),
            SenderState::AwaitR5 { session, .. } => HEADER_LEN.saturating_add(
                (session.peer.items as usize)
                    .saturating_add(n2)
                    .saturating_mul(ID_LEN),
            ),
            SenderState::Encode { .. } | SenderState::Done | SenderState::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            SenderState::AwaitHello => "waiting for the receiver's hello".into(),
            SenderState::AwaitR1 { .. } => {
                "distributed OPRF: waiting for the receiver's requests".into()
            }
            SenderState::AwaitR2 { .. } => {
                "distributed OPRF: waiting for the receiver's evaluations".into()
            }
            SenderState::AwaitR3 { .. } => "PSU: waiting for the receiver's identifiers".into(),
            SenderState::Encode { .. } => "PSU: encoding the receiver's identifiers".into(),
            SenderState::AwaitR4 { .. } => "PSU: waiting for the OT extension".into(),
            SenderState::AwaitR5 { .. } => "waiting for the union identifiers".into(),
            SenderState::Done => "done".into(),
            SenderState::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Sender<C> {
    fn has_work(&self) -> bool {
        matches!(self.state, SenderState::Encode { .. })
    }

    fn work(&mut self) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, SenderState::Failed) {
            SenderState::Encode {
                psu,
                psu_key,
                psu_first,
            } => {
                let n2 = self.core.input.ids.len();
                let filter_key = psu.session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let client = Client::<C>::with_key(psu_key);
                let s4 = client.encode_server_set(
                    &psu_first,
                    n2,
                    self.core.config.last_message,
                    &filter_key,
                    &mut self.core.rng,
                )?;
                self.core.channel.push(kind::S4, &s4);
                SenderState::AwaitR4 { psu }
            }
            other => other,
        };
        Ok(())
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
            "R5 of {} bytes is not a union of at most {max_items} identifiers",
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
            "R5: union identifiers are not sorted and distinct".into(),
        )
        .into());
    }
    if own.iter().any(|id| union.binary_search(id).is_err()) {
        return Err(PeerMisbehaved::Inconsistent(
            "R5: the union lacks one of this party's identifiers".into(),
        )
        .into());
    }
    Ok(union)
}

/// `Party` for the sender, whose state enum has a different name.
mod sender_party {
    use super::super::core::impl_pso_party;
    use super::{Sender, SenderState as State};
    impl_pso_party!(Sender);
}
