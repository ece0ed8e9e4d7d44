//! A party's input from Python: identifiers (str, bytes or int), value columns and
//! segment labels as lists; a file (CSV, compressed CSV, Parquet, Arrow IPC) read
//! exactly as the CLI reads it; or any object exporting the Arrow C stream interface
//! (`__arrow_c_stream__`: pyarrow tables and record batches, polars data frames),
//! read batch by batch without a copy through CSV. Every way, identifiers are made by
//! the CLI's [`Keys`] (columns, normalisation, hashing) and the rows go through the
//! same validation (`privset_protocols::input`): duplicate policy, value bounds,
//! errors naming the line (lists, CSV) or the row (Arrow).
//!
//! Line numbers of in-memory rows count a header as line 1, as in a CSV file: row `i`
//! (0-based) of a list or data frame is line `i + 2`, its line in `df.to_csv(index=False)`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::input::{self, Dataset, DuplicatePolicy, Row};
use privset_run::Failure;
use privset_run::keys::Keys;
use privset_run::source::{self, InputSpec};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyCapsule, PyCapsuleMethods, PyInt, PyString};

use crate::errors::{self, IntoPy};

/// A validated input, ready for any number of runs.
#[pyclass(frozen, module = "privset._native")]
pub struct Input {
    pub(crate) data: Arc<InputData>,
}

