//! Steps shared by the forward and reverse PI-Sum parties.

use std::collections::HashSet;

use privset_crypto::ahe::{ColumnBounds, HeError};
use privset_crypto::cwprf::CwPrf;
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;

use super::{HeChoice, Hello, PiSumConfig, PiSumOutput, Role, SegmentResult, kind};
use crate::engine::{Handshake, Message, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::meter::Meter;
use crate::wire::{PartyId, Reader};

/// Longest public key accepted, whatever the scheme (a Paillier key at 8192 bits with
/// s = 4 and a DJN base, or an RLWE key at n = 8192 of about 121 KB, is under this).
pub const MAX_PUBLIC_KEY_LEN: usize = 1 << 18;

/// `items` rearranged as `order` says.
pub fn gather<'a>(items: &'a [Vec<u8>], order: &[u32]) -> Vec<&'a [u8]> {
    order
        .iter()
        .map(|&i| items[i as usize].as_slice())
        .collect()
}

/// Fixed-width blocks of `packed` rearranged as `order` says.
pub fn permute_blocks(packed: &[u8], width: usize, order: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed.len());
    permute_blocks_into(&mut out, packed, width, order);
    out
}

/// [`permute_blocks`] appended to `out`.
pub fn permute_blocks_into(out: &mut Vec<u8>, packed: &[u8], width: usize, order: &[u32]) {
    for &i in order {
        let i = i as usize;
        out.extend_from_slice(&packed[i * width..(i + 1) * width]);
    }
}

/// `encode(decode(e)^k)` for every packed element received from the peer; invalid
/// elements become a `PeerMisbehaved` naming the message.
pub fn exponentiate_received<C: CwPrf>(
    (meter, phase): (&Meter, &'static str),
    packed: &[u8],
    k: &C::Key,
    what: &'static str,
) -> Result<Vec<u8>, ProtocolError> {
    if !packed.len().is_multiple_of(C::ELEMENT_LEN) {
        // Whole, so the batch call names the bad length.
        return C::eval_batch(packed, k)
            .map_err(|source| PeerMisbehaved::InvalidElement { what, source }.into());
    }
    meter.try_slices(phase, packed, C::ELEMENT_LEN, |first, slice| {
        C::eval_batch(slice, k).map_err(|source| {
            PeerMisbehaved::InvalidElement {
                what,
                source: source.at_offset(first),
            }
            .into()
        })
    })
}

/// `H(item)^k`, encoded, for every item, counted on the meter as the phase named.
pub fn hash_exponentiate<C: CwPrf, I: AsRef<[u8]> + Sync>(
    (meter, phase): (&Meter, &'static str),
    dst: &[u8],
    items: &[I],
    k: &C::Key,
) -> Vec<u8> {
    meter.slices(phase, items, 1, |_, slice| {
        C::hash_eval_batch(dst, slice, k)
    })
}

/// Checks that every packed element received from the peer is a valid group element
/// (used where the elements are only compared, never exponentiated).
pub fn validate_elements<C: CwPrf>(packed: &[u8], what: &'static str) -> Result<(), ProtocolError> {
    C::validate_batch(packed)
        .map_err(|source| PeerMisbehaved::InvalidElement { what, source }.into())
}

/// Positions `j` of `candidates` (packed elements) that lie in the set `members`.
pub fn matches_in_list(candidates: &[u8], members: &[u8], width: usize) -> Vec<usize> {
    let set: HashSet<&[u8]> = members.chunks_exact(width).collect();
    matching_positions(candidates, width, |e| set.contains(e))
}

/// Positions of the packed elements for which `contains` holds, in order.
pub fn matching_positions(
    candidates: &[u8],
    width: usize,
    contains: impl Fn(&[u8]) -> bool + Sync,
) -> Vec<usize> {
    candidates
        .par_chunks_exact(width)
        .enumerate()
        .filter_map(|(j, e)| contains(e).then_some(j))
        .collect()
}

/// Wraps a homomorphic-layer error on peer data.
pub fn bad_ciphertext(what: &'static str) -> impl Fn(HeError) -> ProtocolError {
    move |source| PeerMisbehaved::InvalidCiphertext { what, source }.into()
}

pub use crate::wire::checked_len;

/// Reads P2's public key from a message.
pub fn read_public_key<H: HeChoice>(
    r: &mut Reader<'_>,
    params: &H::Params,
) -> Result<H::PublicKey, ProtocolError> {
    let bytes = r.bytes(MAX_PUBLIC_KEY_LEN)?;
    H::decode_public_key(bytes, params).map_err(bad_ciphertext("P2's public key"))
}

/// Appends a length-prefixed field.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Reads one packed column of `H::column_ciphertexts` ciphertexts.
pub fn take_column<'a, H: HeChoice>(
    r: &mut Reader<'a>,
    pk: &H::PublicKey,
    bounds: &ColumnBounds,
    packed: bool,
) -> Result<&'a [u8], ProtocolError> {
    let count = if packed {
        H::column_ciphertexts(pk, bounds).map_err(bad_ciphertext("column layout"))?
    } else {
        bounds.items
    };
    r.take(checked_len(
        count,
        H::ciphertext_len(pk),
        "encrypted column",
    )?)
}

