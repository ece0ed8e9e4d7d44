//! Authorize (Falzon-Markatou, "Re-visiting Authorized PSI", Figs. 2-3, upper parts):
//! the client gets the judge's signatures on its items.
//!
//! ```text
//! APSI           client -> judge: hello, items            judge -> client: hello, signatures | reject
//! Partial-APSI   client -> judge: hello, commit, open     judge -> client: hello, challenge, signatures | reject
//! ```
//! The hellos are the engine's (salt, then these settings). The client sends nothing
//! about its items before it has checked the judge's hello, so a judge in another mode
//! (or asking to open more than the client agreed to) never sees an item.

use std::sync::Arc;

use group::Curve;
use privset_crypto::bls::{self, G1Affine, G1Projective, PublicKey, Scalar, SecretKey, eea};
use rayon::prelude::*;

use super::hello::{self, Hello, Role};
use super::signatures::SignatureSet;
use super::{CLIENT, PROVIDER, invalid, invalid_at, not_now, on_off};
use super::{KcToken, MAX_ITEM_LEN, Mode, PartialFraction, Policy, h1_batch, h2_batch, kind};
use super::{kc_base, kc_message, validate_client_id, validate_items};
use crate::agreed::AgreedSettings;
use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::meter::Meter;
use crate::party::Party;
use crate::wire::{MAX_ALERT_LEN, PartyId, ProtocolId, Reader, checked_len};

const PROTOCOL: ProtocolId = ProtocolId::ApsiAuthorize;
const NAMES: [&str; 2] = ["client", "judge"];
/// The judge's one long phase: hashing each shown item (or commitment) and signing it.
const SIGN_PHASE: &str = "hashing and signing the client's items";

/// Packs items as u32 length + bytes each.
fn encode_items<'a>(items: impl Iterator<Item = &'a Vec<u8>>, out: &mut Vec<u8>) {
    for x in items {
        out.extend_from_slice(&(x.len() as u32).to_be_bytes());
        out.extend_from_slice(x);
    }
}

fn decode_items(r: &mut Reader<'_>, count: usize) -> Result<Vec<Vec<u8>>, ProtocolError> {
    (0..count)
        .map(|_| r.bytes(MAX_ITEM_LEN).map(<[u8]>::to_vec))
        .collect()
}

/// Settings of the client's Authorize.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub client_id: Vec<u8>,
    /// `None`: APSI. `Some(p)`: Partial-APSI, opening at most `ceil(p n)` items.
    pub partial: Option<PartialFraction>,
    pub key_consistency: bool,
    /// How the items were made from rows (`privset_run::keys::Keys::agreed`): stated
    /// in the hello (the judge holds no set and compares none of it) and recorded in
    /// the [`SignatureSet`], so that every later Intersect states the settings the
    /// signed items were made with. Empty: none stated or recorded.
    pub key_settings: AgreedSettings,
}

impl ClientConfig {
    fn mode(&self) -> Mode {
        if self.partial.is_some() {
            Mode::Partial
        } else {
            Mode::Full
        }
    }
}

enum ClientState {
    /// Hellos not yet exchanged (the engine's part).
    Starting,
    AwaitChallenge,
    AwaitSignatures,
    Done,
}

/// The Partial-APSI client's commitment: `r`, `H1(x_i || ID)`, `X_i = H1(..)^r`, and
/// with key consistency `(D, D^r)`.
struct Commitment {
    r: Scalar,
    hashes: Vec<G1Affine>,
    commitments: Vec<G1Affine>,
    kc: Option<(G1Affine, G1Affine)>,
}

/// The client of Authorize.
pub struct Client {
    config: ClientConfig,
    items: Vec<Vec<u8>>,
    hello: Hello,
    state: ClientState,
    judge_key: Option<PublicKey>,
    commitment: Option<Commitment>,
    /// Partial-APSI: the fraction the judge announced (checked against ours).
    judge_fraction: Option<PartialFraction>,
    output: Option<SignatureSet>,
}

