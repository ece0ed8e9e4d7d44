//! Paillier encryption with the Damgard-Jurik generalisation, slot-packed for subset sums.
//!
//! # Scheme
//!
//! Damgard-Jurik ("A Generalisation, a Simplification and Some Applications of
//! Paillier's Probabilistic Public-Key System", PKC 2001) with `g = 1 + n`: plaintexts
//! live in `Z_{n^s}`, ciphertexts in `Z*_{n^{s+1}}`, and
//! `Enc(m; r) = (1+n)^m * r^{n^s} mod n^{s+1}`. `s = 1` is plain Paillier. Ion et al. 2020
//! (Sec. 3.2) deploys 768-bit primes with `s = 3` ([`Params::SEED_DEPLOYED`]); the
//! default ([`Params::default`]) is a 3072-bit modulus with `s = 2` (128-bit security).
//! `(1+n)^m` is evaluated with the binomial expansion `sum_{i<=s} C(m,i) n^i` (no
//! exponentiation), decryption is the recursive extraction of Damgard-Jurik Sec. 4.2,
//! run modulo `p^{s+1}` and `q^{s+1}` separately and recombined (CRT).
//!
//! ## Three kinds of randomness
//!
//! * **Key owner** (`encrypt_column`, `encrypt_each`, [`Paillier::encrypt_owner`]): the
//!   public key carries `h = x^{n^s} mod n^{s+1}` for a random `x` (Damgard-Jurik-Nielsen
//!   style), and the owner encrypts as `(1+n)^m * h^alpha` with a `2κ`-bit `alpha`, `κ`
//!   the strength of the modulus ([`short_exponent_bits`]: 256 bits on the default
//!   3,072-bit key, 160 on the deployed 1,536-bit one), using fixed-base tables of
//!   `h mod p^{s+1}` and `h mod q^{s+1}` (the owner knows the factors: a product modulo
//!   a prime's power costs a quarter of one modulo `n^{s+1}`) whose halves it joins by
//!   CRT, the same integer as computed directly; windows of 8 to 13 bits as the item
//!   count allows (13 products per half for 160-bit exponents at 100,000 items). Hiding
//!   then rests on the DJN *short-exponent assumption*: `h^alpha` with a `2κ`-bit
//!   `alpha` is indistinguishable from a uniform `n^s`-th residue (for parties that
//!   cannot factor `n`), in addition to DCR. The best known attack on the exponent,
//!   Pollard's kangaroos, takes about `2^κ` steps: the modulus's own strength.
//! * **Party without the key, in general** (`rerandomize`, [`AdditiveHe::encrypt`]): a
//!   full-size `r` uniform in `Z*_n` and the factor `r^{n^s} mod n^{s+1}`, a uniformly
//!   random `n^s`-th residue that hides the previous randomness information-theoretically.
//!   A short exponent *alone* would not do: the key owner can take `n^s`-th roots and
//!   discrete logarithms modulo its primes. These functions cannot tell where their
//!   input came from, so they pay for the full size.
//! * **Party without the key, on the owner's ciphertexts** (`mask_each`'s randomizers,
//!   one per item, and `sum_selected`'s outputs): the same statistical hiding by
//!   *smudging the owner's own exponent*, at a fraction of the cost. The randomizer is
//!   `h^β` on the owner's published base, `β` uniform below `2^{2κ+80}` for one owner
//!   ciphertext and below `2^{2κ+64+80}` for a product of up to `2^64` of them.
//!   `mask_each` draws them from a fixed-base table (20 multiplications a randomizer
//!   with 12-bit windows for the deployed key's 240-bit `β` at 100,000 items, plus three
//!   for the item, its mask and the Montgomery factor). *Why it hides from the owner*,
//!   for `mask_each` (a product of `K` owner ciphertexts has an exponent below
//!   `K · 2^{2κ}`, and the same argument holds with the longer `β`): the owner encrypted
//!   item `j` as `(1+n)^{t_j} h^{α_j}` with `α_j < 2^{2κ}`, so the masked item is
//!   `(1+n)^{t_j + r_j} h^{α_j + β_j}`, a function of `t_j + r_j mod n^s` (uniform:
//!   `r_j` is uniform and fresh) and of the integer `α_j + β_j`. Whatever `α_j` is,
//!   `α_j + β_j` is within statistical distance `α_j / 2^{2κ+80} < 2^-80` of `β_j` alone
//!   (a uniform interval shifted by less than `2^{2κ}`). Replacing the `α_j` by 0 one
//!   randomizer at a time therefore moves the owner's view of all `N` of them by at
//!   most `N · 2^-80`, below `2^-40` ([`STAT_SECURITY`], as for the slot masks below)
//!   for any run: `N < 2^40` ([`MAX_SMUDGED_OUTPUTS_BITS`]; the reverse variant draws
//!   one per item *and encrypted column*, fewer than `2^32 · 128 = 2^39`), and
//!   afterwards that view no longer depends on the shuffle. No assumption is involved: `n^s`-th roots and
//!   discrete logarithms modulo `p` and `q`, which the owner can compute, tell it nothing
//!   more than `α_j + β_j`, and that hides `α_j`. Like every privset protocol it assumes
//!   a semi-honest owner, here one that encrypted as specified (a `2κ`-bit `α` on the
//!   `h` it published): an owner that deviates, for example by publishing an `h` of
//!   small order, could match masked items to its own. Any Paillier key serves (no safe
//!   primes), and nothing in the table is secret.
//!
//!   Until 2026-11-28 `mask_each` used its own secret base with an `|n|+128`-bit exponent
//!   on a safe-prime key (152 multiplications an item at 100,000 items) and
//!   `sum_selected` a full-size `r^{n^s}`; then, until privset's stop 45 the same day,
//!   every key's `α` had 256 bits and `β` 128 more (each item within `2^-128`): 34
//!   multiplications an item on the deployed key. Until 2026-12 the
//!   slack was 72 bits, justified by fewer than `2^32` randomizers a run: true of items,
//!   not of items times the reverse variant's up to 128 encrypted columns (`2^-33`).

//! # Subset sums: multi-output slot packing
//!
//! Let `u` = bit length of `bounds.max_sum`, `σ = 40`, `P` = bit length of `n^s` minus 1
//! (any integer below `2^P` is below `n^s`). Slot width `k` and slots per ciphertext `L`:
//! start with `k = u + σ + 1`, `L = floor(P / k)`; while
//! `k < u + σ + 1 + ceil(log2(L + 1))`, increment `k` and recompute `L`. (`L = 0` is an
//! error: `max_sum` is too large for the modulus.)
//!
//! * `encrypt_column`: item `i` goes to slot `i % L` of ciphertext `i / L`, i.e. the
//!   plaintext of ciphertext `c` is `sum_j t_{cL+j} 2^{kj}`.
//! * `sum_selected` (non-owner): for every slot position `j`, `P_j` is the product of
//!   the ciphertexts whose slot `j` holds a selected item (`1` if none). Slot `j` of `P_j`
//!   holds `S_j`, the sum of the selected items at position `j`; its other slots hold
//!   *junk* (sums of unselected items sharing those ciphertexts). Output `j` is
//!   `P_j * (1+n)^{mask_j} * h^β` with a smudging `β` (above), where
//!   `mask_j = sum_{j' != j} ρ_{j,j'} 2^{kj'} + ρ'_j 2^{kj}`, every junk mask `ρ` uniform in
//!   `[0, 2^k − 2^u)`, and the target masks `ρ'_0..ρ'_{L-1}` uniform in `[0, 2^{k-1})`
//!   subject to `sum_j ρ'_j ≡ 0 (mod 2^{k-1})`. Every slot content is at most
//!   `max_sum < 2^u`, so junk plus its mask stays below `2^k` and a target plus its mask
//!   below `2^u + 2^{k-1} ≤ 2^k`: no slot carries into the next and the whole plaintext
//!   stays below `2^{kL} <= 2^P < n^s`.
//! * `decrypt_sum` (owner): `y_j` = bits `[kj, kj+k)` of output `j`;
//!   `S = (sum_j y_j) mod 2^{k-1}`, which equals `sum_j S_j` because the `ρ'` cancel.
//!
//! **What the owner learns.** The outputs' randomness is within `2^-80` each of
//! independent of which ciphertexts were combined (smudging, above), so only their
//! plaintexts matter. Adding a uniform `ρ ∈ [0, N)` to a value `J` gives a distribution at
//! statistical distance `J / N` from uniform on `[0, N)`.
//! *Junk* (`N = 2^k − 2^u`): within one output the junk slots hold sums of distinct
//! items, so their total is at most `max_sum`; over the `L` outputs the junk contributes
//! at most `L * max_sum / (2^k − 2^u)`. *Targets:* the vector `(y_j)` equals
//! `((S_j + ρ'_j) mod 2^{k-1})_j` unless some slot wraps past `2^{k-1}`, which happens
//! with probability at most `sum_j S_j / 2^{k-1} <= max_sum / 2^{k-1}`; and that reduced
//! vector is uniform among vectors summing to `S mod 2^{k-1}`, i.e. simulatable from `S`
//! alone. In total the owner's view is within
//! `L * 2^u / (2^k − 2^u) + 2^u / 2^{k-1} <= 2^{-σ} = 2^{-40}` of a simulation from `S`:
//! [`Paillier::layout`] picks the smallest `k` for which this holds (exactly, in integer
//! arithmetic). At the deployed parameters (1536-bit n, s = 3, sums below 2^32) that is
//! k = 78 and L = 59 slots per ciphertext. Ion et al. 2020 (App. B.1) rotates every selected slot into
//! one privileged slot instead, which costs half the plaintext space; the multi-output
//! layout uses all of it and replaces the rotation (`L` exponentiations per item) by one
//! modular multiplication per selected item, at the price of `L` output ciphertexts.
//!
//! **Reverse variant** (Ion et al. 2020, App. G): `encrypt_each` is one unpacked ciphertext per
//! item; `mask_each` adds a uniform `r_j ∈ Z_{n^s}` to every item and re-randomizes with
//! a smudging randomizer (above: 22 multiplications per item at 100,000 items);
//! the owner opens `(S + R) mod n^s`; the non-owner subtracts `R`.
//!
//! # Arithmetic
//! Work on many independent ciphertexts is batched through [`crate::bignum`]: the
//! products of `sum_selected` (one chain per slot, split over lanes), the outputs'
//! smudging randomizers, and the fixed-base tables of the
//! owner's, the masking party's and the threshold scheme's randomizers run eight at a
//! time in Montgomery form on AVX-512 IFMA, and on GMP one at a time elsewhere, with
//! the same results byte for byte (`tests/portable_paillier.rs`). Ciphertexts received
//! in bulk are checked for being units modulo `n` with one gcd per 1,024 of them.
//!
//! # Caveats
//! Arithmetic is not constant-time (GMP's, and the lanes' table lookups depend on the
//! exponent); secret-key integers are overwritten on drop, but GMP temporaries are not.

