//! What every session has, whatever its protocol: the participants' hello salts, the
//! session id and domain-separation tags derived from them, and framing with sequence
//! numbers, one [`Channel`] per pair of participants that talk.

use sha2::{Digest, Sha256};

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{self, Frame, Header, PartyId, ProtocolId, SESSION_ID_LEN, SessionId};

/// Bytes each party contributes to the per-session salt.
pub const SALT_LEN: usize = 32;

/// The per-session secrets-free context both parties derive once hellos are exchanged.
#[derive(Clone, Debug)]
pub struct SessionContext {
    pub id: SessionId,
    /// SHA-256 over the protocol name, the number of participants and every
    /// participant's salt in participant order; every tag and public key of the session
    /// derives from it.
    pub transcript: [u8; 32],
}

impl SessionContext {
    /// `salts[i]` is participant `i`'s salt (participant 0 plays the protocol's first
    /// role: P1, the receiver, the client).
    pub fn new(protocol: ProtocolId, salts: &[[u8; SALT_LEN]]) -> Self {
        let mut h = Sha256::new();
        h.update(b"privset/v1/session/");
        h.update(protocol.name().as_bytes());
        h.update((salts.len() as u32).to_be_bytes());
        for salt in salts {
            h.update(salt);
        }
        let transcript: [u8; 32] = h.finalize().into();
        let mut id = [0u8; SESSION_ID_LEN];
        id.copy_from_slice(&transcript[..SESSION_ID_LEN]);
        Self { id, transcript }
    }

    /// RFC 9380 domain-separation tag: protocol, hash-to-curve suite and the session's
    /// random salt, so every execution hashes with a fresh random oracle (Ion et al. 2020
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

/// Framing state between this party and one peer: the sequence numbers each way, and
/// the checks on incoming frames (session id, sender, recipient, sequence).
pub struct Channel {
    protocol: ProtocolId,
    me: PartyId,
    peer: PartyId,
    session: SessionId,
    next_out: u32,
    next_in: u32,
}

impl Channel {
    pub fn new(protocol: ProtocolId, me: PartyId, peer: PartyId) -> Self {
        Self {
            protocol,
            me,
            peer,
            session: [0; SESSION_ID_LEN],
            next_out: 0,
            next_in: 0,
        }
    }

    /// The participant at the other end.
    pub fn peer(&self) -> PartyId {
        self.peer
    }

    fn header(&self, kind: u8) -> Header<'_> {
        Header {
            protocol: self.protocol,
            kind,
            sender: self.me,
            recipient: self.peer,
            session: &self.session,
            seq: self.next_out,
        }
    }

    /// Switches from the all-zero hello session id to the derived one.
    pub fn establish(&mut self, session: SessionId) {
        self.session = session;
    }

    /// The frame of the next message to the peer (its sequence number taken).
    pub fn frame(&mut self, kind: u8, body: &[u8]) -> Vec<u8> {
        let frame = wire::encode_frame(self.header(kind), body);
        self.next_out += 1;
        frame
    }

    /// [`Self::frame`] built in `body`'s own allocation ([`wire::encode_frame_in_place`]).
    pub fn frame_in_place(&mut self, kind: u8, body: Vec<u8>) -> Vec<u8> {
        let frame = wire::encode_frame_in_place(self.header(kind), body);
        self.next_out += 1;
        frame
    }

    /// Parses an incoming frame and checks its sender, recipient, session id and
    /// sequence number.
    pub fn open<'a>(&mut self, bytes: &'a [u8]) -> Result<Frame<'a>, ProtocolError> {
        let frame = wire::decode_frame(self.protocol, bytes)?;
        if frame.sender != self.peer || frame.recipient != self.me {
            return Err(PeerMisbehaved::Misrouted {
                sender: frame.sender,
                recipient: frame.recipient,
                expected_sender: self.peer,
                expected_recipient: self.me,
            }
            .into());
        }
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
        wire::alert_frame(self.header(wire::KIND_ALERT), &error.to_string())
    }
}
