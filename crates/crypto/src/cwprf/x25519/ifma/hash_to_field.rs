//! RFC 9380 `hash_to_field` for GF(2^255 - 19) with `expand_message_xmd` and SHA-512
//! (Sec. 5.2 and 5.3.1; `L = 48`, two elements per message), one item at a time: only
//! the field arithmetic after it runs in lanes.

use sha2_011::{Digest, Sha512};

/// `L = ceil((ceil(log2(p)) + k) / 8)` bytes per field element for `k = 128`.
const L: usize = 48;
/// Bytes requested from `expand_message_xmd`: two field elements.
const LEN_IN_BYTES: usize = 2 * L;
/// SHA-512's input block size (`s_in_bytes`).
const BLOCK: usize = 128;

/// The per-tag part of `expand_message_xmd`, computed once per chunk: `DST'` and the
/// hash state after the all-zero block `Z_pad` (the first block of every `msg'`).
pub(super) struct Expander {
    dst_prime: Vec<u8>,
    after_z_pad: Sha512,
}

impl Expander {
    pub(super) fn new(dst: &[u8]) -> Self {
        let mut dst_prime = if dst.len() > 255 {
            Sha512::new()
                .chain_update(b"H2C-OVERSIZE-DST-")
                .chain_update(dst)
                .finalize()
                .to_vec()
        } else {
            dst.to_vec()
        };
        dst_prime.push(dst_prime.len() as u8);
        Expander {
            dst_prime,
            after_z_pad: Sha512::new().chain_update([0u8; BLOCK]),
        }
    }

    /// The two field elements of `msg`, each as four little-endian 64-bit words of a
    /// value below 2^256 congruent to it mod p (not reduced further).
    pub(super) fn hash_to_field(&self, msg: &[u8]) -> [[u64; 4]; 2] {
        let b0 = self
            .after_z_pad
            .clone()
            .chain_update(msg)
            .chain_update((LEN_IN_BYTES as u16).to_be_bytes())
            .chain_update([0u8])
            .chain_update(&self.dst_prime)
            .finalize();
        let b1 = Sha512::new()
            .chain_update(b0)
            .chain_update([1u8])
            .chain_update(&self.dst_prime)
            .finalize();
        let mut mixed = [0u8; 64];
        for ((m, x), y) in mixed.iter_mut().zip(&b0).zip(&b1) {
            *m = x ^ y;
        }
        let b2 = Sha512::new()
            .chain_update(mixed)
            .chain_update([2u8])
            .chain_update(&self.dst_prime)
            .finalize();
        let mut uniform = [0u8; 128];
        uniform[..64].copy_from_slice(&b1);
        uniform[64..].copy_from_slice(&b2);
        [
            reduce_384(uniform[..L].try_into().expect("48 bytes")),
            reduce_384(uniform[L..LEN_IN_BYTES].try_into().expect("48 bytes")),
        ]
    }
}

/// A 48-byte big-endian integer `x < 2^384` as a value below 2^256 congruent to it mod
/// p: with `x = hi 2^256 + lo` and `2^256 = 38 (mod p)`, `lo + 38 hi < 2^256 + 2^134`,
/// and the carry out of bit 256 (0 or 1) is folded once more as 38. Straight-line:
/// the field elements are private data.
fn reduce_384(be: &[u8; 48]) -> [u64; 4] {
    let word = |i: usize| u64::from_be_bytes(be[40 - 8 * i..48 - 8 * i].try_into().expect("8"));
    let lo = [word(0), word(1), word(2), word(3)];
    let hi = [word(4), word(5)];
    let mut out = [0u64; 4];
    let mut carry: u128 = 0;
    for i in 0..4 {
        let fold = if i < 2 { u128::from(hi[i]) * 38 } else { 0 };
        let sum = u128::from(lo[i]) + fold + carry;
        out[i] = sum as u64;
        carry = sum >> 64;
    }
    // `carry` is 0 or 1; adding 38 to a value below 2^134 cannot carry again.
    let mut extra = carry * 38;
    for w in out.iter_mut() {
        let sum = u128::from(*w) + extra;
        *w = sum as u64;
        extra = sum >> 64;
    }
    out
}
