//! Coefficient encoding on fhe.rs polynomials: what a scheme that works on individual
//! coefficients (rather than batched slots) needs around fhe.rs's `Poly`.
//!
//! fhe.rs's own encoders and encryptors do not fit such a scheme: its secret-key
//! encryption draws the seed of `a` from the thread RNG (so a run cannot be replayed from
//! the session seed), its serialization is protobuf without a range check on residues,
//! and it lifts plaintexts to `[0, t)` where a product with a monomial `-x^k` needs the
//! centred lift `-1`. This module provides the pieces instead, on fhe.rs's `Poly` and
//! contexts (so NTTs and RNS arithmetic stay fhe.rs's):
//!
//! * [`PolyCodec`]: fixed-width, canonical byte encodings of polynomials in power basis
//!   (every residue checked below its prime before fhe.rs sees it);
//! * [`Crt`]: a coefficient's residues lifted to an integer modulo `q`, and `Δ·m`
//!   (`Δ = floor(q / t)`) for plaintext coefficients;
//! * samplers for ternary and uniform polynomials drawing only from the caller's RNG.

use std::sync::Arc;

use fhe_math::rq::traits::TryConvertFrom;
use fhe_math::rq::{Context, Poly, Representation};
use rand_core::{CryptoRng, RngCore};
use rug::Integer;
use zeroize::Zeroize;

use super::{BfvError, math};

/// Bit width of a prime (its residues are packed at this width).
fn width(q: u64) -> usize {
    64 - q.leading_zeros() as usize
}

/// Fixed-width encoding of polynomials in power basis under one context: the residues
/// modulo each prime `q_i`, packed little-endian at the bit width of `q_i`, prime after
/// prime. `degree` is a multiple of 8, so every prime's block is whole bytes.
#[derive(Clone, Debug)]
pub struct PolyCodec {
    ctx: Arc<Context>,
    moduli: Vec<u64>,
    degree: usize,
}

impl PolyCodec {
    pub fn new(ctx: &Arc<Context>) -> Self {
        let moduli = ctx.moduli().to_vec();
        let degree = Poly::zero(ctx, Representation::PowerBasis)
            .coefficients()
            .ncols();
        PolyCodec {
            ctx: ctx.clone(),
            moduli,
            degree,
        }
    }

    /// Bytes of one encoded polynomial.
    pub fn len(&self) -> usize {
        self.moduli
            .iter()
            .map(|&q| (self.degree * width(q)).div_ceil(8))
            .sum()
    }

    /// Always false: a polynomial has at least one coefficient.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Writes `p` (any representation; converted to power basis on a copy if needed)
    /// into `out` (exactly [`Self::len`] bytes).
    pub fn write(&self, p: &Poly, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.len());
        let owned;
        let p = if *p.representation() == Representation::PowerBasis {
            p
        } else {
            let mut c = p.clone();
            c.change_representation(Representation::PowerBasis);
            owned = c;
            &owned
        };
        let coeffs = p.coefficients();
        let mut offset = 0;
        for (i, &q) in self.moduli.iter().enumerate() {
            let w = width(q);
            let block = (self.degree * w).div_ceil(8);
            let dst = &mut out[offset..offset + block];
            dst.fill(0);
            let mut bit = 0usize;
            for &r in coeffs.row(i).iter() {
                put_bits(dst, bit, w, r);
                bit += w;
            }
            offset += block;
        }
    }

    /// Reads a polynomial in power basis, rejecting a wrong length and any residue not
    /// below its prime (a non-canonical encoding), before fhe.rs sees the values.
    pub fn read(&self, bytes: &[u8]) -> Result<Poly, BfvError> {
        if bytes.len() != self.len() {
            return Err(BfvError::Ciphertext(format!(
                "{} bytes where a polynomial takes {}",
                bytes.len(),
                self.len()
            )));
        }
        let mut flat = Vec::with_capacity(self.moduli.len() * self.degree);
        let mut offset = 0;
        for &q in &self.moduli {
            let w = width(q);
            let block = (self.degree * w).div_ceil(8);
            let src = &bytes[offset..offset + block];
            for k in 0..self.degree {
                let r = get_bits(src, k * w, w);
                if r >= q {
                    return Err(BfvError::Ciphertext(format!(
                        "coefficient {k} is not below its {w}-bit prime (non-canonical)"
                    )));
                }
                flat.push(r);
            }
            offset += block;
        }
        Poly::try_convert_from(flat, &self.ctx, false, Representation::PowerBasis).map_err(math)
    }
}

