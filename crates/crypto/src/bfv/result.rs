//! Results sent small: a result switched down to the last prime q carries in each
//! coefficient far more low-order bits than decryption reads, and those bits are
//! dropped before it is sent.
//!
//! Decryption reads `round(t · (c0 + c1·s) / q) mod t`, which is right while the
//! phase's noise v stays below q / (2t). Rounding c0 and c1 to multiples of `2^k0` and
//! `2^k1` adds `d0 + d1·s`, with every coefficient of `d0` and `d1` in
//! `[-2^(k-1), 2^(k-1)]`. With `B = floor(log2(q / 2t))`:
//!
//! * the result's own noise is below `2^(B-3)`: the noise [`ResultCodec::noise_allowance_bits`]
//!   names, which every unbalanced-PSI preset's deepest evaluation path is tested to
//!   stay under (`presets_decrypt_on_their_deepest_path`);
//! * `k0 = B - 1`, so `|d0| <= 2^(B-2)`;
//! * `d1·s`: a coefficient is a sum of n terms `d1_j · s_(i-j)`, independent given the
//!   secret, each in a range of width `2^k1 · |s_(i-j)|`. By Hoeffding's inequality it
//!   exceeds `2^k1 · ||s|| · sqrt(ln(2/δ) / 2)` with probability at most δ; with
//!   δ = 2^-64 per coefficient and `||s||^2 <= 15n` (fhe.rs draws the secret from a
//!   centred binomial of variance 10; by Bernstein's inequality the norm exceeds that
//!   with probability below 2^-85 at n >= 4096), `k1` is the largest value keeping
//!   this below `2^(B - 1.5)`.
//!
//! The three add up to at most `(1/8 + 1/4 + 2^-1.5) · 2^B < 0.73 · 2^B`. Microsoft
//! APSI does the same to its results before compressing them (keeping
//! log2 t + log2 n - 1 bits of both parts); bounding the parts apart keeps more
//! of c1 and less of c0. At n = 8192 and a 60-bit prime a result takes 60 bits a
//! coefficient instead of 120.
//!
//! What the client learns does not grow: the dropped bits are a function of the sent
//! result alone.

use std::sync::Arc;

use fhe::bfv::{BfvParameters, Ciphertext};
use fhe_math::rq::traits::TryConvertFrom;
use fhe_math::rq::{Context, Poly, Representation};

use super::{BfvError, bits};

/// Failure probability of one coefficient's bound on `d1·s`: 2^-64.
const LOG2_INV_DELTA: f64 = 64.0;
/// Bound on `||s||^2 / n` for fhe.rs's secrets (variance 10).
const SECRET_NORM_SQ_PER_COEFFICIENT: f64 = 15.0;

/// How the results at the last level of one parameter set are shortened and read.
#[derive(Clone, Debug)]
pub struct ResultCodec {
    par: Arc<BfvParameters>,
    ctx: Arc<Context>,
    q: u64,
    /// log2 of the largest noise a correct decryption allows, floored.
    budget: u32,
    /// Low-order bits dropped from c0 and from c1.
    dropped: [u32; 2],
    /// Values a kept part takes (ceil(q / 2^dropped)) and the bits that hold them.
    values: [u64; 2],
    kept: [u32; 2],
}

impl ResultCodec {
    /// The codec of results switched down to the last level of `par` (one prime).
    pub fn new(par: &Arc<BfvParameters>) -> Result<Self, BfvError> {
        let ctx = par.context_at_level(par.max_level())?.clone();
        let [q] = ctx.moduli() else {
            return Err(BfvError::Parameters(format!(
                "results at a last level of {} primes (one is needed)",
                ctx.moduli().len()
            )));
        };
        let q = *q;
        let t = par.plaintext();
        // The largest B with 2^B · 2t <= q.
        let budget = (q / (2 * t)).checked_ilog2().unwrap_or(0);
        if budget < 8 {
            return Err(BfvError::Parameters(format!(
                "the last prime ({q}) leaves {budget} bits of noise room over the plaintext \
                 modulus {t}"
            )));
        }
        let n = par.degree() as f64;
        let hoeffding = ((LOG2_INV_DELTA + 1.0) * std::f64::consts::LN_2 / 2.0).sqrt();
        let spread = ((SECRET_NORM_SQ_PER_COEFFICIENT * n).sqrt() * hoeffding).log2();
        let k1 = (f64::from(budget) - 1.5 - spread).floor().max(0.0) as u32;
        let k0 = budget - 1;
        Ok(Self {
            par: par.clone(),
            ctx,
            q,
            budget,
            dropped: [0, 0],
            values: [0, 0],
            kept: [0, 0],
        }
        .dropping([k0, k1]))
    }

