//! Plaintexts kept small: a batched plaintext's coefficients (below the plaintext
//! modulus t) bit-packed at log2(t) bits each, and turned into fhe.rs's NTT form only
//! when a product needs them.
//!
//! fhe.rs keeps every plaintext in NTT form under every ciphertext prime, plus its
//! coefficients as u64: at n = 8192 with four primes, 320 KB for 8,192 values of 17
//! bits. An unbalanced-PSI database of 2^24 items holds over 30,000 such plaintexts per
//! polynomial set, which does not fit in memory in that form; packed, a plaintext
//! takes 17 KB (Cong et al. 2021's server stores its polynomials the same way and
//! converts them per query).

use std::sync::Arc;

use fhe_math::rq::{Poly, traits::TryConvertFrom};

use super::bits;
use super::ntt::ForwardNtt;
use super::{BfvError, BfvParameters, Encoding, FheEncoder, Plaintext};

/// One plaintext's coefficients, bit-packed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedPlaintext {
    words: Box<[u64]>,
}

/// Bits per packed coefficient under `par`: enough for every value below t.
pub fn coefficient_bits(par: &BfvParameters) -> u32 {
    64 - (par.plaintext() - 1).leading_zeros()
}

/// 64-bit words a packed plaintext of `par` takes.
pub fn packed_words(par: &BfvParameters) -> usize {
    bits::words_for(par.degree(), coefficient_bits(par))
}

impl PackedPlaintext {
    /// The batched plaintext of `values` (one per slot, each below t), packed.
    pub fn from_slots(par: &Arc<BfvParameters>, values: &[u64]) -> Result<Self, BfvError> {
        let pt = Plaintext::try_encode(values, Encoding::simd(), par)?;
        // The plaintext's coefficients, lifted under the first prime (all are below t,
        // and t is below every prime, so the first row holds them unchanged).
        let poly = Poly::try_convert_from(&pt, par.context_at_level(0)?, false, None)
            .map_err(|e| BfvError::Library(e.to_string()))?;
        let coefficients = poly.coefficients();
        Ok(Self::pack(par, coefficients.row(0).iter().copied()))
    }

    fn pack(par: &BfvParameters, coefficients: impl Iterator<Item = u64>) -> Self {
        let words = bits::pack(coefficients, coefficient_bits(par), par.degree());
        Self {
            words: words.into_boxed_slice(),
        }
    }

    /// The coefficients.
    pub fn coefficients(&self, par: &BfvParameters) -> Vec<u64> {
        self.unpacked(par).collect()
    }

    /// The n coefficients, unpacked one by one.
    fn unpacked(&self, par: &BfvParameters) -> impl Iterator<Item = u64> + '_ {
        bits::unpack(&self.words, coefficient_bits(par), par.degree())
    }

    /// The coefficients under every prime of `level`, in NTT form and in the fast
    /// order of `bfv::ntt` (tfhe-ntt's SIMD kernels): what a product with a
    /// ciphertext at that level in the same order needs ([`super::Powers`] holds the
    /// query's powers so).
    pub fn to_ntt(&self, par: &Arc<BfvParameters>, level: usize) -> Result<Poly, BfvError> {
        self.to_ntt_with(par, &*ForwardNtt::at_level(par, level)?)
    }

    /// [`Self::to_ntt`] with the level's transform at hand (one look-up per block).
    fn to_ntt_with(&self, par: &BfvParameters, ntt: &ForwardNtt) -> Result<Poly, BfvError> {
        // Every coefficient is below t, which is below every prime.
        ntt.forward(self.unpacked(par))
    }

    /// The packed words, for files.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// A packed plaintext from words read from a file: exactly [`packed_words`] of
    /// them, every coefficient below t.
    pub fn from_words(par: &BfvParameters, words: Vec<u64>) -> Result<Self, BfvError> {
        if words.len() != packed_words(par) {
            return Err(BfvError::Parameters(format!(
                "a packed plaintext of {} words ({} expected)",
                words.len(),
                packed_words(par)
            )));
        }
        let packed = Self {
            words: words.into_boxed_slice(),
        };
        let t = par.plaintext();
        if packed.coefficients(par).iter().any(|&c| c >= t) {
            return Err(BfvError::Parameters(
                "a packed plaintext coefficient is not below the plaintext modulus".into(),
            ));
        }
        Ok(packed)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// A batch of polynomials' coefficients (see [`super::Polynomial`]), packed: converted
/// block by block, for evaluations at `level`, as an evaluation reaches them.
#[derive(Clone)]
pub struct PackedPolynomial {
    pub par: Arc<BfvParameters>,
    pub level: usize,
    pub coefficients: Vec<PackedPlaintext>,
}

impl PackedPolynomial {
    /// Every coefficient in NTT form, kept for repeated evaluations.
    pub fn unpack(&self) -> Result<super::Polynomial, BfvError> {
        Ok(super::Polynomial {
            level: self.level,
            coefficients: self.to_ntt(&self.coefficients)?,
        })
    }

    /// `coefficients` (some of this polynomial's) in NTT form at its level.
    fn to_ntt(&self, coefficients: &[PackedPlaintext]) -> Result<Vec<Poly>, BfvError> {
        let ntt = ForwardNtt::at_level(&self.par, self.level)?;
        coefficients
            .iter()
            .map(|c| c.to_ntt_with(&self.par, &ntt))
            .collect()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.coefficients
            .iter()
            .map(PackedPlaintext::heap_bytes)
            .sum()
    }
}

impl super::Coefficients for PackedPolynomial {
    fn len(&self) -> usize {
        self.coefficients.len()
    }

    fn level(&self) -> usize {
        self.level
    }

    fn block(
        &self,
        range: std::ops::Range<usize>,
    ) -> Result<std::borrow::Cow<'_, [Poly]>, BfvError> {
        let block = self.coefficients.get(range.clone()).ok_or_else(|| {
            BfvError::Powers(format!(
                "coefficients {range:?} of {}",
                self.coefficients.len()
            ))
        })?;
        Ok(std::borrow::Cow::Owned(self.to_ntt(block)?))
    }
}

