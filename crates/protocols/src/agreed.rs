//! Settings both parties must share that no protocol message would show to differ: how
//! an input row becomes a key (normalisation per column, phone region, identifier
//! hashing, how many key columns), the duplicates rule. Two parties that normalise
//! e-mail addresses differently still run every protocol to the end, and get a wrong
//! answer with exit 0; so each party states its settings in its hello, and the engine
//! refuses a peer that states others before any set-dependent message, naming the
//! setting and both values.
//!
//! Encoding (in the hello, after the salt; docs/wire.md):
//!
//! ```text
//! offset size field
//!      0    2 length L (big-endian, at most MAX_AGREED_LEN)
//!      2    L UTF-8 lines "name=value" joined by '\n', in the stating party's order
//! ```
//!
//! A party that holds no input (the dealer of Miyaji-Nishida, the judge of authorized
//! PSI) states [`AgreedSettings::no_input`] (and whatever else the session agrees on,
//! such as the roster): between it and any peer only the settings both state are
//! compared. A party that states nothing (a front end that does not know its inputs'
//! settings) is compared like any other, so a peer stating settings refuses it rather
//! than trust it.
//!
//! Where a party's keys were made earlier and kept in a file (the APSI signature file,
//! the unbalanced-PSI database), the file records the same text, so the party states
//! the settings its keys were actually made with, not those of today's flags.

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::Reader;

/// Longest encoded settings accepted.
pub const MAX_AGREED_LEN: usize = 2048;
/// The one setting of a party that holds no input.
const NO_INPUT: (&str, &str) = ("input", "none");

/// What a party states about how its input was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgreedSettings {
    entries: Vec<(String, String)>,
}

impl AgreedSettings {
    /// No setting stated.
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings of a party that holds no input: compared with nobody.
    pub fn no_input() -> Self {
        Self::new().with(NO_INPUT.0, NO_INPUT.1)
    }

