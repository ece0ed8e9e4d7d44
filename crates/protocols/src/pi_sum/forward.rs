//! The forward protocol (Ion et al. 2020, Fig. 2): P1 computes the intersection and the
//! encrypted sum; P2 decrypts it.
//!
//! ```text
//! P1 (participant 0)                             P2 (participant 1)
//!  hello (salt, settings) --------------------->  <- hello (salt, settings)
//!  round 1: shuffled H(v)^k1, by segment  ---->
//!                                           <-- round 2: pk, Z = shuffled H(v)^k1k2
//!                                               (list or filter, per segment),
//!                                               shuffled H(w)^k2, packed AEnc(t)
//!  round 3: per segment |J| and the masked,
//!  re-randomized encrypted sum  -------------->  (or abort, threshold variant)
//! ```
//!
//! P2 precomputes its own exponentiations and encryptions as soon as the hellos are
//! exchanged, while P1 works on round 1.

use std::marker::PhantomData;

use privset_crypto::cwprf::CwPrf;

use super::common::{self, Setup, checked_len};
use super::hello::z_lookups;
use super::{HeChoice, Hello, PROTOCOL, PiSumConfig, PiSumOutput, Role, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::set_encoding::ReceivedSet;
use crate::wire::{PartyId, Reader};

/// Keyed-hash purpose of the Z filter.
const FILTER_KEY: &str = "pi-sum/z-filter";

/// Each of P2's items (packed, doubly exponentiated) assigned to the first segment
/// whose Z holds it: the positions per segment. An item matched by one segment is not
/// tested against later ones, so even a filter's false positive can never count an
/// item in two segments (or twice in the total).
fn assign_to_segments(z_sets: &[ReceivedSet<'_>], doubled: &[u8], width: usize) -> Vec<Vec<usize>> {
    let mut open: Vec<usize> = (0..doubled.len() / width).collect();
    let mut selections = Vec::with_capacity(z_sets.len());
    for z in z_sets {
        let hits = z.matching_among(doubled, width, &open);
        if !hits.is_empty() {
            // Both ascending: keep the open positions that are not hits.
            let mut next = hits.iter().peekable();
            open.retain(|j| {
                if next.peek() == Some(&j) {
                    next.next();
                    false
                } else {
                    true
                }
            });
        }
        selections.push(hits);
    }
    selections
}

/// P1: holds identifiers (optionally segmented); learns the cardinality per segment.
pub struct P1<C: CwPrf, H: HeChoice> {
    setup: Setup,
    state: P1State<C>,
    _he: PhantomData<H>,
}

enum P1State<C: CwPrf> {
    /// Before the session is established.
    Hellos,
    AwaitRound2 {
        /// k1 (Ion et al. 2020, Fig. 2).
        key: C::Key,
        peer: Hello,
    },
    Done(PiSumOutput),
}

impl<C: CwPrf, H: HeChoice> P1<C, H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P1, config, input),
            state: P1State::Hellos,
            _he: PhantomData,
        }
    }

    fn on_round2(
        &mut self,
        session: &mut Session<'_>,
        body: &[u8],
        key: &C::Key,
        peer: &Hello,
    ) -> Result<PiSumOutput, ProtocolError> {
        let params = H::params(&self.setup.config, peer);
        let mut r = Reader::new(body, "round 2");
        let pk = common::read_public_key::<H>(&mut r, &params)?;
        let segment_sizes = self.setup.hello.segment_sizes();
        let n2 = peer.items as usize;
        let lookups = z_lookups(segment_sizes.len(), peer.items);
        let filter_key = session.ctx.derive_key(FILTER_KEY);
        let mut z_sets = Vec::with_capacity(segment_sizes.len());
        for &size in &segment_sizes {
            let z = self.setup.hello.z.read(
                &mut r,
                size as usize,
                C::ELEMENT_LEN,
                lookups,
                &filter_key,
                "Z",
            )?;
            if let ReceivedSet::List { packed, .. } = &z {
                common::validate_elements::<C>(packed, "Z")?;
            }
            z_sets.push(z);
        }
        let theirs = r.take(checked_len(n2, C::ELEMENT_LEN, "P2's items")?)?;
        let columns = super::encrypted_columns(peer);
        let mut packed_columns = Vec::with_capacity(columns.len());
        for bounds in &columns {
            packed_columns.push(common::take_column::<H>(&mut r, &pk, bounds, true)?);
        }
        r.finish()?;

        let doubled = common::exponentiate_received::<C>(
            (session.meter, "round 3: exponentiating P2's items"),
            theirs,
            key,
            "P2's items",
        )?;
        let selections = assign_to_segments(&z_sets, &doubled, C::ELEMENT_LEN);
        common::send_sums::<H>(
            session,
            &self.setup,
            peer,
            &pk,
            &packed_columns,
            &selections,
        )
    }
}

