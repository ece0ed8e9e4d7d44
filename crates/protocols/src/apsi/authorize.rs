//! Authorize (seed 002 Figs. 2-3, upper parts): the client gets the judge's signatures
//! on its items.
//!
//! ```text
//! APSI           client -> judge: hello, items            judge -> client: hello, signatures | reject
//! Partial-APSI   client -> judge: hello, commit, open     judge -> client: hello, challenge, signatures | reject
//! ```
//! The client sends nothing about its items before it has the judge's hello, so a
//! judge in another mode (or asking to open more than the client agreed to) never sees
//! an item.

use std::sync::Arc;

use group::Curve;
use privset_crypto::bls::{self, G1Affine, G1Projective, PublicKey, Scalar, SecretKey, eea};
use rayon::prelude::*;

use super::core::{Core, impl_apsi_party, on_off};
use super::core::{after_end, invalid, invalid_at};
use super::hello::{self, Hello, Role};
use super::signatures::SignatureSet;
use super::{KcToken, MAX_ITEM_LEN, Mode, PartialFraction, Policy, h1_batch, h2_batch, kind};
use super::{kc_base, kc_message, validate_client_id, validate_items};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{HEADER_LEN, MAX_ALERT_LEN, ProtocolId, Reader, checked_len};

const PROTOCOL: ProtocolId = ProtocolId::ApsiAuthorize;

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
    AwaitHello,
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
    core: Core,
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
    pub fn new(
        config: ClientConfig,
        items: Vec<Vec<u8>>,
        seed: [u8; 32],
    ) -> Result<Self, ProtocolError> {
        validate_client_id(&config.client_id)?;
        validate_items(&items)?;
        let mut core = Core::start(PROTOCOL, 0, seed);
        let mut hello = Hello::new(
            Role::Client,
            config.mode(),
            core.salt,
            config.key_consistency,
        );
        hello.items = items.len() as u64;
        hello.client_id = config.client_id.clone();
        hello.fraction_ppm = config.partial.map_or(0, PartialFraction::ppm);
        core.channel.push(kind::HELLO, &hello.encode());
        Ok(Self {
            core,
            config,
            items,
            hello,
            state: ClientState::AwaitHello,
            judge_key: None,
            commitment: None,
            judge_fraction: None,
            output: None,
        })
    }

    /// The signatures, once the judge accepted.
    pub fn into_output(self) -> Option<SignatureSet> {
        self.output
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        match self.state {
            ClientState::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let judge = Hello::decode(frame.body)?;
                self.on_hello(judge)
            }
            ClientState::AwaitChallenge => {
                let frame = self.core.open(message, kind::CHALLENGE)?;
                self.on_challenge(frame.body)
            }
            ClientState::AwaitSignatures => {
                let frame = self.core.channel.open(message)?;
                if frame.kind == kind::REJECT {
                    let reason = String::from_utf8_lossy(frame.body).into_owned();
                    self.state = ClientState::Done;
                    return Err(ProtocolError::Rejected(reason));
                }
                crate::session::expect_kind(&frame, kind::SIGNATURES, kind::name)?;
                self.on_signatures(frame.body)
            }
            ClientState::Done => Err(after_end()),
        }
    }

    fn on_hello(&mut self, judge: Hello) -> Result<(), ProtocolError> {
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
        let ctx = self.core.establish(PROTOCOL, &self.hello.salt, &judge.salt);
        match self.config.partial {
            None => {
                let mut body = Vec::new();
                encode_items(self.items.iter(), &mut body);
                self.core.channel.push(kind::ITEMS, &body);
                self.state = ClientState::AwaitSignatures;
            }
            Some(mine) => {
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
                let r = bls::random_scalar(&mut self.core.rng);
                let hashes = h1_batch(&self.config.client_id, &self.items);
                let blinded: Vec<G1Projective> = hashes.par_iter().map(|h| h * r).collect();
                let commitments = bls::to_affine_batch(&blinded);
                let kc = self.config.key_consistency.then(|| {
                    let base = kc_base(&ctx.transcript);
                    (base, (base * r).to_affine())
                });
                let mut body = bls::encode_g1_batch(&commitments);
                if let Some((_, value)) = kc {
                    body.extend_from_slice(&bls::encode_g1(&value));
                }
                self.core.channel.push(kind::COMMIT, &body);
                self.commitment = Some(Commitment {
                    r,
                    hashes,
                    commitments,
                    kc,
                });
                self.state = ClientState::AwaitChallenge;
            }
        }
        Ok(())
    }

    /// The judge's indices: exactly `ceil(p n)` of them (the fraction it announced),
    /// strictly increasing and in range; then the opened items and the proof.
    fn on_challenge(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let expected = self.opened_count();
        let c = self.commitment.as_ref().expect("partial mode");
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
        let context = self.core.ctx().transcript;
        let proof = eea::prove(&c.r, &bases, &values, &context, &mut self.core.rng);
        let mut out = Vec::new();
        encode_items(indices.iter().map(|&i| &self.items[i]), &mut out);
        out.extend_from_slice(&proof.encode());
        self.core.channel.push(kind::OPEN, &out);
        self.state = ClientState::AwaitSignatures;
        Ok(())
    }

    fn opened_count(&self) -> usize {
        self.judge_fraction
            .expect("set by the hello in partial mode")
            .opened(self.items.len())
    }

    fn on_signatures(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let kc = self.config.key_consistency && self.config.partial.is_some();
        let n = self.items.len();
        crate::wire::expect_len(
            "signatures",
            body,
            checked_len(n + kc as usize, bls::G1_LEN, "signatures")?,
        )?;
        let mut points = bls::decode_g1_batch(body).map_err(invalid_at("signature"))?;
        let key = self.judge_key.expect("set by the hello");
        let (messages, kc_token) = match &self.commitment {
            None => (h1_batch(&self.config.client_id, &self.items), None),
            Some(c) => {
                let mut messages = h2_batch(&c.commitments);
                let token = c.kc.map(|(base, value)| KcToken {
                    base,
                    value,
                    signature: *points.last().expect("length checked"),
                });
                if let Some(t) = &token {
                    messages.push(kc_message(&self.config.client_id, &t.base, &t.value));
                }
                (messages, token)
            }
        };
        key.verify_batch(&messages, &points, &mut self.core.rng)
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
        });
        self.state = ClientState::Done;
        self.core.done = true;
        Ok(())
    }

    fn max_len(&self) -> usize {
        let n = self.items.len();
        match self.state {
            ClientState::AwaitHello => hello::MAX_LEN,
            ClientState::AwaitChallenge => HEADER_LEN + 4 + 4 * n,
            ClientState::AwaitSignatures => HEADER_LEN + ((n + 1) * bls::G1_LEN).max(MAX_ALERT_LEN),
            ClientState::Done => HEADER_LEN + MAX_ALERT_LEN,
        }
    }

    fn describe(&self) -> String {
        match self.state {
            ClientState::AwaitHello => "waiting for the judge".into(),
            ClientState::AwaitChallenge => format!("committed to {} items", self.items.len()),
            ClientState::AwaitSignatures => "waiting for the judge's signatures".into(),
            ClientState::Done => "authorized".into(),
        }
    }
}

