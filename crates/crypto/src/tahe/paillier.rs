//! Threshold Paillier / Damgard-Jurik with a trusted dealer.
//!
//! # Scheme (Damgard-Jurik 2001, Sec. 5; Shoup 2000; de Jong, Sec. 2.4)
//!
//! This is the threshold variant the thesis implements (de Jong, Sec. 2.4, with `s = 1`),
//! for any Damgard-Jurik exponent `s`: plaintexts in `Z_{n^s}`, ciphertexts in
//! `Z*_{n^{s+1}}`, `Enc(M; r) = (1+n)^M r^{n^s} mod n^{s+1}` (the generator `g = 1 + n`).
//!
//! **Key generation** by a dealer ([`Dealer`]): safe primes `p = 2p' + 1`,
//! `q = 2q' + 1`, `n = pq`, `m = p'q'`. The secret exponent `d` satisfies `d ≡ 0 (mod m)`
//! and `d ≡ 1 (mod n^s)` (`d = m (m^{-1} mod n^s)`). It is shared with Shoup's
//! polynomial sharing over the integers modulo `n^s m`:
//! `f(X) = d + a_1 X + … + a_{t-1} X^{t-1} mod n^s m`, `a_k` uniform in `[0, n^s m)`;
//! party `i` receives `s_i = f(i)`. With `Δ = n_parties!`, the public key carries a
//! random square `v` (a generator of the cyclic group of squares, with overwhelming
//! probability) and the verification keys `v_i = v^{Δ s_i} mod n^{s+1}`.
//!
//! **Decryption share** of `c` by party `i`: `c_i = c^{2Δ s_i} mod n^{s+1}`, with a proof
//! that `log_{c^4}(c_i^2) = log_v(v_i)` (Shoup's proof of equality of discrete logs in a
//! group of unknown order, as in Damgard-Jurik Sec. 5): the prover picks `r` with
//! `(s+1)|n| + |Δ| + 2·256 + 128` random bits, sends `a = c^{4r}`, `b = v^r`, gets the
//! Fiat-Shamir challenge `e` (256 bits of SHA-256 over the key, the party, `c`, `c_i`,
//! `a`, `b`) and answers `z = r + e Δ s_i` over the integers (statistically hiding
//! `Δ s_i`). The verifier checks `c^{4z} c_i^{-2e} = a` and `v^z v_i^{-e} = b` by
//! recomputing `e`.
//!
//! **A batch of shares** (`share_batch`, what the protocols send): party `i`'s
//! `c_{ij} = c_j^{2Δ s_i}` for every ciphertext `c_j` of the batch and **one** proof for
//! all of them: with weights `ρ_j` of 128 bits from SHA-256 over the key, the party and
//! every `c_j` and `c_{ij}` (Fiat-Shamir, fixed after the shares), `C = Π c_j^{ρ_j}` and
//! `C_i = Π c_{ij}^{ρ_j}`, the proof above that `log_{C^4}(C_i^2) = log_v(v_i)`. If some
//! `c_{ij}^2 ≠ c_j^{4Δ s_i}`, the errors `d_j = c_{ij}^2 / c_j^{4Δ s_i}` lie in the group
//! of squares, whose order `n^s p'q'` has no prime factor below 2^128 at any allowed
//! size; `Π d_j^{ρ_j} = 1` then holds for at most a 2^-128 fraction of the weights
//! (Bellare, Garay and Rabin's small-exponent test), so the proof fails except with
//! that probability. The verifier pays two exponentiations by 128-bit weights per
//! share instead of four full-size ones, the prover one full-size exponentiation
//! instead of three.
//!
//! **Combine** with a set `S` of `t` valid shares: the integer Lagrange coefficients
//! `μ_i = Δ Π_{j∈S, j≠i} j / (j - i)` give
//! `c' = Π c_i^{2μ_i} = c^{4Δ² d} = (1+n)^{4Δ² M} mod n^{s+1}` (the `r^{n^s}` part
//! vanishes because `4m` is a multiple of its order; `d ≡ 1 (mod n^s)`). Damgard-Jurik's
//! extraction gives `4Δ² M mod n^s`, and `M` after multiplying by `(4Δ²)^{-1} mod n^s`.
//!
//! # Encryption randomness
//!
//! Every encryption and re-randomization multiplies by `h^α` with a fresh `2κ`-bit `α`,
//! `κ` the modulus's strength (256 bits at the default 3,072; the single-key
//! [`crate::ahe::paillier::short_exponent_bits`]), as in Damgard, Jurik and Nielsen's
//! short-exponent encryption, where `h = x^{n^s} mod n^{s+1}` and `x` is
//! derived from `n` and `s` by SHA-256 ([`PublicKey`]'s first encryption computes it and
//! a fixed-base table with 8-bit windows: at most 31 multiplications modulo `n^{s+1}` per
//! encryption at 3,072 bits, against a full exponentiation `r^{n^s}` before, about 100
//! times the cost). Hiding then rests on DCR and the DJN short-exponent assumption (that
//! `h^α` with a `2κ`-bit `α` cannot be told from a uniform `n^s`-th residue by anyone who
//! cannot factor `n`). In the single-key scheme the key owner can factor, so a party
//! hiding a ciphertext *from the owner* uses full-size randomness; here nobody holds
//! the factorisation once the dealer has erased it, and a dealer that did not erase it
//! could decrypt everything anyway, so the short exponent asks for no trust beyond the
//! dealer's. Re-randomized ciphertexts are therefore indistinguishable from fresh ones
//! computationally, not statistically.
//!
//! # Trust in the dealer
//!
//! The dealer knows the factorisation and `d`, i.e. it can decrypt everything; the
//! scheme is only as good as the dealer's honesty and its *erasure* of `p, q, p', q',
//! m, d` and the polynomial after dealing. [`Dealer::deal`] keeps them in local
//! variables overwritten before it returns (GMP temporaries are not covered), and
//! nothing secret leaves it except the key shares, which must go to their parties
//! over private channels. The public key cannot be checked for well-formedness by the
//! parties (that `n` is a product of two safe primes, that `v` generates the squares,
//! that the `v_i` belong to one polynomial): the decoder checks sizes, ranges and
//! coprimality only. In Miyaji-Nishida's protocol (de Jong, Ch. 4) a dealer is part of
//! the protocol anyway; where no party may be trusted, use the dealer-free
//! [`super::elgamal`] scheme.
//!
//! # Prime type
//!
//! Safe primes, as Shoup and Damgard-Jurik require: the squares of `Z*_{n^{s+1}}` then form
//! a cyclic group of order `n^s m` with `m = p'q'` having only large prime factors,
//! which makes the proofs sound and `v` a generator with overwhelming probability.
//! [`safe_prime`] sieves candidates `q'` so that neither `q'` nor `2q' + 1` has a factor
//! below 2^16, then runs a base-2 Fermat test on `2q' + 1` and Miller-Rabin on both.
//! At 1536 bits (for the default 3072-bit modulus) this takes tens of seconds to minutes
//! per prime (see the `tahe_bench` example), so tests use the fixed, *public* primes of
//! [`insecure_test_primes`] through [`Dealer::deal_with_primes`].
//!
//! # Encodings (fixed width, big-endian)
//!
//! With `B = modulus_bits / 8` and `C = (s + 1) B` (the width of `n^{s+1}`):
//!
//! * ciphertext: `C` bytes, in `[1, n^{s+1})` and coprime to `n`;
//! * decryption share: `party (u32) ‖ c_i (C) ‖ e (32) ‖ z (Z)` where `Z` is the width
//!   of the largest honest `z` ([`PublicKey::share_len`]); `c_i` as a ciphertext, `z`
//!   below its bound;
//! * public key: `n_parties (u32) ‖ t (u32) ‖ modulus_bits (u32) ‖ s (u32) ‖ n (B) ‖ v (C)
//!   ‖ v_1 … v_n (C each)`.
//!
//! # Caveats
//! GMP arithmetic is not constant-time; secret integers are overwritten on drop.

