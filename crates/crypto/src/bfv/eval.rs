//! A batch of polynomials, one per slot, evaluated on the encrypted powers of the query.
//!
//! Plain evaluation (low degree 0) is one plaintext product per coefficient, summed
//! with lazy reduction ([`plaintext_sum`]). Paterson-Stockmeyer (Cong et
//! al. 2021, Sec. 4.3) splits the polynomial into blocks of L + 1 coefficients: each
//! block is a plaintext dot product with the low powers, multiplied by its high power;
//! the products are summed in the extended basis with the high powers lifted once for
//! every polynomial ([`super::product_sum`]), then scaled down and relinearized once, so a
//! whole evaluation costs one rescaling and one key switch however many blocks it has.
//!
//! All of it runs at the evaluation level given to [`Powers::new`]: the derived powers
//! are switched that many primes down first, so every plaintext product, and every
//! plaintext's conversion to NTT form, costs that many primes less. Only the final key
//! switch needs the query's modulus; the sums are raised back to the query's level for
//! it ([`super::level::raise`]).
//!
//! The plaintexts are in the fast NTT order of [`super::ntt`] (their conversion runs on
//! tfhe-ntt's kernels), so the powers are permuted into that order once per query and
//! each plaintext sum is permuted back before fhe.rs operates on it.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use fhe::bfv::{BfvParameters, Ciphertext, RelinearizationKey};
use fhe_math::rq::{Poly, dot_product};
use num_bigint::BigUint;
use rayon::prelude::*;

use super::level::raise;
use super::ntt::ForwardNtt;
use super::product_sum::{Lifted, Lifter};
use super::{BfvError, PowerPlan};

/// The encrypted powers of one query's sources ([`PowerPlan::compute`]), shared by every
/// polynomial evaluated on them: the high powers of Paterson-Stockmeyer are lifted to
/// the extended basis on first use, once for all the polynomials.
pub struct Powers {
    cts: Vec<Option<Ciphertext>>,
    /// `cts` in the fast NTT order of the plaintexts, for the plaintext products.
    fast: Vec<Option<Ciphertext>>,
    ntt: Arc<ForwardNtt>,
    /// The level the powers were derived at (the query's): where the final key switch
    /// runs, with the client's relinearization key for that level.
    query_level: usize,
    level: usize,
    params: Arc<BfvParameters>,
    /// BFV's plaintext scale at `level`, floor(Q_level / t): what a constant
    /// coefficient is multiplied by before it is added.
    delta: BigUint,
    lifter: Lifter,
    lifted: Vec<OnceLock<Lifted>>,
}