impl_apsi_party!(Client);

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
    AwaitHello,
    AwaitItems,
    AwaitCommit,
    AwaitOpen,
    Done,
}

/// The judge of one Authorize session. Holds the signing key and the operator's
/// policy; the key is shared by every session of a `privset judge serve`.
pub struct Judge {
    core: Core,
    config: JudgeConfig,
    key: Arc<SecretKey>,
    policy: Box<dyn Policy>,
    hello: Hello,
    state: JudgeState,
    client: Option<Hello>,
    commitments: Vec<G1Affine>,
    kc_value: Option<G1Affine>,
    challenge: Vec<usize>,
    output: Option<JudgeOutput>,
}

impl Judge {
    pub fn new(
        config: JudgeConfig,
        key: Arc<SecretKey>,
        policy: Box<dyn Policy>,
        seed: [u8; 32],
    ) -> Self {
        let mut core = Core::start(PROTOCOL, 1, seed);
        let mode = if config.partial.is_some() {
            Mode::Partial
        } else {
            Mode::Full
        };
        let mut hello = Hello::new(Role::Judge, mode, core.salt, config.key_consistency);
        hello.fraction_ppm = config.partial.map_or(0, PartialFraction::ppm);
        hello.public_key = Some(key.public_key().to_bytes());
        core.channel.push(kind::HELLO, &hello.encode());
        Self {
            core,
            config,
            key,
            policy,
            hello,
            state: JudgeState::AwaitHello,
            client: None,
            commitments: Vec::new(),
            kc_value: None,
            challenge: Vec::new(),
            output: None,
        }
    }

