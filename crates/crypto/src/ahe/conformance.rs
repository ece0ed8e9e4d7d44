//! AHE conformance suite: the checks every [`SubsetSum`] scheme must pass.
//!
//! [`run_all`] panics (via `assert!`) on the first failure, so it is meant to be called
//! from a `#[test]`. It draws its randomness from fixed seeds, so a failure replays.

use super::{AdditiveHe, ColumnBounds, HeError, HeId, PartialSums, SubsetSum};
use crate::rng::SessionRng;

/// How much of the suite to run.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Column sizes beyond the small structural ones (`0, 1, L-1, L, L+1, 3L+2`).
    pub large_column: usize,
    /// Run every subset kind (empty, all, random) on every size; otherwise only a random
    /// subset on the larger sizes.
    pub all_subsets_everywhere: bool,
    /// Items in the reverse-variant columns (`encrypt_each` / `mask_each`).
    pub reverse_items: usize,
    /// Only the sizes `L + 1` (all selected) and `3L + 2` (random subset): for parameter
    /// sets where every `sum_selected` costs seconds.
    pub minimal_sizes: bool,
    /// The scheme offers the reverse variant; if not, its four methods must refuse with
    /// [`HeError::Parameters`] (checked instead of the round trips).
    pub reverse: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            large_column: 1000,
            all_subsets_everywhere: true,
            reverse_items: 24,
            minimal_sizes: false,
            reverse: true,
        }
    }
}

impl Options {
    /// A lighter run for large (slow) parameter sets.
    pub fn quick() -> Self {
        Options {
            large_column: 300,
            all_subsets_everywhere: false,
            reverse_items: 6,
            minimal_sizes: true,
            reverse: true,
        }
    }
}

/// Runs the whole suite with [`Options::default`].
pub fn run_all<H: SubsetSum>(params: &H::Params) {
    run_with::<H>(params, &Options::default());
}

/// Runs the whole suite.
pub fn run_with<H: SubsetSum>(params: &H::Params, opts: &Options) {
    let mut rng = SessionRng::from_seed([0x5a; 32]);
    let (pk, sk) = H::keygen(params, &mut rng);
    keygen_is_deterministic::<H>(params, &pk);
    round_trips::<H>(&pk, &sk);
    homomorphism::<H>(&pk, &sk);
    encodings::<H>(&pk, &sk, params);
    subset_sums::<H>(&pk, &sk, opts);
    value_bounds::<H>(&pk, &sk);
    if opts.reverse {
        reverse_variant::<H>(&pk, &sk, opts);
    } else {
        reverse_refused::<H>(&pk, &sk);
    }
    bad_inputs::<H>(&pk, &sk);
    determinism::<H>(&pk, &sk, opts);
}

fn seeded(tag: u8) -> SessionRng {
    SessionRng::from_seed([tag; 32])
}

fn enc_bytes<H: AdditiveHe>(pk: &H::PublicKey, c: &H::Ciphertext) -> Vec<u8> {
    let mut out = vec![0u8; H::ciphertext_len(pk)];
    H::encode_ciphertext(pk, c, &mut out);
    out
}

/// Largest plaintext the generic round-trip checks use (ElGamal decrypts by discrete
/// log, so it cannot be asked for u64::MAX).
fn edge_max<H: AdditiveHe>() -> u64 {
    match H::ID {
        HeId::Paillier | HeId::Rlwe => u64::MAX,
        HeId::ElGamal => u32::MAX as u64,
    }
}

pub fn keygen_is_deterministic<H: AdditiveHe>(params: &H::Params, pk: &H::PublicKey) {
    let (pk2, _sk2) = H::keygen(params, &mut SessionRng::from_seed([0x5a; 32]));
    assert_eq!(
        H::encode_public_key(pk),
        H::encode_public_key(&pk2),
        "same seed must give the same key"
    );
    let (pk3, _sk3) = H::keygen(params, &mut SessionRng::from_seed([0x5b; 32]));
    assert_ne!(H::encode_public_key(pk), H::encode_public_key(&pk3));
}

pub fn round_trips<H: AdditiveHe>(pk: &H::PublicKey, sk: &H::SecretKey) {
    let mut rng = seeded(1);
    let max = edge_max::<H>();
    for m in [0, 1, 2, 1000, max - 1, max] {
        let c = H::encrypt(pk, m, &mut rng);
        assert_eq!(H::decrypt(sk, &c, max), Ok(m), "round trip of {m}");
        assert_eq!(
            H::decrypt(sk, &c, m),
            Ok(m),
            "round trip of {m} with tight bound"
        );
    }
    // A plaintext above the stated bound is an error, not a wrong value.
    let c = H::encrypt(pk, 5, &mut rng);
    assert!(matches!(
        H::decrypt(sk, &c, 4),
        Err(HeError::OutOfRange { .. })
    ));
    // Encryption is randomized.
    let a = H::encrypt(pk, 7, &mut rng);
    let b = H::encrypt(pk, 7, &mut rng);
    assert_ne!(enc_bytes::<H>(pk, &a), enc_bytes::<H>(pk, &b));
}

