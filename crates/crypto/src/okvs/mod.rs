//! Random-band oblivious key-value store (OKVS) over GF(2^128) with binary coefficients.
//!
//! (Module documentation is completed with the measured parameters.)

mod decode;
mod encode;
mod hashing;
mod params;
mod tables;
#[cfg(test)]
mod tests;

pub use params::{MAX_BAND_WIDTH, MAX_ITEMS, MIN_SLACK, OkvsParams};

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

/// Encodes keys[i] -> values[i]. Keys are 128-bit hashes the caller made (u128); duplicate
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

/// Decodes every key: out[i] = Decode(store, keys[i]). store.len() must equal params.columns
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
