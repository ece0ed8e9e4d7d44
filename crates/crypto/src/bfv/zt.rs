//! Polynomials over Z_t, the field of the plaintext slots (t a prime below 2^26): the
//! polynomial whose roots are given values, and the Newton interpolation polynomial
//! through given points. The unbalanced PSI database makes one of each per bin and slot
//! (Cong et al. 2021, Sec. 4.1). Coefficients lowest degree first.
//!
//! The database build spends most of its time here, so the two quadratic loops are
//! compiled twice: for the portable target and with AVX2, chosen at run time
//! ([`crate::cpu::zt_avx2`]).

/// The plaintext moduli the arithmetic below is exact for: products of two residues stay
/// below 2^52, so an `f64` holds them exactly (presets are checked against this).
pub const MAX_MODULUS: u64 = 1 << 26;

/// Lanes of the batch inversion: independent product chains, so the multiplications of
/// one do not wait for the previous one's result.
const LANES: usize = 8;

/// Arithmetic mod t < 2^26 on residues held as `f64`. The database build spends most of
/// its time here (Newton interpolation is quadratic in a bin's 1,304 items, for every
/// slot and bin), and in this form the loops below run in SIMD lanes: exact products
/// below 2^52, a quotient from one multiplication by 1/t (off by at most one), and the
/// remainder fixed up by selects, where an integer Barrett reduction needs a 64 x 64-bit
/// high product no SIMD unit of the portable target has.
#[derive(Clone, Copy)]
struct Zt {
    t: f64,
    inv: f64,
}

impl Zt {
    fn new(t: u64) -> Self {
        assert!(
            (2..MAX_MODULUS).contains(&t),
            "plaintext modulus {t} out of the polynomial arithmetic's range"
        );
        Self {
            t: t as f64,
            inv: 1.0 / t as f64,
        }
    }

    #[inline(always)]
    fn mul(self, a: f64, b: f64) -> f64 {
        let p = a * b;
        // p < 2^52 and q·t < p + t < 2^53: both exact, so r is exact, in [-t, 2t).
        let q = (p * self.inv).floor();
        let r = p - q * self.t;
        let r = if r < 0.0 { r + self.t } else { r };
        if r >= self.t { r - self.t } else { r }
    }

    #[inline(always)]
    fn add(self, a: f64, b: f64) -> f64 {
        let r = a + b;
        if r >= self.t { r - self.t } else { r }
    }

    #[inline(always)]
    fn sub(self, a: f64, b: f64) -> f64 {
        let r = a - b;
        if r < 0.0 { r + self.t } else { r }
    }

    fn of(self, v: u64) -> f64 {
        (v % self.t as u64) as f64
    }

    #[inline(always)]
    fn pow(self, mut b: f64, mut e: u64) -> f64 {
        let mut r = 1.0;
        while e > 0 {
            if e & 1 == 1 {
                r = self.mul(r, b);
            }
            b = self.mul(b, b);
            e >>= 1;
        }
        r
    }

    /// `out[i] = values[i]^-1` for non-zero values: Montgomery's trick on [`LANES`]
    /// interleaved chains (value `i` in chain `i % LANES`), whose products are then
    /// inverted together with one exponentiation.
    #[inline(always)]
    fn batch_invert(self, values: &[f64], out: &mut [f64]) {
        let values = &values[..out.len()];
        let mut acc = [1.0f64; LANES];
        for (o, v) in out.chunks_exact_mut(LANES).zip(values.chunks_exact(LANES)) {
            for k in 0..LANES {
                o[k] = acc[k];
                acc[k] = self.mul(acc[k], v[k]);
            }
        }
        let tail = values.len() - values.len() % LANES;
        for (k, (o, &v)) in out[tail..].iter_mut().zip(&values[tail..]).enumerate() {
            *o = acc[k];
            acc[k] = self.mul(acc[k], v);
        }
        // The chains' products inverted together.
        let mut prefix = [1.0f64; LANES];
        let mut all = 1.0;
        for k in 0..LANES {
            prefix[k] = all;
            all = self.mul(all, acc[k]);
        }
        let mut inv = self.pow(all, self.t as u64 - 2);
        let mut chain_inv = [0.0f64; LANES];
        for k in (0..LANES).rev() {
            chain_inv[k] = self.mul(inv, prefix[k]);
            inv = self.mul(inv, acc[k]);
        }
        // Back along each chain: out[i] = (product before i) · (product through i)^-1.
        for (k, (o, &v)) in out[tail..]
            .iter_mut()
            .zip(&values[tail..])
            .enumerate()
            .rev()
        {
            *o = self.mul(*o, chain_inv[k]);
            chain_inv[k] = self.mul(chain_inv[k], v);
        }
        for (o, v) in out[..tail]
            .chunks_exact_mut(LANES)
            .zip(values[..tail].chunks_exact(LANES))
            .rev()
        {
            for k in 0..LANES {
                o[k] = self.mul(o[k], chain_inv[k]);
                chain_inv[k] = self.mul(chain_inv[k], v[k]);
            }
        }
    }

