//! Threshold exponential ElGamal on ristretto255 with a dealer-free key generation.
//!
//! # Scheme
//!
//! Exponential ElGamal as in [`crate::ahe::elgamal`]: public key `h = xG`,
//! `Enc(m; ρ) = (ρG, mG + ρh)`, additively homomorphic in `m ∈ Z_ℓ` (ℓ the prime order of
//! ristretto255). The secret `x` is never held by anyone: party `i ∈ 1..=n` holds
//! `x_i = f(i)` for a random polynomial `f` of degree `t - 1` with `f(0) = x` (Shamir
//! sharing), and everybody knows the verification keys `h_i = x_i G`.
//!
//! * **Decryption share** of `(c1, c2)` by party `i`: `d_i = x_i c1`, with a
//!   Chaum-Pedersen proof that `log_G h_i = log_{c1} d_i` (made non-interactive with
//!   Fiat-Shamir over SHA-512, binding the joint key, the party index and the whole
//!   ciphertext).
//! * **Combine** with any set `S` of `|S| ≥ t` valid shares: the first `t` of them give
//!   `x c1 = Σ_{i∈S} λ_i d_i` with the Lagrange coefficients at zero
//!   `λ_i = Π_{j∈S, j≠i} j / (j - i) mod ℓ`, hence `mG = c2 - x c1`. `is_zero` tests
//!   `mG` against the identity; a value is recovered by baby-step giant-step for small
//!   `m` (the table and search of [`crate::ahe::elgamal`]).
//!
//! # Distributed key generation (Pedersen 1991, Feldman 1987)
//!
//! No dealer: every party `i` acts as a dealer of a random secret.
//!
//! 1. **Round 1** ([`dkg_deal`]): party `i` picks a random polynomial
//!    `f_i(X) = a_{i,0} + a_{i,1} X + … + a_{i,t-1} X^{t-1}` over `Z_ℓ`, *broadcasts* the
//!    Feldman commitments `C_{i,k} = a_{i,k} G` ([`DkgCommitments`]) and sends
//!    `s_{i,j} = f_i(j)` *privately* to every party `j` (its own included)
//!    ([`DkgShare`]).
//! 2. **Round 2** ([`dkg_finish`]): party `j` checks every received share against its
//!    dealer's commitments, `s_{i,j} G = Σ_k j^k C_{i,k}` (Feldman's verifiable secret
//!    sharing); a mismatch is a complaint, reported as [`TaheError::Complaint`] naming
//!    the dealer, and the key generation aborts. Otherwise `x_j = Σ_i s_{i,j}`, the joint
//!    key is `h = Σ_i C_{i,0}` (so `x = Σ_i a_{i,0}`, which no coalition below `t`
//!    learns anything about) and `h_j = Σ_k j^k Σ_i C_{i,k}` for every `j`.
//!
//! What the transport must provide: private, authenticated channels for the shares, and
//! a consistent broadcast of the commitments (every party must see the same
//! commitments from every dealer); comparing a digest of the encoded public key in one
//! more round detects an inconsistent broadcast. Pedersen's DKG lets a rushing
//! adversary bias the distribution of `h` (Gennaro, Jarecki, Krawczyk and Rabin 1999);
//! the same authors show (2003) that this does not hurt the security of ElGamal-type
//! encryption under the key, which is all this module uses it for. The protocols of
//! de Jong's thesis are semi-honest, where there is no bias at all.
//!
//! `t = n` gives n-out-of-n keys, any `1 ≤ t ≤ n` a t-out-of-n key.
//!
//! # Encodings
//!
//! All fixed width, big-endian integers, points compressed (canonical encodings only,
//! checked on decode):
//!
//! * ciphertext: `c1 ‖ c2`, 64 bytes (`c1` not the identity);
//! * decryption share: `party (u32) ‖ d ‖ e ‖ z`, 100 bytes (`d` not the identity,
//!   `e`, `z` canonical scalars);
//! * public key: `n (u32) ‖ t (u32) ‖ h ‖ h_1 ‖ … ‖ h_n`, `8 + 32 (n + 1)` bytes (no
//!   identity; the `h_i` must lie on a degree `t - 1` polynomial through `h`, which the
//!   decoder checks);
//! * DKG commitments: `dealer (u32) ‖ C_0 ‖ … ‖ C_{t-1}`; DKG share:
//!   `dealer (u32) ‖ recipient (u32) ‖ s`.
//!
//! Secret scalars (key shares, polynomial coefficients, proof nonces, encryption
//! randomness) are multiplied with dalek's constant-time scalar multiplication and
//! zeroized after use; verification uses variable-time arithmetic on public data only.

mod batch;
pub mod joint;
mod mesh;
mod tested;
mod zero_test;

use curve25519_dalek::constants::{RISTRETTO_BASEPOINT_POINT, RISTRETTO_BASEPOINT_TABLE};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, MultiscalarMul, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::{
    MAX_PARTIES, TaheError, ThresholdAhe, check_counts, check_enough, check_share_set, invalid,
};
use crate::ahe::HeError;
use crate::ahe::elgamal::{self as single, BaseTable, random_nonzero_scalar, random_scalar};
use crate::rng::SessionRng;

pub use crate::ahe::elgamal::Ciphertext;

