//! psi-card past one machine's memory, revealing nothing an unbucketed run does not.
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
//!                                      as a list or filter        in that set
//! ```
//!
//! Chunks are fixed-size slices of the staged sets (their sizes are functions of the set
//! sizes); parts are a public hash of a PRF value, which the consumer sees anyway; the
//! send units' order is the values' order. The receiver learns, for each of the sender's
//! doubly evaluated values, whether it is in the set, as in the unbucketed run (where
//! they come shuffled), so the sum of the compare units' counts is all it learns beyond
//! the set sizes; the sender learns the set sizes. The PRF keys come from a secret each
//! party keeps with its plan, so a unit run again sends the same bytes.

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
use privset_protocols::pso::mqrpmt::{self, FILTER_KEY};
use privset_protocols::pso::{Construction, LastMessage, PsoConfig, PsoRole};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::wire::Reader;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::Staged;
use super::job::Plan;
use super::spill::{SpillReader, SpillWriter};
use crate::fail::Failure;
use crate::link::write_private_with;

/// Most items of each party's set per evaluate unit.
pub const CHUNK: u64 = 1 << 18;

/// The steps of a job, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Evaluate(u32),
    Send(u32),
    Compare(u32),
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
}

impl Layout {
    pub fn new(receiver_items: u64, sender_items: u64, parts: u32) -> Self {
        let parts = parts.max(1);
        let larger = receiver_items.max(sender_items);
        let chunk = larger.div_ceil(u64::from(parts)).clamp(1, CHUNK);
        Self {
            chunk,
            chunks: u32::try_from(larger.div_ceil(chunk)).unwrap_or(u32::MAX),
            parts,
        }
    }

    /// The layout of `plan` for the party playing `role`.
    pub fn of(plan: &Plan, role: PsoRole) -> Self {
        match role {
            PsoRole::Receiver => Self::new(plan.items, plan.peer_items, plan.buckets),
            PsoRole::Sender => Self::new(plan.peer_items, plan.items, plan.buckets),
        }
    }

    pub fn units(&self) -> u32 {
        self.chunks.saturating_add(self.parts.saturating_mul(2))
    }

    pub fn step(&self, unit: u32) -> Step {
        if unit < self.chunks {
            Step::Evaluate(unit)
        } else if unit - self.chunks < self.parts {
            Step::Send(unit - self.chunks)
        } else {
            Step::Compare(unit - self.chunks - self.parts)
        }
    }

    /// Who sends the unit's payload (0 receiver, 1 sender).
    pub fn producer(&self, unit: u32) -> u8 {
        match self.step(unit) {
            Step::Evaluate(_) => 0,
            Step::Send(_) | Step::Compare(_) => 1,
        }
    }
}

/// Refuses the settings this layout does not run.
pub fn check(config: &PsoConfig) -> Result<(), Failure> {
    if config.construction != Construction::Cwprf {
        return Err(Failure::config(
            "--buckets runs psi-card on the cwPRF mqRPMT only: use --mqrpmt cwprf",
        ));
    }
    if config.last_message == LastMessage::Ordered {
        return Err(Failure::config("--last-message ordered is for psi only"));
    }
    Ok(())
}

/// Step 3 of this layout: this party's set cut into chunk files of `chunk` identifiers
/// (in staged order, which a private hash set).
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
        for id in &ds.ids {
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
            w.write(0, id, &[])?;
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
}

impl Keys {
    pub fn of(plan: &Plan, config: &PsoConfig) -> Result<Self, Failure> {
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
                config.operation.name(),
                config.cwprf.suite(),
                plan.id
            )
            .into_bytes(),
            part_key: derive("part"),
            filter_key: derive(FILTER_KEY),
        })
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

/// What one unit needs besides the transport.
pub struct UnitContext<'a> {
    pub dir: &'a Path,
    pub role: PsoRole,
    pub config: &'a PsoConfig,
    pub plan: &'a Plan,
    pub layout: Layout,
    pub keys: &'a Keys,
}

