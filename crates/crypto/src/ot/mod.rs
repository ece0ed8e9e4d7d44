//! Semi-honest oblivious transfer: 128 Chou-Orlandi base OTs extended with SoftSpokenOT.
//!
//! Sans-IO: every step takes and returns byte messages; moving them is the caller's job.
//! The output is `count` *random* OTs: the sender gets two 32-byte keys per OT, the
//! receiver gets the key for its choice bit. A chosen-message OT is one more message:
//! the sender sends `m_0 ⊕ pad(k_0)` and `m_1 ⊕ pad(k_1)` ([`pad`] stretches a key to any
//! length) and the receiver unmasks the one its key opens. Each key may mask only one
//! message: the pad is a deterministic function of the key.
//!
//! # Construction
//!
//! **Base OTs** ([Chou-Orlandi 2015], "the simplest OT", over ristretto255). The
//! base-OT sender draws `a` and sends `A = a·G`. For each `j < 128` the base-OT receiver
//! with choice bit `c_j` draws `b_j` and sends `B_j = b_j·G + c_j·A`. The sender's keys
//! are `k_j^0 = H(ctx, j, A, B_j, a·B_j)` and `k_j^1 = H(ctx, j, A, B_j, a·(B_j − A))`;
//! the receiver's is `k_j^{c_j} = H(ctx, j, A, B_j, b_j·A)`. `H` is SHA-256 with a domain
//! tag, truncated to 16-byte seeds. Received points must be canonical, non-identity
//! encodings ([`OtError::InvalidPoint`]).
//!
//! **Extension** ([SoftSpokenOT], semi-honest, `k` = [`SUBSPACE_BITS`] = 8; with `k = 1`
//! it is exactly [IKNP 2003]). The extension receiver has choice bits `c` (`count` of
//! them); the extension sender's 128 base-OT choices form a secret offset `s`, cut into
//! 16 slices `Δ_b` of 8 bits. For each slice the receiver grows a GGM tree of 256 leaf
//! seeds from a random root and sends, for each level, the xor of its even children and
//! the xor of its odd children, each masked with one of the two seeds of that level's
//! base OT; the sender, who holds the seed of its choice, rebuilds every leaf except leaf
//! `Δ_b` ([`ggm`]). Each leaf `x` stretches into a column `r_x` (AES-128-CTR); the
//! receiver's columns for the slice are `t_{b,i} = ⊕_{x: bit i of x} r_x` and it sends
//! `d_b = c ⊕ ⊕_x r_x`; the sender's are `q_{b,i} = v'_{b,i} ⊕ Δ_{b,i}·(u'_b ⊕ d_b)`
//! from its sums with a stand-in for leaf `Δ_b` ([`subspace`]), which equals `t_{b,i} ⊕ Δ_{b,i}·c`.
//! Read as rows (one bit per column, found by a blockwise bit-matrix transposition),
//! `q_i = t_i ⊕ c_i·s`: IKNP's correlation, at `128 / k` = 16 bits per OT on the wire
//! instead of 128, for `2^k / k` = 32 times IKNP's (small) PRG work. The sender's keys for
//! OT `i` are `H'(i, q_i)` and `H'(i, q_i ⊕ s)`; the receiver's is `H'(i, t_i)`, equal to
//! the one selected by `c_i`. `H'` is SHA-256 with a domain tag, the context and the
//! index `i`, modelled as a (tweakable) correlation-robust hash, which is what makes keys
//! that differ by the fixed offset `s` look independent.
//!
//! **Why the base-OT roles are swapped.** The extension sender must end up knowing the
//! offset `s` and each column `q = t ⊕ s_j·c` without learning `c` or `t`: it is the one
//! who *obliviously receives* one of two seeds per base OT, with choice `s_j`. The
//! extension receiver knows `c` and must be able to build every column: it holds both
//! seeds, so it is the base-OT *sender*. 128 public-key OTs with random choices thus
//! become `count` OTs with the receiver's chosen bits at the cost of symmetric crypto
//! only.
//!
//! # Messages
//!
//! | step | direction | bytes | function |
//! |------|-----------|-------|----------|
//! | 1 | receiver → sender | [`BASE_FIRST_LEN`] = 32 (`A`) | [`OtReceiverSetup::new`] |
//! | 2 | sender → receiver | [`BASE_REPLY_LEN`] = 4096 (`B_1..B_128`) | [`OtSenderSetup::respond`] |
//! | 3 | receiver → sender | [`extension_message_len`]`(count)` = `4096 + 16 · ceil(count/8)` | [`OtReceiverSetup::extend`] |
//!
//! then the sender finishes with [`OtSenderSetup::extend`]. Message 3 is, for each base
//! OT `j = 8b + i` in order (it serves level `7 - i` of tree `b`, the level that decides
//! bit `i` of a leaf index), 16 bytes `odd ⊕ k_j^0` then 16 bytes `even ⊕ k_j^1`, where
//! `odd` and `even` are the xors of that level's odd and even children; then the 16
//! corrections `d_0..d_15`, `ceil(count/8)` bytes each (bit of OT `i` in byte `i/8`, bit
//! `i mod 8`): 2 bytes per OT. The three messages have a fixed cost of 8224 bytes in all
//! (4128 from the receiver before the corrections, 4096 from the sender). A GGM node's
//! children are the two halves of `SHA-256(tag || node)`; a leaf's stream is AES-128-CTR
//! under the leaf seed with a big-endian counter from zero. Steps 1 and 2 do not depend
//! on the choices or on `count`, so they can run ahead of the inputs. Both `extend`
//! methods consume their setup: one set of base OTs is extended exactly once, since two
//! extensions from the same seeds would reveal the xor of the two choice vectors.
//!
//! # Security (semi-honest only)
//!
//! Both parties are assumed to follow the protocol; nothing checks that they do. In
//! particular a malicious receiver can use a different `c` in different slices and
//! learn bits of `s` (the attack SoftSpokenOT's and KOS's consistency checks prevent),
//! so this must not be used where either party may deviate. Under that assumption:
//!
//! * the **sender** learns nothing about `c`: each correction `d_b` is masked by
//!   `r_{Δ_b}`, the stream of the one leaf it cannot rebuild (its seed is a GGM node
//!   whose masked level sums it cannot open), and `A` is independent of everything;
//! * the **receiver** learns `H'(i, t_i)` only: `B_j` hides `s_j` perfectly, the unchosen
//!   base key needs CDH, and the unchosen extended key is `H'(i, t_i ⊕ s)` for a 128-bit
//!   `s` it has no information about. The correlation is IKNP's, so the semi-honest
//!   argument and the hash are IKNP's ([SoftSpokenOT], Sec. 4).
//!
//! Everything is bound to the caller's `ctx` (the session transcript id): parties with
//! different contexts get unrelated keys, and keys never repeat across sessions.
//! Secrets (`a`, the `b_j`, `s`, the base seeds, the GGM roots and leaves, the column
//! matrices and the output keys) are zeroized when dropped or when no longer needed, as
//! far as the libraries allow (aws-lc-rs wipes its AES key schedules itself).
//!
//! The base OTs (their count a parameter), the AES-CTR stream (`prg`) and the
//! transposition are shared with the KKRT batched OPRF ([`crate::oprf`]), which runs
//! one base OT per bit of its code width under its own context tag.
//!
//! [Chou-Orlandi 2015]: https://eprint.iacr.org/2015/267
//! [IKNP 2003]: https://www.iacr.org/archive/crypto2003/27290145/27290145.pdf
//! [SoftSpokenOT]: https://eprint.iacr.org/2022/192

