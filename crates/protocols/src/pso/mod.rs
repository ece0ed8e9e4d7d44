//! Private set operations from the multi-query reverse private membership test
//! (Chen et al. 2024): PSI, PSI-cardinality, PSI-card-sum, PSU, card-secret-sharing (Fig. 7)
//! and private-ID (Sec. 6.2, Fig. 8).
//!
//! Roles follow Fig. 7. The **receiver** (P1) holds the set `Y` and plays the mqRPMT
//! server: it learns the indicator bit `e_i = [x_i in Y]` for each of the sender's
//! (shuffled) items and, through oblivious transfer on those bits, the operation's
//! output. The **sender** (P2) holds `X` (and, for card-sum, a value per item) and plays
//! the mqRPMT client: it learns nothing but the receiver's set size, except where the
//! operation gives it an output (card-sum: the cardinality and the sum; psi-share: its
//! shares). Each party learns the other's set size; docs/pso/*.md tabulate the leakage.
//!
//! ```text
//! receiver (Y)                                   sender (X, values)
//!  hello ------------------------------------>  <- hello
//!  R1: [OT base A] F_k1(H(y)) for y in Y  ---->
//!                                           <-- S1: F_k2(H(x)) for the shuffled X
//!                                               (computed while the receiver computes R1)
//!  F_k1(F_k2(H(x_i)))                       <-- S2: [OT base reply] F_k2(F_k1(H(y)))
//!                                               shuffled (list) or as a Bloom / GCS filter
//!  e_i = [F_k1(F_k2(H(x_i))) in S2's set]
//!  R2: OT extension on choices e ------------->
//!                                           <-- S3: one masked payload per item
//!  R3 (card-sum only): |e|, masked sum ------>
//! ```
//!
//! The permuted-OPRF construction (Figs. 4-6) has exactly the same messages: R1 carries
//! `H(y)^s`, S1 `H(x)^k` and S2 the permuted `H(y)^(sk)`; the receiver strips `s` from the
//! latter and tests `H(x_i)^k` against the result. Only the receiver's test differs.

mod core;
pub(crate) use core::bad_ot;
pub mod hello;
pub mod mqrpmt;
pub mod private_id;
pub mod receiver;
pub mod sender;
pub mod transfer;
pub mod vole_psi;

use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::cwprf::{CwPrf, CwPrfId};
use privset_crypto::filter::FilterKind;
use privset_crypto::group::GroupId;
use privset_crypto::group::p256::{P256, P256Uncompressed};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SEED_LEN;

use crate::engine::Engine;
use crate::error::{InputError, ProtocolError};
use crate::input::Dataset;
use crate::party::OutputParty;
use crate::set_encoding::SetEncoding;
use crate::wire::ProtocolId;

/// Longest identifier accepted by the operations that transfer identifiers (psu,
/// psi-share): bounds the fixed payload width.
pub const MAX_ITEM_LEN: usize = 1024;

/// The set operations of Chen et al. 2024, Fig. 7 and Sec. 6.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// The receiver learns `X ∩ Y`.
    Psi,
    /// The receiver learns `|X ∩ Y|`.
    PsiCard,
    /// Both learn `|X ∩ Y|`; the sender (value holder) learns the sum of its values over
    /// the intersection (the standard functionality of Ion et al. 2020).
    PsiCardSum,
    /// The receiver learns `X ∪ Y`.
    Psu,
    /// Both get XOR shares of every intersection element; the receiver learns `|X ∩ Y|`.
    PsiShare,
    /// Both get a pseudorandom identifier per own item and the identifiers of `X ∪ Y`.
    PrivateId,
}

impl Operation {
    pub const ALL: [Operation; 6] = [
        Operation::Psi,
        Operation::PsiCard,
        Operation::PsiCardSum,
        Operation::Psu,
        Operation::PsiShare,
        Operation::PrivateId,
    ];

