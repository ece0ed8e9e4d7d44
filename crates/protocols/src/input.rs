//! Validation of a party's own input, shared by every front end (CLI, Python).
//!
//! Front ends read rows (CSV, a data frame, ...) and hand them here as
//! `(line, identifier, values)`; this module applies the duplicate policy and the value
//! bounds and reports problems with the line number, before anything is sent.

use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;

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
///
/// The identifiers go straight into `ds.ids`; the duplicate check is a table of indices
/// into it, hashed by the identifier's bytes. A map keyed by the identifiers themselves
/// cost 41 bytes a bucket (a `Vec` header, the index and the first line) and its
/// contents were moved into `ds.ids` at the end, with both alive: at 2^24 rows that was
/// 1.4 GB on top of the identifiers. The index table costs 9 bytes a bucket.
pub fn build_dataset(
    rows: impl IntoIterator<Item = Row>,
    column_names: &[String],
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, InputError> {
    let rows = rows.into_iter();
    let hint = rows.size_hint().0;
    let mut ds = Dataset {
        ids: Vec::with_capacity(hint),
        columns: vec![Vec::with_capacity(hint); column_names.len()],
        column_names: column_names.to_vec(),
        ..Dataset::default()
    };
    let mut seen = IdIndex::with_capacity(hint);
    // First line of each kept identifier, only where a duplicate must name it.
    let mut first_lines: Vec<u64> = Vec::new();
    let mut segment_index: HashMap<String, u32> = HashMap::new();
    let mut segment_of = Vec::new();
    let mut any_segment = false;
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
        match seen.find_or_insert(&mut ds.ids, row.id)? {
            Some(index) => match policy {
                DuplicatePolicy::Error => {
                    return Err(InputError::Duplicate {
                        line: row.line,
                        first_line: first_lines[index],
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
            },
            None => {
                if policy == DuplicatePolicy::Error {
                    first_lines.push(row.line);
                }
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
    if any_segment {
        ds.segment_of = Some(segment_of);
    }
    Ok(ds)
}

/// The set of identifiers kept so far, as indices into the dataset's `ids`. The
/// identifiers are this party's own input, so a fast seeded hash (foldhash) is enough;
/// std's SipHash took 1.6% of a whole psi-card run's CPU at 2^18 rows.
///
/// Each entry keeps 32 bits of its identifier's hash: growing the table rehashes from
/// them instead of reading every identifier again (a cache miss each, a third of the
/// reading time at 2^20 rows), and a lookup compares bytes only when they match.
struct IdIndex {
    table: HashTable<Entry>,
    hasher: foldhash::fast::RandomState,
}

#[derive(Clone, Copy)]
struct Entry {
    index: u32,
    hash: u32,
}

/// The table's 64-bit hash from an entry's 32: hashbrown takes its control bits from the
/// top, its bucket from the bottom, so the 32 bits are spread over both.
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl IdIndex {
    fn with_capacity(n: usize) -> Self {
        Self {
            table: HashTable::with_capacity(n),
            hasher: Default::default(),
        }
    }

    /// The index of `id` in `ids` if it is there; otherwise appends it and returns
    /// `None`.
    fn find_or_insert(
        &mut self,
        ids: &mut Vec<Vec<u8>>,
        id: Vec<u8>,
    ) -> Result<Option<usize>, InputError> {
        let hash = self.hasher.hash_one(id.as_slice()) as u32;
        let found = self
            .table
            .find(spread(hash), |e| {
                e.hash == hash && ids[e.index as usize] == id
            })
            .map(|e| e.index as usize);
        if found.is_some() {
            return Ok(found);
        }
        let index = u32::try_from(ids.len()).map_err(|_| {
            InputError::Other(format!(
                "more than {} distinct identifiers in one input",
                u32::MAX
            ))
        })?;
        self.table
            .insert_unique(spread(hash), Entry { index, hash }, |e| spread(e.hash));
        ids.push(id);
        Ok(None)
    }
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
    fn many_identifiers_keep_their_order_through_growth() {
        // No capacity hint: the index table grows (and rehashes) many times.
        let cols = vec!["v".to_string()];
        let ids: Vec<String> = (0..20_000).map(|i| format!("id{i}")).collect();
        let rows = ids
            .iter()
            .enumerate()
            .map(|(i, id)| row(i as u64 + 2, id, &["1"]))
            .chain(std::iter::once(row(30_000, "id12345", &["2"])));
        let d = build_dataset(rows.filter(|_| true), &cols, DuplicatePolicy::Sum, 100).unwrap();
        let got: Vec<&[u8]> = d.ids.iter().map(|v| v.as_slice()).collect();
        let want: Vec<&[u8]> = ids.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(got, want);
        assert_eq!(d.columns[0][12345], 3);
        assert_eq!(d.columns[0][12344], 1);
        let dup = build_dataset(
            ids.iter()
                .enumerate()
                .map(|(i, id)| row(i as u64 + 2, id, &["1"]))
                .chain(std::iter::once(row(30_000, "id777", &["2"]))),
            &cols,
            DuplicatePolicy::Error,
            100,
        )
        .unwrap_err();
        assert_eq!(
            dup,
            InputError::Duplicate {
                line: 30_000,
                first_line: 779
            }
        );
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
