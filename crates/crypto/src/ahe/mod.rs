//! Additively homomorphic encryption.
//!
//! Two layers:
//!
//! * [`AdditiveHe`]: the scheme itself (key generation, encryption of small values,
//!   homomorphic addition, re-randomization, decryption, canonical encodings). Every
//!   scheme runs the same [`conformance`] suite.
//! * [`SubsetSum`]: what the intersection-sum protocols need from a scheme: the key
//!   owner encrypts a column of values; the other party, holding only the public key,
//!   sums the subset of items it selected and returns ciphertexts that reveal that sum
//!   and nothing else (every other bit is masked); the key owner decrypts the sum. The
//!   reverse variant (Ion et al. 2020, App. G) uses the masked form instead: the non-owner
//!   masks every item, the owner sums a subset of masked items, the non-owner unmasks.
//!
//! Schemes: [`paillier`] (Paillier with the Damgard-Jurik generalisation, slot-packed),
//! [`elgamal`] (exponential ElGamal over ristretto255, decrypted with baby-step
//! giant-step) and [`rlwe`] (Ring-LWE, coefficient-encoded; forward variant only).

pub mod elgamal;
pub mod paillier;
pub mod rlwe;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

use crate::rng::SessionRng;

/// Which scheme a session uses; the wire code is part of the protocol hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeId {
    Paillier,
    ElGamal,
    Rlwe,
}

impl HeId {
    pub const ALL: [HeId; 3] = [HeId::Paillier, HeId::ElGamal, HeId::Rlwe];
    pub fn name(self) -> &'static str {
        match self {
            HeId::Paillier => "paillier",
            HeId::ElGamal => "elgamal",
            HeId::Rlwe => "rlwe",
        }
    }
    pub fn code(self) -> u8 {
        match self {
            HeId::Paillier => 1,
            HeId::ElGamal => 2,
            HeId::Rlwe => 3,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.code() == code)
    }
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// Errors of the homomorphic layer. Peer-supplied bytes that fail validation produce
/// the `Invalid*` variants, never a panic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeError {
    #[error("invalid public key: {0}")]
    InvalidPublicKey(String),
    #[error("ciphertext {index} is invalid: {reason}")]
    InvalidCiphertext { index: usize, reason: String },
    #[error(
        "{len} bytes of packed ciphertexts is not a multiple of the ciphertext length {ct_len}"
    )]
    BadLength { len: usize, ct_len: usize },
    #[error("expected {expected} ciphertexts, got {got}")]
    WrongCount { expected: usize, got: usize },
    #[error("decrypted value is not below the agreed bound 2^{bound_bits}")]
    OutOfRange { bound_bits: u32 },
    #[error("unsupported parameters: {0}")]
    Parameters(String),
    #[error("item index {index} is out of range for {count} items")]
    BadIndex { index: usize, count: usize },
}

/// An additively homomorphic public-key encryption scheme over small integers.
///
/// Plaintexts in this trait are `u64`; [`AdditiveHe::decrypt`] takes the largest value
/// the caller can expect, because some schemes (exponential ElGamal) can only decrypt a
/// bounded range.
pub trait AdditiveHe: Send + Sync + 'static {
    const ID: HeId;
    /// Parameters for key generation (modulus size, Damgard-Jurik s, ...).
    type Params: Clone + std::fmt::Debug;
    type PublicKey: Send + Sync;
    /// Zeroized on drop, not `Clone`, `Debug` elided.
    type SecretKey: Send + Sync;
    type Ciphertext: Clone + Send + Sync;

    fn keygen(params: &Self::Params, rng: &mut SessionRng) -> (Self::PublicKey, Self::SecretKey);
    fn encrypt(pk: &Self::PublicKey, m: u64, rng: &mut SessionRng) -> Self::Ciphertext;
    fn add(pk: &Self::PublicKey, a: &Self::Ciphertext, b: &Self::Ciphertext) -> Self::Ciphertext;
    /// `k * m` for the plaintext `m` of `c`.
    fn mul_plain(pk: &Self::PublicKey, c: &Self::Ciphertext, k: u64) -> Self::Ciphertext;
    /// A fresh-looking encryption of the same plaintext.
    fn rerandomize(
        pk: &Self::PublicKey,
        c: &Self::Ciphertext,
        rng: &mut SessionRng,
    ) -> Self::Ciphertext;
    /// Decrypts a plaintext known to be at most `max`.
    fn decrypt(sk: &Self::SecretKey, c: &Self::Ciphertext, max: u64) -> Result<u64, HeError>;

    fn encode_public_key(pk: &Self::PublicKey) -> Vec<u8>;
    /// Validates a peer's public key (sizes, ranges, structure) against `params`.
    fn decode_public_key(bytes: &[u8], params: &Self::Params) -> Result<Self::PublicKey, HeError>;
    /// Fixed length of one encoded ciphertext under `pk`.
    fn ciphertext_len(pk: &Self::PublicKey) -> usize;
    fn encode_ciphertext(pk: &Self::PublicKey, c: &Self::Ciphertext, out: &mut [u8]);
    /// Validates a peer's ciphertext (canonical, in range, invertible where required).
    fn decode_ciphertext(pk: &Self::PublicKey, bytes: &[u8]) -> Result<Self::Ciphertext, HeError>;
}

