//! The KKRT batched OPRF (Kolesnikov et al. 2016): the parties, the code, the width.
//! The construction, the messages and the security argument are in the [module
//! docs](super).

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

use super::OprfError;
use crate::ot::BASE_FIRST_LEN;
use crate::ot::base::{self, BaseSender, Seed};
use crate::ot::extension::{RowHash, tagged_digest};
use crate::ot::prg::CtrStream;
use crate::ot::transpose::transpose128;
use crate::rng::SessionRng;

const CTX_TAG: &[u8] = b"privset/oprf/kkrt/ctx/v1";
const CODE_KEY_TAG: &[u8] = b"privset/oprf/kkrt/code-key/v1";
/// At most 24 bytes: the code's prefix block is this tag, an 8-byte half index and the
/// 32-byte code key.
const CODE_TAG: &[u8] = b"privset/oprf/kkrt/code1";
const ROW_TAG: &[u8] = b"privset/oprf/kkrt/row/v1";

/// The widest code: rows are held as this many bits whatever the width, the bits past
/// the width being zero.
pub const MAX_CODE_BITS: usize = 512;
const WORDS: usize = MAX_CODE_BITS / 128;
/// One row of the OPRF matrix (or a codeword, or the offset `s`): bit `j` is bit
/// `j mod 128` of word `j / 128`.
type Row = [u128; WORDS];

/// Most OPRF instances (bins) one run supports: 2^28 rows of at most 64 bytes keep every
/// size computation free of overflow and cap the message at 16 GiB.
pub const MAX_COUNT: usize = 1 << 28;
/// The output length the module docs' bound is worked out for: 16 bytes.
pub const DEFAULT_OUTPUT_LEN: usize = 16;
/// The longest output: one SHA-256 digest.
pub const MAX_OUTPUT_LEN: usize = 32;

/// Rows handled by one task: every stream then makes `CHUNK_ROWS / 8` = 512 bytes per
/// call, which pays for the call, and a task's buffers (the chunk of every column, as
/// bytes and as rows) stay within a few hundred KiB.
const CHUNK_ROWS: usize = 4096;

/// The width `w` of the pseudorandom code: the number of base OTs, and of bits the
/// receiver sends per OPRF instance. Both parties must use the same width (a mismatch
/// is caught as a wrong base-reply length). The module docs work out how many
/// evaluations each width covers; [`Self::for_evaluations`] picks the narrower one
/// when it suffices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CodeWidth {
    /// 448 bits (the width Ion et al. 2020 ran with): 56 bytes per instance, for at
    /// most [`CodeWidth::max_evaluations`] = 2^26 sender evaluations per run.
    Bits448,
    /// 512 bits: 64 bytes per instance, for up to 2^62 sender evaluations per run.
    #[default]
    Bits512,
}

impl CodeWidth {
    /// `w` in bits.
    pub const fn bits(self) -> usize {
        match self {
            Self::Bits448 => 448,
            Self::Bits512 => 512,
        }
    }

    /// Bytes of one row of the receiver's message: `w / 8`.
    pub const fn row_len(self) -> usize {
        self.bits() / 8
    }

    /// Bytes of the sender's base-OT reply: one point per base OT, `32 · w`.
    pub const fn base_reply_len(self) -> usize {
        base::reply_len(self.bits())
    }

    /// Exact length of the receiver's message for `count` instances: `count · w / 8`.
    /// Saturates instead of overflowing for counts beyond [`MAX_COUNT`], which both
    /// parties refuse anyway.
    pub const fn message_len(self, count: usize) -> usize {
        count.saturating_mul(self.row_len())
    }

    /// Most sender evaluations (points `(bin, x)` with `x` not the bin's input) one run
    /// may make for the chance that any of them lands within Hamming distance 128 of
    /// its bin's codeword to stay below 2^-40 (module docs, "Code width").
    pub const fn max_evaluations(self) -> u64 {
        match self {
            Self::Bits448 => 1 << 26,
            Self::Bits512 => 1 << 62,
        }
    }

