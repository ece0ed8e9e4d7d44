//! Ring-LWE (BFV-style) additive encryption of value columns, coefficient-encoded.
//!
//! Ion et al. 2020 (App. B.3, and Sec. 5.1 for the deployed sizes) put one value in each
//! coefficient of an RLWE plaintext; the party without the key moves the selected values
//! to one designated coefficient by multiplying with monomials, adds, masks every other
//! coefficient and drowns the noise before sending the sum back. This module does that
//! on fhe.rs's polynomial layer (`crate::bfv`, `crate::bfv::coeff`), with parameters
//! that meet 128-bit security by the homomorphic-encryption standard: the paper's
//! `n = 2048` with an 80-bit `q` does not (the standard allows 54 bits there).
//!
//! # Scheme
//!
//! Ring `R_q = Z_q[x]/(x^n + 1)`, `q` a product of NTT-friendly primes, plaintext
//! modulus `t = 2^plain_bits`, `Δ = floor(q / t)`. Secret `s` and encryption randomness
//! `u` are ternary (the standard's distribution for its table); errors `e` are fhe.rs's
//! centred binomial of variance 10 (`σ ≈ 3.2`), so every error coefficient is in
//! `[-20, 20]` ([`ERROR_BOUND`]) and every noise bound below is a worst case, not a
//! tail bound. Phase of `(c0, c1)`: `c0 + c1·s = Δ·m + E`.
//!
//! * Public key: `a = PRG(seed)` (fhe.rs's seeded expansion) and `b = e - a·s`; it is
//!   encoded with its own parameters (degree, prime sizes, `t`), and only the seed and
//!   `b` travel.
//! * Key owner (`encrypt_column`): secret-key encryption `(e - a_c·s + Δ·m, a_c)` with
//!   `a_c = PRG(seed_c)`: only `seed_c` and `c0` are sent, half the bytes.
//! * Anyone ([`AdditiveHe::encrypt`], re-randomization, the flood): public-key
//!   encryption `(b·u + e1 + Δ·m, a·u + e2)`, phase noise `e·u + e1 + e2·s`, at most
//!   `W_pk = (2n + 1)·20` per coefficient.
//!
//! # Subset sums
//!
//! **Layout.** With `L` limbs per value (below), item `i` sits in half-ciphertext
//! `i / (n / L)` at slot `p = i mod (n / L)`, its limb `j` in coefficient `p·L + j`.
//! `L = 1` whenever `max_sum < t` (the paper's deployed bounds: 32-bit sums); otherwise
//! values are split into `w`-bit limbs, `w` the largest width with
//! `items·(2^w - 1) < t`, and `L = ceil(bits(max_value) / w)` (privset's default bound
//! `max_sum = max_value·items`). Every limb sum is then below `t`, so nothing wraps;
//! the sum is `Σ_j S_j·2^(w·j)` after decryption. Limbs keep one key (56 KB) for every
//! bound; [`Params::for_columns`] instead derives the parameters from the public bounds:
//! `t` just above `max_sum`, the smallest `q` that passes the checks below, `n = 8192`
//! when `n = 4096` cannot hold the sums in one limb. At 100,000 items: 12.65 bytes a
//! value for sums below 2^32 (14.52 at the default) and 16.06 for privset's default
//! bound (27.92 with two limbs), the latter with a 115 KB public key.
//!
//! **Evaluation** (`sum_selected`, the party without the key). For each column
//! ciphertext `c` with selected slots `S_c`, `m_c = Σ_{p ∈ S_c} x^{-p·L}` with
//! `x^{-k} = -x^{n-k}` lifted with the centred representative (`-1`, not `t - 1`), and
//! `result = Σ_c ct_c · m_c`: one NTT-domain product per ciphertext, no Galois key.
//! Coefficient `j < L` of the product's plaintext is exactly `S_j`: the monomial
//! `x^{-p·L}` maps coefficient `p·L + j` to `j` with sign `+`, and a coefficient
//! `k < p·L` to `n - p·L + k ≥ L` (slots end at `n - L`) with sign `-`. Its phase is
//! `Δ·S_j + E_sel` with `|E_sel| ≤ |S|·20 ≤ items·20` (each selected item adds one
//! error coefficient of its ciphertext, times `±1`).
//!
//! **What the owner may learn.** Then: (1) a fresh public-key encryption of zero is
//! added, so `c1` contains `a·u + e2`, pseudorandom under RLWE; (2) every coefficient
//! `k ≥ L` of `c0` gets an independent uniform value modulo `q` (not only modulo `t`:
//! that hides the noise of those coefficients too, so only the `L` sum coefficients need
//! a flood); (3) every coefficient `j < L` of `c0` gets a flood `F_j` uniform in
//! `[-B, B]`, `B = 2^40 · L · W`, `W = items·20 + W_pk`. The owner's view is the phase:
//! coefficients `≥ L` uniform, and `Δ·S_j + (E_j + F_j)` with `|E_j| ≤ W`; shifting a
//! uniform variable on `2B + 1` integers by at most `W` moves it by at most
//! `W / (2B + 1)` in statistical distance, so over the `L` coefficients the view is within
//! `L·W / (2B + 1) < 2^-41` of `Δ·S_j + F_j`, which a simulator draws from `S` alone
//! (and with the phase independent of `u, e2`, `c1` is uniform by RLWE). Statistical
//! distance `2^-40` or better, as [`STAT_SECURITY`] requires.
//!
//! **Correctness.** Decoding `round(t·x / q) mod t` of `x = Δ·S_j + E` is exact when
//! `|t·E - S_j·(q mod t)| < q/2`; with `S_j < t` it suffices that
//! `t·(W + B) + t^2 < q/2`. [`Rlwe::layout`] checks exactly this (integer arithmetic)
//! for the bounds' item count and refuses the bounds with [`HeError::Parameters`]
//! otherwise. At the default parameters (`n = 4096`, `q` of 109 bits from primes of 55
//! and 54 bits, `t = 2^42`): at `2^20` items `W = 2^20·20 + 8193·20 ≈ 2^24.33`; with one
//! limb `B ≈ 2^64.33` and `t·(W + B) ≈ 2^106.33 < q/2 ≈ 2^108`; with two limbs
//! (privset's default 52-bit bound, 22-bit limbs) `B ≈ 2^65.33`, `2^107.33 < 2^108`.
//! The largest column is about 3.3 million items with one limb, 1.6 million with two.
//!
//! **No modulus switch.** The flood must sit `2^40` above the selection noise and
//! below `q / 2t` at whatever level it is added; after a switch to one 55-bit prime
//! `q'/2t` is `2^12`, so the result stays at the full modulus (one ciphertext of
//! 111,680 bytes at the default parameters).
//!
//! # Encodings
//!
//! Polynomials travel in power basis, residues packed at each prime's bit width and
//! checked below the prime on receipt ([`crate::bfv::coeff::PolyCodec`]). A full
//! ciphertext is `c0 ‖ c1 ‖ 64 zero bytes` ([`Params::ciphertext_len`]; the zeros make
//! it exactly two seeded halves wide); a column *unit* of the same width holds two
//! owner ciphertexts `seed ‖ c0`, the second half all zeros when the column has an odd
//! number of them. At the default parameters a half is 55,840 bytes for 4096 values:
//! 13.6 bytes a value with one limb.
//!
//! # Reverse variant
//!
//! Not offered: Ion et al. App. G shuffles items individually, so every value would need
//! its own ciphertext: 111,680 bytes an item at these parameters (11 GB at 100,000
//! items, against 768 bytes an item for Paillier at the deployed size). The four
//! reverse-variant methods return [`HeError::Parameters`] saying so.
//!
//! # Caveats
//! The NTT arithmetic is fhe.rs's (constant time unless variable time is enabled, which
//! this module never does on secret data); lifting the few decrypted coefficients uses
//! GMP through `rug`, which is not constant time, on values the owner learns anyway
//! (the sum and flooded noise).

