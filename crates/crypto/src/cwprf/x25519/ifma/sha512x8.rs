//! SHA-512 (FIPS 180-4) on eight messages at once, one per 64-bit lane of AVX-512
//! vectors, for RFC 9380's `expand_message_xmd`: three short hashes per hashed item,
//! which cost as much as the Elligator map when done one item at a time.
//!
//! The lanes start from the same chaining value (the IV, or the state after a common
//! prefix block) and may have different lengths: a lane whose message has fewer blocks
//! simply keeps its state while the others compress (a masked add).

use core::arch::x86_64::*;

use crate::curve25519x8::field::{from_u64s, to_u64s};

/// Bytes of a SHA-512 block.
pub(super) const BLOCK: usize = 128;

/// The round constants: the first 64 bits of the fractional parts of the cube roots of
/// the first 80 primes (FIPS 180-4 Sec. 4.2.3).
const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// The initial hash value: the first 64 bits of the fractional parts of the square
/// roots of the first 8 primes (FIPS 180-4 Sec. 5.3.5).
pub(super) const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// `x ^ y ^ z`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn xor3(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<0x96>(x, y, z)
}

/// One compression of eight blocks (one per lane) into `state`, in the lanes of
/// `active` only.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
fn compress(state: &mut [__m512i; 8], blocks: &[[u8; BLOCK]; 8], active: __mmask8) {
    let mut w = [_mm512_setzero_si512(); 16];
    for (t, w) in w.iter_mut().enumerate() {
        let mut words = [0u64; 8];
        for (word, block) in words.iter_mut().zip(blocks) {
            *word = u64::from_be_bytes(block[8 * t..8 * t + 8].try_into().expect("8 bytes"));
        }
        *w = from_u64s(words);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for (t, k) in K.iter().enumerate() {
        if t >= 16 {
            let w15 = w[(t + 1) % 16];
            let w2 = w[(t + 14) % 16];
            let s0 = xor3(
                _mm512_ror_epi64::<1>(w15),
                _mm512_ror_epi64::<8>(w15),
                _mm512_srli_epi64::<7>(w15),
            );
            let s1 = xor3(
                _mm512_ror_epi64::<19>(w2),
                _mm512_ror_epi64::<61>(w2),
                _mm512_srli_epi64::<6>(w2),
            );
            let sum = _mm512_add_epi64(_mm512_add_epi64(s0, s1), w[(t + 9) % 16]);
            w[t % 16] = _mm512_add_epi64(w[t % 16], sum);
        }
        let big_s1 = xor3(
            _mm512_ror_epi64::<14>(e),
            _mm512_ror_epi64::<18>(e),
            _mm512_ror_epi64::<41>(e),
        );
        let ch = _mm512_ternarylogic_epi64::<0xca>(e, f, g); // e ? f : g
        let t1 = _mm512_add_epi64(
            _mm512_add_epi64(h, big_s1),
            _mm512_add_epi64(
                _mm512_add_epi64(ch, _mm512_set1_epi64(*k as i64)),
                w[t % 16],
            ),
        );
        let big_s0 = xor3(
            _mm512_ror_epi64::<28>(a),
            _mm512_ror_epi64::<34>(a),
            _mm512_ror_epi64::<39>(a),
        );
        let maj = _mm512_ternarylogic_epi64::<0xe8>(a, b, c); // majority
        let t2 = _mm512_add_epi64(big_s0, maj);
        h = g;
        g = f;
        f = e;
        e = _mm512_add_epi64(d, t1);
        d = c;
        c = b;
        b = a;
        a = _mm512_add_epi64(t1, t2);
    }
    for (s, x) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = _mm512_mask_add_epi64(*s, active, *s, x);
    }
}

/// The chaining value after one block, from the IV (the same block in every lane).
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn absorb_block(block: &[u8; BLOCK]) -> [u64; 8] {
    let mut state = IV.map(|v| _mm512_set1_epi64(v as i64));
    compress(&mut state, &[*block; 8], 0xff);
    state.map(|v| to_u64s(v)[0])
}

/// SHA-512 of `prefix || tails[j]` for each lane `j`, where every lane has already
/// absorbed the same `prefix_len` bytes (a multiple of the block size) into `start`.
/// Each tail is given as parts, concatenated.
#[target_feature(enable = "avx512f,avx512vl,avx512ifma")]
pub(super) fn finish(
    start: &[u64; 8],
    prefix_len: usize,
    tails: &[[&[u8]; 3]; 8],
) -> [[u8; 64]; 8] {
    // Every lane padded to the same number of blocks, in one buffer: lane j's message
    // and padding are at [j * span, (j + 1) * span); lanes whose padded message is
    // shorter than `span` stop being updated after their last block.
    let lens: [usize; 8] = core::array::from_fn(|j| tails[j].iter().map(|p| p.len()).sum());
    let blocks_of = |len: usize| (len + 17).div_ceil(BLOCK);
    let blocks = lens.iter().map(|&len| blocks_of(len)).max().unwrap_or(0);
    let span = blocks * BLOCK;
    let mut padded = vec![0u8; 8 * span];
    for (j, (parts, &len)) in tails.iter().zip(&lens).enumerate() {
        let lane = &mut padded[j * span..(j + 1) * span];
        let mut at = 0;
        for part in parts {
            lane[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        lane[len] = 0x80;
        let end = blocks_of(len) * BLOCK;
        let bits = ((prefix_len + len) as u128) * 8;
        lane[end - 16..end].copy_from_slice(&bits.to_be_bytes());
    }
    let mut state = start.map(|v| _mm512_set1_epi64(v as i64));
    for i in 0..blocks {
        let mut chunk = [[0u8; BLOCK]; 8];
        let mut active: __mmask8 = 0;
        for (j, (c, &len)) in chunk.iter_mut().zip(&lens).enumerate() {
            if i < blocks_of(len) {
                let at = j * span + i * BLOCK;
                c.copy_from_slice(&padded[at..at + BLOCK]);
                active |= 1 << j;
            }
        }
        compress(&mut state, &chunk, active);
    }
    let words = state.map(|v| to_u64s(v));
    let mut out = [[0u8; 64]; 8];
    for (j, digest) in out.iter_mut().enumerate() {
        for (i, w) in words.iter().enumerate() {
            digest[8 * i..8 * i + 8].copy_from_slice(&w[j].to_be_bytes());
        }
    }
    out
}
