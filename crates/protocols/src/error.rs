//! Errors. Modelled on rustls: what the *peer* did wrong ([`PeerMisbehaved`]) is kept
//! apart from what the *user's input* got wrong ([`InputError`]) and from mistakes in
//! how the caller drives a party ([`ProtocolError::ApiMisuse`]).

use privset_crypto::ahe::HeError;
use privset_crypto::filter::FilterError;
use privset_crypto::group::GroupError;

/// Everything that can end a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The peer sent something the protocol does not allow. The run is aborted.
    #[error("peer misbehaved: {0}")]
    PeerMisbehaved(#[from] PeerMisbehaved),
    /// The two parties were configured differently (protocol, version, group, ...).
    #[error("the parties' settings do not match: {0}")]
    Incompatible(String),
    /// The peer aborted the run and said why.
    #[error("the peer aborted the run: {0}")]
    PeerAborted(String),
    /// Another participant of a session of three or more stopped answering (its link
    /// failed): what this party tells the others before it stops.
    #[error("the {peer} dropped out: {reason}")]
    PeerDropped { peer: String, reason: String },
    /// The local input is unusable; reported before anything is sent.
    #[error("input error: {0}")]
    Input(#[from] InputError),
    /// The judge refused to authorize the client's items (its policy's reason).
    #[error("the judge rejected the authorization: {0}")]
    Rejected(String),
    /// A local configuration value is out of range.
    #[error("configuration error: {0}")]
    Config(String),
    /// The caller drove the state machine wrongly (a bug in the caller).
    #[error("API misuse: {0}")]
    ApiMisuse(&'static str),
}

/// Ways the peer can break the protocol. Each names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerMisbehaved {
    #[error("message is truncated or malformed: {0}")]
    Malformed(String),
    #[error("message is not a privset frame (bad magic)")]
    BadMagic,
    #[error("peer speaks wire version {got}, this build speaks {expected}")]
    Version { got: u8, expected: u8 },
    #[error("peer speaks protocol {got}, expected {expected}")]
    WrongProtocol { got: String, expected: String },
    #[error("unexpected message {got} (expected {expected})")]
    UnexpectedMessage { got: String, expected: String },
    #[error(
        "message from participant {sender} to {recipient} arrived on the link from {expected_sender} to {expected_recipient} (misrouted, or both parties play the same role)"
    )]
    Misrouted {
        sender: u8,
        recipient: u8,
        expected_sender: u8,
        expected_recipient: u8,
    },
    #[error("message belongs to another session (replayed or misrouted)")]
    WrongSession,
    #[error("message sequence number {got}, expected {expected} (replayed, dropped or reordered)")]
    OutOfOrder { got: u32, expected: u32 },
    #[error("{what}: length {got} bytes, the announced sizes allow exactly {expected}")]
    WrongLength {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("announced set size {got} exceeds the configured limit {limit}")]
    TooLarge { got: u64, limit: u64 },
    #[error("invalid group element in {what}: {source}")]
    InvalidElement {
        what: &'static str,
        source: GroupError,
    },
    #[error("invalid homomorphic value in {what}: {source}")]
    InvalidCiphertext { what: &'static str, source: HeError },
    #[error("invalid set encoding in {what}: {source}")]
    InvalidFilter {
        what: &'static str,
        source: FilterError,
    },
    #[error("invalid {what}: {source}")]
    InvalidBls {
        what: &'static str,
        source: privset_crypto::bls::BlsError,
    },
    #[error("oblivious transfer: {0}")]
    InvalidOt(privset_crypto::ot::OtError),
    #[error("silent VOLE: {0}")]
    InvalidVole(privset_crypto::vole::VoleError),
    #[error("{0}")]
    Inconsistent(String),
    /// In a session of three or more participants: what the named one did wrong.
    #[error("the {peer}: {source}")]
    By {
        peer: String,
        source: Box<PeerMisbehaved>,
    },
    /// A key contribution, ciphertext or decryption share of the threshold scheme from
    /// the named participant failed validation or its proof.
    #[error("the {party}'s {what}: {source}")]
    Threshold {
        party: String,
        what: &'static str,
        source: privset_crypto::tahe::TaheError,
    },
}

/// Problems with the user's own input, reported before any network traffic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error(
        "line {line}: duplicate identifier (first seen on line {first_line}); pass --duplicates sum|first to combine or keep the first"
    )]
    Duplicate { line: u64, first_line: u64 },
    #[error("line {line}: value {value:?} in column {column:?} is not a non-negative integer")]
    NotAnInteger {
        line: u64,
        column: String,
        value: String,
    },
    #[error("line {line}: value {value} in column {column:?} exceeds the bound {bound}")]
    ValueTooLarge {
        line: u64,
        column: String,
        /// The cell's text as written (shortened if long), or the sum of duplicates.
        value: String,
        bound: u64,
    },
    #[error("the values of column {column:?} sum to {sum}, above the agreed sum bound {bound}")]
    SumTooLarge {
        column: String,
        sum: u128,
        bound: u128,
    },
    #[error("{0}")]
    Other(String),
}

impl InputError {
    /// The input line to blame (the header is line 1), when the error names one.
    pub fn line(&self) -> Option<u64> {
        match self {
            InputError::Duplicate { line, .. }
            | InputError::NotAnInteger { line, .. }
            | InputError::ValueTooLarge { line, .. } => Some(*line),
            InputError::SumTooLarge { .. } | InputError::Other(_) => None,
        }
    }
}

impl PeerMisbehaved {
    /// What was wrong, without the name of who did it ([`PeerMisbehaved::By`]).
    pub fn root(&self) -> &PeerMisbehaved {
        match self {
            PeerMisbehaved::By { source, .. } => source.root(),
            other => other,
        }
    }

    /// The same fault, naming `peer` (unless it already names someone).
    pub fn by(self, peer: String) -> Self {
        match self {
            named @ (PeerMisbehaved::By { .. } | PeerMisbehaved::Threshold { .. }) => named,
            other => PeerMisbehaved::By {
                peer,
                source: Box::new(other),
            },
        }
    }
}
