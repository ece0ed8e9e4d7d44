//! The dual-LPN code silent VOLE compresses its sparse noise with: Expand-Convolute
//! (Raghuraman, Rindal, Tanguy, "Expand-Convolute Codes for Pseudorandom Correlation
//! Generators from LPN", CRYPTO 2023), in its ExConv7x24 shape.
//!
//! The code maps a vector `e` of length `N` (the *code size*) to `k` outputs (the
//! *message size*, `N >= 2k`): the tail `e[k..N]` is convolved in place twice (for each
//! position `i` in order, `x[i]` is added to each of the next 24 positions whose random
//! coefficient bit is set, and always to position `i + 25`, indices wrapping around),
//! then each output `j < k` is `e[j]` plus 7 tail positions: 4 drawn one from each quarter
//! of the tail ("regular") and 3 drawn from the whole tail. Every step is linear over
//! GF(2), so it commutes with the VOLE correlation: encoding `w = v + e·Δ` gives
//! `H(w) = H(v) + H(e)·Δ`.
//!
//! The coefficients and positions are public and fixed by [`CODE_SEED`] and the
//! dimensions, through AES-128 in counter mode. The code is not Silver (which was broken,
//! RRT 2023, Sec. 1): its security rests on the minimum-distance estimate RRT 2023 give
//! for expand-convolute codes of this shape (relative distance about 0.15, the figure
//! libOTe also configures for ExConv7x24); [`super::VoleParams`] sizes the noise from it.

use rayon::prelude::*;

use crate::ot::prg::CtrStream;

/// Public seed of the code's coefficients: any fixed value serves, both parties must use
/// the same.
const CODE_SEED: [u8; 16] = *b"privset/exconv/1";
/// Bits of each convolution window (the "24" of ExConv7x24).
pub(super) const ACCUMULATOR_WIDTH: usize = 24;
/// Tail positions added into each output (the "7" of ExConv7x24).
pub(super) const EXPANDER_WEIGHT: usize = 7;
/// Of the expander's positions, how many are drawn one per region of the tail.
const REGULAR_WEIGHT: usize = 4;
/// Output rows whose positions one task draws (each row needs 7 eight-byte draws).
const EXPAND_CHUNK: usize = 4096;

/// An Expand-Convolute code of message size `k` and code size `n >= 2k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ExConv {
    k: usize,
    n: usize,
}

impl ExConv {
    pub(super) fn new(k: usize, n: usize) -> Self {
        debug_assert!(n >= 2 * k && n > k + ACCUMULATOR_WIDTH + 1);
        Self { k, n }
    }

    /// Replaces `e` (length `n`) by its encoding: on return, `e[..k]` holds the outputs
    /// and the rest is scratch.
    ///
    /// # Panics
    /// If `e.len() != n`.
    pub(super) fn dual_encode(&self, e: &mut [u128]) {
        assert_eq!(e.len(), self.n, "dual_encode: wrong length");
        let (head, tail) = e.split_at_mut(self.k);
        convolve(tail, 0);
        convolve(tail, 1);
        self.expand(tail, head);
    }

    /// `head[j] ^= Σ tail[p]` over row `j`'s 7 positions.
    fn expand(&self, tail: &[u128], head: &mut [u128]) {
        let len = tail.len() as u64;
        let region = len / REGULAR_WEIGHT as u64;
        let stream = CtrStream::new(&stream_key(2));
        head.par_chunks_mut(EXPAND_CHUNK)
            .enumerate()
            .for_each(|(c, rows)| {
                let mut draws = vec![0u8; rows.len() * EXPANDER_WEIGHT * 8];
                stream.fill(c * EXPAND_CHUNK * EXPANDER_WEIGHT * 8, &mut draws);
                for (row, d) in rows.iter_mut().zip(draws.chunks_exact(EXPANDER_WEIGHT * 8)) {
                    let mut acc = *row;
                    for (w, r) in d.chunks_exact(8).enumerate() {
                        let r = u64::from_le_bytes(r.try_into().expect("8 bytes"));
                        let p = if w < REGULAR_WEIGHT {
                            w as u64 * region + below(r, region)
                        } else {
                            below(r, len)
                        };
                        acc ^= tail[p as usize];
                    }
                    *row = acc;
                }
            });
    }
}