/// The peer's hello, moved out of the slot `check_settings` filled; the engine starts the
/// protocol only once every hello is in.
pub fn take_peer(slot: &mut Option<Hello>) -> Result<Hello, ProtocolError> {
    slot.take().ok_or(ProtocolError::ApiMisuse(
        "the protocol started before the peer's hello",
    ))
}

/// P1's item order for round 1: grouped by segment (segment 0 first), shuffled within
/// each segment, so P2 learns segment sizes and nothing about which item is where.
pub fn segment_order(
    segment_of: Option<&[u32]>,
    segments: usize,
    items: usize,
    rng: &mut SessionRng,
) -> Vec<u32> {
    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); segments.max(1)];
    for i in 0..items {
        let s = segment_of.map_or(0, |s| s[i] as usize);
        groups[s].push(i as u32);
    }
    let mut order = Vec::with_capacity(items);
    for mut g in groups {
        rng.shuffle(&mut g);
        order.extend(g);
    }
    order
}

/// What every PI-Sum party announces and checks, whatever its role and variant: its
/// settings and input, its hello, and the peer's hello once checked.
pub struct Setup {
    pub role: Role,
    pub config: PiSumConfig,
    pub input: Dataset,
    /// This party's settings, as announced.
    pub hello: Hello,
    /// The peer's settings, once checked.
    pub peer: Option<Hello>,
}

impl Setup {
    pub fn new(role: Role, config: PiSumConfig, input: Dataset) -> Self {
        Self {
            hello: Hello::new(role, &config, &input),
            role,
            config,
            input,
            peer: None,
        }
    }
}

impl Handshake for Setup {
    fn roster(&self) -> Roster {
        self.role.roster()
    }

    fn kind_name(k: u8) -> &'static str {
        kind::name(k)
    }

    fn settings(&self) -> Vec<u8> {
        self.hello.encode()
    }

    fn max_settings_len(&self) -> usize {
        super::hello::MAX_LEN
    }

    fn check_settings(&mut self, from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let peer = Hello::decode(settings)?;
        self.hello
            .check_peer(&peer, Role::of(from), self.config.max_peer_items)?;
        self.peer = Some(peer);
        Ok(())
    }
}

/// P2's side of the values in every protocol: its key pair and its encrypted value
/// columns (values, then squares) in its shuffled item order, with their public bounds.
pub struct P2Values<H: HeChoice> {
    pub pk: H::PublicKey,
    pub sk: H::SecretKey,
    /// Packed ciphertexts per encrypted column, item `i` the `i`-th of `order`.
    pub columns: Vec<Vec<u8>>,
    pub bounds: Vec<ColumnBounds>,
}

