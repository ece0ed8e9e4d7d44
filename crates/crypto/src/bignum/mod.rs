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
//! Not constant time in the exponent, on either path: the lanes multiply by a table
//! entry at every window (a digit 0 by 1), but which entry they read depends on the
//! exponent, as in GMP's `mpz_powm`. Nothing else depends on the numbers' values.

// Target-feature functions can only be called in `unsafe` blocks (after detection).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod ifma;

use rayon::prelude::*;
use rug::Integer;

/// Items a chain should hold at least before a group is split over more lanes.
const MIN_CHAIN: usize = 16;
/// Fewest factors [`BatchModulus::product_each`] multiplies in the lanes.
const FEW_FOR_LANES: usize = 8;

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

    /// `base^exponent mod N` for every base, in parallel (`exponent >= 0`).
    pub(crate) fn pow_each(&self, bases: &[Integer], exponent: &Integer) -> Vec<Integer> {
        assert!(*exponent >= 0, "a non-negative exponent");
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            return lanes_pow_each(m, bases, exponent);
        }
        self.gmp_pow_each(bases, exponent)
    }

    /// `bases[i]^exponents[i] mod N` for every pair, in parallel (exponents
    /// non-negative, one per base).
    #[allow(unsafe_code)]
    pub(crate) fn pow_each_own(&self, bases: &[Integer], exponents: &[Integer]) -> Vec<Integer> {
        assert_eq!(bases.len(), exponents.len(), "one exponent per base");
        assert!(exponents.iter().all(|e| *e >= 0), "non-negative exponents");
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            return bases
                .par_chunks(ifma::LANES)
                .zip(exponents.par_chunks(ifma::LANES))
                // SAFETY: a `Montgomery` exists only when the CPU has AVX-512 F and IFMA.
                .flat_map_iter(|(b, e)| unsafe { m.pow_each_own(b, e) })
                .collect();
        }
        bases
            .par_iter()
            .zip(exponents)
            .map(|(b, e)| {
                Integer::from(
                    b.pow_mod_ref(e, &self.modulus)
                        .expect("positive modulus, non-negative exponent"),
                )
            })
            .collect()
    }

    /// The product mod `N` of every group (1 for an empty one), in parallel. Fewer than
    /// [`FEW_FOR_LANES`] factors in all go to GMP: a lane product has a fixed cost of two
    /// vector products (the threshold scheme checks its ciphertexts one at a time).
    pub(crate) fn product_each(&self, groups: &[Vec<&Integer>]) -> Vec<Integer> {
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes()
            && groups.iter().map(Vec::len).sum::<usize>() >= FEW_FOR_LANES
        {
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

/// The modulus may be secret (the key owner's `p^{s+1}`).
impl Drop for BatchModulus {
    fn drop(&mut self) {
        wipe(&mut self.modulus);
    }
}

/// `h^e mod N` for one base `h` and many exponents: a table of `h^{d 2^{b w}}` for every
/// `b`-bit window `w` and digit `d`, so `h^e` costs one product per window. Used for the
/// Paillier key owner's short randomizers, the threshold scheme's, and the masking
/// party's ([`crate::ahe::paillier`]). Made by [`BatchModulus::fixed_base`], which picks
/// the lanes' form (Montgomery limbs) or GMP's; entries are overwritten on drop, as
/// powers of a secret base may be among them.
pub(crate) struct FixedBase {
    window_bits: u32,
    windows: usize,
    form: TableForm,
}

enum TableForm {
    /// `rows[w][d - 1] = h^{d 2^{b w}}`.
    Gmp {
        modulus: Integer,
        rows: Vec<Vec<Integer>>,
    },
    /// The same entries in Montgomery form, row after row, each row led by digit 0's
    /// entry (1) so that every lane's lookup is a load, each entry on its own cache
    /// lines.
    #[cfg(target_arch = "x86_64")]
    Lanes {
        m: ifma::Montgomery,
        entries: ifma::Lines,
    },
}

impl BatchModulus {
    /// Bytes one entry of a [`FixedBase`] takes in the form this CPU gets.
    pub(crate) fn table_entry_bytes(&self) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            return m.entry_bytes();
        }
        self.modulus.significant_digits::<u8>()
    }

    /// The table of `h` for exponents of up to `exponent_bits` bits in `window_bits`-bit
    /// windows (1 to 16); rows are filled in parallel.
    pub(crate) fn fixed_base(
        &self,
        h: &Integer,
        exponent_bits: u32,
        window_bits: u32,
    ) -> FixedBase {
        assert!((1..=16).contains(&window_bits), "window of 1 to 16 bits");
        let windows = exponent_bits.div_ceil(window_bits) as usize;
        let digits = (1usize << window_bits) - 1;
        // Row bases h^{2^{bw}}: window_bits squarings each, one after the other.
        let mut bases = Vec::with_capacity(windows);
        let mut base = Integer::from(h.modulo_ref(&self.modulus));
        for _ in 0..windows {
            bases.push(base.clone());
            for _ in 0..window_bits {
                base.square_mut();
                base.modulo_mut(&self.modulus);
            }
        }
        wipe(&mut base);
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = self.lanes() {
            // Rows of 2^b entries: digit 0 (1, in Montgomery form) included.
            let row_len = (digits + 1) * m.stride();
            let mut entries = ifma::Lines::zeroed(windows * row_len);
            entries
                .as_mut_slice()
                .par_chunks_mut(ifma::LANES * row_len)
                .zip(bases.par_chunks(ifma::LANES))
                .for_each(|(dst, chunk)| {
                    let rows = lanes_powers(m, chunk, digits);
                    for (d, mut row) in dst.chunks_mut(row_len).zip(rows) {
                        d.copy_from_slice(&row);
                        zeroize::Zeroize::zeroize(&mut row);
                    }
                });
            bases.iter_mut().for_each(wipe);
            return FixedBase {
                window_bits,
                windows,
                form: TableForm::Lanes {
                    m: m.clone(),
                    entries,
                },
            };
        }
        let rows = bases
            .into_par_iter()
            .map(|base| {
                let mut row = Vec::with_capacity(digits);
                row.push(base);
                for d in 1..digits {
                    let next = self.mul(&row[d - 1], &row[0]);
                    row.push(next);
                }
                row
            })
            .collect();
        FixedBase {
            window_bits,
            windows,
            form: TableForm::Gmp {
                modulus: self.modulus.clone(),
                rows,
            },
        }
    }
}

