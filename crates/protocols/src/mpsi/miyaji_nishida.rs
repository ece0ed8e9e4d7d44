//! Miyaji and Nishida's protocol (de Jong, Ch. 4): encrypted Bloom filters summed by a
//! dealer, decrypted by every party with every party's shares, passed on by a relay.
//!
//! ```text
//!   party i (1..=t)                 relay R of the chunk      dealer (participant 0)
//!     key contribution ---------------> (and to the dealer) ------>
//!     for each chunk c of the filter (R = 1 + c mod t):
//!       Enc(BF_i[chunk]) ------------------------------------------>
//!                                                  M_j = ReRand(r_j (Σ_i BF_i[j] − t))
//!                     <-------------------------------------------- M[chunk]
//!       shares of M[chunk] ----------> R
//!                     <------------- the sums of every party's shares (ElGamal)
//!       proof of correct decryption --> (every other party)
//!                     <------------- their proofs
//!                     <------------- R's verdict: its own check passed
//!       F[j] = 1 iff M_j decrypts to zero (every filter has bit j)
//!     output: own items whose k bits are all set in F
//! ```
//!
//! Every filter has the same size, fixed by the largest bound any party announced on
//! every party's set size (`MpsiConfig::max_items`): the parties and the dealer learn
//! that bound, not the sizes. The chunks move in lock step (a party sends its next
//! filter chunk as soon as it has the dealer's answer for the current one), so no party
//! ever holds more than a chunk of ciphertexts besides its filter's bits.
//!
//! The shares go to the chunk's relay, and the proofs to everybody once the relay has
//! passed the shares on (`ThresholdAhe::Mesh`): with threshold ElGamal the relay sends
//! the shares' sums, so a party decodes one point per position where a full mesh had it
//! decode every other party's share, and every party checks all the shares it decrypts
//! with at once (`privset_crypto::tahe::elgamal`'s `mesh` module). The relay holds every
//! party's shares and names the one that is wrong; another party's check can fail only
//! if the relay's sums are wrong or the relay's own check failed first, so it finishes
//! a chunk only after the relay's verdict, an empty message the relay sends once its
//! own check passed, and then names the relay.

use std::sync::Arc;

use privset_crypto::filter::bloom::{BloomParams, element_words};
use privset_crypto::tahe::TaheError;
use privset_crypto::tahe::elgamal::joint::CONTRIBUTION_LEN;

use super::scheme::Scheme;
use super::setup::{Expected, JointKey, Setup, blame, bloom_bits};
use super::{
    HUB, KIND_FILTER, KIND_KEY, KIND_MASKED, KIND_PROOF, KIND_RELAYED, KIND_SHARES, KIND_VERDICT,
    MpsiConfig, MpsiOutput, Role, chunk, chunks, diagonal,
};
use crate::engine::{Message, Protocol, Session};
use crate::error::ProtocolError;
use crate::wire::PartyId;

/// A party's one long phase, counted in filter positions as their chunks are decrypted.
const FILTER_PHASE: &str = "encrypting the Bloom filter and decrypting the dealer's answer";
/// The dealer's one long phase, counted in filter positions as their chunks are answered.
const DEALER_PHASE: &str = "adding and masking the parties' encrypted Bloom filters";

