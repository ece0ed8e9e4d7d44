//! psi-card, psi-card-sum and pi-sum past one machine's memory, revealing nothing an
//! unbucketed run does not.
//!
//! Identifier buckets cannot carry an aggregate: the receiver would learn each bucket's
//! count, and it knows which of its items fall in which bucket. This layout runs the
//! unbucketed mqRPMT (Chen et al. 2024, Fig. 3) itself, its messages cut into units of
//! bounded size (each a session of [`privset_protocols::partition_unit`]) and kept on
//! disk partitioned by the *values* of the doubly evaluated PRF, which say nothing about
//! the items they came from:
//!
//! ```text
//! unit          producer -> consumer   payload                   consumer keeps on disk
//! evaluate i    receiver -> sender     F_k1(H(y)) of Y's chunk i  F_k2 of them by part q;
//!                                                                 F_k2(H(x)) of X's chunk i
//!                                                                 by part j
//! send j        sender -> receiver     F_k2(H(x)) of part j,      F_k1 of them by part q
//!                                      sorted
//! compare q     sender -> receiver     part q of {F_k2(F_k1(H(y)))}  the count of its part q
//!                                      as a list or filter        in that set (card-sum:
//!                                                                 which elements matched)
//! transfer j    both (card-sum)        OT on part j's indicator bits: the receiver's masked
//!                                      sum of the sender's values (Chen et al. 2024, Fig. 7)
//!               both (psu)             OT on part j's indicator bits: the sender's identifiers
//!                                      the receiver does not hold
//! total         receiver -> sender     the count and the masked sum over all parts
//! ```
//!
//! pi-sum (Ion et al. 2020, Fig. 2) is the same flow with P1 as the receiver and P2 as
//! the sender: a key unit carries P2's public key before the send units, each send unit
//! carries part j's encrypted values in the order of its elements, and the total is
//! P1's re-randomized encrypted sum over every part's matches ([`pi_sum`]).
//!
//! Chunks are fixed-size slices of the staged sets (their sizes are functions of the set
//! sizes); parts are a public hash of a PRF value, which the consumer sees anyway; the
//! send units' order is the values' order. The receiver learns, for each of the sender's
//! doubly evaluated values, whether it is in the set, as in the unbucketed run (where
//! they come shuffled), so the sum of the compare units' counts is all it learns beyond
//! the set sizes; the sender learns the set sizes (card-sum: and the total count and sum,
//! never a part's: the receiver adds the parts' masked sums before sending; pi-sum: the
//! encrypted sums, before masking them once). The PRF keys
//! and the OT's randomness come from a secret each party keeps with its plan, so a unit
//! run again sends the same bytes.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::cwprf::{CwPrf, CwPrfId};
use privset_crypto::group::GroupId;
use privset_crypto::group::p256::{P256, P256Uncompressed};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::meter::Meter;
use privset_protocols::partition_unit::{TransferInput, TransferOutput};
use privset_protocols::pso::mqrpmt::{self, FILTER_KEY};
use privset_protocols::pso::transfer::{self, SumModulus};
use privset_protocols::pso::{Operation, PsoRole};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::wire::Reader;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::Staged;
use super::job::Plan;
use super::operation::JobConfig;
use super::spill::{SpillReader, SpillWriter};
use crate::fail::Failure;
use crate::link::{write_private, write_private_with};

mod pi_sum;
mod private_id;

/// Most items of each party's set per evaluate unit.
pub const CHUNK: u64 = 1 << 18;

/// Which operation's units a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// psi-card: evaluate, send, compare.
    Card,
    /// psi-card-sum: then a transfer unit per part and the total.
    CardSum,
    /// psu: then a transfer unit per part carrying the sender's identifiers the receiver
    /// lacks (the sender's own records carry each identifier).
    Union,
    /// pi-sum: a key unit before the send units (which carry encrypted values), and
    /// the total after the compare units.
    PiSum,
    /// private-id: the OPRF answers (reply and return units), the transfer of the
    /// sender's private identifiers the receiver lacks, and the union ([`private_id`]).
    PrivateId,
}

impl Shape {
    /// The value-partitioned layout `job` runs, or `None` for identifier buckets (psi,
    /// whose output is per item).
    pub fn of(job: JobConfig<'_>) -> Option<Self> {
        match job {
            JobConfig::Pso(c) => match c.operation {
                Operation::PsiCard => Some(Shape::Card),
                Operation::PsiCardSum => Some(Shape::CardSum),
                Operation::Psu => Some(Shape::Union),
                Operation::PrivateId => Some(Shape::PrivateId),
                _ => None,
            },
            JobConfig::PiSum(_) => Some(Shape::PiSum),
        }
    }
}

/// How many units a step has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    One,
    PerPart,
    PerChunk,
}

/// A run of units of one step after the evaluate units: the step of a unit from its
/// index in the run, and how many units the run has.
type StepRun = (fn(u32) -> Step, Count);

impl Shape {
    /// The steps after the evaluate units, in order, each with its unit count.
    fn steps(self) -> &'static [StepRun] {
        use Count::{One, PerChunk, PerPart};
        const KEY: fn(u32) -> Step = |_| Step::Key;
        const TOTAL: fn(u32) -> Step = |_| Step::Total;
        match self {
            Shape::Card => &[(Step::Send, PerPart), (Step::Compare, PerPart)],
            Shape::CardSum => &[
                (Step::Send, PerPart),
                (Step::Compare, PerPart),
                (Step::Transfer, PerPart),
                (TOTAL, One),
            ],
            Shape::Union => &[
                (Step::Send, PerPart),
                (Step::Compare, PerPart),
                (Step::Transfer, PerPart),
            ],
            Shape::PiSum => &[
                (KEY, One),
                (Step::Send, PerPart),
                (Step::Compare, PerPart),
                (TOTAL, One),
            ],
            Shape::PrivateId => &[
                (Step::Reply, PerChunk),
                (Step::Send, PerPart),
                (Step::Return, PerPart),
                (Step::Compare, PerPart),
                (Step::Transfer, PerPart),
                (Step::Union, PerPart),
            ],
        }
    }

    /// The receiver keeps which of the sender's elements matched (for the sums, or the
    /// identifiers it lacks).
    fn keeps_hits(self) -> bool {
        self != Shape::Card
    }
}

