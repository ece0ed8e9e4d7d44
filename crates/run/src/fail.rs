//! The CLI's error type: a message for the user and an exit code by kind.

use privset_net::RunError;
use privset_protocols::ProtocolError;

/// Exit codes: 2 = bad input or usage, 3 = the peer misbehaved or aborted,
/// 4 = transport (network, TLS, exchange directory), 1 = anything else.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn input(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
    pub fn other(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        let code = match e {
            ProtocolError::Input(_) | ProtocolError::Config(_) => 2,
            ProtocolError::PeerMisbehaved(_)
            | ProtocolError::PeerAborted(_)
            | ProtocolError::Incompatible(_) => 3,
            _ => 1,
        };
        Self {
            code,
            message: e.to_string(),
        }
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Protocol(p) => p.into(),
            other => Self {
                code: 4,
                message: other.to_string(),
            },
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::other(e.to_string())
    }
}
