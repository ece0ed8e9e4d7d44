//! Cryptographic primitives for privset.
//!
//! This crate holds primitives only: prime-order groups with RFC 9380 hash-to-group
//! ([`group`]), commutative weak PRFs over them and X25519 ([`cwprf`]), additively homomorphic encryption ([`ahe`]) and its threshold variants for
//! multi-party protocols ([`tahe`]), compact order-hiding set
//! encodings ([`filter`]), semi-honest oblivious transfer with SoftSpokenOT extension ([`ot`]), the KKRT
//! batched oblivious PRF on the same base OTs ([`oprf`]), the random-band oblivious
//! key-value store of VOLE-based PSI ([`okvs`])
//! and the session randomness every party draws from ([`rng`]).
//! It does no I/O and knows nothing about protocols.
// No unsafe code, except where a module opts out explicitly: the AVX-512 IFMA backend
// of the X25519 cwPRF (`cwprf::x25519::ifma`), whose functions may only be called once
// the CPU features are detected.
#![deny(unsafe_code)]

pub mod ahe;
pub mod bfv;
pub(crate) mod bignum;
pub mod bls;
pub mod cpu;
pub mod cuckoo;
// Eight-lane AVX-512 IFMA arithmetic: `#[target_feature]` functions, called only after
// `cpu` detects the features.
#[allow(unsafe_code)]
#[cfg(target_arch = "x86_64")]
pub(crate) mod curve25519x8;
pub mod cwprf;
pub mod filter;
pub mod gf128;
pub mod group;
pub(crate) mod in_order;
pub mod okvs;
pub mod oprf;
pub mod ot;
pub mod prefixed_sha256;
pub mod rng;
pub mod tahe;
pub mod vole;
