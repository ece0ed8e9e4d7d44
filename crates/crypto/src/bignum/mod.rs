//! Arithmetic modulo one large odd modulus on many independent numbers at once: the
//! products and exponentiations of Paillier / Damgard-Jurik ([`crate::ahe::paillier`]).
//!
//! GMP works on one number at a time, and the fat library gmp-mpfr-sys builds runs
//! GMP's generic x86-64 kernels on CPUs newer than its table (Intel after Kaby Lake,
//! AMD after family 0x19). On a CPU with AVX-512 IFMA, [`BatchModulus`] runs eight
//! numbers at once, one per 64-bit lane, in Montgomery form with 52-bit limbs
//! (`ifma`); elsewhere, or with the portable path forced ([`crate::cpu`]), it calls
//! GMP for each number. Both return the same integers, reduced below the modulus.
//!
//! Not constant time in the exponent: exponents here are public (`n^s`). The lane code
//! branches on nothing else; the GMP path is GMP's.

// Target-feature functions can only be called in `unsafe` blocks (after detection).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod ifma;

use rayon::prelude::*;
use rug::Integer;

/// Items a chain should hold at least before a group is split over more lanes.
const MIN_CHAIN: usize = 16;

/// One modulus and the code that works modulo it on this CPU.
#[derive(Clone)]
pub(crate) struct BatchModulus {
    modulus: Integer,
    #[cfg(target_arch = "x86_64")]
    lanes: Option<ifma::Montgomery>,
}

impl BatchModulus {
    /// For an odd `modulus` above 1 (others take the GMP path).
    pub(crate) fn new(modulus: &Integer) -> Self {
        BatchModulus {
            modulus: modulus.clone(),
            #[cfg(target_arch = "x86_64")]
            lanes: if crate::cpu::has_avx512_ifma() {
                ifma::Montgomery::new(modulus)
            } else {
                None
            },
        }
    }

    /// The lane code, when the CPU has it and the portable path is not forced.
    #[cfg(target_arch = "x86_64")]
    fn lanes(&self) -> Option<&ifma::Montgomery> {
        self.lanes
            .as_ref()
            .filter(|_| !crate::cpu::portable_forced())
    }

    /// `base^exponent mod N` for every base, in parallel; `exponent` is public.
    pub(crate) fn pow_each(&self, bases: &[Integer], exponent: &Integer) -> Vec<Integer> {
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            return lanes_pow_each(m, bases, exponent);
        }
        self.gmp_pow_each(bases, exponent)
    }

    /// The product mod `N` of every group (1 for an empty one), in parallel.
    pub(crate) fn product_each(&self, groups: &[Vec<&Integer>]) -> Vec<Integer> {
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            return self.lanes_product_each(m, groups);
        }
        self.gmp_product_each(groups)
    }

    /// `a b mod N`, one product on GMP.
    pub(crate) fn mul(&self, a: &Integer, b: &Integer) -> Integer {
        let mut c = Integer::from(a * b);
        c.modulo_mut(&self.modulus);
        c
    }

    fn gmp_pow_each(&self, bases: &[Integer], exponent: &Integer) -> Vec<Integer> {
        bases
            .par_iter()
            .map(|b| {
                Integer::from(
                    b.pow_mod_ref(exponent, &self.modulus)
                        .expect("positive modulus, non-negative exponent"),
                )
            })
            .collect()
    }

    fn gmp_product_each(&self, groups: &[Vec<&Integer>]) -> Vec<Integer> {
        groups
            .par_iter()
            .map(|items| {
                items
                    .par_iter()
                    .with_min_len(32)
                    .fold(|| Integer::from(1), |acc, x| self.mul(&acc, x))
                    .reduce(|| Integer::from(1), |a, b| self.mul(&a, &b))
            })
            .collect()
    }

    /// Enough chains for every lane of every thread: a group of many items is split,
    /// and its parts' products multiplied at the end.
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    fn lanes_product_each(&self, m: &ifma::Montgomery, groups: &[Vec<&Integer>]) -> Vec<Integer> {
        let want = ifma::LANES * rayon::current_num_threads();
        let parts = want.div_ceil(groups.len().max(1));
        let mut chains: Vec<(usize, &[&Integer])> = groups
            .iter()
            .enumerate()
            .flat_map(|(g, items)| {
                let per = items.len().div_ceil(parts).max(MIN_CHAIN);
                items.chunks(per).map(move |c| (g, c))
            })
            .collect();
        // Similar lengths share a vector, so few lanes idle at a chain's end.
        chains.sort_by_key(|(_, c)| std::cmp::Reverse(c.len()));
        let partials: Vec<(usize, Integer)> = chains
            .par_chunks(ifma::LANES)
            .flat_map_iter(|batch| {
                let slices: Vec<&[&Integer]> = batch.iter().map(|(_, c)| *c).collect();
                // SAFETY: a `Montgomery` exists only when the CPU has AVX-512 F and IFMA.
                let products = unsafe { m.product_each(&slices) };
                batch.iter().map(|(g, _)| *g).zip(products)
            })
            .collect();
        let mut out = vec![Integer::from(1); groups.len()];
        for (g, p) in partials {
            out[g] = self.mul(&out[g], &p);
        }
        out
    }
}

/// Eight bases at a time on the lanes.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn lanes_pow_each(m: &ifma::Montgomery, bases: &[Integer], exponent: &Integer) -> Vec<Integer> {
    bases
        .par_chunks(ifma::LANES)
        // SAFETY: a `Montgomery` exists only when the CPU has AVX-512 F and IFMA.
        .flat_map_iter(|chunk| unsafe { m.pow_each(chunk, exponent) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SessionRng;
    use rug::integer::Order;

    /// Both paths against a plain fold, with groups that get split over lanes, empty
    /// groups, and more groups than lanes. The paths are called directly: forcing the
    /// portable path is process-wide and would race with other tests.
    #[test]
    fn both_paths_agree_with_plain_arithmetic() {
        let mut rng = SessionRng::from_seed([3; 32]);
        let mut buf = vec![0u8; 768];
        rng.fill(&mut buf);
        let mut n = Integer::from_digits(&buf, Order::Msf);
        n.set_bit(0, true);
        let batch = BatchModulus::new(&n);
        let values: Vec<Integer> = (0..300)
            .map(|_| {
                rng.fill(&mut buf);
                Integer::from_digits(&buf, Order::Msf) % &n
            })
            .collect();
        let sizes = [0usize, 1, 200, 5, 0, 17, 33, 9, 2, 1, 30];
        let mut start = 0;
        let groups: Vec<Vec<&Integer>> = sizes
            .iter()
            .map(|&k| {
                let g = values[start..start + k].iter().collect();
                start = (start + k) % 50;
                g
            })
            .collect();
        let want: Vec<Integer> = groups
            .iter()
            .map(|g| g.iter().fold(Integer::from(1), |a, x| batch.mul(&a, x)))
            .collect();
        let e = Integer::from(&n - 2u32);
        let want_pow: Vec<Integer> = values[..20]
            .iter()
            .map(|x| Integer::from(x.pow_mod_ref(&e, &n).expect("positive")))
            .collect();
        assert_eq!(batch.gmp_product_each(&groups), want);
        assert_eq!(batch.gmp_pow_each(&values[..20], &e), want_pow);
        #[cfg(target_arch = "x86_64")]
        match &batch.lanes {
            Some(m) => {
                assert_eq!(batch.lanes_product_each(m, &groups), want);
                assert_eq!(lanes_pow_each(m, &values[..20], &e), want_pow);
            }
            None => assert!(!crate::cpu::has_avx512_ifma()),
        }
    }
}
