//! Conformance suite for [`ThresholdAhe`] schemes.
//!
//! [`run_all`] takes the key shares of all `n` parties of one key (party `i` at index
//! `i - 1`) and panics (via `assert!`) on the first failure, so it is meant to be called
//! from a `#[test]`; call it once per `(n, t)` configuration. Randomness comes from fixed
//! seeds, so a failure replays.
//!
//! What it checks:
//!
//! * homomorphism against plaintext arithmetic: `encrypt`, `add`, `mul_scalar` (small
//!   and random full-size scalars, negation), `rerandomize`, read back with `combine` and
//!   `is_zero`;
//! * thresholds: every (or, for many parties, many random) qualifying set of shares, in
//!   any order, decrypts correctly; fewer than `t` shares, duplicates and unknown parties
//!   are errors, never a plaintext;
//! * malicious shares: a share computed for another ciphertext, or with any byte of its
//!   value or proof changed, is rejected with [`TaheError::BadShare`] naming its party,
//!   even when enough other valid shares are present;
//! * re-randomization: the result differs from its input and decrypts the same. That it
//!   is *unlinkable* is a property of the construction, not testable here: every scheme
//!   adds an encryption of zero with fresh randomness, so the output is distributed as a
//!   fresh encryption of the plaintext (exactly for ElGamal; for Paillier under the DJN
//!   short-exponent assumption, `tahe::paillier`'s "Encryption randomness");
//! * polynomials: `eval_polynomial` against plaintext arithmetic, and
//!   `eval_polynomials` equal to it job by job;
//! * running sums (`sums_add`): hits in any order, entries hit more than once, two
//!   messages and an untouched sum, against plaintext sums; an invalid entry is an error
//!   naming it, but only when a hit touches it;
//! * encodings: ciphertexts, shares and public keys round-trip; wrong lengths, all-zero,
//!   all-`0xff`, truncated, extended and random byte strings are rejected or decoded
//!   without panics.

use super::{TaheError, ThresholdAhe};
use crate::rng::SessionRng;

/// Largest plaintext the suite decrypts with `combine` (ElGamal decrypts by discrete
/// logarithm).
const MAX: u64 = 1 << 24;

fn seeded(tag: u8) -> SessionRng {
    SessionRng::from_seed([tag; 32])
}

/// Runs every check on the key whose shares are `shares` (all `n` of them, in order).
pub fn run_all<S: ThresholdAhe>(shares: &[S::KeyShare]) {
    let pk = S::share_public_key(&shares[0]).clone();
    let n = S::parties(&pk);
    let t = S::threshold(&pk);
    assert_eq!(shares.len(), n as usize, "pass the shares of all parties");
    for (i, ks) in shares.iter().enumerate() {
        assert_eq!(S::share_index(ks), i as u32 + 1, "shares in party order");
        assert_eq!(
            S::encode_public_key(S::share_public_key(ks)),
            S::encode_public_key(&pk),
            "all shares of one key"
        );
    }
    assert!(t >= 1 && t <= n);
    homomorphism::<S>(&pk, shares);
    thresholds::<S>(&pk, shares);
    malicious_shares::<S>(&pk, shares);
    rerandomization::<S>(&pk, shares);
    encodings::<S>(&pk, shares);
    bulk::<S>(&pk, shares);
    sums::<S>(&pk, shares);
    mesh::<S>(&pk, shares);
    dishonest_relay::<S>(&pk, shares);
}

/// Shares of `c` from the parties in `set` (1-based).
pub fn shares_of<S: ThresholdAhe>(
    shares: &[S::KeyShare],
    c: &S::Ciphertext,
    set: &[u32],
    rng: &mut SessionRng,
) -> Vec<S::DecryptionShare> {
    set.iter()
        .map(|&i| S::decryption_share(&shares[i as usize - 1], c, rng))
        .collect()
}

/// Decrypts with the first `t` parties.
fn dec<S: ThresholdAhe>(
    pk: &S::PublicKey,
    shares: &[S::KeyShare],
    c: &S::Ciphertext,
    rng: &mut SessionRng,
) -> Result<u64, TaheError> {
    let set: Vec<u32> = (1..=S::threshold(pk)).collect();
    S::combine(pk, c, &shares_of::<S>(shares, c, &set, rng), MAX)
}

fn zero<S: ThresholdAhe>(
    pk: &S::PublicKey,
    shares: &[S::KeyShare],
    c: &S::Ciphertext,
    rng: &mut SessionRng,
) -> bool {
    // The last t parties, to vary the set.
    let n = S::parties(pk);
    let set: Vec<u32> = (n - S::threshold(pk) + 1..=n).collect();
    S::is_zero(pk, c, &shares_of::<S>(shares, c, &set, rng)).expect("is_zero")
}