use std::sync::OnceLock;

use rayon::prelude::*;
use rug::Integer;
use rug::integer::{IsPrime, Order};
use zeroize::Zeroizing;

use super::{AdditiveHe, ColumnBounds, HeError, HeId, Mask, PartialSums, SubsetSum};
use crate::bignum::read_be;
use crate::bignum::{BatchModulus, FixedBase};
pub(crate) use crate::bignum::{wipe, write_be};
use crate::rng::SessionRng;

/// Statistical security (bits): of the slot masks, and of the smudging over a whole run.
pub const STAT_SECURITY: u32 = 40;

/// Security strength κ in bits of a `modulus_bits`-bit factoring modulus: that of the
/// largest size at most `modulus_bits` in NIST SP 800-57 Part 1, Table 2 (1024 bits:
/// 80, 2048: 112, 3072: 128, 7680: 192, 15360: 256).
pub const fn modulus_strength(modulus_bits: u32) -> u32 {
    match modulus_bits {
        0..2048 => 80,
        2048..3072 => 112,
        3072..7680 => 128,
        7680..15360 => 192,
        _ => 256,
    }
}

/// Bit length of the short DJN exponent `α` on a `modulus_bits`-bit key: 2κ. Finding a
/// `b`-bit exponent takes about `2^{b/2}` steps (Pollard's kangaroos), so 2κ bits give
/// the modulus's own strength and longer ones buy nothing: 256 bits at 3,072 (the
/// default), 160 at the deployed 1,536.
pub const fn short_exponent_bits(modulus_bits: u32) -> u32 {
    2 * modulus_strength(modulus_bits)
}
/// Window width of the fixed-base tables.
const WINDOW_BITS: u32 = 8;
/// `log2` of the most smudged randomizers one run may draw: fewer than `2^40`. The
/// reverse variant draws one per item and encrypted column: fewer than `2^32` items
/// (the wire's indices are 32-bit) times at most 128 encrypted columns (PI-Sum's 64
/// value columns, doubled with their squares), below `2^39`. The forward variant draws
/// one per output: segments (at most `2^12`) times encrypted columns (`2^7`) times
/// slots per ciphertext (below `2^16` for any key a peer may send), below `2^35`.
/// Counting items alone (`2^32`) understated the reverse variant's by up to `2^7`.
pub const MAX_SMUDGED_OUTPUTS_BITS: u32 = 40;
/// Bits beyond the owner's exponent of the masking party's: each masked item's or
/// output's randomness is then within `2^-80` of independent of the owner's, so that
/// of fewer than `2^40` of them ([`MAX_SMUDGED_OUTPUTS_BITS`]) within `2^-40`
/// ([`STAT_SECURITY`]; module docs, "Three kinds of randomness"). A whole number of
/// bytes beyond the owner's `2κ` bits, as the masking table's exponents are drawn.
const SMUDGING_SLACK_BITS: u32 = STAT_SECURITY + MAX_SMUDGED_OUTPUTS_BITS;
/// Bits for the number of the owner's ciphertexts multiplied into one `sum_selected`
/// output (partial sums of many columns included): `2^64` is beyond any input.
const PRODUCT_BITS: u32 = 64;
/// Most bytes a fixed-base table may hold: wider windows mean fewer multiplications
/// per exponentiation but tables twice as large per extra bit.
const TABLE_BUDGET: usize = 256 << 20;
/// Items per forked rng in `encrypt_each` / `mask_each` (fixed so output is
/// independent of the thread count).
const RNG_CHUNK: usize = 16;
/// Ciphertexts checked for being units with one gcd ([`PublicKey::check_units`]).
const UNIT_BATCH: usize = 1024;

/// Key-generation parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Bit length of `n = pq`; at least 1024 and a multiple of 64.
    pub modulus_bits: u32,
    /// Damgard-Jurik exponent: plaintexts mod `n^s`, ciphertexts mod `n^{s+1}`; 1..=4.
    pub s: u32,
}

impl Params {
    /// Ion et al.'s deployment (Sec. 3.2): 768-bit primes, `s = 3`.
    pub const SEED_DEPLOYED: Params = Params {
        modulus_bits: 1536,
        s: 3,
    };

    /// Checks the ranges documented on the fields.
    pub fn validate(&self) -> Result<(), HeError> {
        if self.modulus_bits < 1024 || !self.modulus_bits.is_multiple_of(64) {
            return Err(HeError::Parameters(format!(
                "Paillier modulus_bits must be >= 1024 and a multiple of 64, got {}",
                self.modulus_bits
            )));
        }
        if !(1..=4).contains(&self.s) {
            return Err(HeError::Parameters(format!(
                "Damgard-Jurik s must be in 1..=4, got {}",
                self.s
            )));
        }
        Ok(())
    }
}

impl Default for Params {
    /// 128-bit security: a 3072-bit modulus, `s = 2`.
    fn default() -> Self {
        Params {
            modulus_bits: 3072,
            s: 2,
        }
    }
}

/// Paillier / Damgard-Jurik (see the module docs).
pub struct Paillier;

/// Public key: `n`, `s`, and the owner's DJN base `h`, with derived constants.
#[derive(Clone)]
pub struct PublicKey {
    s: u32,
    modulus_bits: u32,
    n: Integer,
    /// `n^0 ..= n^{s+1}`.
    pub(crate) n_pows: Vec<Integer>,
    /// `(k!)^{-1} mod n^s` for `k = 0..=s`.
    pub(crate) inv_fact: Vec<Integer>,
    h: Integer,
    ct_len: usize,
    pt_len: usize,
    /// Batched products and powers modulo `n^{s+1}` (eight at once on AVX-512 IFMA).
    ct_arith: BatchModulus,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "paillier::PublicKey {{ modulus_bits: {}, s: {} }}",
            self.modulus_bits, self.s
        )
    }
}

impl PublicKey {
    pub(crate) fn new(n: Integer, s: u32, h: Integer) -> Result<Self, HeError> {
        let modulus_bits = n.significant_bits();
        let mut n_pows = Vec::with_capacity(s as usize + 2);
        n_pows.push(Integer::from(1));
        for i in 1..=(s as usize + 1) {
            let next = Integer::from(&n_pows[i - 1] * &n);
            n_pows.push(next);
        }
        let n_s = &n_pows[s as usize];
        let inv_fact = inverse_factorials(s, n_s)
            .ok_or_else(|| HeError::InvalidPublicKey("n shares a factor with k!".into()))?;
        let ct_len = n_pows[s as usize + 1].significant_digits::<u8>();
        let pt_len = n_s.significant_digits::<u8>();
        let ct_arith = BatchModulus::new(&n_pows[s as usize + 1]);
        Ok(PublicKey {
            s,
            modulus_bits,
            n,
            n_pows,
            inv_fact,
            h,
            ct_len,
            pt_len,
            ct_arith,
        })
    }

    /// The modulus `n`.
    pub fn n(&self) -> &Integer {
        &self.n
    }
    /// The Damgard-Jurik `s`.
    pub fn s(&self) -> u32 {
        self.s
    }
    /// The plaintext modulus `n^s`.
    pub fn plaintext_modulus(&self) -> &Integer {
        &self.n_pows[self.s as usize]
    }
    /// The ciphertext modulus `n^{s+1}`.
    pub fn ciphertext_modulus(&self) -> &Integer {
        &self.n_pows[self.s as usize + 1]
    }
    /// Bytes of an encoded plaintext (`n^s`) and of a [`Mask`].
    pub fn plaintext_len(&self) -> usize {
        self.pt_len
    }

    /// `(1+n)^m mod n^{s+1}` by the binomial formula `sum_{i=0..s} C(m,i) n^i`: `C(m,i)`
    /// is only needed modulo `n^{s+1-i}`, and `i!` is invertible modulo `n`.
    pub(crate) fn one_plus_n_pow(&self, m: &Integer) -> Integer {
        let s = self.s as usize;
        let n_s = &self.n_pows[s];
        let big = &self.n_pows[s + 1];
        let m = Integer::from(m.modulo_ref(n_s));
        if s == 1 {
            // Plain Paillier (the reverse variant's key): 1 + m n < n^2.
            return Integer::from(&m * &self.n) + 1u32;
        }
        let mut result = Integer::from(1);
        let mut falling = Integer::from(1);
        for i in 1..=s {
            let mut factor = Integer::from(&m - (i as u64 - 1));
            factor.modulo_mut(n_s);
            falling *= &factor;
            falling.modulo_mut(n_s);
            let mut term = Integer::from(&falling * &self.inv_fact[i]);
            term.modulo_mut(&self.n_pows[s + 1 - i]);
            term *= &self.n_pows[i];
            result += term;
        }
        result.modulo_mut(big);
        result
    }

    /// A uniformly random `n^s`-th residue `r^{n^s} mod n^{s+1}`, `r` uniform in `Z*_n`
    /// (full size: see the module docs for why the non-owner never uses a short exponent).
    pub(crate) fn full_randomizer(&self, rng: &mut SessionRng) -> Integer {
        self.full_randomizers(std::slice::from_mut(rng))
            .pop()
            .expect("one rng, one randomizer")
    }

    /// One [`Self::full_randomizer`] from each rng, computed together (eight at a
    /// time on AVX-512 IFMA: the exponent `n^s` is the same for all).
    pub(crate) fn full_randomizers(&self, rngs: &mut [SessionRng]) -> Vec<Integer> {
        let mut units: Vec<Integer> = rngs.iter_mut().map(|r| random_unit(r, &self.n)).collect();
        let out = self.ct_arith.pow_each(&units, self.plaintext_modulus());
        units.iter_mut().for_each(wipe);
        out
    }

    /// Bit length of the owner's short exponents on this key ([`short_exponent_bits`]).
    pub(crate) fn short_exponent_bits(&self) -> u32 {
        short_exponent_bits(self.modulus_bits)
    }

