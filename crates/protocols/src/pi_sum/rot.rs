//! The Random-OT protocol (Ion et al. 2020, Fig. 3, Sec. 4.3.1): P1 cuckoo-hashes its
//! items into bins and obtains, for every bin `i`, `f_{k_i}(v_i)` from a batched OPRF
//! whose keys P2 holds; P1 sends these encrypted, P2 re-masks them with random `r_i` and
//! returns them shuffled, so P1 learns the "new" PRF values `f_{k_i}(v_i) + r_i` in an
//! order it cannot link to its bins; P2 sends, for each of its items, the values
//! `f_{k_b}(w) + r_b` for the bins `b` the item can hash to, with its value encrypted; P1
//! sums the values of the items with a match.
//!
//! ```text
//! P1 (participant 0)                             P2 (participant 1)
//!  hello (salt, settings) --------------------->  <- hello (salt, settings)
//!  OPRF base message A ------------------------>
//!                                           <-- OPRF base reply (B_j)
//!  OPRF rows u, pk1, AEnc(pk1, f_{k_i}(v_i))
//!  for every bin i ---------------------------->
//!                                           <-- pk2, shuffled ARefresh(ct_i + AEnc(r_i)),
//!                                               per item (shuffled) its sorted W_j and
//!                                               packed AEnc(pk2, t) in the same order
//!  |J| and the masked, re-randomized encrypted
//!  sum (or the threshold abort) --------------->
//! ```
//!
//! **Instantiation.** The batched OPRF is Kolesnikov et al. 2016 (KKRT) from
//! [`privset_crypto::oprf`], as in the paper (Sec. 5.1), with the code width its docs
//! derive from the number of evaluations. Cuckoo hashing has three hash functions, no
//! stash and `1.5·m1 + 16` bins ([`privset_crypto::cuckoo`]); empty bins hold random
//! dummies. The encryption of the PRF values (the paper: unslotted Paillier) is
//! exponential ElGamal on ristretto255: P1 never needs the plaintext `f + r`, only to
//! compare it with P2's values, so it decrypts to the point `(f + r)·G` (one
//! multiplication, no discrete logarithm) and P2 sends each `W_j` entry as that point
//! for `f_{k_b}(w_j) + r_b` — 64-byte ciphertexts instead of Paillier's 768 and a few
//! fixed-base multiplications per bin instead of modular exponentiations. Entries travel
//! as truncated hashes of the point's encoding, long enough that no two of the run's
//! `3·m2·bins` comparisons collide except with probability `2^-40`.
//!
//! **Padding.** When two of an item's hash functions give the same bin, the repeated
//! entry is replaced by a random string, and each `W_j` is sent sorted, so P1 cannot
//! tell which entry belongs to which hash function (Fig. 3, step 6).
//!
//! **What each party learns** (Ion et al. 2020, Theorems 3-4): P1 learns `|J|` (and the
//! set sizes), not which of P2's items matched (they arrive shuffled) nor which of its
//! bins matched (the re-masked values arrive shuffled); P2 learns `|J|` and the sums.
//! Threshold, several value columns and sums of squares work as in the DDH protocol; the
//! reverse variant and segments are the DDH protocol's (docs/pi-sum.md).

use std::collections::HashSet;

