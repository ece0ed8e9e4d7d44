//! The reverse protocol (Ion et al. 2020, App. G, Fig. 6): P2 computes the intersection,
//! P1 learns the sum.
//!
//! ```text
//! P1 (participant 0)                             P2 (participant 1)
//!  hello (salt, settings) --------------------->  <- hello (salt, settings)
//!                                           <-- reverse 1: pk, shuffled
//!                                               (H(w)^k2, AEnc(t)) one ct per item
//!  reverse 2: shuffled (H(w)^k1k2,
//!  AEnc(t + r)) and shuffled H(v)^k1  -------->
//!                                           <-- reverse 3: |J|, J, masked sum
//!                                               (or abort, threshold variant)
//!  P1 removes the masks of J.
//! ```
//!
//! Values cannot be packed here: P1 shuffles items one by one (Ion et al. 2020,
//! Sec. 3.4).

use std::collections::HashSet;

use privset_crypto::ahe::{ColumnBounds, Mask};
use privset_crypto::cwprf::CwPrf;

use super::common::{self, Setup, bad_ciphertext, checked_len};
use super::{HeChoice, Hello, PROTOCOL, PiSumConfig, PiSumOutput, Role, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{PartyId, Reader};

/// P1 in the reverse variant: learns the cardinality and the sums.
pub struct P1<C: CwPrf, H: HeChoice> {
    setup: Setup,
    state: P1State<C, H>,
}

enum P1State<C: CwPrf, H: HeChoice> {
    /// Before the session is established.
    Hellos,
    AwaitReverse1 {
        /// k1 (Ion et al. 2020, Fig. 6).
        key: C::Key,
        peer: Hello,
    },
    AwaitReverse3(Box<Masked<H>>),
    Done(PiSumOutput),
}

/// What P1 keeps between reverse rounds 2 and 3.
struct Masked<H: HeChoice> {
    peer: Hello,
    pk: H::PublicKey,
    bounds: Vec<ColumnBounds>,
    /// Per column, the mask of each item in the order P1 sent them.
    masks: Vec<Vec<Mask>>,
}

impl<C: CwPrf, H: HeChoice> P1<C, H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P1, config, input),
            state: P1State::Hellos,
        }
    }

    fn on_reverse1(
        &self,
        session: &mut Session<'_>,
        body: &[u8],
        key: &C::Key,
        peer: Hello,
    ) -> Result<Masked<H>, ProtocolError> {
        let params = H::params(&self.setup.config, &peer);
        let mut r = Reader::new(body, "reverse round 1");
        let pk = common::read_public_key::<H>(&mut r, &params)?;
        let n2 = peer.items as usize;
        let theirs = r.take(checked_len(n2, C::ELEMENT_LEN, "P2's items")?)?;
        let bounds = super::encrypted_columns(&peer);
        let mut columns = Vec::with_capacity(bounds.len());
        for b in &bounds {
            columns.push(common::take_column::<H>(&mut r, &pk, b, false)?);
        }
        r.finish()?;

        let doubled = common::exponentiate_received::<C>(
            (session.meter, "reverse 2: exponentiating P2's items"),
            theirs,
            key,
            "P2's items",
        )?;
        let order = session.rng.permutation(n2);
        let ct_len = H::ciphertext_len(&pk);
        let mine = session.rng.permutation(self.setup.input.ids.len());
        // The whole message in one allocation, each part shuffled straight into it: at
        // 2^20 items a column is 400 MB, and P1 should hold it about twice, not four
        // times.
        let mut reverse2 = Vec::with_capacity(
            (C::ELEMENT_LEN + columns.len() * ct_len) * n2 + C::ELEMENT_LEN * mine.len(),
        );
        common::permute_blocks_into(&mut reverse2, &doubled, C::ELEMENT_LEN, &order);
        drop(doubled);
        let mut masks = Vec::with_capacity(columns.len());
        for column in columns {
            let (masked, mut column_masks) = H::mask_each(&pk, column, session.rng)
                .map_err(bad_ciphertext("P2's encrypted values"))?;
            common::permute_blocks_into(&mut reverse2, &masked, ct_len, &order);
            drop(masked);
            masks.push(
                order
                    .iter()
                    .map(|&i| Mask(std::mem::take(&mut column_masks[i as usize].0)))
                    .collect(),
            );
        }
        let dst = session.ctx.hash_dst(PROTOCOL, C::ID.suite());
        reverse2.extend_from_slice(&common::hash_exponentiate::<C, _>(
            (
                session.meter,
                "reverse 2: hashing and exponentiating our items",
            ),
            &dst,
            &common::gather(&self.setup.input.ids, &mine),
            key,
        ));
        session.send_owned(Role::P2.id(), kind::REVERSE2, reverse2);
        Ok(Masked {
            peer,
            pk,
            bounds,
            masks,
        })
    }

    fn on_reverse3(&self, body: &[u8], masked: &Masked<H>) -> Result<PiSumOutput, ProtocolError> {
        let mut r = Reader::new(body, "reverse round 3");
        let n2 = masked.peer.items;
        let cardinality = r.u64()?;
        if cardinality > n2.min(self.setup.hello.items) {
            return Err(PeerMisbehaved::Inconsistent(format!(
                "cardinality {cardinality} exceeds the smaller set size"
            ))
            .into());
        }
        let mut selected = Vec::with_capacity(cardinality as usize);
        let mut seen = HashSet::with_capacity(cardinality as usize);
        for _ in 0..cardinality {
            let j = r.u32()? as usize;
            if j as u64 >= n2 || !seen.insert(j) {
                return Err(PeerMisbehaved::Inconsistent(format!(
                    "intersection index {j} is out of range or repeated"
                ))
                .into());
            }
            selected.push(j);
        }
        let mut sums = Vec::with_capacity(masked.bounds.len());
        for (bounds, masks) in masked.bounds.iter().zip(&masked.masks) {
            let opened = r.bytes(common::MAX_PUBLIC_KEY_LEN)?;
            sums.push(
                H::unmask_sum(&masked.pk, bounds, opened, masks, &selected)
                    .map_err(bad_ciphertext("P2's masked sum"))?,
            );
        }
        r.finish()?;
        Ok(PiSumOutput::with_sums(
            cardinality,
            sums,
            masked.peer.value_columns as usize,
            None,
            n2,
        ))
    }
}

