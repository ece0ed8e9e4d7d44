//! pi-sum's homomorphic part of the value layout (Ion et al. 2020, Fig. 2): P2's public
//! key (the key unit), its encrypted values in each send unit's element order, and
//! P1's total: the encrypted sum over every part's matches, masked and re-randomized
//! once, so P2 decrypts the total and never a part's share of it.
//!
//! ```text
//! key unit (P2 -> P1):   he u8, value columns u8, sums of squares u8, value bound u64,
//!                        column-total bound u128, public key (u32 length, bytes)
//! send unit j (P2 -> P1): count u64, the elements, then every encrypted column of the
//!                        part (values, then squares), packed in the elements' order
//! total (P1 -> P2):      empty (the threshold stopped the run), or the count u64 and
//!                        every column's finished sum
//! ```
//!
//! P2's key pair and every encryption come from its job secret, P1's re-randomization
//! from its own: a unit run again sends the same bytes.

use privset_crypto::ahe::elgamal::ElGamal;
use privset_crypto::ahe::paillier::Paillier;
use privset_crypto::ahe::{ColumnBounds, HeId, PartialSums};
use privset_crypto::rng::SessionRng;
use privset_protocols::pi_sum::{self, MAX_PUBLIC_KEY_LEN, PiSumConfig, PiSumOutput};
use privset_protocols::pso::PsoRole;
use privset_protocols::wire::Reader;

use super::{Consumed, UnitContext, corrupt, part_file_total, part_path, read_chunk, read_hits};
use crate::buckets::operation::JobConfig;
use crate::fail::Failure;
use crate::link::write_private;

/// Bytes of the key unit before the key.
const ANNOUNCEMENT_LEN: usize = 1 + 1 + 1 + 8 + 16;

/// The largest key unit.
pub const MAX_KEY_PAYLOAD: usize = ANNOUNCEMENT_LEN + 4 + MAX_PUBLIC_KEY_LEN;

/// The schemes whose encrypted sums add across parts ([`PartialSums`]).
trait PartSums: PartialSums<PublicKey: 'static, SecretKey: 'static> {
    fn params(config: &PiSumConfig) -> Self::Params;
}

impl PartSums for Paillier {
    fn params(config: &PiSumConfig) -> Self::Params {
        config.paillier_params()
    }
}

impl PartSums for ElGamal {
    fn params(config: &PiSumConfig) -> Self::Params {
        config.elgamal
    }
}

/// Calls `$f::<H>($args)` with the scheme `H` the config names (ring-LWE is refused
/// before a job starts: `JobConfig::check`).
macro_rules! with_he {
    ($config:expr, $f:ident($($arg:expr),*)) => {
        match $config.he {
            HeId::Paillier => $f::<Paillier>($($arg),*),
            HeId::ElGamal => $f::<ElGamal>($($arg),*),
            HeId::Rlwe => Err(Failure::config(
                "--buckets adds encrypted sums with paillier or elgamal only",
            )),
        }
    };
}

/// P2's public settings of its values, which fix every column's packing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Announcement {
    he: HeId,
    columns: usize,
    sum_of_squares: bool,
    max_value: u64,
    max_sum: u128,
    /// P2's set size (public), which the bounds of squared columns depend on.
    sender_items: u64,
}

impl Announcement {
    /// P2's own, from its settings.
    fn own(ctx: &UnitContext<'_>) -> Result<Self, Failure> {
        let config = config(ctx)?;
        Ok(Self {
            he: config.he,
            columns: ctx.columns,
            sum_of_squares: config.sum_of_squares,
            max_value: config.max_value,
            max_sum: pi_sum::column_max_sum(config, ctx.plan.items as usize),
            sender_items: ctx.plan.items,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.he.code());
        out.push(self.columns as u8);
        out.push(u8::from(self.sum_of_squares));
        out.extend_from_slice(&self.max_value.to_be_bytes());
        out.extend_from_slice(&self.max_sum.to_be_bytes());
    }

    /// Reads P2's announcement (untrusted) and checks it against P1's settings.
    fn read(r: &mut Reader<'_>, config: &PiSumConfig, sender_items: u64) -> Result<Self, Failure> {
        let he = r.u8()?;
        let he = HeId::from_code(he)
            .ok_or_else(|| Failure::peer(format!("P2 names an unknown scheme {he}")))?;
        if he != config.he {
            return Err(Failure::config(format!(
                "P2 encrypts its values with {}, this party expects {}: both must pass the same --values-he",
                he.name(),
                config.he.name()
            )));
        }
        let columns = r.u8()? as usize;
        if columns == 0 || columns > pi_sum::MAX_VALUE_COLUMNS {
            return Err(Failure::peer(format!(
                "P2 announces {columns} value columns (1 to {})",
                pi_sum::MAX_VALUE_COLUMNS
            )));
        }
        let sum_of_squares = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(Failure::peer(format!("P2's squares flag is {other}"))),
        };
        Ok(Self {
            he,
            columns,
            sum_of_squares,
            max_value: r.u64()?,
            max_sum: r.u128()?,
            sender_items,
        })
    }

