//! The frame every privset message travels in (documented in docs/wire.md).
//!
//! ```text
//! offset size field
//!      0    4 magic "PSET"
//!      4    1 wire version (5)
//!      5    1 protocol id (see ProtocolId)
//!      6    1 message kind (0 = hello, 0xFE = roster, 0xFF = alert, others per protocol)
//!      7    1 sender: the participant index of the party that wrote the frame
//!      8    1 recipient: the participant index it is for
//!      9   16 session id (all zero in hello and roster messages)
//!     25    4 sequence number of this sender's message to this recipient, from 0, big-endian
//!     29    4 body length, big-endian
//!     33    n body
//! ```
//!
//! The session id is derived from every participant's hello salt, so a frame from
//! another run is rejected; the sequence number (one counter per direction of each pair
//! of participants) rejects replayed, dropped or reordered frames; sender and recipient
//! reject a frame delivered to the wrong participant.
//! Bodies are concatenations of fixed-width fields and packed vectors; their layout is
//! given per message in docs/wire.md.

use crate::error::{PeerMisbehaved, ProtocolError};

pub const MAGIC: [u8; 4] = *b"PSET";
pub const WIRE_VERSION: u8 = 5;
pub const HEADER_LEN: usize = 33;
pub const SESSION_ID_LEN: usize = 16;
/// Message kind of a hello (the engine's: salt, then the protocol's settings).
pub const KIND_HELLO: u8 = 0;
/// Message kind of a roster: a star's hub gives every spoke all participants' salts.
pub const KIND_ROSTER: u8 = 0xFE;
/// Message kind of an alert frame: the body is a UTF-8 reason.
pub const KIND_ALERT: u8 = 0xFF;

/// A participant's index in a session (0 = the protocol's first role). At most 255
/// participants take part in one session.
pub type PartyId = u8;
/// Longest alert reason accepted.
pub const MAX_ALERT_LEN: usize = 4096;

pub type SessionId = [u8; SESSION_ID_LEN];

/// Protocol identifiers on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolId {
    PiSum,
    Psi,
    PsiCard,
    PsiCardSum,
    Psu,
    PsiShare,
    PrivateId,
    ApsiAuthorize,
    ApsiIntersect,
    /// The toy sum of [`crate::toy`]: the harness test for n-party transports.
    Toy,
    /// Multi-party PSI, Bay et al. (de Jong, Ch. 3).
    MpsiBay,
    /// Multi-party PSI, Miyaji-Nishida (de Jong, Ch. 4).
    MpsiMiyajiNishida,
    /// Multi-party PSI, Hazay-Venkitasubramaniam (de Jong, Ch. 5).
    MpsiHazay,
    /// Unbalanced labeled PSI (Cong et al. 2021).
    Upsi,
    /// The plan of a bucketed job ([`crate::bucket_plan`]).
    BucketPlan,
    /// One unit of a value-partitioned job ([`crate::partition_unit`]).
    PartitionUnit,
}

impl ProtocolId {
    pub const ALL: [ProtocolId; 16] = [
        ProtocolId::PiSum,
        ProtocolId::Psi,
        ProtocolId::PsiCard,
        ProtocolId::PsiCardSum,
        ProtocolId::Psu,
        ProtocolId::PsiShare,
        ProtocolId::PrivateId,
        ProtocolId::ApsiAuthorize,
        ProtocolId::ApsiIntersect,
        ProtocolId::Toy,
        ProtocolId::MpsiBay,
        ProtocolId::MpsiMiyajiNishida,
        ProtocolId::MpsiHazay,
        ProtocolId::Upsi,
        ProtocolId::BucketPlan,
        ProtocolId::PartitionUnit,
    ];
    pub fn code(self) -> u8 {
        match self {
            ProtocolId::PiSum => 1,
            ProtocolId::Psi => 2,
            ProtocolId::PsiCard => 3,
            ProtocolId::PsiCardSum => 4,
            ProtocolId::Psu => 5,
            ProtocolId::PsiShare => 6,
            ProtocolId::PrivateId => 7,
            ProtocolId::ApsiAuthorize => 8,
            ProtocolId::ApsiIntersect => 9,
            ProtocolId::Toy => 10,
            ProtocolId::MpsiBay => 11,
            ProtocolId::MpsiMiyajiNishida => 12,
            ProtocolId::MpsiHazay => 13,
            ProtocolId::Upsi => 14,
            ProtocolId::BucketPlan => 15,
            ProtocolId::PartitionUnit => 16,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ProtocolId::PiSum => "pi-sum",
            ProtocolId::Psi => "psi",
            ProtocolId::PsiCard => "psi-card",
            ProtocolId::PsiCardSum => "psi-card-sum",
            ProtocolId::Psu => "psu",
            ProtocolId::PsiShare => "psi-share",
            ProtocolId::PrivateId => "private-id",
            ProtocolId::ApsiAuthorize => "apsi-authorize",
            ProtocolId::ApsiIntersect => "apsi-intersect",
            ProtocolId::Toy => "toy-sum",
            ProtocolId::MpsiBay => "mpsi-bay",
            ProtocolId::MpsiMiyajiNishida => "mpsi-miyaji-nishida",
            ProtocolId::MpsiHazay => "mpsi-hazay",
            ProtocolId::Upsi => "upsi",
            ProtocolId::BucketPlan => "bucket-plan",
            ProtocolId::PartitionUnit => "partition-unit",
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.code() == code)
    }
}