use std::sync::Arc;

use fhe_math::rq::traits::TryConvertFrom;
use fhe_math::rq::{Context, Poly, Representation};
use rayon::prelude::*;
use rug::Integer;
use zeroize::Zeroize;

use super::paillier::{check_selection, check_values, packed_count, random_below, wipe};
use super::{AdditiveHe, ColumnBounds, HeError, HeId, Mask, SubsetSum};
use crate::bfv::coeff::{self, Crt, PolyCodec};
use crate::bfv::{BfvError, HeParams};
use crate::rng::SessionRng;

/// Statistical distance of the owner's view of a sum from one simulated from the sum
/// alone: at most `2^-STAT_SECURITY`.
pub const STAT_SECURITY: u32 = 40;
/// Variance of fhe.rs's centred binomial error (σ ≈ 3.2, the standard's).
pub const ERROR_VARIANCE: usize = 10;
/// Largest absolute value of an error coefficient: the centred binomial of variance `v`
/// is a sum of `2v` differences of coin flips.
pub const ERROR_BOUND: u128 = 2 * ERROR_VARIANCE as u128;
/// Bytes of the seed that expands to a ciphertext's (or the key's) `a`.
pub const SEED_LEN: usize = 32;
/// [`AdditiveHe`] plaintexts (`u64`) take two coefficients of 32 bits each.
const SCALAR_LIMB_BITS: u32 = 32;
const FORMAT_VERSION: u8 = 1;
/// `AdditiveHe::rerandomize` floods a noise of up to this many fresh public-key
/// encryptions (so a sum of two fresh ciphertexts is hidden).
const REFRESH_FRESH: u128 = 2;

const REVERSE_UNSUPPORTED: &str = "the RLWE backend does not offer the reverse variant \
    (Ion et al. 2020, App. G): it shuffles items one by one, so every value would need its \
    own 111,680-byte ciphertext; use paillier or elgamal for it";

/// Parameters, carried in the public key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Ring degree `n`: 4096 or 8192 (a power of two in the standard's table).
    pub degree: usize,
    /// Bit sizes of the ciphertext primes (fhe.rs generates the largest NTT-friendly
    /// prime of each size); their sum is checked against the standard's 128-bit table.
    pub moduli_bits: Vec<usize>,
    /// The plaintext modulus is `t = 2^plain_bits`; 8..=60.
    pub plain_bits: u32,
}

impl Default for Params {
    /// `n = 4096`, `q` of 109 bits (the 128-bit maximum), `t = 2^42`: one-limb sums below
    /// 2^42, up to about 3.3 million items (module docs, "Correctness").
    fn default() -> Self {
        Params {
            degree: 4096,
            moduli_bits: vec![55, 54],
            plain_bits: 42,
        }
    }
}

impl Params {
    /// The same parameters in the BFV layer's terms.
    pub fn he_params(&self) -> HeParams {
        HeParams {
            degree: self.degree,
            plain_modulus: 1u64 << self.plain_bits.min(62),
            moduli_bits: self.moduli_bits.clone(),
        }
    }

    /// Ranges of the fields and 128-bit security by the standard's table.
    pub fn validate(&self) -> Result<(), HeError> {
        if !(8..=60).contains(&self.plain_bits) {
            return Err(HeError::Parameters(format!(
                "RLWE plain_bits must be in 8..=60, got {}",
                self.plain_bits
            )));
        }
        if !matches!(self.degree, 4096 | 8192) {
            return Err(HeError::Parameters(format!(
                "RLWE ring degree must be 4096 or 8192, got {}",
                self.degree
            )));
        }
        self.he_params().check_ring().map_err(bfv_error)?;
        // fhe.rs scales by -t^-1 mod each prime and takes t as already reduced: every
        // prime (at least 2^(bits - 1)) must lie above t.
        if let Some(&small) = self
            .moduli_bits
            .iter()
            .find(|&&b| b < self.plain_bits as usize + 2)
        {
            return Err(HeError::Parameters(format!(
                "a {small}-bit ciphertext prime does not lie above the plaintext modulus \
                 2^{} (each needs at least {} bits)",
                self.plain_bits,
                self.plain_bits + 2
            )));
        }
        let q_bits: usize = self.moduli_bits.iter().sum();
        // A flood 2^40 above a fresh encryption's noise (about 2^17) must fit under q / 2t;
        // the column's own noise is checked per bounds by `Rlwe::layout`.
        if q_bits < self.plain_bits as usize + STAT_SECURITY as usize + 20 {
            return Err(HeError::Parameters(format!(
                "a {q_bits}-bit ciphertext modulus leaves no room for a {}-bit plaintext and \
                 a {STAT_SECURITY}-bit flood",
                self.plain_bits
            )));
        }
        Ok(())
    }

    /// The parameters with the smallest columns for these bounds (both parties derive
    /// the same from the public bounds): `t` just above the largest `max_sum` and the
    /// smallest `q` that passes [`Rlwe::layout`] for every column in one limb, at
    /// `n = 4096` if it holds there, else at `n = 8192`; sums beyond 2^60 fall back to
    /// limbs at [`Params::default`]. At 100,000 items of 32-bit values that is
    /// `n = 4096`, 95-bit `q`, `t = 2^32` for sums below 2^32 (12.65 bytes a value against
    /// 14.52 at the default), and `n = 8192`, 112-bit `q`, `t = 2^49` for
    /// `max_sum = max_value · items` (16.06 against 27.92 with two limbs at the default;
    /// the public key is then 115 KB instead of 56 KB). Column figures include the
    /// padding half of an odd column.
    pub fn for_columns(columns: &[ColumnBounds]) -> Result<Params, HeError> {
        let max_sum = columns.iter().map(|b| b.max_sum).max().unwrap_or(0);
        let plain_bits = (128 - max_sum.leading_zeros()).clamp(8, 60);
        let items = columns.iter().map(|b| b.items).max().unwrap_or(0).max(1);
        for degree in [4096, 8192] {
            if let Some(p) = smallest_modulus(degree, plain_bits, items, columns)? {
                return Ok(p);
            }
        }
        let default = Params::default();
        if fits(&default, columns, false)? {
            return Ok(default);
        }
        Err(HeError::Parameters(format!(
            "no 128-bit RLWE parameters up to n = 8192 hold sums of {items} items below \
             2^{plain_bits}: use fewer items per column (buckets)"
        )))
    }

    /// Bytes of one encoded polynomial (fhe.rs's primes have exactly the bit sizes asked).
    pub fn poly_len(&self) -> usize {
        self.moduli_bits
            .iter()
            .map(|&b| (self.degree * b).div_ceil(8))
            .sum()
    }

    /// Bytes of one encoded ciphertext, and of one column unit (two owner ciphertexts):
    /// what the protocol needs before it has the public key.
    pub fn ciphertext_len(&self) -> usize {
        2 * (SEED_LEN + self.poly_len())
    }

    /// Bytes of an encoded public key.
    pub fn public_key_len(&self) -> usize {
        self.header().len() + SEED_LEN + self.poly_len()
    }

