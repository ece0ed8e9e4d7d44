//! PI-Sum end to end over the in-memory pair, checked against the plaintext answer.
#![allow(clippy::result_large_err)] // PairError carries both sides' errors; tests only.

use std::collections::HashMap;

use privset_crypto::ahe::HeId;
use privset_crypto::ahe::paillier;
use privset_crypto::cwprf::CwPrfId;
use privset_crypto::filter::{FilterKind, FilterParams};
use privset_crypto::group::GroupId;
use privset_crypto::rng::SessionRng;
use privset_net::memory::{Direction, HookAction, PairError, run_pair, run_pair_with};
use privset_protocols::input::Dataset;
use privset_protocols::pi_sum::{self, PiSumConfig, PiSumOutput, PiSumProtocol, Role};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::wire::HEADER_LEN;
use privset_protocols::{PeerMisbehaved, ProtocolError};

/// Small, fast Paillier parameters for tests (the default 3072-bit key is exercised by
/// the CLI tests and benchmarks).
fn test_config() -> PiSumConfig {
    PiSumConfig {
        paillier: paillier::Params {
            modulus_bits: 1024,
            s: 2,
        },
        ..PiSumConfig::default()
    }
}

fn id(i: u64) -> Vec<u8> {
    format!("id-{i}").into_bytes()
}

fn p1_set(ids: &[u64]) -> Dataset {
    Dataset {
        ids: ids.iter().map(|&i| id(i)).collect(),
        ..Dataset::default()
    }
}

fn p2_set(pairs: &[(u64, Vec<u64>)]) -> Dataset {
    let cols = pairs.first().map_or(1, |p| p.1.len());
    Dataset {
        ids: pairs.iter().map(|p| id(p.0)).collect(),
        columns: (0..cols)
            .map(|c| pairs.iter().map(|p| p.1[c]).collect())
            .collect(),
        column_names: (0..cols).map(|c| format!("v{c}")).collect(),
        ..Dataset::default()
    }
}

fn seed(rng: &mut SessionRng) -> [u8; 32] {
    let mut s = [0u8; 32];
    rng.fill(&mut s);
    s
}

fn run(
    c1: &PiSumConfig,
    d1: Dataset,
    c2: &PiSumConfig,
    d2: Dataset,
) -> Result<(PiSumOutput, PiSumOutput), PairError> {
    let mut rng = SessionRng::from_os();
    let mut a = pi_sum::new_party(Role::P1, c1, d1, seed(&mut rng)).unwrap();
    let mut b = pi_sum::new_party(Role::P2, c2, d2, seed(&mut rng)).unwrap();
    run_pair(a.as_mut(), b.as_mut())?;
    Ok((a.into_output().unwrap(), b.into_output().unwrap()))
}

/// Plaintext answer: cardinality and per-column sums.
fn plaintext(v: &[u64], w: &[(u64, Vec<u64>)]) -> (u64, Vec<u128>) {
    let set: std::collections::HashSet<u64> = v.iter().copied().collect();
    let cols = w.first().map_or(1, |p| p.1.len());
    let mut sums = vec![0u128; cols];
    let mut card = 0;
    for (x, t) in w {
        if set.contains(x) {
            card += 1;
            for c in 0..cols {
                sums[c] += t[c] as u128;
            }
        }
    }
    (card, sums)
}

/// Random sets of the given sizes with about `overlap` common items.
fn random_sets(
    rng: &mut SessionRng,
    n1: usize,
    n2: usize,
    overlap: usize,
    cols: usize,
    max: u64,
) -> (Vec<u64>, Vec<(u64, Vec<u64>)>) {
    let base = rng.next_u64() >> 8;
    let v: Vec<u64> = (0..n1 as u64).map(|i| base + i).collect();
    let w = (0..n2 as u64)
        .map(|j| {
            let x = if (j as usize) < overlap {
                base + j
            } else {
                base + n1 as u64 + 1000 + j
            };
            (x, (0..cols).map(|_| rng.below(max + 1)).collect())
        })
        .collect();
    (v, w)
}

/// Runs both parties and checks every output against the plaintext answer: both learn
/// the cardinality; the party entitled to the sums (P2 forward, P1 reverse) learns them
/// and the other does not.
fn check(c: &PiSumConfig, v: &[u64], w: &[(u64, Vec<u64>)]) {
    let (card, sums) = plaintext(v, w);
    let (o1, o2) = run(c, p1_set(v), c, p2_set(w)).unwrap();
    assert_eq!(o1.cardinality(), Some(card), "P1 cardinality");
    assert_eq!(o2.cardinality(), Some(card), "P2 cardinality");
    let (entitled, other) = if c.reverse { (&o1, &o2) } else { (&o2, &o1) };
    assert_eq!(
        entitled.sums().map(|s| &s.sums[..]),
        Some(&sums[..]),
        "sums"
    );
    if sums.len() == 1 {
        assert_eq!(
            entitled.sums().and_then(|s| s.single()),
            Some(sums[0]),
            "one value column: its sum"
        );
    }
    assert!(
        matches!(other, PiSumOutput::Cardinality { aborted: false, .. }),
        "only one party learns the sum: {other:?}"
    );
    assert_eq!(
        (o1.peer_items(), o2.peer_items()),
        (w.len() as u64, v.len() as u64)
    );
}

