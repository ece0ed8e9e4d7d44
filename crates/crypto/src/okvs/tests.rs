use sha2::{Digest, Sha256};

use super::*;
use crate::rng::SessionRng;

fn random_u128(rng: &mut SessionRng) -> u128 {
    ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
}

fn random_vec(rng: &mut SessionRng, n: usize) -> Vec<u128> {
    (0..n).map(|_| random_u128(rng)).collect()
}

fn seed_of(i: u64) -> [u8; OKVS_SEED_LEN] {
    let mut s = [0u8; OKVS_SEED_LEN];
    s[..8].copy_from_slice(&i.to_le_bytes());
    s
}

/// Encodes random keys and values at `params` (retrying on a singular seed), checks that
/// every key decodes to its value by the batch path and, for a sample, by the naive one.
fn roundtrip(params: &OkvsParams, n: usize, rng_seed: u8) {
    let mut rng = SessionRng::from_seed([rng_seed; 32]);
    let keys = random_vec(&mut rng, n);
    let values = random_vec(&mut rng, n);
    let mut next = 0;
    let (seed, store) = encode_retrying(
        params,
        &keys,
        &values,
        || {
            next += 1;
            seed_of(next)
        },
        || random_u128(&mut rng),
    )
    .expect("encodes");
    assert_eq!(store.len(), params.columns);
    let mut out = vec![0u128; n];
    decode(params, &seed, &store, &keys, &mut out).expect("decodes");
    assert!(out == values, "{n} keys at {params:?}: a value was lost");
    for i in (0..n).step_by(n / 50 + 1) {
        assert_eq!(decode_one(params, &seed, &store, keys[i]), values[i]);
    }
}

#[test]
fn every_key_decodes_to_its_value() {
    for (i, n) in [0, 1, 2, 3, 100, 1 << 10, 1 << 16].into_iter().enumerate() {
        let params = OkvsParams::for_items(n).unwrap();
        roundtrip(&params, n, i as u8);
    }
}

#[test]
fn every_key_decodes_to_its_value_at_2_20() {
    let n = 1 << 20;
    roundtrip(&OkvsParams::for_items(n).unwrap(), n, 20);
}

/// One run at 2^24 keys (about 10 s and 2 GB on two cores): the largest size the bench
/// times, checked here too.
#[test]
fn every_key_decodes_to_its_value_at_2_24() {
    let n = 1 << 24;
    roundtrip(&OkvsParams::for_items(n).unwrap(), n, 24);
}

#[test]
fn every_band_width_roundtrips() {
    // Widths covering every number of row words (encode) and band words (decode); the
    // narrow ones fail often and are retried with fresh seeds.
    let n = 3000;
    let base = OkvsParams::for_items(n).unwrap();
    for w in [
        16, 63, 64, 65, 100, 128, 129, 192, 193, 200, 250, 252, 253, 256,
    ] {
        let params = OkvsParams {
            band_width: w,
            ..base
        };
        let mut rng = SessionRng::from_seed([w as u8; 32]);
        let keys = random_vec(&mut rng, n);
        let values = random_vec(&mut rng, n);
        let mut next = 0;
        let encoded = encode_retrying(
            &params,
            &keys,
            &values,
            || {
                next += 1;
                seed_of(next)
            },
            || random_u128(&mut rng),
        );
        let Ok((seed, store)) = encoded else {
            // w = 16 may fail eight times in a row (about 0.8 each); any wider must not.
            assert!(w <= 16, "width {w}: {encoded:?}");
            continue;
        };
        let mut out = vec![0u128; n];
        decode(&params, &seed, &store, &keys, &mut out).unwrap();
        assert!(out == values, "width {w}");
    }
}