pub fn homomorphism<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(1);
    let sc = |v: u64| S::scalar_from_u64(pk, v);
    for m in [0u64, 1, 2, 1000, MAX - 1, MAX] {
        let c = S::encrypt(pk, &sc(m), &mut rng);
        assert_eq!(
            dec::<S>(pk, shares, &c, &mut rng),
            Ok(m),
            "round trip of {m}"
        );
        assert_eq!(
            zero::<S>(pk, shares, &c, &mut rng),
            m == 0,
            "is_zero of {m}"
        );
    }
    // Above the caller's bound: an error, not a value.
    let c = S::encrypt(pk, &sc(MAX + 1), &mut rng);
    assert_eq!(
        dec::<S>(pk, shares, &c, &mut rng),
        Err(TaheError::OutOfRange { max: MAX })
    );
    // Randomized encryption.
    let a = S::encrypt(pk, &sc(7), &mut rng);
    let b = S::encrypt(pk, &sc(7), &mut rng);
    assert_ne!(S::encode_ciphertext(pk, &a), S::encode_ciphertext(pk, &b));

    for (a, b) in [
        (0u64, 0u64),
        (1, 0),
        (12345, 67890),
        (1 << 22, (1 << 22) + 17),
    ] {
        let ca = S::encrypt(pk, &sc(a), &mut rng);
        let cb = S::encrypt(pk, &sc(b), &mut rng);
        let sum = S::add(pk, &ca, &cb);
        assert_eq!(dec::<S>(pk, shares, &sum, &mut rng), Ok(a + b), "{a} + {b}");
    }
    for (m, k) in [(3u64, 1u64), (3, 2), (1000, 1000), (4095, 4097)] {
        let c = S::encrypt(pk, &sc(m), &mut rng);
        let p = S::mul_scalar(pk, &c, &sc(k));
        assert_eq!(dec::<S>(pk, shares, &p, &mut rng), Ok(m * k), "{m} * {k}");
    }
    // Multiplying by 0 then re-randomizing gives an encryption of 0.
    let c = S::encrypt(pk, &sc(99), &mut rng);
    let z = S::rerandomize(pk, &S::mul_scalar(pk, &c, &sc(0)), &mut rng);
    assert!(zero::<S>(pk, shares, &z, &mut rng));
    // Negation: a + (-a) = 0, a + (-b) != 0; and (b - a) read back.
    for (a, b) in [(5u64, 5u64), (5, 6), (0, 1), (1 << 20, 3)] {
        let ca = S::encrypt(pk, &sc(a), &mut rng);
        let neg_b = S::encrypt(pk, &S::scalar_neg(pk, &sc(b)), &mut rng);
        let d = S::add(pk, &ca, &neg_b);
        assert_eq!(zero::<S>(pk, shares, &d, &mut rng), a == b, "{a} - {b}");
        if a >= b {
            assert_eq!(dec::<S>(pk, shares, &d, &mut rng), Ok(a - b));
        } else {
            // A "negative" plaintext is a huge ring element: out of range, not a value.
            assert!(matches!(
                dec::<S>(pk, shares, &d, &mut rng),
                Err(TaheError::OutOfRange { .. })
            ));
        }
    }
    // Decryption to zero (de Jong, ShDec0): a random unit keeps zero at zero and a
    // non-zero plaintext non-zero; k*a + (-k)*a = 0 for a full-size k.
    for m in [0u64, 1, 42, MAX] {
        let r = S::random_unit(pk, &mut rng);
        let c = S::encrypt(pk, &sc(m), &mut rng);
        let rc = S::rerandomize(pk, &S::mul_scalar(pk, &c, &r), &mut rng);
        assert_eq!(zero::<S>(pk, shares, &rc, &mut rng), m == 0, "r * {m}");
        let back = S::add(pk, &rc, &S::mul_scalar(pk, &c, &S::scalar_neg(pk, &r)));
        assert!(zero::<S>(pk, shares, &back, &mut rng), "r*{m} - r*{m}");
    }
    let r1 = S::random_unit(pk, &mut rng);
    let r2 = S::random_unit(pk, &mut rng);
    assert_ne!(r1, r2, "random units repeat");
}

/// `C(n, t)` subsets of `1..=n` of size `t`, or `limit` random ones if there are more.
fn subsets(n: u32, t: u32, limit: usize, rng: &mut SessionRng) -> Vec<Vec<u32>> {
    let mut all = Vec::new();
    let mut cur = Vec::new();
    fn rec(start: u32, n: u32, t: u32, cur: &mut Vec<u32>, all: &mut Vec<Vec<u32>>, limit: usize) {
        if all.len() > limit {
            return;
        }
        if cur.len() == t as usize {
            all.push(cur.clone());
            return;
        }
        for i in start..=n {
            cur.push(i);
            rec(i + 1, n, t, cur, all, limit);
            cur.pop();
        }
    }
    rec(1, n, t, &mut cur, &mut all, limit);
    if all.len() <= limit {
        return all;
    }
    (0..limit)
        .map(|_| {
            let mut p: Vec<u32> = rng
                .permutation(n as usize)
                .into_iter()
                .map(|i| i + 1)
                .collect();
            p.truncate(t as usize);
            p
        })
        .collect()
}

pub fn thresholds<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(2);
    let n = S::parties(pk);
    let t = S::threshold(pk);
    let m = 31337u64;
    let c = S::encrypt(pk, &S::scalar_from_u64(pk, m), &mut rng);
    let all = shares_of::<S>(shares, &c, &(1..=n).collect::<Vec<_>>(), &mut rng);
    for s in &all {
        S::verify_share(pk, &c, s).expect("honest share verifies");
    }
    let pick = |set: &[u32]| -> Vec<S::DecryptionShare> {
        set.iter().map(|&i| all[i as usize - 1].clone()).collect()
    };
    // Every qualifying set (or 24 random ones), in a shuffled order.
    for mut set in subsets(n, t, 24, &mut rng) {
        rng.shuffle(&mut set);
        assert_eq!(S::combine(pk, &c, &pick(&set), MAX), Ok(m), "set {set:?}");
    }
    // More than t shares, and all n.
    let mut more: Vec<u32> = (1..=n).collect();
    rng.shuffle(&mut more);
    assert_eq!(S::combine(pk, &c, &pick(&more), MAX), Ok(m));
    more.truncate((t as usize + 1).min(n as usize));
    assert_eq!(S::combine(pk, &c, &pick(&more), MAX), Ok(m));
    assert_eq!(S::is_zero(pk, &c, &pick(&more)), Ok(false));
    // Fewer than t: an error, never a plaintext.
    for k in 0..t {
        let set: Vec<u32> = (n - k + 1..=n).collect();
        let few = pick(&set);
        assert_eq!(
            S::combine(pk, &c, &few, MAX),
            Err(TaheError::TooFewShares {
                got: k as usize,
                need: t as usize
            }),
            "{k} shares"
        );
        assert!(matches!(
            S::is_zero(pk, &c, &few),
            Err(TaheError::TooFewShares { .. })
        ));
    }
    // Duplicates do not count twice.
    let mut dup = pick(&(1..=t).collect::<Vec<_>>());
    dup.push(all[0].clone());
    assert_eq!(
        S::combine(pk, &c, &dup, MAX),
        Err(TaheError::DuplicateShare { party: 1 })
    );
    if t > 1 {
        // t - 1 distinct parties plus a duplicate: still too few, and reported as such
        // or as a duplicate, never decrypted.
        let mut short = pick(&(1..t).collect::<Vec<_>>());
        short.push(all[0].clone());
        assert!(S::combine(pk, &c, &short, MAX).is_err());
    }
}

