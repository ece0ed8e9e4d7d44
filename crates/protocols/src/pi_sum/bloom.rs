//! The encrypted-Bloom-filter protocol (Ion et al. 2020, Fig. 4, Sec. 4.3.2): P1 sends its
//! Bloom filter bit by bit under exponential ElGamal; P2 turns each of its items into a
//! ciphertext of zero (member) or of a uniform non-zero value (non-member) and returns
//! them shuffled, with its values encrypted in the same order; P1 counts the zeros and
//! sums the matching values under P2's key.
//!
//! ```text
//! P1 (participant 0)                             P2 (participant 1)
//!  hello (salt, settings) --------------------->  <- hello (salt, settings)
//!  pk1, then AEnc(pk1, BF[i]) for every
//!  position i, in chunks ---------------------->
//!                                           <-- pk2, shuffled ARefresh(r_j·(Σ_i ct_{IND_j,i}
//!                                               − AEnc(k))), packed AEnc(pk2, t) in the
//!                                               same order
//!  |J| and the masked, re-randomized encrypted
//!  sum (or the threshold abort) --------------->
//! ```
//!
//! **Filter.** A partitioned Bloom filter (`privset_crypto::filter::bloom`): `k = 40 +
//! ceil(log2 n2)` partitions of `s ≈ 1.4427·n1` positions, each item setting one position
//! per partition, so a non-member of P1's set passes all `k` with probability at most
//! `2^-k`, and the `n2` look-ups of the run together at most `2^-40` (union bound; the
//! module docs of the filter give the exact argument). The positions of an item are in
//! different partitions, so they are always distinct: "duplicate indices removed" holds
//! by construction and the membership test subtracts exactly `k`. Both parties derive the
//! sizes from the announced set sizes and the hash key from the session.
//!
//! **Membership ciphertexts.** For each item P2 adds the ciphertexts at its `k` positions,
//! subtracts `k` (a trivial encryption), multiplies by a fresh uniform non-zero `r_j` and
//! adds a fresh encryption of zero ([`bulk::randomize_encoded`]): the plaintext is `0`
//! when every position is set and otherwise uniform among the non-zero scalars, and the
//! ciphertext is a fresh encryption of it. P1 tests each for zero with one
//! multiplication ([`SecretKey::is_zero`]); it never needs a discrete logarithm.
//!
//! **Streaming.** The filter has about `1.44·n1·(40 + log2 n2)` positions (about 8.2
//! million at 100,000 items a side), so P1 encrypts and sends it in chunks of
//! [`CHUNK`] ciphertexts while the previous chunk leaves, and P2 folds each chunk into
//! per-item accumulators as it arrives, decoding only the positions its items touch:
//! neither party ever holds the encrypted filter.
//!
//! **What each party learns** (Ion et al. 2020, App. F): P1 learns `|J|` and the set sizes
//! (the membership ciphertexts arrive shuffled, so not which of P2's items matched); P2
//! learns `|J|`, the sums and the set sizes. The threshold variant works as in the DDH
//! protocol (P1 knows `|J|` before any sum is computed); several value columns and sums
//! of squares too (they only change what P2 encrypts). The reverse variant and segmented
//! input are the DDH protocol's (docs/pi-sum.md).

use privset_crypto::ahe::elgamal::{self, CiphertextSums, ElGamal, PublicKey, SecretKey, bulk};
use privset_crypto::ahe::{AdditiveHe, HeError};
use privset_crypto::filter::bloom::{BloomParams, element_words};
use rayon::prelude::*;