use privset_crypto::ahe::AdditiveHe;
use privset_crypto::ahe::elgamal::{self, ElGamal, Scalar, SecretKey, bulk};
use privset_crypto::cuckoo::{self, HASH_FUNCTIONS};
use privset_crypto::oprf::{
    self, CodeWidth, DEFAULT_OUTPUT_LEN, OprfReceiver, OprfSender, OprfSenderKey,
};
use privset_crypto::ot::BASE_FIRST_LEN;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::common::{self, Setup, bad_ciphertext, checked_len};
use super::{HeChoice, Hello, PiSumConfig, PiSumOutput, Role, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::{PartyId, Reader};

/// Bytes of an OPRF output (`2^-128` collisions between distinct inputs of a bin).
const OPRF_LEN: usize = DEFAULT_OUTPUT_LEN;
/// Keyed-hash purpose of the cuckoo hash functions.
const CUCKOO_KEY: &str = "pi-sum/rot-cuckoo";
const ENTRY_DOMAIN: &[u8] = b"privset/pi-sum/rot/entry/v1";

/// What both parties derive from the announced set sizes.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// P1's cuckoo table.
    bins: usize,
    /// The OPRF's code width for P2's `3·m2` evaluations.
    width: CodeWidth,
    /// Bytes of a `W_j` entry: no false match among `3·m2·bins` comparisons except with
    /// probability `2^-40`.
    entry_len: usize,
}

impl Sizes {
    fn new(n1: u64, n2: u64) -> Self {
        let bins = cuckoo::table_size(n1 as usize);
        let evaluations = (HASH_FUNCTIONS as u64).saturating_mul(n2);
        Sizes {
            bins,
            width: CodeWidth::for_evaluations(evaluations),
            entry_len: oprf::min_output_len(evaluations.saturating_mul(bins as u64)),
        }
    }
}

/// The hash of a point encoding that P1 and P2 compare, cut to `len` bytes.
fn entry(point: &[u8; 32], len: usize) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(ENTRY_DOMAIN);
    h.update(point);
    h.finalize()[..len].to_vec()
}

/// An OPRF output as a scalar (16 bytes, far below the group order).
fn to_scalar(f: &[u8; OPRF_LEN]) -> Scalar {
    let mut b = [0u8; 32];
    b[..OPRF_LEN].copy_from_slice(f);
    Scalar::from_bytes_mod_order(b)
}

/// P1: holds identifiers; learns the cardinality.
pub struct P1<H: HeChoice> {
    setup: Setup,
    state: P1State,
    _he: std::marker::PhantomData<H>,
}

enum P1State {
    Hellos,
    AwaitReply(Box<P1Query>),
    AwaitAnswer(Box<P1Keys>),
    Done(PiSumOutput),
}

/// P1 between the OPRF's base messages: its bins' inputs and its keys.
struct P1Query {
    peer: Hello,
    sizes: Sizes,
    receiver: OprfReceiver,
    /// The OPRF input of every bin: its item, or a random dummy.
    inputs: Vec<Vec<u8>>,
    sk: SecretKey,
}

struct P1Keys {
    peer: Hello,
    sizes: Sizes,
    sk: SecretKey,
}