    /// The bounds of every encrypted column of a part of `items` items: the whole
    /// set's bounds on values and totals (the same packing in every part, so that the
    /// parts' sums add up), with the part's count.
    fn bounds(&self, items: u64) -> Vec<ColumnBounds> {
        let mut bounds = pi_sum::column_bounds(
            self.sender_items as usize,
            self.columns,
            self.max_value,
            self.max_sum,
            self.sum_of_squares,
        );
        for b in &mut bounds {
            b.items = items as usize;
        }
        bounds
    }
}

fn config<'a>(ctx: &UnitContext<'a>) -> Result<&'a PiSumConfig, Failure> {
    match ctx.job {
        JobConfig::PiSum(c) => Ok(c),
        JobConfig::Pso(_) => Err(Failure::other("a pi-sum unit in a set-operation job")),
    }
}

fn he_failure(what: &str) -> impl Fn(privset_crypto::ahe::HeError) -> Failure + '_ {
    move |e| Failure::config(format!("{what}: {e}"))
}

fn peer_he(what: &str) -> impl Fn(privset_crypto::ahe::HeError) -> Failure + '_ {
    move |e| Failure::peer(format!("{what}: {e}"))
}

/// P2's key pair: from its job secret, the same on every start; made once per process.
fn own_keys<'a, H: PartSums>(
    ctx: &UnitContext<'a>,
) -> Result<&'a (H::PublicKey, H::SecretKey), Failure> {
    let params = H::params(config(ctx)?);
    let keys = ctx.keys.he_keys.get_or_init(|| {
        let mut rng = SessionRng::from_seed(ctx.keys.private("he-key"));
        Box::new(H::keygen(&params, &mut rng))
    });
    keys.downcast_ref()
        .ok_or_else(|| Failure::other("the job's key pair is of another scheme"))
}

fn key_path(ctx: &UnitContext<'_>) -> std::path::PathBuf {
    ctx.dir.join("bucket").join("he-key.bin")
}

fn sums_path(ctx: &UnitContext<'_>) -> std::path::PathBuf {
    ctx.dir.join("bucket").join("sums.bin")
}

/// P1: P2's announcement and public key, as the key unit left them.
fn peer_key<H: PartSums>(ctx: &UnitContext<'_>) -> Result<(Announcement, H::PublicKey), Failure> {
    let path = key_path(ctx);
    let bytes = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
    read_key::<H>(ctx, &bytes)
}

/// Reads and validates a key unit's payload.
fn read_key<H: PartSums>(
    ctx: &UnitContext<'_>,
    payload: &[u8],
) -> Result<(Announcement, H::PublicKey), Failure> {
    let config = config(ctx)?;
    let mut r = Reader::new(payload, "key unit");
    let announced = Announcement::read(&mut r, config, ctx.items(PsoRole::Sender))?;
    let key = r.bytes(MAX_PUBLIC_KEY_LEN)?;
    r.finish()?;
    let pk = H::decode_public_key(key, &H::params(config)).map_err(peer_he("P2's public key"))?;
    for b in announced.bounds(ctx.items(PsoRole::Sender)) {
        H::sum_ciphertexts(&pk, &b).map_err(peer_he("P2's column bounds"))?;
    }
    Ok((announced, pk))
}

/// P2: the key unit's payload. Checks first that every column's total is within the
/// announced bound (a smaller `--sum-bound` than value bound × items) and that the
/// scheme can decrypt sums that large.
pub fn key_payload(ctx: &UnitContext<'_>) -> Result<Vec<u8>, Failure> {
    let config = config(ctx)?;
    let announced = Announcement::own(ctx)?;
    if config.max_sum.is_some() {
        let mut totals = vec![0u128; ctx.columns];
        for i in 0..ctx.layout.chunks {
            let (_, values) = read_chunk(ctx, i)?;
            for (k, v) in values.iter().enumerate() {
                totals[k % ctx.columns] += u128::from(*v);
            }
        }
        if let Some(t) = totals.iter().find(|&&t| t > announced.max_sum) {
            return Err(Failure::input(format!(
                "a value column sums to {t}, more than --sum-bound {}",
                announced.max_sum
            )));
        }
    }
    with_he!(config, key_payload_with(ctx, announced))
}

