//! Exponential ElGamal over ristretto255.
//!
//! `sk = x`, `pk = h = xG`, `Enc(m; ρ) = (ρG, mG + ρh)`. Additively homomorphic in `m`;
//! decryption recovers `mG = c2 - x c1` and then needs a discrete logarithm, solved with
//! baby-step giant-step for `m` in a known range `[0, max]`. Ion et al. 2020 (App. B.2) notes
//! exactly this trade-off: 64-byte ciphertexts (much smaller than Paillier) but no
//! slotting, and decryption only for small sums (feasible up to 2^44 with the
//! default table, and quick below about 2^40).
//!
//! Both `ρG` and `ρh` use fixed-base tables: dalek's constant
//! `RISTRETTO_BASEPOINT_TABLE` for `G` and a [`RistrettoBasepointTable`] for `h`, built
//! once per key. The baby-step table depends only on its size, not on the key, so it is
//! built on first use and cached for the life of the process.
//!
//! Ciphertext encoding: `compress(c1) ‖ compress(c2)`, 64 bytes, canonical encodings
//! only; `c1` may not be the identity (`ρ ≠ 0`), `c2` may (it is `mG + ρh`).
//!
//! Subset sums need no packing: one ciphertext per item; the non-owner adds the selected
//! ciphertexts and a fresh `Enc(0)` (full fresh `ρ`, so the result is a fresh encryption
//! of the sum). The reverse variant (Ion et al. 2020, App. G) masks each item with a uniform
//! scalar `r_j`; the owner opens the point `(S + R)G`; the non-owner subtracts `RG` and
//! solves the discrete logarithm of `SG`.

mod base_table;
pub mod bulk;
mod lanes;
mod sums;

pub use base_table::BaseTable;
pub use sums::CiphertextSums;

use std::sync::OnceLock;

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
/// The scalars of ristretto255 (plaintexts and randomness of this scheme).
pub use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::paillier::{check_selection, packed_count};
use super::{AdditiveHe, ColumnBounds, HeError, HeId, Mask, PartialSums, SubsetSum};
use crate::rng::SessionRng;

/// Bytes of one encoded ciphertext.
pub const CIPHERTEXT_LEN: usize = 64;
/// Items per forked rng (fixed so output does not depend on the thread count).
const RNG_CHUNK: usize = 256;
/// Giant steps compressed together (one field inversion per batch).
const GIANT_BATCH: usize = 256;
/// At most `2^MAX_GIANT_BITS` giant steps per decryption: bounds beyond
/// `2^(max_table_bits + MAX_GIANT_BITS)` are refused up front rather than turning one
/// decryption into minutes of work (2^44 with the default 2^22-entry table: at most
/// 2^22 giant steps, a few seconds).
pub const MAX_GIANT_BITS: u32 = 22;

/// Parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The baby-step table has at most `2^max_table_bits` entries (about 12 bytes each);
    /// 1..=30.
    pub max_table_bits: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params { max_table_bits: 22 }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), HeError> {
        if !(1..=30).contains(&self.max_table_bits) {
            return Err(HeError::Parameters(format!(
                "ElGamal max_table_bits must be in 1..=30, got {}",
                self.max_table_bits
            )));
        }
        Ok(())
    }
}

/// Exponential ElGamal (see the module docs).
pub struct ElGamal;

/// Public key `h = xG` with its fixed-base table.
#[derive(Clone)]
pub struct PublicKey {
    h: RistrettoPoint,
    table: BaseTable,
    /// Local decryption setting carried from [`Params`] (not encoded).
    max_table_bits: u32,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "elgamal::PublicKey({:02x?})",
            &self.h.compress().as_bytes()[..8]
        )
    }
}

impl PublicKey {
    fn new(h: RistrettoPoint, max_table_bits: u32) -> Self {
        PublicKey {
            table: BaseTable::new(&h),
            h,
            max_table_bits,
        }
    }

    /// The point `h`.
    pub fn point(&self) -> &RistrettoPoint {
        &self.h
    }

    /// The fixed-base tables of `h`, for the bulk operations of [`bulk`].
    pub fn table(&self) -> &BaseTable {
        &self.table
    }