    pub fn protocol(self) -> ProtocolId {
        match self {
            Operation::Psi => ProtocolId::Psi,
            Operation::PsiCard => ProtocolId::PsiCard,
            Operation::PsiCardSum => ProtocolId::PsiCardSum,
            Operation::Psu => ProtocolId::Psu,
            Operation::PsiShare => ProtocolId::PsiShare,
            Operation::PrivateId => ProtocolId::PrivateId,
        }
    }

    /// The command-line and wire name.
    pub fn name(self) -> &'static str {
        self.protocol().name()
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }

    /// True when the receiver needs oblivious transfer after the mqRPMT.
    pub fn uses_ot(self) -> bool {
        !matches!(self, Operation::PsiCard)
    }
}

/// The two roles of Fig. 7.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PsoRole {
    /// P1: holds `Y`, plays the mqRPMT server and the OT receiver.
    Receiver,
    /// P2: holds `X` (and values), plays the mqRPMT client and the OT sender.
    Sender,
}

impl PsoRole {
    pub fn name(self) -> &'static str {
        match self {
            PsoRole::Receiver => "receiver",
            PsoRole::Sender => "sender",
        }
    }
    pub fn code(self) -> u8 {
        match self {
            PsoRole::Receiver => 1,
            PsoRole::Sender => 2,
        }
    }
}

/// Which mqRPMT construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Construction {
    /// From a commutative weak PRF (Sec. 4, Fig. 3).
    Cwprf,
    /// From a permuted OPRF (Sec. 5, Figs. 4-6); needs a prime-order group.
    Poprf,
    /// Not an mqRPMT: psi from silent VOLE and an OKVS (Raghuraman, Rindal, CCS 2022,
    /// Fig. 4; [`vole_psi`]). Symmetric-key work only; the group setting is unused.
    Vole,
}

impl Construction {
    pub const ALL: [Construction; 3] =
        [Construction::Cwprf, Construction::Poprf, Construction::Vole];

    /// The command-line name (`--mqrpmt`).
    pub fn name(self) -> &'static str {
        match self {
            Construction::Cwprf => "cwprf",
            Construction::Poprf => "poprf",
            Construction::Vole => "vole",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
    pub fn code(self) -> u8 {
        match self {
            Construction::Cwprf => 1,
            Construction::Poprf => 2,
            Construction::Vole => 3,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }
}

impl Construction {
    /// The construction an operation runs when none is asked for: the cheaper one under
    /// Ion et al. 2020's cost model (Table 1's prices) at 2^16 to 2^20 items, as measured
    /// (docs/benchmarks.md): vole for psi, where it costs a fraction of the CPU and of the
    /// bytes of any Diffie-Hellman construction; the cwPRF mqRPMT for the others, which
    /// have no VOLE construction yet.
    pub fn default_for(operation: Operation) -> Self {
        match operation {
            Operation::Psi => Construction::Vole,
            _ => Construction::Cwprf,
        }
    }

    /// True for the Diffie-Hellman constructions, whose group and last message are
    /// settings (the VOLE construction has neither).
    pub fn is_diffie_hellman(self) -> bool {
        self != Construction::Vole
    }
}

/// How the sender returns the doubly-evaluated receiver set in S2 (Sec. 4.3). Every
/// choice hides the order of the receiver's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastMessage {
    /// A shuffled list, or an order-hiding filter (Bloom as in the paper, or GCS,
    /// smaller) with a false positive rate of 2^-40 over all of the receiver's tests.
    Set(SetEncoding),
    /// psi only: a short tag of each re-evaluated receiver element, in the receiver's own
    /// order, so the receiver tests its own items and no OT follows. This is the classic
    /// DH-PSI of Meadows / Huberman et al. rather than Fig. 7's mqRPMT + OT: same leakage
    /// (the receiver learns X ∩ Y, the sender |Y|), fewer bytes (no OT, a tag of
    /// 40 + log2(n1) + log2(n2) bits per receiver item instead of a filter and an OT).
    Ordered,
}

impl LastMessage {
    /// The shuffled list.
    pub const LIST: LastMessage = LastMessage::Set(SetEncoding::List);