    /// One encryption of 0 `h^β` from each rng, `β` uniform below `2^{2κ + 64 + 80}`:
    /// the randomizers of `sum_selected`'s outputs, each a product of at most `2^64` of
    /// the owner's ciphertexts, whose randomness they smudge (module docs, "Three kinds
    /// of randomness"). Computed together, eight at a time on IFMA.
    pub(crate) fn smudging_randomizers(&self, rngs: &mut [SessionRng]) -> Vec<Integer> {
        let bits = self.short_exponent_bits() + PRODUCT_BITS + SMUDGING_SLACK_BITS;
        let mut betas: Vec<Integer> = rngs.iter_mut().map(|r| random_bits(r, bits)).collect();
        let bases = vec![self.h.clone(); betas.len()];
        let out = self.ct_arith.pow_each_own(&bases, &betas);
        betas.iter_mut().for_each(wipe);
        out
    }

    /// `Enc(m)` with full-size randomness.
    pub(crate) fn encrypt_full(&self, m: &Integer, rng: &mut SessionRng) -> Integer {
        let mut c = self.one_plus_n_pow(m);
        c *= self.full_randomizer(rng);
        c.modulo_mut(self.ciphertext_modulus());
        c
    }

    pub(crate) fn mul_mod(&self, a: &Integer, b: &Integer) -> Integer {
        self.ct_arith.mul(a, b)
    }

    /// Batched products and powers modulo `n^{s+1}`.
    pub(crate) fn arith(&self) -> &BatchModulus {
        &self.ct_arith
    }

    /// A fixed-base table for `h` modulo `n^{s+1}`, in 8-bit windows.
    pub(crate) fn fixed_base(&self, h: &Integer, exponent_bits: u32) -> FixedBase {
        self.ct_arith.fixed_base(h, exponent_bits, WINDOW_BITS)
    }

    pub(crate) fn decode_ct_int(&self, bytes: &[u8], index: usize) -> Result<Integer, HeError> {
        let c = self.decode_ct_in_range(bytes, index)?;
        self.check_units(&[(index, &c)])?;
        Ok(c)
    }

    /// A ciphertext's integer, checked for length and range but not yet for being a
    /// unit ([`Self::check_units`] does many at once).
    fn decode_ct_in_range(&self, bytes: &[u8], index: usize) -> Result<Integer, HeError> {
        let bad = |reason: &str| HeError::InvalidCiphertext {
            index,
            reason: reason.to_string(),
        };
        if bytes.len() != self.ct_len {
            return Err(bad("wrong length"));
        }
        let c = read_be(bytes);
        if c == 0 {
            return Err(bad("zero"));
        }
        if &c >= self.ciphertext_modulus() {
            return Err(bad("not below n^(s+1)"));
        }
        Ok(c)
    }

    /// Checks that every `(index, c)` is coprime to `n`, with one gcd per batch of
    /// [`UNIT_BATCH`]: a prime factor of `n` divides the batch's product modulo
    /// `n^{s+1}` exactly when it divides one of its members (`n` divides `n^{s+1}`), and
    /// only a failing batch is searched for the first member at fault (the error names
    /// its index). The products run in the lanes where there are any.
    fn check_units(&self, cts: &[(usize, &Integer)]) -> Result<(), HeError> {
        let n = &self.n;
        cts.par_chunks(UNIT_BATCH).try_for_each(|batch| {
            let members: Vec<&Integer> = batch.iter().map(|(_, c)| *c).collect();
            let product = self.ct_arith.product_each(&[members]).pop();
            if Integer::from(product.expect("one group").gcd_ref(n)) == 1 {
                return Ok(());
            }
            let (index, _) = batch
                .iter()
                .find(|(_, c)| Integer::from(c.gcd_ref(n)) != 1)
                .expect("a factor of n divides some member of the batch");
            Err(HeError::InvalidCiphertext {
                index: *index,
                reason: "not coprime to n".to_string(),
            })
        })
    }

    /// The ciphertexts of packed `bytes`, checked for range (not for being units), the
    /// first numbered `first` in errors.
    fn decode_run(&self, bytes: &[u8], first: usize) -> Result<Vec<Integer>, HeError> {
        bytes
            .chunks(self.ct_len)
            .enumerate()
            .map(|(i, c)| self.decode_ct_in_range(c, first + i))
            .collect()
    }

    fn encode_int(&self, c: &Integer, out: &mut [u8]) {
        write_be(c, out);
    }

    /// Decodes a packed array of ciphertexts, only at the positions in `wanted`
    /// (other positions are `None`).
    fn decode_packed(
        &self,
        bytes: &[u8],
        wanted: &[bool],
    ) -> Result<Vec<Option<Integer>>, HeError> {
        let cts: Vec<Option<Integer>> = bytes
            .par_chunks(self.ct_len)
            .zip(wanted.par_iter())
            .enumerate()
            .map(|(i, (chunk, &w))| {
                if w {
                    self.decode_ct_in_range(chunk, i).map(Some)
                } else {
                    Ok(None)
                }
            })
            .collect::<Result<_, _>>()?;
        let units: Vec<(usize, &Integer)> = cts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
            .collect();
        self.check_units(&units)?;
        Ok(cts)
    }

    /// Ciphertexts packed back to back.
    fn write_packed(&self, cts: &[Integer]) -> Vec<u8> {
        let mut out = vec![0u8; cts.len() * self.ct_len];
        for (c, buf) in cts.iter().zip(out.chunks_mut(self.ct_len)) {
            write_be(c, buf);
        }
        out
    }

    /// A partial sum's per-slot products, validated (it may come from storage).
    fn read_partial(&self, bounds: &ColumnBounds, bytes: &[u8]) -> Result<Vec<Integer>, HeError> {
        let slots = Paillier::layout(self, bounds)?.slots;
        packed_count(bytes.len(), self.ct_len, Some(slots))?;
        bytes
            .par_chunks(self.ct_len)
            .enumerate()
            .map(|(j, chunk)| self.decode_ct_int(chunk, j))
            .collect()
    }
}

/// `(k!)^{-1} mod m` for `k = 0..=s`.
pub(crate) fn inverse_factorials(s: u32, m: &Integer) -> Option<Vec<Integer>> {
    let mut out = Vec::with_capacity(s as usize + 1);
    let mut fact = Integer::from(1);
    for k in 0..=s {
        if k > 0 {
            fact *= k;
        }
        out.push(Integer::from(fact.invert_ref(m)?));
    }
    Some(out)
}

/// Damgard-Jurik's recursive extraction (PKC 2001, Sec. 4.2): given
/// `a = (1+b)^i mod b^{s+1}`, returns `i mod b^s`. `pows` are `b^0..=b^{s+1}` and
/// `inv_fact[k] = (k!)^{-1} mod b^s`.
pub(crate) fn dj_dlog(a: &Integer, s: u32, pows: &[Integer], inv_fact: &[Integer]) -> Integer {
    let b = &pows[1];
    let mut i = Integer::new();
    for j in 1..=s as usize {
        let nj = &pows[j];
        // t1 = L(a mod b^{j+1}) = (a mod b^{j+1} - 1) / b
        let mut t1 = Integer::from(a.modulo_ref(&pows[j + 1]));
        t1 -= 1;
        t1.div_exact_mut(b);
        let mut t2 = i.clone();
        for k in 2..=j {
            i -= 1;
            t2 *= &i;
            t2.modulo_mut(nj);
            let mut sub = Integer::from(&t2 * &pows[k - 1]);
            sub *= &inv_fact[k];
            t1 -= sub;
            t1.modulo_mut(nj);
        }
        t1.modulo_mut(nj);
        i = t1;
    }
    i
}

pub(crate) fn random_bits(rng: &mut SessionRng, bits: u32) -> Integer {
    let mut buf = vec![0u8; bits.div_ceil(8) as usize];
    rng.fill(&mut buf);
    let mut x = read_be(&buf);
    x.keep_bits_mut(bits);
    zeroize::Zeroize::zeroize(&mut buf);
    x
}

/// Uniform in `[0, bound)` by rejection sampling (`bound > 0`).
pub(crate) fn random_below(rng: &mut SessionRng, bound: &Integer) -> Integer {
    let bits = bound.significant_bits();
    loop {
        let x = random_bits(rng, bits);
        if &x < bound {
            return x;
        }
    }
}

/// Uniform in `Z*_n`.
pub(crate) fn random_unit(rng: &mut SessionRng, n: &Integer) -> Integer {
    loop {
        let r = random_below(rng, n);
        if r != 0 && Integer::from(r.gcd_ref(n)) == 1 {
            return r;
        }
    }
}

/// A key pair on two distinct random primes of `modulus_bits / 2` bits.
///
/// # Panics
/// If `params` fail [`Params::validate`] (a local configuration error).
fn keygen_random_primes(params: &Params, rng: &mut SessionRng) -> (PublicKey, SecretKey) {
    params.validate().expect("invalid Paillier parameters");
    let half = params.modulus_bits / 2;
    let s = params.s;
    loop {
        let p = random_prime(rng, half);
        let q = random_prime(rng, half);

        if p == q {
            continue;
        }
        let n = Integer::from(&p * &q);
        if n.significant_bits() != params.modulus_bits {
            continue;
        }
        let pm1 = Integer::from(&p - 1u32);
        let qm1 = Integer::from(&q - 1u32);
        let phi = Integer::from(&pm1 * &qm1);
        if Integer::from(n.gcd_ref(&phi)) != 1 {
            continue;
        }
        let lambda = Integer::from(pm1.lcm_ref(&qm1));
        // DJN base h = x^{n^s} mod n^{s+1}.
        let x = random_unit(rng, &n);
        let Ok(pk0) = PublicKey::new(n.clone(), s, Integer::new()) else {
            continue;
        };
        let h = Integer::from(
            x.pow_mod_ref(pk0.plaintext_modulus(), pk0.ciphertext_modulus())
                .expect("positive modulus"),
        );
        let pk = PublicKey { h, ..pk0 };
        let (Some(crt_p), Some(crt_q)) = (CrtHalf::new(&p, &n, s), CrtHalf::new(&q, &n, s)) else {
            continue;
        };
        let Some(q_s_inv) = crt_q.pows[s as usize]
            .invert_ref(&crt_p.pows[s as usize])
            .map(Integer::from)
        else {
            continue;
        };
        let sk = SecretKey {
            pk: pk.clone(),
            p,
            q,
            lambda,
            crt_p,
            crt_q,
            q_s_inv,
            owner_tables: OnceLock::new(),
        };
        return (pk, sk);
    }
}