#[test]
fn edges_against_plaintext_every_he_and_z_encoding() {
    let mut rng = SessionRng::from_os();
    for he in HeId::ALL {
        for z in [
            SetEncoding::List,
            SetEncoding::Filter(FilterKind::Gcs),
            SetEncoding::Filter(FilterKind::Bloom),
        ] {
            let c = PiSumConfig {
                he,
                z_encoding: z,
                ..test_config()
            };
            // empty / empty, empty P1, empty P2
            check(&c, &[], &[]);
            check(&c, &[], &[(1, vec![5])]);
            check(&c, &[1, 2], &[]);
            // size 1, identical, disjoint
            check(&c, &[7], &[(7, vec![u32::MAX as u64])]);
            let (v, w) = random_sets(&mut rng, 50, 50, 50, 1, 1000);
            check(&c, &v, &w);
            let (v, w) = random_sets(&mut rng, 40, 60, 0, 1, 1000);
            check(&c, &v, &w);
            // random partial overlap, values at the bound
            let (v, w) = random_sets(&mut rng, 300, 200, 77, 1, u32::MAX as u64);
            check(&c, &v, &w);
        }
    }
}

#[test]
fn very_unbalanced_sets() {
    let mut rng = SessionRng::from_os();
    let c = test_config();
    let (v, w) = random_sets(&mut rng, 1, 10_000, 1, 1, 1 << 20);
    check(&c, &v, &w);
    let (mut v, w) = random_sets(&mut rng, 10_000, 1, 0, 1, 1 << 20);
    v.push(w[0].0);
    check(&c, &v, &w);
}

/// Every DDH group, the X25519 fast mode included, forward and reverse, on the edges
/// and on random sets against the plaintext answer.
#[test]
fn every_group_forward_and_reverse() {
    let mut rng = SessionRng::from_os();
    for group in CwPrfId::ALL {
        for reverse in [false, true] {
            let c = PiSumConfig {
                group,
                reverse,
                he: HeId::ElGamal,
                ..test_config()
            };
            check(&c, &[], &[]);
            check(&c, &[3], &[(3, vec![9])]);
            check(&c, &[1, 2], &[(3, vec![1])]);
            let (v, w) = random_sets(&mut rng, 120, 90, 31, 1, 1000);
            check(&c, &v, &w);
            let (v, w) = random_sets(&mut rng, 64, 64, 64, 1, 1000);
            check(&c, &v, &w);
        }
    }
    let c = PiSumConfig {
        group: CwPrfId::X25519,
        ..test_config()
    };
    let (v, w) = random_sets(&mut rng, 300, 200, 77, 2, u32::MAX as u64);
    check(&c, &v, &w);
    let (v, w) = random_sets(&mut rng, 1, 10_000, 1, 1, 1 << 20);
    check(&c, &v, &w);
}

#[test]
fn several_columns_and_sum_of_squares() {
    let mut rng = SessionRng::from_os();
    let c = PiSumConfig {
        sum_of_squares: true,
        ..test_config()
    };
    let (v, w) = random_sets(&mut rng, 200, 150, 60, 3, 10_000);
    let (card, sums) = plaintext(&v, &w);
    let (_, o2) = run(&c, p1_set(&v), &c, p2_set(&w)).unwrap();
    assert_eq!(o2.sums().map(|s| &s.sums[..]), Some(&sums[..]));
    assert_eq!(
        o2.sums().and_then(|s| s.single()),
        None,
        "`sum` only with exactly one value column"
    );
    let set: std::collections::HashSet<u64> = v.iter().copied().collect();
    let squares: Vec<u128> = (0..3)
        .map(|col| {
            w.iter()
                .filter(|p| set.contains(&p.0))
                .map(|p| (p.1[col] as u128).pow(2))
                .sum()
        })
        .collect();
    assert_eq!(
        o2.sums().and_then(|s| s.sums_of_squares.as_deref()),
        Some(&squares[..])
    );
    let var = o2.sums().and_then(|s| s.variance.clone()).unwrap();
    for col in 0..3 {
        let mean = sums[col] as f64 / card as f64;
        let expect = squares[col] as f64 / card as f64 - mean * mean;
        assert!(
            (var[col] - expect).abs() <= 1e-6 * expect.max(1.0),
            "variance column {col}"
        );
    }
}

#[test]
fn threshold_forward_aborts_and_passes() {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 50, 50, 10, 1, 100);
    let c1 = PiSumConfig {
        threshold: Some(11),
        ..test_config()
    };
    let c2 = test_config();
    let (o1, o2) = run(&c1, p1_set(&v), &c2, p2_set(&w)).unwrap();
    assert!(o1.aborted() && o2.aborted());
    assert_eq!(o1.cardinality(), Some(10));
    assert_eq!(
        o2,
        PiSumOutput::Aborted { peer_items: 50 },
        "P2 learns only that the run aborted"
    );
    let c1 = PiSumConfig {
        threshold: Some(10),
        ..test_config()
    };
    let (o1, o2) = run(&c1, p1_set(&v), &c2, p2_set(&w)).unwrap();
    assert!(!o1.aborted() && !o2.aborted());
    assert_eq!(o2.sums().map(|s| s.sums.clone()), Some(plaintext(&v, &w).1));
}

