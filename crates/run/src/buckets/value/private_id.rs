//! private-id past one machine's memory: Chen et al. 2024, Fig. 8 as
//! `privset_protocols::pso::private_id` fuses it (a distributed OPRF whose blinds are the
//! keys of the PSU's mqRPMT), its messages cut into the value layout's units.
//!
//! ```text
//! unit        producer -> consumer   payload                        consumer keeps on disk
//! evaluate i  receiver -> sender     H(x)^b1 of X's chunk i          as psu, and the answers
//!                                                                    H(x)^(b1 k2) for reply i
//! reply i     sender -> receiver     H(x)^(b1 k2), chunk i's order   ID(x) with x, by range
//! send j      sender -> receiver     H(y)^b2 of part j, sorted       as psu, and the answers
//!                                                                    H(y)^(b2 k1) for return j
//! return j    receiver -> sender     H(y)^(b2 k1), send j's order    ID(y) with y, by range
//! compare q   sender -> receiver     as psu
//! transfer j  both                   one-sided OT of ID(y) for part j's elements the
//!                                    receiver lacks
//! union r     receiver -> sender     the union's identifiers in range r, sorted
//! ```
//!
//! Identifiers are uniform hashes, so a *range* of them (the leading 32 bits scaled to
//! the part count) holds about a part's share of the union, and the ranges in order
//! are the union in order: each party sorts one range at a time and merge-joins it with
//! its own identifiers of that range to stream its table. Every unit carries what the
//! unbucketed run sends (in chunk or sorted order rather than shuffled), so each party
//! learns what it learns there: its identifiers, the union's, and the set sizes.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::rng::SessionRng;
use privset_protocols::meter::Meter;
use privset_protocols::partition_unit::TransferInput;
use privset_protocols::pso::PsoRole;
use privset_protocols::pso::mqrpmt;
use privset_protocols::pso::private_id::{self as fig8, ID_LEN};
use privset_protocols::pso::transfer;

use super::{UnitContext, corrupt, gather, part_path, read_chunk, sort_packed, write_parts_by};
use crate::fail::Failure;
use crate::link::write_private;

/// This party's OPRF share and blind (the blind is its mqRPMT key): from the job secret,
/// the same on every start.
pub(super) fn keys<C: CwPrf>(ctx: &UnitContext<'_>) -> Result<fig8::Keys<C>, Failure> {
    let mut rng = SessionRng::from_seed(ctx.keys.private("private-id/keys"));
    Ok(fig8::Keys::new(&mut rng)?)
}

/// The range of `parts` an identifier falls in: its leading 32 bits scaled, so that
/// ranges in order hold identifiers in order.
fn range_of(id: &[u8], parts: u32) -> u32 {
    let top = u32::from_be_bytes(id[..4].try_into().expect("4 bytes"));
    ((u64::from(top) * u64::from(parts)) >> 32) as u32
}

/// Evaluate unit `i` (sender) and send unit `j` (receiver): the OPRF answers to the
/// peer's blinded elements under this party's share, kept for reply or return unit
/// `index` (`kind`).
pub(super) fn keep_answers<C: CwPrf>(
    ctx: &UnitContext<'_>,
    kind: &str,
    index: u32,
    blinded: &[u8],
) -> Result<(), Failure> {
    let prf = keys::<C>(ctx)?.prf;
    let answers = mqrpmt::eval::<C>((&Meter::new(), "peer"), blinded, &prf, "peer's elements")?;
    write_private(&part_path(ctx.dir, kind, index), &answers)
}

/// A file kept whole: a reply or return unit's payload (the answers of
/// [`keep_answers`]), or the sender's union range.
pub(super) fn read_kept(ctx: &UnitContext<'_>, kind: &str, index: u32) -> Result<Vec<u8>, Failure> {
    let path = part_path(ctx.dir, kind, index);
    std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))
}

