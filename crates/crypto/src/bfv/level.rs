//! Moving a ciphertext back up to the query's modulus.
//!
//! A server's polynomial evaluation spends most of its time on plaintext products,
//! and each costs one NTT per ciphertext prime to prepare its plaintext. Once the
//! powers of the query are derived, their noise is far below what a smaller modulus
//! can carry, so the evaluation switches them a few primes down and works there
//! ([`super::Powers::new`]). The one step that cannot is relinearization: the client's
//! key switches ciphertexts at the query's level only. [`raise`] brings a ciphertext of
//! `Q_l = q_0 ... q_{k-1}` back to `Q = Q_l · P` (`P` the dropped primes) by
//! multiplying every part by `P`: if `c0 + c1·s + ... = Δ_l·m + e (mod Q_l)` with
//! `Δ_l = Q_l / t`, then `P·(c0 + c1·s + ...) = Δ·m + P·e (mod Q)`, an encryption of
//! the same `m` whose noise is the same fraction of `Δ` as before. In RNS form this is
//! a scalar product per kept prime and zeros under the dropped ones: no NTT, no base
//! conversion.

use std::sync::Arc;

use fhe::bfv::{BfvParameters, Ciphertext};
use fhe_math::rq::traits::TryConvertFrom;
use fhe_math::rq::{Poly, Representation};
use num_bigint::BigUint;

use super::BfvError;

/// `ct` (any level, any number of parts) as a ciphertext at level `to` (at most its
/// own) of the same plaintext, its noise scaled with the modulus.
pub fn raise(
    ct: &Ciphertext,
    params: &Arc<BfvParameters>,
    to: usize,
) -> Result<Ciphertext, BfvError> {
    let from = super::level(params, ct);
    if from == to {
        return Ok(ct.clone());
    }
    if from < to {
        return Err(BfvError::Ciphertext(format!(
            "a ciphertext at level {from} cannot be raised to level {to}"
        )));
    }
    let top = params.context_at_level(to)?;
    let kept = params.context_at_level(from)?.moduli().len();
    let dropped: BigUint = top.moduli()[kept..]
        .iter()
        .map(|&q| BigUint::from(q))
        .product();
    let parts = ct
        .iter()
        .map(|part| {
            let mut part = part.clone();
            part.change_representation(Representation::Ntt);
            // Row-major, one row per prime of the full modulus: the kept primes' rows,
            // then zeros.
            let mut rows = vec![0u64; top.moduli().len() * params.degree()];
            for (row, kept_row) in rows
                .chunks_exact_mut(params.degree())
                .zip(part.coefficients().rows())
            {
                row.iter_mut().zip(kept_row).for_each(|(r, &c)| *r = c);
            }
            let mut raised = Poly::try_convert_from(rows, top, false, Representation::Ntt)
                .map_err(|e| BfvError::Library(e.to_string()))?;
            raised *= &dropped;
            Ok(raised)
        })
        .collect::<Result<Vec<_>, BfvError>>()?;
    Ok(Ciphertext::new(parts, params)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{RelinearizationKey, decrypt, encode, noise_bits};
    use fhe_traits::FheEncrypter;

    /// A ciphertext switched down and raised back decrypts to the same slots, with
    /// about the noise it had (once the noise is well above the switch's rounding, as
    /// a derived power's is), and takes level-0 operations: relinearization and sums
    /// with level-0 ciphertexts.
    #[test]
    fn a_raised_ciphertext_decrypts_and_relinearizes_at_level_0() {
        let (t, par, sk, mut rng) = crate::bfv::testing::small_key(5);
        let rk = RelinearizationKey::new(&sk, &mut rng).unwrap();
        let a: Vec<u64> = (0..4096).map(|_| rng.below(t)).collect();
        let b: Vec<u64> = (0..4096).map(|_| rng.below(t)).collect();
        let ca: Ciphertext = sk
            .try_encrypt(&encode(&par, &a).unwrap(), &mut rng)
            .unwrap();
        let cb: Ciphertext = sk
            .try_encrypt(&encode(&par, &b).unwrap(), &mut rng)
            .unwrap();
        // a * b * b: three parts, depth 2, switched one prime down and raised again.
        let mut ab = &ca * &cb;
        rk.relinearizes(&mut ab).unwrap();
        let product = &ab * &cb;
        let noise = noise_bits(&sk, &product).unwrap();
        assert!(noise > 60, "{noise}: not above the rounding of a switch");
        let mut low = product.clone();
        low.switch_to_level(1).unwrap();
        let mut raised = raise(&low, &par, 0).unwrap();
        assert_eq!(crate::bfv::level(&par, &raised), 0);
        assert_eq!(raised.len(), 3);
        let slots = |x: &[u64], y: &[u64]| -> Vec<u64> {
            x.iter().zip(y).map(|(x, y)| x * y % t).collect()
        };
        let abb = slots(&slots(&a, &b), &b);
        assert_eq!(decrypt(&sk, &raised).unwrap(), abb);
        let raised_noise = noise_bits(&sk, &raised).unwrap();
        assert!(raised_noise <= noise + 1, "{raised_noise} > {noise} + 1");
        rk.relinearizes(&mut raised).unwrap();
        assert_eq!(raised.len(), 2);
        assert_eq!(decrypt(&sk, &raised).unwrap(), abb);
        let plus_a: Vec<u64> = abb.iter().zip(&a).map(|(x, y)| (x + y) % t).collect();
        assert_eq!(decrypt(&sk, &(&raised + &ca)).unwrap(), plus_a);
        // Level 0 stays as it is.
        assert_eq!(decrypt(&sk, &raise(&ca, &par, 0).unwrap()).unwrap(), a);
        assert!(raise(&ca, &par, 1).is_err());
    }
}
