//! The PRG both OT-extension flavours stretch seeds with: AES-128 in counter mode.
//!
//! SoftSpokenOT stretches every GGM leaf into a column ([`super::subspace`]); the KKRT
//! OPRF ([`crate::oprf`]) stretches every base-OT seed into a column. Either way a
//! column is read in stretches, in parallel, so the stream is seekable: bytes
//! `[o, o + n)` are the counter blocks from `o / 16` on, whoever asks first.

use aws_lc_rs::cipher::{AES_128, EncryptingKey, EncryptionContext, UnboundCipherKey};
use aws_lc_rs::iv::FixedLength;

use super::base::Seed;

/// The stream of one seed: AES-128 in counter mode keyed by the seed, the counter (128
/// bits, big-endian) starting at zero. aws-lc-rs wipes the key schedule when dropped.
pub(crate) struct CtrStream(EncryptingKey);

impl CtrStream {
    pub(crate) fn new(seed: &Seed) -> Self {
        let key = UnboundCipherKey::new(&AES_128, seed).expect("a 16-byte AES-128 key");
        Self(EncryptingKey::ctr(key).expect("AES-128 supports counter mode"))
    }

    /// Overwrites `out` with the stream's bytes from `offset` (a multiple of 16) on.
    pub(crate) fn fill(&self, offset: usize, out: &mut [u8]) {
        debug_assert_eq!(offset % 16, 0);
        out.fill(0);
        let counter = ((offset / 16) as u128).to_be_bytes();
        self.0
            .less_safe_encrypt(out, EncryptionContext::Iv128(FixedLength::from(counter)))
            .expect("counter mode accepts any length");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_one_counter_sequence() {
        let s = CtrStream::new(&[7; 16]);
        let mut whole = vec![0u8; 96];
        s.fill(0, &mut whole);
        let mut tail = vec![0u8; 48];
        s.fill(48, &mut tail);
        assert_eq!(whole[48..], tail[..]);
        assert_ne!(whole[..16], whole[16..32]);
    }
}
