//! The one error type every transport returns, so drivers and the CLI can report any
//! transport failure without knowing which transport was in use.

use std::io;

/// Why a transport failed. Every message names what was being done, so a user reading
/// only the error can tell which file, address or message was involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// An operating-system I/O error, with what we were doing when it happened.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// Nothing arrived (or no connection came) in time.
    #[error("timed out after {seconds} s {what}")]
    Timeout { what: String, seconds: u64 },
    /// An incoming (or outgoing) message is longer than allowed; refused before its body
    /// was read or allocated.
    #[error("message of {len} bytes exceeds the limit of {max} bytes; refused without reading it")]
    TooLarge { len: u64, max: u64 },
    /// TLS failed: handshake, certificate verification, or a peer that does not speak TLS.
    #[error("TLS: {0}")]
    Tls(String),
    /// The peer closed the connection (or the channel) while we expected a message.
    #[error("the peer closed the connection")]
    PeerClosed,
    /// The shared exchange directory is unusable or inconsistent.
    #[error("exchange directory: {0}")]
    ExchangeDir(String),
    /// Setting up a link of an n-party session failed: a participant refused our
    /// connection, or a connection we accepted claimed a participant it cannot be.
    #[error("link set-up: {0}")]
    Link(String),
    /// Bad local configuration: unreadable certificate or key files, bad addresses, names.
    #[error("configuration: {0}")]
    Config(String),
    /// This side's run was cancelled (see [`crate::Cancel`]).
    #[error("the run was cancelled")]
    Cancelled,
}

impl TransportError {
    /// Wraps an I/O error with what we were doing.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        TransportError::Io {
            what: what.into(),
            source,
        }
    }
}

/// Seconds of a duration for error messages, rounded up so "0 s" never appears.
pub(crate) fn secs(d: std::time::Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
