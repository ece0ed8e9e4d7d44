//! Encrypted links on a shared exchange directory: every message file is readable by its
//! one recipient only, and any change to it is refused.
//!
//! An exchange directory is read by everybody who can reach the storage: in an n-party
//! session every participant sees every link's files, and the storage itself (an NFS
//! folder, a bucket) sees everything. Over TLS only the peer sees a message; this module
//! gives the same to files.
//!
//! **Link keys.** Each participant publishes, before its first message, a *link key
//! file* `<role>.pub` holding an X25519 public key derived from its private run seed (so
//! a restarted participant publishes the same one and replays its messages byte for
//! byte). For each ordered pair `(from, to)` both ends compute the shared secret
//! `X25519(s_from, P_to)` and derive the direction's AES-256-GCM key with HKDF-SHA256
//! (RFC 5869):
//!
//! ```text
//! PRK = HKDF-Extract(salt = "privset/v1/exchange-dir", IKM = X25519 shared secret)
//! key = HKDF-Expand(PRK, info = "link" || len(from) || from || len(to) || to
//!                               || P_from || P_to, 32)
//! ```
//!
//! Message `n` of a link is sealed with that key, the 12-byte nonce `0^8 || n` (big-endian
//! u32) and its file name (`NNNN-<tag>.msg`) as associated data, so a file moved to another
//! place in the sequence, to another link, or written by anybody else fails to open. Both
//! public keys are in the derivation, and they are fresh for every run (see
//! `privset-run`'s resume rules), so one run's files never open in another.
//!
//! **What others see.** Other participants and the storage see the file names (roles,
//! message counts), sizes and timing, and the public keys; the contents only under the
//! Computational Diffie-Hellman assumption on X25519 broken. The key exchange is not
//! authenticated by a certificate: it protects against everybody who *reads* the
//! directory (the semi-honest participants and a curious storage), not against a storage
//! operator who replaces a participant's key file before the others read it (docs/wire.md
//! says so).
//!
//! Key file layout (version 1):
//!
//! ```text
//! offset size field
//!      0    4 magic "PSXK"
//!      4    1 version (1)
//!      5    1 role length R (1..=64)
//!      6    R role (letters, digits, '-', '_')
//!    6+R   32 X25519 public key
//! ```

use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;

use curve25519_dalek::montgomery::MontgomeryPoint;
use privset_protocols::party::PartyId;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Salt};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::dir::{DirPlace, ExchangeDir, message_file_name, participant_role};
use crate::driver::LinkSet;
use crate::error::TransportError;
use crate::{ByteCounters, Transport};

/// Magic of a link key file.
pub const KEY_FILE_MAGIC: [u8; 4] = *b"PSXK";
/// Version of the link key file and of the sealing it announces.
pub const KEY_FILE_VERSION: u8 = 1;
/// Bytes a sealed message file holds beyond its message (the AEAD tag).
pub const SEAL_OVERHEAD: usize = 16;
/// Longest role name in a key file.
const MAX_ROLE: usize = 64;
const HKDF_SALT: &[u8] = b"privset/v1/exchange-dir";
const KEY_DERIVATION_LABEL: &[u8] = b"privset/v1/exchange-dir/link-key";

/// File name of `role`'s link key: `<role>.pub`.
pub fn key_file_name(role: &str) -> String {
    format!("{role}.pub")
}

/// A participant's link key pair for one run, derived from its run seed.
pub struct LinkKeyPair {
    secret: Zeroizing<[u8; 32]>,
    public: [u8; 32],
}

impl LinkKeyPair {
    /// The key pair of the run whose seed is `seed` (a hash of it, domain-separated from
    /// every other use of the seed).
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        let mut h = Sha256::new();
        h.update(KEY_DERIVATION_LABEL);
        h.update(seed);
        let secret = Zeroizing::new(<[u8; 32]>::from(h.finalize()));
        let public = MontgomeryPoint::mul_base_clamped(*secret).to_bytes();
        Self { secret, public }
    }

    /// The public key, as published in the key file.
    pub fn public(&self) -> [u8; 32] {
        self.public
    }
}

/// The contents of a link key file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFile {
    pub role: String,
    pub public: [u8; 32],
}

