//! `Σ ρ_k P_k` for many points and short public scalars, eight lanes at a time: the
//! check of a batch of threshold-ElGamal decryption shares
//! (`tahe::elgamal::batch`), whose 128-bit coefficients are hashed from the transcript.
//! Variable time in the scalars, which are public.
//!
//! The bucket method (Pippenger) with one set of buckets per lane: lane `j` takes the
//! points `k ≡ j (mod 8)`, so the eight additions of a step always land in eight
//! distinct buckets. Each `c`-bit window costs one addition per eight points, then
//! `2 (2^c − 1)` for every lane's running sums at once; windows are joined by `c`
//! doublings, and the eight lanes' results are added at the end.

use core::arch::x86_64::*;

use super::edwards::Point8;
use super::field::{Fe8, from_u64s, to_u64s};
use super::lanes::LANES;
use super::sums::{IDENTITY, StoredPoint, from_lanes, to_lanes};

/// Bits of the scalars.
pub(crate) const SCALAR_BITS: u32 = 128;

/// The window that makes `⌈128/c⌉ (⌈n/8⌉ + 2^{c+1})` additions smallest.
fn window_bits(points: usize) -> u32 {
    let per_lane = points.div_ceil(LANES);
    (2..=14)
        .min_by_key(|&c| SCALAR_BITS.div_ceil(c) as usize * (per_lane + (2usize << c)))
        .expect("a non-empty range")
}

/// `Σ scalars[k] · points[k]`, the scalars as 128-bit little-endian integers.
///
/// # Panics
/// If the lengths differ, or the CPU lacks AVX-512 IFMA (callers check `crate::cpu`).
pub(crate) fn vartime_msm(scalars: &[u128], points: &[StoredPoint]) -> StoredPoint {
    assert_eq!(scalars.len(), points.len(), "one scalar per point");
    assert!(
        crate::cpu::has_avx512_ifma(),
        "the lane MSM needs AVX-512 IFMA (callers check crate::cpu)"
    );
    // SAFETY: the CPU has the features (checked above).
    unsafe { msm_lanes(scalars, points) }
}

/// `u64` words of one bucket in [`msm_lanes`]' table: lane `j` of limb `i` of
/// coordinate `c` (X, Y, Z, T) of bucket `d` is word `d · BUCKET + (5c + i) · 8 + j`, so
/// that the eight lanes' buckets of one digit are one `Point8` in memory.
const BUCKET: usize = 4 * 5 * LANES;

/// The eight lanes' buckets at `index` (`d_j · BUCKET + j` in lane `j`).
///
/// # Safety
/// Every lane's `index + BUCKET − LANES` must be inside `table`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn gather(table: &[u64], index: __m512i) -> Point8 {
    let coordinate = |c: usize| {
        Fe8::from_vectors(core::array::from_fn(|i| {
            let at = _mm512_add_epi64(index, _mm512_set1_epi64(((5 * c + i) * LANES) as i64));
            // SAFETY: the caller's bound.
            unsafe { _mm512_i64gather_epi64::<8>(at, table.as_ptr().cast()) }
        }))
    };
    Point8::from_coordinates(coordinate)
}

/// Writes `p`'s lanes to the buckets at `index` ([`gather`]'s layout).
///
/// # Safety
/// As for [`gather`]; the eight lanes' indices must differ.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn scatter(table: &mut [u64], index: __m512i, p: &Point8) {
    for (c, fe) in [&p.x, &p.y, &p.z, &p.t].into_iter().enumerate() {
        for (i, v) in fe.vectors().into_iter().enumerate() {
            let at = _mm512_add_epi64(index, _mm512_set1_epi64(((5 * c + i) * LANES) as i64));
            // SAFETY: the caller's bound.
            unsafe { _mm512_i64scatter_epi64::<8>(table.as_mut_ptr().cast(), at, v) };
        }
    }
}

