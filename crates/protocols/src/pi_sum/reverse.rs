//! The reverse protocol of seed 000 App. G, Fig. 6: P2 computes the intersection, P1
//! learns the sum.
//!
//! ```text
//! P1                                             P2
//!  hello ------------------------------------->  <- hello
//!                                           <-- reverse 1: pk, shuffled
//!                                               (H(w)^k2, AEnc(t)) one ct per item
//!  reverse 2: shuffled (H(w)^k1k2,
//!  AEnc(t + r)) and shuffled H(v)^k1  -------->
//!                                           <-- reverse 3: |J|, J, masked sum
//!                                               (or abort, threshold variant)
//!  P1 removes the masks of J.
//! ```
//!
//! Values cannot be packed here: P1 shuffles items one by one (seed 000 Sec. 3.4).

use std::collections::HashSet;
use std::marker::PhantomData;

use privset_crypto::ahe::{ColumnBounds, Mask};
use privset_crypto::group::PrimeGroup;

use super::common::{self, bad_ciphertext, checked_len, frame_len};
use super::{HeChoice, Hello, PROTOCOL, PiSumConfig, PiSumOutput, PiSumParty, Role, kind};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::party::Party;
use crate::session::{SessionContext, expect_kind};
use crate::wire::Reader;

/// P1 in the reverse variant: learns the cardinality and the sums.
pub struct P1<G: PrimeGroup, H: HeChoice> {
    core: common::PartyCore<G>,
    state: P1State<H>,
    _group: PhantomData<G>,
}

enum P1State<H: HeChoice> {
    AwaitHello,
    AwaitReverse1 { ctx: SessionContext, peer: Hello },
    AwaitReverse3(Box<Masked<H>>),
    Done,
    Failed,
}

/// What P1 keeps between reverse rounds 2 and 3.
struct Masked<H: HeChoice> {
    peer: Hello,
    pk: H::PublicKey,
    bounds: Vec<ColumnBounds>,
    /// Per column, the mask of each item in the order P1 sent them.
    masks: Vec<Vec<Mask>>,
}

impl<G: PrimeGroup, H: HeChoice> P1<G, H> {
    pub fn new(config: PiSumConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: common::PartyCore::start(Role::P1, config, input, seed),
            state: P1State::AwaitHello,
            _group: PhantomData,
        }
    }

    fn on_reverse1(
        &mut self,
        body: &[u8],
        ctx: &SessionContext,
        peer: Hello,
    ) -> Result<Masked<H>, ProtocolError> {
        let params = H::params(&self.core.config);
        let mut r = Reader::new(body, "reverse round 1");
        let pk = common::read_public_key::<H>(&mut r, &params)?;
        let n2 = peer.items as usize;
        let theirs = r.take(checked_len(n2, G::ELEMENT_LEN, "P2's items")?)?;
        let bounds = super::encrypted_columns(&peer);
        let mut columns = Vec::with_capacity(bounds.len());
        for b in &bounds {
            columns.push(common::take_column::<H>(&mut r, &pk, b, false)?);
        }
        r.finish()?;

        let doubled = common::exponentiate_received::<G>(theirs, &self.core.key, "P2's items")?;
        let order = self.core.rng.permutation(n2);
        let mut reverse2 = common::permute_blocks(&doubled, G::ELEMENT_LEN, &order);
        let ct_len = H::ciphertext_len(&pk);
        let mut masks = Vec::with_capacity(columns.len());
        for column in columns {
            let (masked, column_masks) = H::mask_each(&pk, column, &mut self.core.rng)
                .map_err(bad_ciphertext("P2's encrypted values"))?;
            reverse2.extend_from_slice(&common::permute_blocks(&masked, ct_len, &order));
            masks.push(
                order
                    .iter()
                    .map(|&i| column_masks[i as usize].clone())
                    .collect(),
            );
        }
        let dst = ctx.hash_dst(PROTOCOL, G::ID.suite());
        let mine = self.core.rng.permutation(self.core.input.ids.len());
        reverse2.extend_from_slice(&G::hash_mul_encode_batch(
            &dst,
            &common::gather(&self.core.input.ids, &mine),
            &self.core.key,
        ));
        self.core.channel.push(kind::REVERSE2, &reverse2);
        Ok(Masked {
            peer,
            pk,
            bounds,
            masks,
        })
    }

    fn on_reverse3(
        &mut self,
        body: &[u8],
        masked: &Masked<H>,
    ) -> Result<PiSumOutput, ProtocolError> {
        let mut r = Reader::new(body, "reverse round 3");
        let n2 = masked.peer.items;
        let cardinality = r.u64()?;
        if cardinality > n2.min(self.core.hello.items) {
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
        let (sums, sums_of_squares, variance) =
            super::summarize(sums, masked.peer.value_columns as usize, cardinality);
        Ok(PiSumOutput {
            role: Role::P1.name(),
            aborted: false,
            cardinality: Some(cardinality),
            sums: Some(sums),
            sums_of_squares,
            variance,
            segments: None,
            peer_items: n2,
        })
    }
}

