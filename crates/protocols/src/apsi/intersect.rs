//! Intersect (Falzon-Markatou, "Re-visiting Authorized PSI", Figs. 2-3, lower parts):
//! the client learns which of its authorized items the server holds, and `|Y|`; the
//! server learns nothing about them.
//!
//! ```text
//! APSI           client -> server: hello           server -> client: hello, key, result
//! Partial-APSI   client -> server: hello, eval     server -> client: hello, key, request, result
//! ```
//! `key` is `S = g2^s`; `result` is one 16-byte tag per server item (a hash of the
//! pairing value, keyed by the session), in random order. The server draws a fresh
//! order of its items, `s` (and OPRF blinding `t`) every run, once the session is
//! established, so two runs on the same sets share nothing; its items themselves are
//! shared between runs (an `Arc`), never copied.
//!
//! `S` leaves first so that the two parties' pairings overlap: with APSI the client
//! computes `e(sigma_i, S)` while the server computes its tags (the server's tags are
//! deferred work, done after `key` is sent); with Partial-APSI the client pairs after
//! sending its OPRF answer, while the server unblinds, hashes and pairs. The run's wall
//! time is then about the larger of the two parties' work, not their sum.

use std::collections::HashSet;
use std::sync::Arc;

use group::Curve;
use privset_crypto::bls::{self, G1Affine, G1Projective, PublicKey, Scalar, eea};
use rayon::prelude::*;

use super::hello::{self, Hello, Role};
use super::signatures::{SignatureSet, SignedItem};
use super::{CLIENT, PROVIDER, invalid, invalid_at, not_now, on_off};
use super::{KcToken, Mode, h1, h2, kc_message, kind, validate_items};
use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::meter::Meter;
use crate::party::Party;
use crate::session::SessionContext;
use crate::wire::{PartyId, ProtocolId, checked_len, expect_len};

const PROTOCOL: ProtocolId = ProtocolId::ApsiIntersect;
const NAMES: [&str; 2] = ["client", "server"];
/// Purpose string of the per-session key of the result tags.
const TAG_KEY: &str = "apsi-result-tags";

/// The folded key-consistency statement of one OPRF evaluation: `(D, h_d)` and, unless
/// the request is empty, the composite `(M, Z)` of the request and the answer.
fn kc_statement(
    token: &KcToken,
    request: &[G1Affine],
    answer: &[G1Affine],
    transcript: &[u8; 32],
) -> (Vec<G1Affine>, Vec<G1Affine>) {
    if request.is_empty() {
        return (vec![token.base], vec![token.value]);
    }
    let (m, z) = eea::composite(request, answer, transcript);
    (vec![token.base, m], vec![token.value, z])
}

/// Pairs in the key-consistency statement for a request of `m` elements.
fn kc_pairs(m: usize) -> usize {
    if m == 0 { 1 } else { 2 }
}

/// What the client learns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOutput {
    /// The authorized items used that the server holds, in the client's order.
    pub intersection: Vec<Vec<u8>>,
    /// `|Y|`.
    pub server_items: u64,
    /// Authorized items the client used.
    pub used: u64,
}

enum ClientState {
    /// Hellos not yet exchanged (the engine's part).
    Starting,
    AwaitKey,
    AwaitRequest,
    AwaitResult,
    Done,
}

/// The client of Intersect.
pub struct Client {
    mode: Mode,
    key_consistency: bool,
    secret: Option<Scalar>,
    token: Option<KcToken>,
    signed: Vec<SignedItem>,
    hello: Hello,
    state: ClientState,
    server_items: u64,
    max_server_items: u64,
    /// `S`, prepared for pairing, once the server sent it.
    server_key: Option<bls::G2Prepared>,
    /// The tags of `e(sigma_i, S)`, in `signed`'s order, once computed.
    own_tags: Option<Vec<[u8; bls::TAG_LEN]>>,
    /// True when the tags are to be computed as deferred work.
    pairing_pending: bool,
    output: Option<ClientOutput>,
}

impl Client {
    /// The client party (participant 0). `signed`: the items to intersect with their
    /// signatures (from [`SignatureSet::select`]); `judge_key`: the key the operator
    /// trusts, which must be the one that signed. It states the key settings the
    /// signature set records (the signed items were made from rows with them, at
    /// Authorize); for a set that records none, the front end states its input's with
    /// [`Party::agree`].
    pub fn new(
        signatures: &SignatureSet,
        signed: Vec<SignedItem>,
        judge_key: &PublicKey,
        key_consistency: bool,
        max_server_items: u64,
        seed: [u8; 32],
    ) -> Result<Engine<Self>, ProtocolError> {
        let mut engine = Engine::new(
            Self::protocol(
                signatures,
                signed,
                judge_key,
                key_consistency,
                max_server_items,
            )?,
            seed,
        )?;
        if let Some(settings) = &signatures.key_settings {
            engine.agree(settings.clone())?;
        }
        Ok(engine)
    }

