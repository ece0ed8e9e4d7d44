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
            (self.line, self.after_cr) = count_span(self.line, self.after_cr, &buf[..take]);
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

/// The line and "just after `\r`" state once `span` is passed. Most files have no `\r`:
/// then every `\n` but one right after an earlier span's `\r` is a break, counted
/// with a plain byte comparison the compiler vectorises (byte-by-byte state was a
/// tenth of a psi receiver's CPU at 2^20 rows).
fn count_span(line: u64, after_cr: bool, span: &[u8]) -> (u64, bool) {
    let Some(&last) = span.last() else {
        return (line, after_cr);
    };
    if span.contains(&b'\r') {
        return span.iter().fold((line, after_cr), |(line, after_cr), &b| {
            count(line, after_cr, b)
        });
    }
    let newlines = span.iter().filter(|&&b| b == b'\n').count() as u64;
    let joined = u64::from(after_cr && span[0] == b'\n');
    (line + newlines - joined, last == b'\r')
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

    #[test]
    fn spans_count_as_bytes_do() {
        let samples: [&[u8]; 7] = [
            b"a\nb\n\nc",
            b"\n\n\n",
            b"\nx\r\ny\rz",
            b"\r",
            b"\n",
            b"",
            b"abc",
        ];
        for sample in samples {
            for after_cr in [false, true] {
                let bytewise = sample
                    .iter()
                    .fold((5, after_cr), |(l, a), &b| count(l, a, b));
                assert_eq!(
                    count_span(5, after_cr, sample),
                    bytewise,
                    "{sample:?} after_cr {after_cr}"
                );
                // Split anywhere, the two halves agree too.
                for cut in 0..sample.len() {
                    let (l, a) = count_span(5, after_cr, &sample[..cut]);
                    assert_eq!(
                        count_span(l, a, &sample[cut..]),
                        bytewise,
                        "{sample:?} {cut}"
                    );
                }
            }
        }
    }
}
