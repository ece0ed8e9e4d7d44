//! A party's input, whatever its format: CSV (plain, gzip or zstd), Parquet, or Arrow
//! IPC (file or stream), told apart by the file's first bytes, not by its name. Every
//! format goes through the same steps: pick the identifier columns (one or several, see
//! [`Keys`]), normalise and maybe hash them, read the value and segment columns, and
//! hand the records one at a time to `privset_protocols::input::build_dataset`, so that
//! memory while reading is the set being built plus one batch (a CSV record, or up to
//! [`BATCH_ROWS`] rows of Parquet / Arrow), never a second copy of the file.
//!
//! Positions in errors: CSV names the physical line (header = line 1, see
//! [`crate::csv_lines`]); Parquet and Arrow name the row (first data row = row 1) and
//! the column. docs/inputs.md describes the formats for users.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Schema};
use privset_protocols::input::{self, Dataset, DuplicatePolicy, Row};

use crate::csv_lines::LineCounter;
use crate::fail::Failure;
use crate::keys::Keys;

/// Rows per Parquet / Arrow batch while reading.
pub const BATCH_ROWS: usize = 64 * 1024;

/// An input file's format, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    CsvGzip,
    CsvZstd,
    Parquet,
    /// Arrow IPC file format (`ARROW1` magic; `.arrow`, `.feather` v2).
    ArrowFile,
    /// Arrow IPC stream format (starts with the 0xFFFFFFFF continuation marker).
    ArrowStream,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Self::Csv => "CSV",
            Self::CsvGzip => "gzip-compressed CSV",
            Self::CsvZstd => "zstd-compressed CSV",
            Self::Parquet => "Parquet",
            Self::ArrowFile => "Arrow IPC file",
            Self::ArrowStream => "Arrow IPC stream",
        }
    }

    /// The format of content starting with `head` (at least 8 bytes when the file has
    /// them). Anything unrecognised is CSV.
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(b"PAR1") {
            Self::Parquet
        } else if head.starts_with(b"ARROW1") {
            Self::ArrowFile
        } else if head.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
            Self::ArrowStream
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Self::CsvGzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Self::CsvZstd
        } else {
            Self::Csv
        }
    }

    pub fn detect(path: &Path) -> Result<Self, Failure> {
        let mut file = File::open(path).map_err(|e| cannot_read(path, &e))?;
        let mut head = [0u8; 8];
        let mut n = 0;
        while n < head.len() {
            match file.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(cannot_read(path, &e)),
            }
        }
        Ok(Self::sniff(&head[..n]))
    }
}

fn cannot_read(path: &Path, e: &dyn std::fmt::Display) -> Failure {
    Failure::input(format!("cannot read {}: {e}", path.display()))
}

/// Which columns to read and how to make identifiers.
pub struct InputSpec<'a> {
    pub keys: &'a Keys,
    /// Integer value columns, in order.
    pub values: &'a [String],
    pub segment: Option<&'a str>,
}

/// Reads and validates a party's input file of any supported format.
pub fn read_input(
    path: &Path,
    spec: &InputSpec<'_>,
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, Failure> {
    RowStream::open(path, spec)?.into_dataset(spec.values, policy, max_value)
}

/// A party's input as rows, read one CSV record or one Parquet / Arrow batch at a
/// time: what [`read_input`] builds a dataset from, and what a bucketed run
/// partitions to disk without ever holding the set.
pub struct RowStream<'a> {
    rows: Box<dyn Iterator<Item = Result<Row, Failure>> + 'a>,
    /// Columnar sources have rows, not lines: their build errors say "row".
    columnar: bool,
    what: String,
}

impl<'a> Iterator for RowStream<'a> {
    type Item = Result<Row, Failure>;
    fn next(&mut self) -> Option<Self::Item> {
        self.rows.next()
    }
}