    /// The narrowest width that covers `evaluations` sender evaluations.
    pub const fn for_evaluations(evaluations: u64) -> Self {
        if evaluations <= Self::Bits448.max_evaluations() {
            Self::Bits448
        } else {
            Self::Bits512
        }
    }
}

/// The smallest output length (bytes) that keeps the chance of any false match among
/// `comparisons` comparisons of outputs of different points below 2^-40: each
/// comparison of `8·L`-bit pseudorandom values is a false match with probability
/// `2^-8L`, so `8·L ≥ 40 + log2(comparisons)`. The Random-OT intersection of Ion et al.
/// 2020 compares each of P2's `3·n2` values with P1's `n1`: `comparisons = 3·n1·n2`.
pub const fn min_output_len(comparisons: u64) -> usize {
    let log2 = if comparisons <= 1 {
        0
    } else {
        64 - (comparisons - 1).leading_zeros() as usize
    };
    (40 + log2).div_ceil(8)
}

/// Checks `count` against [`MAX_COUNT`].
fn check_count(count: usize) -> Result<(), OprfError> {
    if count > MAX_COUNT {
        return Err(OprfError::TooMany {
            count,
            max: MAX_COUNT,
        });
    }
    Ok(())
}

/// Rejects output lengths outside `1..=32` at compile time.
struct OutputLen<const L: usize>;

impl<const L: usize> OutputLen<L> {
    const CHECK: () = assert!(
        L >= 1 && L <= MAX_OUTPUT_LEN,
        "an OPRF output is 1 to 32 bytes"
    );
}

fn xor(a: &Row, b: &Row) -> Row {
    std::array::from_fn(|k| a[k] ^ b[k])
}

fn and(a: &Row, b: &Row) -> Row {
    std::array::from_fn(|k| a[k] & b[k])
}

/// The row's `w / 8` bytes, words little-endian.
fn row_bytes(row: &Row, out: &mut [u8]) {
    for (chunk, word) in out.chunks_mut(16).zip(row) {
        chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
    }
}

fn row_from_bytes(bytes: &[u8]) -> Row {
    let mut row = [0u128; WORDS];
    for (word, chunk) in row.iter_mut().zip(bytes.chunks(16)) {
        let mut b = [0u8; 16];
        b[..chunk.len()].copy_from_slice(chunk);
        *word = u128::from_le_bytes(b);
        b.zeroize();
    }
    row
}

/// The session's pseudorandom code and output hash, the same for both parties.
struct Session {
    width: CodeWidth,
    /// `SHA-256` after the prefix block of half `h` of the code.
    code: [Sha256; 2],
    row_hash: RowHash,
}

impl Session {
    /// The code key hashes the context with both base-OT messages, so each party
    /// contributes fresh randomness to it and no input can be chosen against the code
    /// before the session exists.
    fn new(width: CodeWidth, ctx: &[u8; 32], first: &[u8], reply: &[u8]) -> Self {
        let key: [u8; 32] = Sha256::new()
            .chain_update(CODE_KEY_TAG)
            .chain_update(ctx)
            .chain_update(first)
            .chain_update(reply)
            .finalize()
            .into();
        let code = std::array::from_fn(|half| {
            let mut block = [0u8; 64];
            block[..CODE_TAG.len()].copy_from_slice(CODE_TAG);
            block[24..32].copy_from_slice(&(half as u64).to_be_bytes());
            block[32..].copy_from_slice(&key);
            Sha256::new_with_prefix(block)
        });
        Self {
            width,
            code,
            row_hash: RowHash::with_tag(ROW_TAG, ctx),
        }
    }

    /// The codeword `C(x)`: `SHA-256(prefix_0 || x) || SHA-256(prefix_1 || x)`, cut to
    /// `w` bits. One compression per half for inputs up to 55 bytes.
    fn encode(&self, x: &[u8]) -> Row {
        let mut bytes = [0u8; MAX_CODE_BITS / 8];
        for (half, prefix) in self.code.iter().enumerate() {
            let digest = prefix.clone().chain_update(x).finalize();
            bytes[half * 32..(half + 1) * 32].copy_from_slice(&digest);
        }
        bytes[self.width.row_len()..].fill(0);
        let row = row_from_bytes(&bytes);
        bytes.zeroize();
        row
    }