impl<H: HeChoice> P2Values<H> {
    /// Draws the key (parameters from P2's own hello) and encrypts every column in the
    /// order `order` gives the items, counted on the meter one column at a time (a
    /// column is packed into ciphertexts as a whole).
    pub fn encrypt(
        session: &mut Session<'_>,
        phase: &'static str,
        setup: &Setup,
        order: &[u32],
    ) -> Result<Self, ProtocolError> {
        let (pk, sk) = H::keygen(&H::params(&setup.config, &setup.hello), session.rng);
        let bounds = super::encrypted_columns(&setup.hello);
        session.meter.begin(phase, bounds.len());
        let columns = super::plaintext_columns(&setup.config, &setup.input.columns)
            .iter()
            .zip(&bounds)
            .map(|(col, b)| {
                let shuffled: Vec<u64> = order.iter().map(|&i| col[i as usize]).collect();
                let column = H::encrypt_column(&pk, &sk, b, &shuffled, session.rng);
                session.meter.add(1);
                column
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProtocolError::Config(format!("encrypting the values: {e}")))?;
        Ok(Self {
            pk,
            sk,
            columns,
            bounds,
        })
    }

    /// Appends the length-prefixed public key.
    pub fn put_key(&self, out: &mut Vec<u8>) {
        put_bytes(out, &H::encode_public_key(&self.pk));
    }

    /// Appends every encrypted column, in order.
    pub fn put_columns(&self, out: &mut Vec<u8>) {
        for column in &self.columns {
            out.extend_from_slice(column);
        }
    }

    /// Bytes of every encrypted column.
    pub fn columns_len(&self) -> usize {
        self.columns.iter().map(Vec::len).sum()
    }

    /// P2's output from P1's last message ([`read_sums`]).
    pub fn read_sums(
        &self,
        message: Message<'_>,
        setup: &Setup,
        peer: &Hello,
    ) -> Result<PiSumOutput, ProtocolError> {
        read_sums::<H>(message, setup, peer, (&self.pk, &self.sk), &self.bounds)
    }

    /// Bytes of P1's largest possible last message ([`max_sums_len`]).
    pub fn max_sums_len(&self, segments: usize) -> usize {
        max_sums_len::<H>(&self.pk, &self.bounds, segments)
    }
}

/// The cardinality field of round 3 for a segment the threshold suppressed: no sums
/// follow it (docs/wire.md). Above every real cardinality, which P2 checks against the
/// set sizes.
pub const SUPPRESSED: u64 = u64::MAX;

/// P1's last message, once it knows which of P2's items are in the intersection (one
/// selection per segment). With a threshold `t` (Ion et al. 2020, Sec. 3.4), a segment
/// with fewer than `t` matches is suppressed: P2 gets [`SUPPRESSED`] in place of its
/// cardinality and sums, which is all the threshold lets it learn, since a segment's sum
/// over one or a few matches would say which of P2's items are in P1's set however
/// large the total is. When every segment is suppressed (always so for an unsegmented
/// run below `t`) P1 sends the abort instead. Otherwise per segment `|J|` and the
/// masked, re-randomized encrypted sum of every column. Returns P1's output: the total
/// and every segment's cardinality, suppressed or not.
pub fn send_sums<H: HeChoice>(
    session: &mut Session<'_>,
    setup: &Setup,
    peer: &Hello,
    pk: &H::PublicKey,
    packed_columns: &[&[u8]],
    selections: &[Vec<usize>],
) -> Result<PiSumOutput, ProtocolError> {
    let cardinality: u64 = selections.iter().map(|s| s.len() as u64).sum();
    let threshold = setup.config.threshold;
    let suppressed: Vec<bool> = selections
        .iter()
        .map(|s| threshold.is_some_and(|t| (s.len() as u64) < t))
        .collect();
    let segments = setup.input.segment_of.as_ref().map(|_| {
        selections
            .iter()
            .zip(&suppressed)
            .zip(&setup.input.segment_names)
            .map(|((s, &suppressed), name)| SegmentResult {
                segment: name.clone(),
                cardinality: Some(s.len() as u64),
                sums: None,
                suppressed,
            })
            .collect()
    });
    let to = Role::P2.id();
    let aborted = threshold.is_some() && suppressed.iter().all(|&s| s);
    if aborted {
        session.send(to, kind::ABORT, &[]);
    } else {
        let columns = super::encrypted_columns(peer);
        let mut round3 = Vec::new();
        for (selected, &suppressed) in selections.iter().zip(&suppressed) {
            if suppressed {
                // Nothing of the segment is summed, so nothing of it can leak.
                round3.extend_from_slice(&SUPPRESSED.to_be_bytes());
                continue;
            }
            round3.extend_from_slice(&(selected.len() as u64).to_be_bytes());
            for (bounds, column) in columns.iter().zip(packed_columns) {
                let sum = H::sum_selected(pk, bounds, column, selected, session.rng)
                    .map_err(bad_ciphertext("P2's encrypted values"))?;
                round3.extend_from_slice(&sum);
            }
        }
        session.send(to, kind::ROUND3, &round3);
    }
    Ok(PiSumOutput::Cardinality {
        cardinality,
        aborted,
        segments,
        peer_items: peer.items,
    })
}

/// Upper bound of P2's encrypted columns, before its key is known.
pub fn max_columns_len<H: HeChoice>(config: &PiSumConfig, peer_p2: &Hello) -> usize {
    let params = H::params(config, peer_p2);
    super::encrypted_columns(peer_p2)
        .iter()
        .map(|b| H::max_column_len(&params, b))
        .fold(0, usize::saturating_add)
}

/// Bytes of P1's largest possible round 3: per segment a count and every column's sum.
pub fn max_sums_len<H: HeChoice>(
    pk: &H::PublicKey,
    bounds: &[ColumnBounds],
    segments: usize,
) -> usize {
    let per_segment: usize = bounds
        .iter()
        .map(|b| {
            H::sum_ciphertexts(pk, b)
                .unwrap_or(0)
                .saturating_mul(H::ciphertext_len(pk))
        })
        .fold(8, usize::saturating_add);
    per_segment.saturating_mul(segments)
}

/// P2's output from P1's last message (round 3 or the threshold abort): per segment the
/// cardinality and the decrypted sums of every column, or that the segment was
/// suppressed; the totals over the revealed segments.
pub fn read_sums<H: HeChoice>(
    message: Message<'_>,
    setup: &Setup,
    peer: &Hello,
    keys: (&H::PublicKey, &H::SecretKey),
    bounds: &[ColumnBounds],
) -> Result<PiSumOutput, ProtocolError> {
    let (pk, sk) = keys;
    if message.kind == kind::ABORT {
        Reader::new(message.body, "abort").finish()?;
        return Ok(PiSumOutput::Aborted {
            peer_items: peer.items,
        });
    }
    let body = message.expect(kind::ROUND3)?;
    let mut r = Reader::new(body, "round 3");
    let segment_sizes = peer.segment_sizes();
    let value_columns = setup.input.columns.len();
    let mut segments = Vec::with_capacity(segment_sizes.len());
    let mut totals = vec![0u128; bounds.len()];
    let mut cardinality = 0u64;
    for (index, &size) in segment_sizes.iter().enumerate() {
        let card = r.u64()?;
        if card == SUPPRESSED {
            segments.push(SegmentResult {
                segment: index.to_string(),
                cardinality: None,
                sums: None,
                suppressed: true,
            });
            continue;
        }
        if card > size.min(setup.hello.items) {
            return Err(PeerMisbehaved::Inconsistent(format!(
                "segment {index}: cardinality {card} exceeds the smaller set size"
            ))
            .into());
        }
        cardinality += card;
        let mut sums = Vec::with_capacity(bounds.len());
        for (c, b) in bounds.iter().enumerate() {
            let n = H::sum_ciphertexts(pk, b).map_err(bad_ciphertext("sum layout"))?;
            let bytes = r.take(checked_len(n, H::ciphertext_len(pk), "encrypted sum")?)?;
            let sum = H::decrypt_sum(sk, b, bytes).map_err(bad_ciphertext("P1's encrypted sum"))?;
            totals[c] += sum;
            sums.push(sum);
        }
        segments.push(SegmentResult {
            segment: index.to_string(),
            cardinality: Some(card),
            sums: Some(sums[..value_columns.min(sums.len())].to_vec()),
            suppressed: false,
        });
    }
    r.finish()?;
    if segments.iter().all(|s| s.suppressed) {
        // P1 aborts when no segment reaches its threshold; an unsegmented run has one.
        return Err(PeerMisbehaved::Inconsistent(
            "round 3 suppresses every segment (a threshold run aborts instead)".into(),
        )
        .into());
    }
    Ok(PiSumOutput::with_sums(
        cardinality,
        totals,
        value_columns,
        (!peer.segments.is_empty()).then_some(segments),
        peer.items,
    ))
}