fn key_payload_with<H: PartSums>(
    ctx: &UnitContext<'_>,
    announced: Announcement,
) -> Result<Vec<u8>, Failure> {
    let (pk, _) = own_keys::<H>(ctx)?;
    for b in announced.bounds(ctx.plan.items) {
        H::sum_ciphertexts(pk, &b).map_err(he_failure("the value columns' bounds"))?;
    }
    let mut out = Vec::new();
    announced.encode(&mut out);
    let key = H::encode_public_key(pk);
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(&key);
    Ok(out)
}

/// P1: checks the key unit and keeps it for the send units and the total.
pub fn consume_key(ctx: &UnitContext<'_>, payload: &[u8]) -> Result<(), Failure> {
    with_he!(config(ctx)?, check_key(ctx, payload))?;
    write_private(&key_path(ctx), payload)
}

fn check_key<H: PartSums>(ctx: &UnitContext<'_>, payload: &[u8]) -> Result<(), Failure> {
    read_key::<H>(ctx, payload).map(drop)
}

/// P2: appends send unit `j`'s encrypted columns to `out`, from its sorted own records
/// (a PRF value of `w` bytes, then the values).
pub fn append_columns(
    ctx: &UnitContext<'_>,
    j: u32,
    records: &[u8],
    w: usize,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let width = ctx.own_width(w);
    let mut columns = vec![Vec::with_capacity(records.len() / width); ctx.columns];
    for r in records.chunks_exact(width) {
        for (c, column) in columns.iter_mut().enumerate() {
            let at = w + 8 * c;
            column.push(u64::from_le_bytes(
                r[at..at + 8].try_into().expect("8 bytes"),
            ));
        }
    }
    let config = config(ctx)?;
    let plain = pi_sum::plaintext_columns(config, &columns);
    with_he!(config, append_columns_with(ctx, j, &plain, out))
}

fn append_columns_with<H: PartSums>(
    ctx: &UnitContext<'_>,
    j: u32,
    plain: &[Vec<u64>],
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    let (pk, sk) = own_keys::<H>(ctx)?;
    let items = plain.first().map_or(0, Vec::len) as u64;
    let mut rng = SessionRng::from_seed(ctx.keys.private(&format!("encrypt/{j}")));
    for (column, b) in plain.iter().zip(Announcement::own(ctx)?.bounds(items)) {
        let packed = H::encrypt_column(pk, sk, &b, column, &mut rng)
            .map_err(he_failure("encrypting the values"))?;
        out.extend_from_slice(&packed);
    }
    Ok(())
}

/// P1: the bytes of encrypted columns a send unit of `items` elements carries (of the
/// largest part's bound: the most a send unit may carry).
pub fn columns_len(ctx: &UnitContext<'_>, items: u64) -> Result<usize, Failure> {
    with_he!(config(ctx)?, columns_len_with(ctx, items))
}

fn columns_len_with<H: PartSums>(ctx: &UnitContext<'_>, items: u64) -> Result<usize, Failure> {
    let (announced, pk) = peer_key::<H>(ctx)?;
    let mut len = 0usize;
    for b in announced.bounds(items) {
        let n = H::column_ciphertexts(&pk, &b).map_err(peer_he("P2's column bounds"))?;
        len = len.saturating_add(n.saturating_mul(H::ciphertext_len(&pk)));
    }
    Ok(len)
}

/// P1: takes send unit `j`'s encrypted columns (for `n` elements) from `r` and keeps
/// them for the total. Their ciphertexts are validated when summed, as unbucketed.
pub fn keep_columns(
    ctx: &UnitContext<'_>,
    j: u32,
    n: u64,
    r: &mut Reader<'_>,
) -> Result<(), Failure> {
    let len = columns_len(ctx, n)?;
    let columns = r.take(len)?;
    write_private(&part_path(ctx.dir, "cols", j), columns)
}

