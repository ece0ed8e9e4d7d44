//! Silent random VOLE over GF(2^128) from dual LPN (Boyle, Couteau, Gilboa, Ishai, Kohl,
//! Scholl, "Efficient Pseudorandom Correlation Generators: Silent OT Extension and More",
//! CRYPTO 2019), the correlation under the PSI of Raghuraman and Rindal ("Blazing Fast
//! PSI from Improved OKVS and Subfield VOLE", CCS 2022, Fig. 3's `F_vole`).
//!
//! Output: the **sender** holds a global key `Δ` and a vector `b`; the **receiver**
//! holds vectors `a` and `c`, with `c[i] = b[i] + a[i]·Δ` for every `i < k`, `a` and `b`
//! pseudorandom. Semi-honest security, like the rest of privset.
//!
//! # Construction
//!
//! 1. **Correlated OTs.** One SoftSpokenOT extension ([`crate::ot`]) with the receiver
//!    as OT receiver gives, per OT `i`, the receiver `(c_i, t_i)` and the sender
//!    `q_i = t_i ⊕ c_i·s`, where `s` is the sender's secret offset: `Δ = s`.
//! 2. **Base VOLE.** For each of the `t` trees, 128 of those OTs carry the bits of a
//!    random nonzero `y_j` chosen by the receiver: with `C_j = Σ_k x^k·t_{jk}` and
//!    `B_j = Σ_k x^k·q_{jk}`, `B_j = C_j + y_j·Δ`.
//! 3. **Punctured PRF** ([`ggm`]). The sender grows `t` GGM trees of depth `d` from random
//!    roots, leaves `v`; for each level it sends the xor of the even and of the odd
//!    children, masked by the keys of one OT whose receiver choice is the bit *off* the
//!    path to the receiver's secret leaf `α_j` (`d` OTs per tree), and per tree
//!    `Σ_i v_{j,i} + B_j`. The receiver rebuilds every leaf but `α_j`, and there obtains
//!    `v_{j,α_j} + y_j·Δ` from the sum and `C_j`. So, with `e` the regular noise vector
//!    (`y_j` at position `α_j` of block `j`, zero elsewhere), the receiver holds
//!    `w = v + e·Δ`.
//! 4. **Compression** ([`code`]): both apply the Expand-Convolute code `H` (code size
//!    `N = t·2^d`, message size `k`): `b = H(v)`, `a = H(e)`, `c = H(w) = b + a·Δ`.
//!
//! # Parameters and security
//!
//! Dual LPN with regular noise: `a = H(e)` is pseudorandom when `e` has `t` random
//! nonzero entries, one per block of `2^d`, and the code has large minimum distance.
//! [`VoleParams::for_outputs`] takes the code size `N >= 2k` (rate at most 1/2) and
//! `t >= 256` noise positions. Against linear tests, the bias of regular noise of weight
//! `t` through a code of relative distance `δ` is at most `(1 − 2δ)^t`; with the
//! relative distance 0.15 estimated for ExConv7x24 (Raghuraman, Rindal, Tanguy, CRYPTO
//! 2023; libOTe configures the same figure) that is `2^-0.515·t`, below `2^-128` from
//! `t = 249`, and 256 also clears the `t >= 128` floor that current estimates of
//! algebraic and ISD attacks on regular LPN ask for at these sizes. The Silver codes
//! RR22's published timings used are broken and not used here.
//!
//! # Messages
//!
//! | step | direction | bytes |
//! |------|-----------|-------|
//! | 1 | receiver → sender | [`crate::ot::BASE_FIRST_LEN`] = 32 |
//! | 2 | sender → receiver | [`crate::ot::BASE_REPLY_LEN`] = 4096 |
//! | 3 | receiver → sender | [`VoleParams::extension_len`]: the OT extension for `t·(d + 128)` OTs |
//! | 4 | sender → receiver | [`VoleParams::tree_message_len`] = `t·(32·d + 16)`: the masked level sums, tree by tree and level by level (even side then odd side, 16 bytes each), then each tree's leaf sum `Σ v + B_j` |
//!
//! At `k = 2^20` (`t = 256`, `d = 13`) that is 0.2 MB in all, against 16 MB for the
//! outputs' own size: the "silent" in silent VOLE.

