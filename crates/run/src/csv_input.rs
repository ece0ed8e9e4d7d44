//! Reading a party's CSV input into validated rows.
//!
//! The file must have a header row. An identifier is the bytes of its cell after
//! trimming surrounding whitespace (any bytes, not only UTF-8; see [`identifier`]);
//! line numbers in errors are the file's physical lines as an editor shows them (the
//! header is line 1; see [`crate::csv_lines`]).

use std::path::Path;

use privset_protocols::input::{self, Dataset, DuplicatePolicy, Row};

use crate::csv_lines::LineCounter;
use crate::fail::Failure;

/// Which columns to read.
pub struct Columns<'a> {
    pub id: &'a str,
    pub values: &'a [String],
    pub segment: Option<&'a str>,
}

pub fn read_dataset(
    path: &Path,
    cols: &Columns<'_>,
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, Failure> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(false)
        .from_path(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    let headers = reader
        .byte_headers()
        .map_err(|e| {
            Failure::input(format!(
                "{}: cannot read the header row: {e}",
                path.display()
            ))
        })?
        .clone();
    let find = |name: &str| -> Result<usize, Failure> {
        headers
            .iter()
            .position(|h| h == name.as_bytes())
            .ok_or_else(|| {
                let have: Vec<String> = headers
                    .iter()
                    .map(|h| String::from_utf8_lossy(h).into_owned())
                    .collect();
                Failure::input(format!(
                    "{}: no column named {name:?} (columns: {})",
                    path.display(),
                    have.join(", ")
                ))
            })
    };
    let id_col = find(cols.id)?;
    let value_cols = cols
        .values
        .iter()
        .map(|v| find(v))
        .collect::<Result<Vec<_>, _>>()?;
    let segment_col = cols.segment.map(find).transpose()?;
    let mut lines = LineCounter::open(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    let mut line_at = |byte: u64| {
        lines
            .line_at(byte)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))
    };
    let mut rows = Vec::new();
    // One record buffer for the whole file.
    let mut record = csv::ByteRecord::new();
    loop {
        let more = match reader.read_byte_record(&mut record) {
            Ok(more) => more,
            Err(e) => {
                let failure = Failure::input(format!("{}: {e}", path.display()));
                return Err(match e.position() {
                    Some(p) => {
                        let line = line_at(p.byte())?;
                        Failure::input(format!("{}: line {line}: {}", path.display(), what(&e)))
                            .at_line(line)
                    }
                    None => failure,
                });
            }
        };
        if !more {
            break;
        }
        let line = match record.position() {
            Some(p) => line_at(p.byte())?,
            None => 0,
        };
        let cell = |i: usize| record.get(i).unwrap_or_default();
        let id = identifier(cell(id_col), line).map_err(|e| e.in_file(path))?;
        rows.push(Row {
            line,
            id,
            values: value_cols
                .iter()
                .map(|&c| String::from_utf8_lossy(cell(c)).into_owned())
                .collect(),
            segment: segment_col.map(|c| String::from_utf8_lossy(cell(c)).into_owned()),
        });
    }
    input::build_dataset(rows, cols.values, policy, max_value)
        .map_err(|e| Failure::from(e).in_file(path))
}

/// What is wrong with a record, without the `csv` crate's own (record-based) position.
fn what(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("found a row of {len} fields where the header has {expected_len}"),
        _ => e.to_string(),
    }
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