    /// `Enc(m)` for a scalar `m`, fresh non-zero `ρ`.
    fn encrypt_scalar(&self, m: &Scalar, rng: &mut SessionRng) -> Ciphertext {
        let mut rho = random_nonzero_scalar(rng);
        let c1 = &rho * RISTRETTO_BASEPOINT_TABLE;
        let c2 = m * RISTRETTO_BASEPOINT_TABLE + &rho * self.table.serial();
        rho.zeroize();
        Ciphertext { c1, c2 }
    }
}

/// Secret key `x`; zeroized on drop, not `Clone`, `Debug` elided.
pub struct SecretKey {
    x: Scalar,
    pk: PublicKey,
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.x.zeroize();
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("elgamal::SecretKey { .. }")
    }
}

impl SecretKey {
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }
    /// `mG = c2 - x c1`.
    fn message_point(&self, c: &Ciphertext) -> RistrettoPoint {
        c.c2 - self.x * c.c1
    }

    /// True when `c` encrypts zero: one multiplication, no discrete logarithm (the
    /// membership test of Ion et al. 2020, Fig. 4, step 6).
    pub fn is_zero(&self, c: &Ciphertext) -> bool {
        self.message_point(c) == RistrettoPoint::identity()
    }
}

/// `(c1, c2) = (ρG, mG + ρh)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    pub c1: RistrettoPoint,
    pub c2: RistrettoPoint,
}

impl Ciphertext {
    /// `(0, 0)`, the trivial encryption of zero: the start of a homomorphic sum.
    pub fn zero() -> Self {
        Ciphertext {
            c1: RistrettoPoint::identity(),
            c2: RistrettoPoint::identity(),
        }
    }
}

impl std::ops::Add for Ciphertext {
    type Output = Ciphertext;
    fn add(self, o: Ciphertext) -> Ciphertext {
        Ciphertext {
            c1: self.c1 + o.c1,
            c2: self.c2 + o.c2,
        }
    }
}

/// A uniform scalar (a wide reduction of 64 random bytes).
pub fn random_scalar(rng: &mut SessionRng) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill(&mut wide);
    let s = Scalar::from_bytes_mod_order_wide(&wide);
    wide.zeroize();
    s
}

pub(crate) fn random_nonzero_scalar(rng: &mut SessionRng) -> Scalar {
    loop {
        let s = random_scalar(rng);
        if s != Scalar::ZERO {
            return s;
        }
    }
}

pub(crate) fn encode(c: &Ciphertext, out: &mut [u8]) {
    out[..32].copy_from_slice(c.c1.compress().as_bytes());
    out[32..64].copy_from_slice(c.c2.compress().as_bytes());
}

pub(crate) fn decode(bytes: &[u8], index: usize) -> Result<Ciphertext, HeError> {
    let c = decode_points(bytes, index)?;
    if c.c1 == RistrettoPoint::identity() {
        return Err(HeError::InvalidCiphertext {
            index,
            reason: "c1 is the identity".into(),
        });
    }
    Ok(c)
}

/// Two canonical points, the identity allowed (a partial sum of nothing).
fn decode_points(bytes: &[u8], index: usize) -> Result<Ciphertext, HeError> {
    let bad = |reason: &str| HeError::InvalidCiphertext {
        index,
        reason: reason.to_string(),
    };
    if bytes.len() != CIPHERTEXT_LEN {
        return Err(bad("wrong length"));
    }
    let point = |b: &[u8]| {
        CompressedRistretto::from_slice(b)
            .ok()
            .and_then(|c| c.decompress())
    };
    let c1 =
        point(&bytes[..32]).ok_or_else(|| bad("c1 is not a canonical ristretto255 encoding"))?;
    let c2 =
        point(&bytes[32..]).ok_or_else(|| bad("c2 is not a canonical ristretto255 encoding"))?;
    Ok(Ciphertext { c1, c2 })
}

fn encoded(c: &Ciphertext) -> Vec<u8> {
    let mut out = vec![0u8; CIPHERTEXT_LEN];
    encode(c, &mut out);
    out
}

