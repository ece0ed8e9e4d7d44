//! The database file: versioned and checksummed, so that a truncated or corrupted file
//! is a clear error and never a panic or a wrong answer. Written and read as a stream
//! (a 2^24-item database is gigabytes), with the polynomials stored precomputed so that
//! loading does no polynomial arithmetic.
//!
//! ```text
//! magic "PRIVSET-UPSI-DB\n" (16 bytes), version u32 (6)
//! preset TOML (u32 length + bytes), label length u32, label nonce length u8,
//!     label layout u8 (`item::LabelLayout::code`: 0 prefixed cells, 1 raw), OPRF key seed (32 bytes), OPRF group u8 (`item::Oprf::code`: 1 ristretto255,
//!     16 X25519)
//! key settings: u16 length + UTF-8 "name=value" lines, as a hello states them
//!     (`crate::agreed`; length 0: none recorded)
//! item count u64, then per item: item (u32 length + bytes), hash u128,
//!     encrypted label (nonce + label length bytes; absent when unlabeled)
//! per bin of the table: its bundle count u32, then per bundle: entry count u32 and
//!     the entries' item numbers (u32 each)
//! per bundle index: its bundle count u32, then per bundle and polynomial (matching,
//!     then each label part): coefficient count u32 and each coefficient's packed words
//!     (u64 each, `bfv::packed::packed_words` of them)
//! SHA-256 of everything above (32 bytes)
//! ```
//! Version 5 files (no key settings) load with none recorded: the front ends refuse
//! to serve or change them until they are built again (a server cannot tell how their
//! items were made, and a guess could answer wrongly). Version 4 files (no label
//! layout: prefixed cells), version 3 files (no nonce length
//! either: 16-byte nonces), version 2 files (no OPRF group
//! byte either: ristretto255) and version 1 files (items only: their polynomials are
//! computed on load) still load.
//! Integers are big-endian.

use std::io::{BufReader, BufWriter, Read, Write};

use privset_crypto::bfv::{PackedPlaintext, PackedPolynomial, packed::packed_words};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::db::{Database, PackedBundle};
use super::item::{self, LEGACY_NONCE_LEN, LabelLayout, MAX_LABEL_LEN, Oprf, OprfKey};
use super::preset::Preset;
use crate::agreed::{AgreedSettings, MAX_AGREED_LEN};
use crate::error::ProtocolError;

const MAGIC: &[u8; 16] = b"PRIVSET-UPSI-DB\n";
const VERSION: u32 = 6;

/// A writer that hashes what passes through it.
struct Hashing<W: Write> {
    inner: BufWriter<W>,
    hasher: Sha256,
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.inner.write_all(bytes)
    }

    fn u32(&mut self, v: usize) -> std::io::Result<()> {
        self.put(&(v as u32).to_be_bytes())
    }
}

/// The database as bytes (see [`save_to`]).
pub fn save(db: &Database) -> Result<Vec<u8>, ProtocolError> {
    let mut out = Vec::new();
    save_to(db, &mut out)?;
    Ok(out)
}

/// Writes the database (prepared: its polynomials are stored) to `out`.
pub fn save_to(db: &Database, out: impl Write) -> Result<(), ProtocolError> {
    let bundles = db.packed_bundles()?;
    let io = |e: std::io::Error| ProtocolError::Config(format!("writing the database: {e}"));
    let mut w = Hashing {
        inner: BufWriter::with_capacity(1 << 20, out),
        hasher: Sha256::new(),
    };
    w.put(MAGIC).map_err(io)?;
    w.put(&VERSION.to_be_bytes()).map_err(io)?;
    let preset = db.preset().to_toml();
    w.u32(preset.len()).map_err(io)?;
    w.put(preset.as_bytes()).map_err(io)?;
    w.u32(db.label_len()).map_err(io)?;
    w.put(&[db.nonce_len() as u8]).map_err(io)?;
    w.put(&[db.label_layout().code()]).map_err(io)?;
    w.put(db.oprf_key().seed.as_ref()).map_err(io)?;
    w.put(&[db.oprf().code()]).map_err(io)?;
    // No settings recorded encode as length 0.
    let mut settings = Vec::new();
    let none = AgreedSettings::new();
    db.key_settings()
        .unwrap_or(&none)
        .encode_into(&mut settings);
    w.put(&settings).map_err(io)?;
    w.put(&(db.len() as u64).to_be_bytes()).map_err(io)?;
    for (item, hash, label) in db.records() {
        w.u32(item.len()).map_err(io)?;
        w.put(item).map_err(io)?;
        w.put(&hash.to_be_bytes()).map_err(io)?;
        w.put(label).map_err(io)?;
    }
    for column in db.columns() {
        w.u32(column.len()).map_err(io)?;
        for bin in column {
            w.u32(bin.len()).map_err(io)?;
            for &i in bin {
                w.put(&i.to_be_bytes()).map_err(io)?;
            }
        }
    }
    let mut words = Vec::new();
    for index in &bundles {
        w.u32(index.len()).map_err(io)?;
        for bundle in index {
            for polynomial in &bundle.polynomials {
                w.u32(polynomial.coefficients.len()).map_err(io)?;
                for c in &polynomial.coefficients {
                    words.clear();
                    words.extend(c.words().iter().flat_map(|x| x.to_be_bytes()));
                    w.put(&words).map_err(io)?;
                }
            }
        }
    }
    let digest = w.hasher.finalize();
    w.inner.write_all(&digest).map_err(io)?;
    w.inner.flush().map_err(io)
}