pub fn malicious_shares<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(3);
    let n = S::parties(pk);
    let t = S::threshold(pk);
    let sc = |v: u64| S::scalar_from_u64(pk, v);
    let c = S::encrypt(pk, &sc(5), &mut rng);
    let other = S::encrypt(pk, &sc(6), &mut rng);
    let set: Vec<u32> = (1..=n).collect();
    let good = shares_of::<S>(shares, &c, &set, &mut rng);
    // A share computed for another ciphertext (same plaintext or not) is detected and
    // its party named, wherever it sits and however many valid shares surround it.
    let rerand = S::rerandomize(pk, &c, &mut rng);
    for (bad_party, wrong_ct) in [(1u32, &other), (n, &rerand), (n.div_ceil(2), &other)] {
        let mut v = good.clone();
        v[bad_party as usize - 1] =
            S::decryption_share(&shares[bad_party as usize - 1], wrong_ct, &mut rng);
        let named = |r: Result<u64, TaheError>| matches!(r, Err(TaheError::BadShare { party, .. }) if party == bad_party);
        assert!(
            named(S::combine(pk, &c, &v, MAX)),
            "party {bad_party} named"
        );
        assert!(matches!(
            S::is_zero(pk, &c, &v),
            Err(TaheError::BadShare { party, .. }) if party == bad_party
        ));
        assert!(S::verify_share(pk, &c, &v[bad_party as usize - 1]).is_err());
        // Only t shares, the bad one among them.
        let mut few: Vec<S::DecryptionShare> = v
            .iter()
            .filter(|s| S::share_party(s) != bad_party)
            .take(t as usize - 1)
            .cloned()
            .collect();
        few.push(v[bad_party as usize - 1].clone());
        assert!(
            named(S::combine(pk, &c, &few, MAX)),
            "party {bad_party} named among t"
        );
    }
    // Every byte of the value and proof (after the 4-byte party index) matters: a change
    // either fails to decode or fails to verify, naming the party.
    let len = S::share_len(pk);
    let victim = t.min(2);
    let bytes = S::encode_share(pk, &good[victim as usize - 1]);
    assert_eq!(bytes.len(), len);
    let positions: Vec<usize> = {
        let mut p: Vec<usize> = (4..len).step_by(((len - 4) / 48).max(1)).collect();
        p.extend([4, 5, len / 2, len - 2, len - 1]);
        p
    };
    for pos in positions {
        for flip in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[pos] ^= flip;
            let Ok(s) = S::decode_share(pk, &b) else {
                continue;
            };
            let mut v = good.clone();
            v[victim as usize - 1] = s;
            assert!(
                matches!(S::combine(pk, &c, &v, MAX), Err(TaheError::BadShare { party, .. }) if party == victim),
                "tampered byte {pos} of party {victim}'s share not detected"
            );
        }
    }
    // Changing the party index: the share no longer verifies for its new claimant.
    if n >= 2 {
        let mut b = bytes.clone();
        let other_party = if victim == 1 { 2u32 } else { 1 };
        b[..4].copy_from_slice(&other_party.to_be_bytes());
        let s = S::decode_share(pk, &b).expect("index in range");
        assert_eq!(S::share_party(&s), other_party);
        assert!(matches!(
            S::verify_share(pk, &c, &s),
            Err(TaheError::BadShare { party, .. }) if party == other_party
        ));
        let mut v: Vec<S::DecryptionShare> = good
            .iter()
            .filter(|x| S::share_party(x) != other_party)
            .cloned()
            .collect();
        v.push(s);
        assert!(matches!(
            S::combine(pk, &c, &v, MAX),
            Err(TaheError::BadShare { party, .. }) if party == other_party
        ));
    }
}

pub fn rerandomization<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(4);
    for m in [0u64, 4242] {
        let c = S::encrypt(pk, &S::scalar_from_u64(pk, m), &mut rng);
        let r1 = S::rerandomize(pk, &c, &mut rng);
        let r2 = S::rerandomize(pk, &c, &mut rng);
        let e = |x: &S::Ciphertext| S::encode_ciphertext(pk, x);
        assert_ne!(e(&c), e(&r1));
        assert_ne!(e(&r1), e(&r2));
        assert!(c != r1);
        assert_eq!(dec::<S>(pk, shares, &r1, &mut rng), Ok(m));
        assert_eq!(dec::<S>(pk, shares, &r2, &mut rng), Ok(m));
        // Shares of the original do not decrypt the re-randomized ciphertext.
        let set: Vec<u32> = (1..=S::threshold(pk)).collect();
        let old = shares_of::<S>(shares, &c, &set, &mut rng);
        assert!(matches!(
            S::combine(pk, &r1, &old, MAX),
            Err(TaheError::BadShare { .. })
        ));
    }
    // Deterministic in the seed (replayable parties).
    let c = S::encrypt(pk, &S::scalar_from_u64(pk, 1), &mut seeded(9));
    let d = S::encrypt(pk, &S::scalar_from_u64(pk, 1), &mut seeded(9));
    assert!(c == d);
}

fn no_panic_garbage(len: usize, rng: &mut SessionRng, f: impl Fn(&[u8])) {
    for l in [0, 1, len.saturating_sub(1), len, len + 1] {
        let mut g = vec![0u8; l];
        rng.fill(&mut g);
        f(&g);
    }
    for _ in 0..32 {
        let mut g = vec![0u8; len];
        rng.fill(&mut g);
        f(&g);
    }
}