    /// `next = c · (x - root)` (one coefficient longer than `c`), lowest degree first.
    #[inline(always)]
    fn mul_linear(self, c: &[f64], root: f64, next: &mut Vec<f64>) {
        let neg = self.sub(0.0, root);
        next.clear();
        next.push(self.mul(c[0], neg));
        next.extend(
            c[1..]
                .iter()
                .zip(&c[..c.len() - 1])
                .map(|(&ci, &below)| self.add(below, self.mul(ci, neg))),
        );
        next.push(c[c.len() - 1]);
    }
}

fn to_u64(c: &[f64]) -> Vec<u64> {
    c.iter().map(|&v| v as u64).collect()
}

/// `b^e mod t`.
pub fn pow(b: u64, e: u64, t: u64) -> u64 {
    let z = Zt::new(t);
    z.pow(z.of(b), e) as u64
}

/// The coefficients of `prod (x - root)`.
pub fn from_roots(roots: &[u64], t: u64) -> Vec<u64> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::zt_avx2() {
        // SAFETY: the CPU has AVX2 (`zt_avx2` checked it).
        #[allow(unsafe_code)]
        return unsafe { avx2::from_roots(roots, t) };
    }
    from_roots_portable(roots, t)
}

#[inline(always)]
fn from_roots_portable(roots: &[u64], t: u64) -> Vec<u64> {
    let z = Zt::new(t);
    let mut c = Vec::with_capacity(roots.len() + 1);
    let mut next = Vec::with_capacity(roots.len() + 1);
    c.push(1.0);
    for &r in roots {
        z.mul_linear(&c, z.of(r), &mut next);
        std::mem::swap(&mut c, &mut next);
    }
    to_u64(&c)
}

/// The polynomial of degree < n through the n points `(xs[i], ys[i])`; the xs must be
/// distinct mod t (the database keeps them so).
pub fn interpolate(xs: &[u64], ys: &[u64], t: u64) -> Vec<u64> {
    interpolate_many(xs, &[ys.to_vec()], t)
        .pop()
        .expect("one polynomial")
}

/// [`interpolate`] for several value vectors over the same xs: the divided
/// differences' denominators depend on the xs alone, so they are inverted once for all.
pub fn interpolate_many(xs: &[u64], ys: &[Vec<u64>], t: u64) -> Vec<Vec<u64>> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::zt_avx2() {
        // SAFETY: the CPU has AVX2 (`zt_avx2` checked it).
        #[allow(unsafe_code)]
        return unsafe { avx2::interpolate_many(xs, ys, t) };
    }
    interpolate_many_portable(xs, ys, t)
}

#[inline(always)]
fn interpolate_many_portable(xs: &[u64], ys: &[Vec<u64>], t: u64) -> Vec<Vec<u64>> {
    let z = Zt::new(t);
    let n = xs.len();
    if n == 0 {
        return vec![Vec::new(); ys.len()];
    }
    let xs: Vec<f64> = xs.iter().map(|&x| z.of(x)).collect();
    // Divided differences, level by level: d[i] <- (d[i] - d[i-1]) / (x[i] - x[i-level])
    // for i >= level, into a second buffer so that the loop has no carried dependency.
    let mut ds: Vec<Vec<f64>> = ys
        .iter()
        .map(|ys| ys.iter().map(|&y| z.of(y)).collect())
        .collect();
    let mut next = vec![0.0f64; n];
    let mut inverses = vec![0.0f64; n];
    let mut dens = vec![0.0f64; n];
    for level in 1..n {
        let m = n - level;
        for (den, (&hi, &lo)) in dens[..m].iter_mut().zip(xs[level..].iter().zip(&xs[..m])) {
            *den = z.sub(hi, lo);
        }
        z.batch_invert(&dens[..m], &mut inverses[..m]);
        for d in &mut ds {
            next[..level].copy_from_slice(&d[..level]);
            for (out, ((&hi, &lo), &inv)) in next[level..].iter_mut().zip(
                d[level..]
                    .iter()
                    .zip(&d[level - 1..n - 1])
                    .zip(&inverses[..m]),
            ) {
                *out = z.mul(z.sub(hi, lo), inv);
            }
            std::mem::swap(d, &mut next);
        }
    }
    // Horner on the Newton form: p = d0 + (x - x0)(d1 + (x - x1)(d2 + ...)).
    ds.iter()
        .map(|d| {
            let mut c = Vec::with_capacity(n);
            let mut next = Vec::with_capacity(n);
            c.push(d[n - 1]);
            for i in (0..n - 1).rev() {
                z.mul_linear(&c, xs[i], &mut next);
                std::mem::swap(&mut c, &mut next);
                c[0] = z.add(c[0], d[i]);
            }
            to_u64(&c)
        })
        .collect()
}