impl<C: CwPrf, H: HeChoice> Protocol for P1<C, H> {
    type Output = PiSumOutput;

    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws k1 and sends round 1.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let key = C::random_key(session.rng);
        let dst = session.ctx.hash_dst(PROTOCOL, C::ID.suite());
        let order = common::segment_order(
            self.setup.input.segment_of.as_deref(),
            self.setup.hello.segment_count(),
            self.setup.input.ids.len(),
            session.rng,
        );
        let items = common::gather(&self.setup.input.ids, &order);
        let round1 = common::hash_exponentiate::<C, _>(
            (
                session.meter,
                "round 1: hashing and exponentiating our items",
            ),
            &dst,
            &items,
            &key,
        );
        session.send_owned(Role::P2.id(), kind::ROUND1, round1);
        self.state = P1State::AwaitRound2 { key, peer };
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match std::mem::replace(&mut self.state, P1State::Hellos) {
            P1State::AwaitRound2 { key, peer } => {
                let body = message.expect(kind::ROUND2)?;
                let output = self.on_round2(session, body, &key, &peer)?;
                self.state = P1State::Done(output);
                Ok(())
            }
            P1State::Hellos | P1State::Done(_) => Err(ProtocolError::ApiMisuse(
                "P1 received a message it does not wait for",
            )),
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P1State::AwaitRound2 { .. } => Some(Role::P2.id()),
            P1State::Hellos | P1State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let P1State::AwaitRound2 { peer, .. } = &self.state else {
            return 0;
        };
        let n2 = peer.items as usize;
        let segment_sizes = self.setup.hello.segment_sizes();
        let lookups = z_lookups(segment_sizes.len(), peer.items);
        let encoding = self.setup.hello.z;
        let z: usize = segment_sizes
            .iter()
            .map(|&s| encoding.max_len(s as usize, C::ELEMENT_LEN, lookups))
            .fold(0usize, usize::saturating_add);
        let values = common::max_columns_len::<H>(&self.setup.config, peer);
        (4 + common::MAX_PUBLIC_KEY_LEN)
            .saturating_add(z)
            .saturating_add(n2.saturating_mul(C::ELEMENT_LEN))
            .saturating_add(values)
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P1State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P1State::Hellos => "exchanging hellos".into(),
            P1State::AwaitRound2 { peer, .. } => format!(
                "waiting for P2's round 2 ({} items, {} exponentiations on receipt)",
                peer.items, peer.items
            ),
            P1State::Done(_) => "done".into(),
        }
    }

    fn into_output(self) -> Option<PiSumOutput> {
        match self.state {
            P1State::Done(output) => Some(output),
            _ => None,
        }
    }
}

/// P2: holds identifiers with values; learns the cardinality and the sums.
pub struct P2<C: CwPrf, H: HeChoice> {
    setup: Setup,
    state: P2State<C, H>,
}

enum P2State<C: CwPrf, H: HeChoice> {
    /// Before the session is established.
    Hellos,
    AwaitRound1(Box<Prepared<C, H>>),
    AwaitRound3(Box<Prepared<C, H>>),
    Done(PiSumOutput),
}

/// P2's work that does not depend on P1's items, done right after the hellos.
struct Prepared<C: CwPrf, H: HeChoice> {
    peer: Hello,
    /// k2 (Ion et al. 2020, Fig. 2).
    key: C::Key,
    /// Shuffled H(w)^k2.
    elements: Vec<u8>,
    /// The key and the encrypted values, in the same shuffled order.
    values: common::P2Values<H>,
}

