//! Reading a party's input file into validated rows: the interface from before issue
//! 19, kept for callers that name one identifier column and need no normalisation.
//! [`crate::source`] does the reading (CSV, compressed CSV, Parquet, Arrow IPC);
//! [`crate::keys`] makes identifiers (several columns, normalisation, hashing).
//!
//! The file must have a header row. An identifier is the bytes of its cell after
//! trimming surrounding whitespace (any bytes, not only UTF-8; see [`identifier`]);
//! line numbers in errors are the file's physical lines as an editor shows them (the
//! header is line 1; see [`crate::csv_lines`]).

use std::path::Path;

use privset_protocols::input::{Dataset, DuplicatePolicy};

use crate::fail::Failure;
use crate::keys::Keys;
use crate::source::{self, InputSpec};

/// Which columns to read.
pub struct Columns<'a> {
    pub id: &'a str,
    pub values: &'a [String],
    pub segment: Option<&'a str>,
}

/// Reads a file of any supported format with one trimmed identifier column.
pub fn read_dataset(
    path: &Path,
    cols: &Columns<'_>,
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, Failure> {
    let keys = Keys::single(cols.id);
    source::read_input(
        path,
        &InputSpec {
            keys: &keys,
            values: cols.values,
            segment: cols.segment,
        },
        policy,
        max_value,
    )
}

/// An identifier as every front end reads it: the cell's bytes with surrounding ASCII
/// whitespace trimmed (as the CSV reader trims), refused when nothing is left.
pub fn identifier(cell: &[u8], line: u64) -> Result<Vec<u8>, Failure> {
    let id = cell.trim_ascii();
    if id.is_empty() {
        return Err(Failure::input(format!("line {line}: empty identifier")).at_line(line));
    }
    Ok(id.to_vec())
}