/// A prime of exactly `bits` bits with the top two bits set.
fn random_prime(rng: &mut SessionRng, bits: u32) -> Integer {
    loop {
        let mut x = random_bits(rng, bits);
        x.set_bit(bits - 1, true);
        x.set_bit(bits - 2, true);
        x.set_bit(0, true);
        let p = x.next_prime();
        if p.significant_bits() == bits && p.is_probably_prime(32) != IsPrime::No {
            return p;
        }
    }
}

/// Whether `p` and `(p - 1) / 2` are both (probable) primes.
pub(crate) fn is_safe_prime(p: &Integer) -> bool {
    p.is_probably_prime(40) != IsPrime::No
        && Integer::from(p >> 1).is_probably_prime(40) != IsPrime::No
        && p.is_odd()
}

/// Odd primes below 2^16.
fn small_primes() -> Vec<u32> {
    const LIMIT: usize = 1 << 16;
    let mut composite = vec![false; LIMIT];
    let mut out = Vec::new();
    for i in 3..LIMIT {
        if !composite[i] {
            out.push(i as u32);
            for j in (i * i..LIMIT).step_by(i) {
                composite[j] = true;
            }
        }
    }
    out
}

/// A random safe prime `p = 2q' + 1` of exactly `bits` bits (top two bits set, so
/// that the product of two has exactly `2 bits` bits). Candidates `q'` in a window of
/// 2^16 consecutive integers are sieved so that neither `q'` nor `2q' + 1` has an odd
/// factor below 2^16; survivors get a base-2 Fermat test on `p`, then Miller-Rabin
/// (40 rounds) on both, on all cores; the first survivor in window order that passes is
/// returned, so the result depends on `rng` only.
///
/// # Panics
/// If `bits < 16`.
pub fn safe_prime(bits: u32, rng: &mut SessionRng) -> Integer {
    assert!(bits >= 16, "safe primes of at least 16 bits");
    const WINDOW: usize = 1 << 16;
    let primes = small_primes();
    let two = Integer::from(2);
    loop {
        // q' has bits - 1 bits, its top two set; start even so offsets are explicit.
        let mut x = random_bits(rng, bits - 1);
        x.set_bit(bits - 2, true);
        x.set_bit(bits - 3, true);
        x.set_bit(0, false);
        let mut dead = vec![false; WINDOW];
        for &pr in &primes {
            let pr = pr as usize;
            let r = x.mod_u(pr as u32) as usize;
            // q' = x + δ ≡ 0  ⇔  δ ≡ -r
            let d0 = (pr - r) % pr;
            // 2q' + 1 ≡ 0  ⇔  q' ≡ (pr - 1) / 2  ⇔  δ ≡ (pr - 1)/2 - r
            let d1 = ((pr - 1) / 2 + pr - r) % pr;
            for start in [d0, d1] {
                for j in (start..WINDOW).step_by(pr) {
                    dead[j] = true;
                }
            }
        }
        let survivors: Vec<u32> = (1..WINDOW as u32)
            .step_by(2)
            .filter(|&d| !dead[d as usize])
            .collect();
        // The first survivor in window order that passes, tested on all cores: the
        // result depends on `rng` only.
        let found = survivors
            .par_iter()
            .with_max_len(1)
            .find_map_first(|&delta| {
                let q = Integer::from(&x + delta);
                let p = Integer::from(&q * 2u32) + 1u32;
                if p.significant_bits() != bits {
                    return None;
                }
                let pm1 = Integer::from(&p - 1u32);
                if Integer::from(two.pow_mod_ref(&pm1, &p).expect("positive modulus")) != 1 {
                    return None;
                }
                (q.is_probably_prime(40) != IsPrime::No && p.is_probably_prime(40) != IsPrime::No)
                    .then_some(p)
            });
        if let Some(p) = found {
            return p;
        }
    }
}

/// The masking party's randomizers (the reverse variant's `mask_each`; module docs,
/// "Three kinds of randomness"): `h^β` on the owner's published base `h`, with `β`
/// uniform in `[0, 2^{2κ + 80})` (80 bits longer than the owner's exponents), from a
/// fixed-base table.
pub(crate) struct MaskingRandomizer {
    table: FixedBase,
    exponent_bytes: usize,
}

impl MaskingRandomizer {
    /// A source for about `items` randomizers (the table's window follows from it).
    pub(crate) fn new(pk: &PublicKey, items: usize) -> Self {
        let exponent_bits = pk.short_exponent_bits() + SMUDGING_SLACK_BITS;
        let window = table_window_bits(exponent_bits, pk.ct_arith.table_entry_bytes(), items);
        MaskingRandomizer {
            table: pk.ct_arith.fixed_base(&pk.h, exponent_bits, window),
            exponent_bytes: exponent_bits.div_ceil(8) as usize,
        }
    }

    /// `h^{β_i} · Π items[i]` with a fresh `β_i` for every group (each of the same
    /// length): the items re-randomized. The table's products and the items' run
    /// together, eight at a time on AVX-512 IFMA.
    pub(crate) fn randomize_each(
        &self,
        rng: &mut SessionRng,
        items: &[Vec<&Integer>],
    ) -> Vec<Integer> {
        let exponents = random_exponents(rng, self.exponent_bytes, items.len());
        self.table.pow_times_each(&exponent_refs(&exponents), items)
    }
}

/// The window of a fixed-base table for `items` exponentiations. Building the table and
/// using it costs `⌈E/b⌉ · (2^b + items)` multiplications for `E` exponent bits and
/// `b`-bit windows; each extra bit doubles the table, so a wider window is taken only
/// when it saves a twentieth of the best cost so far, and only within [`TABLE_BUDGET`].
/// At 100,000 items: 13 bits for the owner's 160-bit exponents on a 1,536-bit key (13
/// multiplications instead of 20), 12 bits for the masking party's 240-bit ones (20
/// instead of 30); 8
/// bits for a few thousand.
fn table_window_bits(exponent_bits: u32, entry_bytes: usize, items: usize) -> u32 {
    let windows = |bits: u32| exponent_bits.div_ceil(bits) as usize;
    let cost = |bits: u32| windows(bits) * ((1usize << bits) + items);
    let bytes = |bits: u32| windows(bits) * ((1usize << bits) - 1) * entry_bytes;
    let mut best = (WINDOW_BITS, cost(WINDOW_BITS));
    for bits in WINDOW_BITS + 1..=16 {
        if bytes(bits) > TABLE_BUDGET {
            break;
        }
        if cost(bits) * 20 < best.1 * 19 {
            best = (bits, cost(bits));
        }
    }
    best.0
}

/// One prime's half of the CRT decryption.
struct CrtHalf {
    /// `prime^0 ..= prime^{s+1}`.
    pows: Vec<Integer>,
    /// `(k!)^{-1} mod prime^s`.
    inv_fact: Vec<Integer>,
    /// `prime - 1`, the decryption exponent modulo `prime^{s+1}`.
    exp: Integer,
    /// `(dlog_{1+prime}(1+n) * (prime - 1))^{-1} mod prime^s`.
    hinv: Integer,
}

impl CrtHalf {
    fn new(prime: &Integer, n: &Integer, s: u32) -> Option<Self> {
        let mut pows = vec![Integer::from(1)];
        for i in 1..=(s as usize + 1) {
            let next = Integer::from(&pows[i - 1] * prime);
            pows.push(next);
        }
        let ps = &pows[s as usize];
        let inv_fact = inverse_factorials(s, ps)?;
        let g = Integer::from(n + 1u32).modulo(&pows[s as usize + 1]);
        let e = dj_dlog(&g, s, &pows, &inv_fact);
        let exp = Integer::from(prime - 1u32);
        let hinv = Integer::from(Integer::from(&e * &exp).invert_ref(ps)?);
        Some(CrtHalf {
            pows,
            inv_fact,
            exp,
            hinv,
        })
    }

    /// `m mod prime^s` for a ciphertext `c` of `m`.
    fn decrypt(&self, c: &Integer, s: u32) -> Integer {
        let ps1 = &self.pows[s as usize + 1];
        let cp = Integer::from(c.modulo_ref(ps1));
        let a = Integer::from(cp.pow_mod_ref(&self.exp, ps1).expect("positive modulus"));
        let d = dj_dlog(&a, s, &self.pows, &self.inv_fact);
        let mut m = d * &self.hinv;
        m.modulo_mut(&self.pows[s as usize]);
        m
    }
}

impl Drop for CrtHalf {
    fn drop(&mut self) {
        for x in self.pows.iter_mut().chain(self.inv_fact.iter_mut()) {
            wipe(x);
        }
        wipe(&mut self.exp);
        wipe(&mut self.hinv);
    }
}

/// The key owner's encryption `(1+n)^m h^α mod n^{s+1}`, computed modulo `p^{s+1}`
/// and `q^{s+1}` and joined (Garner): a product modulo a prime's power has half the
/// limbs of one modulo `n^{s+1}`, so it costs a quarter, and both halves together half.
/// The ciphertexts are the same integers as computed modulo `n^{s+1}` directly. Every
/// number here is secret (a half of `h` or of a ciphertext reveals `p`): the tables and
/// constants are overwritten on drop.
struct OwnerTables {
    /// `h mod p^{s+1}`'s and `h mod q^{s+1}`'s fixed-base tables.
    p: FixedBase,
    q: FixedBase,
    /// `p^{s+1}` and `q^{s+1}`.
    p_pow: Integer,
    q_pow: Integer,
    /// `(p^{s+1})^{-1} mod q^{s+1}`.
    p_pow_inv: Integer,
}

impl OwnerTables {
    fn new(sk: &SecretKey, items: usize) -> Self {
        let s = sk.pk.s as usize;
        let p_pow = sk.crt_p.pows[s + 1].clone();
        let q_pow = sk.crt_q.pows[s + 1].clone();
        let p_pow_inv = Integer::from(
            p_pow
                .invert_ref(&q_pow)
                .expect("distinct primes' powers are coprime"),
        );
        let bits = sk.pk.short_exponent_bits();
        let table = |modulus: &Integer| {
            let arith = BatchModulus::new(modulus);
            let window = table_window_bits(bits, arith.table_entry_bytes(), items);
            let mut h = Integer::from(sk.pk.h.modulo_ref(modulus));
            let table = arith.fixed_base(&h, bits, window);
            wipe(&mut h);
            table
        };
        OwnerTables {
            p: table(&p_pow),
            q: table(&q_pow),
            p_pow,
            q_pow,
            p_pow_inv,
        }
    }