use rayon::prelude::*;
use rug::integer::Order;
use rug::{Complete, Integer};
use sha2::{Digest, Sha256};

use super::{
    MAX_PARTIES, SerialSums, SplitMesh, TaheError, ThresholdAhe, check_counts, check_enough,
    check_share_set, invalid,
};
use std::sync::{Arc, OnceLock};

pub use crate::ahe::paillier::safe_prime;
use crate::ahe::paillier::{
    self as single, dj_dlog, is_safe_prime, par_encoded, random_below, random_bits, random_unit,
    short_exponent_bits, wipe, write_be,
};
use crate::bignum::FixedBase;
use crate::group::xmd::expand_message_xmd;
use crate::rng::SessionRng;

pub use crate::ahe::paillier::Ciphertext;

/// Bits of the Fiat-Shamir challenge.
const CHALLENGE_BITS: u32 = 256;
/// Statistical hiding of `Δ s_i` in the proof response (bits).
const PROOF_SLACK_BITS: u32 = 128;

/// Key parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Bit length of `n`: a multiple of 64, 1024..=8192 (3072 for 128-bit security;
    /// 1024 only for tests).
    pub modulus_bits: u32,
    /// Damgard-Jurik exponent (plaintexts mod `n^s`), 1..=4; the thesis uses 1.
    pub s: u32,
    /// Number of parties `n`.
    pub parties: u32,
    /// Shares needed to decrypt, `t` (`1..=n`).
    pub threshold: u32,
}

impl Params {
    /// 128-bit security: a 3072-bit modulus, `s = 1`.
    pub fn new(parties: u32, threshold: u32) -> Self {
        Params {
            modulus_bits: 3072,
            s: 1,
            parties,
            threshold,
        }
    }

    pub fn validate(&self) -> Result<(), TaheError> {
        check_counts(self.parties, self.threshold)?;
        check_sizes(self.modulus_bits, self.s)
    }
}

fn check_sizes(modulus_bits: u32, s: u32) -> Result<(), TaheError> {
    if !(1024..=8192).contains(&modulus_bits) || !modulus_bits.is_multiple_of(64) {
        return Err(TaheError::Parameters(format!(
            "modulus_bits must be a multiple of 64 in 1024..=8192, got {modulus_bits}"
        )));
    }
    if !(1..=4).contains(&s) {
        return Err(TaheError::Parameters(format!(
            "Damgard-Jurik s must be in 1..=4, got {s}"
        )));
    }
    Ok(())
}

/// Threshold Paillier / Damgard-Jurik (see the module docs).
pub struct ThresholdPaillier;

/// `n`, `s`, `v`, the verification keys and derived constants.
#[derive(Clone)]
pub struct PublicKey {
    parties: u32,
    threshold: u32,
    modulus_bits: u32,
    /// `n`, `n^0..=n^{s+1}` and the arithmetic of the single-key scheme (its DJN base is
    /// unused here and set to 1).
    inner: single::PublicKey,
    v: Integer,
    verification: Vec<Integer>,
    /// `Δ = parties!`.
    delta: Integer,
    /// `(4Δ²)^{-1} mod n^s`.
    combine_inv: Integer,
    /// Bits of the proof nonce `r`.
    r_bits: u32,
    digest: [u8; 32],
    /// The encryption base `h` derived from `n` and its fixed-base table, made on first
    /// use (module docs, "Encryption randomness").
    djn: Arc<OnceLock<FixedBase>>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tahe::paillier::PublicKey {{ n: {}, t: {}, modulus_bits: {}, s: {} }}",
            self.parties,
            self.threshold,
            self.modulus_bits,
            self.inner.s()
        )
    }
}

impl PublicKey {
    fn new(
        parties: u32,
        threshold: u32,
        modulus_bits: u32,
        s: u32,
        n: Integer,
        v: Integer,
        verification: Vec<Integer>,
    ) -> Result<Self, TaheError> {
        let delta = Integer::factorial(parties).complete();
        let inner = single::PublicKey::new(n, s, Integer::from(1))
            .map_err(|e| invalid("public key", e.to_string()))?;
        let four_d2 = Integer::from(&delta * &delta) * 4u32;
        let combine_inv = four_d2
            .invert(inner.plaintext_modulus())
            .map_err(|_| invalid("public key", "n shares a factor with 4Δ²"))?;
        let r_bits = (s + 1) * modulus_bits
            + delta.significant_bits()
            + 2 * CHALLENGE_BITS
            + PROOF_SLACK_BITS;
        let mut pk = PublicKey {
            parties,
            threshold,
            modulus_bits,
            inner,
            v,
            verification,
            delta,
            combine_inv,
            r_bits,
            digest: [0; 32],
            djn: Arc::new(OnceLock::new()),
        };
        let mut h = Sha256::new();
        h.update(b"privset/tahe/paillier/pk/v1");
        h.update(encode_pk(&pk));
        pk.digest = h.finalize().into();
        Ok(pk)
    }

    /// SHA-256 of the encoded key (domain-separated): what parties compare to be sure
    /// they hold shares of one key.
    pub fn fingerprint(&self) -> [u8; 32] {
        self.digest
    }

    /// Bits of the modulus `n`.
    pub fn modulus_bits(&self) -> u32 {
        self.modulus_bits
    }

