//! Random-band oblivious key-value store (OKVS) over GF(2^128) with binary coefficients,
//! for the VOLE-based PSI of Raghuraman and Rindal ("Blazing Fast PSI from Improved OKVS
//! and Subfield VOLE", CCS 2022).
//!
//! The construction is the random-band OKVS of Bienstock, Patel, Seo and Yeo
//! ("Near-Optimal Oblivious Key-Value Stores for Efficient PSI, PSU and Volume-Hiding
//! Multi-Maps", USENIX Security 2023). An encoding is a vector `P` of `m = columns`
//! 128-bit values. A key `x` has a row: a start `s` uniform in `[0, m - w]` and a band of
//! `w = band_width` random bits `b_0 .. b_{w-1}` with `b_0` forced to 1 (as the paper
//! does: no band is zero). Decoding is linear in `P`:
//!
//! `Decode(P, x) = XOR of P[s + j] over the j with b_j = 1`.
//!
//! **Encoding** solves `Decode(P, x_i) = v_i` for all keys over GF(2) (values added by
//! XOR): rows sorted by start, Gaussian elimination within the band (a row's pivot is its
//! first set bit once the earlier pivots are eliminated, and rows that reach it follow it
//! in start order), then back-substitution from the last column down. Rows live in
//! 64-bit words aligned to absolute columns, so adding rows is word-wise XOR
//! (`encode` module). Back-substitution and decoding read sums of columns from
//! subset-XOR tables (`tables` module): one look-up per 4 columns (back-substitution) or
//! per 8 columns (decoding) instead of one XOR per set bit.
//!
//! **Free columns are random.** Columns no pivot claims get values from `fill`, which the
//! caller draws uniformly (the session RNG), and never zero. With independent rows the
//! map from (values, free columns) to `P` is a bijection, so encoding uniformly random
//! values gives a uniformly random `P` whatever the keys: the obliviousness Bienstock et
//! al. get by sampling the free variables at random, and what the PSI needs when `P`
//! hides the receiver's set. Zero free columns would show which columns are free, and
//! that depends on the keys. `fill` is called exactly `columns` times, in column order,
//! whatever the keys.
//!
//! **Hash of keys to rows** (`hashing` module): AES-128 under three keys derived from
//! the public seed, so rows are as good as independent uniform ones for any distinct
//! keys fixed before the seed is drawn (a PRF argument; the module docs give it).
//!
//! # Parameters and failure probability
//!
//! [`OkvsParams::for_items`]`(n)`: `epsilon = 0.1`, i.e. `columns = max(ceil(1.1 n), n +
//! 48)`, and `band_width = min(4 (38 + ceil(log2 n)), 256, columns)`: 216 at `2^16`, 232
//! at `2^20`, 248 at `2^24`, 256 from `2^27` to `2^28` ([`MAX_ITEMS`]). Encoding fails
//! (the rows are dependent: [`OkvsError::Singular`]) with probability at most `2^-40`,
//! by this argument:
//!
//! * Bienstock et al. prove failure `2^-lambda` for `m = (1 + epsilon) n` and `w =
//!   O(lambda / epsilon)` (their theorem for random band matrices), with constants too
//!   loose to use, and measure instead: at `epsilon = 0.1` their linear fit is `lambda =
//!   0.2691 w - 15.21` (their experimental section, statistical security against band
//!   width for `epsilon` from 0.03 to 0.1), so `w = 206` for `lambda = 40`.
//! * Why it is linear: the system fails when some window of `L` columns holds more rows
//!   whose bands fit in it than it has columns. The rows of a window are Poisson with
//!   mean `(L - w) / (1 + epsilon)`; overflowing `L` costs about `exp(-2 epsilon w)` at
//!   the worst `L = w / epsilon`, that is `2.9 epsilon w` bits (0.29 per column at
//!   `epsilon = 0.1`), less `log2 n` for the `n` places a window can be.
//! * Measured here (`okvs_bench failure`, release build, `epsilon = 0.1`, widths far
//!   below the chosen ones so failures are common enough to count; fresh random keys and
//!   seed each trial), `-log2` of the failure rate:
//!
//!   | n      | trials  | w = 40 | 48   | 56   | 64    | 72    | 80    | 88    |
//!   |--------|---------|--------|------|------|-------|-------|-------|-------|
//!   | 2^10   | 100 000 | 4.93   | 7.06 | 9.38 | 11.44 | 13.02 | 15.02 |       |
//!   | 2^14   | 20 000  |        | 3.60 | 5.68 | 7.91  | 9.90  | 11.70 | 13.29 |
//!   | 2^18   | 2 000   |        |      |      | 3.86  | 5.97  | 7.80  | 9.97  |
//!   | 2^20   | 500     |        |      |      |       | 4.32  | 6.38  | 8.97  |
//!
//!   Each step of 8 columns gains about 2 bits (slope 0.25 to 0.27 per column; the
//!   paper's is 0.2691), and each doubling of `n` loses 0.8 to 1 bit (failure grows
//!   linearly in `n`, as the window argument says). At `n = 2^8` (304 columns, so more
//!   spare ones than `1.1 n`) the rates are lower still: 4.86 bits at `w = 24`, 12.29 at
//!   40, 16.61 at 48.
//! * The model `lambda(n, w) = 0.25 w + 4 - log2 n` takes the smallest measured slope, a
//!   full bit per doubling of `n`, and lies at least 0.9 bit below every measured point.
//!   [`OkvsParams::for_items`] takes the smallest `w` (a multiple of 4) with `lambda >=
//!   42` in it: 2 bits of margin in the model, and more in the extrapolation, since
//!   nothing suggests the slope falls as `w` grows (the window argument says 0.29, the
//!   paper's fit 0.2691, the larger `n` here 0.26): at `2^20`, `w = 232` gives 42 bits in
//!   the model, 45.6 with slope 0.26 through the `2^18` and `2^20` rows, 47 with the
//!   paper's fit. From `2^27` on the width is
//!   capped at 256 (four words), where the model still gives 40 at `2^28`.
//! * Why `epsilon = 0.1`: the exponent is about proportional to `epsilon w`, so a smaller
//!   expansion needs a proportionally wider band, and encoding and decoding cost grows
//!   with `w`. `epsilon = 0.1` is the smallest expansion for which the width at `2^20`
//!   (232) fits the four-word band this implementation supports; `epsilon = 0.05` would
//!   need about twice the width (Bienstock et al. report the same trade-off: 0.03 to 0.05
//!   for size, 0.07 to 0.1 for speed).
//! * Small `n`: the 48 spare columns make `columns >= n + 48`; once the band covers every
//!   column (`n` up to 136) the system is a dense random one, singular with
//!   probability below `2^(n - columns + 1) = 2^-47`; between that and the banded regime
//!   the spare columns only help (the `2^8` row above).
//!
//! # Failures, retries and what they leak
//!
//! A singular system is reported as [`OkvsError::Singular`]; [`encode_retrying`] then
//! encodes again under a fresh seed, at most [`MAX_TRIES`] times. Failure depends only on
//! the keys and the seed, never on the values. The seed that succeeded is public (it is
//! sent with `P`) and the failed ones are never sent. The seed a peer sees is uniform
//! among the seeds that succeed for these keys, which is within statistical distance
//! `Pr[failure] <= 2^-40` of a uniform seed: a simulator sends a uniform seed. Whether a
//! retry happened (its time) is the only other trace, and the chance of any retry is at
//! most `2^-40`. The free columns of a retry are drawn afresh.
//!
//! # Cost
//!
//! The work is linear in `n w`: three AES blocks a key, a counting sort by start,
//! elimination (about 3.5 row additions a row), about `w / 4` table look-ups a row in
//! back-substitution and `w / 8` a key in decoding. `okvs_bench` on this 2-core AMD EPYC
//! VM, one-thread times in CPU time, while other builds ran (load average 4 to 7, so the
//! spread over several runs is given):
//!
//! | keys | columns    | band | encode       | decode, 1 thread | decode, 2 threads (wall) |
//! |------|------------|------|--------------|------------------|--------------------------|
//! | 2^16 | 72 090     | 216  | 6 to 9 ms    | 1 to 5 ms        | 2 to 7 ms                |
//! | 2^20 | 1 153 434  | 232  | 153 to 190 ms| 74 to 104 ms     | 77 to 190 ms             |
//! | 2^24 | 18 454 938 | 248  | 3.7 to 6.0 s | 2.2 to 2.4 s     | 1.8 to 3.1 s             |
//!
//! Per key, `2^20` costs 1.3 to 1.6 times `2^16`: there the arrays (87 MB for encoding,
//! 28 MB for decoding besides the store) no longer fit in cache, and first touching fresh
//! memory costs about 0.4 ms per MB on this VM, a fifth of encoding's time. That is why
//! the arrays are as few as they are.

