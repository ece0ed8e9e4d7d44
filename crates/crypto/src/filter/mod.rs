//! Compact, order-hiding encodings of a set of fixed-width byte strings.
//!
//! The last message of a DH-PSI is a set `Z` of encoded group elements the receiver
//! only needs to test membership in. Sending `Z` itself costs `ELEMENT_LEN` bytes per
//! element and reveals nothing more than a filter would, but a filter needs only about
//! `log2(queries) + 40` bits per element: it keeps just enough of a keyed hash of each
//! element that, over all the receiver's look-ups together, a false positive happens
//! with probability at most 2⁻⁴⁰. Both encodings are canonical functions of the *set*
//! (sorted hashes / a bit array), so they hide the order in which elements were sent.
//!
//! Two kinds:
//! - [`FilterKind::Gcs`]: a Golomb–Rice coded sorted list of hashes
//!   (≈ `log2(queries) + 41.6` bits per element; [`gcs`]).
//! - [`FilterKind::Bloom`]: a partitioned Bloom filter
//!   (≈ `1.44 · (log2(queries) + 40)` bits per element; faster to look up; [`bloom`]).
//!
//! # Parameters and the false-positive budget
//! [`FilterParams`] holds only public numbers both sides know before the message is
//! sent: the number of elements `n` in the set and the number of look-ups `q` the
//! receiver will make. With `q' = max(q, 1)` each look-up of a non-member is allowed a
//! false-positive probability of `2⁻⁴⁰ / q'`, so by the union bound the probability of
//! *any* false positive among the `q` look-ups is at most `2⁻⁴⁰`. The per-kind docs
//! show how each meets the per-look-up bound, modelling SHA-256 as a random oracle.
//!
//! # Keyed hashing
//! Elements are hashed as `SHA-256(domain ‖ key ‖ element)`, where `key` is a
//! per-session value both parties know. The domain string and key fill exactly one
//! SHA-256 block, so the hash state after them is computed once and each element costs
//! a single compression.
//!
//! # Untrusted input
//! [`SetFilter::decode`] parses bytes from the peer: it never panics, rejects any
//! encoding that is not exactly what [`encode`] would produce for some set of `n`
//! elements, and never allocates more than `n × 16` bytes (GCS) or the input length
//! (Bloom).

pub mod bloom;
pub mod gcs;

use sha2::{Digest, Sha256};

/// Which filter encodes the set; the code is sent in the protocol's hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterKind {
    Gcs,
    Bloom,
}

impl FilterKind {
    /// All kinds, in the order the CLI lists them.
    pub const ALL: [FilterKind; 2] = [FilterKind::Gcs, FilterKind::Bloom];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            FilterKind::Gcs => "gcs",
            FilterKind::Bloom => "bloom",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The one-byte wire code.
    pub fn code(self) -> u8 {
        match self {
            FilterKind::Gcs => 1,
            FilterKind::Bloom => 2,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// Why received filter bytes were rejected.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FilterError {
    #[error(
        "filter parameters out of range: {elements} elements, {queries} queries (max {max} each)"
    )]
    Unsupported {
        elements: usize,
        queries: usize,
        max: usize,
    },
    #[error("filter encoding of {len} bytes is longer than the maximum {max}")]
    TooLong { len: usize, max: usize },
    #[error("filter encoding of {len} bytes, expected exactly {expected}")]
    WrongLength { len: usize, expected: usize },
    #[error("filter encoding ends after {found} of {expected} elements")]
    Truncated { found: usize, expected: usize },
    #[error("filter encoding has data after the last of its {expected} elements")]
    TrailingData { expected: usize },
    #[error("filter encoding has non-zero padding bits")]
    NonZeroPadding,
    #[error("filter element {index} lies outside the hash range")]
    OutOfRange { index: usize },
    #[error(
        "bloom partition {partition} has {set} bits set, more than the {elements} elements allow"
    )]
    Overfull {
        partition: usize,
        set: usize,
        elements: usize,
    },
}

/// Largest element and query counts the parameter maths is specified for (2³²). Within
/// these every intermediate value fits its integer type, and the GCS hash range stays
/// below 2¹⁰⁵, which the FP margin in [`gcs`] relies on.
pub const MAX_COUNT: usize = 1 << 32;

/// Target: any false positive over all look-ups together at most 2^-FP_BITS.
pub const FP_BITS: u32 = 40;

