//! How a record's identifier is made from its cells: which columns, how each cell is
//! normalised, how several columns are joined, and whether the result is hashed. Every
//! reader (CSV, Parquet, Arrow, Python's in-memory rows) goes through [`Keys::key`], so
//! every protocol and both front ends see the same bytes. docs/inputs.md documents it.
//!
//! * One column: the identifier is the normalised cell.
//! * Several columns: for each column in order, its normalised cell's length as a
//!   4-byte big-endian integer, then the cell's bytes. A separator could occur in the
//!   data (`"a,b" + "c"` and `"a" + "b,c"`); a length prefix cannot be confused.
//! * `--hash-ids sha256`: the identifier is the lowercase hex SHA-256 of the bytes
//!   above (64 characters), so the raw identifiers never reach the protocol.

use privset_protocols::agreed::AgreedSettings;
use sha2::{Digest, Sha256};

use crate::fail::Failure;

/// How one cell is normalised before it becomes (part of) an identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalize {
    /// The cell's bytes exactly as stored.
    None,
    /// Surrounding ASCII whitespace removed (the default, as before issue 19).
    Trim,
    /// Trimmed, then lower-cased (Unicode when the cell is UTF-8, else ASCII).
    Lower,
    /// Trimmed and lower-cased; must be `local@domain` (one `@`, no spaces).
    Email,
    /// A telephone number in E.164 form (`+` and 7 to 15 digits), see [`phone_e164`].
    PhoneE164,
    /// A label column's cell read beside the identifier: its bytes exactly, and empty
    /// allowed (a label may be blank). Never an identifier: [`Normalize::from_name`]
    /// does not offer it.
    LabelCell,
}

impl Normalize {
    pub const NAMES: &'static str = "none, trim, lower, email, phone-e164";

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "none" => Self::None,
            "trim" => Self::Trim,
            "lower" => Self::Lower,
            "email" => Self::Email,
            "phone-e164" => Self::PhoneE164,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Trim => "trim",
            Self::Lower => "lower",
            Self::Email => "email",
            Self::PhoneE164 => "phone-e164",
            Self::LabelCell => "label cell",
        }
    }
}

/// Hashing of the finished identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashIds {
    /// Lowercase hex of SHA-256.
    Sha256,
}

impl HashIds {
    pub fn from_name(name: &str) -> Option<Self> {
        (name == "sha256").then_some(Self::Sha256)
    }
}

/// A telephone region: the country calling code, and whether national numbers keep
/// their leading 0 after it (Italy) instead of dropping it as a trunk prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhoneRegion {
    pub calling_code: u16,
    pub keeps_leading_zero: bool,
}

/// Regions known by their ISO 3166 letters; any other is given as its calling code.
const REGIONS: &[(&str, u16)] = &[
    ("US", 1),
    ("CA", 1),
    ("GB", 44),
    ("UK", 44),
    ("IE", 353),
    ("FR", 33),
    ("DE", 49),
    ("ES", 34),
    ("IT", 39),
    ("PT", 351),
    ("NL", 31),
    ("BE", 32),
    ("LU", 352),
    ("CH", 41),
    ("AT", 43),
    ("DK", 45),
    ("SE", 46),
    ("NO", 47),
    ("FI", 358),
    ("PL", 48),
    ("CZ", 420),
    ("GR", 30),
    ("AU", 61),
    ("NZ", 64),
    ("JP", 81),
    ("KR", 82),
    ("CN", 86),
    ("IN", 91),
    ("SG", 65),
    ("HK", 852),
    ("ZA", 27),
    ("BR", 55),
    ("MX", 52),
    ("IL", 972),
    ("AE", 971),
    ("TR", 90),
];

impl PhoneRegion {
    /// `GB`, `gb` or a calling code such as `44`.
    pub fn parse(text: &str) -> Result<Self, Failure> {
        let t = text.trim().trim_start_matches('+');
        if !t.is_empty() && t.len() <= 3 && t.bytes().all(|b| b.is_ascii_digit()) {
            let code: u16 = t.parse().expect("1 to 3 digits");
            if code == 0 {
                return Err(Failure::config("--phone-region: 0 is not a calling code"));
            }
            return Ok(Self {
                calling_code: code,
                keeps_leading_zero: code == 39,
            });
        }
        let upper = t.to_ascii_uppercase();
        REGIONS
            .iter()
            .find(|(name, _)| *name == upper)
            .map(|&(_, code)| Self {
                calling_code: code,
                keeps_leading_zero: code == 39,
            })
            .ok_or_else(|| {
                let known: Vec<&str> = REGIONS.iter().map(|(n, _)| *n).collect();
                Failure::config(format!(
                    "--phone-region {text:?}: not a known region ({}) nor a calling code such as 44",
                    known.join(", ")
                ))
            })
    }
}

