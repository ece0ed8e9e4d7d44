//! The lanes' fixed-base multiplication and ristretto255 encoding against
//! curve25519-dalek, and the curve constants against their definitions.

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rug::Integer;

use super::test_support::{field_prime, ifma_or_skip, to_integer};
use super::*;
use crate::rng::SessionRng;

#[test]
fn curve_constants_match_their_definitions() {
    let p = field_prime();
    let d = to_integer(&edwards::D);
    assert_eq!((Integer::from(&d * 121_666u32) + 121_665u32).modulo(&p), 0);
    assert_eq!(
        to_integer(&edwards::D2),
        Integer::from(&d * 2u32).modulo(&p)
    );
    let invsqrt = to_integer(&ristretto::INVSQRT_A_MINUS_D);
    // invsqrt^2 (a - d) = 1 with a = -1, and the root is the non-negative (even) one.
    let check = Integer::from(&invsqrt * &invsqrt) * (Integer::from(-1) - &d);
    assert_eq!(check.modulo(&p), 1);
    assert!(invsqrt.is_even());
}

#[test]
fn radix16_digits_recompose_the_scalar() {
    let mut rng = SessionRng::from_seed([3; 32]);
    let mut scalars = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(8u8)];
    scalars.push(Scalar::from_bytes_mod_order([0x88; 32]));
    scalars.extend((0..200).map(|_| random(&mut rng)));
    for s in scalars {
        let digits = radix16(s.as_bytes());
        assert!(digits.iter().all(|d| (-8..=8).contains(d)));
        let back = digits.iter().rev().fold(Scalar::ZERO, |acc, &d| {
            let d = if d < 0 {
                -Scalar::from(d.unsigned_abs())
            } else {
                Scalar::from(d as u8)
            };
            acc * Scalar::from(16u8) + d
        });
        assert_eq!(back, s);
    }
}

fn random(rng: &mut SessionRng) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill(&mut wide);
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// Scalars with the edges of the recoding: 0, 1, -1, all digits 8 before the carry, a
/// power of 16, then random ones.
fn scalars(n: usize, rng: &mut SessionRng) -> Vec<Scalar> {
    let edges = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from_bytes_mod_order([0x88; 32]),
        Scalar::from(1u128 << 124),
        Scalar::from(7u8),
        Scalar::from(8u8),
    ];
    let mut out: Vec<Scalar> = edges
        .iter()
        .copied()
        .cycle()
        .take(n.min(edges.len()))
        .collect();
    while out.len() < n {
        out.push(random(rng));
    }
    out
}

#[test]
fn fixed_base_products_match_dalek() {
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([5; 32]);
    let h = RISTRETTO_BASEPOINT_POINT * random(&mut rng);
    let g_table = FixedBase::new(&RISTRETTO_BASEPOINT_POINT).unwrap();
    let h_table = FixedBase::new(&h).unwrap();
    for n in [0usize, 1, 7, 8, 9, 16, 17, 33, 100] {
        let s = scalars(n, &mut rng);
        let got = mul_and_encode(&[(&h_table, &s, ROWS)]);
        for (i, s) in s.iter().enumerate() {
            assert_eq!(
                &got[32 * i..32 * i + 32],
                (h * s).compress().as_bytes(),
                "n {n} i {i}"
            );
        }
        // Two terms, the second with small scalars on one row: `s h + m G`.
        let m: Vec<Scalar> = (0..n).map(|i| Scalar::from((i % 8) as u8)).collect();
        let got = mul_and_encode(&[(&h_table, &s, ROWS), (&g_table, &m, 1)]);
        for i in 0..n {
            let want = h * s[i] + RISTRETTO_BASEPOINT_POINT * m[i];
            assert_eq!(
                &got[32 * i..32 * i + 32],
                want.compress().as_bytes(),
                "n {n} i {i}"
            );
        }
    }
    assert!(mul_and_encode(&[]).is_empty());
}

#[test]
fn every_entry_of_the_table_is_its_multiple() {
    if !ifma_or_skip() {
        return;
    }
    // Scalars j 16^i, one per entry, and their negatives: each reads exactly one entry.
    let g_table = FixedBase::new(&RISTRETTO_BASEPOINT_POINT).unwrap();
    let mut s = Vec::new();
    for i in 0..ROWS as u32 {
        for j in 1..=8u8 {
            let power = (0..i).fold(Scalar::ONE, |acc, _| acc * Scalar::from(16u8));
            s.push(Scalar::from(j) * power);
            s.push(-(Scalar::from(j) * power));
        }
    }
    let got = mul_and_encode(&[(&g_table, &s, ROWS)]);
    for (i, s) in s.iter().enumerate() {
        let want = RISTRETTO_BASEPOINT_POINT * s;
        assert_eq!(&got[32 * i..32 * i + 32], want.compress().as_bytes(), "{i}");
    }
}