impl KeyFile {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(6 + self.role.len() + 32);
        out.extend_from_slice(&KEY_FILE_MAGIC);
        out.push(KEY_FILE_VERSION);
        out.push(self.role.len() as u8);
        out.extend_from_slice(self.role.as_bytes());
        out.extend_from_slice(&self.public);
        out
    }

    /// Parses a key file; the error says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < 6 || bytes[..4] != KEY_FILE_MAGIC {
            return Err("not a privset link key file".into());
        }
        if bytes[4] != KEY_FILE_VERSION {
            return Err(format!(
                "link key file version {}, this build reads {KEY_FILE_VERSION}",
                bytes[4]
            ));
        }
        let len = usize::from(bytes[5]);
        if !(1..=MAX_ROLE).contains(&len) || bytes.len() != 6 + len + 32 {
            return Err(format!(
                "a link key file of {} bytes with a {len}-byte role",
                bytes.len()
            ));
        }
        let role = std::str::from_utf8(&bytes[6..6 + len])
            .ok()
            .filter(|r| {
                r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
            .ok_or("the role in a link key file is not a role name")?;
        let public = bytes[6 + len..].try_into().expect("length checked");
        Ok(Self {
            role: role.to_string(),
            public,
        })
    }
}

/// The public key `role` has published in `dir`, if it has; a key file that is not one,
/// or names another role, is an error.
pub fn published_key(dir: &Path, role: &str) -> Result<Option<[u8; 32]>, TransportError> {
    let path = dir.join(key_file_name(role));
    let bytes = match read_small(&path)? {
        Some(b) => b,
        None => return Ok(None),
    };
    let file = KeyFile::decode(&bytes)
        .map_err(|e| TransportError::ExchangeDir(format!("{}: {e}", path.display())))?;
    if file.role != role {
        return Err(TransportError::ExchangeDir(format!(
            "{} names the role {:?}, not {role:?}",
            path.display(),
            file.role
        )));
    }
    Ok(Some(file.public))
}

/// Reads a file of at most a key file's size; `None` if it does not exist.
fn read_small(path: &Path) -> Result<Option<Vec<u8>>, TransportError> {
    use std::io::Read;
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TransportError::io(format!("opening {}", path.display()), e)),
    };
    let mut bytes = Vec::new();
    file.take((6 + MAX_ROLE + 32 + 1) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| TransportError::io(format!("reading {}", path.display()), e))?;
    Ok(Some(bytes))
}

impl DirPlace {
    /// Publishes this role's link key for the run whose seed is `seed` (skipped if the
    /// same key is already there: a restart), and returns the key pair. A different key
    /// already published means the directory holds another run of this role: refused.
    pub fn publish_key(&self, seed: &[u8; 32]) -> Result<Arc<LinkKeyPair>, TransportError> {
        let keys = LinkKeyPair::from_seed(seed);
        match published_key(self.path(), self.role())? {
            Some(p) if p == keys.public => {}
            Some(_) => {
                return Err(TransportError::ExchangeDir(format!(
                    "{} holds another run's link key of {:?}; was this directory used by \
                     another run? Give each run its own directory",
                    self.path().join(key_file_name(self.role())).display(),
                    self.role()
                )));
            }
            None => {
                let file = KeyFile {
                    role: self.role().to_string(),
                    public: keys.public,
                };
                self.write_file(&key_file_name(self.role()), &file.encode())?;
            }
        }
        Ok(Arc::new(keys))
    }

    /// The sealed link of this (two-party) role to `peer_role`, with the key pair
    /// [`DirPlace::publish_key`] returned.
    pub fn seal_pair(&self, keys: Arc<LinkKeyPair>, peer_role: &str) -> SealedLink {
        let inner = self.link(self.role(), peer_role);
        SealedLink::new(inner, keys, self.role(), peer_role)
    }

