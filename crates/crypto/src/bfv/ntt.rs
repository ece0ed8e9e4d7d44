//! The forward NTT of a server's plaintexts on tfhe-ntt's SIMD kernels.
//!
//! Why: a large unbalanced-PSI database does not fit in memory in NTT form, so the
//! server converts most of its plaintexts during every query (`packed`), and that
//! conversion, one NTT per ciphertext prime, is most of such a query's work.
//! fhe-math's NTT is scalar: about 130 µs per prime at n = 8192 on this project's
//! machines. tfhe-ntt's (its AVX2 kernels chosen at run time, scalar otherwise) takes
//! about 50 µs.
//!
//! The two transforms evaluate a polynomial at the same points (the primitive 2n-th
//! roots of unity) but list the values in different orders ("fast order" here), and
//! everything fhe.rs holds in NTT form (ciphertexts, keys) is in fhe-math's order.
//! Pointwise products and sums do not care about the order as long as both operands
//! share it, so the server's plaintexts stay in fast order and a query's powers are
//! permuted into it once ([`ForwardNtt::to_fast_order`]); the sums of products are
//! permuted back ([`ForwardNtt::to_fhe_order`]) before anything of fhe.rs's touches
//! them. The permutation is fixed per (n, prime) and found once by transforming the
//! polynomial `x`, whose values are the evaluation points themselves. fhe.rs's own
//! operations, its slot encoding and every byte on the wire and in files are unchanged.
//!
//! Should tfhe-ntt refuse a prime, or its transform not match fhe-math's on a check
//! polynomial, the conversion stays on fhe-math's NTT and the fast order is fhe-math's:
//! the result never depends on the faster path being right.

use std::sync::{Arc, Mutex, OnceLock};

use fhe_math::rq::{Context, Poly, Representation, traits::TryConvertFrom};
use tfhe_ntt::prime64::Plan;

use super::{BfvError, BfvParameters, math};

/// One prime's tfhe-ntt plan, and where each of fhe-math's NTT positions is in its output.
struct PrimeNtt {
    plan: Plan,
    from_plan: Box<[u32]>,
}

/// The forward NTT of small polynomials under every prime of one context, and the
/// permutations between its order and fhe-math's.
pub struct ForwardNtt {
    ctx: Arc<Context>,
    degree: usize,
    /// `None`: some prime has no matching tfhe-ntt plan; fhe-math's NTT is used and
    /// the fast order is fhe-math's.
    primes: Option<Vec<PrimeNtt>>,
}

impl ForwardNtt {
    /// The transform for `ctx`, checked against fhe-math's.
    pub fn new(ctx: &Arc<Context>) -> Result<Self, BfvError> {
        let degree = ctx_degree(ctx);
        let primes = ctx
            .moduli()
            .iter()
            .enumerate()
            .map(|(row, &q)| prime_ntt(ctx, row, q, degree))
            .collect::<Result<Option<Vec<_>>, _>>()?;
        Ok(Self {
            ctx: ctx.clone(),
            degree,
            primes,
        })
    }

    /// fhe-math's transform alone (what [`Self::new`] falls back to).
    #[cfg(test)]
    fn fhe_math_only(ctx: &Arc<Context>) -> Self {
        Self {
            ctx: ctx.clone(),
            degree: ctx_degree(ctx),
            primes: None,
        }
    }

    /// The transform for the context of `par` at `level`, built once per process.
    pub fn at_level(par: &BfvParameters, level: usize) -> Result<Arc<Self>, BfvError> {
        static BUILT: OnceLock<Mutex<Vec<Arc<ForwardNtt>>>> = OnceLock::new();
        let ctx = par.context_at_level(level)?;
        let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
        let mut built = built
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = built
            .iter()
            .find(|f| f.ctx.moduli() == ctx.moduli() && f.degree == par.degree())
        {
            return Ok(found.clone());
        }
        let made = Arc::new(Self::new(ctx)?);
        built.push(made.clone());
        Ok(made)
    }

    /// Whether tfhe-ntt's kernels are in use (false: fhe-math's NTT).
    #[cfg(test)]
    fn is_fast(&self) -> bool {
        self.primes.is_some()
    }