    /// `(1+n)^{m_i} h^{α_i} mod n^{s+1}` for every `m_i`, each with a fresh `2κ`-bit
    /// `α_i` (module docs, "Three kinds of randomness"): eight at a time on AVX-512
    /// IFMA, in each half.
    fn encrypt_each(&self, pk: &PublicKey, ms: &[Integer], rng: &mut SessionRng) -> Vec<Integer> {
        let bytes = pk.short_exponent_bits().div_ceil(8) as usize;
        let exponents = random_exponents(rng, bytes, ms.len());
        let exponents = exponent_refs(&exponents);
        let plain: Vec<Integer> = ms.iter().map(|m| pk.one_plus_n_pow(m)).collect();
        let factors: Vec<Vec<&Integer>> = plain.iter().map(|x| vec![x]).collect();
        let in_p = self.p.pow_times_each(&exponents, &factors);
        let in_q = self.q.pow_times_each(&exponents, &factors);
        in_p.into_iter()
            .zip(in_q)
            .map(|(mut cp, mut cq)| {
                let c = crt_join(&cp, &cq, &self.p_pow, &self.q_pow, &self.p_pow_inv);
                wipe(&mut cp);
                wipe(&mut cq);
                c
            })
            .collect()
    }

    #[cfg(test)]
    fn window_bits(&self) -> u32 {
        self.p.window_bits()
    }
}

impl Drop for OwnerTables {
    fn drop(&mut self) {
        wipe(&mut self.p_pow);
        wipe(&mut self.q_pow);
        wipe(&mut self.p_pow_inv);
    }
}

/// The number below `a b` that is `x_a mod a` and `x_b mod b`, for coprime `a` and `b`
/// and `a_inv = a^{-1} mod b` (Garner): `x_a + a ((x_b - x_a) a_inv mod b)`. The
/// intermediate is overwritten (the halves may be secret).
fn crt_join(x_a: &Integer, x_b: &Integer, a: &Integer, b: &Integer, a_inv: &Integer) -> Integer {
    let mut t = Integer::from(x_b - x_a);
    t *= a_inv;
    t.modulo_mut(b);
    let mut x = Integer::from(&t * a);
    x += x_a;
    wipe(&mut t);
    x
}

/// Secret key: the factorisation, `λ`, CRT constants, and (built on first use) the
/// fixed-base table for the owner's fast encryption. Integers are overwritten on drop;
/// not `Clone`; `Debug` elided.
pub struct SecretKey {
    pk: PublicKey,
    p: Integer,
    q: Integer,
    lambda: Integer,
    crt_p: CrtHalf,
    crt_q: CrtHalf,
    /// `(q^s)^{-1} mod p^s`.
    q_s_inv: Integer,
    /// The tables for the owner's encryptions ([`SecretKey::owner_tables`]).
    owner_tables: OnceLock<OwnerTables>,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("paillier::SecretKey { .. }")
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        wipe(&mut self.p);
        wipe(&mut self.q);
        wipe(&mut self.lambda);
        wipe(&mut self.q_s_inv);
    }
}

impl SecretKey {
    /// The matching public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }

    /// The tables for the owner's encryptions, made on first use with their window
    /// sized for `items` encryptions ([`table_window_bits`]): one call site per key
    /// decides (a reverse run's `encrypt_each` of every item, a forward run's packed
    /// column).
    fn owner_tables(&self, items: usize) -> &OwnerTables {
        self.owner_tables
            .get_or_init(|| OwnerTables::new(self, items))
    }

    /// Decrypts to `m ∈ Z_{n^s}` (CRT over `p^{s+1}`, `q^{s+1}`).
    fn decrypt_int(&self, c: &Integer) -> Integer {
        let s = self.pk.s;
        let mp = self.crt_p.decrypt(c, s);
        let mq = self.crt_q.decrypt(c, s);
        let ps = &self.crt_p.pows[s as usize];
        let qs = &self.crt_q.pows[s as usize];
        crt_join(&mq, &mp, qs, ps, &self.q_s_inv)
    }

    /// Reference decryption without CRT: `c^λ = (1+n)^{mλ}`, extract, divide by `λ`.
    /// Used by tests to cross-check the CRT path.
    pub fn decrypt_no_crt(&self, c: &Integer) -> Integer {
        let pk = &self.pk;
        let a = Integer::from(
            c.pow_mod_ref(&self.lambda, pk.ciphertext_modulus())
                .expect("positive modulus"),
        );
        let ml = dj_dlog(&a, pk.s, &pk.n_pows, &pk.inv_fact);
        let linv = Integer::from(
            self.lambda
                .invert_ref(pk.plaintext_modulus())
                .expect("gcd(λ, n) = 1 by key generation"),
        );
        let mut m = ml * linv;
        m.modulo_mut(pk.plaintext_modulus());
        m
    }
}

/// Ciphertext: an element of `Z*_{n^{s+1}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ciphertext(pub Integer);

/// The packing layout of a column (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bit length of `max_sum`.
    pub u: u32,
    /// Slot width in bits.
    pub k: u32,
    /// Slots per ciphertext (`L`).
    pub slots: usize,
}

impl Paillier {
    /// The slot layout for `bounds` under `pk` (module docs, "Subset sums").
    pub fn layout(pk: &PublicKey, bounds: &ColumnBounds) -> Result<Layout, HeError> {
        let u = 128 - bounds.max_sum.leading_zeros();
        let p_bits = (pk.plaintext_modulus().significant_bits() - 1) as u64;
        // Smallest slot width k = u + t whose L = floor(P / k) slots meet the bound of the
        // module docs: L·2^u / (2^k − 2^u) + 2^u / 2^(k−1) ≤ 2^−σ, i.e. (dividing by 2^u)
        // L·2^σ / (2^t − 1) + 2^(σ+1) / 2^t ≤ 1.
        let sigma = STAT_SECURITY as u64;
        let mut t = sigma + 1;
        loop {
            let k = u as u64 + t;
            let l = p_bits / k;
            if l == 0 {
                return Err(HeError::Parameters(format!(
                    "max_sum of {u} bits does not fit a {p_bits}-bit plaintext with {STAT_SECURITY} bits of masking"
                )));
            }
            if t >= 60 || masking_bound_holds(l, t, sigma) {
                return Ok(Layout {
                    u,
                    k: k as u32,
                    slots: l as usize,
                });
            }
            t += 1;
        }
    }

    /// Key owner's fast encryption `(1+n)^m * h^alpha`, `alpha` a `2κ`-bit random
    /// exponent (DJN short-exponent assumption; module docs). `m` is reduced mod `n^s`.
    pub fn encrypt_owner(sk: &SecretKey, m: &Integer, rng: &mut SessionRng) -> Ciphertext {
        Ciphertext(owner_encrypt_int(sk, m, rng))
    }

    /// Decrypts to the full plaintext in `Z_{n^s}`.
    pub fn decrypt_integer(sk: &SecretKey, c: &Ciphertext) -> Integer {
        sk.decrypt_int(&c.0)
    }

    /// Encrypts an arbitrary plaintext in `Z_{n^s}` with full-size randomness.
    pub fn encrypt_integer(pk: &PublicKey, m: &Integer, rng: &mut SessionRng) -> Ciphertext {
        Ciphertext(pk.encrypt_full(m, rng))
    }
}

/// `L·2^σ·2^t + 2^(σ+1)·(2^t − 1) ≤ 2^t·(2^t − 1)`, exactly, in 128-bit integers
/// (`t ≤ 60`, `L < 2^40`).
fn masking_bound_holds(l: u64, t: u64, sigma: u64) -> bool {
    let two_t = 1u128 << t;
    let lhs = (l as u128) * (1u128 << (sigma + t)) + (1u128 << (sigma + 1)) * (two_t - 1);
    lhs <= two_t * (two_t - 1)
}

fn owner_encrypt_int(sk: &SecretKey, m: &Integer, rng: &mut SessionRng) -> Integer {
    owner_encrypt_each(sk, std::slice::from_ref(m), rng)
        .pop()
        .expect("one plaintext, one ciphertext")
}

/// `C · (1+n)^{r_j} · h^{β_j}` for each of the owner's ciphertexts `cts`, written to
/// `dst` one after the other, with fresh masks `r_j` (returned) and `β_j` from `rng`
/// (the reverse variant's masking, module docs "Three kinds of randomness").
fn mask_chunk(
    pk: &PublicKey,
    source: &MaskingRandomizer,
    cts: &[Integer],
    dst: &mut [u8],
    rng: &mut SessionRng,
) -> Vec<Mask> {
    let mut rs: Vec<Integer> = cts
        .iter()
        .map(|_| random_below(rng, pk.plaintext_modulus()))
        .collect();
    let mut plain: Vec<Integer> = rs.iter().map(|rj| pk.one_plus_n_pow(rj)).collect();
    let groups: Vec<Vec<&Integer>> = cts.iter().zip(&plain).map(|(c, p)| vec![c, p]).collect();
    for (d, x) in dst
        .chunks_mut(pk.ct_len)
        .zip(source.randomize_each(rng, &groups))
    {
        write_be(&x, d);
    }
    plain.iter_mut().for_each(wipe);
    rs.iter_mut()
        .map(|rj| {
            let mut mb = vec![0u8; pk.pt_len];
            write_be(rj, &mut mb);
            wipe(rj);
            Mask(mb)
        })
        .collect()
}

/// The key owner's encryptions of `ms` ([`OwnerTables::encrypt_each`]).
fn owner_encrypt_each(sk: &SecretKey, ms: &[Integer], rng: &mut SessionRng) -> Vec<Integer> {
    sk.owner_tables(ms.len()).encrypt_each(&sk.pk, ms, rng)
}

/// `h^α` for `count` fresh `bits`-bit `α` from `h`'s table, computed together (eight at
/// a time on AVX-512 IFMA): the threshold scheme's DJN short randomizers.
pub(crate) fn short_randomizers(
    table: &FixedBase,
    bits: u32,
    rng: &mut SessionRng,
    count: usize,
) -> Vec<Integer> {
    let bytes = bits.div_ceil(8) as usize;
    table.pow_each(&exponent_refs(&random_exponents(rng, bytes, count)))
}

