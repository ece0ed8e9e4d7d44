//! The multi-query reverse private membership test, both constructions of Chen et al. 2024.
//!
//! * cwPRF (Fig. 3): the server sends `F_k1(H(y))`; the client answers with
//!   `F_k2(H(x_i))` in its (shuffled) order and `F_k2(F_k1(H(y)))` as a shuffled list or
//!   an order-hiding filter; the server sets `e_i = [F_k1(F_k2(H(x_i))) in that set]`.
//! * permuted OPRF (Figs. 5-6): the server sends `H(y)^s` for a random mask `s`; the
//!   client answers with `H(x_i)^k` and the permuted `H(y)^(sk)`; the server removes the
//!   mask with `s^-1`, obtaining `{H(y)^k}` in an order it cannot link to `Y`, and sets
//!   `e_i = [H(x_i)^k in {H(y)^k}]`.
//!
//! With the ordered last message (psi only, [`LastMessage::Ordered`]) the client returns
//! a tag of each re-evaluated server element in the server's own order instead, and the
//! server learns which of its own items are in the client's set ([`Server::own_indicator`]).
//!
//! The client's side is the same function in both cases (evaluate its own items, and
//! evaluate and shuffle or filter the server's); only the server's test differs, which is
//! why one [`Server`] and one [`Client`] serve both.

use std::collections::HashSet;

use privset_crypto::cwprf::CwPrf;
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

use super::{Construction, LastMessage, transfer};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::meter::Meter;
use crate::set_encoding::ReceivedSet;
use crate::wire::Reader;

/// Keyed-hash purpose of the last-message filter.
pub const FILTER_KEY: &str = "pso/mqrpmt-filter";

/// The mqRPMT server (the receiver of every operation): learns the indicator bits.
pub struct Server<C: CwPrf> {
    construction: Construction,
    /// `k1` (cwPRF) or the mask `s` (permuted OPRF).
    key: Zeroizing<C::Key>,
}

impl<C: CwPrf> Server<C> {
    pub fn new(construction: Construction, rng: &mut SessionRng) -> Self {
        Self::with_key(construction, Zeroizing::new(C::random_key(rng)))
    }

    /// A server with a key the caller also uses elsewhere (private-ID folds the first
    /// evaluation into its distributed OPRF).
    pub fn with_key(construction: Construction, key: Zeroizing<C::Key>) -> Self {
        Self { construction, key }
    }