pub fn encodings<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(5);
    let n = S::parties(pk);
    // Ciphertexts.
    let len = S::ciphertext_len(pk);
    let c = S::encrypt(pk, &S::scalar_from_u64(pk, 99), &mut rng);
    let b = S::encode_ciphertext(pk, &c);
    assert_eq!(b.len(), len);
    let d = S::decode_ciphertext(pk, &b).expect("own ciphertext decodes");
    assert!(d == c);
    assert_eq!(S::encode_ciphertext(pk, &d), b);
    assert_eq!(dec::<S>(pk, shares, &d, &mut rng), Ok(99));
    for l in [0, 1, len - 1, len + 1, 2 * len] {
        let mut x = b.clone();
        x.resize(l, 0);
        assert!(
            S::decode_ciphertext(pk, &x).is_err(),
            "ciphertext of {l} bytes"
        );
    }
    assert!(S::decode_ciphertext(pk, &vec![0xff; len]).is_err());
    assert!(S::decode_ciphertext(pk, &vec![0u8; len]).is_err());
    no_panic_garbage(len, &mut rng, |g| {
        let _ = S::decode_ciphertext(pk, g);
    });

    // Decryption shares.
    let slen = S::share_len(pk);
    let s = S::decryption_share(&shares[0], &c, &mut rng);
    let sb = S::encode_share(pk, &s);
    assert_eq!(sb.len(), slen);
    let s2 = S::decode_share(pk, &sb).expect("own share decodes");
    assert_eq!(S::encode_share(pk, &s2), sb);
    S::verify_share(pk, &c, &s2).expect("decoded share verifies");
    for l in [0, 1, 4, slen - 1, slen + 1, 2 * slen] {
        let mut x = sb.clone();
        x.resize(l, 0);
        assert!(S::decode_share(pk, &x).is_err(), "share of {l} bytes");
    }
    assert!(S::decode_share(pk, &vec![0xff; slen]).is_err());
    assert!(S::decode_share(pk, &vec![0u8; slen]).is_err());
    for bad_party in [0u32, n + 1, u32::MAX] {
        let mut x = sb.clone();
        x[..4].copy_from_slice(&bad_party.to_be_bytes());
        assert!(matches!(
            S::decode_share(pk, &x),
            Err(TaheError::UnknownParty { .. })
        ));
    }
    // Value / proof all-ones: out of range (or non-canonical).
    let mut x = sb.clone();
    x[4..].fill(0xff);
    assert!(S::decode_share(pk, &x).is_err());
    no_panic_garbage(slen, &mut rng, |g| {
        let _ = S::decode_share(pk, g);
    });

    // Public keys.
    let pkb = S::encode_public_key(pk);
    let pk2 = S::decode_public_key(&pkb, n).expect("own key decodes");
    assert_eq!(S::encode_public_key(&pk2), pkb);
    assert_eq!(S::parties(&pk2), n);
    assert_eq!(S::threshold(&pk2), S::threshold(pk));
    // A decoded key verifies and combines shares made under the original.
    let set: Vec<u32> = (1..=S::threshold(pk)).collect();
    let sh = shares_of::<S>(shares, &c, &set, &mut rng);
    assert_eq!(S::combine(&pk2, &c, &sh, MAX), Ok(99));
    let c2 = S::encrypt(&pk2, &S::scalar_from_u64(pk, 31337), &mut rng);
    assert_eq!(dec::<S>(pk, shares, &c2, &mut rng), Ok(31337));
    // Too many parties for the caller's bound.
    if n > 1 {
        assert!(S::decode_public_key(&pkb, n - 1).is_err());
    }
    for l in [0, 1, 7, 8, pkb.len() - 1, pkb.len() + 1, pkb.len() + 64] {
        let mut x = pkb.clone();
        x.resize(l, 0);
        assert!(S::decode_public_key(&x, n).is_err(), "key of {l} bytes");
    }
    assert!(S::decode_public_key(&vec![0u8; pkb.len()], n).is_err());
    assert!(S::decode_public_key(&vec![0xff; pkb.len()], n).is_err());
    // Header claims a huge party count: rejected before any allocation.
    let mut x = pkb.clone();
    x[..4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(S::decode_public_key(&x, u32::MAX).is_err());
    no_panic_garbage(pkb.len(), &mut rng, |g| {
        let _ = S::decode_public_key(g, n);
    });
    // Single-byte changes past the header never panic.
    for pos in (8..pkb.len()).step_by((pkb.len() / 64).max(1)) {
        let mut x = pkb.clone();
        x[pos] ^= 0x40;
        let _ = S::decode_public_key(&x, n);
    }
}