impl FixedBase {
    #[cfg(test)]
    /// The width of the table's windows.
    pub(crate) fn window_bits(&self) -> u32 {
        self.window_bits
    }

    /// `h^e` for every exponent (big-endian bytes, each of at most the table's bits),
    /// on the calling thread: callers parallelize over chunks.
    pub(crate) fn pow_each(&self, exponents: &[&[u8]]) -> Vec<Integer> {
        self.pow_times_each(exponents, &[])
    }

    /// `h^{e_i} · Π factors[i] mod N` for every exponent, each with the same number of
    /// factors (`factors` empty for none): the factors join the table's product in the
    /// lanes, so a randomizer and what it randomizes cost one conversion.
    #[allow(unsafe_code)]
    pub(crate) fn pow_times_each(
        &self,
        exponents: &[&[u8]],
        factors: &[Vec<&Integer>],
    ) -> Vec<Integer> {
        assert!(
            factors.is_empty() || factors.len() == exponents.len(),
            "factors for every exponent or for none"
        );
        for e in exponents {
            assert!(
                (e.len() * 8).div_ceil(self.window_bits as usize) <= self.windows,
                "exponent longer than the table"
            );
        }
        match &self.form {
            TableForm::Gmp { modulus, rows } => exponents
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let windows = (e.len() * 8).div_ceil(self.window_bits as usize);
                    let mut acc = Integer::from(1);
                    for (w, row) in rows.iter().enumerate().take(windows) {
                        let digit = window_digit(e, w, self.window_bits);
                        if digit != 0 {
                            acc *= &row[digit - 1];
                            acc.modulo_mut(modulus);
                        }
                    }
                    for f in factors.get(i).into_iter().flatten() {
                        acc *= *f;
                        acc.modulo_mut(modulus);
                    }
                    acc
                })
                .collect(),
            #[cfg(target_arch = "x86_64")]
            TableForm::Lanes { m, entries } => {
                let lanes = ifma::LANES;
                exponents
                    .chunks(lanes)
                    .enumerate()
                    // SAFETY: a `Montgomery` exists only when the CPU has AVX-512 F and
                    // IFMA.
                    .flat_map(|(c, chunk)| unsafe {
                        let factors = factors.get(c * lanes..(c * lanes + chunk.len()));
                        m.fixed_base_pow_each(
                            entries.as_slice(),
                            self.window_bits,
                            chunk,
                            factors.unwrap_or(&[]),
                        )
                    })
                    .collect()
            }
        }
    }
}

impl Drop for FixedBase {
    fn drop(&mut self) {
        match &mut self.form {
            TableForm::Gmp { modulus, rows } => {
                rows.iter_mut().flatten().for_each(wipe);
                wipe(modulus);
            }
            // `Lines` zeroes itself.
            #[cfg(target_arch = "x86_64")]
            TableForm::Lanes { .. } => {}
        }
    }
}