    /// The NTT form under every prime, in fast order, of the polynomial of
    /// `coefficients` (exactly n of them, each below every prime).
    ///
    /// Constant time in the values: the kernels do not branch on them.
    pub fn forward(&self, coefficients: impl IntoIterator<Item = u64>) -> Result<Poly, BfvError> {
        let n = self.degree;
        let mut rows = Vec::with_capacity(n * self.ctx.moduli().len());
        rows.extend(coefficients.into_iter().take(n + 1));
        if rows.len() != n {
            return Err(BfvError::Parameters(format!(
                "{}{} coefficients for a transform of size {n}",
                if rows.len() > n { "over " } else { "" },
                rows.len().min(n)
            )));
        }
        let Some(primes) = &self.primes else {
            let mut poly = Poly::try_convert_from(
                rows.as_slice(),
                &self.ctx,
                true,
                Representation::PowerBasis,
            )
            .map_err(math)?;
            poly.change_representation(Representation::Ntt);
            return Ok(poly);
        };
        // The same coefficients under every prime (they are below each).
        for _ in 1..primes.len() {
            rows.extend_from_within(0..n);
        }
        for (row, prime) in rows.chunks_exact_mut(n).zip(primes) {
            prime.plan.fwd(row);
        }
        Poly::try_convert_from(rows, &self.ctx, true, Representation::Ntt).map_err(math)
    }

    /// `poly` (under this context, fhe-math's order) in fast order.
    pub fn to_fast_order(&self, poly: &Poly) -> Result<Poly, BfvError> {
        self.permute(poly, |row, out, from_plan| {
            for (&value, &at) in row.iter().zip(from_plan) {
                out[at as usize] = value;
            }
        })
    }

    /// `poly` (under this context, fast order) in fhe-math's order.
    pub fn to_fhe_order(&self, poly: &Poly) -> Result<Poly, BfvError> {
        self.permute(poly, |row, out, from_plan| {
            for (out, &at) in out.iter_mut().zip(from_plan) {
                *out = row[at as usize];
            }
        })
    }

    fn permute(
        &self,
        poly: &Poly,
        move_row: impl Fn(&[u64], &mut [u64], &[u32]),
    ) -> Result<Poly, BfvError> {
        if poly.ctx().moduli() != self.ctx.moduli() || poly.coefficients().ncols() != self.degree {
            return Err(BfvError::Parameters(format!(
                "a polynomial of degree {} under {} primes for a transform of degree {} under {}",
                poly.coefficients().ncols(),
                poly.ctx().moduli().len(),
                self.degree,
                self.ctx.moduli().len()
            )));
        }
        let mut poly = poly.clone();
        poly.change_representation(Representation::Ntt);
        let Some(primes) = &self.primes else {
            return Ok(poly);
        };
        let n = self.degree;
        let mut rows = vec![0u64; n * primes.len()];
        for ((out, row), prime) in rows
            .chunks_exact_mut(n)
            .zip(poly.coefficients().rows())
            .zip(primes)
        {
            let row = row.as_slice().ok_or_else(|| {
                BfvError::Library("fhe-math polynomial rows are not contiguous".into())
            })?;
            move_row(row, out, &prime.from_plan);
        }
        Poly::try_convert_from(rows, &self.ctx, false, Representation::Ntt).map_err(math)
    }
}

fn ctx_degree(ctx: &Arc<Context>) -> usize {
    // fhe-math keeps the degree crate-private; a zero polynomial shows it.
    Poly::zero(ctx, Representation::PowerBasis)
        .coefficients()
        .ncols()
}

