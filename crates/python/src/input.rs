//! A party's input from Python: identifiers (str, bytes or int), value columns and
//! segment labels as lists, or a CSV file read exactly as the CLI reads it. Either way
//! the rows go through the same validation as the CLI's (`privset_protocols::input`):
//! duplicate policy, value bounds, errors naming the line.
//!
//! Line numbers of in-memory rows count a header as line 1, as in a CSV file: row `i`
//! (0-based) of a list or data frame is line `i + 2`, its line in `df.to_csv(index=False)`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use privset_protocols::input::{self, Dataset, DuplicatePolicy, Row};
use privset_run::Failure;
use privset_run::csv_input::{self, Columns};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyString};

use crate::errors::{self, IntoPy};

/// A validated input, ready for any number of runs.
#[pyclass(frozen, module = "privset._native")]
pub struct Input {
    pub(crate) data: Arc<InputData>,
}

pub(crate) struct InputData {
    pub dataset: Dataset,
    /// In-memory inputs: each distinct identifier's first row (0-based), so results can
    /// hand back the caller's own objects. `None` for a CSV file (results carry bytes).
    rows: Option<HashMap<Vec<u8>, usize>>,
}

impl InputData {
    /// The caller's row (0-based) holding `id`, for in-memory inputs.
    pub fn row_of(&self, id: &[u8]) -> Option<usize> {
        self.rows.as_ref()?.get(id).copied()
    }
}

/// The line of row `index` (0-based) when a header is line 1.
fn line_of(index: usize) -> u64 {
    index as u64 + 2
}

pub(crate) fn duplicate_policy(py: Python<'_>, name: &str) -> PyResult<DuplicatePolicy> {
    DuplicatePolicy::from_name(name).ok_or_else(|| {
        errors::config(
            py,
            format!("duplicates must be 'error', 'sum' or 'first', not {name:?}"),
        )
    })
}

/// An identifier's bytes: str as UTF-8, bytes as they are, int in decimal (as the CLI
/// reads it from a CSV file), then trimmed like a CSV cell.
fn identifier(obj: &Bound<'_, PyAny>, line: u64) -> Result<Vec<u8>, Failure> {
    let bad = |why: String| Failure::input(format!("line {line}: {why}")).at_line(line);
    let raw: Vec<u8> = if let Ok(s) = obj.cast::<PyString>() {
        s.to_cow()
            .map_err(|e| bad(format!("identifier is not valid Unicode: {e}")))?
            .as_bytes()
            .to_vec()
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        b.to_vec()
    } else if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        text(obj).map_err(|e| bad(e.to_string()))?.into_bytes()
    } else {
        let type_name = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(bad(format!(
            "identifier of type {type_name}; identifiers are str, bytes or int"
        )));
    };
    csv_input::identifier(&raw, line)
}

/// A cell as text, as the CLI would read it from a file: str as is, bytes decoded
/// (invalid UTF-8 replaced), anything else by `str()`, so 12 is "12" and 1.5 is "1.5"
/// (refused by the value check, naming the line).
fn text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(String::from_utf8_lossy(b.as_bytes()).into_owned());
    }
    Ok(obj.str()?.to_cow()?.into_owned())
}

fn rows_from_python(
    ids: &[Bound<'_, PyAny>],
    values: &[(String, Vec<Bound<'_, PyAny>>)],
    segments: Option<&[Bound<'_, PyAny>]>,
) -> Result<Vec<Row>, Failure> {
    let lengths_differ = |what: &str, n: usize| {
        Failure::input(format!(
            "{what} has {n} entries for {} identifiers",
            ids.len()
        ))
    };
    for (name, column) in values {
        if column.len() != ids.len() {
            return Err(lengths_differ(
                &format!("value column {name:?}"),
                column.len(),
            ));
        }
    }
    if let Some(s) = segments
        && s.len() != ids.len()
    {
        return Err(lengths_differ("the segment column", s.len()));
    }
    let mut rows = Vec::with_capacity(ids.len());
    for (i, obj) in ids.iter().enumerate() {
        let line = line_of(i);
        let cell = |o: &Bound<'_, PyAny>| {
            text(o).map_err(|e| Failure::input(format!("line {line}: {e}")).at_line(line))
        };
        rows.push(Row {
            line,
            id: identifier(obj, line)?,
            values: values
                .iter()
                .map(|(_, column)| cell(&column[i]))
                .collect::<Result<_, _>>()?,
            segment: segments.map(|s| cell(&s[i])).transpose()?,
        });
    }
    Ok(rows)
}

#[pymethods]
impl Input {
    /// Validates in-memory rows: `ids`, one list per value column as `(name, cells)`,
    /// and optional segment labels.
    #[staticmethod]
    #[pyo3(signature = (ids, values, segments, duplicates, value_bound))]
    fn from_rows(
        py: Python<'_>,
        ids: Vec<Bound<'_, PyAny>>,
        values: Vec<(String, Vec<Bound<'_, PyAny>>)>,
        segments: Option<Vec<Bound<'_, PyAny>>>,
        duplicates: &str,
        value_bound: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
        let policy = duplicate_policy(py, duplicates)?;
        let names: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        let rows = rows_from_python(&ids, &values, segments.as_deref()).py_err(py)?;
        let mut first_rows = HashMap::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            first_rows.entry(row.id.clone()).or_insert(i);
        }
        let dataset = py
            .detach(|| input::build_dataset(rows, &names, policy, value_bound))
            .map_err(Failure::from)
            .py_err(py)?;
        Ok(Self {
            data: Arc::new(InputData {
                dataset,
                rows: Some(first_rows),
            }),
        })
    }

    /// Reads and validates a CSV file with a header row, as the CLI does.
    #[staticmethod]
    #[pyo3(signature = (path, id_column, value_columns, segment_column, duplicates, value_bound))]
    fn from_csv(
        py: Python<'_>,
        path: PathBuf,
        id_column: String,
        value_columns: Vec<String>,
        segment_column: Option<String>,
        duplicates: &str,
        value_bound: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
        let policy = duplicate_policy(py, duplicates)?;
        let dataset = py
            .detach(|| {
                csv_input::read_dataset(
                    &path,
                    &Columns {
                        id: &id_column,
                        values: &value_columns,
                        segment: segment_column.as_deref(),
                    },
                    policy,
                    value_bound,
                )
            })
            .py_err(py)?;
        Ok(Self {
            data: Arc::new(InputData {
                dataset,
                rows: None,
            }),
        })
    }

    /// Distinct identifiers after the duplicate policy.
    fn __len__(&self) -> usize {
        self.data.dataset.ids.len()
    }

    /// The 0-based row of an in-memory input holding identifier `id` (as bytes), if any.
    fn row_of(&self, id: &[u8]) -> Option<usize> {
        self.data.row_of(id)
    }
}