/// This party's identifiers from the peer's answers to its blinded elements (`n` of
/// them expected): the blind removed and the share applied in one evaluation.
fn identifiers<C: CwPrf>(
    ctx: &UnitContext<'_>,
    what: &str,
    n: usize,
    answers: &[u8],
) -> Result<Vec<[u8; ID_LEN]>, Failure> {
    if answers.len() != n * C::ELEMENT_LEN {
        return Err(Failure::peer(format!(
            "{what}: {} bytes, not the {} of {n} answers",
            answers.len(),
            n * C::ELEMENT_LEN
        )));
    }
    let unblind = keys::<C>(ctx)?.unblind;
    let elements = mqrpmt::eval::<C>((&Meter::new(), "own"), answers, &unblind, "answers")?;
    Ok(fig8::identifiers::<C>(&elements))
}

/// Reply unit `i` (receiver): the identifiers of its chunk `i`, kept with their items.
pub(super) fn consume_reply<C: CwPrf>(
    ctx: &UnitContext<'_>,
    i: u32,
    payload: &[u8],
) -> Result<(), Failure> {
    let n = ctx.chunk_len(PsoRole::Receiver, i) as usize;
    let ids = identifiers::<C>(ctx, &format!("reply unit {i}"), n, payload)?;
    let (items, _) = read_chunk(ctx, i)?;
    let slots = items.iter().map(|x| transfer::encode_item(x, ctx.id_slot));
    write_own(ctx, i, &ids, slots)
}

/// Return unit `j` (sender): the identifiers of its part `j`, kept with their items, and
/// in send unit `j`'s order for transfer unit `j`.
pub(super) fn consume_return<C: CwPrf>(
    ctx: &UnitContext<'_>,
    j: u32,
    payload: &[u8],
) -> Result<(), Failure> {
    let w = C::ELEMENT_LEN;
    let records = ctx.sorted_own(j, w)?;
    let width = ctx.own_width(w);
    let n = records.len() / width;
    let ids = identifiers::<C>(ctx, &format!("return unit {j}"), n, payload)?;
    write_private(&part_path(ctx.dir, "sent-ids", j), &ids.concat())?;
    let at = width - ctx.id_slot;
    let slots = records.chunks_exact(width).map(|r| r[at..].to_vec());
    write_own(ctx, j, &ids, slots)
}

/// This party's identifiers, each with its item's slot, partitioned by range into the
/// file `ids-<index>`.
fn write_own(
    ctx: &UnitContext<'_>,
    index: u32,
    ids: &[[u8; ID_LEN]],
    slots: impl Iterator<Item = Vec<u8>>,
) -> Result<(), Failure> {
    let width = ID_LEN + ctx.id_slot;
    let mut records = Vec::with_capacity(ids.len() * width);
    for (id, slot) in ids.iter().zip(slots) {
        records.extend_from_slice(id);
        records.extend_from_slice(&slot);
    }
    let parts = ctx.layout.parts;
    write_parts_by(
        parts,
        &part_path(ctx.dir, "ids", index),
        &records,
        width,
        |r| range_of(r, parts),
    )
}

/// This party's identifier records (identifier, item slot) of range `r`, sorted.
fn own_range(ctx: &UnitContext<'_>, r: u32) -> Result<Vec<u8>, Failure> {
    let files = match ctx.role {
        PsoRole::Receiver => ctx.layout.chunks,
        PsoRole::Sender => ctx.layout.parts,
    };
    let width = ID_LEN + ctx.id_slot;
    let mut records = gather(ctx.dir, "ids", files, r, width)?;
    sort_packed(&mut records, width);
    Ok(records)
}

/// Transfer unit `j` (sender): its identifiers of part `j` in send unit `j`'s order.
pub(super) fn transfer_input(ctx: &UnitContext<'_>, j: u32) -> Result<TransferInput, Failure> {
    let path = part_path(ctx.dir, "sent-ids", j);
    let ids = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
    if !ids.len().is_multiple_of(ID_LEN) {
        return Err(corrupt(&path, "truncated"));
    }
    let width = transfer::item_width(ID_LEN);
    Ok(TransferInput::Items {
        slots: ids
            .chunks_exact(ID_LEN)
            .flat_map(|id| transfer::encode_item(id, width))
            .collect(),
        width,
    })
}

