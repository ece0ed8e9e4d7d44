//! Prime-order groups in which DDH is hard, with RFC 9380 hash-to-group.
//!
//! [`PrimeGroup`] is the one trait every group implements. Elements cross the wire as
//! packed, fixed-width, canonical encodings ([`PrimeGroup::ELEMENT_LEN`] bytes each,
//! never per-element framing). Received bytes become elements only through
//! [`PrimeGroup::decode`], which rejects non-canonical encodings and the identity.
//!
//! Implementations: [`ristretto::Ristretto255`] (RFC 9496, hash-to-group with
//! expand_message_xmd/SHA-512) and [`p256::P256`] / [`p256::P256Uncompressed`] (RFC 9380 suite
//! `P256_XMD:SHA-256_SSWU_RO_`).

pub mod p256;
pub mod ristretto;
pub mod xmd;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

use rayon::prelude::*;
use zeroize::{Zeroize, Zeroizing};

use crate::rng::SessionRng;

/// Which group a session uses; the wire code is part of every protocol's hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupId {
    Ristretto255,
    /// P-256, SEC1 uncompressed (65-byte elements).
    P256,
    /// P-256, SEC1 compressed (33-byte elements).
    P256Compressed,
}

impl GroupId {
    /// All groups, in the order the CLI lists them.
    pub const ALL: [GroupId; 3] = [
        GroupId::Ristretto255,
        GroupId::P256,
        GroupId::P256Compressed,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            GroupId::Ristretto255 => "ristretto255",
            GroupId::P256 => "p256",
            GroupId::P256Compressed => "p256-compressed",
        }
    }

    /// The one-byte code used on the wire.
    pub fn code(self) -> u8 {
        match self {
            GroupId::Ristretto255 => 1,
            GroupId::P256Compressed => 2,
            GroupId::P256 => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.code() == code)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.name() == name)
    }

    /// The RFC 9380 suite identifier, folded into every domain-separation tag.
    pub fn suite(self) -> &'static str {
        match self {
            GroupId::Ristretto255 => "ristretto255_XMD:SHA-512_R255MAP_RO_",
            GroupId::P256 | GroupId::P256Compressed => "P256_XMD:SHA-256_SSWU_RO_",
        }
    }
}

/// Why received bytes are not a valid group element.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("element {index} is not a canonical encoding of a group element")]
    NonCanonical { index: usize },
    #[error("element {index} is the identity, which is never a valid protocol value")]
    Identity { index: usize },
    #[error("{len} bytes of packed elements is not a multiple of the element length {element_len}")]
    BadLength { len: usize, element_len: usize },
}

impl GroupError {
    /// The same error, re-labelled with the element's position in a packed vector.
    pub fn at(self, index: usize) -> Self {
        match self {
            GroupError::NonCanonical { .. } => GroupError::NonCanonical { index },
            GroupError::Identity { .. } => GroupError::Identity { index },
            other => other,
        }
    }

    /// The same error for a part of a packed vector that starts at element `first`
    /// (an index relative to the part becomes one relative to the whole).
    pub fn at_offset(self, first: usize) -> Self {
        match self {
            GroupError::NonCanonical { index } | GroupError::Identity { index } => {
                self.at(first + index)
            }
            other => other,
        }
    }
}

/// Elements per rayon work item in the batch operations: large enough to amortise
/// scheduling and batch tricks (e.g. batched compression), small enough to balance.
pub const BATCH_CHUNK: usize = 1024;