    /// The client's settings checked, without a party: what [`Client::new`] refuses
    /// (another judge key, a missing key-consistency token), before any run.
    pub fn check(
        signatures: &SignatureSet,
        judge_key: &PublicKey,
        key_consistency: bool,
    ) -> Result<(), ProtocolError> {
        Self::protocol(signatures, Vec::new(), judge_key, key_consistency, 0).map(|_| ())
    }

    fn protocol(
        signatures: &SignatureSet,
        signed: Vec<SignedItem>,
        judge_key: &PublicKey,
        key_consistency: bool,
        max_server_items: u64,
    ) -> Result<Self, ProtocolError> {
        if *judge_key != signatures.judge_key {
            return Err(ProtocolError::Config(
                "the signatures were issued under another judge key than --judge-public".into(),
            ));
        }
        let kc = key_consistency && signatures.mode == Mode::Partial;
        if kc && signatures.kc_token.is_none() {
            return Err(ProtocolError::Config(
                "the signatures carry no key-consistency token (authorized with it off); run with key consistency off or authorize again".into(),
            ));
        }
        let mut hello = Hello::new(Role::Client, signatures.mode, kc);
        hello.client_id = signatures.client_id.clone();
        hello.judge_fingerprint = Some(judge_key.fingerprint());
        if kc {
            hello.kc_token = signatures.kc_token.as_ref().map(KcToken::encode);
        }
        Ok(Self {
            mode: signatures.mode,
            key_consistency: kc,
            secret: signatures.secret,
            token: signatures.kc_token.filter(|_| kc),
            signed,
            hello,
            state: ClientState::Starting,
            server_items: 0,
            max_server_items,
            server_key: None,
            own_tags: None,
            pairing_pending: false,
            output: None,
        })
    }

    fn on_key(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        expect_len("key", body, bls::G2_LEN)?;
        let big_s = bls::decode_g2(body).map_err(invalid("server key S"))?;
        self.server_key = Some(bls::prepare(&big_s));
        self.state = match self.mode {
            Mode::Full => {
                // Pair now, while the server computes its tags.
                self.pairing_pending = true;
                ClientState::AwaitResult
            }
            Mode::Partial => ClientState::AwaitRequest,
        };
        Ok(())
    }

    /// The DH OPRF of the APSI paper's App. A.2 under `r`, plus the key-consistency
    /// proof.
    fn on_request(&mut self, session: &mut Session<'_>, body: &[u8]) -> Result<(), ProtocolError> {
        let m = self.server_items as usize;
        expect_len("request", body, checked_len(m, bls::G1_LEN, "request")?)?;
        let request = bls::decode_g1_batch(body).map_err(invalid_at("OPRF request element"))?;
        let r = self
            .secret
            .ok_or(not_now("an OPRF request without Partial-APSI signatures"))?;
        let answer: Vec<G1Projective> = request.par_iter().map(|b| b * r).collect();
        let answer = bls::to_affine_batch(&answer);
        let mut out = bls::encode_g1_batch(&answer);
        if let Some(token) = &self.token {
            let transcript = session.ctx.transcript;
            let (bases, values) = kc_statement(token, &request, &answer, &transcript);
            let proof = eea::prove(&r, &bases, &values, &transcript, session.rng);
            out.extend_from_slice(&proof.encode());
        }
        session.send(PROVIDER, kind::EVAL, &out);
        // Pair after the answer has left, while the server finishes.
        self.pairing_pending = true;
        self.state = ClientState::AwaitResult;
        Ok(())
    }

    /// The tags of `e(sigma_i, S)` for every item used (deferred work).
    fn pair_own_items(&mut self, ctx: &SessionContext, meter: &Meter) -> Result<(), ProtocolError> {
        self.pairing_pending = false;
        let prepared = self
            .server_key
            .as_ref()
            .ok_or(not_now("pairing before the server's key S"))?;
        let key = ctx.derive_key(TAG_KEY);
        let tags = meter.slices(
            "pairing our signatures with S",
            &self.signed,
            1,
            |_, slice| {
                slice
                    .par_iter()
                    .map(|(_, sig)| bls::gt_tag(&bls::pairing_prepared(sig, prepared), &key))
                    .collect()
            },
        );
        self.own_tags = Some(tags);
        Ok(())
    }

