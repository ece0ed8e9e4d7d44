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
//! Computational Diffie-Hellman assumption on X25519 broken.
//!
//! **Who wrote a key file.** A participant with a certificate signs its key file with the
//! certificate's key ([`LinkSigner`]), and its peer checks the signature
//! ([`PeerKeyCheck`]): in multi-party PSI against the certificate the parties file lists
//! for that participant; between two parties against the certificate the peer put beside
//! its key file (`<role>.pem`), which must chain to the CA both trust (and hold the name
//! the run expects, if it names one). An unsigned key file, or one signed by any other
//! key, is refused: a storage operator who replaces a key file cannot then sit in the
//! middle. Without certificates the exchange keeps out everybody who *reads* the
//! directory (the semi-honest participants, a curious storage), not one who rewrites it.
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
//!   38+R    2 signed only: TLS SignatureScheme code
//!   40+R    2 signed only: signature length S (1..=1024)
//!   42+R    S signed only: signature over "privset/v1/exchange-dir/link-key\0" ||
//!             role || 0x00 || public key, by the certificate's key
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
/// Longest signature in a key file (RSA-4096 is 512 bytes).
const MAX_SIGNATURE: usize = 1024;
const SIGNATURE_CONTEXT: &[u8] = b"privset/v1/exchange-dir/link-key\0";
const HKDF_SALT: &[u8] = b"privset/v1/exchange-dir";
const KEY_DERIVATION_LABEL: &[u8] = b"privset/v1/exchange-dir/link-key";

/// File name of `role`'s link key: `<role>.pub`.
pub fn key_file_name(role: &str) -> String {
    format!("{role}.pub")
}

/// File name of the certificate (PEM, the party's own certificate file) that signs
/// `role`'s two-party link key: `<role>.pem`.
pub fn certificate_file_name(role: &str) -> String {
    format!("{role}.pem")
}

/// Longest certificate file read from an exchange directory.
const MAX_CERTIFICATE_FILE: u64 = 64 * 1024;

/// How a link makes sure its peer's key file was written by its peer.
#[derive(Clone)]
pub enum PeerKeyCheck {
    /// Not at all: the exchange keeps out readers of the directory, not writers.
    Unchecked,
    /// Signed by this certificate (DER), which the parties file lists for the peer.
    Listed(Vec<u8>),
    /// Signed by the key of the certificate the peer put beside its key file, which
    /// `ca` vouches for and which, if `name` is given, is issued for that name.
    Vouched {
        ca: Arc<crate::tls::CaVerifier>,
        name: Option<String>,
    },
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
    /// `(TLS SignatureScheme code, signature)` by the role's certificate key, if signed.
    pub signature: Option<(u16, Vec<u8>)>,
}

impl KeyFile {
    /// What a signature covers: the context, the role and the public key.
    fn signed_message(role: &str, public: &[u8; 32]) -> Vec<u8> {
        [SIGNATURE_CONTEXT, role.as_bytes(), &[0], public].concat()
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(6 + self.role.len() + 32);
        out.extend_from_slice(&KEY_FILE_MAGIC);
        out.push(KEY_FILE_VERSION);
        out.push(self.role.len() as u8);
        out.extend_from_slice(self.role.as_bytes());
        out.extend_from_slice(&self.public);
        if let Some((scheme, sig)) = &self.signature {
            out.extend_from_slice(&scheme.to_be_bytes());
            out.extend_from_slice(&(sig.len() as u16).to_be_bytes());
            out.extend_from_slice(sig);
        }
        out
    }