pub fn homomorphism<H: AdditiveHe>(pk: &H::PublicKey, sk: &H::SecretKey) {
    let mut rng = seeded(2);
    let bound = u32::MAX as u64;
    for (a, b) in [
        (0u64, 0u64),
        (1, 0),
        (12345, 67890),
        (1 << 30, (1 << 30) + 17),
    ] {
        let ca = H::encrypt(pk, a, &mut rng);
        let cb = H::encrypt(pk, b, &mut rng);
        assert_eq!(H::decrypt(sk, &H::add(pk, &ca, &cb), bound), Ok(a + b));
    }
    for (m, k) in [(3u64, 0u64), (3, 1), (1000, 1000), (65535, 65537)] {
        let c = H::encrypt(pk, m, &mut rng);
        assert_eq!(H::decrypt(sk, &H::mul_plain(pk, &c, k), bound), Ok(m * k));
    }
    let c = H::encrypt(pk, 4242, &mut rng);
    let r = H::rerandomize(pk, &c, &mut rng);
    assert_ne!(enc_bytes::<H>(pk, &c), enc_bytes::<H>(pk, &r));
    assert_eq!(H::decrypt(sk, &r, bound), Ok(4242));
}

pub fn encodings<H: AdditiveHe>(pk: &H::PublicKey, sk: &H::SecretKey, params: &H::Params) {
    let mut rng = seeded(3);
    let len = H::ciphertext_len(pk);
    let c = H::encrypt(pk, 99, &mut rng);
    let bytes = enc_bytes::<H>(pk, &c);
    assert_eq!(bytes.len(), len);
    let d = H::decode_ciphertext(pk, &bytes).expect("own ciphertext decodes");
    assert_eq!(enc_bytes::<H>(pk, &d), bytes);
    assert_eq!(H::decrypt(sk, &d, 1000), Ok(99));

    // Wrong lengths.
    for l in [0, 1, len - 1, len + 1, 2 * len] {
        let mut b = bytes.clone();
        b.resize(l, 0);
        assert!(H::decode_ciphertext(pk, &b).is_err(), "length {l} accepted");
    }
    // Out of range / non-canonical, and zero.
    assert!(H::decode_ciphertext(pk, &vec![0xff; len]).is_err());
    assert!(H::decode_ciphertext(pk, &vec![0u8; len]).is_err());
    // Garbage never panics.
    for _ in 0..64 {
        let mut g = vec![0u8; len];
        rng.fill(&mut g);
        let _ = H::decode_ciphertext(pk, &g);
    }

    // Public keys.
    let pkb = H::encode_public_key(pk);
    let pk2 = H::decode_public_key(&pkb, params).expect("own key decodes");
    assert_eq!(H::encode_public_key(&pk2), pkb);
    let c2 = H::encrypt(&pk2, 31337, &mut rng);
    assert_eq!(H::decrypt(sk, &c2, 1 << 20), Ok(31337));
    for l in [0, 1, pkb.len() - 1, pkb.len() + 1, pkb.len() + 64] {
        let mut b = pkb.clone();
        b.resize(l, 0);
        assert!(
            H::decode_public_key(&b, params).is_err(),
            "key of {l} bytes accepted"
        );
    }
    assert!(H::decode_public_key(&vec![0u8; pkb.len()], params).is_err());
    for _ in 0..16 {
        let mut g = vec![0u8; pkb.len()];
        rng.fill(&mut g);
        let _ = H::decode_public_key(&g, params);
    }
}

/// Random values `<= max_value` (a few at the bound) and a bounds struct that fits them.
fn column(items: usize, max_value: u64, rng: &mut SessionRng) -> (ColumnBounds, Vec<u64>) {
    let values: Vec<u64> = (0..items)
        .map(|i| {
            if i % 17 == 3 {
                max_value
            } else {
                rng.below(max_value + 1)
            }
        })
        .collect();
    let bounds = ColumnBounds {
        items,
        max_value,
        max_sum: max_value as u128 * items.max(1) as u128,
    };
    (bounds, values)
}