/// `count` exponents of `bytes` random bytes each, drawn one after the other from
/// `rng` (big-endian, as the tables read them); overwritten when dropped.
fn random_exponents(rng: &mut SessionRng, bytes: usize, count: usize) -> Vec<Zeroizing<Vec<u8>>> {
    (0..count)
        .map(|_| {
            let mut e = Zeroizing::new(vec![0u8; bytes]);
            rng.fill(&mut e);
            e
        })
        .collect()
}

fn exponent_refs(exponents: &[Zeroizing<Vec<u8>>]) -> Vec<&[u8]> {
    exponents.iter().map(|e| e.as_slice()).collect()
}

/// Checks `values` against `bounds` (count, per-value bound, total bound).
pub(crate) fn check_values(bounds: &ColumnBounds, values: &[u64]) -> Result<(), HeError> {
    if values.len() != bounds.items {
        return Err(HeError::WrongCount {
            expected: bounds.items,
            got: values.len(),
        });
    }
    let mut total: u128 = 0;
    for &v in values {
        if v > bounds.max_value {
            return Err(HeError::OutOfRange {
                bound_bits: 64 - bounds.max_value.leading_zeros(),
            });
        }
        total += v as u128;
    }
    if total > bounds.max_sum {
        return Err(HeError::OutOfRange {
            bound_bits: 128 - bounds.max_sum.leading_zeros(),
        });
    }
    Ok(())
}

/// Validates `selected` against `count` items: in range and distinct.
pub(crate) fn check_selection(selected: &[usize], count: usize) -> Result<Vec<bool>, HeError> {
    let mut seen = vec![false; count];
    for &i in selected {
        if i >= count {
            return Err(HeError::BadIndex { index: i, count });
        }
        if seen[i] {
            return Err(HeError::Parameters(format!(
                "item index {i} is selected more than once"
            )));
        }
        seen[i] = true;
    }
    Ok(seen)
}

/// Checks a packed array's length and returns its ciphertext count.
pub(crate) fn packed_count(
    len: usize,
    ct_len: usize,
    expected: Option<usize>,
) -> Result<usize, HeError> {
    if !len.is_multiple_of(ct_len) {
        return Err(HeError::BadLength { len, ct_len });
    }
    let got = len / ct_len;
    match expected {
        Some(e) if e != got => Err(HeError::WrongCount { expected: e, got }),
        _ => Ok(got),
    }
}

/// Owner-encrypts every plaintext into a packed array, in parallel, with one forked rng
/// per fixed-size chunk (deterministic given `rng`).
fn par_owner_encrypt(sk: &SecretKey, plaintexts: &[Integer], rng: &mut SessionRng) -> Vec<u8> {
    // The table first, sized for all of them (the chunks below are small).
    let _ = sk.owner_tables(plaintexts.len());
    par_encoded(plaintexts, sk.pk.ct_len, rng, |ms, r| {
        owner_encrypt_each(sk, ms, r)
    })
}

/// `f` of every item as `ct_len`-byte big-endian integers back to back, computed on all
/// cores with one forked rng per [`RNG_CHUNK`] items (so the bytes do not depend on the
/// thread count). Also the threshold scheme's bulk operations (`tahe::paillier`).
pub(crate) fn par_encoded<T: Sync>(
    items: &[T],
    ct_len: usize,
    rng: &mut SessionRng,
    f: impl Fn(&[T], &mut SessionRng) -> Vec<Integer> + Sync,
) -> Vec<u8> {
    let mut out = vec![0u8; items.len() * ct_len];
    let forks = rng.fork_many(items.len().div_ceil(RNG_CHUNK));
    out.par_chunks_mut(RNG_CHUNK * ct_len)
        .zip(items.par_chunks(RNG_CHUNK))
        .zip(forks.into_par_iter())
        .for_each(|((buf, chunk), mut r)| {
            for (x, slot) in f(chunk, &mut r).iter().zip(buf.chunks_mut(ct_len)) {
                write_be(x, slot);
            }
        });
    out
}

impl AdditiveHe for Paillier {
    const ID: HeId = HeId::Paillier;
    type Params = Params;
    type PublicKey = PublicKey;
    type SecretKey = SecretKey;
    type Ciphertext = Ciphertext;

    /// # Panics
    /// If `params` fail [`Params::validate`] (a local configuration error).
    fn keygen(params: &Params, rng: &mut SessionRng) -> (PublicKey, SecretKey) {
        keygen_random_primes(params, rng)
    }

    /// Full-size randomness: any party may call this (module docs).
    fn encrypt(pk: &PublicKey, m: u64, rng: &mut SessionRng) -> Ciphertext {
        Ciphertext(pk.encrypt_full(&Integer::from(m), rng))
    }

    fn add(pk: &PublicKey, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        Ciphertext(pk.mul_mod(&a.0, &b.0))
    }

    fn mul_plain(pk: &PublicKey, c: &Ciphertext, k: u64) -> Ciphertext {
        Ciphertext(Integer::from(
            c.0.pow_mod_ref(&Integer::from(k), pk.ciphertext_modulus())
                .expect("positive modulus"),
        ))
    }

    /// Multiplies by a fresh full-size `r^{n^s}` (module docs).
    fn rerandomize(pk: &PublicKey, c: &Ciphertext, rng: &mut SessionRng) -> Ciphertext {
        Ciphertext(pk.mul_mod(&c.0, &pk.full_randomizer(rng)))
    }

    fn decrypt(sk: &SecretKey, c: &Ciphertext, max: u64) -> Result<u64, HeError> {
        let m = sk.decrypt_int(&c.0);
        match m.to_u64() {
            Some(v) if v <= max => Ok(v),
            _ => Err(HeError::OutOfRange {
                bound_bits: 64 - max.leading_zeros(),
            }),
        }
    }

    /// `s` (4 bytes, big-endian) ‖ `n` (`modulus_bits / 8` bytes) ‖ `h` (ciphertext width).
    fn encode_public_key(pk: &PublicKey) -> Vec<u8> {
        let nl = (pk.modulus_bits / 8) as usize;
        let mut out = vec![0u8; 4 + nl + pk.ct_len];
        out[..4].copy_from_slice(&pk.s.to_be_bytes());
        write_be(&pk.n, &mut out[4..4 + nl]);
        write_be(&pk.h, &mut out[4 + nl..]);
        out
    }

    fn decode_public_key(bytes: &[u8], params: &Params) -> Result<PublicKey, HeError> {
        params.validate()?;
        let bad = |m: &str| HeError::InvalidPublicKey(m.to_string());
        let nl = (params.modulus_bits / 8) as usize;
        if bytes.len() < 4 + nl {
            return Err(bad("too short"));
        }
        let s = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if s != params.s {
            return Err(bad("Damgard-Jurik s does not match the agreed parameters"));
        }
        let n = Integer::from_digits(&bytes[4..4 + nl], Order::Msf);
        if n.significant_bits() != params.modulus_bits {
            return Err(bad("modulus does not have the agreed bit length"));
        }
        if n.is_even() {
            return Err(bad("modulus is even"));
        }
        if n.is_perfect_square() {
            return Err(bad("modulus is a perfect square"));
        }
        let h = Integer::from_digits(&bytes[4 + nl..], Order::Msf);
        let pk = PublicKey::new(n, s, h)?;
        if bytes.len() != 4 + nl + pk.ct_len {
            return Err(bad("wrong length"));
        }
        if pk.h == 0 || &pk.h >= pk.ciphertext_modulus() || Integer::from(pk.h.gcd_ref(&pk.n)) != 1
        {
            return Err(bad("h is not a unit modulo n^(s+1)"));
        }
        // The owner's randomizers and the masking party's are powers of h: an h of order
        // 1 or 2 would leave them all but constant.
        if pk.mul_mod(&pk.h, &pk.h) == 1 {
            return Err(bad("h has order at most 2"));
        }
        Ok(pk)
    }

    fn ciphertext_len(pk: &PublicKey) -> usize {
        pk.ct_len
    }

    fn encode_ciphertext(pk: &PublicKey, c: &Ciphertext, out: &mut [u8]) {
        pk.encode_int(&c.0, out);
    }

    fn decode_ciphertext(pk: &PublicKey, bytes: &[u8]) -> Result<Ciphertext, HeError> {
        pk.decode_ct_int(bytes, 0).map(Ciphertext)
    }
}

