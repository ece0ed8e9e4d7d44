//! Intersect (seed 002 Figs. 2-3, lower parts): the client learns which of its
//! authorized items the server holds, and `|Y|`; the server learns nothing about them.
//!
//! ```text
//! APSI           client -> server: hello           server -> client: hello, key, result
//! Partial-APSI   client -> server: hello, eval     server -> client: hello, key, request, result
//! ```
//! `key` is `S = g2^s`; `result` is one 16-byte tag per server item (a hash of the
//! pairing value, keyed by the session), in random order. The server draws fresh `s`
//! (and OPRF blinding `t`) every run, so two runs on the same sets share nothing.
//!
//! `S` leaves first so that the two parties' pairings overlap: with APSI the client
//! computes `e(sigma_i, S)` while the server computes its tags (the server's tags are
//! deferred work, done after `key` is sent); with Partial-APSI the client pairs after
//! sending its OPRF answer, while the server unblinds, hashes and pairs. The run's wall
//! time is then about the larger of the two parties' work, not their sum.

use std::collections::HashSet;

use group::Curve;
use privset_crypto::bls::{self, G1Affine, G1Projective, PublicKey, Scalar, eea};
use rayon::prelude::*;

use super::core::{Core, Mode, impl_apsi_party, on_off};
use super::core::{after_end, invalid, invalid_at};
use super::hello::{self, Hello, Role};
use super::signatures::{SignatureSet, SignedItem};
use super::{KcToken, h1, h2, kc_message, kind, validate_items};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{HEADER_LEN, MAX_ALERT_LEN, ProtocolId, checked_len, expect_len};

const PROTOCOL: ProtocolId = ProtocolId::ApsiIntersect;
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
    AwaitHello,
    AwaitKey,
    AwaitRequest,
    AwaitResult,
    Done,
}

/// The client of Intersect.
pub struct Client {
    core: Core,
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
    /// `signed`: the items to intersect with their signatures (from
    /// [`SignatureSet::select`]); `judge_key`: the key the operator trusts, which must be
    /// the one that signed.
    pub fn new(
        signatures: &SignatureSet,
        signed: Vec<SignedItem>,
        judge_key: &PublicKey,
        key_consistency: bool,
        max_server_items: u64,
        seed: [u8; 32],
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
        let mut core = Core::start(PROTOCOL, 0, seed);
        let mut hello = Hello::new(Role::Client, signatures.mode, core.salt, kc);
        hello.client_id = signatures.client_id.clone();
        hello.judge_fingerprint = Some(judge_key.fingerprint());
        if kc {
            hello.kc_token = signatures.kc_token.as_ref().map(KcToken::encode);
        }
        core.channel.push(kind::HELLO, &hello.encode());
        Ok(Self {
            core,
            mode: signatures.mode,
            key_consistency: kc,
            secret: signatures.secret,
            token: signatures.kc_token.filter(|_| kc),
            signed,
            hello,
            state: ClientState::AwaitHello,
            server_items: 0,
            max_server_items,
            server_key: None,
            own_tags: None,
            pairing_pending: false,
            output: None,
        })
    }

    pub fn into_output(self) -> Option<ClientOutput> {
        self.output
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        match self.state {
            ClientState::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let server = Hello::decode(frame.body)?;
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
                self.core
                    .establish(PROTOCOL, &self.hello.salt, &server.salt);
                self.state = ClientState::AwaitKey;
                Ok(())
            }
            ClientState::AwaitKey => {
                let frame = self.core.open(message, kind::KEY)?;
                expect_len("key", frame.body, bls::G2_LEN)?;
                let big_s = bls::decode_g2(frame.body).map_err(invalid("server key S"))?;
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
            ClientState::AwaitRequest => {
                let frame = self.core.open(message, kind::REQUEST)?;
                self.on_request(frame.body)
            }
            ClientState::AwaitResult => {
                let frame = self.core.open(message, kind::RESULT)?;
                self.on_result(frame.body)
            }
            ClientState::Done => Err(after_end()),
        }
    }

    /// The DH OPRF of App. A.2 under `r`, plus the key-consistency proof.
    fn on_request(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let m = self.server_items as usize;
        expect_len("request", body, checked_len(m, bls::G1_LEN, "request")?)?;
        let request = bls::decode_g1_batch(body).map_err(invalid_at("OPRF request element"))?;
        let r = self.secret.expect("partial signatures carry r");
        let answer: Vec<G1Projective> = request.par_iter().map(|b| b * r).collect();
        let answer = bls::to_affine_batch(&answer);
        let mut out = bls::encode_g1_batch(&answer);
        if let Some(token) = &self.token {
            let transcript = self.core.ctx().transcript;
            let (bases, values) = kc_statement(token, &request, &answer, &transcript);
            let proof = eea::prove(&r, &bases, &values, &transcript, &mut self.core.rng);
            out.extend_from_slice(&proof.encode());
        }
        self.core.channel.push(kind::EVAL, &out);
        // Pair after the answer has left, while the server finishes.
        self.pairing_pending = true;
        self.state = ClientState::AwaitResult;
        Ok(())
    }

