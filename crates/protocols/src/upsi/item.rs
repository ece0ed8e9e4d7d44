//! What an item becomes before it meets the homomorphic encryption: an OPRF output
//! split into the item's hash (compared in the slots) and its label key (Cong et al.
//! 2021, Sec. 5: the OPRF is what protects the server's items; a client learns the
//! hash and label key of its own items only).
//!
//! The OPRF is `H2(F_k(H1(x)))` on a cwPRF of [`privset_crypto::cwprf`]: ristretto255
//! (`F_k(P) = kP`), or X25519 (`F_k(u) = X25519(k, u)`, eight lanes on CPUs with AVX-512
//! IFMA), which a database names ([`Oprf`]) and the server's hello carries. The client
//! blinds with a key `b`, the server applies its key `k`, and the client removes `b`
//! with the key that inverts it ([`CwPrf::invert_key`]); on X25519 only about half of
//! all blinds have one, so the client draws until it finds one, which conditions `b` on
//! an event of probability about 1/2.

use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::cwprf::{CwPrf, CwPrfId};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256, Sha512};
use zeroize::Zeroizing;

use crate::error::{PeerMisbehaved, ProtocolError};

use super::preset::{HASH_FUNCTIONS, Preset};

/// Bytes of one group element on the wire (both OPRF groups).
pub const ELEMENT_LEN: usize = 32;

/// The fewest random bytes of nonce in front of an encrypted label.
///
/// The nonce only keeps two encryptions of one item's label under one OPRF key (the
/// label before and after an update) from sharing a keystream. That would matter only
/// to a client that matched the item by chance at both times (it would learn the XOR
/// of the two labels); each such match has probability at most 2^-95 on the built-in
/// presets (an item's compared bits), and `b` random bytes make the keystreams meet with
/// probability at most `u^2 / 2^(8b + 1)` for an item updated `u` times. Every byte of
/// nonce, though, travels through the label polynomials: a 16-byte label under a
/// 16-byte nonce took three label parts (95 or 105 bits each), four polynomials a bin
/// with the matching one. [`nonce_len_for`] gives a database this minimum and whatever
/// bits the label's last part leaves over.
pub const MIN_NONCE_LEN: usize = 4;

/// The longest nonce a file or a server's hello may name (a minimum nonce plus the
/// spare bits of one part is at most 4 + 13 bytes on the built-in presets).
pub const MAX_NONCE_LEN: usize = 32;

/// The nonce of databases saved before file version 4.
pub const LEGACY_NONCE_LEN: usize = 16;

/// The nonce length of a database built under `preset` with labels of `label_len`
/// bytes: at least [`MIN_NONCE_LEN`], grown to fill the bits the label's parts leave
/// over (free: the parts are sent whole). A 16-byte label then takes two parts on
/// every built-in preset (nonces of 7 bytes at 95 bits a part, 10 at 105), a label of up
/// to 7 bytes one.
pub fn nonce_len_for(preset: &Preset, label_len: usize) -> usize {
    let bits = preset.item_bits() as usize;
    let parts = ((label_len + MIN_NONCE_LEN) * 8).div_ceil(bits);
    // `parts * bits` is at least `(label_len + MIN_NONCE_LEN) * 8`, so the whole bytes
    // it holds leave at least the minimum for the nonce.
    parts * bits / 8 - label_len
}

/// Checks a nonce length read from a file or a server's hello.
pub fn check_nonce_len(nonce_len: usize) -> Result<(), String> {
    if (MIN_NONCE_LEN..=MAX_NONCE_LEN).contains(&nonce_len) {
        Ok(())
    } else {
        Err(format!(
            "label nonces of {nonce_len} bytes ({MIN_NONCE_LEN} to {MAX_NONCE_LEN} expected)"
        ))
    }
}

/// Longest label, in bytes.
pub const MAX_LABEL_LEN: usize = 1024;

/// Longest item a database stores.
pub const MAX_ITEM_LEN: usize = 1 << 16;