impl<'a> RowStream<'a> {
    /// The rows of an input file of any supported format.
    pub fn open(path: &Path, spec: &InputSpec<'a>) -> Result<Self, Failure> {
        let format = Format::detect(path)?;
        let what = path.display().to_string();
        match format {
            Format::Csv | Format::CsvGzip | Format::CsvZstd => Ok(Self {
                rows: Box::new(CsvRows::open(path, format, spec)?),
                columnar: false,
                what,
            }),
            Format::Parquet => {
                use parquet::arrow::ProjectionMask;
                use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
                let file = File::open(path).map_err(|e| cannot_read(path, &e))?;
                let bad = |e: &dyn std::fmt::Display| {
                    Failure::input(format!("{what}: not a readable Parquet file: {e}"))
                };
                let builder =
                    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| bad(&e))?;
                let plan = Plan::new(builder.schema(), spec).map_err(|e| e.in_file(path))?;
                // Decode only the columns used.
                let mask = ProjectionMask::roots(builder.parquet_schema(), plan.used());
                let reader = builder
                    .with_projection(mask)
                    .with_batch_size(BATCH_ROWS)
                    .build()
                    .map_err(|e| bad(&e))?;
                Self::from_batches(reader, &what, spec)
            }
            Format::ArrowFile => {
                let file = File::open(path).map_err(|e| cannot_read(path, &e))?;
                let reader = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)
                    .map_err(|e| {
                        Failure::input(format!("{what}: not a readable Arrow IPC file: {e}"))
                    })?;
                Self::from_batches(reader, &what, spec)
            }
            Format::ArrowStream => {
                let file = File::open(path).map_err(|e| cannot_read(path, &e))?;
                let reader = arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None)
                    .map_err(|e| {
                    Failure::input(format!("{what}: not a readable Arrow IPC stream: {e}"))
                })?;
                Self::from_batches(reader, &what, spec)
            }
        }
    }

    /// The rows of a Parquet file, an Arrow IPC file or stream, or any other Arrow
    /// source (Python's Arrow C stream); `what` names it in messages.
    pub fn from_batches(
        reader: impl RecordBatchReader + 'a,
        what: &str,
        spec: &InputSpec<'a>,
    ) -> Result<Self, Failure> {
        // (A Parquet reader built with a projection has the projected schema.)
        let plan = Plan::new(&reader.schema(), spec).map_err(|e| prefixed(e, what))?;
        let keys = spec.keys;
        let name = what.to_string();
        let mut base = 0u64;
        let mut failed = false;
        // The first bad batch or row ends the stream, as in CSV.
        let rows = reader.map_while(move |batch| {
            if failed {
                return None;
            }
            let rows = batch
                .map_err(|e| Failure::input(format!("{name}: cannot read row {}: {e}", base + 1)))
                .and_then(|b| {
                    let rows = rows_of_batch(&b, &plan, keys, base, &name);
                    base += b.num_rows() as u64;
                    rows
                });
            let batch: Vec<Result<Row, Failure>> = match rows {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => {
                    failed = true;
                    vec![Err(e)]
                }
            };
            Some(batch)
        });
        let rows = rows.flatten();
        Ok(Self {
            rows: Box::new(rows),
            columnar: true,
            what: what.to_string(),
        })
    }

    /// The input's name, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// True for Parquet and Arrow sources (rows, not lines).
    pub fn is_columnar(&self) -> bool {
        self.columnar
    }

    /// A dataset error (duplicate, bad value) as the user sees it: in this input, at
    /// its line or row.
    pub fn build_failure(&self, e: privset_protocols::error::InputError) -> Failure {
        build_failure(e, &self.what, self.columnar)
    }

    /// Builds and validates the dataset; stops at the first bad row.
    pub fn into_dataset(
        mut self,
        values: &[String],
        policy: DuplicatePolicy,
        max_value: u64,
    ) -> Result<Dataset, Failure> {
        let mut failure: Option<Failure> = None;
        let rows = self.rows.by_ref().map_while(|r| match r {
            Ok(row) => Some(row),
            Err(e) => {
                failure = Some(e);
                None
            }
        });
        let built = input::build_dataset(rows, values, policy, max_value);
        if let Some(f) = failure {
            return Err(f);
        }
        built.map_err(|e| self.build_failure(e))
    }
}

