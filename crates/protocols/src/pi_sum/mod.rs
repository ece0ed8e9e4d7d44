//! Private Intersection-Sum with Cardinality: the DDH protocol Google deployed (Ion,
//! Kreuter, Nergiz, Patel, Saxena, Seth, Raykova, Shanahan, Yung, "On Deploying Secure
//! Computing: Private Intersection-Sum-with-Cardinality", 2020; Sec. 3, Fig. 2) and its
//! variants (Sec. 3.4, App. G).
//!
//! P1 holds identifiers V; P2 holds pairs (w, t). Both learn |V ∩ W|; P2 learns the sum
//! of t over the intersection; nothing else leaks beyond the set sizes (Ion et al. 2020,
//! Theorems 1-2). Variants:
//!
//! * threshold: the party that computes the intersection aborts before any sum is
//!   computed if it is smaller than t; the other party learns only that it aborted;
//!   with segments, each segment with fewer than t matches is suppressed (neither its
//!   cardinality nor its sums reach P2), and the run aborts when every one is;
//! * reverse (Fig. 6): P1 learns the sum instead of P2 ([`reverse`]);
//! * segmented input: P1's items carry a segment; one cardinality and sum per segment;
//! * several value columns, and sums of squares so P2 gets the variance.
//!
//! The parties are [`forward::P1`], [`forward::P2`], [`reverse::P1`], [`reverse::P2`]:
//! [`Protocol`]s, generic over the group and the homomorphic scheme, each run inside an
//! [`Engine`] (participant 0 plays P1, participant 1 plays P2). [`new_party`] picks the
//! instantiation from a [`PiSumConfig`].

pub mod bloom;
mod common;
pub mod forward;
mod hello;
pub mod reverse;
pub mod rot;

use privset_crypto::ahe::elgamal::{self, ElGamal};
use privset_crypto::ahe::paillier::{self, Paillier};
use privset_crypto::ahe::rlwe::{self, Rlwe};
use privset_crypto::ahe::{ColumnBounds, HeId, SubsetSum};
use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::cwprf::{CwPrf, CwPrfId};
use privset_crypto::filter::FilterKind;
use privset_crypto::group::GroupId;
use privset_crypto::group::p256::{P256, P256Uncompressed};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SEED_LEN;

use crate::engine::{Engine, Protocol, Roster};
use crate::error::{InputError, ProtocolError};
use crate::input::Dataset;
use crate::party::OutputParty;
use crate::set_encoding::SetEncoding;
use crate::wire::{PartyId, ProtocolId};

pub use common::MAX_PUBLIC_KEY_LEN;
pub(crate) use hello::Hello;

pub const PROTOCOL: ProtocolId = ProtocolId::PiSum;

/// Message kinds of PI-Sum (docs/wire.md); the engine's hello, roster and alert use 0,
/// 0xFE and 0xFF.
pub mod kind {
    pub const ROUND1: u8 = 2;
    pub const ROUND2: u8 = 3;
    pub const ROUND3: u8 = 4;
    pub const ABORT: u8 = 5;
    pub const REVERSE1: u8 = 6;
    pub const REVERSE2: u8 = 7;
    pub const REVERSE3: u8 = 8;
    pub const BLOOM_KEY: u8 = 9;
    pub const BLOOM_FILTER: u8 = 10;
    pub const BLOOM_MEMBERSHIP: u8 = 11;
    pub const ROT_BASE: u8 = 12;
    pub const ROT_REPLY: u8 = 13;
    pub const ROT_QUERY: u8 = 14;
    pub const ROT_ANSWER: u8 = 15;

    pub fn name(kind: u8) -> &'static str {
        match kind {
            ROUND1 => "round 1 (P1's exponentiated items)",
            ROUND2 => "round 2 (Z, P2's exponentiated items and encrypted values)",
            ROUND3 => "round 3 (cardinality and encrypted sums)",
            ABORT => "threshold abort",
            REVERSE1 => "reverse round 1 (P2's items and encrypted values)",
            REVERSE2 => "reverse round 2 (doubly exponentiated, masked values; P1's items)",
            REVERSE3 => "reverse round 3 (cardinality, intersection indices, masked sums)",
            BLOOM_KEY => "Bloom protocol: P1's ElGamal key",
            BLOOM_FILTER => "Bloom protocol: a chunk of P1's encrypted filter",
            BLOOM_MEMBERSHIP => "Bloom protocol: P2's key, membership ciphertexts and values",
            ROT_BASE => "Random-OT protocol: P1's OPRF base message",
            ROT_REPLY => "Random-OT protocol: P2's OPRF base reply",
            ROT_QUERY => "Random-OT protocol: P1's OPRF rows and encrypted PRF values",
            ROT_ANSWER => {
                "Random-OT protocol: P2's re-masked values, PRF values and encrypted values"
            }
            _ => "unknown message",
        }
    }
}