/// Public parameters both sides derive before the filter is sent.
///
/// `elements` is the size of the encoded set, `queries` the number of
/// [`SetFilter::contains`] calls the receiver will make. Both must be at most
/// [`MAX_COUNT`] ([`Self::validate`]); [`encode`] clamps larger values (so it cannot
/// panic or overflow) and [`SetFilter::decode`] rejects them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterParams {
    pub kind: FilterKind,
    pub elements: usize,
    pub queries: usize,
}

impl FilterParams {
    pub fn new(kind: FilterKind, elements: usize, queries: usize) -> Self {
        Self {
            kind,
            elements,
            queries,
        }
    }

    /// Checks the counts are within [`MAX_COUNT`].
    pub fn validate(&self) -> Result<(), FilterError> {
        if self.elements > MAX_COUNT || self.queries > MAX_COUNT {
            return Err(FilterError::Unsupported {
                elements: self.elements,
                queries: self.queries,
                max: MAX_COUNT,
            });
        }
        Ok(())
    }

    /// `n`, clamped to [`MAX_COUNT`].
    fn n(&self) -> u64 {
        self.elements.min(MAX_COUNT) as u64
    }

    /// `q' = max(q, 1)`, clamped to [`MAX_COUNT`]: zero look-ups is budgeted as one so
    /// the parameters stay well defined.
    fn q(&self) -> u64 {
        self.queries.clamp(1, MAX_COUNT) as u64
    }

    /// The largest encoding [`encode`] can produce for these parameters (exact for
    /// Bloom, a tight worst case for GCS), so a receiver can bound its read.
    pub fn max_encoded_len(&self) -> usize {
        match self.kind {
            FilterKind::Gcs => gcs::GcsParams::from(self).max_encoded_len(),
            FilterKind::Bloom => bloom::BloomParams::from(self).encoded_len(),
        }
    }
}

/// Encodes the set of `element_len`-byte strings packed in `packed` (its length should
/// be `params.elements * element_len`). Deterministic: the same set, key and parameters
/// give the same bytes whatever the order of `packed`.
///
/// The element count is taken from `packed`; if it differs from `params.elements` the
/// receiver's [`SetFilter::decode`] rejects the result (a caller bug, caught loudly in
/// debug builds).
pub fn encode(params: &FilterParams, key: &[u8; 32], packed: &[u8], element_len: usize) -> Vec<u8> {
    let elements: Vec<&[u8]> = if element_len == 0 {
        Vec::new()
    } else {
        packed.chunks_exact(element_len).collect()
    };
    debug_assert_eq!(
        elements.len(),
        params.elements,
        "filter::encode: packed holds a different number of elements than params say"
    );
    debug_assert_eq!(packed.len() % element_len.max(1), 0);
    match params.kind {
        FilterKind::Gcs => gcs::encode(&gcs::GcsParams::from(params), key, &elements),
        FilterKind::Bloom => bloom::encode(&bloom::BloomParams::from(params), key, &elements),
    }
}

/// A decoded filter, ready for membership look-ups.
#[derive(Clone, Debug)]
pub struct SetFilter {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    Gcs(gcs::Gcs),
    Bloom(bloom::Bloom),
}

impl SetFilter {
    /// Parses a peer's filter. Rejects (never panics on) anything that is not a
    /// canonical encoding of exactly `params.elements` elements.
    pub fn decode(
        params: &FilterParams,
        key: &[u8; 32],
        bytes: &[u8],
    ) -> Result<Self, FilterError> {
        params.validate()?;
        let inner = match params.kind {
            FilterKind::Gcs => {
                Inner::Gcs(gcs::Gcs::decode(&gcs::GcsParams::from(params), key, bytes)?)
            }
            FilterKind::Bloom => Inner::Bloom(bloom::Bloom::decode(
                &bloom::BloomParams::from(params),
                key,
                bytes,
            )?),
        };
        Ok(Self { inner })
    }

    /// Whether `element` is (probably) in the set: never false for a member; true for a
    /// non-member with probability at most `2⁻⁴⁰ / max(queries, 1)`.
    pub fn contains(&self, element: &[u8]) -> bool {
        match &self.inner {
            Inner::Gcs(g) => g.contains(element),
            Inner::Bloom(b) => b.contains(element),
        }
    }
}

/// SHA-256 with `domain ‖ key` already absorbed. `domain` is padded with zeros to 32
/// bytes so the prefix is exactly one block and the midstate is reused per element.
#[derive(Clone)]
pub(crate) struct KeyedHash(Sha256);

impl KeyedHash {
    pub(crate) fn new(domain: &[u8], key: &[u8; 32]) -> Self {
        let mut d = [0u8; 32];
        let n = domain.len().min(32);
        d[..n].copy_from_slice(&domain[..n]);
        let mut h = Sha256::new();
        h.update(d);
        h.update(key);
        Self(h)
    }