/// A telephone number in E.164 form: `+`, the country calling code and the national
/// number, digits only.
///
/// Spaces, tabs, `-`, `.`, `/`, `(` and `)` are dropped. A number starting with `+` or
/// `00` (or `011` in region 1) is international as written. Otherwise it is national
/// and needs `region`: in region 1 (US, CA) ten digits, or eleven starting with the
/// trunk prefix 1; elsewhere one leading trunk 0 is dropped (kept in Italy) and the
/// calling code put in front. The result must have 7 to 15 digits and not start with
/// 0. Anything else (letters, an extension, a misplaced `+`) is refused.
pub fn phone_e164(cell: &[u8], region: Option<PhoneRegion>) -> Result<Vec<u8>, String> {
    let mut digits = Vec::with_capacity(16);
    let mut plus = false;
    for &b in cell {
        match b {
            b'0'..=b'9' => digits.push(b),
            b' ' | b'\t' | b'-' | b'.' | b'/' | b'(' | b')' => {}
            b'+' if digits.is_empty() && !plus => plus = true,
            _ => {
                return Err(format!(
                    "not a telephone number: unexpected {:?}",
                    String::from_utf8_lossy(&[b])
                ));
            }
        }
    }
    if digits.is_empty() {
        return Err("not a telephone number: no digits".into());
    }
    let international: Vec<u8> = if plus {
        digits
    } else if let Some(rest) = digits.strip_prefix(b"00") {
        rest.to_vec()
    } else {
        let region = region.ok_or(
            "a national number (no + or 00): pass --phone-region (e.g. GB or 44) to say which country",
        )?;
        let code = region.calling_code.to_string().into_bytes();
        if region.calling_code == 1 {
            if let Some(rest) = digits.strip_prefix(b"011") {
                rest.to_vec()
            } else if digits.len() == 11 && digits[0] == b'1' {
                digits
            } else if digits.len() == 10 {
                [code, digits].concat()
            } else {
                return Err(format!(
                    "{} digits: a national number in region 1 has 10 (or 11 starting with 1)",
                    digits.len()
                ));
            }
        } else {
            let national = match digits.strip_prefix(b"0") {
                Some(rest) if !region.keeps_leading_zero => rest,
                _ => &digits[..],
            };
            [code.as_slice(), national].concat()
        }
    };
    if international.first() == Some(&b'0') {
        return Err("not a telephone number: the country code cannot start with 0".into());
    }
    if !(7..=15).contains(&international.len()) {
        return Err(format!(
            "not a telephone number: {} digits with the country code (E.164 allows 7 to 15)",
            international.len()
        ));
    }
    let mut out = Vec::with_capacity(international.len() + 1);
    out.push(b'+');
    out.extend_from_slice(&international);
    Ok(out)
}

fn lower(cell: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(cell) {
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => cell.to_ascii_lowercase(),
    }
}

/// Normalises one cell; the message says what is wrong, without the position.
pub fn normalize(
    cell: &[u8],
    how: Normalize,
    region: Option<PhoneRegion>,
) -> Result<Vec<u8>, String> {
    let out = match how {
        Normalize::None => cell.to_vec(),
        Normalize::LabelCell => return Ok(cell.to_vec()),
        Normalize::Trim => cell.trim_ascii().to_vec(),
        Normalize::Lower => lower(cell.trim_ascii()),
        Normalize::Email => {
            let e = lower(cell.trim_ascii());
            let at = e.iter().filter(|&&b| b == b'@').count();
            let pos = e.iter().position(|&b| b == b'@');
            let ok = at == 1
                && pos.is_some_and(|p| p > 0 && p + 1 < e.len())
                && !e.iter().any(|b| b.is_ascii_whitespace());
            if !ok && !e.is_empty() {
                return Err(format!(
                    "not an e-mail address (local@domain): {:?}",
                    shown(cell)
                ));
            }
            e
        }
        Normalize::PhoneE164 => {
            let t = cell.trim_ascii();
            if t.is_empty() {
                Vec::new()
            } else {
                phone_e164(t, region).map_err(|e| format!("{e}: {:?}", shown(cell)))?
            }
        }
    };
    if out.is_empty() {
        return Err("empty identifier".into());
    }
    Ok(out)
}

/// A cell for a message, shortened.
fn shown(cell: &[u8]) -> String {
    let s = String::from_utf8_lossy(cell);
    match s.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.into_owned(),
    }
}