/// Which of Ion et al. 2020's intersection-sum protocols a session runs. All three give
/// both parties the intersection size and P2 (P1 with the reverse variant) the sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PiSumProtocol {
    /// The deployed DDH protocol (Fig. 2), with every variant ([`forward`], [`reverse`]).
    #[default]
    Ddh,
    /// The Random-OT protocol (Fig. 3, Sec. 4.3.1): a batched OPRF on P1's cuckoo bins,
    /// the PRF values re-masked and shuffled by P2 ([`rot`]).
    Rot,
    /// The encrypted-Bloom-filter protocol (Fig. 4, Sec. 4.3.2): P1's filter bits under
    /// exponential ElGamal, P2's shuffled membership ciphertexts ([`bloom`]).
    Bloom,
}

impl PiSumProtocol {
    pub const ALL: [PiSumProtocol; 3] =
        [PiSumProtocol::Ddh, PiSumProtocol::Rot, PiSumProtocol::Bloom];

    pub fn name(self) -> &'static str {
        match self {
            PiSumProtocol::Ddh => "ddh",
            PiSumProtocol::Rot => "rot",
            PiSumProtocol::Bloom => "bloom",
        }
    }

    /// One-byte code in the hello.
    pub fn code(self) -> u8 {
        match self {
            PiSumProtocol::Ddh => 1,
            PiSumProtocol::Rot => 2,
            PiSumProtocol::Bloom => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.code() == code)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Which party: P1 holds identifiers, P2 holds identifiers with values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    P1,
    P2,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::P1 => "p1",
            Role::P2 => "p2",
        }
    }
    /// The participant index playing this role.
    pub fn id(self) -> PartyId {
        match self {
            Role::P1 => 0,
            Role::P2 => 1,
        }
    }
    /// The role of participant `id`.
    pub fn of(id: PartyId) -> Self {
        if id == 0 { Role::P1 } else { Role::P2 }
    }
    /// The session's participants as this role sees them.
    pub(crate) fn roster(self) -> Roster {
        Roster::pair(PROTOCOL, [Role::P1.name(), Role::P2.name()], self.id())
    }
}

/// Everything both parties must agree on, plus each party's local policy.
#[derive(Clone, Debug)]
pub struct PiSumConfig {
    /// Which protocol (Fig. 2, 3 or 4 of Ion et al. 2020).
    pub protocol: PiSumProtocol,
    /// The DDH part: a prime-order group, or the X25519 fast mode (the commutative
    /// weak PRF the set operations use; Chen et al. 2024, Sec. 7.5).
    pub group: CwPrfId,
    pub he: HeId,
    /// The Paillier key's modulus and Damgard-Jurik `s`, as configured; the key P2
    /// makes is [`PiSumConfig::paillier_params`].
    pub paillier: paillier::Params,
    pub elgamal: elgamal::Params,
    pub rlwe: rlwe::Params,
    /// How P2 sends the set Z of doubly exponentiated values back to P1.
    pub z_encoding: SetEncoding,
    /// Reverse variant (Ion et al. 2020, Fig. 6): P1 learns the sum.
    pub reverse: bool,
    /// Local policy of the party that computes the intersection (P1 forward, P2
    /// reverse): abort unless the intersection has at least this many items.
    pub threshold: Option<u64>,
    /// P2: also sum the squares of every value column (for the variance).
    pub sum_of_squares: bool,
    /// P2: every value is at most this (checked on input).
    pub max_value: u64,
    /// P2: every column's total is at most this; `None` = `max_value × items`, which
    /// can never wrap. Smaller bounds pack more values per ciphertext.
    pub max_sum: Option<u128>,
    /// Largest set size accepted from the peer (bounds memory).
    pub max_peer_items: u64,
}