    /// The modulus `n`.
    pub fn n(&self) -> &Integer {
        self.inner.n()
    }
    /// The Damgard-Jurik `s`.
    pub fn s(&self) -> u32 {
        self.inner.s()
    }
    /// The plaintext modulus `n^s`.
    pub fn plaintext_modulus(&self) -> &Integer {
        self.inner.plaintext_modulus()
    }
    fn nn(&self) -> &Integer {
        self.inner.ciphertext_modulus()
    }
    fn ct_len(&self) -> usize {
        (self.s() as usize + 1) * self.modulus_bits as usize / 8
    }
    /// Bytes of the proof response `z` (it is below `2^(r_bits + 1)`).
    fn z_len(&self) -> usize {
        (self.r_bits as usize + 1).div_ceil(8)
    }
    /// Bytes of an encoded decryption share.
    pub fn share_len(&self) -> usize {
        4 + self.ct_len() + 32 + self.z_len()
    }
    fn ct_bytes(&self, x: &Integer) -> Vec<u8> {
        let mut out = vec![0u8; self.ct_len()];
        write_be(x, &mut out);
        out
    }
    /// `h^α` for a fresh 2κ-bit `α`: the randomizer of every encryption and
    /// re-randomization (module docs, "Encryption randomness").
    fn short_randomizer(&self, rng: &mut SessionRng) -> Integer {
        self.short_randomizers(rng, 1)
            .pop()
            .expect("one randomizer")
    }
    /// `count` of [`Self::short_randomizer`], their table products computed together
    /// (eight at a time on AVX-512 IFMA).
    fn short_randomizers(&self, rng: &mut SessionRng, count: usize) -> Vec<Integer> {
        let bits = short_exponent_bits(self.modulus_bits);
        let table = self
            .djn
            .get_or_init(|| self.inner.fixed_base(&djn_base(self), bits));
        single::short_randomizers(table, bits, rng, count)
    }
    fn decode_ct(&self, bytes: &[u8], what: &'static str) -> Result<Integer, TaheError> {
        if bytes.len() != self.ct_len() {
            return Err(invalid(what, "wrong length"));
        }
        self.inner
            .decode_ct_int(bytes, 0)
            .map_err(|e| invalid(what, e.to_string()))
    }
}

/// The public encryption base `h = x^{n^s} mod n^{s+1}`, `x` from `n` and `s` by
/// RFC 9380's `expand_message_xmd` with SHA-256 (`|n| + 128` bits, reduced mod `n`):
/// every holder of the key derives the same `h`, and nobody chose it.
fn djn_base(pk: &PublicKey) -> Integer {
    let (n, s) = (pk.n(), pk.s());
    let len = (n.significant_bits() as usize + 128).div_ceil(8);
    let mut msg = vec![0u8; n.significant_digits::<u8>() + 8];
    write_be(n, &mut msg[8..]);
    msg[..4].copy_from_slice(&s.to_be_bytes());
    for attempt in 0u32.. {
        msg[4..8].copy_from_slice(&attempt.to_be_bytes());
        let wide = expand_message_xmd::<Sha256>(&msg, b"privset/tahe/paillier/djn-base/v1", len)
            .expect("at most 1,040 bytes, within expand_message_xmd's limit");
        let x = Integer::from_digits(&wide, Order::Msf) % n;
        if x > 1 && x.gcd_ref(n).complete() == 1 {
            return pow(&x, pk.plaintext_modulus(), pk.nn());
        }
    }
    unreachable!("a unit comes up within a few attempts")
}

fn encode_pk(pk: &PublicKey) -> Vec<u8> {
    let b = pk.modulus_bits as usize / 8;
    let c = pk.ct_len();
    let mut out = Vec::with_capacity(16 + b + c * (pk.verification.len() + 1));
    for x in [pk.parties, pk.threshold, pk.modulus_bits, pk.s()] {
        out.extend_from_slice(&x.to_be_bytes());
    }
    let start = out.len();
    out.resize(start + b, 0);
    write_be(pk.n(), &mut out[start..]);
    for x in std::iter::once(&pk.v).chain(&pk.verification) {
        out.extend_from_slice(&pk.ct_bytes(x));
    }
    out
}

/// Party `index`'s share `s_i = f(i)` of `d`. Overwritten on drop, not `Clone`, `Debug`
/// elided.
pub struct KeyShare {
    index: u32,
    si: Integer,
    pk: PublicKey,
}

impl Drop for KeyShare {
    fn drop(&mut self) {
        wipe(&mut self.si);
    }
}
impl zeroize::ZeroizeOnDrop for KeyShare {}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tahe::paillier::KeyShare {{ index: {}, .. }}",
            self.index
        )
    }
}

impl KeyShare {
    pub fn index(&self) -> u32 {
        self.index
    }
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }

    /// Bytes of an encoded share of `pk`: `s_i < n^s m < n^{s+1}`.
    fn secret_len(pk: &PublicKey) -> usize {
        pk.ct_len()
    }

    /// `index (u32) ‖ s_i` (fixed width, big-endian): for the party's private key file.
    /// The caller must keep the bytes private and erase them.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; 4 + Self::secret_len(&self.pk)];
        out[..4].copy_from_slice(&self.index.to_be_bytes());
        write_be(&self.si, &mut out[4..]);
        out
    }

    /// A share of `pk` from [`Self::encode`], checked against the key: the index is one
    /// of its parties and `v^{Δ s_i}` is that party's verification key (so a share of
    /// another key, or of another party, is refused).
    pub fn decode(pk: &PublicKey, bytes: &[u8]) -> Result<Self, TaheError> {
        let what = "key share";
        if bytes.len() != 4 + Self::secret_len(pk) {
            return Err(invalid(what, "wrong length"));
        }
        let index = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        if index == 0 || index > pk.parties {
            return Err(invalid(
                what,
                format!("party {index} of a key for {} parties", pk.parties),
            ));
        }
        let mut si = Integer::from_digits(&bytes[4..], Order::Msf);
        let expected = &pk.verification[index as usize - 1];
        if si >= *pk.nn() || pow(&pk.v, &Integer::from(&pk.delta * &si), pk.nn()) != *expected {
            wipe(&mut si);
            return Err(invalid(
                what,
                format!("not party {index}'s share of this public key"),
            ));
        }
        Ok(KeyShare {
            index,
            si,
            pk: pk.clone(),
        })
    }
}

/// Party `party`'s `c_i = c^{2Δ s_i}` with the proof `(e, z)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecryptionShare {
    party: u32,
    ci: Integer,
    e: Integer,
    z: Integer,
}

impl DecryptionShare {
    pub fn party(&self) -> u32 {
        self.party
    }
}

fn challenge(
    pk: &PublicKey,
    party: u32,
    c: &Integer,
    ci: &Integer,
    a: &Integer,
    b: &Integer,
) -> Integer {
    let mut h = Sha256::new();
    h.update(b"privset/tahe/paillier/dleq/v1");
    h.update(pk.digest);
    h.update(party.to_be_bytes());
    for x in [c, ci, a, b] {
        h.update(pk.ct_bytes(x));
    }
    Integer::from_digits(&h.finalize()[..], Order::Msf)
}

fn pow(base: &Integer, exp: &Integer, m: &Integer) -> Integer {
    // Negative exponents invert; every base here is a unit (checked on decode).
    base.pow_mod_ref(exp, m)
        .map(Integer::from)
        .unwrap_or_else(|| Integer::from(0))
}

