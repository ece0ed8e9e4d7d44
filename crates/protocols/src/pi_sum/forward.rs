//! The forward protocol of seed 000 Fig. 2: P1 computes the intersection and the
//! encrypted sum; P2 decrypts it.
//!
//! ```text
//! P1                                             P2
//!  hello ------------------------------------->  <- hello
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

use privset_crypto::ahe::ColumnBounds;
use privset_crypto::filter::{self, FilterParams, SetFilter};
use privset_crypto::group::PrimeGroup;

use super::common::{self, bad_ciphertext, checked_len, frame_len};
use super::{
    HeChoice, Hello, PROTOCOL, PiSumConfig, PiSumOutput, PiSumParty, Role, SegmentResult,
    ZEncoding, kind,
};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::party::Party;
use crate::session::{SessionContext, expect_kind};
use crate::wire::Reader;

/// Keyed-hash purpose of the Z filter.
const FILTER_KEY: &str = "pi-sum/z-filter";

/// P1: holds identifiers (optionally segmented); learns the cardinality per segment.
pub struct P1<G: PrimeGroup, H: HeChoice> {
    core: common::PartyCore<G>,
    state: P1State,
    _he: PhantomData<H>,
}

enum P1State {
    AwaitHello,
    AwaitRound2 { ctx: SessionContext, peer: Hello },
    Done,
    Failed,
}

impl<G: PrimeGroup, H: HeChoice> P1<G, H> {
    pub fn new(config: PiSumConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: common::PartyCore::start(Role::P1, config, input, seed),
            state: P1State::AwaitHello,
            _he: PhantomData,
        }
    }

    fn on_hello(&mut self, body: &[u8]) -> Result<P1State, ProtocolError> {
        let peer = Hello::decode(body)?;
        self.core
            .hello
            .check_peer(&peer, self.core.config.max_peer_items)?;
        let ctx = SessionContext::new(PROTOCOL, &[self.core.hello.salt, peer.salt]);
        self.core.channel.establish(ctx.id);
        let dst = ctx.hash_dst(PROTOCOL, G::ID.suite());
        let order = common::segment_order(
            self.core.input.segment_of.as_deref(),
            self.core.hello.segment_count(),
            self.core.input.ids.len(),
            &mut self.core.rng,
        );
        let items = common::gather(&self.core.input.ids, &order);
        let round1 = G::hash_mul_encode_batch(&dst, &items, &self.core.key);
        self.core.channel.push(kind::ROUND1, &round1);
        Ok(P1State::AwaitRound2 { ctx, peer })
    }

    fn on_round2(
        &mut self,
        body: &[u8],
        ctx: &SessionContext,
        peer: &Hello,
    ) -> Result<(), ProtocolError> {
        let params = H::params(&self.core.config);
        let mut r = Reader::new(body, "round 2");
        let pk = common::read_public_key::<H>(&mut r, &params)?;
        let segment_sizes = self.core.hello.segment_sizes();
        let n2 = peer.items as usize;
        let filter_key = ctx.derive_key(FILTER_KEY);
        let mut z_sets = Vec::with_capacity(segment_sizes.len());
        for &size in &segment_sizes {
            z_sets.push(match self.core.hello.z {
                ZEncoding::List => {
                    let z = r.take(checked_len(size as usize, G::ELEMENT_LEN, "Z")?)?;
                    common::validate_elements::<G>(z, "Z")?;
                    ZSet::List(z)
                }
                ZEncoding::Filter(kind) => {
                    let params = FilterParams {
                        kind,
                        elements: size as usize,
                        queries: n2,
                    };
                    let bytes = r.bytes(params.max_encoded_len())?;
                    let f = SetFilter::decode(&params, &filter_key, bytes)
                        .map_err(|source| PeerMisbehaved::InvalidFilter { what: "Z", source })?;
                    ZSet::Filter(f)
                }
            });
        }
        let theirs = r.take(checked_len(n2, G::ELEMENT_LEN, "P2's items")?)?;
        let columns = super::encrypted_columns(peer);
        let mut packed_columns = Vec::with_capacity(columns.len());
        for bounds in &columns {
            packed_columns.push(common::take_column::<H>(&mut r, &pk, bounds, true)?);
        }
        r.finish()?;

        let doubled = common::exponentiate_received::<G>(theirs, &self.core.key, "P2's items")?;
        let selections: Vec<Vec<usize>> = z_sets
            .iter()
            .map(|z| match z {
                ZSet::List(members) => common::matches_in_list(&doubled, members, G::ELEMENT_LEN),
                ZSet::Filter(f) => {
                    common::matching_positions(&doubled, G::ELEMENT_LEN, |e| f.contains(e))
                }
            })
            .collect();
        let cardinality: u64 = selections.iter().map(|s| s.len() as u64).sum();
        let segment_results = self.segment_results(&selections);

        if let Some(t) = self.core.config.threshold
            && cardinality < t
        {
            self.core.channel.push(kind::ABORT, &[]);
            self.core.output = Some(self.p1_output(true, cardinality, peer, segment_results));
            return Ok(());
        }
        let mut round3 = Vec::new();
        for selected in &selections {
            round3.extend_from_slice(&(selected.len() as u64).to_be_bytes());
            for (bounds, column) in columns.iter().zip(&packed_columns) {
                let sum = H::sum_selected(&pk, bounds, column, selected, &mut self.core.rng)
                    .map_err(bad_ciphertext("P2's encrypted values"))?;
                round3.extend_from_slice(&sum);
            }
        }
        self.core.channel.push(kind::ROUND3, &round3);
        self.core.output = Some(self.p1_output(false, cardinality, peer, segment_results));
        Ok(())
    }

    fn segment_results(&self, selections: &[Vec<usize>]) -> Option<Vec<SegmentResult>> {
        self.core.input.segment_of.as_ref()?;
        Some(
            selections
                .iter()
                .zip(&self.core.input.segment_names)
                .map(|(s, name)| SegmentResult {
                    segment: name.clone(),
                    cardinality: s.len() as u64,
                    sums: None,
                })
                .collect(),
        )
    }

    fn p1_output(
        &self,
        aborted: bool,
        cardinality: u64,
        peer: &Hello,
        segments: Option<Vec<SegmentResult>>,
    ) -> PiSumOutput {
        PiSumOutput {
            role: Role::P1.name(),
            aborted,
            cardinality: Some(cardinality),
            sums: None,
            sums_of_squares: None,
            variance: None,
            segments,
            peer_items: peer.items,
        }
    }
}