impl PiSumConfig {
    /// The parameters of P2's Paillier key: the configured ones, except that the
    /// reverse variant always takes `s = 1`. It encrypts one value per ciphertext (P1
    /// shuffles them one by one, so nothing can be packed), and a larger `s` would only
    /// make every ciphertext `s + 1` times as long and every multiplication about
    /// `(s + 1)^2` times as slow: plain Paillier's plaintext space `Z_n` already holds
    /// every value, mask and sum (values and sums are below `2^128`, `n` at least
    /// `2^1023`). Security rests on the modulus, which stays as configured.
    pub fn paillier_params(&self) -> paillier::Params {
        if self.reverse {
            paillier::Params {
                s: 1,
                ..self.paillier
            }
        } else {
            self.paillier
        }
    }
}

impl Default for PiSumConfig {
    fn default() -> Self {
        Self {
            protocol: PiSumProtocol::Ddh,
            group: CwPrfId::Group(GroupId::Ristretto255),
            he: HeId::Paillier,
            paillier: paillier::Params::default(),
            elgamal: elgamal::Params::default(),
            rlwe: rlwe::Params::default(),
            z_encoding: SetEncoding::Filter(FilterKind::Gcs),
            reverse: false,
            threshold: None,
            sum_of_squares: false,
            max_value: u32::MAX as u64,
            max_sum: None,
            max_peer_items: 1 << 26,
        }
    }
}

/// One segment's result (segmented input).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SegmentResult {
    /// P1: the segment's label; P2: its index (P2 never sees the labels).
    pub segment: String,
    /// The segment's intersection size; `None` for P2 when the segment is suppressed.
    pub cardinality: Option<u64>,
    /// Per value column; only for the party entitled to sums, and never for a
    /// suppressed segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sums: Option<Vec<u128>>,
    /// The threshold variant withheld this segment from P2: fewer than the threshold
    /// matched, so P2 learns only that (docs/pi-sum.md, "Variants"). P1 still sees its
    /// cardinality.
    pub suppressed: bool,
}

/// The sums over the intersection of the entitled party, per value column, with (sums
/// of squares) the squares' sums and the population variance.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSums {
    pub sums: Vec<u128>,
    pub sums_of_squares: Option<Vec<u128>>,
    pub variance: Option<Vec<f64>>,
}

impl ColumnSums {
    /// Splits `totals`, the sum of every encrypted column over the intersection in the
    /// order of [`encrypted_columns`] (the value columns, then their squares), into
    /// sums, sums of squares and variance.
    fn from_totals(totals: Vec<u128>, value_columns: usize, cardinality: u64) -> Self {
        if totals.len() == value_columns {
            return Self {
                sums: totals,
                sums_of_squares: None,
                variance: None,
            };
        }
        let (plain, squares) = totals.split_at(value_columns.min(totals.len()));
        let variance = plain
            .iter()
            .zip(squares)
            .map(|(&s, &q)| {
                if cardinality == 0 {
                    0.0
                } else {
                    let n = cardinality as f64;
                    let mean = s as f64 / n;
                    (q as f64 / n - mean * mean).max(0.0)
                }
            })
            .collect();
        Self {
            sums: plain.to_vec(),
            sums_of_squares: Some(squares.to_vec()),
            variance: Some(variance),
        }
    }

    /// The sum, when there is exactly one value column.
    pub fn single(&self) -> Option<u128> {
        match self.sums.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }
}

/// What one PI-Sum party learns: one variant per outcome, each holding exactly what the
/// party is entitled to (every party learns the peer's set size).
#[derive(Clone, Debug, PartialEq)]
pub enum PiSumOutput {
    /// The party that computes the intersection but is not entitled to the sums (P1;
    /// P2 with the reverse variant): `|V ∩ W|` (per segment with segmented input), and
    /// whether its threshold stopped the run before any sum was computed (segmented:
    /// whether every segment was below it; see [`SegmentResult::suppressed`]).
    Cardinality {
        cardinality: u64,
        aborted: bool,
        segments: Option<Vec<SegmentResult>>,
        peer_items: u64,
    },
    /// The party entitled to the sums (P2; P1 with the reverse variant). With
    /// segments suppressed by the threshold, `cardinality` and `sums` cover the
    /// revealed segments only (a total over all would give a lone suppressed
    /// segment's values away by subtraction).
    Sums {
        cardinality: u64,
        sums: ColumnSums,
        segments: Option<Vec<SegmentResult>>,
        peer_items: u64,
    },
    /// The party told only that the threshold variant aborted the run.
    Aborted { peer_items: u64 },
}