fn put_bits(dst: &mut [u8], bit: usize, w: usize, value: u64) {
    let mut v = value as u128;
    let mut pos = bit;
    let mut left = w;
    while left > 0 {
        let byte = pos / 8;
        let shift = pos % 8;
        let take = (8 - shift).min(left);
        dst[byte] |= ((v as u8) & ((1u16 << take) - 1) as u8) << shift;
        v >>= take;
        pos += take;
        left -= take;
    }
}

fn get_bits(src: &[u8], bit: usize, w: usize) -> u64 {
    let mut v = 0u64;
    let mut pos = bit;
    let mut got = 0;
    while got < w {
        let byte = pos / 8;
        let shift = pos % 8;
        let take = (8 - shift).min(w - got);
        let part = (src[byte] >> shift) as u64 & ((1u64 << take) - 1);
        v |= part << got;
        pos += take;
        got += take;
    }
    v
}

/// CRT constants of one context: lifting residues to `[0, q)` and scaling plaintext
/// coefficients by `Δ = floor(q / t)`.
#[derive(Clone, Debug)]
pub struct Crt {
    moduli: Vec<u64>,
    degree: usize,
    q: Integer,
    /// `(q / q_i) * ((q / q_i)^-1 mod q_i)`.
    basis: Vec<Integer>,
    /// `Δ mod q_i`.
    delta: Vec<u64>,
}

impl Crt {
    pub fn new(ctx: &Arc<Context>, plain_modulus: u64) -> Self {
        let moduli = ctx.moduli().to_vec();
        let degree = Poly::zero(ctx, Representation::PowerBasis)
            .coefficients()
            .ncols();
        let q = moduli
            .iter()
            .fold(Integer::from(1), |acc, &m| acc * Integer::from(m));
        let basis = moduli
            .iter()
            .map(|&m| {
                let rest = Integer::from(&q / m);
                let inv =
                    Integer::from(rest.invert_ref(&Integer::from(m)).expect("distinct primes"));
                rest * inv
            })
            .collect();
        let delta_int = Integer::from(&q / plain_modulus);
        let delta = moduli
            .iter()
            .map(|&m| {
                Integer::from(&delta_int % m)
                    .to_u64()
                    .expect("below a 62-bit prime")
            })
            .collect();
        Crt {
            moduli,
            degree,
            q,
            basis,
            delta,
        }
    }

    /// The modulus `q`.
    pub fn modulus(&self) -> &Integer {
        &self.q
    }

    /// Coefficient `k` of `p` (power basis) as an integer in `[0, q)`.
    pub fn lift(&self, p: &Poly, k: usize) -> Integer {
        let coeffs = p.coefficients();
        let mut x = Integer::new();
        for (i, b) in self.basis.iter().enumerate() {
            x += Integer::from(b * coeffs[[i, k]]);
        }
        x % &self.q
    }

    /// `round(t * x / q) mod t` for coefficient `k` of a phase `c0 + c1 s` (power basis),
    /// `t = 2^plain_bits`: the BFV decoding of one coefficient.
    pub fn decode(&self, phase: &Poly, k: usize, plain_bits: u32) -> u64 {
        let mut x = self.lift(phase, k);
        x <<= plain_bits;
        x += Integer::from(&self.q >> 1);
        x /= &self.q;
        x.keep_bits_mut(plain_bits);
        let v = x.to_u64().expect("below t");
        crate::ahe::paillier::wipe(&mut x);
        v
    }

    /// `Δ·m` in power basis, for plaintext coefficients `m` (each below `t`; at most
    /// `degree` of them, the rest zero).
    pub fn scaled(&self, ctx: &Arc<Context>, m: &[u64]) -> Result<Poly, BfvError> {
        let mut flat = vec![0u64; self.moduli.len() * self.degree];
        for (i, (&q, &d)) in self.moduli.iter().zip(&self.delta).enumerate() {
            for (k, &v) in m.iter().enumerate() {
                flat[i * self.degree + k] = ((d as u128 * (v % q) as u128) % q as u128) as u64;
            }
        }
        Poly::try_convert_from(flat, ctx, false, Representation::PowerBasis).map_err(math)
    }

