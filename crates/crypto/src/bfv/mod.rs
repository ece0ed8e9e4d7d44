//! BFV homomorphic encryption for unbalanced PSI (Cong et al. 2021), on fhe.rs.
//!
//! fhe.rs provides the scheme (batching, relinearization, modulus switching, seeded
//! ciphertexts). This module adds what a protocol needs around it and fhe.rs leaves out:
//!
//! * [`HeParams`]: parameters as data, checked against the homomorphic-encryption
//!   security standard before use (fhe.rs accepts any modulus);
//! * [`decode_ciphertext`]: ciphertexts from a peer validated before use (fhe.rs panics
//!   on a level mismatch in `ct * pt`, and accepts any number of parts);
//! * [`PowerPlan`]: which products derive every power a polynomial evaluation needs from
//!   the powers the client sends (Cong et al. 2021, Sec. 4.2, "extremal postage-stamp
//!   bases"), with the multiplicative depth;
//! * [`evaluate`]: a batch of polynomials evaluated on those powers, by
//!   Paterson-Stockmeyer when the plan has a low degree (Cong et al. 2021, Sec. 4.3).

mod bits;
pub mod coeff;
mod eval;
pub mod level;
pub mod ntt;
pub mod packed;
mod powers;
pub mod product_sum;
pub mod result;
pub mod zt;

use std::sync::Arc;

use fhe_math::rq::{Poly, Representation};

pub use eval::{Coefficients, Polynomial, Powers, evaluate};
pub use fhe::bfv::{
    BfvParameters, Ciphertext, Encoding, Plaintext, PlaintextVec, RelinearizationKey, SecretKey,
};
pub use fhe_traits::{
    DeserializeParametrized, FheDecoder, FheDecrypter, FheEncoder, FheEncrypter, Serialize,
};
pub use packed::{PackedPlaintext, PackedPolynomial};
pub use powers::PowerPlan;
pub use result::ResultCodec;

/// Errors of this module: bad parameters, bad ciphertexts, or fhe.rs refusing an
/// operation.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BfvError {
    #[error("BFV parameters: {0}")]
    Parameters(String),
    #[error("BFV ciphertext: {0}")]
    Ciphertext(String),
    #[error("power plan: {0}")]
    Powers(String),
    #[error("BFV: {0}")]
    Library(String),
}

/// fhe-math's errors, as this module reports fhe.rs's.
pub(crate) fn math(e: fhe_math::Error) -> BfvError {
    BfvError::Library(e.to_string())
}

impl From<fhe::Error> for BfvError {
    fn from(e: fhe::Error) -> Self {
        BfvError::Library(e.to_string())
    }
}

/// Largest total bit length of the ciphertext modulus for 128-bit classical security at
/// each ring degree: the homomorphic-encryption security standard (Albrecht et al.,
/// "Homomorphic Encryption Standard", 2018, Table 1), its column for a ternary secret,
/// the most conservative of its three (fhe.rs draws the secret from a centred binomial
/// distribution of variance 10, whose row allows slightly more).
const MAX_MODULUS_BITS_128: [(usize, usize); 6] = [
    (1024, 27),
    (2048, 54),
    (4096, 109),
    (8192, 218),
    (16384, 438),
    (32768, 881),
];

/// The largest modulus size the standard allows at `degree` for 128-bit security.
pub fn max_modulus_bits(degree: usize) -> Option<usize> {
    MAX_MODULUS_BITS_128
        .iter()
        .find(|(n, _)| *n == degree)
        .map(|(_, bits)| *bits)
}

/// BFV parameters as data: what a preset file names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeParams {
    /// Ring degree n (a power of two): the number of slots of a batched plaintext.
    pub degree: usize,
    /// Plaintext modulus t: a prime with t = 1 mod 2n, so that plaintexts batch.
    pub plain_modulus: u64,
    /// Bit sizes of the ciphertext primes; switching down drops them from the end, so
    /// results returned at the last level live under the first.
    pub moduli_bits: Vec<usize>,
}

impl HeParams {
    /// Total bit size of the ciphertext modulus.
    pub fn modulus_bits(&self) -> usize {
        self.moduli_bits.iter().sum()
    }

    /// Bits of the plaintext modulus.
    pub fn plain_bits(&self) -> u32 {
        64 - self.plain_modulus.leading_zeros()
    }