/// Checks the key settings `now` of the rows given today against those recorded in a
/// file (`file` names it: a signature file, a database) when its keys were made: keys
/// made otherwise would silently miss the recorded ones. A difference is a
/// configuration error naming the setting and both values, then `fix`.
pub fn check_recorded(
    recorded: &AgreedSettings,
    file: &str,
    now: &AgreedSettings,
    fix: &str,
) -> Result<(), Failure> {
    recorded.check(now, file, "input").map_err(|e| {
        let why = match e {
            privset_protocols::ProtocolError::Incompatible(why) => why,
            other => other.to_string(),
        };
        Failure::config(format!(
            "{why}; {fix} (the same number of id columns, normalisation, phone region and \
             identifier hashing)"
        ))
    })
}

/// Which columns make the identifier, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// The identifier columns, in order (both parties must list the same columns in
    /// the same order).
    pub columns: Vec<String>,
    /// One normalisation for every column, or one per column.
    pub normalize: Vec<Normalize>,
    pub phone_region: Option<PhoneRegion>,
    pub hash: Option<HashIds>,
}

impl Keys {
    /// One column, trimmed: the behaviour before issue 19.
    pub fn single(column: &str) -> Self {
        Self {
            columns: vec![column.to_string()],
            normalize: vec![Normalize::Trim],
            phone_region: None,
            hash: None,
        }
    }