/// The steps of a job, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Evaluate(u32),
    /// private-id: the sender's OPRF answers to evaluate unit `i`.
    Reply(u32),
    /// pi-sum only: P2's public key and column bounds.
    Key,
    Send(u32),
    /// private-id: the receiver's OPRF answers to send unit `j`.
    Return(u32),
    Compare(u32),
    /// card-sum, psu and private-id.
    Transfer(u32),
    /// private-id: the union's identifiers in range `r`, sorted.
    Union(u32),
    /// card-sum and pi-sum.
    Total,
}

impl Step {
    /// The step's name in progress labels.
    pub fn name(self) -> &'static str {
        match self {
            Step::Evaluate(_) => "evaluate",
            Step::Reply(_) => "reply",
            Step::Key => "key",
            Step::Send(_) => "send",
            Step::Return(_) => "return",
            Step::Compare(_) => "compare",
            Step::Transfer(_) => "transfer",
            Step::Union(_) => "union",
            Step::Total => "total",
        }
    }
}

/// How many units of each step a job has: both parties derive it from the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Items of each set per chunk: the larger set cut into at least as many chunks as
    /// parts, of at most [`CHUNK`] items.
    pub chunk: u64,
    /// Evaluate units: chunks of the larger set.
    pub chunks: u32,
    /// Value parts (the plan's bucket count).
    pub parts: u32,
    pub shape: Shape,
}

impl Layout {
    pub fn new(receiver_items: u64, sender_items: u64, parts: u32, shape: Shape) -> Self {
        let parts = parts.max(1);
        let larger = receiver_items.max(sender_items);
        let chunk = larger.div_ceil(u64::from(parts)).clamp(1, CHUNK);
        Self {
            chunk,
            chunks: u32::try_from(larger.div_ceil(chunk)).unwrap_or(u32::MAX),
            parts,
            shape,
        }
    }

    /// The layout of `plan` for the party playing `role`.
    pub fn of(plan: &Plan, role: PsoRole, shape: Shape) -> Self {
        match role {
            PsoRole::Receiver => Self::new(plan.items, plan.peer_items, plan.buckets, shape),
            PsoRole::Sender => Self::new(plan.peer_items, plan.items, plan.buckets, shape),
        }
    }

    /// Units of a step.
    fn count(&self, count: Count) -> u32 {
        match count {
            Count::One => 1,
            Count::PerPart => self.parts,
            Count::PerChunk => self.chunks,
        }
    }

    pub fn units(&self) -> u32 {
        self.shape
            .steps()
            .iter()
            .fold(self.chunks, |n, &(_, count)| {
                n.saturating_add(self.count(count))
            })
    }

    /// The step of `unit` (below [`Layout::units`]).
    pub fn step(&self, unit: u32) -> Step {
        self.locate(unit).1
    }

    /// The wave of `unit`: 0 for the evaluate units, then one per later step. The units
    /// of a wave are independent (each reads what earlier waves left on this party's
    /// disk and writes only its own files), so they may run in any order or at once;
    /// a wave needs every earlier wave finished on this side, never the peer's.
    pub fn wave(&self, unit: u32) -> u32 {
        self.locate(unit).0
    }

    /// The wave and step of `unit`.
    fn locate(&self, unit: u32) -> (u32, Step) {
        let Some(mut u) = unit.checked_sub(self.chunks) else {
            return (0, Step::Evaluate(unit));
        };
        let steps = self.shape.steps();
        for (wave, &(step, count)) in (1..).zip(steps) {
            let n = self.count(count);
            if u < n {
                return (wave, step(u));
            }
            u -= n;
        }
        (steps.len() as u32, Step::Total)
    }

    /// Who sends the unit's payload, or leads it (0 receiver, 1 sender).
    pub fn producer(&self, unit: u32) -> u8 {
        match self.step(unit) {
            Step::Evaluate(_) | Step::Return(_) | Step::Union(_) | Step::Total => 0,
            Step::Reply(_) | Step::Key | Step::Send(_) | Step::Compare(_) | Step::Transfer(_) => 1,
        }
    }
}