    /// This codec dropping `dropped` bits from c0 and c1: the values each kept part
    /// takes and the bits that hold them follow.
    fn dropping(mut self, dropped: [u32; 2]) -> Self {
        self.dropped = dropped;
        self.values = dropped.map(|k| self.q.div_ceil(1 << k));
        self.kept = self.values.map(|v| 64 - (v - 1).leading_zeros());
        self
    }

    /// Noise (in bits, as `bfv::noise_bits` counts it) a result may carry and still
    /// decrypt once shortened: `B - 3`.
    pub fn noise_allowance_bits(&self) -> u32 {
        self.budget - 3
    }

    /// Low-order bits dropped from each coefficient of c0 and of c1.
    pub fn dropped_bits(&self) -> [u32; 2] {
        self.dropped
    }

    /// Bytes of one encoded result.
    pub fn len(&self) -> usize {
        let n = self.par.degree();
        self.kept.iter().map(|&b| bits::bytes_for(n, b)).sum()
    }

    /// Never: a result has coefficients.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// `ct` (two parts, at the last level) with each coefficient rounded to its kept
    /// bits: c0's packed, then c1's.
    pub fn encode(&self, ct: &Ciphertext) -> Result<Vec<u8>, BfvError> {
        if ct.len() != 2 || super::level(&self.par, ct) != self.par.max_level() {
            return Err(BfvError::Ciphertext(format!(
                "a result of {} parts at level {} (2 parts at level {} expected)",
                ct.len(),
                super::level(&self.par, ct),
                self.par.max_level()
            )));
        }
        let mut out = Vec::with_capacity(self.len());
        for (part, k) in ct.iter().zip(0..2) {
            let mut part = part.clone();
            part.change_representation(Representation::PowerBasis);
            let coefficients = part.coefficients();
            let (drop, values) = (self.dropped[k], self.values[k]);
            // round(c / 2^drop), where c within 2^(drop-1) below q rounds to 0 (= q).
            let row = coefficients.row(0);
            let rounded = row.iter().map(|&c| {
                let r = if drop == 0 {
                    c
                } else {
                    (c + (1 << (drop - 1))) >> drop
                };
                if r == values { 0 } else { r }
            });
            let words = bits::pack(rounded, self.kept[k], self.par.degree());
            out.extend(bits::to_bytes(&words, self.par.degree(), self.kept[k]));
        }
        Ok(out)
    }

