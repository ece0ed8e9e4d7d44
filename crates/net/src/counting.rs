//! A byte-counting wrapper around a stream: the socket transports report what actually
//! crossed the wire (TLS records, length prefixes, handshakes), because that is what a
//! cloud bill charges for (Ion et al. 2020, Table 1).

use std::io::{self, Read, Write};

/// Counts every byte read from and written to `inner`.
#[derive(Debug)]
pub(crate) struct CountingStream<S> {
    pub(crate) inner: S,
    pub(crate) sent: u64,
    pub(crate) received: u64,
}

impl<S> CountingStream<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            sent: 0,
            received: 0,
        }
    }
}

impl<S: Read> Read for CountingStream<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.received += n as u64;
        Ok(n)
    }
}

impl<S: Write> Write for CountingStream<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sent += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