/// How a database's labels hold its label columns. The protocol never looks inside a
/// label: it keeps the layout with the database and sends it in the server's hello, so
/// that the front end that decodes a client's labels reads them as the server's front
/// end wrote them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LabelLayout {
    /// Each column's cell after its length (2 bytes, big-endian), then zero padding:
    /// labels of two or more columns, and every file saved before version 5.
    #[default]
    Prefixed,
    /// One column's cell as it is, then zero padding, so that an `L`-byte label holds a
    /// cell of up to `L` bytes (a 1-byte risk score fits in 1 byte).
    Raw,
}

impl LabelLayout {
    /// The layout for labels of `columns` columns.
    pub fn for_columns(columns: usize) -> Self {
        if columns == 1 {
            Self::Raw
        } else {
            Self::Prefixed
        }
    }

    pub fn code(self) -> u8 {
        match self {
            Self::Prefixed => 0,
            Self::Raw => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Prefixed),
            1 => Some(Self::Raw),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Prefixed => "prefixed",
            Self::Raw => "raw",
        }
    }
}

/// Blinds a client draws before giving up (each has an inverse key with probability
/// about 1/2 on X25519, always on ristretto255).
const BLIND_DRAWS: usize = 128;

/// The group a database's OPRF runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oprf {
    /// ristretto255 on curve25519-dalek: every database file of versions 1 and 2.
    Ristretto255,
    /// X25519: the default for new databases. `F(H(x))` on both cores of a CPU with
    /// AVX-512 IFMA took 4.52 µs an element against ristretto255's 27.58, and 28.67
    /// against 34.00 on one without (`cwprf_bench`, docs/benchmarks.md).
    X25519,
}

impl Oprf {
    /// Every choice, the default first.
    pub const ALL: [Oprf; 2] = [Oprf::X25519, Oprf::Ristretto255];

    fn cwprf(self) -> CwPrfId {
        match self {
            Oprf::Ristretto255 => <Ristretto255 as CwPrf>::ID,
            Oprf::X25519 => <X25519 as CwPrf>::ID,
        }
    }

    pub fn name(self) -> &'static str {
        self.cwprf().name()
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }

    /// One-byte code in the database file and the server's hello (the cwPRF's).
    pub fn code(self) -> u8 {
        self.cwprf().code()
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.code() == code)
    }

    /// Domain-separation tag of the hash into the group (ristretto255's is the one of
    /// the first databases).
    fn dst(self) -> &'static [u8] {
        match self {
            Oprf::Ristretto255 => b"privset-upsi-oprf-v1",
            Oprf::X25519 => b"privset-upsi-oprf-x25519-v1",
        }
    }

    /// The client's request: its items hashed into the group and blinded by one secret
    /// key (kept in the returned [`Blinding`]), packed.
    pub fn blind(
        self,
        items: &[Vec<u8>],
        rng: &mut SessionRng,
    ) -> Result<(Blinding, Vec<u8>), ProtocolError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill(seed.as_mut());
        let blinding = Blinding { oprf: self, seed };
        let request = match self {
            Oprf::Ristretto255 => blind_with::<Ristretto255>(self.dst(), &blinding.seed, items),
            Oprf::X25519 => blind_with::<X25519>(self.dst(), &blinding.seed, items),
        }?;
        Ok((blinding, request))
    }
}

/// A server's OPRF key: its group and the seed the key is derived from (so that a
/// database file can store it).
#[derive(Clone)]
pub struct OprfKey {
    pub oprf: Oprf,
    pub seed: Zeroizing<[u8; 32]>,
}

impl OprfKey {
    /// A fresh key in `oprf`'s group.
    pub fn random(oprf: Oprf, rng: &mut SessionRng) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill(seed.as_mut());
        Self { oprf, seed }
    }

    /// The OPRF outputs of the server's own items, on every core.
    pub fn hash_items(&self, items: &[Vec<u8>]) -> Vec<HashedItem> {
        let packed = match self.oprf {
            Oprf::Ristretto255 => hash_with::<Ristretto255>(self.oprf.dst(), &self.seed, items),
            Oprf::X25519 => hash_with::<X25519>(self.oprf.dst(), &self.seed, items),
        };
        packed
            .par_chunks(ELEMENT_LEN)
            .map(HashedItem::from_oprf)
            .collect()
    }

    /// The server's answer: every requested element under the key, each validated.
    pub fn evaluate(&self, request: &[u8]) -> Result<Vec<u8>, ProtocolError> {
        match self.oprf {
            Oprf::Ristretto255 => evaluate_with::<Ristretto255>(&self.seed, request),
            Oprf::X25519 => evaluate_with::<X25519>(&self.seed, request),
        }
        .map_err(|e| PeerMisbehaved::Malformed(format!("unbalanced-PSI OPRF request: {e}")).into())
    }
}