#[test]
fn decoding_is_linear_in_the_store() {
    let mut rng = SessionRng::from_seed([3; 32]);
    for n in [10, 5000, 1 << 16] {
        let params = OkvsParams::for_items(n).unwrap();
        let p1 = random_vec(&mut rng, params.columns);
        let p2 = random_vec(&mut rng, params.columns);
        let sum: Vec<u128> = p1.iter().zip(&p2).map(|(a, b)| a ^ b).collect();
        let keys = random_vec(&mut rng, n);
        let seed = seed_of(n as u64);
        let mut d1 = vec![0; n];
        let mut d2 = vec![0; n];
        let mut ds = vec![0; n];
        decode(&params, &seed, &p1, &keys, &mut d1).unwrap();
        decode(&params, &seed, &p2, &keys, &mut d2).unwrap();
        decode(&params, &seed, &sum, &keys, &mut ds).unwrap();
        for i in 0..n {
            assert_eq!(ds[i], d1[i] ^ d2[i]);
        }
        // And each decoding is the XOR of the columns its band selects: the naive
        // decoder of one key agrees with the batch one.
        for i in (0..n).step_by(97) {
            assert_eq!(decode_one(&params, &seed, &p1, keys[i]), d1[i]);
        }
        // A key decodes to a combination of columns, never to a constant: the zero store
        // decodes to zero.
        let zero = vec![0u128; params.columns];
        decode(&params, &seed, &zero, &keys, &mut ds).unwrap();
        assert!(ds.iter().all(|&v| v == 0));
    }
}

#[test]
fn few_keys_against_a_large_store_decode_naively_per_chunk() {
    // 2000 keys spread over 2^20 columns: most chunks hold too few keys for tables.
    let mut rng = SessionRng::from_seed([4; 32]);
    let params = OkvsParams::for_items(1 << 20).unwrap();
    let store = random_vec(&mut rng, params.columns);
    let keys = random_vec(&mut rng, 2000);
    let seed = seed_of(9);
    let mut out = vec![0; keys.len()];
    decode(&params, &seed, &store, &keys, &mut out).unwrap();
    for (k, o) in keys.iter().zip(&out) {
        assert_eq!(decode_one(&params, &seed, &store, *k), *o);
    }
}

#[test]
fn many_keys_against_a_tiny_store() {
    // More keys than the table path needs, against the 48 columns of an empty OKVS: one
    // chunk, its tables reaching past the end of the store.
    let mut rng = SessionRng::from_seed([10; 32]);
    let params = OkvsParams::for_items(0).unwrap();
    let store = encode(&params, &seed_of(5), &[], &[], || random_u128(&mut rng)).unwrap();
    let keys = random_vec(&mut rng, 5000);
    let mut out = vec![0; keys.len()];
    decode(&params, &seed_of(5), &store, &keys, &mut out).unwrap();
    for (k, o) in keys.iter().zip(&out).step_by(7) {
        assert_eq!(decode_one(&params, &seed_of(5), &store, *k), *o);
    }
}