pub(crate) mod base;
pub(crate) mod extension;
mod ggm;
pub(crate) mod prg;
mod subspace;
#[cfg(test)]
mod tests;
pub(crate) mod transpose;

use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

use self::base::{BaseSender, SEED_LEN, Seed};
use self::extension::{RowHash, column_len, column_stride, ctx_digest, for_each_row_block};
use crate::rng::SessionRng;

/// Number of base OTs, the computational security parameter of the extension.
pub const KAPPA: usize = 128;
/// Bytes of the base-OT first message (`A`, receiver → sender).
pub const BASE_FIRST_LEN: usize = 32;
/// Bytes of the base-OT reply (`B_1..B_128`, sender → receiver).
pub const BASE_REPLY_LEN: usize = base::reply_len(KAPPA);
/// Bytes of one output key.
pub const KEY_LEN: usize = 32;
/// Bits of the offset one GGM tree covers (SoftSpokenOT's `k`): the extension sends
/// `128 / k` bits per OT and does `2^k / k` times IKNP's PRG work. 8 makes the wire cost
/// 2 bytes per OT for about 30 ns of AES per OT and party.
pub const SUBSPACE_BITS: usize = 8;
/// Bytes of the masked GGM level sums that open the extension message: two seeds per
/// base OT.
const LEVEL_SUMS_LEN: usize = KAPPA * 2 * SEED_LEN;
/// Most OTs one extension produces: far beyond what fits in memory (the sender keeps
/// 64 bytes per OT), and it keeps every size computation free of overflow.
pub const MAX_COUNT: usize = 1 << 30;