/// What the client keeps between its request and the server's answer.
pub struct Blinding {
    oprf: Oprf,
    seed: Zeroizing<[u8; 32]>,
}

impl Blinding {
    /// The client's items after the OPRF: the answer unblinded and hashed.
    pub fn finish(&self, count: usize, answer: &[u8]) -> Result<Vec<HashedItem>, ProtocolError> {
        if answer.len() != count * ELEMENT_LEN {
            return Err(PeerMisbehaved::Malformed(format!(
                "unbalanced-PSI OPRF answer of {} bytes for {count} items",
                answer.len()
            ))
            .into());
        }
        let unblinded = match self.oprf {
            Oprf::Ristretto255 => unblind_with::<Ristretto255>(&self.seed, answer),
            Oprf::X25519 => unblind_with::<X25519>(&self.seed, answer),
        }?;
        Ok(unblinded
            .chunks_exact(ELEMENT_LEN)
            .map(HashedItem::from_oprf)
            .collect())
    }
}

fn key_from<C: CwPrf>(seed: &[u8; 32]) -> Zeroizing<C::Key> {
    Zeroizing::new(C::random_key(&mut SessionRng::from_seed(*seed)))
}

/// A client's blind and the key that inverts it.
struct BlindPair<C: CwPrf> {
    blind: Zeroizing<C::Key>,
    inverse: Zeroizing<C::Key>,
}

/// The blind drawn from `seed` and the key that inverts it: the first key of the
/// seed's stream that has an inverse key.
fn blind_pair<C: CwPrf>(seed: &[u8; 32]) -> Result<BlindPair<C>, ProtocolError> {
    let mut rng = SessionRng::from_seed(*seed);
    for _ in 0..BLIND_DRAWS {
        let blind = Zeroizing::new(C::random_key(&mut rng));
        if let Some(inverse) = C::invert_key(&blind) {
            return Ok(BlindPair {
                blind,
                inverse: Zeroizing::new(inverse),
            });
        }
    }
    Err(ProtocolError::Config(format!(
        "no OPRF blind of {} had an inverse key in {BLIND_DRAWS} draws",
        C::ID.name()
    )))
}

fn hash_with<C: CwPrf>(dst: &[u8], seed: &[u8; 32], items: &[Vec<u8>]) -> Vec<u8> {
    C::hash_eval_batch(dst, items, &key_from::<C>(seed))
}

fn evaluate_with<C: CwPrf>(
    seed: &[u8; 32],
    request: &[u8],
) -> Result<Vec<u8>, privset_crypto::group::GroupError> {
    C::eval_batch(request, &key_from::<C>(seed))
}

fn blind_with<C: CwPrf>(
    dst: &[u8],
    seed: &[u8; 32],
    items: &[Vec<u8>],
) -> Result<Vec<u8>, ProtocolError> {
    Ok(C::hash_eval_batch(
        dst,
        items,
        &blind_pair::<C>(seed)?.blind,
    ))
}

fn unblind_with<C: CwPrf>(seed: &[u8; 32], answer: &[u8]) -> Result<Vec<u8>, ProtocolError> {
    C::eval_batch(answer, &blind_pair::<C>(seed)?.inverse)
        .map_err(|e| PeerMisbehaved::Malformed(format!("unbalanced-PSI OPRF answer: {e}")).into())
}

/// An item after the OPRF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashedItem {
    /// Compared in the slots (the low `Preset::item_bits` bits).
    pub hash: u128,
    /// Encrypts the item's label.
    pub label_key: [u8; 32],
}

