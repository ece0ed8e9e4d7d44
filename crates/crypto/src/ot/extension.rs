//! Matrix work shared by both extension parties: the blockwise column-to-row switch and
//! the correlation-robust row hash.
//!
//! Columns are kept internally with a stride padded to a whole number of 128-row blocks
//! (16 bytes), so every block transposes as a full 128 x 128 matrix; only the first
//! `ceil(count / 8)` bytes of a column ever cross the wire, and rows at or beyond
//! `count` (padding) are never hashed.

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::prefixed_sha256::PrefixedSha256;

use super::KAPPA;
use super::transpose::transpose128;

const ROW_TAG: &[u8] = b"privset/ot/row/v2";
const CTX_TAG: &[u8] = b"privset/ot/ctx/v1";

/// Rows per transposition block (= bits per column word).
pub(super) const BLOCK: usize = 128;

/// The caller's context, hashed once: every base-OT key and row key binds to it.
pub(super) fn ctx_digest(ctx: &[u8]) -> [u8; 32] {
    tagged_digest(CTX_TAG, ctx)
}

/// `SHA-256(tag || ctx)`: a context digest under a primitive's own tag, so that base OTs
/// run for different primitives under one caller context give unrelated keys.
pub(crate) fn tagged_digest(tag: &[u8], ctx: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update(tag)
        .chain_update(ctx)
        .finalize()
        .into()
}

/// Bytes of one column as sent: `ceil(count / 8)`.
pub(super) fn column_len(count: usize) -> usize {
    count.div_ceil(8)
}

/// Bytes of one column as stored: `ceil(count / 128) * 16`.
pub(super) fn column_stride(count: usize) -> usize {
    count.div_ceil(BLOCK) * (BLOCK / 8)
}

/// The row hash `H'(i, x) = SHA-256(ROW_TAG padded to 32 bytes || ctx digest || i || x)`
/// (`i` as 8 bytes big-endian, `x` the 16-byte row). Its 64-byte prefix is exactly one
/// SHA-256 block, compressed once per session; each row then costs one compression.
/// The index makes it a tweakable correlation-robust hash, as IKNP needs: the sender's
/// two keys are `H'(i, q_i)` and `H'(i, q_i ⊕ s)` for one secret `s` shared by all
/// rows, and the index keeps the values for different rows independent.
///
/// The KKRT OPRF uses the same hash under its own tag on its wider rows
/// ([`Self::with_tag`], [`Self::hash_bytes`]).
pub(crate) struct RowHash(PrefixedSha256);

impl RowHash {
    pub(super) fn new(ctx: &[u8; 32]) -> Self {
        Self::with_tag(ROW_TAG, ctx)
    }

    /// The hash under `tag` (at most 32 bytes, zero-padded to 32).
    pub(crate) fn with_tag(tag: &[u8], ctx: &[u8; 32]) -> Self {
        Self(PrefixedSha256::with_tag_and_key(tag, ctx))
    }

    pub(super) fn hash(&self, i: usize, row: u128) -> [u8; 32] {
        self.hash_bytes(i, &row.to_le_bytes())
    }

    /// `H'(i, row)` for a row of any width (its bytes as they are).
    pub(crate) fn hash_bytes(&self, i: usize, row: &[u8]) -> [u8; 32] {
        self.0.hash2(&(i as u64).to_be_bytes(), row)
    }
}

/// Calls `f(first_row, rows)` for each 128-row block of a `KAPPA`-column matrix stored
/// with `stride` bytes per column, in parallel, with `rows[k]` holding row
/// `first_row + k` (bit `j` = column `j`). `out` is split into matching 128-item chunks;
/// the last may be shorter, and rows beyond it are padding.
pub(super) fn for_each_row_block<T: Send>(
    matrix: &[u8],
    stride: usize,
    out: &mut [T],
    f: impl Fn(usize, &[u128; BLOCK], &mut [T]) + Sync,
) {
    debug_assert_eq!(matrix.len(), KAPPA * stride);
    out.par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(block, out)| {
            let mut rows = [0u128; BLOCK];
            let offset = block * (BLOCK / 8);
            for (j, word) in rows.iter_mut().enumerate() {
                let at = j * stride + offset;
                let bytes: [u8; 16] = matrix[at..at + 16].try_into().expect("16 bytes");
                *word = u128::from_le_bytes(bytes);
            }
            transpose128(&mut rows);
            f(block * BLOCK, &rows, out);
            rows.zeroize();
        });
}