/// The bulk operations: encryption and encoding of many ciphertexts, the zero test's
/// randomization, and batches of shares from every party (with a tampered, missing,
/// duplicated or misattributed batch refused, naming the party).
pub fn bulk<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(60);
    let n = S::parties(pk);
    // Small plaintexts, zeros among them, over several parallel tasks (2 of ElGamal's,
    // 3 of Paillier's, whose full-size scalar multiplications in `randomize_encoded`
    // are slow).
    let count = if S::ciphertext_len(pk) <= 64 {
        2100
    } else {
        40
    };
    let values: Vec<u64> = (0..count)
        .map(|i| if i % 3 == 0 { 0 } else { i as u64 })
        .collect();
    let ms: Vec<S::Scalar> = values.iter().map(|&v| S::scalar_from_u64(pk, v)).collect();
    let encoded = S::encrypt_encoded(pk, &ms, &mut rng);
    assert_eq!(encoded.len(), count * S::ciphertext_len(pk));
    let cts = S::decode_ciphertexts(pk, &encoded).expect("decode_ciphertexts");
    assert_eq!(
        S::encode_ciphertexts(pk, &cts),
        encoded,
        "encode_ciphertexts round trip"
    );
    assert!(S::decode_ciphertexts(pk, &encoded[1..]).is_err());
    for k in [0, 1, 2, count - 1] {
        assert_eq!(
            dec::<S>(pk, shares, &cts[k], &mut rng),
            Ok(values[k]),
            "bulk encryption {k}"
        );
    }
    // Polynomials: 3 + 0 x + 5 x^2 at x = 2 is 23; (x - 7)(x - 9) = 63 - 16 x + x^2
    // vanishes at 7 and 9 and is 8 at 11.
    let enc = |v: &S::Scalar, rng: &mut SessionRng| S::encrypt(pk, v, rng);
    let u = |v: u64| S::scalar_from_u64(pk, v);
    let poly: Vec<S::Ciphertext> = [u(3), u(0), u(5)]
        .iter()
        .map(|v| enc(v, &mut rng))
        .collect();
    let at2 = S::eval_polynomial(pk, &poly, &u(2)).expect("non-empty");
    assert_eq!(
        dec::<S>(pk, shares, &at2, &mut rng),
        Ok(23),
        "polynomial evaluation"
    );
    let minus16 = S::scalar_neg(pk, &u(16));
    assert_eq!(S::scalar_add(pk, &minus16, &u(16)), u(0));
    assert_eq!(S::scalar_mul(pk, &u(7), &u(9)), u(63));
    let roots: Vec<S::Ciphertext> = [u(63), minus16, u(1)]
        .iter()
        .map(|v| enc(v, &mut rng))
        .collect();
    for (x, want) in [(7, 0), (9, 0), (11, 8)] {
        let c = S::eval_polynomial(pk, &roots, &u(x)).expect("non-empty");
        assert_eq!(
            dec::<S>(pk, shares, &c, &mut rng),
            Ok(want),
            "polynomial at {x}"
        );
    }
    assert!(S::eval_polynomial(pk, &[], &u(1)).is_none());
    // Many at once: the same ciphertexts as one at a time, for polynomials of different
    // lengths (none among them) at small and full-size points, over more than one
    // group of eight.
    let coeffs: Vec<S::Ciphertext> = (0..5u64).map(|v| enc(&u(v + 2), &mut rng)).collect();
    let points: Vec<S::Scalar> = (0..11u8)
        .map(|i| match i % 3 {
            0 => u(u64::from(i)),
            _ => S::scalar_from_wide(pk, &[i; 64]),
        })
        .collect();
    let jobs: Vec<(&[S::Ciphertext], &S::Scalar)> = points
        .iter()
        .enumerate()
        .map(|(i, x)| (&coeffs[..i % 6], x))
        .collect();
    let many = S::eval_polynomials(pk, &jobs);
    assert_eq!(many.len(), jobs.len());
    for (i, ((c, x), got)) in jobs.iter().zip(&many).enumerate() {
        assert!(
            *got == S::eval_polynomial(pk, c, x),
            "eval_polynomials job {i} (degree {})",
            c.len() as i64 - 1
        );
    }
    assert!(S::scalar_from_wide(pk, &[7; 64]) != S::scalar_from_wide(pk, &[8; 64]));
    let randomized_encoded = S::randomize_encoded(pk, &cts, &mut rng);
    let randomized = S::decode_ciphertexts(pk, &randomized_encoded).expect("decode");
    assert!(randomized[1] != cts[1], "randomized");
    // The ciphertexts of a joint decryption: from their encodings, validated as
    // `decode_ciphertexts` validates them.
    let tested = S::tested_from_encoded(pk, &randomized_encoded).expect("valid encodings");
    assert_eq!(S::tested_len(&tested), count);
    let ct_len = S::ciphertext_len(pk);
    for bad in [
        randomized_encoded[..randomized_encoded.len() - 1].to_vec(),
        vec![0xff; ct_len * 2],
        vec![0; ct_len],
    ] {
        assert_eq!(
            S::tested_from_encoded(pk, &bad).err(),
            S::decode_ciphertexts(pk, &bad).err(),
            "the same errors as decode_ciphertexts"
        );
        assert!(S::decode_ciphertexts(pk, &bad).is_err());
    }

    let batches: Vec<Vec<u8>> = shares
        .iter()
        .map(|ks| S::share_batch(ks, &tested, &mut rng))
        .collect();
    for b in &batches {
        assert_eq!(b.len(), S::share_batch_len(pk, count));
    }
    let run = |order: &[u32], batches: &[Vec<u8>]| -> Result<Vec<bool>, TaheError> {
        let mut test = S::zero_test_new(pk, count);
        for &p in order {
            S::zero_test_absorb(pk, &mut test, &tested, p, &batches[p as usize - 1])?;
        }
        S::zero_test_finish(pk, test, &tested)
    };
    let all: Vec<u32> = (1..=n).rev().collect();
    let flags = run(&all, &batches).expect("zero test");
    let expected: Vec<bool> = values.iter().map(|&v| v == 0).collect();
    assert_eq!(flags, expected, "zero test of randomized ciphertexts");
    // A party's own batch, kept as its own, decrypts the same; the ciphertexts given as
    // values too.
    let values_tested = S::tested_from_ciphertexts(pk, &randomized);
    let mut test = S::zero_test_new(pk, count);
    S::zero_test_absorb_own(&shares[0], &mut test, &values_tested, &batches[0]).expect("own batch");
    for p in 2..=n {
        S::zero_test_absorb(pk, &mut test, &values_tested, p, &batches[p as usize - 1])
            .expect("batch");
    }
    assert_eq!(
        S::zero_test_finish(pk, test, &values_tested).expect("every batch"),
        expected,
        "zero test with an own batch"
    );

    // Every party's batch is needed, whatever the threshold.
    if n > 1 {
        assert_eq!(
            run(&all[1..], &batches),
            Err(TaheError::MissingShares { party: n })
        );
    }
    let mut twice = all.clone();
    twice.push(1);
    assert_eq!(
        run(&twice, &batches),
        Err(TaheError::DuplicateShare { party: 1 })
    );
    // A batch attributed to the wrong party, truncated, or with one share changed.
    if n > 1 {
        let mut swapped = batches.clone();
        swapped.swap(0, 1);
        assert!(matches!(
            run(&all, &swapped),
            Err(TaheError::BadShare { .. })
        ));
    }
    let mut truncated = batches.clone();
    truncated[n as usize - 1].pop();
    assert!(matches!(
        run(&all, &truncated),
        Err(TaheError::BadShare { party, .. }) if party == n
    ));
    let other = S::share_batch(&shares[0], &S::tested_from_ciphertexts(pk, &cts), &mut rng);
    let mut tampered = batches.clone();
    // Replace the first share of party 1's batch with its share of another ciphertext
    // (every share has the same size: the difference of two batch lengths).
    let per_share = S::share_batch_len(pk, 2) - S::share_batch_len(pk, 1);
    tampered[0][..per_share].copy_from_slice(&other[per_share..2 * per_share]);
    assert!(matches!(
        run(&all, &tampered),
        Err(TaheError::BadShare { party: 1, .. })
    ));
    for garbage_len in [0, 1, S::share_batch_len(pk, count)] {
        let mut garbage = batches.clone();
        garbage[0] = vec![0xA5; garbage_len];
        assert!(run(&all, &garbage).is_err());
    }
}

