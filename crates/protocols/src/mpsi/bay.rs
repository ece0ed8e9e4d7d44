//! Bay et al.'s protocol (de Jong, Ch. 3): encrypted inverted Bloom filters, a star
//! around the server.
//!
//! ```text
//!   client i (1..=t)                                  server (participant 0)
//!     key contribution (X_i, proof) ------------------->
//!                     <------------------------------ every contribution (relayed)
//!     Enc(IBF_i), in chunks -------------------------->  for every item y_j:
//!                                                         c'_j = ReRand(k_j Σ_i Σ_d EIBF_i[h_d(y_j)])
//!                     <------------------------------ c'_1 .. c'_n
//!     rc_ij = ReRand(r_ij c'_j), r_ij fresh ---------->  c_j = ReRand(k'_j Σ_i rc_ij)
//!                     <------------------------------ c_1 .. c_n
//!     decryption shares of c_1 .. c_n (one proof) ---->  y_j in the intersection iff c_j
//!                                                         decrypts to zero
//! ```
//!
//! The thesis's server re-randomizes `c'_j` and `c_j` without multiplying by `k_j`,
//! `k'_j`; multiplying by a fresh random unit as well costs nothing with the batch
//! encoder and keeps every value the clients see uniform when non-zero.

use std::sync::Arc;

use privset_crypto::filter::bloom::{BloomParams, element_words};
use privset_crypto::tahe::elgamal::joint::CONTRIBUTION_LEN;
use rayon::prelude::*;

use super::decrypt::{ServerDecryption, on_shares, send_shares};
use super::scheme::Scheme;
use super::setup::{Expected, JointKey, Setup, blame, bloom_bits};
use super::{
    HUB, KIND_COMBINED, KIND_FILTER, KIND_KEY, KIND_KEYS, KIND_QUERY, KIND_RANDOMIZED, MpsiConfig,
    MpsiOutput, Role, chunk, chunks, diagonal,
};
use crate::engine::{Message, Protocol, Session};
use crate::error::ProtocolError;
use crate::wire::PartyId;