#[test]
fn reverse_variant_both_schemes_and_threshold() {
    let mut rng = SessionRng::from_os();
    let rlwe = PiSumConfig {
        he: HeId::Rlwe,
        reverse: true,
        ..test_config()
    };
    let err = pi_sum::new_party(Role::P2, &rlwe, p2_set(&[(1, vec![1])]), seed(&mut rng))
        .err()
        .expect("RLWE has no reverse variant");
    assert!(
        matches!(err, ProtocolError::Config(ref m) if m.contains("reverse")),
        "{err:?}"
    );
    for he in [HeId::Paillier, HeId::ElGamal] {
        let c = PiSumConfig {
            he,
            reverse: true,
            paillier: paillier::Params {
                modulus_bits: 1024,
                s: 1,
            },
            ..test_config()
        };
        for (n1, n2, overlap) in [
            (0, 0, 0),
            (1, 1, 1),
            (30, 40, 0),
            (60, 45, 45),
            (80, 70, 33),
        ] {
            let (v, w) = random_sets(&mut rng, n1, n2, overlap, 2, 5000);
            let (card, sums) = plaintext(&v, &w);
            let (o1, o2) = run(&c, p1_set(&v), &c, p2_set(&w)).unwrap();
            assert_eq!(
                (o1.cardinality(), o2.cardinality()),
                (Some(card), Some(card))
            );
            assert_eq!(
                o1.sums().map(|s| &s.sums[..]),
                Some(&sums[..]),
                "{he:?} reverse: P1 learns the sums"
            );
            assert!(
                matches!(o2, PiSumOutput::Cardinality { .. }),
                "P2 must not learn the sum in the reverse variant: {o2:?}"
            );
        }
        let (v, w) = random_sets(&mut rng, 30, 30, 5, 1, 10);
        let c2 = PiSumConfig {
            threshold: Some(6),
            ..c.clone()
        };
        let (o1, o2) = run(&c, p1_set(&v), &c2, p2_set(&w)).unwrap();
        assert!(o1.aborted() && o2.aborted());
        assert_eq!(o1, PiSumOutput::Aborted { peer_items: 30 });
        // One value column: P1 gets it as `sum` too.
        let (card, sums) = plaintext(&v, &w);
        let (o1, o2) = run(&c, p1_set(&v), &c, p2_set(&w)).unwrap();
        assert_eq!(
            (o1.cardinality(), o1.sums().and_then(|s| s.single())),
            (Some(card), Some(sums[0]))
        );
        assert!(matches!(o2, PiSumOutput::Cardinality { .. }), "{o2:?}");
    }
}

/// The reverse variant packs nothing, so its Paillier key is plain Paillier (`s = 1`)
/// whatever `s` the forward variant is configured with: each of P2's ciphertexts is
/// `2|n|` bits, not `(s+1)|n|`, and the answer is still the plaintext one.
#[test]
fn reverse_variant_uses_plain_paillier_whatever_s_is_configured() {
    let mut rng = SessionRng::from_os();
    let c = PiSumConfig {
        reverse: true,
        paillier: paillier::Params {
            modulus_bits: 1024,
            s: 3,
        },
        ..test_config()
    };
    assert_eq!(c.paillier_params().s, 1);
    let items = 64;
    let (v, w) = random_sets(&mut rng, items, items, 20, 1, 5000);
    let (card, sums) = plaintext(&v, &w);
    let mut a = pi_sum::new_party(Role::P1, &c, p1_set(&v), seed(&mut rng)).unwrap();
    let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), seed(&mut rng)).unwrap();
    let (_, p2_bytes) = run_pair(a.as_mut(), b.as_mut()).unwrap();
    let o1 = a.into_output().unwrap();
    assert_eq!(
        (o1.cardinality(), o1.sums().map(|s| s.sums.clone())),
        (Some(card), Some(sums))
    );
    // P2 sends one ciphertext per item; at s = 3 they alone would be 4 x 128 bytes each.
    let s3_ciphertexts = (items * 4 * 128) as u64;
    assert!(
        p2_bytes.sent < s3_ciphertexts,
        "P2 sent {} bytes: its ciphertexts are not 2 x 128 bytes",
        p2_bytes.sent
    );
}

#[test]
fn segmented_input() {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 300, 250, 150, 1, 1000);
    let names = ["north", "south", "east"];
    let seg: Vec<u32> = v.iter().map(|_| rng.below(3) as u32).collect();
    let mut d1 = p1_set(&v);
    d1.segment_of = Some(seg.clone());
    d1.segment_names = names.iter().map(|s| s.to_string()).collect();
    let c = test_config();
    let (o1, o2) = run(&c, d1, &c, p2_set(&w)).unwrap();
    let seg_of: HashMap<u64, u32> = v.iter().copied().zip(seg).collect();
    let mut card = [0u64; 3];
    let mut sum = [0u128; 3];
    for (x, t) in &w {
        if let Some(&s) = seg_of.get(x) {
            card[s as usize] += 1;
            sum[s as usize] += t[0] as u128;
        }
    }
    let s1 = o1.segments().unwrap();
    let s2 = o2.segments().unwrap();
    for s in 0..3 {
        assert_eq!(s1[s].segment, names[s]);
        assert_eq!(s1[s].cardinality, Some(card[s]));
        assert_eq!(s2[s].cardinality, Some(card[s]));
        assert_eq!(s2[s].sums.as_deref(), Some(&[sum[s]][..]));
        assert_eq!(s1[s].sums, None);
    }
    assert_eq!(o2.cardinality(), Some(card.iter().sum()));
}

