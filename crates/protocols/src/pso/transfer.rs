//! The oblivious-transfer step of Chen et al. 2024, Fig. 7: what the sender transfers for each
//! operation, masked with the keys of one random OT per item.
//!
//! Every operation needs at most one masked message per item, because the message for
//! one choice can be the random OT key itself (the standard derandomisation):
//!
//! | operation | choice 0 gives             | choice 1 gives              | sent per item        |
//! |-----------|----------------------------|-----------------------------|----------------------|
//! | psi       | nothing                    | tag(x_i)                    | `tag ^ pad(K1)`      |
//! | psu       | x_i                        | nothing                     | `enc(x_i) ^ pad(K0)` |
//! | card-sum  | r_i = int(K0)              | r_i + v_i                   | `r_i + v_i - int(K1)`|
//! | psi-share | r_i = pad(K0)              | r_i ^ enc(x_i)              | `r_i ^ enc(x_i) ^ pad(K1)` |
//!
//! The receiver's choice is its indicator bit `e_i`; it learns only the message of that
//! choice (OT security). For psi the receiver learns a keyed tag of each intersection
//! item rather than the item, and maps it back to its own copy: the items are in `Y` by
//! definition, and a tag costs `40 + log2(n1 n2)` bits (10 bytes at 2^20 a side)
//! whatever the identifier length.
//! psu and psi-share transfer the identifier itself in a fixed-width slot
//! ([`encode_item`]) so the payload length says nothing about which item is which.

use privset_crypto::ot::{self, OtReceiverKeys, OtSenderKeys};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::MAX_ITEM_LEN;
use crate::error::{InputError, PeerMisbehaved, ProtocolError};

/// Key-derivation purpose of the tag key.
pub const TAG_KEY: &str = "pso/item-tag";

/// Bytes of an item tag (psi) for `n1` receiver and `n2` sender items: enough bits that
/// a tag the receiver opens matches a wrong one of its items with probability at most
/// 2^-40 over the whole run (`40 + log2(n1) + log2(n2)` bits), at least 8 bytes and at
/// most 32 (SHA-256).
pub fn tag_len(n1: u64, n2: u64) -> usize {
    let log = |n: u64| 64 - n.max(1).leading_zeros() as usize;
    (40 + log(n1) + log(n2)).div_ceil(8).clamp(8, 32)
}

/// The keyed tag of an identifier (psi): SHA-256 under a session key, truncated to
/// `len` bytes (see [`tag_len`]).
pub fn item_tag(key: &[u8; 32], item: &[u8], len: usize) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(key);
    h.update(item);
    h.finalize()[..len].to_vec()
}

/// Width of an identifier slot for identifiers of at most `max_len` bytes.
pub fn item_width(max_len: usize) -> usize {
    max_len + 2
}

/// An identifier in a fixed-width slot: 2-byte big-endian length, the bytes, zeros.
pub fn encode_item(item: &[u8], width: usize) -> Vec<u8> {
    let mut out = vec![0u8; width];
    out[..2].copy_from_slice(&(item.len() as u16).to_be_bytes());
    out[2..2 + item.len()].copy_from_slice(item);
    out
}

/// Inverse of [`encode_item`]; a slot that is not a valid encoding is the peer's fault.
pub fn decode_item(slot: &[u8]) -> Result<&[u8], ProtocolError> {
    let bad = || PeerMisbehaved::Malformed("transferred identifier slot is not canonical".into());
    let len = u16::from_be_bytes([slot[0], slot[1]]) as usize;
    if len > MAX_ITEM_LEN || 2 + len > slot.len() || slot[2 + len..].iter().any(|&b| b != 0) {
        return Err(bad().into());
    }
    Ok(&slot[2..2 + len])
}

/// `Z_q` for psi-card-sum with `q = 2^bits > n * max_value` (Chen et al. 2024, Fig. 7): the
/// masked sum of any `n` values below the bound never wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumModulus {
    pub bits: u32,
}

impl SumModulus {
    /// The modulus for `n` values of at most `max_value`, or an error when `n *
    /// max_value` does not fit the 128-bit arithmetic.
    pub fn new(n: u64, max_value: u64) -> Option<Self> {
        let bound = (n as u128).checked_mul(max_value as u128)?;
        let bits = (128 - bound.leading_zeros()).max(1);
        (bits < 128).then_some(Self { bits })
    }

    /// The modulus for the peer's announced set size and value bound: a bound that
    /// overflows the arithmetic is the peer's fault.
    pub fn announced(n: u64, max_value: u64) -> Result<Self, ProtocolError> {
        Self::new(n, max_value).ok_or_else(|| {
            PeerMisbehaved::Malformed("announced value bound and set size overflow 2^127".into())
                .into()
        })
    }

    /// The sender's own modulus (its input is checked before anything is sent).
    pub fn for_sender(n: u64, max_value: u64) -> Result<Self, ProtocolError> {
        Self::new(n, max_value).ok_or_else(|| {
            InputError::Other(format!(
                "{n} values of at most {max_value} can sum beyond 2^127; lower --value-bound"
            ))
            .into()
        })
    }

    /// Bytes of one element of `Z_q` on the wire.
    pub fn bytes(self) -> usize {
        self.bits.div_ceil(8) as usize
    }