#[test]
fn encoding_is_dalek_compress_for_any_representative() {
    if !ifma_or_skip() {
        return;
    }
    // Identity and small multiples, whose encodings have the edge cases of the
    // rotation; each is computed in lanes as a one-row product of the base table.
    let g_table = FixedBase::new(&RISTRETTO_BASEPOINT_POINT).unwrap();
    let small: Vec<Scalar> = (0..8u8).map(Scalar::from).collect();
    let all: Vec<Scalar> = (0..=16u8)
        .map(Scalar::from)
        .chain((1..=16u8).map(|j| -Scalar::from(j)))
        .collect();
    for (s, rows) in [(&small, 1), (&all, ROWS)] {
        let got = mul_and_encode(&[(&g_table, s, rows)]);
        for (i, s) in s.iter().enumerate() {
            let want = RistrettoPoint::mul_base(s);
            assert_eq!(&got[32 * i..32 * i + 32], want.compress().as_bytes(), "{i}");
        }
    }
}

#[test]
fn decoded_points_sum_to_dalek_sums() {
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([7; 32]);
    let points: Vec<RistrettoPoint> = (0..37)
        .map(|i| {
            if i == 5 {
                RistrettoPoint::default()
            } else {
                RISTRETTO_BASEPOINT_POINT * random(&mut rng)
            }
        })
        .collect();
    let encodings: Vec<[u8; 32]> = points.iter().map(|p| p.compress().to_bytes()).collect();
    let refs: Vec<&[u8; 32]> = encodings.iter().collect();
    let decoded = sums::decode_all(&refs).unwrap();
    // Hits in any order, several to one sum in a row, a sum with no hit.
    let mut hits: Vec<(u32, u32)> = (0..200u32).map(|i| (i * 7 % 11, i * 13 % 37)).collect();
    hits.extend([(3, 0), (3, 1), (3, 2), (3, 5)]);
    let mut acc = vec![sums::IDENTITY; 12];
    sums::add_hits(&mut acc, &decoded, &hits[..150]);
    sums::add_hits(&mut acc, &decoded, &hits[150..]);
    let mut want = vec![RistrettoPoint::default(); 12];
    for &(a, p) in &hits {
        want[a as usize] += points[p as usize];
    }
    let got = sums::encode_all(&acc);
    for (i, w) in want.iter().enumerate() {
        assert_eq!(
            &got[32 * i..32 * i + 32],
            w.compress().as_bytes(),
            "sum {i}"
        );
    }
    // Re-encoding the decoded points gives the encodings back.
    assert_eq!(sums::encode_all(&decoded), encodings.concat());
    // The sums (other representatives, Z not 1) equal the decoded points of the same
    // elements, and no other: each against the next one's.
    let want_encodings: Vec<[u8; 32]> = want.iter().map(|w| w.compress().to_bytes()).collect();
    let want_decoded = sums::decode_all(&want_encodings.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(sums::equal_all(&acc, &want_decoded), vec![true; 12]);
    let next: Vec<sums::StoredPoint> = (0..12).map(|i| want_decoded[(i + 1) % 12]).collect();
    let expect: Vec<bool> = (0..12).map(|i| want[i] == want[(i + 1) % 12]).collect();
    assert!(expect.contains(&false));
    assert_eq!(sums::equal_all(&acc, &next), expect);
}

#[test]
fn invalid_encodings_are_named_by_index() {
    if !ifma_or_skip() {
        return;
    }
    let good = RISTRETTO_BASEPOINT_POINT.compress().to_bytes();
    let mut negative = good;
    negative[0] |= 1;
    let non_canonical = [0xff; 32];
    // s = 1 is canonical and non-negative but not the encoding of any point... find a
    // canonical even s that fails to decode by search (dalek decides).
    let off_curve = (2u8..=254)
        .step_by(2)
        .map(|b| {
            let mut s = [0u8; 32];
            s[0] = b;
            s
        })
        .find(|s| {
            curve25519_dalek::ristretto::CompressedRistretto(*s)
                .decompress()
                .is_none()
        })
        .unwrap();
    for (bad, at) in [
        (negative, 9),
        (non_canonical, 0),
        (off_curve, 13),
        (off_curve, 16),
    ] {
        let mut list = vec![good; 20];
        list[at] = bad;
        let refs: Vec<&[u8; 32]> = list.iter().collect();
        assert_eq!(sums::decode_all(&refs).unwrap_err(), at);
    }
}

#[test]
fn variable_base_products_match_dalek() {
    use curve25519_dalek::traits::Identity;
    use varbase::{Scalars, mul_encoded};
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([9; 32]);
    let g_table = FixedBase::new(&RISTRETTO_BASEPOINT_POINT).unwrap();
    for n in [0usize, 1, 7, 8, 9, 16, 17, 33] {
        // The identity among the points, and the scalars' edges.
        let points: Vec<RistrettoPoint> = (0..n)
            .map(|i| match i {
                2 => RistrettoPoint::identity(),
                _ => RISTRETTO_BASEPOINT_POINT * random(&mut rng),
            })
            .collect();
        let encoded: Vec<u8> = points
            .iter()
            .flat_map(|p| p.compress().to_bytes())
            .collect();
        let each = scalars(n, &mut rng);
        let got = mul_encoded(&encoded, Scalars::Each(&each), &[]).unwrap();
        for i in 0..n {
            let want = points[i] * each[i];
            assert_eq!(
                &got[32 * i..32 * i + 32],
                want.compress().as_bytes(),
                "n {n} i {i}"
            );
        }
        // With a fixed-base term: `s_k P_k + r_k G`.
        let r = scalars(n, &mut rng);
        let got = mul_encoded(&encoded, Scalars::Each(&each), &[(&g_table, &r, ROWS)]).unwrap();
        for i in 0..n {
            let want = points[i] * each[i] + RISTRETTO_BASEPOINT_POINT * r[i];
            assert_eq!(
                &got[32 * i..32 * i + 32],
                want.compress().as_bytes(),
                "n {n} i {i}"
            );
        }
        for shared in [random(&mut rng), -Scalar::ONE, Scalar::ZERO] {
            let got = mul_encoded(&encoded, Scalars::Shared(&shared), &[]).unwrap();
            for i in 0..n {
                let want = points[i] * shared;
                assert_eq!(
                    &got[32 * i..32 * i + 32],
                    want.compress().as_bytes(),
                    "n {n} i {i}"
                );
            }
        }
    }
}

#[test]
fn a_variable_base_point_that_does_not_decode_is_named() {
    use curve25519_dalek::ristretto::CompressedRistretto;
    use varbase::{Scalars, mul_encoded};
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([10; 32]);
    let good: Vec<u8> = (0..20)
        .flat_map(|_| {
            (RISTRETTO_BASEPOINT_POINT * random(&mut rng))
                .compress()
                .to_bytes()
        })
        .collect();
    let s = random(&mut rng);
    // Canonical and even, but not a point's encoding: refused by the decoding itself.
    let off_curve = (1u8..)
        .map(|v| {
            let mut b = [0u8; 32];
            b[0] = 2 * v;
            b
        })
        .find(|b| CompressedRistretto(*b).decompress().is_none())
        .unwrap();
    let odd = {
        let mut b = [0u8; 32];
        b[0] = 1;
        b
    };
    for (at, bad) in [(0, off_curve), (13, off_curve), (19, odd), (9, [0xff; 32])] {
        let mut encoded = good.clone();
        encoded[32 * at..32 * at + 32].copy_from_slice(&bad);
        assert_eq!(
            mul_encoded(&encoded, Scalars::Shared(&s), &[]),
            Err(at),
            "{at}"
        );
    }
}

#[test]
fn double_and_encode_is_dalek_compress_of_the_double() {
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([9; 32]);
    // The identity, the base point, small multiples and random ones: 21 points (three
    // vectors, the last part-filled), each a sum of two decoded points so that Z is
    // not 1 and T is not XY's affine value.
    let parts: Vec<(RistrettoPoint, RistrettoPoint)> = (0..21u64)
        .map(|i| match i {
            0 => (RistrettoPoint::default(), RistrettoPoint::default()),
            1 => (RISTRETTO_BASEPOINT_POINT, RistrettoPoint::default()),
            2..=6 => (
                RISTRETTO_BASEPOINT_POINT * Scalar::from(i),
                -RISTRETTO_BASEPOINT_POINT * Scalar::from(i),
            ),
            _ => (
                RISTRETTO_BASEPOINT_POINT * random(&mut rng),
                RISTRETTO_BASEPOINT_POINT * random(&mut rng),
            ),
        })
        .collect();
    let encodings: Vec<[u8; 32]> = parts
        .iter()
        .flat_map(|(a, b)| [a.compress().to_bytes(), b.compress().to_bytes()])
        .collect();
    let decoded = sums::decode_all(&encodings.iter().collect::<Vec<_>>()).unwrap();
    let mut acc = vec![sums::IDENTITY; parts.len()];
    let hits: Vec<(u32, u32)> = (0..2 * parts.len() as u32).map(|p| (p / 2, p)).collect();
    sums::add_hits(&mut acc, &decoded, &hits);
    let mut got = vec![0u8; 32 * acc.len()];
    // SAFETY: the CPU has the features (checked above).
    unsafe {
        let vectors: Vec<edwards::Point8> = acc
            .chunks(lanes::LANES)
            .map(|c| {
                let mut group = [sums::IDENTITY; lanes::LANES];
                group[..c.len()].copy_from_slice(c);
                sums::to_lanes(&group)
            })
            .collect();
        lanes::store(&ristretto::double_and_encode(&vectors), &mut got);
    }
    for (i, (a, b)) in parts.iter().enumerate() {
        let want = (a + b) + (a + b);
        assert_eq!(&got[32 * i..32 * i + 32], want.compress().as_bytes(), "{i}");
    }
}