mod decode;
mod encode;
mod hashing;
mod params;
mod tables;
#[cfg(test)]
mod tests;

pub use params::{MAX_BAND_WIDTH, MAX_ITEMS, MIN_SLACK, OkvsParams, SECURITY_BITS};

use hashing::RowHasher;

/// Length of the public seed that picks the hash of keys to rows.
pub const OKVS_SEED_LEN: usize = 16;

/// Why an OKVS could not be encoded or decoded.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OkvsError {
    /// More keys than the OKVS (or any OKVS) holds.
    #[error("{items} keys exceed the OKVS capacity of {max}")]
    TooMany { items: usize, max: usize },
    /// The same key twice: it could be given two values, so it is refused.
    #[error("a key appears twice")]
    DuplicateKey,
    /// The rows of the keys under this seed are linearly dependent: encode again with a
    /// fresh seed ([`encode_retrying`]).
    #[error("the band system is singular for this seed")]
    Singular,
    /// A slice does not have the length the shape or the other slices ask for.
    #[error("expected {expected} elements, got {got}")]
    WrongLength { expected: usize, got: usize },
}

/// Encodes `keys[i] -> values[i]`. Keys are 128-bit hashes the caller made (u128); duplicate
/// keys are refused (OkvsError::DuplicateKey). `seed` is public (sent with the encoding) and
/// picks the hash; on OkvsError::Singular the caller retries with a fresh seed. `fill` gives the
/// random values of free columns (any FnMut() -> u128, e.g. from the session's RNG).
///
/// `fill` is called exactly `params.columns` times, whatever the keys. More keys than
/// columns is [`OkvsError::Singular`] for every seed.
///
/// # Panics
/// If `params` is not a supported shape (one from [`OkvsParams::for_items`] always is).
pub fn encode(
    params: &OkvsParams,
    seed: &[u8; OKVS_SEED_LEN],
    keys: &[u128],
    values: &[u128],
    fill: impl FnMut() -> u128,
) -> Result<Vec<u128>, OkvsError> {
    params.check();
    if values.len() != keys.len() {
        return Err(OkvsError::WrongLength {
            expected: keys.len(),
            got: values.len(),
        });
    }
    if keys.len() > params.items {
        return Err(OkvsError::TooMany {
            items: keys.len(),
            max: params.items,
        });
    }
    let hasher = RowHasher::new(params, seed);
    encode::encode(params, &hasher, keys, values, fill)
}

