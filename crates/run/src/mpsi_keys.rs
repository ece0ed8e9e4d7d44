//! The threshold Paillier key of multi-party PSI, dealt before any session: `privset
//! mpsi deal` (and Python's `privset.mpsi_deal`) make a key for the set holders of a
//! parties file, write the public key for the coordinator and each holder's share to a
//! file of its own, and erase the factorisation (de Jong, Sec. 2.4; the trust this needs
//! is in `privset_crypto::tahe::paillier`, "Trust in the dealer").
//!
//! A key file is `magic "PSMK" ‖ version (1) ‖ kind (1: public key, 2: a holder's
//! share) ‖ public key (u32 length ‖ bytes) ‖ [share (u32 length ‖ bytes)] ‖ SHA-256 of
//! everything before`. Reading checks the size before reading, the checksum, the
//! public key's encoding and that the share belongs to it (`KeyShare::decode`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::ThresholdAhe;
use privset_crypto::tahe::paillier::{Dealer, KeyShare, Params, PublicKey, ThresholdPaillier};
use privset_protocols::mpsi::MpsiKey;
use privset_protocols::wire::Reader;
use sha2::{Digest, Sha256};

use crate::fail::Failure;
use crate::link::write_private;

const MAGIC: &[u8; 4] = b"PSMK";
const VERSION: u8 = 1;
const KIND_PUBLIC: u8 = 1;
const KIND_SHARE: u8 = 2;
/// Largest key file read (a 8,192-bit key for 255 holders is about 1 MB).
const MAX_FILE: u64 = 4 << 20;
/// The modulus for 128-bit security (the HE standard's and NIST's 3,072 bits).
pub const SECURE_MODULUS_BITS: u32 = 3072;

/// What [`deal`] wrote.
#[derive(Debug, Clone)]
pub struct Dealt {
    pub public_file: PathBuf,
    /// Each holder's name and its file, in session order.
    pub holder_files: Vec<(String, PathBuf)>,
    /// Hex of the key's fingerprint (what the participants' hellos compare).
    pub fingerprint: String,
}

/// Deals an n-out-of-n key for the set holders `holders` (participants 1.. of the
/// parties file, in order) with a modulus of `modulus_bits`, and writes
/// `dir/public.key` and `dir/<holder>.key` (owner-only permissions). Slow at 3,072
/// bits: two safe primes of 1,536 bits take minutes.
pub fn deal(holders: &[String], modulus_bits: u32, dir: &Path) -> Result<Dealt, Failure> {
    if holders.len() < 2 {
        return Err(Failure::config(
            "a Paillier key for multi-party PSI needs at least two set holders",
        ));
    }
    for name in holders {
        if name.is_empty()
            || name.starts_with('.')
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_. ".contains(c))
        {
            return Err(Failure::config(format!(
                "participant name {name:?} cannot be a file name: use letters, digits, '-', '_', '.' and spaces"
            )));
        }
    }
    let params = Params {
        modulus_bits,
        s: 1,
        parties: holders.len() as u32,
        threshold: holders.len() as u32,
    };
    let dealer = Dealer::new(params).map_err(|e| Failure::config(e.to_string()))?;
    let (public, shares) = dealer
        .deal(&mut SessionRng::from_os())
        .map_err(|e| Failure::other(e.to_string()))?;
    std::fs::create_dir_all(dir)?;
    let public_file = dir.join("public.key");
    write_private(&public_file, &encode(&public, None))?;
    let mut holder_files = Vec::with_capacity(holders.len());
    for (name, share) in holders.iter().zip(&shares) {
        let path = dir.join(format!("{name}.key"));
        let mut bytes = encode(&public, Some(share));
        write_private(&path, &bytes)?;
        zeroize::Zeroize::zeroize(&mut bytes);
        holder_files.push((name.clone(), path));
    }
    Ok(Dealt {
        public_file,
        holder_files,
        fingerprint: hex::encode(public.fingerprint()),
    })
}

