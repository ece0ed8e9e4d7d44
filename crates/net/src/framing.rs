//! Message framing on a byte stream: a u32 big-endian length, then the message.
//!
//! The length is checked against the receiver's limit before a single byte of the body
//! is read, and the body buffer grows only as bytes actually arrive, so a peer that
//! announces 4 GiB costs us nothing.

use std::io::{self, Read, Write};
use std::time::Duration;

use crate::error::{TransportError, secs};

/// Largest message the 4-byte length prefix can describe.
pub(crate) const MAX_FRAME: usize = u32::MAX as usize;

/// Converts an I/O error from a stream into a [`TransportError`]; transports wrap this
/// to recognise their own errors first (TLS alerts inside `io::Error`s).
pub(crate) fn map_stream_error(err: io::Error, what: &str, io_timeout: Duration) -> TransportError {
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => TransportError::Timeout {
            what: what.to_string(),
            seconds: secs(io_timeout),
        },
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => TransportError::PeerClosed,
        _ => TransportError::io(what, err),
    }
}

/// Messages up to this size are copied behind their prefix and leave in one write (one
/// TLS record, one segment); larger ones are written in place rather than copied, since
/// a second copy of a large message would double peak memory.
const COALESCE_LIMIT: usize = 64 * 1024;

/// Writes one length-prefixed message and flushes it.
pub(crate) fn write_frame<S: Write>(stream: &mut S, message: &[u8]) -> io::Result<()> {
    let len =
        u32::try_from(message.len()).map_err(|_| io::Error::other("message longer than 4 GiB"))?;
    if message.len() <= COALESCE_LIMIT {
        let mut buf = Vec::with_capacity(4 + message.len());
        buf.extend_from_slice(&len.to_be_bytes());
        buf.extend_from_slice(message);
        stream.write_all(&buf)?;
    } else {
        stream.write_all(&len.to_be_bytes())?;
        stream.write_all(message)?;
    }
    stream.flush()
}

/// Outcome of reading the length prefix.
pub(crate) enum Prefix {
    /// A length within the limit.
    Len(usize),
    /// The peer closed cleanly before a new message started.
    Closed,
    /// The announced length exceeds the limit.
    TooLarge(u64),
}

/// Reads the 4-byte length prefix and checks it against `max_len`.
pub(crate) fn read_prefix<S: Read>(stream: &mut S, max_len: usize) -> io::Result<Prefix> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Ok(Prefix::Closed),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_be_bytes(prefix) as u64;
    if len > max_len as u64 {
        return Ok(Prefix::TooLarge(len));
    }
    Ok(Prefix::Len(len as usize))
}

/// Reads a body of exactly `len` bytes, growing the buffer only as data arrives.
pub(crate) fn read_body<S: Read>(stream: &mut S, len: usize) -> io::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(len.min(1 << 16));
    stream.take(len as u64).read_to_end(&mut body)?;
    if body.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(body)
}
