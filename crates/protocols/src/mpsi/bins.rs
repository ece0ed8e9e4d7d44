//! Bins for Hazay-Venkitasubramaniam: a client's items hashed into `B` bins, one
//! polynomial of a public degree bound `D` per bin.
//!
//! One polynomial of degree `|X_i|` (the thesis's form) makes the server's evaluation
//! quadratic. With `B` bins of at most `D` items the client sends `B (D + 1)` encrypted
//! coefficients and the server evaluates one polynomial of degree `D` per item and
//! client. `D` must hold every bin's load, or the client could not encode its set: it is
//! the smallest `D` with `B · P[Bin(n, 1/B) > D] ≤ 2^-40 / t` (a union bound over the
//! bins and the `t` clients), computed exactly from the binomial distribution. Bins are
//! padded with zero coefficients, so the encrypted polynomials hide every bin's load.
//!
//! `B` is chosen, from the client's set size `n` and the server's `m`, to minimise the
//! estimated work `B (D + 1) · 40 µs + m (D + 1) · 10 µs` (a client's encryption and the
//! server's decoding of one coefficient, against one term of the server's evaluation),
//! over `B = ceil(n / λ)` for loads `λ = 1, 2, 4, …, 1024`. Both sides compute it from
//! the announced sizes, so it is never sent.

/// The failure probability allowed for the whole run, as a power of two.
const FAIL_BITS: f64 = 40.0;

/// A client's bins: their number and the degree bound of their polynomials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinParams {
    pub bins: u64,
    pub degree: usize,
}

/// `ln P[X > d]` for `X ~ Bin(n, p)`.
fn ln_tail(n: u64, p: f64, d: u64) -> f64 {
    if d >= n {
        return f64::NEG_INFINITY;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // ln C(n, j) for j = d + 1, then each further term from the previous.
    let j0 = d + 1;
    let mut ln_c = 0.0;
    for i in 0..j0 {
        ln_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    let mut term = ln_c + j0 as f64 * lp + (n - j0) as f64 * lq;
    let mut total = term;
    let mut j = j0;
    while j < n {
        term += ((n - j) as f64).ln() - ((j + 1) as f64).ln() + lp - lq;
        j += 1;
        // log-sum-exp
        let (hi, lo) = if term > total {
            (term, total)
        } else {
            (total, term)
        };
        total = hi + (lo - hi).exp().ln_1p();
        if term < total - 60.0 && j as f64 > n as f64 * p {
            break;
        }
    }
    total
}

impl BinParams {
    /// The bins of a client with `items` items, when the server has `server_items` and
    /// there are `clients` clients.
    pub fn new(items: u64, server_items: u64, clients: u32) -> Self {
        if items == 0 {
            return Self { bins: 1, degree: 0 };
        }
        let budget = -(FAIL_BITS + f64::from(clients.max(1)).log2()) * std::f64::consts::LN_2;
        let mut best: Option<(f64, Self)> = None;
        for load in (0..=10).map(|e| 1u64 << e) {
            let bins = items.div_ceil(load);
            let degree = Self::degree_bound(items, bins, budget);
            let cost = bins as f64 * (degree + 1) as f64 * 40.0
                + server_items as f64 * (degree + 1) as f64 * 10.0;
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, Self { bins, degree }));
            }
            if bins == 1 {
                break;
            }
        }
        best.expect("at least one candidate").1
    }

    /// The smallest `D` with `bins · P[Bin(items, 1/bins) > D] ≤ e^budget`.
    fn degree_bound(items: u64, bins: u64, budget: f64) -> usize {
        if bins == 1 {
            return items as usize;
        }
        let p = 1.0 / bins as f64;
        let ln_bins = (bins as f64).ln();
        let mut d = (items as f64 * p).ceil() as u64;
        while d < items && ln_bins + ln_tail(items, p, d) > budget {
            d += 1;
        }
        d as usize
    }

    /// The bin of an item from its 64-bit hash word.
    pub fn bin_of(&self, word: u64) -> u64 {
        ((u128::from(word) * u128::from(self.bins)) >> 64) as u64
    }

    /// Coefficients per bin.
    pub fn width(&self) -> usize {
        self.degree + 1
    }

    /// Total coefficients sent.
    pub fn coefficients(&self) -> usize {
        self.bins as usize * self.width()
    }

    /// Bins per streamed chunk (whole bins only).
    pub fn bins_per_chunk(&self) -> usize {
        (super::CHUNK / self.width()).max(1)
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        (self.bins as usize).div_ceil(self.bins_per_chunk())
    }

    /// The bins `[first, first + count)` of chunk `c`.
    pub fn chunk_bins(&self, c: usize) -> (usize, usize) {
        let first = c * self.bins_per_chunk();
        (first, self.bins_per_chunk().min(self.bins as usize - first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_matches_small_exact_values() {
        // Bin(4, 1/2): P[X > 2] = 5/16, P[X > 3] = 1/16.
        assert!((ln_tail(4, 0.5, 2).exp() - 5.0 / 16.0).abs() < 1e-12);
        assert!((ln_tail(4, 0.5, 3).exp() - 1.0 / 16.0).abs() < 1e-12);
        assert_eq!(ln_tail(4, 0.5, 4), f64::NEG_INFINITY);
    }

    #[test]
    fn bounds_are_safe_and_sizes_sensible() {
        for (n, m) in [
            (1u64, 1u64),
            (10, 10),
            (1000, 1000),
            (3000, 3000),
            (65536, 65536),
        ] {
            let b = BinParams::new(n, m, 19);
            assert!(
                b.bins >= 1 && b.degree >= 1 && b.degree <= n as usize,
                "{n}: {b:?}"
            );
            // The bound holds: bins * tail <= 2^-40 / 19.
            if b.bins > 1 {
                let lt = (b.bins as f64).ln() + ln_tail(n, 1.0 / b.bins as f64, b.degree as u64);
                assert!(lt <= -(40.0 + 19f64.log2()) * std::f64::consts::LN_2 + 1e-9);
            }
            // Far fewer coefficients than the thesis's single polynomial would need
            // server work for, and linear in n.
            assert!(b.coefficients() as u64 <= 64 * n.max(4), "{n}: {b:?}");
        }
        assert_eq!(BinParams::new(0, 5, 3), BinParams { bins: 1, degree: 0 });
    }
}
