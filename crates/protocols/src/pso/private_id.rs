//! Private-ID (seed 001 Sec. 6.2, Fig. 8): a distributed OPRF gives every item the
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
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::core::{Core, DeferredWork, Session, bad_ot, impl_pso_party};
use super::mqrpmt::{self, Client, Server};
use super::transfer;
use super::{Construction, PrivateIdTable, PsoConfig, PsoRole, kind};
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

/// Secret keys of one private-ID party: its OPRF key share and its blind, which is also
/// its mqRPMT key, with the key that removes the blind and applies the share.
struct Keys<C: CwPrf> {
    prf: Zeroizing<C::Key>,
    blind: Zeroizing<C::Key>,
    /// `F_unblind(F_blind(z)) = F_prf(z)`: turns `H(z)^(blind * k_other)` into the
    /// identifier element `H(z)^(k1 k2)` in one evaluation.
    unblind: Zeroizing<C::Key>,
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
    /// R1 sent; answering the sender's requests (S1) is deferred work, done while the
    /// sender answers R1.
    Answer {
        session: Session,
        keys: Keys<C>,
        requests: Vec<u8>,
    },
    AwaitS2 {
        session: Session,
        keys: Keys<C>,
        requests: Vec<u8>,
        answers: Vec<u8>,
    },
    /// R2 sent; unblinding our identifiers and re-evaluating the sender's PSU elements
    /// are deferred work, done while the sender encodes its set and unblinds its own.
    Identify {
        session: Session,
        keys: Keys<C>,
        ot: Box<OtReceiverSetup>,
        requests: Vec<u8>,
        answered: Vec<u8>,
    },
    AwaitS3 {
        session: Session,
        server: Server<C>,
        ot: Box<OtReceiverSetup>,
        absorbed: Vec<u8>,
        own: Vec<[u8; ID_LEN]>,
    },
    AwaitS4 {
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
                State::Answer {
                    session,
                    keys,
                    requests: frame.body.to_vec(),
                }
            }
            State::AwaitS2 {
                session,
                keys,
                requests,
                answers,
            } => {
                let frame = self.core.open(message, kind::S2)?;
                crate::wire::expect_len("S2", frame.body, mqrpmt::packed_len::<C>(n1, "S2")?)?;
                let (ot, first) = OtReceiverSetup::new(&mut self.core.rng, &session.ctx.transcript);
                let mut r2 = Vec::with_capacity(first.len() + answers.len());
                r2.extend_from_slice(&first);
                r2.extend_from_slice(&answers);
                self.core.channel.push(kind::R2, &r2);
                State::Identify {
                    session,
                    keys,
                    ot: Box::new(ot),
                    requests,
                    answered: frame.body.to_vec(),
                }
            }
            State::AwaitS3 {
                session,
                server,
                ot,
                absorbed,
                own,
            } => {
                let frame = self.core.open(message, kind::S3)?;
                let n2 = session.peer.items as usize;
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let mut r = Reader::new(frame.body, "S3");
                let ot_reply = r.take(ot::BASE_REPLY_LEN)?;
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.core.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                let (ot_keys, extension) = ot.extend(ot_reply, &e).map_err(bad_ot)?;
                self.core.channel.push(kind::R3, &extension);
                State::AwaitS4 {
                    session,
                    ot_keys,
                    own,
                }
            }
            State::AwaitS4 {
                session,
                ot_keys,
                own,
            } => {
                let frame = self.core.open(message, kind::S4)?;
                let n2 = session.peer.items as usize;
                crate::wire::expect_len("S4", frame.body, n2.saturating_mul(ID_LEN))?;
                let mut union = own.clone();
                for (_, id) in transfer::receive_one_sided(&ot_keys, false, ID_LEN, frame.body) {
                    union.push(id.try_into().expect("ID_LEN-byte slots"));
                }
                union.sort_unstable();
                union.dedup();
                self.core.channel.push(kind::R4, union.as_flattened());
                let mut out = self.core.empty_output(session.peer.items);
                out.private_id = Some(PrivateIdTable { own, union });
                self.core.finish(out);
                State::Done
            }
            State::Answer { .. } | State::Identify { .. } => {
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
                .saturating_add(mqrpmt::set_max_len::<C>(
                    self.core.config.last_message,
                    n1,
                    session.peer.items as usize,
                )),
            State::AwaitS4 { session, .. } => {
                HEADER_LEN.saturating_add((session.peer.items as usize).saturating_mul(ID_LEN))
            }
            State::Answer { .. } | State::Identify { .. } | State::Done | State::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            State::AwaitHello => "waiting for the sender's hello".into(),
            State::AwaitS1 { .. } => "distributed OPRF: waiting for the sender's requests".into(),
            State::Answer { .. } => "distributed OPRF: answering the sender's requests".into(),
            State::AwaitS2 { .. } => "distributed OPRF: waiting for the sender's answers".into(),
            State::Identify { .. } => {
                "unblinding our identifiers, evaluating the sender's PSU elements".into()
            }
            State::AwaitS3 { .. } => "PSU: waiting for the sender's set".into(),
            State::AwaitS4 { .. } => "PSU: waiting for the transferred identifiers".into(),
            State::Done => "done".into(),
            State::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Receiver<C> {
    fn has_work(&self) -> bool {
        matches!(self.state, State::Answer { .. } | State::Identify { .. })
    }

    fn work(&mut self) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, State::Failed) {
            State::Answer {
                session,
                keys,
                requests,
            } => {
                let answers = eval::<C>(&requests, &keys.prf, "S1")?;
                State::AwaitS2 {
                    session,
                    keys,
                    requests,
                    answers,
                }
            }
            State::Identify {
                session,
                keys,
                ot,
                requests,
                answered,
            } => {
                let own = identifiers::<C>(&eval::<C>(&answered, &keys.unblind, "S2")?);
                // S1 was checked when it was answered: this cannot fail.
                let server = Server::<C>::with_key(Construction::Cwprf, keys.blind);
                let absorbed = server.absorb_client_elements(&requests)?;
                State::AwaitS3 {
                    session,
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
}

impl_pso_party!(Receiver);

/// The private-ID sender: the mqRPMT client of the PSU and the OT sender; receives the
/// union.
pub struct Sender<C: CwPrf> {
    core: Core,
    state: SenderState<C>,
}

enum SenderState<C: CwPrf> {
    AwaitHello,
    AwaitR1 {
        session: Session,
        keys: Keys<C>,
        /// The order S1 was sent in, which the receiver's answers and the OT follow.
        order: Vec<u32>,
    },
    /// S2 sent; encoding the receiver's requests into the PSU set is deferred work, done
    /// while the receiver answers S1.
    Encode {
        session: Session,
        keys: Keys<C>,
        order: Vec<u32>,
        requests: Vec<u8>,
    },
    /// The set computed, held back until R2 has arrived (the receiver sends R2 as soon
    /// as S2 arrives: both sending at once could deadlock a blocking transport).
    AwaitR2 {
        session: Session,
        keys: Keys<C>,
        order: Vec<u32>,
        set: Vec<u8>,
    },
    /// S3 sent; unblinding our identifiers is deferred work, done while the receiver
    /// tests its PSU elements against the set.
    Identify {
        session: Session,
        unblind: Zeroizing<C::Key>,
        ot: OtSenderSetup,
        order: Vec<u32>,
        answered: Vec<u8>,
    },
    AwaitR3 {
        session: Session,
        ot: OtSenderSetup,
        order: Vec<u32>,
        /// This party's identifiers, in input order.
        own: Vec<[u8; ID_LEN]>,
    },
    AwaitR4 {
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
                // Fig. 7 step 0: the receiver sees its indicator bits in a random order.
                let order = self.core.rng.permutation(n2);
                let ids = &self.core.input.ids;
                let shuffled: Vec<&[u8]> =
                    order.iter().map(|&i| ids[i as usize].as_ref()).collect();
                // Computed while the receiver computes its own blinded hashes (R1).
                let s1 = C::hash_eval_batch(&session.dst, &shuffled, &keys.blind);
                self.core.channel.push(kind::S1, &s1);
                SenderState::AwaitR1 {
                    session,
                    keys,
                    order,
                }
            }
            SenderState::AwaitR1 {
                session,
                keys,
                order,
            } => {
                let frame = self.core.open(message, kind::R1)?;
                let n1 = session.peer.items as usize;
                crate::wire::expect_len("R1", frame.body, mqrpmt::packed_len::<C>(n1, "R1")?)?;
                let s2 = eval::<C>(frame.body, &keys.prf, "R1")?;
                self.core.channel.push(kind::S2, &s2);
                SenderState::Encode {
                    session,
                    keys,
                    order,
                    requests: frame.body.to_vec(),
                }
            }
            SenderState::AwaitR2 {
                session,
                keys,
                order,
                set,
            } => {
                let frame = self.core.open(message, kind::R2)?;
                let mut r = Reader::new(frame.body, "R2");
                let first = r.take(ot::BASE_FIRST_LEN)?;
                let answered = r.take(mqrpmt::packed_len::<C>(n2, "R2 answers")?)?;
                r.finish()?;
                let (ot, reply) =
                    OtSenderSetup::respond(&mut self.core.rng, &session.ctx.transcript, first)
                        .map_err(bad_ot)?;
                let mut s3 = Vec::with_capacity(reply.len() + set.len());
                s3.extend_from_slice(&reply);
                s3.extend_from_slice(&set);
                self.core.channel.push(kind::S3, &s3);
                SenderState::Identify {
                    session,
                    unblind: keys.unblind,
                    ot,
                    order,
                    answered: answered.to_vec(),
                }
            }
            SenderState::AwaitR3 {
                session,
                ot,
                order,
                own,
            } => {
                let frame = self.core.open(message, kind::R3)?;
                let ot_keys = ot.extend(frame.body, n2).map_err(bad_ot)?;
                let s4 = transfer::send_one_sided(&ot_keys, false, ID_LEN, |j| {
                    own[order[j] as usize].to_vec()
                });
                self.core.channel.push(kind::S4, &s4);
                SenderState::AwaitR4 { session, own }
            }
            SenderState::AwaitR4 { session, own } => {
                let frame = self.core.open(message, kind::R4)?;
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
            SenderState::Encode { .. } | SenderState::Identify { .. } => {
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
            SenderState::AwaitR2 { .. } => HEADER_LEN
                .saturating_add(ot::BASE_FIRST_LEN)
                .saturating_add(elements(n2)),
            SenderState::AwaitR3 { .. } => HEADER_LEN.saturating_add(ot::extension_message_len(n2)),
            SenderState::AwaitR4 { session, .. } => HEADER_LEN.saturating_add(
                (session.peer.items as usize)
                    .saturating_add(n2)
                    .saturating_mul(ID_LEN),
            ),
            SenderState::Encode { .. }
            | SenderState::Identify { .. }
            | SenderState::Done
            | SenderState::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            SenderState::AwaitHello => "waiting for the receiver's hello".into(),
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
            SenderState::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Sender<C> {
    fn has_work(&self) -> bool {
        matches!(
            self.state,
            SenderState::Encode { .. } | SenderState::Identify { .. }
        )
    }

    fn work(&mut self) -> Result<(), ProtocolError> {
        let n2 = self.core.input.ids.len();
        self.state = match std::mem::replace(&mut self.state, SenderState::Failed) {
            SenderState::Encode {
                session,
                keys,
                order,
                requests,
            } => {
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let client = Client::<C>::with_key(keys.blind.clone());
                let set = client.encode_server_set(
                    &requests,
                    n2,
                    self.core.config.last_message,
                    &filter_key,
                    &mut self.core.rng,
                )?;
                SenderState::AwaitR2 {
                    session,
                    keys,
                    order,
                    set,
                }
            }
            SenderState::Identify {
                session,
                unblind,
                ot,
                order,
                answered,
            } => {
                let shuffled = identifiers::<C>(&eval::<C>(&answered, &unblind, "R2 answers")?);
                let mut own = vec![[0u8; ID_LEN]; n2];
                for (id, &i) in shuffled.into_iter().zip(&order) {
                    own[i as usize] = id;
                }
                SenderState::AwaitR3 {
                    session,
                    ot,
                    order,
                    own,
                }
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