    pub fn into_output(self) -> Option<JudgeOutput> {
        self.output
    }

    fn client(&self) -> &Hello {
        self.client.as_ref().expect("set by the hello")
    }

    fn kc(&self) -> bool {
        self.config.key_consistency && self.config.partial.is_some()
    }

    fn step(&mut self, message: &[u8]) -> Result<(), ProtocolError> {
        match self.state {
            JudgeState::AwaitHello => {
                let frame = self.core.open(message, kind::HELLO)?;
                let client = Hello::decode(frame.body)?;
                self.on_hello(client)
            }
            JudgeState::AwaitItems => {
                let frame = self.core.open(message, kind::ITEMS)?;
                let n = self.client().items as usize;
                let mut r = Reader::new(frame.body, "items");
                let items = decode_items(&mut r, n)?;
                r.finish()?;
                self.decide(&items, |judge| {
                    let points = h1_batch(&judge.client().client_id, &items);
                    judge.key.sign_points(&points)
                })
            }
            JudgeState::AwaitCommit => {
                let frame = self.core.open(message, kind::COMMIT)?;
                self.on_commit(frame.body)
            }
            JudgeState::AwaitOpen => {
                let frame = self.core.open(message, kind::OPEN)?;
                self.on_open(frame.body)
            }
            JudgeState::Done => Err(after_end()),
        }
    }

    fn on_hello(&mut self, client: Hello) -> Result<(), ProtocolError> {
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
        self.core
            .establish(PROTOCOL, &client.salt, &self.hello.salt);
        self.state = if self.config.partial.is_some() {
            JudgeState::AwaitCommit
        } else {
            JudgeState::AwaitItems
        };
        self.client = Some(client);
        Ok(())
    }

    /// The commitments, then `ceil(p n)` distinct indices drawn with the CSPRNG
    /// (a partial Fisher-Yates shuffle), sent in increasing order.
    fn on_commit(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let n = self.client().items as usize;
        let kc = self.kc() as usize;
        crate::wire::expect_len("commit", body, checked_len(n + kc, bls::G1_LEN, "commit")?)?;
        let mut points = bls::decode_g1_batch(body).map_err(invalid_at("commitment"))?;
        if kc == 1 {
            self.kc_value = points.pop();
        }
        self.commitments = points;
        let k = self.config.partial.expect("partial mode").opened(n);
        let mut pool: Vec<u32> = (0..n as u32).collect();
        for i in 0..k {
            let j = i + self.core.rng.below((n - i) as u64) as usize;
            pool.swap(i, j);
        }
        let mut chosen: Vec<usize> = pool[..k].iter().map(|&i| i as usize).collect();
        chosen.sort_unstable();
        let mut out = Vec::with_capacity(4 + 4 * k);
        out.extend_from_slice(&(k as u32).to_be_bytes());
        for &i in &chosen {
            out.extend_from_slice(&(i as u32).to_be_bytes());
        }
        self.core.channel.push(kind::CHALLENGE, &out);
        self.challenge = chosen;
        self.state = JudgeState::AwaitOpen;
        Ok(())
    }

