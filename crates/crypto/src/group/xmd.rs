//! RFC 9380 §5.3.1 `expand_message_xmd`, generic over a Merkle–Damgård hash (SHA-256,
//! SHA-512).
//!
//! This is the first half of every RFC 9380 `hash_to_field`: it stretches `msg` into
//! `len_in_bytes` uniform bytes, bound to a domain-separation tag (DST) so that the
//! same message hashed under two protocols (or two suites) gives independent outputs.
//! It is written here rather than taken from a curve crate so that both groups use one
//! audited implementation with the same error behaviour, checked against the RFC's
//! Appendix K vectors (`tests/group_vectors.rs`).

use sha2::Digest;
use sha2::digest::core_api::BlockSizeUser;

/// RFC 9380 §5.3.3: the prefix used to shrink a DST longer than 255 bytes.
const OVERSIZE_DST_PREFIX: &[u8] = b"H2C-OVERSIZE-DST-";

/// Largest output hash length we support (SHA-512).
const MAX_HASH_LEN: usize = 64;

/// Why `expand_message_xmd` refused its arguments (the RFC's ABORT cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XmdError {
    /// `len_in_bytes` exceeds 65535 or needs more than 255 hash blocks (§5.3.1 step 2).
    #[error("expand_message_xmd: {len} output bytes is more than the RFC 9380 limit of {max}")]
    OutputTooLong { len: usize, max: usize },
    /// A zero-length output is meaningless and the RFC's vectors never use it.
    #[error("expand_message_xmd: zero output bytes requested")]
    EmptyOutput,
}

/// A hash usable as `H` in expand_message_xmd: SHA-2 family from `sha2` 0.10.
pub trait XmdHash: Digest + BlockSizeUser + Clone {}
impl<D: Digest + BlockSizeUser + Clone> XmdHash for D {}

/// The DST actually used: `dst` itself when it is at most 255 bytes, otherwise
/// `H("H2C-OVERSIZE-DST-" || dst)` as RFC 9380 §5.3.3 prescribes. Returns the buffer
/// and the used length.
fn effective_dst<D: XmdHash>(dst: &[u8]) -> ([u8; 255], usize) {
    let mut out = [0u8; 255];
    if dst.len() <= 255 {
        out[..dst.len()].copy_from_slice(dst);
        (out, dst.len())
    } else {
        let mut h = D::new();
        h.update(OVERSIZE_DST_PREFIX);
        h.update(dst);
        let digest = h.finalize();
        out[..digest.len()].copy_from_slice(&digest);
        (out, digest.len())
    }
}

/// RFC 9380 §5.3.1 `expand_message_xmd(msg, DST, len_in_bytes)` writing `out.len()`
/// uniform bytes into `out`. `msg` is given as parts that are hashed as their
/// concatenation (saves copying a prefix + item into one buffer).
///
/// DSTs longer than 255 bytes are first reduced per §5.3.3 rather than rejected, so
/// every DST is accepted. Fails only when `out` is empty or longer than
/// `min(65535, 255 * hash_len)` (§5.3.1 step 2).
pub fn expand_message_xmd_into<D: XmdHash>(
    msg: &[&[u8]],
    dst: &[u8],
    out: &mut [u8],
) -> Result<(), XmdError> {
    let b_in_bytes = <D as Digest>::output_size();
    debug_assert!(b_in_bytes <= MAX_HASH_LEN);
    let len_in_bytes = out.len();
    let max = (255 * b_in_bytes).min(u16::MAX as usize);
    if len_in_bytes == 0 {
        return Err(XmdError::EmptyOutput);
    }
    if len_in_bytes > max {
        return Err(XmdError::OutputTooLong {
            len: len_in_bytes,
            max,
        });
    }
    let ell = len_in_bytes.div_ceil(b_in_bytes);

    // DST_prime = DST || I2OSP(len(DST), 1)
    let (dst_buf, dst_len) = effective_dst::<D>(dst);
    let dst = &dst_buf[..dst_len];
    let dst_len_byte = [dst_len as u8];

    // b_0 = H(Z_pad || msg || I2OSP(len_in_bytes, 2) || I2OSP(0, 1) || DST_prime),
    // with Z_pad = I2OSP(0, s_in_bytes) (s = the hash's input block size).
    let mut h = D::new();
    let z_pad = [0u8; 128];
    let s_in_bytes = <D as BlockSizeUser>::block_size();
    let mut remaining = s_in_bytes;
    while remaining > 0 {
        let take = remaining.min(z_pad.len());
        h.update(&z_pad[..take]);
        remaining -= take;
    }
    for part in msg {
        h.update(part);
    }
    h.update((len_in_bytes as u16).to_be_bytes());
    h.update([0u8]);
    h.update(dst);
    h.update(dst_len_byte);
    let b0 = h.finalize();

    // b_1 = H(b_0 || I2OSP(1, 1) || DST_prime)
    // b_i = H(strxor(b_0, b_(i-1)) || I2OSP(i, 1) || DST_prime)
    let mut prev = [0u8; MAX_HASH_LEN];
    for i in 1..=ell {
        let mut h = D::new();
        if i == 1 {
            h.update(&b0);
        } else {
            let mut x = [0u8; MAX_HASH_LEN];
            for (j, xj) in x.iter_mut().take(b_in_bytes).enumerate() {
                *xj = b0[j] ^ prev[j];
            }
            h.update(&x[..b_in_bytes]);
        }
        h.update([i as u8]);
        h.update(dst);
        h.update(dst_len_byte);
        let bi = h.finalize();
        prev[..b_in_bytes].copy_from_slice(&bi);
        let start = (i - 1) * b_in_bytes;
        let end = (start + b_in_bytes).min(len_in_bytes);
        out[start..end].copy_from_slice(&bi[..end - start]);
    }
    Ok(())
}