impl SubsetSum for Paillier {
    fn column_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        let l = Self::layout(pk, bounds)?;
        Ok(bounds.items.div_ceil(l.slots))
    }

    fn sum_ciphertexts(pk: &PublicKey, bounds: &ColumnBounds) -> Result<usize, HeError> {
        Ok(Self::layout(pk, bounds)?.slots)
    }

    fn encrypt_column(
        pk: &PublicKey,
        sk: &SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        let _ = pk;
        check_values(bounds, values)?;
        let lay = Self::layout(&sk.pk, bounds)?;
        let plaintexts: Vec<Integer> = values
            .par_chunks(lay.slots)
            .map(|chunk| {
                let mut m = Integer::new();
                for &v in chunk.iter().rev() {
                    m <<= lay.k;
                    m += v;
                }
                m
            })
            .collect();
        Ok(par_owner_encrypt(sk, &plaintexts, rng))
    }

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
        let pk = &sk.pk;
        let lay = Self::layout(pk, bounds)?;
        packed_count(sum.len(), pk.ct_len, Some(lay.slots))?;
        let ys: Vec<Integer> = sum
            .par_chunks(pk.ct_len)
            .enumerate()
            .map(|(j, chunk)| {
                let c = pk.decode_ct_int(chunk, j)?;
                let m = sk.decrypt_int(&c);
                Ok((m >> (lay.k * j as u32)).keep_bits(lay.k))
            })
            .collect::<Result<_, HeError>>()?;
        let mut total = Integer::new();
        for y in ys {
            total += y;
        }
        total.keep_bits_mut(lay.k - 1);
        match total.to_u128() {
            Some(v) if v <= bounds.max_sum => Ok(v),
            _ => Err(HeError::OutOfRange { bound_bits: lay.u }),
        }
    }

    fn encrypt_each(
        pk: &PublicKey,
        sk: &SecretKey,
        bounds: &ColumnBounds,
        values: &[u64],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        let _ = pk;
        check_values(bounds, values)?;
        let plaintexts: Vec<Integer> = values.iter().map(|&v| Integer::from(v)).collect();
        Ok(par_owner_encrypt(sk, &plaintexts, rng))
    }

    fn mask_each(
        pk: &PublicKey,
        column: &[u8],
        rng: &mut SessionRng,
    ) -> Result<(Vec<u8>, Vec<Mask>), HeError> {
        let ct_len = pk.ct_len;
        let count = packed_count(column.len(), ct_len, None)?;
        // Made for this column and dropped with it: at 2^20 items the table is 256 MiB,
        // and rebuilding it for another column costs under a tenth of masking one.
        let source = MaskingRandomizer::new(pk, count);
        let mut forks = rng.fork_many(count.div_ceil(RNG_CHUNK));
        let mut out = vec![0u8; column.len()];
        // One pass over the column: each batch is decoded once, checked for units (so
        // an error comes before anything is sent), then masked `RNG_CHUNK` items to a
        // fork, whatever the thread count.
        let masks: Vec<Vec<Mask>> = out
            .par_chunks_mut(UNIT_BATCH * ct_len)
            .zip(column.par_chunks(UNIT_BATCH * ct_len))
            .zip(forks.par_chunks_mut(UNIT_BATCH / RNG_CHUNK))
            .enumerate()
            .map(|(batch_i, ((dst, src), forks))| {
                let first = batch_i * UNIT_BATCH;
                let cts = pk.decode_run(src, first)?;
                pk.check_units(&(first..).zip(&cts).collect::<Vec<_>>())?;
                let mut masks = Vec::with_capacity(cts.len());
                for ((dst, cts), r) in dst
                    .chunks_mut(RNG_CHUNK * ct_len)
                    .zip(cts.chunks(RNG_CHUNK))
                    .zip(forks)
                {
                    masks.extend(mask_chunk(pk, &source, cts, dst, r));
                }
                Ok(masks)
            })
            .collect::<Result<_, HeError>>()?;
        Ok((out, masks.into_iter().flatten().collect()))
    }

    fn open_masked_sum(
        sk: &SecretKey,
        masked: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError> {
        let pk = &sk.pk;
        let ct_len = pk.ct_len;
        let count = packed_count(masked.len(), ct_len, None)?;
        check_selection(selected, count)?;
        // A batch at a time (decoded, checked for units, multiplied), so that memory stays
        // bounded: at 2^20 items the decoded column alone would be 400 MB.
        let product = |cts: Vec<&Integer>| pk.arith().product_each(&[cts]).pop();
        let partials: Vec<Integer> = selected
            .par_chunks(UNIT_BATCH)
            .map(|batch| {
                let cts: Vec<Integer> = batch
                    .iter()
                    .map(|&i| pk.decode_ct_in_range(&masked[i * ct_len..(i + 1) * ct_len], i))
                    .collect::<Result<_, _>>()?;
                let indexed: Vec<(usize, &Integer)> = batch.iter().copied().zip(&cts).collect();
                pk.check_units(&indexed)?;
                Ok(product(cts.iter().collect()).expect("one group"))
            })
            .collect::<Result<_, HeError>>()?;
        let prod = product(partials.iter().collect()).expect("one group");
        let m = sk.decrypt_int(&prod);
        let mut out = vec![0u8; pk.pt_len];
        write_be(&m, &mut out);
        Ok(out)
    }

    fn unmask_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        opened: &[u8],
        masks: &[Mask],
        selected: &[usize],
    ) -> Result<u128, HeError> {
        let n_s = pk.plaintext_modulus();
        if opened.len() != pk.pt_len {
            return Err(HeError::InvalidCiphertext {
                index: 0,
                reason: "opened sum has the wrong length".into(),
            });
        }
        let mut v = read_be(opened);
        if &v >= n_s {
            return Err(HeError::InvalidCiphertext {
                index: 0,
                reason: "opened sum is not below n^s".into(),
            });
        }
        check_selection(selected, masks.len())?;
        for &i in selected {
            let r = read_be(&masks[i].0);
            if masks[i].0.len() != pk.pt_len || &r >= n_s {
                return Err(HeError::Parameters(format!(
                    "mask {i} is not an element of Z_(n^s)"
                )));
            }
            v -= r;
        }
        v.modulo_mut(n_s);
        match v.to_u128() {
            Some(x) if x <= bounds.max_sum => Ok(x),
            _ => Err(HeError::OutOfRange {
                bound_bits: 128 - bounds.max_sum.leading_zeros(),
            }),
        }
    }
}

