//! How a party sends a set the other only tests membership in: the last message of the
//! DH-style protocols (PI-Sum's `Z`, Ion et al. 2020, Fig. 2; the mqRPMT's answer,
//! Chen et al. 2024, Fig. 3). The elements are fixed-width byte strings (encoded group
//! elements); the encoding must hide the order in which they were computed, so a list
//! is shuffled and a filter is a canonical function of the set.

use privset_crypto::filter::{self, FilterKind, FilterParams, SetFilter};
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;
use std::collections::HashSet;

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{Reader, checked_len};

/// The encoding both parties agree on in their hellos.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetEncoding {
    /// The elements, shuffled.
    List,
    /// An order-hiding filter with a false-positive rate of 2^-40 over all the peer's
    /// look-ups together (GCS: smaller; Bloom: faster to query).
    Filter(FilterKind),
}

impl SetEncoding {
    pub fn name(self) -> &'static str {
        match self {
            SetEncoding::List => "list",
            SetEncoding::Filter(k) => k.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "list" => Some(SetEncoding::List),
            _ => FilterKind::from_name(name).map(SetEncoding::Filter),
        }
    }

    /// Wire code: 0 for the list, the filter kind's code otherwise.
    pub fn code(self) -> u8 {
        match self {
            SetEncoding::List => 0,
            SetEncoding::Filter(k) => k.code(),
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SetEncoding::List),
            _ => FilterKind::from_code(code).map(SetEncoding::Filter),
        }
    }

    /// Encodes `elements` (packed, `width` bytes each) for a peer that will make
    /// `queries` look-ups: the shuffled list, or the filter as a u32-length-prefixed
    /// field. `key` keys the filter's hash (a per-session value both parties derive).
    pub fn encode(
        self,
        elements: &[u8],
        width: usize,
        queries: usize,
        key: &[u8; 32],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, ProtocolError> {
        let n = elements.len() / width;
        Ok(match self {
            SetEncoding::List => {
                let mut out = Vec::with_capacity(elements.len());
                for i in rng.permutation(n) {
                    let i = i as usize;
                    out.extend_from_slice(&elements[i * width..(i + 1) * width]);
                }
                out
            }
            SetEncoding::Filter(kind) => {
                let params = FilterParams::new(kind, n, queries);
                let encoded = filter::encode(&params, key, elements, width);
                let len = u32::try_from(encoded.len()).map_err(|_| {
                    ProtocolError::Config(format!(
                        "a filter of {} bytes exceeds the 4 GiB field; use the list encoding",
                        encoded.len()
                    ))
                })?;
                let mut out = Vec::with_capacity(encoded.len() + 4);
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&encoded);
                out
            }
        })
    }

    /// Reads a set of `elements` elements of `width` bytes, encoded for `queries`
    /// look-ups, from a message of the peer; `what` names it in errors.
    pub fn read<'a>(
        self,
        r: &mut Reader<'a>,
        elements: usize,
        width: usize,
        queries: usize,
        key: &[u8; 32],
        what: &'static str,
    ) -> Result<ReceivedSet<'a>, ProtocolError> {
        Ok(match self {
            SetEncoding::List => ReceivedSet::List {
                packed: r.take(checked_len(elements, width, what)?)?,
                width,
            },
            SetEncoding::Filter(kind) => {
                let params = FilterParams::new(kind, elements, queries);
                let bytes = r.bytes(params.max_encoded_len())?;
                let f = SetFilter::decode(&params, key, bytes)
                    .map_err(|source| PeerMisbehaved::InvalidFilter { what, source })?;
                ReceivedSet::Filter(f)
            }
        })
    }

    /// Largest encoding of a set of `elements` elements for `queries` look-ups.
    pub fn max_len(self, elements: usize, width: usize, queries: usize) -> usize {
        match self {
            SetEncoding::List => elements.saturating_mul(width),
            SetEncoding::Filter(kind) => FilterParams::new(kind, elements, queries)
                .max_encoded_len()
                .saturating_add(4),
        }
    }
}

/// A set as received from the peer.
pub enum ReceivedSet<'a> {
    /// Packed elements of `width` bytes.
    List {
        packed: &'a [u8],
        width: usize,
    },
    Filter(SetFilter),
}

impl ReceivedSet<'_> {
    /// `[candidate_i in set]` for every packed candidate of the set's width.
    pub fn membership(&self, candidates: &[u8], width: usize) -> Vec<bool> {
        match self {
            ReceivedSet::List { packed, width: w } => {
                let members: HashSet<&[u8]> = packed.chunks_exact(*w).collect();
                candidates
                    .par_chunks_exact(width)
                    .map(|e| members.contains(e))
                    .collect()
            }
            ReceivedSet::Filter(f) => candidates
                .par_chunks_exact(width)
                .map(|e| f.contains(e))
                .collect(),
        }
    }

    /// Positions of the packed candidates that are in the set, in order.
    pub fn matching_positions(&self, candidates: &[u8], width: usize) -> Vec<usize> {
        self.membership(candidates, width)
            .into_iter()
            .enumerate()
            .filter_map(|(j, hit)| hit.then_some(j))
            .collect()
    }

    /// Of the packed candidates at `positions` (ascending), those in the set, in
    /// order. A segmented PI-Sum tests each segment's set only against the candidates
    /// no earlier segment matched, so no candidate is ever counted twice.
    pub fn matching_among(
        &self,
        candidates: &[u8],
        width: usize,
        positions: &[usize],
    ) -> Vec<usize> {
        let candidate = |j: usize| &candidates[j * width..(j + 1) * width];
        match self {
            ReceivedSet::List { packed, width: w } => {
                let members: HashSet<&[u8]> = packed.chunks_exact(*w).collect();
                positions
                    .par_iter()
                    .copied()
                    .filter(|&j| members.contains(candidate(j)))
                    .collect()
            }
            ReceivedSet::Filter(f) => positions
                .par_iter()
                .copied()
                .filter(|&j| f.contains(candidate(j)))
                .collect(),
        }
    }
}
