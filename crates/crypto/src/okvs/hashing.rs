//! The row of a key: its start position and its random band, from `(seed, key)`.
//!
//! Three AES-128 keys are derived from the seed, `K_j = SHA-256(DOMAIN || j || seed)[..16]`
//! for `j = 0, 1, 2`, and a key `x` (a `u128`, as 16 little-endian bytes) is mapped to
//! the blocks `F_j(x) = AES^-1_{K_j}(x)`, AES *decryption*: block 0 gives the start,
//! blocks 1 and 2 the band bits.
//!
//! Why this is as good as truly random rows for the failure probability: the seed is
//! drawn fresh, after the keys are fixed ([`super::encode_retrying`] draws one per try),
//! so the `K_j` are unknown when the keys are chosen, and AES under a random key is a
//! pseudorandom permutation, its inverse too. On `n` distinct inputs a random permutation
//! differs from a random function by at most `n^2 / 2^129` (the PRP/PRF switching lemma;
//! below `2^-72` for the largest OKVS, `2^28` keys), and independent keys make the three
//! blocks of one key independent. Whether a set of rows is singular is decided in
//! polynomial time, so a failure rate noticeably above that of random rows would
//! distinguish AES from a random function. No assumption is made on the keys beyond
//! being distinct: unlike a mixing of `x` with `x XOR j`, the three blocks come from three
//! keys, so keys that differ in one bit (`0, 1, 2, ...` in tests) still get independent
//! rows. The keys the PSI passes are random-oracle outputs anyway, and the seed is public
//! once sent: that is harmless, since by then the rows are fixed and only their rank
//! mattered.
//!
//! Why decryption: aws-lc's ECB mode runs one block at a time, while CBC *decryption*
//! (`P_i = AES^-1(C_i) XOR C_{i-1}`) works on eight independent blocks at once (AES-NI
//! pipelined). A batch of keys is CBC-decrypted as one message with a zero IV and each
//! block is XORed with the key before it, which leaves `AES^-1(x_i)`: about five times
//! faster than ECB here.

use aws_lc_rs::cipher::{AES_128, DecryptingKey, DecryptionContext, UnboundCipherKey};
use aws_lc_rs::iv::FixedLength;
use sha2::{Digest, Sha256};

use super::OKVS_SEED_LEN;
use super::params::{MAX_BAND_WIDTH, OkvsParams};

/// Domain of the AES keys derived from a seed.
const DOMAIN: &[u8] = b"privset/okvs/random-band/v1";

/// 64-bit words of a band relative to its start (`MAX_BAND_WIDTH` bits).
pub(crate) const BAND_WORDS: usize = MAX_BAND_WIDTH / 64;

/// Keys hashed per AES call: large enough to keep the AES pipeline full, small enough for
/// the buffers to stay in L1.
pub(crate) const BATCH: usize = 512;

/// The hash of one OKVS shape and seed to rows.
pub(crate) struct RowHasher {
    start_key: DecryptingKey,
    band_keys: [DecryptingKey; 2],
    /// Number of start positions, `columns - band_width + 1`.
    range: u64,
    width: usize,
}

fn aes_key(seed: &[u8; OKVS_SEED_LEN], j: u8) -> DecryptingKey {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update([j]);
    h.update(seed);
    let d: [u8; 32] = h.finalize().into();
    let key = UnboundCipherKey::new(&AES_128, &d[..16]).expect("a 16-byte AES-128 key");
    DecryptingKey::cbc(key).expect("AES-128 supports CBC")
}