    /// Checks that the file is signed by the key of `certificate` (DER); the error says
    /// why not.
    pub fn verify(&self, certificate: &[u8]) -> Result<(), String> {
        let Some((code, sig)) = &self.signature else {
            return Err("it is not signed".into());
        };
        let scheme = rustls::SignatureScheme::from(*code);
        let provider = rustls::crypto::ring::default_provider();
        let algorithms = provider
            .signature_verification_algorithms
            .mapping
            .iter()
            .find(|(s, _)| *s == scheme)
            .map(|(_, algs)| *algs)
            .ok_or_else(|| format!("its signature scheme {scheme:?} is not supported"))?;
        let der = rustls::pki_types::CertificateDer::from(certificate);
        let cert = webpki::EndEntityCert::try_from(&der)
            .map_err(|e| format!("the expected certificate is unreadable: {e}"))?;
        let message = Self::signed_message(&self.role, &self.public);
        algorithms
            .iter()
            .any(|alg| cert.verify_signature(*alg, &message, sig).is_ok())
            .then_some(())
            .ok_or_else(|| "its signature is not by the certificate listed for it".into())
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
        if !(1..=MAX_ROLE).contains(&len) || bytes.len() < 6 + len + 32 {
            return Err(format!(
                "a link key file of {} bytes with a {len}-byte role",
                bytes.len()
            ));
        }
        let rest = &bytes[6 + len + 32..];
        let signature = match rest.len() {
            0 => None,
            n if n >= 4 => {
                let code = u16::from_be_bytes([rest[0], rest[1]]);
                let sig_len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
                if !(1..=MAX_SIGNATURE).contains(&sig_len) || n != 4 + sig_len {
                    return Err(format!(
                        "a link key file whose signature section of {n} bytes announces {sig_len}"
                    ));
                }
                Some((code, rest[4..].to_vec()))
            }
            n => {
                return Err(format!(
                    "a link key file with {n} stray bytes after its key"
                ));
            }
        };
        let role = std::str::from_utf8(&bytes[6..6 + len])
            .ok()
            .filter(|r| {
                r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
            .ok_or("the role in a link key file is not a role name")?;
        let public = bytes[6 + len..6 + len + 32]
            .try_into()
            .expect("length checked");
        Ok(Self {
            role: role.to_string(),
            public,
            signature,
        })
    }
}

/// The public key `role` has published in `dir`, if it has; a key file that is not one,
/// or names another role, is an error.
pub fn published_key(dir: &Path, role: &str) -> Result<Option<[u8; 32]>, TransportError> {
    Ok(read_key_file(dir, role)?.map(|f| f.public))
}

/// The key file `role` has published in `dir`, if it has.
fn read_key_file(dir: &Path, role: &str) -> Result<Option<KeyFile>, TransportError> {
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
    Ok(Some(file))
}

/// Signs this participant's link key file with its certificate's private key.
pub struct LinkSigner {
    key: Arc<dyn rustls::sign::SigningKey>,
    /// The certificate file's PEM text, published beside the key file for a peer that
    /// is not told it ([`PeerKeyCheck::Vouched`]).
    certificate: Option<Vec<u8>>,
}

impl LinkSigner {
    /// The signer of the PEM private key in `path` (ECDSA, Ed25519 or RSA), whose
    /// certificate the peers know already (a parties file lists it).
    pub fn from_key_file(path: &Path) -> Result<Self, TransportError> {
        let der = crate::tls::load_key(path)?;
        let key = rustls::crypto::ring::sign::any_supported_type(&der).map_err(|e| {
            TransportError::Config(format!("private key file {}: {e}", path.display()))
        })?;
        Ok(Self {
            key,
            certificate: None,
        })
    }

    /// The signer of the key in `files.key`, publishing the certificate of `files.cert`
    /// beside its key file (checked now to belong to the key and to be vouched for by
    /// `files.ca`, so a misconfigured party stops before it writes anything).
    pub fn publishing_certificate(files: &crate::TlsFiles) -> Result<Self, TransportError> {
        crate::tls::check_own_files(files)?;
        let pem = fs::read(&files.cert).map_err(|e| {
            TransportError::io(
                format!("reading certificate file {}", files.cert.display()),
                e,
            )
        })?;
        Ok(Self {
            certificate: Some(pem),
            ..Self::from_key_file(&files.key)?
        })
    }

    fn sign(&self, role: &str, public: &[u8; 32]) -> Result<(u16, Vec<u8>), TransportError> {
        use rustls::SignatureScheme as S;
        let schemes = [
            S::ECDSA_NISTP256_SHA256,
            S::ECDSA_NISTP384_SHA384,
            S::ED25519,
            S::RSA_PSS_SHA256,
        ];
        let signer = self.key.choose_scheme(&schemes).ok_or_else(|| {
            TransportError::Config("the private key suits none of ECDSA, Ed25519, RSA-PSS".into())
        })?;
        let sig = signer
            .sign(&KeyFile::signed_message(role, public))
            .map_err(|e| TransportError::Config(format!("signing the link key: {e}")))?;
        Ok((u16::from(signer.scheme()), sig))
    }
}

/// Reads a file of at most a key file's size; `None` if it does not exist.
fn read_small(path: &Path) -> Result<Option<Vec<u8>>, TransportError> {
    read_bounded(path, (6 + MAX_ROLE + 32 + 4 + MAX_SIGNATURE + 1) as u64)
}

/// Reads at most `limit` bytes of a file; `None` if it does not exist.
fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, TransportError> {
    use std::io::Read;
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TransportError::io(format!("opening {}", path.display()), e)),
    };
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| TransportError::io(format!("reading {}", path.display()), e))?;
    Ok(Some(bytes))
}