    /// The sealed links of n-party participant `me` (this place's role is
    /// `p<me>`) to each of `peers`.
    pub fn seal_links(&self, keys: Arc<LinkKeyPair>, me: PartyId, peers: &[PartyId]) -> LinkSet {
        let role = participant_role(me);
        let mut links = LinkSet::new();
        for &peer in peers {
            let peer_role = participant_role(peer);
            let inner = self.link(
                &format!("{role}-to-{peer_role}"),
                &format!("{peer_role}-to-{role}"),
            );
            links.insert(
                peer,
                Box::new(SealedLink::new(inner, keys.clone(), &role, &peer_role)),
            );
        }
        links
    }
}

/// One direction's sealing key.
struct DirectionKey(LessSafeKey);

impl DirectionKey {
    fn derive(shared: &[u8; 32], from: (&str, &[u8; 32]), to: (&str, &[u8; 32])) -> Self {
        let prk = Salt::new(HKDF_SHA256, HKDF_SALT).extract(shared);
        let (from_len, to_len) = ([from.0.len() as u8], [to.0.len() as u8]);
        let info: [&[u8]; 7] = [
            b"link",
            &from_len,
            from.0.as_bytes(),
            &to_len,
            to.0.as_bytes(),
            from.1,
            to.1,
        ];
        let okm = prk
            .expand(&info, &AES_256_GCM)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Self(LessSafeKey::new(UnboundKey::from(okm)))
    }

    fn nonce(n: u32) -> Nonce {
        let mut bytes = [0u8; NONCE_LEN];
        bytes[NONCE_LEN - 4..].copy_from_slice(&n.to_be_bytes());
        Nonce::assume_unique_for_key(bytes)
    }
}

/// Both directions' keys of one link.
struct LinkKeys {
    send: DirectionKey,
    recv: DirectionKey,
}

/// One link on an exchange directory whose message files are sealed for the peer.
pub struct SealedLink {
    inner: ExchangeDir,
    keys: Arc<LinkKeyPair>,
    role: String,
    peer_role: String,
    /// Derived once the peer's key file is read (at the first message either way).
    link_keys: Option<LinkKeys>,
}

impl std::fmt::Debug for SealedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedLink")
            .field("role", &self.role)
            .field("peer_role", &self.peer_role)
            .field("counters", &self.inner.counters())
            .finish()
    }
}

impl SealedLink {
    fn new(inner: ExchangeDir, keys: Arc<LinkKeyPair>, role: &str, peer_role: &str) -> Self {
        Self {
            inner,
            keys,
            role: role.to_string(),
            peer_role: peer_role.to_string(),
            link_keys: None,
        }
    }

    /// The link's keys, deriving them (after waiting for the peer's key file) the first
    /// time.
    fn link_keys(&mut self) -> Result<&LinkKeys, TransportError> {
        if self.link_keys.is_none() {
            let what = format!("the link key of {:?}", self.peer_role);
            let path = self.inner.path().join(key_file_name(&self.peer_role));
            self.inner.wait_for(&path, &what)?;
            let peer = published_key(self.inner.path(), &self.peer_role)?.ok_or_else(|| {
                TransportError::ExchangeDir(format!("{} vanished", path.display()))
            })?;
            let shared = MontgomeryPoint(peer).mul_clamped(*self.keys.secret);
            let shared = Zeroizing::new(shared.to_bytes());
            if *shared == [0u8; 32] {
                return Err(TransportError::ExchangeDir(format!(
                    "{} holds a low-order public key; refused",
                    path.display()
                )));
            }
            let me = (self.role.as_str(), &self.keys.public);
            let them = (self.peer_role.as_str(), &peer);
            self.link_keys = Some(LinkKeys {
                send: DirectionKey::derive(&shared, me, them),
                recv: DirectionKey::derive(&shared, them, me),
            });
        }
        Ok(self.link_keys.as_ref().expect("just set"))
    }
}

