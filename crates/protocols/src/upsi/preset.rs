//! Parameters as data: named presets (TOML files in `crates/protocols/presets/upsi/`),
//! each checked when loaded.
//!
//! A preset fixes the BFV parameters, how an item is split over slots, the client's
//! cuckoo table and the server's bins, and the powers the client sends. Loading checks
//! the BFV parameters against the homomorphic-encryption security standard (128 bits),
//! the table against the ring, and that the source powers reach every power the
//! evaluation needs; a test evaluates each preset's deepest path and checks the noise.

use privset_crypto::bfv::{HeParams, PowerPlan, zt};
use serde::Deserialize;

use crate::error::ProtocolError;

/// The presets shipped with privset, by name.
const BUILT_IN: [(&str, &str); 5] = [
    (
        "n4096-c256",
        include_str!("../../presets/upsi/n4096-c256.toml"),
    ),
    (
        "n4096-c1k",
        include_str!("../../presets/upsi/n4096-c1k.toml"),
    ),
    (
        "n4096-c4k",
        include_str!("../../presets/upsi/n4096-c4k.toml"),
    ),
    (
        "n8192-c1k",
        include_str!("../../presets/upsi/n8192-c1k.toml"),
    ),
    (
        "n8192-c4k",
        include_str!("../../presets/upsi/n8192-c4k.toml"),
    ),
];

/// Number of cuckoo hash functions (Cong et al. 2021 use 3; so does this table).
pub use privset_crypto::cuckoo::HASH_FUNCTIONS;

/// Largest table, bin and client set a preset may name (bounds what a peer's preset
/// can make this party allocate).
const MAX_TABLE: usize = 1 << 20;
const MAX_BIN: usize = 1 << 14;
/// Most ciphertexts a query may hold (bundle indices × query powers): what the client
/// encrypts and the server's first step works on. The built-in presets need 6 to 72;
/// without this bound a server's preset of 2^20 bins and many powers would make the
/// client encrypt over 10^5 ciphertexts (gigabytes) for one query.
const MAX_QUERY_CIPHERTEXTS: usize = 256;

/// One unbalanced-PSI parameter set.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    pub degree: usize,
    pub plain_modulus: u64,
    pub moduli_bits: Vec<usize>,
    /// Slots (field elements) one item's hash is split over.
    pub felts_per_item: usize,
    /// Bins of the client's cuckoo table (a multiple of the bins per ciphertext).
    pub table_size: usize,
    /// Items per bin in one bundle: the degree of the matching polynomials.
    pub max_items_per_bin: usize,
    /// Most items a client may query with (cuckoo hashing into `table_size` bins).
    pub max_client_items: usize,
    /// Paterson-Stockmeyer's low degree (0: plain evaluation).
    pub ps_low_degree: u32,
    /// The powers of its items the client encrypts.
    pub query_powers: Vec<u32>,
    /// Primes the server drops from the derived powers before the polynomial
    /// products (0: none). The powers' noise fits a smaller modulus; every plaintext
    /// product, and every plaintext's conversion to NTT form, costs one prime less per
    /// prime dropped (`privset_crypto::bfv::Powers::new`). The server's choice alone:
    /// the client reads the answer at the last level either way.
    #[serde(default)]
    pub evaluation_level: usize,
    /// Primes the client drops before it encrypts its query (0: none). The dropped
    /// primes then serve only the relinearization key, which the client makes at the
    /// full modulus for ciphertexts at this level: they divide the key switch's noise
    /// as Microsoft SEAL's special prime does, and the query's ciphertexts and the
    /// key's parts carry that many primes fewer (Cong et al. 2021's parameters assume
    /// such a prime).
    #[serde(default)]
    pub query_level: usize,
}

