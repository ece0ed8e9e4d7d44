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
//!  R1: H(x)^b1 ------------------------------------>
//!                                     <------------ S1: H(x)^(b1 k2), H(y)^b2
//!  ID(x) = (H(x)^(b1 k2))^(k1/b1)
//!  R2: [OT base A], H(y)^(b2 k1), ID(x)^a  --------->  ID(y) = (H(y)^(b2 k1))^(k2/b2)
//!                                     <------------ S2: [OT base reply], ID(y)^b shuffled,
//!                                                       {ID(x)^(ab)} (list or filter)
//!  e_i = [ID(y_i)^(ba) in the set]
//!  R3: OT extension on e ------------------------->
//!                                     <------------ S3: Hash(ID(y_i)) one-sided to e_i = 0
//!  R4: sorted union of identifiers ---------------->
//! ```
//!
//! Needs a prime-order group (blinds are inverted). Ten exponentiations per pair of
//! items, against the paper's VOLE-based OPRF plus four (Table 7); docs/pso/private-id.md
//! compares.

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

/// `F_{a∘b}`, for keys of a prime-order group (checked by `validate`).
fn compose<C: CwPrf>(a: &C::Key, b: &C::Key) -> C::Key {
    C::compose_keys(a, b).expect("validate() allows private-id only for prime-order groups")
}

fn invert<C: CwPrf>(k: &C::Key) -> C::Key {
    C::invert_key(k).expect("validate() allows private-id only for prime-order groups")
}

fn eval<C: CwPrf>(
    packed: &[u8],
    key: &C::Key,
    what: &'static str,
) -> Result<Vec<u8>, ProtocolError> {
    C::eval_batch(packed, key)
        .map_err(|source| PeerMisbehaved::InvalidElement { what, source }.into())
}

/// Secret keys of one private-ID party: its OPRF key share, its blind and its PSU key.
struct Keys<C: CwPrf> {
    prf: Zeroizing<C::Key>,
    blind: Zeroizing<C::Key>,
    psu: Zeroizing<C::Key>,
}

impl<C: CwPrf> Keys<C> {
    fn new(core: &mut Core) -> Self {
        Self {
            prf: Zeroizing::new(C::random_key(&mut core.rng)),
            blind: Zeroizing::new(C::random_key(&mut core.rng)),
            psu: Zeroizing::new(C::random_key(&mut core.rng)),
        }
    }

    /// Un-blinds `H(z)^(blind * k_other)` into the identifier element `H(z)^(k1 k2)`.
    fn unblind(&self) -> Zeroizing<C::Key> {
        let inverse = Zeroizing::new(invert::<C>(&self.blind));
        Zeroizing::new(compose::<C>(&inverse, &self.prf))
    }
}

/// The private-ID receiver: runs the PSU as its receiver and sends the union back.
pub struct Receiver<C: CwPrf> {
    core: Core,
    state: State<C>,
}

