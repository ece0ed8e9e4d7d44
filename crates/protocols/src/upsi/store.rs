//! The database file: versioned and checksummed, so that a truncated or corrupted file
//! is a clear error and never a panic or a wrong answer.
//!
//! ```text
//! magic "PRIVSET-UPSI-DB\n" (16 bytes), version u32 (1)
//! preset TOML (u32 length + bytes), label length u32, OPRF key seed (32 bytes)
//! item count u64, then per item: item (u32 length + bytes), hash u128,
//!     encrypted label (nonce + label length bytes; absent when unlabeled)
//! SHA-256 of everything above (32 bytes)
//! ```
//! The polynomials are not stored: loading recomputes them on every core.

use sha2::{Digest, Sha256};

use super::db::{Database, Record};
use super::item::{MAX_LABEL_LEN, NONCE_LEN};
use super::preset::Preset;
use crate::error::ProtocolError;
use crate::wire::Reader;

const MAGIC: &[u8; 16] = b"PRIVSET-UPSI-DB\n";
const VERSION: u32 = 1;
/// Longest item a database stores.
pub const MAX_ITEM_LEN: usize = 1 << 16;

/// The database as bytes.
pub fn save(db: &Database) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_be_bytes());
    let preset = db.preset().to_toml();
    out.extend_from_slice(&(preset.len() as u32).to_be_bytes());
    out.extend_from_slice(preset.as_bytes());
    out.extend_from_slice(&(db.label_len() as u32).to_be_bytes());
    out.extend_from_slice(&db.key_seed());
    out.extend_from_slice(&(db.len() as u64).to_be_bytes());
    let mut records: Vec<_> = db.records().collect();
    records.sort_by(|a, b| a.0.cmp(b.0));
    for (item, record) in records {
        out.extend_from_slice(&(item.len() as u32).to_be_bytes());
        out.extend_from_slice(item);
        out.extend_from_slice(&record.hashed.to_be_bytes());
        out.extend_from_slice(&record.encrypted_label);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

fn corrupt(why: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::Config(format!(
        "the unbalanced-PSI database file is not valid: {why}"
    ))
}

/// A database from bytes written by [`save`].
pub fn load(bytes: &[u8]) -> Result<Database, ProtocolError> {
    if bytes.len() < MAGIC.len() + 36 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(corrupt(
            "it does not start as a privset unbalanced-PSI database",
        ));
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err(corrupt(
            "its checksum does not match (truncated or corrupted)",
        ));
    }
    parse(&body[MAGIC.len()..]).map_err(|e| match e {
        ProtocolError::PeerMisbehaved(inner) => corrupt(inner),
        other => other,
    })
}

fn parse(body: &[u8]) -> Result<Database, ProtocolError> {
    let mut r = Reader::new(body, "unbalanced-PSI database");
    let version = r.u32()?;
    if version != VERSION {
        return Err(corrupt(format!(
            "version {version}; this privset reads version {VERSION}"
        )));
    }
    let preset_text =
        std::str::from_utf8(r.bytes(1 << 16)?).map_err(|_| corrupt("preset is not UTF-8"))?;
    let preset = Preset::parse(preset_text)?;
    let label_len = r.u32()? as usize;
    if label_len > MAX_LABEL_LEN {
        return Err(corrupt(format!("labels of {label_len} bytes")));
    }
    let key_seed = r.array::<32>()?;
    let count = r.u64()?;
    let encrypted_len = if label_len > 0 {
        NONCE_LEN + label_len
    } else {
        0
    };
    // Each record takes at least 20 bytes: a count beyond that is a lie.
    if count > (body.len() / 20) as u64 {
        return Err(corrupt(format!("{count} items in {} bytes", body.len())));
    }
    let mut records = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let item = r.bytes(MAX_ITEM_LEN)?.to_vec();
        let hashed = r.u128()?;
        let encrypted_label = r.take(encrypted_len)?.to_vec();
        records.push((
            item,
            Record {
                hashed,
                encrypted_label,
            },
        ));
    }
    r.finish()?;
    Database::from_records(preset, label_len, key_seed, records)
}
