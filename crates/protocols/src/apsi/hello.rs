//! The settings both APSI sub-protocols announce in the engine's hello (after the
//! engine's salt); fields a role does not use are empty. Mismatched settings end the
//! run with `ProtocolError::Incompatible` before any item or element is sent.

use super::{KcToken, MAX_CLIENT_ID_LEN, Mode};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::Reader;
use privset_crypto::bls;

/// Longest encoded settings: role, mode, flag, fraction, count, and the four
/// length-prefixed fields at their largest.
pub const MAX_LEN: usize =
    1 + 1 + 1 + 4 + 8 + 4 * 4 + MAX_CLIENT_ID_LEN + bls::G2_LEN + 32 + KcToken::LEN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Judge,
    Server,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Client => 1,
            Role::Judge => 2,
            Role::Server => 3,
        }
    }
    fn from_code(code: u8) -> Option<Self> {
        [Role::Client, Role::Judge, Role::Server]
            .into_iter()
            .find(|r| r.code() == code)
    }
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Judge => "judge",
            Role::Server => "server",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub role: Role,
    pub mode: Mode,
    pub key_consistency: bool,
    /// Authorize: the client's largest acceptable / the judge's fraction (ppm).
    pub fraction_ppm: u32,
    /// Client (authorize): `n`; server: `m`.
    pub items: u64,
    /// Client: its ID.
    pub client_id: Vec<u8>,
    /// Judge: its public key.
    pub public_key: Option<[u8; bls::G2_LEN]>,
    /// Client (intersect): the fingerprint of the judge key it holds signatures of.
    pub judge_fingerprint: Option<[u8; 32]>,
    /// Client (intersect, Partial-APSI with key consistency): its token.
    pub kc_token: Option<Vec<u8>>,
}

impl Hello {
    pub fn new(role: Role, mode: Mode, key_consistency: bool) -> Self {
        Self {
            role,
            mode,
            key_consistency,
            fraction_ppm: 0,
            items: 0,
            client_id: Vec::new(),
            public_key: None,
            judge_fingerprint: None,
            kc_token: None,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(128 + self.client_id.len());
        b.push(self.role.code());
        b.push(self.mode.code());
        b.push(self.key_consistency as u8);
        b.extend_from_slice(&self.fraction_ppm.to_be_bytes());
        b.extend_from_slice(&self.items.to_be_bytes());
        let mut field = |bytes: &[u8]| {
            b.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            b.extend_from_slice(bytes);
        };
        field(&self.client_id);
        field(self.public_key.as_ref().map_or(&[][..], |k| &k[..]));
        field(self.judge_fingerprint.as_ref().map_or(&[][..], |k| &k[..]));
        field(self.kc_token.as_deref().unwrap_or(&[]));
        b
    }

    pub fn decode(body: &[u8]) -> Result<Self, ProtocolError> {
        let bad = |what: String| -> ProtocolError { PeerMisbehaved::Malformed(what).into() };
        let mut r = Reader::new(body, "hello");
        let code = r.u8()?;
        let role = Role::from_code(code).ok_or_else(|| bad(format!("hello names role {code}")))?;
        let code = r.u8()?;
        let mode = Mode::from_code(code).ok_or_else(|| bad(format!("hello names mode {code}")))?;
        let key_consistency = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(bad(format!("hello has key-consistency flag {other}"))),
        };
        let fraction_ppm = r.u32()?;
        let items = r.u64()?;
        let client_id = r.bytes(MAX_CLIENT_ID_LEN)?.to_vec();
        let public_key = match r.bytes(bls::G2_LEN)? {
            [] => None,
            k => Some(
                k.try_into()
                    .map_err(|_| bad("hello public key is not 96 bytes".into()))?,
            ),
        };
        let judge_fingerprint = match r.bytes(32)? {
            [] => None,
            f => Some(
                f.try_into()
                    .map_err(|_| bad("hello judge fingerprint is not 32 bytes".into()))?,
            ),
        };
        let kc_token = match r.bytes(KcToken::LEN)? {
            [] => None,
            t => Some(t.to_vec()),
        };
        r.finish()?;
        Ok(Self {
            role,
            mode,
            key_consistency,
            fraction_ppm,
            items,
            client_id,
            public_key,
            judge_fingerprint,
            kc_token,
        })
    }

    /// Checks that `peer` plays `expected` in the same mode, with at most `limit` items.
    pub fn check_peer(
        &self,
        peer: &Hello,
        expected: Role,
        limit: u64,
    ) -> Result<(), ProtocolError> {
        if peer.role != expected {
            return Err(ProtocolError::Incompatible(format!(
                "this {} expected to talk to a {}, the peer is a {}",
                self.role.name(),
                expected.name(),
                peer.role.name()
            )));
        }
        if peer.mode != self.mode {
            return Err(ProtocolError::Incompatible(format!(
                "this {} runs {}, the {} runs {} (--partial on one side only?)",
                self.role.name(),
                self.mode.name(),
                peer.role.name(),
                peer.mode.name()
            )));
        }
        if peer.items > limit {
            return Err(PeerMisbehaved::TooLarge {
                got: peer.items,
                limit,
            }
            .into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let mut h = Hello::new(Role::Client, Mode::Partial, true);
        h.client_id = b"acme".to_vec();
        h.items = 77;
        h.fraction_ppm = 100_000;
        h.judge_fingerprint = Some([3; 32]);
        h.kc_token = Some(vec![1; KcToken::LEN]);
        h.public_key = Some([5; 96]);
        h.client_id = vec![b'a'; MAX_CLIENT_ID_LEN];
        let enc = h.encode();
        assert_eq!(enc.len(), MAX_LEN);
        assert_eq!(Hello::decode(&enc).unwrap(), h);
        assert!(Hello::decode(&enc[..enc.len() - 1]).is_err());
        let mut bad = enc.clone();
        bad[0] = 9;
        assert!(Hello::decode(&bad).is_err());
        let mut j = Hello::new(Role::Judge, Mode::Full, false);
        j.public_key = Some([5; 96]);
        assert_eq!(Hello::decode(&j.encode()).unwrap(), j);
        assert!(matches!(
            h.check_peer(&j, Role::Judge, 10),
            Err(ProtocolError::Incompatible(_))
        ));
    }
}