impl DirPlace {
    /// Publishes this role's link key for the run whose seed is `seed` (skipped if the
    /// same key is already there: a restart), and returns the key pair. A different key
    /// already published means the directory holds another run of this role: refused.
    /// With `signer`, the key file is signed (and an unsigned one of the same key, from a
    /// run started without it, signed now).
    pub fn publish_key(
        &self,
        seed: &[u8; 32],
        signer: Option<&LinkSigner>,
    ) -> Result<Arc<LinkKeyPair>, TransportError> {
        let keys = LinkKeyPair::from_seed(seed);
        match read_key_file(self.path(), self.role())? {
            Some(f) if f.public == keys.public && (signer.is_none() || f.signature.is_some()) => {}
            Some(f) if f.public != keys.public => {
                return Err(TransportError::ExchangeDir(format!(
                    "{} holds another run's link key of {:?}; was this directory used by \
                     another run? Give each run its own directory",
                    self.path().join(key_file_name(self.role())).display(),
                    self.role()
                )));
            }
            _ => {
                // The certificate first: a peer that sees the key file finds it there.
                if let Some(pem) = signer.and_then(|s| s.certificate.as_deref()) {
                    self.write_file(&certificate_file_name(self.role()), pem)?;
                }
                let signature = signer
                    .map(|s| s.sign(self.role(), &keys.public))
                    .transpose()?;
                let file = KeyFile {
                    role: self.role().to_string(),
                    public: keys.public,
                    signature,
                };
                self.write_file(&key_file_name(self.role()), &file.encode())?;
            }
        }
        Ok(Arc::new(keys))
    }

    /// The sealed link of this (two-party) role to `peer_role`, with the key pair
    /// [`DirPlace::publish_key`] returned, checking the peer's key file as `check` says.
    pub fn seal_pair(
        &self,
        keys: Arc<LinkKeyPair>,
        peer_role: &str,
        check: PeerKeyCheck,
    ) -> SealedLink {
        let inner = self.link(self.role(), peer_role);
        SealedLink::new(inner, keys, self.role(), peer_role, check)
    }