fn random_subset(items: usize, rng: &mut SessionRng) -> Vec<usize> {
    let mut s: Vec<usize> = (0..items).filter(|_| rng.below(2) == 1).collect();
    rng.shuffle(&mut s);
    s
}

fn check_sum<H: SubsetSum>(
    pk: &H::PublicKey,
    sk: &H::SecretKey,
    bounds: &ColumnBounds,
    col: &[u8],
    values: &[u64],
    selected: &[usize],
    rng: &mut SessionRng,
) {
    let sum = H::sum_selected(pk, bounds, col, selected, rng).expect("sum_selected");
    assert_eq!(
        sum.len(),
        H::sum_ciphertexts(pk, bounds).unwrap() * H::ciphertext_len(pk)
    );
    let expect: u128 = selected.iter().map(|&i| values[i] as u128).sum();
    assert_eq!(
        H::decrypt_sum(sk, bounds, &sum),
        Ok(expect),
        "subset sum of {} of {} items",
        selected.len(),
        values.len()
    );
}

pub fn subset_sums<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey, opts: &Options) {
    let mut rng = seeded(4);
    let max_value = (1u64 << 16) - 1;
    let probe = ColumnBounds {
        items: opts.large_column,
        max_value,
        max_sum: max_value as u128 * opts.large_column as u128,
    };
    let l = H::sum_ciphertexts(pk, &probe).expect("layout");
    let mut sizes = vec![
        0,
        1,
        l.saturating_sub(1),
        l,
        l + 1,
        3 * l + 2,
        opts.large_column,
    ];
    if opts.minimal_sizes {
        sizes = vec![l + 1, 3 * l + 2];
    }
    sizes.sort_unstable();
    sizes.dedup();
    for &items in &sizes {
        let (bounds, values) = column(items, max_value, &mut rng);
        let nct = H::column_ciphertexts(pk, &bounds).unwrap();
        let col = H::encrypt_column(pk, sk, &bounds, &values, &mut rng).expect("encrypt_column");
        assert_eq!(col.len(), nct * H::ciphertext_len(pk));
        let all: Vec<usize> = (0..items).rev().collect();
        if opts.minimal_sizes {
            if items == l + 1 {
                check_sum::<H>(pk, sk, &bounds, &col, &values, &all, &mut rng);
            } else {
                let sub = random_subset(items, &mut rng);
                check_sum::<H>(pk, sk, &bounds, &col, &values, &sub, &mut rng);
            }
            continue;
        }
        let small = items <= 3 * l + 2 && items < opts.large_column;
        if opts.all_subsets_everywhere || small {
            check_sum::<H>(pk, sk, &bounds, &col, &values, &[], &mut rng);
            check_sum::<H>(pk, sk, &bounds, &col, &values, &all, &mut rng);
        }
        let sub = random_subset(items, &mut rng);
        check_sum::<H>(pk, sk, &bounds, &col, &values, &sub, &mut rng);
    }
}

pub fn value_bounds<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey) {
    let mut rng = seeded(5);
    // Every value at max_value, every item selected: the sum equals max_sum exactly.
    let items = 40;
    let max_value = (1u64 << 20) - 1;
    let bounds = ColumnBounds {
        items,
        max_value,
        max_sum: max_value as u128 * items as u128,
    };
    let values = vec![max_value; items];
    let col = H::encrypt_column(pk, sk, &bounds, &values, &mut rng).unwrap();
    let all: Vec<usize> = (0..items).collect();
    check_sum::<H>(pk, sk, &bounds, &col, &values, &all, &mut rng);
    // The key owner's input is checked against the bounds.
    let mut over = values.clone();
    over[7] = max_value + 1;
    assert!(H::encrypt_column(pk, sk, &bounds, &over, &mut rng).is_err());
    assert!(H::encrypt_each(pk, sk, &bounds, &over, &mut rng).is_err());
    let tight = ColumnBounds {
        max_sum: bounds.max_sum - 1,
        ..bounds
    };
    assert!(H::encrypt_column(pk, sk, &tight, &values, &mut rng).is_err());
    assert!(H::encrypt_column(pk, sk, &bounds, &values[1..], &mut rng).is_err());
}