impl PiSumOutput {
    /// The peer's set size.
    pub fn peer_items(&self) -> u64 {
        match self {
            PiSumOutput::Cardinality { peer_items, .. }
            | PiSumOutput::Sums { peer_items, .. }
            | PiSumOutput::Aborted { peer_items } => *peer_items,
        }
    }

    /// `|V ∩ W|`, unless the party was told only that the run aborted.
    pub fn cardinality(&self) -> Option<u64> {
        match self {
            PiSumOutput::Cardinality { cardinality, .. }
            | PiSumOutput::Sums { cardinality, .. } => Some(*cardinality),
            PiSumOutput::Aborted { .. } => None,
        }
    }

    /// True when the threshold variant stopped the run.
    pub fn aborted(&self) -> bool {
        match self {
            PiSumOutput::Cardinality { aborted, .. } => *aborted,
            PiSumOutput::Sums { .. } => false,
            PiSumOutput::Aborted { .. } => true,
        }
    }

    /// The sums, for the party entitled to them.
    pub fn sums(&self) -> Option<&ColumnSums> {
        match self {
            PiSumOutput::Sums { sums, .. } => Some(sums),
            PiSumOutput::Cardinality { .. } | PiSumOutput::Aborted { .. } => None,
        }
    }

    /// Per-segment results (segmented input).
    pub fn segments(&self) -> Option<&[SegmentResult]> {
        match self {
            PiSumOutput::Cardinality { segments, .. } | PiSumOutput::Sums { segments, .. } => {
                segments.as_deref()
            }
            PiSumOutput::Aborted { .. } => None,
        }
    }

    /// The output of the party entitled to the sums (see [`ColumnSums::from_totals`]).
    pub fn with_sums(
        cardinality: u64,
        totals: Vec<u128>,
        value_columns: usize,
        segments: Option<Vec<SegmentResult>>,
        peer_items: u64,
    ) -> Self {
        PiSumOutput::Sums {
            cardinality,
            sums: ColumnSums::from_totals(totals, value_columns, cardinality),
            segments,
            peer_items,
        }
    }
}

/// Builds the party for `role` with the group and scheme named in `config`.
///
/// `input`: P1's identifiers (with optional segments) or P2's identifiers and value
/// columns, already validated by [`crate::input::build_dataset`]. `seed` determines all
/// of the party's randomness (see `SessionRng`); keep it private. A front end drives
/// the party (`party.as_mut()` is the `Party` a driver takes) and then takes its output
/// with `party.into_output()`.
pub fn new_party(
    role: Role,
    config: &PiSumConfig,
    input: Dataset,
    seed: [u8; SEED_LEN],
) -> Result<Box<dyn OutputParty<PiSumOutput>>, ProtocolError> {
    validate(role, config, &input)?;
    fn engine<P: Protocol<Output = PiSumOutput> + 'static>(
        protocol: P,
        seed: [u8; SEED_LEN],
    ) -> Result<Box<dyn OutputParty<PiSumOutput>>, ProtocolError> {
        Ok(Box::new(Engine::new(protocol, seed)?))
    }
    fn build<C: CwPrf, H: HeChoice>(
        role: Role,
        config: &PiSumConfig,
        input: Dataset,
        seed: [u8; SEED_LEN],
    ) -> Result<Box<dyn OutputParty<PiSumOutput>>, ProtocolError> {
        let config = config.clone();
        match (config.protocol, role, config.reverse) {
            (PiSumProtocol::Ddh, Role::P1, false) => {
                engine(forward::P1::<C, H>::new(config, input), seed)
            }
            (PiSumProtocol::Ddh, Role::P2, false) => {
                engine(forward::P2::<C, H>::new(config, input), seed)
            }
            (PiSumProtocol::Ddh, Role::P1, true) => {
                engine(reverse::P1::<C, H>::new(config, input), seed)
            }
            (PiSumProtocol::Ddh, Role::P2, true) => {
                engine(reverse::P2::<C, H>::new(config, input), seed)
            }
            (PiSumProtocol::Rot, Role::P1, _) => engine(rot::P1::<H>::new(config, input), seed),
            (PiSumProtocol::Rot, Role::P2, _) => engine(rot::P2::<H>::new(config, input), seed),
            (PiSumProtocol::Bloom, Role::P1, _) => engine(bloom::P1::<H>::new(config, input), seed),
            (PiSumProtocol::Bloom, Role::P2, _) => engine(bloom::P2::<H>::new(config, input), seed),
        }
    }
    fn with_he<C: CwPrf>(
        role: Role,
        config: &PiSumConfig,
        input: Dataset,
        seed: [u8; SEED_LEN],
    ) -> Result<Box<dyn OutputParty<PiSumOutput>>, ProtocolError> {
        match config.he {
            HeId::Paillier => build::<C, Paillier>(role, config, input, seed),
            HeId::ElGamal => build::<C, ElGamal>(role, config, input, seed),
            HeId::Rlwe => build::<C, Rlwe>(role, config, input, seed),
        }
    }
    match config.group {
        CwPrfId::Group(GroupId::Ristretto255) => with_he::<Ristretto255>(role, config, input, seed),
        CwPrfId::Group(GroupId::P256Compressed) => with_he::<P256>(role, config, input, seed),
        CwPrfId::Group(GroupId::P256) => with_he::<P256Uncompressed>(role, config, input, seed),
        CwPrfId::X25519 => with_he::<X25519>(role, config, input, seed),
    }
}