/// Bytes of an encoded ciphertext.
pub const CIPHERTEXT_LEN: usize = 64;
/// Bytes of an encoded decryption share.
pub const SHARE_LEN: usize = 4 + 3 * 32;
/// Bytes of an encoded DKG share.
pub const DKG_SHARE_LEN: usize = 4 + 4 + 32;
/// Baby-step table size used by keys built from the DKG or decoded (see
/// [`crate::ahe::elgamal::Params`]); change with [`PublicKey::with_table_bits`].
pub const DEFAULT_TABLE_BITS: u32 = 22;

/// Threshold exponential ElGamal (see the module docs).
pub struct ThresholdElGamal;

/// The joint key `h`, the parties' verification keys `h_1..h_n`, `n` and `t`.
#[derive(Clone)]
pub struct PublicKey {
    parties: u32,
    threshold: u32,
    h: RistrettoPoint,
    table: BaseTable,
    verification: Vec<RistrettoPoint>,
    /// `λ_i` over all parties `1..=n` and `λ_i h_i`, what a share made with every
    /// party's key is proved against: made once (ten scalar inversions and a
    /// variable-base product for ten parties), not for every proof.
    weights: Vec<Scalar>,
    weighted: Vec<RistrettoPoint>,
    /// Local decryption setting (not encoded).
    max_table_bits: u32,
    /// SHA-512 of the encoding, bound into every proof.
    digest: [u8; 64],
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tahe::elgamal::PublicKey {{ n: {}, t: {}, h: {:02x?} }}",
            self.parties,
            self.threshold,
            &self.h.compress().as_bytes()[..8]
        )
    }
}

impl PublicKey {
    fn new(
        parties: u32,
        threshold: u32,
        h: RistrettoPoint,
        verification: Vec<RistrettoPoint>,
    ) -> Self {
        let all: Vec<u32> = (1..=parties).collect();
        let weights = lagrange_at_zero(&all);
        let weighted = verification
            .iter()
            .zip(&weights)
            .map(|(h_i, l)| h_i * l)
            .collect();
        let mut pk = PublicKey {
            parties,
            threshold,
            table: BaseTable::new(&h),
            h,
            verification,
            weights,
            weighted,
            max_table_bits: DEFAULT_TABLE_BITS,
            digest: [0; 64],
        };
        let mut d = Sha512::new();
        d.update(b"privset/tahe/elgamal/pk/v1");
        d.update(encode_pk(&pk));
        pk.digest = d.finalize().into();
        pk
    }

    /// The joint public key `h`.
    pub fn point(&self) -> &RistrettoPoint {
        &self.h
    }

    /// `λ_i` over all parties (`i` in `1..=n`, checked by the caller).
    pub(super) fn weight(&self, i: u32) -> Scalar {
        self.weights[i as usize - 1]
    }

    /// Party `i`'s verification key `h_i = x_i G` (`i` in `1..=n`).
    pub fn verification_key(&self, i: u32) -> Option<&RistrettoPoint> {
        self.verification.get((i as usize).wrapping_sub(1))
    }

    /// The same key with a baby-step table of at most `2^bits` entries for `combine`
    /// (1..=30; plaintexts up to `2^(bits + 22)` can be decrypted).
    pub fn with_table_bits(mut self, bits: u32) -> Result<Self, TaheError> {
        single::Params {
            max_table_bits: bits,
        }
        .validate()
        .map_err(|e| TaheError::Parameters(e.to_string()))?;
        self.max_table_bits = bits;
        Ok(self)
    }

    fn encrypt_scalar(&self, m: &Scalar, rng: &mut SessionRng) -> Ciphertext {
        let mut rho = random_nonzero_scalar(rng);
        let c1 = &rho * RISTRETTO_BASEPOINT_TABLE;
        let c2 = m * RISTRETTO_BASEPOINT_TABLE + &rho * self.table.serial();
        rho.zeroize();
        Ciphertext { c1, c2 }
    }
}

/// Party `index`'s share `x_i` of the decryption key. Zeroized on drop, not `Clone`,
/// `Debug` elided.
pub struct KeyShare {
    index: u32,
    x: Scalar,
    pk: PublicKey,
    pk_digest: [u8; 64],
}

impl Drop for KeyShare {
    fn drop(&mut self) {
        self.x.zeroize();
    }
}
impl zeroize::ZeroizeOnDrop for KeyShare {}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tahe::elgamal::KeyShare {{ index: {}, .. }}", self.index)
    }
}

impl KeyShare {
    pub fn index(&self) -> u32 {
        self.index
    }
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }
}

/// Party `party`'s `d = x_i c1` with the Chaum-Pedersen proof `(e, z)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecryptionShare {
    party: u32,
    d: RistrettoPoint,
    e: Scalar,
    z: Scalar,
}

impl DecryptionShare {
    pub fn party(&self) -> u32 {
        self.party
    }
}

fn point_from(bytes: &[u8]) -> Option<RistrettoPoint> {
    CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
}

fn scalar_from(bytes: &[u8]) -> Option<Scalar> {
    let b: [u8; 32] = bytes.try_into().ok()?;
    Option::from(Scalar::from_canonical_bytes(b))
}