#[test]
fn keys_not_encoded_decode_and_wrong_lengths_are_refused() {
    let mut rng = SessionRng::from_seed([5; 32]);
    let n = 2000;
    let params = OkvsParams::for_items(n).unwrap();
    let keys = random_vec(&mut rng, n);
    let values = random_vec(&mut rng, n);
    let seed = seed_of(1);
    let store = encode(&params, &seed, &keys, &values, || random_u128(&mut rng)).unwrap();
    let others = random_vec(&mut rng, 3000);
    let mut out = vec![0; others.len()];
    decode(&params, &seed, &store, &others, &mut out).unwrap();
    // Random keys decode to values unrelated to the encoded ones.
    assert!(others.iter().zip(&out).all(|(_, o)| !values.contains(o)));

    let mut short = vec![0; 1];
    assert_eq!(
        decode(&params, &seed, &store[1..], &keys[..1], &mut short),
        Err(OkvsError::WrongLength {
            expected: params.columns,
            got: params.columns - 1
        })
    );
    let mut longer = store.clone();
    longer.push(0);
    assert!(matches!(
        decode(&params, &seed, &longer, &keys[..1], &mut short),
        Err(OkvsError::WrongLength { .. })
    ));
    assert_eq!(
        decode(&params, &seed, &store, &keys[..2], &mut short),
        Err(OkvsError::WrongLength {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        encode(&params, &seed, &keys, &values[1..], || 0),
        Err(OkvsError::WrongLength {
            expected: n,
            got: n - 1
        })
    );
    let more = random_vec(&mut rng, n + 1);
    assert_eq!(
        encode(&params, &seed, &more, &more, || 0),
        Err(OkvsError::TooMany {
            items: n + 1,
            max: n
        })
    );
}

#[test]
fn duplicate_keys_are_refused() {
    let mut rng = SessionRng::from_seed([6; 32]);
    for n in [2, 50, 5000, 1 << 16] {
        let params = OkvsParams::for_items(n).unwrap();
        let mut keys = random_vec(&mut rng, n);
        let values = random_vec(&mut rng, n);
        keys[n - 1] = keys[n / 3];
        assert_eq!(
            encode(&params, &seed_of(2), &keys, &values, || 0),
            Err(OkvsError::DuplicateKey),
            "{n} keys"
        );
        let mut calls = 0;
        assert_eq!(
            encode_retrying(
                &params,
                &keys,
                &values,
                || {
                    calls += 1;
                    seed_of(calls)
                },
                || 0
            ),
            Err(OkvsError::DuplicateKey)
        );
        assert_eq!(calls, 1, "a duplicate is not retried");
    }
}

#[test]
fn singular_systems_are_reported_and_retried() {
    // More keys than columns: singular for every seed, whatever the elimination does.
    let tiny = OkvsParams {
        items: 10,
        columns: 8,
        band_width: 8,
    };
    let keys: Vec<u128> = (0..10).collect();
    assert_eq!(
        encode(&tiny, &seed_of(0), &keys, &keys, || 0),
        Err(OkvsError::Singular)
    );
    let mut calls = 0;
    assert_eq!(
        encode_retrying(
            &tiny,
            &keys,
            &keys,
            || {
                calls += 1;
                seed_of(calls)
            },
            || 0
        ),
        Err(OkvsError::Singular)
    );
    assert_eq!(calls, MAX_TRIES as u64);

    // As many keys as columns with one-column bands: two keys with the same start are
    // equal rows, which the elimination must find (20 starts in 20 columns collide with
    // probability 1 - 20!/20^20).
    let one = OkvsParams {
        items: 20,
        columns: 20,
        band_width: 1,
    };
    let keys: Vec<u128> = (100..120).collect();
    assert_eq!(
        encode(&one, &seed_of(0), &keys, &keys, || 0),
        Err(OkvsError::Singular)
    );

    // Narrow bands fail often: find a seed that fails, then retry from it.
    let n = 1024;
    let params = OkvsParams {
        band_width: 24,
        ..OkvsParams::for_items(n).unwrap()
    };
    let mut rng = SessionRng::from_seed([7; 32]);
    let keys = random_vec(&mut rng, n);
    let values = random_vec(&mut rng, n);
    let bad = (0..64)
        .find(|&i| encode(&params, &seed_of(i), &keys, &values, || 0) == Err(OkvsError::Singular))
        .expect("a band of 24 fails about half the time");
    let mut seeds = vec![];
    let (seed, store) = encode_retrying(
        &params,
        &keys,
        &values,
        || {
            let s = seed_of(bad + 1000 * seeds.len() as u64);
            seeds.push(s);
            s
        },
        || random_u128(&mut rng),
    )
    .expect("one of eight tries succeeds");
    assert!(seeds.len() >= 2 && seed == *seeds.last().unwrap() && seed != seed_of(bad));
    let mut out = vec![0; n];
    decode(&params, &seed, &store, &keys, &mut out).unwrap();
    assert!(out == values);
}

#[test]
fn failures_at_reduced_width_are_as_measured() {
    // At 2^10 keys and a band of 40 the bench measured a failure rate of 3.3% (module
    // docs). Deterministic seeds make this exact; it fails if rows stop looking random
    // (say a biased band or start) or the elimination misses a dependency.
    let n = 1 << 10;
    let params = OkvsParams {
        band_width: 40,
        ..OkvsParams::for_items(n).unwrap()
    };
    let mut rng = SessionRng::from_seed([8; 32]);
    let trials = 600;
    let fails = (0..trials)
        .filter(|&t| {
            let keys = random_vec(&mut rng, n);
            encode(&params, &seed_of(t), &keys, &keys, || 0) == Err(OkvsError::Singular)
        })
        .count();
    // Expected 20; a binomial(600, 0.033) is within [7, 36] with probability > 0.999.
    assert!((7..=36).contains(&fails), "{fails} of {trials} failed");
}

#[test]
fn fill_is_called_once_per_column() {
    let n = 777;
    let params = OkvsParams::for_items(n).unwrap();
    let keys: Vec<u128> = (0..n as u128).collect();
    let mut calls = 0;
    encode(&params, &seed_of(3), &keys, &keys, || {
        calls += 1;
        calls as u128
    })
    .unwrap();
    assert_eq!(calls, params.columns);
}

#[test]
fn free_columns_are_the_fill_values() {
    // With no keys every column is free and keeps its fill value, in column order.
    let params = OkvsParams::for_items(0).unwrap();
    let mut c = 0u128;
    let store = encode(&params, &seed_of(4), &[], &[], || {
        c += 1;
        c
    })
    .unwrap();
    assert_eq!(store, (1..=params.columns as u128).collect::<Vec<_>>());
}

#[test]
fn parameters_meet_the_targets() {
    assert_eq!(
        OkvsParams::for_items(MAX_ITEMS + 1),
        Err(OkvsError::TooMany {
            items: MAX_ITEMS + 1,
            max: MAX_ITEMS
        })
    );
    for n in [
        0,
        1,
        2,
        3,
        47,
        48,
        100,
        480,
        1000,
        1 << 10,
        1 << 16,
        1 << 20,
        1 << 24,
        MAX_ITEMS,
    ] {
        let p = OkvsParams::for_items(n).unwrap();
        p.check();
        assert_eq!(p.items, n);
        assert!(p.columns >= n + MIN_SLACK, "{p:?}");
        assert!(p.band_width <= p.columns.min(MAX_BAND_WIDTH), "{p:?}");
        assert_eq!(p.encoded_len(), p.columns * 16);
        if n >= 1000 {
            assert!(p.columns as f64 <= 1.1 * n as f64 + 1.0, "{p:?}");
        }
    }
}

fn sha256_hex(store: &[u128]) -> String {
    let mut h = Sha256::new();
    for v in store {
        h.update(v.to_le_bytes());
    }
    hex::encode(h.finalize())
}

#[test]
fn recorded_vectors() {
    // A fixed shape, seed, keys, values and fill: the encoding's SHA-256 (values as 16
    // little-endian bytes each) changes if the hash of keys to rows, the layout or the
    // order of fill calls does.
    let params = OkvsParams {
        items: 1000,
        columns: 1100,
        band_width: 224,
    };
    let keys: Vec<u128> = (0..1000u128)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
        .collect();
    let values: Vec<u128> = (0..1000u128).map(|i| i << 64 | (i * i)).collect();
    let mut c = 0u128;
    let store = encode(&params, &[7; 16], &keys, &values, || {
        c += 1;
        c.wrapping_mul(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210)
    })
    .unwrap();
    assert_eq!(sha256_hex(&store), RECORDED_STORE);
    // Decoding other keys from it (the table path: more than NAIVE_KEYS keys).
    let others: Vec<u128> = (0..2000u128).map(|i| !i).collect();
    let mut out = vec![0; others.len()];
    decode(&params, &[7; 16], &store, &others, &mut out).unwrap();
    assert_eq!(sha256_hex(&out), RECORDED_DECODE);
    // The shapes `for_items` picks.
    let shapes: Vec<(usize, usize, usize)> =
        [0, 1, 100, 1 << 10, 1 << 16, 1 << 20, 1 << 24, MAX_ITEMS]
            .into_iter()
            .map(|n| {
                let p = OkvsParams::for_items(n).unwrap();
                (n, p.columns, p.band_width)
            })
            .collect();
    assert_eq!(shapes, RECORDED_SHAPES);
}

const RECORDED_STORE: &str = "6d3e720fcaa550c8b5adc1a6915154d03eada58e99dce120bb52c1397bff433f";
const RECORDED_DECODE: &str = "141bd13ff02fd70d9c545a0957630299a2756e497779fde4a638b8f01156cb70";
const RECORDED_SHAPES: [(usize, usize, usize); 8] = [
    (0, 48, 48),
    (1, 49, 49),
    (100, 148, 148),
    (1024, 1127, 192),
    (65536, 72090, 216),
    (1048576, 1153434, 232),
    (16777216, 18454938, 248),
    (268435456, 295279002, 256),
];
