//! Cuckoo hashing with three hash functions and no stash, for protocols where one party
//! puts each of its items in one bin of a table and the other must try every bin an item
//! can be in (the Random-OT intersection-sum of Ion et al. 2020, Fig. 3; batched-OPRF
//! PSI after Kolesnikov et al. 2016).
//!
//! **Hash functions.** The three bins of an item are three 64-bit words of
//! `SHA-256(domain || key || item)` mapped onto the table by a multiply-shift
//! (`(w · bins) >> 64`), so they are uniform and independent for a key both parties
//! draw from the session (no item can be chosen against them). Two of an item's bins may
//! coincide; [`distinct`] removes the repeats.
//!
//! **Table size.** [`table_size`]`(n) = ceil(1.5 n) + 16` bins: the size Ion et al.
//! 2020 (Sec. 5.1) take from Demmler et al.'s heuristics for three hash functions and no
//! stash (at most `1.5 n` bins for the sizes they measured), and a load of at most 2/3,
//! far below the 0.918 threshold above which cuckoo hashing with three functions fails;
//! the 16 spare bins keep tiny tables from failing on collisions of a few items.
//!
//! **Insertion.** Random-walk insertion, at most [`MAX_EVICTIONS`] evictions per item;
//! failure is an error ([`CuckooError`]) naming the sizes, never a silently dropped
//! item.

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::rng::SessionRng;

/// Hash functions per item.
pub const HASH_FUNCTIONS: usize = 3;
/// Evictions one insertion may cause before the table is declared full.
pub const MAX_EVICTIONS: usize = 1000;

const DOMAIN: &[u8] = b"privset/cuckoo/v1";

/// Insertion failed: the random walk found no free bin.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cuckoo hashing of {items} items into {bins} bins failed after {MAX_EVICTIONS} evictions")]
pub struct CuckooError {
    pub items: usize,
    pub bins: usize,
}

/// Bins of the table for `items` items (see the module docs).
pub fn table_size(items: usize) -> usize {
    items + items.div_ceil(2) + 16
}

/// The three bins of every item under `key`, in input order, on every core.
pub fn locations<I: AsRef<[u8]> + Sync>(
    key: &[u8; 32],
    items: &[I],
    bins: usize,
) -> Vec<[usize; HASH_FUNCTIONS]> {
    items
        .par_iter()
        .with_min_len(256)
        .map(|item| {
            let mut h = Sha256::new();
            h.update(DOMAIN);
            h.update(key);
            h.update(item.as_ref());
            let d: [u8; 32] = h.finalize().into();
            std::array::from_fn(|i| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&d[8 * i..8 * i + 8]);
                ((u64::from_be_bytes(w) as u128 * bins as u128) >> 64) as usize
            })
        })
        .collect()
}

/// An item's bins without repeats, in order of first appearance.
pub fn distinct(bins: &[usize; HASH_FUNCTIONS]) -> impl Iterator<Item = usize> + '_ {
    bins.iter()
        .enumerate()
        .filter(|&(i, b)| !bins[..i].contains(b))
        .map(|(_, &b)| b)
}

/// Places every item in one of its bins: the table maps bin → item index. Items must be
/// distinct (equal items share their bins and would take two of them).
pub fn insert(
    locations: &[[usize; HASH_FUNCTIONS]],
    bins: usize,
    rng: &mut SessionRng,
) -> Result<Vec<Option<u32>>, CuckooError> {
    let mut table: Vec<Option<u32>> = vec![None; bins];
    let fail = CuckooError {
        items: locations.len(),
        bins,
    };
    for start in 0..locations.len() as u32 {
        let mut current = start;
        let mut placed = false;
        for _ in 0..MAX_EVICTIONS {
            let candidates = &locations[current as usize];
            if let Some(&free) = candidates.iter().find(|&&b| table[b].is_none()) {
                table[free] = Some(current);
                placed = true;
                break;
            }
            let victim_at = candidates[rng.below(HASH_FUNCTIONS as u64) as usize];
            current = table[victim_at].replace(current).expect("occupied");
        }
        if !placed {
            return Err(fail);
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("item-{i}").into_bytes()).collect()
    }

    #[test]
    fn every_item_lands_in_one_of_its_bins_once() {
        let mut rng = SessionRng::from_os();
        for n in [0, 1, 2, 3, 17, 1000, 100_000] {
            let bins = table_size(n);
            let items = items(n);
            let locs = locations(&[7; 32], &items, bins);
            let table = insert(&locs, bins, &mut rng).expect("a 2/3-full table fills");
            let mut seen = vec![false; n];
            for (bin, slot) in table.iter().enumerate() {
                if let Some(i) = *slot {
                    assert!(locs[i as usize].contains(&bin));
                    assert!(!seen[i as usize], "item {i} placed twice");
                    seen[i as usize] = true;
                }
            }
            assert!(seen.iter().all(|&s| s), "every item placed at n = {n}");
        }
    }

    #[test]
    fn locations_depend_on_the_key_and_are_in_range() {
        let items = items(1000);
        let a = locations(&[1; 32], &items, 1516);
        let b = locations(&[2; 32], &items, 1516);
        assert_ne!(a, b);
        assert!(a.iter().flatten().all(|&bin| bin < 1516));
        assert_eq!(a, locations(&[1; 32], &items, 1516));
    }

    #[test]
    fn an_overfull_table_is_an_error() {
        let mut rng = SessionRng::from_os();
        let items = items(100);
        let locs = locations(&[3; 32], &items, 50);
        assert_eq!(
            insert(&locs, 50, &mut rng),
            Err(CuckooError {
                items: 100,
                bins: 50
            })
        );
    }

    #[test]
    fn distinct_removes_repeats() {
        assert_eq!(distinct(&[4, 4, 9]).collect::<Vec<_>>(), vec![4, 9]);
        assert_eq!(distinct(&[1, 2, 1]).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(distinct(&[5, 5, 5]).collect::<Vec<_>>(), vec![5]);
    }
}
