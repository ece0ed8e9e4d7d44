//! Montgomery arithmetic modulo one odd modulus on eight numbers at once (AVX-512 IFMA).
//!
//! # Representation
//!
//! A number modulo `N` is `L` limbs in radix 2^52, and eight numbers travel together as
//! `L` vectors: limb `j` of every number in vector `j`, number `k` in lane `k`. Radix
//! 2^52 because that is what `vpmadd52luq` / `vpmadd52huq` multiply: they take the low 52
//! bits of each operand and add the low or the high 52 bits of the 104-bit product to a
//! 64-bit accumulator. Every lane does the same thing to its own number, so the code is
//! that of one number, written on vectors: no lane waits for another and no instruction
//! depends on a lane's value.
//!
//! # Montgomery multiplication, lazily carried
//!
//! `R = 2^(52 L)` with `52 L >= bits(N) + 2`, so `4N <= R`. [`Montgomery::mul`] is the
//! operand-scanning (CIOS) algorithm: for each limb `b_i` it adds `a * b_i` and
//! `m * N`, with `m` chosen so that the lowest limb becomes divisible by 2^52, then
//! drops that limb. Two things make it fast on vectors:
//! * the limbs are not carried inside the loop: every accumulator gains at most four
//!   52-bit terms (and a carry of at most 2^12) per outer step, so after `L <=`
//!   [`MAX_LIMBS`] steps it is below `4 * 1000 * 2^52 + 2^22 < 2^64`; one carry pass at
//!   the end normalizes the result (every limb below 2^52, as the next product's
//!   operands must be: IFMA ignores the bits above 51, silently);
//! * there is no final subtraction ("almost Montgomery"): for `a, b < 2N` the result
//!   `(a b + m N) / R < (4 N^2 + R N) / R <= 2N`, so every value stays below `2N` and
//!   only the final conversion to an integer subtracts `N` once if needed.
//!
//! Exponents are public (the Damgard-Jurik `n^s`): [`Montgomery::pow_each`] branches
//! on their bits, not on any lane's value.

use core::arch::x86_64::*;

use rug::Integer;
use rug::integer::Order;

/// Numbers per vector.
pub(super) const LANES: usize = 8;

const RADIX: u32 = 52;
const MASK52: u64 = (1 << RADIX) - 1;

/// Most limbs of a modulus (52,000 bits): keeps every accumulator below 2^64 (module
/// docs).
pub(super) const MAX_LIMBS: usize = 1000;

/// One modulus, with its Montgomery constants.
#[derive(Clone)]
pub(super) struct Montgomery {
    modulus: Integer,
    /// `N`'s limbs, radix 2^52.
    n: Vec<u64>,
    /// `-N^{-1} mod 2^52`.
    k0: u64,
    /// `R mod N`: 1 in Montgomery form.
    r_mod: Vec<u64>,
    /// `R^2 mod N`: multiplying by it enters Montgomery form.
    r2: Vec<u64>,
    /// `log2 R = 52 L`.
    r_bits: u32,
    /// `R^k mod N` for `k = 0 ..= SHORT_CHAIN`: a product of `k` raw numbers is fixed
    /// with it (longer chains compute theirs).
    r_pows: Vec<Vec<u64>>,
}

/// Longest chain whose fixing power is kept (three-factor products are common).
const SHORT_CHAIN: usize = 8;

