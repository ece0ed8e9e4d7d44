//! The lanes against the RFC vectors and against the scalar references (aws-lc's
//! X25519, curve25519-dalek's `hash_to_curve`), including partly filled vectors.

use curve25519_dalek::edwards::EdwardsPoint;
use rug::Integer;
use sha2_011::Sha512;

use super::*;
use crate::curve25519x8::lanes;
use crate::curve25519x8::test_support::{field_prime, ifma_or_skip};
use crate::cwprf::x25519::scalar;
use crate::rng::SessionRng;

fn x25519_lanes(key: &[u8; 32], packed: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; packed.len()];
    // SAFETY: callers checked `ifma_or_skip`.
    unsafe { x25519(&ClampedScalar::new(key), packed, &mut out) };
    out
}

fn hash_lanes(dst: &[u8], items: &[Vec<u8>]) -> Vec<u8> {
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn run(dst: &[u8], items: &[Vec<u8>], out: &mut [u8]) {
        lanes::store(&hash_to_u(dst, items), out);
    }
    let mut out = vec![0u8; 32 * items.len()];
    // SAFETY: callers checked `ifma_or_skip`.
    unsafe { run(dst, items, &mut out) };
    out
}

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

#[test]
fn rfc7748_section_5_2_vectors() {
    if !ifma_or_skip() {
        return;
    }
    let vectors = [
        (
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ),
        (
            "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
        ),
    ];
    for (k, u, expect) in vectors {
        assert_eq!(x25519_lanes(&hex32(k), &hex32(u)), hex32(expect));
    }
}

#[test]
fn rfc7748_iterated_vectors() {
    if !ifma_or_skip() {
        return;
    }
    let mut k = [0u8; 32];
    k[0] = 9;
    let mut u = k;
    for i in 1..=1000 {
        let next: [u8; 32] = x25519_lanes(&k, &u).try_into().unwrap();
        u = k;
        k = next;
        if i == 1 {
            assert_eq!(
                k,
                hex32("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079")
            );
        }
    }
    assert_eq!(
        k,
        hex32("684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
    );
}

#[test]
fn ladder_matches_aws_lc_on_random_inputs() {
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([21; 32]);
    // 34 keys, 3,118 u-coordinates in all.
    let sizes = [
        0usize, 1, 2, 7, 8, 9, 15, 16, 17, 63, 100, 257, 1, 3, 5, 31, 1024,
    ];
    for n in sizes.iter().chain(&sizes).copied() {
        let mut key = [0u8; 32];
        rng.fill(&mut key);
        // Random bytes: canonical or not, curve or twist, bit 255 set or not.
        let mut packed = vec![0u8; 32 * n];
        rng.fill(&mut packed);
        let got = x25519_lanes(&key, &packed);
        for (i, u) in packed.chunks_exact(32).enumerate() {
            let expect = scalar::x25519(&key, u.try_into().unwrap()).unwrap_or([0; 32]);
            assert_eq!(&got[32 * i..32 * i + 32], &expect, "n {n} element {i}");
        }
    }
}

#[test]
fn small_order_inputs_give_zero() {
    if !ifma_or_skip() {
        return;
    }
    let p = field_prime();
    let small: [Integer; 5] = [
        Integer::ZERO,
        Integer::from(1),
        Integer::from(&p - 1),
        "325606250916557431795983626356110631294008115727848805560023387167927233504"
            .parse()
            .unwrap(),
        "39382357235489614581723060781553021112529911719440698176882885853963445705823"
            .parse()
            .unwrap(),
    ];
    let mut packed = Vec::new();
    for u in &small {
        let mut bytes = u.to_digits::<u8>(rug::integer::Order::Lsf);
        bytes.resize(32, 0);
        packed.extend_from_slice(&bytes);
    }
    let mut key = [0u8; 32];
    SessionRng::from_seed([22; 32]).fill(&mut key);
    assert_eq!(x25519_lanes(&key, &packed), vec![0u8; packed.len()]);
}

#[test]
fn hash_matches_dalek_edwards_suite() {
    if !ifma_or_skip() {
        return;
    }
    let mut rng = SessionRng::from_seed([23; 32]);
    // 1,245 items of 0 to 69 bytes.
    for n in [0usize, 1, 5, 8, 13, 64, 130, 1024] {
        let items: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut item = vec![0u8; i % 70];
                rng.fill(&mut item);
                item
            })
            .collect();
        let dst = b"privset-test-dst";
        let got = hash_lanes(dst, &items);
        for (i, item) in items.iter().enumerate() {
            let expect = EdwardsPoint::hash_to_curve::<Sha512>(&[item], &[dst]).to_montgomery();
            assert_eq!(
                &got[32 * i..32 * i + 32],
                expect.as_bytes(),
                "n {n} item {i}"
            );
        }
    }
}