use super::common::{self, Setup, bad_ciphertext, checked_len};
use super::{HeChoice, Hello, PiSumConfig, PiSumOutput, Role, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{PartyId, Reader};

/// Ciphertexts per filter message (4 MiB).
pub const CHUNK: usize = 1 << 16;
/// Items whose filter positions are hashed at once (bounds P1's memory for the hash
/// words to `k · 8` bytes per item of one block).
const HASH_BLOCK: usize = 1 << 14;
/// Items per parallel task when P2 folds a chunk into its accumulators.
const ITEM_BLOCK: usize = 1 << 12;
/// Keyed-hash purpose of the filter positions.
const FILTER_KEY: &str = "pi-sum/bloom-filter";

/// A filter ciphertext's error, naming its position in the whole filter.
fn at_position(e: HeError, position: u64) -> HeError {
    match e {
        HeError::InvalidCiphertext { reason, .. } => HeError::InvalidCiphertext {
            index: position as usize,
            reason,
        },
        other => other,
    }
}

/// The filter sizes both parties derive from the announced set sizes.
fn filter_params(n1: u64, n2: u64) -> BloomParams {
    BloomParams::new(n1, n2)
}

/// Number of filter messages for `bits` positions.
fn chunk_count(bits: u64) -> usize {
    (bits as usize).div_ceil(CHUNK)
}

/// Positions `[start, start + len)` of filter message `index`.
fn chunk_range(bits: u64, index: usize) -> (u64, usize) {
    let start = (index * CHUNK) as u64;
    (start, (bits - start).min(CHUNK as u64) as usize)
}

/// For every item in order, its bit in each of the `k` partitions (`bits[j·k + i]`),
/// hashed a block at a time.
fn partition_bits(params: &BloomParams, key: &[u8; 32], items: &[&[u8]]) -> Vec<u32> {
    let k = params.k as usize;
    let mut out = vec![0u32; items.len() * k];
    if params.s == 0 {
        return out;
    }
    for (block, dst) in items.chunks(HASH_BLOCK).zip(out.chunks_mut(HASH_BLOCK * k)) {
        let words = element_words(params.k, key, block);
        dst.par_chunks_mut(k)
            .zip(words.par_chunks(k))
            .for_each(|(bits, words)| {
                for (i, (b, &w)) in bits.iter_mut().zip(words).enumerate() {
                    let global = params.bit(i as u32, w);
                    *b = (global - i as u64 * params.s) as u32;
                }
            });
    }
    out
}

/// P1: holds identifiers; learns the cardinality.
pub struct P1<H: HeChoice> {
    setup: Setup,
    state: P1State,
    _he: std::marker::PhantomData<H>,
}

enum P1State {
    Hellos,
    /// Sending the encrypted filter, one chunk per deferred step.
    Filter(Box<P1Filter>),
    AwaitMembership(Box<P1Keys>),
    Done(PiSumOutput),
}

struct P1Keys {
    peer: Hello,
    sk: SecretKey,
}

struct P1Filter {
    keys: P1Keys,
    params: BloomParams,
    /// The filter's bits, 64 per word.
    bits: Vec<u64>,
    next_chunk: usize,
}

impl<H: HeChoice> P1<H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P1, config, input),
            state: P1State::Hellos,
            _he: std::marker::PhantomData,
        }
    }

    /// The filter of P1's items: one position per partition per item, hashed a block
    /// of items at a time.
    fn filter(&self, params: &BloomParams, key: &[u8; 32]) -> Vec<u64> {
        let mut bits = vec![0u64; params.bits().div_ceil(64) as usize];
        let items: Vec<&[u8]> = self.setup.input.ids.iter().map(|v| v.as_slice()).collect();
        for block in items.chunks(HASH_BLOCK) {
            for (j, global) in partition_bits(params, key, block).into_iter().enumerate() {
                let i = (j % params.k as usize) as u64;
                let global = i * params.s + global as u64;
                bits[(global / 64) as usize] |= 1 << (global % 64);
            }
        }
        bits
    }

    fn on_membership(
        &mut self,
        session: &mut Session<'_>,
        body: &[u8],
        keys: &P1Keys,
    ) -> Result<PiSumOutput, ProtocolError> {
        let peer = &keys.peer;
        let n2 = peer.items as usize;
        let mut r = Reader::new(body, "membership");
        let pk = common::read_public_key::<H>(&mut r, &H::params(&self.setup.config, peer))?;
        let membership = r.take(checked_len(n2, elgamal::CIPHERTEXT_LEN, "membership")?)?;
        let columns = super::encrypted_columns(peer);
        let mut packed_columns = Vec::with_capacity(columns.len());
        for bounds in &columns {
            packed_columns.push(common::take_column::<H>(&mut r, &pk, bounds, true)?);
        }
        r.finish()?;
        session
            .meter
            .begin("step 6: testing P2's membership ciphertexts", n2);
        let cts = bulk::decode_many(membership).map_err(bad_ciphertext("membership"))?;
        let selected: Vec<usize> = cts
            .par_iter()
            .enumerate()
            .filter_map(|(j, c)| keys.sk.is_zero(c).then_some(j))
            .collect();
        session.meter.add(n2);
        common::send_sums::<H>(
            session,
            &self.setup,
            peer,
            &pk,
            &packed_columns,
            &[selected],
        )
    }
}