/// `k P` for a small public `k` (variable time: double and add).
fn small_mul(p: &RistrettoPoint, k: u32) -> RistrettoPoint {
    let mut acc = RistrettoPoint::identity();
    for bit in (0..32 - k.leading_zeros()).rev() {
        acc = acc + acc;
        if (k >> bit) & 1 == 1 {
            acc += p;
        }
    }
    acc
}

/// `Σ_k x^k C_k` by Horner's rule (public points, small public `x`).
fn eval_commitments(c: &[RistrettoPoint], x: u32) -> RistrettoPoint {
    let mut acc = RistrettoPoint::identity();
    for p in c.iter().rev() {
        acc = small_mul(&acc, x) + p;
    }
    acc
}

/// Lagrange coefficients at zero for the distinct non-zero indices `set`.
fn lagrange_at_zero(set: &[u32]) -> Vec<Scalar> {
    let mut nums = Vec::with_capacity(set.len());
    let mut dens = Vec::with_capacity(set.len());
    for &i in set {
        let mut num = Scalar::ONE;
        let mut den = Scalar::ONE;
        for &j in set {
            if j != i {
                num *= Scalar::from(j);
                den *= Scalar::from(j) - Scalar::from(i);
            }
        }
        nums.push(num);
        dens.push(den);
    }
    nums.iter()
        .zip(&dens)
        .map(|(n, d)| n * d.invert())
        .collect()
}

fn dleq_challenge(
    pk_digest: &[u8; 64],
    party: u32,
    c: &Ciphertext,
    d: &RistrettoPoint,
    a: &RistrettoPoint,
    b: &RistrettoPoint,
) -> Scalar {
    let mut h = Sha512::new();
    h.update(b"privset/tahe/elgamal/dleq/v1");
    h.update(pk_digest);
    h.update(party.to_be_bytes());
    for p in [&c.c1, &c.c2, d, a, b] {
        h.update(p.compress().as_bytes());
    }
    Scalar::from_bytes_mod_order_wide(&h.finalize().into())
}

fn encode_pk(pk: &PublicKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 32 * (pk.verification.len() + 1));
    out.extend_from_slice(&pk.parties.to_be_bytes());
    out.extend_from_slice(&pk.threshold.to_be_bytes());
    out.extend_from_slice(pk.h.compress().as_bytes());
    for v in &pk.verification {
        out.extend_from_slice(v.compress().as_bytes());
    }
    out
}

/// Checks that `h_1..h_n` lie on one polynomial of degree `t - 1` in the exponent with
/// value `h` at zero: interpolate from `h_1..h_t` and compare at `0` and `t+1..=n`.
fn check_consistent(pk: &PublicKey) -> Result<(), TaheError> {
    let t = pk.threshold;
    let base: Vec<u32> = (1..=t).collect();
    let pts = &pk.verification[..t as usize];
    let at = |x: u32| -> RistrettoPoint {
        // λ_i(x) = Π_{j≠i} (x - j) / (i - j)
        let mut nums = Vec::with_capacity(base.len());
        let mut dens = Vec::with_capacity(base.len());
        for &i in &base {
            let mut num = Scalar::ONE;
            let mut den = Scalar::ONE;
            for &j in &base {
                if j != i {
                    num *= Scalar::from(x) - Scalar::from(j);
                    den *= Scalar::from(i) - Scalar::from(j);
                }
            }
            nums.push(num);
            dens.push(den);
        }
        let coeffs: Vec<Scalar> = nums
            .iter()
            .zip(&dens)
            .map(|(n, d)| n * d.invert())
            .collect();
        RistrettoPoint::vartime_multiscalar_mul(&coeffs, pts)
    };
    if at(0) != pk.h {
        return Err(invalid(
            "public key",
            "verification keys do not interpolate to the joint key",
        ));
    }
    for x in t + 1..=pk.parties {
        if at(x) != pk.verification[x as usize - 1] {
            return Err(invalid(
                "public key",
                format!("verification key {x} is not on the degree t-1 polynomial"),
            ));
        }
    }
    Ok(())
}

/// Verifies the shares, then returns `mG = c2 - x c1` from the first `t` of them.
fn message_point(
    pk: &PublicKey,
    c: &Ciphertext,
    shares: &[DecryptionShare],
) -> Result<RistrettoPoint, TaheError> {
    check_share_set(shares.iter().map(|s| s.party), pk.parties)?;
    for s in shares {
        verify(pk, &pk.digest, c, s)?;
    }
    check_enough(shares.len(), pk.threshold)?;
    let used = &shares[..pk.threshold as usize];
    let set: Vec<u32> = used.iter().map(|s| s.party).collect();
    let lambdas = lagrange_at_zero(&set);
    let xc1 = RistrettoPoint::vartime_multiscalar_mul(&lambdas, used.iter().map(|s| s.d));
    Ok(c.c2 - xc1)
}

fn verify(
    pk: &PublicKey,
    digest: &[u8; 64],
    c: &Ciphertext,
    s: &DecryptionShare,
) -> Result<(), TaheError> {
    let bad = |reason: &str| TaheError::BadShare {
        party: s.party,
        reason: reason.to_string(),
    };
    let hi = pk
        .verification_key(s.party)
        .ok_or(TaheError::UnknownParty {
            party: s.party,
            parties: pk.parties,
        })?;
    if s.d.is_identity() {
        return Err(bad("d is the identity"));
    }
    // A = zG - e h_i, B = z c1 - e d
    let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&-s.e, hi, &s.z);
    let b = RistrettoPoint::vartime_multiscalar_mul([s.z, -s.e], [c.c1, s.d]);
    if dleq_challenge(digest, s.party, c, &s.d, &a, &b) != s.e {
        return Err(bad("proof of correct decryption does not verify"));
    }
    Ok(())
}