/// A segmented run's P1 dataset: `v` with item `i` in segment `seg[i]` of `names`.
fn segmented_p1(v: &[u64], seg: &[u32], names: usize) -> Dataset {
    let mut d = p1_set(v);
    d.segment_of = Some(seg.to_vec());
    d.segment_names = (0..names).map(|s| format!("s{s}")).collect();
    d
}

/// Plaintext answer per segment: cardinality and sum of the first value column.
fn plaintext_segments(
    v: &[u64],
    seg: &[u32],
    names: usize,
    w: &[(u64, Vec<u64>)],
) -> (Vec<u64>, Vec<u128>) {
    let seg_of: HashMap<u64, u32> = v.iter().copied().zip(seg.iter().copied()).collect();
    let mut card = vec![0u64; names];
    let mut sum = vec![0u128; names];
    for (x, t) in w {
        if let Some(&s) = seg_of.get(x) {
            card[s as usize] += 1;
            sum[s as usize] += t[0] as u128;
        }
    }
    (card, sum)
}

/// P1 tests every item of P2 against each of the `S` segment filters, so
/// each Bloom filter in round 2 must be built for `S · n2` look-ups (`k = 40 +
/// ceil(log2(S · n2))` partitions), not `n2`; the Bloom encoding's length is exact, so
/// the message shows which. The answers still match the plaintext ones.
#[test]
fn segmented_filters_are_sized_for_every_segments_lookups() {
    let mut rng = SessionRng::from_os();
    const SEGMENTS: usize = 8;
    let (v, w) = random_sets(&mut rng, 120, 40, 30, 1, 1000);
    let seg: Vec<u32> = (0..v.len()).map(|i| (i % SEGMENTS) as u32).collect();
    let sizes: Vec<usize> = (0..SEGMENTS)
        .map(|s| seg.iter().filter(|&&x| x as usize == s).count())
        .collect();
    let (card, sum) = plaintext_segments(&v, &seg, SEGMENTS, &w);
    for kind in FilterKind::ALL {
        let c = PiSumConfig {
            z_encoding: SetEncoding::Filter(kind),
            ..test_config()
        };
        let mut a = pi_sum::new_party(
            Role::P1,
            &c,
            segmented_p1(&v, &seg, SEGMENTS),
            seed(&mut rng),
        )
        .unwrap();
        let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), seed(&mut rng)).unwrap();
        let mut filter_lens = Vec::new();
        run_pair_with(a.as_mut(), b.as_mut(), &mut |d, i, m| {
            if d == Direction::BtoA && i == 1 {
                // Round 2: bytes(pk), then bytes(filter) per segment.
                let field = |at: usize| u32::from_be_bytes(m[at..at + 4].try_into().unwrap());
                let mut at = HEADER_LEN + 4 + field(HEADER_LEN) as usize;
                for _ in 0..SEGMENTS {
                    let len = field(at) as usize;
                    filter_lens.push(len);
                    at += 4 + len;
                }
            }
            HookAction::Deliver
        })
        .unwrap();
        let lookups = SEGMENTS * w.len();
        for (&size, &len) in sizes.iter().zip(&filter_lens) {
            let sized = FilterParams::new(kind, size, lookups).max_encoded_len();
            let unsized_ = FilterParams::new(kind, size, w.len()).max_encoded_len();
            assert!(sized > unsized_, "{kind:?}: the test tells the two apart");
            if kind == FilterKind::Bloom {
                assert_eq!(len, sized, "Bloom filter for {lookups} look-ups");
            } else {
                // The GCS gap code has P = floor(log2(q · 2^40)) low bits per element,
                // so at least n · (P + 1) bits; built for n2 look-ups it would have at
                // most n · P bits (eight segments: P three bits shorter).
                let p = 127 - ((lookups as u128) << 40).leading_zeros() as usize;
                assert!(
                    len * 8 >= size * (p + 1) && len <= sized,
                    "GCS for {lookups} look-ups"
                );
            }
        }
        let (o1, o2) = (a.into_output().unwrap(), b.into_output().unwrap());
        let (s1, s2) = (o1.segments().unwrap(), o2.segments().unwrap());
        for s in 0..SEGMENTS {
            assert_eq!(
                (s1[s].cardinality, s2[s].cardinality),
                (Some(card[s]), Some(card[s]))
            );
            assert_eq!(s2[s].sums.as_deref(), Some(&[sum[s]][..]));
        }
    }
}

/// An item of P2 that two segments' Z both hold (here P1 lists the same
/// identifier in two segments; a filter's false positive does the same) is counted once,
/// in the first of them, so the segment cardinalities and sums still add up to the
/// totals.
#[test]
fn an_item_matching_two_segments_is_counted_once() {
    for z in [
        SetEncoding::List,
        SetEncoding::Filter(FilterKind::Gcs),
        SetEncoding::Filter(FilterKind::Bloom),
    ] {
        let c = PiSumConfig {
            z_encoding: z,
            he: HeId::ElGamal,
            ..test_config()
        };
        // Identifier 7 in segments 1 and 2; 3 in segment 0 only.
        let d1 = segmented_p1(&[3, 7, 7, 9], &[0, 1, 2, 2], 3);
        let w = [(3, vec![10]), (7, vec![100]), (8, vec![1000])];
        let (o1, o2) = run(&c, d1, &c, p2_set(&w)).unwrap();
        let s2 = o2.segments().unwrap();
        let cards: Vec<Option<u64>> = s2.iter().map(|s| s.cardinality).collect();
        assert_eq!(cards, [Some(1), Some(1), Some(0)], "{z:?}");
        let sums: Vec<u128> = s2.iter().map(|s| s.sums.as_ref().unwrap()[0]).collect();
        assert_eq!(sums, [10, 100, 0], "{z:?}");
        assert_eq!(o2.cardinality(), Some(2));
        assert_eq!(o2.sums().unwrap().sums, [110]);
        assert_eq!(o1.cardinality(), Some(2));
    }
}