/// Transfer unit `j` (receiver): the sender's identifiers it lacked, by range.
pub(super) fn keep_peer_ids(
    ctx: &UnitContext<'_>,
    j: u32,
    ids: Vec<Vec<u8>>,
) -> Result<(), Failure> {
    let mut records = Vec::with_capacity(ids.len() * ID_LEN);
    for id in ids {
        if id.len() != ID_LEN {
            return Err(Failure::peer(format!(
                "transfer unit {j}: a private identifier of {} bytes, not {ID_LEN}",
                id.len()
            )));
        }
        records.extend_from_slice(&id);
    }
    let parts = ctx.layout.parts;
    let path = part_path(ctx.dir, "peer-ids", j);
    write_parts_by(parts, &path, &records, ID_LEN, |r| range_of(r, parts))
}

/// Union unit `r` (receiver): the union's identifiers in range `r`, sorted, each once.
pub(super) fn union_range(ctx: &UnitContext<'_>, r: u32) -> Result<Vec<u8>, Failure> {
    let own = own_range(ctx, r)?;
    let peer = gather(ctx.dir, "peer-ids", ctx.layout.parts, r, ID_LEN)?;
    let mut ids: Vec<&[u8]> = own
        .chunks_exact(ID_LEN + ctx.id_slot)
        .map(|rec| &rec[..ID_LEN])
        .chain(peer.chunks_exact(ID_LEN))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids.concat())
}

/// The largest union unit: the union's share of a range (the sets' sizes bound it).
pub(super) fn max_union_len(ctx: &UnitContext<'_>) -> usize {
    let both = ctx.plan.items.saturating_add(ctx.plan.peer_items);
    (ctx.part_bound(both) as usize).saturating_mul(ID_LEN)
}

/// Union unit `r` (sender): checks that the receiver's range is sorted, in range and
/// holds every identifier of this party's in it (as the unbucketed sender checks the
/// union), and keeps it for the table.
pub(super) fn consume_union(ctx: &UnitContext<'_>, r: u32, payload: &[u8]) -> Result<(), Failure> {
    let bad = |what: &str| Failure::peer(format!("union unit {r}: {what}"));
    if !payload.len().is_multiple_of(ID_LEN) {
        return Err(bad("not whole identifiers"));
    }
    let ids: Vec<&[u8]> = payload.chunks_exact(ID_LEN).collect();
    if !ids.windows(2).all(|p| p[0] < p[1]) {
        return Err(bad("identifiers not sorted or repeated"));
    }
    if ids.iter().any(|id| range_of(id, ctx.layout.parts) != r) {
        return Err(bad("an identifier outside its range"));
    }
    let own = own_range(ctx, r)?;
    let mut union = ids.iter().peekable();
    for rec in own.chunks_exact(ID_LEN + ctx.id_slot) {
        let id = &rec[..ID_LEN];
        while union.next_if(|u| **u < id).is_some() {}
        if union.next_if(|u| **u == id).is_none() {
            return Err(bad("one of this party's identifiers is missing"));
        }
    }
    write_private(&part_path(ctx.dir, "union", r), payload)
}