impl UnitContext<'_> {
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
        match self.config.last_message {
            LastMessage::Set(e) => e,
            LastMessage::Ordered => SetEncoding::List,
        }
    }

    fn last_queries(&self) -> usize {
        self.items(PsoRole::Sender) as usize
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
    /// The producer's payload of `unit`.
    pub fn produce(&self, unit: u32) -> Result<Vec<u8>, Failure> {
        with_cwprf!(self.config.cwprf, produce(self, unit))
    }

    /// The largest payload the consumer of `unit` accepts.
    pub fn max_payload(&self, unit: u32) -> usize {
        with_cwprf!(self.config.cwprf, max_payload(self, unit))
    }

    /// The consumer's processing of `unit`'s payload (from the peer: untrusted).
    pub fn consume(&self, unit: u32, payload: &[u8]) -> Result<Consumed, Failure> {
        with_cwprf!(self.config.cwprf, consume(self, unit, payload))
    }
}

fn produce<C: CwPrf>(ctx: &UnitContext<'_>, unit: u32) -> Result<Vec<u8>, Failure> {
    let key = ctx.keys.prf_key::<C>();
    let meter = Meter::new();
    match ctx.layout.step(unit) {
        Step::Evaluate(i) => {
            let ids = read_chunk(ctx, i)?;
            Ok(mqrpmt::hash_eval::<C, _>(
                (&meter, "own"),
                &ctx.keys.dst,
                &ids,
                &key,
            ))
        }
        Step::Send(j) => {
            let mut values = gather(ctx.dir, "own", ctx.layout.chunks, j, C::ELEMENT_LEN)?;
            sort_packed(&mut values, C::ELEMENT_LEN);
            Ok(values)
        }
        Step::Compare(q) => {
            let values = gather(ctx.dir, "peer", ctx.layout.chunks, q, C::ELEMENT_LEN)?;
            let n1 = (values.len() / C::ELEMENT_LEN) as u64;
            // A list is shuffled from the secret: the same order on every run.
            let mut rng = SessionRng::from_seed(ctx.keys.private(&format!("shuffle/{q}")));
            let encoded = ctx
                .set_encoding()
                .encode(
                    &values,
                    C::ELEMENT_LEN,
                    ctx.last_queries(),
                    &ctx.keys.filter_key,
                    &mut rng,
                )
                .map_err(|e| Failure::other(e.to_string()))?;
            let mut out = n1.to_be_bytes().to_vec();
            out.extend_from_slice(&encoded);
            Ok(out)
        }
    }
}

fn max_payload<C: CwPrf>(ctx: &UnitContext<'_>, unit: u32) -> usize {
    let w = C::ELEMENT_LEN;
    match ctx.layout.step(unit) {
        Step::Evaluate(i) => (ctx.chunk_len(PsoRole::Receiver, i) as usize).saturating_mul(w),
        Step::Send(_) => (ctx.part_bound(ctx.items(PsoRole::Sender)) as usize).saturating_mul(w),
        Step::Compare(_) => ctx
            .set_encoding()
            .max_len(
                ctx.part_bound(ctx.items(PsoRole::Receiver)) as usize,
                w,
                ctx.last_queries(),
            )
            .saturating_add(8),
    }
}

/// What the consumer learned from a unit: the compare units' counts (receiver).
pub type Consumed = Option<u64>;

fn consume<C: CwPrf>(
    ctx: &UnitContext<'_>,
    unit: u32,
    payload: &[u8],
) -> Result<Consumed, Failure> {
    let key = ctx.keys.prf_key::<C>();
    let meter = Meter::new();
    let w = C::ELEMENT_LEN;
    let peer = |e: privset_protocols::error::ProtocolError| Failure::from(e);
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
            write_parts(ctx, &part_path(ctx.dir, "peer", i), &doubled, w)?;
            let ids = read_chunk(ctx, i)?;
            let own = mqrpmt::hash_eval::<C, _>((&meter, "own"), &ctx.keys.dst, &ids, &key);
            write_parts(ctx, &part_path(ctx.dir, "own", i), &own, w)?;
            Ok(None)
        }
        Step::Send(j) => {
            let doubled = mqrpmt::eval::<C>((&meter, "peer"), payload, &key, "sender's elements")
                .map_err(peer)?;
            write_parts(ctx, &part_path(ctx.dir, "peer", j), &doubled, w)?;
            Ok(None)
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
            let mine = gather(ctx.dir, "peer", ctx.layout.parts, q, w)?;
            let hits = set.membership(&mine, w).into_iter().filter(|&h| h).count();
            Ok(Some(hits as u64))
        }
    }
}