fn encode(public: &PublicKey, share: Option<&KeyShare>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.push(if share.is_some() {
        KIND_SHARE
    } else {
        KIND_PUBLIC
    });
    let pk = ThresholdPaillier::encode_public_key(public);
    out.extend_from_slice(&(pk.len() as u32).to_be_bytes());
    out.extend_from_slice(&pk);
    if let Some(share) = share {
        let mut s = share.encode();
        out.extend_from_slice(&(s.len() as u32).to_be_bytes());
        out.extend_from_slice(&s);
        zeroize::Zeroize::zeroize(&mut s);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

/// Reads a key file written by [`deal`]: the coordinator's public key, or a holder's
/// share with its public key.
pub fn read_key(path: &Path) -> Result<MpsiKey, Failure> {
    let bad = |why: &str| Failure::config(format!("{}: {why}", path.display()));
    let size = std::fs::metadata(path)
        .map_err(|e| Failure::config(format!("{}: {e}", path.display())))?
        .len();
    if size > MAX_FILE {
        return Err(bad("too large for a key file"));
    }
    let mut bytes = std::fs::read(path)?;
    let result = parse(&bytes).map_err(|why| bad(&why));
    zeroize::Zeroize::zeroize(&mut bytes);
    result
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn parse(bytes: &[u8]) -> Result<MpsiKey, String> {
    if bytes.len() < 4 + 2 + 4 + 32 || &bytes[..4] != MAGIC {
        return Err("not a privset mpsi key file (privset mpsi deal writes them)".into());
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err("checksum mismatch: the file is damaged".into());
    }
    if body[4] != VERSION {
        return Err(format!(
            "key file version {} (this privset reads {VERSION})",
            body[4]
        ));
    }
    let kind = body[5];
    let mut r = Reader::new(&body[6..], "key file");
    let public =
        ThresholdPaillier::decode_public_key(r.bytes(MAX_FILE as usize).map_err(text)?, 255)
            .map_err(text)?;
    let share = match kind {
        KIND_PUBLIC => None,
        KIND_SHARE => Some(Arc::new(
            KeyShare::decode(&public, r.bytes(MAX_FILE as usize).map_err(text)?).map_err(text)?,
        )),
        other => return Err(format!("unknown key kind {other}")),
    };
    r.finish().map_err(text)?;
    Ok(MpsiKey::Dealt {
        public: Arc::new(public),
        share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("privset-mpsi-keys-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn dealt_files_read_back_and_damage_is_refused() {
        let dir = scratch("deal");
        let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let dealt = deal(&names, 1024, &dir).unwrap();
        let MpsiKey::Dealt {
            public,
            share: None,
        } = read_key(&dealt.public_file).unwrap()
        else {
            panic!("the public file holds no share");
        };
        assert_eq!(hex::encode(public.fingerprint()), dealt.fingerprint);
        for (i, (_, path)) in dealt.holder_files.iter().enumerate() {
            let MpsiKey::Dealt {
                public: p,
                share: Some(s),
            } = read_key(path).unwrap()
            else {
                panic!("a holder's file holds its share");
            };
            assert_eq!(p.fingerprint(), public.fingerprint());
            assert_eq!(s.index(), i as u32 + 1);
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let good = std::fs::read(&dealt.holder_files[0].1).unwrap();
        let damaged = dir.join("damaged.key");
        for bytes in [
            good[..good.len() - 1].to_vec(),
            {
                let mut b = good.clone();
                b[40] ^= 1;
                b
            },
            b"not a key".to_vec(),
        ] {
            std::fs::write(&damaged, &bytes).unwrap();
            assert!(read_key(&damaged).is_err());
        }
        assert!(read_key(&dir.join("missing.key")).is_err());
        assert!(deal(&["../x".to_string(), "y".to_string()], 1024, &dir).is_err());
        assert!(deal(&["only".to_string()], 1024, &dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