impl<H: HeChoice> Protocol for P1<H> {
    type Output = PiSumOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Builds the filter and sends P1's ElGamal key; the chunks follow as deferred work.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let params = filter_params(self.setup.hello.items, peer.items);
        let bits = self.filter(&params, &session.ctx.derive_key(FILTER_KEY));
        let (pk, sk) = ElGamal::keygen(&elgamal::Params::default(), session.rng);
        session.send(
            Role::P2.id(),
            kind::BLOOM_KEY,
            &ElGamal::encode_public_key(&pk),
        );
        session.meter.begin(
            "step 3: encrypting our Bloom filter",
            params.bits() as usize,
        );
        let keys = P1Keys { peer, sk };
        self.state = if params.bits() == 0 {
            P1State::AwaitMembership(Box::new(keys))
        } else {
            P1State::Filter(Box::new(P1Filter {
                keys,
                params,
                bits,
                next_chunk: 0,
            }))
        };
        Ok(())
    }

    fn has_deferred_work(&self) -> bool {
        matches!(self.state, P1State::Filter(_))
    }

    /// One chunk of the encrypted filter, while the previous one leaves.
    fn do_deferred_work(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let P1State::Filter(filter) = &mut self.state else {
            return Ok(());
        };
        let total = filter.params.bits();
        let (start, len) = chunk_range(total, filter.next_chunk);
        let bits: Vec<u64> = (start..start + len as u64)
            .map(|i| filter.bits[(i / 64) as usize] >> (i % 64) & 1)
            .collect();
        let encrypted =
            bulk::encrypt_bits_encoded(filter.keys.sk.public_key().table(), &bits, session.rng);
        session.send(Role::P2.id(), kind::BLOOM_FILTER, &encrypted);
        session.meter.add(len);
        filter.next_chunk += 1;
        if filter.next_chunk == chunk_count(total) {
            let P1State::Filter(filter) = std::mem::replace(&mut self.state, P1State::Hellos)
            else {
                unreachable!("matched above")
            };
            self.state = P1State::AwaitMembership(Box::new(filter.keys));
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match std::mem::replace(&mut self.state, P1State::Hellos) {
            P1State::AwaitMembership(keys) => {
                let body = message.expect(kind::BLOOM_MEMBERSHIP)?;
                let output = self.on_membership(session, body, &keys)?;
                self.state = P1State::Done(output);
                Ok(())
            }
            P1State::Hellos | P1State::Filter(_) | P1State::Done(_) => Err(
                ProtocolError::ApiMisuse("P1 received a message it does not wait for"),
            ),
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P1State::AwaitMembership(_) => Some(Role::P2.id()),
            P1State::Hellos | P1State::Filter(_) | P1State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let P1State::AwaitMembership(keys) = &self.state else {
            return 0;
        };
        let n2 = keys.peer.items as usize;
        (4 + common::MAX_PUBLIC_KEY_LEN)
            .saturating_add(n2.saturating_mul(elgamal::CIPHERTEXT_LEN))
            .saturating_add(common::max_columns_len::<H>(&self.setup.config, &keys.peer))
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P1State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P1State::Hellos => "exchanging hellos".into(),
            P1State::Filter(f) => format!(
                "encrypting our Bloom filter (chunk {} of {})",
                f.next_chunk + 1,
                chunk_count(f.params.bits())
            ),
            P1State::AwaitMembership(k) => format!(
                "waiting for P2's membership ciphertexts ({} items)",
                k.peer.items
            ),
            P1State::Done(_) => "done".into(),
        }
    }

    fn into_output(self) -> Option<PiSumOutput> {
        match self.state {
            P1State::Done(output) => Some(output),
            _ => None,
        }
    }
}

/// P2: holds identifiers with values; learns the cardinality and the sums.
pub struct P2<H: HeChoice> {
    setup: Setup,
    state: P2State<H>,
}