impl Transport for SealedLink {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        let (n, tag) = (self.inner.next_send(), self.inner.send_tag().to_string());
        let key = &self.link_keys()?.send;
        let mut sealed = Vec::with_capacity(message.len() + SEAL_OVERHEAD);
        sealed.extend_from_slice(message);
        let aad = message_file_name(&tag, n);
        key.0
            .seal_in_place_append_tag(
                DirectionKey::nonce(n),
                Aad::from(aad.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| TransportError::ExchangeDir("sealing a message failed".into()))?;
        self.inner.send(&sealed)
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        self.link_keys()?;
        let (n, tag) = (self.inner.next_recv(), self.inner.recv_tag().to_string());
        let mut body = self.inner.recv(max_len.saturating_add(SEAL_OVERHEAD))?;
        let aad = message_file_name(&tag, n);
        let key = &self.link_keys.as_ref().expect("derived above").recv;
        let len = key
            .0
            .open_in_place(DirectionKey::nonce(n), Aad::from(aad.as_bytes()), &mut body)
            .map_err(|_| {
                TransportError::ExchangeDir(format!(
                    "{} does not open with the link key of {:?}: it was not written by {:?} \
                     for this run (changed on the storage, or another run's file)",
                    self.inner.path().join(&aad).display(),
                    self.peer_role,
                    self.peer_role
                ))
            })?
            .len();
        if len > max_len {
            return Err(TransportError::TooLarge {
                len: len as u64,
                max: max_len as u64,
            });
        }
        body.truncate(len);
        Ok(body)
    }

    fn counters(&self) -> ByteCounters {
        self.inner.counters()
    }
}

/// Opens `dir` as n-party participant `me` with sealed links to each of `peers`, for the
/// run whose seed is `seed`: takes the participant's lock, publishes its link key.
pub fn open_links(
    dir: &Path,
    me: PartyId,
    peers: &[PartyId],
    seed: &[u8; 32],
    opts: crate::dir::DirOptions,
) -> Result<LinkSet, TransportError> {
    if peers.contains(&me) {
        return Err(TransportError::Config(format!(
            "participant {me} cannot have a link to itself"
        )));
    }
    let place = DirPlace::take(dir, &participant_role(me), opts)?;
    let keys = place.publish_key(seed)?;
    Ok(place.seal_links(keys, me, peers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_refuse_damage() {
        let file = KeyFile {
            role: "p3".into(),
            public: LinkKeyPair::from_seed(&[9; 32]).public(),
        };
        let bytes = file.encode();
        assert_eq!(KeyFile::decode(&bytes).unwrap(), file);
        for cut in 0..bytes.len() {
            assert!(KeyFile::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(KeyFile::decode(&long).is_err());
        let mut bad_role = bytes.clone();
        bad_role[6] = b'/';
        assert!(KeyFile::decode(&bad_role).is_err());
        let mut version = bytes;
        version[4] = 2;
        assert!(KeyFile::decode(&version).unwrap_err().contains("version 2"));
    }

    #[test]
    fn both_ends_derive_the_same_direction_keys_and_others_do_not() {
        let (a, b, c) = (
            LinkKeyPair::from_seed(&[1; 32]),
            LinkKeyPair::from_seed(&[2; 32]),
            LinkKeyPair::from_seed(&[3; 32]),
        );
        let dh =
            |x: &LinkKeyPair, p: [u8; 32]| MontgomeryPoint(p).mul_clamped(*x.secret).to_bytes();
        let seal = |k: &DirectionKey| {
            let mut m = b"hello".to_vec();
            k.0.seal_in_place_append_tag(DirectionKey::nonce(0), Aad::empty(), &mut m)
                .unwrap();
            m
        };
        let open = |k: &DirectionKey, mut m: Vec<u8>| {
            k.0.open_in_place(DirectionKey::nonce(0), Aad::empty(), &mut m)
                .map(|p| p.to_vec())
        };
        let a_to_b = DirectionKey::derive(&dh(&a, b.public), ("a", &a.public), ("b", &b.public));
        let b_from_a = DirectionKey::derive(&dh(&b, a.public), ("a", &a.public), ("b", &b.public));
        assert_eq!(open(&b_from_a, seal(&a_to_b)).unwrap(), b"hello");
        // The other direction, and a third party with its own key, cannot open it.
        let b_to_a = DirectionKey::derive(&dh(&b, a.public), ("b", &b.public), ("a", &a.public));
        assert!(open(&b_to_a, seal(&a_to_b)).is_err());
        let c_guess = DirectionKey::derive(&dh(&c, a.public), ("a", &a.public), ("b", &b.public));
        assert!(open(&c_guess, seal(&a_to_b)).is_err());
    }
}