/// Exact length of the extension message for `count` OTs: 4096 bytes of level sums,
/// then `128 / k` = 16 corrections of `ceil(count / 8)` bytes, i.e. 2 bytes per OT.
/// Saturates instead of overflowing for counts beyond [`MAX_COUNT`], which the extension
/// steps refuse anyway.
pub fn extension_message_len(count: usize) -> usize {
    message_len(count, SUBSPACE_BITS)
}

fn message_len(count: usize, k: usize) -> usize {
    LEVEL_SUMS_LEN.saturating_add((KAPPA / k).saturating_mul(column_len(count)))
}

/// Why an OT message was refused. Every received message is fully checked (length, then
/// every point) before it is used, and none can make these functions panic.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OtError {
    #[error("{what} is {got} bytes, expected {expected}")]
    WrongLength {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// Point `index` of a base-OT message (0 for `A`, `j` for `B_j`) is not the canonical
    /// encoding of a non-identity ristretto255 element.
    #[error(
        "point {index} of the base-OT message is not a canonical encoding of a \
         non-identity ristretto255 element"
    )]
    InvalidPoint { index: usize },
    #[error("{count} OTs requested, more than the supported {max}")]
    TooMany { count: usize, max: usize },
}

fn check_count(count: usize) -> Result<(), OtError> {
    if count > MAX_COUNT {
        return Err(OtError::TooMany {
            count,
            max: MAX_COUNT,
        });
    }
    Ok(())
}

/// Extension receiver, step 1 (plays base-OT sender).
pub struct OtReceiverSetup {
    ctx: [u8; 32],
    base: BaseSender,
    /// The secret the GGM roots are derived from ([`Self::root`]).
    tree_key: Zeroizing<[u8; 32]>,
}

impl OtReceiverSetup {
    /// Draws the base-OT secret and returns the first message `A` ([`BASE_FIRST_LEN`]
    /// bytes) for the sender's [`OtSenderSetup::respond`].
    pub fn new(rng: &mut SessionRng, ctx: &[u8]) -> (Self, [u8; BASE_FIRST_LEN]) {
        let (base, first) = BaseSender::new(rng);
        let mut tree_key = Zeroizing::new([0u8; 32]);
        rng.fill(&mut tree_key[..]);
        (
            Self {
                ctx: ctx_digest(ctx),
                base,
                tree_key,
            },
            first,
        )
    }

    /// The root of GGM tree `b`: `SHA-256(ROOT_TAG || tree key || b)`, truncated.
    fn root(&self, b: usize) -> Zeroizing<Seed> {
        let mut digest: [u8; 32] = Sha256::new()
            .chain_update(ROOT_TAG)
            .chain_update(&self.tree_key[..])
            .chain_update((b as u64).to_be_bytes())
            .finalize()
            .into();
        let mut root = Zeroizing::new([0u8; SEED_LEN]);
        root.copy_from_slice(&digest[..SEED_LEN]);
        digest.zeroize();
        root
    }

    /// Step 2, after the sender's base reply and once the choice bits are known.
    /// Returns the receiver's keys and the extension message (level sums and corrections) to send, of
    /// [`extension_message_len`]`(choices.len())` bytes. The sender must be told
    /// `choices.len()` (normally the protocol fixes it).
    pub fn extend(
        self,
        base_reply: &[u8],
        choices: &[bool],
    ) -> Result<(OtReceiverKeys, Vec<u8>), OtError> {
        self.extend_with(base_reply, choices, SUBSPACE_BITS)
    }