impl ThresholdAhe for ThresholdElGamal {
    const NAME: &'static str = "elgamal";
    type PublicKey = PublicKey;
    type KeyShare = KeyShare;
    type Ciphertext = Ciphertext;
    type DecryptionShare = DecryptionShare;
    type Scalar = Scalar;

    fn parties(pk: &PublicKey) -> u32 {
        pk.parties
    }
    fn threshold(pk: &PublicKey) -> u32 {
        pk.threshold
    }
    fn share_index(ks: &KeyShare) -> u32 {
        ks.index
    }
    fn share_public_key(ks: &KeyShare) -> &PublicKey {
        &ks.pk
    }

    fn scalar_from_u64(_pk: &PublicKey, v: u64) -> Scalar {
        Scalar::from(v)
    }
    fn scalar_neg(_pk: &PublicKey, a: &Scalar) -> Scalar {
        -a
    }
    fn scalar_add(_pk: &PublicKey, a: &Scalar, b: &Scalar) -> Scalar {
        a + b
    }
    fn scalar_mul(_pk: &PublicKey, a: &Scalar, b: &Scalar) -> Scalar {
        a * b
    }
    fn scalar_from_wide(_pk: &PublicKey, bytes: &[u8; 64]) -> Scalar {
        Scalar::from_bytes_mod_order_wide(bytes)
    }
    fn random_unit(_pk: &PublicKey, rng: &mut SessionRng) -> Scalar {
        random_nonzero_scalar(rng)
    }

    fn encrypt(pk: &PublicKey, m: &Scalar, rng: &mut SessionRng) -> Ciphertext {
        pk.encrypt_scalar(m, rng)
    }
    fn add(_pk: &PublicKey, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        *a + *b
    }
    /// Constant time in `k`. `k = 0` gives the trivial ciphertext `(O, O)`, which does not
    /// encode (`c1` is the identity): re-randomize it first.
    fn mul_scalar(_pk: &PublicKey, c: &Ciphertext, k: &Scalar) -> Ciphertext {
        Ciphertext {
            c1: c.c1 * k,
            c2: c.c2 * k,
        }
    }
    fn rerandomize(pk: &PublicKey, c: &Ciphertext, rng: &mut SessionRng) -> Ciphertext {
        *c + pk.encrypt_scalar(&Scalar::ZERO, rng)
    }

    fn decryption_share(ks: &KeyShare, c: &Ciphertext, rng: &mut SessionRng) -> DecryptionShare {
        let d = c.c1 * ks.x;
        let mut k = random_nonzero_scalar(rng);
        let a = &k * RISTRETTO_BASEPOINT_TABLE;
        let b = c.c1 * k;
        let e = dleq_challenge(&ks.pk_digest, ks.index, c, &d, &a, &b);
        let z = k + e * ks.x;
        k.zeroize();
        DecryptionShare {
            party: ks.index,
            d,
            e,
            z,
        }
    }
    fn share_party(share: &DecryptionShare) -> u32 {
        share.party
    }
    fn verify_share(
        pk: &PublicKey,
        c: &Ciphertext,
        share: &DecryptionShare,
    ) -> Result<(), TaheError> {
        verify(pk, &pk.digest, c, share)
    }

    /// Baby-step giant-step on `mG`; `max` beyond `2^(table_bits + 22)` is a
    /// [`TaheError::Parameters`] error.
    fn combine(
        pk: &PublicKey,
        c: &Ciphertext,
        shares: &[DecryptionShare],
        max: u64,
    ) -> Result<u64, TaheError> {
        single::check_range(max as u128, pk.max_table_bits).map_err(|e| match e {
            crate::ahe::HeError::Parameters(m) => TaheError::Parameters(m),
            other => TaheError::Parameters(other.to_string()),
        })?;
        let m = message_point(pk, c, shares)?;
        single::bsgs(&m, max, pk.max_table_bits).ok_or(TaheError::OutOfRange { max })
    }
    fn is_zero(
        pk: &PublicKey,
        c: &Ciphertext,
        shares: &[DecryptionShare],
    ) -> Result<bool, TaheError> {
        Ok(message_point(pk, c, shares)?.is_identity())
    }

    fn ciphertext_len(_pk: &PublicKey) -> usize {
        CIPHERTEXT_LEN
    }
    fn encode_ciphertext(_pk: &PublicKey, c: &Ciphertext) -> Vec<u8> {
        let mut out = vec![0u8; CIPHERTEXT_LEN];
        single::encode(c, &mut out);
        out
    }
    fn decode_ciphertext(_pk: &PublicKey, bytes: &[u8]) -> Result<Ciphertext, TaheError> {
        single::decode(bytes, 0).map_err(|e| invalid("ciphertext", e.to_string()))
    }