    /// The opened items and the exponent-equality proof that they are what the
    /// commitments at those indices (and `h_d`) hide under one `r`.
    fn on_open(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let k = self.challenge.len();
        let mut r = Reader::new(body, "open");
        let opened = decode_items(&mut r, k)?;
        let proof = eea::Proof::decode(r.rest(), k + self.kc() as usize)
            .map_err(invalid("exponent-equality proof"))?;
        let client_id = self.client().client_id.clone();
        let mut bases = h1_batch(&client_id, &opened);
        let mut values: Vec<G1Affine> = self
            .challenge
            .iter()
            .map(|&i| self.commitments[i])
            .collect();
        let kc_token_base = self.kc().then(|| kc_base(&self.core.ctx().transcript));
        if let (Some(base), Some(value)) = (kc_token_base, self.kc_value) {
            bases.push(base);
            values.push(value);
        }
        let context = self.core.ctx().transcript;
        eea::verify(&bases, &values, &proof, &context, &mut self.core.rng)
            .map_err(invalid("exponent-equality proof"))?;
        self.decide(&opened, |judge| {
            let mut signatures = judge.key.sign_points(&h2_batch(&judge.commitments));
            if let (Some(base), Some(value)) = (kc_token_base, judge.kc_value) {
                signatures.extend(
                    judge
                        .key
                        .sign_points(&[kc_message(&client_id, &base, &value)]),
                );
            }
            signatures
        })
    }

    /// Applies the policy to the items shown; signs (with `sign`) or rejects.
    fn decide(
        &mut self,
        shown: &[Vec<u8>],
        sign: impl FnOnce(&Self) -> Vec<G1Affine>,
    ) -> Result<(), ProtocolError> {
        let client_id = self.client().client_id.clone();
        let verdict = self.policy.check(&client_id, shown);
        let rejected = match verdict {
            Ok(()) => {
                let signatures = sign(self);
                self.core
                    .channel
                    .push(kind::SIGNATURES, &bls::encode_g1_batch(&signatures));
                None
            }
            Err(reason) => {
                let mut end = reason.len().min(MAX_ALERT_LEN);
                while !reason.is_char_boundary(end) {
                    end -= 1;
                }
                self.core
                    .channel
                    .push(kind::REJECT, &reason.as_bytes()[..end]);
                Some(reason)
            }
        };
        self.output = Some(JudgeOutput {
            client_id,
            items: self.client().items,
            shown: shown.len() as u64,
            rejected,
        });
        self.state = JudgeState::Done;
        self.core.done = true;
        Ok(())
    }

    fn max_len(&self) -> usize {
        let n = self.client.as_ref().map_or(0, |c| c.items as usize);
        let items = |k: usize| k.saturating_mul(4 + MAX_ITEM_LEN);
        match self.state {
            JudgeState::AwaitHello => hello::MAX_LEN,
            JudgeState::AwaitItems => HEADER_LEN.saturating_add(items(n)),
            JudgeState::AwaitCommit => HEADER_LEN + (n + 1).saturating_mul(bls::G1_LEN),
            JudgeState::AwaitOpen => {
                let k = self.challenge.len();
                HEADER_LEN
                    .saturating_add(items(k))
                    .saturating_add(eea::Proof::encoded_len(k + 1))
            }
            JudgeState::Done => HEADER_LEN + MAX_ALERT_LEN,
        }
    }

    fn describe(&self) -> String {
        match self.state {
            JudgeState::AwaitHello => "waiting for a client".into(),
            JudgeState::AwaitItems => format!("waiting for {} items", self.client().items),
            JudgeState::AwaitCommit => format!("waiting for {} commitments", self.client().items),
            JudgeState::AwaitOpen => format!("waiting for {} opened items", self.challenge.len()),
            JudgeState::Done => "done".into(),
        }
    }
}

impl_apsi_party!(Judge);