impl Preset {
    /// A built-in preset by name.
    pub fn named(name: &str) -> Result<Self, ProtocolError> {
        let (_, text) = BUILT_IN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            ProtocolError::Config(format!(
                "no unbalanced-PSI preset named {name:?} (built in: {})",
                Self::built_in_names().join(", ")
            ))
        })?;
        Self::parse(text)
    }

    /// Names of the built-in presets.
    pub fn built_in_names() -> Vec<&'static str> {
        BUILT_IN.iter().map(|(n, _)| *n).collect()
    }

    /// Every built-in preset.
    pub fn built_in() -> Vec<Self> {
        BUILT_IN
            .iter()
            .map(|(_, text)| Self::parse(text).expect("built-in presets are valid"))
            .collect()
    }

    /// The built-in preset for a client of `client_items` against a server of
    /// `server_items`: the smallest ring whose table takes the client, the larger ring
    /// (Paterson-Stockmeyer over big bins) above 2^21 server items.
    pub fn for_sizes(server_items: u64, client_items: usize) -> Result<Self, ProtocolError> {
        let ring = if server_items > 1 << 21 { 8192 } else { 4096 };
        Self::built_in()
            .into_iter()
            .filter(|p| p.degree == ring && p.max_client_items >= client_items)
            .min_by_key(|p| p.max_client_items)
            .ok_or_else(|| {
                ProtocolError::Config(format!(
                    "no preset takes {client_items} client items (the largest takes {})",
                    Self::built_in()
                        .iter()
                        .map(|p| p.max_client_items)
                        .max()
                        .unwrap_or(0)
                ))
            })
    }

    /// Parses and checks a preset file.
    pub fn parse(text: &str) -> Result<Self, ProtocolError> {
        let preset: Preset = toml::from_str(text)
            .map_err(|e| ProtocolError::Config(format!("unbalanced-PSI preset: {e}")))?;
        preset.check()?;
        Ok(preset)
    }

    /// The BFV parameters.
    pub fn he(&self) -> HeParams {
        HeParams {
            degree: self.degree,
            plain_modulus: self.plain_modulus,
            moduli_bits: self.moduli_bits.clone(),
        }
    }

    /// Bits of an item's hash carried by one slot.
    pub fn bits_per_felt(&self) -> u32 {
        63 - self.plain_modulus.leading_zeros()
    }

    /// Bits of an item's hash compared (the rest is not used).
    pub fn item_bits(&self) -> u32 {
        self.bits_per_felt() * self.felts_per_item as u32
    }

    /// Bins in one ciphertext.
    pub fn bins_per_bundle(&self) -> usize {
        self.degree / self.felts_per_item
    }

    /// Ciphertexts per source power: the table cut into ring-sized bundles.
    pub fn bundle_indices(&self) -> usize {
        self.table_size / self.bins_per_bundle()
    }

    /// The evaluation plan of the query powers.
    pub fn plan(&self) -> Result<PowerPlan, ProtocolError> {
        PowerPlan::new(
            &self.query_powers,
            self.max_items_per_bin as u32,
            self.ps_low_degree,
        )
        .map_err(|e| ProtocolError::Config(format!("preset {}: {e}", self.name)))
    }

    /// Every check a preset must pass before it is used, from a file or from a peer.
    pub fn check(&self) -> Result<(), ProtocolError> {
        let bad = |why: String| {
            Err(ProtocolError::Config(format!(
                "preset {}: {why}",
                self.name
            )))
        };
        if self.plain_modulus >= zt::MAX_MODULUS {
            return bad(format!(
                "plaintext modulus {} (below 2^26 needed: the database's polynomial \
                 arithmetic runs on exact double-precision products)",
                self.plain_modulus
            ));
        }
        if let Err(e) = self.he().check() {
            return bad(e.to_string());
        }
        if self.name.is_empty() || self.name.len() > 64 {
            return bad("a name of 1 to 64 characters is needed".into());
        }
        if self.felts_per_item == 0 || self.felts_per_item > self.degree {
            return bad(format!("{} slots per item", self.felts_per_item));
        }
        if !(80..=128).contains(&self.item_bits()) {
            return bad(format!(
                "items compared on {} bits (80 to 128 needed: {} slots of {} bits)",
                self.item_bits(),
                self.felts_per_item,
                self.bits_per_felt()
            ));
        }
        if self.table_size == 0
            || self.table_size > MAX_TABLE
            || !self.table_size.is_multiple_of(self.bins_per_bundle())
        {
            return bad(format!(
                "table of {} bins (a multiple of the {} bins per ciphertext, at most {MAX_TABLE})",
                self.table_size,
                self.bins_per_bundle()
            ));
        }
        if self.max_items_per_bin == 0 || self.max_items_per_bin > MAX_BIN {
            return bad(format!(
                "{} items per bin (1 to {MAX_BIN})",
                self.max_items_per_bin
            ));
        }
        if self.max_client_items == 0 || self.max_client_items * 3 > self.table_size * 2 {
            return bad(format!(
                "{} client items in {} bins (at most two thirds full, well below the 0.91 load where cuckoo hashing with 3 functions fails)",
                self.max_client_items, self.table_size
            ));
        }
        if self.evaluation_level >= self.moduli_bits.len() {
            return bad(format!(
                "evaluation level {} (below the {} primes needed)",
                self.evaluation_level,
                self.moduli_bits.len()
            ));
        }
        if self.query_level > self.evaluation_level
            || self.query_level + 1 >= self.moduli_bits.len()
        {
            return bad(format!(
                "query level {} (at most the evaluation level {}, and at least two primes kept \
                 for the key switch)",
                self.query_level, self.evaluation_level
            ));
        }
        let query = self.bundle_indices() * self.query_powers.len();
        if query > MAX_QUERY_CIPHERTEXTS {
            return bad(format!(
                "a query of {query} ciphertexts ({} bundle indices x {} query powers; at most {MAX_QUERY_CIPHERTEXTS})",
                self.bundle_indices(),
                self.query_powers.len()
            ));
        }
        self.plan()?;
        Ok(())
    }

    /// The preset as the server announces it: its TOML text.
    pub fn to_toml(&self) -> String {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let powers: Vec<usize> = self.query_powers.iter().map(|&p| p as usize).collect();
        format!(
            "name = {:?}\ndegree = {}\nplain_modulus = {}\nmoduli_bits = [{}]\n\
             felts_per_item = {}\ntable_size = {}\nmax_items_per_bin = {}\n\
             max_client_items = {}\nps_low_degree = {}\nquery_powers = [{}]\n\
             evaluation_level = {}\nquery_level = {}\n",
            self.name,
            self.degree,
            self.plain_modulus,
            list(&self.moduli_bits),
            self.felts_per_item,
            self.table_size,
            self.max_items_per_bin,
            self.max_client_items,
            self.ps_low_degree,
            list(&powers),
            self.evaluation_level,
            self.query_level
        )
    }

    /// log2 of the probability that some client item falsely matches, for a server
    /// whose bins hold at most `bundles_per_bin` bundles: every slot of an item's group
    /// must meet one of the bundle's values by chance.
    pub fn false_positive_log2(&self, client_items: usize, bundles_per_bin: usize) -> f64 {
        let per_slot = (self.max_items_per_bin as f64).log2() - self.bits_per_felt() as f64;
        let per_bundle = per_slot * self.felts_per_item as f64;
        per_bundle + ((client_items.max(1) * bundles_per_bin.max(1)) as f64).log2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_presets_load_and_round_trip() {
        for preset in Preset::built_in() {
            assert_eq!(Preset::parse(&preset.to_toml()).unwrap(), preset);
        }
        assert!(Preset::named("nope").is_err());
        assert_eq!(Preset::for_sizes(1 << 20, 1024).unwrap().name, "n4096-c1k");
        assert_eq!(Preset::for_sizes(1 << 20, 257).unwrap().name, "n4096-c1k");
        assert_eq!(Preset::for_sizes(1 << 20, 256).unwrap().name, "n4096-c256");
        assert_eq!(Preset::for_sizes(1 << 16, 1).unwrap().name, "n4096-c256");
        assert_eq!(Preset::for_sizes(1 << 24, 1).unwrap().name, "n8192-c1k");
        assert_eq!(Preset::for_sizes(1 << 24, 4000).unwrap().name, "n8192-c4k");
        assert!(Preset::for_sizes(1 << 24, 5000).is_err());
    }

    #[test]
    fn insecure_or_broken_presets_are_refused() {
        let good = Preset::named("n4096-c1k").unwrap();
        let mut p = good.clone();
        p.moduli_bits = vec![40, 40, 40];
        assert!(p.check().unwrap_err().to_string().contains("128-bit"));
        let mut p = good.clone();
        p.table_size = 2047;
        assert!(p.check().is_err());
        let mut p = good.clone();
        p.query_powers = vec![2, 3];
        assert!(p.check().is_err());
        let mut p = good.clone();
        p.max_client_items = 1400;
        assert!(p.check().is_err());
        // A table of 2^20 bins: 1,280 bundle indices, 16 powers each.
        let mut p = good.clone();
        p.table_size = (1 << 20) / 819 * 819;
        let err = p.check().unwrap_err().to_string();
        assert!(err.contains("a query of 20480 ciphertexts"), "{err}");
        // A query below the evaluation level, or with one prime left for the key switch.
        let mut p = good.clone();
        p.query_level = 2;
        assert!(p.check().unwrap_err().to_string().contains("query level 2"));
        // A batching prime of 29 bits: secure and batching, but past the polynomial
        // arithmetic's range.
        let mut p = good;
        p.plain_modulus = 469_762_049;
        assert!(p.check().unwrap_err().to_string().contains("below 2^26"));
    }
}
