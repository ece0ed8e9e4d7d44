//! Punctured pseudorandom functions from GGM trees with fixed-key AES, the noise
//! generator of silent VOLE (Boyle et al., "Efficient Pseudorandom Correlation
//! Generators: Silent OT Extension and More", CRYPTO 2019, Sec. 4).
//!
//! A tree of depth `d` has `2^d` leaves. Node `j` of a level has children `2j` and `2j+1`
//! in the next: `child_b(x) = π_b(x) ⊕ x` for two fixed AES-128 keys `π_0`, `π_1` (a
//! tweakable correlation-robust hash from a random permutation, Guo, Katz, Wang, Yu,
//! "Efficient and Secure Multiparty Computation from Fixed-Key Block Ciphers", S&P 2020).
//! The owner publishes, for every level, the xor of its even children and the xor of its
//! odd children, each masked by one OT key. The other party, who chose the side *off*
//! its path to leaf `α` in each level's OT, rebuilds every leaf but leaf `α`.
//!
//! Leaf `α` is the receiver's own secret, not the owner's: its side does its work level
//! by level without branching on `α`'s bits inside the loops, but does not hide `α` from
//! the memory-access pattern of its own machine.

use aws_lc_rs::cipher::{AES_128, EncryptingKey, UnboundCipherKey};

/// The two public AES keys of the tree's hash: any fixed distinct values serve.
const CHILD_KEYS: [[u8; 16]; 2] = [*b"privset/ggm/left", *b"privset/ggm/rght"];

/// The tree hash: two fixed-key AES permutations.
pub(super) struct TreeHash([EncryptingKey; 2]);

impl TreeHash {
    pub(super) fn new() -> Self {
        let key = |k: &[u8; 16]| {
            EncryptingKey::ecb(UnboundCipherKey::new(&AES_128, k).expect("16-byte key"))
                .expect("AES-128 supports ECB")
        };
        Self([key(&CHILD_KEYS[0]), key(&CHILD_KEYS[1])])
    }

    /// Expands the `width` nodes at the front of `nodes` into their `2·width` children,
    /// in place (child `2j + b` of node `j`). `scratch` holds at least `2·width` values.
    fn expand_level(&self, nodes: &mut [u128], width: usize, scratch: &mut [u128]) {
        let (left, right) = scratch[..2 * width].split_at_mut(width);
        left.copy_from_slice(&nodes[..width]);
        right.copy_from_slice(&nodes[..width]);
        for (half, key) in [&mut *left, &mut *right].into_iter().zip(&self.0) {
            key.encrypt(bytemuck::cast_slice_mut(half))
                .expect("ECB takes whole blocks");
        }
        // Backwards, so that node j is read before its slot is overwritten (slots 2j and
        // 2j + 1 lie at or after j).
        for j in (0..width).rev() {
            let x = nodes[j];
            nodes[2 * j] = left[j] ^ x;
            nodes[2 * j + 1] = right[j] ^ x;
        }
    }
}

/// `[xor of even entries, xor of odd entries]` of a level.
fn side_sums(level: &[u128]) -> [u128; 2] {
    level
        .chunks_exact(2)
        .fold([0, 0], |[e, o], pair| [e ^ pair[0], o ^ pair[1]])
}

/// The owner's side: fills `leaves` (length `2^depth`) with the tree under `root` and
/// returns each level's side sums, level 1 (the root's children) first.
pub(super) fn expand(
    hash: &TreeHash,
    root: u128,
    leaves: &mut [u128],
    scratch: &mut [u128],
) -> Vec<[u128; 2]> {
    let depth = leaves.len().trailing_zeros() as usize;
    debug_assert_eq!(leaves.len(), 1 << depth);
    leaves[0] = root;
    let mut sums = Vec::with_capacity(depth);
    for l in 0..depth {
        hash.expand_level(leaves, 1 << l, scratch);
        sums.push(side_sums(&leaves[..2 << l]));
    }
    sums
}

/// The punctured side: from each level's sum of the side off the path to leaf `point`
/// (`off_path[l]` for level `l + 1`), fills `leaves` with every leaf of the tree, leaf
/// `point` set to zero. `leaves.len() == 2^off_path.len()`.
pub(super) fn expand_punctured(
    hash: &TreeHash,
    off_path: &[u128],
    point: usize,
    leaves: &mut [u128],
    scratch: &mut [u128],
) {
    let depth = off_path.len();
    debug_assert_eq!(leaves.len(), 1 << depth);
    debug_assert!(point < leaves.len());
    leaves[0] = 0;
    // The path's node in the current level, held at zero.
    let mut path = 0usize;
    for (l, &off) in off_path.iter().enumerate() {
        let bit = (point >> (depth - 1 - l)) & 1;
        hash.expand_level(leaves, 1 << l, scratch);
        // The path node's children came from a zero placeholder: clear them, then
        // recover the one off the path from the revealed side sum.
        leaves[2 * path] = 0;
        leaves[2 * path + 1] = 0;
        let side = 1 - bit;
        let known = side_sums(&leaves[..2 << l])[side];
        leaves[2 * path + side] = off ^ known;
        path = 2 * path + bit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_punctured_side_rebuilds_every_leaf_but_one() {
        let hash = TreeHash::new();
        for depth in [1usize, 2, 5, 10] {
            let n = 1 << depth;
            let mut full = vec![0u128; n];
            let mut scratch = vec![0u128; n];
            let sums = expand(
                &hash,
                0x1234_5678_9abc_def0 ^ depth as u128,
                &mut full,
                &mut scratch,
            );
            assert_eq!(sums.len(), depth);
            for point in [0, n / 3, n - 1] {
                let off: Vec<u128> = (0..depth)
                    .map(|l| sums[l][1 - ((point >> (depth - 1 - l)) & 1)])
                    .collect();
                let mut punctured = vec![0u128; n];
                expand_punctured(&hash, &off, point, &mut punctured, &mut scratch);
                for i in 0..n {
                    if i == point {
                        assert_eq!(punctured[i], 0);
                        assert_ne!(full[i], 0);
                    } else {
                        assert_eq!(
                            punctured[i], full[i],
                            "depth {depth} point {point} leaf {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn leaves_are_distinct_and_fixed() {
        let hash = TreeHash::new();
        let mut leaves = vec![0u128; 256];
        let mut scratch = vec![0u128; 256];
        expand(&hash, 7, &mut leaves, &mut scratch);
        let mut sorted = leaves.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 256);
        let digest = leaves.iter().fold(0u128, |acc, x| acc.rotate_left(3) ^ x);
        assert_eq!(digest, RECORDED_DIGEST, "got {digest:#x}");
    }

    const RECORDED_DIGEST: u128 = 0x1fffb953bad7ae6102bc088b1ec902ca;
}