/// Public parameters of a value column, agreed by both parties before any value is
/// encrypted. They fix the packing layout, so they must be derived only from public
/// information (never from the data beyond what the protocol already reveals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnBounds {
    /// Number of items in the column (P2's set size).
    pub items: usize,
    /// Every value is at most this.
    pub max_value: u64,
    /// The sum of all values of the column is at most this. The key owner checks its
    /// input against it; it bounds every partial sum, so sums cannot wrap.
    pub max_sum: u128,
}

/// Summing a privately selected subset of an encrypted column (see the module docs).
///
/// All byte vectors are packed fixed-width ciphertexts or elements of the scheme.
/// Item `i` is the `i`-th value passed to `encrypt_column`.
pub trait SubsetSum: AdditiveHe {
    /// How many ciphertexts `encrypt_column` produces for these bounds.
    fn column_ciphertexts(pk: &Self::PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError>;
    /// How many ciphertexts `sum_selected` returns.
    fn sum_ciphertexts(pk: &Self::PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError>;

    /// Key owner: encrypts the column (values already checked against `bounds`).
    fn encrypt_column(
        pk: &Self::PublicKey,
        sk: &Self::SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError>;

    /// Other party: from the packed column, the encrypted sum of the items at `selected`
    /// (distinct indices), masked and re-randomized so the key owner learns that sum only.
    fn sum_selected(
        pk: &Self::PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError>;

    /// Key owner: the selected sum from `sum_selected`'s output.
    fn decrypt_sum(
        sk: &Self::SecretKey,
        bounds: &ColumnBounds,
        sum: &[u8],
    ) -> Result<u128, HeError>;

    // ---- reverse variant (Ion et al. 2020, App. G) ----

    /// Key owner: one ciphertext per item, unpacked (the reverse variant shuffles
    /// items individually, so values cannot share a ciphertext).
    fn encrypt_each(
        pk: &Self::PublicKey,
        sk: &Self::SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError>;

    /// Other party: adds a fresh uniformly random mask to every item of `encrypt_each`'s
    /// output and re-randomizes. Returns the masked ciphertexts and the masks to keep.
    fn mask_each(
        pk: &Self::PublicKey,
        column: &[u8],
        rng: &mut SessionRng,
    ) -> Result<(Vec<u8>, Vec<Mask>), HeError>;

    /// Key owner: the masked sum `sum(value + mask)` over `selected`, encoded for the
    /// other party (it reveals nothing: the masks are uniform).
    fn open_masked_sum(
        sk: &Self::SecretKey,
        masked: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError>;

    /// Other party: removes the masks of `selected` from the opened masked sum.
    fn unmask_sum(
        pk: &Self::PublicKey,
        bounds: &ColumnBounds,
        opened: &[u8],
        masks: &[Mask],
        selected: &[usize],
    ) -> Result<u128, HeError>;
}

/// [`SubsetSum::sum_selected`] in steps, for a selection spread over several columns of
/// one layout (a job that keeps its columns on disk and reads one at a time):
/// `finish_sum(add_partials(partial_sum(a, ..), partial_sum(b, ..)))` is what
/// `sum_selected` would return on the two columns joined, so the key owner learns the
/// total and never a column's share of it.
///
/// A partial is neither masked nor re-randomized: it must never leave the party that
/// made it. Every column's `bounds.max_sum` must bound the total over all of them (it
/// fixes the packing); `bounds.items` is the column's own count.
pub trait PartialSums: SubsetSum {
    /// The unmasked encrypted sum of the items at `selected` (distinct indices).
    fn partial_sum(
        pk: &Self::PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError>;

    /// The partial of both selections.
    fn add_partials(
        pk: &Self::PublicKey,
        bounds: &ColumnBounds,
        a: &[u8],
        b: &[u8],
    ) -> Result<Vec<u8>, HeError>;

    /// What [`SubsetSum::sum_selected`] returns for the partial's selection: masked and
    /// re-randomized, for [`SubsetSum::decrypt_sum`].
    fn finish_sum(
        pk: &Self::PublicKey,
        bounds: &ColumnBounds,
        partial: &[u8],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError>;
}

/// A secret additive mask chosen by the non-owner in the reverse variant: an integer
/// modulo the scheme's plaintext modulus, big-endian.
#[derive(Clone, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct Mask(pub Vec<u8>);

impl std::fmt::Debug for Mask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mask(..)")
    }
}

/// For running sums fed by hits `(sum, entry)` into a received array: the distinct
/// entries the hits touch, sorted (each is decoded once), and every hit as
/// `(sum, position of its entry in that list)`. Used by ElGamal's
/// [`elgamal::CiphertextSums`] and the threshold schemes' `SerialSums`.
pub(crate) fn touched_entries(hits: &[(u32, u32)]) -> (Vec<u32>, Vec<(u32, u32)>) {
    use rayon::prelude::*;
    let mut touched: Vec<u32> = hits.iter().map(|&(_, i)| i).collect();
    touched.par_sort_unstable();
    touched.dedup();
    let slots = hits
        .iter()
        .map(|&(sum, i)| (sum, touched.binary_search(&i).expect("touched") as u32))
        .collect();
    (touched, slots)
}