/// P1: the total unit's payload.
pub fn total_payload(ctx: &UnitContext<'_>) -> Result<Vec<u8>, Failure> {
    let config = config(ctx)?;
    // Which of each send unit's elements matched, from every compare unit.
    let parts = ctx.layout.parts;
    let mut selected: Vec<Vec<usize>> = vec![Vec::new(); parts as usize];
    for q in 0..parts {
        for (j, index) in read_hits(ctx.dir, q)? {
            selected
                .get_mut(j as usize)
                .ok_or_else(|| corrupt(&super::hits_path(ctx.dir, q), "a hit past the parts"))?
                .push(index as usize);
        }
    }
    let count: u64 = selected.iter().map(|s| s.len() as u64).sum();
    if aborted(config, count) {
        return Ok(Vec::new());
    }
    with_he!(config, total_with(ctx, count, &selected))
}

/// True when P1's threshold stops the run before any sum is computed.
fn aborted(config: &PiSumConfig, cardinality: u64) -> bool {
    config.threshold.is_some_and(|t| cardinality < t)
}

fn total_with<H: PartSums>(
    ctx: &UnitContext<'_>,
    count: u64,
    selected: &[Vec<usize>],
) -> Result<Vec<u8>, Failure> {
    let (announced, pk) = peer_key::<H>(ctx)?;
    let ct_len = H::ciphertext_len(&pk);
    let mut partials: Vec<Option<Vec<u8>>> = vec![None; announced.bounds(0).len()];
    for (j, chosen) in selected.iter().enumerate() {
        let j = j as u32;
        let n = part_file_total(&part_path(ctx.dir, "peer", j))?;
        let path = part_path(ctx.dir, "cols", j);
        let columns = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
        let mut at = 0usize;
        for (b, partial) in announced.bounds(n).iter().zip(partials.iter_mut()) {
            let len =
                H::column_ciphertexts(&pk, b).map_err(peer_he("P2's column bounds"))? * ct_len;
            let column = columns
                .get(at..at + len)
                .ok_or_else(|| corrupt(&path, "truncated"))?;
            at += len;
            let part =
                H::partial_sum(&pk, b, column, chosen).map_err(peer_he("P2's encrypted values"))?;
            *partial = Some(match partial.take() {
                None => part,
                Some(sum) => H::add_partials(&pk, b, &sum, &part)
                    .map_err(|e| corrupt(&path, &e.to_string()))?,
            });
        }
        if at != columns.len() {
            return Err(corrupt(&path, "longer than its columns"));
        }
    }
    let mut rng = SessionRng::from_seed(ctx.keys.private("total"));
    let mut out = count.to_be_bytes().to_vec();
    let bounds = announced.bounds(ctx.items(PsoRole::Sender));
    for (b, partial) in bounds.iter().zip(partials) {
        let partial = partial.ok_or_else(|| Failure::other("a job without parts"))?;
        let sum = H::finish_sum(&pk, b, &partial, &mut rng)
            .map_err(|e| Failure::other(format!("finishing the sum: {e}")))?;
        out.extend_from_slice(&sum);
    }
    Ok(out)
}

/// P2: the largest total it accepts.
pub fn max_total_len(ctx: &UnitContext<'_>) -> Result<usize, Failure> {
    with_he!(config(ctx)?, total_len(ctx))
}

fn total_len<H: PartSums>(ctx: &UnitContext<'_>) -> Result<usize, Failure> {
    let (pk, _) = own_keys::<H>(ctx)?;
    let mut len = 8usize;
    for b in Announcement::own(ctx)?.bounds(ctx.plan.items) {
        let n = H::sum_ciphertexts(pk, &b).map_err(he_failure("the value columns' bounds"))?;
        len = len.saturating_add(n * H::ciphertext_len(pk));
    }
    Ok(len)
}

/// P2: decrypts the total and keeps its answer.
pub fn consume_total(ctx: &UnitContext<'_>, payload: &[u8]) -> Result<Consumed, Failure> {
    if payload.is_empty() {
        write_private(&sums_path(ctx), &[1])?;
        return Ok(Consumed { count: None });
    }
    with_he!(config(ctx)?, consume_total_with(ctx, payload))
}