/// A draw below `bound` from 64 random bits (Lemire's multiply-shift; the bias is below
/// `bound / 2^64`, and these are public code positions anyway).
fn below(r: u64, bound: u64) -> u64 {
    ((r as u128 * bound as u128) >> 64) as u64
}

/// The AES key of the code's coefficient stream number `which`.
fn stream_key(which: u8) -> [u8; 16] {
    let mut key = CODE_SEED;
    key[15] ^= which;
    key
}

/// One convolution pass over `x`, in place and in order: position `i` (as updated by the
/// earlier ones) is added to each of the next [`ACCUMULATOR_WIDTH`] positions whose
/// coefficient bit is set, and to the one after them. Sequential by nature: each step
/// reads what the previous ones wrote.
fn convolve(x: &mut [u128], pass: u8) {
    const BYTES: usize = ACCUMULATOR_WIDTH / 8;
    const BATCH: usize = 1 << 14;
    let len = x.len();
    let stream = CtrStream::new(&stream_key(pass));
    let mut coefficients = vec![0u8; BATCH * BYTES];
    for start in (0..len).step_by(BATCH) {
        let count = BATCH.min(len - start);
        stream.fill(start * BYTES, &mut coefficients[..count * BYTES]);
        for (offset, c) in coefficients[..count * BYTES]
            .chunks_exact(BYTES)
            .enumerate()
        {
            let i = start + offset;
            let xi = x[i];
            let bits = u32::from(c[0]) | u32::from(c[1]) << 8 | u32::from(c[2]) << 16;
            if i + ACCUMULATOR_WIDTH + 1 < len {
                let window = &mut x[i + 1..i + ACCUMULATOR_WIDTH + 2];
                // Only the set bits (about half): the coefficients are public, so
                // branching on them leaks nothing.
                let mut rest = bits;
                while rest != 0 {
                    window[rest.trailing_zeros() as usize] ^= xi;
                    rest &= rest - 1;
                }
                window[ACCUMULATOR_WIDTH] ^= xi;
            } else {
                for b in 0..ACCUMULATOR_WIDTH {
                    if (bits >> b) & 1 == 1 {
                        x[(i + 1 + b) % len] ^= xi;
                    }
                }
                x[(i + 1 + ACCUMULATOR_WIDTH) % len] ^= xi;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SessionRng;

    fn random_vec(n: usize, seed: u8) -> Vec<u128> {
        let mut rng = SessionRng::from_seed([seed; 32]);
        (0..n)
            .map(|_| {
                let mut b = [0u8; 16];
                rng.fill(&mut b);
                u128::from_le_bytes(b)
            })
            .collect()
    }

    fn encode(code: &ExConv, v: &[u128]) -> Vec<u128> {
        let mut e = v.to_vec();
        code.dual_encode(&mut e);
        e.truncate(code.k);
        e
    }

    #[test]
    fn the_encoding_is_linear() {
        for (k, n) in [(1usize, 512usize), (100, 512), (1000, 2048), (5000, 10_240)] {
            let code = ExConv::new(k, n);
            let (a, b) = (random_vec(n, 1), random_vec(n, 2));
            let sum: Vec<u128> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
            let (ea, eb, es) = (encode(&code, &a), encode(&code, &b), encode(&code, &sum));
            for j in 0..k {
                assert_eq!(es[j], ea[j] ^ eb[j], "k {k} n {n} output {j}");
            }
        }
    }

    #[test]
    fn one_noise_position_reaches_many_outputs() {
        // A single nonzero tail position must spread (the convolution's point): with 7
        // draws per row from a tail it has touched, about half the outputs differ.
        let (k, n) = (4096, 8192);
        let code = ExConv::new(k, n);
        let mut e = vec![0u128; n];
        e[k + 5] = 1;
        let out = encode(&code, &e);
        let touched = out.iter().filter(|&&x| x != 0).count();
        assert!(touched > k / 4, "only {touched} of {k} outputs touched");
    }

    #[test]
    fn the_code_is_fixed() {
        // Recorded: a change of the coefficient stream or the layout changes this.
        let code = ExConv::new(64, 512);
        let out = encode(&code, &random_vec(512, 9));
        let digest = out.iter().fold(0u128, |acc, x| acc.rotate_left(7) ^ x);
        assert_eq!(digest, RECORDED_DIGEST, "got {digest:#x}");
    }

    const RECORDED_DIGEST: u128 = 0xcc060c2486538f720202a9b1b59b973b;
}
