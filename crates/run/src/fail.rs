//! Why a run failed, for every front end: a message for the user, a kind (which the
//! CLI turns into an exit code and the Python package into an exception class), and
//! the input line when one is to blame.

use privset_net::{RunError, TransportError};
use privset_protocols::{InputError, ProtocolError};

/// What went wrong, by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The user's input data (unreadable file, bad value, duplicate, empty identifier).
    Input,
    /// The user's settings (flags, keyword arguments, out-of-range parameters).
    Config,
    /// The peer misbehaved, aborted, or was configured differently.
    Peer,
    /// Network, TLS or exchange directory (including unusable certificate files).
    Transport,
    /// The judge refused to authorize the set (APSI), with its policy's reason.
    Rejected,
    /// The run was cancelled by this side.
    Cancelled,
    /// Anything else.
    Other,
}

/// A failed run.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    /// The input line to blame (the header is line 1), when there is one.
    pub line: Option<u64>,
    /// True when this failure only reflects the peer stopping first (its alert, its
    /// closed connection): when both parties of one process fail, the other failure is
    /// the one to report.
    pub peer_stopped: bool,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            line: None,
            peer_stopped: false,
        }
    }
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Input, message)
    }
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Config, message)
    }
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Other, message)
    }
    /// The peer asked for something the protocol does not allow.
    pub fn peer(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Peer, message)
    }

    /// Names the input line to blame.
    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }

    /// Prefixes the message with the file it is about, as `FILE: message`.
    pub fn in_file(mut self, path: &std::path::Path) -> Self {
        self.message = format!("{}: {}", path.display(), self.message);
        self
    }

    /// The CLI's exit code: 2 = bad input or usage, 3 = the peer misbehaved or
    /// aborted, 4 = transport (network, TLS, exchange directory), 5 = the judge rejected
    /// the set, 1 = anything else
    /// (130, as for SIGINT, when cancelled).
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            FailureKind::Input | FailureKind::Config => 2,
            FailureKind::Peer => 3,
            FailureKind::Transport => 4,
            FailureKind::Rejected => 5,
            FailureKind::Cancelled => 130,
            FailureKind::Other => 1,
        }
    }
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        let (kind, line) = match &e {
            ProtocolError::Input(input) => (FailureKind::Input, input.line()),
            ProtocolError::Config(_) => (FailureKind::Config, None),
            ProtocolError::PeerMisbehaved(_)
            | ProtocolError::PeerAborted(_)
            | ProtocolError::PeerDropped { .. }
            | ProtocolError::Incompatible(_) => (FailureKind::Peer, None),
            ProtocolError::Rejected(_) => (FailureKind::Rejected, None),
            _ => (FailureKind::Other, None),
        };
        Self {
            kind,
            peer_stopped: matches!(e, ProtocolError::PeerAborted(_)),
            message: e.to_string(),
            line,
        }
    }
}

/// A problem with the user's own rows, reported as the CLI reports it: the message
/// without the "input error" prefix a `ProtocolError` would add.
impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Self {
            kind: FailureKind::Input,
            line: e.line(),
            message: e.to_string(),
            peer_stopped: false,
        }
    }
}

impl From<TransportError> for Failure {
    fn from(e: TransportError) -> Self {
        let kind = match e {
            TransportError::Cancelled => FailureKind::Cancelled,
            _ => FailureKind::Transport,
        };
        Self {
            peer_stopped: matches!(e, TransportError::PeerClosed),
            ..Self::new(kind, e.to_string())
        }
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Protocol(p) => p.into(),
            e if matches!(e.transport(), Some(TransportError::Cancelled)) => {
                TransportError::Cancelled.into()
            }
            other => Self {
                peer_stopped: matches!(other.transport(), Some(TransportError::PeerClosed)),
                ..Self::new(FailureKind::Transport, other.to_string())
            },
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::other(e.to_string())
    }
}