mod code;
mod ggm;
#[cfg(test)]
mod tests;

use rayon::prelude::*;
use zeroize::Zeroizing;

use crate::gf128;
use crate::ot::{
    BASE_FIRST_LEN, CorrelatedReceiver, CorrelatedSender, OtError, OtReceiverSetup, OtSenderSetup,
    extension_message_len,
};
use crate::rng::SessionRng;

use self::code::ExConv;
use self::ggm::TreeHash;

/// Least number of noise positions (trees): see the module doc.
pub const MIN_TREES: usize = 256;
/// Most outputs one VOLE produces (bounds memory: the receiver holds `2·N` values of 16
/// bytes while it encodes, `N <= 4k + 2^d`).
pub const MAX_OUTPUTS: usize = 1 << 26;
/// OTs per tree for the base VOLE: one per bit of `y_j`.
const BASE_VOLE_OTS: usize = 128;

/// Why a VOLE message was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum VoleError {
    #[error("{what} is {got} bytes, expected {expected}")]
    WrongLength {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("{requested} VOLE outputs requested, more than the supported {max}")]
    TooMany { requested: usize, max: usize },
    #[error(transparent)]
    Ot(#[from] OtError),
}

/// The shape of one silent VOLE: `k` outputs from `t` trees of depth `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VoleParams {
    outputs: usize,
    trees: usize,
    depth: usize,
}

impl VoleParams {
    /// The parameters for `outputs` correlations: code size at least `2·outputs`, split
    /// into at least [`MIN_TREES`] trees of one power-of-two size.
    pub fn for_outputs(outputs: usize) -> Result<Self, VoleError> {
        if outputs > MAX_OUTPUTS {
            return Err(VoleError::TooMany {
                requested: outputs,
                max: MAX_OUTPUTS,
            });
        }
        let least = (2 * outputs).max(2 * MIN_TREES);
        // The deepest trees that still leave MIN_TREES of them.
        let depth = (least / MIN_TREES).ilog2() as usize;
        let trees = least.div_ceil(1 << depth);
        Ok(Self {
            outputs,
            trees,
            depth,
        })
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `N = t·2^d`, the length of the noise vector.
    pub fn code_size(&self) -> usize {
        self.trees << self.depth
    }

    fn leaves_per_tree(&self) -> usize {
        1 << self.depth
    }

    /// OTs the extension runs: `d` per tree for the punctured PRF, 128 for the base VOLE.
    fn ot_count(&self) -> usize {
        self.trees * (self.depth + BASE_VOLE_OTS)
    }

    /// Index of the OT that masks level `l` of tree `j`.
    fn tree_ot(&self, j: usize, l: usize) -> usize {
        j * self.depth + l
    }

    /// Index of the OT that carries bit `bit` of `y_j`.
    fn base_ot(&self, j: usize, bit: usize) -> usize {
        self.trees * self.depth + j * BASE_VOLE_OTS + bit
    }

    /// Bytes of message 3 (receiver → sender).
    pub fn extension_len(&self) -> usize {
        extension_message_len(self.ot_count())
    }

    /// Bytes of message 4 (sender → receiver).
    pub fn tree_message_len(&self) -> usize {
        self.trees * (32 * self.depth + 16)
    }

    /// The code that compresses the noise into the outputs.
    fn code(&self) -> ExConv {
        ExConv::new(self.outputs, self.code_size())
    }
}

/// `Σ_k x^k·rows[first + k]` over the 128 rows of one base VOLE.
fn base_vole_share(rows: impl Fn(usize) -> u128, params: &VoleParams, j: usize) -> u128 {
    (0..BASE_VOLE_OTS).fold(0, |acc, bit| {
        acc ^ gf128::mul(gf128::x_pow(bit), rows(params.base_ot(j, bit)))
    })
}

/// The 16-byte mask an OT key puts on one level sum.
fn mask(key: &[u8; 32]) -> u128 {
    u128::from_le_bytes(key[..16].try_into().expect("16 bytes"))
}

fn read_u128(bytes: &[u8]) -> u128 {
    u128::from_le_bytes(bytes.try_into().expect("16 bytes"))
}

fn expect_len(what: &'static str, got: usize, expected: usize) -> Result<(), VoleError> {
    if got != expected {
        return Err(VoleError::WrongLength {
            what,
            expected,
            got,
        });
    }
    Ok(())
}

/// The receiver before the sender's base-OT reply.
pub struct VoleReceiver {
    params: VoleParams,
    ot: OtReceiverSetup,
}

impl VoleReceiver {
    /// Step 1: returns the first message ([`BASE_FIRST_LEN`] bytes).
    pub fn new(
        rng: &mut SessionRng,
        ctx: &[u8],
        params: VoleParams,
    ) -> (Self, [u8; BASE_FIRST_LEN]) {
        let (ot, first) = OtReceiverSetup::new(rng, ctx);
        (Self { params, ot }, first)
    }