fn decode_selected(column: &[u8], selected: &[usize]) -> Result<Vec<Ciphertext>, HeError> {
    selected
        .par_iter()
        .map(|&i| decode(&column[i * CIPHERTEXT_LEN..(i + 1) * CIPHERTEXT_LEN], i))
        .collect()
}

fn sum_cts(cts: &[Ciphertext]) -> Ciphertext {
    let zero = Ciphertext {
        c1: RistrettoPoint::identity(),
        c2: RistrettoPoint::identity(),
    };
    cts.par_iter()
        .with_min_len(256)
        .copied()
        .reduce(|| zero, |a, b| a + b)
}

// ---------------------------------------------------------------------------------
// Baby-step giant-step

/// Baby steps `j = 0..size`, keyed by the first 8 bytes of `compress(2 jG)` (doubling
/// lets us compress giant steps in batches with one inversion; it is injective in a
/// prime-order group), sorted for binary search.
struct BabyTable {
    size: u64,
    entries: Vec<(u64, u32)>,
}

static BABY_TABLES: [OnceLock<BabyTable>; 31] = [const { OnceLock::new() }; 31];

fn prefix(c: &CompressedRistretto) -> u64 {
    let b = c.as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

fn baby_table(bits: u32) -> &'static BabyTable {
    BABY_TABLES[bits as usize].get_or_init(|| {
        let size = 1u64 << bits;
        const CHUNK: u64 = 4096;
        let mut entries: Vec<(u64, u32)> = (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .flat_map_iter(|chunk| {
                let start = chunk * CHUNK;
                let end = (start + CHUNK).min(size);
                let mut p = &Scalar::from(start) * RISTRETTO_BASEPOINT_TABLE;
                let g = curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
                let mut pts = Vec::with_capacity((end - start) as usize);
                for _ in start..end {
                    pts.push(p);
                    p += g;
                }
                RistrettoPoint::double_and_compress_batch(&pts)
                    .into_iter()
                    .enumerate()
                    .map(move |(i, c)| (prefix(&c), (start + i as u64) as u32))
                    .collect::<Vec<_>>()
            })
            .collect();
        entries.par_sort_unstable();
        BabyTable { size, entries }
    })
}

/// The `m ∈ [0, max]` with `mG = target`, if any.
pub(crate) fn bsgs(target: &RistrettoPoint, max: u64, max_table_bits: u32) -> Option<u64> {
    let max_bits = 64 - max.leading_zeros();
    let bits = max_bits.div_ceil(2).min(max_table_bits);
    let table = baby_table(bits);
    let t = table.size;
    let giants = max / t + 1; // i = 0..giants
    let step = -(&Scalar::from(t) * RISTRETTO_BASEPOINT_TABLE);
    let batches = giants.div_ceil(GIANT_BATCH as u64);
    let check = |i: u64, key: u64| -> Option<u64> {
        let lo = table.entries.partition_point(|e| e.0 < key);
        table.entries[lo..]
            .iter()
            .take_while(|e| e.0 == key)
            .find_map(|&(_, j)| {
                let m = i.checked_mul(t)?.checked_add(j as u64)?;
                (m <= max && &Scalar::from(m) * RISTRETTO_BASEPOINT_TABLE == *target).then_some(m)
            })
    };
    (0..batches).into_par_iter().find_map_any(|b| {
        let first = b * GIANT_BATCH as u64;
        let last = (first + GIANT_BATCH as u64).min(giants);
        // target - first*t*G
        let mut p = target + Scalar::from(first) * step;
        let mut pts = Vec::with_capacity((last - first) as usize);
        for _ in first..last {
            pts.push(p);
            p += step;
        }
        RistrettoPoint::double_and_compress_batch(&pts)
            .iter()
            .enumerate()
            .find_map(|(k, c)| check(first + k as u64, prefix(c)))
    })
}

fn out_of_range(max: u128) -> HeError {
    HeError::OutOfRange {
        bound_bits: 128 - max.leading_zeros(),
    }
}

/// `max` as a `u64`, if a decryption up to `max` is feasible with this table size.
pub(crate) fn check_range(max: u128, table_bits: u32) -> Result<u64, HeError> {
    u64::try_from(max)
        .ok()
        .filter(|m| (m >> table_bits) >> MAX_GIANT_BITS == 0)
        .ok_or_else(|| {
            HeError::Parameters(format!(
                "exponential ElGamal cannot decrypt values up to 2^{} with a 2^{table_bits} table",
                128 - max.leading_zeros()
            ))
        })
}

fn discrete_log(target: &RistrettoPoint, max: u128, table_bits: u32) -> Result<u128, HeError> {
    let m = check_range(max, table_bits)?;
    bsgs(target, m, table_bits)
        .map(u128::from)
        .ok_or_else(|| out_of_range(max))
}

fn check_values(bounds: &ColumnBounds, values: &[u64]) -> Result<(), HeError> {
    if values.len() != bounds.items {
        return Err(HeError::WrongCount {
            expected: bounds.items,
            got: values.len(),
        });
    }
    let mut total: u128 = 0;
    for &v in values {
        if v > bounds.max_value {
            return Err(out_of_range(bounds.max_value as u128));
        }
        total += v as u128;
    }
    if total > bounds.max_sum {
        return Err(out_of_range(bounds.max_sum));
    }
    Ok(())
}

fn scalar_to_mask(s: &Scalar) -> Mask {
    let mut b = s.to_bytes();
    b.reverse();
    let m = Mask(b.to_vec());
    b.zeroize();
    m
}

fn mask_to_scalar(m: &Mask, index: usize) -> Result<Scalar, HeError> {
    let bad = || HeError::Parameters(format!("mask {index} is not a canonical scalar"));
    let mut b: [u8; 32] = m.0.as_slice().try_into().map_err(|_| bad())?;
    b.reverse();
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(b)).ok_or_else(bad);
    b.zeroize();
    s
}