    /// Checks the parameters: 128-bit security by the standard's table, a batching
    /// plaintext modulus, primes of sizes fhe.rs can generate.
    pub fn check(&self) -> Result<(), BfvError> {
        self.check_ring()?;
        let bad = |why: String| Err(BfvError::Parameters(why));
        let two_n = 2 * self.degree as u64;
        if self.plain_modulus < 3
            || self.plain_modulus % two_n != 1
            || !is_prime(self.plain_modulus)
        {
            return bad(format!(
                "plaintext modulus {} is not a prime equal to 1 mod {two_n} (needed for batching)",
                self.plain_modulus
            ));
        }
        // Switching down drops primes from the end: results end under the first prime,
        // whose rounding noise (about 9 bits at these degrees) must stay below q0 / t.
        if self.plain_bits() as usize + 16 > self.moduli_bits[0] {
            return bad(format!(
                "the first ciphertext prime ({} bits) leaves too little room above the {}-bit \
                 plaintext modulus for results switched down to it (16 bits needed)",
                self.moduli_bits[0],
                self.plain_bits()
            ));
        }
        Ok(())
    }

    /// The ring and ciphertext-modulus checks alone (degree, prime sizes, 128-bit
    /// security by the standard's table): all that coefficient encoding needs, since it
    /// takes any plaintext modulus (see [`coeff`]).
    pub fn check_ring(&self) -> Result<(), BfvError> {
        let bad = |why: String| Err(BfvError::Parameters(why));
        let Some(max_bits) = max_modulus_bits(self.degree) else {
            return bad(format!(
                "ring degree {} is not one of 1024, 2048, ..., 32768",
                self.degree
            ));
        };
        if self.moduli_bits.is_empty() || self.moduli_bits.len() > 16 {
            return bad(format!(
                "{} ciphertext primes (1 to 16 allowed)",
                self.moduli_bits.len()
            ));
        }
        if let Some(bits) = self.moduli_bits.iter().find(|b| !(20..=62).contains(*b)) {
            return bad(format!(
                "a ciphertext prime of {bits} bits (20 to 62 allowed)"
            ));
        }
        if self.modulus_bits() > max_bits {
            return bad(format!(
                "a {}-bit ciphertext modulus at ring degree {} is below 128-bit security \
                 (the homomorphic-encryption standard allows at most {max_bits} bits)",
                self.modulus_bits(),
                self.degree
            ));
        }
        Ok(())
    }

    /// fhe.rs parameters for coefficient encoding, after [`Self::check_ring`]: the
    /// plaintext modulus need not batch (fhe.rs only uses it for its own encoders, which
    /// [`coeff`] does not call), it must only be in `2..2^62`.
    pub fn build_coefficient(&self) -> Result<Arc<BfvParameters>, BfvError> {
        self.check_ring()?;
        if !(2..1 << 62).contains(&self.plain_modulus) {
            return Err(BfvError::Parameters(format!(
                "plaintext modulus {} is not in 2..2^62",
                self.plain_modulus
            )));
        }
        Ok(fhe::bfv::BfvParametersBuilder::new()
            .set_degree(self.degree)
            .set_plaintext_modulus(self.plain_modulus)
            .set_moduli_sizes(&self.moduli_bits)
            .build_arc()?)
    }

    /// fhe.rs parameters, after [`Self::check`].
    pub fn build(&self) -> Result<Arc<BfvParameters>, BfvError> {
        self.check()?;
        Ok(fhe::bfv::BfvParametersBuilder::new()
            .set_degree(self.degree)
            .set_plaintext_modulus(self.plain_modulus)
            .set_moduli_sizes(&self.moduli_bits)
            .build_arc()?)
    }
}

/// Deterministic Miller-Rabin for 64-bit integers.
fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let mul = |a: u64, b: u64| ((a as u128 * b as u128) % n as u128) as u64;
    let pow = |mut b: u64, mut e: u64| {
        let mut r = 1u64;
        while e > 0 {
            if e & 1 == 1 {
                r = mul(r, b);
            }
            b = mul(b, b);
            e >>= 1;
        }
        r
    };
    let (mut d, mut s) = (n - 1, 0);
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    'witness: for a in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        let mut x = pow(a, d);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul(x, x);
            if x == n - 1 {
                continue 'witness;
            }
        }
        return false;
    }
    true
}