/// Step 3 of this layout: this party's set cut into chunk files of `chunk` identifiers
/// and their values (in staged order, which a private hash set).
pub fn prepare(
    dir: &Path,
    chunk_items: u64,
    staged: &Staged,
    value_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<(), Failure> {
    let mut chunk = 0u32;
    let mut writer: Option<SpillWriter> = None;
    for s in 0..staged.spills {
        let ds = super::read_staged(dir, staged, s, value_names, policy, max_value)?;
        let mut values = vec![0u64; ds.columns.len()];
        for (i, id) in ds.ids.iter().enumerate() {
            for (v, column) in values.iter_mut().zip(&ds.columns) {
                *v = column[i];
            }
            let w = match &mut writer {
                Some(w) if w.records < chunk_items => w,
                _ => {
                    if let Some(full) = writer.take() {
                        full.finish()?;
                        chunk += 1;
                    }
                    writer.insert(SpillWriter::create(&chunk_path(dir, chunk), 1 << 20)?)
                }
            };
            w.write(0, id, &values)?;
        }
    }
    if let Some(w) = writer {
        w.finish()?;
    }
    Ok(())
}

/// The job's keys and names, from the plan: the same on every start.
pub struct Keys {
    secret: Zeroizing<[u8; 32]>,
    /// Hash-to-group tag of the whole job.
    dst: Vec<u8>,
    /// The public keyed hash of values into parts.
    part_key: [u8; 32],
    /// The filter's public hash key.
    filter_key: [u8; 32],
    /// The plan these keys belong to (its id).
    plan: String,
    /// pi-sum P2's key pair, made once per process from the secret (a Paillier key
    /// generation takes about a second): see `pi_sum::own_keys`.
    he_keys: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
}

impl Keys {
    pub fn of(plan: &Plan, job: JobConfig<'_>) -> Result<Self, Failure> {
        let secret = Zeroizing::new(decode32(&plan.secret).ok_or_else(|| {
            Failure::other("the plan has no PRF secret: remove the state directory to start over")
        })?);
        let id = decode32(&plan.id).unwrap_or_default();
        let derive = |label: &str| -> [u8; 32] {
            let mut h = Sha256::new();
            h.update(format!("privset/v1/partitioned/{label}"));
            h.update(id);
            h.finalize().into()
        };
        Ok(Self {
            secret,
            dst: format!(
                "privset-v1-{}-partitioned-{}-{}",
                job.name(),
                job.cwprf().suite(),
                plan.id
            )
            .into_bytes(),
            part_key: derive("part"),
            filter_key: derive(FILTER_KEY),
            plan: plan.id.clone(),
            he_keys: std::sync::OnceLock::new(),
        })
    }

    /// True for the keys of `plan`.
    pub fn belong_to(&self, plan: &Plan) -> bool {
        self.plan == plan.id
    }

    fn private(&self, label: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(format!("privset/v1/partitioned/{label}"));
        h.update(*self.secret);
        h.finalize().into()
    }

    fn prf_key<C: CwPrf>(&self) -> Zeroizing<C::Key> {
        let mut rng = SessionRng::from_seed(self.private("prf-key"));
        Zeroizing::new(C::random_key(&mut rng))
    }
}

fn decode32(text: &str) -> Option<[u8; 32]> {
    hex::decode(text).ok().and_then(|b| b.try_into().ok())
}

/// Bytes after the PRF value in the receiver's records of the sender's values (the
/// element's index in its send unit); the sender's own records carry its values, 8
/// bytes each ([`UnitContext::own_width`]).
const INDEX_LEN: usize = 4;

/// What one unit needs besides the transport.
pub struct UnitContext<'a> {
    pub dir: &'a Path,
    pub role: PsoRole,
    pub job: JobConfig<'a>,
    /// This party's value columns.
    pub columns: usize,
    /// psu, private-id: the width of this party's identifier slots (psu's sender's own
    /// records carry one; private-id's identifier records, both parties'); 0 for the
    /// other shapes.
    pub id_slot: usize,
    pub plan: &'a Plan,
    pub layout: Layout,
    pub keys: &'a Keys,
}

/// What the consumer learned from a unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Consumed {
    /// A compare unit's count (receiver), the total's count (card-sum sender).
    pub count: Option<u64>,
}

/// The width of psu's and private-id's identifier slots for a set whose longest
/// identifier has `max_len` bytes; 0 for the other shapes, whose records carry no
/// identifier.
pub fn id_slot(shape: Shape, max_len: usize) -> usize {
    match shape {
        Shape::Union | Shape::PrivateId => transfer::item_width(max_len),
        _ => 0,
    }
}

/// Calls `$f::<C>($args)` with the cwPRF `C` that `$id` names.
macro_rules! with_cwprf {
    ($id:expr, $f:ident($($arg:expr),*)) => {
        match $id {
            CwPrfId::Group(GroupId::Ristretto255) => $f::<Ristretto255>($($arg),*),
            CwPrfId::Group(GroupId::P256) => $f::<P256Uncompressed>($($arg),*),
            CwPrfId::Group(GroupId::P256Compressed) => $f::<P256>($($arg),*),
            CwPrfId::X25519 => $f::<X25519>($($arg),*),
        }
    };
}