impl Client {
    /// The client party (participant 0), its randomness all from `seed`; its output is
    /// the [`SignatureSet`], once the judge accepted.
    pub fn new(
        config: ClientConfig,
        items: Vec<Vec<u8>>,
        seed: [u8; 32],
    ) -> Result<Engine<Self>, ProtocolError> {
        validate_client_id(&config.client_id)?;
        validate_items(&items)?;
        let mut hello = Hello::new(Role::Client, config.mode(), config.key_consistency);
        hello.items = items.len() as u64;
        hello.client_id = config.client_id.clone();
        hello.fraction_ppm = config.partial.map_or(0, PartialFraction::ppm);
        let settings = config.key_settings.clone();
        let client = Self {
            config,
            items,
            hello,
            state: ClientState::Starting,
            judge_key: None,
            commitment: None,
            judge_fraction: None,
            output: None,
        };
        let mut engine = Engine::new(client, seed)?;
        engine.agree(settings)?;
        Ok(engine)
    }

    /// The Partial-APSI commitment to every item (APSI Fig. 3): `X_i = H1(x_i || ID)^r`
    /// and, with key consistency, `h_d = D^r`.
    fn commit(&mut self, session: &mut Session<'_>) {
        let r = bls::random_scalar(session.rng);
        let id = &self.config.client_id;
        let hashes = session
            .meter
            .slices("hashing our items", &self.items, 1, |_, slice| {
                h1_batch(id, slice)
            });
        let commitments =
            session
                .meter
                .slices("committing to our items", &hashes, 1, |_, slice| {
                    let blinded: Vec<G1Projective> = slice.par_iter().map(|h| h * r).collect();
                    bls::to_affine_batch(&blinded)
                });
        let kc = self.config.key_consistency.then(|| {
            let base = kc_base(&session.ctx.transcript);
            (base, (base * r).to_affine())
        });
        let mut body = bls::encode_g1_batch(&commitments);
        if let Some((_, value)) = kc {
            body.extend_from_slice(&bls::encode_g1(&value));
        }
        session.send(PROVIDER, kind::COMMIT, &body);
        self.commitment = Some(Commitment {
            r,
            hashes,
            commitments,
            kc,
        });
    }

    /// The judge's indices: exactly `ceil(p n)` of them (the fraction it announced),
    /// strictly increasing and in range; then the opened items and the proof.
    fn on_challenge(
        &mut self,
        session: &mut Session<'_>,
        body: &[u8],
    ) -> Result<(), ProtocolError> {
        let expected = self.opened_count()?;
        let c = self
            .commitment
            .as_ref()
            .ok_or(not_now("a challenge before the commitment"))?;
        let mut r = Reader::new(body, "challenge");
        let count = r.u32()? as usize;
        if count != expected {
            return Err(PeerMisbehaved::Inconsistent(format!(
                "the judge asks to open {count} items, its announced fraction allows {expected}"
            ))
            .into());
        }
        let mut indices = Vec::with_capacity(count);
        for _ in 0..count {
            let i = r.u32()? as usize;
            if i >= self.items.len() || indices.last().is_some_and(|&last| i <= last) {
                return Err(PeerMisbehaved::Malformed(
                    "challenge indices must be increasing and below the set size".into(),
                )
                .into());
            }
            indices.push(i);
        }
        r.finish()?;
        let mut bases: Vec<G1Affine> = indices.iter().map(|&i| c.hashes[i]).collect();
        let mut values: Vec<G1Affine> = indices.iter().map(|&i| c.commitments[i]).collect();
        if let Some((base, value)) = c.kc {
            bases.push(base);
            values.push(value);
        }
        let context = session.ctx.transcript;
        let proof = eea::prove(&c.r, &bases, &values, &context, session.rng);
        let mut out = Vec::new();
        encode_items(indices.iter().map(|&i| &self.items[i]), &mut out);
        out.extend_from_slice(&proof.encode());
        session.send(PROVIDER, kind::OPEN, &out);
        self.state = ClientState::AwaitSignatures;
        Ok(())
    }