/// The share `c_i = c^{2Δ s_i}` (computed by the caller) with Shoup's proof that
/// `log_{c^4}(c_i^2) = log_v(v_i)`.
fn decryption_share_of(
    ks: &KeyShare,
    c: &Integer,
    ci: Integer,
    rng: &mut SessionRng,
) -> DecryptionShare {
    let pk = &ks.pk;
    let nn = pk.nn();
    let mut exp = Integer::from(&pk.delta * &ks.si);
    let mut r = random_bits(rng, pk.r_bits);
    let c4 = pow(c, &Integer::from(4), nn);
    let a = pow(&c4, &r, nn);
    let b = pow(&pk.v, &r, nn);
    let e = challenge(pk, ks.index, c, &ci, &a, &b);
    let z = Integer::from(&e * &exp) + &r;
    wipe(&mut exp);
    wipe(&mut r);
    DecryptionShare {
        party: ks.index,
        ci,
        e,
        z,
    }
}

/// Bits of each weight of a batch proof.
const BATCH_WEIGHT_BITS: usize = 128;

/// `(C, C_i) = (Π c_j^{ρ_j}, Π c_{ij}^{ρ_j})` with the batch's Fiat-Shamir weights
/// (module docs, "A batch of shares").
fn batch_combination(
    pk: &PublicKey,
    party: u32,
    cts: &[&Integer],
    cis: &[Integer],
) -> (Integer, Integer) {
    let mut h = Sha256::new();
    h.update(b"privset/tahe/paillier/batch/v1");
    h.update(pk.digest);
    h.update(party.to_be_bytes());
    h.update((cts.len() as u64).to_be_bytes());
    for x in cts.iter().copied().chain(cis) {
        h.update(pk.ct_bytes(x));
    }
    let seed: [u8; 32] = h.finalize().into();
    let weight = |j: usize| {
        let mut h = Sha256::new();
        h.update(seed);
        h.update((j as u64).to_be_bytes());
        Integer::from_digits(&h.finalize()[..BATCH_WEIGHT_BITS / 8], Order::Msf)
    };
    let weights: Vec<Integer> = (0..cts.len()).map(weight).collect();
    let product = |xs: Vec<Integer>| {
        let powered = pk.inner.arith().pow_each_own(&xs, &weights);
        let all: Vec<&Integer> = powered.iter().collect();
        pk.inner
            .arith()
            .product_each(&[all])
            .pop()
            .expect("one group")
    };
    let (c, ci) = rayon::join(
        || product(cts.iter().map(|&c| c.clone()).collect()),
        || product(cis.to_vec()),
    );
    (c, ci)
}

fn verify(pk: &PublicKey, c: &Integer, s: &DecryptionShare) -> Result<(), TaheError> {
    let bad = |reason: &str| TaheError::BadShare {
        party: s.party,
        reason: reason.to_string(),
    };
    let vi = pk
        .verification
        .get((s.party as usize).wrapping_sub(1))
        .ok_or(TaheError::UnknownParty {
            party: s.party,
            parties: pk.parties,
        })?;
    let nn = pk.nn();
    if s.z.is_negative()
        || s.z.significant_bits() > pk.r_bits + 1
        || s.e.significant_bits() > CHALLENGE_BITS
    {
        return Err(bad("proof values out of range"));
    }
    let c4 = pow(c, &Integer::from(4), nn);
    let ci2 = pk.inner.mul_mod(&s.ci, &s.ci);
    let neg_e = Integer::from(-&s.e);
    // a = c^{4z} c_i^{-2e}, b = v^z v_i^{-e}
    let a = pk
        .inner
        .mul_mod(&pow(&c4, &s.z, nn), &pow(&ci2, &neg_e, nn));
    let b = pk
        .inner
        .mul_mod(&pow(&pk.v, &s.z, nn), &pow(vi, &neg_e, nn));
    if challenge(pk, s.party, c, &s.ci, &a, &b) != s.e {
        return Err(bad("proof of correct decryption does not verify"));
    }
    Ok(())
}

/// Verifies the shares and returns `M ∈ Z_{n^s}` from the first `t` of them.
fn combine_int(
    pk: &PublicKey,
    c: &Ciphertext,
    shares: &[DecryptionShare],
) -> Result<Integer, TaheError> {
    check_share_set(shares.iter().map(|s| s.party), pk.parties)?;
    for s in shares {
        verify(pk, &c.0, s)?;
    }
    combine_verified(pk, shares)
}

/// Combines shares already checked (distinct parties, proofs verified).
fn combine_verified(pk: &PublicKey, shares: &[DecryptionShare]) -> Result<Integer, TaheError> {
    let by_party: Vec<Vec<Integer>> = shares.iter().map(|s| vec![s.ci.clone()]).collect();
    let parties: Vec<u32> = shares.iter().map(|s| s.party).collect();
    Ok(combine_verified_many(pk, &parties, &by_party)?
        .pop()
        .expect("one ciphertext"))
}

/// Combines the checked shares of many ciphertexts: `shares[i][k]` is party
/// `parties[i]`'s share of ciphertext `k`. The first `threshold` parties are used;
/// each one's Lagrange exponent is the same for every ciphertext, so its powers are
/// taken together (eight at a time on AVX-512 IFMA).
fn combine_verified_many(
    pk: &PublicKey,
    parties: &[u32],
    shares: &[Vec<Integer>],
) -> Result<Vec<Integer>, TaheError> {
    check_enough(parties.len(), pk.threshold)?;
    let used = &parties[..pk.threshold as usize];
    let count = shares.first().map_or(0, Vec::len);
    // (c_i^{|μ_i|} for every ciphertext, μ_i < 0).
    let powered: Vec<(Vec<Integer>, bool)> = used
        .iter()
        .zip(shares)
        .map(|(&i, cis)| {
            // μ_i = Δ Π_{j≠i} j / (j - i), an integer.
            let mut num = pk.delta.clone();
            let mut den = Integer::from(1);
            for &j in used {
                if j != i {
                    num *= j;
                    den *= Integer::from(j) - i;
                }
            }
            let mu = num.div_exact(&den) * 2u32;
            let negative = mu < 0;
            (pk.inner.arith().pow_each(cis, &mu.abs()), negative)
        })
        .collect();
    // Π_{μ_i > 0} c_i^{μ_i} / Π_{μ_i < 0} c_i^{-μ_i}: one inversion per ciphertext.
    let side = |negative: bool| -> Vec<Integer> {
        let groups: Vec<Vec<&Integer>> = (0..count)
            .map(|k| {
                powered
                    .iter()
                    .filter(|(_, n)| *n == negative)
                    .map(|(p, _)| &p[k])
                    .collect()
            })
            .collect();
        pk.inner.arith().product_each(&groups)
    };
    let (above, below) = (side(false), side(true));
    let pows = &pk.inner.n_pows;
    Ok(above
        .par_iter()
        .zip(below.par_iter())
        .map(|(a, b)| {
            // Every share is a unit (checked on decode), so their product is invertible.
            let b_inv = pow(b, &Integer::from(-1), pk.nn());
            let acc = pk.inner.mul_mod(a, &b_inv);
            let m4d2 = dj_dlog(&acc, pk.s(), pows, &pk.inner.inv_fact);
            let mut m = m4d2 * &pk.combine_inv;
            m.modulo_mut(pk.plaintext_modulus());
            m
        })
        .collect())
}