    /// `version ‖ log2(n) ‖ plain_bits ‖ number of primes ‖ their sizes`.
    fn header(&self) -> Vec<u8> {
        let mut h = vec![
            FORMAT_VERSION,
            self.degree.trailing_zeros() as u8,
            self.plain_bits as u8,
            self.moduli_bits.len() as u8,
        ];
        h.extend(self.moduli_bits.iter().map(|&b| b as u8));
        h
    }
}

fn bfv_error(e: BfvError) -> HeError {
    HeError::Parameters(e.to_string())
}

fn math_error(e: fhe_math::Error) -> HeError {
    HeError::Parameters(format!("polynomial arithmetic: {e}"))
}

/// The RLWE backend (see the module docs).
pub struct Rlwe;

/// Public key `(a = PRG(seed), b = e - a·s)` with the ring context and CRT constants.
#[derive(Clone)]
pub struct PublicKey {
    params: Params,
    ctx: Arc<Context>,
    codec: PolyCodec,
    crt: Crt,
    seed: [u8; SEED_LEN],
    /// NTT form.
    a: Poly,
    /// NTT form.
    b: Poly,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rlwe::PublicKey {{ {:?} }}", self.params)
    }
}

/// The ring context of `params` (prime generation and NTT tables are fhe.rs's).
fn context(params: &Params) -> Result<Arc<Context>, HeError> {
    params.validate()?;
    let par = params.he_params().build_coefficient().map_err(bfv_error)?;
    let ctx = par
        .context_at_level(0)
        .map_err(|e| bfv_error(e.into()))?
        .clone();
    let codec = PolyCodec::new(&ctx);
    if codec.len() != params.poly_len() {
        return Err(HeError::Parameters(
            "fhe.rs generated primes of other sizes than asked".into(),
        ));
    }
    Ok(ctx)
}

/// The smallest `q` (at most the 128-bit maximum for `degree`) under which every column
/// sums in one limb with `t = 2^plain_bits`; primes of at most 60 bits, sizes balanced.
fn smallest_modulus(
    degree: usize,
    plain_bits: u32,
    items: usize,
    columns: &[ColumnBounds],
) -> Result<Option<Params>, HeError> {
    let noise = items as u128 * ERROR_BOUND + public_key_noise(degree);
    let noise_bits = (128 - noise.leading_zeros()) as usize;
    let max_bits = crate::bfv::max_modulus_bits(degree).expect("in the table");
    // t · 2^40 · W < q / 2 needs about this many bits; the loop finds the exact minimum.
    let mut q_bits = plain_bits as usize + STAT_SECURITY as usize + noise_bits;
    while q_bits <= max_bits {
        let primes = q_bits.div_ceil(60);
        let moduli_bits = (0..primes)
            .map(|i| q_bits / primes + usize::from(i < q_bits % primes))
            .collect();
        let params = Params {
            degree,
            moduli_bits,
            plain_bits,
        };
        if params.validate().is_ok() && fits(&params, columns, true)? {
            return Ok(Some(params));
        }
        q_bits += 1;
    }
    Ok(None)
}

/// Whether every column has a layout under `params` (in one limb if `one_limb`).
fn fits(params: &Params, columns: &[ColumnBounds], one_limb: bool) -> Result<bool, HeError> {
    let ctx = context(params)?;
    let q = Crt::new(&ctx, 1u64 << params.plain_bits).modulus().clone();
    Ok(columns
        .iter()
        .all(|b| layout(params, &q, b).is_ok_and(|l| !one_limb || l.limbs == 1)))
}

fn to_ntt(mut p: Poly) -> Poly {
    p.change_representation(Representation::Ntt);
    p
}

fn to_power(mut p: Poly) -> Poly {
    p.change_representation(Representation::PowerBasis);
    p
}

impl PublicKey {
    fn new(params: Params, ctx: Arc<Context>, seed: [u8; SEED_LEN], b: Poly) -> Self {
        let a = Poly::random_from_seed(&ctx, Representation::Ntt, seed);
        PublicKey {
            codec: PolyCodec::new(&ctx),
            crt: Crt::new(&ctx, 1u64 << params.plain_bits),
            params,
            ctx,
            seed,
            a,
            b,
        }
    }

    /// The parameters this key was made for.
    pub fn params(&self) -> &Params {
        &self.params
    }

    fn poly_len(&self) -> usize {
        self.codec.len()
    }

    fn half_len(&self) -> usize {
        SEED_LEN + self.poly_len()
    }

    fn ct_len(&self) -> usize {
        2 * self.half_len()
    }

    fn small(&self, rng: &mut SessionRng) -> Result<Poly, HeError> {
        Poly::small(&self.ctx, Representation::Ntt, ERROR_VARIANCE, rng).map_err(math_error)
    }

    /// A fresh public-key encryption of zero, `(b·u + e1, a·u + e2)`, NTT form.
    fn zero_encryption(&self, rng: &mut SessionRng) -> Result<Ciphertext, HeError> {
        let mut u = coeff::ternary(&self.ctx, rng).map_err(bfv_error)?;
        let mut e1 = self.small(rng)?;
        let mut e2 = self.small(rng)?;
        let mut c0 = &self.b * &u;
        c0 += &e1;
        let mut c1 = &self.a * &u;
        c1 += &e2;
        u.zeroize();
        e1.zeroize();
        e2.zeroize();
        Ok(Ciphertext { c0, c1 })
    }

    /// Public-key encryption of the plaintext coefficients `m` (each below `t`).
    fn encrypt_coefficients(&self, m: &[u64], rng: &mut SessionRng) -> Result<Ciphertext, HeError> {
        let mut c = self.zero_encryption(rng)?;
        c.c0 += &to_ntt(self.crt.scaled(&self.ctx, m).map_err(bfv_error)?);
        Ok(c)
    }

    /// Masks coefficients `≥ open` of `c0` with uniform values mod `q` and floods
    /// coefficients `< open` with uniform values in `[-bound, bound]` (module docs).
    fn mask_and_flood(
        &self,
        c: &mut Ciphertext,
        open: usize,
        bound: u128,
        rng: &mut SessionRng,
    ) -> Result<(), HeError> {
        let mask = coeff::uniform_from(&self.ctx, open, rng).map_err(bfv_error)?;
        let width = Integer::from(bound) * 2u32 + 1u32;
        let mut floods: Vec<Integer> = (0..open)
            .map(|_| random_below(rng, &width) - Integer::from(bound))
            .collect();
        let flood = self.crt.from_integers(&self.ctx, &floods);
        floods.iter_mut().for_each(wipe);
        let mut flood = to_ntt(flood.map_err(bfv_error)?);
        c.c0 += &to_ntt(mask);
        c.c0 += &flood;
        flood.zeroize();
        Ok(())
    }

    fn write_full(&self, c: &Ciphertext, out: &mut [u8]) {
        let p = self.poly_len();
        self.codec.write(&c.c0, &mut out[..p]);
        self.codec.write(&c.c1, &mut out[p..2 * p]);
        out[2 * p..].fill(0);
    }