impl Powers {
    /// `cts[k]` is power `k`, if computed, all at the query's level; evaluations on
    /// them run at `level` (each power switched down to it here).
    pub fn new(
        mut cts: Vec<Option<Ciphertext>>,
        params: &Arc<BfvParameters>,
        level: usize,
    ) -> Result<Self, BfvError> {
        let mut levels = cts.iter().flatten().map(|ct| super::level(params, ct));
        let query_level = levels.next().unwrap_or(0);
        if levels.any(|l| l != query_level) {
            return Err(BfvError::Powers("powers at different levels".into()));
        }
        if level > params.max_level() || level < query_level {
            return Err(BfvError::Parameters(format!(
                "evaluation level {level} for powers at level {query_level} (at most {})",
                params.max_level()
            )));
        }
        cts.par_iter_mut()
            .flatten()
            .try_for_each(|ct| ct.switch_to_level(level))?;
        let lifted = cts.iter().map(|_| OnceLock::new()).collect();
        let ntt = ForwardNtt::at_level(params, level)?;
        let fast = cts
            .par_iter()
            .map(|ct| {
                ct.as_ref()
                    .map(|ct| {
                        let parts = ct
                            .iter()
                            .map(|part| ntt.to_fast_order(part))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(Ciphertext::new(parts, params)?)
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, BfvError>>()?;
        let delta = params.context_at_level(level)?.modulus() / BigUint::from(params.plaintext());
        Ok(Self {
            cts,
            fast,
            ntt,
            query_level,
            level,
            params: params.clone(),
            delta,
            lifter: Lifter::new(params, level)?,
            lifted,
        })
    }

    fn get(&self, k: usize) -> Result<&Ciphertext, BfvError> {
        Self::find(&self.cts, k)
    }

    /// Power `k` in the plaintexts' fast NTT order.
    fn get_fast(&self, k: usize) -> Result<&Ciphertext, BfvError> {
        Self::find(&self.fast, k)
    }

    fn find(cts: &[Option<Ciphertext>], k: usize) -> Result<&Ciphertext, BfvError> {
        cts.get(k)
            .and_then(Option::as_ref)
            .ok_or_else(|| BfvError::Powers(format!("power {k} was not computed")))
    }

    /// Power `k` in the extended basis (lifted by the first caller; a failure is
    /// returned to every caller that asks).
    fn lifted(&self, k: usize) -> Result<&Lifted, BfvError> {
        let ct = self.get(k)?;
        if let Some(l) = self.lifted[k].get() {
            return Ok(l);
        }
        let l = self.lifter.lift(ct)?;
        Ok(self.lifted[k].get_or_init(|| l))
    }
}

/// Coefficients c_0..c_d of a batch of polynomials (c_i's slot j is the i-th
/// coefficient of slot j's polynomial), handed to an evaluation block by block: held
/// in NTT form ([`Polynomial`]) or converted as they are reached
/// ([`super::PackedPolynomial`]), so that an evaluation holds one block at a time.
pub trait Coefficients: Sync {
    /// d + 1.
    fn len(&self) -> usize;

    /// Coefficients `range` in NTT form under the primes of [`Self::level`], in the
    /// fast order of [`super::ntt`], ready for products with ciphertexts at that level
    /// in that order.
    fn block(&self, range: Range<usize>) -> Result<Cow<'_, [Poly]>, BfvError>;

    /// The ciphertext level the plaintexts are encoded for.
    fn level(&self) -> usize;

    /// True for no coefficients at all (never an evaluable polynomial).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The degree d.
    fn degree(&self) -> usize {
        self.len().saturating_sub(1)
    }
}

/// Coefficients in NTT form under the primes of `level` and in the fast order of
/// [`super::ntt`] ([`super::PackedPlaintext::to_ntt`]), kept for repeated evaluations.
pub struct Polynomial {
    pub level: usize,
    pub coefficients: Vec<Poly>,
}

impl Coefficients for Polynomial {
    fn len(&self) -> usize {
        self.coefficients.len()
    }

    fn level(&self) -> usize {
        self.level
    }

    fn block(&self, range: Range<usize>) -> Result<Cow<'_, [Poly]>, BfvError> {
        let len = self.coefficients.len();
        self.coefficients
            .get(range.clone())
            .map(Cow::Borrowed)
            .ok_or_else(|| BfvError::Powers(format!("coefficients {range:?} of {len}")))
    }
}

/// Evaluates `poly` on `powers` (from [`PowerPlan::compute`]): a two-part ciphertext
/// of the slot-wise values at the query's level.
pub fn evaluate(
    plan: &PowerPlan,
    powers: &Powers,
    poly: &dyn Coefficients,
    rk: &RelinearizationKey,
) -> Result<Ciphertext, BfvError> {
    if poly.len() < 2 || poly.degree() > plan.degree() as usize {
        return Err(BfvError::Powers(format!(
            "a polynomial of degree {} (1 to {} allowed)",
            poly.degree(),
            plan.degree()
        )));
    }
    if poly.level() != powers.level {
        return Err(BfvError::Powers(format!(
            "a polynomial encoded at level {} for powers at level {}",
            poly.level(),
            powers.level
        )));
    }
    let raise = |ct: &Ciphertext| raise(ct, &powers.params, powers.query_level);
    let power = |k: usize| powers.get_fast(k);
    let low = plan.low_degree() as usize;
    if low == 0 {
        return plain(powers, poly, rk);
    }
    // Coefficients constant + 1..=constant + last times powers 1..=last, plus the
    // coefficient `constant`.
    let block = |constant: usize, last: usize| -> Result<Ciphertext, BfvError> {
        let cts = (1..=last).map(power).collect::<Result<Vec<_>, _>>()?;
        let coefficients = poly.block(constant..constant + last + 1)?;
        let pts: Vec<&Poly> = coefficients[1..].iter().collect();
        plaintext_sum(powers, &cts, &pts, Some(&coefficients[0]))
    };
    let step = low + 1;
    let d = poly.degree();
    let mut result: Option<Ciphertext> = None;
    let mut products = powers.lifter.sum();
    for j in 0..=d / step {
        let constant = j * step;
        let last = (d - constant).min(low);
        let term = if j == 0 {
            block(0, last)?
        } else if last == 0 {
            // Only the block's constant: a plaintext times the high power.
            let pt = poly.block(constant..constant + 1)?;
            plaintext_sum(powers, &[power(constant)?], &[&pt[0]], None)?
        } else {
            let inner = powers.lifter.lift(&block(constant, last)?)?;
            products.add_product(&inner, powers.lifted(constant)?)?;
            continue;
        };
        match &mut result {
            Some(sum) => *sum += &term,
            None => result = Some(term),
        }
    }
    let mut result = raise(&result.expect("block 0 exists"))?;
    if let Some(products) = products.finish()? {
        let mut products = raise(&products)?;
        rk.relinearizes(&mut products)?;
        result += &products;
    }
    Ok(result)
}

/// `Σ cts[i] · pts[i]`, plus `constant` as a plaintext added when given: products of
/// ciphertexts at the evaluation level with plaintexts in NTT form there, both in the
/// fast order, summed with lazy reduction (fhe-math's `dot_product`, part by part). A
/// constant coefficient is added as BFV adds a plaintext, scaled by floor(Q / t) into
/// the first part. The sum is returned in fhe-math's order.
fn plaintext_sum(
    powers: &Powers,
    cts: &[&Ciphertext],
    pts: &[&Poly],
    constant: Option<&Poly>,
) -> Result<Ciphertext, BfvError> {
    let parts = cts.first().map_or(0, |ct| ct.len());
    if cts.is_empty() || cts.len() != pts.len() || cts.iter().any(|ct| ct.len() != parts) {
        return Err(BfvError::Powers(format!(
            "{} ciphertexts of unequal parts against {} plaintexts",
            cts.len(),
            pts.len()
        )));
    }
    let mut sum = (0..parts)
        .map(|k| dot_product(cts.iter().map(|ct| &ct[k]), pts.iter().copied()))
        .collect::<Result<Vec<Poly>, _>>()
        .map_err(|e| BfvError::Library(e.to_string()))?;
    if let Some(constant) = constant {
        let mut scaled = constant.clone();
        scaled *= &powers.delta;
        sum[0] += &scaled;
    }
    let sum = sum
        .iter()
        .map(|part| powers.ntt.to_fhe_order(part))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Ciphertext::new(sum, &powers.params)?)
}

/// Plain evaluation: the two-part and three-part powers (see [`PowerPlan::compute`])
/// summed apart, the three-part sum relinearized once.
fn plain(
    powers: &Powers,
    poly: &dyn Coefficients,
    rk: &RelinearizationKey,
) -> Result<Ciphertext, BfvError> {
    let coefficients = poly.block(0..poly.len())?;
    let mut by_parts: [(Vec<&Ciphertext>, Vec<&Poly>); 2] = Default::default();
    for (i, c) in coefficients.iter().enumerate().skip(1) {
        let ct = powers.get_fast(i)?;
        let group = usize::from(ct.len() == 3);
        if ct.len() > 3 {
            return Err(BfvError::Powers(format!(
                "power {i} has {} parts",
                ct.len()
            )));
        }
        by_parts[group].0.push(ct);
        by_parts[group].1.push(c);
    }
    // Each group summed at the evaluation level (the constant coefficient added to
    // the first), raised to the query's level, the three-part sum relinearized there.
    let mut sum: Option<Ciphertext> = None;
    for (group, (cts, pts)) in by_parts.iter().enumerate() {
        if cts.is_empty() {
            continue;
        }
        let constant = sum.is_none().then_some(&coefficients[0]);
        let mut part = raise(
            &plaintext_sum(powers, cts, pts, constant)?,
            &powers.params,
            powers.query_level,
        )?;
        if group == 1 {
            rk.relinearizes(&mut part)?;
        }
        match &mut sum {
            Some(s) => *s += &part,
            None => sum = Some(part),
        }
    }
    Ok(sum.expect("a polynomial of degree >= 1 has a power"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{FheEncrypter, HeParams, PackedPlaintext, SecretKey, decrypt, encode, zt};
    use crate::rng::SessionRng;

    /// Plain and Paterson-Stockmeyer evaluations give the plaintext values at every
    /// level the noise allows; a polynomial encoded for another level is refused.
    #[test]
    fn evaluations_at_a_lower_level_give_the_plaintext_values() {
        let cases = [
            // Plain evaluation, one prime down.
            ((4096, 786433, vec![36, 36, 37]), vec![1, 3, 4], 8, 0, 1),
            // Paterson-Stockmeyer, two primes down.
            (
                (8192, 4079617, vec![56, 56, 56, 50]),
                vec![1, 2, 3, 4, 8],
                11,
                3,
                2,
            ),
        ];
        for ((n, t, moduli_bits), sources, degree, low, lower) in cases {
            let par = HeParams {
                degree: n,
                plain_modulus: t,
                moduli_bits,
            }
            .build()
            .unwrap();
            let mut rng = SessionRng::from_seed([8; 32]);
            let sk = SecretKey::random(&par, &mut rng);
            let rk = RelinearizationKey::new(&sk, &mut rng).unwrap();
            let x: Vec<u64> = (0..n).map(|_| rng.below(t)).collect();
            let plan = PowerPlan::new(&sources, degree, low).unwrap();
            let coefficients: Vec<Vec<u64>> = (0..=degree)
                .map(|_| (0..n).map(|_| rng.below(t)).collect())
                .collect();
            let packed = |level: usize| crate::bfv::PackedPolynomial {
                par: par.clone(),
                level,
                coefficients: coefficients
                    .iter()
                    .map(|c| PackedPlaintext::from_slots(&par, c).unwrap())
                    .collect(),
            };
            for level in [0, lower] {
                let cts = plan
                    .sources()
                    .iter()
                    .map(|&s| {
                        let v: Vec<u64> = x.iter().map(|&v| zt::pow(v, s.into(), t)).collect();
                        sk.try_encrypt(&encode(&par, &v).unwrap(), &mut rng)
                            .unwrap()
                    })
                    .collect();
                let powers = Powers::new(plan.compute(cts, &rk).unwrap(), &par, level).unwrap();
                let ct = evaluate(&plan, &powers, &packed(level), &rk).unwrap();
                assert_eq!(ct.len(), 2);
                assert_eq!(crate::bfv::level(&par, &ct), 0);
                let got = decrypt(&sk, &ct).unwrap();
                for slot in (0..n).step_by(61) {
                    let c: Vec<u64> = coefficients.iter().map(|c| c[slot]).collect();
                    assert_eq!(
                        got[slot],
                        zt::eval(&c, x[slot], t),
                        "level {level}, low {low}"
                    );
                }
                let other = if level == 0 { lower } else { 0 };
                let err = evaluate(&plan, &powers, &packed(other), &rk).unwrap_err();
                assert!(err.to_string().contains("encoded at level"), "{err}");
            }
        }
    }
}