enum P2State<H: HeChoice> {
    Hellos,
    AwaitKey(Box<P2Prepared<H>>),
    AwaitFilter(Box<P2Filter<H>>),
    AwaitSums(Box<P2Prepared<H>>),
    Done(PiSumOutput),
}

/// P2's work that does not depend on P1's messages, done right after the hellos.
struct P2Prepared<H: HeChoice> {
    peer: Hello,
    params: BloomParams,
    /// The key and the encrypted values, items in the shuffled order.
    values: common::P2Values<H>,
    /// For each item in the shuffled order, its bit in every partition.
    partition_bits: Vec<u32>,
}

/// P2 while the filter arrives: per item, the sum of the ciphertexts at its positions so
/// far, and the next partition it waits for.
struct P2Filter<H: HeChoice> {
    prep: P2Prepared<H>,
    pk1: PublicKey,
    sums: CiphertextSums,
    cursors: Vec<u32>,
    next_chunk: usize,
}

impl<H: HeChoice> P2<H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P2, config, input),
            state: P2State::Hellos,
        }
    }

    /// Adds the ciphertexts of one filter chunk to every item's running sum, decoding
    /// only the positions some item touches.
    fn absorb(filter: &mut P2Filter<H>, body: &[u8]) -> Result<(), ProtocolError> {
        let params = filter.prep.params;
        let (start, len) = chunk_range(params.bits(), filter.next_chunk);
        let expected = len * elgamal::CIPHERTEXT_LEN;
        if body.len() != expected {
            return Err(PeerMisbehaved::WrongLength {
                what: "Bloom filter chunk",
                got: body.len(),
                expected,
            }
            .into());
        }
        let end = start + len as u64;
        let k = params.k as usize;
        // Per block of items: (item, offset in this chunk) for every position in range.
        let hits: Vec<Vec<(u32, u32)>> = filter
            .cursors
            .par_chunks_mut(ITEM_BLOCK)
            .zip(filter.prep.partition_bits.par_chunks(ITEM_BLOCK * k))
            .map(|(cursors, bits)| {
                let mut hits = Vec::new();
                for (j, (cursor, bits)) in cursors.iter_mut().zip(bits.chunks(k)).enumerate() {
                    while (*cursor as usize) < k {
                        let i = *cursor as usize;
                        let global = i as u64 * params.s + bits[i] as u64;
                        if global >= end {
                            break;
                        }
                        hits.push((j as u32, (global - start) as u32));
                        *cursor += 1;
                    }
                }
                hits
            })
            .collect();
        let hits: Vec<(u32, u32)> = hits
            .iter()
            .enumerate()
            .flat_map(|(block, hits)| {
                let base = (block * ITEM_BLOCK) as u32;
                hits.iter().map(move |&(j, offset)| (base + j, offset))
            })
            .collect();
        filter
            .sums
            .add(body, &hits)
            .map_err(|e| {
                // `add` names the entry within this chunk; report it in the whole filter.
                let index = match &e {
                    HeError::InvalidCiphertext { index, .. } => *index as u64,
                    _ => 0,
                };
                at_position(e, start + index)
            })
            .map_err(|e| PeerMisbehaved::InvalidCiphertext {
                what: "Bloom filter chunk",
                source: e,
            })?;
        filter.next_chunk += 1;
        Ok(())
    }

    /// Step 4b-5: every item's membership ciphertext, refreshed and in the shuffled
    /// order, then P2's key and encrypted values.
    fn send_membership(session: &mut Session<'_>, filter: P2Filter<H>) -> P2Prepared<H> {
        let sums = filter.sums.into_ciphertexts();
        let n2 = sums.len();
        session
            .meter
            .begin("step 4: refreshing our membership ciphertexts", n2);
        // Every item has exactly k distinct positions (one per partition).
        let membership = bulk::randomize_difference_encoded(
            filter.pk1.table(),
            &sums,
            filter.prep.params.k as u64,
            session.rng,
        );
        session.meter.add(n2);
        let prep = filter.prep;
        let mut body = Vec::with_capacity(membership.len() + prep.values.columns_len());
        prep.values.put_key(&mut body);
        body.extend_from_slice(&membership);
        prep.values.put_columns(&mut body);
        session.send(Role::P1.id(), kind::BLOOM_MEMBERSHIP, &body);
        prep
    }

    fn start_filter(prep: P2Prepared<H>, pk1: PublicKey) -> P2Filter<H> {
        let n2 = prep.partition_bits.len() / (prep.params.k as usize).max(1);
        P2Filter {
            prep,
            pk1,
            sums: CiphertextSums::new(n2),
            cursors: vec![0; n2],
            next_chunk: 0,
        }
    }
}