    fn share_len(_pk: &PublicKey) -> usize {
        SHARE_LEN
    }
    fn encode_share(_pk: &PublicKey, s: &DecryptionShare) -> Vec<u8> {
        let mut out = Vec::with_capacity(SHARE_LEN);
        out.extend_from_slice(&s.party.to_be_bytes());
        out.extend_from_slice(s.d.compress().as_bytes());
        out.extend_from_slice(s.e.as_bytes());
        out.extend_from_slice(s.z.as_bytes());
        out
    }
    fn decode_share(pk: &PublicKey, bytes: &[u8]) -> Result<DecryptionShare, TaheError> {
        let what = "decryption share";
        if bytes.len() != SHARE_LEN {
            return Err(invalid(what, "wrong length"));
        }
        let party = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        if party == 0 || party > pk.parties {
            return Err(TaheError::UnknownParty {
                party,
                parties: pk.parties,
            });
        }
        let d = point_from(&bytes[4..36])
            .ok_or_else(|| invalid(what, "d is not a canonical ristretto255 encoding"))?;
        if d.is_identity() {
            return Err(invalid(what, "d is the identity"));
        }
        let e = scalar_from(&bytes[36..68]).ok_or_else(|| invalid(what, "e is not canonical"))?;
        let z = scalar_from(&bytes[68..100]).ok_or_else(|| invalid(what, "z is not canonical"))?;
        Ok(DecryptionShare { party, d, e, z })
    }