impl AdditiveHe for ElGamal {
    const ID: HeId = HeId::ElGamal;
    type Params = Params;
    type PublicKey = PublicKey;
    type SecretKey = SecretKey;
    type Ciphertext = Ciphertext;

    /// # Panics
    /// If `params` fail [`Params::validate`] (a local configuration error).
    fn keygen(params: &Params, rng: &mut SessionRng) -> (PublicKey, SecretKey) {
        params.validate().expect("invalid ElGamal parameters");
        let x = random_nonzero_scalar(rng);
        let pk = PublicKey::new(&x * RISTRETTO_BASEPOINT_TABLE, params.max_table_bits);
        let sk = SecretKey { x, pk: pk.clone() };
        (pk, sk)
    }

    fn encrypt(pk: &PublicKey, m: u64, rng: &mut SessionRng) -> Ciphertext {
        pk.encrypt_scalar(&Scalar::from(m), rng)
    }

    fn add(_pk: &PublicKey, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        *a + *b
    }

    fn mul_plain(_pk: &PublicKey, c: &Ciphertext, k: u64) -> Ciphertext {
        let k = Scalar::from(k);
        Ciphertext {
            c1: c.c1 * k,
            c2: c.c2 * k,
        }
    }

    fn rerandomize(pk: &PublicKey, c: &Ciphertext, rng: &mut SessionRng) -> Ciphertext {
        *c + pk.encrypt_scalar(&Scalar::ZERO, rng)
    }

    /// Baby-step giant-step; `max` beyond `2^(max_table_bits + MAX_GIANT_BITS)` is a
    /// [`HeError::Parameters`] error.
    fn decrypt(sk: &SecretKey, c: &Ciphertext, max: u64) -> Result<u64, HeError> {
        check_range(max as u128, sk.pk.max_table_bits)?;
        bsgs(&sk.message_point(c), max, sk.pk.max_table_bits)
            .ok_or_else(|| out_of_range(max as u128))
    }

    fn encode_public_key(pk: &PublicKey) -> Vec<u8> {
        pk.h.compress().as_bytes().to_vec()
    }