/// The plan for `q` (row `row` of `ctx`) and its permutation into fhe-math's order, or
/// `None` if tfhe-ntt has no plan for `q` or its transform does not match fhe-math's.
fn prime_ntt(
    ctx: &Arc<Context>,
    row: usize,
    q: u64,
    n: usize,
) -> Result<Option<PrimeNtt>, BfvError> {
    let Some(plan) = Plan::try_new(n, q) else {
        return Ok(None);
    };
    let reference = |coefficients: &[u64]| -> Result<Vec<u64>, BfvError> {
        let mut poly = Poly::try_convert_from(coefficients, ctx, true, Representation::PowerBasis)
            .map_err(math)?;
        poly.change_representation(Representation::Ntt);
        Ok(poly.coefficients().row(row).to_vec())
    };
    let planned = |coefficients: &[u64]| {
        let mut values = coefficients.to_vec();
        plan.fwd(&mut values);
        values
    };
    // The transform of x lists the evaluation points, all distinct.
    let mut x = vec![0u64; n];
    x[1] = 1;
    let mut points: Vec<(u64, u32)> = planned(&x).into_iter().zip(0u32..).collect();
    points.sort_unstable();
    let mut taken = vec![false; n];
    let mut from_plan = Vec::with_capacity(n);
    for point in reference(&x)? {
        let Ok(at) = points.binary_search_by_key(&point, |&(value, _)| value) else {
            return Ok(None);
        };
        let index = points[at].1;
        if std::mem::replace(&mut taken[index as usize], true) {
            return Ok(None);
        }
        from_plan.push(index);
    }
    // Both are evaluations at the same points: a check polynomial must agree too.
    let check: Vec<u64> = (0..n as u64).map(|i| (i * i + 7 * i + 3) % q).collect();
    let planned_check = planned(&check);
    let permuted: Vec<u64> = from_plan
        .iter()
        .map(|&at| planned_check[at as usize])
        .collect();
    if permuted != reference(&check)? {
        return Ok(None);
    }
    Ok(Some(PrimeNtt {
        plan,
        from_plan: from_plan.into_boxed_slice(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::HeParams;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    /// On the presets' rings, at every level, the fast transform is in use and, moved
    /// to fhe-math's order, gives fhe-math's NTT of random polynomials with
    /// coefficients below t and of the edges (zero, all t - 1, a single top
    /// coefficient); the two permutations undo each other; a polynomial under another
    /// context is refused.
    #[test]
    fn the_fast_transform_matches_fhe_math() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (degree, plain_modulus, moduli_bits) in [
            (4096usize, 786433u64, vec![36usize, 36, 37]),
            (8192, 4079617, vec![56, 56, 56, 50]),
        ] {
            let par = HeParams {
                degree,
                plain_modulus,
                moduli_bits,
            }
            .build()
            .unwrap();
            let t = plain_modulus;
            for level in 0..=par.max_level() {
                let ntt = ForwardNtt::at_level(&par, level).unwrap();
                assert!(ntt.is_fast(), "n = {degree}, level {level}");
                let ctx = par.context_at_level(level).unwrap();
                let mut top = vec![0; degree];
                top[degree - 1] = 1;
                let mut cases = vec![vec![0; degree], vec![t - 1; degree], top];
                cases.extend((0..4).map(|_| (0..degree).map(|_| rng.next_u64() % t).collect()));
                for coefficients in cases {
                    let mut expected = Poly::try_convert_from(
                        coefficients.as_slice(),
                        ctx,
                        false,
                        Representation::PowerBasis,
                    )
                    .unwrap();
                    expected.change_representation(Representation::Ntt);
                    let fast = ntt.forward(coefficients.iter().copied()).unwrap();
                    assert_eq!(ntt.to_fhe_order(&fast).unwrap(), expected);
                    let back = ntt.to_fast_order(&expected).unwrap();
                    assert_eq!(back.coefficients(), fast.coefficients());
                }
                assert!(ntt.forward(vec![1; degree - 1]).is_err());
                assert!(ntt.forward(vec![1; degree + 1]).is_err());
                let other = par
                    .context_at_level((level + 1) % (par.max_level() + 1))
                    .unwrap();
                let elsewhere = Poly::zero(other, Representation::Ntt);
                assert!(ntt.to_fast_order(&elsewhere).is_err());
            }
        }
    }

    /// Without tfhe-ntt, the transform is fhe-math's and the fast order is fhe-math's.
    #[test]
    fn the_fallback_is_fhe_math_in_its_own_order() {
        let (t, par, ..) = crate::bfv::testing::small_key(5);
        let ctx = par.context_at_level(0).unwrap();
        let ntt = ForwardNtt::fhe_math_only(ctx);
        assert!(!ntt.is_fast());
        let coefficients: Vec<u64> = (0..par.degree() as u64).map(|i| i * i % t).collect();
        let mut expected = Poly::try_convert_from(
            coefficients.as_slice(),
            ctx,
            true,
            Representation::PowerBasis,
        )
        .unwrap();
        expected.change_representation(Representation::Ntt);
        let got = ntt.forward(coefficients).unwrap();
        assert_eq!(got, expected);
        assert_eq!(
            ntt.to_fast_order(&got).unwrap().coefficients(),
            expected.coefficients()
        );
        assert_eq!(
            ntt.to_fhe_order(&got).unwrap().coefficients(),
            expected.coefficients()
        );
    }
}