impl<C: CwPrf, H: HeChoice> P2<C, H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P2, config, input),
            state: P2State::Hellos,
        }
    }

    fn on_round1(
        &self,
        session: &mut Session<'_>,
        body: &[u8],
        prep: &Prepared<C, H>,
    ) -> Result<(), ProtocolError> {
        let expected = checked_len(prep.peer.items as usize, C::ELEMENT_LEN, "round 1")?;
        if body.len() != expected {
            return Err(PeerMisbehaved::WrongLength {
                what: "round 1",
                got: body.len(),
                expected,
            }
            .into());
        }
        let doubled = common::exponentiate_received::<C>(
            (session.meter, "round 2: exponentiating P1's items"),
            body,
            &prep.key,
            "P1's items",
        )?;
        let mut round2 =
            Vec::with_capacity(body.len() + self.setup.hello.items as usize * C::ELEMENT_LEN);
        prep.values.put_key(&mut round2);
        let filter_key = session.ctx.derive_key(FILTER_KEY);
        let segment_sizes = prep.peer.segment_sizes();
        let lookups = z_lookups(segment_sizes.len(), self.setup.hello.items);
        let mut start = 0usize;
        for size in segment_sizes {
            let end = start + size as usize * C::ELEMENT_LEN;
            // One set per segment, shuffled within the segment only (Ion et al. 2020,
            // Sec. 3.4, segmented input), each filter built for all of P1's look-ups.
            round2.extend_from_slice(&self.setup.hello.z.encode(
                &doubled[start..end],
                C::ELEMENT_LEN,
                lookups,
                &filter_key,
                session.rng,
            )?);
            start = end;
        }
        round2.extend_from_slice(&prep.elements);
        prep.values.put_columns(&mut round2);
        session.send_owned(Role::P1.id(), kind::ROUND2, round2);
        Ok(())
    }
}

impl<C: CwPrf, H: HeChoice> Protocol for P2<C, H> {
    type Output = PiSumOutput;

    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws k2 and the homomorphic key pair, and does everything that does not depend
    /// on P1's items: H(w)^k2 and the encrypted values, shuffled.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let key = C::random_key(session.rng);
        let dst = session.ctx.hash_dst(PROTOCOL, C::ID.suite());
        let order = session.rng.permutation(self.setup.input.ids.len());
        let elements = common::hash_exponentiate::<C, _>(
            (
                session.meter,
                "round 2: hashing and exponentiating our items",
            ),
            &dst,
            &common::gather(&self.setup.input.ids, &order),
            &key,
        );
        let values = common::P2Values::encrypt(
            session,
            "round 2: encrypting our value columns",
            &self.setup,
            &order,
        )?;
        self.state = P2State::AwaitRound1(Box::new(Prepared {
            peer,
            key,
            elements,
            values,
        }));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, P2State::Hellos) {
            P2State::AwaitRound1(prep) => {
                let body = message.expect(kind::ROUND1)?;
                self.on_round1(session, body, &prep)?;
                P2State::AwaitRound3(prep)
            }
            P2State::AwaitRound3(prep) => {
                P2State::Done(prep.values.read_sums(message, &self.setup, &prep.peer)?)
            }
            P2State::Hellos | P2State::Done(_) => {
                return Err(ProtocolError::ApiMisuse(
                    "P2 received a message it does not wait for",
                ));
            }
        };
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P2State::AwaitRound1(_) | P2State::AwaitRound3(_) => Some(Role::P1.id()),
            P2State::Hellos | P2State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P2State::AwaitRound1(prep) => (prep.peer.items as usize).saturating_mul(C::ELEMENT_LEN),
            P2State::AwaitRound3(prep) => prep.values.max_sums_len(prep.peer.segment_count()),
            P2State::Hellos | P2State::Done(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P2State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P2State::Hellos => "exchanging hellos".into(),
            P2State::AwaitRound1(p) => format!("waiting for P1's round 1 ({} items)", p.peer.items),
            P2State::AwaitRound3(_) => {
                "waiting for P1's round 3 (P1 exponentiates and sums)".into()
            }
            P2State::Done(_) => "done".into(),
        }
    }

    fn into_output(self) -> Option<PiSumOutput> {
        match self.state {
            P2State::Done(output) => Some(output),
            _ => None,
        }
    }
}