    /// Step 3, on the sender's base-OT reply: draws the noise (a leaf `α_j` and a nonzero
    /// value `y_j` per tree) and returns the OT extension message.
    pub fn extend(
        self,
        rng: &mut SessionRng,
        base_reply: &[u8],
    ) -> Result<(VoleReceiverPending, Vec<u8>), VoleError> {
        let p = self.params;
        let points: Vec<usize> = (0..p.trees)
            .map(|_| rng.below(p.leaves_per_tree() as u64) as usize)
            .collect();
        let values: Zeroizing<Vec<u128>> = Zeroizing::new(
            (0..p.trees)
                .map(|_| {
                    loop {
                        let mut b = [0u8; 16];
                        rng.fill(&mut b);
                        let y = u128::from_le_bytes(b);
                        if y != 0 {
                            break y;
                        }
                    }
                })
                .collect(),
        );
        let mut choices = vec![false; p.ot_count()];
        for (j, &point) in points.iter().enumerate() {
            for l in 0..p.depth {
                // Level l + 1 is decided by bit d - 1 - l of the leaf index; choose the
                // other side, whose sum the receiver needs.
                choices[p.tree_ot(j, l)] = (point >> (p.depth - 1 - l)) & 1 == 0;
            }
            for bit in 0..BASE_VOLE_OTS {
                choices[p.base_ot(j, bit)] = (values[j] >> bit) & 1 == 1;
            }
        }
        let (ots, message) = self.ot.extend_correlated(base_reply, &choices)?;
        Ok((
            VoleReceiverPending {
                params: p,
                points,
                values,
                ots,
            },
            message,
        ))
    }
}

/// The receiver waiting for the sender's tree message.
pub struct VoleReceiverPending {
    params: VoleParams,
    points: Vec<usize>,
    values: Zeroizing<Vec<u128>>,
    ots: CorrelatedReceiver,
}

/// The receiver's correlations: `c[i] = b[i] + a[i]·Δ`.
pub struct VoleReceiverOutput {
    pub a: Vec<u128>,
    pub c: Vec<u128>,
}

impl VoleReceiverPending {
    /// Step 4's receiving end: rebuilds the punctured trees and encodes.
    pub fn finish(self, tree_message: &[u8]) -> Result<VoleReceiverOutput, VoleError> {
        let p = self.params;
        expect_len(
            "VOLE tree message",
            tree_message.len(),
            p.tree_message_len(),
        )?;
        let (level_sums, leaf_sums) = tree_message.split_at(p.trees * 32 * p.depth);
        let hash = TreeHash::new();
        let leaves = p.leaves_per_tree();
        let mut w = vec![0u128; p.code_size()];
        w.par_chunks_mut(leaves).enumerate().for_each_init(
            || vec![0u128; leaves],
            |scratch, (j, tree)| {
                let point = self.points[j];
                let off: Vec<u128> = (0..p.depth)
                    .map(|l| {
                        let side = 1 - ((point >> (p.depth - 1 - l)) & 1);
                        let at = (j * p.depth + l) * 32 + side * 16;
                        read_u128(&level_sums[at..at + 16]) ^ mask(&self.ots.key(p.tree_ot(j, l)))
                    })
                    .collect();
                ggm::expand_punctured(&hash, &off, point, tree, scratch);
                let c_j = base_vole_share(|i| self.ots.row(i), &p, j);
                let sum = read_u128(&leaf_sums[j * 16..j * 16 + 16]);
                // Σ v + B_j + Σ_{i≠α} v + C_j = v_α + y_j·Δ.
                tree[point] = tree.iter().fold(sum ^ c_j, |acc, v| acc ^ v);
            },
        );
        let mut e = vec![0u128; p.code_size()];
        for (j, &point) in self.points.iter().enumerate() {
            e[j * leaves + point] = self.values[j];
        }
        // The two encodings are independent: one per core.
        let code = p.code();
        let encode = |v: &mut Vec<u128>| {
            code.dual_encode(v);
            v.truncate(p.outputs);
            v.shrink_to_fit();
        };
        rayon::join(|| encode(&mut w), || encode(&mut e));
        Ok(VoleReceiverOutput { a: e, c: w })
    }
}

/// The sender after answering the base OTs.
pub struct VoleSender {
    params: VoleParams,
    ot: OtSenderSetup,
}

/// The sender's correlations: `Δ` and `b`, with `c[i] = b[i] + a[i]·Δ` at the receiver.
pub struct VoleSenderOutput {
    pub delta: u128,
    pub b: Vec<u128>,
}

impl VoleSender {
    /// Step 2: answers the receiver's first message with the base-OT reply.
    pub fn respond(
        rng: &mut SessionRng,
        ctx: &[u8],
        params: VoleParams,
        base_first: &[u8],
    ) -> Result<(Self, Vec<u8>), VoleError> {
        let (ot, reply) = OtSenderSetup::respond(rng, ctx, base_first)?;
        Ok((Self { params, ot }, reply))
    }