    fn read_full(&self, bytes: &[u8], index: usize) -> Result<Ciphertext, HeError> {
        let bad = |reason: String| HeError::InvalidCiphertext { index, reason };
        if bytes.len() != self.ct_len() {
            return Err(bad(format!(
                "{} bytes where a ciphertext takes {}",
                bytes.len(),
                self.ct_len()
            )));
        }
        let p = self.poly_len();
        if bytes[2 * p..].iter().any(|&x| x != 0) {
            return Err(bad("the reserved trailing bytes are not zero".into()));
        }
        let c0 = self
            .codec
            .read(&bytes[..p])
            .map_err(|e| bad(e.to_string()))?;
        let c1 = self
            .codec
            .read(&bytes[p..2 * p])
            .map_err(|e| bad(e.to_string()))?;
        if bytes[p..2 * p].iter().all(|&x| x == 0) {
            return Err(bad(
                "c1 is zero (the plaintext would be in the clear)".into()
            ));
        }
        Ok(Ciphertext {
            c0: to_ntt(c0),
            c1: to_ntt(c1),
        })
    }

    /// An owner ciphertext `seed ‖ c0`, expanded to `(c0, PRG(seed))`.
    fn read_half(&self, bytes: &[u8], unit: usize) -> Result<Ciphertext, HeError> {
        let seed: [u8; SEED_LEN] = bytes[..SEED_LEN].try_into().expect("half length");
        let c0 = self
            .codec
            .read(&bytes[SEED_LEN..])
            .map_err(|e| HeError::InvalidCiphertext {
                index: unit,
                reason: e.to_string(),
            })?;
        Ok(Ciphertext {
            c0: to_ntt(c0),
            c1: Poly::random_from_seed(&self.ctx, Representation::Ntt, seed),
        })
    }

    /// The constant polynomial `k`, NTT form.
    fn constant(&self, k: u64) -> Result<Poly, HeError> {
        let p = Poly::try_convert_from(&[k][..], &self.ctx, false, Representation::PowerBasis)
            .map_err(math_error)?;
        Ok(to_ntt(p))
    }
}

/// Secret key `s` (ternary, NTT form); zeroized on drop, not `Clone`, `Debug` elided.
pub struct SecretKey {
    pk: PublicKey,
    s: Poly,
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rlwe::SecretKey { .. }")
    }
}

impl SecretKey {
    /// The matching public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }

    /// `c0 + c1·s` in power basis.
    fn phase(&self, c: &Ciphertext) -> Poly {
        let mut p = &c.c1 * &self.s;
        p += &c.c0;
        to_power(p)
    }

    /// The first `count` plaintext coefficients of `c`.
    fn decrypt_coefficients(&self, c: &Ciphertext, count: usize) -> Vec<u64> {
        let mut phase = self.phase(c);
        let out = (0..count)
            .map(|k| self.pk.crt.decode(&phase, k, self.pk.params.plain_bits))
            .collect();
        phase.zeroize();
        out
    }

    /// Secret-key encryption `(e - a·s + Δ·m, a = PRG(seed))`, written as `seed ‖ c0`.
    fn encrypt_half(&self, m: &[u64], rng: &mut SessionRng, out: &mut [u8]) -> Result<(), HeError> {
        let pk = &self.pk;
        let mut seed = [0u8; SEED_LEN];
        rng.fill(&mut seed);
        let a = Poly::random_from_seed(&pk.ctx, Representation::Ntt, seed);
        let mut c0 = pk.small(rng)?;
        let mut a_s = &a * &self.s;
        c0 -= &a_s;
        a_s.zeroize();
        let mut dm = to_ntt(pk.crt.scaled(&pk.ctx, m).map_err(bfv_error)?);
        c0 += &dm;
        dm.zeroize();
        out[..SEED_LEN].copy_from_slice(&seed);
        pk.codec.write(&c0, &mut out[SEED_LEN..]);
        Ok(())
    }
}

/// `(c0, c1)` in NTT form, at the full modulus.
#[derive(Clone)]
pub struct Ciphertext {
    c0: Poly,
    c1: Poly,
}

impl std::fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rlwe::Ciphertext(..)")
    }
}

impl Ciphertext {
    fn add_assign(&mut self, o: &Ciphertext) {
        self.c0 += &o.c0;
        self.c1 += &o.c1;
    }
}

/// How a column is laid out and how much noise its sums may carry (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Limbs per value (coefficients per item).
    pub limbs: usize,
    /// Bits per limb (the whole value when `limbs == 1`).
    pub limb_bits: u32,
    /// Items per owner ciphertext: `n / limbs`.
    pub slots: usize,
    /// Owner ciphertexts (`seed ‖ c0` halves).
    pub halves: usize,
    /// Column units of [`Params::ciphertext_len`] bytes (two halves each).
    pub units: usize,
    /// `W`: worst-case noise of a sum coefficient before the flood.
    pub noise: u128,
    /// `B`: the flood is uniform in `[-B, B]`, `B = 2^40 · limbs · W`.
    pub flood: u128,
}

/// Worst-case noise of a fresh public-key encryption: `(2n + 1)·20` (module docs).
pub fn public_key_noise(degree: usize) -> u128 {
    (2 * degree as u128 + 1) * ERROR_BOUND
}

/// The flood that hides a noise of at most `noise` in each of `open` coefficients.
pub fn flood_bound(noise: u128, open: usize) -> u128 {
    (noise << STAT_SECURITY) * open as u128
}

/// Upper bound on the statistical distance of the flooded view from the simulated one:
/// `open · noise / (2·flood + 1)`, as a fraction `(numerator, denominator)`.
pub fn flood_distance(noise: u128, flood: u128, open: usize) -> (u128, u128) {
    (open as u128 * noise, 2 * flood + 1)
}

/// Whether a coefficient with noise up to `noise + flood` and value below `t` always
/// decodes: `t·(noise + flood) + t^2 < q / 2`.
pub fn decodes(q: &Integer, plain_bits: u32, noise: u128, flood: u128) -> bool {
    let t = Integer::from(1) << plain_bits;
    let lhs = &t * (Integer::from(noise) + flood) + Integer::from(&t * &t);
    lhs < Integer::from(q >> 1)
}

/// Limb count and width: one limb when sums fit `t`, else the widest limb whose sum over
/// `items` stays below `t`.
fn limbs(params: &Params, bounds: &ColumnBounds) -> Result<(usize, u32), HeError> {
    let t = 1u128 << params.plain_bits;
    if bounds.max_sum < t {
        return Ok((1, params.plain_bits));
    }
    let items = bounds.items.max(1) as u128;
    let mut w = 0u32;
    while w < 63 && items * ((1u128 << (w + 1)) - 1) < t {
        w += 1;
    }
    if w == 0 {
        return Err(HeError::Parameters(format!(
            "{} items cannot be summed below t = 2^{} even one bit at a time",
            bounds.items, params.plain_bits
        )));
    }
    let value_bits = 64 - bounds.max_value.leading_zeros();
    Ok((value_bits.div_ceil(w).max(1) as usize, w))
}

impl Rlwe {
    /// Upper bound of the bytes of a column with these bounds under `params` (the exact
    /// count needs the key's modulus, which also decides whether the bounds are
    /// accepted): what a receiver may expect before the key arrives.
    pub fn max_column_len(params: &Params, bounds: &ColumnBounds) -> usize {
        let limbs = limbs(params, bounds)
            .map_or(1, |(l, _)| l)
            .clamp(1, params.degree);
        let slots = (params.degree / limbs).max(1);
        bounds
            .items
            .div_ceil(slots)
            .div_ceil(2)
            .saturating_mul(params.ciphertext_len())
    }

    /// The column layout for `bounds`, or [`HeError::Parameters`] if a sum at these
    /// bounds could fail to decrypt (module docs, "Correctness").
    pub fn layout(pk: &PublicKey, bounds: &ColumnBounds) -> Result<Layout, HeError> {
        layout(&pk.params, pk.crt.modulus(), bounds)
    }