fn consume_total_with<H: PartSums>(
    ctx: &UnitContext<'_>,
    payload: &[u8],
) -> Result<Consumed, Failure> {
    let (pk, sk) = own_keys::<H>(ctx)?;
    let mut r = Reader::new(payload, "total");
    let count = r.u64()?;
    let smaller = ctx.plan.items.min(ctx.plan.peer_items);
    if count > smaller {
        return Err(Failure::peer(format!(
            "P1's count {count} exceeds the smaller set ({smaller})"
        )));
    }
    let mut out = vec![0u8];
    out.extend_from_slice(&count.to_le_bytes());
    for b in Announcement::own(ctx)?.bounds(ctx.plan.items) {
        let n = H::sum_ciphertexts(pk, &b).map_err(he_failure("the value columns' bounds"))?;
        let bytes = r.take(n * H::ciphertext_len(pk))?;
        let sum = H::decrypt_sum(sk, &b, bytes).map_err(peer_he("P1's encrypted sum"))?;
        out.extend_from_slice(&sum.to_le_bytes());
    }
    r.finish()?;
    write_private(&sums_path(ctx), &out)?;
    Ok(Consumed { count: Some(count) })
}

/// A finished job's output: P1's from the compare units' `cardinality`, P2's from the
/// total it decrypted.
pub fn output(ctx: &UnitContext<'_>, cardinality: u64) -> Result<PiSumOutput, Failure> {
    let config = config(ctx)?;
    let peer_items = ctx.plan.peer_items;
    if ctx.role == PsoRole::Receiver {
        return Ok(PiSumOutput::Cardinality {
            cardinality,
            aborted: aborted(config, cardinality),
            segments: None,
            peer_items,
        });
    }
    let path = sums_path(ctx);
    let bytes = std::fs::read(&path).map_err(|e| corrupt(&path, &e.to_string()))?;
    if bytes == [1] {
        return Ok(PiSumOutput::Aborted { peer_items });
    }
    let columns = Announcement::own(ctx)?.bounds(0).len();
    if bytes.len() != 9 + 16 * columns || bytes[0] != 0 {
        return Err(corrupt(&path, "not a total"));
    }
    let count = u64::from_le_bytes(bytes[1..9].try_into().expect("8 bytes"));
    let totals = bytes[9..]
        .chunks_exact(16)
        .map(|b| u128::from_le_bytes(b.try_into().expect("16 bytes")))
        .collect();
    Ok(PiSumOutput::with_sums(
        count,
        totals,
        ctx.columns,
        None,
        peer_items,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announcement() -> Announcement {
        Announcement {
            he: HeId::ElGamal,
            columns: 2,
            sum_of_squares: true,
            max_value: 1000,
            max_sum: 1 << 40,
            sender_items: 5000,
        }
    }

    fn config(he: HeId) -> PiSumConfig {
        PiSumConfig {
            he,
            ..PiSumConfig::default()
        }
    }

    #[test]
    fn the_key_units_announcement_round_trips_and_hostile_ones_are_refused() {
        let mut bytes = Vec::new();
        announcement().encode(&mut bytes);
        assert_eq!(bytes.len(), ANNOUNCEMENT_LEN);
        let read = Announcement::read(&mut Reader::new(&bytes, "t"), &config(HeId::ElGamal), 5000);
        assert_eq!(read.unwrap(), announcement());
        // Another scheme than this party's is a configuration error naming both.
        let e = Announcement::read(&mut Reader::new(&bytes, "t"), &config(HeId::Paillier), 5000)
            .unwrap_err();
        assert!(
            e.message.contains("elgamal") && e.message.contains("paillier"),
            "{e:?}"
        );
        let hostile = |at: usize, byte: u8| {
            let mut b = bytes.clone();
            b[at] = byte;
            Announcement::read(&mut Reader::new(&b, "t"), &config(HeId::ElGamal), 5000)
        };
        assert!(hostile(0, 9).is_err(), "unknown scheme");
        assert!(hostile(1, 0).is_err(), "no columns");
        assert!(hostile(1, 65).is_err(), "too many columns");
        assert!(hostile(2, 2).is_err(), "a flag that is neither 0 nor 1");
        for len in 0..bytes.len() {
            let r = Announcement::read(
                &mut Reader::new(&bytes[..len], "t"),
                &config(HeId::ElGamal),
                5000,
            );
            assert!(r.is_err(), "truncated to {len} bytes");
        }
    }

    #[test]
    fn every_parts_columns_share_the_whole_sets_bounds() {
        let a = announcement();
        let whole = a.bounds(5000);
        let part = a.bounds(17);
        assert_eq!(part.len(), 4, "two columns and their squares");
        for (w, p) in whole.iter().zip(&part) {
            assert_eq!(
                (p.items, p.max_value, p.max_sum),
                (17, w.max_value, w.max_sum)
            );
        }
    }
}
