//! Deriving the powers of the query from the few the client sends.
//!
//! The client encrypts its item raised to a small set of *source* powers (an extremal
//! postage-stamp basis, Cong et al. 2021, Sec. 4.2); the server multiplies them into
//! every power the evaluation needs. A plan fixes, once per parameter set, which two
//! powers make each needed power so that the multiplicative depth is as low as the
//! sources allow; the deepest power decides the noise the parameters must absorb.

use std::collections::BTreeMap;

use fhe::bfv::{Ciphertext, Multiplicator, RelinearizationKey};
use rayon::prelude::*;

use super::BfvError;

/// How every needed power is made from the sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerPlan {
    sources: Vec<u32>,
    degree: u32,
    low_degree: u32,
    /// Every power the evaluation needs (sources included) and how it is made: `None`
    /// for a source, else the two factors. Its depth in `depths`.
    nodes: BTreeMap<u32, Option<(u32, u32)>>,
    depths: BTreeMap<u32, u32>,
}

impl PowerPlan {
    /// A plan for evaluating polynomials of degree up to `degree` from the encrypted
    /// `sources`. With `low_degree` L > 0 the evaluation is Paterson-Stockmeyer's: the
    /// low powers 1..=L and the high powers (L+1)j; with L = 0, every power 1..=degree.
    pub fn new(sources: &[u32], degree: u32, low_degree: u32) -> Result<Self, BfvError> {
        let bad = |why: String| Err(BfvError::Powers(why));
        if degree == 0 || degree > 1 << 16 {
            return bad(format!("degree {degree} (1 to 65536 allowed)"));
        }
        if low_degree >= degree {
            return bad(format!(
                "Paterson-Stockmeyer low degree {low_degree} is not below the degree {degree}"
            ));
        }
        let mut sources = sources.to_vec();
        sources.sort_unstable();
        sources.dedup();
        if sources.is_empty() || sources[0] != 1 {
            return bad("the source powers must include 1".into());
        }
        let targets: Vec<u32> = if low_degree == 0 {
            (1..=degree).collect()
        } else {
            let step = low_degree + 1;
            (1..=low_degree)
                .chain((1..=degree / step).map(|j| j * step))
                .collect()
        };
        if let Some(s) = sources.iter().find(|s| !targets.contains(s)) {
            return bad(format!(
                "source power {s} is not a power the evaluation uses"
            ));
        }
        let mut nodes = BTreeMap::new();
        let mut depths = BTreeMap::new();
        for &s in &sources {
            nodes.insert(s, None);
            depths.insert(s, 0u32);
        }
        for &k in &targets {
            if depths.contains_key(&k) {
                continue;
            }
            let best = depths
                .range(..k)
                .filter_map(|(&a, &da)| {
                    let b = k - a;
                    (a <= b).then_some(())?;
                    let db = *depths.get(&b)?;
                    Some((da.max(db) + 1, a, b))
                })
                .min();
            let Some((depth, a, b)) = best else {
                return bad(format!(
                    "power {k} is not a sum of two powers available before it"
                ));
            };
            nodes.insert(k, Some((a, b)));
            depths.insert(k, depth);
        }
        Ok(Self {
            sources,
            degree,
            low_degree,
            nodes,
            depths,
        })
    }

    /// The powers the client encrypts, ascending.
    pub fn sources(&self) -> &[u32] {
        &self.sources
    }

    /// Highest polynomial degree the plan evaluates.
    pub fn degree(&self) -> u32 {
        self.degree
    }

    /// Paterson-Stockmeyer's low degree (0: plain evaluation).
    pub fn low_degree(&self) -> u32 {
        self.low_degree
    }

    /// Multiplicative depth of the deepest derived power.
    pub fn power_depth(&self) -> u32 {
        self.depths.values().copied().max().unwrap_or(0)
    }

    /// Multiplicative depth of a whole evaluation: the powers, plus one for the
    /// high-power products of Paterson-Stockmeyer (the plaintext products do not count).
    pub fn evaluation_depth(&self) -> u32 {
        self.power_depth() + u32::from(self.low_degree > 0)
    }

