//! Authorized PSI and Partial-APSI (seed 002): a judge, a client and a server.
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
mod core;
mod hello;
pub mod intersect;
pub mod signatures;

use std::collections::HashSet;

use privset_crypto::bls::{self, G1Affine, G1Projective};
use rayon::prelude::*;

pub use self::core::{Mode, PartialFraction};

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
pub trait Policy: Send {
    /// `Ok(())` to accept, `Err(reason)` to reject; the reason is sent to the client.
    fn check(&mut self, client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String>;
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
    fn check(&mut self, _client_id: &[u8], items: &[Vec<u8>]) -> Result<(), String> {
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
pub fn validate_client_id(client_id: &[u8]) -> Result<(), crate::error::ProtocolError> {
    if client_id.is_empty() || client_id.len() > MAX_CLIENT_ID_LEN {
        return Err(crate::error::ProtocolError::Config(format!(
            "the client ID must be 1 to {MAX_CLIENT_ID_LEN} bytes (got {})",
            client_id.len()
        )));
    }
    Ok(())
}

/// Checks item lengths before anything is sent.
pub fn validate_items(items: &[Vec<u8>]) -> Result<(), crate::error::ProtocolError> {
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

/// Message kinds of both APSI sub-protocols (docs/wire.md gives the layouts).
pub mod kind {
    pub const HELLO: u8 = 1;
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
            HELLO => "hello",
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