/// `AES^-1_key(k)` for every key, through CBC decryption (module docs).
fn prf<'a>(
    key: &DecryptingKey,
    keys: &'a [u128],
    buf: &'a mut Vec<u8>,
) -> impl Iterator<Item = u128> + 'a {
    buf.clear();
    for k in keys {
        buf.extend_from_slice(&k.to_le_bytes());
    }
    key.decrypt(buf, DecryptionContext::Iv128(FixedLength::from([0u8; 16])))
        .expect("CBC decrypts whole blocks");
    let buf: &'a [u8] = buf;
    buf.chunks_exact(16)
        .map(|b| u128::from_le_bytes(b.try_into().expect("16-byte chunk")))
        .zip(std::iter::once(0).chain(keys.iter().copied()))
        .map(|(p, previous)| p ^ previous)
}

impl RowHasher {
    pub(crate) fn new(params: &OkvsParams, seed: &[u8; OKVS_SEED_LEN]) -> Self {
        Self {
            start_key: aes_key(seed, 0),
            band_keys: [aes_key(seed, 1), aes_key(seed, 2)],
            range: (params.columns - params.band_width + 1) as u64,
            width: params.band_width,
        }
    }

    /// Number of start positions.
    pub(crate) fn range(&self) -> usize {
        self.range as usize
    }

    /// Band width in bits.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// `out[i]` = the start of `keys[i]`, uniform in `[0, range)`: the 128-bit block times
    /// `range`, high bits (a multiply-shift over all 128 bits, so the bias is below
    /// `range / 2^128` per key).
    pub(crate) fn starts(&self, keys: &[u128], out: &mut [u32]) {
        debug_assert_eq!(keys.len(), out.len());
        let mut buf = Vec::with_capacity(BATCH * 16);
        for (ks, os) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            for (b, o) in prf(&self.start_key, ks, &mut buf).zip(os.iter_mut()) {
                *o = self.start_of(b);
            }
        }
    }

    fn start_of(&self, block: u128) -> u32 {
        let lo = (block as u64 as u128 * self.range as u128) >> 64;
        let hi = (block >> 64) * self.range as u128 + lo;
        (hi >> 64) as u32
    }

    /// `out[i]` = the band of `keys[i]`: bit `j` of the band (bit `j % 64` of word
    /// `j / 64`) is the coefficient of column `start + j`. Bits from `band_width` on are
    /// zero and bit 0 is forced to 1, as Bienstock et al. do, so no band is zero and a
    /// row's first set bit is at its start before elimination.
    pub(crate) fn bands(&self, keys: &[u128], out: &mut [[u64; BAND_WORDS]]) {
        debug_assert_eq!(keys.len(), out.len());
        let mut buf = Vec::with_capacity(BATCH * 16);
        for (ks, os) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            for (half, key) in self.band_keys.iter().enumerate() {
                if half * 128 >= self.width {
                    for o in os.iter_mut() {
                        o[2 * half] = 0;
                        o[2 * half + 1] = 0;
                    }
                    continue;
                }
                for (b, o) in prf(key, ks, &mut buf).zip(os.iter_mut()) {
                    o[2 * half] = b as u64;
                    o[2 * half + 1] = (b >> 64) as u64;
                }
            }
            for o in os.iter_mut() {
                self.finish_band(o);
            }
        }
    }

    fn finish_band(&self, band: &mut [u64; BAND_WORDS]) {
        for (t, word) in band.iter_mut().enumerate() {
            let low = t * 64;
            if low >= self.width {
                *word = 0;
            } else if self.width - low < 64 {
                *word &= (1u64 << (self.width - low)) - 1;
            }
        }
        band[0] |= 1;
    }

    /// The row of one key.
    #[cfg(test)]
    pub(crate) fn row(&self, key: u128) -> (usize, [u64; BAND_WORDS]) {
        let mut s = [0u32];
        let mut b = [[0u64; BAND_WORDS]];
        self.starts(&[key], &mut s);
        self.bands(&[key], &mut b);
        (s[0] as usize, b[0])
    }
}