/// The common filter: the session's bound `N` on every set (the largest announced) and
/// `t · N` look-ups over the run.
fn filter_params(setup: &Setup) -> BloomParams {
    let holders = u64::from(setup.holders());
    let bound = (1..=holders as PartyId)
        .map(|p| setup.size_of(p))
        .max()
        .unwrap_or(1)
        .max(1);
    BloomParams::new(bound, bound.saturating_mul(holders))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PartyPhase {
    Keys,
    Masked,
    /// The relay of the chunk, collecting every other party's shares.
    Shares,
    /// Any other party, waiting for what the relay passes on.
    Relayed,
    /// Every party: the other parties' proofs, and the relay's verdict.
    Proofs,
    Done,
}

pub(super) struct Party<S: Scheme> {
    setup: Setup,
    expected: Expected,
    phase: PartyPhase,
    keys: Option<JointKey>,
    key: Option<Arc<S::KeyShare>>,
    params: BloomParams,
    /// The `k` words of each own item.
    words: Vec<u64>,
    bloom: Vec<bool>,
    /// The AND of every party's filter, as it is learned chunk by chunk.
    and: Vec<bool>,
    chunk: usize,
    masked: Option<S::Tested>,
    mesh: Option<S::Mesh>,
    output: Option<Vec<Vec<u8>>>,
}

impl<S: Scheme> Party<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            phase: PartyPhase::Keys,
            keys: None,
            key: None,
            params: BloomParams::new(0, 0),
            words: Vec::new(),
            bloom: Vec::new(),
            and: Vec::new(),
            chunk: 0,
            masked: None,
            mesh: None,
            output: None,
        }
    }

    fn pk(&self) -> &S::PublicKey {
        S::share_public_key(self.key.as_ref().expect("key"))
    }

    /// The key is known (agreed or dealt): the filter's chunks start moving.
    fn on_key(&mut self, key: Arc<S::KeyShare>, session: &mut Session<'_>) {
        self.key = Some(key);
        session.meter.begin(FILTER_PHASE, self.bloom.len());
        self.send_filter_chunk(0, session);
        self.expect_masked();
    }

    fn others(&self, me: PartyId) -> Vec<PartyId> {
        (1..=self.setup.holders() as PartyId)
            .filter(|&p| p != me)
            .collect()
    }

    /// The relay of the current chunk: every party in turn.
    fn relay(&self) -> PartyId {
        (1 + self.chunk % self.setup.holders() as usize) as PartyId
    }

    /// This party's proof to every other party, once the relay's message is made or in;
    /// then their proofs are awaited.
    fn send_proof(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let key = self.key.clone().expect("key");
        let pk = S::share_public_key(&key);
        let mesh = self.mesh.as_mut().expect("mesh decryption");
        let masked = self.masked.as_ref().expect("the dealer's chunk");
        let proof = S::mesh_own_proof(&key, mesh, masked, session.rng)
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        for p in self.others(session.me()) {
            session.send(p, KIND_PROOF, &proof);
            self.expected.push(p, KIND_PROOF, S::mesh_proof_len(pk));
        }
        self.phase = PartyPhase::Proofs;
        Ok(())
    }

    fn send_filter_chunk(&self, c: usize, session: &mut Session<'_>) {
        let (start, len) = chunk(self.bloom.len(), c);
        let pk = self.pk().clone();
        let (zero, one) = (S::scalar_from_u64(&pk, 0), S::scalar_from_u64(&pk, 1));
        let bits: Vec<_> = self.bloom[start..start + len]
            .iter()
            .map(|&b| if b { one.clone() } else { zero.clone() })
            .collect();
        let encrypted = S::encrypt_encoded(&pk, &bits, session.rng);
        session.send(HUB, KIND_FILTER, &encrypted);
    }

    fn expect_masked(&mut self) {
        let len = chunk(self.bloom.len(), self.chunk).1 * S::ciphertext_len(self.pk());
        self.expected.push(HUB, KIND_MASKED, len);
        self.phase = PartyPhase::Masked;
    }

    /// Every proof (and, elsewhere than at the relay, the relay's verdict) is in: the
    /// chunk's positions are decrypted, and the relay says its check passed.
    fn finish_chunk(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let pk = self.pk().clone();
        let mesh = self.mesh.take().expect("mesh decryption");
        let masked = self.masked.take().expect("the dealer's chunk");
        let relay = self.relay();
        let flags = S::mesh_finish(&pk, mesh, &masked).map_err(|e| match e {
            TaheError::BadShare { party, .. } => {
                let what = if party as PartyId == relay && session.me() != relay {
                    "relayed decryption shares"
                } else {
                    "decryption shares"
                };
                blame(self.setup.name(party as PartyId), what)(e)
            }
            other => ProtocolError::Config(other.to_string()),
        })?;
        if session.me() == relay {
            for p in self.others(relay) {
                session.send(p, KIND_VERDICT, &[]);
            }
        }
        let start = chunk(self.bloom.len(), self.chunk).0;
        self.and[start..start + flags.len()].copy_from_slice(&flags);
        session.meter.add(flags.len());
        self.chunk += 1;
        if self.chunk < chunks(self.bloom.len()) {
            self.expect_masked();
        } else {
            self.finish();
        }
        Ok(())
    }

    fn finish(&mut self) {
        let k = self.params.k as usize;
        let items = &self.setup.config.items;
        let mut out = Vec::new();
        for (j, x) in items.iter().enumerate() {
            let w = &self.words[j * k..(j + 1) * k];
            if (0..k).all(|d| self.and[self.params.bit(d as u32, w[d]) as usize]) {
                out.push(x.clone());
            }
        }
        self.output = Some(out);
        self.phase = PartyPhase::Done;
    }
}