impl Montgomery {
    /// The constants for an odd `modulus > 1` of at most [`MAX_LIMBS`] limbs.
    pub(super) fn new(modulus: &Integer) -> Option<Self> {
        if modulus.is_even() || *modulus <= 1 {
            return None;
        }
        let limbs = (modulus.significant_bits() + 2).div_ceil(RADIX) as usize;
        if limbs > MAX_LIMBS {
            return None;
        }
        let r_bits = RADIX * limbs as u32;
        let n = to_limbs(modulus, limbs);
        // N^{-1} mod 2^64 by Newton's iteration (each step doubles the correct bits;
        // n0 is its own inverse modulo 8).
        let n0 = n[0];
        let mut inv = n0;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n0.wrapping_mul(inv)));
        }
        debug_assert_eq!(n0.wrapping_mul(inv), 1);
        let k0 = inv.wrapping_neg() & MASK52;
        let r = Integer::from(1) << r_bits;
        let r_mod = Integer::from(&r % modulus);
        let r2 = Integer::from(&r_mod * &r_mod) % modulus;
        let mut r_pows = vec![to_limbs(&Integer::from(1), limbs)];
        let mut r_k = Integer::from(1);
        for _ in 0..SHORT_CHAIN {
            r_k = Integer::from(&r_k * &r_mod) % modulus;
            r_pows.push(to_limbs(&r_k, limbs));
        }
        Some(Montgomery {
            modulus: modulus.clone(),
            n,
            k0,
            r_mod: to_limbs(&r_mod, limbs),
            r2: to_limbs(&r2, limbs),
            r_bits,
            r_pows,
        })
    }

    fn limbs(&self) -> usize {
        self.n.len()
    }

    /// `bases[k]^exponent mod N` for up to eight bases (any integers; reduced first).
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn pow_each(&self, bases: &[Integer], exponent: &Integer) -> Vec<Integer> {
        assert!(bases.len() <= LANES, "at most {LANES} bases");
        let l = self.limbs();
        let rows: Vec<Vec<u64>> = bases.iter().map(|b| self.limbs_of(b)).collect();
        let x = pack(&rows, &self.r_mod, l);
        let result = self.pow(&x, exponent);
        self.unpack(&result, bases.len())
    }

    /// For up to eight chains, the product of each chain's integers mod `N` (1 for an
    /// empty chain). The chains may differ in length.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn product_each(&self, chains: &[&[&Integer]]) -> Vec<Integer> {
        assert!(chains.len() <= LANES, "at most {LANES} chains");
        let l = self.limbs();
        // acc starts at 1 in Montgomery form (R); multiplying by a raw x gives
        // acc * x / R, so after k items acc = R * prod / R^k, and one product with
        // R^k mod N (per lane) gives the plain product. Lanes past their chain's end
        // multiply by R mod N, which leaves acc as it is.
        let mut acc = pack(&[], &self.r_mod, l);
        let mut tmp = vec![_mm512_setzero_si512(); l];
        let steps = chains.iter().map(|c| c.len()).max().unwrap_or(0);
        for step in 0..steps {
            let rows: Vec<Vec<u64>> = chains
                .iter()
                .map(|c| match c.get(step) {
                    Some(x) => self.limbs_of(x),
                    None => self.r_mod.clone(),
                })
                .collect();
            let x = pack(&rows, &self.r_mod, l);
            self.mul(&acc, &x, &mut tmp);
            std::mem::swap(&mut acc, &mut tmp);
        }
        let fix: Vec<Vec<u64>> = chains.iter().map(|c| self.r_power(c.len())).collect();
        let fix = pack(&fix, &self.r_mod, l);
        self.mul(&acc, &fix, &mut tmp);
        self.unpack(&tmp, chains.len())
    }

    /// Limbs from one fixed-base table entry to the next: `L` rounded up to whole
    /// 64-byte lines, so that in a [`Lines`] table every entry starts on a line.
    pub(super) fn stride(&self) -> usize {
        self.limbs().next_multiple_of(LANES)
    }

    /// Bytes of one fixed-base table entry ([`Self::stride`] limbs).
    pub(super) fn entry_bytes(&self) -> usize {
        self.stride() * 8
    }

    /// For up to eight bases, `base^0 ..= base^count` in Montgomery form (a fixed-base
    /// table's rows): `(count + 1)` entries of [`Self::stride`] limbs per base, entry
    /// `d` at `d * stride`, its limbs past `L` zero.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn powers_each(&self, bases: &[Integer], count: usize) -> Vec<Vec<u64>> {
        assert!(bases.len() <= LANES, "at most {LANES} bases");
        let l = self.limbs();
        let rows: Vec<Vec<u64>> = bases.iter().map(|b| self.limbs_of(b)).collect();
        let raw = pack(&rows, &self.r_mod, l);
        let mut x = vec![_mm512_setzero_si512(); l];
        self.mul(&raw, &pack(&[], &self.r2, l), &mut x);
        let stride = self.stride();
        let mut out: Vec<Vec<u64>> = vec![Vec::with_capacity((count + 1) * stride); bases.len()];
        for row in out.iter_mut() {
            row.extend_from_slice(&self.r_mod);
            row.resize(stride, 0);
        }
        let mut acc = x.clone();
        let mut tmp = vec![_mm512_setzero_si512(); l];
        for d in 1..=count {
            if d > 1 {
                self.mul(&acc, &x, &mut tmp);
                std::mem::swap(&mut acc, &mut tmp);
            }
            let lanes: Vec<[u64; LANES]> = acc.iter().map(|&v| to_u64s(v)).collect();
            for (k, row) in out.iter_mut().enumerate() {
                row.extend(lanes.iter().map(|v| v[k]));
                row.resize((d + 1) * stride, 0);
            }
        }
        out
    }

    /// `h^e · f_1 ⋯ f_k mod N` for up to eight exponents, each lane with its own `k`
    /// raw factors (the same `k` in every lane), from a fixed-base table in Montgomery
    /// form (`table[(w 2^b + d) * stride ..]` = `h^{d 2^{b w}}`, digit 0 included; a
    /// [`Lines`] table, so that every entry starts on a cache line).
    ///
    /// The first window's entry starts the product and every further window multiplies
    /// by its entry, a digit 0 by 1, so every lane does the same work whatever its
    /// exponent (the table index does depend on it, as in GMP's form). The next window's
    /// entries are prefetched while a product runs: the tables are far larger than the
    /// caches, and each lane's entry is a random one. A raw factor takes the product out
    /// of Montgomery form (`a R · f / R = a f`); after `k` of them it is
    /// `h^e Π f / R^{k-1}`, which one product with `R^k mod N` fixes (`k >= 2`); with
    /// none, a product with a raw 1 leaves Montgomery form.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn fixed_base_pow_each(
        &self,
        table: &[u64],
        window_bits: u32,
        exponents: &[&[u8]],
        factors: &[Vec<&Integer>],
    ) -> Vec<Integer> {
        assert!(exponents.len() <= LANES, "at most {LANES} exponents");
        let k = factors.first().map_or(0, Vec::len);
        assert!(
            factors.is_empty()
                || (factors.len() == exponents.len() && factors.iter().all(|f| f.len() == k)),
            "the same number of factors for every exponent"
        );
        let l = self.limbs();
        let stride = self.stride();
        let row = (1usize << window_bits) * stride;
        let windows = exponents
            .iter()
            .map(|e| (e.len() * 8).div_ceil(window_bits as usize))
            .max()
            .unwrap_or(0);
        assert!(
            windows * row <= table.len(),
            "exponent longer than the table"
        );
        // Each lane's entry for window `w` (lanes past `exponents` take digit 0), as an
        // offset in u64s.
        let offsets = |w: usize| -> [usize; LANES] {
            let mut o = [w * row; LANES];
            for (o, e) in o.iter_mut().zip(exponents) {
                *o += super::window_digit(e, w, window_bits) * stride;
            }
            o
        };
        // SAFETY (for both): every lane's offset is `(w 2^b + d) stride` with `w <
        // windows` and `d < 2^b`, so its entry's `stride` limbs lie below `windows 2^b
        // stride <= table.len()` (asserted above).
        let load = |offsets: &[usize; LANES], out: &mut [__m512i]| unsafe {
            load_entries(table, offsets, out)
        };
        let prefetch = |offsets: &[usize; LANES]| {
            for &o in offsets {
                for line in (0..l).step_by(LANES) {
                    // SAFETY: `o + line < o + stride <= table.len()` (as above); a
                    // prefetch does not fault in any case.
                    unsafe {
                        _mm_prefetch::<_MM_HINT_T0>(table.as_ptr().add(o + line).cast());
                    }
                }
            }
        };
        let mut acc = pack(&[], &self.r_mod, l);
        let mut tmp = vec![_mm512_setzero_si512(); l];
        let mut x = vec![_mm512_setzero_si512(); l];
        if windows > 0 {
            load(&offsets(0), &mut acc);
        }
        for w in 1..windows {
            load(&offsets(w), &mut x);
            if w + 1 < windows {
                prefetch(&offsets(w + 1));
            }
            self.mul(&acc, &x, &mut tmp);
            std::mem::swap(&mut acc, &mut tmp);
        }
        for i in 0..k {
            let rows: Vec<Vec<u64>> = factors.iter().map(|f| self.limbs_of(f[i])).collect();
            self.mul(&acc, &pack(&rows, &self.r_mod, l), &mut tmp);
            std::mem::swap(&mut acc, &mut tmp);
        }
        let out = match k {
            0 => self.leave_montgomery(&acc),
            1 => acc,
            _ => {
                self.mul(&acc, &pack(&[], &self.r_power(k), l), &mut tmp);
                tmp
            }
        };
        self.unpack(&out, exponents.len())
    }

    /// `R^k mod N` as limbs: a product of `k` raw numbers started from `R` is
    /// `Π x / R^{k-1}`, and one product with this gives the plain product.
    fn r_power(&self, k: usize) -> Vec<u64> {
        match self.r_pows.get(k) {
            Some(r_k) => r_k.clone(),
            None => {
                let e = Integer::from(self.r_bits) * k as u64;
                let r_k = Integer::from(2)
                    .pow_mod(&e, &self.modulus)
                    .expect("positive modulus");
                to_limbs(&r_k, self.limbs())
            }
        }
    }

    /// `x^e` for eight raw numbers `x` (below `2N`), raw out: fixed windows from the top.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn pow(&self, x: &[__m512i], e: &Integer) -> Vec<__m512i> {
        let l = self.limbs();
        let bits = e.significant_bits();
        let one = {
            let mut one = vec![0u64; l];
            one[0] = 1;
            one
        };
        if bits == 0 {
            return pack(&[], &one, l);
        }
        let w = window_for(bits);
        let digit = |i: u32| -> usize {
            (0..w)
                .filter(|&b| e.get_bit(i * w + b))
                .fold(0, |d, b| d | 1 << b)
        };
        // table[d] = x^d in Montgomery form.
        let r2 = pack(&[], &self.r2, l);
        let mut table: Vec<Vec<__m512i>> = Vec::with_capacity(1 << w);
        table.push(pack(&[], &self.r_mod, l));
        let mut xm = vec![_mm512_setzero_si512(); l];
        self.mul(x, &r2, &mut xm);
        table.push(xm);
        for d in 2..(1usize << w) {
            let mut next = vec![_mm512_setzero_si512(); l];
            self.mul(&table[d - 1], &table[1], &mut next);
            table.push(next);
        }
        let windows = bits.div_ceil(w);
        let mut acc = table[digit(windows - 1)].clone();
        let mut tmp = vec![_mm512_setzero_si512(); l];
        for i in (0..windows - 1).rev() {
            for _ in 0..w {
                self.mul(&acc, &acc, &mut tmp);
                std::mem::swap(&mut acc, &mut tmp);
            }
            // A digit 0 multiplies by 1: the same work whatever the exponent's bits.
            self.mul(&acc, &table[digit(i)], &mut tmp);
            std::mem::swap(&mut acc, &mut tmp);
        }
        self.leave_montgomery(&acc)
    }

    /// `x / R mod N` (below `2N`): a product with a raw 1 leaves Montgomery form.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn leave_montgomery(&self, x: &[__m512i]) -> Vec<__m512i> {
        let l = self.limbs();
        let mut one = vec![0u64; l];
        one[0] = 1;
        let mut out = vec![_mm512_setzero_si512(); l];
        self.mul(x, &pack(&[], &one, l), &mut out);
        out
    }

    /// `bases[k]^exponents[k] mod N` for up to eight pairs, each lane with its own
    /// exponent (non-negative): one table of powers per lane, read with a gather.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn pow_each_own(&self, bases: &[Integer], exponents: &[Integer]) -> Vec<Integer> {
        assert!(bases.len() <= LANES && bases.len() == exponents.len());
        let l = self.limbs();
        let bits = exponents
            .iter()
            .map(|e| e.significant_bits())
            .max()
            .unwrap_or(0);
        let w = window_for(bits);
        let windows = bits.div_ceil(w).max(1);
        let rows: Vec<Vec<u64>> = bases.iter().map(|b| self.limbs_of(b)).collect();
        let raw = pack(&rows, &self.r_mod, l);
        // table[d * L + j]: limb j of every lane's base^d, in Montgomery form.
        let entries = 1usize << w;
        let mut table = Vec::with_capacity(entries * l);
        table.extend(pack(&[], &self.r_mod, l));
        let mut x = vec![_mm512_setzero_si512(); l];
        self.mul(&raw, &pack(&[], &self.r2, l), &mut x);
        table.extend_from_slice(&x);
        for d in 2..entries {
            let mut next = vec![_mm512_setzero_si512(); l];
            self.mul(&table[(d - 1) * l..d * l], &x, &mut next);
            table.extend(next);
        }
        let stride = _mm512_set1_epi64(LANES as i64);
        let select = |i: u32, out: &mut [__m512i]| {
            // Lane k reads u64 number (d_k L + j) 8 + k of the table.
            let mut index = from_u64s(std::array::from_fn(|k| {
                let d = exponents.get(k).map_or(0, |e| {
                    (0..w)
                        .filter(|&b| e.get_bit(i * w + b))
                        .fold(0, |d, b| d | 1 << b)
                });
                (d * l * LANES + k) as u64
            }));
            for oj in out.iter_mut() {
                // SAFETY: d_k < 2^w, j < L and k < 8, so every index is below
                // 2^w L 8 = the table's length in u64s.
                *oj = unsafe { _mm512_i64gather_epi64::<8>(index, table.as_ptr().cast()) };
                index = _mm512_add_epi64(index, stride);
            }
        };
        let mut acc = vec![_mm512_setzero_si512(); l];
        let mut tmp = vec![_mm512_setzero_si512(); l];
        let mut entry = vec![_mm512_setzero_si512(); l];
        select(windows - 1, &mut acc);
        for i in (0..windows - 1).rev() {
            for _ in 0..w {
                self.mul(&acc, &acc, &mut tmp);
                std::mem::swap(&mut acc, &mut tmp);
            }
            select(i, &mut entry);
            self.mul(&acc, &entry, &mut tmp);
            std::mem::swap(&mut acc, &mut tmp);
        }
        self.unpack(&self.leave_montgomery(&acc), bases.len())
    }

    /// `out = a * b / R mod N`, below `2N`, normalized, for `a, b` below `2N` and
    /// normalized (module docs). `out` is the accumulator, so it must not be `a` or `b`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn mul(&self, a: &[__m512i], b: &[__m512i], out: &mut [__m512i]) {
        let l = self.limbs();
        let (a, b, t, n) = (&a[..l], &b[..l], &mut out[..l], &self.n[..l]);
        let zero = _mm512_setzero_si512();
        let k0 = splat(self.k0);
        t.fill(zero);
        for &bi in b {
            // The lowest limb decides m; it becomes divisible by 2^52 and is dropped,
            // its carry going to the next limb.
            let t0 = _mm512_madd52lo_epu64(t[0], a[0], bi);
            let m = _mm512_madd52lo_epu64(zero, t0, k0);
            let t0 = _mm512_madd52lo_epu64(t0, splat(n[0]), m);
            let carry = _mm512_srli_epi64::<52>(t0);
            // Limb j + 1's operands are limb j's in the next step: loaded once.
            let (mut aj, mut nj) = (a[0], splat(n[0]));
            for j in 0..l - 1 {
                let (aj1, nj1) = (a[j + 1], splat(n[j + 1]));
                let mut x = t[j + 1];
                x = _mm512_madd52hi_epu64(x, aj, bi);
                x = _mm512_madd52hi_epu64(x, nj, m);
                x = _mm512_madd52lo_epu64(x, aj1, bi);
                x = _mm512_madd52lo_epu64(x, nj1, m);
                t[j] = x;
                (aj, nj) = (aj1, nj1);
            }
            let x = _mm512_madd52hi_epu64(zero, aj, bi);
            t[l - 1] = _mm512_madd52hi_epu64(x, nj, m);
            t[0] = _mm512_add_epi64(t[0], carry);
        }
        normalize(t);
    }

    /// `x mod N` as limbs.
    fn limbs_of(&self, x: &Integer) -> Vec<u64> {
        if *x >= 0 && *x < self.modulus {
            to_limbs(x, self.limbs())
        } else {
            to_limbs(&Integer::from(x.modulo_ref(&self.modulus)), self.limbs())
        }
    }

    /// The first `count` lanes as integers below `N` (the values are below `2N`).
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn unpack(&self, v: &[__m512i], count: usize) -> Vec<Integer> {
        let lanes: Vec<[u64; LANES]> = v.iter().map(|&x| to_u64s(x)).collect();
        (0..count)
            .map(|k| {
                let limbs: Vec<u64> = lanes.iter().map(|x| x[k]).collect();
                let mut x = from_limbs(&limbs);
                if x >= self.modulus {
                    x -= &self.modulus;
                }
                x
            })
            .collect()
    }
}