    /// Compares the tags of the items used with the server's.
    fn on_result(&mut self, session: &mut Session<'_>, tags: &[u8]) -> Result<(), ProtocolError> {
        let m = self.server_items as usize;
        expect_len("result", tags, checked_len(m, bls::TAG_LEN, "result")?)?;
        let own = match self.own_tags.take() {
            Some(own) => own,
            None => {
                // A driver that skipped the deferred work: do it now.
                self.pair_own_items(session.ctx, session.meter)?;
                self.own_tags.take().unwrap_or_default()
            }
        };
        let server: HashSet<&[u8]> = tags.chunks_exact(bls::TAG_LEN).collect();
        let intersection = self
            .signed
            .iter()
            .zip(own)
            .filter(|(_, tag)| server.contains(&tag[..]))
            .map(|((x, _), _)| x.clone())
            .collect();
        self.output = Some(ClientOutput {
            intersection,
            server_items: self.server_items,
            used: self.signed.len() as u64,
        });
        self.state = ClientState::Done;
        Ok(())
    }
}

impl Handshake for Client {
    fn roster(&self) -> Roster {
        Roster::pair(PROTOCOL, NAMES, CLIENT)
    }

    fn kind_name(kind: u8) -> &'static str {
        kind::name(kind)
    }

    fn settings(&self) -> Vec<u8> {
        self.hello.encode()
    }

    fn max_settings_len(&self) -> usize {
        hello::MAX_LEN
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let server = Hello::decode(settings)?;
        self.hello
            .check_peer(&server, Role::Server, self.max_server_items)?;
        if self.mode == Mode::Partial && server.key_consistency != self.key_consistency {
            return Err(ProtocolError::Incompatible(format!(
                "key consistency is {} here and {} at the server",
                on_off(self.key_consistency),
                on_off(server.key_consistency)
            )));
        }
        self.server_items = server.items;
        Ok(())
    }
}

impl Protocol for Client {
    type Output = ClientOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, _session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.state = ClientState::AwaitKey;
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match self.state {
            ClientState::AwaitKey => self.on_key(message.expect(kind::KEY)?),
            ClientState::AwaitRequest => self.on_request(session, message.expect(kind::REQUEST)?),
            ClientState::AwaitResult => self.on_result(session, message.expect(kind::RESULT)?),
            ClientState::Starting | ClientState::Done => {
                Err(not_now("a message the client did not await"))
            }
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            ClientState::Done => None,
            _ => Some(PROVIDER),
        }
    }

    fn max_message_len(&self) -> usize {
        let m = self.server_items as usize;
        match self.state {
            ClientState::AwaitKey => bls::G2_LEN,
            ClientState::AwaitRequest => m.saturating_mul(bls::G1_LEN),
            ClientState::AwaitResult => m.saturating_mul(bls::TAG_LEN),
            ClientState::Starting | ClientState::Done => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        self.pairing_pending
    }

    fn do_deferred_work(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.pair_own_items(session.ctx, session.meter)
    }

    fn is_done(&self) -> bool {
        matches!(self.state, ClientState::Done)
    }

    fn status(&self) -> String {
        match self.state {
            ClientState::Starting => "waiting for the server".into(),
            ClientState::AwaitKey => "waiting for the server's key S".into(),
            ClientState::AwaitRequest => format!("waiting for {} OPRF requests", self.server_items),
            ClientState::AwaitResult if self.pairing_pending => {
                format!("pairing {} signatures with S", self.signed.len())
            }
            ClientState::AwaitResult => {
                format!("waiting for {} encoded server items", self.server_items)
            }
            ClientState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<ClientOutput> {
        self.output
    }
}

/// Settings of the server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub mode: Mode,
    /// Partial-APSI: require the client's key-consistency token and proof.
    pub key_consistency: bool,
    /// The judge whose signatures the server honours.
    pub judge_key: PublicKey,
}

/// What the server knows after a run: who asked, and how many items it encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOutput {
    pub client_id: Vec<u8>,
    pub items: u64,
}

enum ServerState {
    /// Hellos not yet exchanged (the engine's part).
    Starting,
    /// APSI: `S` sent, the tags still to compute (deferred work).
    Encoding,
    AwaitEval,
    Done,
}