pub(crate) struct InputData {
    pub dataset: Dataset,
    /// How the identifiers were made, stated in the party's hellos.
    pub agreed: AgreedSettings,
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

/// An identifier cell's bytes: str as UTF-8, bytes as they are, int in decimal (as the
/// CLI reads it from a CSV file); [`Keys`] then normalises it like a CSV cell.
fn cell_bytes(obj: &Bound<'_, PyAny>, line: u64) -> Result<Vec<u8>, Failure> {
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
    Ok(raw)
}

/// The keys from the keyword arguments, as the CLI's flags make them.
pub(crate) fn keys(
    py: Python<'_>,
    id_columns: Vec<String>,
    normalize: Vec<String>,
    phone_region: Option<String>,
    hash_ids: Option<String>,
) -> PyResult<Keys> {
    Keys::new(
        id_columns,
        &normalize,
        phone_region.as_deref(),
        hash_ids.as_deref(),
    )
    .py_err(py)
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

pub(crate) fn rows_from_python(
    id_columns: &[Vec<Bound<'_, PyAny>>],
    keys: &Keys,
    values: &[(String, Vec<Bound<'_, PyAny>>)],
    segments: Option<&[Bound<'_, PyAny>]>,
) -> Result<Vec<Row>, Failure> {
    let n = id_columns.first().map_or(0, Vec::len);
    let lengths_differ = |what: &str, k: usize| {
        Failure::input(format!("{what} has {k} entries for {n} identifiers"))
    };
    if id_columns.len() != keys.columns.len() {
        return Err(Failure::config(format!(
            "{} identifier columns for {} names",
            id_columns.len(),
            keys.columns.len()
        )));
    }
    for (name, column) in keys.columns.iter().zip(id_columns) {
        if column.len() != n {
            return Err(lengths_differ(
                &format!("identifier column {name:?}"),
                column.len(),
            ));
        }
    }
    let ids = &id_columns[0];
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
    for i in 0..ids.len() {
        let line = line_of(i);
        let cell = |o: &Bound<'_, PyAny>| {
            text(o).map_err(|e| Failure::input(format!("line {line}: {e}")).at_line(line))
        };
        let raw = id_columns
            .iter()
            .map(|c| cell_bytes(&c[i], line))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let id = keys
            .key(&refs)
            .map_err(|e| Failure::input(format!("line {line}: {e}")).at_line(line))?;
        rows.push(Row {
            line,
            id,
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
    /// Validates in-memory rows: the identifier columns as `(name, cells)` (one, or
    /// several making one key), one list per value column as `(name, cells)`, and
    /// optional segment labels.
    #[staticmethod]
    #[pyo3(signature = (ids, values, segments, duplicates, value_bound, normalize, phone_region, hash_ids))]
    #[allow(clippy::too_many_arguments)]
    fn from_rows(
        py: Python<'_>,
        ids: Vec<(String, Vec<Bound<'_, PyAny>>)>,
        values: Vec<(String, Vec<Bound<'_, PyAny>>)>,
        segments: Option<Vec<Bound<'_, PyAny>>>,
        duplicates: &str,
        value_bound: &Bound<'_, PyAny>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
    ) -> PyResult<Self> {
        let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
        let policy = duplicate_policy(py, duplicates)?;
        let names: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        let (id_names, id_cells): (Vec<String>, Vec<Vec<Bound<'_, PyAny>>>) =
            ids.into_iter().unzip();
        let keys = keys(py, id_names, normalize, phone_region, hash_ids)?;
        let rows = rows_from_python(&id_cells, &keys, &values, segments.as_deref()).py_err(py)?;
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
                agreed: keys.agreed(),
                rows: Some(first_rows),
            }),
        })
    }

    /// Reads and validates an input file (CSV, gzip / zstd CSV, Parquet, Arrow IPC) with
    /// a header row, as the CLI does.
    #[staticmethod]
    #[pyo3(signature = (path, id_columns, value_columns, segment_column, duplicates, value_bound, normalize, phone_region, hash_ids))]
    #[allow(clippy::too_many_arguments)]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        id_columns: Vec<String>,
        value_columns: Vec<String>,
        segment_column: Option<String>,
        duplicates: &str,
        value_bound: &Bound<'_, PyAny>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
    ) -> PyResult<Self> {
        let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
        let policy = duplicate_policy(py, duplicates)?;
        let keys = keys(py, id_columns, normalize, phone_region, hash_ids)?;
        let dataset = py
            .detach(|| {
                source::read_input(
                    &path,
                    &InputSpec {
                        keys: &keys,
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
                agreed: keys.agreed(),
                rows: None,
            }),
        })
    }

    /// Reads and validates an object exporting the Arrow C stream interface
    /// (`__arrow_c_stream__`: a pyarrow Table or RecordBatch, a polars DataFrame, ...),
    /// batch by batch, with the GIL released. `what` names it in messages.
    #[staticmethod]
    #[pyo3(signature = (data, what, id_columns, value_columns, segment_column, duplicates, value_bound, normalize, phone_region, hash_ids))]
    #[allow(clippy::too_many_arguments)]
    fn from_arrow(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        what: String,
        id_columns: Vec<String>,
        value_columns: Vec<String>,
        segment_column: Option<String>,
        duplicates: &str,
        value_bound: &Bound<'_, PyAny>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
    ) -> PyResult<Self> {
        let value_bound = errors::u64_arg(py, "value_bound", value_bound)?;
        let policy = duplicate_policy(py, duplicates)?;
        let keys = keys(py, id_columns, normalize, phone_region, hash_ids)?;
        let capsule = data.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
            errors::config(
                py,
                format!("{what}: __arrow_c_stream__ did not return a capsule"),
            )
        })?;
        let pointer = capsule
            .pointer_checked(Some(c"arrow_array_stream"))?
            .cast::<FFI_ArrowArrayStream>();
        // SAFETY: the capsule named "arrow_array_stream" holds an ArrowArrayStream (the
        // Arrow PyCapsule interface); `from_raw` moves the stream out and marks the
        // capsule's copy released, so the capsule's destructor does not release it again.
        let reader =
            unsafe { RecordBatchStreamReader::from_raw(pointer.as_ptr()) }.map_err(|e| {
                errors::config(py, format!("{what}: cannot import the Arrow stream: {e}"))
            })?;
        let dataset = py
            .detach(|| {
                source::read_batches(
                    reader,
                    &what,
                    &InputSpec {
                        keys: &keys,
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
                agreed: keys.agreed(),
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
