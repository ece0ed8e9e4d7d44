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
    let cannot =
        |e: &dyn std::fmt::Display| Failure::other(format!("cannot write {}: {e}", path.display()));
    if is_parquet(path) {
        let utf8: Vec<bool> = (0..header.len())
            .map(|c| records.iter().all(|r| std::str::from_utf8(&r[c]).is_ok()))
            .collect();
        let schema = Arc::new(Schema::new(
            header
                .iter()
                .zip(&utf8)
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
        let mut w =
            ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| cannot(&e))?;
        for chunk in records.chunks(WRITE_BATCH) {
            let arrays: Vec<ArrayRef> = utf8
                .iter()
                .enumerate()
                .map(|(c, &u)| -> ArrayRef {
                    if u {
                        Arc::new(StringArray::from_iter_values(
                            chunk
                                .iter()
                                .map(|r| std::str::from_utf8(&r[c]).expect("checked UTF-8")),
                        ))
                    } else {
                        Arc::new(BinaryArray::from_iter_values(chunk.iter().map(|r| &r[c])))
                    }
                })
                .collect();
            let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| cannot(&e))?;
            w.write(&batch).map_err(|e| cannot(&e))?;
        }
        w.close().map_err(|e| cannot(&e))?;
        return Ok(());
    }
    let mut w = csv::Writer::from_path(path).map_err(|e| cannot(&e))?;
    w.write_record(header).map_err(|e| cannot(&e))?;
    for r in records {
        w.write_record(r).map_err(|e| cannot(&e))?;
    }
    w.flush().map_err(|e| cannot(&e))?;
    Ok(())
}