    fn mask(self) -> u128 {
        (1u128 << self.bits) - 1
    }

    pub fn reduce(self, x: u128) -> u128 {
        x & self.mask()
    }

    /// A uniform element of `Z_q` from an OT key.
    fn element_from_key(self, key: &[u8; 32]) -> u128 {
        let mut b = [0u8; 16];
        ot::pad(key, &mut b);
        self.reduce(u128::from_le_bytes(b))
    }

    fn write(self, x: u128, out: &mut [u8]) {
        out.copy_from_slice(&x.to_le_bytes()[..self.bytes()]);
    }

    fn read(self, bytes: &[u8]) -> Result<u128, ProtocolError> {
        let mut b = [0u8; 16];
        b[..bytes.len()].copy_from_slice(bytes);
        let x = u128::from_le_bytes(b);
        if x > self.mask() {
            return Err(PeerMisbehaved::Malformed("masked value is not below q".into()).into());
        }
        Ok(x)
    }
}

/// XORs `pad(key)` into `out`.
fn xor_pad(key: &[u8; 32], out: &mut [u8]) {
    let mut p = vec![0u8; out.len()];
    ot::pad(key, &mut p);
    out.iter_mut().zip(&p).for_each(|(o, p)| *o ^= p);
}

/// Sender side: one slot of `width` bytes per item, `message(i) ^ pad(key(i, bit))`
/// (one-sided OT: only the receivers with choice `bit` can read it).
pub fn send_one_sided(
    keys: &OtSenderKeys,
    bit: bool,
    width: usize,
    message: impl Fn(usize) -> Vec<u8> + Sync,
) -> Vec<u8> {
    let mut out = vec![0u8; keys.len() * width];
    if width == 0 {
        return out;
    }
    out.par_chunks_mut(width).enumerate().for_each(|(i, slot)| {
        slot.copy_from_slice(&message(i));
        xor_pad(keys.key(i, bit), slot);
    });
    out
}

/// Receiver side of [`send_one_sided`]: the messages of the items whose choice is
/// `bit`, with their positions.
pub fn receive_one_sided(
    keys: &OtReceiverKeys,
    bit: bool,
    width: usize,
    payload: &[u8],
) -> Vec<(usize, Vec<u8>)> {
    (0..keys.len())
        .into_par_iter()
        .filter(|&i| keys.choice(i) == bit)
        .map(|i| {
            let mut m = payload[i * width..(i + 1) * width].to_vec();
            xor_pad(keys.key(i), &mut m);
            (i, m)
        })
        .collect()
}

/// psi-share, sender: the shares `r_i = pad(K0_i)` and the slots
/// `r_i ^ enc(x_i) ^ pad(K1_i)`.
pub fn send_shares(
    keys: &OtSenderKeys,
    width: usize,
    encoded: impl Fn(usize) -> Vec<u8> + Sync,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let shares: Vec<Vec<u8>> = (0..keys.len())
        .into_par_iter()
        .map(|i| {
            let mut r = vec![0u8; width];
            ot::pad(keys.key(i, false), &mut r);
            r
        })
        .collect();
    let payload = send_one_sided(keys, true, width, |i| {
        let mut m = encoded(i);
        m.iter_mut().zip(&shares[i]).for_each(|(m, r)| *m ^= r);
        m
    });
    (shares, payload)
}

/// psi-share, receiver: `z_i = pad(K_i)`, XORed with the slot where `e_i = 1`; returned
/// for the positions with `e_i = 1` only (the others are the sender's random shares).
pub fn receive_shares(
    keys: &OtReceiverKeys,
    width: usize,
    payload: &[u8],
) -> Vec<(usize, Vec<u8>)> {
    receive_one_sided(keys, true, width, payload)
}

/// psi-card-sum, sender: returns `r' = sum r_i` and the slots `r_i + v_i - int(K1_i)`.
pub fn send_sum(keys: &OtSenderKeys, q: SumModulus, values: &[u64]) -> (u128, Vec<u8>) {
    let width = q.bytes();
    let mut out = vec![0u8; keys.len() * width];
    let r_sum = out
        .par_chunks_mut(width.max(1))
        .enumerate()
        .map(|(i, slot)| {
            let r = q.element_from_key(keys.key(i, false));
            let c = q.reduce(
                r.wrapping_add(values[i] as u128)
                    .wrapping_sub(q.element_from_key(keys.key(i, true))),
            );
            q.write(c, slot);
            r
        })
        .reduce(|| 0, |a, b| q.reduce(a.wrapping_add(b)));
    (r_sum, out)
}

/// psi-card-sum, receiver: `S' = sum_i int(K_i) + e_i * c_i mod q`.
pub fn receive_sum(
    keys: &OtReceiverKeys,
    q: SumModulus,
    payload: &[u8],
) -> Result<u128, ProtocolError> {
    let width = q.bytes();
    (0..keys.len())
        .into_par_iter()
        .map(|i| {
            let base = q.element_from_key(keys.key(i));
            if keys.choice(i) {
                let c = q.read(&payload[i * width..(i + 1) * width])?;
                Ok(q.reduce(base.wrapping_add(c)))
            } else {
                Ok(base)
            }
        })
        .try_reduce(|| 0, |a, b| Ok(q.reduce(a.wrapping_add(b))))
}