/// The level of a ciphertext (0 = fresh, full modulus).
pub fn level(par: &BfvParameters, ct: &Ciphertext) -> usize {
    ct.first()
        .and_then(|c0| par.level_of_context(c0.ctx()).ok())
        .unwrap_or(0)
}

/// A ciphertext received from a peer: decoded and checked to have exactly two parts
/// at `expected_level`, so that no later operation can panic on it.
pub fn decode_ciphertext(
    bytes: &[u8],
    par: &Arc<BfvParameters>,
    expected_level: usize,
) -> Result<Ciphertext, BfvError> {
    let ct = Ciphertext::from_bytes(bytes, par)
        .map_err(|e| BfvError::Ciphertext(format!("does not decode: {e}")))?;
    if ct.len() != 2 {
        return Err(BfvError::Ciphertext(format!(
            "{} parts where 2 were expected",
            ct.len()
        )));
    }
    let found = level(par, &ct);
    if found != expected_level {
        return Err(BfvError::Ciphertext(format!(
            "at level {found} where level {expected_level} was expected"
        )));
    }
    Ok(ct)
}

/// A relinearization key received from a peer, for ciphertexts at `level`: decoded,
/// then tried on a three-part zero ciphertext there, so that a key for another level
/// is refused here rather than in the middle of an evaluation.
pub fn decode_relin_key(
    bytes: &[u8],
    par: &Arc<BfvParameters>,
    level: usize,
) -> Result<RelinearizationKey, BfvError> {
    let rk = RelinearizationKey::from_bytes(bytes, par)
        .map_err(|e| BfvError::Ciphertext(format!("relinearization key does not decode: {e}")))?;
    let ctx = par.context_at_level(level)?;
    let zero = Poly::zero(ctx, Representation::Ntt);
    let mut probe = Ciphertext::new(vec![zero.clone(), zero.clone(), zero], par)?;
    rk.relinearizes(&mut probe).map_err(|e| {
        BfvError::Ciphertext(format!(
            "relinearization key does not apply to ciphertexts at level {level}: {e}"
        ))
    })?;
    Ok(rk)
}

/// A batched plaintext of `values` (at most n, each below t) at level 0.
pub fn encode(par: &Arc<BfvParameters>, values: &[u64]) -> Result<Plaintext, BfvError> {
    encode_at_level(par, values, 0)
}

/// A batched plaintext of `values` at `level`: what encrypts to a ciphertext there.
pub fn encode_at_level(
    par: &Arc<BfvParameters>,
    values: &[u64],
    level: usize,
) -> Result<Plaintext, BfvError> {
    Ok(Plaintext::try_encode(
        values,
        Encoding::simd_at_level(level),
        par,
    )?)
}

/// The slot values of a decrypted ciphertext.
pub fn decrypt(sk: &SecretKey, ct: &Ciphertext) -> Result<Vec<u64>, BfvError> {
    let pt = sk.try_decrypt(ct)?;
    Ok(Vec::<u64>::try_decode(&pt, Encoding::simd())?)
}

/// Noise of a ciphertext in bits (for tests that check a parameter set's deepest path).
///
/// Variable time in the noise: tests and parameter checks only, never on a live key.
#[allow(unsafe_code)]
pub fn noise_bits(sk: &SecretKey, ct: &Ciphertext) -> Result<usize, BfvError> {
    // SAFETY: fhe.rs marks measure_noise unsafe only because it runs in time that
    // depends on the noise; no memory safety is involved.
    Ok(unsafe { sk.measure_noise(ct) }?)
}

/// Largest noise a ciphertext at `level` may carry and still decrypt correctly:
/// log2(q_level / t) - 1 bits.
pub fn noise_budget_bits(par: &BfvParameters, params: &HeParams, level: usize) -> usize {
    let kept = params.moduli_bits.len() - level.min(par.max_level());
    let q_bits: usize = params.moduli_bits[..kept].iter().sum();
    q_bits.saturating_sub(params.plain_bits() as usize + 1)
}

