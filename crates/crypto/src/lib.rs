//! Cryptographic primitives for privset.
//!
//! This crate holds primitives only: prime-order groups with RFC 9380 hash-to-group
//! ([`group`]), commutative weak PRFs over them and X25519 ([`cwprf`]), additively homomorphic encryption ([`ahe`]), compact order-hiding set
//! encodings ([`filter`]), semi-honest oblivious transfer with IKNP extension ([`ot`])
//! and the session randomness every party draws from ([`rng`]).
//! It does no I/O and knows nothing about protocols.
#![forbid(unsafe_code)]

pub mod ahe;
pub mod bls;
pub mod cwprf;
pub mod filter;
pub mod group;
pub mod ot;
pub mod rng;