/// Limb `j` of the entry at `offsets[k]` of `table` into lane `k` of `out[j]`, for `j <
/// out.len() = L`: eight whole-line loads per eight limbs and an 8 x 8 transpose.
/// Gather instructions would do the same in one instruction per limb, but they are
/// microcoded and slow on CPUs patched against Gather Data Sampling, which cloud hosts
/// are.
///
/// # Safety
/// `offsets[k] + L.next_multiple_of(8) <= table.len()` for every `k`; the CPU has
/// AVX-512 F.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn load_entries(table: &[u64], offsets: &[usize; LANES], out: &mut [__m512i]) {
    for (block, dst) in out.chunks_mut(LANES).enumerate() {
        let first = block * LANES;
        let rows: [__m512i; LANES] = std::array::from_fn(|k| {
            // SAFETY: `offsets[k] + first + 8 <= offsets[k] + L.next_multiple_of(8) <=
            // table.len()` (the caller's contract).
            unsafe { _mm512_loadu_si512(table.as_ptr().add(offsets[k] + first).cast()) }
        });
        let columns = transpose(rows);
        dst.copy_from_slice(&columns[..dst.len()]);
    }
}

/// Limbs in 64-byte lines: a fixed-base table whose entries ([`Montgomery::stride`]
/// limbs each) all start on a cache line, read with aligned whole-line loads. Zeroed
/// on drop (a table may hold powers of a secret).
pub(super) struct Lines(Vec<Line>);

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([u64; LANES]);