/// What the module's tests share: the n = 4096 parameters of the n4096 presets and a
/// key under them.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The parameters (t = 786433, q = 36 + 36 + 37 bits), a secret key and the rng
    /// after it, from `seed`.
    pub fn small_key(seed: u8) -> (u64, Arc<BfvParameters>, SecretKey, crate::rng::SessionRng) {
        let params = HeParams {
            degree: 4096,
            plain_modulus: 786433,
            moduli_bits: vec![36, 36, 37],
        };
        let par = params.build().unwrap();
        let mut rng = crate::rng::SessionRng::from_seed([seed; 32]);
        let sk = SecretKey::random(&par, &mut rng);
        (params.plain_modulus, par, sk, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_table_refuses_large_moduli() {
        let ok = HeParams {
            degree: 4096,
            plain_modulus: 65537,
            moduli_bits: vec![40, 32, 32],
        };
        ok.check().unwrap();
        let too_big = HeParams {
            moduli_bits: vec![40, 40, 32],
            ..ok.clone()
        };
        assert!(matches!(too_big.check(), Err(BfvError::Parameters(m)) if m.contains("128-bit")));
        let no_batching = HeParams {
            plain_modulus: 40961,
            degree: 8192,
            moduli_bits: vec![56, 56, 56, 50],
        };
        assert!(no_batching.check().is_err());
        let not_prime = HeParams {
            plain_modulus: 8193 * 2 - 1 + 8192 * 2,
            ..ok
        };
        assert!(not_prime.check().is_err());
    }

    #[test]
    fn received_ciphertexts_are_checked() {
        let params = HeParams {
            degree: 4096,
            plain_modulus: 65537,
            moduli_bits: vec![36, 36, 37],
        };
        let par = params.build().unwrap();
        let mut rng = crate::rng::SessionRng::from_seed([1; 32]);
        let sk = SecretKey::random(&par, &mut rng);
        let ct: Ciphertext = sk
            .try_encrypt(&encode(&par, &[1, 2, 3]).unwrap(), &mut rng)
            .unwrap();
        assert!(decode_ciphertext(&ct.to_bytes(), &par, 0).is_ok());
        // At another level than expected.
        let mut low = ct.clone();
        low.switch_down().unwrap();
        let e = decode_ciphertext(&low.to_bytes(), &par, 0).unwrap_err();
        assert!(e.to_string().contains("level 1"), "{e}");
        // Three parts (not relinearized).
        let three = &ct * &ct;
        let e = decode_ciphertext(&three.to_bytes(), &par, 0).unwrap_err();
        assert!(e.to_string().contains("3 parts"), "{e}");
        // Garbage and truncation.
        let bytes = ct.to_bytes();
        assert!(decode_ciphertext(&bytes[..bytes.len() - 3], &par, 0).is_err());
        assert!(decode_ciphertext(&[0xff; 100], &par, 0).is_err());
        assert!(decode_ciphertext(&[], &par, 0).is_err());
    }

    #[test]
    fn relinearization_keys_travel_seeded() {
        // fhe.rs sends one polynomial per key-switching part and the seed of the other
        // (the uniform one): half the bytes of the whole key.
        let params = HeParams {
            degree: 4096,
            plain_modulus: 786_433,
            moduli_bits: vec![36, 36, 37],
        };
        let par = params.build().unwrap();
        let mut rng = crate::rng::SessionRng::from_seed([2; 32]);
        let sk = SecretKey::random(&par, &mut rng);
        let rk = RelinearizationKey::new(&sk, &mut rng).unwrap();
        let bytes = rk.to_bytes().len();
        let poly = 4096 * params.modulus_bits() / 8;
        let parts = params.moduli_bits.len();
        assert!(
            bytes > parts * poly && bytes < parts * poly + 1024,
            "{bytes} bytes for {parts} parts of {poly}"
        );
        let back = decode_relin_key(&rk.to_bytes(), &par, 0).unwrap();
        assert_eq!(back.to_bytes(), rk.to_bytes());
        // A key for level-0 ciphertexts is refused for level 1, and the other way.
        let e = decode_relin_key(&rk.to_bytes(), &par, 1).unwrap_err();
        assert!(e.to_string().contains("level 1"), "{e}");
        let leveled = RelinearizationKey::new_leveled(&sk, 1, 0, &mut rng).unwrap();
        assert!(decode_relin_key(&leveled.to_bytes(), &par, 1).is_ok());
        assert!(decode_relin_key(&leveled.to_bytes(), &par, 0).is_err());
    }

    #[test]
    fn primality() {
        let primes = [2u64, 40961, 65537, 4079617, 786433, 0xffff_ffff_ffff_ffc5];
        for p in primes {
            assert!(is_prime(p), "{p}");
        }
        for c in [1u64, 4, 65535, 40961 * 65537, 561, 0xffff_ffff_ffff_ffff] {
            assert!(!is_prime(c), "{c}");
        }
    }
}
