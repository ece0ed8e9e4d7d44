//! Authorized PSI and Partial-APSI, after Falzon and Markatou, "Re-visiting Authorized
//! Private Set Intersection" (the APSI paper below): a judge, a client and a server.
//!
//! Every party is a [`Protocol`](crate::Protocol) run inside the
//! [`Engine`](crate::Engine), which carries the salts, hellos, session transcript,
//! framing, failure and deferred work; participant 0 is the client, participant 1 the
//! judge (Authorize) or the server (Intersect). The constructors return the engine-wrapped
//! party; its output comes out by `into_output()`.
//!
//! * **Authorize** ([`authorize`], judge and client): the judge signs the client's
//!   items with BLS. APSI (Fig. 2): the client shows its whole set, the judge applies
//!   its [`Policy`] and returns `sigma_i = H1(x_i || ID_C)^sk`. Partial-APSI (Fig. 3):
//!   the client commits `X_i = H1(x_i || ID_C)^r`, the judge opens a random
//!   `ceil(p n)` of them, checks the exponent-equality argument (App. A.1) and its
//!   policy on the opened items, and returns `sigma_i = H2(X_i)^sk` for all of them.
//! * **Intersect** ([`intersect`], client and server), any number of times on any
//!   subset of the authorized items: the server picks a fresh `s`, sends `S = g2^s` and
//!   its items encoded as `e(H1(y || ID_C), pk^s)` (APSI) or, after the DH OPRF of
//!   App. A.2 under the client's `r`, `e(H2(H1(y || ID_C)^r), pk^s)` (Partial-APSI).
//!   The client compares them with `e(sigma_i, S)` and learns the authorized items it
//!   used that the server holds, and `|Y|`. The server learns `ID_C` and nothing else.
//!
//! **Key consistency** (the extension the paper names at the end of Sec. 5.2, on by
//! default): during Authorize the client also commits `h_d = D^r` for a base `D`
//! derived from the session, inside the same exponent-equality proof, and the judge
//! signs `(ID_C, D, h_d)`. In Intersect the client shows that token and proves that
//! every OPRF answer used the same `r` as `h_d` (one folded exponent-equality proof),
//! so a client cannot evaluate the server's items under a key other than the one the
//! judge checked.
//!
//! Hashes: `H1(x || ID_C)` is RFC 9380 hash-to-G1 of `len(ID_C) || ID_C || x` under a
//! fixed tag (signatures outlive sessions, so it cannot be salted per run); `H2` hashes
//! a compressed G1 point under another tag.

pub mod authorize;
mod hello;
pub mod intersect;
mod settings;
pub mod signatures;

use std::collections::HashSet;

use privset_crypto::bls::{self, G1Affine, G1Projective};
use rayon::prelude::*;

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::PartyId;

pub use self::settings::{Mode, PartialFraction};

/// The client's participant index in both sub-protocols.
pub const CLIENT: PartyId = 0;
/// The judge's (Authorize) or the server's (Intersect) participant index.
pub const PROVIDER: PartyId = 1;

/// Longest item, in bytes.
pub const MAX_ITEM_LEN: usize = 1024;
/// Longest client ID, in bytes.
pub const MAX_CLIENT_ID_LEN: usize = 256;
/// Largest set either side accepts from its peer unless configured otherwise.
pub const DEFAULT_MAX_PEER_ITEMS: u64 = 1 << 24;

const SUITE: &str = "BLS12381G1_XMD:SHA-256_SSWU_RO_";

fn dst(purpose: &str) -> Vec<u8> {
    format!("privset-v1-apsi-{purpose}-{SUITE}").into_bytes()
}

/// `H1(x || ID_C)`: the point the judge signs (APSI) or the client commits to.
pub fn h1(client_id: &[u8], item: &[u8]) -> G1Projective {
    let mut msg = Vec::with_capacity(4 + client_id.len() + item.len());
    msg.extend_from_slice(&(client_id.len() as u32).to_be_bytes());
    msg.extend_from_slice(client_id);
    msg.extend_from_slice(item);
    bls::hash_to_g1(&msg, &dst("H1"))
}

/// [`h1`] of many items, in parallel, as affine points.
pub fn h1_batch(client_id: &[u8], items: &[Vec<u8>]) -> Vec<G1Affine> {
    let points: Vec<G1Projective> = items.par_iter().map(|x| h1(client_id, x)).collect();
    bls::to_affine_batch(&points)
}

/// `H2(X)`: Partial-APSI's hash of a committed (or OPRF-evaluated) point.
pub fn h2(point: &G1Affine) -> G1Projective {
    bls::hash_to_g1(&bls::encode_g1(point), &dst("H2"))
}

/// [`h2`] of many points, in parallel, as affine points.
pub fn h2_batch(points: &[G1Affine]) -> Vec<G1Affine> {
    let hashed: Vec<G1Projective> = points.par_iter().map(h2).collect();
    bls::to_affine_batch(&hashed)
}

/// The key-consistency base `D` of one authorization, from its session transcript.
pub fn kc_base(transcript: &[u8; 32]) -> G1Affine {
    use group::Curve;
    bls::hash_to_g1(transcript, &dst("KC-base")).to_affine()
}

/// The point the judge signs to certify a key-consistency token `(ID_C, D, h_d)`.
pub fn kc_message(client_id: &[u8], base: &G1Affine, value: &G1Affine) -> G1Affine {
    use group::Curve;
    let mut msg = Vec::with_capacity(4 + client_id.len() + 2 * bls::G1_LEN);
    msg.extend_from_slice(&(client_id.len() as u32).to_be_bytes());
    msg.extend_from_slice(client_id);
    msg.extend_from_slice(&bls::encode_g1(base));
    msg.extend_from_slice(&bls::encode_g1(value));
    bls::hash_to_g1(&msg, &dst("KC-token")).to_affine()
}

