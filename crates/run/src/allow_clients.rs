//! The clients a server accepts (`--allow-clients FILE`, Python's `allow_clients=`):
//! with a CA that vouches for several organisations, the CA alone lets any of them in.
//!
//! The file lists one client a line, by the name its certificate is issued for (the
//! name `privset certs --names` puts in it) or by the SHA-256 fingerprint of its
//! certificate:
//!
//! ```text
//! # partners allowed to query
//! client-a
//! sha256:3f1c...e9   # 64 hex digits; colons (as openssl prints them) allowed
//! ```
//!
//! Blank lines are skipped; `#` starts a comment, on its own line or after an entry.
//! Names compare without regard to case. `localhost` is refused: every certificate
//! `privset certs` writes holds it, so listing it would let every client in.

use std::path::Path;

use privset_net::tls;

use crate::fail::Failure;

/// Longest allow-list file read: far more than any real list, and a bound on what a
/// wrong path (a database, a device) makes the server read at start-up.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// One allowed client.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// A name the certificate is issued for (lower case).
    Name(String),
    /// The SHA-256 of the certificate (DER).
    Fingerprint([u8; 32]),
}

/// The clients a server accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
    /// The file, for messages.
    source: String,
}

impl AllowList {
    /// Reads and checks an allow-list file; errors name the file and line.
    pub fn read(path: &Path) -> Result<Self, Failure> {
        let bad = |e: &dyn std::fmt::Display| {
            Failure::config(format!("allowed-clients file {}: {e}", path.display()))
        };
        let meta = std::fs::metadata(path).map_err(|e| bad(&e))?;
        if !meta.is_file() {
            return Err(bad(&"not a regular file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(bad(&format!(
                "{} bytes, more than the {MAX_FILE_BYTES} an allow list may have",
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| bad(&e))?;
        let text = String::from_utf8(bytes).map_err(|_| bad(&"not UTF-8 text"))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses the text of an allow list; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, Failure> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let entry = line.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            let entry = parse_entry(entry).map_err(|why| {
                Failure::config(format!(
                    "allowed-clients file {source}, line {}: {why}",
                    i + 1
                ))
            })?;
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
        if entries.is_empty() {
            return Err(Failure::config(format!(
                "allowed-clients file {source} lists no client: it would refuse every one"
            )));
        }
        Ok(Self {
            entries,
            source: source.to_string(),
        })
    }

    /// Accepts a client certificate (DER) the list names, by a name it is issued for or
    /// by its fingerprint; refuses any other, saying what it presented.
    pub fn check(&self, certificate: &[u8]) -> Result<(), String> {
        let names = tls::certificate_names(certificate).unwrap_or_default();
        let fingerprint = sha256(certificate);
        let listed = self.entries.iter().any(|entry| match entry {
            Entry::Name(n) => names.iter().any(|c| c.eq_ignore_ascii_case(n)),
            Entry::Fingerprint(f) => *f == fingerprint,
        });
        if listed {
            return Ok(());
        }
        Err(format!(
            "it presents {} (sha256:{}), which {} does not list",
            tls::describe_certificate(certificate),
            hex::encode(fingerprint),
            self.source
        ))
    }

    /// How many clients the list names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never true for a list that was read: an empty one is refused.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn parse_entry(entry: &str) -> Result<Entry, String> {
    if let Some(hex_digits) = entry
        .strip_prefix("sha256:")
        .or_else(|| entry.strip_prefix("SHA256:"))
    {
        let digits: String = hex_digits.chars().filter(|c| *c != ':').collect();
        let bytes = hex::decode(&digits).ok().filter(|b| b.len() == 32);
        return bytes
            .map(|b| Entry::Fingerprint(b.try_into().unwrap_or([0; 32])))
            .ok_or_else(|| {
                format!(
                    "{entry:?} is no SHA-256 fingerprint: give sha256: and 64 hex digits \
                     (colons between pairs allowed)"
                )
            });
    }
    let valid_name = entry.len() <= 253
        && entry
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !valid_name {
        return Err(format!(
            "{entry:?} is neither a certificate name (letters, digits, '-', '_', '.') nor \
             sha256:FINGERPRINT"
        ));
    }
    if entry.eq_ignore_ascii_case("localhost") {
        return Err(
            "\"localhost\" is in every certificate `privset certs` writes, so it would allow \
             every client: list the client's own name or its fingerprint"
                .into(),
        );
    }
    Ok(Entry::Name(entry.to_ascii_lowercase()))
}

fn sha256(der: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(der).into()
}

/// What a session's log line says of its client: the first name its certificate is
/// issued for (`privset certs` puts the client's own name first) and its fingerprint.
pub fn client_identity(certificate: &[u8]) -> (String, String) {
    let name = tls::certificate_names(certificate)
        .and_then(|names| names.into_iter().next())
        .unwrap_or_else(|| "?".into());
    (name, tls::certificate_fingerprint(certificate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_fingerprints_and_comments() {
        let fp = "AB:".repeat(31) + "AB";
        let text = format!("# partners\n\nClient-A  # the first\nsha256:{fp}\nclient-a\n");
        let list = AllowList::parse(&text, "t").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list.entries[0], Entry::Name("client-a".into()));
        assert_eq!(list.entries[1], Entry::Fingerprint([0xab; 32]));
    }

    #[test]
    fn refuses_bad_lines_naming_them() {
        for (text, needle) in [
            ("a\nsha256:12\n", "line 2"),
            ("a b\n", "neither"),
            ("localhost\n", "every client"),
            ("# only a comment\n", "lists no client"),
        ] {
            let err = AllowList::parse(text, "t").unwrap_err().message;
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