impl UnitContext<'_> {
    /// The producer's payload of a one-message unit.
    pub fn produce(&self, unit: u32) -> Result<Vec<u8>, Failure> {
        with_cwprf!(self.job.cwprf(), produce(self, unit))
    }

    /// The largest payload the consumer of a one-message unit accepts.
    pub fn max_payload(&self, unit: u32) -> Result<usize, Failure> {
        with_cwprf!(self.job.cwprf(), max_payload(self, unit))
    }

    /// The consumer's processing of a unit's payload (from the peer: untrusted).
    pub fn consume(&self, unit: u32, payload: &[u8]) -> Result<Consumed, Failure> {
        with_cwprf!(self.job.cwprf(), consume(self, unit, payload))
    }

    /// This party's input to transfer unit `j`: the receiver's indicator bits, or the
    /// sender's values (card-sum) or identifier slots (psu), all in the order of send
    /// unit `j`.
    pub fn transfer_input(&self, j: u32) -> Result<TransferInput, Failure> {
        let w = self.job.cwprf().element_len();
        match self.role {
            PsoRole::Receiver => {
                let n = part_file_total(&part_path(self.dir, "peer", j))? as usize;
                let mut bits = vec![false; n];
                for q in 0..self.layout.parts {
                    for (jj, index) in read_hits(self.dir, q)? {
                        let slot = (jj == j).then(|| bits.get_mut(index as usize)).flatten();
                        match slot {
                            Some(bit) => *bit = true,
                            None if jj == j => {
                                return Err(corrupt(
                                    &hits_path(self.dir, q),
                                    "an index past its part",
                                ));
                            }
                            None => {}
                        }
                    }
                }
                Ok(TransferInput::Choices(bits))
            }
            PsoRole::Sender if self.layout.shape == Shape::PrivateId => {
                private_id::transfer_input(self, j)
            }
            PsoRole::Sender if self.layout.shape == Shape::Union => {
                let records = self.sorted_own(j, w)?;
                let at = w + 8 * self.columns;
                let slots = records
                    .chunks_exact(self.own_width(w))
                    .flat_map(|r| &r[at..])
                    .copied()
                    .collect();
                Ok(TransferInput::Items {
                    slots,
                    width: self.id_slot,
                })
            }
            PsoRole::Sender => {
                let records = self.sorted_own(j, w)?;
                let values = records
                    .chunks_exact(self.own_width(w))
                    .map(|r| u64::from_le_bytes(r[w..w + 8].try_into().expect("8 bytes")))
                    .collect();
                Ok(TransferInput::Values {
                    values,
                    max_value: self.job.max_value(),
                })
            }
        }
    }

    /// The private seed of transfer unit `j`'s oblivious transfer: the same on a rerun.
    pub fn ot_seed(&self, j: u32) -> [u8; 32] {
        self.keys.private(&format!("ot/{j}"))
    }

    /// Keeps what transfer unit `j` gave this party, for the total (psu's receiver: the
    /// identifiers it lacked, each as a u16 length and its bytes).
    pub fn record_transfer(&self, j: u32, out: TransferOutput) -> Result<(), Failure> {
        let mut bytes = Vec::with_capacity(32);
        match out {
            TransferOutput::Items(ids) if self.layout.shape == Shape::PrivateId => {
                return private_id::keep_peer_ids(self, j, ids);
            }
            TransferOutput::Items(items) => {
                for item in items {
                    bytes.extend_from_slice(&(item.len() as u16).to_le_bytes());
                    bytes.extend_from_slice(&item);
                }
                return write_private(&part_path(self.dir, "union", j), &bytes);
            }
            TransferOutput::ItemsSent => return Ok(()),
            TransferOutput::Receiver {
                masked,
                matches,
                max_value,
            } => {
                bytes.extend_from_slice(&masked.to_le_bytes());
                bytes.extend_from_slice(&matches.to_le_bytes());
                bytes.extend_from_slice(&max_value.to_le_bytes());
            }
            TransferOutput::Sender { masks } => bytes.extend_from_slice(&masks.to_le_bytes()),
        }
        write_private(&part_path(self.dir, "sum", j), &bytes)
    }

    /// pi-sum's answer once every unit ran: P1's from the compare units' `cardinality`.
    pub fn pi_sum_output(
        &self,
        cardinality: u64,
    ) -> Result<privset_protocols::pi_sum::PiSumOutput, Failure> {
        pi_sum::output(self, cardinality)
    }

    /// psu's receiver, once every transfer unit ran: calls `row` with each of its own
    /// identifiers, then each of the sender's it lacked.
    pub fn union_rows(
        &self,
        mut row: impl FnMut(&[u8]) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        for i in 0..self.layout.chunks {
            for id in read_chunk(self, i)?.0 {
                row(&id)?;
            }
        }
        for j in 0..self.layout.parts {
            let path = part_path(self.dir, "union", j);
            let bytes = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
            let mut rest = bytes.as_slice();
            while let Some((len, tail)) = rest.split_first_chunk::<2>() {
                let len = u16::from_le_bytes(*len) as usize;
                let item = tail.get(..len).ok_or_else(|| corrupt(&path, "truncated"))?;
                row(item)?;
                rest = &tail[len..];
            }
            if !rest.is_empty() {
                return Err(corrupt(&path, "truncated"));
            }
        }
        Ok(())
    }

    /// private-id, both parties, once every unit ran: calls `row` with each identifier
    /// of the union in order and this party's item for it, if it has one.
    pub fn private_id_table(
        &self,
        row: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        private_id::table(self, row)
    }

    /// The key of the mqRPMT's PRF: private-id's blind, the job's PRF key otherwise.
    fn mqrpmt_key<C: CwPrf>(&self) -> Result<Zeroizing<C::Key>, Failure> {
        match self.layout.shape {
            Shape::PrivateId => Ok(private_id::keys::<C>(self)?.blind),
            _ => Ok(self.keys.prf_key::<C>()),
        }
    }

    /// The card-sum sender's answer once the total unit ran: the count and the sum.
    pub fn total(&self) -> Result<(u64, u128), Failure> {
        let path = self.dir.join("bucket").join("total.bin");
        let bytes = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
        if bytes.len() != 24 {
            return Err(corrupt(&path, "not 24 bytes"));
        }
        Ok((
            u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
            u128::from_le_bytes(bytes[8..].try_into().expect("16 bytes")),
        ))
    }

    fn items(&self, role: PsoRole) -> u64 {
        if role == self.role {
            self.plan.items
        } else {
            self.plan.peer_items
        }
    }

    /// Elements in chunk `i` of the set of the party playing `role`.
    fn chunk_len(&self, role: PsoRole, i: u32) -> u64 {
        self.items(role)
            .saturating_sub(u64::from(i) * self.layout.chunk)
            .min(self.layout.chunk)
    }

    /// The most elements a part of a set of `items` may hold (2^-40 failure).
    fn part_bound(&self, items: u64) -> u64 {
        super::padded_size(items, self.layout.parts)
    }

    fn set_encoding(&self) -> SetEncoding {
        self.job.set_encoding()
    }

    /// Bytes of one of the sender's own records: a PRF value of width `w`, then its
    /// values, then (psu) its identifier's slot.
    fn own_width(&self, w: usize) -> usize {
        w + 8 * self.columns + self.id_slot
    }

    /// The sender's own records of part `j`, sorted (by PRF value): send unit `j`'s
    /// order.
    fn sorted_own(&self, j: u32, w: usize) -> Result<Vec<u8>, Failure> {
        let width = self.own_width(w);
        let mut records = gather(self.dir, "own", self.layout.chunks, j, width)?;
        sort_packed(&mut records, width);
        Ok(records)
    }

    fn last_queries(&self) -> usize {
        self.items(PsoRole::Sender) as usize
    }

    /// The modulus of the masked sums: from the sender's set size and value bound.
    fn modulus(&self, max_value: u64) -> Result<SumModulus, Failure> {
        Ok(SumModulus::announced(
            self.items(PsoRole::Sender),
            max_value,
        )?)
    }

    /// The receiver's total: the count and masked sum over every transfer unit.
    fn receiver_total(&self) -> Result<(u64, u128), Failure> {
        let (mut count, mut masked, mut bound) = (0u64, 0u128, None);
        for j in 0..self.layout.parts {
            let path = part_path(self.dir, "sum", j);
            let b = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
            if b.len() != 32 {
                return Err(corrupt(&path, "not 32 bytes"));
            }
            let max_value = u64::from_le_bytes(b[24..].try_into().expect("8 bytes"));
            if *bound.get_or_insert(max_value) != max_value {
                return Err(Failure::peer(
                    "the sender announced different value bounds in different parts",
                ));
            }
            let q = self.modulus(max_value)?;
            masked =
                q.reduce(masked.wrapping_add(u128::from_le_bytes(b[..16].try_into().expect("16"))));
            count += u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
        }
        Ok((count, masked))
    }
}

