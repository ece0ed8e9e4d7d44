//! PSI from silent VOLE and an OKVS: the protocol of Raghuraman and Rindal, "Blazing Fast
//! PSI from Improved OKVS and Subfield VOLE" (CCS 2022, Fig. 4, semi-honest, fast mode
//! over GF(2^128)). `--mqrpmt vole` for `psi`.
//!
//! The **receiver** (holds `Y`, learns `X ∩ Y`) is the VOLE receiver, with `a`, `c`; the
//! **sender** (holds `X`, learns `|Y|`) is the VOLE sender, with `Δ`, `b`, where
//! `c = b + a·Δ` ([`privset_crypto::vole`]). Every item `z` is hashed under a session key
//! to an OKVS key `k(z)` and a value `h(z)` (128 bits each).
//!
//! ```text
//! receiver (Y)                                 sender (X, shuffled)
//!  R1: VOLE base-OT first message (32 B) --->
//!                                          <--- S1: VOLE base-OT reply (4096 B)
//!  R2: VOLE OT extension ------------------>
//!                                          <--- S2: VOLE trees (t·(32·d + 16) B)
//!  R3: OKVS seed, P + a  ------------------>      P = Encode{k(y) -> h(y)}, m·16 B
//!                                                 K = b + (P + a)·Δ = c + P·Δ
//!                                          <--- S3: for each x: T(k(x), Decode(K, k(x)) + Δ·h(x))
//!  own tags T(k(y), Decode(c, k(y))); X ∩ Y = the ys whose tag is in S3
//! ```
//!
//! For `y ∈ Y`, `Decode(K, k(y)) + Δ·h(y) = Decode(c, k(y)) + Δ·(Decode(P, k(y)) + h(y))
//! = Decode(c, k(y))`: the receiver computes the sender's tag of every common item. For
//! `x ∉ Y` the sender's input to `T` carries `Δ·(Decode(P, k(x)) + h(x))`, a nonzero
//! multiple of the sender's secret `Δ`, so its tag is pseudorandom to the receiver.
//! `T` is SHA-256 under a session key, truncated to `40 + log2(n1) + log2(n2)` bits
//! (at most 128), so a false match anywhere in the run has probability below 2^-40.
//!
//! **Leakage** (semi-honest, like the DH version's table in docs/pso/psi.md): the
//! receiver learns `X ∩ Y` and `|X|`; the sender learns `|Y|`. `P + a` is masked by the
//! pseudorandom `a` (dual LPN); the sender's tags come in a random order.
//! **Bytes**: `m·16` for the OKVS (`m` about 1.1·`|Y|`), `ℓ` per sender item for the
//! tags, about 0.2 MB for the VOLE.

use hashbrown::HashTable;
use rayon::prelude::*;

use privset_crypto::gf128;
use privset_crypto::okvs::{self, OKVS_SEED_LEN, OkvsParams};
use privset_crypto::ot::BASE_REPLY_LEN;
use privset_crypto::prefixed_sha256::PrefixedSha256;
use privset_crypto::vole::{
    VoleParams, VoleReceiver, VoleReceiverPending, VoleSender, VoleSenderOutput,
};

