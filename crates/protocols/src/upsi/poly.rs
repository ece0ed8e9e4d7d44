//! Polynomials over Z_t for the server's bins: the matching polynomial whose roots are
//! a bin's values, and the Newton interpolation polynomial that maps each value to its
//! label part (Cong et al. 2021, Sec. 4.1). Coefficients lowest degree first.

/// `a * b mod t` (t < 2^32, so the product fits in 64 bits).
fn mul(a: u64, b: u64, t: u64) -> u64 {
    a * b % t
}

/// `b^e mod t`.
pub fn pow(mut b: u64, mut e: u64, t: u64) -> u64 {
    let mut r = 1;
    b %= t;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, b, t);
        }
        b = mul(b, b, t);
        e >>= 1;
    }
    r
}

/// `a^-1 mod t` for prime t and a != 0.
fn inverse(a: u64, t: u64) -> u64 {
    pow(a, t - 2, t)
}

/// The coefficients of `prod (x - root)`.
pub fn from_roots(roots: &[u64], t: u64) -> Vec<u64> {
    let mut c = vec![1u64];
    for &r in roots {
        let neg = (t - r % t) % t;
        c.push(0);
        for i in (0..c.len()).rev() {
            let shifted = if i > 0 { c[i - 1] } else { 0 };
            c[i] = (shifted + mul(c[i], neg, t)) % t;
        }
    }
    c
}

/// The polynomial of degree < n through the n points `(xs[i], ys[i])`; the xs must be
/// distinct mod t (the database keeps them so).
pub fn interpolate(xs: &[u64], ys: &[u64], t: u64) -> Vec<u64> {
    let n = xs.len();
    if n == 0 {
        return Vec::new();
    }
    // Divided differences, in place.
    let mut d: Vec<u64> = ys.iter().map(|y| y % t).collect();
    for level in 1..n {
        for i in (level..n).rev() {
            let num = (d[i] + t - d[i - 1]) % t;
            let den = (xs[i] + t - xs[i - level]) % t;
            d[i] = mul(num, inverse(den, t), t);
        }
    }
    // Horner on the Newton form: p = d0 + (x - x0)(d1 + (x - x1)(d2 + ...)).
    let mut c = vec![d[n - 1]];
    for i in (0..n - 1).rev() {
        // c = c * (x - xs[i]) + d[i]
        let neg = (t - xs[i] % t) % t;
        c.push(0);
        for k in (0..c.len()).rev() {
            let shifted = if k > 0 { c[k - 1] } else { 0 };
            c[k] = (shifted + mul(c[k], neg, t)) % t;
        }
        c[0] = (c[0] + d[i]) % t;
    }
    c
}

/// `p(x) mod t`.
pub fn eval(c: &[u64], x: u64, t: u64) -> u64 {
    c.iter().rev().fold(0, |acc, &ci| (mul(acc, x, t) + ci) % t)
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
    }
}