/// With threshold N, a segment with fewer than N matches is suppressed:
/// P2 gets neither its sum nor its cardinality, and its totals cover the revealed
/// segments only (else one suppressed segment's sum would follow by subtraction); the
/// revealed segments still give the plaintext answers. Here N = 100, segment 0 holds
/// 150 matches, segment 1 a single one and segment 2 exactly 100.
#[test]
fn threshold_suppresses_segments_below_it() {
    let mut rng = SessionRng::from_os();
    for he in [HeId::Paillier, HeId::ElGamal] {
        let (v, w) = random_sets(&mut rng, 400, 300, 251, 1, 1000);
        // P2's matching items are v[0..251]: 150 in segment 0, 1 in segment 1, 100 in
        // segment 2; P1's other items go to segment 1.
        let seg: Vec<u32> = (0..v.len())
            .map(|i| match i {
                0..150 => 0,
                150 => 1,
                151..251 => 2,
                _ => 1,
            })
            .collect();
        let (card, sum) = plaintext_segments(&v, &seg, 3, &w);
        assert_eq!(card, [150, 1, 100]);
        let c1 = PiSumConfig {
            he,
            threshold: Some(100),
            ..test_config()
        };
        let c2 = PiSumConfig {
            he,
            ..test_config()
        };
        let (o1, o2) = run(&c1, segmented_p1(&v, &seg, 3), &c2, p2_set(&w)).unwrap();
        assert!(!o1.aborted() && !o2.aborted());
        let (s1, s2) = (o1.segments().unwrap(), o2.segments().unwrap());
        // The suppressed segment: nothing but the fact.
        assert!(s2[1].suppressed && s1[1].suppressed);
        assert_eq!((s2[1].cardinality, &s2[1].sums), (None, &None), "{he:?}");
        assert_eq!(s1[1].cardinality, Some(1), "P1 computed it and keeps it");
        // The revealed ones: the plaintext answers.
        for s in [0, 2] {
            assert!(!s2[s].suppressed && !s1[s].suppressed);
            assert_eq!(s2[s].cardinality, Some(card[s]));
            assert_eq!(s1[s].cardinality, Some(card[s]));
            assert_eq!(s2[s].sums.as_deref(), Some(&[sum[s]][..]), "{he:?}");
        }
        assert_eq!(
            o2.cardinality(),
            Some(250),
            "P2's total: revealed segments only"
        );
        assert_eq!(o2.sums().unwrap().sums, [sum[0] + sum[2]]);
        assert_eq!(o1.cardinality(), Some(251));

        // Every segment below N (though the total, 251, is not): the run aborts.
        let c1 = PiSumConfig {
            threshold: Some(151),
            ..c1
        };
        let (o1, o2) = run(&c1, segmented_p1(&v, &seg, 3), &c2, p2_set(&w)).unwrap();
        assert!(o1.aborted() && o2.aborted());
        assert_eq!(o2, PiSumOutput::Aborted { peer_items: 400 });
        assert!(o1.segments().unwrap().iter().all(|s| s.suppressed));
    }
}

/// A round 3 that suppresses every segment (P1 aborts instead) or an unsegmented run's
/// only one is refused by P2 with an error, not read as an empty result.
#[test]
fn a_round_3_suppressing_everything_is_refused() {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 20, 20, 10, 1, 100);
    let c = PiSumConfig {
        he: HeId::ElGamal,
        ..test_config()
    };
    let mut a = pi_sum::new_party(Role::P1, &c, p1_set(&v), seed(&mut rng)).unwrap();
    let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), seed(&mut rng)).unwrap();
    let result = run_pair_with(a.as_mut(), b.as_mut(), &mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            // Round 3's body becomes the lone segment's suppression marker (the
            // frame's length field, bytes 29..33, follows).
            m.truncate(HEADER_LEN);
            m[29..33].copy_from_slice(&8u32.to_be_bytes());
            m.extend_from_slice(&u64::MAX.to_be_bytes());
        }
        HookAction::Deliver
    });
    match result {
        Err(PairError::Failed { error, .. }) => assert!(
            matches!(
                &error,
                ProtocolError::PeerMisbehaved(PeerMisbehaved::Inconsistent(m)) if m.contains("suppresses")
            ),
            "{error:?}"
        ),
        other => panic!("expected P2 to refuse round 3, got {other:?}"),
    }
}