/// A cyclic group of prime order in which DDH is believed hard.
///
/// All exponents are non-zero scalars drawn from a [`SessionRng`]. The batch methods
/// work on packed encodings and use every core; an implementation speeds them up through
/// the three batch hooks (`Product`, `batch_exponent`, `mul_for_batch`, `encode_batch`)
/// rather than by re-implementing them.
pub trait PrimeGroup: Send + Sync + 'static {
    const ID: GroupId;
    /// Bytes of one encoded element.
    const ELEMENT_LEN: usize;

    /// A valid, non-identity group element (only ever built by hashing, decoding or
    /// multiplying valid elements).
    type Element: Copy + Send + Sync;
    /// A secret exponent. Zeroized on drop by the implementation's scalar type.
    type Scalar: Clone + Send + Sync + Zeroize;

    /// A uniformly random non-zero scalar.
    fn random_scalar(rng: &mut SessionRng) -> Self::Scalar;

    /// The inverse of a non-zero scalar (used to undo an exponentiation).
    fn invert_scalar(k: &Self::Scalar) -> Self::Scalar;

    /// `a * b` mod the group order (composes two exponentiations into one).
    fn mul_scalars(a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;

    /// RFC 9380 `hash_to_curve` (random-oracle variant) with domain-separation tag `dst`
    /// (at most 255 bytes).
    fn hash_to_group(dst: &[u8], msg: &[u8]) -> Self::Element;

    /// `element ^ k` in multiplicative notation (`k * element` on a curve).
    fn mul(element: &Self::Element, k: &Self::Scalar) -> Self::Element;

    /// Writes the canonical encoding into `out` (exactly `ELEMENT_LEN` bytes).
    fn encode(element: &Self::Element, out: &mut [u8]);

    /// Decodes exactly `ELEMENT_LEN` bytes; rejects non-canonical encodings, points not
    /// in the prime-order group, and the identity. Errors carry index 0.
    fn decode(bytes: &[u8]) -> Result<Self::Element, GroupError>;

    /// A product `element ^ k` whose encoding is deferred to [`Self::encode_batch`], so
    /// an implementation can share work across a chunk (one field inversion, a doubling
    /// folded into compression, ...).
    type Product: Send;

    /// The exponent the batch methods multiply by, given the caller's `k`; the products
    /// are encoded by [`Self::encode_batch`], which must undo any difference (ristretto255
    /// multiplies by `k/2` and lets batched double-and-compress supply the 2).
    fn batch_exponent(k: &Self::Scalar) -> Self::Scalar;

    /// `element ^ e` for a batch exponent `e`, encoding deferred.
    fn mul_for_batch(element: &Self::Element, e: &Self::Scalar) -> Self::Product;

    /// Writes the canonical encodings of a chunk of products into consecutive
    /// `ELEMENT_LEN`-byte slots of `out`.
    fn encode_batch(products: &[Self::Product], out: &mut [u8]);

    /// `encode(hash_to_group(dst, item) ^ k)` for every item, packed, in input order.
    fn hash_mul_encode_batch<I: AsRef<[u8]> + Sync>(
        dst: &[u8],
        items: &[I],
        k: &Self::Scalar,
    ) -> Vec<u8> {
        let e = Zeroizing::new(Self::batch_exponent(k));
        let mut out = vec![0u8; items.len() * Self::ELEMENT_LEN];
        out.par_chunks_mut(Self::ELEMENT_LEN * BATCH_CHUNK)
            .zip(items.par_chunks(BATCH_CHUNK))
            .for_each(|(out, items)| {
                let products: Vec<Self::Product> = items
                    .iter()
                    .map(|item| Self::mul_for_batch(&Self::hash_to_group(dst, item.as_ref()), &e))
                    .collect();
                Self::encode_batch(&products, out);
            });
        out
    }

    /// `encode(decode(e) ^ k)` for every packed element `e`, in input order. Fails on the
    /// first invalid element, naming its index.
    fn decode_mul_encode_batch(packed: &[u8], k: &Self::Scalar) -> Result<Vec<u8>, GroupError> {
        let n = Self::element_count(packed)?;
        let e = Zeroizing::new(Self::batch_exponent(k));
        let mut out = vec![0u8; n * Self::ELEMENT_LEN];
        let step = Self::ELEMENT_LEN * BATCH_CHUNK;
        out.par_chunks_mut(step)
            .zip(packed.par_chunks(step))
            .enumerate()
            .try_for_each(|(chunk, (out, input))| {
                let products = input
                    .chunks_exact(Self::ELEMENT_LEN)
                    .enumerate()
                    .map(|(i, bytes)| {
                        Self::decode(bytes)
                            .map(|element| Self::mul_for_batch(&element, &e))
                            .map_err(|err| err.at(chunk * BATCH_CHUNK + i))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Self::encode_batch(&products, out);
                Ok(())
            })?;
        Ok(out)
    }

    /// Checks that every packed element decodes (where elements are only compared, never
    /// exponentiated). Fails on the first invalid element, naming its index.
    fn validate_batch(packed: &[u8]) -> Result<(), GroupError> {
        Self::element_count(packed)?;
        packed
            .par_chunks(Self::ELEMENT_LEN)
            .enumerate()
            .try_for_each(|(i, e)| Self::decode(e).map(|_| ()).map_err(|err| err.at(i)))
    }

    /// Number of elements in a packed vector, or an error if its length is not a
    /// multiple of `ELEMENT_LEN`.
    fn element_count(packed: &[u8]) -> Result<usize, GroupError> {
        if !packed.len().is_multiple_of(Self::ELEMENT_LEN) {
            return Err(GroupError::BadLength {
                len: packed.len(),
                element_len: Self::ELEMENT_LEN,
            });
        }
        Ok(packed.len() / Self::ELEMENT_LEN)
    }
}