/// This party's identifiers of chunk `i` (none past its set's end).
fn read_chunk(ctx: &UnitContext<'_>, i: u32) -> Result<Vec<Vec<u8>>, Failure> {
    if ctx.chunk_len(ctx.role, i) == 0 {
        return Ok(Vec::new());
    }
    let ids = SpillReader::open(&chunk_path(ctx.dir, i), 0)?
        .map(|r| r.map(|r| r.id))
        .collect::<Result<Vec<_>, _>>()?;
    if ids.len() as u64 != ctx.chunk_len(ctx.role, i) {
        return Err(Failure::other(format!(
            "chunk {i} of the staged set holds {} items, not {}: remove the state directory \
             to start over",
            ids.len(),
            ctx.chunk_len(ctx.role, i)
        )));
    }
    Ok(ids)
}

fn chunk_path(dir: &Path, i: u32) -> PathBuf {
    dir.join("bucket").join(format!("chunk-{i:07}.bin"))
}

fn part_path(dir: &Path, kind: &str, i: u32) -> PathBuf {
    dir.join("bucket").join(format!("{kind}-{i:07}.bin"))
}

/// Sorts packed elements of `width` bytes.
fn sort_packed(values: &mut [u8], width: usize) {
    let mut rows: Vec<&[u8]> = values.chunks_exact(width).collect();
    rows.sort_unstable();
    let sorted: Vec<u8> = rows.concat();
    values.copy_from_slice(&sorted);
}

/// Part-indexed files: `parts` u32, `width` u32, `parts + 1` u64 offsets (in elements),
/// then the elements grouped by part. Written atomically; read defensively.
fn write_parts(
    ctx: &UnitContext<'_>,
    path: &Path,
    values: &[u8],
    width: usize,
) -> Result<(), Failure> {
    let parts = ctx.layout.parts as usize;
    let of: Vec<u32> = values
        .chunks_exact(width)
        .map(|v| super::bucket_of(&ctx.keys.part_key, v, ctx.layout.parts))
        .collect();
    let mut offsets = vec![0u64; parts + 1];
    for &p in &of {
        offsets[p as usize + 1] += 1;
    }
    for p in 0..parts {
        offsets[p + 1] += offsets[p];
    }
    let mut next: Vec<u64> = offsets[..parts].to_vec();
    let mut body = vec![0u8; values.len()];
    for (v, &p) in values.chunks_exact(width).zip(&of) {
        let at = next[p as usize] as usize * width;
        body[at..at + width].copy_from_slice(v);
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

fn read_part(path: &Path, p: u32, width: usize, out: &mut Vec<u8>) -> Result<(), Failure> {
    let corrupt = |what: &str| {
        Failure::other(format!(
            "bucket state {}: {what} (remove the state directory to start over)",
            path.display()
        ))
    };
    let io = |e: std::io::Error| corrupt(&e.to_string());
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let mut head = [0u8; 8];
    f.read_exact(&mut head).map_err(io)?;
    let parts = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    let w = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
    if w != width || p >= parts {
        return Err(corrupt("written for another layout"));
    }
    let header = 8 + 8 * (u64::from(parts) + 1);
    f.seek(SeekFrom::Start(8 + 8 * u64::from(p))).map_err(io)?;
    let mut bounds = [0u8; 16];
    f.read_exact(&mut bounds).map_err(io)?;
    let start = u64::from_le_bytes(bounds[..8].try_into().expect("8 bytes"));
    let end = u64::from_le_bytes(bounds[8..].try_into().expect("8 bytes"));
    let w64 = width as u64;
    let fits = start <= end
        && end
            .checked_mul(w64)
            .and_then(|b| b.checked_add(header))
            .is_some_and(|b| b <= len);
    if !fits {
        return Err(corrupt("truncated or corrupt"));
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
        let l = Layout::new(5, (3 * CHUNK) + 1, 2);
        assert_eq!((l.chunk, l.chunks), (CHUNK, 4));
        assert_eq!(l.units(), 8);
        assert_eq!(l.step(3), Step::Evaluate(3));
        assert_eq!(l.step(4), Step::Send(0));
        assert_eq!(l.step(6), Step::Compare(0));
        assert_eq!(l.producer(0), 0);
        assert_eq!(l.producer(7), 1);
        assert_eq!(Layout::new(0, 0, 1).units(), 2);
        // Small sets: at least as many chunks as parts.
        let l = Layout::new(3000, 2000, 7);
        assert_eq!((l.chunk, l.chunks, l.units()), (429, 7, 21));
    }
}
