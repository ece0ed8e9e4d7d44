//! Threshold additively homomorphic encryption, for multi-party PSI.
//!
//! # What the multi-party protocols need
//!
//! The three multi-party PSI protocols privset will run on its n-party engine (Bay et
//! al.'s Bloom-filter protocol, Miyaji-Nishida's, and Hazay-Venkitasubramaniam's
//! polynomial protocol, as presented and compared in de Jong's thesis, "Java
//! Implementation and Analysis of Multi-party Private Set Intersection Protocols",
//! Ch. 3-5) all use the same handful of operations of a threshold additively homomorphic
//! scheme (de Jong, Sec. 2.2-2.4):
//!
//! * everybody encrypts under one joint public key, adds ciphertexts, multiplies them by
//!   public (often random) scalars and re-randomizes them (`ReRand(C) = C +_H Enc(0)`,
//!   de Jong Algorithm 1);
//! * decryption needs the cooperation of at least `t` of the `n` key holders: each
//!   computes a *decryption share* (`ShDec`) and anybody *combines* `t` of them (`Comb`);
//! * the protocols only ever need to know whether a plaintext is zero ("decryption to
//!   zero", `ShDec0`): the parties first multiply the ciphertext by random scalars, so a
//!   non-zero plaintext becomes a uniformly random one, and then decrypt jointly.
//!
//! [`ThresholdAhe`] is exactly that interface. Two schemes implement it:
//!
//! * [`elgamal`]: threshold exponential ElGamal on ristretto255 with a dealer-free
//!   distributed key generation (Pedersen 1991, with Feldman 1987 verifiable secret
//!   sharing), decryption shares with Chaum-Pedersen proofs of correct decryption. The
//!   default: keys need no trusted party, ciphertexts are 64 bytes, and every operation
//!   is a few elliptic-curve multiplications. Only small plaintexts can be decrypted
//!   (baby-step giant-step), which is all `is_zero` needs.
//! * [`paillier`]: threshold Paillier / Damgard-Jurik (Damgard-Jurik 2001, Sec. 5,
//!   building on Shoup 2000's RSA sharing), the scheme the thesis implements (de Jong,
//!   Sec. 2.4). A trusted dealer generates and shares the key; full plaintexts in `Z_{n^s}`
//!   can be decrypted.
//!
//! Every scheme runs the same conformance suite (`conformance`, behind the
//! `conformance` feature).
//!
//! # Who learns what
//!
//! A decryption share is, by design, useful to whoever combines: `t` shares of a
//! ciphertext reveal its whole plaintext (ElGamal: the point `mG`). `is_zero` therefore
//! only hides a non-zero plaintext if the ciphertext was first multiplied by a random
//! non-zero scalar nobody in the combining coalition knows (the protocols' `ShDec0`);
//! this layer does not do that itself, because in the protocols the randomization is
//! spread over the parties.
//!
//! # Malicious shares
//!
//! Every decryption share carries a non-interactive zero-knowledge proof that it was
//! computed with the party's key share (Fiat-Shamir, SHA-256). [`ThresholdAhe::combine`]
//! and [`ThresholdAhe::is_zero`] verify every share they are given and fail with
//! [`TaheError::BadShare`] naming the first party whose share does not verify, so a
//! wrong plaintext is never returned and the cheater is identified. In bulk, a party's
//! batch of shares carries one proof ([`ThresholdAhe::share_batch`]). Where every party
//! decrypts the same ciphertexts ([`ThresholdAhe::Mesh`]), the shares go to one party,
//! the relay, and the proofs to everybody once the relay has passed the shares on, so
//! that a scheme can check all the shares a party decrypts with at once and name the
//! wrong party only when that fails.

pub mod elgamal;
pub mod paillier;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

use crate::rng::SessionRng;