enum ZSet<'a> {
    List(&'a [u8]),
    Filter(SetFilter),
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
                self.on_hello(frame.body)?
            }
            P1State::AwaitRound2 { ctx, peer } => {
                expect_kind(&frame, kind::ROUND2, kind::name)?;
                self.on_round2(frame.body, &ctx, &peer)?;
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
            P1State::AwaitRound2 { peer, .. } => {
                let params = H::params(&self.core.config);
                let n2 = peer.items as usize;
                let z: usize = self
                    .core
                    .hello
                    .segment_sizes()
                    .iter()
                    .map(|&s| match self.core.hello.z {
                        ZEncoding::List => (s as usize).saturating_mul(G::ELEMENT_LEN),
                        ZEncoding::Filter(kind) => {
                            4 + FilterParams {
                                kind,
                                elements: s as usize,
                                queries: n2,
                            }
                            .max_encoded_len()
                        }
                    })
                    .fold(0usize, usize::saturating_add);
                let columns = super::encrypted_columns(peer).len();
                let values = n2
                    .saturating_mul(columns)
                    .saturating_mul(H::max_ciphertext_len(&params));
                frame_len(
                    (4 + common::MAX_PUBLIC_KEY_LEN)
                        .saturating_add(z)
                        .saturating_add(n2.saturating_mul(G::ELEMENT_LEN))
                        .saturating_add(values),
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
            P1State::AwaitRound2 { peer, .. } => {
                format!(
                    "waiting for P2's round 2 ({} items, {} exponentiations on receipt)",
                    peer.items, peer.items
                )
            }
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

/// P2: holds identifiers with values; learns the cardinality and the sums.
pub struct P2<G: PrimeGroup, H: HeChoice> {
    core: common::PartyCore<G>,
    state: P2State<H>,
}

enum P2State<H: HeChoice> {
    AwaitHello,
    AwaitRound1(Box<Prepared<H>>),
    AwaitRound3(Box<Prepared<H>>),
    Done,
    Failed,
}

/// P2's work that does not depend on P1's items, done right after the hellos.
struct Prepared<H: HeChoice> {
    ctx: SessionContext,
    peer: Hello,
    pk: H::PublicKey,
    sk: H::SecretKey,
    /// Shuffled H(w)^k2.
    elements: Vec<u8>,
    /// Packed ciphertexts per encrypted column, in the same shuffled order.
    columns: Vec<Vec<u8>>,
    bounds: Vec<ColumnBounds>,
}

impl<G: PrimeGroup, H: HeChoice> P2<G, H> {
    pub fn new(config: PiSumConfig, input: Dataset, seed: [u8; 32]) -> Self {
        Self {
            core: common::PartyCore::start(Role::P2, config, input, seed),
            state: P2State::AwaitHello,
        }
    }

    fn on_hello(&mut self, body: &[u8]) -> Result<Prepared<H>, ProtocolError> {
        let peer = Hello::decode(body)?;
        self.core
            .hello
            .check_peer(&peer, self.core.config.max_peer_items)?;
        let ctx = SessionContext::new(PROTOCOL, &[peer.salt, self.core.hello.salt]);
        self.core.channel.establish(ctx.id);
        let dst = ctx.hash_dst(PROTOCOL, G::ID.suite());
        let (pk, sk) = H::keygen(&H::params(&self.core.config), &mut self.core.rng);
        let order = self.core.rng.permutation(self.core.input.ids.len());
        let elements = G::hash_mul_encode_batch(
            &dst,
            &common::gather(&self.core.input.ids, &order),
            &self.core.key,
        );
        let bounds = super::encrypted_columns(&self.core.hello);
        let columns = super::plaintext_columns(&self.core.config, &self.core.input)
            .iter()
            .zip(&bounds)
            .map(|(col, b)| {
                let shuffled: Vec<u64> = order.iter().map(|&i| col[i as usize]).collect();
                H::encrypt_column(&pk, &sk, b, &shuffled, &mut self.core.rng)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProtocolError::Config(format!("encrypting the values: {e}")))?;
        Ok(Prepared {
            ctx,
            peer,
            pk,
            sk,
            elements,
            columns,
            bounds,
        })
    }

    fn on_round1(&mut self, body: &[u8], prep: &Prepared<H>) -> Result<(), ProtocolError> {
        let expected = checked_len(prep.peer.items as usize, G::ELEMENT_LEN, "round 1")?;
        if body.len() != expected {
            return Err(PeerMisbehaved::WrongLength {
                what: "round 1",
                got: body.len(),
                expected,
            }
            .into());
        }
        let doubled = common::exponentiate_received::<G>(body, &self.core.key, "P1's items")?;
        let mut round2 =
            Vec::with_capacity(body.len() + self.core.hello.items as usize * G::ELEMENT_LEN);
        common::put_bytes(&mut round2, &H::encode_public_key(&prep.pk));
        let filter_key = prep.ctx.derive_key(FILTER_KEY);
        let mut start = 0usize;
        for size in prep.peer.segment_sizes() {
            let end = start + size as usize * G::ELEMENT_LEN;
            // Shuffle within the segment only (seed 000 Sec. 3.4, segmented input).
            let order = self.core.rng.permutation(size as usize);
            let z = common::permute_blocks(&doubled[start..end], G::ELEMENT_LEN, &order);
            match self.core.hello.z {
                ZEncoding::List => round2.extend_from_slice(&z),
                ZEncoding::Filter(kind) => {
                    let params = FilterParams {
                        kind,
                        elements: size as usize,
                        queries: self.core.hello.items as usize,
                    };
                    common::put_bytes(
                        &mut round2,
                        &filter::encode(&params, &filter_key, &z, G::ELEMENT_LEN),
                    );
                }
            }
            start = end;
        }
        round2.extend_from_slice(&prep.elements);
        for column in &prep.columns {
            round2.extend_from_slice(column);
        }
        self.core.channel.push(kind::ROUND2, &round2);
        Ok(())
    }

    fn on_round3(&mut self, body: &[u8], prep: &Prepared<H>) -> Result<PiSumOutput, ProtocolError> {
        let mut r = Reader::new(body, "round 3");
        let segment_sizes = prep.peer.segment_sizes();
        let value_columns = self.core.input.columns.len();
        let mut segments = Vec::with_capacity(segment_sizes.len());
        let mut totals = vec![0u128; prep.bounds.len()];
        let mut cardinality = 0u64;
        for (index, &size) in segment_sizes.iter().enumerate() {
            let card = r.u64()?;
            if card > size.min(self.core.hello.items) {
                return Err(PeerMisbehaved::Inconsistent(format!(
                    "segment {index}: cardinality {card} exceeds the smaller set size"
                ))
                .into());
            }
            cardinality += card;
            let mut sums = Vec::with_capacity(prep.bounds.len());
            for (c, bounds) in prep.bounds.iter().enumerate() {
                let n =
                    H::sum_ciphertexts(&prep.pk, bounds).map_err(bad_ciphertext("sum layout"))?;
                let bytes = r.take(checked_len(
                    n,
                    H::ciphertext_len(&prep.pk),
                    "encrypted sum",
                )?)?;
                let sum = H::decrypt_sum(&prep.sk, bounds, bytes)
                    .map_err(bad_ciphertext("P1's encrypted sum"))?;
                totals[c] += sum;
                sums.push(sum);
            }
            segments.push(SegmentResult {
                segment: index.to_string(),
                cardinality: card,
                sums: Some(sums),
            });
        }
        r.finish()?;
        let (sums, sums_of_squares, variance) =
            super::summarize(totals, value_columns, cardinality);
        if !prep.peer.segments.is_empty() {
            for s in &mut segments {
                s.sums = s.sums.take().map(|v| v[..value_columns].to_vec());
            }
        }
        Ok(PiSumOutput {
            role: Role::P2.name(),
            aborted: false,
            cardinality: Some(cardinality),
            sums: Some(sums),
            sums_of_squares,
            variance,
            segments: (!prep.peer.segments.is_empty()).then_some(segments),
            peer_items: prep.peer.items,
        })
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
                P2State::AwaitRound1(Box::new(self.on_hello(frame.body)?))
            }
            P2State::AwaitRound1(prep) => {
                expect_kind(&frame, kind::ROUND1, kind::name)?;
                self.on_round1(frame.body, &prep)?;
                P2State::AwaitRound3(prep)
            }
            P2State::AwaitRound3(prep) => {
                if frame.kind == kind::ABORT {
                    Reader::new(frame.body, "abort").finish()?;
                    self.core.output = Some(PiSumOutput::told_aborted(Role::P2, prep.peer.items));
                } else {
                    expect_kind(&frame, kind::ROUND3, kind::name)?;
                    self.core.output = Some(self.on_round3(frame.body, &prep)?);
                }
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
            P2State::AwaitRound1(prep) => {
                frame_len((prep.peer.items as usize).saturating_mul(G::ELEMENT_LEN))
            }
            P2State::AwaitRound3(prep) => {
                let per_segment: usize = prep
                    .bounds
                    .iter()
                    .map(|b| {
                        H::sum_ciphertexts(&prep.pk, b)
                            .unwrap_or(0)
                            .saturating_mul(H::ciphertext_len(&prep.pk))
                    })
                    .fold(8usize, usize::saturating_add);
                frame_len(per_segment.saturating_mul(prep.peer.segment_count()))
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
            P2State::AwaitRound1(p) => format!("waiting for P1's round 1 ({} items)", p.peer.items),
            P2State::AwaitRound3(_) => {
                "waiting for P1's round 3 (P1 exponentiates and sums)".into()
            }
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
