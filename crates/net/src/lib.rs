//! What drives privset parties: the byte movers around the sans-IO state machines of
//! `privset-protocols`.
//!
//! A party never touches a socket or a file; [`drive`] runs one over any [`Transport`]:
//! * [`memory`]: an in-memory pair for tests, plus a single-threaded lock-step harness
//!   ([`memory::run_pair`]) that can tamper with, drop, duplicate or reorder messages;
//! * [`tls`]: TCP with mutual TLS 1.3 (rustls, ring), the default between organisations;
//! * [`tcp`]: plaintext TCP, only behind an explicit `--insecure-no-tls`;
//! * [`links`]: the TCP links of one participant of an n-party session (a star or a
//!   mesh), each connection identified by a link preamble;
//! * [`dir`]: a shared exchange directory polled for message files (the batch deployment
//!   of Ion et al. 2020, Sec. 2.4), which can resume a killed party; [`sealed_dir`]
//!   seals every message file there for its one recipient.
//!
//! A [`Cancel`] token given in the options stops a run from another thread.
//! [`certs::generate`] makes a throwaway CA and per-party certificates for trying it out.
//! Every transport counts the bytes it moves so benchmarks can price a run.
#![forbid(unsafe_code)]

mod cancel;
pub mod certs;
pub mod client_check;
mod counting;
pub mod dir;
pub mod driver;
mod error;
mod framing;
pub mod links;
pub mod memory;
pub mod sealed_dir;
mod socket;
pub mod tcp;
pub mod tls;

pub use cancel::Cancel;
pub use dir::{DirOptions, ExchangeDir};
pub use driver::{LinkSet, Links, RunError, drive, drive_links};
pub use error::TransportError;
pub use links::{Identity, LinkPlan, Security};
pub use memory::{MemoryTransport, pair, run_pair, run_pair_with, run_parties, run_parties_with};
pub use socket::{ConnectOptions, host_of};
pub use tcp::PlainTcpTransport;
pub use tls::{TlsAcceptor, TlsFiles, TlsTransport};

/// Moves whole privset frames between two parties.
///
/// Implementations keep message boundaries (a party handles one frame at a time) and
/// never allocate for an incoming message before checking its length against the
/// limit the party gave, so a hostile peer cannot make us allocate gigabytes.
pub trait Transport {
    /// Sends one message (a whole privset frame).
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError>;
    /// Receives one message; a message longer than `max_len` is refused with an error
    /// BEFORE allocating for it.
    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError>;
    /// Bytes this side has sent and received so far, as counted on the wire (socket
    /// bytes incl. TLS/length framing; file bytes for the directory transport).
    fn counters(&self) -> ByteCounters;
}

/// Bytes moved by one side, as the transport counts them (see [`Transport::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteCounters {
    /// Bytes this side sent.
    pub sent: u64,
    /// Bytes this side received.
    pub received: u64,
}

impl ByteCounters {
    /// Sent plus received.
    pub fn total(&self) -> u64 {
        self.sent + self.received
    }
}