    /// The tags of `e(sigma_i, S)` for every item used (deferred work).
    fn pair_own_items(&mut self) {
        self.pairing_pending = false;
        let prepared = self.server_key.as_ref().expect("S precedes the pairings");
        let key = self.core.ctx().derive_key(TAG_KEY);
        let tags = self
            .signed
            .par_iter()
            .map(|(_, sig)| bls::gt_tag(&bls::pairing_prepared(sig, prepared), &key))
            .collect();
        self.own_tags = Some(tags);
    }

    /// Compares the tags of the items used with the server's.
    fn on_result(&mut self, tags: &[u8]) -> Result<(), ProtocolError> {
        let m = self.server_items as usize;
        expect_len("result", tags, checked_len(m, bls::TAG_LEN, "result")?)?;
        if self.own_tags.is_none() {
            // A driver that skipped the deferred work: do it now.
            self.pair_own_items();
        }
        let own = self.own_tags.take().expect("computed above");
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
        self.core.done = true;
        Ok(())
    }

    fn max_len(&self) -> usize {
        let m = self.server_items as usize;
        match self.state {
            ClientState::AwaitHello => hello::MAX_LEN,
            ClientState::AwaitKey => HEADER_LEN + bls::G2_LEN.max(MAX_ALERT_LEN),
            ClientState::AwaitRequest => HEADER_LEN.saturating_add(m.saturating_mul(bls::G1_LEN)),
            ClientState::AwaitResult => HEADER_LEN
                .saturating_add(m.saturating_mul(bls::TAG_LEN))
                .max(HEADER_LEN + MAX_ALERT_LEN),
            ClientState::Done => HEADER_LEN + MAX_ALERT_LEN,
        }
    }

    fn describe(&self) -> String {
        match self.state {
            ClientState::AwaitHello => "waiting for the server".into(),
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
}

impl_apsi_party!(Client, deferred);

impl Client {
    fn has_pending(&self) -> bool {
        self.pairing_pending
    }

    fn run_pending(&mut self) -> Result<(), ProtocolError> {
        self.pair_own_items();
        Ok(())
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
    AwaitHello,
    /// APSI: `S` sent, the tags still to compute (deferred work).
    Encoding,
    AwaitEval,
    Done,
}

/// The server of one Intersect run.
pub struct Server {
    core: Core,
    config: ServerConfig,
    items: Vec<Vec<u8>>,
    hello: Hello,
    state: ServerState,
    client_id: Vec<u8>,
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
    pub fn new(
        config: ServerConfig,
        mut items: Vec<Vec<u8>>,
        seed: [u8; 32],
    ) -> Result<Self, ProtocolError> {
        validate_items(&items)?;
        let mut core = Core::start(PROTOCOL, 1, seed);
        // Random order: the tags (and OPRF requests) must not reveal the input order.
        core.rng.shuffle(&mut items);
        let kc = config.key_consistency && config.mode == Mode::Partial;
        let mut hello = Hello::new(Role::Server, config.mode, core.salt, kc);
        hello.items = items.len() as u64;
        core.channel.push(kind::HELLO, &hello.encode());
        Ok(Self {
            core,
            config,
            items,
            hello,
            state: ServerState::AwaitHello,
            client_id: Vec::new(),
            token: None,
            blinding: None,
            exponent: None,
            request: Vec::new(),
            tags_pending: false,
            output: None,
        })
    }

    pub fn into_output(self) -> Option<ServerOutput> {
        self.output
    }

    fn kc(&self) -> bool {
        self.config.key_consistency && self.config.mode == Mode::Partial
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        match self.state {
            ServerState::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let client = Hello::decode(frame.body)?;
                self.on_hello(client)
            }
            ServerState::AwaitEval => {
                let frame = self.core.open(message, kind::EVAL)?;
                self.on_eval(frame.body)
            }
            ServerState::Encoding | ServerState::Done => Err(after_end()),
        }
    }

    fn on_hello(&mut self, client: Hello) -> Result<(), ProtocolError> {
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
            let token = KcToken::decode(bytes).map_err(invalid("key-consistency token"))?;
            let message = kc_message(&client.client_id, &token.base, &token.value);
            self.config
                .judge_key
                .verify_batch(&[message], &[token.signature], &mut self.core.rng)
                .map_err(invalid("key-consistency token"))?;
            self.token = Some(token);
        } else if client.key_consistency && self.config.mode == Mode::Partial {
            return Err(ProtocolError::Incompatible(
                "key consistency is on at the client and off at this server".into(),
            ));
        }
        self.core
            .establish(PROTOCOL, &client.salt, &self.hello.salt);
        self.client_id = client.client_id;
        let s = bls::random_scalar(&mut self.core.rng);
        self.core
            .channel
            .push(kind::KEY, &bls::encode_g2(&bls::g2_power(&s)));
        self.exponent = Some(s);
        match self.config.mode {
            Mode::Full => {
                // The tags wait until `S` has left, so the client pairs meanwhile.
                self.tags_pending = true;
                self.state = ServerState::Encoding;
            }
            Mode::Partial => {
                let t = bls::random_scalar(&mut self.core.rng);
                let blinded: Vec<G1Projective> = self
                    .items
                    .par_iter()
                    .map(|y| h1(&self.client_id, y) * t)
                    .collect();
                self.request = bls::to_affine_batch(&blinded);
                self.core
                    .channel
                    .push(kind::REQUEST, &bls::encode_g1_batch(&self.request));
                self.blinding = Some(t);
                self.state = ServerState::AwaitEval;
            }
        }
        Ok(())
    }

    /// Unblinds the OPRF answer to `d_j = H1(y_j || ID)^r` after checking the
    /// key-consistency proof, and encodes `H2(d_j)`.
    fn on_eval(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
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
            let transcript = self.core.ctx().transcript;
            let (bases, values) = kc_statement(token, &self.request, &answer, &transcript);
            eea::verify(&bases, &values, &proof, &transcript, &mut self.core.rng)
                .map_err(invalid("key-consistency proof"))?;
        }
        let unblind = bls::invert_scalar(&self.blinding.expect("set with the request"));
        let hashed: Vec<G1Projective> = answer
            .par_iter()
            .map(|c| h2(&(c * unblind).to_affine()))
            .collect();
        self.finish(&bls::to_affine_batch(&hashed));
        Ok(())
    }