    pub(crate) fn hash(&self, element: &[u8]) -> [u8; 32] {
        let mut h = self.0.clone();
        h.update(element);
        h.finalize().into()
    }
}

impl std::fmt::Debug for KeyedHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedHash { .. }")
    }
}

/// `ceil(log2(x))` for `x ≥ 1`.
pub(crate) fn ceil_log2(x: u64) -> u32 {
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SessionRng;

    fn random_set(rng: &mut SessionRng, n: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; n * len];
        rng.fill(&mut v);
        v
    }

    #[test]
    fn kind_names_and_codes() {
        for k in FilterKind::ALL {
            assert_eq!(FilterKind::from_name(k.name()), Some(k));
            assert_eq!(FilterKind::from_code(k.code()), Some(k));
        }
        assert_eq!(FilterKind::from_name("x"), None);
        assert_eq!(FilterKind::from_code(0), None);
    }

    #[test]
    fn round_trip_no_false_negatives_both_kinds() {
        let mut rng = SessionRng::from_seed([9; 32]);
        let key = [7u8; 32];
        for kind in FilterKind::ALL {
            for (n, q) in [
                (0, 0),
                (0, 5),
                (1, 0),
                (1, 1),
                (3, 1000),
                (1000, 1000),
                (5000, 1),
            ] {
                let params = FilterParams::new(kind, n, q);
                let set = random_set(&mut rng, n, 32);
                let bytes = encode(&params, &key, &set, 32);
                assert!(bytes.len() <= params.max_encoded_len(), "{kind:?} {n} {q}");
                if kind == FilterKind::Bloom {
                    assert_eq!(bytes.len(), params.max_encoded_len());
                }
                let f = SetFilter::decode(&params, &key, &bytes).unwrap();
                for e in set.chunks_exact(32) {
                    assert!(f.contains(e), "false negative {kind:?} n={n} q={q}");
                }
                let others = random_set(&mut rng, 200, 32);
                for e in others.chunks_exact(32) {
                    assert!(!f.contains(e));
                }
                // Order does not matter.
                let mut rev: Vec<u8> = set.chunks_exact(32).rev().flatten().copied().collect();
                if n == 0 {
                    rev.clear();
                }
                assert_eq!(encode(&params, &key, &rev, 32), bytes);
            }
        }
    }

    #[test]
    fn different_key_different_encoding() {
        let mut rng = SessionRng::from_seed([10; 32]);
        let set = random_set(&mut rng, 100, 33);
        for kind in FilterKind::ALL {
            let p = FilterParams::new(kind, 100, 100);
            assert_ne!(
                encode(&p, &[1; 32], &set, 33),
                encode(&p, &[2; 32], &set, 33)
            );
        }
    }

    #[test]
    fn unsupported_params_rejected_not_panicking() {
        for kind in FilterKind::ALL {
            let p = FilterParams::new(kind, MAX_COUNT + 1, 1);
            assert!(matches!(
                SetFilter::decode(&p, &[0; 32], &[]),
                Err(FilterError::Unsupported { .. })
            ));
            let p = FilterParams::new(kind, 1, usize::MAX);
            assert!(SetFilter::decode(&p, &[0; 32], &[]).is_err());
            // encode clamps instead of overflowing
            let _ = encode(&p, &[0; 32], &[1u8; 32], 32);
            let _ = FilterParams::new(kind, usize::MAX, usize::MAX).max_encoded_len();
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = SessionRng::from_seed([11; 32]);
        for kind in FilterKind::ALL {
            for n in [0usize, 1, 2, 10, 100] {
                let p = FilterParams::new(kind, n, 50);
                let max = p.max_encoded_len();
                for len in [0, 1, max.saturating_sub(1), max, max + 1, 2 * max + 3] {
                    for _ in 0..20 {
                        let mut b = vec![0u8; len];
                        rng.fill(&mut b);
                        let _ = SetFilter::decode(&p, &[3; 32], &b);
                    }
                    let _ = SetFilter::decode(&p, &[3; 32], &vec![0u8; len]);
                    let _ = SetFilter::decode(&p, &[3; 32], &vec![0xffu8; len]);
                }
            }
        }
    }

    #[test]
    fn ceil_log2_values() {
        assert_eq!(ceil_log2(0), 0);
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(3), 2);
        assert_eq!(ceil_log2(100_000), 17);
        assert_eq!(ceil_log2(1 << 32), 32);
    }
}