impl ThresholdPaillier {
    /// Verifies the shares and decrypts the full plaintext in `Z_{n^s}`.
    pub fn combine_integer(
        pk: &PublicKey,
        c: &Ciphertext,
        shares: &[DecryptionShare],
    ) -> Result<Integer, TaheError> {
        combine_int(pk, c, shares)
    }
}

impl ThresholdAhe for ThresholdPaillier {
    const NAME: &'static str = "paillier";
    type PublicKey = PublicKey;
    type KeyShare = KeyShare;
    type Ciphertext = Ciphertext;
    type DecryptionShare = DecryptionShare;
    type Scalar = Integer;

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

    fn scalar_from_u64(pk: &PublicKey, v: u64) -> Integer {
        Integer::from(v).modulo(pk.plaintext_modulus())
    }
    fn scalar_neg(pk: &PublicKey, a: &Integer) -> Integer {
        Integer::from(-a).modulo(pk.plaintext_modulus())
    }
    /// Uniform in `Z*_{n^s}` (coprime to `n`).
    fn scalar_add(pk: &PublicKey, a: &Integer, b: &Integer) -> Integer {
        (a + b).complete() % pk.plaintext_modulus()
    }
    fn scalar_mul(pk: &PublicKey, a: &Integer, b: &Integer) -> Integer {
        (a * b).complete() % pk.plaintext_modulus()
    }
    fn scalar_from_wide(pk: &PublicKey, bytes: &[u8; 64]) -> Integer {
        Integer::from_digits(bytes, Order::Msf) % pk.plaintext_modulus()
    }
    fn random_unit(pk: &PublicKey, rng: &mut SessionRng) -> Integer {
        loop {
            let r = random_below(rng, pk.plaintext_modulus());
            if r != 0 && r.gcd_ref(pk.n()).complete() == 1 {
                return r;
            }
        }
    }

    /// `(1+n)^m h^α` with a 256-bit `α`; `m` is reduced mod `n^s`.
    fn encrypt(pk: &PublicKey, m: &Integer, rng: &mut SessionRng) -> Ciphertext {
        let mut c = pk.inner.one_plus_n_pow(m);
        c *= pk.short_randomizer(rng);
        c.modulo_mut(pk.nn());
        Ciphertext(c)
    }
    fn add(pk: &PublicKey, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        Ciphertext(pk.inner.mul_mod(&a.0, &b.0))
    }
    /// `c^(k mod n^s)`.
    fn mul_scalar(pk: &PublicKey, c: &Ciphertext, k: &Integer) -> Ciphertext {
        let k = k.modulo_ref(pk.plaintext_modulus()).complete();
        Ciphertext(pow(&c.0, &k, pk.nn()))
    }
    /// Multiplies by `h^α` for a fresh 256-bit `α`: the result is distributed as a fresh
    /// encryption of the same plaintext (module docs, "Encryption randomness").
    fn rerandomize(pk: &PublicKey, c: &Ciphertext, rng: &mut SessionRng) -> Ciphertext {
        Ciphertext(pk.inner.mul_mod(&c.0, &pk.short_randomizer(rng)))
    }

    fn decryption_share(ks: &KeyShare, c: &Ciphertext, rng: &mut SessionRng) -> DecryptionShare {
        let pk = &ks.pk;
        let mut exp = Integer::from(&pk.delta * &ks.si) * 2u32;
        let ci = pow(&c.0, &exp, pk.nn());
        wipe(&mut exp);
        decryption_share_of(ks, &c.0, ci, rng)
    }
    fn share_party(share: &DecryptionShare) -> u32 {
        share.party
    }
    fn verify_share(
        pk: &PublicKey,
        c: &Ciphertext,
        share: &DecryptionShare,
    ) -> Result<(), TaheError> {
        verify(pk, &c.0, share)
    }

    fn combine(
        pk: &PublicKey,
        c: &Ciphertext,
        shares: &[DecryptionShare],
        max: u64,
    ) -> Result<u64, TaheError> {
        let m = combine_int(pk, c, shares)?;
        m.to_u64()
            .filter(|&v| v <= max)
            .ok_or(TaheError::OutOfRange { max })
    }
    fn is_zero(
        pk: &PublicKey,
        c: &Ciphertext,
        shares: &[DecryptionShare],
    ) -> Result<bool, TaheError> {
        Ok(combine_int(pk, c, shares)? == 0)
    }

    fn ciphertext_len(pk: &PublicKey) -> usize {
        pk.ct_len()
    }
    fn encode_ciphertext(pk: &PublicKey, c: &Ciphertext) -> Vec<u8> {
        pk.ct_bytes(&c.0)
    }
    fn decode_ciphertext(pk: &PublicKey, bytes: &[u8]) -> Result<Ciphertext, TaheError> {
        pk.decode_ct(bytes, "ciphertext").map(Ciphertext)
    }

    fn share_len(pk: &PublicKey) -> usize {
        pk.share_len()
    }
    fn encode_share(pk: &PublicKey, s: &DecryptionShare) -> Vec<u8> {
        let mut out = vec![0u8; pk.share_len()];
        out[..4].copy_from_slice(&s.party.to_be_bytes());
        let c = pk.ct_len();
        write_be(&s.ci, &mut out[4..4 + c]);
        write_be(&s.e, &mut out[4 + c..36 + c]);
        write_be(&s.z, &mut out[36 + c..]);
        out
    }
    fn decode_share(pk: &PublicKey, bytes: &[u8]) -> Result<DecryptionShare, TaheError> {
        let what = "decryption share";
        if bytes.len() != pk.share_len() {
            return Err(invalid(what, "wrong length"));
        }
        let party = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        if party == 0 || party > pk.parties {
            return Err(TaheError::UnknownParty {
                party,
                parties: pk.parties,
            });
        }
        let c = pk.ct_len();
        let ci = pk.decode_ct(&bytes[4..4 + c], what)?;
        let e = Integer::from_digits(&bytes[4 + c..36 + c], Order::Msf);
        let z = Integer::from_digits(&bytes[36 + c..], Order::Msf);
        if z.significant_bits() > pk.r_bits + 1 {
            return Err(invalid(what, "z is out of range"));
        }
        Ok(DecryptionShare { party, ci, e, z })
    }