/// The quadratic loops compiled with AVX2: the same code, inlined into functions whose
/// target features let the compiler use the 4-lane instructions.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2")]
    pub(super) fn from_roots(roots: &[u64], t: u64) -> Vec<u64> {
        super::from_roots_portable(roots, t)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn interpolate_many(xs: &[u64], ys: &[Vec<u64>], t: u64) -> Vec<Vec<u64>> {
        super::interpolate_many_portable(xs, ys, t)
    }
}

/// `p(x) mod t`.
pub fn eval(c: &[u64], x: u64, t: u64) -> u64 {
    let z = Zt::new(t);
    let x = z.of(x);
    c.iter()
        .rev()
        .fold(0.0, |acc, &ci| z.add(z.mul(acc, x), z.of(ci))) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 65537;

    #[test]
    fn roots_are_roots_and_only_they() {
        let roots = [3u64, 17, 65536, 0, 40000];
        let c = from_roots(&roots, T);
        assert_eq!(c.len(), 6);
        for r in roots {
            assert_eq!(eval(&c, r, T), 0);
        }
        assert_ne!(eval(&c, 5, T), 0);
        assert_eq!(from_roots(&[], T), vec![1]);
    }

    #[test]
    fn interpolation_passes_through_points() {
        let xs = [1u64, 9, 300, 65000, 12345, 7];
        let ys = [5u64, 0, 65536, 1, 2, 3];
        let c = interpolate(&xs, &ys, T);
        assert_eq!(c.len(), xs.len());
        for (x, y) in xs.iter().zip(ys) {
            assert_eq!(eval(&c, *x, T), y);
        }
        assert_eq!(interpolate(&[4], &[77], T), vec![77]);
        assert!(interpolate(&[], &[], T).is_empty());
        let other: Vec<u64> = ys.iter().map(|y| (y * 3 + 1) % T).collect();
        let both = interpolate_many(&xs, &[ys.to_vec(), other.clone()], T);
        assert_eq!(both[0], c);
        assert_eq!(both[1], interpolate(&xs, &other, T));
    }

    /// Every length around the inversion's lane count, and a full bin of the 2^24
    /// presets, on their 22-bit prime and at the top of the arithmetic's range.
    #[test]
    fn interpolation_and_roots_at_every_lane_remainder_and_a_full_bin() {
        let mut rng = crate::rng::SessionRng::from_seed([5u8; 32]);
        for t in [4_079_617u64, MAX_MODULUS - 5] {
            for n in (1..=3 * LANES + 1).chain([1304]) {
                let mut xs: Vec<u64> = Vec::new();
                while xs.len() < n {
                    let x = rng.below(t);
                    if !xs.contains(&x) {
                        xs.push(x);
                    }
                }
                let ys: Vec<Vec<u64>> = (0..3)
                    .map(|_| (0..n).map(|_| rng.below(t)).collect())
                    .collect();
                let polys = interpolate_many(&xs, &ys, t);
                let roots = from_roots(&xs, t);
                // The portable loops give the same coefficients as the dispatched ones.
                assert_eq!(interpolate_many_portable(&xs, &ys, t), polys);
                assert_eq!(from_roots_portable(&xs, t), roots);
                assert_eq!(roots.len(), n + 1);
                for (i, &x) in xs.iter().enumerate() {
                    for (p, y) in polys.iter().zip(&ys) {
                        assert_eq!(p.len(), n);
                        assert_eq!(eval(p, x, t), y[i], "t {t}, n {n}, point {i}");
                    }
                    assert_eq!(eval(&roots, x, t), 0);
                }
                let other = (0..t).find(|v| !xs.contains(v)).unwrap();
                assert_ne!(eval(&roots, other, t), 0);
            }
        }
        // Fermat: 3^(p-2) is 3's inverse mod the prime p = 2^26 - 5.
        let p = MAX_MODULUS - 5;
        assert_eq!(pow(3, p - 2, p) * 3 % p, 1);
    }
}