    fn decode_public_key(bytes: &[u8], params: &Params) -> Result<PublicKey, HeError> {
        params.validate()?;
        let bad = |m: &str| HeError::InvalidPublicKey(m.to_string());
        if bytes.len() != 32 {
            return Err(bad("wrong length"));
        }
        let h = CompressedRistretto::from_slice(bytes)
            .ok()
            .and_then(|c| c.decompress())
            .ok_or_else(|| bad("not a canonical ristretto255 encoding"))?;
        if h == RistrettoPoint::identity() {
            return Err(bad("identity"));
        }
        Ok(PublicKey::new(h, params.max_table_bits))
    }

    fn ciphertext_len(_pk: &PublicKey) -> usize {
        CIPHERTEXT_LEN
    }

    fn encode_ciphertext(_pk: &PublicKey, c: &Ciphertext, out: &mut [u8]) {
        encode(c, out);
    }

    fn decode_ciphertext(_pk: &PublicKey, bytes: &[u8]) -> Result<Ciphertext, HeError> {
        decode(bytes, 0)
    }
}

impl SubsetSum for ElGamal {
    /// Refuses bounds whose sums could not be decrypted (see [`MAX_GIANT_BITS`]).
    fn column_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        check_range(bounds.max_sum, pk.max_table_bits)?;
        Ok(bounds.items)
    }

    fn sum_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        check_range(bounds.max_sum, pk.max_table_bits)?;
        Ok(1)
    }

    fn encrypt_column(
        pk: &PublicKey,
        sk: &SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        Self::encrypt_each(pk, sk, bounds, values, rng)
    }

    /// Only the selected ciphertexts are decoded (validated); the others are not read.
    fn sum_selected(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        let partial = Self::partial_sum(pk, bounds, column, selected)?;
        Self::finish_sum(pk, bounds, &partial, rng)
    }

    fn decrypt_sum(sk: &SecretKey, bounds: &ColumnBounds, sum: &[u8]) -> Result<u128, HeError> {
        packed_count(sum.len(), CIPHERTEXT_LEN, Some(1))?;
        let c = decode(sum, 0)?;
        discrete_log(&sk.message_point(&c), bounds.max_sum, sk.pk.max_table_bits)
    }

    fn encrypt_each(
        pk: &PublicKey,
        _sk: &SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        check_range(bounds.max_sum, pk.max_table_bits)?;
        check_values(bounds, values)?;
        let forks = rng.fork_many(values.len().div_ceil(RNG_CHUNK));
        let mut out = vec![0u8; values.len() * CIPHERTEXT_LEN];
        out.par_chunks_mut(RNG_CHUNK * CIPHERTEXT_LEN)
            .zip(values.par_chunks(RNG_CHUNK))
            .zip(forks.into_par_iter())
            .for_each(|((buf, vals), mut r)| {
                for (&v, slot) in vals.iter().zip(buf.chunks_mut(CIPHERTEXT_LEN)) {
                    encode(&pk.encrypt_scalar(&Scalar::from(v), &mut r), slot);
                }
            });
        Ok(out)
    }

    fn mask_each(
        pk: &PublicKey,
        column: &[u8],
        rng: &mut SessionRng,
    ) -> Result<(Vec<u8>, Vec<Mask>), HeError> {
        let count = packed_count(column.len(), CIPHERTEXT_LEN, None)?;
        let forks = rng.fork_many(count.div_ceil(RNG_CHUNK));
        let mut out = vec![0u8; column.len()];
        let masks: Vec<Vec<Mask>> = out
            .par_chunks_mut(RNG_CHUNK * CIPHERTEXT_LEN)
            .zip(column.par_chunks(RNG_CHUNK * CIPHERTEXT_LEN))
            .zip(forks.into_par_iter())
            .enumerate()
            .map(|(ci, ((dst, src), mut r))| {
                let mut masks = Vec::with_capacity(RNG_CHUNK);
                for (i, (d, s)) in dst
                    .chunks_mut(CIPHERTEXT_LEN)
                    .zip(src.chunks(CIPHERTEXT_LEN))
                    .enumerate()
                {
                    let c = decode(s, ci * RNG_CHUNK + i)?;
                    let mut rj = random_scalar(&mut r);
                    encode(&(c + pk.encrypt_scalar(&rj, &mut r)), d);
                    masks.push(scalar_to_mask(&rj));
                    rj.zeroize();
                }
                Ok(masks)
            })
            .collect::<Result<_, HeError>>()?;
        Ok((out, masks.into_iter().flatten().collect()))
    }

    /// Returns `compress(sum_selected (c2 - x c1)) = compress((S + R) G)`, 32 bytes.
    fn open_masked_sum(
        sk: &SecretKey,
        masked: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError> {
        let count = packed_count(masked.len(), CIPHERTEXT_LEN, None)?;
        check_selection(selected, count)?;
        let cts = decode_selected(masked, selected)?;
        let sum = sum_cts(&cts);
        Ok(sk.message_point(&sum).compress().as_bytes().to_vec())
    }

    fn unmask_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        opened: &[u8],
        masks: &[Mask],
        selected: &[usize],
    ) -> Result<u128, HeError> {
        let bad = |reason: &str| HeError::InvalidCiphertext {
            index: 0,
            reason: reason.to_string(),
        };
        if opened.len() != 32 {
            return Err(bad("opened sum has the wrong length"));
        }
        let point = CompressedRistretto::from_slice(opened)
            .ok()
            .and_then(|c| c.decompress())
            .ok_or_else(|| bad("opened sum is not a canonical ristretto255 encoding"))?;
        check_selection(selected, masks.len())?;
        let mut r = Scalar::ZERO;
        for &i in selected {
            r += mask_to_scalar(&masks[i], i)?;
        }
        let target = point - &r * RISTRETTO_BASEPOINT_TABLE;
        r.zeroize();
        discrete_log(&target, bounds.max_sum, pk.max_table_bits)
    }
}