    /// Wire code of [`LastMessage::Ordered`] (the set encodings use theirs).
    const ORDERED_CODE: u8 = 16;

    pub fn name(self) -> &'static str {
        match self {
            LastMessage::Set(e) => e.name(),
            LastMessage::Ordered => "ordered",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ordered" => Some(LastMessage::Ordered),
            _ => SetEncoding::from_name(name).map(LastMessage::Set),
        }
    }
    pub fn code(self) -> u8 {
        match self {
            LastMessage::Set(e) => e.code(),
            LastMessage::Ordered => Self::ORDERED_CODE,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            Self::ORDERED_CODE => Some(LastMessage::Ordered),
            _ => SetEncoding::from_code(code).map(LastMessage::Set),
        }
    }
}

/// Everything both parties must agree on, plus each party's local policy.
#[derive(Clone, Debug)]
pub struct PsoConfig {
    pub operation: Operation,
    pub cwprf: CwPrfId,
    pub construction: Construction,
    pub last_message: LastMessage,
    /// psi-card-sum sender: every value is at most this (checked on input).
    pub max_value: u64,
    /// Largest set size accepted from the peer (bounds memory).
    pub max_peer_items: u64,
}

impl PsoConfig {
    /// `operation` with every setting at its default (what [`PsoChoices::resolve`] gives
    /// when nothing is asked for).
    pub fn new(operation: Operation) -> Self {
        Self {
            operation,
            cwprf: CwPrfId::Group(GroupId::Ristretto255),
            construction: Construction::default_for(operation),
            last_message: LastMessage::Set(SetEncoding::Filter(FilterKind::Bloom)),
            max_value: u32::MAX as u64,
            max_peer_items: 1 << 26,
        }
    }

    /// True when an OT follows the mqRPMT (every operation but psi-card, and psi with
    /// the ordered last message).
    pub fn uses_ot(&self) -> bool {
        self.operation.uses_ot() && self.last_message != LastMessage::Ordered
    }
}

/// A user's set-operation settings as given, before defaults: what the CLI's flags and
/// Python's keyword arguments carry (`None` = not asked for). [`PsoChoices::resolve`] is
/// the one place the defaults and the rules between settings live, so that every front
/// end runs the same protocol for the same words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsoChoices {
    pub construction: Option<Construction>,
    pub cwprf: Option<CwPrfId>,
    pub last_message: Option<LastMessage>,
    pub max_value: Option<u64>,
    pub max_peer_items: Option<u64>,
}

impl PsoChoices {
    /// The settings of `operation`: each one not asked for takes its default
    /// ([`PsoConfig::new`]). The construction's default is
    /// [`Construction::default_for`], except that a group or last message asked for
    /// names a Diffie-Hellman protocol, so it then defaults to the cwPRF mqRPMT: a
    /// command written before vole was psi's default keeps its meaning. The same settings
    /// with `--mqrpmt vole` are refused rather than ignored.
    pub fn resolve(&self, operation: Operation) -> Result<PsoConfig, ProtocolError> {
        let defaults = PsoConfig::new(operation);
        let asked_dh = [
            self.cwprf.map(|g| format!("--group {}", g.name())),
            self.last_message
                .map(|m| format!("--last-message {}", m.name())),
        ]
        .into_iter()
        .flatten()
        .next();
        let construction = match (self.construction, &asked_dh) {
            (Some(c), _) => c,
            (None, Some(_)) => Construction::Cwprf,
            (None, None) => Construction::default_for(operation),
        };
        if let (false, Some(setting)) = (construction.is_diffie_hellman(), asked_dh) {
            return Err(ProtocolError::Config(format!(
                "{setting} is a setting of the Diffie-Hellman constructions (--mqrpmt cwprf or \
                 poprf); --mqrpmt vole has no group and no last message: drop {setting}"
            )));
        }
        Ok(PsoConfig {
            operation,
            construction,
            cwprf: self.cwprf.unwrap_or(defaults.cwprf),
            last_message: self.last_message.unwrap_or(defaults.last_message),
            max_value: self.max_value.unwrap_or(defaults.max_value),
            max_peer_items: self.max_peer_items.unwrap_or(defaults.max_peer_items),
        })
    }
}