    /// `H(i, row)` cut to `L` bytes.
    fn output<const L: usize>(&self, i: usize, row: &Row) -> [u8; L] {
        let mut bytes = [0u8; MAX_CODE_BITS / 8];
        row_bytes(row, &mut bytes);
        let mut digest = self.row_hash.hash_bytes(i, &bytes[..self.width.row_len()]);
        let mut out = [0u8; L];
        out.copy_from_slice(&digest[..L]);
        digest.zeroize();
        bytes.zeroize();
        out
    }
}

/// Per-task buffers for [`stream_rows`], wiped when the task ends.
struct Scratch {
    columns: Zeroizing<Vec<u8>>,
    rows: Zeroizing<Vec<Row>>,
}

impl Scratch {
    fn new() -> Self {
        Self {
            columns: Zeroizing::new(vec![0u8; MAX_CODE_BITS * CHUNK_ROWS / 8]),
            rows: Zeroizing::new(vec![[0u128; WORDS]; CHUNK_ROWS]),
        }
    }
}

/// Fills `rows` (at most [`CHUNK_ROWS`]) with rows `first..first + rows.len()` of the
/// matrix whose column `j` is `streams[j]` (`first` a multiple of 128), columns past
/// `streams.len()` zero: each column's stretch is drawn once, then every 128 x 128 block
/// is transposed ([`transpose128`]).
fn stream_rows(streams: &[CtrStream], first: usize, rows: &mut [Row], columns: &mut [u8]) {
    debug_assert!(first.is_multiple_of(128) && rows.len() <= CHUNK_ROWS);
    let bytes = rows.len().div_ceil(128) * 16;
    for (j, stream) in streams.iter().enumerate() {
        stream.fill(first / 8, &mut columns[j * bytes..(j + 1) * bytes]);
    }
    let mut block = Zeroizing::new([0u128; 128]);
    for (b, out) in rows.chunks_mut(128).enumerate() {
        for g in 0..WORDS {
            for (k, word) in block.iter_mut().enumerate() {
                let j = 128 * g + k;
                *word = if j < streams.len() {
                    let at = j * bytes + b * 16;
                    u128::from_le_bytes(columns[at..at + 16].try_into().expect("16 bytes"))
                } else {
                    0
                };
            }
            transpose128(&mut block);
            for (row, word) in out.iter_mut().zip(block.iter()) {
                row[g] = *word;
            }
        }
    }
}

/// The receiver's outputs `F(i, r_i)`, one per bin, wiped when dropped.
pub type ReceiverOutputs<const L: usize> = Zeroizing<Vec<[u8; L]>>;

/// OPRF receiver, step 1: holds the inputs `r_0..r_{m-1}` (one per bin) later, and plays
/// base-OT *sender* with `w` seed pairs.
///
/// Call order: [`Self::new`] (send the first message), then [`Self::finish`] with the
/// sender's reply and the inputs (send the message it returns, keep the outputs).
pub struct OprfReceiver {
    width: CodeWidth,
    ctx: [u8; 32],
    base: BaseSender,
    first: [u8; BASE_FIRST_LEN],
}

impl OprfReceiver {
    /// Draws the base-OT secret and returns the first message `A` ([`BASE_FIRST_LEN`]
    /// bytes) for the sender's [`OprfSender::respond`]. Needs neither the inputs nor
    /// their number, so it can run ahead of them.
    pub fn new(rng: &mut SessionRng, ctx: &[u8], width: CodeWidth) -> (Self, [u8; BASE_FIRST_LEN]) {
        let (base, first) = BaseSender::new(rng);
        (
            Self {
                width,
                ctx: tagged_digest(CTX_TAG, ctx),
                base,
                first,
            },
            first,
        )
    }

