//! Validation of a party's own input, shared by every front end (CLI, Python).
//!
//! Front ends read rows (CSV, a data frame, ...) and hand them here as
//! `(line, identifier, values)`; this module applies the duplicate policy and the value
//! bounds and reports problems with the line number, before anything is sent.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::error::InputError;

/// What to do when an identifier appears more than once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DuplicatePolicy {
    /// Refuse the input, naming the first duplicate line (the default).
    #[default]
    Error,
    /// Keep one row, with each value column summed over the duplicates.
    Sum,
    /// Keep the first row, ignore later ones.
    First,
}

impl DuplicatePolicy {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "error" => Some(Self::Error),
            "sum" => Some(Self::Sum),
            "first" => Some(Self::First),
            _ => None,
        }
    }
}

/// One input row as read by a front end.
pub struct Row {
    /// 1-based line number in the user's file (header = line 1), for messages.
    pub line: u64,
    /// The identifier's bytes (CSV front end: the cell after trimming whitespace).
    pub id: Vec<u8>,
    /// Raw value cells, one per value column, in column order.
    pub values: Vec<String>,
    /// Segment label (P1's optional segment column).
    pub segment: Option<String>,
}

/// Validated, de-duplicated input.
#[derive(Debug, Default, Clone)]
pub struct Dataset {
    pub ids: Vec<Vec<u8>>,
    /// Column-major values: `columns[c][i]` belongs to `ids[i]`.
    pub columns: Vec<Vec<u64>>,
    pub column_names: Vec<String>,
    /// Segment index per id, when a segment column was given.
    pub segment_of: Option<Vec<u32>>,
    /// Segment labels in order of first appearance.
    pub segment_names: Vec<String>,
}

/// Parses a value cell: a non-negative integer not above `max_value`.
pub fn parse_value(cell: &str, line: u64, column: &str, max_value: u64) -> Result<u64, InputError> {
    let t = cell.trim();
    let not_int = || InputError::NotAnInteger {
        line,
        column: column.to_string(),
        value: cell_text(cell),
    };
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_int());
    }
    let too_large = || InputError::ValueTooLarge {
        line,
        column: column.to_string(),
        value: cell_text(t),
        bound: max_value,
    };
    // Only overflow can fail the parse: the string is all digits.
    let v: u128 = t.parse().map_err(|_| too_large())?;
    if v > max_value as u128 {
        return Err(too_large());
    }
    Ok(v as u64)
}

/// Longest cell text quoted in a message, in characters.
const MAX_CELL_TEXT: usize = 40;

/// A cell's text for a message: as written, shortened to [`MAX_CELL_TEXT`] characters.
fn cell_text(cell: &str) -> String {
    match cell.char_indices().nth(MAX_CELL_TEXT) {
        Some((cut, _)) => format!("{}...", &cell[..cut]),
        None => cell.to_string(),
    }
}

