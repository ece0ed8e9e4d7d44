//! SHA-256 of a fixed 64-byte prefix followed by a short message, in one compression.
//!
//! Protocols hash millions of short inputs under one session key: the row hash of OT
//! extension, the item and tag hashes of VOLE psi. The prefix (a domain tag and a key,
//! exactly one SHA-256 block) is compressed once; a message of at most 55 bytes then
//! costs one more compression with its padding written in place, instead of the
//! `Digest` API's state copy, buffering and finalisation (measured: about a third of
//! the hashing time at 2^20 items). Longer messages take the `Digest` path. Either way
//! the output is exactly `SHA-256(prefix || message)`.

use sha2::digest::generic_array::GenericArray;
use sha2::{Digest, Sha256};

/// SHA-256's initial state (FIPS 180-4, Sec. 5.3.3).
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
/// Longest message that fits with its padding in the one block after the prefix.
const ONE_BLOCK: usize = 55;

/// `SHA-256(prefix || message)` for a fixed 64-byte prefix.
#[derive(Clone)]
pub struct PrefixedSha256 {
    prefix: [u8; 64],
    state: [u32; 8],
}

impl PrefixedSha256 {
    pub fn new(prefix: [u8; 64]) -> Self {
        let mut state = IV;
        sha2::compress256(&mut state, &[GenericArray::clone_from_slice(&prefix)]);
        Self { prefix, state }
    }

    /// A prefix made of a tag (at most 32 bytes, zero-padded) and a 32-byte key.
    pub fn with_tag_and_key(tag: &[u8], key: &[u8; 32]) -> Self {
        assert!(tag.len() <= 32, "tag longer than 32 bytes");
        let mut prefix = [0u8; 64];
        prefix[..tag.len()].copy_from_slice(tag);
        prefix[32..].copy_from_slice(key);
        Self::new(prefix)
    }

    /// `SHA-256(prefix || message)`.
    pub fn hash(&self, message: &[u8]) -> [u8; 32] {
        if message.len() > ONE_BLOCK {
            return Sha256::new()
                .chain_update(self.prefix)
                .chain_update(message)
                .finalize()
                .into();
        }
        let mut block = GenericArray::default();
        block[..message.len()].copy_from_slice(message);
        block[message.len()] = 0x80;
        let bits = ((64 + message.len()) as u64) * 8;
        block[56..].copy_from_slice(&bits.to_be_bytes());
        let mut state = self.state;
        sha2::compress256(&mut state, &[block]);
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// [`Self::hash`] of two parts, `a || b`.
    pub fn hash2(&self, a: &[u8], b: &[u8]) -> [u8; 32] {
        let mut joined = [0u8; ONE_BLOCK];
        if a.len() + b.len() <= ONE_BLOCK {
            joined[..a.len()].copy_from_slice(a);
            joined[a.len()..a.len() + b.len()].copy_from_slice(b);
            return self.hash(&joined[..a.len() + b.len()]);
        }
        Sha256::new()
            .chain_update(self.prefix)
            .chain_update(a)
            .chain_update(b)
            .finalize()
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_sha256_of_the_concatenation() {
        let mut prefix = [0u8; 64];
        for (i, b) in prefix.iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        let h = PrefixedSha256::new(prefix);
        let message: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
        for len in 0..200 {
            let expected: [u8; 32] = Sha256::new()
                .chain_update(prefix)
                .chain_update(&message[..len])
                .finalize()
                .into();
            assert_eq!(h.hash(&message[..len]), expected, "length {len}");
            let (a, b) = message[..len].split_at(len / 3);
            assert_eq!(h.hash2(a, b), expected, "length {len}, split");
        }
    }
}