impl<H: HeChoice> Protocol for P2<H> {
    type Output = PiSumOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws the value key, shuffles the items, encrypts the values in that order and
    /// hashes every item's filter positions.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let params = filter_params(peer.items, self.setup.hello.items);
        if params.s > u32::MAX as u64 {
            return Err(ProtocolError::Config(format!(
                "P1's {} items need Bloom-filter partitions beyond 2^32 positions",
                peer.items
            )));
        }
        let order = session.rng.permutation(self.setup.input.ids.len());
        let values = common::P2Values::encrypt(
            session,
            "step 5: encrypting our value columns",
            &self.setup,
            &order,
        )?;
        let items = common::gather(&self.setup.input.ids, &order);
        let partition_bits = partition_bits(&params, &session.ctx.derive_key(FILTER_KEY), &items);
        self.state = P2State::AwaitKey(Box::new(P2Prepared {
            peer,
            params,
            values,
            partition_bits,
        }));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, P2State::Hellos) {
            P2State::AwaitKey(prep) => {
                let body = message.expect(kind::BLOOM_KEY)?;
                let pk1 = ElGamal::decode_public_key(body, &elgamal::Params::default())
                    .map_err(bad_ciphertext("P1's ElGamal key"))?;
                let bits = prep.params.bits();
                let filter = Self::start_filter(*prep, pk1);
                if bits == 0 {
                    P2State::AwaitSums(Box::new(Self::send_membership(session, filter)))
                } else {
                    session.meter.begin(
                        "step 4: adding the filter's ciphertexts at our positions",
                        bits as usize,
                    );
                    P2State::AwaitFilter(Box::new(filter))
                }
            }
            P2State::AwaitFilter(mut filter) => {
                let body = message.expect(kind::BLOOM_FILTER)?;
                Self::absorb(&mut filter, body)?;
                let bits = filter.prep.params.bits();
                session
                    .meter
                    .add(chunk_range(bits, filter.next_chunk - 1).1);
                if filter.next_chunk == chunk_count(bits) {
                    P2State::AwaitSums(Box::new(Self::send_membership(session, *filter)))
                } else {
                    P2State::AwaitFilter(filter)
                }
            }
            P2State::AwaitSums(prep) => {
                P2State::Done(prep.values.read_sums(message, &self.setup, &prep.peer)?)
            }
            P2State::Hellos | P2State::Done(_) => {
                return Err(ProtocolError::ApiMisuse(
                    "P2 received a message it does not wait for",
                ));
            }
        };
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P2State::AwaitKey(_) | P2State::AwaitFilter(_) | P2State::AwaitSums(_) => {
                Some(Role::P1.id())
            }
            P2State::Hellos | P2State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P2State::AwaitKey(_) => 64,
            P2State::AwaitFilter(f) => {
                chunk_range(f.prep.params.bits(), f.next_chunk).1 * elgamal::CIPHERTEXT_LEN
            }
            P2State::AwaitSums(prep) => prep.values.max_sums_len(1),
            P2State::Hellos | P2State::Done(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P2State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P2State::Hellos => "exchanging hellos".into(),
            P2State::AwaitKey(_) => "waiting for P1's ElGamal key".into(),
            P2State::AwaitFilter(f) => format!(
                "receiving P1's encrypted Bloom filter (chunk {} of {})",
                f.next_chunk + 1,
                chunk_count(f.prep.params.bits())
            ),
            P2State::AwaitSums(_) => "waiting for P1's encrypted sums".into(),
            P2State::Done(_) => "done".into(),
        }
    }

    fn into_output(self) -> Option<PiSumOutput> {
        match self.state {
            P2State::Done(output) => Some(output),
            _ => None,
        }
    }
}