/// A filter run whose look-ups (segments × P2's items) exceed the filters' 2^32 ends at
/// the hellos with an error naming the Z encoding, not a panic or a weaker filter.
#[test]
fn too_many_filter_lookups_end_the_run_at_the_hellos() {
    let mut rng = SessionRng::from_os();
    let c = test_config();
    let segments = 4096;
    let seg: Vec<u32> = (0..segments as u32).collect();
    let v: Vec<u64> = (0..segments as u64).collect();
    let mut d2 = p2_set(&[(1, vec![1])]);
    // P2 announces 2^20 + 1 items: 4096 · (2^20 + 1) > 2^32. The run ends at the
    // hellos, before P2's items would be hashed.
    let items = (1 << 20) + 1;
    d2.ids = (0..items).map(id).collect();
    d2.columns = vec![vec![0; items as usize]];
    let mut a = pi_sum::new_party(
        Role::P1,
        &c,
        segmented_p1(&v, &seg, segments),
        seed(&mut rng),
    )
    .unwrap();
    let mut b = pi_sum::new_party(Role::P2, &c, d2, seed(&mut rng)).unwrap();
    match run_pair(a.as_mut(), b.as_mut()) {
        Err(PairError::Failed { error, .. }) => assert!(
            matches!(&error, ProtocolError::Incompatible(m) if m.contains("Z encoding") && m.contains("list")),
            "{error:?}"
        ),
        other => panic!("expected the hellos to refuse the run, got {other:?}"),
    }
}

/// Runs a pair with a hook and returns the error of the side that failed first.
fn run_tampered(
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> (ProtocolError, Option<ProtocolError>) {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 20, 20, 10, 1, 100);
    let c = test_config();
    let mut a = pi_sum::new_party(Role::P1, &c, p1_set(&v), seed(&mut rng)).unwrap();
    let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), seed(&mut rng)).unwrap();
    match run_pair_with(a.as_mut(), b.as_mut(), hook) {
        Err(PairError::Failed {
            error, peer_error, ..
        }) => (error, peer_error),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn tampered_truncated_replayed_and_invalid_messages_are_rejected() {
    // Truncated round 1.
    let (e, peer) = run_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m.truncate(m.len() - 5);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::WrongLength { .. })
        ),
        "{e:?}"
    );
    assert!(
        matches!(peer, Some(ProtocolError::PeerAborted(_))),
        "the other side is told why: {peer:?}"
    );
    // A bit flipped inside round 1's length field.
    let (e, _) = run_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m[31] ^= 1;
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    // The identity element injected into round 1.
    let (e, _) = run_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m[HEADER_LEN..HEADER_LEN + 32].fill(0);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidElement { .. })
        ),
        "{e:?}"
    );
    // A non-canonical element.
    let (e, _) = run_tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 1 {
            let n = m.len();
            m[n - 40..n - 8].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    // A replayed message.
    let (e, _) = run_tampered(&mut |d, i, _| {
        if d == Direction::AtoB && i == 0 {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(
                PeerMisbehaved::OutOfOrder { .. } | PeerMisbehaved::WrongSession
            )
        ),
        "{e:?}"
    );
    // Garbage instead of a frame.
    let (e, _) = run_tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 0 {
            *m = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::Malformed(_) | PeerMisbehaved::BadMagic)
        ),
        "{e:?}"
    );
    // Another protocol id.
    let (e, _) = run_tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 0 {
            m[5] = 99;
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::WrongProtocol { .. })
        ),
        "{e:?}"
    );
}

#[test]
fn mismatched_settings_and_oversized_announcements() {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 5, 5, 2, 1, 10);
    let c = test_config();
    let other = PiSumConfig {
        group: CwPrfId::Group(GroupId::P256),
        ..test_config()
    };
    match run(&c, p1_set(&v), &other, p2_set(&w)) {
        Err(PairError::Failed {
            error: ProtocolError::Incompatible(msg),
            ..
        }) => assert!(msg.contains("group"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let reverse = PiSumConfig {
        reverse: true,
        ..test_config()
    };
    assert!(matches!(
        run(&c, p1_set(&v), &reverse, p2_set(&w)),
        Err(PairError::Failed {
            error: ProtocolError::Incompatible(_),
            ..
        })
    ));
    let small = PiSumConfig {
        max_peer_items: 4,
        ..test_config()
    };
    match run(&small, p1_set(&v), &c, p2_set(&w)) {
        Err(PairError::Failed {
            error: ProtocolError::PeerMisbehaved(PeerMisbehaved::TooLarge { got: 5, limit: 4 }),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn both_parties_playing_the_same_role_is_incompatible() {
    let c = test_config();
    let mut rng = SessionRng::from_os();
    for role in [Role::P1, Role::P2] {
        let input = || match role {
            Role::P1 => p1_set(&[1, 2]),
            Role::P2 => p2_set(&[(1, vec![3])]),
        };
        let mut a = pi_sum::new_party(role, &c, input(), seed(&mut rng)).unwrap();
        let mut b = pi_sum::new_party(role, &c, input(), seed(&mut rng)).unwrap();
        let hello = a.poll_outgoing().unwrap();
        let peer = 1 - b.id();
        assert_eq!((hello.to, b.awaiting()), (peer, Some(peer)));
        match b.handle_message(peer, &hello.bytes) {
            Err(ProtocolError::Incompatible(msg)) => assert!(msg.contains("also plays"), "{msg}"),
            other => panic!("{role:?}: {other:?}"),
        }
    }
}

#[test]
fn sum_bound_is_enforced_before_sending() {
    let c = PiSumConfig {
        max_sum: Some(10),
        ..test_config()
    };
    let err = pi_sum::new_party(Role::P2, &c, p2_set(&[(1, vec![6]), (2, vec![5])]), [0; 32])
        .err()
        .unwrap();
    assert!(matches!(err, ProtocolError::Input(_)), "{err:?}");
}

#[test]
fn elgamal_refuses_undecryptable_bounds_before_sending() {
    let c = PiSumConfig {
        he: HeId::ElGamal,
        ..test_config()
    };
    // 2^32-bit values over 2^13 items can sum to 2^45: beyond ElGamal's 2^44.
    let many: Vec<(u64, Vec<u64>)> = (0..8192).map(|i| (i, vec![1])).collect();
    let err = pi_sum::new_party(Role::P2, &c, p2_set(&many), [0; 32])
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProtocolError::Config(m) if m.contains("--sum-bound")),
        "{err:?}"
    );
    // Within the bound, but the squared column would not be decryptable.
    let squares = PiSumConfig {
        max_sum: Some(1 << 30),
        sum_of_squares: true,
        ..c.clone()
    };
    let err = pi_sum::new_party(Role::P2, &squares, p2_set(&many), [0; 32])
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProtocolError::Config(m) if m.contains("squares")),
        "{err:?}"
    );
    let ok = PiSumConfig {
        max_sum: Some(1 << 30),
        ..c
    };
    assert!(pi_sum::new_party(Role::P2, &ok, p2_set(&many), [0; 32]).is_ok());
}

#[test]
fn same_seeds_replay_the_same_transcript() {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 40, 40, 20, 1, 100);
    let (s1, s2) = (seed(&mut rng), seed(&mut rng));
    let transcript = || {
        let c = test_config();
        let mut a = pi_sum::new_party(Role::P1, &c, p1_set(&v), s1).unwrap();
        let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), s2).unwrap();
        let mut log = Vec::new();
        run_pair_with(a.as_mut(), b.as_mut(), &mut |_, _, m| {
            log.push(m.clone());
            HookAction::Deliver
        })
        .unwrap();
        log
    };
    assert_eq!(
        transcript(),
        transcript(),
        "resume relies on deterministic replay"
    );
}

