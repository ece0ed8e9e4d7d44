//! Paillier / Damgard-Jurik on both paths: with the portable path forced
//! (`cpu::force_portable`, as `PRIVSET_PORTABLE=1` does), the key owner's encryptions,
//! the subset sums and the masking party's re-randomized items are the same bytes as
//! on the eight-lane AVX-512 IFMA path (`bignum`), from the same seeds. Its own
//! binary: forcing is process-wide.

use privset_crypto::ahe::paillier::{Paillier, Params};
use privset_crypto::ahe::{AdditiveHe, ColumnBounds, SubsetSum};
use privset_crypto::cpu;
use privset_crypto::rng::SessionRng;

/// The column, the sum of a selection, the masked items and their masks, on the path
/// the CPU gets now.
fn outputs(params: &Params, items: usize) -> Vec<Vec<u8>> {
    let mut rng = SessionRng::from_seed([5; 32]);
    let (pk, sk) = Paillier::keygen(params, &mut rng);
    let bounds = ColumnBounds {
        items,
        max_value: 1000,
        max_sum: 1000 * items as u128,
    };
    let values: Vec<u64> = (0..items as u64).map(|i| i * 7 % 1001).collect();
    let selected: Vec<usize> = (0..items).filter(|i| i % 3 != 1).collect();
    let column = Paillier::encrypt_column(&pk, &sk, &bounds, &values, &mut rng).unwrap();
    let sum = Paillier::sum_selected(&pk, &bounds, &column, &selected, &mut rng).unwrap();
    let want: u128 = selected.iter().map(|&i| values[i] as u128).sum();
    assert_eq!(Paillier::decrypt_sum(&sk, &bounds, &sum).unwrap(), want);
    let each = Paillier::encrypt_each(&pk, &sk, &bounds, &values, &mut rng).unwrap();
    let (masked, masks) = Paillier::mask_each(&pk, &each, &mut rng).unwrap();
    let opened = Paillier::open_masked_sum(&sk, &masked, &selected).unwrap();
    let unmasked = Paillier::unmask_sum(&pk, &bounds, &opened, &masks, &selected).unwrap();
    assert_eq!(unmasked, want);
    let masks: Vec<u8> = masks.iter().flat_map(|m| m.0.clone()).collect();
    vec![column, sum, each, masked, masks]
}

#[test]
fn both_paths_give_the_same_bytes() {
    // Past one lane group of chains and of table lookups, with ragged ends; s = 1 and
    // the deployed s = 3.
    for (params, items) in [
        (
            Params {
                modulus_bits: 1024,
                s: 1,
            },
            301,
        ),
        (
            Params {
                modulus_bits: 1024,
                s: 3,
            },
            1_001,
        ),
    ] {
        cpu::force_portable(false);
        let fast_is_ifma = cpu::bignum_ifma();
        let fast = outputs(&params, items);
        cpu::force_portable(true);
        assert!(!cpu::bignum_ifma(), "forcing must turn the IFMA path off");
        let portable = outputs(&params, items);
        cpu::force_portable(false);
        for (what, (f, p)) in ["column", "sum", "items", "masked", "masks"]
            .iter()
            .zip(fast.iter().zip(&portable))
        {
            assert_eq!(f, p, "{what} differs between the paths (s = {})", params.s);
        }
        if !fast_is_ifma {
            eprintln!("this CPU has no AVX-512 IFMA: both runs took GMP");
        }
    }
}