/// A dataset error in the input `what`, naming the line (CSV) or row (columnar).
pub fn build_failure(
    e: privset_protocols::error::InputError,
    what: &str,
    columnar: bool,
) -> Failure {
    let f = Failure::from(e);
    let f = if columnar {
        // Rows, not lines: there are no lines in a columnar file.
        let message = f.message.replace("line ", "row ");
        Failure { message, ..f }
    } else {
        f
    };
    f.in_file(Path::new(what))
}

// ---------------------------------------------------------------------------------
// CSV

fn open_decoded(path: &Path, format: Format) -> io::Result<Box<dyn Read>> {
    let file = File::open(path)?;
    Ok(match format {
        Format::CsvGzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file))),
        Format::CsvZstd => Box::new(zstd::stream::read::Decoder::new(file)?),
        _ => Box::new(file),
    })
}

/// Bytes the CSV parser reads at a time (the `csv` crate's default is 8 KiB: four
/// times as many reads for the same file).
const CSV_BUFFER: usize = 64 * 1024;

/// The records of a CSV file as rows, one record buffer for the whole file.
struct CsvRows<'a> {
    path: std::path::PathBuf,
    reader: csv::Reader<Box<dyn Read>>,
    lines: LineCounter,
    record: csv::ByteRecord,
    keys: &'a Keys,
    id_cols: Vec<usize>,
    value_cols: Vec<usize>,
    segment_col: Option<usize>,
    /// Set after an error: the stream ends.
    failed: bool,
}

impl<'a> CsvRows<'a> {
    fn open(path: &Path, format: Format, spec: &InputSpec<'a>) -> Result<Self, Failure> {
        let mut reader = csv::ReaderBuilder::new()
            .buffer_capacity(CSV_BUFFER)
            .has_headers(true)
            .flexible(false)
            .from_reader(open_decoded(path, format).map_err(|e| cannot_read(path, &e))?);
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
                .position(|h| h.trim_ascii() == name.as_bytes())
                .ok_or_else(|| {
                    let have: Vec<String> = headers
                        .iter()
                        .map(|h| String::from_utf8_lossy(h.trim_ascii()).into_owned())
                        .collect();
                    Failure::input(format!(
                        "{}: no column named {name:?} (columns: {})",
                        path.display(),
                        have.join(", ")
                    ))
                })
        };
        let id_cols = spec
            .keys
            .columns
            .iter()
            .map(|c| find(c))
            .collect::<Result<Vec<_>, _>>()?;
        let value_cols = spec
            .values
            .iter()
            .map(|v| find(v))
            .collect::<Result<Vec<_>, _>>()?;
        let segment_col = spec.segment.map(find).transpose()?;
        let lines =
            LineCounter::new(open_decoded(path, format).map_err(|e| cannot_read(path, &e))?);
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            lines,
            record: csv::ByteRecord::new(),
            keys: spec.keys,
            id_cols,
            value_cols,
            segment_col,
            failed: false,
        })
    }

    fn next_row(&mut self) -> Result<Option<Row>, Failure> {
        let path = &self.path;
        let lines = &mut self.lines;
        let mut line_at = |byte: u64| lines.line_at(byte).map_err(|e| cannot_read(path, &e));
        let more = match self.reader.read_byte_record(&mut self.record) {
            Ok(more) => more,
            Err(e) => {
                return Err(match e.position() {
                    Some(p) => {
                        let line = line_at(p.byte())?;
                        Failure::input(format!("{}: line {line}: {}", path.display(), what(&e)))
                            .at_line(line)
                    }
                    None => Failure::input(format!("{}: {e}", path.display())),
                });
            }
        };
        if !more {
            return Ok(None);
        }
        let line = match self.record.position() {
            Some(p) => line_at(p.byte())?,
            None => 0,
        };
        let record = &self.record;
        let cell = |i: usize| record.get(i).unwrap_or_default();
        // One identifier column (the common case) needs no list of cells.
        let id = match self.id_cols.as_slice() {
            &[c] => self.keys.key(&[cell(c)]),
            cols => self
                .keys
                .key(&cols.iter().map(|&c| cell(c)).collect::<Vec<_>>()),
        };
        let id = id.map_err(|e| {
            Failure::input(format!("{}: line {line}: {e}", path.display())).at_line(line)
        })?;
        Ok(Some(Row {
            line,
            id,
            values: self
                .value_cols
                .iter()
                .map(|&c| String::from_utf8_lossy(cell(c)).into_owned())
                .collect(),
            segment: self
                .segment_col
                .map(|c| String::from_utf8_lossy(cell(c).trim_ascii()).into_owned()),
        }))
    }
}