    /// On all cores (`ahe::paillier::par_encoded`: the bytes do not depend on the thread
    /// count).
    fn encrypt_encoded(pk: &PublicKey, ms: &[Integer], rng: &mut SessionRng) -> Vec<u8> {
        par_encoded(ms, pk.ct_len(), rng, |chunk, r| {
            let randomizers = pk.short_randomizers(r, chunk.len());
            chunk
                .iter()
                .zip(randomizers)
                .map(|(m, h)| pk.inner.mul_mod(&pk.inner.one_plus_n_pow(m), &h))
                .collect()
        })
    }
    /// On all cores, as the default: `ReRand(k c)` with a fresh random unit `k`.
    fn randomize_encoded(pk: &PublicKey, cts: &[Ciphertext], rng: &mut SessionRng) -> Vec<u8> {
        par_encoded(cts, pk.ct_len(), rng, |chunk, r| {
            let bases: Vec<Integer> = chunk.iter().map(|c| c.0.clone()).collect();
            let ks: Vec<Integer> = chunk.iter().map(|_| Self::random_unit(pk, r)).collect();
            let scaled = pk.inner.arith().pow_each_own(&bases, &ks);
            let randomizers = pk.short_randomizers(r, chunk.len());
            scaled
                .iter()
                .zip(randomizers)
                .map(|(c, h)| pk.inner.mul_mod(c, &h))
                .collect()
        })
    }

    /// The decoded ciphertexts.
    type Tested = Vec<Ciphertext>;
    fn tested_from_encoded(pk: &PublicKey, bytes: &[u8]) -> Result<Vec<Ciphertext>, TaheError> {
        Self::decode_ciphertexts(pk, bytes)
    }
    fn tested_from_ciphertexts(_pk: &PublicKey, cts: &[Ciphertext]) -> Vec<Ciphertext> {
        cts.to_vec()
    }
    fn tested_len(tested: &Vec<Ciphertext>) -> usize {
        tested.len()
    }
    /// `party (u32) ‖ c_{i1} … c_{im} ‖ e (32) ‖ z` (see "A batch of shares").
    fn share_batch_len(pk: &PublicKey, count: usize) -> usize {
        4 + count * pk.ct_len() + 32 + pk.z_len()
    }
    /// Every ciphertext's share and one proof for the batch (module docs).
    fn share_batch(ks: &KeyShare, cts: &Vec<Ciphertext>, rng: &mut SessionRng) -> Vec<u8> {
        let pk = &ks.pk;
        let mut exp = Integer::from(&pk.delta * &ks.si) * 2u32;
        let bases: Vec<Integer> = cts.iter().map(|c| c.0.clone()).collect();
        let cis = pk.inner.arith().pow_each(&bases, &exp);
        wipe(&mut exp);
        let bases: Vec<&Integer> = cts.iter().map(|c| &c.0).collect();
        let (c, ci) = batch_combination(pk, ks.index, &bases, &cis);
        let proof = decryption_share_of(ks, &c, ci, rng);
        let mut out = vec![0u8; Self::share_batch_len(pk, cts.len())];
        out[..4].copy_from_slice(&ks.index.to_be_bytes());
        let width = pk.ct_len();
        for (slot, x) in out[4..].chunks_exact_mut(width).zip(&cis) {
            write_be(x, slot);
        }
        let at = 4 + cts.len() * width;
        write_be(&proof.e, &mut out[at..at + 32]);
        write_be(&proof.z, &mut out[at + 32..]);
        out
    }
    /// Every party's verified shares, by party.
    /// Horner's rule for all the chains together: at each step every accumulator is
    /// raised to its own point (`BatchModulus::pow_each_own`, eight lanes at a time on a
    /// CPU with AVX-512 IFMA) and multiplied by its next coefficient. A shorter
    /// polynomial is padded at the top with the trivial encryption of zero (1), which
    /// changes nothing: `1^x c = c`.
    fn eval_polynomials(
        pk: &PublicKey,
        jobs: &[(&[Ciphertext], &Integer)],
    ) -> Vec<Option<Ciphertext>> {
        let arith = pk.inner.arith();
        let width = jobs.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        let one = Integer::from(1);
        let coefficient = |job: &(&[Ciphertext], &Integer), k: usize| -> Integer {
            job.0.get(k).map_or_else(|| one.clone(), |c| c.0.clone())
        };
        let xs: Vec<Integer> = jobs
            .iter()
            .map(|(_, x)| x.modulo_ref(pk.plaintext_modulus()).complete())
            .collect();
        let mut acc: Vec<Integer> = jobs
            .iter()
            .map(|j| coefficient(j, width.max(1) - 1))
            .collect();
        for k in (0..width.saturating_sub(1)).rev() {
            acc = arith.pow_each_own(&acc, &xs);
            acc.par_iter_mut()
                .zip(jobs.par_iter())
                .for_each(|(a, job)| {
                    if let Some(c) = job.0.get(k) {
                        *a = arith.mul(a, &c.0);
                    }
                });
        }
        jobs.iter()
            .zip(acc)
            .map(|((coeffs, _), a)| (!coeffs.is_empty()).then_some(Ciphertext(a)))
            .collect()
    }