    /// Adds setting `name` (lower-case letters, digits, '-') with `value` (printable,
    /// no line break); replaces an earlier value of the same name.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        let value: String = value.into();
        debug_assert!(valid_name(name), "setting name {name:?}");
        let value = value.replace(['\n', '\r'], " ");
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name.to_string(), value)),
        }
        self
    }

    /// The value of setting `name`, if stated.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn holds_no_input(&self) -> bool {
        self.get(NO_INPUT.0) == Some(NO_INPUT.1)
    }

    /// The readable form, "name=value" lines.
    pub fn text(&self) -> String {
        self.entries
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Appends the encoding (length-prefixed text, cut at [`MAX_AGREED_LEN`] bytes on a
    /// character boundary; no real settings come near it).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let text = self.text();
        let mut end = text.len().min(MAX_AGREED_LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.extend_from_slice(&(end as u16).to_be_bytes());
        out.extend_from_slice(&text.as_bytes()[..end]);
    }

    /// True when no setting is stated.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The settings as (name, value) pairs, in the stating party's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Reads a peer's settings from `r`; malformed ones are the peer's fault.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, ProtocolError> {
        let malformed =
            |why: &str| PeerMisbehaved::Malformed(format!("stated input settings: {why}"));
        let len = usize::from(u16::from_be_bytes(r.array()?));
        if len > MAX_AGREED_LEN {
            return Err(
                malformed(&format!("{len} bytes, at most {MAX_AGREED_LEN} allowed")).into(),
            );
        }
        let bytes = r.take(len)?;
        Self::parse(bytes).map_err(|why| malformed(&why).into())
    }

    /// The settings from their text (the bytes after the length, as a hello or a file
    /// that records them holds them); `Err` says what is wrong with it.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
        let mut settings = Self::new();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let (name, value) = line
                .split_once('=')
                .ok_or_else(|| "a line without '='".to_string())?;
            if !valid_name(name) || value.chars().any(char::is_control) {
                return Err("a setting name or value with forbidden characters".into());
            }
            if settings.get(name).is_some() {
                return Err("a setting stated twice".into());
            }
            settings.entries.push((name.to_string(), value.to_string()));
        }
        Ok(settings)
    }

    /// Checks a peer's settings against this party's: the first setting that differs
    /// (in this party's order, then the peer's) is `Incompatible`, naming it and both
    /// values. `me` and `peer` name the two parties.
    pub fn check(&self, theirs: &Self, me: &str, peer: &str) -> Result<(), ProtocolError> {
        let either_without_input = self.holds_no_input() || theirs.holds_no_input();
        let names = self
            .entries
            .iter()
            .chain(&theirs.entries)
            .map(|(n, _)| n.as_str());
        for name in names {
            let (mine, other) = (self.get(name), theirs.get(name));
            if either_without_input && (name == NO_INPUT.0 || mine.is_none() || other.is_none()) {
                continue;
            }
            if mine != other {
                let show = |v: Option<&str>| match v {
                    Some(v) => format!("uses {name} {v}"),
                    None => "does not state it".to_string(),
                };
                let peer = crate::peer_text::sanitize(peer.as_bytes());
                return Err(ProtocolError::Incompatible(format!(
                    "input settings differ, {name}: the {me} {}, the {peer} {}; both must \
                     make keys from their rows the same way, or the answer would be wrong",
                    show(mine),
                    show(other)
                )));
            }
        }
        Ok(())
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &AgreedSettings) -> AgreedSettings {
        let mut out = Vec::new();
        s.encode_into(&mut out);
        let mut r = Reader::new(&out, "test");
        let back = AgreedSettings::read(&mut r).unwrap();
        r.finish().unwrap();
        back
    }

    #[test]
    fn settings_round_trip_and_mismatches_name_the_setting() {
        let a = AgreedSettings::new()
            .with("key-columns", "1")
            .with("normalize", "email");
        assert_eq!(round_trip(&a), a);
        assert!(a.check(&round_trip(&a), "receiver", "sender").is_ok());
        let b = a.clone().with("normalize", "trim");
        let e = a.check(&b, "receiver", "sender").unwrap_err().to_string();
        assert!(
            e.contains(
                "normalize: the receiver uses normalize email, the sender uses normalize trim"
            ),
            "{e}"
        );
        // A setting one side does not state is a mismatch too, either way round.
        let c = a.clone().with("hash-ids", "sha256");
        assert!(
            a.check(&c, "p1", "p2")
                .unwrap_err()
                .to_string()
                .contains("hash-ids")
        );
        assert!(
            c.check(&a, "p1", "p2")
                .unwrap_err()
                .to_string()
                .contains("does not state it")
        );
        assert!(a.check(&AgreedSettings::new(), "p1", "p2").is_err());
        // A party with no input is compared only on what both state.
        assert!(
            a.check(&AgreedSettings::no_input(), "party", "dealer")
                .is_ok()
        );
        assert!(
            AgreedSettings::no_input()
                .check(&b, "dealer", "party")
                .is_ok()
        );
        let dealer = AgreedSettings::no_input().with("roster", "r1");
        let same = a.clone().with("roster", "r1");
        assert!(same.check(&dealer, "party", "dealer").is_ok());
        let e = a
            .with("roster", "r2")
            .check(&dealer, "party", "dealer")
            .unwrap_err();
        assert!(e.to_string().contains("roster"), "{e}");
    }

    #[test]
    fn malformed_settings_are_the_peers_fault() {
        for bad in [
            &b"\x00\x05a=b\nc"[..],
            b"\x00\x03A=b",
            b"\x00\x07a=b\na=c",
            b"\x00\x02\xff\xfe",
            b"\x00\x09a=b\x07cdefg",
            b"\xff\xff",
            b"\x00\x10short",
        ] {
            let mut r = Reader::new(bad, "test");
            assert!(AgreedSettings::read(&mut r).is_err(), "{bad:?}");
        }
    }
}