impl<G: PrimeGroup, H: HeChoice> Party for P1<G, H> {
    fn id(&self) -> crate::party::PartyId {
        self.core.me
    }

    fn poll_outgoing(&mut self) -> Option<crate::party::Outgoing> {
        let to = 1 - self.core.me;
        self.core
            .channel
            .pop()
            .map(|bytes| crate::party::Outgoing { to, bytes })
    }

    fn awaiting(&self) -> Option<crate::party::PartyId> {
        (!self.is_finished()).then_some(1 - self.core.me)
    }

    fn handle_message(
        &mut self,
        _from: crate::party::PartyId,
        message: &[u8],
    ) -> Result<(), ProtocolError> {
        let state = std::mem::replace(&mut self.state, P1State::Failed);
        let frame = self.core.channel.open(message)?;
        self.state = match state {
            P1State::AwaitHello => {
                expect_kind(&frame, kind::HELLO, kind::name)?;
                let peer = Hello::decode(frame.body)?;
                self.core
                    .hello
                    .check_peer(&peer, self.core.config.max_peer_items)?;
                let ctx = SessionContext::new(PROTOCOL, &[self.core.hello.salt, peer.salt]);
                self.core.channel.establish(ctx.id);
                P1State::AwaitReverse1 { ctx, peer }
            }
            P1State::AwaitReverse1 { ctx, peer } => {
                expect_kind(&frame, kind::REVERSE1, kind::name)?;
                P1State::AwaitReverse3(Box::new(self.on_reverse1(frame.body, &ctx, peer)?))
            }
            P1State::AwaitReverse3(masked) => {
                if frame.kind == kind::ABORT {
                    Reader::new(frame.body, "abort").finish()?;
                    self.core.output = Some(PiSumOutput::told_aborted(Role::P1, masked.peer.items));
                } else {
                    expect_kind(&frame, kind::REVERSE3, kind::name)?;
                    self.core.output = Some(self.on_reverse3(frame.body, &masked)?);
                }
                P1State::Done
            }
            P1State::Done | P1State::Failed => {
                return Err(ProtocolError::ApiMisuse(
                    "P1 received a message after it finished",
                ));
            }
        };
        Ok(())
    }

    fn max_incoming_len(&self) -> usize {
        match &self.state {
            P1State::AwaitHello => super::hello::MAX_LEN,
            P1State::AwaitReverse1 { peer, .. } => {
                let n2 = peer.items as usize;
                let ct = H::max_ciphertext_len(&H::params(&self.core.config));
                let columns = super::encrypted_columns(peer).len();
                frame_len(
                    (4 + common::MAX_PUBLIC_KEY_LEN)
                        .saturating_add(n2.saturating_mul(G::ELEMENT_LEN))
                        .saturating_add(n2.saturating_mul(columns).saturating_mul(ct)),
                )
            }
            P1State::AwaitReverse3(m) => {
                let card = m.peer.items.min(self.core.hello.items) as usize;
                frame_len(
                    8usize
                        .saturating_add(card.saturating_mul(4))
                        .saturating_add(
                            m.bounds
                                .len()
                                .saturating_mul(4 + common::MAX_PUBLIC_KEY_LEN),
                        ),
                )
            }
            P1State::Done | P1State::Failed => 0,
        }
    }