/// The key-consistency token of a Partial-APSI authorization: `D`, `h_d = D^r` and the
/// judge's signature on both (with the client ID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KcToken {
    pub base: G1Affine,
    pub value: G1Affine,
    pub signature: G1Affine,
}

impl KcToken {
    pub const LEN: usize = 3 * bls::G1_LEN;

    pub fn encode(&self) -> Vec<u8> {
        bls::encode_g1_batch(&[self.base, self.value, self.signature])
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bls::BlsError> {
        if bytes.len() != Self::LEN {
            return Err(bls::BlsError::Length {
                got: bytes.len(),
                expected: Self::LEN,
            });
        }
        let p = bls::decode_g1_batch(bytes).map_err(|(_, e)| e)?;
        Ok(Self {
            base: p[0],
            value: p[1],
            signature: p[2],
        })
    }
}

/// The judge's decision on items it sees in the clear: the whole set (APSI) or the
/// opened ones (Partial-APSI). The operator configures it (`privset judge serve
/// --policy allow:FILE|exec:COMMAND`); it is the judge's only input besides its key.
/// One policy serves every session of a judge, concurrently: it is shared (`Sync`)
/// and checks through `&self`.
pub trait Policy: Send + Sync {
    /// `Ok(())` to accept, `Err(reason)` to reject; the reason is sent to the client.
    fn check(&self, client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String>;
}

/// Accepts a set when every item is on an allowlist.
pub struct AllowList {
    allowed: HashSet<Vec<u8>>,
}

impl AllowList {
    pub fn new(allowed: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Self {
            allowed: allowed.into_iter().collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.allowed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.allowed.is_empty()
    }
}

impl Policy for AllowList {
    fn check(&self, _client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String> {
        let bad = items.iter().filter(|x| !self.allowed.contains(*x)).count();
        if bad == 0 {
            Ok(())
        } else {
            Err(format!(
                "{bad} of the {} items shown are not on the judge's allowlist",
                items.len()
            ))
        }
    }
}

/// Checks a client ID before anything is sent.
pub fn validate_client_id(client_id: &[u8]) -> Result<(), ProtocolError> {
    if client_id.is_empty() || client_id.len() > MAX_CLIENT_ID_LEN {
        return Err(ProtocolError::Config(format!(
            "the client ID must be 1 to {MAX_CLIENT_ID_LEN} bytes (got {})",
            client_id.len()
        )));
    }
    Ok(())
}

/// Checks item lengths before anything is sent.
pub fn validate_items(items: &[Vec<u8>]) -> Result<(), ProtocolError> {
    if let Some(long) = items.iter().position(|x| x.len() > MAX_ITEM_LEN) {
        return Err(crate::error::InputError::Other(format!(
            "item {} is {} bytes long, above the {MAX_ITEM_LEN} bytes allowed",
            long + 1,
            items[long].len()
        ))
        .into());
    }
    Ok(())
}

/// Maps a BLS decoding or verification error on peer data to a typed protocol error.
fn invalid(what: &'static str) -> impl Fn(bls::BlsError) -> ProtocolError {
    move |source| PeerMisbehaved::InvalidBls { what, source }.into()
}

/// [`invalid`] for a batch decode that also names the failing index.
fn invalid_at(what: &'static str) -> impl Fn((usize, bls::BlsError)) -> ProtocolError {
    move |(_, source)| PeerMisbehaved::InvalidBls { what, source }.into()
}

/// "on" / "off", for messages about a setting.
fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// A protocol step the engine should never reach in this state (a bug, not the peer's
/// doing: the engine only delivers what `awaiting` asked for).
fn not_now(what: &'static str) -> ProtocolError {
    ProtocolError::ApiMisuse(what)
}

/// Message kinds of both APSI sub-protocols (docs/wire.md gives the layouts). Kinds 0
/// (hello), 0xFE (roster) and 0xFF (alert) are the engine's; APSI's settings travel in
/// the engine's hello.
pub mod kind {
    /// Client to judge, APSI: the items in the clear.
    pub const ITEMS: u8 = 2;
    /// Client to judge, Partial-APSI: the commitments and `h_d`.
    pub const COMMIT: u8 = 3;
    /// Judge to client, Partial-APSI: the indices to open.
    pub const CHALLENGE: u8 = 4;
    /// Client to judge, Partial-APSI: the opened items and the proof.
    pub const OPEN: u8 = 5;
    /// Judge to client: the signatures.
    pub const SIGNATURES: u8 = 6;
    /// Judge to client: the policy's refusal.
    pub const REJECT: u8 = 7;
    /// Server to client, Partial-APSI: the blinded OPRF request.
    pub const REQUEST: u8 = 8;
    /// Client to server, Partial-APSI: the OPRF evaluation (and proof).
    pub const EVAL: u8 = 9;
    /// Server to client: the encoded items (tags).
    pub const RESULT: u8 = 10;
    /// Server to client: `S = g2^s`, sent before the tags so the client pairs meanwhile.
    pub const KEY: u8 = 11;

    pub fn name(kind: u8) -> &'static str {
        match kind {
            ITEMS => "items",
            COMMIT => "commit",
            CHALLENGE => "challenge",
            OPEN => "open",
            SIGNATURES => "signatures",
            REJECT => "reject",
            REQUEST => "request",
            EVAL => "eval",
            RESULT => "result",
            KEY => "key",
            _ => "unknown",
        }
    }
}