/// The protocols beside the deployed one: Random-OT (Fig. 3) and the encrypted Bloom
/// filter (Fig. 4).
const NEW_PROTOCOLS: [PiSumProtocol; 2] = [PiSumProtocol::Rot, PiSumProtocol::Bloom];

/// The Random-OT and encrypted-Bloom-filter protocols (Ion et al. 2020, Figs. 3-4)
/// against the plaintext answer, with each value scheme, on the edges and on random sets.
#[test]
fn new_protocols_against_plaintext() {
    let mut rng = SessionRng::from_os();
    for (protocol, he) in NEW_PROTOCOLS
        .into_iter()
        .flat_map(|p| HeId::ALL.map(|he| (p, he)))
    {
        let c = PiSumConfig {
            protocol,
            he,
            ..test_config()
        };
        check(&c, &[], &[]);
        check(&c, &[], &[(1, vec![5])]);
        check(&c, &[1, 2], &[]);
        check(&c, &[7], &[(7, vec![u32::MAX as u64])]);
        check(&c, &[7], &[(8, vec![3])]);
        let (v, w) = random_sets(&mut rng, 50, 50, 50, 1, 1000);
        check(&c, &v, &w);
        let (v, w) = random_sets(&mut rng, 40, 60, 0, 1, 1000);
        check(&c, &v, &w);
        let (v, w) = random_sets(&mut rng, 300, 200, 77, 2, u32::MAX as u64);
        check(&c, &v, &w);
    }
}

#[test]
fn new_protocols_very_unbalanced_sets() {
    let mut rng = SessionRng::from_os();
    for protocol in NEW_PROTOCOLS {
        let c = PiSumConfig {
            protocol,
            he: HeId::ElGamal,
            max_value: 1 << 20,
            ..test_config()
        };
        let (v, w) = random_sets(&mut rng, 1, 10_000, 1, 1, 1 << 20);
        check(&c, &v, &w);
        // 10,000 items of P1 make a Bloom filter of 10,000 x 1.44 x 40 positions: nine
        // chunks.
        let (mut v, w) = random_sets(&mut rng, 10_000, 1, 0, 1, 1 << 20);
        v.push(w[0].0);
        check(&c, &v, &w);
    }
}

#[test]
fn new_protocols_threshold_columns_and_squares() {
    for protocol in NEW_PROTOCOLS {
        threshold_columns_and_squares(protocol);
    }
}

fn threshold_columns_and_squares(protocol: PiSumProtocol) {
    let mut rng = SessionRng::from_os();
    let c = PiSumConfig {
        protocol,
        he: HeId::Paillier,
        sum_of_squares: true,
        max_value: 1000,
        ..test_config()
    };
    let (v, w) = random_sets(&mut rng, 80, 70, 33, 2, 1000);
    let (card, sums) = plaintext(&v, &w);
    let (o1, o2) = run(&c, p1_set(&v), &c, p2_set(&w)).unwrap();
    assert_eq!(o1.cardinality(), Some(card));
    let got = o2.sums().expect("P2 learns the sums");
    assert_eq!(got.sums, sums);
    let squares: Vec<u128> = (0..2)
        .map(|col| {
            let set: std::collections::HashSet<u64> = v.iter().copied().collect();
            w.iter()
                .filter(|(x, _)| set.contains(x))
                .map(|(_, t)| (t[col] as u128).pow(2))
                .sum()
        })
        .collect();
    assert_eq!(got.sums_of_squares.as_deref(), Some(&squares[..]));
    let strict = PiSumConfig {
        threshold: Some(card + 1),
        ..c.clone()
    };
    let (o1, o2) = run(&strict, p1_set(&v), &c, p2_set(&w)).unwrap();
    assert!(o1.aborted() && o2.aborted(), "{o1:?} {o2:?}");
    assert_eq!(o2, PiSumOutput::Aborted { peer_items: 80 });
}