    fn is_finished(&self) -> bool {
        matches!(self.state, P1State::Done) && !self.core.channel.has_outgoing()
    }

    fn status(&self) -> String {
        match &self.state {
            P1State::AwaitHello => "waiting for P2's hello".into(),
            P1State::AwaitReverse1 { peer, .. } => {
                format!("waiting for P2's items and values ({} items)", peer.items)
            }
            P1State::AwaitReverse3(_) => "waiting for P2's intersection and masked sum".into(),
            P1State::Done => "done".into(),
            P1State::Failed => "failed".into(),
        }
    }

    fn alerts(&self, error: &ProtocolError) -> Vec<crate::party::Outgoing> {
        let to = 1 - self.core.me;
        vec![crate::party::Outgoing {
            to,
            bytes: self.core.channel.alert(error),
        }]
    }
}

impl<G: PrimeGroup, H: HeChoice> PiSumParty for P1<G, H> {
    fn output(&self) -> Option<PiSumOutput> {
        if self.is_finished() {
            self.core.output.clone()
        } else {
            None
        }
    }
}

/// P2 in the reverse variant: holds the values and the key, computes the intersection,
/// learns only the cardinality.
pub struct P2<G: PrimeGroup, H: HeChoice> {
    core: common::PartyCore<G>,
    state: P2State<H>,
}

enum P2State<H: HeChoice> {
    AwaitHello,
    AwaitReverse2(Box<Keys<H>>),
    Done,
    Failed,
}

struct Keys<H: HeChoice> {
    peer: Hello,
    sk: H::SecretKey,
    pk: H::PublicKey,
}

