//! What every two-party protocol does the same way: the hello salts, the session id
//! and domain-separation tags derived from them, and framing with sequence numbers.

use std::collections::VecDeque;

use sha2::{Digest, Sha256};

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{self, Frame, ProtocolId, SESSION_ID_LEN, SessionId};

/// Bytes each party contributes to the per-session salt.
pub const SALT_LEN: usize = 32;

/// The per-session secrets-free context both parties derive once hellos are exchanged.
#[derive(Clone, Debug)]
pub struct SessionContext {
    pub id: SessionId,
    /// SHA-256 over the protocol name and both salts (the party holding the first
    /// role's salt first); every tag and public key of the session derives from it.
    pub transcript: [u8; 32],
}

impl SessionContext {
    /// `salt_first` is the salt of the protocol's first role (P1, sender, ...).
    pub fn new(
        protocol: ProtocolId,
        salt_first: &[u8; SALT_LEN],
        salt_second: &[u8; SALT_LEN],
    ) -> Self {
        let mut h = Sha256::new();
        h.update(b"privset/v1/session/");
        h.update(protocol.name().as_bytes());
        h.update(salt_first);
        h.update(salt_second);
        let transcript: [u8; 32] = h.finalize().into();
        let mut id = [0u8; SESSION_ID_LEN];
        id.copy_from_slice(&transcript[..SESSION_ID_LEN]);
        Self { id, transcript }
    }

    /// RFC 9380 domain-separation tag: protocol, hash-to-curve suite and the session's
    /// random salt, so every execution hashes with a fresh random oracle (seed 000
    /// Sec. 3.2) and no two protocols share one.
    pub fn hash_dst(&self, protocol: ProtocolId, suite: &str) -> Vec<u8> {
        format!(
            "privset-v1-{}-{}-{}",
            protocol.name(),
            suite,
            hex::encode(self.transcript)
        )
        .into_bytes()
    }

    /// A 32-byte public key for a named purpose (e.g. keyed hashing in set filters).
    pub fn derive_key(&self, purpose: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"privset/v1/derive/");
        h.update(purpose.as_bytes());
        h.update(self.transcript);
        h.finalize().into()
    }
}

/// Framing state of one party: outgoing queue with sequence numbers, and the checks on
/// incoming frames (session id, sequence).
pub struct Channel {
    protocol: ProtocolId,
    session: SessionId,
    established: bool,
    next_out: u32,
    next_in: u32,
    outgoing: VecDeque<Vec<u8>>,
}

impl Channel {
    pub fn new(protocol: ProtocolId) -> Self {
        Self {
            protocol,
            session: [0; SESSION_ID_LEN],
            established: false,
            next_out: 0,
            next_in: 0,
            outgoing: VecDeque::new(),
        }
    }

    /// Switches from the all-zero hello session id to the derived one.
    pub fn establish(&mut self, session: SessionId) {
        self.session = session;
        self.established = true;
    }

    pub fn push(&mut self, kind: u8, body: &[u8]) {
        let frame = wire::encode_frame(self.protocol, kind, &self.session, self.next_out, body);
        self.next_out += 1;
        self.outgoing.push_back(frame);
    }

    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.outgoing.pop_front()
    }

    pub fn has_outgoing(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Parses an incoming frame and checks its session id and sequence number.
    pub fn open<'a>(&mut self, bytes: &'a [u8]) -> Result<Frame<'a>, ProtocolError> {
        let frame = wire::decode_frame(self.protocol, bytes)?;
        if frame.session != self.session {
            return Err(PeerMisbehaved::WrongSession.into());
        }
        if frame.seq != self.next_in {
            return Err(PeerMisbehaved::OutOfOrder {
                got: frame.seq,
                expected: self.next_in,
            }
            .into());
        }
        self.next_in += 1;
        Ok(frame)
    }

    pub fn alert(&self, error: &ProtocolError) -> Vec<u8> {
        wire::alert_frame(
            self.protocol,
            &self.session,
            self.next_out,
            &error.to_string(),
        )
    }

    pub fn is_established(&self) -> bool {
        self.established
    }
}

/// Fails with `UnexpectedMessage` unless `frame.kind == expected`.
pub fn expect_kind(
    frame: &Frame<'_>,
    expected: u8,
    names: fn(u8) -> &'static str,
) -> Result<(), ProtocolError> {
    if frame.kind != expected {
        return Err(PeerMisbehaved::UnexpectedMessage {
            got: names(frame.kind).to_string(),
            expected: names(expected).to_string(),
        }
        .into());
    }
    Ok(())
}