    /// Builds and checks keys from the front ends' names.
    pub fn new(
        columns: Vec<String>,
        normalize: &[String],
        phone_region: Option<&str>,
        hash: Option<&str>,
    ) -> Result<Self, Failure> {
        if columns.is_empty() || columns.iter().any(|c| c.is_empty()) {
            return Err(Failure::config(
                "the identifier column list is empty or has an empty name",
            ));
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].contains(c) {
                return Err(Failure::config(format!(
                    "identifier column {c:?} is listed twice"
                )));
            }
        }
        let normalize = if normalize.is_empty() {
            vec![Normalize::Trim]
        } else {
            normalize
                .iter()
                .map(|n| {
                    Normalize::from_name(n.trim()).ok_or_else(|| {
                        Failure::config(format!(
                            "normalize {n:?}: expected one of {}",
                            Normalize::NAMES
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        if normalize.len() != 1 && normalize.len() != columns.len() {
            return Err(Failure::config(format!(
                "{} normalisations for {} identifier columns: give one for all, or one per column",
                normalize.len(),
                columns.len()
            )));
        }
        let phone_region = phone_region.map(PhoneRegion::parse).transpose()?;
        let hash = hash
            .map(|h| {
                HashIds::from_name(h)
                    .ok_or_else(|| Failure::config(format!("hash {h:?}: the only hash is sha256")))
            })
            .transpose()?;
        Ok(Self {
            columns,
            normalize,
            phone_region,
            hash,
        })
    }

    /// What a party states in its hello about how its keys are made, checked against
    /// the peer's before any set-dependent message (`privset_protocols::agreed`): the
    /// number of key columns, each column's normalisation, the phone region where a
    /// column holds phone numbers, and identifier hashing. Column names are not
    /// compared (two organisations name their columns as they like); their order is
    /// the user's to keep.
    pub fn agreed(&self) -> AgreedSettings {
        let per_column: Vec<&str> = (0..self.columns.len())
            .map(|i| self.how(i).name())
            .collect();
        let settings = AgreedSettings::new()
            .with("key-columns", self.columns.len().to_string())
            .with("normalize", per_column.join(","))
            .with(
                "hash-ids",
                if self.hash.is_some() {
                    "sha256"
                } else {
                    "none"
                },
            );
        if !per_column.contains(&Normalize::PhoneE164.name()) {
            return settings;
        }
        let region = match self.phone_region {
            Some(r) if r.keeps_leading_zero => {
                format!("+{} (keeping the leading 0)", r.calling_code)
            }
            Some(r) => format!("+{}", r.calling_code),
            None => "none".into(),
        };
        settings.with("phone-region", region)
    }

    fn how(&self, column: usize) -> Normalize {
        *self
            .normalize
            .get(column)
            .unwrap_or_else(|| &self.normalize[0])
    }

    /// The identifier of a record from its identifier cells (in [`Keys::columns`]
    /// order). The error names the column; the caller adds the position.
    pub fn key(&self, cells: &[&[u8]]) -> Result<Vec<u8>, String> {
        debug_assert_eq!(cells.len(), self.columns.len());
        let named = |i: usize, e: String| {
            if self.columns.len() == 1 {
                e
            } else {
                format!("column {:?}: {e}", self.columns[i])
            }
        };
        let joined = if cells.len() == 1 {
            normalize(cells[0], self.how(0), self.phone_region).map_err(|e| named(0, e))?
        } else {
            let mut out = Vec::new();
            for (i, cell) in cells.iter().enumerate() {
                let n = normalize(cell, self.how(i), self.phone_region).map_err(|e| named(i, e))?;
                let len = u32::try_from(n.len()).map_err(|_| named(i, "cell too long".into()))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&n);
            }
            out
        };
        Ok(match self.hash {
            None => joined,
            Some(HashIds::Sha256) => hex::encode(Sha256::digest(&joined)).into_bytes(),
        })
    }

    /// The column names of identifiers in output rows: the identifier columns, or one
    /// column `<names>_sha256` when hashed.
    pub fn output_columns(&self) -> Vec<String> {
        match self.hash {
            Some(HashIds::Sha256) => vec![format!("{}_sha256", self.columns.join("_"))],
            None => self.columns.clone(),
        }
    }

    /// An identifier split back into the cells of [`Keys::output_columns`].
    pub fn split(&self, id: &[u8]) -> Vec<Vec<u8>> {
        if self.hash.is_some() || self.columns.len() == 1 {
            return vec![id.to_vec()];
        }
        split_key(id, self.columns.len()).unwrap_or_else(|| vec![id.to_vec()])
    }
}

/// The cells of a multi-column identifier (`None` if `id` is not one of `n` cells).
pub fn split_key(id: &[u8], n: usize) -> Option<Vec<Vec<u8>>> {
    let mut rest = id;
    let mut cells = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        cells.push(rest.get(4..4 + len)?.to_vec());
        rest = &rest[4 + len..];
    }
    rest.is_empty().then_some(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gb() -> Option<PhoneRegion> {
        Some(PhoneRegion::parse("GB").unwrap())
    }

    #[test]
    fn phone_numbers() {
        let p = |s: &str, r| String::from_utf8(phone_e164(s.as_bytes(), r).unwrap()).unwrap();
        for s in [
            "+44 20 7946 0958",
            "0044 20 7946 0958",
            "020 7946 0958",
            "(020) 7946-0958",
            "+44 (0)20 7946 0958".replace("(0)", "").as_str(),
            "020.7946.0958",
        ] {
            assert_eq!(p(s, gb()), "+442079460958", "{s}");
        }
        let us = Some(PhoneRegion::parse("US").unwrap());
        assert_eq!(p("(202) 555-0123", us), "+12025550123");
        assert_eq!(p("1-202-555-0123", us), "+12025550123");
        assert_eq!(p("011 44 20 7946 0958", us), "+442079460958");
        let it = Some(PhoneRegion::parse("39").unwrap());
        assert_eq!(p("06 6982 1234", it), "+390669821234");
        assert!(phone_e164(b"020 7946 0958", None).is_err());
        assert!(phone_e164(b"call me", gb()).is_err());
        assert!(phone_e164(b"+44 20 7946 0958 ext 3", gb()).is_err());
        assert!(phone_e164(b"12+3", gb()).is_err());
        assert!(phone_e164(b"+1234", gb()).is_err());
        assert!(PhoneRegion::parse("XX").is_err());
    }

    #[test]
    fn normalisations() {
        let n = |s: &str, h| String::from_utf8(normalize(s.as_bytes(), h, None).unwrap()).unwrap();
        assert_eq!(n("  Ab ", Normalize::None), "  Ab ");
        assert_eq!(n("  Ab ", Normalize::Trim), "Ab");
        assert_eq!(n("  ÀB ", Normalize::Lower), "àb");
        assert_eq!(n(" Ann@Example.COM ", Normalize::Email), "ann@example.com");
        assert!(normalize(b"ann.example.com", Normalize::Email, None).is_err());
        assert!(normalize(b"a@b@c", Normalize::Email, None).is_err());
        assert!(normalize(b"   ", Normalize::Trim, None).is_err());
    }

    #[test]
    fn multi_column_keys_are_unambiguous_and_split_back() {
        let keys = Keys::new(vec!["a".into(), "b".into()], &[], None, None).unwrap();
        let k1 = keys.key(&[b"x,y", b"z"]).unwrap();
        let k2 = keys.key(&[b"x", b"y,z"]).unwrap();
        assert_ne!(k1, k2);
        assert_eq!(k1, b"\0\0\0\x03x,y\0\0\0\x01z");
        assert_eq!(keys.split(&k1), vec![b"x,y".to_vec(), b"z".to_vec()]);
        let hashed = Keys::new(vec!["a".into()], &[], None, Some("sha256")).unwrap();
        assert_eq!(
            hashed.key(&[b" abc "]).unwrap(),
            b"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hashed.output_columns(), ["a_sha256"]);
        assert!(
            Keys::new(
                vec!["a".into(), "b".into()],
                &["trim".into(), "lower".into(), "email".into()],
                None,
                None
            )
            .is_err()
        );
    }
}