/// A parsed frame, borrowing its body from the received bytes.
#[derive(Debug)]
pub struct Frame<'a> {
    pub kind: u8,
    pub sender: PartyId,
    pub recipient: PartyId,
    pub session: SessionId,
    pub seq: u32,
    pub body: &'a [u8],
}

/// Where a frame goes: protocol, kind, sender, recipient, session and sequence number.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    pub protocol: ProtocolId,
    pub kind: u8,
    pub sender: PartyId,
    pub recipient: PartyId,
    pub session: &'a SessionId,
    pub seq: u32,
}

/// Builds a frame.
pub fn encode_frame(header: Header<'_>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    push_header(&mut out, header, body.len());
    out.extend_from_slice(body);
    out
}

/// Builds a frame around `body` in its own allocation: the body moves up by the
/// header's length instead of being copied, so a message of hundreds of MB is not held
/// twice.
pub fn encode_frame_in_place(header: Header<'_>, mut body: Vec<u8>) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEADER_LEN);
    push_header(&mut head, header, body.len());
    body.splice(0..0, head);
    body
}

/// Appends the header of a frame whose body is `body_len` bytes.
fn push_header(out: &mut Vec<u8>, header: Header<'_>, body_len: usize) {
    out.extend_from_slice(&MAGIC);
    out.push(WIRE_VERSION);
    out.push(header.protocol.code());
    out.push(header.kind);
    out.push(header.sender);
    out.push(header.recipient);
    out.extend_from_slice(header.session);
    let seq = header.seq;
    out.extend_from_slice(&seq.to_be_bytes());
    let len = u32::try_from(body_len).expect("message body larger than 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
}

/// An alert frame carrying `reason` (truncated to [`MAX_ALERT_LEN`] bytes); `header`'s
/// kind is replaced by [`KIND_ALERT`].
pub fn alert_frame(header: Header<'_>, reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_ALERT_LEN);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let header = Header {
        kind: KIND_ALERT,
        ..header
    };
    encode_frame(header, &reason.as_bytes()[..end])
}

/// Parses and checks a frame header: magic, version, protocol, declared length.
/// An alert frame becomes [`ProtocolError::PeerAborted`].
pub fn decode_frame(protocol: ProtocolId, bytes: &[u8]) -> Result<Frame<'_>, ProtocolError> {
    if bytes.len() < HEADER_LEN {
        return Err(PeerMisbehaved::Malformed(format!(
            "frame of {} bytes is shorter than the {HEADER_LEN}-byte header",
            bytes.len()
        ))
        .into());
    }
    if bytes[0..4] != MAGIC {
        return Err(PeerMisbehaved::BadMagic.into());
    }
    if bytes[4] != WIRE_VERSION {
        return Err(PeerMisbehaved::Version {
            got: bytes[4],
            expected: WIRE_VERSION,
        }
        .into());
    }
    if bytes[5] != protocol.code() {
        let got = ProtocolId::from_code(bytes[5])
            .map(|p| p.name().to_string())
            .unwrap_or_else(|| format!("unknown protocol {}", bytes[5]));
        return Err(PeerMisbehaved::WrongProtocol {
            got,
            expected: protocol.name().into(),
        }
        .into());
    }
    let kind = bytes[6];
    let (sender, recipient) = (bytes[7], bytes[8]);
    let mut session = [0u8; SESSION_ID_LEN];
    session.copy_from_slice(&bytes[9..25]);
    let seq = u32::from_be_bytes(bytes[25..29].try_into().unwrap());
    let len = u32::from_be_bytes(bytes[29..33].try_into().unwrap()) as usize;
    let body = &bytes[HEADER_LEN..];
    if body.len() != len {
        return Err(PeerMisbehaved::WrongLength {
            what: "frame body",
            got: body.len(),
            expected: len,
        }
        .into());
    }
    if kind == KIND_ALERT {
        let reason = crate::peer_text::sanitize(&body[..body.len().min(MAX_ALERT_LEN)]);
        return Err(ProtocolError::PeerAborted(reason));
    }
    Ok(Frame {
        kind,
        sender,
        recipient,
        session,
        seq,
        body,
    })
}

