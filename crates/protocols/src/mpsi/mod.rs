//! Multi-party private set intersection: the three protocols of de Jong's thesis ("Java
//! Implementation and Analysis of Multi-party Private Set Intersection Protocols"), on
//! a threshold additive scheme (`privset_crypto::tahe`), each party its own process.
//!
//! Every session has one coordinator, participant 0, and `t ≥ 2` set holders,
//! participants `1..=t`, who jointly hold an n-out-of-n decryption key: with threshold
//! exponential ElGamal (the default) made in one round of proved contributions (no
//! dealer, no private channels: [`setup::JointKey`]); with threshold Paillier dealt
//! before the session by a trusted dealer ([`MpsiKey`], [`scheme`]).
//!
//! * [`MpsiProtocol::Bay`] (de Jong, Ch. 3, after Bay et al.): a star. The coordinator is
//!   the **server**, with a set of its own; the holders are **clients**. Each client sends
//!   its encrypted *inverted* Bloom filter; for every server item the server adds the
//!   entries at the item's positions over all clients, each client multiplies every sum
//!   by a fresh random scalar (the first step of ShDec0), the server adds those up, and
//!   the clients send decryption shares. A sum that decrypts to zero is an item every
//!   client holds. The server learns the intersection.
//! * [`MpsiProtocol::MiyajiNishida`] (Ch. 4): a full mesh. The coordinator is the
//!   **dealer**, with no set; the holders are **parties**. Each party sends the dealer
//!   its encrypted Bloom filter; the dealer returns `r_j (Σ_i BF_i[j] − t)` encrypted,
//!   `r_j` fresh per position; every party sends every other its decryption shares of
//!   every position, and each learns the AND of all filters, against which it tests its
//!   own items. Every party learns the intersection.
//! * [`MpsiProtocol::Hazay`] (Ch. 5, after Hazay and Venkitasubramaniam): a star. The
//!   coordinator is the **server**, with a set; each **client** hashes its items into
//!   bins and sends, per bin, the encrypted coefficients of the polynomial whose roots
//!   are the bin's items (padded to a public degree bound); the server evaluates, for
//!   each of its items, every client's polynomial of the item's bin, adds them,
//!   multiplies by a fresh random scalar and asks the clients for decryption shares. Bins
//!   replace the thesis's one polynomial of degree `|X_i|`, whose evaluation is
//!   quadratic, as the original paper does: the server's work is about linear.
//!
//! Bloom filters are the partitioned filters of `privset_crypto::filter::bloom`, sized
//! for a false-positive probability of at most 2^-40 over the whole run (every item ever
//! tested): one bit per partition, so an item's positions never repeat. Big messages
//! (filters, polynomials, the dealer's answer and the shares of Miyaji-Nishida) move in
//! chunks of [`CHUNK`] ciphertexts, so every party's memory stays bounded by its sets,
//! not by the filters.
//!
//! docs/mpsi.md has each message flow, what each participant learns, and the parameters.

mod bay;
mod bins;
mod decrypt;
mod hazay;
mod miyaji_nishida;
pub mod scheme;
mod setup;

use std::collections::HashSet;

use crate::engine::{Engine, Topology};
use crate::error::ProtocolError;
use crate::party::OutputParty;
use crate::wire::{PartyId, ProtocolId};

pub use bins::BinParams;

/// Code of the threshold scheme in the hello ([`MpsiKey`]'s two kinds).
pub const SCHEME_ELGAMAL: u8 = 1;
pub const SCHEME_PAILLIER: u8 = 2;
pub use scheme::MpsiKey;

use privset_crypto::tahe::elgamal::ThresholdElGamal;
use privset_crypto::tahe::paillier::ThresholdPaillier;

/// The coordinator: the server (Bay et al., Hazay-Venkitasubramaniam) or the dealer
/// (Miyaji-Nishida).
pub const HUB: PartyId = 0;

/// Ciphertexts per chunk of a streamed message (128 KiB of ElGamal ciphertexts).
pub const CHUNK: usize = 2048;