/// Checks a party's configuration and input before anything is sent.
pub fn validate(role: Role, config: &PiSumConfig, input: &Dataset) -> Result<(), ProtocolError> {
    // Key generation refuses bad parameters by panicking: say so before anything runs.
    let params = match config.he {
        HeId::Paillier => config.paillier_params().validate(),
        HeId::ElGamal => config.elgamal.validate(),
        HeId::Rlwe => config.rlwe.validate(),
    };
    params.map_err(|e| ProtocolError::Config(e.to_string()))?;
    if config.reverse && config.he == HeId::Rlwe {
        // The reverse variant shuffles values one by one: one RLWE ciphertext (about
        // 110 KB) per item (crates/crypto/src/ahe/rlwe.rs, "Reverse variant").
        return Err(ProtocolError::Config(
            "the reverse variant needs --values-he paillier or elgamal: it shuffles values one by one, \
             and an RLWE ciphertext per item would cost about 110 KB"
                .into(),
        ));
    }
    if config.protocol != PiSumProtocol::Ddh {
        // Ion et al. 2020 define the reverse variant (App. G) and segmented input
        // (Sec. 3.4) for the DDH protocol only (docs/pi-sum.md says why).
        if config.reverse {
            return Err(ProtocolError::Config(format!(
                "the reverse variant exists for the ddh protocol only, not {}",
                config.protocol.name()
            )));
        }
        if input.segment_of.is_some() {
            return Err(ProtocolError::Config(format!(
                "segmented input works with the ddh protocol only, not {}",
                config.protocol.name()
            )));
        }
    }
    match role {
        Role::P1 => {
            if !input.columns.is_empty() {
                return Err(ProtocolError::Config("P1 has no value columns".into()));
            }
            if config.reverse && input.segment_of.is_some() {
                return Err(ProtocolError::Config(
                    "segmented input works with the forward protocol only (P1 must compute the per-segment intersections)"
                        .into(),
                ));
            }
            if input.segment_names.len() > hello::MAX_SEGMENTS {
                return Err(ProtocolError::Config(format!(
                    "{} segments; at most {} are supported",
                    input.segment_names.len(),
                    hello::MAX_SEGMENTS
                )));
            }
        }
        Role::P2 => {
            if input.columns.is_empty() {
                return Err(ProtocolError::Config(
                    "P2 needs at least one value column".into(),
                ));
            }
            if input.columns.len() > hello::MAX_COLUMNS {
                return Err(ProtocolError::Config(format!(
                    "at most {} value columns",
                    hello::MAX_COLUMNS
                )));
            }
            if input.segment_of.is_some() {
                return Err(ProtocolError::Config(
                    "only P1's input can be segmented".into(),
                ));
            }
            let max_sum = column_max_sum(config, input.ids.len());
            for (c, col) in input.columns.iter().enumerate() {
                let sum: u128 = col.iter().map(|&v| v as u128).sum();
                if sum > max_sum {
                    return Err(InputError::SumTooLarge {
                        column: input.column_names[c].clone(),
                        sum,
                        bound: max_sum,
                    }
                    .into());
                }
            }
            if config.he == HeId::ElGamal {
                let bits = config.elgamal.max_table_bits + elgamal::MAX_GIANT_BITS;
                let hello = Hello::new(Role::P2, config, input);
                // Every encrypted column, squared ones included, must stay decryptable.
                if let Some(b) = encrypted_columns(&hello)
                    .iter()
                    .find(|b| b.max_sum >> bits != 0)
                {
                    return Err(ProtocolError::Config(format!(
                        "exponential ElGamal decrypts sums below 2^{bits} only (Ion et al. 2020, App. B.2), but a column's sum \
                         bound is {} ({} items, value bound {}{}); pass a smaller --sum-bound (or --value-bound), or use \
                         --values-he paillier",
                        b.max_sum,
                        input.ids.len(),
                        config.max_value,
                        if config.sum_of_squares {
                            ", sums of squares included"
                        } else {
                            ""
                        }
                    )));
                }
            }
            if config.sum_of_squares && config.max_value > u32::MAX as u64 {
                return Err(ProtocolError::Config(
                    "--sum-of-squares needs a value bound below 2^32".into(),
                ));
            }
        }
    }
    if input.ids.len() as u64 > u32::MAX as u64 {
        return Err(ProtocolError::Config(
            "at most 2^32 - 1 items per party".into(),
        ));
    }
    Ok(())
}