    /// All plaintext coefficients of `c` (tests check a sum's masked coefficients).
    #[cfg(test)]
    fn decrypt_all(sk: &SecretKey, c: &[u8]) -> Result<Vec<u64>, HeError> {
        let ct = sk.pk.read_full(c, 0)?;
        Ok(sk.decrypt_coefficients(&ct, sk.pk.params.degree))
    }

    /// The ciphertext modulus `q` of a key.
    pub fn modulus(pk: &PublicKey) -> &Integer {
        pk.crt.modulus()
    }
}

fn layout(params: &Params, q: &Integer, bounds: &ColumnBounds) -> Result<Layout, HeError> {
    let (limbs, limb_bits) = limbs(params, bounds)?;
    if limbs > params.degree {
        return Err(HeError::Parameters("more limbs than coefficients".into()));
    }
    let items = bounds.items.max(1) as u128;
    let noise = items * ERROR_BOUND + public_key_noise(params.degree);
    let flood = flood_bound(noise, limbs);
    if !decodes(q, params.plain_bits, noise, flood) {
        return Err(HeError::Parameters(format!(
            "a sum over {} items ({limbs} limb(s) of {limb_bits} bits) could fail to decrypt \
             under a {}-bit modulus with t = 2^{} and a {STAT_SECURITY}-bit flood: use fewer \
             items per column (buckets) or a smaller max_sum",
            bounds.items,
            q.significant_bits(),
            params.plain_bits
        )));
    }
    let slots = params.degree / limbs;
    let halves = bounds.items.div_ceil(slots);
    Ok(Layout {
        limbs,
        limb_bits,
        slots,
        halves,
        units: halves.div_ceil(2),
        noise,
        flood,
    })
}

/// The plaintext coefficients of one owner ciphertext: limb `j` of the `p`-th value in
/// coefficient `p·limbs + j`.
fn half_plaintext(values: &[u64], lay: &Layout, degree: usize) -> Vec<u64> {
    let mut m = vec![0u64; degree];
    for (p, &v) in values.iter().enumerate() {
        for j in 0..lay.limbs {
            m[p * lay.limbs + j] = if lay.limbs == 1 {
                v
            } else {
                (v >> (lay.limb_bits as usize * j)) & ((1u64 << lay.limb_bits) - 1)
            };
        }
    }
    m
}

/// `m_c = Σ_{p ∈ slots} x^{-p·limbs}` (centred: `x^{-k} = -x^{n-k}`), NTT form.
fn selector(pk: &PublicKey, slots: &[usize], limbs: usize) -> Result<Poly, HeError> {
    let n = pk.params.degree;
    let mut m = vec![0i64; n];
    for &p in slots {
        let pos = p * limbs;
        if pos == 0 {
            m[0] += 1;
        } else {
            m[n - pos] -= 1;
        }
    }
    let poly = Poly::try_convert_from(m.as_slice(), &pk.ctx, false, Representation::PowerBasis)
        .map_err(math_error)?;
    Ok(to_ntt(poly))
}

/// Checks that the padding half of an odd column is all zeros.
fn check_padding(pk: &PublicKey, lay: &Layout, column: &[u8]) -> Result<(), HeError> {
    if lay.halves.is_multiple_of(2) {
        return Ok(());
    }
    let h = pk.half_len();
    let pad = &column[lay.halves * h..(lay.halves + 1) * h];
    if pad.iter().any(|&b| b != 0) {
        return Err(HeError::InvalidCiphertext {
            index: lay.units - 1,
            reason: "the padding half of the last unit is not zero".into(),
        });
    }
    Ok(())
}

/// `Σ_c ct_c · m_c` over the halves with selected slots.
fn selected_product(
    pk: &PublicKey,
    lay: &Layout,
    column: &[u8],
    groups: &[Vec<usize>],
) -> Result<Ciphertext, HeError> {
    let h = pk.half_len();
    let zero = || Ciphertext {
        c0: Poly::zero(&pk.ctx, Representation::Ntt),
        c1: Poly::zero(&pk.ctx, Representation::Ntt),
    };
    groups
        .par_iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .map(|(c, g)| {
            let ct = pk.read_half(&column[c * h..(c + 1) * h], c / 2)?;
            let m = selector(pk, g, lay.limbs)?;
            Ok(Ciphertext {
                c0: &ct.c0 * &m,
                c1: &ct.c1 * &m,
            })
        })
        .try_reduce(zero, |mut a, b| {
            a.add_assign(&b);
            Ok(a)
        })
}

fn reverse_unsupported<T>() -> Result<T, HeError> {
    Err(HeError::Parameters(REVERSE_UNSUPPORTED.into()))
}

impl AdditiveHe for Rlwe {
    const ID: HeId = HeId::Rlwe;
    type Params = Params;
    type PublicKey = PublicKey;
    type SecretKey = SecretKey;
    type Ciphertext = Ciphertext;

    /// # Panics
    /// If `params` fail [`Params::validate`] (a local configuration error).
    fn keygen(params: &Params, rng: &mut SessionRng) -> (PublicKey, SecretKey) {
        let ctx = context(params).expect("invalid RLWE parameters");
        let s = coeff::ternary(&ctx, rng).expect("ternary secret");
        let mut seed = [0u8; SEED_LEN];
        rng.fill(&mut seed);
        let a = Poly::random_from_seed(&ctx, Representation::Ntt, seed);
        let mut b =
            Poly::small(&ctx, Representation::Ntt, ERROR_VARIANCE, rng).expect("variance in range");
        let mut a_s = &a * &s;
        b -= &a_s;
        a_s.zeroize();
        let pk = PublicKey::new(params.clone(), ctx, seed, b);
        let sk = SecretKey { pk: pk.clone(), s };
        (pk, sk)
    }

    /// Public-key encryption of `m` as two 32-bit coefficients.
    ///
    /// # Panics
    /// Never on valid keys (polynomial conversions of in-range values).
    fn encrypt(pk: &PublicKey, m: u64, rng: &mut SessionRng) -> Ciphertext {
        let limbs = [m & u32::MAX as u64, m >> SCALAR_LIMB_BITS];
        pk.encrypt_coefficients(&limbs, rng)
            .expect("encryption of in-range coefficients")
    }

    fn add(_pk: &PublicKey, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        let mut c = a.clone();
        c.add_assign(b);
        c
    }

    /// Multiplies the noise by `k` too: the result decrypts while `k` times the noise
    /// stays below `q / 2t` and every coefficient times `k` below `t`.
    fn mul_plain(pk: &PublicKey, c: &Ciphertext, k: u64) -> Ciphertext {
        let k = pk.constant(k).expect("a constant polynomial");
        Ciphertext {
            c0: &c.c0 * &k,
            c1: &c.c1 * &k,
        }
    }

    /// Adds a fresh public-key encryption of zero and floods the two value coefficients
    /// (hiding a noise of up to two fresh encryptions at `2^-40`); masks the others.
    fn rerandomize(pk: &PublicKey, c: &Ciphertext, rng: &mut SessionRng) -> Ciphertext {
        let noise = REFRESH_FRESH * public_key_noise(pk.params.degree);
        let mut out = c.clone();
        let fresh = pk.zero_encryption(rng).expect("encryption of zero");
        out.add_assign(&fresh);
        pk.mask_and_flood(&mut out, 2, flood_bound(noise, 2), rng)
            .expect("flood within the modulus");
        out
    }