pub fn reverse_variant<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey, opts: &Options) {
    let mut rng = seeded(6);
    let max_value = (1u64 << 16) - 1;
    for items in [0usize, 1, opts.reverse_items] {
        let (bounds, values) = column(items, max_value, &mut rng);
        let col = H::encrypt_each(pk, sk, &bounds, &values, &mut rng).expect("encrypt_each");
        assert_eq!(col.len(), items * H::ciphertext_len(pk));
        let (masked, masks) = H::mask_each(pk, &col, &mut rng).expect("mask_each");
        assert_eq!(masked.len(), col.len());
        assert_eq!(masks.len(), items);
        if items > 0 {
            assert_ne!(masked, col, "mask_each must re-randomize");
        }
        let subsets: Vec<Vec<usize>> =
            vec![vec![], (0..items).collect(), random_subset(items, &mut rng)];
        for sel in subsets {
            let opened = H::open_masked_sum(sk, &masked, &sel).expect("open_masked_sum");
            let got = H::unmask_sum(pk, &bounds, &opened, &masks, &sel);
            let expect: u128 = sel.iter().map(|&i| values[i] as u128).sum();
            assert_eq!(got, Ok(expect), "reverse sum of {} of {items}", sel.len());
        }
        if items > 0 {
            assert!(matches!(
                H::open_masked_sum(sk, &masked, &[items]),
                Err(HeError::BadIndex { .. })
            ));
            assert!(H::open_masked_sum(sk, &masked, &[0, 0]).is_err());
            assert!(H::open_masked_sum(sk, &masked[..masked.len() - 1], &[0]).is_err());
            let opened = H::open_masked_sum(sk, &masked, &[0]).unwrap();
            assert!(H::unmask_sum(pk, &bounds, &opened, &masks, &[items]).is_err());
            assert!(H::unmask_sum(pk, &bounds, &opened, &masks, &[0, 0]).is_err());
            assert!(H::unmask_sum(pk, &bounds, &opened[1..], &masks, &[0]).is_err());
            assert!(H::mask_each(pk, &col[1..], &mut rng).is_err());
        }
    }
}

/// A scheme without the reverse variant refuses each of its methods with a
/// [`HeError::Parameters`] that says so.
pub fn reverse_refused<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey) {
    let mut rng = seeded(6);
    let (bounds, values) = column(3, 1000, &mut rng);
    let refused = |r: Result<(), HeError>| matches!(r, Err(HeError::Parameters(_)));
    assert!(refused(
        H::encrypt_each(pk, sk, &bounds, &values, &mut rng).map(drop)
    ));
    assert!(refused(H::mask_each(pk, &[], &mut rng).map(drop)));
    assert!(refused(H::open_masked_sum(sk, &[], &[]).map(drop)));
    assert!(refused(H::unmask_sum(pk, &bounds, &[], &[], &[]).map(drop)));
}

pub fn bad_inputs<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey) {
    let mut rng = seeded(7);
    let max_value = 1000;
    let probe = ColumnBounds {
        items: 1,
        max_value,
        max_sum: 1_000_000,
    };
    let l = H::sum_ciphertexts(pk, &probe).unwrap();
    let items = 2 * l + 1;
    let (bounds, values) = column(items, max_value, &mut rng);
    let col = H::encrypt_column(pk, sk, &bounds, &values, &mut rng).unwrap();
    let ct = H::ciphertext_len(pk);
    let e = H::sum_selected(pk, &bounds, &col, &[items], &mut rng);
    assert!(matches!(e, Err(HeError::BadIndex { .. })), "{e:?}");
    assert!(H::sum_selected(pk, &bounds, &col, &[1, 0, 1], &mut rng).is_err());
    let e = H::sum_selected(pk, &bounds, &col[..col.len() - ct], &[0], &mut rng);
    assert!(matches!(e, Err(HeError::WrongCount { .. })), "{e:?}");
    let e = H::sum_selected(pk, &bounds, &col[..col.len() - 1], &[0], &mut rng);
    assert!(matches!(e, Err(HeError::BadLength { .. })), "{e:?}");
    let mut extended = col.clone();
    extended.extend_from_slice(&col[..ct]);
    assert!(H::sum_selected(pk, &bounds, &extended, &[0], &mut rng).is_err());
    // A garbage ciphertext in a selected position is rejected, not summed.
    let mut garbage = col.clone();
    garbage[..ct].fill(0xff);
    assert!(H::sum_selected(pk, &bounds, &garbage, &[0], &mut rng).is_err());

    let sum = H::sum_selected(pk, &bounds, &col, &[0, 1], &mut rng).unwrap();
    assert!(H::decrypt_sum(sk, &bounds, &sum[..sum.len() - 1]).is_err());
    assert!(H::decrypt_sum(sk, &bounds, &sum[ct..]).is_err());
    let mut twice = sum.clone();
    twice.extend_from_slice(&sum);
    assert!(H::decrypt_sum(sk, &bounds, &twice).is_err());
    assert!(H::decrypt_sum(sk, &bounds, &vec![0xff; sum.len()]).is_err());
    // A sum above max_sum (but within the layout's slot width) is reported, not returned.
    let v = (1u64 << 19) + 1;
    let wide = ColumnBounds {
        items: 2,
        max_value: v,
        max_sum: (1 << 21) - 1,
    };
    let narrow = ColumnBounds {
        max_sum: 1 << 20,
        ..wide
    };
    let col = H::encrypt_column(pk, sk, &wide, &[v, v], &mut rng).unwrap();
    let sum = H::sum_selected(pk, &wide, &col, &[0, 1], &mut rng).unwrap();
    assert_eq!(H::decrypt_sum(sk, &wide, &sum), Ok(2 * v as u128));
    assert!(matches!(
        H::decrypt_sum(sk, &narrow, &sum),
        Err(HeError::OutOfRange { .. })
    ));
}