impl HashedItem {
    /// From the OPRF's output point (its encoding).
    pub fn from_oprf(encoded: &[u8]) -> Self {
        let out = Sha512::new()
            .chain_update(b"privset-upsi-oprf-output")
            .chain_update(encoded)
            .finalize();
        Self {
            hash: u128::from_le_bytes(out[..16].try_into().expect("16 bytes")),
            label_key: out[16..48].try_into().expect("32 bytes"),
        }
    }

    /// The item's value in each of its slots.
    pub fn felts(&self, preset: &Preset) -> Vec<u64> {
        felts(self.hash, preset)
    }

    /// The item's bins under the cuckoo hash functions (distinct locations only).
    pub fn locations(&self, table_size: usize) -> Vec<usize> {
        locations(self.hash, table_size)
    }
}

/// An item hash's value in each of its slots: `bits_per_felt`-bit pieces, low first.
pub fn felts(hash: u128, preset: &Preset) -> Vec<u64> {
    let bits = preset.bits_per_felt();
    let mask = (1u128 << bits) - 1;
    (0..preset.felts_per_item)
        .map(|j| ((hash >> (j as u32 * bits)) & mask) as u64)
        .collect()
}

/// An item hash's bins under the cuckoo hash functions (distinct locations only).
pub fn locations(hash: u128, table_size: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(HASH_FUNCTIONS);
    for i in 0..HASH_FUNCTIONS {
        let loc = location(hash, i, table_size);
        if !out.contains(&loc) {
            out.push(loc);
        }
    }
    out
}

/// Bin of `hash` under hash function `i`. The hash is already pseudorandom (an OPRF
/// output), so a fixed mixer spreads it; no key is needed.
pub fn location(hash: u128, i: usize, table_size: usize) -> usize {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (lo, hi) = (hash as u64, (hash >> 64) as u64);
    let z = mix(lo ^ mix(hi.wrapping_add((i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))));
    ((u128::from(z) * table_size as u128) >> 64) as usize
}

/// The keystream a label is masked with.
fn keystream(key: &[u8; 32], nonce: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut counter = 0u32;
    while out.len() < len {
        out.extend_from_slice(
            &Sha256::new()
                .chain_update(b"privset-upsi-label")
                .chain_update(key)
                .chain_update(nonce)
                .chain_update(counter.to_be_bytes())
                .finalize(),
        );
        counter += 1;
    }
    out.truncate(len);
    out
}

/// `nonce || label XOR PRG(key, nonce)`: what the server's label polynomials return,
/// so that a client that matches by chance learns nothing of the label.
pub fn encrypt_label(key: &[u8; 32], nonce: &[u8], label: &[u8]) -> Vec<u8> {
    let mut out = nonce.to_vec();
    out.extend(
        label
            .iter()
            .zip(keystream(key, nonce, label.len()))
            .map(|(a, b)| a ^ b),
    );
    out
}

/// The label from its encryption, whose nonce has `nonce_len` bytes.
pub fn decrypt_label(key: &[u8; 32], encrypted: &[u8], nonce_len: usize) -> Vec<u8> {
    let (nonce, body) = encrypted.split_at(nonce_len.min(encrypted.len()));
    body.iter()
        .zip(keystream(key, nonce, body.len()))
        .map(|(a, b)| a ^ b)
        .collect()
}

/// Number of item-sized parts an encrypted label of `encrypted_len` bytes (nonce
/// included; 0 when unlabeled) is split into.
pub fn label_parts(preset: &Preset, encrypted_len: usize) -> usize {
    (encrypted_len * 8).div_ceil(preset.item_bits() as usize)
}

/// Bytes of an encrypted label of `label_len` bytes under a `nonce_len`-byte nonce (0
/// when unlabeled).
pub fn encrypted_label_len(label_len: usize, nonce_len: usize) -> usize {
    if label_len > 0 {
        nonce_len + label_len
    } else {
        0
    }
}

