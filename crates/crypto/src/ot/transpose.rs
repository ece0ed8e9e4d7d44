//! 128 x 128 bit-matrix transposition, the inner step of the OT extension's
//! column-to-row switch.
//!
//! The extension produces 128 *columns* (one per base OT, `count` bits each) but every
//! OT needs its *row* (one bit from each column). Transposing bit by bit would cost 128 shifts and
//! masks per bit; instead the matrix is cut into 128 x 128 blocks, each held as 128
//! `u128` words, and transposed in place with Eklundh's recursive block swap: seven
//! rounds (block widths 64, 32, ..., 1), each swapping the off-diagonal sub-blocks of
//! every 2w x 2w tile with one shift, xor and mask per pair of words.

/// The mask selecting the low `w` bits of every `2w`-bit group (`w` a power of two below
/// 128): `u128::MAX / (2^w + 1)` is exactly that repeating pattern (0x5555.. for w = 1,
/// 0x3333.. for w = 2, ..., the low 64 bits for w = 64).
const fn low_half_mask(w: u32) -> u128 {
    u128::MAX / ((1u128 << w) + 1)
}

const ROUNDS: [(usize, u128); 7] = [
    (64, low_half_mask(64)),
    (32, low_half_mask(32)),
    (16, low_half_mask(16)),
    (8, low_half_mask(8)),
    (4, low_half_mask(4)),
    (2, low_half_mask(2)),
    (1, low_half_mask(1)),
];

/// Transposes a 128 x 128 bit matrix in place: afterwards bit `c` of `m[r]` is what bit
/// `r` of `m[c]` was (bit `c` of a word is `(word >> c) & 1`).
pub(crate) fn transpose128(m: &mut [u128; 128]) {
    for (w, mask) in ROUNDS {
        // In every 2w x 2w tile, swap the top-right w x w block (rows r, bit columns
        // c + w) with the bottom-left one (rows r + w, bit columns c).
        for tile in (0..128).step_by(2 * w) {
            for r in tile..tile + w {
                let t = ((m[r] >> w) ^ m[r + w]) & mask;
                m[r + w] ^= t;
                m[r] ^= t << w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_bit_by_bit_transpose() {
        let mut x = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834_u128;
        let mut m = [0u128; 128];
        for w in m.iter_mut() {
            // xorshift128-style scramble: enough to exercise every bit position.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *w = x;
        }
        let original = m;
        transpose128(&mut m);
        for (r, row) in m.iter().enumerate() {
            for (c, col) in original.iter().enumerate() {
                assert_eq!((row >> c) & 1, (col >> r) & 1, "bit ({r}, {c})");
            }
        }
        transpose128(&mut m);
        assert_eq!(m, original, "transposing twice is the identity");
    }

    #[test]
    fn masks_are_the_expected_patterns() {
        assert_eq!(low_half_mask(1), 0x5555_5555_5555_5555_5555_5555_5555_5555);
        assert_eq!(low_half_mask(4), 0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f);
        assert_eq!(low_half_mask(32), 0x0000_0000_ffff_ffff_0000_0000_ffff_ffff);
        assert_eq!(low_half_mask(64), u64::MAX as u128);
    }
}