/// One row of a secret-shared intersection (psi-share): the position in the sender's
/// shuffled order, and this party's XOR share of the encoded element (see
/// [`transfer::encode_item`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareRow {
    pub index: u64,
    pub share: Vec<u8>,
}

/// private-ID output: an identifier for each own item (in input order) and the
/// identifiers of the union, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivateIdTable {
    pub own: Vec<[u8; private_id::ID_LEN]>,
    pub union: Vec<[u8; private_id::ID_LEN]>,
}

/// What one set-operation party learns: one variant per operation and role, each
/// holding exactly what that party is entitled to (every party learns the peer's set
/// size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PsoOutput {
    /// psi, receiver: `X ∩ Y`, in its own input order.
    Intersection {
        items: Vec<Vec<u8>>,
        peer_items: u64,
    },
    /// psi-card (and psi-card-sum), receiver: `|X ∩ Y|`.
    Cardinality { cardinality: u64, peer_items: u64 },
    /// psi-card-sum, sender: `|X ∩ Y|` and the sum of its values over the intersection.
    CardinalitySum {
        cardinality: u64,
        sum: u128,
        peer_items: u64,
    },
    /// psu, receiver: `X ∪ Y` (its own items first, in input order).
    Union {
        items: Vec<Vec<u8>>,
        peer_items: u64,
    },
    /// psi-share, receiver: `|X ∩ Y|` and its share of each intersection element.
    ReceiverShares {
        cardinality: u64,
        rows: Vec<ShareRow>,
        peer_items: u64,
    },
    /// psi-share, sender: its share at every position (the receiver's hold the rest).
    SenderShares {
        rows: Vec<ShareRow>,
        peer_items: u64,
    },
    /// private-id, both: the identifier table.
    PrivateId {
        table: PrivateIdTable,
        peer_items: u64,
    },
    /// psi, psi-card and psu, sender: the receiver's set size only.
    PeerSize { peer_items: u64 },
}