fn produce<C: CwPrf>(ctx: &UnitContext<'_>, unit: u32) -> Result<Vec<u8>, Failure> {
    let key = ctx.mqrpmt_key::<C>()?;
    let meter = Meter::new();
    let w = C::ELEMENT_LEN;
    match ctx.layout.step(unit) {
        Step::Evaluate(i) => {
            let (ids, _) = read_chunk(ctx, i)?;
            Ok(mqrpmt::hash_eval::<C, _>(
                (&meter, "own"),
                &ctx.keys.dst,
                &ids,
                &key,
            ))
        }
        Step::Key => pi_sum::key_payload(ctx),
        Step::Reply(i) => private_id::read_kept(ctx, "reply", i),
        Step::Return(j) => private_id::read_kept(ctx, "return", j),
        Step::Union(r) => private_id::union_range(ctx, r),
        Step::Send(j) => {
            let records = ctx.sorted_own(j, w)?;
            let elements: Vec<u8> = records
                .chunks_exact(ctx.own_width(w))
                .flat_map(|r| &r[..w])
                .copied()
                .collect();
            if ctx.layout.shape != Shape::PiSum {
                return Ok(elements);
            }
            let n = (elements.len() / w) as u64;
            let mut out = n.to_be_bytes().to_vec();
            out.extend_from_slice(&elements);
            pi_sum::append_columns(ctx, j, &records, w, &mut out)?;
            Ok(out)
        }
        Step::Compare(q) => {
            let values = gather(ctx.dir, "peer", ctx.layout.chunks, q, w)?;
            let n1 = (values.len() / w) as u64;
            // A list is shuffled from the secret: the same order on every run.
            let mut rng = SessionRng::from_seed(ctx.keys.private(&format!("shuffle/{q}")));
            let encoded = ctx
                .set_encoding()
                .encode(
                    &values,
                    w,
                    ctx.last_queries(),
                    &ctx.keys.filter_key,
                    &mut rng,
                )
                .map_err(|e| Failure::other(e.to_string()))?;
            let mut out = n1.to_be_bytes().to_vec();
            out.extend_from_slice(&encoded);
            Ok(out)
        }
        Step::Total if ctx.layout.shape == Shape::PiSum => pi_sum::total_payload(ctx),
        Step::Total => {
            let (count, masked) = ctx.receiver_total()?;
            let mut out = count.to_be_bytes().to_vec();
            out.extend_from_slice(&masked.to_be_bytes());
            Ok(out)
        }
        Step::Transfer(_) => Err(Failure::other("a transfer unit has no single payload")),
    }
}

fn max_payload<C: CwPrf>(ctx: &UnitContext<'_>, unit: u32) -> Result<usize, Failure> {
    let w = C::ELEMENT_LEN;
    Ok(match ctx.layout.step(unit) {
        Step::Evaluate(i) => (ctx.chunk_len(PsoRole::Receiver, i) as usize).saturating_mul(w),
        Step::Key => pi_sum::MAX_KEY_PAYLOAD,
        Step::Reply(i) => (ctx.chunk_len(PsoRole::Receiver, i) as usize).saturating_mul(w),
        Step::Return(_) => (ctx.part_bound(ctx.items(PsoRole::Sender)) as usize).saturating_mul(w),
        Step::Union(_) => private_id::max_union_len(ctx),
        Step::Send(_) => {
            let bound = ctx.part_bound(ctx.items(PsoRole::Sender));
            let elements = (bound as usize).saturating_mul(w);
            if ctx.layout.shape != Shape::PiSum {
                return Ok(elements);
            }
            pi_sum::columns_len(ctx, bound)?
                .saturating_add(elements)
                .saturating_add(8)
        }
        Step::Compare(_) => ctx
            .set_encoding()
            .max_len(
                ctx.part_bound(ctx.items(PsoRole::Receiver)) as usize,
                w,
                ctx.last_queries(),
            )
            .saturating_add(8),
        Step::Total if ctx.layout.shape == Shape::PiSum => pi_sum::max_total_len(ctx)?,
        Step::Total => 24,
        Step::Transfer(_) => 0,
    })
}

