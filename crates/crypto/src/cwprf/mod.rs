//! Commutative weak pseudorandom functions (cwPRF, Chen et al. 2024, Sec. 4).
//!
//! A keyed function `F: K x D -> D` whose keyed maps commute,
//! `F_k1(F_k2(x)) = F_k2(F_k1(x))`, and which is pseudorandom on random inputs. With a
//! hash `H` into `D` modelled as a random oracle, it is the whole of the mqRPMT of
//! Chen et al. 2024, Fig. 3. Two families implement [`CwPrf`]:
//!
//! * every [`PrimeGroup`] (DDH): `F_k(x) = x^k`, the inputs hashed with RFC 9380.
//!   These are also permutations with an efficient inverse (`k^-1`), i.e. commutative
//!   weak pseudorandom *permutations*, which the permuted OPRF of Chen et al. 2024, Fig. 5 needs;
//!   [`CwPrf::invert_key`] says so.
//! * [`x25519::X25519`], the fast mode of Chen et al. 2024, Sec. 7.5: `F_k(u)` is the X25519
//!   function on Montgomery u-coordinates. Its keys are clamped, so not every key has an
//!   inverse key: it serves Fig. 3, and blinded OPRFs (private-ID's, unbalanced PSI's)
//!   through [`CwPrf::unblinding_key`] and [`CwPrf::invert_key`] (which may decline a
//!   blind), but not the permuted OPRF.
//!
//! Elements travel packed and fixed-width ([`CwPrf::ELEMENT_LEN`] bytes each); received
//! bytes are validated by [`CwPrf::eval_batch`] before use.

pub mod x25519;

use zeroize::{Zeroize, Zeroizing};

use crate::group::{GroupError, GroupId, PrimeGroup};
use crate::rng::SessionRng;

/// Which cwPRF a session uses: a prime-order group or the X25519 fast mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CwPrfId {
    Group(GroupId),
    X25519,
}

impl CwPrfId {
    /// Every choice, in the order the CLI lists them.
    pub const ALL: [CwPrfId; 4] = [
        CwPrfId::Group(GroupId::Ristretto255),
        CwPrfId::Group(GroupId::P256),
        CwPrfId::Group(GroupId::P256Compressed),
        CwPrfId::X25519,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CwPrfId::Group(g) => g.name(),
            CwPrfId::X25519 => "x25519",
        }
    }

    /// One-byte wire code (the group codes, and 16 for X25519).
    pub fn code(self) -> u8 {
        match self {
            CwPrfId::Group(g) => g.code(),
            CwPrfId::X25519 => 16,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The hashing suite folded into every domain-separation tag.
    pub fn suite(self) -> &'static str {
        match self {
            CwPrfId::Group(g) => g.suite(),
            CwPrfId::X25519 => x25519::SUITE,
        }
    }

    /// Bytes of one element on the wire.
    pub fn element_len(self) -> usize {
        match self {
            CwPrfId::Group(GroupId::Ristretto255) => 32,
            CwPrfId::Group(GroupId::P256) => 65,
            CwPrfId::Group(GroupId::P256Compressed) => 33,
            CwPrfId::X25519 => x25519::ELEMENT_LEN,
        }
    }

    /// True when the function is a permutation with an efficient inverse (needed by the
    /// permuted-OPRF construction).
    pub fn is_permutation(self) -> bool {
        matches!(self, CwPrfId::Group(_))
    }
}

/// A commutative weak PRF with a random-oracle hash into its domain.
pub trait CwPrf: Send + Sync + 'static {
    const ID: CwPrfId;
    /// Bytes of one encoded element.
    const ELEMENT_LEN: usize;
    /// A secret key. Zeroized on drop by the implementation's type.
    type Key: Clone + Send + Sync + Zeroize;

    fn random_key(rng: &mut SessionRng) -> Self::Key;

    /// The key that undoes `F_k` on the outputs of the hash and of the function, when
    /// the family has one for this key: always on prime-order groups (`k^-1`); for
    /// about half of all keys on X25519, so a caller that can draw another key (a
    /// blinded OPRF's blind) may rely on it. The permuted OPRF, which inverts a fixed
    /// key, checks [`CwPrfId::is_permutation`] instead.
    fn invert_key(key: &Self::Key) -> Option<Self::Key>;

    /// The key `u` with `F_u(F_blind(z)) = F_key(z)` for every output `z` of the hash
    /// and of the function (prime-order groups: `key / blind`), when the family has one
    /// for this blind. X25519 has one for about half of all blinds; the caller draws
    /// another blind when this is `None` (private-ID's distributed OPRF).
    fn unblinding_key(blind: &Self::Key, key: &Self::Key) -> Option<Self::Key>;

    /// `F_k(H(item))` for every item, packed, in input order, on every core. `dst` is
    /// the session's domain-separation tag for `H`.
    fn hash_eval_batch<I: AsRef<[u8]> + Sync>(dst: &[u8], items: &[I], key: &Self::Key) -> Vec<u8>;

    /// `F_k(e)` for every packed element `e` (received from the peer or computed
    /// earlier), in input order. Fails on the first invalid element, naming its index.
    fn eval_batch(packed: &[u8], key: &Self::Key) -> Result<Vec<u8>, GroupError>;

    /// Checks that every packed element is valid, without evaluating.
    fn validate_batch(packed: &[u8]) -> Result<(), GroupError>;
}

impl<G: PrimeGroup> CwPrf for G {
    const ID: CwPrfId = CwPrfId::Group(G::ID);
    const ELEMENT_LEN: usize = G::ELEMENT_LEN;
    type Key = G::Scalar;

    fn random_key(rng: &mut SessionRng) -> G::Scalar {
        G::random_scalar(rng)
    }

    fn invert_key(key: &G::Scalar) -> Option<G::Scalar> {
        Some(G::invert_scalar(key))
    }

    fn unblinding_key(blind: &G::Scalar, key: &G::Scalar) -> Option<G::Scalar> {
        let inverse = Zeroizing::new(G::invert_scalar(blind));
        Some(G::mul_scalars(&inverse, key))
    }

    fn hash_eval_batch<I: AsRef<[u8]> + Sync>(dst: &[u8], items: &[I], key: &G::Scalar) -> Vec<u8> {
        G::hash_mul_encode_batch(dst, items, key)
    }

    fn eval_batch(packed: &[u8], key: &G::Scalar) -> Result<Vec<u8>, GroupError> {
        G::decode_mul_encode_batch(packed, key)
    }

    fn validate_batch(packed: &[u8]) -> Result<(), GroupError> {
        <G as PrimeGroup>::validate_batch(packed)
    }
}