/// Heap bytes of one plaintext in NTT form at `level` (a row of n words per prime).
pub fn plaintext_bytes(par: &BfvParameters, level: usize) -> usize {
    let primes = par.moduli().len() - level.min(par.max_level());
    par.degree() * 8 * primes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{FheEncrypter, HeParams, SecretKey, decrypt};
    use crate::rng::SessionRng;

    #[test]
    fn packed_plaintexts_multiply_as_batched_ones() {
        for (degree, t, moduli) in [
            (4096, 786_433u64, vec![36, 36, 37]),
            (8192, 4_079_617, vec![56, 56, 56, 50]),
        ] {
            let par = HeParams {
                degree,
                plain_modulus: t,
                moduli_bits: moduli,
            }
            .build()
            .unwrap();
            let values: Vec<u64> = (0..degree as u64).map(|i| (i * 7919 + 3) % t).collect();
            let packed = PackedPlaintext::from_slots(&par, &values).unwrap();
            assert!(packed.heap_bytes() < plaintext_bytes(&par, 0) / 8);
            let back = PackedPlaintext::from_words(&par, packed.words().to_vec()).unwrap();
            assert_eq!(back, packed);
            let mut rng = SessionRng::from_seed([4; 32]);
            let sk = SecretKey::random(&par, &mut rng);
            let twos = vec![2u64; degree];
            let fresh: crate::bfv::Ciphertext = sk
                .try_encrypt(&crate::bfv::encode(&par, &twos).unwrap(), &mut rng)
                .unwrap();
            // At every level: the product, part by part, with the NTT form.
            for level in 0..par.max_level() {
                let mut ct = fresh.clone();
                ct.switch_to_level(level).unwrap();
                // The product in the transform's fast order, moved back to fhe-math's.
                let ntt = crate::bfv::ntt::ForwardNtt::at_level(&par, level).unwrap();
                let p = packed.to_ntt(&par, level).unwrap();
                let parts = ct
                    .iter()
                    .map(|part| {
                        let fast = &ntt.to_fast_order(part).unwrap() * &p;
                        ntt.to_fhe_order(&fast).unwrap()
                    })
                    .collect();
                let product = crate::bfv::Ciphertext::new(parts, &par).unwrap();
                let want: Vec<u64> = values.iter().map(|v| v * 2 % t).collect();
                assert_eq!(decrypt(&sk, &product).unwrap(), want, "level {level}");
            }
        }
    }

    #[test]
    fn packed_words_from_a_file_are_checked() {
        let par = HeParams {
            degree: 4096,
            plain_modulus: 786_433,
            moduli_bits: vec![36, 36, 37],
        }
        .build()
        .unwrap();
        let n = packed_words(&par);
        assert!(PackedPlaintext::from_words(&par, vec![0; n - 1]).is_err());
        assert!(PackedPlaintext::from_words(&par, vec![u64::MAX; n]).is_err());
        assert!(PackedPlaintext::from_words(&par, vec![0; n]).is_ok());
    }
}