    /// The sealed links of n-party participant `me` (this place's role is
    /// `p<me>`) to each of `peers`.
    /// With `certificates` (every participant's, by index), each peer's key file must be
    /// signed by its own.
    pub fn seal_links(
        &self,
        keys: Arc<LinkKeyPair>,
        me: PartyId,
        peers: &[PartyId],
        certificates: Option<&[Vec<u8>]>,
    ) -> LinkSet {
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
                Box::new(SealedLink::new(
                    inner,
                    keys.clone(),
                    &role,
                    &peer_role,
                    certificates
                        .and_then(|c| c.get(usize::from(peer)).cloned())
                        .map_or(PeerKeyCheck::Unchecked, PeerKeyCheck::Listed),
                )),
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
    /// Who must have signed the peer's key file.
    check: PeerKeyCheck,
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
    fn new(
        inner: ExchangeDir,
        keys: Arc<LinkKeyPair>,
        role: &str,
        peer_role: &str,
        check: PeerKeyCheck,
    ) -> Self {
        Self {
            inner,
            keys,
            role: role.to_string(),
            peer_role: peer_role.to_string(),
            check,
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
            let file = read_key_file(self.inner.path(), &self.peer_role)?.ok_or_else(|| {
                TransportError::ExchangeDir(format!("{} vanished", path.display()))
            })?;
            self.check_signer(&file, &path)?;
            let peer = file.public;
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

impl SealedLink {
    /// Refuses the peer's key file (read from `path`) unless [`PeerKeyCheck`] holds.
    fn check_signer(&self, file: &KeyFile, path: &Path) -> Result<(), TransportError> {
        let refused = |why: String| {
            TransportError::ExchangeDir(format!("{} is refused: {why}", path.display()))
        };
        match &self.check {
            PeerKeyCheck::Unchecked => Ok(()),
            PeerKeyCheck::Listed(certificate) => file.verify(certificate).map_err(|why| {
                refused(format!(
                    "{why} (the link key of {:?} must be signed with the key of {}, which the \
                     parties file lists for it; every participant gives --tls-key over an \
                     exchange directory when one does)",
                    self.peer_role,
                    crate::tls::describe_certificate(certificate)
                ))
            }),
            PeerKeyCheck::Vouched { ca, name } => {
                let cert_path = self
                    .inner
                    .path()
                    .join(certificate_file_name(&self.peer_role));
                let needs = || {
                    format!(
                        "the link key of {:?} must be signed with a certificate the CA vouches \
                         for, put beside it as {}; both parties give --tls-ca, --tls-cert and \
                         --tls-key over an exchange directory when one does",
                        self.peer_role,
                        cert_path.display()
                    )
                };
                let pem = read_bounded(&cert_path, MAX_CERTIFICATE_FILE)?
                    .ok_or_else(|| refused(format!("no certificate signs it: {}", needs())))?;
                let chain = crate::tls::certificates_in_pem(&pem).map_err(|why| {
                    refused(format!(
                        "its certificate file {}: {why}",
                        cert_path.display()
                    ))
                })?;
                ca.verify(&chain).map_err(|why| {
                    refused(format!(
                        "{} beside it: {why}",
                        crate::tls::describe_certificate(&chain[0])
                    ))
                })?;
                if let Some(expected) = name {
                    let holds = crate::tls::certificate_names(&chain[0]).is_some_and(|names| {
                        names.iter().any(|n| n.eq_ignore_ascii_case(expected))
                    });
                    if !holds {
                        return Err(refused(format!(
                            "it is signed for {}, not a certificate of {expected:?} \
                             (--tls-peer-name): the CA vouches for it, but it is not the peer \
                             this run expects",
                            crate::tls::describe_certificate(&chain[0])
                        )));
                    }
                }
                file.verify(&chain[0])
                    .map_err(|why| refused(format!("{why}: {}", needs())))
            }
        }
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
    let keys = place.publish_key(seed, None)?;
    Ok(place.seal_links(keys, me, peers, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_refuse_damage() {
        let file = KeyFile {
            role: "p3".into(),
            public: LinkKeyPair::from_seed(&[9; 32]).public(),
            signature: None,
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
    fn signed_key_files_verify_only_against_their_certificate() {
        let dir = std::env::temp_dir().join(format!("privset-sealed-sign-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::certs::generate(&dir, &["p1".into(), "rival".into()]).unwrap();
        let cert =
            |n: &str| crate::tls::end_entity_certificate(&dir.join(format!("{n}.pem"))).unwrap();
        let signer = LinkSigner::from_key_file(&dir.join("p1.key")).unwrap();
        let public = LinkKeyPair::from_seed(&[5; 32]).public();
        let file = KeyFile {
            role: "p1".into(),
            public,
            signature: Some(signer.sign("p1", &public).unwrap()),
        };
        let back = KeyFile::decode(&file.encode()).unwrap();
        assert_eq!(back, file);
        assert!(back.verify(&cert("p1")).is_ok());
        assert!(
            back.verify(&cert("rival"))
                .unwrap_err()
                .contains("not by the certificate")
        );
        // Another role or key under the same signature, a changed signature, none.
        let moved = KeyFile {
            role: "p2".into(),
            ..back.clone()
        };
        assert!(moved.verify(&cert("p1")).is_err());
        let other = KeyFile {
            public: [7; 32],
            ..back.clone()
        };
        assert!(other.verify(&cert("p1")).is_err());
        let mut bad = back.clone();
        bad.signature.as_mut().unwrap().1[10] ^= 1;
        assert!(bad.verify(&cert("p1")).is_err());
        let unsigned = KeyFile {
            signature: None,
            ..back
        };
        assert!(
            unsigned
                .verify(&cert("p1"))
                .unwrap_err()
                .contains("not signed")
        );
        let _ = std::fs::remove_dir_all(&dir);
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
