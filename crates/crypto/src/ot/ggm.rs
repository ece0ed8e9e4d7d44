//! Punctured GGM trees: `2^depth` leaf seeds that one party knows in full and the other
//! knows all but one of, the building block of SoftSpokenOT's small-field VOLE.
//!
//! The tree owner expands a random root level by level (node `j` of a level has children
//! `2j` and `2j + 1` in the next one, so leaf `x` is reached by the bits of `x`, most
//! significant first). For each level it also publishes, masked by a base OT, the xor of
//! all even children and the xor of all odd children. A party that chose bit `d` in that
//! level's base OT learns the xor of the children with bit `1 - d`: off its path. Knowing
//! every node of the previous level except the one on its path, it rebuilds every node of
//! the next level except the child with bit `d` of that node, which stays on the path.
//! After `depth` levels it knows every leaf except leaf `point`, where `point`'s bits are
//! its base-OT choices, and leaf `point` stays pseudorandom to it.
//!
//! The punctured side computes every node with the same sequence of operations whatever
//! `point` is (masks instead of branches and indexing), since `point` is a piece of the
//! OT-extension sender's secret offset.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use super::base::{SEED_LEN, Seed};

const NODE_TAG: &[u8] = b"privset/ot/ggm/node/v1";

/// A node's two children: the halves of `SHA-256(NODE_TAG || node)`.
fn children(node: &Seed) -> [Seed; 2] {
    let mut digest: [u8; 32] = Sha256::new()
        .chain_update(NODE_TAG)
        .chain_update(node)
        .finalize()
        .into();
    let mut out = [[0u8; SEED_LEN]; 2];
    out[0].copy_from_slice(&digest[..SEED_LEN]);
    out[1].copy_from_slice(&digest[SEED_LEN..]);
    digest.zeroize();
    out
}

fn xor_into(acc: &mut Seed, x: &Seed) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a ^= b;
    }
}

/// All ones if `a == b`, else zero, without a branch.
fn eq_mask(a: usize, b: usize) -> u8 {
    0u8.wrapping_sub(a.ct_eq(&b).unwrap_u8())
}

fn masked(seed: &Seed, mask: u8) -> Seed {
    let mut out = *seed;
    for b in &mut out {
        *b &= mask;
    }
    out
}

/// The owner's side: the `2^depth` leaves of the tree under `root`, and for every level
/// `l` (0 = the root's children) `[xor of the even children, xor of the odd children]`.
pub(super) fn expand(
    root: &Seed,
    depth: usize,
) -> (Zeroizing<Vec<Seed>>, Zeroizing<Vec<[Seed; 2]>>) {
    let mut level = Zeroizing::new(vec![*root]);
    let mut sums = Zeroizing::new(Vec::with_capacity(depth));
    for _ in 0..depth {
        let mut next = Zeroizing::new(Vec::with_capacity(2 * level.len()));
        let mut sum = [[0u8; SEED_LEN]; 2];
        for node in level.iter() {
            let mut pair = children(node);
            xor_into(&mut sum[0], &pair[0]);
            xor_into(&mut sum[1], &pair[1]);
            next.extend_from_slice(&pair);
            pair.zeroize();
        }
        sums.push(sum);
        sum.zeroize();
        level = next;
    }
    (level, sums)
}