    /// Step 2: from the sender's base-OT reply ([`CodeWidth::base_reply_len`] bytes)
    /// and the inputs (one per bin, any byte strings, `inputs.len()` at most
    /// [`MAX_COUNT`]), returns the message for [`OprfSender::finish`]
    /// ([`CodeWidth::message_len`]`(inputs.len())` bytes: row `i` is
    /// `t_i ⊕ G(k^1)_i ⊕ C(r_i)`) and the outputs `F(i, r_i)`, `L` bytes each
    /// (1 to 32; see [`min_output_len`]). The sender must be told `inputs.len()`
    /// (normally the protocol fixes it).
    pub fn finish<const L: usize, X: AsRef<[u8]> + Sync>(
        self,
        base_reply: &[u8],
        inputs: &[X],
    ) -> Result<(Vec<u8>, ReceiverOutputs<L>), OprfError> {
        let () = OutputLen::<L>::CHECK;
        let count = inputs.len();
        check_count(count)?;
        let seeds = self.base.keys(&self.ctx, base_reply, self.width.bits())?;
        let session = Session::new(self.width, &self.ctx, &self.first, base_reply);
        let streams: [Vec<CtrStream>; 2] =
            std::array::from_fn(|b| seeds.iter().map(|pair| CtrStream::new(&pair[b])).collect());
        drop(seeds);

        let row_len = self.width.row_len();
        let mut message = vec![0u8; self.width.message_len(count)];
        let mut outputs = Zeroizing::new(vec![[0u8; L]; count]);
        message
            .par_chunks_mut(CHUNK_ROWS * row_len)
            .zip(outputs.par_chunks_mut(CHUNK_ROWS))
            .zip(inputs.par_chunks(CHUNK_ROWS))
            .enumerate()
            .for_each_init(
                || {
                    (
                        Scratch::new(),
                        Zeroizing::new(vec![[0u128; WORDS]; CHUNK_ROWS]),
                    )
                },
                |(scratch, t), (c, ((message, outputs), inputs))| {
                    let first = c * CHUNK_ROWS;
                    let n = inputs.len();
                    stream_rows(&streams[0], first, &mut t[..n], &mut scratch.columns);
                    stream_rows(
                        &streams[1],
                        first,
                        &mut scratch.rows[..n],
                        &mut scratch.columns,
                    );
                    for (k, ((out, row), x)) in outputs
                        .iter_mut()
                        .zip(message.chunks_mut(row_len))
                        .zip(inputs)
                        .enumerate()
                    {
                        let mut code = session.encode(x.as_ref());
                        let mut u = xor(&xor(&t[k], &scratch.rows[k]), &code);
                        row_bytes(&u, row);
                        *out = session.output(first + k, &t[k]);
                        code.zeroize();
                        u.zeroize();
                    }
                },
            );
        Ok((message, outputs))
    }
}

impl std::fmt::Debug for OprfReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OprfReceiver {{ width: {:?}, .. }}", self.width)
    }
}

/// OPRF sender, step 1: plays base-OT *receiver* with `w` random choice bits `s`, and
/// ends up with the key of every bin.
///
/// Call order: [`Self::respond`] to the receiver's first message (send the reply), then
/// [`Self::finish`] with the receiver's message; evaluate with the [`OprfSenderKey`].
pub struct OprfSender {
    session: Session,
    /// The secret offset `s` (bits past the width zero).
    s: Zeroizing<Row>,
    /// `k_j^{s_j}` for every base OT `j`.
    seeds: Zeroizing<Vec<Seed>>,
}

impl OprfSender {
    /// Answers the receiver's first message `A` with the base-OT reply
    /// ([`CodeWidth::base_reply_len`] bytes), drawing `s` and the base-OT secrets from
    /// `rng`. A refused message leaves `rng` untouched.
    pub fn respond(
        rng: &mut SessionRng,
        ctx: &[u8],
        width: CodeWidth,
        base_first: &[u8],
    ) -> Result<(Self, Vec<u8>), OprfError> {
        let a_point = base::decode_first(base_first)?;
        let ctx = tagged_digest(CTX_TAG, ctx);
        let mut s_bytes = Zeroizing::new([0u8; MAX_CODE_BITS / 8]);
        rng.fill(&mut s_bytes[..width.row_len()]);
        let (seeds, reply) =
            base::receive(rng, &ctx, base_first, &a_point, &s_bytes[..width.row_len()]);
        let s = Zeroizing::new(row_from_bytes(&s_bytes[..]));
        let session = Session::new(width, &ctx, base_first, &reply);
        Ok((Self { session, s, seeds }, reply))
    }

