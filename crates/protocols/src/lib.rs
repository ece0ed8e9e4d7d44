//! privset protocols. Every party of every protocol is a sans-IO state machine
//! implementing [`Party`]: it consumes the peer's messages and produces its own, and
//! never touches a socket, a file, a clock or a thread of its own. The drivers in
//! `privset-net` move the bytes; the same party runs unchanged over an in-memory pair,
//! TCP with mutual TLS, or a shared exchange directory.
//!
//! Protocols:
//! * [`pi_sum`]: Private Intersection-Sum with Cardinality, the DDH protocol Google
//!   deployed (Ion et al. 2020, Fig. 2) and its variants.
//! * [`toy`]: the toy sum, the smallest protocol on the [`Engine`] and the harness test
//!   for n-party transports.
#![forbid(unsafe_code)]

pub mod agreed;
pub mod apsi;
pub mod bucket_plan;
pub mod engine;
pub mod error;
pub mod input;
pub mod meter;
pub mod mpsi;
pub mod partition_unit;
pub mod party;
pub mod peer_text;
pub mod pi_sum;
pub mod pso;
pub mod session;
pub mod set_encoding;
pub mod toy;
pub mod upsi;
pub mod wire;

pub use engine::{Engine, Handshake, Message, Protocol, Roster, Session, Topology};
pub use error::{InputError, PeerMisbehaved, ProtocolError};
pub use meter::{Meter, Reading};
pub use party::{Outgoing, OutputParty, Party, PartyId};