/// Digit `index` (from the least significant) of `bits` bits of the big-endian `e`.
/// Windows are at most 16 bits, so a digit lies within three bytes; bits past the
/// exponent's first byte read as 0.
fn window_digit(e: &[u8], index: usize, bits: u32) -> usize {
    debug_assert!(bits <= 16);
    let start = index * bits as usize;
    let from_end = start / 8;
    let three = (0..3)
        .filter_map(|i| e.len().checked_sub(from_end + i + 1).map(|at| (i, e[at])))
        .fold(0u32, |v, (i, byte)| v | u32::from(byte) << (8 * i));
    ((three >> (start % 8)) & ((1 << bits) - 1)) as usize
}

/// `x` (non-negative, at most `out.len()` bytes) as big-endian bytes filling `out`,
/// zeros in front, copied from GMP's limbs: GMP's own export to bytes goes one byte at a
/// time, which showed in profiles of bulk Paillier work.
pub(crate) fn write_be(x: &Integer, out: &mut [u8]) {
    debug_assert!(*x >= 0 && x.significant_digits::<u8>() <= out.len());
    out.fill(0);
    let mut end = out.len();
    for limb in x.as_limbs() {
        let bytes = limb.to_be_bytes();
        let take = end.min(bytes.len());
        out[end - take..end].copy_from_slice(&bytes[bytes.len() - take..]);
        end -= take;
        if end == 0 {
            break;
        }
    }
}

/// The non-negative integer of the big-endian `bytes`, imported as 64-bit words (GMP's
/// import from bytes goes one byte at a time).
pub(crate) fn read_be(bytes: &[u8]) -> Integer {
    let words: Vec<u64> = bytes
        .rchunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[8 - c.len()..].copy_from_slice(c);
            u64::from_be_bytes(w)
        })
        .collect();
    Integer::from_digits(&words, rug::integer::Order::Lsf)
}

/// Overwrites every limb GMP has allocated for `x` with zeros and leaves `x` at 0 (for
/// secrets; GMP's temporaries are not reached).
#[allow(unsafe_code)]
pub(crate) fn wipe(x: &mut Integer) {
    let raw = x.as_raw_mut();
    // SAFETY: `raw` is `x`'s own initialized mpz_t. When `alloc > 0`, `d` points at
    // `alloc` limbs GMP allocated for it (with `alloc == 0` it may point at a shared
    // read-only dummy, so nothing is written). Zero limbs with size 0 are a valid 0.
    unsafe {
        let alloc = usize::try_from((*raw).alloc).unwrap_or(0);
        if alloc > 0 {
            std::ptr::write_bytes((*raw).d.as_ptr(), 0, alloc);
        }
        (*raw).size = 0;
    }
}