/// `a * b` for sizes derived from peer announcements, failing instead of overflowing.
pub fn checked_len(a: usize, b: usize, what: &'static str) -> Result<usize, ProtocolError> {
    a.checked_mul(b).ok_or_else(|| {
        PeerMisbehaved::Malformed(format!("{what}: announced sizes overflow")).into()
    })
}

/// Fails with `WrongLength` unless `body` is exactly `expected` bytes.
pub fn expect_len(what: &'static str, body: &[u8], expected: usize) -> Result<(), ProtocolError> {
    if body.len() != expected {
        return Err(PeerMisbehaved::WrongLength {
            what,
            got: body.len(),
            expected,
        }
        .into());
    }
    Ok(())
}

/// A cursor over a message body that fails with a clear error instead of panicking.
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, what }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        if self.bytes.len() < n {
            return Err(PeerMisbehaved::Malformed(format!("{} is truncated", self.what)).into());
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, ProtocolError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn u128(&mut self) -> Result<u128, ProtocolError> {
        Ok(u128::from_be_bytes(self.take(16)?.try_into().unwrap()))
    }
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], ProtocolError> {
        Ok(self.take(N)?.try_into().unwrap())
    }
    /// A length-prefixed (u32) byte string of at most `max` bytes.
    pub fn bytes(&mut self, max: usize) -> Result<&'a [u8], ProtocolError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(PeerMisbehaved::Malformed(format!(
                "{}: field of {n} bytes exceeds {max}",
                self.what
            ))
            .into());
        }
        self.take(n)
    }
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
    /// Fails unless every byte was consumed.
    pub fn finish(self) -> Result<(), ProtocolError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(PeerMisbehaved::Malformed(format!(
                "{} has {} trailing bytes",
                self.what,
                self.bytes.len()
            ))
            .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip_and_rejections() {
        let s = [3u8; 16];
        let header = Header {
            protocol: ProtocolId::PiSum,
            kind: 2,
            sender: 4,
            recipient: 9,
            session: &s,
            seq: 7,
        };
        let f = encode_frame(header, b"hello");
        assert_eq!(f.len(), HEADER_LEN + 5);
        assert_eq!(encode_frame_in_place(header, b"hello".to_vec()), f);
        let d = decode_frame(ProtocolId::PiSum, &f).unwrap();
        assert_eq!(
            (d.kind, d.sender, d.recipient, d.session, d.seq, d.body),
            (2, 4, 9, s, 7, &b"hello"[..])
        );
        assert!(decode_frame(ProtocolId::PiSum, &f[..f.len() - 1]).is_err());
        assert!(decode_frame(ProtocolId::PiSum, &f[..10]).is_err());
        let mut bad = f.clone();
        bad[0] = b'X';
        assert_eq!(
            decode_frame(ProtocolId::PiSum, &bad).unwrap_err(),
            PeerMisbehaved::BadMagic.into()
        );
        let mut bad = f.clone();
        bad[4] = 9;
        assert!(matches!(
            decode_frame(ProtocolId::PiSum, &bad).unwrap_err(),
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Version { got: 9, .. })
        ));
        let a = alert_frame(header, "nope");
        assert_eq!(
            decode_frame(ProtocolId::PiSum, &a).unwrap_err(),
            ProtocolError::PeerAborted("nope".into())
        );
        // An alert cannot drive the user's terminal: control characters arrive escaped.
        let a = alert_frame(header, "\x1b[2J\x1b]0;pwned\x07caf\u{e9}");
        assert_eq!(
            decode_frame(ProtocolId::PiSum, &a).unwrap_err(),
            ProtocolError::PeerAborted("\\u{1b}[2J\\u{1b}]0;pwned\\u{7}caf\u{e9}".into())
        );
    }
}