impl<S: Scheme> Protocol for Party<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.params = filter_params(&self.setup);
        let slices: Vec<&[u8]> = self.setup.config.items.iter().map(Vec::as_slice).collect();
        self.words = element_words(
            self.params.k,
            &session.ctx.derive_key("mpsi/bloom"),
            &slices,
        );
        self.bloom = bloom_bits(&self.params, &self.words);
        self.and = vec![false; self.bloom.len()];
        if let Some((_, Some(share))) = S::given(&self.setup.config) {
            self.on_key(share, session);
            return Ok(());
        }
        let mut keys = JointKey::new(self.setup.holders(), session.ctx);
        let mine = keys.contribute(session.me(), session.rng)?;
        for p in session.roster.peers() {
            session.send(p, KIND_KEY, &mine);
        }
        self.keys = Some(keys);
        for p in self.others(session.me()) {
            self.expected.push(p, KIND_KEY, CONTRIBUTION_LEN);
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let (e, body) = self.expected.take(&message)?;
        let name = self.setup.name(e.from);
        match self.phase {
            PartyPhase::Keys => {
                let keys = self.keys.as_mut().expect("keys");
                keys.accept(e.from, body, &name)?;
                if keys.complete() {
                    let key = S::joint_share(keys)?;
                    self.on_key(key, session);
                }
            }
            PartyPhase::Masked => {
                let key = self.key.as_ref().expect("key");
                let pk = S::share_public_key(key).clone();
                let masked =
                    S::tested_from_encoded(&pk, body).map_err(blame(name, "masked filter"))?;
                let count = S::tested_len(&masked);
                let mut mesh = S::mesh_new(&pk, count);
                let shares = S::mesh_own_shares(key, &mut mesh, &masked, session.rng)
                    .map_err(|e| ProtocolError::Config(e.to_string()))?;
                let relay = self.relay();
                if session.me() == relay {
                    for p in self.others(relay) {
                        self.expected
                            .push(p, KIND_SHARES, S::mesh_shares_len(&pk, count));
                    }
                    self.phase = PartyPhase::Shares;
                } else {
                    session.send(relay, KIND_SHARES, &shares);
                    self.expected
                        .push(relay, KIND_RELAYED, S::mesh_relay_len(&pk, count));
                    self.phase = PartyPhase::Relayed;
                }
                self.mesh = Some(mesh);
                self.masked = Some(masked);
                // Let the dealer work on the next chunk while the shares go round.
                if self.chunk + 1 < chunks(self.bloom.len()) {
                    self.send_filter_chunk(self.chunk + 1, session);
                }
            }
            PartyPhase::Shares => {
                let pk = self.pk().clone();
                let mesh = self.mesh.as_mut().expect("mesh decryption");
                let masked = self.masked.as_ref().expect("the dealer's chunk");
                S::mesh_absorb_shares(&pk, mesh, masked, u32::from(e.from), body)
                    .map_err(blame(name, "decryption shares"))?;
                if self.expected.is_empty() {
                    // Every party's shares are in: passed on, then the proofs.
                    let relayed = S::mesh_relay(&pk, mesh, masked)
                        .map_err(|e| ProtocolError::Config(e.to_string()))?;
                    for p in self.others(session.me()) {
                        session.send(p, KIND_RELAYED, &relayed);
                    }
                    self.send_proof(session)?;
                }
            }
            PartyPhase::Relayed => {
                let pk = self.pk().clone();
                let mesh = self.mesh.as_mut().expect("mesh decryption");
                let masked = self.masked.as_ref().expect("the dealer's chunk");
                S::mesh_absorb_relay(&pk, mesh, masked, u32::from(e.from), body)
                    .map_err(blame(name, "relayed decryption shares"))?;
                self.send_proof(session)?;
                // The relay's verdict comes after its proof, once its own check passed.
                self.expected.push(e.from, KIND_VERDICT, 0);
            }
            PartyPhase::Proofs => {
                if e.kind == KIND_PROOF {
                    let pk = self.pk().clone();
                    let mesh = self.mesh.as_mut().expect("mesh decryption");
                    let masked = self.masked.as_ref().expect("the dealer's chunk");
                    S::mesh_absorb_proof(&pk, mesh, masked, u32::from(e.from), body)
                        .map_err(blame(name, "proof of correct decryption"))?;
                }
                if self.expected.is_empty() {
                    self.finish_chunk(session)?;
                }
            }
            PartyPhase::Done => return Err(ProtocolError::ApiMisuse("message after the end")),
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.expected.awaiting()
    }

    fn max_message_len(&self) -> usize {
        self.expected.max_len()
    }

    fn is_done(&self) -> bool {
        self.phase == PartyPhase::Done
    }

    fn status(&self) -> String {
        let total = chunks(self.bloom.len());
        match self.phase {
            PartyPhase::Keys => "agreeing the joint key".into(),
            PartyPhase::Masked => format!(
                "waiting for the dealer's chunk {} of {total}",
                self.chunk + 1
            ),
            PartyPhase::Shares => format!(
                "collecting decryption shares of chunk {} of {total} (its relay)",
                self.chunk + 1
            ),
            PartyPhase::Relayed => format!(
                "waiting for {}'s relayed decryption shares of chunk {} of {total}",
                self.setup.name(self.relay()),
                self.chunk + 1
            ),
            PartyPhase::Proofs => format!(
                "exchanging proofs of correct decryption of chunk {} of {total}",
                self.chunk + 1
            ),
            PartyPhase::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<MpsiOutput> {
        Some(MpsiOutput {
            role: Role::Party,
            intersection: Some(self.output?),
        })
    }
}

pub(super) struct Dealer<S: Scheme> {
    setup: Setup,
    expected: Expected,
    keys: Option<JointKey>,
    pk: Option<S::PublicKey>,
    bits: usize,
    chunk: usize,
    /// The chunk's entries summed over the parties so far.
    sums: Option<S::Sums>,
    done: bool,
}

impl<S: Scheme> Dealer<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            keys: None,
            pk: None,
            bits: 0,
            chunk: 0,
            sums: None,
            done: false,
        }
    }

    fn expect_filters(&mut self) {
        let len = chunk(self.bits, self.chunk).1;
        let pk = self.pk.as_ref().expect("key");
        let ct_len = S::ciphertext_len(pk);
        for p in 1..=self.setup.holders() as PartyId {
            self.expected.push(p, KIND_FILTER, len * ct_len);
        }
        self.sums = Some(S::sums_new(pk, len));
    }

    /// `ReRand(r_j (Σ_i BF_i[j] − t))` for every position of the chunk, to every party.
    fn answer(&mut self, session: &mut Session<'_>) {
        let pk = self.pk.clone().expect("key");
        let minus_t = S::scalar_neg(
            &pk,
            &S::scalar_from_u64(&pk, u64::from(self.setup.holders())),
        );
        let shift = S::encrypt(&pk, &minus_t, session.rng);
        let sums = self.sums.take().expect("summing");
        let masked = S::sums_randomize_encoded(&pk, sums, &shift, session.rng);
        for p in 1..=self.setup.holders() as PartyId {
            session.send(p, KIND_MASKED, &masked);
        }
        session.meter.add(masked.len() / S::ciphertext_len(&pk));
        self.chunk += 1;
        if self.chunk < chunks(self.bits) {
            self.expect_filters();
        } else {
            self.done = true;
        }
    }
}