    /// [`Self::extend`] with `k` bits of the offset per GGM tree (`k` divides 128, at
    /// most 8; `k = 1` is IKNP).
    fn extend_with(
        self,
        base_reply: &[u8],
        choices: &[bool],
        k: usize,
    ) -> Result<(OtReceiverKeys, Vec<u8>), OtError> {
        let count = choices.len();
        let ctx = self.ctx;
        let (mut r, t, message) = self.extend_matrix(base_reply, choices, k)?;
        let row_hash = RowHash::new(&ctx);
        let mut keys = Zeroizing::new(vec![[0u8; KEY_LEN]; count]);
        for_each_row_block(&t, column_stride(count), &mut keys, |first, rows, out| {
            for (offset, (key, row)) in out.iter_mut().zip(rows).enumerate() {
                *key = row_hash.hash(first + offset, *row);
            }
        });
        r.truncate(column_len(count));
        Ok((OtReceiverKeys { choices: r, keys }, message))
    }

    /// Step 2 without the row hash: the receiver keeps IKNP's raw correlation
    /// `t_i` (the sender gets `q_i = t_i ⊕ c_i·s`), a correlated OT. Silent VOLE
    /// ([`crate::vole`]) reads the rows as GF(2^128) elements, so that the sender's offset
    /// `s` becomes its global key; [`CorrelatedReceiver::key`] still gives the random-OT
    /// key of any row. Same message as [`Self::extend`].
    pub fn extend_correlated(
        self,
        base_reply: &[u8],
        choices: &[bool],
    ) -> Result<(CorrelatedReceiver, Vec<u8>), OtError> {
        let count = choices.len();
        let ctx = self.ctx;
        let (mut r, t, message) = self.extend_matrix(base_reply, choices, SUBSPACE_BITS)?;
        let rows = matrix_rows(&t, count);
        r.truncate(column_len(count));
        Ok((
            CorrelatedReceiver {
                row_hash: RowHash::new(&ctx),
                choices: r,
                rows,
            },
            message,
        ))
    }

    /// The column matrix `t` (128 columns of [`column_stride`] bytes), the packed
    /// choices and the extension message.
    #[allow(clippy::type_complexity)]
    fn extend_matrix(
        self,
        base_reply: &[u8],
        choices: &[bool],
        k: usize,
    ) -> Result<(Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>, Vec<u8>), OtError> {
        debug_assert!(KAPPA.is_multiple_of(k) && k <= 8);
        let count = choices.len();
        check_count(count)?;
        let seeds = self.base.keys(&self.ctx, base_reply, KAPPA)?;

        let (len, stride) = (column_len(count), column_stride(count));
        // c packed like a column: OT i in byte i/8, bit i mod 8; padding bits zero.
        let mut r = Zeroizing::new(vec![0u8; stride]);
        for (i, &c) in choices.iter().enumerate() {
            r[i / 8] |= u8::from(c) << (i % 8);
        }
        let mut message = vec![0u8; message_len(count, k)];
        let (level_sums, corrections) = message.split_at_mut(LEVEL_SUMS_LEN);
        let trees: Vec<Zeroizing<Vec<Seed>>> = (0..KAPPA / k)
            .map(|b| {
                let (leaves, sums) = ggm::expand(&self.root(b), k);
                for (l, [even, odd]) in sums.iter().enumerate() {
                    // Level l decides leaf bit k - 1 - l, so it is served by base OT
                    // b·k + (k - 1 - l), whose choice is that bit of the sender's offset.
                    let j = b * k + (k - 1 - l);
                    let [k0, k1] = &seeds[j];
                    let out = &mut level_sums[j * 2 * SEED_LEN..(j + 1) * 2 * SEED_LEN];
                    // Opened with seed d, a half gives the children with bit 1 - d: the
                    // ones off the path that choice d follows.
                    xor_pair(&mut out[..SEED_LEN], odd, k0);
                    xor_pair(&mut out[SEED_LEN..], even, k1);
                }
                leaves
            })
            .collect();
        drop(seeds);

        let mut t = Zeroizing::new(vec![0u8; KAPPA * stride]);
        if count > 0 {
            use rayon::prelude::*;
            t.par_chunks_mut(k * stride)
                .zip(corrections.par_chunks_mut(len))
                .zip(trees.par_iter())
                .for_each(|((t_b, d_b), leaves)| {
                    let mut u = Zeroizing::new(vec![0u8; stride]);
                    let mut v: Vec<&mut [u8]> = t_b.chunks_mut(stride).collect();
                    subspace::column_sums(leaves, &mut u, &mut v);
                    for ((d, u), r) in d_b.iter_mut().zip(u.iter()).zip(r.iter()) {
                        *d = u ^ r;
                    }
                });
        }
        Ok((r, t, message))
    }
}