    /// APSI's deferred work: `H1(y_j || ID)` for every item, then the tags.
    fn hash_and_finish(&mut self) {
        self.tags_pending = false;
        let hashed: Vec<G1Projective> = self
            .items
            .par_iter()
            .map(|y| h1(&self.client_id, y))
            .collect();
        self.finish(&bls::to_affine_batch(&hashed));
    }

    /// Sends the tags of `e(points_j, pk^s)`.
    fn finish(&mut self, points: &[G1Affine]) {
        let s = self.exponent.take().expect("drawn with the key");
        let prepared = bls::prepare(&self.config.judge_key.blinded(&s));
        let key = self.core.ctx().derive_key(TAG_KEY);
        let tags: Vec<[u8; bls::TAG_LEN]> = points
            .par_iter()
            .map(|p| bls::gt_tag(&bls::pairing_prepared(p, &prepared), &key))
            .collect();
        let mut out = Vec::with_capacity(tags.len() * bls::TAG_LEN);
        for t in &tags {
            out.extend_from_slice(t);
        }
        self.core.channel.push(kind::RESULT, &out);
        self.output = Some(ServerOutput {
            client_id: std::mem::take(&mut self.client_id),
            items: self.items.len() as u64,
        });
        self.state = ServerState::Done;
        self.core.done = true;
    }

    fn max_len(&self) -> usize {
        match self.state {
            ServerState::AwaitHello => hello::MAX_LEN,
            ServerState::AwaitEval => HEADER_LEN
                .saturating_add(self.items.len().saturating_mul(bls::G1_LEN))
                .saturating_add(eea::Proof::encoded_len(2)),
            ServerState::Encoding | ServerState::Done => HEADER_LEN + MAX_ALERT_LEN,
        }
    }

    fn describe(&self) -> String {
        match self.state {
            ServerState::AwaitHello => "waiting for a client".into(),
            ServerState::Encoding => format!("encoding {} items", self.items.len()),
            ServerState::AwaitEval => format!("waiting for {} OPRF answers", self.items.len()),
            ServerState::Done => "done".into(),
        }
    }
}

impl_apsi_party!(Server, deferred);

impl Server {
    fn has_pending(&self) -> bool {
        self.tags_pending
    }

    fn run_pending(&mut self) -> Result<(), ProtocolError> {
        self.hash_and_finish();
        Ok(())
    }
}