use super::core::{Common, RECEIVER, SENDER, no_message_now};
use super::transfer::tag_len;
use super::{PsoOutput, kind};
use crate::engine::{Message, Protocol, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{PartyId, expect_len};

/// Session-key purposes of the two hashes.
const ITEM_KEY: &str = "pso/vole/item";
const TAG_KEY: &str = "pso/vole/tag";
/// Items one parallel task hashes.
const CHUNK: usize = 1 << 14;

/// The OKVS and VOLE shapes, both fixed by the receiver's set size.
fn shapes(receiver_items: usize) -> Result<(OkvsParams, VoleParams), ProtocolError> {
    let okvs = OkvsParams::for_items(receiver_items)
        .map_err(|e| ProtocolError::Config(format!("OKVS for {receiver_items} items: {e}")))?;
    let vole = VoleParams::for_outputs(okvs.columns)
        .map_err(|e| ProtocolError::Config(format!("VOLE for {receiver_items} items: {e}")))?;
    Ok((okvs, vole))
}

/// Bytes of a tag: the DH version's tag length, at most 16 (it stays below that for any
/// set sizes privset accepts).
fn tag_bytes(receiver_items: u64, sender_items: u64) -> usize {
    tag_len(receiver_items, sender_items).min(16)
}

/// `(k(z), h(z))` of every item: the two halves of SHA-256 under the session's item key.
/// Written straight into the two vectors: collecting pairs and then unzipping them held
/// both the pairs and the halves at once, 2 × 268 MB more at 2^24 items.
fn item_hashes(s: &Session<'_>, ids: &[Vec<u8>]) -> (Vec<u128>, Vec<u128>) {
    let hash = PrefixedSha256::with_tag_and_key(b"privset/vole/item", &s.ctx.derive_key(ITEM_KEY));
    let (mut keys, mut values) = (vec![0u128; ids.len()], vec![0u128; ids.len()]);
    s.meter.begin("hashing our items", ids.len());
    // Steps of 16 parallel chunks, so that progress moves.
    let step = 16 * CHUNK;
    for ((ids, keys), values) in ids
        .chunks(step)
        .zip(keys.chunks_mut(step))
        .zip(values.chunks_mut(step))
    {
        ids.par_iter()
            .zip(keys.par_iter_mut().zip(values.par_iter_mut()))
            .with_min_len(CHUNK / 8)
            .for_each(|(id, (k, v))| {
                let d = hash.hash(id);
                *k = u128::from_le_bytes(d[..16].try_into().expect("16 bytes"));
                *v = u128::from_le_bytes(d[16..].try_into().expect("16 bytes"));
            });
        s.meter.add(ids.len());
    }
    (keys, values)
}

/// The tag hash `T(k, v)`: SHA-256 under the session's tag key of `k || v`, truncated to
/// `len` bytes and read as a little-endian integer.
struct TagHash(PrefixedSha256);

impl TagHash {
    fn new(s: &Session<'_>) -> Self {
        Self(PrefixedSha256::with_tag_and_key(
            b"privset/vole/tag",
            &s.ctx.derive_key(TAG_KEY),
        ))
    }

    fn tag(&self, key: u128, value: u128, len: usize) -> u128 {
        let d = self.0.hash2(&key.to_le_bytes(), &value.to_le_bytes());
        let mut out = [0u8; 16];
        out[..len].copy_from_slice(&d[..len]);
        u128::from_le_bytes(out)
    }
}

/// Our tags, found by value: a table of indices into the tags, hashed by each tag's low
/// 64 bits as they are (tags are SHA-256 outputs). The table holds only our own tags
/// (pseudorandom to the sender, who cannot crowd a bucket); the sender's tags are only
/// looked up. Four bytes a bucket: a map from tag to index took 32 (a `u128` key aligns
/// its entry to 16), 1.1 GB at 2^24 items.
struct OwnTags {
    tags: Vec<u128>,
    table: HashTable<u32>,
}

impl OwnTags {
    fn new(tags: Vec<u128>) -> Self {
        let mut table = HashTable::with_capacity(tags.len());
        for (j, &t) in tags.iter().enumerate() {
            table.insert_unique(t as u64, j as u32, |&i| tags[i as usize] as u64);
        }
        Self { tags, table }
    }

    /// The index of the item whose tag is `tag`.
    fn find(&self, tag: u128) -> Option<u32> {
        self.table
            .find(tag as u64, |&i| self.tags[i as usize] == tag)
            .copied()
    }
}

fn bad_vole(e: privset_crypto::vole::VoleError) -> ProtocolError {
    PeerMisbehaved::InvalidVole(e).into()
}

/// Decodes `store` at every key under the meter's `phase` (the decoder runs its chunks
/// in parallel).
fn decode_all(
    s: &Session<'_>,
    phase: &'static str,
    params: &OkvsParams,
    seed: &[u8; OKVS_SEED_LEN],
    store: &[u128],
    keys: &[u128],
) -> Result<Vec<u128>, ProtocolError> {
    let mut out = vec![0u128; keys.len()];
    s.meter.begin(phase, keys.len());
    okvs::decode(params, seed, store, keys, &mut out)
        .map_err(|e| ProtocolError::Config(format!("OKVS decode: {e}")))?;
    s.meter.add(keys.len());
    Ok(out)
}

/// The receiver: holds `Y`; learns `X ∩ Y`.
pub struct Receiver {
    common: Common,
    state: ReceiverState,
    output: Option<PsoOutput>,
}

enum ReceiverState {
    Start,
    /// R1 sent; encoding our set while the sender answers.
    Encode {
        vole: VoleReceiver,
    },
    AwaitS1 {
        vole: VoleReceiver,
        encoded: Encoded,
    },
    AwaitS2 {
        vole: VoleReceiverPending,
        encoded: Encoded,
    },
    /// R3 sent; computing our own tags while the sender computes its own.
    OwnTags {
        c: Vec<u128>,
        encoded: Encoded,
    },
    AwaitS3 {
        own: OwnTags,
    },
    Done,
}

/// Our items' keys and the OKVS of our set.
struct Encoded {
    keys: Vec<u128>,
    okvs: OkvsParams,
    seed: [u8; OKVS_SEED_LEN],
    store: Vec<u128>,
}

impl Receiver {
    pub(crate) fn new(common: Common) -> Self {
        Self {
            common,
            state: ReceiverState::Start,
            output: None,
        }
    }

    fn encode(&self, s: &mut Session<'_>) -> Result<Encoded, ProtocolError> {
        let (okvs, _) = shapes(self.common.input.ids.len())?;
        let (keys, values) = item_hashes(s, &self.common.input.ids);
        s.meter.begin("encoding our set (OKVS)", keys.len());
        let rng = &mut *s.rng;
        let mut fill_rng = rng.fork();
        let (seed, store) = okvs::encode_retrying(
            &okvs,
            &keys,
            &values,
            || {
                let mut seed = [0u8; OKVS_SEED_LEN];
                rng.fill(&mut seed);
                seed
            },
            || {
                let mut b = [0u8; 16];
                fill_rng.fill(&mut b);
                u128::from_le_bytes(b)
            },
        )
        .map_err(|e| ProtocolError::Config(format!("OKVS encoding of our set: {e}")))?;
        s.meter.add(keys.len());
        Ok(Encoded {
            keys,
            okvs,
            seed,
            store,
        })
    }

    fn tag_len(&self) -> usize {
        tag_bytes(self.common.input.ids.len() as u64, self.common.peer_items())
    }

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<ReceiverState, ProtocolError> {
        Ok(
            match std::mem::replace(&mut self.state, ReceiverState::Done) {
                ReceiverState::AwaitS1 { vole, encoded } => {
                    let reply = message.expect(kind::S1)?;
                    expect_len("S1", reply, BASE_REPLY_LEN)?;
                    s.meter.begin("VOLE: oblivious transfers", 1);
                    let (vole, extension) = vole.extend(s.rng, reply).map_err(bad_vole)?;
                    s.send_owned(SENDER, kind::R2, extension);
                    ReceiverState::AwaitS2 { vole, encoded }
                }
                ReceiverState::AwaitS2 { vole, encoded } => {
                    let trees = message.expect(kind::S2)?;
                    s.meter.begin("VOLE: expanding and encoding", 1);
                    let out = vole.finish(trees).map_err(bad_vole)?;
                    let mut r3 = Vec::with_capacity(OKVS_SEED_LEN + 16 * encoded.store.len());
                    r3.extend_from_slice(&encoded.seed);
                    for (p, a) in encoded.store.iter().zip(&out.a) {
                        r3.extend_from_slice(&(p ^ a).to_le_bytes());
                    }
                    s.send_owned(SENDER, kind::R3, r3);
                    drop(out.a);
                    let encoded = Encoded {
                        store: Vec::new(),
                        ..encoded
                    };
                    ReceiverState::OwnTags { c: out.c, encoded }
                }
                ReceiverState::AwaitS3 { own } => {
                    let body = message.expect(kind::S3)?;
                    let len = self.tag_len();
                    let n2 = self.common.peer_items() as usize;
                    expect_len("S3", body, n2.saturating_mul(len))?;
                    let mut found: Vec<u32> = body
                        .chunks_exact(len)
                        .filter_map(|t| {
                            let mut b = [0u8; 16];
                            b[..len].copy_from_slice(t);
                            own.find(u128::from_le_bytes(b))
                        })
                        .collect();
                    found.sort_unstable();
                    found.dedup();
                    // Moved, not copied: the set is not needed after this.
                    let mut ids = std::mem::take(&mut self.common.input.ids);
                    let items = found
                        .into_iter()
                        .map(|j| std::mem::take(&mut ids[j as usize]))
                        .collect();
                    self.output = Some(PsoOutput::Intersection {
                        items,
                        peer_items: self.common.peer_items(),
                    });
                    ReceiverState::Done
                }
                ReceiverState::Start
                | ReceiverState::Encode { .. }
                | ReceiverState::OwnTags { .. }
                | ReceiverState::Done => return Err(no_message_now()),
            },
        )
    }
}

impl Protocol for Receiver {
    type Output = PsoOutput;
    type Handshake = Common;

    fn handshake(&mut self) -> &mut Common {
        &mut self.common
    }

    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        let (_, vole) = shapes(self.common.input.ids.len())?;
        let (vole, first) = VoleReceiver::new(s.rng, &s.ctx.transcript, vole);
        s.send(SENDER, kind::R1, &first);
        self.state = ReceiverState::Encode { vole };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            ReceiverState::AwaitS1 { .. }
            | ReceiverState::AwaitS2 { .. }
            | ReceiverState::AwaitS3 { .. } => Some(SENDER),
            _ => None,
        }
    }

    fn max_message_len(&self) -> usize {
        match &self.state {
            ReceiverState::AwaitS1 { .. } => BASE_REPLY_LEN,
            ReceiverState::AwaitS2 { .. } => shapes(self.common.input.ids.len())
                .map(|(_, v)| v.tree_message_len())
                .unwrap_or(0),
            ReceiverState::AwaitS3 { .. } => {
                (self.common.peer_items() as usize).saturating_mul(self.tag_len())
            }
            _ => 0,
        }
    }

    fn has_deferred_work(&self) -> bool {
        matches!(
            self.state,
            ReceiverState::Encode { .. } | ReceiverState::OwnTags { .. }
        )
    }

    fn do_deferred_work(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.state = match std::mem::replace(&mut self.state, ReceiverState::Done) {
            ReceiverState::Encode { vole } => {
                let encoded = self.encode(s)?;
                ReceiverState::AwaitS1 { vole, encoded }
            }
            ReceiverState::OwnTags { c, encoded } => {
                let (hash, len) = (TagHash::new(s), self.tag_len());
                let Encoded {
                    keys: mut tags,
                    okvs,
                    seed,
                    ..
                } = encoded;
                // All keys at once: the decoder sorts them by column to share its
                // subset tables, which smaller calls would build over and over.
                let decoded = decode_all(s, "decoding our tags", &okvs, &seed, &c, &tags)?;
                drop(c);
                // Each key becomes its tag in place: no third vector of the set's size.
                tags.par_iter_mut()
                    .zip(&decoded)
                    .for_each(|(k, &v)| *k = hash.tag(*k, v, len));
                drop(decoded);
                ReceiverState::AwaitS3 {
                    own: OwnTags::new(tags),
                }
            }
            other => other,
        };
        Ok(())
    }

    fn is_done(&self) -> bool {
        matches!(self.state, ReceiverState::Done)
    }

    fn status(&self) -> String {
        match &self.state {
            ReceiverState::Start => "starting".into(),
            ReceiverState::Encode { .. } => "encoding our set".into(),
            ReceiverState::AwaitS1 { .. } | ReceiverState::AwaitS2 { .. } => {
                "VOLE: waiting for the sender".into()
            }
            ReceiverState::OwnTags { .. } => "computing our tags".into(),
            ReceiverState::AwaitS3 { .. } => "waiting for the sender's tags".into(),
            ReceiverState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}

/// The sender: holds `X`; learns `|Y|`.
pub struct Sender {
    common: Common,
    state: SenderState,
    output: Option<PsoOutput>,
}

enum SenderState {
    Start,
    AwaitR1 {
        items: Items,
    },
    AwaitR2 {
        items: Items,
        vole: VoleSender,
    },
    AwaitR3 {
        items: Items,
        vole: VoleSenderOutput,
    },
    Done,
}

/// Our items' keys and values, in a random order.
struct Items {
    keys: Vec<u128>,
    values: Vec<u128>,
}

impl Sender {
    pub(crate) fn new(common: Common) -> Self {
        Self {
            common,
            state: SenderState::Start,
            output: None,
        }
    }

    fn receiver_items(&self) -> usize {
        self.common.peer_items() as usize
    }

    fn on_message(
        &mut self,
        s: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<SenderState, ProtocolError> {
        let (okvs, vole_params) = shapes(self.receiver_items())?;
        Ok(
            match std::mem::replace(&mut self.state, SenderState::Done) {
                SenderState::AwaitR1 { items } => {
                    let first = message.expect(kind::R1)?;
                    let (vole, reply) =
                        VoleSender::respond(s.rng, &s.ctx.transcript, vole_params, first)
                            .map_err(bad_vole)?;
                    s.send_owned(RECEIVER, kind::S1, reply);
                    SenderState::AwaitR2 { items, vole }
                }
                SenderState::AwaitR2 { items, vole } => {
                    let extension = message.expect(kind::R2)?;
                    s.meter.begin("VOLE: expanding and encoding", 1);
                    let (vole, trees) = vole.finish(s.rng, extension).map_err(bad_vole)?;
                    s.send_owned(RECEIVER, kind::S2, trees);
                    SenderState::AwaitR3 { items, vole }
                }
                SenderState::AwaitR3 { items, vole } => {
                    let body = message.expect(kind::R3)?;
                    expect_len("R3", body, OKVS_SEED_LEN + okvs.encoded_len())?;
                    let (seed, masked) = body.split_at(OKVS_SEED_LEN);
                    let seed: [u8; OKVS_SEED_LEN] = seed.try_into().expect("seed length");
                    // K = b + (P + a)·Δ = c + P·Δ, a chunk at a time (no copy of P + a).
                    let mut k = vole.b;
                    k.par_chunks_mut(CHUNK)
                        .zip(masked.par_chunks(16 * CHUNK))
                        .for_each_init(
                            || vec![0u128; CHUNK],
                            |buf, (out, bytes)| {
                                let xs = &mut buf[..out.len()];
                                for (x, b) in xs.iter_mut().zip(bytes.chunks_exact(16)) {
                                    *x = u128::from_le_bytes(b.try_into().expect("16 bytes"));
                                }
                                gf128::add_mul_scalar(out, xs, vole.delta);
                            },
                        );
                    let (hash, len) = (
                        TagHash::new(s),
                        tag_bytes(self.receiver_items() as u64, items.keys.len() as u64),
                    );
                    let delta = vole.delta;
                    let mut s3 = vec![0u8; items.keys.len() * len];
                    let decoded =
                        decode_all(s, "evaluating our items", &okvs, &seed, &k, &items.keys)?;
                    drop(k);
                    s3.par_chunks_mut(len.max(1))
                        .zip(items.keys.par_iter().zip(&items.values).zip(&decoded))
                        .for_each(|(out, ((&key, &value), &d))| {
                            let tag = hash.tag(key, d ^ gf128::mul(delta, value), len);
                            out.copy_from_slice(&tag.to_le_bytes()[..len]);
                        });
                    s.send_owned(RECEIVER, kind::S3, s3);
                    self.output = Some(PsoOutput::PeerSize {
                        peer_items: self.common.peer_items(),
                    });
                    SenderState::Done
                }
                SenderState::Start | SenderState::Done => return Err(no_message_now()),
            },
        )
    }
}

impl Protocol for Sender {
    type Output = PsoOutput;
    type Handshake = Common;

    fn handshake(&mut self) -> &mut Common {
        &mut self.common
    }

    /// Shuffles our items (the tags go out in this order) and hashes them while the
    /// receiver starts the VOLE.
    fn start(&mut self, s: &mut Session<'_>) -> Result<(), ProtocolError> {
        let ids = &mut self.common.input.ids;
        s.rng.shuffle(ids);
        let (keys, values) = item_hashes(s, &self.common.input.ids);
        // The sender learns only |Y|: its identifiers are not needed again, and at 2^24
        // items they are over a gigabyte.
        self.common.input.ids = Vec::new();
        self.state = SenderState::AwaitR1 {
            items: Items { keys, values },
        };
        Ok(())
    }

    fn handle(&mut self, s: &mut Session<'_>, message: Message<'_>) -> Result<(), ProtocolError> {
        self.state = self.on_message(s, message)?;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            SenderState::AwaitR1 { .. }
            | SenderState::AwaitR2 { .. }
            | SenderState::AwaitR3 { .. } => Some(RECEIVER),
            SenderState::Start | SenderState::Done => None,
        }
    }

    fn max_message_len(&self) -> usize {
        let Ok((okvs, vole)) = shapes(self.receiver_items()) else {
            return 0;
        };
        match self.state {
            SenderState::AwaitR1 { .. } => privset_crypto::ot::BASE_FIRST_LEN,
            SenderState::AwaitR2 { .. } => vole.extension_len(),
            SenderState::AwaitR3 { .. } => OKVS_SEED_LEN + okvs.encoded_len(),
            SenderState::Start | SenderState::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, SenderState::Done)
    }

    fn status(&self) -> String {
        match self.state {
            SenderState::Start => "starting".into(),
            SenderState::AwaitR1 { .. } | SenderState::AwaitR2 { .. } => {
                "VOLE: waiting for the receiver".into()
            }
            SenderState::AwaitR3 { .. } => "waiting for the receiver's encoded set".into(),
            SenderState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<PsoOutput> {
        self.output
    }
}