/// The row table of an output, as the front ends write or return it.
#[derive(Clone, Copy, Debug)]
pub enum Rows<'a> {
    /// Identifiers: the intersection (psi) or the union (psu).
    Items(&'a [Vec<u8>]),
    /// psi-share rows.
    Shares(&'a [ShareRow]),
    /// The private-ID table.
    PrivateId(&'a PrivateIdTable),
}

impl Rows<'_> {
    /// Rows in the table (for private-ID, one per union identifier).
    pub fn len(&self) -> usize {
        match self {
            Rows::Items(items) => items.len(),
            Rows::Shares(rows) => rows.len(),
            Rows::PrivateId(table) => table.union.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PsoOutput {
    /// The peer's set size (revealed by every operation).
    pub fn peer_items(&self) -> u64 {
        match self {
            PsoOutput::Intersection { peer_items, .. }
            | PsoOutput::Cardinality { peer_items, .. }
            | PsoOutput::CardinalitySum { peer_items, .. }
            | PsoOutput::Union { peer_items, .. }
            | PsoOutput::ReceiverShares { peer_items, .. }
            | PsoOutput::SenderShares { peer_items, .. }
            | PsoOutput::PrivateId { peer_items, .. }
            | PsoOutput::PeerSize { peer_items } => *peer_items,
        }
    }

    /// `|X ∩ Y|`, for the parties that learn it.
    pub fn cardinality(&self) -> Option<u64> {
        match self {
            PsoOutput::Intersection { items, .. } => Some(items.len() as u64),
            PsoOutput::Cardinality { cardinality, .. }
            | PsoOutput::CardinalitySum { cardinality, .. }
            | PsoOutput::ReceiverShares { cardinality, .. } => Some(*cardinality),
            PsoOutput::Union { .. }
            | PsoOutput::SenderShares { .. }
            | PsoOutput::PrivateId { .. }
            | PsoOutput::PeerSize { .. } => None,
        }
    }

    /// The sum over the intersection (psi-card-sum sender).
    pub fn sum(&self) -> Option<u128> {
        match self {
            PsoOutput::CardinalitySum { sum, .. } => Some(*sum),
            _ => None,
        }
    }

    /// The output's row table, if it has one.
    pub fn rows(&self) -> Option<Rows<'_>> {
        match self {
            PsoOutput::Intersection { items, .. } | PsoOutput::Union { items, .. } => {
                Some(Rows::Items(items))
            }
            PsoOutput::ReceiverShares { rows, .. } | PsoOutput::SenderShares { rows, .. } => {
                Some(Rows::Shares(rows))
            }
            PsoOutput::PrivateId { table, .. } => Some(Rows::PrivateId(table)),
            PsoOutput::Cardinality { .. }
            | PsoOutput::CardinalitySum { .. }
            | PsoOutput::PeerSize { .. } => None,
        }
    }
}

/// A party of any set operation, its output taken once it finished.
pub type PsoParty = Box<dyn OutputParty<PsoOutput>>;

/// Checks a party's settings and input before anything is sent.
pub fn validate(role: PsoRole, config: &PsoConfig, input: &Dataset) -> Result<(), ProtocolError> {
    if config.construction == Construction::Vole && config.operation != Operation::Psi {
        return Err(ProtocolError::Config(format!(
            "--mqrpmt vole runs psi (Raghuraman-Rindal 2022); {} runs on cwprf or poprf",
            config.operation.name()
        )));
    }
    // vole has no last message of this kind: its tags are the sender's (see `vole_psi`).
    if config.last_message == LastMessage::Ordered
        && config.construction != Construction::Vole
        && (config.operation != Operation::Psi || config.construction != Construction::Cwprf)
    {
        return Err(ProtocolError::Config(format!(
            "--last-message ordered shows the receiver which of its own items match: it is for psi with --mqrpmt cwprf only, not {} with {}",
            config.operation.name(),
            config.construction.name()
        )));
    }
    if config.construction == Construction::Poprf {
        if !config.cwprf.is_permutation() {
            return Err(ProtocolError::Config(format!(
                "--mqrpmt poprf needs a prime-order group (a commutative weak PRP); {} is not one (Chen et al. 2024, Sec. 5.3)",
                config.cwprf.name()
            )));
        }
        if config.last_message != LastMessage::LIST {
            return Err(ProtocolError::Config(
                "--mqrpmt poprf sends the permuted list: --last-message must be list (the receiver must un-mask every element, Chen et al. 2024, Sec. 5.3)".into(),
            ));
        }
        if config.operation == Operation::PrivateId {
            return Err(ProtocolError::Config(
                "private-id runs its distributional PSU on the cwPRF mqRPMT (Chen et al. 2024, Sec. 6.2); use --mqrpmt cwprf".into(),
            ));
        }
    }
    let needs_values = config.operation == Operation::PsiCardSum && role == PsoRole::Sender;
    if needs_values && input.columns.len() != 1 {
        return Err(InputError::Other(format!(
            "psi-card-sum: the sender needs exactly one value column (got {})",
            input.columns.len()
        ))
        .into());
    }
    if !needs_values && !input.columns.is_empty() {
        return Err(InputError::Other(format!(
            "{} takes no value column for the {}",
            config.operation.name(),
            role.name()
        ))
        .into());
    }
    if matches!(config.operation, Operation::Psu | Operation::PsiShare)
        && role == PsoRole::Sender
        && let Some(long) = input.ids.iter().find(|id| id.len() > MAX_ITEM_LEN)
    {
        return Err(InputError::Other(format!(
            "identifier of {} bytes is longer than the {MAX_ITEM_LEN} bytes {} transfers",
            long.len(),
            config.operation.name()
        ))
        .into());
    }
    if needs_values {
        transfer::SumModulus::for_sender(input.ids.len() as u64, config.max_value)?;
        if let Some(v) = input.columns[0].iter().find(|&&v| v > config.max_value) {
            return Err(InputError::Other(format!(
                "value {v} exceeds the value bound {}",
                config.max_value
            ))
            .into());
        }
    }
    Ok(())
}

/// Builds the party for `role` with the cwPRF named in `config`.
///
/// `input`: identifiers (and, for the card-sum sender, one value column), already
/// validated by [`crate::input::build_dataset`]. `seed` determines all of the party's
/// randomness; keep it private.
pub fn new_party(
    role: PsoRole,
    config: &PsoConfig,
    input: Dataset,
    seed: [u8; SEED_LEN],
) -> Result<PsoParty, ProtocolError> {
    validate(role, config, &input)?;
    if config.construction == Construction::Vole {
        let common = core::Common::new(role, config.clone(), input);
        return Ok(match role {
            PsoRole::Receiver => Box::new(Engine::new(vole_psi::Receiver::new(common), seed)?),
            PsoRole::Sender => Box::new(Engine::new(vole_psi::Sender::new(common), seed)?),
        });
    }
    fn build<C: CwPrf>(
        role: PsoRole,
        config: &PsoConfig,
        input: Dataset,
        seed: [u8; SEED_LEN],
    ) -> Result<PsoParty, ProtocolError> {
        let common = core::Common::new(role, config.clone(), input);
        Ok(match (config.operation, role) {
            (Operation::PrivateId, PsoRole::Receiver) => {
                Box::new(Engine::new(private_id::Receiver::<C>::new(common), seed)?)
            }
            (Operation::PrivateId, PsoRole::Sender) => {
                Box::new(Engine::new(private_id::Sender::<C>::new(common), seed)?)
            }
            (_, PsoRole::Receiver) => {
                Box::new(Engine::new(receiver::Receiver::<C>::new(common), seed)?)
            }
            (_, PsoRole::Sender) => Box::new(Engine::new(sender::Sender::<C>::new(common), seed)?),
        })
    }
    match config.cwprf {
        CwPrfId::Group(GroupId::Ristretto255) => build::<Ristretto255>(role, config, input, seed),
        CwPrfId::Group(GroupId::P256) => build::<P256Uncompressed>(role, config, input, seed),
        CwPrfId::Group(GroupId::P256Compressed) => build::<P256>(role, config, input, seed),
        CwPrfId::X25519 => build::<X25519>(role, config, input, seed),
    }
}

/// Message kinds of the Fig. 7 operations (0, 0xFE and 0xFF are the engine's).
pub mod kind {
    pub const R1: u8 = 2;
    pub const S1: u8 = 3;
    pub const R2: u8 = 4;
    pub const S2: u8 = 5;
    pub const R3: u8 = 6;
    pub const S3: u8 = 7;
    /// Private-ID only (its OT payload and the union).
    pub const R4: u8 = 8;
    pub const S4: u8 = 9;

    /// Receiver messages are R1, R2, ...; sender messages S1, S2, ... (docs/wire.md
    /// gives each operation's layouts).
    pub fn name(kind: u8) -> &'static str {
        match kind {
            R1 => "R1",
            S1 => "S1",
            R2 => "R2",
            S2 => "S2",
            R3 => "R3",
            S3 => "S3",
            R4 => "R4",
            S4 => "S4",
            _ => "unknown",
        }
    }
}