    /// Finishes `count` OPRF instances from the receiver's message, whose length must be
    /// exactly [`CodeWidth::message_len`]`(count)`, and returns the key of every bin,
    /// with outputs of `L` bytes (as the receiver chose). `count` must be the
    /// receiver's number of inputs, agreed through the protocol.
    pub fn finish<const L: usize>(
        self,
        message: &[u8],
        count: usize,
    ) -> Result<OprfSenderKey<L>, OprfError> {
        let () = OutputLen::<L>::CHECK;
        check_count(count)?;
        let width = self.session.width;
        let expected = width.message_len(count);
        if message.len() != expected {
            return Err(OprfError::WrongLength {
                what: "OPRF message",
                expected,
                got: message.len(),
            });
        }
        let streams: Vec<CtrStream> = self.seeds.iter().map(CtrStream::new).collect();
        let s: &Row = &self.s;
        let row_len = width.row_len();
        let mut rows = Zeroizing::new(vec![[0u128; WORDS]; count]);
        rows.par_chunks_mut(CHUNK_ROWS)
            .zip(message.par_chunks(CHUNK_ROWS * row_len))
            .enumerate()
            .for_each_init(Scratch::new, |scratch, (c, (q, message))| {
                // q_i = G(k^s)_i ⊕ (u_i ∧ s) = t_i ⊕ (C(r_i) ∧ s).
                stream_rows(&streams, c * CHUNK_ROWS, q, &mut scratch.columns);
                for (q, u) in q.iter_mut().zip(message.chunks(row_len)) {
                    let u = row_from_bytes(u);
                    *q = xor(q, &and(&u, s));
                }
            });
        Ok(OprfSenderKey {
            session: self.session,
            s: self.s,
            rows,
        })
    }
}

impl std::fmt::Debug for OprfSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OprfSender {{ width: {:?}, .. }}", self.session.width)
    }
}

/// The sender's output: a key for every bin `i`, with which it evaluates
/// `F(i, x) = H(i, q_i ⊕ (C(x) ∧ s))` on any input `x`. For `x = r_i` this is the
/// receiver's output `i`; for any other `x` the receiver cannot tell it from random.
pub struct OprfSenderKey<const L: usize = DEFAULT_OUTPUT_LEN> {
    session: Session,
    s: Zeroizing<Row>,
    /// `q_i` for every bin.
    rows: Zeroizing<Vec<Row>>,
}

impl<const L: usize> OprfSenderKey<L> {
    /// Number of bins (OPRF instances).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The code width the run used.
    pub fn width(&self) -> CodeWidth {
        self.session.width
    }

    fn eval_code(&self, bin: usize, code: &Row) -> [u8; L] {
        let mut row = xor(&self.rows[bin], &and(code, &self.s));
        let out = self.session.output(bin, &row);
        row.zeroize();
        out
    }

    fn check_bin(&self, bin: usize) {
        assert!(
            bin < self.len(),
            "OPRF bin {bin} out of range {}",
            self.len()
        );
    }

    /// `F(bin, x)`.
    ///
    /// # Panics
    /// If `bin >= self.len()`.
    pub fn eval(&self, bin: usize, x: &[u8]) -> [u8; L] {
        self.check_bin(bin);
        let mut code = self.session.encode(x);
        let out = self.eval_code(bin, &code);
        code.zeroize();
        out
    }