pub fn sums<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(70);
    let ct_len = S::ciphertext_len(pk);
    // Enough entries for several lane batches of ElGamal; fewer of Paillier's.
    let entries: u32 = if ct_len <= 64 { 45 } else { 12 };
    let items = 6u32;
    let message = |offset: u64, rng: &mut SessionRng| {
        let ms: Vec<S::Scalar> = (0..entries)
            .map(|e| S::scalar_from_u64(pk, offset + u64::from(e)))
            .collect();
        S::encrypt_encoded(pk, &ms, rng)
    };
    // Item `j < items - 1` hits entries `(7j + 3d) mod entries` for d < 5, listed in a
    // scrambled order and with entry 0 hit by several items; the last item is never hit.
    let mut hits: Vec<(u32, u32)> = (0..items - 1)
        .flat_map(|j| (0..5).map(move |d| (j, (7 * j + 3 * d) % entries)))
        .collect();
    hits.push((2, 0));
    hits.push((2, 0));
    hits.reverse();
    hits.swap(1, 7);
    let mut want = vec![0u64; items as usize];
    let mut sums = S::sums_new(pk, items as usize);
    for offset in [1u64, 1000] {
        let encoded = message(offset, &mut rng);
        S::sums_add(pk, &mut sums, &encoded, &hits).expect("valid entries");
        for &(j, e) in &hits {
            want[j as usize] += offset + u64::from(e);
        }
    }
    let got = S::sums_finish(pk, sums);
    assert_eq!(got.len(), items as usize);
    for (j, c) in got.iter().enumerate() {
        // An untouched sum has no randomness (ElGamal's `c1` is the identity, which no
        // share is made for): add a fresh encryption of 5 before decrypting.
        let (c, want) = match want[j] {
            0 => (
                S::add(pk, c, &S::encrypt(pk, &S::scalar_from_u64(pk, 5), &mut rng)),
                5,
            ),
            w => (c.clone(), w),
        };
        assert_eq!(
            dec::<S>(pk, shares, &c, &mut rng),
            Ok(want),
            "sum {j} of {hits:?}"
        );
    }
    // An invalid entry: an error naming it when touched, nothing when not.
    let mut bad = message(0, &mut rng);
    bad[5 * ct_len..6 * ct_len].fill(0xff);
    let mut sums = S::sums_new(pk, items as usize);
    let err = S::sums_add(pk, &mut sums, &bad, &[(0, 4), (1, 5), (2, 9)])
        .expect_err("entry 5 is invalid");
    assert!(err.to_string().contains("entry 5"), "{err}");
    S::sums_add(pk, &mut sums, &bad, &[(0, 4), (1, 6)]).expect("entry 5 untouched");
    assert!(S::sums_add(pk, &mut sums, &bad[1..], &[(0, 4)]).is_err());
}

/// What a party of a relayed decryption ends with: its flags, or the error that
/// stopped it.
type MeshOutcome = Result<Vec<bool>, TaheError>;

/// A change to what `from` sends `to`: `(from, to, bytes)`.
type Tamper<'a> = &'a dyn Fn(u32, u32, &mut Vec<u8>);

/// The changes to a relayed decryption's three kinds of message.
struct Tampering<'a> {
    shares: Tamper<'a>,
    relayed: Tamper<'a>,
    proofs: Tamper<'a>,
}

const HONEST: Tampering<'static> = Tampering {
    shares: &|_, _, _| {},
    relayed: &|_, _, _| {},
    proofs: &|_, _, _| {},
};