    fn encrypt_encoded(pk: &PublicKey, ms: &[Scalar], rng: &mut SessionRng) -> Vec<u8> {
        batch::encrypt_encoded(pk, ms, rng)
    }
    fn decode_ciphertexts(_pk: &PublicKey, bytes: &[u8]) -> Result<Vec<Ciphertext>, TaheError> {
        batch::decode_many(bytes)
    }
    fn randomize_encoded(pk: &PublicKey, cts: &[Ciphertext], rng: &mut SessionRng) -> Vec<u8> {
        batch::randomize_encoded(pk, cts, rng)
    }
    /// Two constant-time multi-scalar multiplications (Straus): the point `x` is
    /// usually a party's own private item.
    fn eval_polynomial(_pk: &PublicKey, coeffs: &[Ciphertext], x: &Scalar) -> Option<Ciphertext> {
        if coeffs.is_empty() {
            return None;
        }
        let mut powers = Vec::with_capacity(coeffs.len());
        let mut p = Scalar::ONE;
        for _ in coeffs {
            powers.push(p);
            p *= x;
        }
        let c1 = RistrettoPoint::multiscalar_mul(&powers, coeffs.iter().map(|c| c.c1));
        let c2 = RistrettoPoint::multiscalar_mul(&powers, coeffs.iter().map(|c| c.c2));
        powers.iter_mut().for_each(Zeroize::zeroize);
        Some(Ciphertext { c1, c2 })
    }
    type Tested = tested::Tested;
    fn tested_from_encoded(_pk: &PublicKey, bytes: &[u8]) -> Result<tested::Tested, TaheError> {
        tested::Tested::from_encoded(bytes)
    }
    fn tested_len(tested: &tested::Tested) -> usize {
        tested.len()
    }
    fn share_batch_len(_pk: &PublicKey, count: usize) -> usize {
        batch::batch_len(count)
    }
    fn share_batch(ks: &KeyShare, cts: &tested::Tested, rng: &mut SessionRng) -> Vec<u8> {
        batch::share_batch(ks, cts, rng)
    }
    type Sums = single::CiphertextSums;
    fn sums_new(_pk: &PublicKey, count: usize) -> Self::Sums {
        single::CiphertextSums::new(count)
    }
    fn sums_add(
        _pk: &PublicKey,
        sums: &mut Self::Sums,
        encoded: &[u8],
        hits: &[(u32, u32)],
    ) -> Result<(), TaheError> {
        sums.add(encoded, hits).map_err(|e| match e {
            HeError::InvalidCiphertext { index, reason } => {
                invalid("ciphertext", format!("entry {index}: {reason}"))
            }
            other => invalid("ciphertexts", other.to_string()),
        })
    }
    fn sums_finish(_pk: &PublicKey, sums: Self::Sums) -> Vec<Ciphertext> {
        sums.into_ciphertexts()
    }
    fn sums_randomize_encoded(
        pk: &PublicKey,
        sums: Self::Sums,
        shift: &Ciphertext,
        rng: &mut SessionRng,
    ) -> Vec<u8> {
        crate::ahe::elgamal::bulk::randomize_sums(&pk.table, sums, shift, rng)
    }
    fn mesh_shares_len(_pk: &PublicKey, count: usize) -> usize {
        32 * count
    }
    fn mesh_relay_len(_pk: &PublicKey, count: usize) -> usize {
        32 * count
    }
    fn mesh_proof_len(_pk: &PublicKey) -> usize {
        mesh::PROOF_LEN
    }
    type Mesh = mesh::Mesh;
    fn mesh_new(pk: &PublicKey, count: usize) -> mesh::Mesh {
        mesh::mesh_new(pk, count)
    }
    fn mesh_own_shares(
        ks: &KeyShare,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
        _rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError> {
        mesh::mesh_own_shares(ks, m, cts)
    }
    fn mesh_absorb_shares(
        pk: &PublicKey,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
        party: u32,
        shares: &[u8],
    ) -> Result<(), TaheError> {
        mesh::mesh_absorb_shares(pk, m, cts, party, shares)
    }
    fn mesh_relay(
        pk: &PublicKey,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
    ) -> Result<Vec<u8>, TaheError> {
        mesh::mesh_relay(pk, m, cts)
    }
    fn mesh_absorb_relay(
        pk: &PublicKey,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
        relay: u32,
        relayed: &[u8],
    ) -> Result<(), TaheError> {
        mesh::mesh_absorb_relay(pk, m, cts, relay, relayed)
    }
    fn mesh_own_proof(
        ks: &KeyShare,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError> {
        mesh::mesh_own_proof(ks, m, cts, rng)
    }
    fn mesh_absorb_proof(
        pk: &PublicKey,
        m: &mut mesh::Mesh,
        cts: &tested::Tested,
        party: u32,
        proof: &[u8],
    ) -> Result<(), TaheError> {
        mesh::mesh_absorb_proof(pk, m, cts, party, proof)
    }
    fn mesh_finish(
        pk: &PublicKey,
        m: mesh::Mesh,
        cts: &tested::Tested,
    ) -> Result<Vec<bool>, TaheError> {
        mesh::mesh_finish(pk, m, cts)
    }
    type ZeroTest = zero_test::ZeroTest;
    fn zero_test_new(pk: &PublicKey, count: usize) -> zero_test::ZeroTest {
        zero_test::zero_test_new(pk, count)
    }
    fn zero_test_absorb(
        pk: &PublicKey,
        test: &mut zero_test::ZeroTest,
        cts: &tested::Tested,
        party: u32,
        shares: &[u8],
    ) -> Result<(), TaheError> {
        zero_test::zero_test_absorb(pk, test, cts, party, shares)
    }
    fn zero_test_absorb_own(
        ks: &KeyShare,
        test: &mut zero_test::ZeroTest,
        cts: &tested::Tested,
        batch: &[u8],
    ) -> Result<(), TaheError> {
        zero_test::zero_test_absorb_own(ks, test, cts, batch)
    }
    fn zero_test_finish(
        _pk: &PublicKey,
        test: zero_test::ZeroTest,
        cts: &tested::Tested,
    ) -> Result<Vec<bool>, TaheError> {
        zero_test::zero_test_finish(test, cts)
    }

    fn encode_public_key(pk: &PublicKey) -> Vec<u8> {
        encode_pk(pk)
    }
    fn decode_public_key(bytes: &[u8], max_parties: u32) -> Result<PublicKey, TaheError> {
        let what = "public key";
        if bytes.len() < 8 {
            return Err(invalid(what, "truncated header"));
        }
        let parties = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        let threshold = u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if parties > max_parties.min(MAX_PARTIES) {
            return Err(invalid(
                what,
                format!("{parties} parties, at most {max_parties} allowed"),
            ));
        }
        check_counts(parties, threshold).map_err(|e| invalid(what, e.to_string()))?;
        if bytes.len() != 8 + 32 * (parties as usize + 1) {
            return Err(invalid(what, "wrong length"));
        }
        let mut pts = Vec::with_capacity(parties as usize + 1);
        for (i, chunk) in bytes[8..].chunks_exact(32).enumerate() {
            let p = point_from(chunk)
                .ok_or_else(|| invalid(what, format!("point {i} is not a canonical encoding")))?;
            if p.is_identity() {
                return Err(invalid(what, format!("point {i} is the identity")));
            }
            pts.push(p);
        }
        let h = pts.remove(0);
        let pk = PublicKey::new(parties, threshold, h, pts);
        check_consistent(&pk)?;
        Ok(pk)
    }
}

// ---------------------------------------------------------------------------------
// Distributed key generation (Pedersen 1991 with Feldman 1987 commitments)

/// Party count and threshold of a key generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DkgParams {
    /// `n`, parties `1..=n`.
    pub parties: u32,
    /// `t`: shares needed to decrypt (`1..=n`; `n` for n-out-of-n).
    pub threshold: u32,
}

impl DkgParams {
    pub fn validate(&self) -> Result<(), TaheError> {
        check_counts(self.parties, self.threshold)
    }
    fn check_party(&self, i: u32) -> Result<(), TaheError> {
        if i == 0 || i > self.parties {
            return Err(TaheError::UnknownParty {
                party: i,
                parties: self.parties,
            });
        }
        Ok(())
    }
}

/// A dealer's broadcast: Feldman commitments `C_k = a_k G` to its polynomial.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DkgCommitments {
    dealer: u32,
    points: Vec<RistrettoPoint>,
}

impl DkgCommitments {
    pub fn dealer(&self) -> u32 {
        self.dealer
    }
    /// `dealer (u32) ‖ C_0 ‖ … ‖ C_{t-1}`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 32 * self.points.len());
        out.extend_from_slice(&self.dealer.to_be_bytes());
        for p in &self.points {
            out.extend_from_slice(p.compress().as_bytes());
        }
        out
    }
    /// Validates length (exactly `t` points), dealer index, canonical points and
    /// `C_0 ≠ O`. A failure is a [`TaheError::Complaint`] against `expected_dealer`
    /// (the party the bytes came from).
    pub fn decode(
        bytes: &[u8],
        params: &DkgParams,
        expected_dealer: u32,
    ) -> Result<Self, TaheError> {
        params.validate()?;
        params.check_party(expected_dealer)?;
        let complain = |reason: String| TaheError::Complaint {
            dealer: expected_dealer,
            reason,
        };
        if bytes.len() != 4 + 32 * params.threshold as usize {
            return Err(complain("commitments have the wrong length".into()));
        }
        let dealer = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        if dealer != expected_dealer {
            return Err(complain(format!("commitments claim dealer {dealer}")));
        }
        let mut points = Vec::with_capacity(params.threshold as usize);
        for (k, chunk) in bytes[4..].chunks_exact(32).enumerate() {
            points.push(
                point_from(chunk)
                    .ok_or_else(|| complain(format!("commitment {k} is not canonical")))?,
            );
        }
        if points[0].is_identity() {
            return Err(complain("commitment to the secret is the identity".into()));
        }
        Ok(DkgCommitments { dealer, points })
    }
}