    /// Step 4: from the receiver's extension message, grows the trees and returns the
    /// sender's output and the tree message.
    pub fn finish(
        self,
        rng: &mut SessionRng,
        extension: &[u8],
    ) -> Result<(VoleSenderOutput, Vec<u8>), VoleError> {
        let p = self.params;
        expect_len("VOLE extension message", extension.len(), p.extension_len())?;
        let ots: CorrelatedSender = self.ot.extend_correlated(extension, p.ot_count())?;
        let roots: Zeroizing<Vec<u128>> = Zeroizing::new(
            (0..p.trees)
                .map(|_| {
                    let mut b = [0u8; 16];
                    rng.fill(&mut b);
                    u128::from_le_bytes(b)
                })
                .collect(),
        );
        let hash = TreeHash::new();
        let leaves = p.leaves_per_tree();
        let mut v = vec![0u128; p.code_size()];
        let mut message = vec![0u8; p.tree_message_len()];
        let (level_part, leaf_part) = message.split_at_mut(p.trees * 32 * p.depth);
        v.par_chunks_mut(leaves)
            .zip(level_part.par_chunks_mut(32 * p.depth.max(1)))
            .zip(leaf_part.par_chunks_mut(16))
            .enumerate()
            .for_each_init(
                || vec![0u128; leaves],
                |scratch, (j, ((tree, levels), leaf_sum))| {
                    let sums = ggm::expand(&hash, roots[j], tree, scratch);
                    for (l, [even, odd]) in sums.iter().enumerate() {
                        let i = p.tree_ot(j, l);
                        let at = l * 32;
                        levels[at..at + 16]
                            .copy_from_slice(&(even ^ mask(&ots.key(i, false))).to_le_bytes());
                        levels[at + 16..at + 32]
                            .copy_from_slice(&(odd ^ mask(&ots.key(i, true))).to_le_bytes());
                    }
                    let b_j = base_vole_share(|i| ots.row(i), &p, j);
                    let total = tree.iter().fold(b_j, |acc, x| acc ^ x);
                    leaf_sum.copy_from_slice(&total.to_le_bytes());
                },
            );
        p.code().dual_encode(&mut v);
        v.truncate(p.outputs);
        v.shrink_to_fit();
        Ok((
            VoleSenderOutput {
                delta: ots.offset(),
                b: v,
            },
            message,
        ))
    }
}