/// A decryption through party `relay` between every party of the key, each with its
/// own `Mesh`, as Miyaji-Nishida runs it. A party stops at its first error; one that is
/// not the relay and checked every proof finishes only once the relay has finished, and
/// ends with the relay's error if the relay failed (the relay's alert, in a session).
fn run_relay<S: ThresholdAhe>(
    pk: &S::PublicKey,
    shares: &[S::KeyShare],
    tested: &S::Tested,
    rng: &mut SessionRng,
    relay: u32,
    tamper: &Tampering<'_>,
) -> Vec<MeshOutcome> {
    let n = S::parties(pk) as usize;
    let r = relay as usize - 1;
    let count = S::tested_len(tested);
    let mut meshes: Vec<S::Mesh> = (0..n).map(|_| S::mesh_new(pk, count)).collect();
    let mut failed: Vec<Option<TaheError>> = vec![None; n];
    let sent: Vec<Vec<u8>> = shares
        .iter()
        .zip(meshes.iter_mut())
        .map(|(ks, m)| S::mesh_own_shares(ks, m, tested, rng).expect("own shares"))
        .collect();
    for from in (0..n).filter(|&f| f != r) {
        assert_eq!(sent[from].len(), S::mesh_shares_len(pk, count));
        let mut bytes = sent[from].clone();
        (tamper.shares)(from as u32 + 1, relay, &mut bytes);
        if failed[r].is_none() {
            let absorbed =
                S::mesh_absorb_shares(pk, &mut meshes[r], tested, from as u32 + 1, &bytes);
            failed[r] = absorbed.err();
        }
    }
    let relayed = match failed[r] {
        None => Some(S::mesh_relay(pk, &mut meshes[r], tested).expect("relayed")),
        Some(_) => None,
    };
    for to in (0..n).filter(|&t| t != r) {
        failed[to] = match &relayed {
            Some(relayed) => {
                assert_eq!(relayed.len(), S::mesh_relay_len(pk, count));
                let mut bytes = relayed.clone();
                (tamper.relayed)(relay, to as u32 + 1, &mut bytes);
                S::mesh_absorb_relay(pk, &mut meshes[to], tested, relay, &bytes).err()
            }
            None => failed[r].clone(),
        };
    }
    let proofs: Vec<Option<Vec<u8>>> = (0..n)
        .map(|i| {
            failed[i].is_none().then(|| {
                S::mesh_own_proof(&shares[i], &mut meshes[i], tested, rng).expect("own proof")
            })
        })
        .collect();
    for p in proofs.iter().flatten() {
        assert_eq!(p.len(), S::mesh_proof_len(pk));
    }
    // Each party's mesh once it checked every proof, or the error that stopped it.
    let mut checked: Vec<Result<S::Mesh, TaheError>> = Vec::with_capacity(n);
    for (to, mut mesh) in meshes.into_iter().enumerate() {
        if let Some(e) = failed[to].take() {
            checked.push(Err(e));
            continue;
        }
        let absorbed = (0..n).filter(|&f| f != to).try_for_each(|from| {
            // A party that stopped sends nothing: its peers would time out.
            let Some(proof) = &proofs[from] else {
                return Err(TaheError::MissingShares {
                    party: from as u32 + 1,
                });
            };
            let mut bytes = proof.clone();
            (tamper.proofs)(from as u32 + 1, to as u32 + 1, &mut bytes);
            S::mesh_absorb_proof(pk, &mut mesh, tested, from as u32 + 1, &bytes)
        });
        checked.push(absorbed.map(|()| mesh));
    }
    let spent = Err(TaheError::MissingShares { party: relay });
    let at_relay =
        std::mem::replace(&mut checked[r], spent).and_then(|mesh| S::mesh_finish(pk, mesh, tested));
    checked
        .into_iter()
        .enumerate()
        .map(|(to, mesh)| {
            if to == r {
                return at_relay.clone();
            }
            let mesh = mesh?;
            match &at_relay {
                Ok(_) => S::mesh_finish(pk, mesh, tested),
                Err(e) => Err(e.clone()),
            }
        })
        .collect()
}

/// Relayed decryption: every party decrypts to the plaintext answer whichever party
/// relays; a wrong share, wrong relayed bytes and a wrong proof are named; misuse is
/// refused.
pub fn mesh<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let mut rng = seeded(80);
    let n = S::parties(pk);
    // Two of ElGamal's lane tasks and a partial one; a few of Paillier's.
    let count = if S::ciphertext_len(pk) <= 64 { 2100 } else { 9 };
    let values: Vec<u64> = (0..count as u64)
        .map(|i| if i % 4 == 1 { 0 } else { i + 1 })
        .collect();
    let ms: Vec<S::Scalar> = values.iter().map(|&v| S::scalar_from_u64(pk, v)).collect();
    let tested = S::tested_from_encoded(pk, &S::encrypt_encoded(pk, &ms, &mut rng))
        .expect("valid ciphertexts");
    let want: Vec<bool> = values.iter().map(|&v| v == 0).collect();
    for relay in [1, n] {
        for (p, outcome) in run_relay::<S>(pk, shares, &tested, &mut rng, relay, &HONEST)
            .into_iter()
            .enumerate()
        {
            assert_eq!(
                outcome.as_ref(),
                Ok(&want),
                "party {} of an honest decryption relayed by {relay}",
                p + 1
            );
        }
    }
    if n < 2 {
        return;
    }
    // The first two of a message's shares swapped: valid encodings, wrong values.
    let per_share = S::mesh_shares_len(pk, 2) - S::mesh_shares_len(pk, 1);
    let swap = |bytes: &mut Vec<u8>| {
        let (a, b) = bytes.split_at_mut(per_share);
        a.swap_with_slice(&mut b[..per_share]);
    };
    let named = |o: &MeshOutcome, party: u32| matches!(o, Err(TaheError::BadShare { party: p, .. }) if *p == party);
    let mut relayed_by_1 =
        |tampering: Tampering<'_>| run_relay::<S>(pk, shares, &tested, &mut rng, 1, &tampering);
    // Party 2's shares to relay 1: the relay names it and stops everybody.
    let outcomes = relayed_by_1(Tampering {
        shares: &|from, _, b| {
            if from == 2 {
                swap(b)
            }
        },
        ..HONEST
    });
    for (p, o) in outcomes.iter().enumerate() {
        assert!(
            named(o, 2),
            "party {} given party 2's swapped shares: {o:?}",
            p + 1
        );
    }
    // The relay's message to the last party: that party names the relay (ElGamal: the
    // relay's proof is for other sums; Paillier: the relay's own forwarded shares do
    // not match its proof). The others decrypt (Paillier), or name the last party, whose
    // proof is for other sums than theirs (ElGamal: they cannot tell a relay that sent
    // it other sums from a party that lies about the sums it got; docs/mpsi.md).
    let outcomes = relayed_by_1(Tampering {
        relayed: &|_, to, b| {
            if to == n {
                swap(b)
            }
        },
        ..HONEST
    });
    for (p, o) in outcomes.iter().enumerate() {
        if p as u32 + 1 == n {
            assert!(named(o, 1), "party {n} given changed sums: {o:?}");
        } else {
            assert!(
                o.as_ref() == Ok(&want) || named(o, n),
                "party {} beside party {n}: {o:?}",
                p + 1
            );
        }
    }
    // Party 2's proof changed in its last byte, and cut short: to everybody (the relay
    // names it), and to the last party alone when that is not the relay (it names it).
    for change in [
        &(|b: &mut Vec<u8>| *b.last_mut().expect("a proof") ^= 1) as &dyn Fn(&mut Vec<u8>),
        &|b: &mut Vec<u8>| {
            b.pop();
        },
    ] {
        let outcomes = relayed_by_1(Tampering {
            proofs: &|from, _, b| {
                if from == 2 {
                    change(b)
                }
            },
            ..HONEST
        });
        for (p, o) in outcomes.iter().enumerate() {
            if p != 1 {
                assert!(
                    named(o, 2),
                    "party {} given party 2's bad proof: {o:?}",
                    p + 1
                );
            }
        }
        if n >= 3 {
            let outcomes = relayed_by_1(Tampering {
                proofs: &|from, to, b| {
                    if from == 2 && to == n {
                        change(b)
                    }
                },
                ..HONEST
            });
            for (p, o) in outcomes.iter().enumerate() {
                if p as u32 + 1 == n {
                    assert!(named(o, 2), "party {n} given party 2's bad proof: {o:?}");
                } else {
                    assert_eq!(o.as_ref(), Ok(&want), "party {} beside party {n}", p + 1);
                }
            }
        }
    }
    // Misuse at the relay: a relay or a proof before every party's shares, a second set
    // of shares, a party out of range, shares of the wrong length.
    let mut mesh = S::mesh_new(pk, count);
    let own = S::mesh_own_shares(&shares[0], &mut mesh, &tested, &mut rng).expect("own");
    assert_eq!(
        S::mesh_relay(pk, &mut mesh, &tested).err(),
        Some(TaheError::MissingShares { party: 2 })
    );
    assert_eq!(
        S::mesh_own_proof(&shares[0], &mut mesh, &tested, &mut rng).err(),
        Some(TaheError::MissingShares { party: 2 })
    );
    assert_eq!(
        S::mesh_absorb_shares(pk, &mut mesh, &tested, 1, &own).err(),
        Some(TaheError::DuplicateShare { party: 1 })
    );
    assert!(matches!(
        S::mesh_absorb_shares(pk, &mut mesh, &tested, n + 1, &own),
        Err(TaheError::UnknownParty { .. })
    ));
    assert!(matches!(
        S::mesh_absorb_shares(pk, &mut mesh, &tested, 2, &own[1..]),
        Err(TaheError::BadShare { party: 2, .. })
    ));
    // ... and elsewhere: relayed bytes of the wrong length, or twice.
    let mut mesh = S::mesh_new(pk, count);
    S::mesh_own_shares(&shares[1], &mut mesh, &tested, &mut rng).expect("own");
    let len = S::mesh_relay_len(pk, count);
    assert!(matches!(
        S::mesh_absorb_relay(pk, &mut mesh, &tested, 1, &vec![0; len - 1]),
        Err(TaheError::BadShare { party: 1, .. })
    ));
    let honest = run_relay_bytes::<S>(pk, shares, &tested, &mut rng);
    S::mesh_absorb_relay(pk, &mut mesh, &tested, 1, &honest).expect("relayed");
    assert_eq!(
        S::mesh_absorb_relay(pk, &mut mesh, &tested, 1, &honest).err(),
        Some(TaheError::DuplicateShare { party: 1 })
    );
}