impl Lines {
    /// `limbs` zero limbs (a multiple of eight).
    pub(super) fn zeroed(limbs: usize) -> Self {
        assert!(limbs.is_multiple_of(LANES), "whole lines");
        Lines(vec![Line::default(); limbs / LANES])
    }

    pub(super) fn as_slice(&self) -> &[u64] {
        // SAFETY: `Line` is `repr(C)` around `[u64; 8]` (size 64, no padding), so the
        // vector's lines are `8 len` initialized u64s in a row.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.0.len() * LANES) }
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [u64] {
        // SAFETY: as in `as_slice`, borrowed mutably once.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), self.0.len() * LANES) }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(self.as_mut_slice());
    }
}

/// The 8 x 8 transpose of 64-bit elements: `out[j]` lane `k` = `rows[k]` lane `j`.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn transpose(r: [__m512i; LANES]) -> [__m512i; LANES] {
    // Pairs: t[2i] = (r[2i][0], r[2i+1][0], r[2i][2], r[2i+1][2], ...), t[2i+1] the odd
    // elements.
    let t = [
        _mm512_unpacklo_epi64(r[0], r[1]),
        _mm512_unpackhi_epi64(r[0], r[1]),
        _mm512_unpacklo_epi64(r[2], r[3]),
        _mm512_unpackhi_epi64(r[2], r[3]),
        _mm512_unpacklo_epi64(r[4], r[5]),
        _mm512_unpackhi_epi64(r[4], r[5]),
        _mm512_unpacklo_epi64(r[6], r[7]),
        _mm512_unpackhi_epi64(r[6], r[7]),
    ];
    // Quads: rows 0-3 (then 4-7) of elements j and j + 2 for j = 0, 1 (low) and
    // 4, 5 (high).
    let low = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    let high = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    let u = [
        _mm512_permutex2var_epi64(t[0], low, t[2]), // rows 0-3 of 0, then of 2
        _mm512_permutex2var_epi64(t[1], low, t[3]), // of 1, 3
        _mm512_permutex2var_epi64(t[0], high, t[2]), // of 4, 6
        _mm512_permutex2var_epi64(t[1], high, t[3]), // of 5, 7
        _mm512_permutex2var_epi64(t[4], low, t[6]), // rows 4-7 of 0, 2
        _mm512_permutex2var_epi64(t[5], low, t[7]),
        _mm512_permutex2var_epi64(t[4], high, t[6]),
        _mm512_permutex2var_epi64(t[5], high, t[7]),
    ];
    let first = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
    let second = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
    [
        _mm512_permutex2var_epi64(u[0], first, u[4]),
        _mm512_permutex2var_epi64(u[1], first, u[5]),
        _mm512_permutex2var_epi64(u[0], second, u[4]),
        _mm512_permutex2var_epi64(u[1], second, u[5]),
        _mm512_permutex2var_epi64(u[2], first, u[6]),
        _mm512_permutex2var_epi64(u[3], first, u[7]),
        _mm512_permutex2var_epi64(u[2], second, u[6]),
        _mm512_permutex2var_epi64(u[3], second, u[7]),
    ]
}

