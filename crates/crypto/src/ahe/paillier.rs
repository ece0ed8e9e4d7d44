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
//! ## Two kinds of randomness
//!
//! * **Key owner** (`encrypt_column`, `encrypt_each`, [`Paillier::encrypt_owner`]): the
//!   public key carries `h = x^{n^s} mod n^{s+1}` for a random `x` (Damgard-Jurik-Nielsen
//!   style), and the owner encrypts as `(1+n)^m * h^alpha` with a 2κ = 256-bit `alpha`,
//!   using a fixed-base table (8-bit windows, 31 modular multiplications per
//!   encryption). Hiding then rests on the DJN *short-exponent assumption*: `h^alpha`
//!   with a 256-bit `alpha` is indistinguishable from a uniform `n^s`-th residue (for
//!   parties that cannot factor `n`), in addition to DCR.
//! * **Party without the key** (`rerandomize`, [`AdditiveHe::encrypt`], the masks of
//!   `sum_selected`): a full-size `r` uniform in `Z*_n` and the factor
//!   `r^{n^s} mod n^{s+1}`. A short exponent would not do here: the key owner can take
//!   `n^s`-th roots, so it can recover `x` and `h^alpha`'s exponent structure, and hiding
//!   a ciphertext from the owner would reduce to a 256-bit discrete logarithm the owner
//!   may well be able to solve; with a full-size `r` the re-randomizer is a uniformly
//!   random `n^s`-th residue and hides the previous randomness information-theoretically.
//!   [`AdditiveHe::encrypt`] cannot tell who calls it, so it uses full-size randomness too.
//! * **Masking party** (`mask_each`, the reverse variant, one randomizer per item): the
//!   same statistical hiding from the owner at a fraction of the cost, on a key from
//!   [`AdditiveHe::keygen_for_masking`] (safe primes `p = 2p'+1`, `q = 2q'+1`). Once per
//!   decoded key the masking party draws its **own secret base** `h' = y^{n^s}`, `y` a
//!   random square modulo `n`, with a fixed-base table, and a `w` of Jacobi symbol −1.
//!   Each randomizer is `ρ = (−1)^{b_0} (w^{n^s})^{b_1} h'^β` with two uniform bits and
//!   `β` uniform in `[0, 2^{|n|+128})` (at most `(|n|+128)/8` table multiplications:
//!   208 at the deployed 1536-bit `n` instead of a 4,608-bit exponentiation).
//!   `(−1)^{n^s} = −1` as `n^s` is odd, so `ρ` is an `n^s`-th residue (it encrypts 0).
//!   *Why it hides from the owner*, who can take `n^s`-th roots: for an output `C · ρ` it
//!   learns the root `a · (−1)^{b_0} w^{b_1} y^β mod n` with `a` known to it, so `ρ`'s
//!   root must be uniform in `Z*_n`. With safe primes `Z*_n = QR_n × {1, −1, w, −w}`:
//!   the squares `QR_n` are cyclic of order `p'q'` and `1, −1, w, −w` represent the four
//!   cosets (`−1` is a non-residue modulo both primes as `p ≡ q ≡ 3 mod 4`, `w` modulo
//!   exactly one). The two bits pick a uniform coset, exactly; `y` generates `QR_n`
//!   unless `y ≡ 1` modulo `p` or `q` (probability below `2^{2−|n|/2}`), and then `y^β`
//!   with `β` uniform over `2^{|n|+128} > 2^{128} p'q'` values is within `2^-128` of
//!   uniform in `QR_n`. So every root is within `2^-128` of uniform and independent of
//!   the others: no assumption, and nothing the owner's factorisation helps with.
//!   *Why safe primes*: with random primes a random base is an `ℓ`-th power modulo `p`
//!   with probability `1/ℓ` for every small `ℓ | p − 1` (for `ℓ = 2`, 3/4 over the
//!   base), and the owner could then match outputs to inputs by residue symbols. The
//!   masking party cannot check that `n` is a product of two safe primes (that takes a
//!   zero-knowledge proof): a semi-honest owner is assumed, as everywhere in privset;
//!   decoding rejects a square `n`, for which no `w` exists. A *short* `β` (Damgard-
//!   Jurik-Nielsen style, about 40 multiplications) was measured and rejected: the owner
//!   can compute discrete logarithms modulo its `|n|/2`-bit primes, which caps that
//!   hiding at about 96 bits at `|n| = 3072` and 70 bits at 1536.

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
//!   `P_j * Enc(mask_j)` with fresh full-size randomness, where
//!   `mask_j = sum_{j' != j} ρ_{j,j'} 2^{kj'} + ρ'_j 2^{kj}`, every junk mask `ρ` uniform in
//!   `[0, 2^k − 2^u)`, and the target masks `ρ'_0..ρ'_{L-1}` uniform in `[0, 2^{k-1})`
//!   subject to `sum_j ρ'_j ≡ 0 (mod 2^{k-1})`. Every slot content is at most
//!   `max_sum < 2^u`, so junk plus its mask stays below `2^k` and a target plus its mask
//!   below `2^u + 2^{k-1} ≤ 2^k`: no slot carries into the next and the whole plaintext
//!   stays below `2^{kL} <= 2^P < n^s`.
//! * `decrypt_sum` (owner): `y_j` = bits `[kj, kj+k)` of output `j`;
//!   `S = (sum_j y_j) mod 2^{k-1}`, which equals `sum_j S_j` because the `ρ'` cancel.
//!
//! **What the owner learns.** Outputs are fresh encryptions, so only their plaintexts
//! matter. Adding a uniform `ρ ∈ [0, N)` to a value `J` gives a distribution at
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
//! the masking party's randomizer (above: `(|n|+128)/8` table multiplications per item);
//! the owner opens `(S + R) mod n^s`; the non-owner subtracts `R`.
//!
//! # Arithmetic
//! Work on many independent ciphertexts is batched through [`crate::bignum`]: the
//! products of `sum_selected` (one chain per slot, split over lanes), the outputs'
//! full-size randomizers (one exponent `n^s` for all), and the fixed-base tables of the
//! owner's, the masking party's and the threshold scheme's randomizers run eight at a
//! time in Montgomery form on AVX-512 IFMA, and on GMP one at a time elsewhere, with
//! the same results byte for byte (`tests/portable_paillier.rs`). Ciphertexts received
//! in bulk are checked for being units modulo `n` with one gcd per 1,024 of them.
//!
//! # Caveats
//! Arithmetic is not constant-time (GMP's, and the lanes' table lookups depend on the
//! exponent); secret-key integers are overwritten on drop, but GMP temporaries are not.

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use rug::Integer;
use rug::integer::{IsPrime, Order};