/// Both parties, once every unit ran: calls `row` with each identifier of the union in
/// order and this party's item for it, if it has one.
pub(super) fn table(
    ctx: &UnitContext<'_>,
    mut row: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let width = ID_LEN + ctx.id_slot;
    let state = ctx.dir.join("bucket");
    for r in 0..ctx.layout.parts {
        let union = match ctx.role {
            PsoRole::Receiver => union_range(ctx, r)?,
            PsoRole::Sender => read_kept(ctx, "union", r)?,
        };
        let own = own_range(ctx, r)?;
        let mut own = own.chunks_exact(width).peekable();
        for id in union.chunks_exact(ID_LEN) {
            match own.next_if(|rec| &rec[..ID_LEN] == id) {
                Some(rec) => {
                    let item = transfer::decode_item(&rec[ID_LEN..])
                        .map_err(|_| corrupt(&state, "an item slot is not canonical"))?;
                    row(id, Some(item))?;
                }
                None => row(id, None)?,
            }
        }
        if own.next().is_some() {
            return Err(Failure::other(format!(
                "range {r} of the union lacks one of this party's identifiers: remove the \
                 state directory to start over"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Keys, Layout, Shape};
    use super::*;
    use crate::buckets::job::Plan;
    use crate::buckets::operation::JobConfig;
    use privset_protocols::pso::{Operation, PsoConfig};

    /// The sender's union unit: the receiver's range is kept when it is sorted, in its
    /// range and holds every identifier of the sender's; anything else is refused.
    #[test]
    fn a_union_unit_must_be_sorted_in_range_and_hold_the_senders_identifiers() {
        let dir = std::env::temp_dir().join(format!("privset-pid-union-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bucket")).unwrap();
        let config = PsoConfig::new(Operation::PrivateId);
        let plan = Plan {
            id: "11".repeat(32),
            key: "22".repeat(32),
            buckets: 2,
            items: 3,
            peer_items: 3,
            padded: 0,
            secret: "33".repeat(32),
        };
        let job = JobConfig::Pso(&config);
        let keys = Keys::of(&plan, job).unwrap();
        let ctx = UnitContext {
            dir: &dir,
            role: PsoRole::Sender,
            job,
            columns: 0,
            id_slot: transfer::item_width(4),
            plan: &plan,
            layout: Layout::of(&plan, PsoRole::Sender, Shape::PrivateId),
            keys: &keys,
        };
        // Range 0 of 2 holds identifiers below 0x80..; the sender's own: 0x10.., 0x20...
        let id = |b: u8| [b; ID_LEN];
        let own = [id(0x10), id(0x20), id(0x90)];
        let slots = ["a", "b", "c"].map(|x| transfer::encode_item(x.as_bytes(), ctx.id_slot));
        write_own(&ctx, 0, &own, slots.into_iter()).unwrap();
        for j in 1..ctx.layout.parts {
            write_own(&ctx, j, &[], std::iter::empty()).unwrap();
        }
        let payload = |ids: &[[u8; ID_LEN]]| ids.concat();
        let refused = |ids: &[[u8; ID_LEN]]| consume_union(&ctx, 0, &payload(ids)).is_err();
        assert!(refused(&[id(0x20), id(0x10)]), "unsorted");
        assert!(refused(&[id(0x10), id(0x10), id(0x20)]), "repeated");
        assert!(refused(&[id(0x10), id(0x20), id(0x90)]), "out of range");
        assert!(refused(&[id(0x10), id(0x30)]), "the sender's 0x20 missing");
        assert!(
            consume_union(&ctx, 0, &[0u8; ID_LEN + 1]).is_err(),
            "not whole"
        );
        consume_union(&ctx, 0, &payload(&[id(0x05), id(0x10), id(0x20)])).unwrap();
        consume_union(&ctx, 1, &payload(&[id(0x90), id(0xa0)])).unwrap();
        let mut rows = Vec::new();
        table(&ctx, |id, item| {
            rows.push((id[0], item.map(<[u8]>::to_vec)));
            Ok(())
        })
        .unwrap();
        let want = [
            (0x05, None),
            (0x10, Some(b"a".to_vec())),
            (0x20, Some(b"b".to_vec())),
            (0x90, Some(b"c".to_vec())),
            (0xa0, None),
        ];
        assert_eq!(rows, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ranges_in_order_hold_identifiers_in_order() {
        let mut rng = SessionRng::from_seed([3; 32]);
        let mut ids: Vec<[u8; ID_LEN]> = (0..5000)
            .map(|_| {
                let mut id = [0u8; ID_LEN];
                rng.fill(&mut id);
                id
            })
            .collect();
        ids.sort_unstable();
        for parts in [1, 2, 7, 64] {
            let ranges: Vec<u32> = ids.iter().map(|id| range_of(id, parts)).collect();
            assert!(ranges.windows(2).all(|w| w[0] <= w[1]), "{parts}");
            assert!(ranges.iter().all(|&r| r < parts), "{parts}");
            assert_eq!(
                ranges.last(),
                Some(&(parts - 1)),
                "{parts}: the last range is used"
            );
        }
        assert_eq!(range_of(&[0xff; ID_LEN], 5), 4);
        assert_eq!(range_of(&[0; ID_LEN], 5), 0);
    }
}