/// The punctured side: given, for every level, the xor of the children off the path to
/// leaf `point` (`off_path[l]`, as revealed by the level's base OT), every leaf except
/// leaf `point`, which is returned as zero. `point < 2^off_path.len()`.
pub(super) fn expand_punctured(off_path: &[Seed], point: usize) -> Zeroizing<Vec<Seed>> {
    let depth = off_path.len();
    debug_assert!(point < 1 << depth);
    // The path node of the current level, kept at zero in `level`.
    let mut path = 0usize;
    let mut level = Zeroizing::new(vec![[0u8; SEED_LEN]]);
    for (l, off) in off_path.iter().enumerate() {
        let bit = (point >> (depth - 1 - l)) & 1;
        let mut next = Zeroizing::new(Vec::with_capacity(2 * level.len()));
        let mut sum = [[0u8; SEED_LEN]; 2];
        for (j, node) in level.iter().enumerate() {
            // The path node's children are unknown: computed like the others, then zeroed.
            let known = !eq_mask(j, path);
            let mut pair = children(node);
            for child in &mut pair {
                *child = masked(child, known);
            }
            xor_into(&mut sum[0], &pair[0]);
            xor_into(&mut sum[1], &pair[1]);
            next.extend_from_slice(&pair);
            pair.zeroize();
        }
        // The path node's child off the path (bit 1 - bit) is the revealed xor minus
        // every other child on that side; its child on the path stays zero.
        let mut side = masked(&sum[1], 0u8.wrapping_sub(1 - bit as u8));
        let mut missing = masked(&sum[0], 0u8.wrapping_sub(bit as u8));
        xor_into(&mut missing, &side);
        side.zeroize();
        xor_into(&mut missing, off);
        let target = 2 * path + (1 - bit);
        for (p, node) in next.iter_mut().enumerate() {
            xor_into(node, &masked(&missing, eq_mask(p, target)));
        }
        missing.zeroize();
        sum.zeroize();
        path = 2 * path + bit;
        level = next;
    }
    level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctured_tree_matches_the_full_one_off_the_point() {
        for depth in 1..=6 {
            let root = [depth as u8 * 17; SEED_LEN];
            let (leaves, sums) = expand(&root, depth);
            assert_eq!(leaves.len(), 1 << depth);
            assert_eq!(sums.len(), depth);
            for point in 0..1usize << depth {
                let off_path: Vec<Seed> = (0..depth)
                    .map(|l| sums[l][1 - ((point >> (depth - 1 - l)) & 1)])
                    .collect();
                let got = expand_punctured(&off_path, point);
                for (x, (a, b)) in leaves.iter().zip(got.iter()).enumerate() {
                    if x == point {
                        assert_eq!(b, &[0u8; SEED_LEN], "depth {depth} point {point}");
                    } else {
                        assert_eq!(a, b, "depth {depth} point {point} leaf {x}");
                    }
                }
            }
        }
    }

    #[test]
    fn punctured_tree_of_depth_8() {
        let (leaves, sums) = expand(&[5; SEED_LEN], 8);
        for point in [0usize, 1, 0x80, 0xa5, 0xfe, 0xff] {
            let off_path: Vec<Seed> = (0..8)
                .map(|l| sums[l][1 - ((point >> (7 - l)) & 1)])
                .collect();
            let got = expand_punctured(&off_path, point);
            for x in 0..256 {
                if x == point {
                    assert_eq!(got[x], [0u8; SEED_LEN]);
                    assert!(!got.contains(&leaves[x]), "the missing leaf leaked");
                } else {
                    assert_eq!(got[x], leaves[x], "point {point} leaf {x}");
                }
            }
        }
    }

    #[test]
    fn a_wrong_level_sum_changes_the_leaves_below_it() {
        let (leaves, sums) = expand(&[3; SEED_LEN], 4);
        let point = 0b0110;
        let mut off_path: Vec<Seed> = (0..4)
            .map(|l| sums[l][1 - ((point >> (3 - l)) & 1)])
            .collect();
        off_path[2][0] ^= 1;
        let got = expand_punctured(&off_path, point);
        // Level 2's off-path node is 0b010 at that level: its leaves 0b0100 and 0b0101 are
        // wrong, and so is 0b0111, rebuilt at level 3 from a sum that includes them (and
        // 0b0110 is the punctured leaf, zero). The other half of the tree is untouched.
        let differing: Vec<usize> = (0..16).filter(|&x| leaves[x] != got[x]).collect();
        assert_eq!(differing, vec![0b0100, 0b0101, 0b0110, 0b0111]);
    }

    #[test]
    fn leaves_are_distinct() {
        let (leaves, _) = expand(&[9; SEED_LEN], 8);
        let mut sorted = leaves.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 256);
    }
}