/// The band shifted left by `shift < 64` bits into `N` words (`N * 64 >= width + shift`).
#[inline(always)]
pub(crate) fn shifted<const N: usize>(band: &[u64; BAND_WORDS], shift: usize) -> [u64; N] {
    let mut out = [0u64; N];
    if shift == 0 {
        let n = N.min(BAND_WORDS);
        out[..n].copy_from_slice(&band[..n]);
        return out;
    }
    for (t, o) in out.iter_mut().enumerate() {
        let cur = if t < BAND_WORDS { band[t] << shift } else { 0 };
        let prev = if t >= 1 && t - 1 < BAND_WORDS {
            band[t - 1] >> (64 - shift)
        } else {
            0
        };
        *o = cur | prev;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(columns: usize, band_width: usize) -> OkvsParams {
        OkvsParams {
            items: 1,
            columns,
            band_width,
        }
    }

    #[test]
    fn starts_cover_the_range_and_bands_fit_the_width() {
        let p = params(1000, 100);
        let h = RowHasher::new(&p, &[3; 16]);
        let keys: Vec<u128> = (0..20_000).collect();
        let mut s = vec![0u32; keys.len()];
        h.starts(&keys, &mut s);
        assert!(s.iter().all(|&x| (x as usize) <= 900));
        assert!(s.contains(&0) && s.contains(&900));
        let mut b = vec![[0u64; BAND_WORDS]; keys.len()];
        h.bands(&keys, &mut b);
        for band in &b {
            assert_eq!(band[0] & 1, 1);
            assert_eq!(band[1] >> 36, 0);
            assert_eq!(band[2] | band[3], 0);
        }
        // Bits are about half ones: 20 000 bands of 100 bits.
        let ones: u32 = b.iter().flatten().map(|w| w.count_ones()).sum();
        let expect = 20_000.0 * 50.5;
        assert!((ones as f64 - expect).abs() < 0.01 * expect, "{ones}");
    }

    #[test]
    fn the_batched_prf_is_aes_decryption_of_each_key() {
        let d = aes_key(&[4; 16], 1);
        let keys: Vec<u128> = (0..40).map(|i| i * 0x0123_4567_89ab_cdef).collect();
        let mut buf = Vec::new();
        let batched: Vec<u128> = prf(&d, &keys, &mut buf).collect();
        for (k, b) in keys.iter().zip(&batched) {
            let one: Vec<u128> = prf(&d, &[*k], &mut buf).collect();
            assert_eq!(one, [*b]);
        }
        // A single block with a zero IV is plain AES decryption: FIPS-197 Appendix C.1's
        // key and ciphertext give its plaintext.
        let key = UnboundCipherKey::new(
            &AES_128,
            &hex::decode("000102030405060708090a0b0c0d0e0f").unwrap(),
        )
        .unwrap();
        let d = DecryptingKey::cbc(key).unwrap();
        let c = u128::from_le_bytes(
            hex::decode("69c4e0d86a7b0430d8cdb78070b4c55a")
                .unwrap()
                .try_into()
                .unwrap(),
        );
        let p: Vec<u128> = prf(&d, &[c], &mut buf).collect();
        assert_eq!(
            p[0].to_le_bytes().to_vec(),
            hex::decode("00112233445566778899aabbccddeeff").unwrap()
        );
    }

    #[test]
    fn the_seed_picks_the_rows() {
        let p = params(1 << 16, 256);
        let a = RowHasher::new(&p, &[1; 16]);
        let b = RowHasher::new(&p, &[2; 16]);
        assert_eq!(a.row(5), a.row(5));
        assert_ne!(a.row(5), b.row(5));
        assert_ne!(a.row(5), a.row(4));
    }

    #[test]
    fn shifting_moves_every_bit() {
        let band = [u64::MAX, 1, 1 << 63, 5];
        let s: [u64; 5] = shifted(&band, 3);
        assert_eq!(s, [u64::MAX << 3, (1 << 3) | 7, 0, (1 << 2) | (5 << 3), 0]);
        let z: [u64; 4] = shifted(&band, 0);
        assert_eq!(z, band);
    }
}