/// Message kinds.
pub const KIND_KEY: u8 = 1;
pub const KIND_KEYS: u8 = 2;
pub const KIND_FILTER: u8 = 3;
pub const KIND_QUERY: u8 = 4;
pub const KIND_RANDOMIZED: u8 = 5;
pub const KIND_COMBINED: u8 = 6;
pub const KIND_SHARES: u8 = 7;
pub const KIND_POLYNOMIALS: u8 = 8;
pub const KIND_MASKED: u8 = 9;
pub const KIND_PROOF: u8 = 10;
pub const KIND_RELAYED: u8 = 11;
pub const KIND_VERDICT: u8 = 12;

pub(crate) fn kind_name(kind: u8) -> &'static str {
    match kind {
        KIND_KEY => "key contribution",
        KIND_KEYS => "key contributions",
        KIND_FILTER => "encrypted Bloom filter chunk",
        KIND_QUERY => "aggregated filter entries",
        KIND_RANDOMIZED => "randomized entries",
        KIND_COMBINED => "combined ciphertexts",
        KIND_SHARES => "decryption shares",
        KIND_POLYNOMIALS => "encrypted polynomial chunk",
        KIND_MASKED => "masked filter chunk",
        KIND_PROOF => "proof of correct decryption",
        KIND_RELAYED => "relayed decryption shares",
        KIND_VERDICT => "relay's verdict",
        _ => "an unknown mpsi message",
    }
}

/// The three protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpsiProtocol {
    Bay,
    MiyajiNishida,
    Hazay,
}

impl MpsiProtocol {
    pub const ALL: [MpsiProtocol; 3] = [Self::Bay, Self::MiyajiNishida, Self::Hazay];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bay => "bay",
            Self::MiyajiNishida => "miyaji-nishida",
            Self::Hazay => "hazay",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Bay => 1,
            Self::MiyajiNishida => 2,
            Self::Hazay => 3,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.code() == code)
    }

    pub fn id(self) -> ProtocolId {
        match self {
            Self::Bay => ProtocolId::MpsiBay,
            Self::MiyajiNishida => ProtocolId::MpsiMiyajiNishida,
            Self::Hazay => ProtocolId::MpsiHazay,
        }
    }

    /// Who talks to whom.
    pub fn topology(self) -> Topology {
        match self {
            Self::Bay | Self::Hazay => Topology::Star { hub: HUB },
            Self::MiyajiNishida => Topology::Mesh,
        }
    }

    /// The role of participant `p`.
    pub fn role_of(self, p: PartyId) -> Role {
        match (self, p) {
            (Self::MiyajiNishida, HUB) => Role::Dealer,
            (Self::MiyajiNishida, _) => Role::Party,
            (_, HUB) => Role::Server,
            _ => Role::Client,
        }
    }

    /// Whether the coordinator holds a set (the server does, the dealer does not).
    pub fn hub_has_set(self) -> bool {
        self != Self::MiyajiNishida
    }
}

/// A participant's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Server,
    Client,
    Dealer,
    Party,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
            Role::Dealer => "dealer",
            Role::Party => "party",
        }
    }
}

/// One participant's settings and input.
#[derive(Clone, Debug)]
pub struct MpsiConfig {
    pub protocol: MpsiProtocol,
    /// Every participant's name, by index (index 0: the server or the dealer); 3 to 255
    /// participants.
    pub names: Vec<String>,
    /// This participant's index.
    pub me: PartyId,
    /// This participant's items (duplicates are dropped; the dealer's must be empty).
    pub items: Vec<Vec<u8>>,
    /// Miyaji-Nishida: this party's bound on every party's set size, announced to all;
    /// the session uses the largest announced. 0: this party's own size rounded up to a
    /// power of two (which the others then learn, roughly). Ignored by the other
    /// protocols, where set sizes are public.
    pub max_items: u64,
    /// Largest set size (or bound) a peer may announce (bounds memory).
    pub max_peer_items: u64,
    /// The threshold scheme and its key (default: ElGamal, agreed in the session).
    pub key: MpsiKey,
}

impl MpsiConfig {
    pub fn role(&self) -> Role {
        self.protocol.role_of(self.me)
    }

    /// What this participant announces in its hello.
    fn announced_size(&self) -> u64 {
        match self.role() {
            Role::Dealer => 0,
            Role::Party if self.max_items > 0 => self.max_items,
            Role::Party => (self.items.len() as u64).max(1).next_power_of_two(),
            _ => self.items.len() as u64,
        }
    }