use super::{AdditiveHe, ColumnBounds, HeError, HeId, Mask, PartialSums, SubsetSum};
pub(crate) use crate::bignum::wipe;
use crate::bignum::{BatchModulus, FixedBase};
use crate::rng::SessionRng;

/// Statistical security of the slot masks (bits).
pub const STAT_SECURITY: u32 = 40;
/// Bit length of the key owner's short DJN exponent (2κ for κ = 128).
pub const SHORT_EXPONENT_BITS: u32 = 256;
/// Window width of the fixed-base tables.
const WINDOW_BITS: u32 = 8;
/// Bits beyond `|n|` of the masking party's exponent: its randomizers' roots are then
/// within `2^-128` of uniform (module docs, "Two kinds of randomness").
const MASKING_SLACK_BITS: u32 = 128;
/// Most bytes the masking party's table may hold: wider windows mean fewer
/// multiplications per randomizer but tables twice as large per extra bit.
const MASKING_TABLE_BUDGET: usize = 256 << 20;
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
    /// The masking party's randomizers, made on first use from the caller's rng (so
    /// once per decoded key, i.e. per session) and shared by clones of this key.
    masking: OnceLock<Arc<MaskingRandomizer>>,
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
            masking: OnceLock::new(),
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

    /// The masking party's randomizer source, made on first use with a table sized for
    /// `items` randomizers ([`MaskingRandomizer::window_bits`]). `rng` is forked on
    /// every call, whether or not the source is made here, so what the caller draws
    /// next does not depend on earlier calls.
    pub(crate) fn masking_randomizer(
        &self,
        rng: &mut SessionRng,
        items: usize,
    ) -> &MaskingRandomizer {
        let mut init = rng.fork();
        self.masking
            .get_or_init(|| Arc::new(MaskingRandomizer::new(self, &mut init, items)))
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
        let c = Integer::from_digits(bytes, Order::Msf);
        if c == 0 {
            return Err(bad("zero"));
        }
        if &c >= self.ciphertext_modulus() {
            return Err(bad("not below n^(s+1)"));
        }
        Ok(c)
    }

    /// Checks that every `(index, c)` is coprime to `n`, with one gcd per batch of
    /// [`UNIT_BATCH`]: a prime factor of `n` divides the batch's product modulo `n`
    /// exactly when it divides one of its members, and only a failing batch is searched
    /// for the first member at fault (the error names its index).
    fn check_units(&self, cts: &[(usize, &Integer)]) -> Result<(), HeError> {
        let n = &self.n;
        cts.par_chunks(UNIT_BATCH).try_for_each(|batch| {
            let mut prod = Integer::from(1);
            for (_, c) in batch {
                prod *= Integer::from(c.modulo_ref(n));
                prod.modulo_mut(n);
            }
            if Integer::from(prod.gcd_ref(n)) == 1 {
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

pub(crate) fn write_be(x: &Integer, out: &mut [u8]) {
    debug_assert!(x.significant_digits::<u8>() <= out.len());
    x.write_digits(out, Order::Msf);
}

pub(crate) fn random_bits(rng: &mut SessionRng, bits: u32) -> Integer {
    let mut buf = vec![0u8; bits.div_ceil(8) as usize];
    rng.fill(&mut buf);
    let mut x = Integer::from_digits(&buf, Order::Msf);
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

/// A key pair on two distinct primes of `modulus_bits / 2` bits from `prime`.
///
/// # Panics
/// If `params` fail [`Params::validate`] (a local configuration error).
fn keygen_with(
    params: &Params,
    rng: &mut SessionRng,
    prime: impl Fn(&mut SessionRng, u32) -> Integer,
) -> (PublicKey, SecretKey) {
    params.validate().expect("invalid Paillier parameters");
    let half = params.modulus_bits / 2;
    let s = params.s;
    loop {
        let p = prime(rng, half);
        let q = prime(rng, half);

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
            table: OnceLock::new(),
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
/// "Two kinds of randomness"): its own secret base `h' = y^{n^s}` for a random square
/// `y`, with a fixed-base table, and `w^{n^s}` for a `w` of Jacobi symbol −1. A
/// randomizer is `(−1)^{b_0} (w^{n^s})^{b_1} h'^β` with `β` uniform in
/// `[0, 2^{|n| + 128})` and two uniform bits; its `n^s`-th root
/// `(−1)^{b_0} w^{b_1} y^β` is within `2^-128` of uniform in `Z*_n` when `n` is a
/// product of two safe primes.
pub(crate) struct MaskingRandomizer {
    table: FixedBase,
    w_ns: Integer,
    exponent_bytes: usize,
}

impl MaskingRandomizer {
    /// A source for about `items` randomizers (the table's window follows from it).
    pub(crate) fn new(pk: &PublicKey, rng: &mut SessionRng, items: usize) -> Self {
        let n = &pk.n;
        let (ns, big) = (pk.plaintext_modulus(), pk.ciphertext_modulus());
        let exponent_bits = (n.significant_bits() + MASKING_SLACK_BITS).next_multiple_of(8);
        let mut y = random_unit(rng, n);
        y.square_mut();
        y.modulo_mut(n);
        let mut h = Integer::from(y.pow_mod_ref(ns, big).expect("positive modulus"));
        let window = Self::window_bits(exponent_bits, pk.ct_arith.table_entry_bytes(), items);
        let table = pk.ct_arith.fixed_base(&h, exponent_bits, window);
        wipe(&mut y);
        wipe(&mut h);
        // Half of Z*_n has Jacobi symbol −1 (n is odd and not a square, checked on
        // decode): 256 failed draws happen with probability 2^-256.
        let w = (0..256)
            .map(|_| random_unit(rng, n))
            .find(|w| w.jacobi(n) == -1)
            .expect("n is not a perfect square, so a unit of Jacobi symbol -1 exists");
        let w_ns = Integer::from(w.pow_mod_ref(ns, big).expect("positive modulus"));
        MaskingRandomizer {
            table,
            w_ns,
            exponent_bytes: exponent_bits as usize / 8,
        }
    }

    /// The table's window for `items` randomizers. Building the table and drawing them
    /// costs `⌈E/b⌉ · (2^b + items)` multiplications for `E` exponent bits and `b`-bit
    /// windows; each extra bit doubles the table, so a wider window is taken only when
    /// it saves a tenth of the best cost so far, and only within
    /// [`MASKING_TABLE_BUDGET`]. At a 1536-bit `n` and `s = 1`: 8 bits (19 MiB) for a
    /// thousand items, 11 bits (119 MiB) at 100,000 (152 multiplications a randomizer
    /// instead of 208).
    fn window_bits(exponent_bits: u32, entry_bytes: usize, items: usize) -> u32 {
        let windows = |bits: u32| exponent_bits.div_ceil(bits) as usize;
        let cost = |bits: u32| windows(bits) * ((1usize << bits) + items);
        let bytes = |bits: u32| windows(bits) * ((1usize << bits) - 1) * entry_bytes;
        let mut best = (WINDOW_BITS, cost(WINDOW_BITS));
        for bits in WINDOW_BITS + 1..=16 {
            if bytes(bits) > MASKING_TABLE_BUDGET {
                break;
            }
            if cost(bits) * 10 < best.1 * 9 {
                best = (bits, cost(bits));
            }
        }
        best.0
    }

    /// `count` fresh randomizers, `n^s`-th residues modulo `n^{s+1}` (their table
    /// products computed together: eight at a time on AVX-512 IFMA).
    pub(crate) fn draw_each(
        &self,
        pk: &PublicKey,
        rng: &mut SessionRng,
        count: usize,
    ) -> Vec<Integer> {
        let big = pk.ciphertext_modulus();
        let len = self.exponent_bytes;
        // β's bytes, then one byte whose two low bits pick the coset.
        let mut draws: Vec<Vec<u8>> = (0..count)
            .map(|_| {
                let mut d = vec![0u8; len + 1];
                rng.fill(&mut d);
                d
            })
            .collect();
        let betas: Vec<&[u8]> = draws.iter().map(|d| &d[..len]).collect();
        let powers = self.table.pow_each(&betas);
        let out = powers
            .into_iter()
            .zip(&draws)
            .map(|(mut r, d)| {
                if d[len] & 1 == 1 {
                    r = pk.mul_mod(&r, &self.w_ns);
                }
                if d[len] & 2 == 2 {
                    r = big - r;
                }
                r
            })
            .collect();
        draws.iter_mut().for_each(zeroize::Zeroize::zeroize);
        out
    }
}

impl Drop for MaskingRandomizer {
    fn drop(&mut self) {
        wipe(&mut self.w_ns);
    }
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
    table: OnceLock<FixedBase>,
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

    fn table(&self) -> &FixedBase {
        self.table
            .get_or_init(|| self.pk.fixed_base(&self.pk.h, SHORT_EXPONENT_BITS))
    }

    /// Decrypts to `m ∈ Z_{n^s}` (CRT over `p^{s+1}`, `q^{s+1}`).
    fn decrypt_int(&self, c: &Integer) -> Integer {
        let s = self.pk.s;
        let mp = self.crt_p.decrypt(c, s);
        let mq = self.crt_q.decrypt(c, s);
        // m = mq + q^s * ((mp - mq) * (q^s)^{-1} mod p^s)
        let ps = &self.crt_p.pows[s as usize];
        let qs = &self.crt_q.pows[s as usize];
        let mut t = Integer::from(&mp - &mq);
        t *= &self.q_s_inv;
        t.modulo_mut(ps);
        t *= qs;
        t += mq;
        t
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

    /// Key owner's fast encryption `(1+n)^m * h^alpha`, `alpha` a 256-bit random
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

/// The key owner's encryptions of `ms` (their short randomizers' table products
/// computed together: eight at a time on AVX-512 IFMA).
fn owner_encrypt_each(sk: &SecretKey, ms: &[Integer], rng: &mut SessionRng) -> Vec<Integer> {
    let pk = &sk.pk;
    let randomizers = short_randomizers(sk.table(), rng, ms.len());
    ms.iter()
        .zip(randomizers)
        .map(|(m, r)| pk.mul_mod(&pk.one_plus_n_pow(m), &r))
        .collect()
}

/// `h^α` for `count` fresh [`SHORT_EXPONENT_BITS`]-bit `α` from `h`'s table: the DJN
/// short randomizers of the key owner and of the threshold scheme, computed together
/// (eight at a time on AVX-512 IFMA).
pub(crate) fn short_randomizers(
    table: &FixedBase,
    rng: &mut SessionRng,
    count: usize,
) -> Vec<Integer> {
    let mut alphas = vec![[0u8; SHORT_EXPONENT_BITS as usize / 8]; count];
    alphas.iter_mut().for_each(|a| rng.fill(a));
    let refs: Vec<&[u8]> = alphas.iter().map(|a| &a[..]).collect();
    let out = table.pow_each(&refs);
    zeroize::Zeroize::zeroize(&mut alphas);
    out
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
    let _ = sk.table();
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
        keygen_with(params, rng, random_prime)
    }

    /// Safe primes, which the masking party's fast randomizers need (module docs, "Two
    /// kinds of randomness").
    fn keygen_for_masking(params: &Params, rng: &mut SessionRng) -> (PublicKey, SecretKey) {
        keygen_with(params, rng, |rng, bits| safe_prime(bits, rng))
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
        let source = pk.masking_randomizer(rng, count);
        let forks = rng.fork_many(count.div_ceil(RNG_CHUNK));
        let mut out = vec![0u8; column.len()];
        let masks: Vec<Vec<Mask>> = out
            .par_chunks_mut(RNG_CHUNK * ct_len)
            .zip(column.par_chunks(RNG_CHUNK * ct_len))
            .zip(forks.into_par_iter())
            .enumerate()
            .map(|(chunk_i, ((dst, src), mut r))| {
                let first = chunk_i * RNG_CHUNK;
                let cts = src
                    .chunks(ct_len)
                    .enumerate()
                    .map(|(i, s)| pk.decode_ct_in_range(s, first + i))
                    .collect::<Result<Vec<_>, _>>()?;
                let units: Vec<(usize, &Integer)> = (first..).zip(&cts).collect();
                pk.check_units(&units)?;
                let mut rs: Vec<Integer> = cts
                    .iter()
                    .map(|_| random_below(&mut r, pk.plaintext_modulus()))
                    .collect();
                let mut rhos = source.draw_each(pk, &mut r, cts.len());
                // C · (1+n)^{r_j} · ρ_j, the three products of each item together.
                let mut plain: Vec<Integer> = rs.iter().map(|rj| pk.one_plus_n_pow(rj)).collect();
                let groups: Vec<Vec<&Integer>> = cts
                    .iter()
                    .zip(&plain)
                    .zip(&rhos)
                    .map(|((c, p), rho)| vec![c, p, rho])
                    .collect();
                for (d, x) in dst.chunks_mut(ct_len).zip(pk.arith().product_each(&groups)) {
                    write_be(&x, d);
                }
                rhos.iter_mut().chain(&mut plain).for_each(wipe);
                let masks = rs
                    .iter_mut()
                    .map(|rj| {
                        let mut mb = vec![0u8; pk.pt_len];
                        write_be(rj, &mut mb);
                        wipe(rj);
                        Mask(mb)
                    })
                    .collect();
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
        let count = packed_count(masked.len(), pk.ct_len, None)?;
        let used = check_selection(selected, count)?;
        let cts = pk.decode_packed(masked, &used)?;
        let selected_cts: Vec<&Integer> = cts.iter().filter_map(|c| c.as_ref()).collect();
        let prod = pk
            .arith()
            .product_each(&[selected_cts])
            .pop()
            .expect("one group");
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
        let mut v = Integer::from_digits(opened, Order::Msf);
        if &v >= n_s {
            return Err(HeError::InvalidCiphertext {
                index: 0,
                reason: "opened sum is not below n^s".into(),
            });
        }
        check_selection(selected, masks.len())?;
        for &i in selected {
            let r = Integer::from_digits(&masks[i].0, Order::Msf);
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
        // The outputs' randomizers first, all together (they share the exponent n^s).
        let randomizers = pk.full_randomizers(&mut forks);

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

    #[test]
    fn fixed_base_table_matches_modexp() {
        let mut rng = SessionRng::from_seed([4; 32]);
        let (pk, sk) = Paillier::keygen(
            &Params {
                modulus_bits: 1024,
                s: 2,
            },
            &mut rng,
        );
        for _ in 0..4 {
            let mut alpha = [0u8; 32];
            rng.fill(&mut alpha);
            alpha[5] = 0;
            let a = Integer::from_digits(&alpha, Order::Msf);
            let want = Integer::from(pk.h.pow_mod_ref(&a, pk.ciphertext_modulus()).unwrap());
            assert_eq!(sk.table().pow_each(&[&alpha]), [want]);
        }
        assert_eq!(sk.table().pow_each(&[&[0; 32]]), [1]);
    }

    /// The masking party's randomizers on a safe-prime key: encryptions of 0, built
    /// from a table that matches plain exponentiation at the full exponent length, and
    /// roots spread over all four cosets of the squares (the owner, who knows p and q,
    /// cannot tell a randomizer's coset in advance).
    #[test]
    fn masking_randomizers_are_zero_and_cover_every_coset() {
        let mut rng = SessionRng::from_seed([6; 32]);
        for s in [1, 3] {
            let params = Params {
                modulus_bits: 1024,
                s,
            };
            let (pk, sk) = Paillier::keygen_for_masking(&params, &mut rng);
            assert!(is_safe_prime(&sk.p) && is_safe_prime(&sk.q), "safe primes");
            let source = pk.masking_randomizer(&mut rng, 20_000);
            assert_eq!(
                source.table.window_bits(),
                10,
                "a wide window for many items"
            );
            let big = pk.ciphertext_modulus();
            let mut e = vec![0u8; source.exponent_bytes];
            rng.fill(&mut e);
            let base = source.table.pow_each(&[&[1]]).pop().unwrap();
            let want = Integer::from(
                base.pow_mod_ref(&Integer::from_digits(&e, Order::Msf), big)
                    .unwrap(),
            );
            assert_eq!(source.table.pow_each(&[&e]), [want], "table at full length");
            let mut cosets = std::collections::HashSet::new();
            for r in source.draw_each(&pk, &mut rng, 64) {
                assert_eq!(sk.decrypt_int(&r), 0, "an encryption of 0");
                let legendre = |p: &Integer| Integer::from(&r % p).legendre(p);
                cosets.insert((legendre(&sk.p), legendre(&sk.q)));
            }
            assert_eq!(cosets.len(), 4, "roots in every coset: {cosets:?}");
            // One source per key: a second call reuses it.
            assert!(std::ptr::eq(source, pk.masking_randomizer(&mut rng, 1)));
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
            assert!(named(
                Paillier::open_masked_sum(&sk, &col, &all).unwrap_err()
            ));
        }
        // The untouched column passes both.
        let (masked, _) = Paillier::mask_each(&pk, &column, &mut rng).unwrap();
        assert!(Paillier::open_masked_sum(&sk, &masked, &all).is_ok());
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
