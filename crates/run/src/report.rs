//! RESULT.json: what a finished party reports, built once here so that the CLI's file
//! and the Python package's result objects have the same fields and values.

use std::collections::HashMap;
use std::path::PathBuf;

use privset_protocols::pi_sum::{PiSumConfig, PiSumOutput, Role, SegmentResult};
use privset_protocols::pso::{PrivateIdTable, PsoConfig, PsoOutput, PsoRole};

use crate::drive::Metered;

/// What a pi-sum party learned, as RESULT.json lists it: every field present in every
/// file (`null` where the party is not entitled to it), so both parties' files have the
/// same keys.
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct PiSumFields {
    pub role: &'static str,
    /// True when the threshold variant aborted the run.
    pub aborted: bool,
    /// `null` for the party told only that the run aborted.
    pub cardinality: Option<u64>,
    /// With exactly one value column, its sum (entitled party only).
    pub sum: Option<u128>,
    /// Per value column (entitled party only).
    pub sums: Option<Vec<u128>>,
    pub sums_of_squares: Option<Vec<u128>>,
    pub variance: Option<Vec<f64>>,
    pub segments: Option<Vec<SegmentResult>>,
    pub peer_items: u64,
}

impl PiSumFields {
    pub fn new(role: Role, output: &PiSumOutput) -> Self {
        let sums = output.sums();
        Self {
            role: role.name(),
            aborted: output.aborted(),
            cardinality: output.cardinality(),
            sum: sums.and_then(|s| s.single()),
            sums: sums.map(|s| s.sums.clone()),
            sums_of_squares: sums.and_then(|s| s.sums_of_squares.clone()),
            variance: sums.and_then(|s| s.variance.clone()),
            segments: output.segments().map(<[SegmentResult]>::to_vec),
            peer_items: output.peer_items(),
        }
    }
}

/// RESULT.json of pi-sum.
#[derive(serde::Serialize, Debug, Clone)]
pub struct PiSumReport {
    pub protocol: &'static str,
    #[serde(flatten)]
    pub output: PiSumFields,
    pub items: usize,
    /// Which of Ion et al. 2020's protocols ran: "ddh", "rot" or "bloom".
    pub pi_sum_protocol: &'static str,
    pub group: &'static str,
    pub values_he: &'static str,
    pub z_encoding: &'static str,
    /// A bucketed run's plan and per-unit figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BucketsSection>,
    #[serde(flatten)]
    pub run: Metered,
}

impl PiSumReport {
    /// The report of a party with `items` own items that ran with `config`.
    pub fn new(
        config: &PiSumConfig,
        role: Role,
        output: &PiSumOutput,
        items: usize,
        run: Metered,
    ) -> Self {
        Self {
            protocol: "pi-sum",
            output: PiSumFields::new(role, output),
            items,
            pi_sum_protocol: config.protocol.name(),
            group: config.group.name(),
            values_he: config.he.name(),
            z_encoding: config.z_encoding.name(),
            buckets: None,
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
    /// A bucketed run's plan and per-bucket figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BucketsSection>,
    #[serde(flatten)]
    pub run: Metered,
}

/// RESULT.json of a bucketed job.
#[derive(serde::Serialize, Debug, Clone)]
#[serde(untagged)]
pub enum BucketedReport {
    Pso(PsoReport),
    PiSum(PiSumReport),
}

/// RESULT.json's `buckets` section: the plan's bucket count, this party's public
/// bucket size, and each bucket's figures (from whichever attempt finished it).
#[derive(serde::Serialize, Debug, Clone)]
pub struct BucketsSection {
    pub count: u32,
    pub padded: u64,
    pub per_bucket: Vec<crate::buckets::job::BucketFigures>,
    /// Set when this party finished without hearing that the peer holds every bucket
    /// too: the job's state directory, kept so that running the same command again
    /// serves what the peer lacks (remove it once the peer has its result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_state: Option<PathBuf>,
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
            buckets: None,
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