/// The `Point8` of bucket row `d` (every lane's bucket for digit `d`).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn row(table: &[u64], d: usize) -> Point8 {
    let words = &table[d * BUCKET..(d + 1) * BUCKET];
    let coordinate = |c: usize| {
        Fe8::from_vectors(core::array::from_fn(|i| {
            let at = (5 * c + i) * LANES;
            from_u64s(words[at..at + LANES].try_into().expect("eight words"))
        }))
    };
    Point8::from_coordinates(coordinate)
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn msm_lanes(scalars: &[u128], points: &[StoredPoint]) -> StoredPoint {
    let c = window_bits(points.len());
    let digits = 1usize << c;
    let mask = (digits - 1) as u128;
    let windows = SCALAR_BITS.div_ceil(c);
    // Eight points to a vector, once; a partial last group is padded with the
    // identity (digit 0, added to the unused bucket 0).
    let groups: Vec<Point8> = points
        .chunks(LANES)
        .map(|chunk| {
            to_lanes(&core::array::from_fn(|j| {
                chunk.get(j).copied().unwrap_or(IDENTITY)
            }))
        })
        .collect();
    let mut identity_row = vec![0u64; BUCKET];
    {
        let id = Point8::identity();
        for (c, fe) in [&id.x, &id.y, &id.z, &id.t].into_iter().enumerate() {
            for (i, v) in fe.vectors().into_iter().enumerate() {
                let at = (5 * c + i) * LANES;
                identity_row[at..at + LANES].copy_from_slice(&to_u64s(v));
            }
        }
    }
    let mut table = vec![0u64; digits * BUCKET];
    let lane_offsets = from_u64s(core::array::from_fn(|j| j as u64));
    let mut acc = Point8::identity();
    for w in (0..windows).rev() {
        for _ in 0..c {
            acc = acc.add(&acc);
        }
        for bucket in table.chunks_mut(BUCKET) {
            bucket.copy_from_slice(&identity_row);
        }
        for (g, group) in groups.iter().enumerate() {
            let index: [u64; LANES] = core::array::from_fn(|j| {
                let d = scalars
                    .get(g * LANES + j)
                    .map_or(0, |s| (s >> (w * c) & mask) as u64);
                d * BUCKET as u64
            });
            let index = _mm512_add_epi64(from_u64s(index), lane_offsets);
            // SAFETY: lane j's index is d_j · BUCKET + j with d_j < 2^c and j < 8, so
            // index + BUCKET − 8 < 2^c · BUCKET = table.len(); the lanes' indices differ
            // in their last three bits.
            unsafe {
                let sum = gather(&table, index).add(group);
                scatter(&mut table, index, &sum);
            }
        }
        // Σ_d d B_d per lane: running sums from the top digit down.
        let mut running = Point8::identity();
        let mut total = Point8::identity();
        for d in (1..digits).rev() {
            running = running.add(&row(&table, d));
            total = total.add(&running);
        }
        acc = acc.add(&total);
    }
    // The eight lanes' sums: halve the number of points three times.
    let mut parts = from_lanes(&acc);
    let mut live = LANES;
    while live > 1 {
        live /= 2;
        let low: [StoredPoint; LANES] =
            core::array::from_fn(|j| if j < live { parts[j] } else { IDENTITY });
        let high: [StoredPoint; LANES] =
            core::array::from_fn(|j| if j < live { parts[j + live] } else { IDENTITY });
        parts = from_lanes(&to_lanes(&low).add(&to_lanes(&high)));
    }
    parts[0]
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::ristretto::RistrettoPoint;
    use curve25519_dalek::scalar::Scalar;
    use curve25519_dalek::traits::VartimeMultiscalarMul;

    use super::*;
    use crate::curve25519x8::sums::{decode_all, encode_all};
    use crate::curve25519x8::test_support::ifma_or_skip;
    use crate::rng::SessionRng;

    /// Every window width the sizes pick (and the edges: no point, one, a partial
    /// group, zero and all-ones scalars) against dalek's multi-scalar multiplication.
    #[test]
    fn lane_msm_matches_dalek() {
        if !ifma_or_skip() {
            return;
        }
        let mut rng = SessionRng::from_seed([30; 32]);
        for n in [0usize, 1, 7, 8, 9, 100, 1000, 5000] {
            let points: Vec<RistrettoPoint> = (0..n)
                .map(|_| {
                    let mut wide = [0u8; 64];
                    rng.fill(&mut wide);
                    RistrettoPoint::from_uniform_bytes(&wide)
                })
                .collect();
            let scalars: Vec<u128> = (0..n)
                .map(|k| match k % 17 {
                    0 => 0,
                    1 => u128::MAX,
                    _ => {
                        let mut b = [0u8; 16];
                        rng.fill(&mut b);
                        u128::from_le_bytes(b)
                    }
                })
                .collect();
            let encodings: Vec<[u8; 32]> = points.iter().map(|p| p.compress().to_bytes()).collect();
            let refs: Vec<&[u8; 32]> = encodings.iter().collect();
            let stored = decode_all(&refs).expect("valid encodings");
            let got = encode_all(&[vartime_msm(&scalars, &stored)]);
            let dalek_scalars = scalars.iter().map(|&s| {
                let mut b = [0u8; 32];
                b[..16].copy_from_slice(&s.to_le_bytes());
                Scalar::from_bytes_mod_order(b)
            });
            let want = RistrettoPoint::vartime_multiscalar_mul(dalek_scalars, &points);
            assert_eq!(
                got,
                want.compress().to_bytes(),
                "{n} points (window {})",
                window_bits(n)
            );
        }
    }
}
