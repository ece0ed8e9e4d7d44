//! Polynomials over Z_t for the server's bins: the matching polynomial whose roots are
//! a bin's values, and the Newton interpolation polynomial that maps each value to its
//! label part (Cong et al. 2021, Sec. 4.1). Coefficients lowest degree first.

/// Arithmetic mod a prime t < 2^32 with Barrett reduction (the database build spends
/// most of its time here; a hardware division is several times slower).
#[derive(Clone, Copy)]
struct Zt {
    t: u64,
    /// floor(2^64 / t)
    mu: u64,
}

impl Zt {
    fn new(t: u64) -> Self {
        debug_assert!(t > 1 && t < 1 << 32);
        Self {
            t,
            mu: u64::MAX / t,
        }
    }

    #[inline]
    fn mul(self, a: u64, b: u64) -> u64 {
        let x = a * b;
        let q = ((u128::from(x) * u128::from(self.mu)) >> 64) as u64;
        // q is at most 2 below the true quotient.
        let mut r = x - q * self.t;
        while r >= self.t {
            r -= self.t;
        }
        r
    }

    #[inline]
    fn add(self, a: u64, b: u64) -> u64 {
        let r = a + b;
        if r >= self.t { r - self.t } else { r }
    }

    #[inline]
    fn neg(self, a: u64) -> u64 {
        if a == 0 { 0 } else { self.t - a }
    }

    fn pow(self, mut b: u64, mut e: u64) -> u64 {
        let mut r = 1;
        b %= self.t;
        while e > 0 {
            if e & 1 == 1 {
                r = self.mul(r, b);
            }
            b = self.mul(b, b);
            e >>= 1;
        }
        r
    }

    /// `out[i] = values[i]^-1` for non-zero values.
    fn batch_invert(self, values: &[u64], out: &mut [u64]) {
        let mut acc = 1u64;
        for (o, &v) in out.iter_mut().zip(values) {
            *o = acc;
            acc = self.mul(acc, v);
        }
        let mut inv = self.pow(acc, self.t - 2);
        for (o, &v) in out.iter_mut().zip(values).rev() {
            *o = self.mul(*o, inv);
            inv = self.mul(inv, v);
        }
    }

    /// `c <- c * (x - root)`, in place (c grows by one coefficient).
    fn mul_linear(self, c: &mut Vec<u64>, root: u64) {
        let neg = self.neg(root % self.t);
        c.push(0);
        for i in (0..c.len()).rev() {
            let shifted = if i > 0 { c[i - 1] } else { 0 };
            c[i] = self.add(shifted, self.mul(c[i], neg));
        }
    }
}

/// `b^e mod t`.
pub fn pow(b: u64, e: u64, t: u64) -> u64 {
    Zt::new(t).pow(b, e)
}

/// The coefficients of `prod (x - root)`.
pub fn from_roots(roots: &[u64], t: u64) -> Vec<u64> {
    let z = Zt::new(t);
    let mut c = Vec::with_capacity(roots.len() + 1);
    c.push(1u64);
    for &r in roots {
        z.mul_linear(&mut c, r);
    }
    c
}

/// The polynomial of degree < n through the n points `(xs[i], ys[i])`; the xs must be
/// distinct mod t (the database keeps them so).
pub fn interpolate(xs: &[u64], ys: &[u64], t: u64) -> Vec<u64> {
    interpolate_many(xs, &[ys.to_vec()], t)
        .pop()
        .expect("one polynomial")
}

/// [`interpolate`] for several value vectors over the same xs: the divided
/// differences' denominators depend on the xs alone, so they are inverted once for all
/// (the inversions are most of the work).
pub fn interpolate_many(xs: &[u64], ys: &[Vec<u64>], t: u64) -> Vec<Vec<u64>> {
    let z = Zt::new(t);
    let n = xs.len();
    if n == 0 {
        return vec![Vec::new(); ys.len()];
    }
    // Divided differences, in place.
    let mut ds: Vec<Vec<u64>> = ys
        .iter()
        .map(|ys| ys.iter().map(|y| y % t).collect())
        .collect();
    let mut inverses = vec![0u64; n];
    let mut dens = Vec::with_capacity(n);
    for level in 1..n {
        // The level's denominators xs[i] - xs[i - level], inverted together
        // (Montgomery's trick: one exponentiation per level, not one per point).
        dens.clear();
        dens.extend((level..n).map(|i| z.add(xs[i] % t, z.neg(xs[i - level] % t))));
        z.batch_invert(&dens, &mut inverses[..dens.len()]);
        for d in &mut ds {
            for i in (level..n).rev() {
                let num = z.add(d[i], z.neg(d[i - 1]));
                d[i] = z.mul(num, inverses[i - level]);
            }
        }
    }
    // Horner on the Newton form: p = d0 + (x - x0)(d1 + (x - x1)(d2 + ...)).
    ds.iter()
        .map(|d| {
            let mut c = Vec::with_capacity(n);
            c.push(d[n - 1]);
            for i in (0..n - 1).rev() {
                z.mul_linear(&mut c, xs[i]);
                c[0] = z.add(c[0], d[i]);
            }
            c
        })
        .collect()
}

/// `p(x) mod t`.
pub fn eval(c: &[u64], x: u64, t: u64) -> u64 {
    let z = Zt::new(t);
    c.iter()
        .rev()
        .fold(0, |acc, &ci| z.add(z.mul(acc, x % t), ci))
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
}