/// Decodes every key: `out[i] = Decode(store, keys[i])`. store.len() must equal params.columns
/// (else WrongLength). Parallel with rayon over chunks for large inputs.
///
/// Any key decodes, encoded or not; `out.len()` must equal `keys.len()` (else
/// WrongLength).
///
/// # Panics
/// If `params` is not a supported shape (one from [`OkvsParams::for_items`] always is).
pub fn decode(
    params: &OkvsParams,
    seed: &[u8; OKVS_SEED_LEN],
    store: &[u128],
    keys: &[u128],
    out: &mut [u128],
) -> Result<(), OkvsError> {
    params.check();
    if store.len() != params.columns {
        return Err(OkvsError::WrongLength {
            expected: params.columns,
            got: store.len(),
        });
    }
    if out.len() != keys.len() {
        return Err(OkvsError::WrongLength {
            expected: keys.len(),
            got: out.len(),
        });
    }
    let hasher = RowHasher::new(params, seed);
    decode::decode(&hasher, store, keys, out);
    Ok(())
}

/// Tries [`encode_retrying`] makes before giving up.
pub const MAX_TRIES: usize = 8;

/// Encodes, drawing a fresh seed from `next_seed` after each Singular, at most 8 tries
/// (probability of needing a second is <= 2^-40); returns the seed used with the store.
///
/// The first seed is drawn from `next_seed` too. Errors other than
/// [`OkvsError::Singular`] are returned at once; eight singular tries return
/// [`OkvsError::Singular`].
pub fn encode_retrying(
    params: &OkvsParams,
    keys: &[u128],
    values: &[u128],
    mut next_seed: impl FnMut() -> [u8; OKVS_SEED_LEN],
    mut fill: impl FnMut() -> u128,
) -> Result<([u8; OKVS_SEED_LEN], Vec<u128>), OkvsError> {
    for _ in 0..MAX_TRIES {
        let seed = next_seed();
        match encode(params, &seed, keys, values, &mut fill) {
            Ok(store) => return Ok((seed, store)),
            Err(OkvsError::Singular) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(OkvsError::Singular)
}

/// Decodes one key naively: the reference the fast paths are tested against.
#[cfg(test)]
pub(crate) fn decode_one(
    params: &OkvsParams,
    seed: &[u8; OKVS_SEED_LEN],
    store: &[u128],
    key: u128,
) -> u128 {
    let hasher = RowHasher::new(params, seed);
    let mut out = [0u128];
    decode::naive(&hasher, store, &[key], &mut out);
    out[0]
}