/// A modulus may be secret (the key owner's `p^{s+1}`): every copy of it and of its
/// constants is overwritten when dropped.
impl Drop for Montgomery {
    fn drop(&mut self) {
        super::wipe(&mut self.modulus);
        zeroize::Zeroize::zeroize(&mut self.n);
        zeroize::Zeroize::zeroize(&mut self.r_mod);
        zeroize::Zeroize::zeroize(&mut self.r2);
        self.r_pows.iter_mut().for_each(zeroize::Zeroize::zeroize);
        self.k0 = 0;
    }
}

/// The window of an exponentiation by `bits`-bit exponents: wider as the squarings
/// dominate the table.
fn window_for(bits: u32) -> u32 {
    match bits {
        0..=64 => 2,
        65..=512 => 4,
        513..=2048 => 5,
        _ => 6,
    }
}

/// Carries every limb into the next, leaving each below 2^52. The value must be below
/// `2^(52 L)` (it is below `2N` in every use), so nothing carries out of the top.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn normalize(t: &mut [__m512i]) {
    let mask = splat(MASK52);
    let mut carry = _mm512_setzero_si512();
    for x in t.iter_mut() {
        let v = _mm512_add_epi64(*x, carry);
        carry = _mm512_srli_epi64::<52>(v);
        *x = _mm512_and_si512(v, mask);
    }
    debug_assert_eq!(to_u64s(carry), [0; LANES]);
}