/// Builds a [`Dataset`] from rows, applying `policy` and `max_value`.
pub fn build_dataset(
    rows: impl IntoIterator<Item = Row>,
    column_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, InputError> {
    let mut ds = Dataset {
        columns: vec![Vec::new(); column_names.len()],
        column_names: column_names.to_vec(),
        ..Dataset::default()
    };
    // identifier -> (index in ds, first line). The identifiers are this party's own
    // input, so a fast seeded hash (foldhash) is enough; std's SipHash took 1.6% of a
    // whole psi-card run's CPU at 2^18 rows.
    let rows = rows.into_iter();
    let mut seen: HashMap<Vec<u8>, (usize, u64), foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(rows.size_hint().0, Default::default());
    let mut segment_index: HashMap<String, u32> = HashMap::new();
    let mut segment_of = Vec::new();
    let mut any_segment = false;
    // Identifiers kept so far; they stay in `seen` until the end, then move (not copy)
    // into `ds.ids` at their index.
    let mut kept = 0usize;
    for row in rows {
        if row.values.len() != column_names.len() {
            return Err(InputError::Other(format!(
                "line {}: expected {} value cells, found {}",
                row.line,
                column_names.len(),
                row.values.len()
            )));
        }
        let mut values = Vec::with_capacity(row.values.len());
        for (cell, name) in row.values.iter().zip(column_names) {
            values.push(parse_value(cell, row.line, name, max_value)?);
        }
        match seen.entry(row.id) {
            Entry::Occupied(e) => {
                let (index, first_line) = *e.get();
                match policy {
                    DuplicatePolicy::Error => {
                        return Err(InputError::Duplicate {
                            line: row.line,
                            first_line,
                        });
                    }
                    DuplicatePolicy::First => {}
                    DuplicatePolicy::Sum => {
                        for (c, v) in values.into_iter().enumerate() {
                            let s = ds.columns[c][index] as u128 + v as u128;
                            if s > max_value as u128 {
                                return Err(InputError::ValueTooLarge {
                                    line: row.line,
                                    column: column_names[c].clone(),
                                    value: format!("{s} (the sum of the duplicates)"),
                                    bound: max_value,
                                });
                            }
                            ds.columns[c][index] = s as u64;
                        }
                    }
                }
            }
            Entry::Vacant(e) => {
                let index = kept;
                kept += 1;
                e.insert((index, row.line));
                for (c, v) in values.into_iter().enumerate() {
                    ds.columns[c].push(v);
                }
                if let Some(label) = row.segment {
                    any_segment = true;
                    let next = segment_index.len() as u32;
                    let s = *segment_index.entry(label.clone()).or_insert_with(|| {
                        ds.segment_names.push(label);
                        next
                    });
                    segment_of.push(s);
                } else {
                    segment_of.push(0);
                }
            }
        }
    }
    ds.ids = vec![Vec::new(); kept];
    for (id, (index, _)) in seen {
        ds.ids[index] = id;
    }
    if any_segment {
        ds.segment_of = Some(segment_of);
    }
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(line: u64, id: &str, v: &[&str]) -> Row {
        Row {
            line,
            id: id.as_bytes().to_vec(),
            values: v.iter().map(|s| s.to_string()).collect(),
            segment: None,
        }
    }

    #[test]
    fn duplicate_policies() {
        let cols = vec!["v".to_string()];
        let rows = || {
            vec![
                row(2, "a", &["1"]),
                row(3, "b", &["2"]),
                row(4, "a", &["5"]),
            ]
        };
        assert_eq!(
            build_dataset(rows(), &cols, DuplicatePolicy::Error, 100).unwrap_err(),
            InputError::Duplicate {
                line: 4,
                first_line: 2
            }
        );
        let d = build_dataset(rows(), &cols, DuplicatePolicy::Sum, 100).unwrap();
        assert_eq!(d.columns[0], vec![6, 2]);
        let d = build_dataset(rows(), &cols, DuplicatePolicy::First, 100).unwrap();
        assert_eq!(d.columns[0], vec![1, 2]);
    }

    #[test]
    fn bad_values_name_the_line() {
        let cols = vec!["v".to_string()];
        for bad in ["-1", "1.5", "x", ""] {
            let e = build_dataset(vec![row(7, "a", &[bad])], &cols, DuplicatePolicy::Error, 10)
                .unwrap_err();
            assert!(
                matches!(e, InputError::NotAnInteger { line: 7, .. }),
                "{bad}: {e:?}"
            );
        }
        let e = build_dataset(
            vec![row(9, "a", &["11"])],
            &cols,
            DuplicatePolicy::Error,
            10,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            InputError::ValueTooLarge {
                line: 9,
                ref value,
                ..
            } if value == "11"
        ));
        // The cell's text, not a saturated number.
        let big = "1".repeat(45);
        let e = build_dataset(
            vec![row(9, "a", &[&big])],
            &cols,
            DuplicatePolicy::Error,
            10,
        )
        .unwrap_err();
        let quoted = format!("{}...", "1".repeat(40));
        assert!(
            matches!(&e, InputError::ValueTooLarge { line: 9, value, .. } if *value == quoted),
            "{e}"
        );
    }
}
