//! What Authorize leaves the client with, and its file format (`X.sig`): the judge's
//! public key, the client ID, the items with their signatures, for Partial-APSI
//! the client's secret exponent `r` and key-consistency token, and how the items were
//! made from rows (the key settings, which every later Intersect states to the
//! server). The file is reused by every later Intersect, so it is checksummed and
//! every point in it is validated on load. It holds `r`: keep it as private as the
//! items themselves.
//!
//! ```text
//! "PRIVSET-APSI-SIG\n"   17 bytes
//! version                 u8 (2)
//! mode                    u8 (1 APSI, 2 Partial-APSI)
//! judge public key        96 bytes (compressed G2)
//! client ID               u32 length + bytes
//! r                       u8 present + 32 bytes (big-endian scalar, zero if absent)
//! key-consistency token   u8 present + 144 bytes (D, h_d, signature; zero if absent)
//! key settings            u16 length + UTF-8 "name=value" lines (`crate::agreed`;
//!                         length 0: none recorded)
//! count                   u64
//! count records           u32 length + item bytes + 48-byte signature
//! checksum                SHA-256 of everything above
//! ```
//!
//! Version 1 files (no key settings) still load, with none recorded: Intersect then
//! states the settings of the input it is given.

use std::collections::HashMap;

use privset_crypto::bls::{self, G1Affine, PublicKey, Scalar};
use sha2::{Digest, Sha256};

use super::{KcToken, MAX_CLIENT_ID_LEN, MAX_ITEM_LEN, Mode};
use crate::agreed::{AgreedSettings, MAX_AGREED_LEN};
use crate::error::InputError;

const MAGIC: &[u8; 17] = b"PRIVSET-APSI-SIG\n";
const VERSION: u8 = 2;

/// An authorized item with its signature, as Intersect uses it.
pub type SignedItem = (Vec<u8>, G1Affine);

/// The client's authorization: reusable across any number of Intersect runs.
#[derive(Clone)]
pub struct SignatureSet {
    pub mode: Mode,
    pub judge_key: PublicKey,
    pub client_id: Vec<u8>,
    /// Partial-APSI: the exponent `r` of the commitments (secret).
    pub secret: Option<Scalar>,
    /// Partial-APSI with key consistency: the judge-signed token.
    pub kc_token: Option<KcToken>,
    pub items: Vec<Vec<u8>>,
    pub signatures: Vec<G1Affine>,
    /// How the items were made from rows at Authorize; `None` in a version 1 file.
    pub key_settings: Option<AgreedSettings>,
}

impl std::fmt::Debug for SignatureSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureSet")
            .field("mode", &self.mode)
            .field("client_id", &String::from_utf8_lossy(&self.client_id))
            .field("items", &self.items.len())
            .field("kc_token", &self.kc_token.is_some())
            .field("key_settings", &self.key_settings)
            .finish_non_exhaustive()
    }
}