fn consume<C: CwPrf>(
    ctx: &UnitContext<'_>,
    unit: u32,
    payload: &[u8],
) -> Result<Consumed, Failure> {
    let key = ctx.mqrpmt_key::<C>()?;
    let meter = Meter::new();
    let w = C::ELEMENT_LEN;
    let peer = Failure::from;
    match ctx.layout.step(unit) {
        Step::Evaluate(i) => {
            let expected = ctx.chunk_len(PsoRole::Receiver, i) as usize * w;
            if payload.len() != expected {
                return Err(Failure::peer(format!(
                    "evaluate unit {i}: {} bytes, not the {expected} of the receiver's chunk",
                    payload.len()
                )));
            }
            let doubled = mqrpmt::eval::<C>((&meter, "peer"), payload, &key, "receiver's elements")
                .map_err(peer)?;
            write_parts(ctx, &part_path(ctx.dir, "peer", i), &doubled, w, w)?;
            let (ids, values) = read_chunk(ctx, i)?;
            let own = mqrpmt::hash_eval::<C, _>((&meter, "own"), &ctx.keys.dst, &ids, &key);
            let mut records = Vec::with_capacity(ids.len() * ctx.own_width(w));
            let c = ctx.columns;
            for (k, f) in own.chunks_exact(w).enumerate() {
                records.extend_from_slice(f);
                for x in &values[k * c..(k + 1) * c] {
                    records.extend_from_slice(&x.to_le_bytes());
                }
                if ctx.id_slot > 0 {
                    if ids[k].len() > ctx.id_slot.saturating_sub(transfer::item_width(0)) {
                        return Err(Failure::other(
                            "an identifier is longer than the staged input's longest: remove \
                             the state directory to start over",
                        ));
                    }
                    records.extend_from_slice(&transfer::encode_item(&ids[k], ctx.id_slot));
                }
            }
            write_parts(
                ctx,
                &part_path(ctx.dir, "own", i),
                &records,
                ctx.own_width(w),
                w,
            )?;
            if ctx.layout.shape == Shape::PrivateId {
                private_id::keep_answers::<C>(ctx, "reply", i, payload)?;
            }
            Ok(Consumed::default())
        }
        Step::Reply(i) => {
            private_id::consume_reply::<C>(ctx, i, payload)?;
            Ok(Consumed::default())
        }
        Step::Return(j) => {
            private_id::consume_return::<C>(ctx, j, payload)?;
            Ok(Consumed::default())
        }
        Step::Union(r) => {
            private_id::consume_union(ctx, r, payload)?;
            Ok(Consumed::default())
        }
        Step::Key => {
            pi_sum::consume_key(ctx, payload)?;
            Ok(Consumed::default())
        }
        Step::Send(j) => {
            let elements = if ctx.layout.shape == Shape::PiSum {
                let mut r = Reader::new(payload, "send unit");
                let n = r.u64().map_err(peer)?;
                let bound = ctx.part_bound(ctx.items(PsoRole::Sender));
                if n > bound {
                    return Err(Failure::peer(format!(
                        "send unit {j}: {n} elements, more than a part of the sender's set may hold ({bound})"
                    )));
                }
                let elements = r.take(n as usize * w).map_err(peer)?;
                pi_sum::keep_columns(ctx, j, n, &mut r)?;
                r.finish().map_err(peer)?;
                elements
            } else {
                payload
            };
            let doubled = mqrpmt::eval::<C>((&meter, "peer"), elements, &key, "sender's elements")
                .map_err(peer)?;
            let records: Vec<u8> = doubled
                .chunks_exact(w)
                .enumerate()
                .flat_map(|(i, f)| f.iter().copied().chain((i as u32).to_le_bytes()))
                .collect();
            write_parts(
                ctx,
                &part_path(ctx.dir, "peer", j),
                &records,
                w + INDEX_LEN,
                w,
            )?;
            if ctx.layout.shape == Shape::PrivateId {
                private_id::keep_answers::<C>(ctx, "return", j, elements)?;
            }
            Ok(Consumed::default())
        }
        Step::Compare(q) => {
            let mut r = Reader::new(payload, "compare unit");
            let n1 = r.u64().map_err(peer)?;
            let bound = ctx.part_bound(ctx.items(PsoRole::Receiver));
            if n1 > bound {
                return Err(Failure::peer(format!(
                    "compare unit {q}: {n1} elements, more than a part of the receiver's set may hold ({bound})"
                )));
            }
            let set = ctx
                .set_encoding()
                .read(
                    &mut r,
                    n1 as usize,
                    w,
                    ctx.last_queries(),
                    &ctx.keys.filter_key,
                    "receiver's set",
                )
                .map_err(peer)?;
            r.finish().map_err(peer)?;
            // The sender's doubly evaluated elements in part q, each with its send unit
            // and its place there.
            let mut values = Vec::new();
            let mut origin = Vec::new();
            for j in 0..ctx.layout.parts {
                let mut records = Vec::new();
                read_part(
                    &part_path(ctx.dir, "peer", j),
                    q,
                    w + INDEX_LEN,
                    &mut records,
                )?;
                for r in records.chunks_exact(w + INDEX_LEN) {
                    values.extend_from_slice(&r[..w]);
                    origin.push((j, u32::from_le_bytes(r[w..].try_into().expect("4 bytes"))));
                }
            }
            let hits: Vec<(u32, u32)> = set
                .membership(&values, w)
                .into_iter()
                .zip(origin)
                .filter_map(|(hit, o)| hit.then_some(o))
                .collect();
            if ctx.layout.shape.keeps_hits() {
                let bytes: Vec<u8> = hits
                    .iter()
                    .flat_map(|(j, i)| j.to_le_bytes().into_iter().chain(i.to_le_bytes()))
                    .collect();
                write_private(&hits_path(ctx.dir, q), &bytes)?;
            }
            Ok(Consumed {
                count: Some(hits.len() as u64),
            })
        }
        Step::Total if ctx.layout.shape == Shape::PiSum => pi_sum::consume_total(ctx, payload),
        Step::Total => {
            if payload.len() != 24 {
                return Err(Failure::peer(format!(
                    "the total: {} bytes, not 24",
                    payload.len()
                )));
            }
            let count = u64::from_be_bytes(payload[..8].try_into().expect("8 bytes"));
            let masked = u128::from_be_bytes(payload[8..].try_into().expect("16 bytes"));
            let (sender_items, receiver_items) =
                (ctx.items(PsoRole::Sender), ctx.items(PsoRole::Receiver));
            if count > sender_items.min(receiver_items) {
                return Err(Failure::peer(format!(
                    "the receiver's count {count} exceeds the smaller set ({})",
                    sender_items.min(receiver_items)
                )));
            }
            let q = ctx.modulus(ctx.job.max_value())?;
            let mut masks = 0u128;
            for j in 0..ctx.layout.parts {
                let path = part_path(ctx.dir, "sum", j);
                let b = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
                let b: [u8; 16] = b.try_into().map_err(|_| corrupt(&path, "not 16 bytes"))?;
                masks = q.reduce(masks.wrapping_add(u128::from_le_bytes(b)));
            }
            let sum = q.reduce(masked.wrapping_sub(masks));
            let mut bytes = count.to_le_bytes().to_vec();
            bytes.extend_from_slice(&sum.to_le_bytes());
            write_private(&ctx.dir.join("bucket").join("total.bin"), &bytes)?;
            Ok(Consumed { count: Some(count) })
        }
        Step::Transfer(_) => Err(Failure::other("a transfer unit has no single payload")),
    }
}