impl<H: HeChoice> P1<H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P1, config, input),
            state: P1State::Hellos,
            _he: std::marker::PhantomData,
        }
    }

    /// Steps 3-4: finishes the OPRF on the bins and sends the rows with the encrypted
    /// outputs.
    fn on_reply(
        session: &mut Session<'_>,
        body: &[u8],
        query: P1Query,
    ) -> Result<P1Keys, ProtocolError> {
        let (rows, outputs) = query
            .receiver
            .finish::<OPRF_LEN, _>(body, &query.inputs)
            .map_err(|e| PeerMisbehaved::Malformed(format!("OPRF base reply: {e}")))?;
        session
            .meter
            .begin("step 4: encrypting our bins' PRF values", outputs.len());
        let scalars: Vec<Scalar> = outputs.iter().map(to_scalar).collect();
        let encrypted = bulk::encrypt_owner_encoded(&query.sk, &scalars, session.rng);
        session.meter.add(outputs.len());
        let mut body = rows;
        body.extend_from_slice(&ElGamal::encode_public_key(query.sk.public_key()));
        body.extend_from_slice(&encrypted);
        session.send(Role::P2.id(), kind::ROT_QUERY, &body);
        Ok(P1Keys {
            peer: query.peer,
            sizes: query.sizes,
            sk: query.sk,
        })
    }

    /// Step 7: the re-masked values, the items with a match, the encrypted sum.
    fn on_answer(
        &mut self,
        session: &mut Session<'_>,
        body: &[u8],
        keys: &P1Keys,
    ) -> Result<PiSumOutput, ProtocolError> {
        let peer = &keys.peer;
        let n2 = peer.items as usize;
        let sizes = keys.sizes;
        let mut r = Reader::new(body, "Random-OT answer");
        let pk = common::read_public_key::<H>(&mut r, &H::params(&self.setup.config, peer))?;
        let remasked = r.take(checked_len(
            sizes.bins,
            elgamal::CIPHERTEXT_LEN,
            "re-masked values",
        )?)?;
        let entries = r.take(checked_len(
            n2.saturating_mul(HASH_FUNCTIONS),
            sizes.entry_len,
            "P2's PRF values",
        )?)?;
        let columns = super::encrypted_columns(peer);
        let mut packed_columns = Vec::with_capacity(columns.len());
        for bounds in &columns {
            packed_columns.push(common::take_column::<H>(&mut r, &pk, bounds, true)?);
        }
        r.finish()?;
        session
            .meter
            .begin("step 7: decrypting the re-masked PRF values", sizes.bins);
        let cts = bulk::decode_many(remasked).map_err(bad_ciphertext("re-masked values"))?;
        let mine: HashSet<Vec<u8>> = bulk::decrypt_doubled_points(&keys.sk, &cts)
            .par_iter()
            .map(|p| entry(p, sizes.entry_len))
            .collect();
        session.meter.add(sizes.bins);
        let row = HASH_FUNCTIONS * sizes.entry_len;
        let selected: Vec<usize> = entries
            .par_chunks_exact(row.max(1))
            .enumerate()
            .filter_map(|(j, w)| {
                w.chunks_exact(sizes.entry_len)
                    .any(|e| mine.contains(e))
                    .then_some(j)
            })
            .collect();
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

    /// Steps 1-2: cuckoo-hashes the items, fills the empty bins with dummies and opens
    /// the OPRF.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let sizes = Sizes::new(self.setup.hello.items, peer.items);
        let ids = &self.setup.input.ids;
        let locations = cuckoo::locations(&session.ctx.derive_key(CUCKOO_KEY), ids, sizes.bins);
        let table = cuckoo::insert(&locations, sizes.bins, session.rng)
            .map_err(|e| ProtocolError::Config(format!("P1's cuckoo table: {e}")))?;
        let inputs: Vec<Vec<u8>> = table
            .iter()
            .map(|slot| match slot {
                Some(i) => ids[*i as usize].clone(),
                None => {
                    let mut dummy = vec![0u8; 32];
                    session.rng.fill(&mut dummy);
                    dummy
                }
            })
            .collect();
        let (receiver, first) =
            OprfReceiver::new(session.rng, &session.ctx.transcript, sizes.width);
        let (_, sk) = ElGamal::keygen(&elgamal::Params::default(), session.rng);
        session.send(Role::P2.id(), kind::ROT_BASE, &first);
        self.state = P1State::AwaitReply(Box::new(P1Query {
            peer,
            sizes,
            receiver,
            inputs,
            sk,
        }));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, P1State::Hellos) {
            P1State::AwaitReply(query) => {
                let body = message.expect(kind::ROT_REPLY)?;
                P1State::AwaitAnswer(Box::new(Self::on_reply(session, body, *query)?))
            }
            P1State::AwaitAnswer(keys) => {
                let body = message.expect(kind::ROT_ANSWER)?;
                P1State::Done(self.on_answer(session, body, &keys)?)
            }
            P1State::Hellos | P1State::Done(_) => {
                return Err(ProtocolError::ApiMisuse(
                    "P1 received a message it does not wait for",
                ));
            }
        };
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            P1State::AwaitReply(_) | P1State::AwaitAnswer(_) => Some(Role::P2.id()),
            P1State::Hellos | P1State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P1State::AwaitReply(q) => q.sizes.width.base_reply_len(),
            P1State::AwaitAnswer(k) => {
                let n2 = k.peer.items as usize;
                (4 + common::MAX_PUBLIC_KEY_LEN)
                    .saturating_add(k.sizes.bins.saturating_mul(elgamal::CIPHERTEXT_LEN))
                    .saturating_add(
                        n2.saturating_mul(HASH_FUNCTIONS)
                            .saturating_mul(k.sizes.entry_len),
                    )
                    .saturating_add(common::max_columns_len::<H>(&self.setup.config, &k.peer))
            }
            P1State::Hellos | P1State::Done(_) => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, P1State::Done(_))
    }

    fn status(&self) -> String {
        match &self.state {
            P1State::Hellos => "exchanging hellos".into(),
            P1State::AwaitReply(_) => "waiting for P2's OPRF base reply".into(),
            P1State::AwaitAnswer(k) => format!(
                "waiting for P2's re-masked values and PRF values ({} items)",
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
    AwaitBase(Box<P2Prepared<H>>),
    AwaitQuery(Box<(P2Prepared<H>, OprfSender)>),
    AwaitSums(Box<P2Prepared<H>>),
    Done(PiSumOutput),
}

/// P2's work that does not depend on P1's messages, done right after the hellos.
struct P2Prepared<H: HeChoice> {
    peer: Hello,
    sizes: Sizes,
    /// The key and the encrypted values, items in the shuffled order.
    values: common::P2Values<H>,
    /// The items in the shuffled order, with their three bins in P1's table.
    order: Vec<u32>,
    locations: Vec<[usize; HASH_FUNCTIONS]>,
}

impl<H: HeChoice> P2<H> {
    pub fn new(config: PiSumConfig, input: Dataset) -> Self {
        Self {
            setup: Setup::new(Role::P2, config, input),
            state: P2State::Hellos,
        }
    }

    /// Steps 5-6: re-masks and shuffles P1's encrypted values, computes every item's
    /// `W_j`, and sends them with the encrypted values.
    fn on_query(
        &self,
        session: &mut Session<'_>,
        body: &[u8],
        prep: &P2Prepared<H>,
        sender: OprfSender,
    ) -> Result<(), ProtocolError> {
        let sizes = prep.sizes;
        let mut r = Reader::new(body, "Random-OT query");
        let rows = r.take(sizes.width.message_len(sizes.bins))?;
        let pk1 = ElGamal::decode_public_key(r.take(32)?, &elgamal::Params::default())
            .map_err(bad_ciphertext("P1's ElGamal key"))?;
        let cts = r.take(checked_len(
            sizes.bins,
            elgamal::CIPHERTEXT_LEN,
            "P1's PRF values",
        )?)?;
        r.finish()?;
        let key: OprfSenderKey<OPRF_LEN> = sender
            .finish(rows, sizes.bins)
            .map_err(|e| PeerMisbehaved::Malformed(format!("OPRF rows: {e}")))?;
        let cts = bulk::decode_many(cts).map_err(bad_ciphertext("P1's PRF values"))?;

        session
            .meter
            .begin("step 5: re-masking and shuffling P1's values", sizes.bins);
        let masks: Vec<Scalar> = (0..sizes.bins)
            .map(|_| elgamal::random_scalar(session.rng))
            .collect();
        let remasked = bulk::add_encoded(pk1.table(), &cts, &masks, session.rng);
        let shuffle = session.rng.permutation(sizes.bins);
        let remasked = common::permute_blocks(&remasked, elgamal::CIPHERTEXT_LEN, &shuffle);
        session.meter.add(sizes.bins);

        let n2 = prep.order.len();
        session
            .meter
            .begin("step 6: evaluating our items in their bins", n2);
        let items = common::gather(&self.setup.input.ids, &prep.order);
        let prf = key.eval_in_bins(&items, &prep.locations);
        let sums: Vec<Scalar> = prf
            .iter()
            .zip(&prep.locations)
            .flat_map(|(f, bins)| (0..HASH_FUNCTIONS).map(|b| to_scalar(&f[b]) + masks[bins[b]]))
            .collect();
        let points = bulk::doubled_base_points(&sums);
        let mut entries = Vec::with_capacity(n2 * HASH_FUNCTIONS * sizes.entry_len);
        for (j, bins) in prep.locations.iter().enumerate() {
            let mut w: Vec<Vec<u8>> = (0..HASH_FUNCTIONS)
                .map(|b| {
                    if bins[..b].contains(&bins[b]) {
                        // A repeated bin: a random dummy instead (Fig. 3, step 6).
                        let mut dummy = vec![0u8; sizes.entry_len];
                        session.rng.fill(&mut dummy);
                        dummy
                    } else {
                        entry(&points[j * HASH_FUNCTIONS + b], sizes.entry_len)
                    }
                })
                .collect();
            w.sort_unstable();
            entries.extend(w.concat());
        }
        session.meter.add(n2);

        let mut answer =
            Vec::with_capacity(remasked.len() + entries.len() + prep.values.columns_len());
        prep.values.put_key(&mut answer);
        answer.extend_from_slice(&remasked);
        answer.extend_from_slice(&entries);
        prep.values.put_columns(&mut answer);
        session.send(Role::P1.id(), kind::ROT_ANSWER, &answer);
        Ok(())
    }
}

impl<H: HeChoice> Protocol for P2<H> {
    type Output = PiSumOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    /// Draws the value key, shuffles the items, encrypts the values in that order and
    /// hashes every item's bins.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let peer = common::take_peer(&mut self.setup.peer)?;
        let sizes = Sizes::new(peer.items, self.setup.hello.items);
        let order = session.rng.permutation(self.setup.input.ids.len());
        let values = common::P2Values::encrypt(
            session,
            "step 6: encrypting our value columns",
            &self.setup,
            &order,
        )?;
        let items = common::gather(&self.setup.input.ids, &order);
        let locations = cuckoo::locations(&session.ctx.derive_key(CUCKOO_KEY), &items, sizes.bins);
        self.state = P2State::AwaitBase(Box::new(P2Prepared {
            peer,
            sizes,
            values,
            order,
            locations,
        }));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, P2State::Hellos) {
            P2State::AwaitBase(prep) => {
                let body = message.expect(kind::ROT_BASE)?;
                let (sender, reply) = OprfSender::respond(
                    session.rng,
                    &session.ctx.transcript,
                    prep.sizes.width,
                    body,
                )
                .map_err(|e| PeerMisbehaved::Malformed(format!("OPRF base message: {e}")))?;
                session.send(Role::P1.id(), kind::ROT_REPLY, &reply);
                P2State::AwaitQuery(Box::new((*prep, sender)))
            }
            P2State::AwaitQuery(state) => {
                let (prep, sender) = *state;
                let body = message.expect(kind::ROT_QUERY)?;
                self.on_query(session, body, &prep, sender)?;
                P2State::AwaitSums(Box::new(prep))
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
            P2State::AwaitBase(_) | P2State::AwaitQuery(_) | P2State::AwaitSums(_) => {
                Some(Role::P1.id())
            }
            P2State::Hellos | P2State::Done(_) => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            P2State::AwaitBase(_) => BASE_FIRST_LEN,
            P2State::AwaitQuery(state) => {
                let sizes = state.0.sizes;
                sizes
                    .width
                    .message_len(sizes.bins)
                    .saturating_add(32)
                    .saturating_add(sizes.bins.saturating_mul(elgamal::CIPHERTEXT_LEN))
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
            P2State::AwaitBase(_) => "waiting for P1's OPRF base message".into(),
            P2State::AwaitQuery(s) => format!(
                "waiting for P1's OPRF rows and encrypted values ({} bins)",
                s.0.sizes.bins
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