    fn check(&mut self) -> Result<(), ProtocolError> {
        let n = self.names.len();
        if !(3..=255).contains(&n) {
            return Err(ProtocolError::Config(format!(
                "multi-party PSI takes 3 to 255 participants (one {} and at least two {}s), got {n}",
                self.protocol.role_of(HUB).name(),
                self.protocol.role_of(1).name()
            )));
        }
        if self.role() == Role::Dealer && !self.items.is_empty() {
            return Err(ProtocolError::Config("the dealer holds no set".into()));
        }
        if self.role() == Role::Party
            && self.max_items > 0
            && (self.items.len() as u64) > self.max_items
        {
            return Err(ProtocolError::Config(format!(
                "{} items, above the announced bound --max-items {}",
                self.items.len(),
                self.max_items
            )));
        }
        self.key
            .check(n as u32 - 1, u32::from(self.me), self.me == HUB)?;
        let mut seen = HashSet::with_capacity(self.items.len());
        self.items.retain(|x| seen.insert(x.clone()));
        Ok(())
    }
}

/// The participants' default names: "server", "client 1", … (Bay et al.,
/// Hazay-Venkitasubramaniam) or "dealer", "party 1", … (Miyaji-Nishida).
pub fn default_names(protocol: MpsiProtocol, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| match protocol.role_of(i as PartyId) {
            r @ (Role::Server | Role::Dealer) => r.name().to_string(),
            r => format!("{} {i}", r.name()),
        })
        .collect()
}

/// What a participant learns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpsiOutput {
    pub role: Role,
    /// The server's (Bay et al., Hazay-Venkitasubramaniam) or each party's
    /// (Miyaji-Nishida) items that every set holder holds, in input order; `None` for
    /// the participants that learn nothing (clients, the dealer).
    pub intersection: Option<Vec<Vec<u8>>>,
}

/// A participant ready to run: hellos queued, all randomness from `seed`.
pub fn new_party(
    mut config: MpsiConfig,
    seed: [u8; 32],
) -> Result<Box<dyn OutputParty<MpsiOutput>>, ProtocolError> {
    config.check()?;
    match config.key {
        MpsiKey::Joint => party_on::<ThresholdElGamal>(config, seed),
        MpsiKey::Dealt { .. } => party_on::<ThresholdPaillier>(config, seed),
    }
}

/// The participant of `config`'s protocol and role on the scheme `S`.
fn party_on<S: scheme::Scheme>(
    config: MpsiConfig,
    seed: [u8; 32],
) -> Result<Box<dyn OutputParty<MpsiOutput>>, ProtocolError> {
    Ok(match (config.protocol, config.role()) {
        (MpsiProtocol::Bay, Role::Server) => {
            Box::new(Engine::new(bay::Server::<S>::new(config), seed)?)
        }
        (MpsiProtocol::Bay, _) => Box::new(Engine::new(bay::Client::<S>::new(config), seed)?),
        (MpsiProtocol::Hazay, Role::Server) => {
            Box::new(Engine::new(hazay::Server::<S>::new(config), seed)?)
        }
        (MpsiProtocol::Hazay, _) => Box::new(Engine::new(hazay::Client::<S>::new(config), seed)?),
        (MpsiProtocol::MiyajiNishida, Role::Dealer) => {
            Box::new(Engine::new(miyaji_nishida::Dealer::<S>::new(config), seed)?)
        }
        (MpsiProtocol::MiyajiNishida, _) => {
            Box::new(Engine::new(miyaji_nishida::Party::<S>::new(config), seed)?)
        }
    })
}

/// Hits (`Scheme::sums_add`) that add the `j`-th ciphertext of a message to sum `j`,
/// for every `j < n`: one message summed position by position.
pub(crate) fn diagonal(n: usize) -> Vec<(u32, u32)> {
    (0..n as u32).map(|j| (j, j)).collect()
}

/// The chunks of a stream of `total` ciphertexts: `(start, len)` of chunk `c`.
pub(crate) fn chunk(total: usize, c: usize) -> (usize, usize) {
    let start = c * CHUNK;
    (start, CHUNK.min(total.saturating_sub(start)))
}

/// Number of chunks of a stream of `total` ciphertexts.
pub(crate) fn chunks(total: usize) -> usize {
    total.div_ceil(CHUNK)
}