/// This party's identifiers of chunk `i` and their values, `ctx.columns` per item.
fn read_chunk(ctx: &UnitContext<'_>, i: u32) -> Result<(Vec<Vec<u8>>, Vec<u64>), Failure> {
    let want = ctx.chunk_len(ctx.role, i);
    if want == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let (mut ids, mut values) = (Vec::new(), Vec::new());
    for r in SpillReader::open(&chunk_path(ctx.dir, i), ctx.columns)? {
        let r = r?;
        ids.push(r.id);
        values.extend_from_slice(&r.values);
    }
    if ids.len() as u64 != want {
        return Err(Failure::other(format!(
            "chunk {i} of the staged set holds {} items, not {want}: remove the state directory \
             to start over",
            ids.len()
        )));
    }
    Ok((ids, values))
}

fn chunk_path(dir: &Path, i: u32) -> PathBuf {
    dir.join("bucket").join(format!("chunk-{i:07}.bin"))
}

fn part_path(dir: &Path, kind: &str, i: u32) -> PathBuf {
    dir.join("bucket").join(format!("{kind}-{i:07}.bin"))
}

fn hits_path(dir: &Path, q: u32) -> PathBuf {
    part_path(dir, "hits", q)
}

/// The (send unit, index) of each of the sender's elements compare unit `q` matched.
fn read_hits(dir: &Path, q: u32) -> Result<Vec<(u32, u32)>, Failure> {
    let path = hits_path(dir, q);
    let bytes = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
    if !bytes.len().is_multiple_of(8) {
        return Err(corrupt(&path, "truncated"));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| {
            (
                u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                u32::from_le_bytes(c[4..].try_into().expect("4 bytes")),
            )
        })
        .collect())
}

fn corrupt(path: &Path, what: &str) -> Failure {
    Failure::other(format!(
        "bucket state {}: {what} (remove the state directory to start over)",
        path.display()
    ))
}

/// Sorts packed records of `width` bytes.
fn sort_packed(records: &mut [u8], width: usize) {
    let mut rows: Vec<&[u8]> = records.chunks_exact(width).collect();
    rows.sort_unstable();
    let sorted: Vec<u8> = rows.concat();
    records.copy_from_slice(&sorted);
}

/// Part-indexed files: `parts` u32, `width` u32, `parts + 1` u64 offsets (in records),
/// then the records grouped by the part of their first `key_len` bytes. Written
/// atomically; read defensively.
fn write_parts(
    ctx: &UnitContext<'_>,
    path: &Path,
    records: &[u8],
    width: usize,
    key_len: usize,
) -> Result<(), Failure> {
    write_parts_by(ctx.layout.parts, path, records, width, |r| {
        super::bucket_of(&ctx.keys.part_key, &r[..key_len], ctx.layout.parts)
    })
}

/// [`write_parts`] with records grouped by `part_of` (below `parts`).
fn write_parts_by(
    parts: u32,
    path: &Path,
    records: &[u8],
    width: usize,
    part_of: impl Fn(&[u8]) -> u32,
) -> Result<(), Failure> {
    let parts = parts as usize;
    let of: Vec<u32> = records.chunks_exact(width).map(part_of).collect();
    let mut offsets = vec![0u64; parts + 1];
    for &p in &of {
        offsets[p as usize + 1] += 1;
    }
    for p in 0..parts {
        offsets[p + 1] += offsets[p];
    }
    let mut next: Vec<u64> = offsets[..parts].to_vec();
    let mut body = vec![0u8; records.len()];
    for (r, &p) in records.chunks_exact(width).zip(&of) {
        let at = next[p as usize] as usize * width;
        body[at..at + width].copy_from_slice(r);
        next[p as usize] += 1;
    }
    write_private_with(path, |f| {
        let mut head = Vec::with_capacity(8 + 8 * (parts + 1));
        head.extend_from_slice(&(parts as u32).to_le_bytes());
        head.extend_from_slice(&(width as u32).to_le_bytes());
        for o in &offsets {
            head.extend_from_slice(&o.to_le_bytes());
        }
        f.write_all(&head)?;
        f.write_all(&body)?;
        Ok(())
    })
}

/// Part `p` of every part-indexed file `<kind>-0..count`, concatenated.
fn gather(dir: &Path, kind: &str, count: u32, p: u32, width: usize) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    for i in 0..count {
        read_part(&part_path(dir, kind, i), p, width, &mut out)?;
    }
    Ok(out)
}