/// Errors of the threshold layer. Anything decoded from peer bytes that fails validation
/// is an error, never a panic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaheError {
    /// An encoding (of a ciphertext, key, share, commitment ...) failed validation.
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    /// A decryption share failed its proof of correct decryption (or was computed for a
    /// different ciphertext or key).
    #[error("decryption share of party {party} is invalid: {reason}")]
    BadShare { party: u32, reason: String },
    /// Two shares (or batches of shares) claim the same party.
    #[error("two decryption shares from party {party}")]
    DuplicateShare { party: u32 },
    /// A share names a party outside `1..=n`.
    #[error("party index {party} is not in 1..={parties}")]
    UnknownParty { party: u32, parties: u32 },
    /// A zero test is missing a party's batch of shares.
    #[error("no decryption shares from party {party}")]
    MissingShares { party: u32 },
    /// Fewer shares than the threshold: nothing is decrypted.
    #[error("{got} decryption shares, {need} needed")]
    TooFewShares { got: usize, need: usize },
    /// The plaintext is not in the range the caller asked for (or cannot be computed).
    #[error("plaintext is not in [0, {max}]")]
    OutOfRange { max: u64 },
    /// A dealer of the distributed key generation sent inconsistent data: its share for
    /// this party does not match its commitments, or its commitments are malformed.
    #[error("complaint against DKG dealer {dealer}: {reason}")]
    Complaint { dealer: u32, reason: String },
    /// Local configuration error (party counts, thresholds, modulus sizes).
    #[error("unsupported parameters: {0}")]
    Parameters(String),
}

/// Shorthand for an [`TaheError::Invalid`].
pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> TaheError {
    TaheError::Invalid {
        what,
        reason: reason.into(),
    }
}

