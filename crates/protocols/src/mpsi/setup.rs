//! What every participant of a multi-party PSI session announces and checks, the
//! messages it expects next, and the joint key of the set holders.

use std::collections::VecDeque;

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::elgamal::joint::{
    CONTRIBUTION_LEN, ContributionSecret, KeyContribution, contribute, joint_key_share,
    joint_public_key,
};
use privset_crypto::tahe::elgamal::{KeyShare, PublicKey};

use super::{MpsiConfig, MpsiProtocol, SCHEME_ELGAMAL, SCHEME_PAILLIER, kind_name};
use crate::engine::{Handshake, Message, Roster};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::session::SessionContext;
use crate::wire::{self, PartyId};

/// Bytes of the hello settings: protocol, scheme, participant count, size, key.
const SETTINGS_LEN: usize = 1 + 1 + 1 + 8 + 32;

/// The handshake of every role: settings `protocol ‖ scheme ‖ count ‖ size (u64) ‖ key
/// (32)`, where `size` is the party's set size (Bay et al., Hazay-Venkitasubramaniam:
/// public in these protocols) or its bound on every set (Miyaji-Nishida; 0 from the
/// dealer), and `key` the dealt key's fingerprint (zeros when the key is agreed in the
/// session: [`super::MpsiKey`]).
pub struct Setup {
    pub(super) config: MpsiConfig,
    /// What each participant announced as its `size` (its own included).
    pub(super) sizes: Vec<Option<u64>>,
}

impl Setup {
    pub(super) fn new(config: MpsiConfig) -> Self {
        let mut sizes = vec![None; config.names.len()];
        sizes[config.me as usize] = Some(config.announced_size());
        Self { config, sizes }
    }

    /// The size participant `p` announced (0 if it never announced one: the spokes of a
    /// star see only the hub's hello).
    pub(super) fn size_of(&self, p: PartyId) -> u64 {
        self.sizes.get(p as usize).copied().flatten().unwrap_or(0)
    }

    /// Number of set holders (every participant but the coordinator).
    pub(super) fn holders(&self) -> u32 {
        self.config.names.len() as u32 - 1
    }

    pub(super) fn name(&self, p: PartyId) -> String {
        self.config
            .names
            .get(p as usize)
            .cloned()
            .unwrap_or_else(|| format!("participant {p}"))
    }
}

impl Handshake for Setup {
    fn roster(&self) -> Roster {
        Roster {
            protocol: self.config.protocol.id(),
            names: self.config.names.clone(),
            me: self.config.me,
            topology: self.config.protocol.topology(),
        }
    }

    fn kind_name(kind: u8) -> &'static str {
        kind_name(kind)
    }

    fn settings(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SETTINGS_LEN);
        out.push(self.config.protocol.code());
        out.push(self.config.key.code());
        out.push(self.config.names.len() as u8);
        out.extend_from_slice(&self.config.announced_size().to_be_bytes());
        out.extend_from_slice(&self.config.key.fingerprint());
        out
    }

    fn max_settings_len(&self) -> usize {
        SETTINGS_LEN
    }

    fn check_settings(&mut self, from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "mpsi hello");
        let (protocol, scheme, count, size) = (r.u8()?, r.u8()?, r.u8()?, r.u64()?);
        let key: [u8; 32] = r.array()?;
        r.finish()?;
        let (me, them) = (self.name(self.config.me), self.name(from));
        if protocol != self.config.protocol.code() {
            let theirs =
                MpsiProtocol::from_code(protocol).map_or("an unknown protocol", |p| p.name());
            return Err(ProtocolError::Incompatible(format!(
                "protocol: the {me} runs {}, the {them} {theirs}",
                self.config.protocol.name()
            )));
        }
        let mine = &self.config.key;
        if scheme != mine.code() {
            let theirs = match scheme {
                SCHEME_ELGAMAL => "elgamal",
                SCHEME_PAILLIER => "paillier",
                _ => "an unknown scheme",
            };
            return Err(ProtocolError::Incompatible(format!(
                "threshold scheme: the {me} uses {}, the {them} {theirs}",
                mine.scheme_name()
            )));
        }
        if key != mine.fingerprint() {
            return Err(ProtocolError::Incompatible(format!(
                "threshold key: the {me} holds key {}, the {them} key {} (give every participant files of one `privset mpsi deal`)",
                short_hex(&mine.fingerprint()),
                short_hex(&key)
            )));
        }
        if usize::from(count) != self.config.names.len() {
            return Err(ProtocolError::Incompatible(format!(
                "participant count: the {me} has {}, the {them} announces {count}",
                self.config.names.len()
            )));
        }
        if size > self.config.max_peer_items {
            return Err(PeerMisbehaved::TooLarge {
                got: size,
                limit: self.config.max_peer_items,
            }
            .into());
        }
        self.sizes[from as usize] = Some(size);
        Ok(())
    }
}