    fn decrypt(sk: &SecretKey, c: &Ciphertext, max: u64) -> Result<u64, HeError> {
        let v = sk.decrypt_coefficients(c, 2);
        let m = v[0] as u128 + ((v[1] as u128) << SCALAR_LIMB_BITS);
        match u64::try_from(m) {
            Ok(m) if m <= max => Ok(m),
            _ => Err(HeError::OutOfRange {
                bound_bits: 64 - max.leading_zeros(),
            }),
        }
    }

    /// `version ‖ log2(n) ‖ plain_bits ‖ #primes ‖ prime sizes ‖ seed ‖ b`.
    fn encode_public_key(pk: &PublicKey) -> Vec<u8> {
        let mut out = pk.params.header();
        out.extend_from_slice(&pk.seed);
        let start = out.len();
        out.resize(start + pk.poly_len(), 0);
        pk.codec.write(&pk.b, &mut out[start..]);
        out
    }

    /// Checks the key's own parameters (version, degree, prime sizes, `t`) against the
    /// agreed `params` (which pass the 128-bit check), its length, and that `b` is
    /// canonical and not zero, before any polynomial is built from it.
    fn decode_public_key(bytes: &[u8], params: &Params) -> Result<PublicKey, HeError> {
        params.validate()?;
        let bad = |m: String| HeError::InvalidPublicKey(m);
        let header = params.header();
        if bytes.len() != params.public_key_len() {
            return Err(bad(format!(
                "{} bytes where the agreed parameters give {}",
                bytes.len(),
                params.public_key_len()
            )));
        }
        if bytes[0] != FORMAT_VERSION {
            return Err(bad(format!("format version {}", bytes[0])));
        }
        if bytes[..header.len()] != header[..] {
            return Err(bad(format!(
                "the key's parameters (degree, t, prime sizes) {:?} differ from the agreed {:?}",
                &bytes[1..header.len()],
                &header[1..]
            )));
        }
        let ctx = context(params)?;
        let seed: [u8; SEED_LEN] = bytes[header.len()..header.len() + SEED_LEN]
            .try_into()
            .expect("length checked");
        let b_bytes = &bytes[header.len() + SEED_LEN..];
        if b_bytes.iter().all(|&x| x == 0) {
            return Err(bad("b is zero".into()));
        }
        let b = PolyCodec::new(&ctx)
            .read(b_bytes)
            .map_err(|e| bad(format!("b: {e}")))?;
        Ok(PublicKey::new(params.clone(), ctx, seed, to_ntt(b)))
    }

    fn ciphertext_len(pk: &PublicKey) -> usize {
        pk.ct_len()
    }

    fn encode_ciphertext(pk: &PublicKey, c: &Ciphertext, out: &mut [u8]) {
        pk.write_full(c, out);
    }

    fn decode_ciphertext(pk: &PublicKey, bytes: &[u8]) -> Result<Ciphertext, HeError> {
        pk.read_full(bytes, 0)
    }
}