/// A threshold additively homomorphic encryption scheme (de Jong, Sec. 2.2-2.4).
///
/// Parties are numbered `1..=n`; a key is `t`-out-of-`n`: any `t` distinct valid
/// decryption shares decrypt, fewer decrypt nothing (`t = n` is n-out-of-n).
///
/// Plaintexts are elements of the scheme's plaintext ring (`Z_ℓ` for ElGamal, `Z_{n^s}`
/// for Paillier), [`Self::Scalar`]; only small non-negative ones can be read back as a
/// value (`combine`), and any can be tested against zero (`is_zero`).
pub trait ThresholdAhe: Send + Sync + 'static {
    /// Short name (`"elgamal"`, `"paillier"`).
    const NAME: &'static str;
    /// The joint public key with the parties' public verification keys.
    type PublicKey: Clone + Send + Sync;
    /// One party's share of the decryption key: zeroized on drop, not `Clone`, `Debug`
    /// elided.
    type KeyShare: Send + Sync + zeroize::ZeroizeOnDrop;
    type Ciphertext: Clone + PartialEq + Send + Sync;
    /// A partial decryption by one party, with its proof of correctness.
    type DecryptionShare: Clone + Send + Sync;
    /// An element of the plaintext ring.
    type Scalar: Clone + PartialEq + std::fmt::Debug + Send + Sync;

    /// Number of parties `n`.
    fn parties(pk: &Self::PublicKey) -> u32;
    /// Shares needed to decrypt, `t`.
    fn threshold(pk: &Self::PublicKey) -> u32;
    /// This share's party index, in `1..=n`.
    fn share_index(ks: &Self::KeyShare) -> u32;
    /// The public key the share belongs to.
    fn share_public_key(ks: &Self::KeyShare) -> &Self::PublicKey;

    /// `v` as a plaintext.
    fn scalar_from_u64(pk: &Self::PublicKey, v: u64) -> Self::Scalar;
    /// `-a` in the plaintext ring.
    fn scalar_neg(pk: &Self::PublicKey, a: &Self::Scalar) -> Self::Scalar;
    /// `a + b` in the plaintext ring.
    fn scalar_add(pk: &Self::PublicKey, a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;
    /// `a · b` in the plaintext ring.
    fn scalar_mul(pk: &Self::PublicKey, a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;
    /// A plaintext from 64 uniformly random bytes (a hash output): within `2^-128` of
    /// uniform when the ring has at most 384 bits (ElGamal's `Z_ℓ`); for a larger ring
    /// (Paillier) an injective-looking 512-bit value, which is what hashing items to
    /// plaintexts needs (distinct items give distinct plaintexts, barring a hash collision).
    fn scalar_from_wide(pk: &Self::PublicKey, bytes: &[u8; 64]) -> Self::Scalar;
    /// A uniformly random *unit* of the plaintext ring (multiplying by it keeps a
    /// non-zero plaintext non-zero and makes it uniform among units: `ShDec0`).
    fn random_unit(pk: &Self::PublicKey, rng: &mut SessionRng) -> Self::Scalar;

    /// A fresh encryption of `m`.
    fn encrypt(pk: &Self::PublicKey, m: &Self::Scalar, rng: &mut SessionRng) -> Self::Ciphertext;
    /// An encryption of the sum of the plaintexts (deterministic: re-randomize before
    /// sending if the inputs' randomness must be hidden).
    fn add(pk: &Self::PublicKey, a: &Self::Ciphertext, b: &Self::Ciphertext) -> Self::Ciphertext;
    /// An encryption of `k * m` (deterministic, as `add`).
    fn mul_scalar(pk: &Self::PublicKey, c: &Self::Ciphertext, k: &Self::Scalar)
    -> Self::Ciphertext;
    /// `c +_H Enc(0)` with fresh randomness: an encryption of the same plaintext
    /// distributed like a fresh encryption (exactly for ElGamal, computationally for
    /// Paillier's short exponents), so unlinkable to `c`.
    fn rerandomize(
        pk: &Self::PublicKey,
        c: &Self::Ciphertext,
        rng: &mut SessionRng,
    ) -> Self::Ciphertext;

    /// This party's decryption share of `c`, with a proof of correct decryption (the
    /// proof's nonce comes from `rng`).
    fn decryption_share(
        ks: &Self::KeyShare,
        c: &Self::Ciphertext,
        rng: &mut SessionRng,
    ) -> Self::DecryptionShare;
    /// The party a share claims to come from (unverified until `verify_share`).
    fn share_party(share: &Self::DecryptionShare) -> u32;
    /// Checks a share's proof against `c` and the party's verification key.
    fn verify_share(
        pk: &Self::PublicKey,
        c: &Self::Ciphertext,
        share: &Self::DecryptionShare,
    ) -> Result<(), TaheError>;
    /// Verifies every share, then decrypts a plaintext known to be in `[0, max]`.
    /// Errors: a bad share (naming its party), duplicates, unknown parties, fewer than
    /// `t` shares, or a plaintext outside `[0, max]` (never a wrong value).
    fn combine(
        pk: &Self::PublicKey,
        c: &Self::Ciphertext,
        shares: &[Self::DecryptionShare],
        max: u64,
    ) -> Result<u64, TaheError>;
    /// Verifies every share, then tells whether the plaintext is zero (same errors as
    /// `combine`, except that no range applies).
    fn is_zero(
        pk: &Self::PublicKey,
        c: &Self::Ciphertext,
        shares: &[Self::DecryptionShare],
    ) -> Result<bool, TaheError>;

    /// Fixed length of an encoded ciphertext under `pk`.
    fn ciphertext_len(pk: &Self::PublicKey) -> usize;
    fn encode_ciphertext(pk: &Self::PublicKey, c: &Self::Ciphertext) -> Vec<u8>;
    /// Validates (exact length, canonical, in range, in the right group).
    fn decode_ciphertext(pk: &Self::PublicKey, bytes: &[u8])
    -> Result<Self::Ciphertext, TaheError>;

    /// Fixed length of an encoded decryption share under `pk`.
    fn share_len(pk: &Self::PublicKey) -> usize;
    fn encode_share(pk: &Self::PublicKey, s: &Self::DecryptionShare) -> Vec<u8>;
    /// Validates the encoding (not the proof: that is `verify_share`'s job).
    fn decode_share(pk: &Self::PublicKey, bytes: &[u8])
    -> Result<Self::DecryptionShare, TaheError>;

    // Many ciphertexts at once: what the multi-party protocols move in bulk. The
    // defaults loop over the single operations; a scheme overrides them where batching
    // is cheaper (ElGamal: batched point compression, one proof per batch of shares).

    /// Fresh encryptions of every `ms[i]`, encoded back to back.
    fn encrypt_encoded(pk: &Self::PublicKey, ms: &[Self::Scalar], rng: &mut SessionRng) -> Vec<u8> {
        let mut out = Vec::with_capacity(ms.len() * Self::ciphertext_len(pk));
        for m in ms {
            out.extend_from_slice(&Self::encode_ciphertext(pk, &Self::encrypt(pk, m, rng)));
        }
        out
    }
    /// `cts` encoded back to back.
    fn encode_ciphertexts(pk: &Self::PublicKey, cts: &[Self::Ciphertext]) -> Vec<u8> {
        let mut out = Vec::with_capacity(cts.len() * Self::ciphertext_len(pk));
        for c in cts {
            out.extend_from_slice(&Self::encode_ciphertext(pk, c));
        }
        out
    }
    /// Back-to-back ciphertexts, each validated (a length that is not a multiple of
    /// [`Self::ciphertext_len`] is an error).
    fn decode_ciphertexts(
        pk: &Self::PublicKey,
        bytes: &[u8],
    ) -> Result<Vec<Self::Ciphertext>, TaheError> {
        let len = Self::ciphertext_len(pk);
        if !bytes.len().is_multiple_of(len) {
            return Err(invalid(
                "ciphertexts",
                "length is not a multiple of a ciphertext",
            ));
        }
        bytes
            .chunks_exact(len)
            .map(|c| Self::decode_ciphertext(pk, c))
            .collect()
    }
    /// The first step of the zero test (`ShDec0`) on each ciphertext: `ReRand(k c)` with a
    /// fresh random unit `k` per ciphertext, encoded back to back. A zero plaintext stays
    /// zero; any other becomes uniform among the units.
    fn randomize_encoded(
        pk: &Self::PublicKey,
        cts: &[Self::Ciphertext],
        rng: &mut SessionRng,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(cts.len() * Self::ciphertext_len(pk));
        for c in cts {
            let k = Self::random_unit(pk, rng);
            let r = Self::rerandomize(pk, &Self::mul_scalar(pk, c, &k), rng);
            out.extend_from_slice(&Self::encode_ciphertext(pk, &r));
        }
        out
    }

    /// `Enc(Σ_k x^k m_k)` from encryptions of the coefficients `m_0, m_1, …` (lowest
    /// degree first; deterministic, as `add`). The default is Horner's rule.
    fn eval_polynomial(
        pk: &Self::PublicKey,
        coeffs: &[Self::Ciphertext],
        x: &Self::Scalar,
    ) -> Option<Self::Ciphertext> {
        let (last, rest) = coeffs.split_last()?;
        let mut acc = last.clone();
        for c in rest.iter().rev() {
            acc = Self::add(pk, &Self::mul_scalar(pk, &acc, x), c);
        }
        Some(acc)
    }

    /// [`Self::eval_polynomial`] of every `(coefficients, x)` pair, in parallel. The
    /// default evaluates each on its own; Paillier runs eight Horner chains at once on a
    /// CPU with AVX-512 IFMA.
    fn eval_polynomials(
        pk: &Self::PublicKey,
        jobs: &[(&[Self::Ciphertext], &Self::Scalar)],
    ) -> Vec<Option<Self::Ciphertext>> {
        use rayon::prelude::*;
        jobs.par_iter()
            .map(|(coeffs, x)| Self::eval_polynomial(pk, coeffs, x))
            .collect()
    }

    /// Ciphertexts prepared for a joint decryption (a batch of shares, a zero test),
    /// built once from their encodings: ElGamal keeps the encodings and, on a CPU with
    /// AVX-512 IFMA, the points decoded in lanes; Paillier the decoded ciphertexts.
    type Tested: Send + Sync;
    /// Back-to-back ciphertext encodings, each validated as [`Self::decode_ciphertexts`]
    /// validates them (the same errors).
    fn tested_from_encoded(pk: &Self::PublicKey, bytes: &[u8]) -> Result<Self::Tested, TaheError>;
    /// [`Self::tested_from_encoded`] of ciphertexts held as values.
    fn tested_from_ciphertexts(pk: &Self::PublicKey, cts: &[Self::Ciphertext]) -> Self::Tested {
        Self::tested_from_encoded(pk, &Self::encode_ciphertexts(pk, cts))
            .expect("encoded ciphertexts decode")
    }
    /// Number of ciphertexts of `tested`.
    fn tested_len(tested: &Self::Tested) -> usize;

    /// Bytes of one party's batch of decryption shares of `count` ciphertexts.
    fn share_batch_len(pk: &Self::PublicKey, count: usize) -> usize;
    /// This party's decryption shares of every ciphertext of `cts`, with proofs of
    /// correct decryption, encoded as one batch for [`Self::zero_test_absorb`].
    fn share_batch(ks: &Self::KeyShare, cts: &Self::Tested, rng: &mut SessionRng) -> Vec<u8>;
    /// The state of a zero test of many ciphertexts, fed one party's batch at a time.
    type ZeroTest: Send;
    /// A zero test of `count` ciphertexts. It needs a batch from **every** party
    /// (`1..=n`), whatever the threshold: the protocols decrypt with all key holders.
    fn zero_test_new(pk: &Self::PublicKey, count: usize) -> Self::ZeroTest;
    /// Decodes and verifies `party`'s batch of shares of `cts` (the ciphertexts the test
    /// was made for), then keeps it. Errors name `party`: a bad encoding, a proof that
    /// does not verify, a second batch from the same party.
    fn zero_test_absorb(
        pk: &Self::PublicKey,
        test: &mut Self::ZeroTest,
        cts: &Self::Tested,
        party: u32,
        batch: &[u8],
    ) -> Result<(), TaheError>;
    /// Keeps the batch that `ks`'s holder made itself with [`Self::share_batch`]: a scheme
    /// may skip checking the proof it made (ElGamal does). The default checks it.
    fn zero_test_absorb_own(
        ks: &Self::KeyShare,
        test: &mut Self::ZeroTest,
        cts: &Self::Tested,
        batch: &[u8],
    ) -> Result<(), TaheError> {
        let pk = Self::share_public_key(ks);
        Self::zero_test_absorb(pk, test, cts, Self::share_index(ks), batch)
    }
    /// For each ciphertext, whether it decrypts to zero. Fails unless every party's batch
    /// was absorbed.
    fn zero_test_finish(
        pk: &Self::PublicKey,
        test: Self::ZeroTest,
        cts: &Self::Tested,
    ) -> Result<Vec<bool>, TaheError>;

    /// Bytes of one party's shares of `count` ciphertexts in a mesh decryption.
    fn mesh_shares_len(pk: &Self::PublicKey, count: usize) -> usize;
    /// Bytes of the relay's message ([`Self::mesh_relay`]) for `count` ciphertexts.
    fn mesh_relay_len(pk: &Self::PublicKey, count: usize) -> usize;
    /// Bytes of one party's proof in a mesh decryption.
    fn mesh_proof_len(pk: &Self::PublicKey) -> usize;
    /// A decryption by every party of the same ciphertexts, through a relay
    /// (Miyaji-Nishida): every party sends its shares ([`Self::mesh_own_shares`]) to one
    /// party, the relay; once the relay holds every party's shares it sends every other
    /// party what they decrypt with ([`Self::mesh_relay`]); then every party sends every
    /// other a proof ([`Self::mesh_own_proof`]) and decrypts. ElGamal relays the shares'
    /// sums and every party checks them at once (`elgamal::mesh`); Paillier relays every
    /// party's shares and sends each batch's proof apart ([`SplitMesh`]).
    ///
    /// A party that is not the relay runs [`Self::mesh_finish`] only once the relay has
    /// said that its own finish passed: a failure there is then the relay's.
    type Mesh: Send;
    fn mesh_new(pk: &Self::PublicKey, count: usize) -> Self::Mesh;
    /// This party's shares of `cts`, kept in `mesh`, to send to the relay.
    fn mesh_own_shares(
        ks: &Self::KeyShare,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError>;
    /// At the relay: keeps `party`'s shares. Errors name `party`: a bad length or
    /// encoding, a second set of shares.
    fn mesh_absorb_shares(
        pk: &Self::PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
        party: u32,
        shares: &[u8],
    ) -> Result<(), TaheError>;
    /// At the relay, once every party's shares are in (else `MissingShares`): what it
    /// sends every other party, kept (a proof's seed hashes it).
    fn mesh_relay(
        pk: &Self::PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
    ) -> Result<Vec<u8>, TaheError>;
    /// At any other party: keeps what `relay` sent in place of the other parties'
    /// shares. Errors name `relay` (a bad length or encoding, a second message).
    fn mesh_absorb_relay(
        pk: &Self::PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
        relay: u32,
        relayed: &[u8],
    ) -> Result<(), TaheError>;
    /// This party's proof, once the relay's message is made or in (else
    /// `MissingShares`).
    fn mesh_own_proof(
        ks: &Self::KeyShare,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError>;
    /// Checks and keeps `party`'s proof, once the relay's message is made or in. Errors
    /// name `party`.
    fn mesh_absorb_proof(
        pk: &Self::PublicKey,
        mesh: &mut Self::Mesh,
        cts: &Self::Tested,
        party: u32,
        proof: &[u8],
    ) -> Result<(), TaheError>;
    /// For each ciphertext, whether it decrypts to zero, once every party's proof is in.
    /// At the relay, a party whose shares are wrong is named ([`TaheError::BadShare`]);
    /// elsewhere, a wrong relayed message names the relay (ElGamal) or the party whose
    /// relayed shares do not match its proof (Paillier).
    fn mesh_finish(
        pk: &Self::PublicKey,
        mesh: Self::Mesh,
        cts: &Self::Tested,
    ) -> Result<Vec<bool>, TaheError>;

    /// Running sums of received ciphertexts, one per item: what a server adds its
    /// clients' encrypted filter entries into (Bay et al.). ElGamal decodes and adds them
    /// eight at a time on a CPU with AVX-512 IFMA; Paillier keeps [`SerialSums`].
    type Sums: Send;
    /// `count` sums, each the encryption of zero with no randomness.
    fn sums_new(pk: &Self::PublicKey, count: usize) -> Self::Sums;
    /// For every hit `(sum, index)`, adds the `index`-th ciphertext of `encoded`
    /// (back-to-back encodings) to sum `sum`. Only the touched ciphertexts are decoded,
    /// each once, and validated; an error names the first invalid one by its index in
    /// `encoded`. Every hit's `sum` and `index` must be in range (the caller computes
    /// them; they are not peer data).
    fn sums_add(
        pk: &Self::PublicKey,
        sums: &mut Self::Sums,
        encoded: &[u8],
        hits: &[(u32, u32)],
    ) -> Result<(), TaheError>;
    /// The sums (one no hit touched is still the encryption of zero with no randomness).
    fn sums_finish(pk: &Self::PublicKey, sums: Self::Sums) -> Vec<Self::Ciphertext>;
    /// [`Self::randomize_encoded`] of every sum plus `shift` (Miyaji-Nishida's dealer:
    /// `ReRand(r_j (s_j + Enc(−t)))`). ElGamal computes it from sums kept in lanes.
    fn sums_randomize_encoded(
        pk: &Self::PublicKey,
        sums: Self::Sums,
        shift: &Self::Ciphertext,
        rng: &mut SessionRng,
    ) -> Vec<u8> {
        let shifted: Vec<Self::Ciphertext> = Self::sums_finish(pk, sums)
            .iter()
            .map(|s| Self::add(pk, s, shift))
            .collect();
        Self::randomize_encoded(pk, &shifted, rng)
    }

    fn encode_public_key(pk: &Self::PublicKey) -> Vec<u8>;
    /// Validates a public key received from a peer. `max_parties` bounds the
    /// allocation (the key holds one verification key per party).
    fn decode_public_key(bytes: &[u8], max_parties: u32) -> Result<Self::PublicKey, TaheError>;
}

/// [`ThresholdAhe::Sums`] one ciphertext at a time: the touched entries decoded in
/// parallel, then added in the hits' order.
pub struct SerialSums<C>(Vec<Option<C>>);

impl<C: Clone + Send + Sync> SerialSums<C> {
    pub fn new(count: usize) -> Self {
        SerialSums(vec![None; count])
    }

    /// [`ThresholdAhe::sums_add`] with the scheme's `decode` and `add`.
    pub fn add(
        &mut self,
        encoded: &[u8],
        ct_len: usize,
        hits: &[(u32, u32)],
        decode: impl Fn(&[u8]) -> Result<C, TaheError> + Sync,
        add: impl Fn(&C, &C) -> C,
    ) -> Result<(), TaheError> {
        use rayon::prelude::*;
        if !encoded.len().is_multiple_of(ct_len) {
            return Err(invalid(
                "ciphertexts",
                "length is not a multiple of a ciphertext",
            ));
        }
        let (touched, slots) = crate::ahe::touched_entries(hits);
        let decoded: Vec<C> = touched
            .par_iter()
            .map(|&i| {
                decode(&encoded[i as usize * ct_len..][..ct_len]).map_err(|e| match e {
                    TaheError::Invalid { what, reason } => {
                        invalid(what, format!("entry {i}: {reason}"))
                    }
                    other => other,
                })
            })
            .collect::<Result<_, _>>()?;
        for (sum, slot) in slots {
            let c = &decoded[slot as usize];
            let s = &mut self.0[sum as usize];
            *s = Some(match s.take() {
                Some(a) => add(&a, c),
                None => c.clone(),
            });
        }
        Ok(())
    }

    /// The sums, `zero` (the encryption of zero with no randomness) where none was added.
    pub fn finish(self, zero: &C) -> Vec<C> {
        self.0
            .into_iter()
            .map(|s| s.unwrap_or_else(|| zero.clone()))
            .collect()
    }
}

/// [`ThresholdAhe::Mesh`] from whole batches of shares ([`ThresholdAhe::share_batch`]):
/// each batch is split into its shares, sent to the relay, and the rest (its proof),
/// sent to everybody once the relay has passed every party's shares on; the two are
/// joined again and absorbed into a zero test when the proof arrives. Each party's proof
/// is checked on its own, as in a star. The relay only forwards (a combination of
/// Paillier shares is not a sum that could be checked at once), so a relay that changes
/// a party's shares gets that party named (docs/mpsi.md).
pub struct SplitMesh<S: ThresholdAhe> {
    test: S::ZeroTest,
    shares: Vec<Option<Vec<u8>>>,
    own_proof: Option<Vec<u8>>,
    proved: Vec<bool>,
    /// The relay's message is made (at the relay) or in (elsewhere).
    relayed: bool,
}

impl<S: ThresholdAhe> SplitMesh<S> {
    /// The proof's bytes: what a batch of no ciphertext holds.
    pub fn proof_len(pk: &S::PublicKey) -> usize {
        S::share_batch_len(pk, 0)
    }

    pub fn shares_len(pk: &S::PublicKey, count: usize) -> usize {
        S::share_batch_len(pk, count) - Self::proof_len(pk)
    }

    pub fn new(pk: &S::PublicKey, count: usize) -> Self {
        let parties = S::parties(pk) as usize;
        Self {
            test: S::zero_test_new(pk, count),
            shares: vec![None; parties],
            own_proof: None,
            proved: vec![false; parties],
            relayed: false,
        }
    }

    /// Every party's shares, in party order.
    pub fn relay_len(pk: &S::PublicKey, count: usize) -> usize {
        S::parties(pk) as usize * Self::shares_len(pk, count)
    }

    /// The party's index checked against the key (0-based).
    fn slot(pk: &S::PublicKey, party: u32) -> Result<usize, TaheError> {
        let parties = S::parties(pk);
        if party == 0 || party > parties {
            return Err(TaheError::UnknownParty { party, parties });
        }
        Ok(party as usize - 1)
    }

    pub fn own_shares(
        &mut self,
        ks: &S::KeyShare,
        cts: &S::Tested,
        rng: &mut SessionRng,
    ) -> Result<Vec<u8>, TaheError> {
        let pk = S::share_public_key(ks);
        let slot = Self::slot(pk, S::share_index(ks))?;
        if self.shares[slot].is_some() {
            return Err(TaheError::DuplicateShare {
                party: S::share_index(ks),
            });
        }
        let mut batch = S::share_batch(ks, cts, rng);
        S::zero_test_absorb_own(ks, &mut self.test, cts, &batch)?;
        let proof = batch.split_off(Self::shares_len(pk, S::tested_len(cts)));
        self.own_proof = Some(proof);
        self.proved[slot] = true;
        self.shares[slot] = Some(batch.clone());
        Ok(batch)
    }

    pub fn absorb_shares(
        &mut self,
        pk: &S::PublicKey,
        cts: &S::Tested,
        party: u32,
        shares: &[u8],
    ) -> Result<(), TaheError> {
        let slot = Self::slot(pk, party)?;
        if self.shares[slot].is_some() {
            return Err(TaheError::DuplicateShare { party });
        }
        let len = Self::shares_len(pk, S::tested_len(cts));
        if shares.len() != len {
            return Err(TaheError::BadShare {
                party,
                reason: format!("{} bytes of shares ({len} expected)", shares.len()),
            });
        }
        self.shares[slot] = Some(shares.to_vec());
        Ok(())
    }

    fn all_shares_in(&self) -> Result<(), TaheError> {
        match self.shares.iter().position(Option::is_none) {
            Some(p) => Err(TaheError::MissingShares {
                party: p as u32 + 1,
            }),
            None => Ok(()),
        }
    }

    /// At the relay: every party's shares, in party order.
    pub fn relay(&mut self) -> Result<Vec<u8>, TaheError> {
        self.all_shares_in()?;
        self.relayed = true;
        Ok(self.shares.iter().flatten().flatten().copied().collect())
    }

    /// Elsewhere: the other parties' shares, as the relay forwarded them (this party's
    /// own, in them, are ignored).
    pub fn absorb_relay(
        &mut self,
        pk: &S::PublicKey,
        cts: &S::Tested,
        relay: u32,
        relayed: &[u8],
    ) -> Result<(), TaheError> {
        Self::slot(pk, relay)?;
        if self.relayed {
            return Err(TaheError::DuplicateShare { party: relay });
        }
        let each = Self::shares_len(pk, S::tested_len(cts));
        let len = Self::relay_len(pk, S::tested_len(cts));
        if relayed.len() != len {
            return Err(TaheError::BadShare {
                party: relay,
                reason: format!("{} bytes of relayed shares ({len} expected)", relayed.len()),
            });
        }
        for (slot, shares) in self.shares.iter_mut().zip(relayed.chunks_exact(each)) {
            if slot.is_none() {
                *slot = Some(shares.to_vec());
            }
        }
        self.relayed = true;
        Ok(())
    }

    fn relayed(&self) -> Result<(), TaheError> {
        self.all_shares_in()?;
        if !self.relayed {
            return Err(TaheError::Parameters(
                "no proof before the relay's message is made or in".into(),
            ));
        }
        Ok(())
    }

    pub fn own_proof(&mut self) -> Result<Vec<u8>, TaheError> {
        self.relayed()?;
        self.own_proof
            .clone()
            .ok_or(TaheError::Parameters("no own shares were made".into()))
    }

    pub fn absorb_proof(
        &mut self,
        pk: &S::PublicKey,
        cts: &S::Tested,
        party: u32,
        proof: &[u8],
    ) -> Result<(), TaheError> {
        self.relayed()?;
        let slot = Self::slot(pk, party)?;
        if self.proved[slot] {
            return Err(TaheError::DuplicateShare { party });
        }
        let mut batch = self.shares[slot]
            .clone()
            .expect("every party's shares are in");
        batch.extend_from_slice(proof);
        S::zero_test_absorb(pk, &mut self.test, cts, party, &batch)?;
        self.proved[slot] = true;
        Ok(())
    }

    pub fn finish(self, pk: &S::PublicKey, cts: &S::Tested) -> Result<Vec<bool>, TaheError> {
        S::zero_test_finish(pk, self.test, cts)
    }
}

/// The most parties any key supports (the protocols target 3 to 100 organisations).
pub const MAX_PARTIES: u32 = 1024;

/// Checks `1 <= t <= n <= MAX_PARTIES`.
pub(crate) fn check_counts(parties: u32, threshold: u32) -> Result<(), TaheError> {
    if parties == 0 || parties > MAX_PARTIES || threshold == 0 || threshold > parties {
        return Err(TaheError::Parameters(format!(
            "need 1 <= t <= n <= {MAX_PARTIES}, got t = {threshold}, n = {parties}"
        )));
    }
    Ok(())
}

/// Shared share-set checks: indices in range, no duplicates. Returns the shares'
/// indices in the given order.
pub(crate) fn check_share_set(
    indices: impl Iterator<Item = u32>,
    parties: u32,
) -> Result<Vec<u32>, TaheError> {
    let mut seen = vec![false; parties as usize + 1];
    let mut out = Vec::new();
    for i in indices {
        if i == 0 || i > parties {
            return Err(TaheError::UnknownParty { party: i, parties });
        }
        if std::mem::replace(&mut seen[i as usize], true) {
            return Err(TaheError::DuplicateShare { party: i });
        }
        out.push(i);
    }
    Ok(out)
}

/// At least `t` shares.
pub(crate) fn check_enough(got: usize, threshold: u32) -> Result<(), TaheError> {
    if got < threshold as usize {
        return Err(TaheError::TooFewShares {
            got,
            need: threshold as usize,
        });
    }
    Ok(())
}
