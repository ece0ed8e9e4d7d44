//! A byte-counting wrapper around a TCP stream: the socket transports report what
//! actually crossed the wire (TLS records, length prefixes, handshakes), because that is
//! what a cloud bill charges for (Ion et al. 2020, Table 1).
//!
//! It also enforces a total deadline on a phase of I/O (a handshake, one message): a
//! socket timeout alone restarts with every byte, so a peer sending one byte a second
//! could hold a wait open forever. Before each read or write the socket timeout is set
//! to the time left, and once none is left the operation fails as timed out.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Counts every byte read from and written to `inner`.
#[derive(Debug)]
pub(crate) struct CountingStream {
    pub(crate) inner: TcpStream,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// No read or write may block past this instant: the deadline of the current
    /// message or handshake ([`CountingStream::arm`]).
    deadline: Option<Instant>,
    /// Nor past this one: the deadline of a phase spanning several messages
    /// ([`CountingStream::cap`]).
    cap: Option<Instant>,
}

impl CountingStream {
    pub(crate) fn new(inner: TcpStream) -> Self {
        Self {
            inner,
            sent: 0,
            received: 0,
            deadline: None,
            cap: None,
        }
    }

    /// Starts a deadline `timeout` from now for what follows (one message, one
    /// handshake): every read and write until the next `arm` must end before it.
    pub(crate) fn arm(&mut self, timeout: Duration) {
        self.deadline = Some(Instant::now() + timeout);
    }

    /// Bounds everything until the cap is lifted (`None`) by `cap` as well.
    pub(crate) fn cap(&mut self, cap: Option<Instant>) {
        self.cap = cap;
    }

    /// Time left before the deadline, or a timed-out error once there is none.
    fn left(&self) -> io::Result<Option<Duration>> {
        let deadline = match (self.deadline, self.cap) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        };
        match deadline {
            None => Ok(None),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
                } else {
                    Ok(Some(left.max(Duration::from_millis(1))))
                }
            }
        }
    }
}

impl Read for CountingStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(left) = self.left()? {
            self.inner.set_read_timeout(Some(left))?;
        }
        let n = self.inner.read(buf)?;
        self.received += n as u64;
        Ok(n)
    }
}

impl Write for CountingStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(left) = self.left()? {
            self.inner.set_write_timeout(Some(left))?;
        }
        let n = self.inner.write(buf)?;
        self.sent += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