fn corrupt(why: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::Config(format!(
        "the unbalanced-PSI database file is not valid: {why}"
    ))
}

/// A reader that hashes what it reads and knows how much of the body is left, so that
/// no count read from the file can ask for more memory than the file could fill.
struct Body<R: Read> {
    inner: BufReader<R>,
    hasher: Sha256,
    left: u64,
}

impl<R: Read> Body<R> {
    fn take(&mut self, buf: &mut [u8]) -> Result<(), ProtocolError> {
        if buf.len() as u64 > self.left {
            return Err(corrupt("it ends early (truncated)"));
        }
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => corrupt("it ends early (truncated)"),
            _ => ProtocolError::Config(format!("reading the database: {e}")),
        })?;
        self.left -= buf.len() as u64;
        self.hasher.update(&*buf);
        Ok(())
    }

    /// Hashes the rest of the body without keeping it.
    fn skip_rest(&mut self) -> Result<(), ProtocolError> {
        let mut buf = vec![0u8; 1 << 16];
        while self.left > 0 {
            let n = self.left.min(buf.len() as u64) as usize;
            self.take(&mut buf[..n])?;
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ProtocolError> {
        let mut a = [0u8; N];
        self.take(&mut a)?;
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32, ProtocolError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// A count of things of at least `min_bytes` each, checked against what is left.
    fn count(&mut self, min_bytes: u64, what: &str) -> Result<usize, ProtocolError> {
        let n = self.u32()?;
        self.check_count(u64::from(n), min_bytes, what)
    }

    fn check_count(&self, n: u64, min_bytes: u64, what: &str) -> Result<usize, ProtocolError> {
        if n.saturating_mul(min_bytes.max(1)) > self.left {
            return Err(corrupt(format!("{n} {what} in {} bytes", self.left)));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self, max: usize, what: &str) -> Result<Vec<u8>, ProtocolError> {
        let len = self.count(1, what)?;
        if len > max {
            return Err(corrupt(format!("{what} of {len} bytes (at most {max})")));
        }
        let mut v = vec![0u8; len];
        self.take(&mut v)?;
        Ok(v)
    }
}

/// A database from bytes written by [`save`].
pub fn load(bytes: &[u8]) -> Result<Database, ProtocolError> {
    load_from(bytes, bytes.len() as u64)
}

/// A database from a stream of `len` bytes written by [`save_to`].
pub fn load_from(input: impl Read, len: u64) -> Result<Database, ProtocolError> {
    if len < (MAGIC.len() + 36) as u64 {
        return Err(corrupt(
            "it does not start as a privset unbalanced-PSI database",
        ));
    }
    let mut body = Body {
        inner: BufReader::with_capacity(1 << 20, input),
        hasher: Sha256::new(),
        left: len - 32,
    };
    if &body.array::<16>()? != MAGIC {
        return Err(corrupt(
            "it does not start as a privset unbalanced-PSI database",
        ));
    }
    let parsed = parse(&mut body);
    // Hash what the parser left unread and check the checksum: a mismatch explains
    // any parse error, so it is reported first.
    let mut digest = [0u8; 32];
    let whole = body.skip_rest().is_ok() && body.inner.read_exact(&mut digest).is_ok();
    if !whole || body.hasher.finalize().as_slice() != digest {
        return Err(corrupt(
            "its checksum does not match (truncated or corrupted)",
        ));
    }
    parsed
}

fn parse<R: Read>(r: &mut Body<R>) -> Result<Database, ProtocolError> {
    let version = r.u32()?;
    if !(1..=VERSION).contains(&version) {
        return Err(corrupt(format!(
            "version {version}; this privset reads versions 1 to {VERSION}"
        )));
    }
    let preset_text = r.bytes(1 << 16, "preset")?;
    let preset_text =
        std::str::from_utf8(&preset_text).map_err(|_| corrupt("preset is not UTF-8"))?;
    let preset = Preset::parse(preset_text)?;
    let label_len = r.u32()? as usize;
    if label_len > MAX_LABEL_LEN {
        return Err(corrupt(format!("labels of {label_len} bytes")));
    }
    let nonce_len = if version >= 4 {
        let [n] = r.array::<1>()?;
        item::check_nonce_len(n.into()).map_err(corrupt)?;
        n.into()
    } else {
        LEGACY_NONCE_LEN
    };
    let layout = if version >= 5 {
        let [code] = r.array::<1>()?;
        LabelLayout::from_code(code).ok_or_else(|| corrupt(format!("label layout {code}")))?
    } else {
        LabelLayout::Prefixed
    };
    let seed = Zeroizing::new(r.array::<32>()?);
    let oprf = if version >= 3 {
        let [code] = r.array::<1>()?;
        Oprf::from_code(code).ok_or_else(|| corrupt(format!("OPRF group {code}")))?
    } else {
        Oprf::Ristretto255
    };
    let settings = if version >= 6 {
        let len = usize::from(u16::from_be_bytes(r.array()?));
        if len > MAX_AGREED_LEN {
            return Err(corrupt(format!("key settings of {len} bytes")));
        }
        let mut text = vec![0u8; len];
        r.take(&mut text)?;
        AgreedSettings::parse(&text).map_err(|why| corrupt(format!("key settings: {why}")))?
    } else {
        AgreedSettings::new()
    };
    let mut db = Database::with_key(preset, label_len, nonce_len, OprfKey { oprf, seed })?;
    db.set_label_layout(layout);
    db.set_key_settings(settings);
    let count = u64::from_be_bytes(r.array()?);
    let stride = db.encrypted_label_len();
    let count = r.check_count(count, 20 + stride as u64, "items")?;
    let records = db.records_mut();
    records.reserve(count, 0);
    let mut label = vec![0u8; stride];
    for _ in 0..count {
        let item = r.bytes(item::MAX_ITEM_LEN, "item")?;
        let hash = u128::from_be_bytes(r.array()?);
        r.take(&mut label)?;
        if records.find(hash).is_some() {
            return Err(corrupt("an item hash appears twice"));
        }
        records.push(&item, hash, &label);
    }
    if version == 1 {
        // As a version 2 file loads: encoded, nothing held ready until prepared.
        db.place_all();
        db.encode_changed()?;
        return Ok(db);
    }
    let preset = db.preset().clone();
    let mut columns = Vec::with_capacity(preset.table_size);
    for _ in 0..preset.table_size {
        let layers = r.count(4, "bundles of a bin")?;
        let mut column = Vec::with_capacity(layers);
        for _ in 0..layers {
            let entries = r.count(4, "entries of a bin")?;
            let mut bin = Vec::with_capacity(entries);
            for _ in 0..entries {
                bin.push(r.u32()?);
            }
            column.push(bin);
        }
        columns.push(column);
    }
    let params = db.params().clone();
    let words = packed_words(&params);
    let parts = 1 + item::label_parts(&preset, db.encrypted_label_len());
    let mut packed = Vec::with_capacity(preset.bundle_indices());
    let mut buf = vec![0u8; words * 8];
    for _ in 0..preset.bundle_indices() {
        let bundles = r.count((parts * 4) as u64, "bundles")?;
        let mut index = Vec::with_capacity(bundles);
        for _ in 0..bundles {
            let mut polynomials = Vec::with_capacity(parts);
            for _ in 0..parts {
                let n = r.count((words * 8) as u64, "coefficients")?;
                if n > preset.max_items_per_bin + 1 {
                    return Err(corrupt(format!("a polynomial of {n} coefficients")));
                }
                let mut coefficients = Vec::with_capacity(n);
                for _ in 0..n {
                    r.take(&mut buf)?;
                    let w = buf
                        .chunks_exact(8)
                        .map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes")))
                        .collect();
                    coefficients.push(PackedPlaintext::from_words(&params, w).map_err(corrupt)?);
                }
                polynomials.push(PackedPolynomial {
                    par: params.clone(),
                    level: preset.evaluation_level,
                    coefficients,
                });
            }
            index.push(PackedBundle { polynomials });
        }
        packed.push(index);
    }
    if r.left != 0 {
        return Err(corrupt("it has bytes the format does not account for"));
    }
    Database::from_parts(db, columns, packed).map_err(corrupt)
}
