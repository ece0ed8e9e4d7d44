//! RESULT.json: what a finished party reports, built once here so that the CLI's file
//! and the Python package's result objects have the same fields and values.

use std::collections::HashMap;
use std::path::PathBuf;

use privset_protocols::pi_sum::{PiSumConfig, PiSumOutput};
use privset_protocols::pso::{PrivateIdTable, PsoConfig, PsoOutput, PsoRole};

use crate::drive::Metered;

/// RESULT.json of pi-sum.
#[derive(serde::Serialize, Debug, Clone)]
pub struct PiSumReport {
    pub protocol: &'static str,
    #[serde(flatten)]
    pub output: PiSumOutput,
    pub items: usize,
    pub group: &'static str,
    pub values_he: &'static str,
    pub z_encoding: &'static str,
    #[serde(flatten)]
    pub run: Metered,
}

impl PiSumReport {
    /// The report of a party with `items` own items that ran with `config`.
    pub fn new(config: &PiSumConfig, output: PiSumOutput, items: usize, run: Metered) -> Self {
        Self {
            protocol: "pi-sum",
            output,
            items,
            group: config.group.name(),
            values_he: config.he.name(),
            z_encoding: config.z_encoding.name(),
            run,
        }
    }
}

/// RESULT.json of a set operation.
#[derive(serde::Serialize, Debug, Clone)]
pub struct PsoReport {
    pub protocol: &'static str,
    pub role: &'static str,
    pub items: usize,
    pub peer_items: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cardinality: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum: Option<u128>,
    /// Rows of the operation's table (written to --output-rows by the CLI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_file: Option<PathBuf>,
    pub group: &'static str,
    pub mqrpmt: &'static str,
    pub last_message: &'static str,
    #[serde(flatten)]
    pub run: Metered,
}

impl PsoReport {
    /// The report of a party with `items` own items; `rows` / `rows_file` describe the
    /// row table the front end kept (file or in memory), if any.
    pub fn new(
        config: &PsoConfig,
        role: PsoRole,
        output: &PsoOutput,
        items: usize,
        rows: Option<usize>,
        rows_file: Option<PathBuf>,
        run: Metered,
    ) -> Self {
        Self {
            protocol: config.operation.name(),
            role: role.name(),
            items,
            peer_items: output.peer_items(),
            cardinality: output.cardinality(),
            sum: output.sum(),
            rows,
            rows_file,
            group: config.cwprf.name(),
            mqrpmt: config.construction.name(),
            last_message: config.last_message.name(),
            run,
        }
    }
}

/// The private-ID table as both parties write it: one row per union identifier, in
/// sorted order, with the index of this party's own item (into its input, in input
/// order) where it has one. Both parties' tables have the same rows in the same order.
pub fn private_id_rows(table: &PrivateIdTable) -> Vec<(&[u8], Option<usize>)> {
    let mine: HashMap<&[u8], usize> = table
        .own
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_slice(), i))
        .collect();
    table
        .union
        .iter()
        .map(|id| (id.as_slice(), mine.get(id.as_slice()).copied()))
        .collect()
}