/// `rows[k]` in lane `k` (each `l` limbs); lanes past `rows` hold `pad`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn pack(rows: &[Vec<u64>], pad: &[u64], l: usize) -> Vec<__m512i> {
    (0..l)
        .map(|j| {
            let mut v = [pad[j]; LANES];
            for (lane, row) in v.iter_mut().zip(rows) {
                *lane = row[j];
            }
            from_u64s(v)
        })
        .collect()
}

#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn to_u64s(v: __m512i) -> [u64; LANES] {
    // SAFETY: both types are 64 bytes of plain integers; every bit pattern is valid.
    unsafe { core::mem::transmute::<__m512i, [u64; LANES]>(v) }
}

#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn from_u64s(v: [u64; LANES]) -> __m512i {
    // SAFETY: as in `to_u64s`.
    unsafe { core::mem::transmute::<[u64; LANES], __m512i>(v) }
}

/// The `l` radix-2^52 limbs of a non-negative `x < 2^(52 l)`.
fn to_limbs(x: &Integer, l: usize) -> Vec<u64> {
    // GMP's own limbs, 64-bit on x86-64.
    let words = x.as_limbs();
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    (0..l)
        .map(|j| {
            let bit = j * RADIX as usize;
            let (i, shift) = (bit / 64, bit % 64);
            let mut v = word(i) >> shift;
            if shift > 64 - RADIX as usize {
                v |= word(i + 1) << (64 - shift);
            }
            v & MASK52
        })
        .collect()
}

