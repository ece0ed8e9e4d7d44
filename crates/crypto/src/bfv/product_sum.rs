//! Sums of ciphertext products rescaled once: Paterson-Stockmeyer's outer sum
//! `Σ_j inner_j · x^{(L+1)j}` (Cong et al. 2021, Sec. 4.3).
//!
//! A BFV product (fhe.rs's `&Ciphertext * &Ciphertext`) lifts both operands from the
//! ciphertext modulus `Q` to an extended basis `Q ∪ P` (base conversion and NTTs per
//! part), multiplies there, and scales every part of the result back by `t / Q`
//! (inverse NTT, base conversion, NTT). In a server's evaluation the high powers
//! `x^{(L+1)j}` are the same for every polynomial of every bundle at one bundle index,
//! so [`Lifter::lift`] lifts each once for all of them, and the products of one
//! polynomial are added in the extended basis and scaled down once
//! ([`ProductSum::finish`]). The result encrypts the same sum; its rounding error is
//! one rounding instead of one per product, so its noise is no larger than fhe.rs's
//! sum of products.
//!
//! The extended basis follows fhe.rs's rule (the ciphertext moduli, then enough 62-bit
//! primes for `|Q| + 60` more bits). A product's coefficients are below
//! `n · parts · Q^2` in absolute value (`2|Q| + 16` bits for `n = 8192` and up to four
//! parts); the basis holds `2|Q| + 60` bits, so sums of up to `2^40` products cannot
//! wrap ([`MAX_PRODUCTS`] is far below).

use std::sync::Arc;

use fhe::bfv::{BfvParameters, Ciphertext};
use fhe_math::rns::ScalingFactor;
use fhe_math::rq::scaler::Scaler;
use fhe_math::rq::{Context, Poly, Representation};
use fhe_math::zq::primes::generate_prime;
use num_bigint::BigUint;

use super::{BfvError, math};

/// Most products one [`ProductSum`] takes (far below what the extended basis holds).
pub const MAX_PRODUCTS: usize = 1 << 20;

/// The extended basis of one level and the conversions to and from it.
pub struct Lifter {
    params: Arc<BfvParameters>,
    extended: Arc<Context>,
    up: Scaler,
    down: Scaler,
}

/// A ciphertext lifted to the extended basis, in NTT form.
pub struct Lifted(Vec<Poly>);

impl Lifter {
    /// The lifter of ciphertexts at `level` of `params`.
    pub fn new(params: &Arc<BfvParameters>, level: usize) -> Result<Self, BfvError> {
        let ctx = params.context_at_level(level)?.clone();
        let moduli = ctx.moduli().to_vec();
        let q_bits: u64 = moduli
            .iter()
            .map(|&q| 64 - u64::from(q.leading_zeros()))
            .sum();
        let extra = (q_bits as usize + 60).div_ceil(62);
        let mut basis = moduli.clone();
        let mut bound = 1u64 << 62;
        while basis.len() < moduli.len() + extra {
            bound = generate_prime(62, 2 * params.degree() as u64, bound)
                .ok_or_else(|| BfvError::Parameters("no 62-bit prime left to extend".into()))?;
            if !basis.contains(&bound) {
                basis.push(bound);
            }
        }
        let extended = Context::new_arc(&basis, params.degree()).map_err(math)?;
        let up = Scaler::new(&ctx, &extended, ScalingFactor::one()).map_err(math)?;
        let down = Scaler::new(
            &extended,
            &ctx,
            ScalingFactor::new(&BigUint::from(params.plaintext()), ctx.modulus()),
        )
        .map_err(math)?;
        Ok(Self {
            params: params.clone(),
            extended,
            up,
            down,
        })
    }

    /// `ct`'s parts in the extended basis.
    pub fn lift(&self, ct: &Ciphertext) -> Result<Lifted, BfvError> {
        ct.iter()
            .map(|part| part.scale(&self.up).map_err(math))
            .collect::<Result<_, _>>()
            .map(Lifted)
    }