/// The agreed bound on a column's total.
pub fn column_max_sum(config: &PiSumConfig, items: usize) -> u128 {
    config
        .max_sum
        .unwrap_or(config.max_value as u128 * items.max(1) as u128)
}

/// Bounds of every encrypted column, in order: the value columns, then (with sums of
/// squares) one squared column per value column. Derived from public numbers only.
pub(crate) fn encrypted_columns(hello_p2: &Hello) -> Vec<ColumnBounds> {
    column_bounds(
        hello_p2.items as usize,
        hello_p2.value_columns as usize,
        hello_p2.max_value,
        hello_p2.max_sum,
        hello_p2.sum_of_squares(),
    )
}

/// Most value columns P2 may announce.
pub const MAX_VALUE_COLUMNS: usize = hello::MAX_COLUMNS;

/// Bounds of every encrypted column of `items` items, as [`encrypted_columns`] lists
/// them, from P2's announced value bound, column-total bound and squares flag.
pub fn column_bounds(
    items: usize,
    value_columns: usize,
    max_value: u64,
    max_sum: u128,
    sum_of_squares: bool,
) -> Vec<ColumnBounds> {
    let plain = ColumnBounds {
        items,
        max_value,
        max_sum,
    };
    let mut cols = vec![plain; value_columns];
    if sum_of_squares {
        // Saturating: the bounds come from the peer's hello, and a wrapped product
        // would be a bound below the real one (found by fuzz/fuzz_targets/hello.rs).
        let mv = max_value as u128;
        let mv2 = mv.saturating_mul(mv);
        let squared = ColumnBounds {
            items,
            max_value: mv2.min(u64::MAX as u128) as u64,
            max_sum: mv
                .saturating_mul(max_sum)
                .min((items as u128).saturating_mul(mv2)),
        };
        cols.extend(std::iter::repeat_n(squared, value_columns));
    }
    cols
}

/// P2's plaintext columns in the order of [`encrypted_columns`], from its value columns.
pub fn plaintext_columns(config: &PiSumConfig, columns: &[Vec<u64>]) -> Vec<Vec<u64>> {
    let mut cols = columns.to_vec();
    if config.sum_of_squares {
        for c in columns {
            cols.push(c.iter().map(|&v| v * v).collect());
        }
    }
    cols
}