    /// A result from the bytes [`Self::encode`] wrote: exactly [`Self::len`] bytes,
    /// every value in range.
    pub fn decode(&self, bytes: &[u8]) -> Result<Ciphertext, BfvError> {
        let n = self.par.degree();
        let bad = |why: &str| BfvError::Ciphertext(format!("result: {why}"));
        if bytes.len() != self.len() {
            return Err(bad(&format!(
                "{} bytes where {} were expected",
                bytes.len(),
                self.len()
            )));
        }
        let split = bits::bytes_for(n, self.kept[0]);
        let mut parts = Vec::with_capacity(2);
        for (k, bytes) in [&bytes[..split], &bytes[split..]].into_iter().enumerate() {
            let words = bits::from_bytes(bytes, n, self.kept[k])
                .ok_or_else(|| bad("stray bits after the last coefficient"))?;
            let coefficients = bits::unpack(&words, self.kept[k], n)
                .map(|r| (r < self.values[k]).then_some(r << self.dropped[k]))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| bad("a coefficient out of range"))?;
            debug_assert!(coefficients.iter().all(|&c| c < self.q));
            let mut poly = Poly::try_convert_from(
                coefficients.as_slice(),
                &self.ctx,
                false,
                Representation::PowerBasis,
            )
            .map_err(super::math)?;
            poly.change_representation(Representation::Ntt);
            parts.push(poly);
        }
        Ok(Ciphertext::new(parts, &self.par)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{FheEncrypter, HeParams, SecretKey, decrypt, encode, noise_bits};
    use crate::rng::SessionRng;

    fn params(degree: usize, t: u64, moduli: &[usize]) -> Arc<BfvParameters> {
        HeParams {
            degree,
            plain_modulus: t,
            moduli_bits: moduli.to_vec(),
        }
        .build()
        .unwrap()
    }

    /// `ct` with `noise` (each coefficient ±noise, signs from `rng`) added to its
    /// phase: a result at the noise the codec allows, built directly.
    fn with_noise(
        par: &Arc<BfvParameters>,
        ct: &Ciphertext,
        noise: u64,
        rng: &mut SessionRng,
    ) -> Ciphertext {
        let ctx = par.context_at_level(par.max_level()).unwrap();
        let q = ctx.moduli()[0];
        let e: Vec<u64> = (0..par.degree())
            .map(|_| if rng.below(2) == 0 { noise } else { q - noise })
            .collect();
        let mut e =
            Poly::try_convert_from(e.as_slice(), ctx, false, Representation::PowerBasis).unwrap();
        e.change_representation(Representation::Ntt);
        let mut parts: Vec<Poly> = ct.iter().cloned().collect();
        parts[0] += &e;
        Ciphertext::new(parts, par).unwrap()
    }

    /// A result at the largest noise the codec allows decrypts after the round trip,
    /// for the ring sizes of the presets; rounding c1 far more (eight more bits)
    /// breaks it, so the test sees the rounding.
    #[test]
    fn results_at_the_noise_bound_decrypt_after_shortening() {
        for (degree, t, moduli) in [
            (4096, 786_433u64, vec![36, 36, 37]),
            (8192, 4_079_617, vec![60, 60, 60, 38]),
        ] {
            let par = params(degree, t, &moduli);
            let codec = ResultCodec::new(&par).unwrap();
            let mut rng = SessionRng::from_seed([9; 32]);
            let sk = SecretKey::random(&par, &mut rng);
            let values: Vec<u64> = (0..degree).map(|_| rng.below(t)).collect();
            let fresh: Ciphertext = sk
                .try_encrypt(&encode(&par, &values).unwrap(), &mut rng)
                .unwrap();
            let mut low = fresh.clone();
            low.switch_to_level(par.max_level()).unwrap();
            let allowance = codec.noise_allowance_bits();
            // Noise of exactly 2^allowance - 1 on top of the switch's own rounding.
            let noisy = with_noise(&par, &low, (1 << allowance) - 1, &mut rng);
            assert!(noise_bits(&sk, &noisy).unwrap() <= allowance as usize + 1);
            for _ in 0..8 {
                let bytes = codec.encode(&noisy).unwrap();
                assert_eq!(bytes.len(), codec.len());
                let back = codec.decode(&bytes).unwrap();
                assert_eq!(decrypt(&sk, &back).unwrap(), values, "n = {degree}");
            }
            let sum: u32 = codec.kept.iter().sum();
            let full = 2 * (64 - codec.q.leading_zeros());
            assert!(sum < full, "n = {degree}: {sum} of {full} bits kept");
            // Eight more bits off c1 overflow the budget.
            let [k0, k1] = codec.dropped_bits();
            let coarse = codec.clone().dropping([k0, k1 + 8]);
            let back = coarse.decode(&coarse.encode(&noisy).unwrap()).unwrap();
            assert_ne!(decrypt(&sk, &back).unwrap(), values, "n = {degree}");
        }
    }

    #[test]
    fn what_the_presets_keep() {
        let codec = ResultCodec::new(&params(8192, 4_079_617, &[60, 60, 60, 38])).unwrap();
        assert_eq!(codec.dropped_bits(), [36, 24]);
        assert_eq!(codec.kept, [24, 36]);
        assert_eq!(codec.len(), 8192 * 60 / 8);
        let codec = ResultCodec::new(&params(4096, 786_433, &[36, 36, 37])).unwrap();
        assert_eq!(codec.dropped_bits(), [14, 3]);
        assert_eq!(codec.kept, [22, 33]);
    }

    #[test]
    fn malformed_results_are_refused() {
        let par = params(4096, 786_433, &[36, 36, 37]);
        let codec = ResultCodec::new(&par).unwrap();
        let mut rng = SessionRng::from_seed([10; 32]);
        let sk = SecretKey::random(&par, &mut rng);
        let mut ct: Ciphertext = sk
            .try_encrypt(&encode(&par, &[1, 2, 3]).unwrap(), &mut rng)
            .unwrap();
        // Not at the last level.
        assert!(codec.encode(&ct).is_err());
        ct.switch_to_level(par.max_level()).unwrap();
        let bytes = codec.encode(&ct).unwrap();
        assert!(codec.decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(codec.decode(&[bytes.clone(), vec![0]].concat()).is_err());
        // A kept value of all ones is past q / 2^k.
        let e = codec.decode(&vec![0xff; bytes.len()]).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert_eq!(
            decrypt(&sk, &codec.decode(&bytes).unwrap()).unwrap()[..3],
            [1, 2, 3]
        );
    }
}