/// The integer of normalized radix-2^52 limbs.
fn from_limbs(limbs: &[u64]) -> Integer {
    let mut words = vec![0u64; (limbs.len() * RADIX as usize).div_ceil(64) + 1];
    for (j, &limb) in limbs.iter().enumerate() {
        let bit = j * RADIX as usize;
        let (i, shift) = (bit / 64, bit % 64);
        words[i] |= limb << shift;
        if shift > 64 - RADIX as usize {
            words[i + 1] |= limb >> (64 - shift);
        }
    }
    Integer::from_digits(&words, Order::Lsf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SessionRng;

    fn random_below(rng: &mut SessionRng, bound: &Integer) -> Integer {
        let bytes = bound.significant_bits().div_ceil(8) as usize + 16;
        let mut buf = vec![0u8; bytes];
        rng.fill(&mut buf);
        Integer::from_digits(&buf, Order::Msf) % bound
    }

    fn random_odd(rng: &mut SessionRng, bits: u32) -> Integer {
        let mut buf = vec![0u8; bits.div_ceil(8) as usize];
        rng.fill(&mut buf);
        let mut x = Integer::from_digits(&buf, Order::Msf);
        x.keep_bits_mut(bits);
        x.set_bit(bits - 1, true);
        x.set_bit(0, true);
        x
    }

    #[test]
    fn limbs_round_trip() {
        let mut rng = SessionRng::from_seed([1; 32]);
        for bits in [1u32, 51, 52, 53, 64, 104, 1000, 6144] {
            let x = random_odd(&mut rng, bits);
            let l = (bits as usize).div_ceil(52);
            let limbs = to_limbs(&x, l);
            assert!(limbs.iter().all(|&v| v <= MASK52));
            assert_eq!(from_limbs(&limbs), x, "{bits} bits");
        }
    }

    #[test]
    fn even_tiny_and_huge_moduli_are_refused() {
        assert!(Montgomery::new(&Integer::from(1)).is_none());
        assert!(Montgomery::new(&Integer::from(1u64 << 40)).is_none());
        assert!(Montgomery::new(&((Integer::from(1) << 52_100u32) + 1)).is_none());
        assert!(Montgomery::new(&Integer::from(3)).is_some());
    }

    /// Every lane against GMP, over moduli whose limbs sit at the edges (bits just
    /// below and above a multiple of 52, all-ones limbs) and the sizes Paillier uses.
    #[test]
    fn products_and_powers_match_gmp() {
        if !crate::cpu::has_avx512_ifma() {
            eprintln!("no AVX-512 IFMA on this CPU: the GMP path is tested by its callers");
            return;
        }
        let mut rng = SessionRng::from_seed([2; 32]);
        let mut moduli: Vec<Integer> = [63u32, 102, 103, 104, 520, 1040, 3072, 6144, 9216]
            .iter()
            .map(|&b| random_odd(&mut rng, b))
            .collect();
        moduli.push((Integer::from(1) << 1038u32) - 1); // every limb all ones
        moduli.push((Integer::from(1) << 1040u32) + 1);
        for n in &moduli {
            let m = Montgomery::new(n).expect("odd modulus");
            let mut values: Vec<Integer> = (0..11).map(|_| random_below(&mut rng, n)).collect();
            // Edges: 0, 1, N - 1, N (reduced to 0), and a value above N.
            values[0] = Integer::from(0);
            values[1] = Integer::from(1);
            values[2] = Integer::from(n - 1u32);
            values[3] = n.clone();
            values[4] = Integer::from(n * 3u32) + 5u32;
            let exponents = [
                Integer::from(0),
                Integer::from(1),
                Integer::from(2),
                Integer::from(65537),
                random_below(&mut rng, &(Integer::from(1) << 700u32)),
                Integer::from(n * n) - 1u32,
            ];
            for e in &exponents {
                for chunk in values.chunks(LANES) {
                    // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
                    let got = unsafe { m.pow_each(chunk, e) };
                    for (x, g) in chunk.iter().zip(&got) {
                        let want = Integer::from(x.pow_mod_ref(e, n).expect("positive"));
                        assert_eq!(*g, want, "{} bits, e = {e}", n.significant_bits());
                    }
                }
            }
            // Every lane its own exponent, of very different lengths.
            for chunk in values.chunks(LANES) {
                let own: Vec<Integer> = (0..chunk.len())
                    .map(|k| exponents[k % exponents.len()].clone())
                    .collect();
                // SAFETY: as above.
                let got = unsafe { m.pow_each_own(chunk, &own) };
                for ((x, e), g) in chunk.iter().zip(&own).zip(&got) {
                    let want = Integer::from(x.pow_mod_ref(e, n).expect("positive"));
                    assert_eq!(*g, want, "{} bits, own e = {e}", n.significant_bits());
                }
            }
            // Chains of different lengths, empty ones included, and more than fit a
            // lane's accumulator bound if limbs were not carried.
            let lens = [0usize, 1, 2, 7, 40, 3, 0, 9];
            let items: Vec<Vec<Integer>> = lens
                .iter()
                .map(|&k| (0..k).map(|_| random_below(&mut rng, n)).collect())
                .collect();
            let mut refs: Vec<Vec<&Integer>> = items.iter().map(|c| c.iter().collect()).collect();
            refs[2] = vec![&values[2], &values[2]]; // (N-1)^2 = 1
            refs[5] = vec![&values[4], &values[3], &values[2]]; // above N, then N (= 0)
            let chains: Vec<&[&Integer]> = refs.iter().map(|c| c.as_slice()).collect();
            // SAFETY: as above.
            let got = unsafe { m.product_each(&chains) };
            for (chain, g) in chains.iter().zip(&got) {
                let want = chain.iter().fold(Integer::from(1), |acc, x| (acc * *x) % n);
                let want = Integer::from(want.modulo_ref(n));
                assert_eq!(
                    *g,
                    want,
                    "{} bits, chain of {}",
                    n.significant_bits(),
                    chain.len()
                );
            }
        }
    }
}