pub fn determinism<H: SubsetSum>(pk: &H::PublicKey, sk: &H::SecretKey, opts: &Options) {
    let (bounds, values) = column(200, 5000, &mut seeded(8));
    let a = H::encrypt_column(pk, sk, &bounds, &values, &mut seeded(9)).unwrap();
    let b = H::encrypt_column(pk, sk, &bounds, &values, &mut seeded(9)).unwrap();
    let c = H::encrypt_column(pk, sk, &bounds, &values, &mut seeded(10)).unwrap();
    assert_eq!(a, b, "same seed must give the same column");
    assert_ne!(a, c);
    let sel: Vec<usize> = (0..200).step_by(3).collect();
    let s1 = H::sum_selected(pk, &bounds, &a, &sel, &mut seeded(11)).unwrap();
    let s2 = H::sum_selected(pk, &bounds, &a, &sel, &mut seeded(11)).unwrap();
    assert_eq!(s1, s2);
    if !opts.reverse {
        return;
    }
    let a = H::encrypt_each(pk, sk, &bounds, &values, &mut seeded(9)).unwrap();
    let b = H::encrypt_each(pk, sk, &bounds, &values, &mut seeded(9)).unwrap();
    assert_eq!(a, b);
}

/// [`PartialSums`]: a selection spread over columns of different sizes (empty ones
/// included) sums, once combined and finished, to the plaintext total; a partial that
/// is not one is refused, never a panic.
pub fn partial_sums<H: PartialSums>(params: &H::Params) {
    let mut rng = seeded(9);
    let (pk, sk) = H::keygen(params, &mut rng);
    let max_value = (1u64 << 20) - 1;
    let sizes = [0usize, 1, 37, 0, 250, 3];
    let total_items: usize = sizes.iter().sum();
    let max_sum = max_value as u128 * total_items as u128;
    let mut acc: Option<Vec<u8>> = None;
    let mut expect = 0u128;
    let mut last_bounds = None;
    for (c, &items) in sizes.iter().enumerate() {
        let (mut bounds, values) = column(items, max_value, &mut rng);
        bounds.max_sum = max_sum;
        let col = H::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).expect("encrypt");
        let selected: Vec<usize> = match c % 3 {
            0 => random_subset(items, &mut rng),
            1 => (0..items).collect(),
            _ => Vec::new(),
        };
        expect += selected.iter().map(|&i| values[i] as u128).sum::<u128>();
        let partial = H::partial_sum(&pk, &bounds, &col, &selected).expect("partial_sum");
        acc = Some(match acc {
            None => partial,
            Some(a) => H::add_partials(&pk, &bounds, &a, &partial).expect("add_partials"),
        });
        last_bounds = Some(bounds);
    }
    let bounds = last_bounds.expect("columns");
    let acc = acc.expect("a partial");
    let sum = H::finish_sum(&pk, &bounds, &acc, &mut rng).expect("finish_sum");
    assert_eq!(
        sum.len(),
        H::sum_ciphertexts(&pk, &bounds).unwrap() * H::ciphertext_len(&pk)
    );
    assert_eq!(H::decrypt_sum(&sk, &bounds, &sum), Ok(expect));
    // Finishing twice gives two encodings of the same sum.
    let again = H::finish_sum(&pk, &bounds, &acc, &mut rng).expect("finish_sum");
    assert_ne!(again, sum, "a finished sum is re-randomized");
    assert_eq!(H::decrypt_sum(&sk, &bounds, &again), Ok(expect));
    // Bad partials are errors.
    assert!(H::finish_sum(&pk, &bounds, &acc[1..], &mut rng).is_err());
    assert!(H::add_partials(&pk, &bounds, &acc, &acc[..acc.len() - 1]).is_err());
    assert!(H::finish_sum(&pk, &bounds, &vec![0xff; acc.len()], &mut rng).is_err());
}
