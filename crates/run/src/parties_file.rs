//! `parties.toml`: every participant of a multi-party session, in session order, with
//! its address and certificate, shared by all of them.
//!
//! ```toml
//! # The CA every participant's certificate chains to (paths are relative to this file).
//! ca = "certs/ca.pem"
//!
//! # In session order: the first is the server (bay, hazay) or the dealer (miyaji-nishida).
//! [[party]]
//! name = "operator-a"
//! address = "10.0.0.1:7100"
//! certificate = "certs/operator-a.pem"
//!
//! [[party]]
//! name = "operator-b"
//! address = "10.0.0.2:7100"
//! certificate = "certs/operator-b.pem"
//! ```
//!
//! A participant finds itself by `--name` and keeps its private key elsewhere
//! (`--tls-key`). Addresses are needed for TCP links only; over an exchange directory
//! the file just names and orders the participants.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::fail::Failure;

/// The largest `parties.toml` read (a roster of 255 participants is far smaller).
const MAX_FILE_LEN: u64 = 1 << 20;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    ca: Option<PathBuf>,
    #[serde(default)]
    party: Vec<EntryFormat>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFormat {
    name: String,
    address: Option<String>,
    certificate: Option<PathBuf>,
}

/// One participant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participant {
    pub name: String,
    pub address: Option<String>,
    pub certificate: Option<PathBuf>,
}

/// The participants of a session, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participants {
    /// The CA certificate every participant's certificate chains to.
    pub ca: Option<PathBuf>,
    pub list: Vec<Participant>,
}

impl Participants {
    /// Reads and checks `path`: 3 to 255 participants, distinct non-empty names; paths
    /// resolved against the file's directory.
    pub fn read(path: &Path) -> Result<Self, Failure> {
        let cannot = |e: &dyn std::fmt::Display| Failure::input(format!("{}: {e}", path.display()));
        let len = std::fs::metadata(path).map_err(|e| cannot(&e))?.len();
        if len > MAX_FILE_LEN {
            return Err(cannot(&format!(
                "{len} bytes, larger than any roster ({MAX_FILE_LEN} at most)"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| cannot(&e))?;
        let parsed: FileFormat = toml::from_str(&text).map_err(|e| cannot(&e))?;
        let base = path.parent().unwrap_or(Path::new(""));
        let resolve = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let list: Vec<Participant> = parsed
            .party
            .into_iter()
            .map(|e| Participant {
                name: e.name.trim().to_string(),
                address: e.address,
                certificate: e.certificate.map(resolve),
            })
            .collect();
        if !(3..=255).contains(&list.len()) {
            return Err(cannot(&format!(
                "{} participants listed under [[party]]: a multi-party session has 3 to 255",
                list.len()
            )));
        }
        let mut seen = HashSet::new();
        for p in &list {
            if p.name.is_empty() {
                return Err(cannot(&"a participant without a name"));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(cannot(&format!("participant {:?} is listed twice", p.name)));
            }
        }
        Ok(Self {
            ca: parsed.ca.map(resolve),
            list,
        })
    }

    /// The participants' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|p| p.name.clone()).collect()
    }

    /// The index of the participant called `name`.
    pub fn index_of(&self, name: &str) -> Result<u8, Failure> {
        self.list
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u8)
            .ok_or_else(|| {
                Failure::config(format!(
                    "no participant named {name:?} in the parties file (names: {})",
                    self.names().join(", ")
                ))
            })
    }

    /// Every participant's name and end-entity certificate, in order: over mutual TLS
    /// a link is accepted only from the certificate listed for its participant (a CA
    /// shared by a consortium vouches for every member, so "from the CA" is not enough).
    pub fn identities(&self) -> Result<Vec<privset_net::Identity>, Failure> {
        self.list
            .iter()
            .map(|p| {
                let path = p.certificate.as_ref().ok_or_else(|| {
                    Failure::config(format!(
                        "participant {:?} has no certificate in the parties file: over TLS every \
                         participant's certificate is needed, so that each link is accepted \
                         only from the participant it claims to be",
                        p.name
                    ))
                })?;
                Ok(privset_net::Identity {
                    name: p.name.clone(),
                    certificate: privset_net::tls::end_entity_certificate(path)?,
                })
            })
            .collect()
    }

    /// The roster as every participant must see it, for the agreed settings of a
    /// session: a digest of the names in order and each listed certificate (its
    /// SHA-256; none when not listed), then the count and names in readable form. A
    /// participant whose parties file lists the others in another order, or with
    /// another certificate, states another roster and is refused at the hellos.
    pub fn digest(&self) -> Result<String, Failure> {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"privset/v1/roster");
        for p in &self.list {
            h.update((p.name.len() as u32).to_be_bytes());
            h.update(p.name.as_bytes());
            match &p.certificate {
                Some(path) => {
                    let der = privset_net::tls::end_entity_certificate(path)?;
                    h.update([1]);
                    h.update(Sha256::digest(&der));
                }
                None => h.update([0]),
            }
        }
        Ok(format!(
            "{} ({} participants: {})",
            hex::encode(&h.finalize()[..8]),
            self.list.len(),
            self.names().join(", ")
        ))
    }

    /// Every participant's address, in order (TCP links need all of them).
    pub fn addresses(&self) -> Result<Vec<String>, Failure> {
        self.list
            .iter()
            .map(|p| {
                p.address.clone().ok_or_else(|| {
                    Failure::config(format!(
                        "participant {:?} has no address in the parties file (TCP links need every address)",
                        p.name
                    ))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "privset-parties-{}-{}",
            std::process::id(),
            text.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("parties.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_and_checks_rosters() {
        let p = write(
            "ca = \"certs/ca.pem\"\n[[party]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\ncertificate = \"certs/a.pem\"\n\
             [[party]]\nname = \"b\"\naddress = \"127.0.0.1:2\"\n[[party]]\nname = \"c\"\n",
        );
        let ps = Participants::read(&p).unwrap();
        assert_eq!(ps.names(), ["a", "b", "c"]);
        assert_eq!(ps.index_of("c").unwrap(), 2);
        assert!(ps.index_of("d").is_err());
        assert_eq!(
            ps.ca.as_deref(),
            Some(p.parent().unwrap().join("certs/ca.pem").as_path())
        );
        assert!(ps.addresses().is_err(), "c has no address");
        for bad in [
            "[[party]]\nname = \"a\"\n[[party]]\nname = \"b\"\n",
            "[[party]]\nname = \"a\"\n[[party]]\nname = \"a\"\n[[party]]\nname = \"b\"\n",
            "[[party]]\nname = \"a\"\n[[party]]\nname = \" \"\n[[party]]\nname = \"b\"\n",
            "[[party]]\nname = \"a\"\nport = 3\n",
            "not toml at all [[",
        ] {
            assert!(Participants::read(&write(bad)).is_err(), "{bad}");
        }
    }
}