    /// First message: `F_key(H(y))` for every item.
    pub fn evaluate_items<I: AsRef<[u8]> + Sync>(
        &self,
        meter: (&Meter, &'static str),
        dst: &[u8],
        items: &[I],
    ) -> Vec<u8> {
        hash_eval::<C, I>(meter, dst, items, &self.key)
    }

    /// Processes the client's `n2` evaluated items as soon as they arrive: the cwPRF
    /// server evaluates them again (`F_k1(F_k2(H(x_i)))`); the permuted-OPRF server only
    /// checks them (they are compared as they are).
    pub fn absorb_client_elements(
        &self,
        meter: (&Meter, &'static str),
        packed: &[u8],
    ) -> Result<Vec<u8>, ProtocolError> {
        let what = "client's elements";
        match self.construction {
            Construction::Cwprf => eval::<C>(meter, packed, &self.key, what),
            Construction::Poprf => {
                let (meter, phase) = meter;
                meter.try_slices(phase, packed, C::ELEMENT_LEN, |first, slice| {
                    C::validate_batch(slice).map_err(|source| PeerMisbehaved::InvalidElement {
                        what,
                        source: source.at_offset(first),
                    })?;
                    Ok::<_, ProtocolError>(slice.to_vec())
                })
            }
            Construction::Vole => Err(not_an_mqrpmt()),
        }
    }

    /// Reads the encoded set of `n1` re-evaluated server items from `r` and returns the
    /// indicator bits for the absorbed client elements, in the client's order.
    pub fn indicator(
        &self,
        absorbed: &[u8],
        r: &mut Reader<'_>,
        last: LastMessage,
        n1: usize,
        n2: usize,
        filter_key: &[u8; 32],
    ) -> Result<Vec<bool>, ProtocolError> {
        let LastMessage::Set(encoding) = last else {
            return Err(ProtocolError::ApiMisuse(
                "the ordered last message gives bits for the server's own items: use own_indicator",
            ));
        };
        let set = encoding.read(r, n1, C::ELEMENT_LEN, n2, filter_key, "server's set")?;
        match (self.construction, set) {
            (Construction::Cwprf, set) => Ok(set.membership(absorbed, C::ELEMENT_LEN)),
            (Construction::Vole, _) => Err(not_an_mqrpmt()),
            (Construction::Poprf, ReceivedSet::Filter(_)) => Err(ProtocolError::Config(
                "the permuted OPRF needs the list last message".into(),
            )),
            (
                Construction::Poprf,
                ReceivedSet::List {
                    packed: permuted, ..
                },
            ) => {
                let inverse = Zeroizing::new(
                    C::invert_key(&self.key)
                        .expect("validate() allows the permuted OPRF only for permutations"),
                );
                let unmasked = C::eval_batch(permuted, &inverse).map_err(|source| {
                    PeerMisbehaved::InvalidElement {
                        what: "permuted OPRF values",
                        source,
                    }
                })?;
                let set = ReceivedSet::List {
                    packed: &unmasked,
                    width: C::ELEMENT_LEN,
                };
                Ok(set.membership(absorbed, C::ELEMENT_LEN))
            }
        }
    }
}

/// The VOLE construction has parties of its own ([`super::vole_psi`]).
fn not_an_mqrpmt() -> ProtocolError {
    ProtocolError::ApiMisuse("the vole construction is not an mqRPMT")
}

impl<C: CwPrf> Server<C> {
    /// With [`LastMessage::Ordered`] (psi only): reads the `n1` tags of the server's own
    /// re-evaluated items, in its own order, and returns for each of its items whether it
    /// is among the absorbed client elements (whose tags the server computes itself).
    pub fn own_indicator(
        &self,
        absorbed: &[u8],
        r: &mut Reader<'_>,
        n1: usize,
        n2: usize,
        tag_key: &[u8; 32],
    ) -> Result<Vec<bool>, ProtocolError> {
        let len = tag_len(n1, n2);
        let tags = r.take(crate::wire::checked_len(n1, len, "ordered tags")?)?;
        let theirs: HashSet<Vec<u8>> = absorbed
            .par_chunks_exact(C::ELEMENT_LEN)
            .map(|e| transfer::item_tag(tag_key, e, len))
            .collect();
        Ok(tags
            .par_chunks_exact(len)
            .map(|t| theirs.contains(t))
            .collect())
    }
}

/// Bytes of one tag of the ordered last message.
fn tag_len(n1: usize, n2: usize) -> usize {
    transfer::tag_len(n1 as u64, n2 as u64)
}

/// The mqRPMT client (the sender of every operation): learns nothing.
pub struct Client<C: CwPrf> {
    /// `k2` (cwPRF) or the pOPRF key `k`.
    key: Zeroizing<C::Key>,
}

impl<C: CwPrf> Client<C> {
    pub fn new(rng: &mut SessionRng) -> Self {
        Self::with_key(Zeroizing::new(C::random_key(rng)))
    }

    /// A client with a key the caller also uses elsewhere (private-ID).
    pub fn with_key(key: Zeroizing<C::Key>) -> Self {
        Self { key }
    }

    /// `F_key(H(x))` for the client's items, in the (already shuffled) order given.
    pub fn evaluate_items<I: AsRef<[u8]> + Sync>(
        &self,
        meter: (&Meter, &'static str),
        dst: &[u8],
        items: &[I],
    ) -> Vec<u8> {
        hash_eval::<C, I>(meter, dst, items, &self.key)
    }

    /// Re-evaluates the server's `n1` elements and encodes them as `last` says: a
    /// shuffled list, or a filter (whose content is independent of the order).
    pub fn encode_server_set(
        &self,
        meter: (&Meter, &'static str),
        server_elements: &[u8],
        n2: usize,
        last: LastMessage,
        filter_key: &[u8; 32],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, ProtocolError> {
        let doubled = eval::<C>(meter, server_elements, &self.key, "server's elements")?;
        let n1 = doubled.len() / C::ELEMENT_LEN;
        match last {
            LastMessage::Set(encoding) => {
                encoding.encode(&doubled, C::ELEMENT_LEN, n2, filter_key, rng)
            }
            LastMessage::Ordered => {
                // In the server's order: it tests its own items (psi only).
                let len = tag_len(n1, n2);
                let mut out = vec![0u8; n1.saturating_mul(len)];
                out.par_chunks_mut(len.max(1))
                    .zip(doubled.par_chunks_exact(C::ELEMENT_LEN))
                    .for_each(|(o, e)| o.copy_from_slice(&transfer::item_tag(filter_key, e, len)));
                Ok(out)
            }
        }
    }
}

/// `F_key(H(item))` for every item, counted on the meter as the phase named.
pub fn hash_eval<C: CwPrf, I: AsRef<[u8]> + Sync>(
    (meter, phase): (&Meter, &'static str),
    dst: &[u8],
    items: &[I],
    key: &C::Key,
) -> Vec<u8> {
    meter.slices(phase, items, 1, |_, slice| {
        C::hash_eval_batch(dst, slice, key)
    })
}

/// `F_key(u)` for every packed element received from a peer, counted on the meter as the
/// phase named; an invalid element is the peer's fault (`what` names the elements).
pub fn eval<C: CwPrf>(
    (meter, phase): (&Meter, &'static str),
    packed: &[u8],
    key: &C::Key,
    what: &'static str,
) -> Result<Vec<u8>, ProtocolError> {
    if !packed.len().is_multiple_of(C::ELEMENT_LEN) {
        // Whole, so the batch call names the bad length.
        return C::eval_batch(packed, key)
            .map_err(|source| PeerMisbehaved::InvalidElement { what, source }.into());
    }
    meter.try_slices(phase, packed, C::ELEMENT_LEN, |first, slice| {
        C::eval_batch(slice, key).map_err(|source| {
            PeerMisbehaved::InvalidElement {
                what,
                source: source.at_offset(first),
            }
            .into()
        })
    })
}

/// Bytes of `n` packed elements, failing instead of overflowing on peer-announced sizes.
pub fn packed_len<C: CwPrf>(n: usize, what: &'static str) -> Result<usize, ProtocolError> {
    crate::wire::checked_len(n, C::ELEMENT_LEN, what)
}

/// Largest encoding of the server's set as the client returns it.
pub fn set_max_len<C: CwPrf>(last: LastMessage, n1: usize, n2: usize) -> usize {
    match last {
        LastMessage::Ordered => n1.saturating_mul(tag_len(n1, n2)),
        LastMessage::Set(encoding) => encoding.max_len(n1, C::ELEMENT_LEN, n2),
    }
}

#[cfg(test)]
mod tests {
    use privset_crypto::cwprf::x25519::X25519;
    use privset_crypto::group::GroupError;

    use super::*;
    use crate::meter::SLICE;

    /// Counted in slices, a bad element past the first slice is still named by its
    /// place in the whole message.
    #[test]
    fn a_bad_element_is_named_at_its_index_in_the_whole_message() {
        let meter = Meter::new();
        let mut rng = SessionRng::from_seed([7; 32]);
        let key = X25519::random_key(&mut rng);
        let items: Vec<[u8; 8]> = (0..SLICE as u64 + 10).map(|i| i.to_le_bytes()).collect();
        let mut packed = hash_eval::<X25519, _>((&meter, "own"), b"dst", &items, &key);
        assert_eq!(meter.read().done, items.len() as u64);
        let bad = SLICE + 3;
        packed[bad * 32..(bad + 1) * 32].fill(0xff); // u >= p: not canonical
        let err = eval::<X25519>((&meter, "theirs"), &packed, &key, "test elements").unwrap_err();
        match err {
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidElement { source, .. }) => {
                assert_eq!(source, GroupError::NonCanonical { index: bad });
            }
            other => panic!("{other:?}"),
        }
        // The phase stopped at the slice that failed.
        assert_eq!(meter.read().done, SLICE as u64);
    }
}