/// The Bloom filter of a client with `n` items when the server tests `q` items.
fn filter_params(n: u64, q: u64) -> BloomParams {
    BloomParams::new(n, q)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ServerPhase {
    Keys,
    Filters,
    Randomized,
    Shares,
    Done,
}

/// One client's filter as it streams in: the server's (position, item) pairs in position
/// order, and how far the chunks have come.
struct Intake {
    client: PartyId,
    bits: usize,
    pairs: Vec<(u64, u32)>,
    cursor: usize,
    chunk: usize,
}

pub(super) struct Server<S: Scheme> {
    setup: Setup,
    expected: Expected,
    phase: ServerPhase,
    keys: Option<JointKey>,
    pk: Option<S::PublicKey>,
    /// `k` hash words per server item.
    words: Vec<u64>,
    k: u32,
    /// One running sum per server item: of the filter entries at its positions, then
    /// of the clients' randomized values.
    sums: Option<S::Sums>,
    intake: Option<Intake>,
    decryption: Option<ServerDecryption<S>>,
    output: Option<Vec<Vec<u8>>>,
}

impl<S: Scheme> Server<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            phase: ServerPhase::Keys,
            keys: None,
            pk: None,
            words: Vec::new(),
            k: 0,
            sums: None,
            intake: None,
            decryption: None,
            output: None,
        }
    }

    fn items(&self) -> &[Vec<u8>] {
        &self.setup.config.items
    }

    fn clients(&self) -> std::ops::Range<PartyId> {
        1..self.setup.config.names.len() as PartyId
    }

    fn pk(&self) -> &S::PublicKey {
        self.pk.as_ref().expect("key agreed")
    }

    fn client_bits(&self, c: PartyId) -> usize {
        filter_params(self.setup.size_of(c), self.items().len() as u64).bits() as usize
    }

    /// The joint key round is over: every client gets every contribution.
    fn on_keys_complete(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let keys = self.keys.take().expect("keys");
        self.pk = Some(S::joint_public(&keys)?);
        let all = keys.encode_all();
        for c in self.clients() {
            session.send(c, KIND_KEYS, &all);
        }
        self.on_key(session)
    }

    /// The key is known (agreed or dealt): expect the clients' filters.
    fn on_key(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let n = self.items().len();
        let mut sums = S::sums_new(self.pk(), n);
        let ct_len = S::ciphertext_len(self.pk());
        for c in self.clients() {
            let bits = self.client_bits(c);
            for i in 0..chunks(bits) {
                self.expected
                    .push(c, KIND_FILTER, chunk(bits, i).1 * ct_len);
            }
            if bits == 0 {
                // An empty set: no item is held by every client. Its "entry" is a
                // non-zero encryption for every server item.
                let one = S::scalar_from_u64(self.pk(), 1);
                let ones = S::encrypt_encoded(self.pk(), &vec![one; n], session.rng);
                S::sums_add(self.pk(), &mut sums, &ones, &diagonal(n)).expect("own encoding");
            }
        }
        self.sums = Some(sums);
        self.phase = ServerPhase::Filters;
        let entries: usize = self.clients().map(|c| self.client_bits(c)).sum();
        session
            .meter
            .begin("adding the clients' encrypted Bloom filters", entries);
        if self.expected.is_empty() {
            self.on_filters_complete(session)?;
        }
        Ok(())
    }

    fn on_filter_chunk(&mut self, from: PartyId, body: &[u8]) -> Result<(), ProtocolError> {
        if self.intake.as_ref().is_none_or(|i| i.client != from) {
            let bits = self.client_bits(from);
            let params = filter_params(self.setup.size_of(from), self.items().len() as u64);
            let k = self.k as usize;
            let mut pairs: Vec<(u64, u32)> = (0..self.items().len())
                .flat_map(|j| (0..k).map(move |d| (j, d)))
                .map(|(j, d)| (params.bit(d as u32, self.words[j * k + d]), j as u32))
                .collect();
            pairs.par_sort_unstable();
            self.intake = Some(Intake {
                client: from,
                bits,
                pairs,
                cursor: 0,
                chunk: 0,
            });
        }
        let name = self.setup.name(from);
        let pk = self.pk.clone().expect("key agreed");
        let intake = self.intake.as_mut().expect("intake");
        let (start, len) = chunk(intake.bits, intake.chunk);
        let end = (start + len) as u64;
        let first = intake.cursor;
        while intake.cursor < intake.pairs.len() && intake.pairs[intake.cursor].0 < end {
            intake.cursor += 1;
        }
        let hits: Vec<(u32, u32)> = intake.pairs[first..intake.cursor]
            .iter()
            .map(|&(pos, item)| (item, (pos as usize - start) as u32))
            .collect();
        let sums = self.sums.as_mut().expect("key known");
        S::sums_add(&pk, sums, body, &hits).map_err(blame(name, "encrypted Bloom filter"))?;
        intake.chunk += 1;
        if intake.chunk == chunks(intake.bits) {
            self.intake = None;
        }
        Ok(())
    }

    fn on_filters_complete(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let pk = self.pk.clone().expect("key");
        let sums = S::sums_finish(&pk, self.sums.take().expect("summing"));
        let query = S::randomize_encoded(&pk, &sums, session.rng);
        for c in self.clients() {
            session.send(c, KIND_QUERY, &query);
            self.expected.push(c, KIND_RANDOMIZED, query.len());
        }
        self.sums = Some(S::sums_new(&pk, sums.len()));
        self.phase = ServerPhase::Randomized;
        Ok(())
    }

    fn on_randomized(&mut self, from: PartyId, body: &[u8]) -> Result<(), ProtocolError> {
        let pk = self.pk.clone().expect("key");
        let sums = self.sums.as_mut().expect("summing");
        S::sums_add(&pk, sums, body, &diagonal(self.setup.config.items.len()))
            .map_err(blame(self.setup.name(from), "randomized entries"))
    }

    fn on_randomized_complete(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let pk = self.pk.clone().expect("key");
        let sums = S::sums_finish(&pk, self.sums.take().expect("summing"));
        let clients = self.clients();
        self.decryption = Some(ServerDecryption::start(
            self.pk.as_ref().expect("key"),
            &sums,
            clients,
            &mut self.expected,
            session,
        ));
        self.phase = ServerPhase::Shares;
        Ok(())
    }
}

