//! Record files under the state directory: a party's own rows spilled to disk so that
//! a bucketed run never holds its whole set. Written and read only by the party that
//! owns them, but still read defensively: a truncated or corrupted file (a crash, a full
//! disk) is a clear error, never a panic or a huge allocation.
//!
//! ```text
//! record: line u64, id_len u32, id [id_len], values u64 x columns   (little-endian)
//! ```

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use crate::fail::Failure;

/// Longest identifier a record may hold (the inputs' own cells are far shorter).
pub const MAX_ID_LEN: usize = 1 << 20;

/// One spilled row: where it came from, its identifier and its parsed values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Line (CSV) or row (columnar) in the user's input, for messages.
    pub line: u64,
    pub id: Vec<u8>,
    pub values: Vec<u64>,
}

fn io_failure(path: &Path, e: &dyn std::fmt::Display) -> Failure {
    Failure::other(format!("bucket state {}: {e}", path.display()))
}

/// Appends records to one file.
pub struct SpillWriter {
    path: PathBuf,
    out: BufWriter<File>,
    pub records: u64,
}

impl SpillWriter {
    /// Creates (truncates) `path`, buffering `buffer` bytes.
    pub fn create(path: &Path, buffer: usize) -> Result<Self, Failure> {
        let file = File::create(path).map_err(|e| io_failure(path, &e))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(buffer, file),
            records: 0,
        })
    }

    pub fn write(&mut self, line: u64, id: &[u8], values: &[u64]) -> Result<(), Failure> {
        if id.len() > MAX_ID_LEN {
            return Err(Failure::input(format!(
                "an identifier of {} bytes is longer than the {MAX_ID_LEN} bytes a bucketed run accepts",
                id.len()
            )));
        }
        let mut head = [0u8; 12];
        head[..8].copy_from_slice(&line.to_le_bytes());
        head[8..].copy_from_slice(&(id.len() as u32).to_le_bytes());
        let w = &mut self.out;
        let written = w
            .write_all(&head)
            .and_then(|_| w.write_all(id))
            .and_then(|_| {
                values
                    .iter()
                    .try_for_each(|v| w.write_all(&v.to_le_bytes()))
            });
        written.map_err(|e| io_failure(&self.path, &e))?;
        self.records += 1;
        Ok(())
    }

    /// Flushes the buffer and syncs the file to disk.
    pub fn finish(self) -> Result<u64, Failure> {
        let path = self.path;
        let file = self
            .out
            .into_inner()
            .map_err(|e| io_failure(&path, &e.error()))?;
        file.sync_all().map_err(|e| io_failure(&path, &e))?;
        Ok(self.records)
    }
}

/// Reads the records of `path`, each with `columns` values, one at a time.
pub struct SpillReader {
    path: PathBuf,
    input: BufReader<File>,
    columns: usize,
}

impl SpillReader {
    pub fn open(path: &Path, columns: usize) -> Result<Self, Failure> {
        let file = File::open(path).map_err(|e| io_failure(path, &e))?;
        Ok(Self {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 20, file),
            columns,
        })
    }

    fn next_record(&mut self) -> Result<Option<Record>, Failure> {
        let mut head = [0u8; 12];
        // A clean end of file falls between records.
        match self.input.read(&mut head[..1]) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(io_failure(&self.path, &e)),
        }
        let truncated = |e: std::io::Error| {
            if e.kind() == ErrorKind::UnexpectedEof {
                io_failure(
                    &self.path,
                    &"truncated (remove the state directory to start over)",
                )
            } else {
                io_failure(&self.path, &e)
            }
        };
        self.input.read_exact(&mut head[1..]).map_err(truncated)?;
        let line = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(head[8..].try_into().expect("4 bytes")) as usize;
        if len > MAX_ID_LEN {
            return Err(io_failure(
                &self.path,
                &format!(
                    "corrupt: an identifier of {len} bytes (remove the state directory to start over)"
                ),
            ));
        }
        let mut id = vec![0u8; len];
        self.input.read_exact(&mut id).map_err(truncated)?;
        let mut values = Vec::with_capacity(self.columns);
        for _ in 0..self.columns {
            let mut v = [0u8; 8];
            self.input.read_exact(&mut v).map_err(truncated)?;
            values.push(u64::from_le_bytes(v));
        }
        Ok(Some(Record { line, id, values }))
    }
}

impl Iterator for SpillReader {
    type Item = Result<Record, Failure>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_truncated_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("privset-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.bin");
        let mut w = SpillWriter::create(&path, 1024).unwrap();
        w.write(2, b"alice", &[7, 8]).unwrap();
        w.write(3, b"", &[0, u64::MAX]).unwrap();
        assert_eq!(w.finish().unwrap(), 2);
        let back: Vec<Record> = SpillReader::open(&path, 2)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back[0].id, b"alice");
        assert_eq!(back[1].values, vec![0, u64::MAX]);
        let bytes = std::fs::read(&path).unwrap();
        for cut in 1..bytes.len() {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let read: Result<Vec<Record>, _> = SpillReader::open(&path, 2).unwrap().collect();
            if cut != 12 + 5 + 16 {
                assert!(read.is_err(), "cut at {cut}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