/// A fixed-base table's rows for up to eight row bases.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn lanes_powers(m: &ifma::Montgomery, bases: &[Integer], digits: usize) -> Vec<Vec<u64>> {
    // SAFETY: a `Montgomery` exists only when the CPU has AVX-512 F and IFMA.
    unsafe { m.powers_each(bases, digits) }
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

    /// An odd modulus of `buf.len()` bytes (`buf` is left holding its bytes).
    fn random_odd(rng: &mut SessionRng, buf: &mut [u8]) -> Integer {
        rng.fill(buf);
        let mut n = Integer::from_digits(buf, Order::Msf);
        n.set_bit(0, true);
        n
    }

    /// Both paths against a plain fold, with groups that get split over lanes, empty
    /// groups, and more groups than lanes. The paths are called directly: forcing the
    /// portable path is process-wide and would race with other tests.
    #[test]
    fn both_paths_agree_with_plain_arithmetic() {
        let mut rng = SessionRng::from_seed([3; 32]);
        let mut buf = vec![0u8; 768];
        let n = random_odd(&mut rng, &mut buf);
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

    /// The limbs themselves are zero after a wipe, not only the value.
    #[test]
    #[allow(unsafe_code)]
    fn wiped_integers_are_zero_and_usable() {
        let mut x = (Integer::from(1) << 5000u32) - 12345u32;
        wipe(&mut x);
        assert_eq!(x, 0);
        // SAFETY: reads the `alloc` limbs GMP allocated for `x` (5000 bits: alloc > 0).
        let limbs = unsafe {
            let raw = x.as_raw();
            std::slice::from_raw_parts((*raw).d.as_ptr(), (*raw).alloc as usize)
        };
        assert!(limbs.len() >= 79 && limbs.iter().all(|&l| l == 0));
        x += 7u32;
        assert_eq!(x, 7);
        let mut fresh = Integer::new();
        wipe(&mut fresh);
        assert_eq!(fresh, 0);
        let mut negative = Integer::from(-99);
        wipe(&mut negative);
        assert_eq!(negative, 0);
    }

    /// A table in both forms against GMP's exponentiation: exponents shorter than the
    /// table, empty, all zero, all ones, and of every window width's edge.
    #[test]
    fn bytes_round_trip_as_gmp_writes_them() {
        let mut rng = SessionRng::from_seed([6; 32]);
        for len in [0usize, 1, 7, 8, 9, 31, 384, 385] {
            let mut bytes = vec![0u8; len];
            rng.fill(&mut bytes);
            let x = Integer::from_digits(&bytes, Order::Msf);
            assert_eq!(read_be(&bytes), x, "{len} bytes");
            for room in [len, len + 1, len + 9] {
                let mut out = vec![0xaa; room];
                write_be(&x, &mut out);
                let mut want = vec![0u8; room];
                x.write_digits(&mut want[room - x.significant_digits::<u8>()..], Order::Msf);
                assert_eq!(out, want, "{len} bytes into {room}");
            }
        }
    }

    #[test]
    fn window_digits_match_the_bits() {
        let mut rng = SessionRng::from_seed([5; 32]);
        for len in [0usize, 1, 2, 3, 7, 48] {
            let mut e = vec![0u8; len];
            rng.fill(&mut e);
            let x = Integer::from_digits(&e, Order::Msf);
            for bits in 1..=16u32 {
                for index in 0..(len * 8 + 20) / bits as usize {
                    let want = (0..bits).fold(0usize, |d, b| {
                        d | (x.get_bit(index as u32 * bits + b) as usize) << b
                    });
                    assert_eq!(window_digit(&e, index, bits), want, "{len} {bits} {index}");
                }
            }
        }
    }

    #[test]
    fn fixed_base_tables_match_plain_powers() {
        let mut rng = SessionRng::from_seed([4; 32]);
        let mut buf = vec![0u8; 384];
        let n = random_odd(&mut rng, &mut buf);
        rng.fill(&mut buf);
        let h = Integer::from_digits(&buf, Order::Msf) % &n;
        let mut exponents: Vec<Vec<u8>> = vec![vec![], vec![0; 40], vec![0xff; 40], vec![1]];
        for len in [1usize, 5, 17, 39, 40] {
            let mut e = vec![0u8; len];
            rng.fill(&mut e);
            exponents.push(e);
        }
        let refs: Vec<&[u8]> = exponents.iter().map(|e| &e[..]).collect();
        let want: Vec<Integer> = exponents
            .iter()
            .map(|e| {
                let e = Integer::from_digits(e, Order::Msf);
                Integer::from(h.pow_mod_ref(&e, &n).expect("positive"))
            })
            .collect();
        let fast = BatchModulus::new(&n);
        let gmp = BatchModulus {
            modulus: n.clone(),
            #[cfg(target_arch = "x86_64")]
            lanes: None,
        };
        // Factors: below and above N, zero, and more than the lanes keep a fixing
        // power for.
        let mut factor_pool = vec![Integer::new(), Integer::from(1), Integer::from(&n - 1u32)];
        factor_pool.push(Integer::from(&n * 3u32) + 7u32);
        for _ in 0..12 {
            rng.fill(&mut buf);
            factor_pool.push(Integer::from_digits(&buf, Order::Msf));
        }
        for window in [1u32, 3, 8, 11] {
            for batch in [&fast, &gmp] {
                let table = batch.fixed_base(&h, 320, window);
                assert_eq!(table.pow_each(&refs), want, "window {window}");
                for k in [1usize, 2, 3, 9] {
                    let factors: Vec<Vec<&Integer>> = (0..refs.len())
                        .map(|i| (0..k).map(|j| &factor_pool[(i * 5 + j) % 16]).collect())
                        .collect();
                    let times: Vec<Integer> = want
                        .iter()
                        .zip(&factors)
                        .map(|(w, f)| f.iter().fold(w.clone(), |acc, x| acc * *x % &n))
                        .collect();
                    // The whole batch, and a part that leaves lanes idle.
                    assert_eq!(
                        table.pow_times_each(&refs, &factors),
                        times,
                        "window {window}, {k} factors"
                    );
                    assert_eq!(
                        table.pow_times_each(&refs[2..5], &factors[2..5]),
                        times[2..5],
                        "window {window}, {k} factors, 3 lanes"
                    );
                }
            }
        }
    }
}
