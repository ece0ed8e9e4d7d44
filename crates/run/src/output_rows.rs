//! Writing output rows (`--output-rows`): Parquet when the file name ends in
//! `.parquet`, CSV otherwise. Cells are bytes, written exactly (never re-encoded): in
//! CSV as fields quoted where needed, in Parquet as a UTF-8 string column when every
//! cell of the column is UTF-8, else as a binary column.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::fail::Failure;

/// Rows per Parquet record batch written.
const WRITE_BATCH: usize = 64 * 1024;

/// True when `path` names a Parquet output.
pub fn is_parquet(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Writes `header` and `records` (each as many cells as the header) to `path`.
pub fn write_rows(path: &Path, header: &[String], records: &[Vec<Vec<u8>>]) -> Result<(), Failure> {
    let utf8: Vec<bool> = (0..header.len())
        .map(|c| records.iter().all(|r| std::str::from_utf8(&r[c]).is_ok()))
        .collect();
    let mut w = RowWriter::create(path, header, &utf8)?;
    for r in records {
        w.write(r)?;
    }
    w.finish()
}

/// Rows written one at a time, for tables too large to hold (a bucketed run's merged
/// output). Parquet columns are UTF-8 or binary as `utf8` says, decided before the
/// first row; CSV needs no such choice.
pub struct RowWriter {
    path: std::path::PathBuf,
    sink: Sink,
}

enum Sink {
    Csv(csv::Writer<File>),
    Parquet {
        writer: ArrowWriter<File>,
        schema: Arc<Schema>,
        utf8: Vec<bool>,
        /// Rows not yet written as a batch.
        pending: Vec<Vec<Vec<u8>>>,
    },
}

impl RowWriter {
    /// Creates `path` (Parquet or CSV by its name) with `header`; `utf8[c]` says whether
    /// every cell of column `c` is UTF-8 (Parquet's column type).
    pub fn create(path: &Path, header: &[String], utf8: &[bool]) -> Result<Self, Failure> {
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::other(format!("cannot write {}: {e}", path.display()))
        };
        let sink = if is_parquet(path) {
            let schema = Arc::new(Schema::new(
                header
                    .iter()
                    .zip(utf8)
                    .map(|(name, &u)| {
                        Field::new(
                            name,
                            if u { DataType::Utf8 } else { DataType::Binary },
                            false,
                        )
                    })
                    .collect::<Vec<_>>(),
            ));
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build();
            let file = File::create(path).map_err(|e| cannot(&e))?;
            let writer =
                ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| cannot(&e))?;
            Sink::Parquet {
                writer,
                schema,
                utf8: utf8.to_vec(),
                pending: Vec::new(),
            }
        } else {
            let mut w = csv::Writer::from_path(path).map_err(|e| cannot(&e))?;
            w.write_record(header).map_err(|e| cannot(&e))?;
            Sink::Csv(w)
        };
        Ok(Self {
            path: path.to_path_buf(),
            sink,
        })
    }

    fn cannot(&self, e: &dyn std::fmt::Display) -> Failure {
        Failure::other(format!("cannot write {}: {e}", self.path.display()))
    }

    /// Writes one row (as many cells as the header).
    pub fn write(&mut self, record: &[Vec<u8>]) -> Result<(), Failure> {
        match &mut self.sink {
            Sink::Csv(w) => {
                let r = w.write_record(record);
                r.map_err(|e| self.cannot(&e))
            }
            Sink::Parquet { pending, .. } => {
                pending.push(record.to_vec());
                if pending.len() >= WRITE_BATCH {
                    self.flush_batch()?;
                }
                Ok(())
            }
        }
    }

    fn flush_batch(&mut self) -> Result<(), Failure> {
        let Sink::Parquet {
            writer,
            schema,
            utf8,
            pending,
        } = &mut self.sink
        else {
            return Ok(());
        };
        if pending.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(pending);
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(utf8.len());
        for (c, &u) in utf8.iter().enumerate() {
            arrays.push(if u {
                let cells: Result<Vec<&str>, _> =
                    chunk.iter().map(|r| std::str::from_utf8(&r[c])).collect();
                match cells {
                    Ok(cells) => Arc::new(StringArray::from_iter_values(cells)),
                    Err(e) => {
                        let path = self.path.display();
                        return Err(Failure::other(format!(
                            "cannot write {path}: column {c} was declared UTF-8: {e}"
                        )));
                    }
                }
            } else {
                Arc::new(BinaryArray::from_iter_values(chunk.iter().map(|r| &r[c])))
            });
        }
        let batch = RecordBatch::try_new(schema.clone(), arrays);
        let written = batch.and_then(|b| writer.write(&b).map_err(Into::into));
        written.map_err(|e| Failure::other(format!("cannot write {}: {e}", self.path.display())))
    }

    /// Flushes and closes the file.
    pub fn finish(mut self) -> Result<(), Failure> {
        self.flush_batch()?;
        let path = self.path.clone();
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::other(format!("cannot write {}: {e}", path.display()))
        };
        match self.sink {
            Sink::Csv(mut w) => w.flush().map_err(|e| cannot(&e)),
            Sink::Parquet { writer, .. } => writer.close().map(|_| ()).map_err(|e| cannot(&e)),
        }
    }
}