/// A dealer's private share `f_i(j)` for recipient `j`. Secret: zeroized on drop, not
/// `Clone`, `Debug` elided.
pub struct DkgShare {
    dealer: u32,
    recipient: u32,
    value: Scalar,
}

impl Drop for DkgShare {
    fn drop(&mut self) {
        self.value.zeroize();
    }
}
impl zeroize::ZeroizeOnDrop for DkgShare {}

impl std::fmt::Debug for DkgShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DkgShare {{ dealer: {}, recipient: {}, .. }}",
            self.dealer, self.recipient
        )
    }
}

impl DkgShare {
    pub fn dealer(&self) -> u32 {
        self.dealer
    }
    pub fn recipient(&self) -> u32 {
        self.recipient
    }
    /// `dealer (u32) ‖ recipient (u32) ‖ value`, [`DKG_SHARE_LEN`] bytes. Secret: send
    /// only over a private channel to the recipient.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(DKG_SHARE_LEN);
        out.extend_from_slice(&self.dealer.to_be_bytes());
        out.extend_from_slice(&self.recipient.to_be_bytes());
        out.extend_from_slice(self.value.as_bytes());
        out
    }
    /// Validates length, indices (from `expected_dealer` to `me`) and a canonical
    /// scalar; failures are complaints against `expected_dealer`.
    pub fn decode(
        bytes: &[u8],
        params: &DkgParams,
        expected_dealer: u32,
        me: u32,
    ) -> Result<Self, TaheError> {
        params.validate()?;
        params.check_party(expected_dealer)?;
        params.check_party(me)?;
        let complain = |reason: &str| TaheError::Complaint {
            dealer: expected_dealer,
            reason: reason.to_string(),
        };
        if bytes.len() != DKG_SHARE_LEN {
            return Err(complain("share has the wrong length"));
        }
        let dealer = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        let recipient = u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if dealer != expected_dealer || recipient != me {
            return Err(complain("share has the wrong dealer or recipient"));
        }
        let value = scalar_from(&bytes[8..]).ok_or_else(|| complain("share is not canonical"))?;
        Ok(DkgShare {
            dealer,
            recipient,
            value,
        })
    }
}

/// Round 1 output of one dealer.
pub struct DkgDealing {
    /// To broadcast to every party.
    pub commitments: DkgCommitments,
    /// `shares[j - 1]` goes privately to party `j` (the dealer keeps its own).
    pub shares: Vec<DkgShare>,
}

/// Round 1 for party `dealer`: a random polynomial of degree `t - 1`, its Feldman
/// commitments and one share per party.
pub fn dkg_deal(
    params: &DkgParams,
    dealer: u32,
    rng: &mut SessionRng,
) -> Result<DkgDealing, TaheError> {
    params.validate()?;
    params.check_party(dealer)?;
    let mut coeffs: Vec<Scalar> = (0..params.threshold)
        .map(|k| {
            if k == 0 {
                random_nonzero_scalar(rng)
            } else {
                random_scalar(rng)
            }
        })
        .collect();
    let points = coeffs
        .iter()
        .map(|a| a * RISTRETTO_BASEPOINT_TABLE)
        .collect();
    let shares = (1..=params.parties)
        .map(|j| {
            let x = Scalar::from(j);
            let mut v = Scalar::ZERO;
            for a in coeffs.iter().rev() {
                v = v * x + a;
            }
            DkgShare {
                dealer,
                recipient: j,
                value: v,
            }
        })
        .collect();
    coeffs.iter_mut().for_each(Zeroize::zeroize);
    Ok(DkgDealing {
        commitments: DkgCommitments { dealer, points },
        shares,
    })
}

/// Feldman's check of one received share against its dealer's commitments:
/// `s G = Σ_k j^k C_k`. A mismatch is a [`TaheError::Complaint`] naming the dealer.
pub fn dkg_verify_share(
    params: &DkgParams,
    commitments: &DkgCommitments,
    share: &DkgShare,
) -> Result<(), TaheError> {
    let complain = |reason: &str| TaheError::Complaint {
        dealer: commitments.dealer,
        reason: reason.to_string(),
    };
    if commitments.points.len() != params.threshold as usize {
        return Err(complain("wrong number of commitments"));
    }
    if share.dealer != commitments.dealer {
        return Err(complain("share and commitments are from different dealers"));
    }
    params.check_party(share.recipient)?;
    if &share.value * RISTRETTO_BASEPOINT_TABLE
        != eval_commitments(&commitments.points, share.recipient)
    {
        return Err(complain("share does not match the dealer's commitments"));
    }
    Ok(())
}