enum State<C: CwPrf> {
    AwaitHello,
    AwaitS1 {
        session: Session,
        keys: Keys<C>,
    },
    AwaitS2 {
        session: Session,
        psu_key: Zeroizing<C::Key>,
        ot: Box<OtReceiverSetup>,
        own: Vec<[u8; ID_LEN]>,
    },
    AwaitS3 {
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
                let keys = Keys::<C>::new(&mut self.core);
                let r1 = C::hash_eval_batch(&session.dst, &self.core.input.ids, &keys.blind);
                self.core.channel.push(kind::R1, &r1);
                State::AwaitS1 { session, keys }
            }
            State::AwaitS1 { session, keys } => {
                let frame = self.core.open(message, kind::S1)?;
                let n2 = session.peer.items as usize;
                let mut r = Reader::new(frame.body, "S1");
                let answered = r.take(mqrpmt::packed_len::<C>(n1, "S1 answers")?)?;
                let requests = r.take(mqrpmt::packed_len::<C>(n2, "S1 requests")?)?;
                r.finish()?;
                let unblind = keys.unblind();
                let own = identifiers::<C>(&eval::<C>(answered, &unblind, "S1 answers")?);
                let psu_first =
                    eval::<C>(answered, &compose::<C>(&unblind, &keys.psu), "S1 answers")?;
                let reply = eval::<C>(requests, &keys.prf, "S1 requests")?;
                let (ot, first) = OtReceiverSetup::new(&mut self.core.rng, &session.ctx.transcript);
                let mut r2 = Vec::with_capacity(first.len() + reply.len() + psu_first.len());
                r2.extend_from_slice(&first);
                r2.extend_from_slice(&reply);
                r2.extend_from_slice(&psu_first);
                self.core.channel.push(kind::R2, &r2);
                State::AwaitS2 {
                    session,
                    psu_key: keys.psu.clone(),
                    ot: Box::new(ot),
                    own,
                }
            }
            State::AwaitS2 {
                session,
                psu_key,
                ot,
                own,
            } => {
                let frame = self.core.open(message, kind::S2)?;
                let n2 = session.peer.items as usize;
                let mut r = Reader::new(frame.body, "S2");
                let reply = r.take(ot::BASE_REPLY_LEN)?;
                let server = Server::<C>::with_key(self.core.config.construction, psu_key);
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let theirs = r.take(mqrpmt::packed_len::<C>(n2, "S2 elements")?)?;
                let absorbed = server.absorb_client_elements(theirs)?;
                let e = server.indicator(
                    &absorbed,
                    &mut r,
                    self.core.config.last_message,
                    n1,
                    n2,
                    &filter_key,
                )?;
                r.finish()?;
                let (ot_keys, extension) = ot.extend(reply, &e).map_err(bad_ot)?;
                self.core.channel.push(kind::R3, &extension);
                State::AwaitS3 {
                    session,
                    ot_keys,
                    own,
                }
            }
            State::AwaitS3 {
                session,
                ot_keys,
                own,
            } => {
                let frame = self.core.open(message, kind::S3)?;
                let n2 = session.peer.items as usize;
                let expected = n2.saturating_mul(ID_LEN);
                crate::wire::expect_len("S3", frame.body, expected)?;
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
            State::AwaitS1 { session, .. } => HEADER_LEN
                .saturating_add(elements(n1))
                .saturating_add(elements(session.peer.items as usize)),
            State::AwaitS2 { session, .. } => HEADER_LEN
                .saturating_add(ot::BASE_REPLY_LEN)
                .saturating_add(elements(session.peer.items as usize))
                .saturating_add(mqrpmt::set_max_len::<C>(
                    self.core.config.last_message,
                    n1,
                    session.peer.items as usize,
                )),
            State::AwaitS3 { session, .. } => {
                HEADER_LEN.saturating_add((session.peer.items as usize).saturating_mul(ID_LEN))
            }
            State::Done | State::Failed => 0,
        }
    }

    fn describe(&self) -> String {
        match &self.state {
            State::AwaitHello => "waiting for the sender's hello".into(),
            State::AwaitS1 { .. } => {
                "distributed OPRF: waiting for the sender's evaluations".into()
            }
            State::AwaitS2 { .. } => "PSU: waiting for the sender's evaluated identifiers".into(),
            State::AwaitS3 { .. } => "PSU: waiting for the transferred identifiers".into(),
            State::Done => "done".into(),
            State::Failed => "failed".into(),
        }
    }
}