impl<G: PrimeGroup, H: HeChoice> P2<G, H> {
    pub fn new(config: PiSumConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: common::PartyCore::start(Role::P2, config, input, seed),
            state: P2State::AwaitHello,
        }
    }

    fn on_hello(&mut self, body: &[u8]) -> Result<Keys<H>, ProtocolError> {
        let peer = Hello::decode(body)?;
        self.core
            .hello
            .check_peer(&peer, self.core.config.max_peer_items)?;
        let ctx = SessionContext::new(PROTOCOL, &[peer.salt, self.core.hello.salt]);
        self.core.channel.establish(ctx.id);
        let (pk, sk) = H::keygen(&H::params(&self.core.config), &mut self.core.rng);
        let dst = ctx.hash_dst(PROTOCOL, G::ID.suite());
        let order = self.core.rng.permutation(self.core.input.ids.len());
        let mut reverse1 = Vec::new();
        common::put_bytes(&mut reverse1, &H::encode_public_key(&pk));
        reverse1.extend_from_slice(&G::hash_mul_encode_batch(
            &dst,
            &common::gather(&self.core.input.ids, &order),
            &self.core.key,
        ));
        let bounds = super::encrypted_columns(&self.core.hello);
        for (col, b) in super::plaintext_columns(&self.core.config, &self.core.input)
            .iter()
            .zip(&bounds)
        {
            let shuffled: Vec<u64> = order.iter().map(|&i| col[i as usize]).collect();
            let cts = H::encrypt_each(&pk, &sk, b, &shuffled, &mut self.core.rng)
                .map_err(|e| ProtocolError::Config(format!("encrypting the values: {e}")))?;
            reverse1.extend_from_slice(&cts);
        }
        self.core.channel.push(kind::REVERSE1, &reverse1);
        Ok(Keys { peer, sk, pk })
    }

    fn on_reverse2(&mut self, body: &[u8], keys: &Keys<H>) -> Result<PiSumOutput, ProtocolError> {
        let n2 = self.core.hello.items as usize;
        let n1 = keys.peer.items as usize;
        let mut r = Reader::new(body, "reverse round 2");
        let doubled = r.take(checked_len(
            n2,
            G::ELEMENT_LEN,
            "doubly exponentiated items",
        )?)?;
        let ct_len = H::ciphertext_len(&keys.pk);
        let columns = super::encrypted_columns(&self.core.hello);
        let mut masked = Vec::with_capacity(columns.len());
        for _ in &columns {
            masked.push(r.take(checked_len(n2, ct_len, "masked values")?)?);
        }
        let theirs = r.take(checked_len(n1, G::ELEMENT_LEN, "P1's items")?)?;
        r.finish()?;
        common::validate_elements::<G>(doubled, "doubly exponentiated items")?;
        let p1_doubled = common::exponentiate_received::<G>(theirs, &self.core.key, "P1's items")?;
        let selected = common::matches_in_list(doubled, &p1_doubled, G::ELEMENT_LEN);
        let cardinality = selected.len() as u64;
        let output = PiSumOutput {
            role: Role::P2.name(),
            aborted: false,
            cardinality: Some(cardinality),
            sums: None,
            sums_of_squares: None,
            variance: None,
            segments: None,
            peer_items: keys.peer.items,
        };
        if let Some(t) = self.core.config.threshold
            && cardinality < t
        {
            self.core.channel.push(kind::ABORT, &[]);
            return Ok(PiSumOutput {
                aborted: true,
                ..output
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
        self.core.channel.push(kind::REVERSE3, &reverse3);
        Ok(output)
    }
}

impl<G: PrimeGroup, H: HeChoice> Party for P2<G, H> {
    fn id(&self) -> crate::party::PartyId {
        self.core.me
    }

    fn poll_outgoing(&mut self) -> Option<crate::party::Outgoing> {
        let to = 1 - self.core.me;
        self.core
            .channel
            .pop()
            .map(|bytes| crate::party::Outgoing { to, bytes })
    }

    fn awaiting(&self) -> Option<crate::party::PartyId> {
        (!self.is_finished()).then_some(1 - self.core.me)
    }

    fn handle_message(
        &mut self,
        _from: crate::party::PartyId,
        message: &[u8],
    ) -> Result<(), ProtocolError> {
        let state = std::mem::replace(&mut self.state, P2State::Failed);
        let frame = self.core.channel.open(message)?;
        self.state = match state {
            P2State::AwaitHello => {
                expect_kind(&frame, kind::HELLO, kind::name)?;
                P2State::AwaitReverse2(Box::new(self.on_hello(frame.body)?))
            }
            P2State::AwaitReverse2(keys) => {
                expect_kind(&frame, kind::REVERSE2, kind::name)?;
                self.core.output = Some(self.on_reverse2(frame.body, &keys)?);
                P2State::Done
            }
            P2State::Done | P2State::Failed => {
                return Err(ProtocolError::ApiMisuse(
                    "P2 received a message after it finished",
                ));
            }
        };
        Ok(())
    }

    fn max_incoming_len(&self) -> usize {
        match &self.state {
            P2State::AwaitHello => super::hello::MAX_LEN,
            P2State::AwaitReverse2(keys) => {
                let n2 = self.core.hello.items as usize;
                let columns = super::encrypted_columns(&self.core.hello).len();
                frame_len(
                    n2.saturating_mul(G::ELEMENT_LEN)
                        .saturating_add(
                            n2.saturating_mul(columns)
                                .saturating_mul(H::ciphertext_len(&keys.pk)),
                        )
                        .saturating_add((keys.peer.items as usize).saturating_mul(G::ELEMENT_LEN)),
                )
            }
            P2State::Done | P2State::Failed => 0,
        }
    }

    fn is_finished(&self) -> bool {
        matches!(self.state, P2State::Done) && !self.core.channel.has_outgoing()
    }

    fn status(&self) -> String {
        match &self.state {
            P2State::AwaitHello => "waiting for P1's hello".into(),
            P2State::AwaitReverse2(_) => "waiting for P1's masked values and items".into(),
            P2State::Done => "done".into(),
            P2State::Failed => "failed".into(),
        }
    }

    fn alerts(&self, error: &ProtocolError) -> Vec<crate::party::Outgoing> {
        let to = 1 - self.core.me;
        vec![crate::party::Outgoing {
            to,
            bytes: self.core.channel.alert(error),
        }]
    }
}

impl<G: PrimeGroup, H: HeChoice> PiSumParty for P2<G, H> {
    fn output(&self) -> Option<PiSumOutput> {
        if self.is_finished() {
            self.core.output.clone()
        } else {
            None
        }
    }
}