/// The first bytes of a key fingerprint, for messages.
fn short_hex(bytes: &[u8]) -> String {
    bytes.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// One message a party waits for: from whom, of what kind, and its exact length.
#[derive(Clone, Copy, Debug)]
pub(super) struct Expect {
    pub from: PartyId,
    pub kind: u8,
    pub len: usize,
}

/// The messages a party waits for, in order.
#[derive(Default)]
pub(super) struct Expected(VecDeque<Expect>);

impl Expected {
    pub fn push(&mut self, from: PartyId, kind: u8, len: usize) {
        self.0.push_back(Expect { from, kind, len });
    }

    pub fn awaiting(&self) -> Option<PartyId> {
        self.0.front().map(|e| e.from)
    }

    pub fn max_len(&self) -> usize {
        self.0.front().map_or(0, |e| e.len)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes the next expectation, checking the message against it (kind and length).
    pub fn take<'a>(&mut self, message: &Message<'a>) -> Result<(Expect, &'a [u8]), ProtocolError> {
        let e = self.0.pop_front().ok_or(ProtocolError::ApiMisuse(
            "an mpsi message when none is expected",
        ))?;
        let body = message.expect(e.kind)?;
        wire::expect_len(kind_name(e.kind), body, e.len)?;
        Ok((e, body))
    }
}

/// The joint n-out-of-n key of the set holders (participants `1..=holders`, who are
/// key parties `1..=holders`), agreed in one round of proved contributions
/// (`privset_crypto::tahe::elgamal::joint`).
pub(super) struct JointKey {
    holders: u32,
    context: [u8; 32],
    got: Vec<Option<KeyContribution>>,
    secret: Option<ContributionSecret>,
}

impl JointKey {
    pub fn new(holders: u32, ctx: &SessionContext) -> Self {
        Self {
            holders,
            context: ctx.derive_key("mpsi/joint-key"),
            got: vec![None; holders as usize],
            secret: None,
        }
    }

    /// This holder's contribution, encoded (its secret kept).
    pub fn contribute(
        &mut self,
        me: PartyId,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, ProtocolError> {
        let (secret, contribution) = contribute(self.holders, u32::from(me), &self.context, rng)
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        self.secret = Some(secret);
        self.got[me as usize - 1] = Some(contribution.clone());
        Ok(contribution.encode())
    }

    /// Verifies and keeps holder `from`'s contribution.
    pub fn accept(&mut self, from: PartyId, bytes: &[u8], name: &str) -> Result<(), ProtocolError> {
        let c = KeyContribution::decode(bytes, self.holders, u32::from(from), &self.context)
            .map_err(|source| PeerMisbehaved::Threshold {
                party: name.to_string(),
                what: "key contribution",
                source,
            })?;
        self.got[from as usize - 1] = Some(c);
        Ok(())
    }

    /// Every holder's contribution, in order (what the hub of a star relays).
    pub fn encode_all(&self) -> Vec<u8> {
        self.got
            .iter()
            .flat_map(|c| c.as_ref().expect("all contributions received").encode())
            .collect()
    }

    /// Length of [`Self::encode_all`].
    pub fn all_len(holders: u32) -> usize {
        holders as usize * CONTRIBUTION_LEN
    }

    /// Accepts the hub's relay of every contribution (each verified, this party's own
    /// checked to be the one it made).
    pub fn accept_all(
        &mut self,
        bytes: &[u8],
        names: &[String],
        me: PartyId,
    ) -> Result<(), ProtocolError> {
        for (i, chunk) in bytes.chunks_exact(CONTRIBUTION_LEN).enumerate() {
            let p = (i + 1) as PartyId;
            if p == me {
                if self.got[i].as_ref().map(KeyContribution::encode).as_deref() != Some(chunk) {
                    return Err(PeerMisbehaved::Inconsistent(
                        "the hub relayed a key contribution for this party that it did not make"
                            .into(),
                    )
                    .into());
                }
                continue;
            }
            self.accept(p, chunk, &names[p as usize])?;
        }
        Ok(())
    }

    /// The joint public key (every contribution received).
    pub fn public_key(&self) -> Result<PublicKey, ProtocolError> {
        let all: Vec<KeyContribution> = self.got.iter().flatten().cloned().collect();
        joint_public_key(self.holders, &all).map_err(|e| {
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Inconsistent(format!("joint key: {e}")))
        })
    }

    /// This holder's key share (every contribution received).
    pub fn key_share(&mut self) -> Result<KeyShare, ProtocolError> {
        let all: Vec<KeyContribution> = self.got.iter().flatten().cloned().collect();
        let secret = self
            .secret
            .take()
            .ok_or(ProtocolError::ApiMisuse("key_share before contribute"))?;
        joint_key_share(&secret, &all).map_err(|e| {
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Inconsistent(format!("joint key: {e}")))
        })
    }

    pub fn complete(&self) -> bool {
        self.got.iter().all(Option::is_some)
    }
}

/// Maps a threshold-layer error about `party`'s data to a typed error naming it.
pub(super) fn blame(
    name: String,
    what: &'static str,
) -> impl FnOnce(privset_crypto::tahe::TaheError) -> ProtocolError {
    move |source| {
        PeerMisbehaved::Threshold {
            party: name,
            what,
            source,
        }
        .into()
    }
}

/// A Bloom filter's bits from its elements' hash words (`params.k` per element).
pub(super) fn bloom_bits(
    params: &privset_crypto::filter::bloom::BloomParams,
    words: &[u64],
) -> Vec<bool> {
    let mut bits = vec![false; params.bits() as usize];
    for w in words.chunks_exact(params.k.max(1) as usize) {
        for (d, &word) in w.iter().enumerate() {
            bits[params.bit(d as u32, word) as usize] = true;
        }
    }
    bits
}