#[test]
fn hash_matches_rfc9380_curve25519_ro_vectors() {
    if !ifma_or_skip() {
        return;
    }
    // RFC 9380 Appendix J.4.1, suite curve25519_XMD:SHA-512_ELL2_RO_: P.x (big-endian).
    let dst = b"QUUX-V01-CS02-with-curve25519_XMD:SHA-512_ELL2_RO_";
    let vectors: [(&[u8], &str); 3] = [
        (
            b"",
            "2de3780abb67e861289f5749d16d3e217ffa722192d16bbd9d1bfb9d112b98c0",
        ),
        (
            b"abc",
            "2b4419f1f2d48f5872de692b0aca72cc7b0a60915dd70bde432e826b6abc526d",
        ),
        (
            b"abcdef0123456789",
            "68ca1ea5a6acf4e9956daa101709b1eee6c1bb0df1de3b90d4602382a104c036",
        ),
    ];
    let items: Vec<Vec<u8>> = vectors.iter().map(|(m, _)| m.to_vec()).collect();
    let got = hash_lanes(dst, &items);
    for (i, (_, px)) in vectors.iter().enumerate() {
        let mut expect = hex32(px);
        expect.reverse();
        assert_eq!(&got[32 * i..32 * i + 32], &expect, "vector {i}");
    }
}

#[test]
fn oversized_dst_is_hashed_first() {
    if !ifma_or_skip() {
        return;
    }
    // RFC 9380 Sec. 5.3.3: a tag over 255 bytes is replaced by
    // SHA-512("H2C-OVERSIZE-DST-" || tag); dalek accepts the short replacement.
    use sha2_011::Digest;
    let long_dst = vec![b'x'; 300];
    let short = Sha512::new()
        .chain_update(b"H2C-OVERSIZE-DST-")
        .chain_update(&long_dst)
        .finalize();
    let items = vec![b"item".to_vec()];
    let expect = EdwardsPoint::hash_to_curve::<Sha512>(&[b"item"], &[&short[..]]).to_montgomery();
    assert_eq!(hash_lanes(&long_dst, &items), expect.as_bytes());
}

#[test]
fn sha512_lanes_match_sha2() {
    if !ifma_or_skip() {
        return;
    }
    use sha2_011::Digest;
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    fn run(prefix: &[u8; 128], msgs: &[Vec<u8>]) -> [[u8; 64]; 8] {
        let start = sha512x8::absorb_block(prefix);
        let tails: [[&[u8]; 3]; 8] = core::array::from_fn(|j| {
            let m = &msgs[j][..];
            let (a, b) = (m.len() / 3, 2 * m.len() / 3);
            [&m[..a], &m[a..b], &m[b..]]
        });
        sha512x8::finish(&start, 128, &tails)
    }
    let mut rng = SessionRng::from_seed([24; 32]);
    // Lengths around the padding boundaries (112 and 128 bytes), lanes of unequal length.
    let lengths = [
        0usize, 1, 17, 110, 111, 112, 113, 127, 128, 129, 200, 238, 239, 240, 241, 255, 256, 257,
        300, 383, 384, 400, 500, 64,
    ];
    for group in lengths.chunks(8) {
        let mut prefix = [0u8; 128];
        rng.fill(&mut prefix);
        let msgs: Vec<Vec<u8>> = group
            .iter()
            .map(|&len| {
                let mut m = vec![0u8; len];
                rng.fill(&mut m);
                m
            })
            .collect();
        // SAFETY: checked by `ifma_or_skip`.
        let got = unsafe { run(&prefix, &msgs) };
        for (j, m) in msgs.iter().enumerate() {
            let expect = Sha512::new()
                .chain_update(prefix)
                .chain_update(m)
                .finalize();
            assert_eq!(got[j][..], expect[..], "length {}", m.len());
        }
    }
}