/// An encrypted label as slot values: part p, slot j holds bits
/// `[(p * felts + j) * b, +b)` (little-endian bit order, zero-padded).
pub fn label_felts(preset: &Preset, encrypted: &[u8], parts: usize) -> Vec<Vec<u64>> {
    let b = preset.bits_per_felt() as usize;
    let bit = |i: usize| -> u64 {
        encrypted
            .get(i / 8)
            .map(|byte| u64::from((byte >> (i % 8)) & 1))
            .unwrap_or(0)
    };
    (0..parts)
        .map(|p| {
            (0..preset.felts_per_item)
                .map(|j| {
                    let start = (p * preset.felts_per_item + j) * b;
                    (0..b).fold(0u64, |acc, k| acc | (bit(start + k) << k))
                })
                .collect()
        })
        .collect()
}

/// The inverse of [`label_felts`]: `len` bytes from the parts' slot values.
pub fn label_from_felts(preset: &Preset, parts: &[Vec<u64>], len: usize) -> Vec<u8> {
    let b = preset.bits_per_felt() as usize;
    let mut out = vec![0u8; len];
    for (p, felts) in parts.iter().enumerate() {
        for (j, &value) in felts.iter().enumerate() {
            let start = (p * preset.felts_per_item + j) * b;
            for k in 0..b {
                let i = start + k;
                if i / 8 < len && (value >> k) & 1 == 1 {
                    out[i / 8] |= 1 << (i % 8);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_through_slots() {
        let preset = Preset::named("n4096-c1k").unwrap();
        for nonce_len in [MIN_NONCE_LEN, LEGACY_NONCE_LEN, MAX_NONCE_LEN] {
            for len in [1usize, 16, 100, 1024] {
                let label: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let key = [9u8; 32];
                let enc = encrypt_label(&key, &vec![5; nonce_len], &label);
                assert_eq!(enc.len(), encrypted_label_len(len, nonce_len));
                let parts = label_parts(&preset, enc.len());
                let felts = label_felts(&preset, &enc, parts);
                assert!(felts.iter().flatten().all(|&v| v < preset.plain_modulus));
                let back = label_from_felts(&preset, &felts, enc.len());
                assert_eq!(back, enc);
                assert_eq!(decrypt_label(&key, &back, nonce_len), label);
                assert_ne!(decrypt_label(&[8; 32], &back, nonce_len), label);
            }
        }
    }

    /// What the sized nonce saves: a 16-byte label in two parts instead of three, a
    /// 1-byte label in one instead of two; the nonce fills the parts and is never
    /// shorter than the minimum.
    #[test]
    fn nonces_fill_the_label_parts() {
        for (name, bits, nonce_16) in [("n4096-c1k", 95, 7), ("n8192-c1k", 105, 10)] {
            let preset = Preset::named(name).unwrap();
            assert_eq!(preset.item_bits(), bits);
            let parts = |label, nonce| label_parts(&preset, encrypted_label_len(label, nonce));
            let sized = |label| parts(label, nonce_len_for(&preset, label));
            assert_eq!(nonce_len_for(&preset, 16), nonce_16);
            assert_eq!((sized(16), parts(16, LEGACY_NONCE_LEN)), (2, 3));
            assert_eq!((sized(1), parts(1, LEGACY_NONCE_LEN)), (1, 2));
            assert_eq!(parts(0, MIN_NONCE_LEN), 0);
            for label in 1..=MAX_LABEL_LEN {
                let nonce = nonce_len_for(&preset, label);
                assert!(check_nonce_len(nonce).is_ok(), "{name} {label}: {nonce}");
                // No shorter nonce of at least the minimum takes fewer parts.
                assert_eq!(sized(label), parts(label, MIN_NONCE_LEN), "{name} {label}");
                // And one byte more would take another part.
                assert!(parts(label, nonce + 1) > sized(label), "{name} {label}");
            }
        }
        assert!(check_nonce_len(MIN_NONCE_LEN - 1).is_err());
        assert!(check_nonce_len(MAX_NONCE_LEN + 1).is_err());
    }

    #[test]
    fn locations_spread_and_stay_in_range() {
        let mut counts = vec![0usize; 100];
        for i in 0..100_000u128 {
            let h = HashedItem::from_oprf(&i.to_le_bytes());
            for loc in h.locations(100) {
                counts[loc] += 1;
            }
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 2500 && *max < 3500, "{min} {max}");
    }
}
