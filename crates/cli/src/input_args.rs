//! The input flags every subcommand that reads a party's set shares (`--input`,
//! `--id-column`, `--normalize`, `--phone-region`, `--hash-ids`), flattened into each
//! subcommand's arguments so they read and mean the same everywhere. docs/inputs.md.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use privset_protocols::input::{Dataset, DuplicatePolicy};
use privset_run::Failure;
use privset_run::keys::Keys;
use privset_run::source::{self, InputSpec};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormalizeArg {
    /// The cell's bytes exactly as stored.
    None,
    /// Surrounding whitespace removed (the default).
    Trim,
    /// Trimmed and lower-cased.
    Lower,
    /// Trimmed and lower-cased; must be local@domain.
    Email,
    /// A telephone number as E.164 (+441234567890); national numbers need --phone-region.
    PhoneE164,
}

impl NormalizeArg {
    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Trim => "trim",
            Self::Lower => "lower",
            Self::Email => "email",
            Self::PhoneE164 => "phone-e164",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashArg {
    /// Lowercase hex SHA-256 of the (normalised, joined) identifier.
    Sha256,
}

#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Input with a header: CSV, gzip- or zstd-compressed CSV, Parquet or Arrow IPC
    /// (file or stream), told apart by the file's first bytes.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Column(s) holding the identifier. Several, comma-separated, form one key
    /// (length-prefixed, so no separator can be confused); the other party must list
    /// the same columns in the same order.
    #[arg(
        long,
        value_name = "NAME[,NAME...]",
        value_delimiter = ',',
        required = true
    )]
    pub id_column: Vec<String>,
    #[command(flatten)]
    pub key: KeyArgs,
}

/// How identifiers are made from the id columns' cells: the part of [`InputArgs`] a
/// subcommand whose input is optional (the mpsi dealer has none) flattens on its own.
#[derive(Args, Debug, Clone)]
pub struct KeyArgs {
    /// How identifier cells are normalised before matching (one for every id column,
    /// or one per column, comma-separated). Both parties must choose the same.
    #[arg(
        long,
        value_enum,
        value_name = "HOW[,HOW...]",
        value_delimiter = ',',
        default_value = "trim"
    )]
    pub normalize: Vec<NormalizeArg>,
    /// phone-e164: the country of national numbers (GB, US, DE, ... or a calling code
    /// such as 44).
    #[arg(long, value_name = "REGION")]
    pub phone_region: Option<String>,
    /// Hash each identifier (after normalising and joining) before it is used, for
    /// contracts that let identifiers leave only hashed. Both parties must choose the same.
    #[arg(long, value_enum, value_name = "HASH")]
    pub hash_ids: Option<HashArg>,
}

impl KeyArgs {
    /// The identifier maker for `id_column`.
    pub fn keys(&self, id_column: &[String]) -> Result<Keys, Failure> {
        let normalize: Vec<String> = self
            .normalize
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        Keys::new(
            id_column.to_vec(),
            &normalize,
            self.phone_region.as_deref(),
            self.hash_ids.map(|_| "sha256"),
        )
    }
}

impl InputArgs {
    /// An input from a path and one id column with the defaults (for `demo`).
    pub fn plain(input: PathBuf, id_column: &str) -> Self {
        Self {
            input,
            id_column: vec![id_column.to_string()],
            key: KeyArgs {
                normalize: vec![NormalizeArg::Trim],
                phone_region: None,
                hash_ids: None,
            },
        }
    }

    pub fn keys(&self) -> Result<Keys, Failure> {
        self.key.keys(&self.id_column)
    }

    /// Reads and validates the input.
    pub fn read(
        &self,
        values: &[String],
        segment: Option<&str>,
        policy: DuplicatePolicy,
        max_value: u64,
    ) -> Result<(Keys, Dataset), Failure> {
        let keys = self.keys()?;
        let dataset = source::read_input(
            &self.input,
            &InputSpec {
                keys: &keys,
                values,
                segment,
            },
            policy,
            max_value,
        )?;
        Ok((keys, dataset))
    }
}