    /// Number of ciphertext products the server makes per batch of sources.
    pub fn products(&self) -> usize {
        self.nodes.values().filter(|n| n.is_some()).count()
    }

    /// True if power `k` is a factor of another derived power.
    fn is_factor(&self, k: u32) -> bool {
        self.nodes
            .values()
            .any(|how| matches!(how, Some((a, b)) if *a == k || *b == k))
    }

    /// Every needed power from the encrypted sources (in the order of
    /// [`Self::sources`]), layer by layer of depth, the products of a layer in
    /// parallel. Index `k` of the result holds the power k if the evaluation needs it.
    ///
    /// In a plain evaluation (low degree 0) a power that is no other power's factor is
    /// left unrelinearized (three parts): it only meets plaintexts, and the evaluation
    /// relinearizes its sum once, so the key-switching noise is not multiplied by the
    /// plaintext coefficients (about 15 bits less noise at n = 4096, measured).
    pub fn compute(
        &self,
        sources: Vec<Ciphertext>,
        rk: &RelinearizationKey,
    ) -> Result<Vec<Option<Ciphertext>>, BfvError> {
        if sources.len() != self.sources.len() {
            return Err(BfvError::Powers(format!(
                "{} source ciphertexts for {} source powers",
                sources.len(),
                self.sources.len()
            )));
        }
        let top = *self.nodes.keys().next_back().expect("plan has power 1") as usize;
        let mut powers: Vec<Option<Ciphertext>> = vec![None; top + 1];
        for (&s, ct) in self.sources.iter().zip(sources) {
            powers[s as usize] = Some(ct);
        }
        let multiplicator = Multiplicator::default(rk)?;
        for layer in 1..=self.power_depth() {
            let made: Vec<(u32, Ciphertext)> = self
                .nodes
                .iter()
                .filter(|(k, _)| self.depths[k] == layer)
                .filter_map(|(&k, how)| how.map(|(a, b)| (k, a, b)))
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|(k, a, b)| {
                    let (x, y) = (
                        powers[a as usize].as_ref().expect("shallower power made"),
                        powers[b as usize].as_ref().expect("shallower power made"),
                    );
                    if self.low_degree == 0 && !self.is_factor(k) {
                        Ok((k, x * y))
                    } else {
                        Ok((k, multiplicator.multiply(x, y)?))
                    }
                })
                .collect::<Result<_, fhe::Error>>()?;
            for (k, ct) in made {
                powers[k as usize] = Some(ct);
            }
        }
        Ok(powers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apsi_style_bases_reach_their_degrees() {
        // 16 sources up to 52 reach every power to 101 at depth 1.
        let plan = PowerPlan::new(
            &[1, 3, 4, 5, 8, 14, 20, 26, 32, 38, 44, 47, 48, 49, 51, 52],
            101,
            0,
        )
        .unwrap();
        assert_eq!(plan.power_depth(), 1);
        assert_eq!(plan.evaluation_depth(), 1);
        // Paterson-Stockmeyer with low degree 44 over degree 1304.
        let plan = PowerPlan::new(&[1, 3, 11, 18, 45, 225], 1304, 44).unwrap();
        assert!(plan.power_depth() <= 3, "{}", plan.power_depth());
        assert_eq!(plan.products(), 44 + 28 - 6);
    }

    #[test]
    fn bad_plans_are_refused() {
        assert!(PowerPlan::new(&[2, 3], 10, 0).is_err());
        assert!(PowerPlan::new(&[1], 0, 0).is_err());
        assert!(PowerPlan::new(&[1, 500], 100, 0).is_err());
        assert!(PowerPlan::new(&[1], 10, 10).is_err());
        // Only powers of 1: depth grows as log2.
        let plan = PowerPlan::new(&[1], 16, 0).unwrap();
        assert_eq!(plan.power_depth(), 4);
    }
}