    fn opened_count(&self) -> Result<usize, ProtocolError> {
        let fraction = self
            .judge_fraction
            .ok_or(not_now("a challenge outside Partial-APSI"))?;
        Ok(fraction.opened(self.items.len()))
    }

    fn on_signatures(
        &mut self,
        session: &mut Session<'_>,
        body: &[u8],
    ) -> Result<(), ProtocolError> {
        let kc = self.config.key_consistency && self.config.partial.is_some();
        let n = self.items.len();
        crate::wire::expect_len(
            "signatures",
            body,
            checked_len(n + kc as usize, bls::G1_LEN, "signatures")?,
        )?;
        let mut points = bls::decode_g1_batch(body).map_err(invalid_at("signature"))?;
        let key = self
            .judge_key
            .ok_or(not_now("signatures before the judge's hello"))?;
        const PHASE: &str = "hashing our items to check the judge's signatures";
        let id = &self.config.client_id;
        let (messages, kc_token) = match &self.commitment {
            None => (
                (session.meter).slices(PHASE, &self.items, 1, |_, s| h1_batch(id, s)),
                None,
            ),
            Some(c) => {
                let mut messages =
                    (session.meter).slices(PHASE, &c.commitments, 1, |_, s| h2_batch(s));
                let token = match (c.kc, points.last()) {
                    (Some((base, value)), Some(&signature)) => Some(KcToken {
                        base,
                        value,
                        signature,
                    }),
                    _ => None,
                };
                if let Some(t) = &token {
                    messages.push(kc_message(&self.config.client_id, &t.base, &t.value));
                }
                (messages, token)
            }
        };
        key.verify_batch(&messages, &points, session.rng)
            .map_err(invalid("judge signatures"))?;
        points.truncate(n);
        self.output = Some(SignatureSet {
            mode: self.config.mode(),
            judge_key: key,
            client_id: self.config.client_id.clone(),
            secret: self.commitment.as_ref().map(|c| c.r),
            kc_token,
            items: std::mem::take(&mut self.items),
            signatures: points,
            key_settings: (!self.config.key_settings.is_empty())
                .then(|| self.config.key_settings.clone()),
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
        let judge = Hello::decode(settings)?;
        self.hello.check_peer(&judge, Role::Judge, 0)?;
        if judge.key_consistency != self.config.key_consistency {
            return Err(ProtocolError::Incompatible(format!(
                "key consistency is {} here and {} at the judge",
                on_off(self.config.key_consistency),
                on_off(judge.key_consistency)
            )));
        }
        let key = judge.public_key.ok_or_else(|| {
            PeerMisbehaved::Malformed("the judge's hello has no public key".into())
        })?;
        self.judge_key = Some(PublicKey::from_bytes(&key).map_err(invalid("judge public key"))?);
        if let Some(mine) = self.config.partial {
            let asked = PartialFraction::from_ppm(judge.fraction_ppm).ok_or_else(|| {
                PeerMisbehaved::Malformed(format!(
                    "the judge asks to open {} parts per million",
                    judge.fraction_ppm
                ))
            })?;
            if asked > mine {
                return Err(ProtocolError::Incompatible(format!(
                    "the judge asks to open {} of the items, above the {} this client agreed to (--partial)",
                    asked.as_f64(),
                    mine.as_f64()
                )));
            }
            self.judge_fraction = Some(asked);
        }
        Ok(())
    }
}

impl Protocol for Client {
    type Output = SignatureSet;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        match self.config.partial {
            None => {
                let mut body = Vec::new();
                encode_items(self.items.iter(), &mut body);
                session.send(PROVIDER, kind::ITEMS, &body);
                self.state = ClientState::AwaitSignatures;
            }
            Some(_) => {
                self.commit(session);
                self.state = ClientState::AwaitChallenge;
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
            ClientState::AwaitChallenge => {
                self.on_challenge(session, message.expect(kind::CHALLENGE)?)
            }
            ClientState::AwaitSignatures => {
                if message.kind == kind::REJECT {
                    let reason = crate::peer_text::sanitize(message.body);
                    self.state = ClientState::Done;
                    return Err(ProtocolError::Rejected(reason));
                }
                self.on_signatures(session, message.expect(kind::SIGNATURES)?)
            }
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
        let n = self.items.len();
        match self.state {
            ClientState::AwaitChallenge => 4 + 4 * n,
            ClientState::AwaitSignatures => ((n + 1) * bls::G1_LEN).max(MAX_ALERT_LEN),
            ClientState::Starting | ClientState::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, ClientState::Done) && self.output.is_some()
    }

    fn status(&self) -> String {
        match self.state {
            ClientState::Starting => "waiting for the judge".into(),
            ClientState::AwaitChallenge => format!("committed to {} items", self.items.len()),
            ClientState::AwaitSignatures => "waiting for the judge's signatures".into(),
            ClientState::Done => "authorized".into(),
        }
    }

    fn into_output(self) -> Option<SignatureSet> {
        self.output
    }
}

/// Settings of the judge.
#[derive(Clone, Debug)]
pub struct JudgeConfig {
    /// `None`: APSI (the client shows every item). `Some(p)`: Partial-APSI, opening
    /// `ceil(p n)` items chosen with a CSPRNG.
    pub partial: Option<PartialFraction>,
    pub key_consistency: bool,
    /// Largest client set accepted.
    pub max_items: u64,
}

/// What the judge did in one session (for its log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JudgeOutput {
    pub client_id: Vec<u8>,
    /// Items the client asked to have signed.
    pub items: u64,
    /// Items the judge saw in the clear.
    pub shown: u64,
    /// `None` if accepted and signed, else the policy's reason.
    pub rejected: Option<String>,
}

enum JudgeState {
    /// Hellos not yet exchanged (the engine's part).
    Starting,
    AwaitItems,
    AwaitCommit,
    AwaitOpen,
    Done,
}

/// The judge of one Authorize session. Holds the signing key and the operator's
/// policy; both are shared by every session of a `privset judge serve`, concurrent
/// ones included.
pub struct Judge {
    config: JudgeConfig,
    key: Arc<SecretKey>,
    policy: Arc<dyn Policy>,
    hello: Hello,
    state: JudgeState,
    client: Option<Hello>,
    commitments: Vec<G1Affine>,
    kc_value: Option<G1Affine>,
    challenge: Vec<usize>,
    output: Option<JudgeOutput>,
}

impl Judge {
    /// The judge party (participant 1), its randomness all from `seed`; its output is
    /// the [`JudgeOutput`] of the session.
    pub fn new(
        config: JudgeConfig,
        key: Arc<SecretKey>,
        policy: Arc<dyn Policy>,
        seed: [u8; 32],
    ) -> Result<Engine<Self>, ProtocolError> {
        let mode = if config.partial.is_some() {
            Mode::Partial
        } else {
            Mode::Full
        };
        let mut hello = Hello::new(Role::Judge, mode, config.key_consistency);
        hello.fraction_ppm = config.partial.map_or(0, PartialFraction::ppm);
        hello.public_key = Some(key.public_key().to_bytes());
        let judge = Self {
            config,
            key,
            policy,
            hello,
            state: JudgeState::Starting,
            client: None,
            commitments: Vec::new(),
            kc_value: None,
            challenge: Vec::new(),
            output: None,
        };
        // The judge holds no set of its own (Falzon-Markatou, Figs. 2-3: its inputs are
        // its key and its policy), so it states no key settings and compares none: the
        // client's settings matter between the client and the server, at Intersect.
        let mut engine = Engine::new(judge, seed)?;
        engine.agree(AgreedSettings::no_input())?;
        Ok(engine)
    }

    fn client(&self) -> Result<&Hello, ProtocolError> {
        self.client
            .as_ref()
            .ok_or(not_now("a client message before its hello"))
    }

    fn client_items(&self) -> usize {
        self.client.as_ref().map_or(0, |c| c.items as usize)
    }

    fn kc(&self) -> bool {
        self.config.key_consistency && self.config.partial.is_some()
    }

    fn on_items(&mut self, session: &mut Session<'_>, body: &[u8]) -> Result<(), ProtocolError> {
        let n = self.client_items();
        let mut r = Reader::new(body, "items");
        let items = decode_items(&mut r, n)?;
        r.finish()?;
        self.decide(session, &items, |judge, client_id, meter| {
            meter.slices(SIGN_PHASE, &items, 1, |_, slice| {
                judge.key.sign_points(&h1_batch(client_id, slice))
            })
        })
    }

    /// The commitments, then `ceil(p n)` distinct indices drawn with the CSPRNG
    /// (a partial Fisher-Yates shuffle), sent in increasing order.
    fn on_commit(&mut self, session: &mut Session<'_>, body: &[u8]) -> Result<(), ProtocolError> {
        let n = self.client_items();
        let kc = self.kc() as usize;
        crate::wire::expect_len("commit", body, checked_len(n + kc, bls::G1_LEN, "commit")?)?;
        let mut points = bls::decode_g1_batch(body).map_err(invalid_at("commitment"))?;
        if kc == 1 {
            self.kc_value = points.pop();
        }
        self.commitments = points;
        let fraction = self
            .config
            .partial
            .ok_or(not_now("commitments outside Partial-APSI"))?;
        let k = fraction.opened(n);
        let mut pool: Vec<u32> = (0..n as u32).collect();
        for i in 0..k {
            let j = i + session.rng.below((n - i) as u64) as usize;
            pool.swap(i, j);
        }
        let mut chosen: Vec<usize> = pool[..k].iter().map(|&i| i as usize).collect();
        chosen.sort_unstable();
        let mut out = Vec::with_capacity(4 + 4 * k);
        out.extend_from_slice(&(k as u32).to_be_bytes());
        for &i in &chosen {
            out.extend_from_slice(&(i as u32).to_be_bytes());
        }
        session.send(CLIENT, kind::CHALLENGE, &out);
        self.challenge = chosen;
        self.state = JudgeState::AwaitOpen;
        Ok(())
    }

    /// The opened items and the exponent-equality proof that they are what the
    /// commitments at those indices (and `h_d`) hide under one `r`.
    fn on_open(&mut self, session: &mut Session<'_>, body: &[u8]) -> Result<(), ProtocolError> {
        let k = self.challenge.len();
        let mut r = Reader::new(body, "open");
        let opened = decode_items(&mut r, k)?;
        let proof = eea::Proof::decode(r.rest(), k + self.kc() as usize)
            .map_err(invalid("exponent-equality proof"))?;
        let client_id = self.client()?.client_id.clone();
        let mut bases = h1_batch(&client_id, &opened);
        let mut values: Vec<G1Affine> = self
            .challenge
            .iter()
            .map(|&i| self.commitments[i])
            .collect();
        let context = session.ctx.transcript;
        let kc_token_base = self.kc().then(|| kc_base(&context));
        if let (Some(base), Some(value)) = (kc_token_base, self.kc_value) {
            bases.push(base);
            values.push(value);
        }
        eea::verify(&bases, &values, &proof, &context, session.rng)
            .map_err(invalid("exponent-equality proof"))?;
        self.decide(session, &opened, |judge, client_id, meter| {
            let mut signatures = meter.slices(SIGN_PHASE, &judge.commitments, 1, |_, slice| {
                judge.key.sign_points(&h2_batch(slice))
            });
            if let (Some(base), Some(value)) = (kc_token_base, judge.kc_value) {
                signatures.extend(
                    judge
                        .key
                        .sign_points(&[kc_message(client_id, &base, &value)]),
                );
            }
            signatures
        })
    }

    /// Applies the policy to the items shown; signs (with `sign`) or rejects.
    fn decide(
        &mut self,
        session: &mut Session<'_>,
        shown: &[Vec<u8>],
        sign: impl FnOnce(&Self, &[u8], &Meter) -> Vec<G1Affine>,
    ) -> Result<(), ProtocolError> {
        let client = self.client()?;
        let (client_id, items) = (client.client_id.clone(), client.items);
        let rejected = match self.policy.check(&client_id, shown) {
            Ok(()) => {
                let signatures = sign(self, &client_id, session.meter);
                session.send(CLIENT, kind::SIGNATURES, &bls::encode_g1_batch(&signatures));
                None
            }
            Err(reason) => {
                let mut end = reason.len().min(MAX_ALERT_LEN);
                while !reason.is_char_boundary(end) {
                    end -= 1;
                }
                session.send(CLIENT, kind::REJECT, &reason.as_bytes()[..end]);
                Some(reason)
            }
        };
        self.output = Some(JudgeOutput {
            client_id,
            items,
            shown: shown.len() as u64,
            rejected,
        });
        self.state = JudgeState::Done;
        Ok(())
    }
}

impl Handshake for Judge {
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
        self.hello
            .check_peer(&client, Role::Client, self.config.max_items)?;
        if client.key_consistency != self.config.key_consistency {
            return Err(ProtocolError::Incompatible(format!(
                "key consistency is {} at the judge and {} at the client",
                on_off(self.config.key_consistency),
                on_off(client.key_consistency)
            )));
        }
        if client.client_id.is_empty() {
            return Err(
                PeerMisbehaved::Malformed("the client's hello has no client ID".into()).into(),
            );
        }
        if let Some(p) = self.config.partial
            && client.fraction_ppm < p.ppm()
        {
            return Err(ProtocolError::Incompatible(format!(
                "the judge opens {} of the items, the client agreed to at most {} (--partial)",
                p.as_f64(),
                client.fraction_ppm as f64 / 1e6
            )));
        }
        self.client = Some(client);
        Ok(())
    }
}

impl Protocol for Judge {
    type Output = JudgeOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, _session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.state = if self.config.partial.is_some() {
            JudgeState::AwaitCommit
        } else {
            JudgeState::AwaitItems
        };
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match self.state {
            JudgeState::AwaitItems => self.on_items(session, message.expect(kind::ITEMS)?),
            JudgeState::AwaitCommit => self.on_commit(session, message.expect(kind::COMMIT)?),
            JudgeState::AwaitOpen => self.on_open(session, message.expect(kind::OPEN)?),
            JudgeState::Starting | JudgeState::Done => {
                Err(not_now("a message the judge did not await"))
            }
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            JudgeState::Done => None,
            _ => Some(CLIENT),
        }
    }

    fn max_message_len(&self) -> usize {
        let n = self.client_items();
        let items = |k: usize| k.saturating_mul(4 + MAX_ITEM_LEN);
        match self.state {
            JudgeState::AwaitItems => items(n),
            JudgeState::AwaitCommit => (n + 1).saturating_mul(bls::G1_LEN),
            JudgeState::AwaitOpen => {
                let k = self.challenge.len();
                items(k).saturating_add(eea::Proof::encoded_len(k + 1))
            }
            JudgeState::Starting | JudgeState::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, JudgeState::Done)
    }

    fn status(&self) -> String {
        let n = self.client_items();
        match self.state {
            JudgeState::Starting => "waiting for a client".into(),
            JudgeState::AwaitItems => format!("waiting for {n} items"),
            JudgeState::AwaitCommit => format!("waiting for {n} commitments"),
            JudgeState::AwaitOpen => format!("waiting for {} opened items", self.challenge.len()),
            JudgeState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<JudgeOutput> {
        self.output
    }
}