/// Checks that there is exactly one commitment set per dealer `1..=n`, sorted by dealer.
fn sorted_commitments<'a>(
    params: &DkgParams,
    commitments: &'a [DkgCommitments],
) -> Result<Vec<&'a DkgCommitments>, TaheError> {
    let mut slots: Vec<Option<&DkgCommitments>> = vec![None; params.parties as usize];
    for c in commitments {
        params.check_party(c.dealer)?;
        if c.points.len() != params.threshold as usize {
            return Err(TaheError::Complaint {
                dealer: c.dealer,
                reason: "wrong number of commitments".into(),
            });
        }
        if slots[c.dealer as usize - 1].replace(c).is_some() {
            return Err(TaheError::Complaint {
                dealer: c.dealer,
                reason: "two commitment sets".into(),
            });
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| TaheError::Complaint {
                dealer: i as u32 + 1,
                reason: "no commitments received".into(),
            })
        })
        .collect()
}

/// The joint public key from all dealers' commitments (what every party, and any
/// observer, computes at the end of the key generation).
pub fn dkg_public_key(
    params: &DkgParams,
    commitments: &[DkgCommitments],
) -> Result<PublicKey, TaheError> {
    params.validate()?;
    let sorted = sorted_commitments(params, commitments)?;
    let agg: Vec<RistrettoPoint> = (0..params.threshold as usize)
        .map(|k| sorted.iter().map(|c| c.points[k]).sum())
        .collect();
    let h = agg[0];
    if h.is_identity() {
        return Err(TaheError::Parameters("joint key is the identity".into()));
    }
    let verification: Vec<RistrettoPoint> = (1..=params.parties)
        .map(|j| eval_commitments(&agg, j))
        .collect();
    if verification.iter().any(|v| v.is_identity()) {
        return Err(TaheError::Parameters(
            "a verification key is the identity".into(),
        ));
    }
    Ok(PublicKey::new(
        params.parties,
        params.threshold,
        h,
        verification,
    ))
}

/// Round 2 for party `me`: verifies every dealer's share for `me` (one from every
/// dealer `1..=n`, `me` included) against its commitments, and returns `me`'s key share
/// (with the joint public key). Any inconsistency aborts with a complaint naming the
/// dealer.
pub fn dkg_finish(
    params: &DkgParams,
    me: u32,
    commitments: &[DkgCommitments],
    shares: &[DkgShare],
) -> Result<KeyShare, TaheError> {
    params.validate()?;
    params.check_party(me)?;
    let sorted = sorted_commitments(params, commitments)?;
    let mut got = vec![false; params.parties as usize];
    let mut x = Scalar::ZERO;
    for s in shares {
        params.check_party(s.dealer)?;
        if s.recipient != me {
            return Err(TaheError::Complaint {
                dealer: s.dealer,
                reason: format!("share addressed to party {}", s.recipient),
            });
        }
        if std::mem::replace(&mut got[s.dealer as usize - 1], true) {
            return Err(TaheError::Complaint {
                dealer: s.dealer,
                reason: "two shares".into(),
            });
        }
        dkg_verify_share(params, sorted[s.dealer as usize - 1], s)?;
        x += s.value;
    }
    if let Some(missing) = got.iter().position(|g| !g) {
        x.zeroize();
        return Err(TaheError::Complaint {
            dealer: missing as u32 + 1,
            reason: "no share received".into(),
        });
    }
    let pk = dkg_public_key(params, commitments)?;
    debug_assert_eq!(
        &x * RISTRETTO_BASEPOINT_TABLE,
        pk.verification[me as usize - 1]
    );
    let pk_digest = pk.digest;
    Ok(KeyShare {
        index: me,
        x,
        pk,
        pk_digest,
    })
}

/// Runs the whole key generation in one process (all parties' rounds): for tests,
/// benchmarks and single-host simulations. Returns the shares of parties `1..=n`.
pub fn dkg_local(params: &DkgParams, rng: &mut SessionRng) -> Result<Vec<KeyShare>, TaheError> {
    params.validate()?;
    let mut dealings: Vec<DkgDealing> = (1..=params.parties)
        .map(|i| dkg_deal(params, i, rng))
        .collect::<Result<_, _>>()?;
    let commitments: Vec<DkgCommitments> = dealings.iter().map(|d| d.commitments.clone()).collect();
    let mut inboxes: Vec<Vec<DkgShare>> = (0..params.parties).map(|_| Vec::new()).collect();
    for d in dealings.iter_mut() {
        for s in d.shares.drain(..) {
            inboxes[s.recipient as usize - 1].push(s);
        }
    }
    inboxes
        .iter()
        .enumerate()
        .map(|(j, inbox)| dkg_finish(params, j as u32 + 1, &commitments, inbox))
        .collect()
}

/// The encoding of `G`, for tests of the decoders.
pub fn basepoint_bytes() -> [u8; 32] {
    RISTRETTO_BASEPOINT_POINT.compress().to_bytes()
}

/// Ciphertexts hashed per step of the batch coefficients.
const TASK: usize = 1024;

/// A coefficient as a scalar.
fn scalar_of(rho: u128) -> Scalar {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&rho.to_le_bytes());
    Scalar::from_bytes_mod_order(b)
}