/// A partial is the plain sum of the selected ciphertexts (the identity pair when none
/// is selected); finishing adds a fresh encryption of zero.
impl PartialSums for ElGamal {
    fn partial_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError> {
        packed_count(
            column.len(),
            CIPHERTEXT_LEN,
            Some(Self::column_ciphertexts(pk, bounds)?),
        )?;
        check_selection(selected, bounds.items)?;
        let cts = decode_selected(column, selected)?;
        Ok(encoded(&sum_cts(&cts)))
    }

    fn add_partials(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        a: &[u8],
        b: &[u8],
    ) -> Result<Vec<u8>, HeError> {
        check_range(bounds.max_sum, pk.max_table_bits)?;
        Ok(encoded(&(decode_points(a, 0)? + decode_points(b, 1)?)))
    }

    fn finish_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        partial: &[u8],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        check_range(bounds.max_sum, pk.max_table_bits)?;
        let sum = decode_points(partial, 0)? + pk.encrypt_scalar(&Scalar::ZERO, rng);
        Ok(encoded(&sum))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ahe::conformance;

    #[test]
    fn conformance_default() {
        conformance::run_all::<ElGamal>(&Params::default());
    }

    #[test]
    fn partial_sums_combine_across_columns() {
        conformance::partial_sums::<ElGamal>(&Params::default());
    }

    #[test]
    fn bsgs_boundaries() {
        for bits in [1u32, 3, 4] {
            for max in [0u64, 1, 2, 15, 16, 17, 100, 255, 256] {
                for m in 0..=max.min(40) {
                    let p = &Scalar::from(m) * RISTRETTO_BASEPOINT_TABLE;
                    assert_eq!(bsgs(&p, max, bits), Some(m), "m {m} max {max} bits {bits}");
                }
                let p = &Scalar::from(max + 1) * RISTRETTO_BASEPOINT_TABLE;
                assert_eq!(bsgs(&p, max, bits), None);
                let p = &Scalar::from(max) * RISTRETTO_BASEPOINT_TABLE;
                assert_eq!(bsgs(&p, max, bits), Some(max));
            }
        }
        let m = (1u64 << 36) + 12345;
        let p = &Scalar::from(m) * RISTRETTO_BASEPOINT_TABLE;
        assert_eq!(bsgs(&p, 1 << 37, 20), Some(m));
    }
}