/// The server of one Intersect run.
pub struct Server {
    config: ServerConfig,
    /// The server's set, shared by every run (never copied per run).
    items: Arc<[Vec<u8>]>,
    /// This run's random order of `items` (drawn at the start of the session): the
    /// tags and OPRF requests follow it, so they do not reveal the input order.
    order: Vec<u32>,
    hello: Hello,
    state: ServerState,
    client_id: Vec<u8>,
    /// The client's key-consistency token, decoded from its hello; its signature is
    /// checked at the start of the session (batch verification draws randomness).
    token: Option<KcToken>,
    blinding: Option<Scalar>,
    /// This run's `s` (`S = g2^s` is sent before the tags).
    exponent: Option<Scalar>,
    request: Vec<G1Affine>,
    /// APSI: the tags are computed as deferred work, after `S` has left.
    tags_pending: bool,
    output: Option<ServerOutput>,
}

impl Server {
    /// The server party (participant 1) for one run over `items`, which many runs may
    /// share (at most `u32::MAX` items); its randomness all from `seed`.
    pub fn new(
        config: ServerConfig,
        items: Arc<[Vec<u8>]>,
        seed: [u8; 32],
    ) -> Result<Engine<Self>, ProtocolError> {
        validate_items(&items)?;
        if u32::try_from(items.len()).is_err() {
            return Err(ProtocolError::Config(format!(
                "the server holds {} items, above the {} one run can encode",
                items.len(),
                u32::MAX
            )));
        }
        let kc = config.key_consistency && config.mode == Mode::Partial;
        let mut hello = Hello::new(Role::Server, config.mode, kc);
        hello.items = items.len() as u64;
        let server = Self {
            config,
            items,
            order: Vec::new(),
            hello,
            state: ServerState::Starting,
            client_id: Vec::new(),
            token: None,
            blinding: None,
            exponent: None,
            request: Vec::new(),
            tags_pending: false,
            output: None,
        };
        Engine::new(server, seed)
    }

    fn kc(&self) -> bool {
        self.config.key_consistency && self.config.mode == Mode::Partial
    }

    /// `H1(y_j || ID)` of every item, in this run's order.
    fn hashed_items(&self) -> impl IndexedParallelIterator<Item = G1Projective> + '_ {
        let (items, client_id) = (&self.items, &self.client_id);
        self.order
            .par_iter()
            .map(move |&i| h1(client_id, &items[i as usize]))
    }

    /// Unblinds the OPRF answer to `d_j = H1(y_j || ID)^r` after checking the
    /// key-consistency proof, and encodes `H2(d_j)`.
    fn on_eval(&mut self, session: &mut Session<'_>, body: &[u8]) -> Result<(), ProtocolError> {
        let m = self.items.len();
        let answer_len = checked_len(m, bls::G1_LEN, "eval")?;
        let proof_len = if self.kc() {
            eea::Proof::encoded_len(kc_pairs(m))
        } else {
            0
        };
        expect_len("eval", body, answer_len + proof_len)?;
        let (answer_bytes, proof_bytes) = body.split_at(answer_len);
        let answer =
            bls::decode_g1_batch(answer_bytes).map_err(invalid_at("OPRF answer element"))?;
        if let Some(token) = &self.token {
            let proof = eea::Proof::decode(proof_bytes, kc_pairs(m))
                .map_err(invalid("key-consistency proof"))?;
            let transcript = session.ctx.transcript;
            let (bases, values) = kc_statement(token, &self.request, &answer, &transcript);
            eea::verify(&bases, &values, &proof, &transcript, session.rng)
                .map_err(invalid("key-consistency proof"))?;
        }
        let blinding = self
            .blinding
            .ok_or(not_now("an OPRF answer before the request"))?;
        let unblind = bls::invert_scalar(&blinding);
        let hashed: Vec<G1Projective> = answer
            .par_iter()
            .map(|c| h2(&(c * unblind).to_affine()))
            .collect();
        self.finish(session, &bls::to_affine_batch(&hashed))
    }

    /// APSI's deferred work: `H1(y_j || ID)` for every item, then the tags.
    fn hash_and_finish(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.tags_pending = false;
        let hashed: Vec<G1Projective> = self.hashed_items().collect();
        self.finish(session, &bls::to_affine_batch(&hashed))
    }

    /// Sends the tags of `e(points_j, pk^s)`.
    fn finish(
        &mut self,
        session: &mut Session<'_>,
        points: &[G1Affine],
    ) -> Result<(), ProtocolError> {
        let s = self
            .exponent
            .take()
            .ok_or(not_now("encoding before the key S"))?;
        let prepared = bls::prepare(&self.config.judge_key.blinded(&s));
        let key = session.ctx.derive_key(TAG_KEY);
        let tags: Vec<[u8; bls::TAG_LEN]> = session.meter.slices(
            "pairing our items with the judge's key",
            points,
            1,
            |_, slice| {
                slice
                    .par_iter()
                    .map(|p| bls::gt_tag(&bls::pairing_prepared(p, &prepared), &key))
                    .collect()
            },
        );
        let mut out = Vec::with_capacity(tags.len() * bls::TAG_LEN);
        for t in &tags {
            out.extend_from_slice(t);
        }
        session.send(CLIENT, kind::RESULT, &out);
        self.output = Some(ServerOutput {
            client_id: std::mem::take(&mut self.client_id),
            items: self.items.len() as u64,
        });
        self.state = ServerState::Done;
        Ok(())
    }
}