    /// `F(bin, x)` for every `(bin, x)`, in order, on every core.
    ///
    /// # Panics
    /// If a bin is out of range (checked before any work).
    pub fn eval_many<X: AsRef<[u8]> + Sync>(&self, points: &[(usize, X)]) -> Vec<[u8; L]> {
        for (bin, _) in points {
            self.check_bin(*bin);
        }
        points
            .par_iter()
            .with_min_len(256)
            .map(|(bin, x)| self.eval(*bin, x.as_ref()))
            .collect()
    }

    /// `F(b, x)` for every item `x` and each of its `B` bins `b` (`bins[k]` for
    /// `items[k]`, as cuckoo hashing assigns them), on every core. The codeword of an
    /// item is computed once for all its bins, which saves a third of the work of
    /// [`Self::eval_many`] for three hash functions.
    ///
    /// # Panics
    /// If `items` and `bins` differ in length or a bin is out of range (checked before
    /// any work).
    pub fn eval_in_bins<X: AsRef<[u8]> + Sync, const B: usize>(
        &self,
        items: &[X],
        bins: &[[usize; B]],
    ) -> Vec<[[u8; L]; B]> {
        assert_eq!(items.len(), bins.len(), "one bin list per item");
        for bin in bins.iter().flatten() {
            self.check_bin(*bin);
        }
        items
            .par_iter()
            .zip(bins.par_iter())
            .with_min_len(128)
            .map(|(x, bins)| {
                let mut code = self.session.encode(x.as_ref());
                let out = bins.map(|bin| self.eval_code(bin, &code));
                code.zeroize();
                out
            })
            .collect()
    }
}

impl<const L: usize> std::fmt::Debug for OprfSenderKey<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "OprfSenderKey {{ width: {:?}, len: {}, .. }}",
            self.session.width,
            self.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stream_rows` against the definition: bit `j` of row `i` is bit `i` of stream `j`,
    /// for a chunk that starts past zero and ends mid-block, and a width that leaves
    /// the top columns empty.
    #[test]
    fn stream_rows_transposes_the_streams() {
        let streams: Vec<CtrStream> = (0..448u32)
            .map(|j| {
                let mut seed = [0u8; 16];
                seed[..4].copy_from_slice(&j.to_le_bytes());
                CtrStream::new(&seed)
            })
            .collect();
        let (first, n) = (256, 300);
        let mut rows = vec![[0u128; WORDS]; n];
        let mut columns = vec![0u8; MAX_CODE_BITS * CHUNK_ROWS / 8];
        stream_rows(&streams, first, &mut rows, &mut columns);
        for (j, stream) in streams.iter().enumerate() {
            let mut column = vec![0u8; (first + n).div_ceil(8)];
            stream.fill(0, &mut column);
            for (i, row) in rows.iter().enumerate() {
                let want = (column[(first + i) / 8] >> ((first + i) % 8)) & 1;
                assert_eq!(
                    (row[j / 128] >> (j % 128)) as u8 & 1,
                    want,
                    "row {i} column {j}"
                );
            }
        }
        assert!(
            rows.iter().all(|row| row[3] >> 64 == 0),
            "columns past 448 are zero"
        );
    }

    #[test]
    fn output_lengths_follow_the_bound() {
        assert_eq!(min_output_len(1), 5);
        // 3 · 2^20 · 1.27 · 2^20 comparisons: 2^42, so 82 bits, 11 bytes.
        assert_eq!(min_output_len(3 * (1 << 20) * 1_331_692), 11);
        assert_eq!(min_output_len(1 << 48), 11);
        assert_eq!(min_output_len((1 << 48) + 1), 12);
        assert!(min_output_len(u64::MAX) <= DEFAULT_OUTPUT_LEN);
    }

    #[test]
    fn widths_cover_their_evaluations() {
        assert_eq!(CodeWidth::for_evaluations(3 << 20), CodeWidth::Bits448);
        assert_eq!(
            CodeWidth::for_evaluations((1 << 26) + 1),
            CodeWidth::Bits512
        );
        assert_eq!(CodeWidth::default().message_len(3), 192);
        assert_eq!(CodeWidth::Bits448.base_reply_len(), 14336);
    }
}
