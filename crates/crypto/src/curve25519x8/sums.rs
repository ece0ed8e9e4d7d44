//! Decoding many ristretto255 encodings and summing chosen ones, eight at a time: what a
//! party does with an encrypted Bloom filter it receives (Ion et al. 2020, Fig. 4, P2;
//! Bay et al.'s server in de Jong's thesis, Ch. 3), where curve25519-dalek would pay an
//! inverse square root in serial arithmetic for every touched entry (about 10 µs) and
//! then one addition per hit.
//!
//! Points live outside the lanes as [`StoredPoint`]s (extended coordinates, normalized
//! limbs): the sums are keyed by item and the hits arrive in any order, so eight hits
//! are gathered into lanes, added, and scattered back. The eight hits of one batch add
//! to eight different sums.

use super::edwards::Point8;
use super::field::Fe8;
use super::lanes::{self, LANES};
use super::ristretto;

/// One point as the limbs of `(X, Y, Z, T)`, normalized.
pub(crate) type StoredPoint = [[u64; 5]; 4];

/// The identity `(0 : 1 : 1 : 0)`.
pub(crate) const IDENTITY: StoredPoint = [[0; 5], [1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0; 5]];

fn assert_cpu() {
    assert!(
        crate::cpu::has_avx512_ifma(),
        "the lane sums need AVX-512 IFMA (callers check crate::cpu)"
    );
}

/// The points of 32-byte encodings, or the index of the first one that is not a
/// canonical ristretto255 encoding.
pub(crate) fn decode_all(encodings: &[&[u8; 32]]) -> Result<Vec<StoredPoint>, usize> {
    assert_cpu();
    for (i, bytes) in encodings.iter().enumerate() {
        // Non-canonical field elements and negative `s` fail on the bytes alone.
        if !lanes::is_canonical(bytes) || bytes[0] & 1 == 1 {
            return Err(i);
        }
    }
    // SAFETY: the CPU has the features (checked above).
    unsafe { decode_lanes(encodings) }
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn decode_lanes(encodings: &[&[u8; 32]]) -> Result<Vec<StoredPoint>, usize> {
    let limbs: Vec<[u64; 5]> = encodings
        .iter()
        .map(|b| lanes::limbs_from_u_bytes(b))
        .collect();
    let mut out = Vec::with_capacity(encodings.len());
    let packed = lanes::pack(&limbs, [0; 5]);
    // Two vectors at a time, so that their inverse square roots interleave.
    for (pair, two) in packed.chunks(2).enumerate() {
        let decoded = ristretto::decode_n(&[two[0], *two.get(1).unwrap_or(&two[0])]);
        for (i, (x, y, valid)) in decoded.iter().take(two.len()).enumerate() {
            let v = 2 * pair + i;
            let used = (encodings.len() - v * LANES).min(LANES);
            if let Some(bad) = (0..used).find(|j| valid >> j & 1 == 0) {
                return Err(v * LANES + bad);
            }
            let (x, y, t) = (x.to_lanes(), y.to_lanes(), x.mul(y).to_lanes());
            for j in 0..used {
                out.push([x[j], y[j], [1, 0, 0, 0, 0], t[j]]);
            }
        }
    }
    Ok(out)
}

/// `sums[a] += points[p]` for every hit `(a, p)`, in order.
pub(crate) fn add_hits(sums: &mut [StoredPoint], points: &[StoredPoint], hits: &[(u32, u32)]) {
    assert_cpu();
    // SAFETY: the CPU has the features (checked above).
    unsafe { add_hits_lanes(sums, points, hits) }
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn add_hits_lanes(sums: &mut [StoredPoint], points: &[StoredPoint], hits: &[(u32, u32)]) {
    let mut batch: Vec<(u32, u32)> = Vec::with_capacity(LANES);
    for &(a, p) in hits {
        if batch.len() == LANES || batch.iter().any(|&(b, _)| b == a) {
            add_batch(sums, points, &batch);
            batch.clear();
        }
        batch.push((a, p));
    }
    add_batch(sums, points, &batch);
}

/// Adds up to eight hits whose sums are all different.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn add_batch(sums: &mut [StoredPoint], points: &[StoredPoint], batch: &[(u32, u32)]) {
    if batch.is_empty() {
        return;
    }
    let mut left = [IDENTITY; LANES];
    let mut right = [IDENTITY; LANES];
    for (j, &(a, p)) in batch.iter().enumerate() {
        left[j] = sums[a as usize];
        right[j] = points[p as usize];
    }
    let sum = to_lanes(&left).add(&to_lanes(&right));
    let sum = from_lanes(&sum);
    for (j, &(a, _)) in batch.iter().enumerate() {
        sums[a as usize] = sum[j];
    }
}

/// Whether `a[k]` and `b[k]` are the same ristretto255 element, for every `k`:
/// `X_a Y_b = Y_a X_b` or `X_a X_b = Y_a Y_b` (curve25519-dalek's test), four products
/// where comparing encodings would pay an inverse square root per pair.
pub(crate) fn equal_all(a: &[StoredPoint], b: &[StoredPoint]) -> Vec<bool> {
    assert_cpu();
    assert_eq!(a.len(), b.len(), "compared point for point");
    // SAFETY: the CPU has the features (checked above).
    unsafe { equal_lanes(a, b) }
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn equal_lanes(a: &[StoredPoint], b: &[StoredPoint]) -> Vec<bool> {
    let mut out = Vec::with_capacity(a.len());
    for (a, b) in a.chunks(LANES).zip(b.chunks(LANES)) {
        let mut left = [IDENTITY; LANES];
        let mut right = [IDENTITY; LANES];
        left[..a.len()].copy_from_slice(a);
        right[..b.len()].copy_from_slice(b);
        let (p, q) = (to_lanes(&left), to_lanes(&right));
        let equal = p.x.mul(&q.y).equals(&p.y.mul(&q.x)) | p.x.mul(&q.x).equals(&p.y.mul(&q.y));
        out.extend((0..a.len()).map(|j| equal >> j & 1 == 1));
    }
    out
}

/// The encodings (32 bytes each) of the points.
pub(crate) fn encode_all(points: &[StoredPoint]) -> Vec<u8> {
    assert_cpu();
    // SAFETY: the CPU has the features (checked above).
    unsafe { encode_lanes(points) }
}

#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
unsafe fn encode_lanes(points: &[StoredPoint]) -> Vec<u8> {
    let mut out = vec![0u8; 32 * points.len()];
    for (group, out) in points.chunks(2 * LANES).zip(out.chunks_mut(64 * LANES)) {
        let mut first = [IDENTITY; LANES];
        let mut second = [IDENTITY; LANES];
        for (j, p) in group.iter().enumerate() {
            if j < LANES {
                first[j] = *p;
            } else {
                second[j - LANES] = *p;
            }
        }
        let encoded = ristretto::encode(&[to_lanes(&first), to_lanes(&second)]);
        lanes::store(&encoded, out);
    }
    out
}

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn to_lanes(points: &[StoredPoint; LANES]) -> Point8 {
    let coordinate = |c: usize| Fe8::from_lanes(&core::array::from_fn(|j| points[j][c]));
    Point8::from_coordinates(coordinate)
}

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn from_lanes(p: &Point8) -> [StoredPoint; LANES] {
    let (x, y, z, t) = (
        p.x.to_lanes(),
        p.y.to_lanes(),
        p.z.to_lanes(),
        p.t.to_lanes(),
    );
    core::array::from_fn(|j| [x[j], y[j], z[j], t[j]])
}
