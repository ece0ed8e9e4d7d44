//! The portable build's run-time choice: with the portable path forced
//! (`cpu::force_portable`, as `PRIVSET_PORTABLE=1` does), the X25519 cwPRF gives the
//! same bytes as on its AVX-512 IFMA path, on this CPU, through the public API the
//! protocols use. Its own binary: forcing is process-wide.

use privset_crypto::cpu;
use privset_crypto::cwprf::CwPrf;
use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::group::GroupError;
use privset_crypto::rng::SessionRng;

/// `F_k1(H(x))`, `F_k2` of that, and the validation of a tampered batch, on the path
/// the CPU gets now.
fn outputs(items: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>, Result<(), GroupError>) {
    let mut rng = SessionRng::from_seed([9; 32]);
    let (k1, k2) = (X25519::random_key(&mut rng), X25519::random_key(&mut rng));
    let once = X25519::hash_eval_batch(b"privset-portable-test", items, &k1);
    let twice = X25519::eval_batch(&once, &k2).expect("valid elements");
    let mut tampered = twice.clone();
    let last = tampered.len() - 32;
    tampered[last..].fill(0xff);
    (once, twice, X25519::validate_batch(&tampered))
}

#[test]
fn the_portable_path_gives_the_same_bytes_as_the_fast_path() {
    // Past one lane group and one batch chunk, with a ragged end.
    let items: Vec<Vec<u8>> = (0..3_001u32)
        .map(|i| format!("item-{i}").into_bytes())
        .collect();
    cpu::force_portable(false);
    let fast_is_ifma = cpu::x25519_ifma();
    let fast = outputs(&items);
    cpu::force_portable(true);
    assert!(!cpu::x25519_ifma(), "forcing must turn the IFMA path off");
    let portable = outputs(&items);
    cpu::force_portable(false);
    assert_eq!(fast.0, portable.0, "F(H(x)) differs between the paths");
    assert_eq!(fast.1, portable.1, "F(received) differs between the paths");
    assert_eq!(fast.2, portable.2);
    assert_eq!(fast.2, Err(GroupError::NonCanonical { index: 3_000 }));
    if fast_is_ifma {
        eprintln!("compared the AVX-512 IFMA path with the portable path");
    } else {
        eprintln!("this CPU has no AVX-512 IFMA: both runs took the portable path");
    }
}