impl SubsetSum for Rlwe {
    /// Column units (two owner ciphertexts each).
    fn column_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        Ok(Self::layout(pk, bounds)?.units)
    }

    fn sum_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        Self::layout(pk, bounds)?;
        Ok(1)
    }

    fn encrypt_column(
        _pk: &PublicKey,
        sk: &SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        check_values(bounds, values)?;
        let pk = &sk.pk;
        let lay = Self::layout(pk, bounds)?;
        let h = pk.half_len();
        let forks = rng.fork_many(lay.halves);
        let mut out = vec![0u8; lay.units * pk.ct_len()];
        out.par_chunks_mut(h)
            .zip(values.par_chunks(lay.slots))
            .zip(forks.into_par_iter())
            .try_for_each(|((buf, vals), mut r)| {
                let mut m = half_plaintext(vals, &lay, pk.params.degree);
                let res = sk.encrypt_half(&m, &mut r, buf);
                m.zeroize();
                res
            })?;
        Ok(out)
    }

    /// Only the owner ciphertexts holding a selected item are decoded (validated).
    fn sum_selected(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        let lay = Self::layout(pk, bounds)?;
        packed_count(column.len(), pk.ct_len(), Some(lay.units))?;
        check_selection(selected, bounds.items)?;
        check_padding(pk, &lay, column)?;
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); lay.halves];
        for &i in selected {
            groups[i / lay.slots].push(i % lay.slots);
        }
        let mut sum = selected_product(pk, &lay, column, &groups)?;
        sum.add_assign(&pk.zero_encryption(rng)?);
        pk.mask_and_flood(&mut sum, lay.limbs, lay.flood, rng)?;
        let mut out = vec![0u8; pk.ct_len()];
        pk.write_full(&sum, &mut out);
        Ok(out)
    }

    fn decrypt_sum(sk: &SecretKey, bounds: &ColumnBounds, sum: &[u8]) -> Result<u128, HeError> {
        let pk = &sk.pk;
        let lay = Self::layout(pk, bounds)?;
        packed_count(sum.len(), pk.ct_len(), Some(1))?;
        let c = pk.read_full(sum, 0)?;
        let limbs = sk.decrypt_coefficients(&c, lay.limbs);
        let out_of_range = HeError::OutOfRange {
            bound_bits: 128 - bounds.max_sum.leading_zeros(),
        };
        let mut total: u128 = 0;
        for (j, &s) in limbs.iter().enumerate() {
            let shifted = (s as u128)
                .checked_shl(lay.limb_bits * j as u32)
                .filter(|v| v >> (lay.limb_bits * j as u32) == s as u128)
                .ok_or_else(|| out_of_range.clone())?;
            total = total
                .checked_add(shifted)
                .ok_or_else(|| out_of_range.clone())?;
        }
        if total > bounds.max_sum {
            return Err(out_of_range);
        }
        Ok(total)
    }

    fn encrypt_each(
        _pk: &PublicKey,
        _sk: &SecretKey,
        _bounds: &ColumnBounds,
        _values: &[u64],
        _rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        reverse_unsupported()
    }

    fn mask_each(
        _pk: &PublicKey,
        _column: &[u8],
        _rng: &mut SessionRng,
    ) -> Result<(Vec<u8>, Vec<Mask>), HeError> {
        reverse_unsupported()
    }

    fn open_masked_sum(
        _sk: &SecretKey,
        _masked: &[u8],
        _selected: &[usize],
    ) -> Result<Vec<u8>, HeError> {
        reverse_unsupported()
    }

    fn unmask_sum(
        _pk: &PublicKey,
        _bounds: &ColumnBounds,
        _opened: &[u8],
        _masks: &[Mask],
        _selected: &[usize],
    ) -> Result<u128, HeError> {
        reverse_unsupported()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ahe::conformance::{self, Options};

    fn keys(seed: u8) -> (PublicKey, SecretKey) {
        Rlwe::keygen(&Params::default(), &mut SessionRng::from_seed([seed; 32]))
    }

    /// The paper's deployed bounds (Ion et al. 2020, Sec. 5.1): 32-bit sums.
    fn paper_bounds(items: usize) -> ColumnBounds {
        ColumnBounds {
            items,
            max_value: (u32::MAX as u64) / items as u64,
            max_sum: u32::MAX as u128,
        }
    }

    /// privset's default: 32-bit values, `max_sum = max_value · items`.
    fn default_bounds(items: usize) -> ColumnBounds {
        ColumnBounds {
            items,
            max_value: u32::MAX as u64,
            max_sum: u32::MAX as u128 * items as u128,
        }
    }

    #[test]
    fn conformance_default() {
        // 9000 items: three owner ciphertexts, so two units, the last one padded.
        let opts = Options {
            large_column: 9000,
            all_subsets_everywhere: false,
            reverse: false,
            ..Options::default()
        };
        conformance::run_with::<Rlwe>(&Params::default(), &opts);
    }

    /// What `for_columns` picks: the larger ring for privset's default bounds, a smaller
    /// `q` and `t = 2^32` for the paper's.
    #[test]
    fn conformance_for_columns() {
        let opts = Options {
            large_column: 9000,
            reverse: false,
            ..Options::quick()
        };
        let params = Params::for_columns(&[default_bounds(1 << 20)]).unwrap();
        assert_eq!(params.degree, 8192);
        conformance::run_with::<Rlwe>(&params, &opts);
        let params = Params::for_columns(&[paper_bounds(1 << 20)]).unwrap();
        assert_eq!((params.degree, params.plain_bits), (4096, 32));
        conformance::run_with::<Rlwe>(&params, &opts);
    }

    #[test]
    fn for_columns_picks_the_smallest_columns() {
        for items in [100_000, 1 << 20] {
            let p = Params::for_columns(&[paper_bounds(items)]).unwrap();
            assert_eq!((p.degree, p.plain_bits), (4096, 32));
            assert!(p.moduli_bits.iter().sum::<usize>() < 109);
            println!("{items} items, sums below 2^32: {p:?}");
        }
        for items in [100_000, 1 << 20] {
            let p = Params::for_columns(&[default_bounds(items), paper_bounds(items)]).unwrap();
            p.validate().unwrap();
            let (pk, _sk) = Rlwe::keygen(&p, &mut SessionRng::from_seed([9; 32]));
            for b in [default_bounds(items), paper_bounds(items)] {
                assert_eq!(Rlwe::layout(&pk, &b).unwrap().limbs, 1, "{p:?}");
            }
            println!("{items} items, default bounds: {p:?}");
        }
        // Sums of squares of 32-bit values: beyond 2^60, limbs at n = 8192.
        let squares = ColumnBounds {
            items: 1000,
            max_value: u64::MAX,
            max_sum: u64::MAX as u128 * 1000,
        };
        let p = Params::for_columns(&[squares]).unwrap();
        let (pk, _sk) = Rlwe::keygen(&p, &mut SessionRng::from_seed([9; 32]));
        assert!(Rlwe::layout(&pk, &squares).unwrap().limbs > 1);
    }

    #[test]
    fn parameters_below_128_bits_are_refused() {
        let paper = Params {
            degree: 2048,
            moduli_bits: vec![40, 40],
            plain_bits: 32,
        };
        assert!(paper.validate().is_err(), "the paper's n = 2048, 80-bit q");
        let too_big = Params {
            moduli_bits: vec![55, 55],
            ..Params::default()
        };
        let e = too_big.validate().unwrap_err();
        assert!(e.to_string().contains("128-bit"), "{e}");
        Params::default().validate().unwrap();
        // Odd but in-range parameters (a plaintext modulus above the first prime, many
        // small primes, primes fhe.rs cannot find) are built or refused, never a panic.
        for (degree, moduli_bits, plain_bits) in [
            (8192, vec![20; 10], 60),
            (8192, vec![62, 62, 62, 32], 60),
            (4096, vec![20, 20, 20, 20, 29], 8),
            (4096, vec![62, 47], 20),
        ] {
            let p = Params {
                degree,
                moduli_bits,
                plain_bits,
            };
            let _ = context(&p);
            let _ = Rlwe::decode_public_key(&[0; 64], &p);
        }
        // A prime below t (found by fuzzing PI-Sum's hello: fhe.rs takes t as reduced
        // modulo every prime, so this reached a debug assertion in fhe-math).
        for moduli_bits in [vec![62, 62, 62, 32], vec![61, 61]] {
            let p = Params {
                degree: 8192,
                moduli_bits,
                plain_bits: 60,
            };
            let e = p.validate().unwrap_err();
            assert!(e.to_string().contains("does not lie above"), "{e}");
            assert!(context(&p).is_err());
        }
        // Sums near 2^60 get limbs under the default parameters, never a prime below t.
        let near = ColumnBounds {
            items: 10,
            max_value: 1 << 56,
            max_sum: 1 << 59,
        };
        Params::for_columns(&[near]).unwrap().validate().unwrap();
    }

    /// The arithmetic of the module docs at 2^20 items, for both bounds: the flood is
    /// `2^40 · limbs · W`, the distance at most `2^-40`, and a coefficient carrying the
    /// largest value and the largest noise (either sign) decodes exactly.
    #[test]
    fn flood_bound_arithmetic() {
        let (pk, _sk) = keys(1);
        let q = Rlwe::modulus(&pk);
        let items = 1usize << 20;
        for (bounds, limbs) in [(paper_bounds(items), 1), (default_bounds(items), 2)] {
            let lay = Rlwe::layout(&pk, &bounds).unwrap();
            assert_eq!(lay.limbs, limbs);
            let w = items as u128 * ERROR_BOUND + (2 * 4096 + 1) * ERROR_BOUND;
            assert_eq!(lay.noise, w);
            assert_eq!(lay.flood, w * (1u128 << 40) * limbs as u128);
            let (num, den) = flood_distance(lay.noise, lay.flood, lay.limbs);
            assert!(num << STAT_SECURITY <= den, "distance above 2^-40");
            assert!(decodes(q, 42, lay.noise, lay.flood));
            // Every limb sum stays below t.
            let limb_max = if limbs == 1 {
                bounds.max_sum
            } else {
                items as u128 * ((1u128 << lay.limb_bits) - 1)
            };
            assert!(limb_max < 1 << 42);
            println!(
                "{items} items, {limbs} limb(s) of {} bits: W = 2^{:.2}, B = 2^{:.2}, \
                 t(W+B) = 2^{:.2}, q/2 = 2^{:.2}",
                lay.limb_bits,
                (lay.noise as f64).log2(),
                (lay.flood as f64).log2(),
                42.0 + ((lay.noise + lay.flood) as f64).log2(),
                q.to_f64().log2() - 1.0,
            );
            // The worst case, concretely: value t - 1 and 0 with noise ±(W + B).
            let crt = &pk.crt;
            let delta = Integer::from(q / (1u64 << 42));
            let e = Integer::from(lay.noise + lay.flood);
            for s in [0u64, (1 << 42) - 1] {
                for sign in [-1i32, 1] {
                    let x = Integer::from(&delta * s) + Integer::from(&e * sign);
                    let p = crt.from_integers(&pk.ctx, &[x]).unwrap();
                    assert_eq!(crt.decode(&p, 0, 42), s, "value {s}, noise sign {sign}");
                }
            }
        }
        // Beyond the noise budget the bounds are refused, not risked.
        assert!(matches!(
            Rlwe::layout(&pk, &default_bounds(1 << 21)),
            Err(HeError::Parameters(_))
        ));
        assert!(Rlwe::layout(&pk, &paper_bounds(3_000_000)).is_ok());
        assert!(Rlwe::layout(&pk, &paper_bounds(4_000_000)).is_err());
    }

    /// Every value at max_value, every item selected, at the largest item count the
    /// bounds are meant for (2^20), for the paper's bounds and privset's default.
    #[test]
    fn decrypts_at_the_bound() {
        let items = 1usize << 20;
        let paper = paper_bounds(items);
        let default = default_bounds(items);
        for (params, bounds) in [
            (Params::default(), paper),
            (Params::default(), default),
            (Params::for_columns(&[paper]).unwrap(), paper),
            (Params::for_columns(&[default]).unwrap(), default),
        ] {
            let (pk, sk) = Rlwe::keygen(&params, &mut SessionRng::from_seed([2; 32]));
            let values = vec![bounds.max_value; items];
            let mut rng = SessionRng::from_seed([3; 32]);
            let col = Rlwe::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).unwrap();
            let all: Vec<usize> = (0..items).collect();
            let sum = Rlwe::sum_selected(&pk, &bounds, &col, &all, &mut rng).unwrap();
            let expect = bounds.max_value as u128 * items as u128;
            assert_eq!(
                Rlwe::decrypt_sum(&sk, &bounds, &sum),
                Ok(expect),
                "{params:?}"
            );
        }
    }

    /// The owner's plaintext holds the sum in coefficient 0 and uniform-looking values
    /// elsewhere, different on every run.
    #[test]
    fn other_coefficients_are_masked() {
        let (pk, sk) = keys(4);
        let bounds = paper_bounds(5000);
        let values: Vec<u64> = (0..5000u64).map(|i| i % 700).collect();
        let mut rng = SessionRng::from_seed([5; 32]);
        let col = Rlwe::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).unwrap();
        let sel: Vec<usize> = (0..5000).step_by(7).collect();
        let expect: u64 = sel.iter().map(|&i| values[i]).sum();
        let runs: Vec<Vec<u64>> = (0..2)
            .map(|_| {
                let sum = Rlwe::sum_selected(&pk, &bounds, &col, &sel, &mut rng).unwrap();
                Rlwe::decrypt_all(&sk, &sum).unwrap()
            })
            .collect();
        let t = 1u64 << 42;
        for run in &runs {
            assert_eq!(run[0], expect);
            let rest = &run[1..];
            let low = rest.iter().filter(|&&v| v < t / 2).count() as f64 / rest.len() as f64;
            let mean = rest.iter().map(|&v| v as f64 / t as f64).sum::<f64>() / rest.len() as f64;
            assert!((low - 0.5).abs() < 0.05, "fraction below t/2: {low}");
            assert!((mean - 0.5).abs() < 0.05, "mean / t: {mean}");
            // Nothing of the column shows: no coefficient holds a small value.
            assert!(rest.iter().filter(|&&v| v < 1 << 20).count() < 5);
        }
        let same = runs[0][1..]
            .iter()
            .zip(&runs[1][1..])
            .filter(|(a, b)| a == b)
            .count();
        assert_eq!(same, 0, "masked coefficients repeat across runs");
    }

    #[test]
    fn peer_bytes_are_checked() {
        let (pk, sk) = keys(6);
        let params = Params::default();
        let key = Rlwe::encode_public_key(&pk);
        assert_eq!(key.len(), params.public_key_len());
        // Other parameters in the header: degree, t, prime sizes, version.
        for at in 0..params.header().len() {
            let mut k = key.clone();
            k[at] ^= 1;
            assert!(
                Rlwe::decode_public_key(&k, &params).is_err(),
                "header byte {at}"
            );
        }
        // A residue of b equal to its prime (all ones is at least the prime).
        let mut k = key.clone();
        let start = params.header().len() + SEED_LEN;
        k[start..start + 8].fill(0xff);
        let e = Rlwe::decode_public_key(&k, &params).unwrap_err();
        assert!(e.to_string().contains("non-canonical"), "{e}");
        // Agreed parameters that fail the 128-bit check are refused before any use.
        let weak = Params {
            moduli_bits: vec![60, 60],
            ..params.clone()
        };
        assert!(Rlwe::decode_public_key(&key, &weak).is_err());

        let bounds = paper_bounds(5000);
        let values = vec![3u64; 5000];
        let mut rng = SessionRng::from_seed([7; 32]);
        let col = Rlwe::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).unwrap();
        let half = SEED_LEN + params.poly_len();
        // Non-canonical c0 in a selected owner ciphertext.
        let mut bad = col.clone();
        bad[SEED_LEN..SEED_LEN + 8].fill(0xff);
        let e = Rlwe::sum_selected(&pk, &bounds, &bad, &[0], &mut rng).unwrap_err();
        assert!(matches!(e, HeError::InvalidCiphertext { .. }), "{e:?}");
        // 5000 items: two owner ciphertexts, no padding; 3000 items: one, padded.
        let small = paper_bounds(3000);
        let col = Rlwe::encrypt_column(&pk, &sk, &small, &values[..3000], &mut rng).unwrap();
        let mut bad = col.clone();
        bad[half + 5] = 1;
        let e = Rlwe::sum_selected(&pk, &small, &bad, &[0], &mut rng).unwrap_err();
        assert!(e.to_string().contains("padding"), "{e}");
        // Random bytes of the right lengths never panic.
        for _ in 0..32 {
            let mut g = vec![0u8; col.len()];
            rng.fill(&mut g);
            let _ = Rlwe::sum_selected(&pk, &small, &g, &[0, 1], &mut rng);
            let mut g = vec![0u8; Rlwe::ciphertext_len(&pk)];
            rng.fill(&mut g);
            let _ = Rlwe::decrypt_sum(&sk, &small, &g);
            let mut k = key.clone();
            rng.fill(&mut k[start..]);
            let _ = Rlwe::decode_public_key(&k, &params);
        }
    }

    /// Column bytes at 100,000 items (printed; the paper-bound column is also checked
    /// against the 1.9 MB budget).
    #[test]
    fn column_size_at_100k() {
        let (pk, _sk) = keys(8);
        for (label, bounds) in [
            ("sums < 2^32", paper_bounds(100_000)),
            ("max_sum = max_value * items", default_bounds(100_000)),
        ] {
            let lay = Rlwe::layout(&pk, &bounds).unwrap();
            let bytes = lay.units * Rlwe::ciphertext_len(&pk);
            println!(
                "100,000 items, {label}: {} limb(s), {} owner ciphertexts, {} units, {bytes} bytes \
                 ({:.2} bytes a value); sum: {} bytes; public key: {} bytes",
                lay.limbs,
                lay.halves,
                lay.units,
                bytes as f64 / 100_000.0,
                Rlwe::ciphertext_len(&pk),
                Params::default().public_key_len(),
            );
            if lay.limbs == 1 {
                assert!(bytes <= 1_900_000, "{bytes} bytes");
            }
        }
        for bounds in [paper_bounds(100_000), default_bounds(100_000)] {
            let params = Params::for_columns(&[bounds]).unwrap();
            let (pk, _sk) = Rlwe::keygen(&params, &mut SessionRng::from_seed([8; 32]));
            let lay = Rlwe::layout(&pk, &bounds).unwrap();
            let bytes = lay.units * Rlwe::ciphertext_len(&pk);
            println!(
                "100,000 items, max_sum {}, for_columns {params:?}: {} limb(s), {} units, \
                 {bytes} bytes ({:.2} bytes a value); sum: {} bytes; public key: {} bytes",
                bounds.max_sum,
                lay.limbs,
                lay.units,
                bytes as f64 / 100_000.0,
                Rlwe::ciphertext_len(&pk),
                params.public_key_len(),
            );
            assert!(bytes <= 1_900_000, "{bytes} bytes");
        }
    }
}