impl SignatureSet {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.items.len() * (4 + 16 + bls::G1_LEN));
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(self.mode.code());
        out.extend_from_slice(&self.judge_key.to_bytes());
        out.extend_from_slice(&(self.client_id.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.client_id);
        match &self.secret {
            Some(r) => {
                out.push(1);
                out.extend_from_slice(&bls::encode_scalar(r));
            }
            None => out.extend_from_slice(&[0u8; 1 + bls::SCALAR_LEN]),
        }
        match &self.kc_token {
            Some(t) => {
                out.push(1);
                out.extend_from_slice(&t.encode());
            }
            None => out.extend_from_slice(&[0u8; 1 + KcToken::LEN]),
        }
        // No settings recorded encode as length 0.
        let none = AgreedSettings::new();
        self.key_settings
            .as_ref()
            .unwrap_or(&none)
            .encode_into(&mut out);
        out.extend_from_slice(&(self.items.len() as u64).to_be_bytes());
        let sigs = bls::encode_g1_batch(&self.signatures);
        for (item, sig) in self.items.iter().zip(sigs.chunks_exact(bls::G1_LEN)) {
            out.extend_from_slice(&(item.len() as u32).to_be_bytes());
            out.extend_from_slice(item);
            out.extend_from_slice(sig);
        }
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum);
        out
    }

    /// Parses and validates a signature file's bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, InputError> {
        let bad = |what: &str| InputError::Other(format!("signature file: {what}"));
        if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(bad("not a privset APSI signature file"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != sum {
            return Err(bad(
                "checksum mismatch (the file is truncated or corrupted)",
            ));
        }
        let mut r = crate::wire::Reader::new(&body[MAGIC.len()..], "signature file");
        let truncated = |_| bad("truncated");
        let version = r.u8().map_err(truncated)?;
        if !(1..=VERSION).contains(&version) {
            return Err(bad(&format!(
                "format version {version}, this build reads 1 to {VERSION}"
            )));
        }
        let mode =
            Mode::from_code(r.u8().map_err(truncated)?).ok_or_else(|| bad("unknown mode"))?;
        let judge_key = PublicKey::from_bytes(r.take(bls::G2_LEN).map_err(truncated)?)
            .map_err(|e| bad(&format!("judge public key: {e}")))?;
        let client_id = r.bytes(MAX_CLIENT_ID_LEN).map_err(truncated)?.to_vec();
        let has_secret = r.u8().map_err(truncated)?;
        let secret_bytes = r.take(bls::SCALAR_LEN).map_err(truncated)?;
        let secret = match has_secret {
            0 => None,
            _ => Some(bls::decode_scalar(secret_bytes).map_err(|e| bad(&format!("secret: {e}")))?),
        };
        let has_token = r.u8().map_err(truncated)?;
        let token_bytes = r.take(KcToken::LEN).map_err(truncated)?;
        let kc_token = match has_token {
            0 => None,
            _ => Some(
                KcToken::decode(token_bytes)
                    .map_err(|e| bad(&format!("key-consistency token: {e}")))?,
            ),
        };
        if (mode == Mode::Partial) != secret.is_some() {
            return Err(bad("mode and secret exponent disagree"));
        }
        let key_settings = if version >= 2 {
            let len = usize::from(u16::from_be_bytes(r.array().map_err(truncated)?));
            if len > MAX_AGREED_LEN {
                return Err(bad(&format!("key settings of {len} bytes")));
            }
            let text = r.take(len).map_err(truncated)?;
            let settings =
                AgreedSettings::parse(text).map_err(|why| bad(&format!("key settings: {why}")))?;
            (!settings.is_empty()).then_some(settings)
        } else {
            None
        };
        let count = r.u64().map_err(truncated)?;
        // Each record takes at least 4 + 48 bytes: bound the count before allocating.
        if count > (body.len() / (4 + bls::G1_LEN)) as u64 {
            return Err(bad("record count exceeds the file size"));
        }
        let mut items = Vec::with_capacity(count as usize);
        let mut packed = Vec::with_capacity(count as usize * bls::G1_LEN);
        for _ in 0..count {
            items.push(r.bytes(MAX_ITEM_LEN).map_err(truncated)?.to_vec());
            packed.extend_from_slice(r.take(bls::G1_LEN).map_err(truncated)?);
        }
        r.finish().map_err(|_| bad("trailing bytes"))?;
        let signatures = bls::decode_g1_batch(&packed)
            .map_err(|(i, e)| bad(&format!("signature of record {}: {e}", i + 1)))?;
        Ok(Self {
            mode,
            judge_key,
            client_id,
            secret,
            kc_token,
            items,
            signatures,
            key_settings,
        })
    }

    /// The signed items among `subset`, with their signatures, and the items of
    /// `subset` that have none (reported to the user and left out).
    pub fn select(&self, subset: &[Vec<u8>]) -> (Vec<SignedItem>, Vec<Vec<u8>>) {
        let index: HashMap<&[u8], usize> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, x)| (x.as_slice(), i))
            .collect();
        let mut signed = Vec::with_capacity(subset.len());
        let mut unsigned = Vec::new();
        for x in subset {
            match index.get(x.as_slice()) {
                Some(&i) => signed.push((x.clone(), self.signatures[i])),
                None => unsigned.push(x.clone()),
            }
        }
        (signed, unsigned)
    }
}