/// What relay 1 sends when every party's shares are honest.
fn run_relay_bytes<S: ThresholdAhe>(
    pk: &S::PublicKey,
    shares: &[S::KeyShare],
    tested: &S::Tested,
    rng: &mut SessionRng,
) -> Vec<u8> {
    let count = S::tested_len(tested);
    let mut at_relay = S::mesh_new(pk, count);
    S::mesh_own_shares(&shares[0], &mut at_relay, tested, rng).expect("own");
    for (i, ks) in shares.iter().enumerate().skip(1) {
        let mut mesh = S::mesh_new(pk, count);
        let bytes = S::mesh_own_shares(ks, &mut mesh, tested, rng).expect("own");
        S::mesh_absorb_shares(pk, &mut at_relay, tested, i as u32 + 1, &bytes).expect("shares");
    }
    S::mesh_relay(pk, &mut at_relay, tested).expect("relayed")
}

/// A relay that passes every party the same wrong message and proves with it (its own
/// check then passes, so it sends its verdict): every other party names the relay.
/// ElGamal's relay swaps two sums, and every proof verifies under the seed they give;
/// Paillier's changes its own forwarded shares, which fail its proof.
pub fn dishonest_relay<S: ThresholdAhe>(pk: &S::PublicKey, shares: &[S::KeyShare]) {
    let n = S::parties(pk);
    if n < 2 {
        return;
    }
    let mut rng = seeded(81);
    let ms: Vec<S::Scalar> = (0..5).map(|v| S::scalar_from_u64(pk, v)).collect();
    let tested = S::tested_from_encoded(pk, &S::encrypt_encoded(pk, &ms, &mut rng))
        .expect("valid ciphertexts");
    let mut relayed = run_relay_bytes::<S>(pk, shares, &tested, &mut rng);
    let per_share = S::mesh_shares_len(pk, 2) - S::mesh_shares_len(pk, 1);
    let (a, b) = relayed.split_at_mut(per_share);
    a.swap_with_slice(&mut b[..per_share]);
    let mut meshes: Vec<S::Mesh> = shares
        .iter()
        .map(|ks| {
            let mut mesh = S::mesh_new(pk, 5);
            S::mesh_own_shares(ks, &mut mesh, &tested, &mut rng).expect("own shares");
            // The relay too takes the changed message as its view.
            S::mesh_absorb_relay(pk, &mut mesh, &tested, 1, &relayed).expect("relayed");
            mesh
        })
        .collect();
    let proofs: Vec<Vec<u8>> = shares
        .iter()
        .zip(meshes.iter_mut())
        .map(|(ks, m)| S::mesh_own_proof(ks, m, &tested, &mut rng).expect("own proof"))
        .collect();
    for (to, mut mesh) in meshes.into_iter().enumerate().skip(1) {
        let outcome = (0..n as usize)
            .filter(|&from| from != to)
            .try_for_each(|from| {
                S::mesh_absorb_proof(pk, &mut mesh, &tested, from as u32 + 1, &proofs[from])
            })
            .and_then(|()| S::mesh_finish(pk, mesh, &tested));
        assert!(
            matches!(outcome, Err(TaheError::BadShare { party: 1, .. })),
            "party {} given a dishonest relay's message: {outcome:?}",
            to + 1
        );
    }
}