/// Reads a part-indexed file's header: its part count, record width and offsets' bounds
/// for part `p` (`p = parts` gives the total as both bounds).
fn read_bounds(
    f: &mut std::fs::File,
    path: &Path,
    p: u32,
) -> Result<(u32, usize, u64, u64), Failure> {
    let io = |e: std::io::Error| corrupt(path, &e.to_string());
    let mut head = [0u8; 8];
    f.read_exact(&mut head).map_err(io)?;
    let parts = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    let width = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
    if p > parts {
        return Err(corrupt(path, "written for another layout"));
    }
    let at = u64::from(p);
    f.seek(SeekFrom::Start(8 + 8 * at)).map_err(io)?;
    let mut bounds = [0u8; 16];
    let n = if p == parts { 8 } else { 16 };
    f.read_exact(&mut bounds[..n]).map_err(io)?;
    let start = u64::from_le_bytes(bounds[..8].try_into().expect("8 bytes"));
    let end = if p == parts {
        start
    } else {
        u64::from_le_bytes(bounds[8..].try_into().expect("8 bytes"))
    };
    Ok((parts, width, start, end))
}

/// The number of records in a part-indexed file.
fn part_file_total(path: &Path) -> Result<u64, Failure> {
    let mut f = std::fs::File::open(path).map_err(|e| corrupt(path, &e.to_string()))?;
    let mut head = [0u8; 8];
    f.read_exact(&mut head)
        .map_err(|e| corrupt(path, &e.to_string()))?;
    let parts = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    f.seek(SeekFrom::Start(0))
        .map_err(|e| corrupt(path, &e.to_string()))?;
    Ok(read_bounds(&mut f, path, parts)?.2)
}

fn read_part(path: &Path, p: u32, width: usize, out: &mut Vec<u8>) -> Result<(), Failure> {
    let io = |e: std::io::Error| corrupt(path, &e.to_string());
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let (parts, w, start, end) = read_bounds(&mut f, path, p)?;
    if w != width || p >= parts {
        return Err(corrupt(path, "written for another layout"));
    }
    let header = 8 + 8 * (u64::from(parts) + 1);
    let w64 = width as u64;
    let fits = start <= end
        && end
            .checked_mul(w64)
            .and_then(|b| b.checked_add(header))
            .is_some_and(|b| b <= len);
    if !fits {
        return Err(corrupt(path, "truncated or corrupt"));
    }
    f.seek(SeekFrom::Start(header + start * w64)).map_err(io)?;
    let at = out.len();
    out.resize(at + ((end - start) * w64) as usize, 0);
    f.read_exact(&mut out[at..]).map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_steps_in_order() {
        let l = Layout::new(5, (3 * CHUNK) + 1, 2, Shape::Card);
        assert_eq!((l.chunk, l.chunks), (CHUNK, 4));
        assert_eq!(l.units(), 8);
        assert_eq!(l.step(3), Step::Evaluate(3));
        assert_eq!(l.step(4), Step::Send(0));
        assert_eq!(l.step(6), Step::Compare(0));
        assert_eq!(l.producer(0), 0);
        assert_eq!(l.producer(7), 1);
        assert_eq!(Layout::new(0, 0, 1, Shape::Card).units(), 2);
        // Small sets: at least as many chunks as parts.
        let l = Layout::new(3000, 2000, 7, Shape::Card);
        assert_eq!((l.chunk, l.chunks, l.units()), (429, 7, 21));
        // card-sum: a transfer unit per part, then the total.
        let l = Layout::new(3000, 2000, 7, Shape::CardSum);
        assert_eq!(l.units(), 29);
        assert_eq!(l.step(21), Step::Transfer(0));
        assert_eq!(l.step(28), Step::Total);
        assert_eq!((l.producer(21), l.producer(28)), (1, 0));
        // pi-sum: the key unit after the evaluate units, the total last.
        let l = Layout::new(3000, 2000, 7, Shape::PiSum);
        assert_eq!(l.units(), 7 + 1 + 7 + 7 + 1);
        assert_eq!(l.step(6), Step::Evaluate(6));
        assert_eq!(l.step(7), Step::Key);
        assert_eq!(l.step(8), Step::Send(0));
        assert_eq!(l.step(15), Step::Compare(0));
        assert_eq!(l.step(22), Step::Total);
        assert_eq!((l.producer(7), l.producer(22)), (1, 0));
        let waves: Vec<u32> = (0..l.units()).map(|u| l.wave(u)).collect();
        let mut want = vec![0; 7];
        want.extend([1]);
        want.extend([2; 7]);
        want.extend([3; 7]);
        want.extend([4]);
        assert_eq!(waves, want);
        // psu: a transfer unit per part, no total.
        let l = Layout::new(3000, 2000, 7, Shape::Union);
        assert_eq!(l.units(), 7 * 4);
        assert_eq!(
            (l.step(21), l.step(27)),
            (Step::Transfer(0), Step::Transfer(6))
        );
        assert_eq!((l.wave(20), l.wave(21), l.producer(21)), (2, 3, 1));
        // private-id: a reply unit per chunk, then send, return, compare, transfer and
        // union units per part.
        let l = Layout::new(3000, 2000, 7, Shape::PrivateId);
        assert_eq!(l.units(), 7 + 7 + 5 * 7);
        let steps = [
            (7, Step::Reply(0), 1, 1),
            (14, Step::Send(0), 2, 1),
            (21, Step::Return(0), 3, 0),
            (28, Step::Compare(0), 4, 1),
            (35, Step::Transfer(0), 5, 1),
            (42, Step::Union(0), 6, 0),
            (48, Step::Union(6), 6, 0),
        ];
        for (unit, step, wave, producer) in steps {
            assert_eq!(
                (l.step(unit), l.wave(unit), l.producer(unit)),
                (step, wave, producer)
            );
        }
    }
}