impl Iterator for CsvRows<'_> {
    type Item = Result<Row, Failure>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_row();
        self.failed = next.is_err();
        next.transpose()
    }
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

// ---------------------------------------------------------------------------------
// Parquet and Arrow

/// How a column's Arrow type is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Text,
    Binary,
    Signed,
    Unsigned,
}

impl Class {
    fn of(dt: &DataType) -> Option<Self> {
        Some(match dt {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Self::Text,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Self::Binary,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Self::Signed,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                Self::Unsigned
            }
            DataType::Dictionary(_, v) => return Self::of(v),
            _ => return None,
        })
    }
}

/// A column's index and name (its type checked by [`Plan::new`]).
struct Col {
    index: usize,
    name: String,
}

/// The columns of a schema that an [`InputSpec`] reads, checked once up front.
struct Plan {
    ids: Vec<Col>,
    values: Vec<Col>,
    segment: Option<Col>,
}

impl Plan {
    fn new(schema: &Schema, spec: &InputSpec<'_>) -> Result<Self, Failure> {
        let find = |name: &str, role: &str, ints_only: bool| -> Result<Col, Failure> {
            let (index, field) = schema.column_with_name(name).ok_or_else(|| {
                let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                Failure::input(format!(
                    "no column named {name:?} (columns: {})",
                    have.join(", ")
                ))
            })?;
            let dt = field.data_type();
            let class = Class::of(dt)
                .filter(|c| !ints_only || matches!(c, Class::Signed | Class::Unsigned));
            class.ok_or_else(|| {
                Failure::input(format!(
                    "column {name:?} has type {dt}; {}",
                    if ints_only {
                        format!("{role} must be integers (int8 to int64, uint8 to uint64)")
                    } else {
                        format!("{role} must be strings, binary or integers")
                    }
                ))
            })?;
            Ok(Col {
                index,
                name: name.to_string(),
            })
        };
        Ok(Self {
            ids: spec
                .keys
                .columns
                .iter()
                .map(|c| find(c, "an identifier column", false))
                .collect::<Result<_, _>>()?,
            values: spec
                .values
                .iter()
                .map(|c| find(c, "a value column", true))
                .collect::<Result<_, _>>()?,
            segment: spec
                .segment
                .map(|c| find(c, "a segment column", false))
                .transpose()?,
        })
    }