impl<S: Scheme> Protocol for Dealer<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.bits = filter_params(&self.setup).bits() as usize;
        if let Some((pk, _)) = S::given(&self.setup.config) {
            self.pk = Some(pk);
            session.meter.begin(DEALER_PHASE, self.bits);
            self.expect_filters();
            return Ok(());
        }
        self.keys = Some(JointKey::new(self.setup.holders(), session.ctx));
        for p in 1..=self.setup.holders() as PartyId {
            self.expected.push(p, KIND_KEY, CONTRIBUTION_LEN);
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let (e, body) = self.expected.take(&message)?;
        let name = self.setup.name(e.from);
        if let Some(keys) = self.keys.as_mut() {
            keys.accept(e.from, body, &name)?;
            if keys.complete() {
                self.pk = Some(S::joint_public(keys)?);
                self.keys = None;
                session.meter.begin(DEALER_PHASE, self.bits);
                self.expect_filters();
            }
            return Ok(());
        }
        let pk = self.pk.clone().expect("key");
        let entries = body.len() / S::ciphertext_len(&pk);
        let sums = self.sums.as_mut().expect("summing");
        S::sums_add(&pk, sums, body, &diagonal(entries))
            .map_err(blame(name, "encrypted Bloom filter"))?;
        if self.expected.is_empty() {
            self.answer(session);
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.expected.awaiting()
    }

    fn max_message_len(&self) -> usize {
        self.expected.max_len()
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn status(&self) -> String {
        if self.keys.is_some() {
            return "agreeing the parties' joint key".into();
        }
        format!(
            "adding up chunk {} of {} of the parties' filters",
            self.chunk + 1,
            chunks(self.bits)
        )
    }

    fn into_output(self) -> Option<MpsiOutput> {
        self.done.then_some(MpsiOutput {
            role: Role::Dealer,
            intersection: None,
        })
    }
}