impl<S: Scheme> Protocol for Server<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let n = self.items().len();
        self.k = filter_params(1, n as u64).k;
        let items: Vec<&[u8]> = self.items().iter().map(Vec::as_slice).collect();
        self.words = element_words(self.k, &session.ctx.derive_key("mpsi/bloom"), &items);
        if let Some((pk, _)) = S::given(&self.setup.config) {
            self.pk = Some(pk);
            return self.on_key(session);
        }
        self.keys = Some(JointKey::new(self.setup.holders(), session.ctx));
        for c in self.clients() {
            self.expected.push(c, KIND_KEY, CONTRIBUTION_LEN);
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
            ServerPhase::Keys => {
                let keys = self.keys.as_mut().expect("keys");
                keys.accept(e.from, body, &name)?;
                if keys.complete() {
                    self.on_keys_complete(session)?;
                }
            }
            ServerPhase::Filters => {
                self.on_filter_chunk(e.from, body)?;
                session.meter.add(body.len() / S::ciphertext_len(self.pk()));
                if self.expected.is_empty() {
                    self.on_filters_complete(session)?;
                }
            }
            ServerPhase::Randomized => {
                self.on_randomized(e.from, body)?;
                if self.expected.is_empty() {
                    self.on_randomized_complete(session)?;
                }
            }
            ServerPhase::Shares => {
                let items = &self.setup.config.items;
                let found = on_shares(
                    &mut self.decryption,
                    &self.expected,
                    e.from,
                    name,
                    body,
                    items,
                )?;
                if let Some(found) = found {
                    self.output = Some(found);
                    self.phase = ServerPhase::Done;
                }
            }
            ServerPhase::Done => return Err(ProtocolError::ApiMisuse("message after the end")),
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
        self.phase == ServerPhase::Done
    }

    fn status(&self) -> String {
        let waiting = self
            .expected
            .awaiting()
            .map(|p| self.setup.name(p))
            .unwrap_or_default();
        match self.phase {
            ServerPhase::Keys => format!("agreeing the joint key (waiting for the {waiting})"),
            ServerPhase::Filters => format!("adding up encrypted filters (the {waiting}'s)"),
            ServerPhase::Randomized => format!("collecting randomized sums (the {waiting}'s)"),
            ServerPhase::Shares => format!("collecting decryption shares (the {waiting}'s)"),
            ServerPhase::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<MpsiOutput> {
        Some(MpsiOutput {
            role: Role::Server,
            intersection: Some(self.output?),
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClientPhase {
    Keys,
    Filter,
    Query,
    Combined,
    Done,
}

pub(super) struct Client<S: Scheme> {
    setup: Setup,
    expected: Expected,
    phase: ClientPhase,
    keys: Option<JointKey>,
    key: Option<Arc<S::KeyShare>>,
    /// The Bloom filter's bits (set = some item there).
    bloom: Vec<bool>,
    next_chunk: usize,
}

impl<S: Scheme> Client<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            phase: ClientPhase::Keys,
            keys: None,
            key: None,
            bloom: Vec::new(),
            next_chunk: 0,
        }
    }

    fn server_items(&self) -> usize {
        self.setup.size_of(HUB) as usize
    }

    fn pk(&self) -> &S::PublicKey {
        S::share_public_key(self.key.as_ref().expect("key"))
    }

    fn expect_query(&mut self) {
        self.phase = ClientPhase::Query;
        let len = self.server_items() * S::ciphertext_len(self.pk());
        self.expected.push(HUB, KIND_QUERY, len);
    }

    /// The key is known (agreed or dealt): make the filter, sent as deferred work.
    fn on_key(&mut self, key: Arc<S::KeyShare>, session: &mut Session<'_>) {
        self.key = Some(key);
        let items = &self.setup.config.items;
        let params = filter_params(items.len() as u64, self.server_items() as u64);
        let slices: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let words = element_words(params.k, &session.ctx.derive_key("mpsi/bloom"), &slices);
        self.bloom = bloom_bits(&params, &words);
        self.phase = ClientPhase::Filter;
        if self.bloom.is_empty() {
            self.expect_query();
        }
    }
}

impl<S: Scheme> Protocol for Client<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        if let Some((_, Some(share))) = S::given(&self.setup.config) {
            self.on_key(share, session);
            return Ok(());
        }
        let holders = self.setup.holders();
        let mut keys = JointKey::new(holders, session.ctx);
        let mine = keys.contribute(session.me(), session.rng)?;
        session.send(HUB, KIND_KEY, &mine);
        self.keys = Some(keys);
        self.expected
            .push(HUB, KIND_KEYS, JointKey::all_len(holders));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let (_, body) = self.expected.take(&message)?;
        let server = self.setup.name(HUB);
        match self.phase {
            ClientPhase::Keys => {
                let mut keys = self.keys.take().expect("keys");
                keys.accept_all(body, &self.setup.config.names, session.me())?;
                let key = S::joint_share(&mut keys)?;
                self.on_key(key, session);
            }
            ClientPhase::Query => {
                let pk = self.pk().clone();
                let cts = S::decode_ciphertexts(&pk, body)
                    .map_err(blame(server, "aggregated entries"))?;
                let randomized = S::randomize_encoded(&pk, &cts, session.rng);
                session.send(HUB, KIND_RANDOMIZED, &randomized);
                self.expected.push(HUB, KIND_COMBINED, body.len());
                self.phase = ClientPhase::Combined;
            }
            ClientPhase::Combined => {
                send_shares::<S>(self.key.as_ref().expect("key"), body, server, session)?;
                self.phase = ClientPhase::Done;
            }
            ClientPhase::Filter | ClientPhase::Done => {
                return Err(ProtocolError::ApiMisuse("message while none is expected"));
            }
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.expected.awaiting()
    }

    fn max_message_len(&self) -> usize {
        self.expected.max_len()
    }

    fn has_deferred_work(&self) -> bool {
        self.phase == ClientPhase::Filter
    }

    /// One chunk of the encrypted inverted filter (while the previous one leaves).
    fn do_deferred_work(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let (start, len) = chunk(self.bloom.len(), self.next_chunk);
        if self.next_chunk == 0 {
            session
                .meter
                .begin("encrypting the inverted Bloom filter", self.bloom.len());
        }
        let pk = self.pk().clone();
        let (zero, one) = (S::scalar_from_u64(&pk, 0), S::scalar_from_u64(&pk, 1));
        let inverted: Vec<_> = self.bloom[start..start + len]
            .iter()
            .map(|&set| if set { zero.clone() } else { one.clone() })
            .collect();
        let encrypted = S::encrypt_encoded(&pk, &inverted, session.rng);
        session.send(HUB, KIND_FILTER, &encrypted);
        session.meter.add(len);
        self.next_chunk += 1;
        if self.next_chunk == chunks(self.bloom.len()) {
            self.expect_query();
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.phase == ClientPhase::Done
    }

    fn status(&self) -> String {
        match self.phase {
            ClientPhase::Keys => "agreeing the joint key".into(),
            ClientPhase::Filter => format!(
                "encrypting the inverted Bloom filter (chunk {} of {})",
                self.next_chunk + 1,
                chunks(self.bloom.len())
            ),
            ClientPhase::Query => "waiting for the server's sums".into(),
            ClientPhase::Combined => "waiting for the server's combined sums".into(),
            ClientPhase::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<MpsiOutput> {
        (self.phase == ClientPhase::Done).then_some(MpsiOutput {
            role: Role::Client,
            intersection: None,
        })
    }
}