    /// Indices of the columns used, ascending, without repeats.
    fn used(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .ids
            .iter()
            .chain(&self.values)
            .chain(&self.segment)
            .map(|c| c.index)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// One batch's column: the array, and for a dictionary its keys (as indices into the
/// values) and values.
struct Cells {
    array: ArrayRef,
    dict: Option<(Vec<usize>, ArrayRef)>,
}

impl Cells {
    fn of(batch: &RecordBatch, col: &Col) -> Self {
        let array = batch.column(col.index).clone();
        let dict = matches!(array.data_type(), DataType::Dictionary(..)).then(|| {
            let d = array.as_any_dictionary();
            (d.normalized_keys(), d.values().clone())
        });
        Self { array, dict }
    }

    /// Cell `i` as bytes (integers in decimal); `None` when null.
    fn get(&self, i: usize) -> Option<Cow<'_, [u8]>> {
        if self.array.is_null(i) {
            return None;
        }
        match &self.dict {
            Some((keys, values)) => cell(values, keys[i]),
            None => cell(&self.array, i),
        }
    }
}

/// Cell `i` of a plain array of a type [`Class::of`] accepts.
fn cell(a: &ArrayRef, i: usize) -> Option<Cow<'_, [u8]>> {
    if a.is_null(i) {
        return None;
    }
    fn int(v: impl ToString) -> Cow<'static, [u8]> {
        Cow::Owned(v.to_string().into_bytes())
    }
    Some(match a.data_type() {
        DataType::Utf8 => Cow::Borrowed(a.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => Cow::Borrowed(a.as_string::<i64>().value(i).as_bytes()),
        DataType::Utf8View => Cow::Borrowed(a.as_string_view().value(i).as_bytes()),
        DataType::Binary => Cow::Borrowed(a.as_binary::<i32>().value(i)),
        DataType::LargeBinary => Cow::Borrowed(a.as_binary::<i64>().value(i)),
        DataType::BinaryView => Cow::Borrowed(a.as_binary_view().value(i)),
        DataType::FixedSizeBinary(_) => Cow::Borrowed(a.as_fixed_size_binary().value(i)),
        DataType::Int8 => int(a.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => int(a.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => int(a.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => int(a.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => int(a.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => int(a.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => int(a.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => int(a.as_primitive::<UInt64Type>().value(i)),
        // The plan accepted only the types above (and dictionaries of them).
        _ => return None,
    })
}

/// Reads and validates the batches of a Parquet file, an Arrow IPC file or stream, or
/// any other Arrow source (Python's Arrow C stream); `what` names it in messages.
pub fn read_batches(
    reader: impl RecordBatchReader,
    what: &str,
    spec: &InputSpec<'_>,
    policy: DuplicatePolicy,
    max_value: u64,
) -> Result<Dataset, Failure> {
    RowStream::from_batches(reader, what, spec)?.into_dataset(spec.values, policy, max_value)
}

fn prefixed(f: Failure, what: &str) -> Failure {
    Failure {
        message: format!("{what}: {}", f.message),
        ..f
    }
}

fn rows_of_batch(
    batch: &RecordBatch,
    plan: &Plan,
    keys: &Keys,
    base: u64,
    what: &str,
) -> Result<Vec<Row>, Failure> {
    let ids: Vec<Cells> = plan.ids.iter().map(|c| Cells::of(batch, c)).collect();
    let values: Vec<Cells> = plan.values.iter().map(|c| Cells::of(batch, c)).collect();
    let segment = plan.segment.as_ref().map(|c| Cells::of(batch, c));
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let row = base + i as u64 + 1;
        let at = |col: &Col, msg: &str| {
            Failure::input(format!("{what}: row {row}, column {:?}: {msg}", col.name)).at_line(row)
        };
        let mut cells = Vec::with_capacity(ids.len());
        for (c, col) in ids.iter().zip(&plan.ids) {
            cells.push(
                c.get(i)
                    .ok_or_else(|| at(col, "missing identifier (null)"))?,
            );
        }
        let refs: Vec<&[u8]> = cells.iter().map(|c| c.as_ref()).collect();
        let id = keys.key(&refs).map_err(|e| {
            if plan.ids.len() == 1 {
                at(&plan.ids[0], &e)
            } else {
                Failure::input(format!("{what}: row {row}: {e}")).at_line(row)
            }
        })?;
        let mut vals = Vec::with_capacity(values.len());
        for (c, col) in values.iter().zip(&plan.values) {
            let v = c.get(i).ok_or_else(|| at(col, "missing value (null)"))?;
            vals.push(String::from_utf8_lossy(&v).into_owned());
        }
        let seg = match (&segment, &plan.segment) {
            (Some(c), Some(col)) => {
                let s = c.get(i).ok_or_else(|| at(col, "missing segment (null)"))?;
                Some(String::from_utf8_lossy(s.trim_ascii()).into_owned())
            }
            _ => None,
        };
        rows.push(Row {
            line: row,
            id,
            values: vals,
            segment: seg,
        });
    }
    Ok(rows)
}