impl<C: CwPrf, H: HeChoice> Protocol for P1<C, H> {
    type Output = PiSumOutput;

    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws k1; P2 speaks first.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let key = C::random_key(session.rng);
        self.state = P1State::AwaitReverse1 { key, peer };
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, P1State::Hellos) {
            P1State::AwaitReverse1 { key, peer } => {
                let body = message.expect(kind::REVERSE1)?;
                P1State::AwaitReverse3(Box::new(self.on_reverse1(session, body, &key, peer)?))
            }
            P1State::AwaitReverse3(masked) => {
                if message.kind == kind::ABORT {
                    Reader::new(message.body, "abort").finish()?;
                    P1State::Done(PiSumOutput::Aborted {
                        peer_items: masked.peer.items,
                    })
                } else {
                    let body = message.expect(kind::REVERSE3)?;
                    P1State::Done(self.on_reverse3(body, &masked)?)
                }
            }
            P1State::Hellos | P1State::Done(_) => {
                return Err(ProtocolError::ApiMisuse(
                    "P1 received a message it does not wait for",
                ));
            }
        };
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P1State::AwaitReverse1 { .. } | P1State::AwaitReverse3(_) => Some(Role::P2.id()),
            P1State::Hellos | P1State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P1State::AwaitReverse1 { peer, .. } => {
                let n2 = peer.items as usize;
                let ct = H::max_ciphertext_len(&H::params(&self.setup.config, peer));
                let columns = super::encrypted_columns(peer).len();
                (4 + common::MAX_PUBLIC_KEY_LEN)
                    .saturating_add(n2.saturating_mul(C::ELEMENT_LEN))
                    .saturating_add(n2.saturating_mul(columns).saturating_mul(ct))
            }
            P1State::AwaitReverse3(m) => {
                let card = m.peer.items.min(self.setup.hello.items) as usize;
                8usize
                    .saturating_add(card.saturating_mul(4))
                    .saturating_add(
                        m.bounds
                            .len()
                            .saturating_mul(4 + common::MAX_PUBLIC_KEY_LEN),
                    )
            }
            P1State::Hellos | P1State::Done(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P1State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P1State::Hellos => "exchanging hellos".into(),
            P1State::AwaitReverse1 { peer, .. } => {
                format!("waiting for P2's items and values ({} items)", peer.items)
            }
            P1State::AwaitReverse3(_) => "waiting for P2's intersection and masked sum".into(),
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

/// P2 in the reverse variant: holds the values and the key, computes the intersection,
/// learns only the cardinality.
pub struct P2<C: CwPrf, H: HeChoice> {
    setup: Setup,
    state: P2State<C, H>,
}

enum P2State<C: CwPrf, H: HeChoice> {
    /// Before the session is established.
    Hellos,
    AwaitReverse2(Box<Keys<C, H>>),
    Done(PiSumOutput),
}

struct Keys<C: CwPrf, H: HeChoice> {
    peer: Hello,
    /// k2 (Ion et al. 2020, Fig. 6).
    key: C::Key,
    sk: H::SecretKey,
    pk: H::PublicKey,
}

impl<C: CwPrf, H: HeChoice> P2<C, H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P2, config, input),
            state: P2State::Hellos,
        }
    }

    fn on_reverse2(
        &self,
        session: &mut Session<'_>,
        body: &[u8],
        keys: &Keys<C, H>,
    ) -> Result<PiSumOutput, ProtocolError> {
        let n2 = self.setup.hello.items as usize;
        let n1 = keys.peer.items as usize;
        let mut r = Reader::new(body, "reverse round 2");
        let doubled = r.take(checked_len(
            n2,
            C::ELEMENT_LEN,
            "doubly exponentiated items",
        )?)?;
        let ct_len = H::ciphertext_len(&keys.pk);
        let columns = super::encrypted_columns(&self.setup.hello);
        let mut masked = Vec::with_capacity(columns.len());
        for _ in &columns {
            masked.push(r.take(checked_len(n2, ct_len, "masked values")?)?);
        }
        let theirs = r.take(checked_len(n1, C::ELEMENT_LEN, "P1's items")?)?;
        r.finish()?;
        common::validate_elements::<C>(doubled, "doubly exponentiated items")?;
        let p1_doubled = common::exponentiate_received::<C>(
            (session.meter, "reverse 3: exponentiating P1's items"),
            theirs,
            &keys.key,
            "P1's items",
        )?;
        let selected = common::matches_in_list(doubled, &p1_doubled, C::ELEMENT_LEN);
        let cardinality = selected.len() as u64;
        let to = Role::P1.id();
        if let Some(t) = self.setup.config.threshold
            && cardinality < t
        {
            session.send(to, kind::ABORT, &[]);
            return Ok(PiSumOutput::Cardinality {
                cardinality,
                aborted: true,
                segments: None,
                peer_items: keys.peer.items,
            });
        }
        let mut reverse3 = Vec::with_capacity(8 + 4 * selected.len());
        reverse3.extend_from_slice(&cardinality.to_be_bytes());
        for &j in &selected {
            reverse3.extend_from_slice(&(j as u32).to_be_bytes());
        }
        for column in masked {
            let opened = H::open_masked_sum(&keys.sk, column, &selected)
                .map_err(bad_ciphertext("P1's masked values"))?;
            common::put_bytes(&mut reverse3, &opened);
        }
        session.send(to, kind::REVERSE3, &reverse3);
        Ok(PiSumOutput::Cardinality {
            cardinality,
            aborted: false,
            segments: None,
            peer_items: keys.peer.items,
        })
    }
}