    /// An empty sum of products.
    pub fn sum(&self) -> ProductSum<'_> {
        ProductSum {
            lifter: self,
            parts: Vec::new(),
            products: 0,
        }
    }
}

/// `Σ a_k · b_k` over lifted ciphertexts, kept in the extended basis.
pub struct ProductSum<'a> {
    lifter: &'a Lifter,
    parts: Vec<Poly>,
    products: usize,
}

impl ProductSum<'_> {
    /// Adds `a · b` (the tensor product of their parts).
    pub fn add_product(&mut self, a: &Lifted, b: &Lifted) -> Result<(), BfvError> {
        if self.products == MAX_PRODUCTS {
            return Err(BfvError::Powers(format!(
                "more than {MAX_PRODUCTS} products in one sum"
            )));
        }
        self.products += 1;
        let len = a.0.len() + b.0.len() - 1;
        while self.parts.len() < len {
            self.parts
                .push(Poly::zero(&self.lifter.extended, Representation::Ntt));
        }
        for (i, ai) in a.0.iter().enumerate() {
            for (j, bj) in b.0.iter().enumerate() {
                self.parts[i + j] += &(ai * bj);
            }
        }
        Ok(())
    }

    /// The sum scaled back to the ciphertext modulus; `None` for an empty sum.
    pub fn finish(self) -> Result<Option<Ciphertext>, BfvError> {
        if self.products == 0 {
            return Ok(None);
        }
        let parts = self
            .parts
            .into_iter()
            .map(|mut part| {
                part.change_representation(Representation::PowerBasis);
                let mut part = part.scale(&self.lifter.down).map_err(math)?;
                part.change_representation(Representation::Ntt);
                Ok(part)
            })
            .collect::<Result<Vec<_>, BfvError>>()?;
        Ok(Some(Ciphertext::new(parts, &self.lifter.params)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{decrypt, encode, noise_bits};
    use fhe_traits::FheEncrypter;

    /// `Σ a_k · b_k` summed in the extended basis decrypts to the slot-wise sum of
    /// products, like fhe.rs's products summed one by one, with no more noise.
    #[test]
    fn a_sum_of_lifted_products_decrypts_to_the_sum_of_products() {
        let (t, par, sk, mut rng) = crate::bfv::testing::small_key(3);
        let lifter = Lifter::new(&par, 0).unwrap();
        let slots: Vec<Vec<u64>> = (0..10)
            .map(|_| (0..4096).map(|_| rng.below(t)).collect())
            .collect();
        let cts: Vec<Ciphertext> = slots
            .iter()
            .map(|v| sk.try_encrypt(&encode(&par, v).unwrap(), &mut rng).unwrap())
            .collect();
        let mut sum = lifter.sum();
        assert!(lifter.sum().finish().unwrap().is_none(), "an empty sum");
        let mut fhe_sum: Option<Ciphertext> = None;
        let mut want = vec![0u64; 4096];
        for k in 0..5 {
            let (a, b) = (&cts[2 * k], &cts[2 * k + 1]);
            sum.add_product(&lifter.lift(a).unwrap(), &lifter.lift(b).unwrap())
                .unwrap();
            let product = a * b;
            fhe_sum = Some(match fhe_sum {
                Some(s) => &s + &product,
                None => product,
            });
            for (w, (x, y)) in want
                .iter_mut()
                .zip(slots[2 * k].iter().zip(&slots[2 * k + 1]))
            {
                *w = (*w + x * y % t) % t;
            }
        }
        let ours = sum.finish().unwrap().unwrap();
        assert_eq!(ours.len(), 3, "three parts, not relinearized");
        assert_eq!(decrypt(&sk, &ours).unwrap(), want);
        let fhe_sum = fhe_sum.unwrap();
        assert_eq!(decrypt(&sk, &fhe_sum).unwrap(), want);
        let noise = |ct: &Ciphertext| noise_bits(&sk, ct).unwrap();
        assert!(
            noise(&ours) <= noise(&fhe_sum),
            "{} > {}",
            noise(&ours),
            noise(&fhe_sum)
        );
    }
}