/// How a homomorphic scheme's parameters come out of the config.
pub trait HeChoice: SubsetSum {
    /// The parameters of P2's key, from the settings and P2's hello (its public column
    /// bounds), so both parties derive the same.
    fn params(config: &PiSumConfig, p2: &Hello) -> Self::Params;
    /// Upper bound of one ciphertext's encoding under these parameters, for sizing
    /// what may be received before the public key is known.
    fn max_ciphertext_len(params: &Self::Params) -> usize;
    /// Upper bound of a packed column's bytes with these bounds, before the key is known
    /// (at most one ciphertext per item; packing schemes may say less).
    fn max_column_len(params: &Self::Params, bounds: &ColumnBounds) -> usize {
        bounds
            .items
            .saturating_mul(Self::max_ciphertext_len(params))
    }
}

impl HeChoice for Paillier {
    fn params(config: &PiSumConfig, _: &Hello) -> paillier::Params {
        config.paillier_params()
    }
    fn max_ciphertext_len(params: &paillier::Params) -> usize {
        (params.s as usize + 1) * (params.modulus_bits as usize).div_ceil(8)
    }
}

/// Ring-LWE (Ion et al. 2020, App. B.3) with the smallest parameters that hold P2's
/// announced bounds at 128-bit security ([`rlwe::Params::for_columns`]: a modulus sized to
/// the sums, `n = 8192` when `n = 4096` would need limbs); the configured parameters
/// when no such set exists (the bounds are then refused with a clear error).
impl HeChoice for Rlwe {
    fn params(config: &PiSumConfig, p2: &Hello) -> rlwe::Params {
        rlwe::Params::for_columns(&encrypted_columns(p2)).unwrap_or_else(|_| config.rlwe.clone())
    }
    fn max_ciphertext_len(params: &rlwe::Params) -> usize {
        params.ciphertext_len()
    }
    fn max_column_len(params: &rlwe::Params, bounds: &ColumnBounds) -> usize {
        Rlwe::max_column_len(params, bounds)
    }
}

impl HeChoice for ElGamal {
    fn params(config: &PiSumConfig, _: &Hello) -> elgamal::Params {
        config.elgamal
    }
    fn max_ciphertext_len(_: &elgamal::Params) -> usize {
        64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's smudged Paillier randomizers stay below the `2^40` the
    /// masking party's slack is sized for. Reverse: one per item (below `2^32`) and
    /// encrypted column (value columns and their squares). Forward: one per segment,
    /// encrypted column and slot, the slots of a ciphertext fewer than the plaintext's
    /// bits over 41 (the narrowest slot), the plaintext shorter than the longest key
    /// a peer may send.
    #[test]
    fn smudged_randomizers_per_run_fit_the_paillier_slack() {
        let columns = 2 * MAX_VALUE_COLUMNS as u128;
        let reverse = u32::MAX as u128 * columns;
        let slots = (MAX_PUBLIC_KEY_LEN as u128 * 8) / 41;
        let forward = hello::MAX_SEGMENTS as u128 * columns * slots;
        let budget = 1u128 << paillier::MAX_SMUDGED_OUTPUTS_BITS;
        assert!(reverse < budget && forward < budget, "{reverse} {forward}");
    }

    /// A P2 hello announcing sums of squares with the largest value and total bounds
    /// (the fuzz target `hello` found the overflow): the squared column's bounds
    /// saturate instead of wrapping to a bound below the real one.
    #[test]
    fn squared_column_bounds_saturate_on_a_hostile_hello() {
        let hello = Hello {
            protocol: PiSumProtocol::Ddh,
            flags: 2,
            group: CwPrfId::Group(GroupId::P256Compressed),
            he: HeId::ElGamal,
            z: SetEncoding::Filter(FilterKind::Gcs),
            he_modulus_bits: 0,
            he_s: 0,
            items: 5,
            value_columns: 2,
            max_value: 1000,
            max_sum: u128::MAX / 3,
            segments: vec![],
        };
        let cols = encrypted_columns(&hello);
        assert_eq!(cols.len(), 4);
        assert_eq!(cols[2].max_value, 1_000_000);
        assert_eq!(cols[2].max_sum, 5_000_000);
        let hello = Hello {
            max_value: u64::MAX,
            max_sum: u128::MAX,
            items: u64::MAX,
            ..hello
        };
        let cols = encrypted_columns(&hello);
        assert_eq!(cols[3].max_value, u64::MAX);
        assert_eq!(cols[3].max_sum, u128::MAX);
    }
}