impl std::fmt::Debug for OtReceiverSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OtReceiverSetup { .. }")
    }
}

/// The extension receiver's output: its choice bit and the matching key for every OT.
pub struct OtReceiverKeys {
    /// Packed choice bits (OT `i` in byte `i/8`, bit `i mod 8`).
    choices: Zeroizing<Vec<u8>>,
    keys: Zeroizing<Vec<[u8; KEY_LEN]>>,
}

impl OtReceiverKeys {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The choice bit of OT `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn choice(&self, i: usize) -> bool {
        assert!(i < self.len(), "OT index {i} out of range {}", self.len());
        (self.choices[i / 8] >> (i % 8)) & 1 == 1
    }

    /// The key of OT `i`: the sender's key for bit `self.choice(i)`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn key(&self, i: usize) -> &[u8; KEY_LEN] {
        &self.keys[i]
    }
}

impl std::fmt::Debug for OtReceiverKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OtReceiverKeys {{ len: {}, .. }}", self.len())
    }
}

/// Extension sender, step 1 (plays base-OT receiver with random s).
pub struct OtSenderSetup {
    ctx: [u8; 32],
    /// The secret offset `s`: bit `j` is the choice in base OT `j`.
    s: Zeroizing<u128>,
    /// `k_j^{s_j}` for every base OT `j`.
    seeds: Zeroizing<Vec<Seed>>,
}

impl OtSenderSetup {
    /// Answers the receiver's first message `A` with the base-OT reply `B_1..B_128`
    /// ([`BASE_REPLY_LEN`] bytes), drawing `s` and the `b_j` from `rng`.
    pub fn respond(
        rng: &mut SessionRng,
        ctx: &[u8],
        base_first: &[u8],
    ) -> Result<(Self, Vec<u8>), OtError> {
        // Validate before drawing anything, so a refused message leaves `rng` untouched.
        let a_point = base::decode_first(base_first)?;
        let ctx = ctx_digest(ctx);
        let mut s = [0u8; 16];
        rng.fill(&mut s);
        let s_bits = Zeroizing::new(u128::from_le_bytes(s));
        let (seeds, reply) = base::receive(rng, &ctx, base_first, &a_point, &s);
        s.zeroize();
        Ok((
            Self {
                ctx,
                s: s_bits,
                seeds,
            },
            reply,
        ))
    }

    /// Finishes `count` OTs from the receiver's extension message, whose length must be
    /// exactly [`extension_message_len`]`(count)`. `count` must be the receiver's
    /// `choices.len()`, agreed through the protocol: the length only pins it down to a
    /// multiple of 8, and keys past the receiver's count would match nothing.
    pub fn extend(self, extension_message: &[u8], count: usize) -> Result<OtSenderKeys, OtError> {
        self.extend_with(extension_message, count, SUBSPACE_BITS)
    }

    /// [`Self::extend`] with `k` bits of the offset per GGM tree, as the receiver used.
    fn extend_with(
        self,
        extension_message: &[u8],
        count: usize,
        k: usize,
    ) -> Result<OtSenderKeys, OtError> {
        let ctx = self.ctx;
        let s = *self.s;
        let q = self.extend_matrix(extension_message, count, k)?;
        let row_hash = RowHash::new(&ctx);
        let mut keys = Zeroizing::new(vec![[[0u8; KEY_LEN]; 2]; count]);
        for_each_row_block(&q, column_stride(count), &mut keys, |first, rows, out| {
            for (offset, (pair, row)) in out.iter_mut().zip(rows).enumerate() {
                *pair = [
                    row_hash.hash(first + offset, *row),
                    row_hash.hash(first + offset, *row ^ s),
                ];
            }
        });
        Ok(OtSenderKeys { keys })
    }

    /// Finishes without the row hash: the rows `q_i = t_i ⊕ c_i·s` and the offset `s`, a
    /// correlated OT (see [`OtReceiverSetup::extend_correlated`]).
    pub fn extend_correlated(
        self,
        extension_message: &[u8],
        count: usize,
    ) -> Result<CorrelatedSender, OtError> {
        let ctx = self.ctx;
        let offset = Zeroizing::new(*self.s);
        let q = self.extend_matrix(extension_message, count, SUBSPACE_BITS)?;
        Ok(CorrelatedSender {
            row_hash: RowHash::new(&ctx),
            offset,
            rows: matrix_rows(&q, count),
        })
    }

    /// The column matrix `q` (128 columns of [`column_stride`] bytes).
    fn extend_matrix(
        self,
        extension_message: &[u8],
        count: usize,
        k: usize,
    ) -> Result<Zeroizing<Vec<u8>>, OtError> {
        debug_assert!(KAPPA.is_multiple_of(k) && k <= 8);
        check_count(count)?;
        let expected = message_len(count, k);
        if extension_message.len() != expected {
            return Err(OtError::WrongLength {
                what: "extension message",
                expected,
                got: extension_message.len(),
            });
        }
        let s: &u128 = &self.s;
        let (len, stride) = (column_len(count), column_stride(count));
        let (level_sums, corrections) = extension_message.split_at(LEVEL_SUMS_LEN);
        let mut q = Zeroizing::new(vec![0u8; KAPPA * stride]);
        if count > 0 {
            use rayon::prelude::*;
            q.par_chunks_mut(k * stride)
                .zip(corrections.par_chunks(len))
                .enumerate()
                .for_each(|(b, (q_b, d_b))| {
                    // Δ_b, the leaf this party cannot rebuild: its base-OT choices.
                    let point = ((*s >> (b * k)) & ((1 << k) - 1)) as usize;
                    let off_path: Zeroizing<Vec<Seed>> = Zeroizing::new(
                        (0..k)
                            .map(|l| {
                                let j = b * k + (k - 1 - l);
                                let pair = &level_sums[j * 2 * SEED_LEN..(j + 1) * 2 * SEED_LEN];
                                let (half0, half1) = pair.split_at(SEED_LEN);
                                // The half its seed opens, chosen without a branch on s_j.
                                let take1 = 0u8.wrapping_sub(((*s >> j) & 1) as u8);
                                let mut sum = [0u8; SEED_LEN];
                                for (p, out) in sum.iter_mut().enumerate() {
                                    *out = ((half0[p] & !take1) | (half1[p] & take1))
                                        ^ self.seeds[j][p];
                                }
                                sum
                            })
                            .collect(),
                    );
                    let leaves = ggm::expand_punctured(&off_path, point);
                    let mut u = Zeroizing::new(vec![0u8; stride]);
                    let mut v: Vec<&mut [u8]> = q_b.chunks_mut(stride).collect();
                    // Leaf Δ_b is the zero seed here; its stream cancels (see `subspace`).
                    subspace::column_sums(&leaves, &mut u, &mut v);
                    // q_{b,i} = v'_i xor Δ_i·(u' xor d_b) = t_{b,i} xor Δ_i·c.
                    for (u, d) in u.iter_mut().zip(d_b) {
                        *u ^= d;
                    }
                    for (i, column) in v.iter_mut().enumerate() {
                        let mask = 0u8.wrapping_sub(((point >> i) & 1) as u8);
                        for (q, u) in column.iter_mut().zip(u.iter()) {
                            *q ^= u & mask;
                        }
                    }
                });
        }
        Ok(q)
    }
}

impl std::fmt::Debug for OtSenderSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OtSenderSetup { .. }")
    }
}

/// The extension sender's output: both keys of every OT.
pub struct OtSenderKeys {
    keys: Zeroizing<Vec<[[u8; KEY_LEN]; 2]>>,
}

impl OtSenderKeys {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key of OT `i` for choice bit `bit`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn key(&self, i: usize, bit: bool) -> &[u8; KEY_LEN] {
        &self.keys[i][usize::from(bit)]
    }
}

impl std::fmt::Debug for OtSenderKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OtSenderKeys {{ len: {}, .. }}", self.len())
    }
}

/// The rows of a column matrix, row `i` as a 128-bit word (bit `j` = column `j`).
fn matrix_rows(matrix: &[u8], count: usize) -> Zeroizing<Vec<u128>> {
    let mut rows = Zeroizing::new(vec![0u128; count]);
    for_each_row_block(matrix, column_stride(count), &mut rows, |_, block, out| {
        out.copy_from_slice(&block[..out.len()]);
    });
    rows
}

/// The correlated-OT receiver's output: choice bits `c_i` and rows `t_i`, where the
/// sender holds `q_i = t_i ⊕ c_i·s`.
pub struct CorrelatedReceiver {
    row_hash: RowHash,
    choices: Zeroizing<Vec<u8>>,
    rows: Zeroizing<Vec<u128>>,
}

impl CorrelatedReceiver {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The choice bit of OT `i`. Panics if `i >= self.len()`.
    pub fn choice(&self, i: usize) -> bool {
        assert!(i < self.len(), "OT index {i} out of range {}", self.len());
        (self.choices[i / 8] >> (i % 8)) & 1 == 1
    }

    /// Row `t_i`. Panics if `i >= self.len()`.
    pub fn row(&self, i: usize) -> u128 {
        self.rows[i]
    }

    /// The random-OT key of OT `i`, as [`OtReceiverKeys::key`] gives it. Each row may
    /// serve either as a correlation or as a key, never both: a key of row `i` and the
    /// row itself together would let the hash's input be guessed.
    pub fn key(&self, i: usize) -> [u8; KEY_LEN] {
        self.row_hash.hash(i, self.rows[i])
    }
}

impl std::fmt::Debug for CorrelatedReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CorrelatedReceiver {{ len: {}, .. }}", self.len())
    }
}

/// The correlated-OT sender's output: the offset `s` and rows `q_i = t_i ⊕ c_i·s`.
pub struct CorrelatedSender {
    row_hash: RowHash,
    offset: Zeroizing<u128>,
    rows: Zeroizing<Vec<u128>>,
}

impl CorrelatedSender {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The offset `s`, the xor of the two rows of every OT.
    pub fn offset(&self) -> u128 {
        *self.offset
    }

    /// Row `q_i`, the key row of choice 0. Panics if `i >= self.len()`.
    pub fn row(&self, i: usize) -> u128 {
        self.rows[i]
    }

    /// The random-OT key of OT `i` for choice `bit`, as [`OtSenderKeys::key`] gives it.
    pub fn key(&self, i: usize, bit: bool) -> [u8; KEY_LEN] {
        let row = self.rows[i] ^ if bit { *self.offset } else { 0 };
        self.row_hash.hash(i, row)
    }
}

impl std::fmt::Debug for CorrelatedSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CorrelatedSender {{ len: {}, .. }}", self.len())
    }
}

const PAD_TAG: &[u8] = b"privset/ot/pad/v1";
const ROOT_TAG: &[u8] = b"privset/ot/ggm/root/v1";

/// `out = a ⊕ b`, seed-sized.
fn xor_pair(out: &mut [u8], a: &Seed, b: &Seed) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x ^ y;
    }
}

/// Fills `out` with pseudorandom bytes derived from an OT key, to be xored onto a
/// message of `out.len()` bytes (any length, e.g. an 8-byte integer or a 40-byte
/// string). SHA-256 in counter mode: 32-byte block `c` is
/// `SHA-256(PAD_TAG || key || c)` (`c` 4 bytes big-endian), one compression per block,
/// so short messages cost one hash. The same key always gives the same pad: mask one
/// message per key.
///
/// # Panics
/// If `out` is longer than 2³² blocks (128 GiB).
pub fn pad(key: &[u8; 32], out: &mut [u8]) {
    let prefix = Sha256::new().chain_update(PAD_TAG).chain_update(key);
    for (c, chunk) in out.chunks_mut(32).enumerate() {
        let c = u32::try_from(c).expect("pad longer than 2^32 blocks");
        let mut block: [u8; 32] = prefix
            .clone()
            .chain_update(c.to_be_bytes())
            .finalize()
            .into();
        chunk.copy_from_slice(&block[..chunk.len()]);
        block.zeroize();
    }
}