    /// Power-basis polynomial whose coefficient `k` is `values[k] mod q` (signed
    /// integers of any size; missing coefficients are zero).
    pub fn from_integers(&self, ctx: &Arc<Context>, values: &[Integer]) -> Result<Poly, BfvError> {
        let mut flat = vec![0u64; self.moduli.len() * self.degree];
        for (i, &q) in self.moduli.iter().enumerate() {
            for (k, v) in values.iter().enumerate() {
                let r = Integer::from(v.modulo_ref(&Integer::from(q)));
                flat[i * self.degree + k] = r.to_u64().expect("below a 62-bit prime");
            }
        }
        Poly::try_convert_from(flat, ctx, false, Representation::PowerBasis).map_err(math)
    }
}

/// A polynomial with coefficients uniform in `{-1, 0, 1}`, in NTT form (the secret and
/// the encryption randomness `u`: the standard's ternary distribution, the one its
/// 128-bit table is computed for).
pub fn ternary<R: RngCore + CryptoRng>(ctx: &Arc<Context>, rng: &mut R) -> Result<Poly, BfvError> {
    let degree = Poly::zero(ctx, Representation::PowerBasis)
        .coefficients()
        .ncols();
    let mut c: Vec<i64> = (0..degree).map(|_| below(rng, 3) as i64 - 1).collect();
    let p = Poly::try_convert_from(c.as_slice(), ctx, false, Representation::PowerBasis);
    c.zeroize();
    let mut p = p.map_err(math)?;
    p.change_representation(Representation::Ntt);
    Ok(p)
}

/// A polynomial in power basis whose coefficients `k >= from` are uniform modulo `q`
/// (independent uniform residues modulo each prime) and whose first `from` are zero.
pub fn uniform_from<R: RngCore + CryptoRng>(
    ctx: &Arc<Context>,
    from: usize,
    rng: &mut R,
) -> Result<Poly, BfvError> {
    let moduli = ctx.moduli().to_vec();
    let degree = Poly::zero(ctx, Representation::PowerBasis)
        .coefficients()
        .ncols();
    let mut flat = vec![0u64; moduli.len() * degree];
    for (i, &q) in moduli.iter().enumerate() {
        for k in from..degree {
            flat[i * degree + k] = below(rng, q);
        }
    }
    Poly::try_convert_from(flat, ctx, false, Representation::PowerBasis).map_err(math)
}

/// Uniform in `0..bound` by rejection sampling.
fn below<R: RngCore>(rng: &mut R, bound: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::HeParams;
    use crate::rng::SessionRng;

    fn ctx() -> Arc<Context> {
        let par = HeParams {
            degree: 4096,
            plain_modulus: 1 << 42,
            moduli_bits: vec![55, 54],
        }
        .build_coefficient()
        .unwrap();
        par.context_at_level(0).unwrap().clone()
    }

    #[test]
    fn codec_round_trips_and_rejects_non_canonical() {
        let ctx = ctx();
        let codec = PolyCodec::new(&ctx);
        assert_eq!(codec.len(), 4096 * 109 / 8);
        let mut rng = SessionRng::from_seed([2; 32]);
        let p = uniform_from(&ctx, 0, &mut rng).unwrap();
        let mut buf = vec![0u8; codec.len()];
        codec.write(&p, &mut buf);
        let back = codec.read(&buf).unwrap();
        assert_eq!(back, p);
        // All-ones residues are at least the prime.
        assert!(codec.read(&vec![0xff; codec.len()]).is_err());
        assert!(codec.read(&buf[1..]).is_err());
    }

    #[test]
    fn crt_lifts_and_scales() {
        let ctx = ctx();
        let t_bits = 42;
        let crt = Crt::new(&ctx, 1 << t_bits);
        let m = [0u64, 1, (1 << t_bits) - 1, 12345];
        let p = crt.scaled(&ctx, &m).unwrap();
        for (k, &v) in m.iter().enumerate() {
            assert_eq!(crt.decode(&p, k, t_bits), v);
        }
        let vals = [Integer::from(-5), Integer::from(7)];
        let p = crt.from_integers(&ctx, &vals).unwrap();
        assert_eq!(crt.lift(&p, 0), Integer::from(crt.modulus() - 5u32));
        assert_eq!(crt.lift(&p, 1), 7);
    }
}
