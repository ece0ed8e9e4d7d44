//! The physical line on which a CSV record starts, as an editor numbers it. The `csv`
//! crate counts `\n` bytes up to where it began reading a record, which is off by one
//! after a CRLF (the `\n` is consumed with the next record), never advances with
//! CR-only line endings, and so misnames the line a user should look at. This reads the
//! file a second time, alongside the parser, counting `\r\n`, `\r` and `\n` each as one
//! line break.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Follows the parser through the file: ask for records in file order.
pub struct LineCounter {
    reader: BufReader<Box<dyn Read>>,
    /// Bytes consumed so far.
    pos: u64,
    /// Line of the byte at `pos` (1-based).
    line: u64,
    /// The last byte consumed was `\r` (a following `\n` belongs to the same break).
    after_cr: bool,
}

impl LineCounter {
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self::new(Box::new(File::open(path)?)))
    }

    /// Follows the bytes of `reader` (a second reader of the same content, e.g. a
    /// second decompressor of the same file).
    pub fn new(reader: Box<dyn Read>) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            pos: 0,
            line: 1,
            after_cr: false,
        }
    }

    /// Line of the first content byte at or after byte offset `start` (where the
    /// parser began reading a record: it may first skip line breaks and blank lines).
    /// Offsets must not decrease from one call to the next.
    pub fn line_at(&mut self, start: u64) -> io::Result<u64> {
        while self.pos < start {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(self.line);
            }
            let take = buf
                .len()
                .min(usize::try_from(start - self.pos).unwrap_or(usize::MAX));
            let (mut line, mut after_cr) = (self.line, self.after_cr);
            for &b in &buf[..take] {
                (line, after_cr) = count(line, after_cr, b);
            }
            (self.line, self.after_cr) = (line, after_cr);
            self.reader.consume(take);
            self.pos += take as u64;
        }
        // Skip the line breaks before the record's content.
        loop {
            let buf = self.reader.fill_buf()?;
            match buf.first() {
                Some(&b) if b == b'\r' || b == b'\n' => {
                    (self.line, self.after_cr) = count(self.line, self.after_cr, b);
                    self.reader.consume(1);
                    self.pos += 1;
                }
                _ => return Ok(self.line),
            }
        }
    }
}

/// The line and "just after `\r`" state once byte `b` is passed.
fn count(line: u64, after_cr: bool, b: u8) -> (u64, bool) {
    let breaks = b == b'\r' || (b == b'\n' && !after_cr);
    (line + u64::from(breaks), b == b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(content: &[u8]) -> Vec<u64> {
        let path = std::env::temp_dir().join(format!(
            "privset-csv-lines-{}-{}",
            std::process::id(),
            content.len()
        ));
        std::fs::write(&path, content).unwrap();
        let mut counter = LineCounter::open(&path).unwrap();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_path(&path)
            .unwrap();
        let mut record = csv::ByteRecord::new();
        let mut lines = Vec::new();
        while reader.read_byte_record(&mut record).unwrap() {
            let start = record.position().unwrap().byte();
            lines.push(counter.line_at(start).unwrap());
        }
        lines
    }

    #[test]
    fn counts_lines_as_an_editor_does() {
        assert_eq!(lines_of(b"h\na\nb\n"), [1, 2, 3]);
        assert_eq!(lines_of(b"h\r\na\r\nb\r\n"), [1, 2, 3]);
        assert_eq!(lines_of(b"h\ra\rb\r"), [1, 2, 3]);
        assert_eq!(lines_of(b"h\n\"a\nb\"\nc\n"), [1, 2, 4]);
        assert_eq!(lines_of(b"h\r\n\r\n\r\na\r\n"), [1, 4]);
    }
}