    type Sums = SerialSums<Ciphertext>;
    fn sums_new(_pk: &PublicKey, count: usize) -> Self::Sums {
        SerialSums::new(count)
    }
    fn sums_add(
        pk: &PublicKey,
        sums: &mut Self::Sums,
        encoded: &[u8],
        hits: &[(u32, u32)],
    ) -> Result<(), TaheError> {
        sums.add(
            encoded,
            pk.ct_len(),
            hits,
            |c| Self::decode_ciphertext(pk, c),
            |a, b| Self::add(pk, a, b),
        )
    }
    fn sums_finish(_pk: &PublicKey, sums: Self::Sums) -> Vec<Ciphertext> {
        sums.finish(&Ciphertext(Integer::from(1)))
    }
    fn mesh_shares_len(pk: &PublicKey, count: usize) -> usize {
        SplitMesh::<Self>::shares_len(pk, count)
    }
    fn mesh_relay_len(pk: &PublicKey, count: usize) -> usize {
        SplitMesh::<Self>::relay_len(pk, count)
    }
    fn mesh_proof_len(pk: &PublicKey) -> usize {
        SplitMesh::<Self>::proof_len(pk)
    }
    type Mesh = SplitMesh<Self>;
    fn mesh_new(pk: &PublicKey, count: usize) -> Self::Mesh {
        SplitMesh::new(pk, count)
    }
    fn mesh_own_shares(
        ks: &KeyShare,
        mesh: &mut Self::Mesh,
        cts: &Vec<Ciphertext>,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError> {
        mesh.own_shares(ks, cts, rng)
    }
    fn mesh_absorb_shares(
        pk: &PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Vec<Ciphertext>,
        party: u32,
        shares: &[u8],
    ) -> Result<(), TaheError> {
        mesh.absorb_shares(pk, cts, party, shares)
    }
    fn mesh_relay(
        _pk: &PublicKey,
        mesh: &mut Self::Mesh,
        _cts: &Vec<Ciphertext>,
    ) -> Result<Vec<u8>, TaheError> {
        mesh.relay()
    }
    fn mesh_absorb_relay(
        pk: &PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Vec<Ciphertext>,
        relay: u32,
        relayed: &[u8],
    ) -> Result<(), TaheError> {
        mesh.absorb_relay(pk, cts, relay, relayed)
    }
    fn mesh_own_proof(
        _ks: &KeyShare,
        mesh: &mut Self::Mesh,
        _cts: &Vec<Ciphertext>,
        _rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError> {
        mesh.own_proof()
    }
    fn mesh_absorb_proof(
        pk: &PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Vec<Ciphertext>,
        party: u32,
        proof: &[u8],
    ) -> Result<(), TaheError> {
        mesh.absorb_proof(pk, cts, party, proof)
    }
    fn mesh_finish(
        pk: &PublicKey,
        mesh: Self::Mesh,
        cts: &Vec<Ciphertext>,
    ) -> Result<Vec<bool>, TaheError> {
        mesh.finish(pk, cts)
    }
    type ZeroTest = Vec<Option<Vec<DecryptionShare>>>;
    fn zero_test_new(pk: &PublicKey, _count: usize) -> Self::ZeroTest {
        vec![None; pk.parties as usize]
    }
    fn zero_test_absorb(
        pk: &PublicKey,
        test: &mut Self::ZeroTest,
        cts: &Vec<Ciphertext>,
        party: u32,
        batch: &[u8],
    ) -> Result<(), TaheError> {
        let slot = party
            .checked_sub(1)
            .and_then(|i| test.get_mut(i as usize))
            .ok_or(TaheError::UnknownParty {
                party,
                parties: pk.parties,
            })?;
        if slot.is_some() {
            return Err(TaheError::DuplicateShare { party });
        }
        let bad = |reason: String| TaheError::BadShare { party, reason };
        if batch.len() != Self::share_batch_len(pk, cts.len()) {
            return Err(bad(format!(
                "a batch of {} bytes for {} ciphertexts",
                batch.len(),
                cts.len()
            )));
        }
        let claimed = u32::from_be_bytes(batch[..4].try_into().expect("4 bytes"));
        if claimed != party {
            return Err(bad(format!("a batch claims party {claimed}")));
        }
        let width = pk.ct_len();
        let at = 4 + cts.len() * width;
        let cis = batch[4..at]
            .par_chunks_exact(width)
            .map(|b| pk.decode_ct(b, "decryption share"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        let e = Integer::from_digits(&batch[at..at + 32], Order::Msf);
        let z = Integer::from_digits(&batch[at + 32..], Order::Msf);
        let bases: Vec<&Integer> = cts.iter().map(|c| &c.0).collect();
        let (c, ci) = batch_combination(pk, party, &bases, &cis);
        verify(pk, &c, &DecryptionShare { party, ci, e, z })?;
        // The shares are verified: only `c_i` is needed to combine them.
        *slot = Some(
            cis.into_iter()
                .map(|ci| DecryptionShare {
                    party,
                    ci,
                    e: Integer::new(),
                    z: Integer::new(),
                })
                .collect(),
        );
        Ok(())
    }
    fn zero_test_finish(
        pk: &PublicKey,
        test: Self::ZeroTest,
        cts: &Vec<Ciphertext>,
    ) -> Result<Vec<bool>, TaheError> {
        let mut parties = Vec::with_capacity(test.len());
        let mut by_party = Vec::with_capacity(test.len());
        for (i, shares) in test.into_iter().enumerate() {
            let shares = shares.ok_or(TaheError::MissingShares {
                party: i as u32 + 1,
            })?;
            parties.push(i as u32 + 1);
            by_party.push(shares.into_iter().map(|s| s.ci).collect::<Vec<_>>());
        }
        debug_assert!(by_party.iter().all(|p| p.len() == cts.len()));
        Ok(combine_verified_many(pk, &parties, &by_party)?
            .into_iter()
            .map(|m| m == 0)
            .collect())
    }

    fn encode_public_key(pk: &PublicKey) -> Vec<u8> {
        encode_pk(pk)
    }
    fn decode_public_key(bytes: &[u8], max_parties: u32) -> Result<PublicKey, TaheError> {
        let what = "public key";
        if bytes.len() < 16 {
            return Err(invalid(what, "truncated header"));
        }
        let word =
            |i: usize| u32::from_be_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let (parties, threshold, modulus_bits, s) = (word(0), word(1), word(2), word(3));
        if parties > max_parties.min(MAX_PARTIES) {
            return Err(invalid(
                what,
                format!("{parties} parties, at most {max_parties} allowed"),
            ));
        }
        check_counts(parties, threshold).map_err(|e| invalid(what, e.to_string()))?;
        check_sizes(modulus_bits, s).map_err(|e| invalid(what, e.to_string()))?;
        let b = modulus_bits as usize / 8;
        let c = (s as usize + 1) * b;
        if bytes.len() != 16 + b + c * (parties as usize + 1) {
            return Err(invalid(what, "wrong length"));
        }
        let n = Integer::from_digits(&bytes[16..16 + b], Order::Msf);
        if n.significant_bits() != modulus_bits || n.is_even() {
            return Err(invalid(what, "n is not an odd modulus of the stated size"));
        }
        // Δ must be invertible mod n: no prime factor up to the party count.
        let delta = Integer::factorial(parties).complete();
        if n.gcd_ref(&delta).complete() != 1 {
            return Err(invalid(what, "n has a small factor"));
        }
        let inner = single::PublicKey::new(n.clone(), s, Integer::from(1))
            .map_err(|e| invalid(what, e.to_string()))?;
        let mut elems = bytes[16 + b..].chunks_exact(c).map(|chunk| {
            inner
                .decode_ct_int(chunk, 0)
                .map_err(|e| invalid(what, format!("v or a verification key: {e}")))
        });
        let v = elems.next().expect("length checked")?;
        let verification: Vec<Integer> = elems.collect::<Result<_, _>>()?;
        PublicKey::new(parties, threshold, modulus_bits, s, n, v, verification)
    }
}

// ---------------------------------------------------------------------------------
// Dealer

/// The trusted dealer of Shoup / Damgard-Jurik key generation (see the module docs on
/// the trust it needs).
pub struct Dealer {
    params: Params,
}

impl Dealer {
    pub fn new(params: Params) -> Result<Self, TaheError> {
        params.validate()?;
        Ok(Dealer { params })
    }

    /// Generates two fresh safe primes of `modulus_bits / 2` bits and deals the key
    /// (slow at real sizes: see [`safe_prime`]).
    pub fn deal(&self, rng: &mut SessionRng) -> Result<(PublicKey, Vec<KeyShare>), TaheError> {
        let half = self.params.modulus_bits / 2;
        loop {
            let mut p = safe_prime(half, rng);
            let mut q = safe_prime(half, rng);
            if p != q {
                let out = self.deal_with_primes(&p, &q, rng);
                wipe(&mut p);
                wipe(&mut q);
                return out;
            }
        }
    }

    /// Deals a key for `n = pq` from given safe primes of `modulus_bits / 2` bits each
    /// (checked: distinct, safe, probable primes, `n` of exactly `modulus_bits` bits).
    /// Erases everything secret it derives before returning; the caller owns (and must
    /// erase) `p` and `q`.
    pub fn deal_with_primes(
        &self,
        p: &Integer,
        q: &Integer,
        rng: &mut SessionRng,
    ) -> Result<(PublicKey, Vec<KeyShare>), TaheError> {
        let Params {
            modulus_bits,
            s,
            parties,
            threshold,
        } = self.params;
        let half = modulus_bits / 2;
        for x in [p, q] {
            if x.significant_bits() != half || !is_safe_prime(x) {
                return Err(TaheError::Parameters(format!(
                    "the primes must be safe primes of {half} bits"
                )));
            }
        }
        if p == q {
            return Err(TaheError::Parameters("p and q must differ".into()));
        }
        let n = Integer::from(p * q);
        if n.significant_bits() != modulus_bits {
            return Err(TaheError::Parameters(format!(
                "n = pq must have exactly {modulus_bits} bits"
            )));
        }
        let n_s = Integer::from(rug::ops::Pow::pow(&n, s));
        // m = p'q'; d ≡ 0 mod m, d ≡ 1 mod n^s.
        let mut pp = Integer::from(p >> 1);
        let mut qq = Integer::from(q >> 1);
        let mut m = Integer::from(&pp * &qq);
        let mut minv = m
            .invert_ref(&n_s)
            .map(Integer::from)
            .ok_or_else(|| TaheError::Parameters("gcd(m, n) != 1".into()))?;
        let mut d = Integer::from(&m * &minv);
        let mut modulus = Integer::from(&n_s * &m);
        // f(X) = d + a_1 X + ... + a_{t-1} X^{t-1} mod n^s m
        let mut coeffs = vec![d.clone()];
        for _ in 1..threshold {
            coeffs.push(random_below(rng, &modulus));
        }
        let mut sis: Vec<Integer> = (1..=parties)
            .map(|i| {
                let mut acc = Integer::new();
                for a in coeffs.iter().rev() {
                    acc *= i;
                    acc += a;
                    acc.modulo_mut(&modulus);
                }
                acc
            })
            .collect();
        let nn = Integer::from(&n_s * &n);
        let delta = Integer::factorial(parties).complete();
        let r = random_unit(rng, &n);
        let v = Integer::from(&r * &r).modulo(&nn);
        let verification: Vec<Integer> = sis
            .iter()
            .map(|si| pow(&v, &Integer::from(&delta * si), &nn))
            .collect();
        let pk = PublicKey::new(parties, threshold, modulus_bits, s, n, v, verification)?;
        let shares = sis
            .iter_mut()
            .enumerate()
            .map(|(i, si)| KeyShare {
                index: i as u32 + 1,
                si: std::mem::take(si),
                pk: pk.clone(),
            })
            .collect();
        for x in
            coeffs
                .iter_mut()
                .chain([&mut pp, &mut qq, &mut m, &mut minv, &mut d, &mut modulus])
        {
            wipe(x);
        }
        Ok((pk, shares))
    }
}

/// Fixed safe primes for tests and benchmarks: `(p, q)` for a `modulus_bits` modulus
/// (1024 or 2048). They are **public**, so any key dealt from them is broken: never
/// use them outside tests.
pub fn insecure_test_primes(modulus_bits: u32) -> Option<(Integer, Integer)> {
    let parse = |h: &[&str]| Integer::from_str_radix(&h.concat(), 16).expect("hex constant");
    match modulus_bits {
        1024 => Some((parse(TEST_P512_A), parse(TEST_P512_B))),
        2048 => Some((parse(TEST_P1024_A), parse(TEST_P1024_B))),
        _ => None,
    }
}

/// A second pair at 1024 bits, for tests that need two independent keys.
pub fn insecure_test_primes_alt() -> (Integer, Integer) {
    let parse = |h: &[&str]| Integer::from_str_radix(&h.concat(), 16).expect("hex constant");
    (parse(TEST_P512_C), parse(TEST_P512_D))
}

// Safe primes generated with `openssl prime -generate -safe`.
const TEST_P512_A: &[&str] = &[
    "F5D3F093149A04B2978821A08812F5EB083982E9273478B5954ADBD2F5F1940A",
    "2BC9A00E1C6375CDECE575A1226E1D30AA4BF477E8CD7DE602084399B147D38F",
];
const TEST_P512_B: &[&str] = &[
    "CB02E9662BCC7A8375E791304E74B75C8540ECD923795716B3B54B3EAEE07615",
    "E569EC2DC7EFD2E3E1F2FA9029BA6D488458B36C3E791630D338AE4DBC2EE157",
];
const TEST_P512_C: &[&str] = &[
    "DF4A03BD8FE2FC3C31D881CF09FDC63B28E959A190BABAD973556EE224683D3D",
    "7DC1A94639A87A6733B3B97DBA2395C0E31F47DA81F0432DCB085D7F163536A3",
];
const TEST_P512_D: &[&str] = &[
    "ED4407A227FB01531807C7E493C23D80586F440FD974F0123D5F99105AB3BA6B",
    "7D3A52B68E2BFB559F266171C886687A6E2DE036E5B6ECF0D6929C2B542B59FB",
];
const TEST_P1024_A: &[&str] = &[
    "E7428D94026931FBBEEB0DF97954689B7DF80D898416D1A285EFB01D805545F7",
    "75856CBDCC0C25AEAD436DB205608A2623480CC8ECB5D0960862B9EA3CE4A0BA",
    "95D69B1E7FD311A8FC61610C4A27FD99510EF2D65DCCC1076D0C0653FBC92E9F",
    "58E3CA4C5FF07DC702E2C350E157FA071A3C41DA389628D607ED5648727E6DAB",
];
const TEST_P1024_B: &[&str] = &[
    "DF439D283A41DD3AE2F8CA7E821DA9187FBD6A309FCE3E2341A444F6D8099EF0",
    "658969FAD805202111AFF9639E2763044C1B8A9079C1C4B2F4A6BAE931572B87",
    "7059413ABE4BB646F83572E429A22C11D155C726693B3008F839947C32902DA2",
    "4DB0DA2510E4902C8B0C4AF5EDF5BF7FAD7F5EE73F1DF25487B2E109DB91E2C7",
];