impl Handshake for Server {
    fn roster(&self) -> Roster {
        Roster::pair(PROTOCOL, NAMES, PROVIDER)
    }

    fn kind_name(kind: u8) -> &'static str {
        kind::name(kind)
    }

    fn settings(&self) -> Vec<u8> {
        self.hello.encode()
    }

    fn max_settings_len(&self) -> usize {
        hello::MAX_LEN
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let client = Hello::decode(settings)?;
        self.hello.check_peer(&client, Role::Client, 0)?;
        if client.client_id.is_empty() {
            return Err(
                PeerMisbehaved::Malformed("the client's hello has no client ID".into()).into(),
            );
        }
        if client.judge_fingerprint != Some(self.config.judge_key.fingerprint()) {
            return Err(ProtocolError::Incompatible(
                "the client holds signatures of another judge than this server's --judge-public"
                    .into(),
            ));
        }
        if self.kc() {
            let bytes = client.kc_token.as_deref().ok_or_else(|| {
                ProtocolError::Incompatible(
                    "this server requires key consistency; the client sent no token".into(),
                )
            })?;
            self.token = Some(KcToken::decode(bytes).map_err(invalid("key-consistency token"))?);
        } else if client.key_consistency && self.config.mode == Mode::Partial {
            return Err(ProtocolError::Incompatible(
                "key consistency is on at the client and off at this server".into(),
            ));
        }
        self.client_id = client.client_id;
        Ok(())
    }
}

impl Protocol for Server {
    type Output = ServerOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    /// This run's order of the items, the check of the client's key-consistency token,
    /// then `S = g2^s` and, with Partial-APSI, the blinded OPRF request.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        // Random order: the tags (and OPRF requests) must not reveal the input order.
        self.order = session.rng.permutation(self.items.len());
        if let Some(token) = &self.token {
            let message = kc_message(&self.client_id, &token.base, &token.value);
            self.config
                .judge_key
                .verify_batch(&[message], &[token.signature], session.rng)
                .map_err(invalid("key-consistency token"))?;
        }
        let s = bls::random_scalar(session.rng);
        session.send(CLIENT, kind::KEY, &bls::encode_g2(&bls::g2_power(&s)));
        self.exponent = Some(s);
        match self.config.mode {
            Mode::Full => {
                // The tags wait until `S` has left, so the client pairs meanwhile.
                self.tags_pending = true;
                self.state = ServerState::Encoding;
            }
            Mode::Partial => {
                let t = bls::random_scalar(session.rng);
                let blinded: Vec<G1Projective> = self.hashed_items().map(|h| h * t).collect();
                self.request = bls::to_affine_batch(&blinded);
                session.send(CLIENT, kind::REQUEST, &bls::encode_g1_batch(&self.request));
                self.blinding = Some(t);
                self.state = ServerState::AwaitEval;
            }
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match self.state {
            ServerState::AwaitEval => self.on_eval(session, message.expect(kind::EVAL)?),
            ServerState::Starting | ServerState::Encoding | ServerState::Done => {
                Err(not_now("a message the server did not await"))
            }
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            ServerState::AwaitEval | ServerState::Starting => Some(CLIENT),
            ServerState::Encoding | ServerState::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match self.state {
            ServerState::AwaitEval => self
                .items
                .len()
                .saturating_mul(bls::G1_LEN)
                .saturating_add(eea::Proof::encoded_len(2)),
            ServerState::Starting | ServerState::Encoding | ServerState::Done => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        self.tags_pending
    }

    fn do_deferred_work(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.hash_and_finish(session)
    }

    fn is_done(&self) -> bool {
        matches!(self.state, ServerState::Done)
    }

    fn status(&self) -> String {
        match self.state {
            ServerState::Starting => "waiting for a client".into(),
            ServerState::Encoding => format!("encoding {} items", self.items.len()),
            ServerState::AwaitEval => format!("waiting for {} OPRF answers", self.items.len()),
            ServerState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<ServerOutput> {
        self.output
    }
}