#[test]
fn new_protocols_refuse_what_they_do_not_define_and_mismatches() {
    for protocol in NEW_PROTOCOLS {
        refuses_reverse_and_mismatches(protocol);
    }
}

fn refuses_reverse_and_mismatches(protocol: PiSumProtocol) {
    let mut rng = SessionRng::from_os();
    let bloom = PiSumConfig {
        protocol,
        ..test_config()
    };
    let reverse = PiSumConfig {
        reverse: true,
        ..bloom.clone()
    };
    let err = pi_sum::new_party(Role::P1, &reverse, p1_set(&[1]), seed(&mut rng))
        .err()
        .expect("the reverse variant is refused");
    assert!(
        matches!(err, ProtocolError::Config(ref m) if m.contains("reverse")),
        "{err:?}"
    );
    let (v, w) = random_sets(&mut rng, 5, 5, 2, 1, 10);
    match run(&bloom, p1_set(&v), &test_config(), p2_set(&w)) {
        Err(PairError::Failed {
            error: ProtocolError::Incompatible(msg),
            ..
        }) => assert!(msg.contains("protocol"), "{msg}"),
        other => panic!("expected a protocol mismatch, got {other:?}"),
    }
}

fn run_bloom_tampered(
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> ProtocolError {
    run_protocol_tampered(PiSumProtocol::Bloom, hook)
}

fn run_protocol_tampered(
    protocol: PiSumProtocol,
    hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
) -> ProtocolError {
    let mut rng = SessionRng::from_os();
    let (v, w) = random_sets(&mut rng, 20, 20, 10, 1, 100);
    let c = PiSumConfig {
        protocol,
        he: HeId::ElGamal,
        ..test_config()
    };
    let mut a = pi_sum::new_party(Role::P1, &c, p1_set(&v), seed(&mut rng)).unwrap();
    let mut b = pi_sum::new_party(Role::P2, &c, p2_set(&w), seed(&mut rng)).unwrap();
    match run_pair_with(a.as_mut(), b.as_mut(), hook) {
        Err(PairError::Failed { error, .. }) => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn bloom_protocol_tampered_truncated_and_replayed_messages_are_rejected() {
    // A truncated filter chunk (P1's messages: hello, key, filter, round 3).
    let e = run_bloom_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            m.truncate(m.len() - 64);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::WrongLength { .. })
        ),
        "{e:?}"
    );
    // A non-canonical point inside the filter (every position of 20 items is touched
    // with probability about 1/2, so poison them all).
    let e = run_bloom_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            for c in m[HEADER_LEN..].chunks_mut(64) {
                c[..32].fill(0xff);
            }
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidCiphertext { .. })
        ),
        "{e:?}"
    );
    // A bad ElGamal key.
    let e = run_bloom_tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m[HEADER_LEN..].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    // The filter chunk replayed.
    let e = run_bloom_tampered(&mut |d, i, _| {
        if d == Direction::AtoB && i == 2 {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    // Truncated membership message.
    let e = run_bloom_tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 1 {
            m.truncate(m.len() - 10);
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    // A membership ciphertext that is not a point.
    let e = run_bloom_tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 1 {
            // Key (4-byte length + 32 bytes) then the membership ciphertexts.
            let at = HEADER_LEN + 4 + 32;
            m[at..at + 32].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidCiphertext { .. })
        ),
        "{e:?}"
    );
}

#[test]
fn rot_protocol_tampered_truncated_and_replayed_messages_are_rejected() {
    let tampered = |hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction| {
        run_protocol_tampered(PiSumProtocol::Rot, hook)
    };
    // P1's messages: hello, OPRF base, query (rows, key, ciphertexts), round 3; P2's:
    // hello, OPRF reply, answer.
    let e = tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m.truncate(m.len() - 1);
        }
        HookAction::Deliver
    });
    assert!(matches!(e, ProtocolError::PeerMisbehaved(_)), "{e:?}");
    let e = tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            m[HEADER_LEN..].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(e, ProtocolError::PeerMisbehaved(_)),
        "OPRF base point: {e:?}"
    );
    let e = tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 1 {
            m.truncate(m.len() - 32);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(e, ProtocolError::PeerMisbehaved(_)),
        "OPRF reply: {e:?}"
    );
    let e = tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            m.truncate(m.len() - 64);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(e, ProtocolError::PeerMisbehaved(_)),
        "query: {e:?}"
    );
    let e = tampered(&mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            let n = m.len();
            m[n - 32..].fill(0xff);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(
            e,
            ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidCiphertext { .. })
        ),
        "an encrypted PRF value that is not a point: {e:?}"
    );
    let e = tampered(&mut |d, i, m| {
        if d == Direction::BtoA && i == 2 {
            m.truncate(m.len() - 3);
        }
        HookAction::Deliver
    });
    assert!(
        matches!(e, ProtocolError::PeerMisbehaved(_)),
        "answer: {e:?}"
    );
    let e = tampered(&mut |d, i, _| {
        if d == Direction::AtoB && i == 2 {
            HookAction::Duplicate
        } else {
            HookAction::Deliver
        }
    });
    assert!(
        matches!(e, ProtocolError::PeerMisbehaved(_)),
        "replayed query: {e:?}"
    );
}