/// RFC 9380 §5.3.1 `expand_message_xmd(msg, DST, len_in_bytes)`, returning a new vector.
pub fn expand_message_xmd<D: XmdHash>(
    msg: &[u8],
    dst: &[u8],
    len_in_bytes: usize,
) -> Result<Vec<u8>, XmdError> {
    if len_in_bytes > u16::MAX as usize {
        return Err(XmdError::OutputTooLong {
            len: len_in_bytes,
            max: (255 * <D as Digest>::output_size()).min(u16::MAX as usize),
        });
    }
    let mut out = vec![0u8; len_in_bytes];
    expand_message_xmd_into::<D>(&[msg], dst, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Sha256, Sha512};

    #[test]
    fn limits() {
        assert_eq!(
            expand_message_xmd::<Sha256>(b"", b"d", 0),
            Err(XmdError::EmptyOutput)
        );
        assert!(expand_message_xmd::<Sha256>(b"", b"d", 255 * 32).is_ok());
        assert!(matches!(
            expand_message_xmd::<Sha256>(b"", b"d", 255 * 32 + 1),
            Err(XmdError::OutputTooLong { .. })
        ));
        assert!(expand_message_xmd::<Sha512>(b"", b"d", 255 * 64).is_ok());
        assert!(expand_message_xmd::<Sha512>(b"", b"d", 255 * 64 + 1).is_err());
        assert!(expand_message_xmd::<Sha512>(b"", b"d", 65536).is_err());
    }

    #[test]
    fn parts_equal_concatenation_and_prefix_consistency() {
        let whole = expand_message_xmd::<Sha512>(b"hello world", b"DST", 100).unwrap();
        let mut parts = [0u8; 100];
        expand_message_xmd_into::<Sha512>(&[b"hello", b" ", b"world"], b"DST", &mut parts).unwrap();
        assert_eq!(whole, parts);
        // Different lengths are domain-separated, not prefixes of each other.
        let short = expand_message_xmd::<Sha512>(b"hello world", b"DST", 64).unwrap();
        assert_ne!(&whole[..64], &short[..]);
    }

    #[test]
    fn oversize_dst_is_hashed_not_truncated() {
        let long = [b'x'; 300];
        let a = expand_message_xmd::<Sha256>(b"m", &long, 32).unwrap();
        let mut h = Sha256::new();
        h.update(OVERSIZE_DST_PREFIX);
        h.update(long);
        let short = h.finalize();
        let b = expand_message_xmd::<Sha256>(b"m", &short, 32).unwrap();
        assert_eq!(a, b);
    }
}
