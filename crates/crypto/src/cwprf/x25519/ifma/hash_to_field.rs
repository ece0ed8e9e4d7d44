//! RFC 9380 `hash_to_field` for GF(2^255 - 19) with `expand_message_xmd` and SHA-512
//! (Sec. 5.2 and 5.3.1; `L = 48`, two elements per message), for eight messages at
//! once (SHA-512 in lanes, `sha512x8`).

use sha2_011::{Digest, Sha512};

use super::sha512x8::{self, BLOCK};

/// `L = ceil((ceil(log2(p)) + k) / 8)` bytes per field element for `k = 128`.
const L: usize = 48;
/// Bytes requested from `expand_message_xmd`: two field elements.
const LEN_IN_BYTES: usize = 2 * L;

/// The per-tag part of `expand_message_xmd`, computed once per chunk: `DST'` and the
/// SHA-512 chaining value after the all-zero block `Z_pad` (the first block of every
/// `msg'`).
pub(super) struct Expander {
    dst_prime: Vec<u8>,
    after_z_pad: [u64; 8],
}

impl Expander {
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
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
            after_z_pad: sha512x8::absorb_block(&[0u8; BLOCK]),
        }
    }

    /// The two field elements of each of eight messages, each as four little-endian
    /// 64-bit words of a value below 2^256 congruent to it mod p (not reduced further).
    #[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
    pub(super) fn hash_to_field(&self, msgs: &[&[u8]; 8]) -> [[[u64; 4]; 2]; 8] {
        let dst = &self.dst_prime[..];
        let [hi, lo] = (LEN_IN_BYTES as u16).to_be_bytes();
        let b0_suffix = [hi, lo, 0];
        let b0 = sha512x8::finish(
            &self.after_z_pad,
            BLOCK,
            &msgs.map(|m| [m, &b0_suffix, dst]),
        );
        let b1 = sha512x8::finish(
            &sha512x8::IV,
            0,
            &core::array::from_fn(|j| [&b0[j][..], &[1], dst]),
        );
        let mut mixed = [[0u8; 64]; 8];
        for ((m, x), y) in mixed.iter_mut().zip(&b0).zip(&b1) {
            for ((m, x), y) in m.iter_mut().zip(x).zip(y) {
                *m = x ^ y;
            }
        }
        let b2 = sha512x8::finish(
            &sha512x8::IV,
            0,
            &core::array::from_fn(|j| [&mixed[j][..], &[2], dst]),
        );
        core::array::from_fn(|j| {
            let mut uniform = [0u8; LEN_IN_BYTES];
            uniform[..64].copy_from_slice(&b1[j]);
            uniform[64..].copy_from_slice(&b2[j][..LEN_IN_BYTES - 64]);
            [
                reduce_384(uniform[..L].try_into().expect("48 bytes")),
                reduce_384(uniform[L..].try_into().expect("48 bytes")),
            ]
        })
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
