//! Fixed-width bit packing: values of `bits` bits each, least significant first, in
//! 64-bit words. The database's plaintexts (log2 t bits a coefficient,
//! [`super::packed`]) and the results a server returns ([`super::result`]) are kept
//! and sent this way.

/// 64-bit words that hold `count` values of `bits` bits.
pub fn words_for(count: usize, bits: u32) -> usize {
    (count * bits as usize).div_ceil(64)
}

/// Bytes that hold `count` values of `bits` bits.
pub fn bytes_for(count: usize, bits: u32) -> usize {
    (count * bits as usize).div_ceil(8)
}

/// `values` (each below 2^bits, 1 <= bits <= 64), packed into [`words_for`] words.
pub fn pack(values: impl IntoIterator<Item = u64>, bits: u32, count: usize) -> Vec<u64> {
    debug_assert!((1..=64).contains(&bits));
    let bits = bits as usize;
    let mut words = vec![0u64; words_for(count, bits as u32)];
    for (i, v) in values.into_iter().take(count).enumerate() {
        let (at, shift) = ((i * bits) / 64, (i * bits) % 64);
        words[at] |= v << shift;
        if shift + bits > 64 {
            words[at + 1] |= v >> (64 - shift);
        }
    }
    words
}

/// The first `count` values of `bits` bits in `words` (which must hold them).
pub fn unpack(words: &[u64], bits: u32, count: usize) -> impl Iterator<Item = u64> + '_ {
    let bits = bits as usize;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    (0..count).map(move |i| {
        let (at, shift) = ((i * bits) / 64, (i * bits) % 64);
        let mut v = words[at] >> shift;
        if shift + bits > 64 {
            v |= words[at + 1] << (64 - shift);
        }
        v & mask
    })
}

/// Packed words as little-endian bytes, cut to the [`bytes_for`] bytes that hold
/// `count` values of `bits` bits.
pub fn to_bytes(words: &[u64], count: usize, bits: u32) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.truncate(bytes_for(count, bits));
    out
}

/// Words from bytes written by [`to_bytes`]: `None` unless there are exactly
/// [`bytes_for`] of them and the bits past the last value are zero (one encoding per
/// list of values).
pub fn from_bytes(bytes: &[u8], count: usize, bits: u32) -> Option<Vec<u64>> {
    if bytes.len() != bytes_for(count, bits) {
        return None;
    }
    let mut words = vec![0u64; words_for(count, bits)];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut le = [0u8; 8];
        le[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_le_bytes(le);
    }
    let used = count * bits as usize;
    let tail = used % 64;
    if tail != 0 && words.last().is_some_and(|&w| w >> tail != 0) {
        return None;
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_at_every_width() {
        for bits in [1u32, 7, 22, 33, 36, 60, 63, 64] {
            for count in [0usize, 1, 5, 64, 1000] {
                let top = if bits == 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                };
                let values: Vec<u64> = (0..count as u64)
                    .map(|i| top.wrapping_sub(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & top)
                    .collect();
                let words = pack(values.iter().copied(), bits, count);
                assert_eq!(words.len(), words_for(count, bits));
                assert_eq!(unpack(&words, bits, count).collect::<Vec<_>>(), values);
                let bytes = to_bytes(&words, count, bits);
                assert_eq!(bytes.len(), bytes_for(count, bits));
                assert_eq!(from_bytes(&bytes, count, bits).as_ref(), Some(&words));
            }
        }
    }

    #[test]
    fn bytes_of_the_wrong_length_or_with_stray_bits_are_refused() {
        let words = pack([5u64, 6, 7], 22, 3);
        let bytes = to_bytes(&words, 3, 22);
        assert_eq!(bytes.len(), 9);
        assert!(from_bytes(&bytes[..8], 3, 22).is_none());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(from_bytes(&longer, 3, 22).is_none());
        // 66 bits used of 72: a bit set in the last 6 is refused.
        let mut stray = bytes.clone();
        stray[8] |= 0x80;
        assert!(from_bytes(&stray, 3, 22).is_none());
    }
}