/// The partial of a selection is one product per slot `j`: of the ciphertexts whose
/// slot `j` holds a selected item. Products of several columns multiply slot by slot;
/// every slot of a product stays below `2^u` because it sums distinct items, all counted
/// in `max_sum`.
impl PartialSums for Paillier {
    fn partial_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        column: &[u8],
        selected: &[usize],
    ) -> Result<Vec<u8>, HeError> {
        let lay = Self::layout(pk, bounds)?;
        let l = lay.slots;
        let nct = bounds.items.div_ceil(l);
        packed_count(column.len(), pk.ct_len, Some(nct))?;
        check_selection(selected, bounds.items)?;
        let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); l];
        let mut used = vec![false; nct];
        for &i in selected {
            buckets[i % l].push(i / l);
            used[i / l] = true;
        }
        let cts = pk.decode_packed(column, &used)?;
        let groups: Vec<Vec<&Integer>> = buckets
            .iter()
            .map(|bucket| {
                bucket
                    .iter()
                    .map(|&ci| cts[ci].as_ref().expect("decoded above"))
                    .collect()
            })
            .collect();
        Ok(pk.write_packed(&pk.arith().product_each(&groups)))
    }

    fn add_partials(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        a: &[u8],
        b: &[u8],
    ) -> Result<Vec<u8>, HeError> {
        let a = pk.read_partial(bounds, a)?;
        let b = pk.read_partial(bounds, b)?;
        let sums: Vec<Integer> = a.iter().zip(&b).map(|(x, y)| pk.mul_mod(x, y)).collect();
        Ok(pk.write_packed(&sums))
    }

    fn finish_sum(
        pk: &PublicKey,
        bounds: &ColumnBounds,
        partial: &[u8],
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, HeError> {
        let lay = Self::layout(pk, bounds)?;
        let l = lay.slots;
        let k = lay.k;
        let products = pk.read_partial(bounds, partial)?;
        // Target masks ρ'_j, uniform in [0, 2^{k-1}) with sum ≡ 0 mod 2^{k-1}.
        let half = k - 1;
        let mut targets: Vec<Integer> = (0..l.saturating_sub(1))
            .map(|_| random_bits(rng, half))
            .collect();
        let mut last = Integer::new();
        for t in &targets {
            last -= t;
        }
        last.keep_bits_mut(half);
        targets.push(last);
        let mut forks = rng.fork_many(l);
        // The outputs' randomizers first, all together (eight at a time on IFMA).
        let randomizers = pk.smudging_randomizers(&mut forks);

        let outputs: Vec<Integer> = products
            .par_iter()
            .zip(targets.par_iter())
            .zip(forks.into_par_iter().zip(randomizers))
            .enumerate()
            .map(|(j, ((prod, target), (mut r, mut rho)))| {
                // Junk masks: every other slot uniform in [0, 2^k − 2^u), so that
                // junk (< 2^u) plus mask never carries into the next slot.
                let junk_range = (Integer::from(1) << k) - (Integer::from(1) << lay.u);
                let mut mask = Integer::new();
                for jj in (0..l).rev() {
                    mask <<= k;
                    if jj != j {
                        mask += random_below(&mut r, &junk_range);
                    }
                }
                mask += Integer::from(target << (k * j as u32));
                let mut masked = pk.one_plus_n_pow(&mask);
                masked = pk.mul_mod(&masked, &rho);
                wipe(&mut mask);
                wipe(&mut rho);
                pk.mul_mod(prod, &masked)
            })
            .collect();
        Ok(pk.write_packed(&outputs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ahe::conformance::{self, Options};

    #[test]
    fn conformance_1024_s1() {
        conformance::run_all::<Paillier>(&Params {
            modulus_bits: 1024,
            s: 1,
        });
    }

    #[test]
    fn partial_sums_combine_across_columns() {
        conformance::partial_sums::<Paillier>(&Params {
            modulus_bits: 1024,
            s: 1,
        });
    }

    #[test]
    fn conformance_1024_s2() {
        conformance::run_all::<Paillier>(&Params {
            modulus_bits: 1024,
            s: 2,
        });
    }

    #[test]
    fn conformance_1024_s3() {
        // s = 3 is also covered by the deployed run; keep this one lighter.
        let opts = Options {
            large_column: 400,
            all_subsets_everywhere: false,
            ..Options::default()
        };
        conformance::run_with::<Paillier>(
            &Params {
                modulus_bits: 1024,
                s: 3,
            },
            &opts,
        );
    }

    #[test]
    fn conformance_seed_deployed() {
        conformance::run_with::<Paillier>(&Params::SEED_DEPLOYED, &Options::quick());
    }

    #[test]
    fn binomial_matches_modexp() {
        let mut rng = SessionRng::from_seed([3; 32]);
        for s in 1..=3 {
            let (pk, _sk) = Paillier::keygen(
                &Params {
                    modulus_bits: 1024,
                    s,
                },
                &mut rng,
            );
            let g = Integer::from(pk.n() + 1u32);
            for m in [
                Integer::from(0),
                Integer::from(1),
                Integer::from(s),
                Integer::from(pk.plaintext_modulus() - 1u32),
                random_below(&mut rng, pk.plaintext_modulus()),
            ] {
                let want = Integer::from(g.pow_mod_ref(&m, pk.ciphertext_modulus()).unwrap());
                assert_eq!(pk.one_plus_n_pow(&m), want, "s = {s}");
            }
        }
    }

    /// The owner's encryptions, computed modulo `p^{s+1}` and `q^{s+1}` and joined, are
    /// `(1+n)^m h^α mod n^{s+1}` with `α` the next 160 bits of the rng (2κ for the
    /// 1024-bit key's κ = 80), for plaintexts from 0 to `n^s - 1`.
    #[test]
    fn owner_encryptions_match_modexp() {
        let mut rng = SessionRng::from_seed([4; 32]);
        for s in [1, 2, 3] {
            let (pk, sk) = Paillier::keygen(
                &Params {
                    modulus_bits: 1024,
                    s,
                },
                &mut rng,
            );
            let top = Integer::from(pk.plaintext_modulus() - 1u32);
            let mut ms = vec![Integer::new(), Integer::from(1), top];
            ms.extend((0..10).map(|_| random_below(&mut rng, pk.plaintext_modulus())));
            let seed = [s as u8; 32];
            let cts = sk
                .owner_tables(1)
                .encrypt_each(&pk, &ms, &mut SessionRng::from_seed(seed));
            let mut replay = SessionRng::from_seed(seed);
            for (c, m) in cts.iter().zip(&ms) {
                let mut alpha = [0u8; 20];
                replay.fill(&mut alpha);
                let alpha = Integer::from_digits(&alpha, Order::Msf);
                let r = pk.h.pow_mod_ref(&alpha, pk.ciphertext_modulus()).unwrap();
                let want = Integer::from(r) * pk.one_plus_n_pow(m) % pk.ciphertext_modulus();
                assert_eq!(*c, want, "s = {s}");
                assert_eq!(sk.decrypt_int(c), *m, "s = {s}");
            }
        }
    }

    /// The masking party's randomizers: `h^β` on the owner's base with `β` of exactly
    /// `160 + 80` bits from the caller's rng on a 1024-bit key (a shorter `β` would no
    /// longer smudge the owner's 160-bit exponents over the `2^40` randomizers a run may
    /// draw, where 72 bits covered only `2^32`), encryptions of 0, from one
    /// table per key.
    #[test]
    fn masking_randomizers_smudge_the_owners_exponent() {
        let mut rng = SessionRng::from_seed([6; 32]);
        for s in [1, 3] {
            let params = Params {
                modulus_bits: 1024,
                s,
            };
            let (pk, sk) = Paillier::keygen(&params, &mut rng);
            let source = MaskingRandomizer::new(&pk, 20_000);
            assert_eq!(
                source.table.window_bits(),
                10,
                "a wide window for many items"
            );
            let seed = [s as u8; 32];
            let ms: Vec<Integer> = (0..20u32).map(|i| Integer::from(i * 77)).collect();
            let cts: Vec<Integer> = ms
                .iter()
                .map(|m| Paillier::encrypt_owner(&sk, m, &mut rng).0)
                .collect();
            let groups: Vec<Vec<&Integer>> = cts.iter().map(|c| vec![c]).collect();
            let drawn = source.randomize_each(&mut SessionRng::from_seed(seed), &groups);
            let mut replay = SessionRng::from_seed(seed);
            for ((r, c), m) in drawn.iter().zip(&cts).zip(&ms) {
                let mut beta = [0u8; 30];
                replay.fill(&mut beta);
                let beta = Integer::from_digits(&beta, Order::Msf);
                let rho = pk.h.pow_mod_ref(&beta, pk.ciphertext_modulus()).unwrap();
                let want = Integer::from(rho) * c % pk.ciphertext_modulus();
                assert_eq!(*r, want, "c · h^β with β of 240 bits");
                assert_eq!(sk.decrypt_int(r), *m, "the same plaintext");
            }
        }
    }

    /// `sum_selected`'s output randomizers: `h^β` with `β` of exactly `160 + 64 + 80`
    /// bits from each rng on a 1024-bit key, encryptions of 0.
    #[test]
    fn output_randomizers_smudge_products() {
        let params = Params {
            modulus_bits: 1024,
            s: 2,
        };
        let (pk, sk) = Paillier::keygen(&params, &mut SessionRng::from_seed([10; 32]));
        let seeds: Vec<[u8; 32]> = (0..9u8).map(|i| [i; 32]).collect();
        let mut rngs: Vec<SessionRng> = seeds.iter().map(|&s| SessionRng::from_seed(s)).collect();
        let drawn = pk.smudging_randomizers(&mut rngs);
        for (r, seed) in drawn.iter().zip(&seeds) {
            let mut beta = [0u8; 38];
            SessionRng::from_seed(*seed).fill(&mut beta);
            let beta = Integer::from_digits(&beta, Order::Msf);
            let want = pk.h.pow_mod_ref(&beta, pk.ciphertext_modulus()).unwrap();
            assert_eq!(*r, Integer::from(want), "h^β with β of 304 bits");
            assert_eq!(sk.decrypt_int(r), 0, "an encryption of 0");
        }
    }

    /// The smudging slack covers every randomizer a run may draw (the
    /// reverse variant's items times its encrypted columns, up to `2^39`, not `2^32`)
    /// within `2^-40` together, and keeps every `β` a whole number of bytes.
    #[test]
    fn smudging_slack_covers_every_randomizer_of_a_run() {
        let reverse_outputs = (u32::MAX as u64) * 128;
        assert!(reverse_outputs < 1 << MAX_SMUDGED_OUTPUTS_BITS);
        const { assert!(SMUDGING_SLACK_BITS >= STAT_SECURITY + MAX_SMUDGED_OUTPUTS_BITS) };
        for bits in [1024, 1536, 2048, 3072, 7680, 15360] {
            assert_eq!((short_exponent_bits(bits) + SMUDGING_SLACK_BITS) % 8, 0);
        }
    }

    /// Exponents follow the modulus's strength: 2κ bits, κ from NIST SP 800-57's table,
    /// the default key's 256 bits unchanged.
    #[test]
    fn short_exponents_are_twice_the_modulus_strength() {
        for (bits, kappa) in [
            (1024, 80),
            (1536, 80),
            (2047, 80),
            (2048, 112),
            (3008, 112),
            (3072, 128),
            (4096, 128),
            (7680, 192),
            (15360, 256),
        ] {
            assert_eq!(modulus_strength(bits), kappa, "{bits}-bit modulus");
            assert_eq!(short_exponent_bits(bits), 2 * kappa, "{bits}-bit modulus");
        }
        assert_eq!(short_exponent_bits(Params::default().modulus_bits), 256);
        assert_eq!(short_exponent_bits(Params::SEED_DEPLOYED.modulus_bits), 160);
    }

    /// The owner's table takes a wide window when it is made for many encryptions, and
    /// its encryptions still decrypt.
    #[test]
    fn the_owners_table_widens_for_many_items() {
        let params = Params {
            modulus_bits: 1024,
            s: 1,
        };
        let mut rng = SessionRng::from_seed([11; 32]);
        let (_, few) = Paillier::keygen(&params, &mut rng);
        assert_eq!(few.owner_tables(2000).window_bits(), 8);
        let (pk, many) = Paillier::keygen(&params, &mut rng);
        assert_eq!(many.owner_tables(100_000).window_bits(), 13);
        let values: Vec<u64> = (0..40).map(|i| i * 1_000_003).collect();
        let bounds = ColumnBounds {
            items: values.len(),
            max_value: 1 << 40,
            max_sum: 1 << 50,
        };
        let each = Paillier::encrypt_each(&pk, &many, &bounds, &values, &mut rng).unwrap();
        for (c, &v) in each.chunks(pk.ct_len).zip(&values) {
            assert_eq!(many.decrypt_int(&pk.decode_ct_int(c, 0).unwrap()), v);
        }
    }

    /// Units are checked a batch at a time: a ciphertext sharing a factor with `n` is
    /// still refused, with its own index, at the start, the middle (past the first
    /// batch) and the end of a column.
    #[test]
    fn a_ciphertext_sharing_a_factor_with_n_is_named() {
        let params = Params {
            modulus_bits: 1024,
            s: 1,
        };
        let mut rng = SessionRng::from_seed([8; 32]);
        let (pk, sk) = Paillier::keygen(&params, &mut rng);
        let count = 2100;
        let bounds = ColumnBounds {
            items: count,
            max_value: 1,
            max_sum: count as u128,
        };
        let column = Paillier::encrypt_each(&pk, &sk, &bounds, &vec![1; count], &mut rng).unwrap();
        let all: Vec<usize> = (0..count).collect();
        for bad in [0, 1500, count - 1] {
            let mut col = column.clone();
            write_be(&sk.q, &mut col[bad * pk.ct_len..(bad + 1) * pk.ct_len]);
            let named =
                |e: HeError| matches!(e, HeError::InvalidCiphertext { index, .. } if index == bad);
            assert!(named(Paillier::mask_each(&pk, &col, &mut rng).unwrap_err()));
            // Alone (too few for the lanes: a product on GMP).
            let one = &col[bad * pk.ct_len..(bad + 1) * pk.ct_len];
            assert!(named(pk.decode_ct_int(one, bad).unwrap_err()));
            assert!(named(
                Paillier::open_masked_sum(&sk, &col, &all).unwrap_err()
            ));
        }
        // The untouched column passes both.
        let (masked, _) = Paillier::mask_each(&pk, &column, &mut rng).unwrap();
        assert!(Paillier::open_masked_sum(&sk, &masked, &all).is_ok());
    }

    /// A published `h` of order 1 or 2 (`1`, `−1`) is refused on decode: every
    /// randomizer would be `±1`.
    #[test]
    fn bases_of_order_at_most_two_are_refused() {
        let params = Params {
            modulus_bits: 1024,
            s: 1,
        };
        let (pk, _) = Paillier::keygen(&params, &mut SessionRng::from_seed([9; 32]));
        let good = Paillier::encode_public_key(&pk);
        assert!(Paillier::decode_public_key(&good, &params).is_ok());
        let minus_one = Integer::from(pk.ciphertext_modulus() - 1u32);
        for h in [Integer::from(1), minus_one] {
            let mut bytes = good.clone();
            write_be(&h, &mut bytes[4 + 128..]);
            let err = Paillier::decode_public_key(&bytes, &params).unwrap_err();
            assert!(err.to_string().contains("order at most 2"), "{err}");
        }
    }

    #[test]
    fn square_moduli_are_refused() {
        let params = Params {
            modulus_bits: 1024,
            s: 1,
        };
        let (pk, _) = Paillier::keygen(&params, &mut SessionRng::from_seed([7; 32]));
        let p = Integer::from(pk.n.sqrt_ref()).next_prime();
        let square = Integer::from(&p * &p);
        assert_eq!(square.significant_bits(), 1024);
        let mut bytes = Paillier::encode_public_key(&pk);
        write_be(&square, &mut bytes[4..4 + 128]);
        let err = Paillier::decode_public_key(&bytes, &params).unwrap_err();
        assert!(err.to_string().contains("perfect square"), "{err}");
    }

    #[test]
    fn wipe_zeroes() {
        let mut x = Integer::from(Integer::u_pow_u(3, 500));
        wipe(&mut x);
        assert_eq!(x, 0);
    }
}