impl<C: CwPrf, H: HeChoice> Protocol for P2<C, H> {
    type Output = PiSumOutput;

    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws k2 and the homomorphic key pair and sends reverse round 1: H(w)^k2 and the
    /// values encrypted one ciphertext per item, shuffled.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let key = C::random_key(session.rng);
        let (pk, sk) = H::keygen(
            &H::params(&self.setup.config, &self.setup.hello),
            session.rng,
        );
        let dst = session.ctx.hash_dst(PROTOCOL, C::ID.suite());
        let order = session.rng.permutation(self.setup.input.ids.len());
        let mut reverse1 = Vec::new();
        common::put_bytes(&mut reverse1, &H::encode_public_key(&pk));
        reverse1.extend_from_slice(&common::hash_exponentiate::<C, _>(
            (
                session.meter,
                "reverse 1: hashing and exponentiating our items",
            ),
            &dst,
            &common::gather(&self.setup.input.ids, &order),
            &key,
        ));
        let bounds = super::encrypted_columns(&self.setup.hello);
        for (col, b) in super::plaintext_columns(&self.setup.config, &self.setup.input.columns)
            .iter()
            .zip(&bounds)
        {
            let shuffled: Vec<u64> = order.iter().map(|&i| col[i as usize]).collect();
            let cts = H::encrypt_each(&pk, &sk, b, &shuffled, session.rng)
                .map_err(|e| ProtocolError::Config(format!("encrypting the values: {e}")))?;
            reverse1.extend_from_slice(&cts);
        }
        session.send_owned(Role::P1.id(), kind::REVERSE1, reverse1);
        self.state = P2State::AwaitReverse2(Box::new(Keys { peer, key, sk, pk }));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match std::mem::replace(&mut self.state, P2State::Hellos) {
            P2State::AwaitReverse2(keys) => {
                let body = message.expect(kind::REVERSE2)?;
                self.state = P2State::Done(self.on_reverse2(session, body, &keys)?);
                Ok(())
            }
            P2State::Hellos | P2State::Done(_) => Err(ProtocolError::ApiMisuse(
                "P2 received a message it does not wait for",
            )),
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P2State::AwaitReverse2(_) => Some(Role::P1.id()),
            P2State::Hellos | P2State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P2State::AwaitReverse2(keys) => {
                let n2 = self.setup.hello.items as usize;
                let columns = super::encrypted_columns(&self.setup.hello).len();
                n2.saturating_mul(C::ELEMENT_LEN)
                    .saturating_add(
                        n2.saturating_mul(columns)
                            .saturating_mul(H::ciphertext_len(&keys.pk)),
                    )
                    .saturating_add((keys.peer.items as usize).saturating_mul(C::ELEMENT_LEN))
            }
            P2State::Hellos | P2State::Done(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P2State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P2State::Hellos => "exchanging hellos".into(),
            P2State::AwaitReverse2(_) => "waiting for P1's masked values and items".into(),
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