impl<C: CwPrf> DeferredWork for Receiver<C> {}
impl_pso_party!(Receiver);

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
    AwaitR3 {
        session: Session,
        ot: OtSenderSetup,
        own: Vec<[u8; ID_LEN]>,
        order: Vec<u32>,
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
                let keys = Keys::<C>::new(&mut self.core);
                SenderState::AwaitR1 { session, keys }
            }
            SenderState::AwaitR1 { session, keys } => {
                let frame = self.core.open(message, kind::R1)?;
                let n1 = session.peer.items as usize;
                let expected = mqrpmt::packed_len::<C>(n1, "R1")?;
                crate::wire::expect_len("R1", frame.body, expected)?;
                let mut s1 = eval::<C>(frame.body, &keys.prf, "R1")?;
                s1.extend_from_slice(&C::hash_eval_batch(
                    &session.dst,
                    &self.core.input.ids,
                    &keys.blind,
                ));
                self.core.channel.push(kind::S1, &s1);
                SenderState::AwaitR2 { session, keys }
            }
            SenderState::AwaitR2 { session, keys } => {
                let frame = self.core.open(message, kind::R2)?;
                let n1 = session.peer.items as usize;
                let mut r = Reader::new(frame.body, "R2");
                let first = r.take(ot::BASE_FIRST_LEN)?;
                let answered = r.take(mqrpmt::packed_len::<C>(n2, "R2 answers")?)?;
                let psu_first = r.take(mqrpmt::packed_len::<C>(n1, "R2 PSU elements")?)?;
                r.finish()?;
                let unblind = keys.unblind();
                let own = identifiers::<C>(&eval::<C>(answered, &unblind, "R2 answers")?);
                let psu_own =
                    eval::<C>(answered, &compose::<C>(&unblind, &keys.psu), "R2 answers")?;
                // Fig. 7 step 0: the receiver sees indicator bits in a random order.
                let order = self.core.rng.permutation(n2);
                let mut s2 = Vec::new();
                let (ot, reply) =
                    OtSenderSetup::respond(&mut self.core.rng, &session.ctx.transcript, first)
                        .map_err(bad_ot)?;
                s2.extend_from_slice(&reply);
                for &i in &order {
                    let i = i as usize;
                    s2.extend_from_slice(&psu_own[i * C::ELEMENT_LEN..(i + 1) * C::ELEMENT_LEN]);
                }
                let filter_key = session.ctx.derive_key(mqrpmt::FILTER_KEY);
                let client = Client::<C>::with_key(keys.psu.clone());
                s2.extend_from_slice(&client.encode_server_set(
                    psu_first,
                    n2,
                    self.core.config.last_message,
                    &filter_key,
                    &mut self.core.rng,
                )?);
                self.core.channel.push(kind::S2, &s2);
                SenderState::AwaitR3 {
                    session,
                    ot,
                    own,
                    order,
                }
            }
            SenderState::AwaitR3 {
                session,
                ot,
                own,
                order,
            } => {
                let frame = self.core.open(message, kind::R3)?;
                let ot_keys = ot.extend(frame.body, n2).map_err(bad_ot)?;
                let s3 = transfer::send_one_sided(&ot_keys, false, ID_LEN, |i| {
                    own[order[i] as usize].to_vec()
                });
                self.core.channel.push(kind::S3, &s3);
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
            SenderState::AwaitR2 { session, .. } => HEADER_LEN
                .saturating_add(ot::BASE_FIRST_LEN)
                .saturating_add(elements(n2))
                .saturating_add(elements(session.peer.items as usize)),
            SenderState::AwaitR3 { .. } => HEADER_LEN.saturating_add(ot::extension_message_len(n2)),
            SenderState::AwaitR4 { session, .. } => HEADER_LEN.saturating_add(
                (session.peer.items as usize)
                    .saturating_add(n2)
                    .saturating_mul(ID_LEN),
            ),
            SenderState::Done | SenderState::Failed => 0,
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
            SenderState::AwaitR3 { .. } => "PSU: waiting for the OT extension".into(),
            SenderState::AwaitR4 { .. } => "waiting for the union identifiers".into(),
            SenderState::Done => "done".into(),
            SenderState::Failed => "failed".into(),
        }
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

/// `Party` for the sender, whose state enum has a different name.
impl<C: CwPrf> DeferredWork for Sender<C> {}

mod sender_party {
    use super::super::core::impl_pso_party;
    use super::{Sender, SenderState as State};
    impl_pso_party!(Sender);
}
