//! Plaintext TCP, used only when the user passes `--insecure-no-tls`: anyone on the path
//! can read and alter every message. Same framing as [`crate::tls`].
//!
//! Both ends first exchange an 8-byte greeting ([`PLAINTEXT_PREAMBLE`]). That costs 8
//! bytes and buys a clear error instead of a hang when only one side disabled TLS: a
//! TLS server sees bytes that are not a TLS record and fails at once, a plaintext side
//! sees a TLS record instead of the greeting and says so.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use crate::counting::CountingStream;
use crate::error::TransportError;
use crate::framing::{self, Prefix};
use crate::socket::{self, ConnectOptions};
use crate::{ByteCounters, Transport};

/// What each plaintext endpoint sends first.
pub const PLAINTEXT_PREAMBLE: &[u8; 8] = b"PSETPLN1";

/// Error text for a plaintext side that met a TLS peer.
const PEER_SPEAKS_TLS: &str = "the peer speaks TLS but this side was started with --insecure-no-tls; \
     use TLS on both sides (recommended) or --insecure-no-tls on both";

/// True if the bytes start a TLS record (handshake 0x16 or alert 0x15, version 3.x).
pub(crate) fn looks_like_tls(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && matches!(bytes[0], 0x14..=0x17) && bytes[1] == 0x03
}

/// A plaintext, length-framed TCP connection.
#[derive(Debug)]
pub struct PlainTcpTransport {
    stream: CountingStream,
    opts: ConnectOptions,
    peer: String,
}

impl PlainTcpTransport {
    /// Connects to `addr`, retrying until `opts.connect_timeout`, and exchanges greetings.
    pub fn connect(addr: &str, opts: &ConnectOptions) -> Result<Self, TransportError> {
        let stream = socket::connect_tcp(addr, opts)?;
        Self::start(stream, addr.to_string(), opts)
    }

    /// Listens on `listen`, accepts one connection (until `opts.connect_timeout`) and
    /// exchanges greetings.
    pub fn accept(listen: &str, opts: &ConnectOptions) -> Result<Self, TransportError> {
        let (stream, peer) = socket::accept_tcp(listen, opts)?;
        Self::start(stream, peer.to_string(), opts)
    }

    /// Like [`PlainTcpTransport::accept`] on a listener the caller bound (e.g. to port 0).
    pub fn accept_on(
        listener: &TcpListener,
        opts: &ConnectOptions,
    ) -> Result<Self, TransportError> {
        let name = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "listener".into());
        let (stream, peer) = socket::accept_on(listener, &name, opts)?;
        Self::start(stream, peer.to_string(), opts)
    }

    /// Greets on a connection the caller accepted from `peer` itself (a listener that
    /// hands each connection to its own thread).
    pub fn accept_stream(
        stream: TcpStream,
        peer: std::net::SocketAddr,
        opts: &ConnectOptions,
    ) -> Result<Self, TransportError> {
        socket::prepare_accepted(&stream, peer, opts)?;
        Self::start(stream, peer.to_string(), opts)
    }

    /// The peer's address, for messages.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The TCP socket underneath, for timeouts and cancel registration.
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.stream.inner
    }

    /// Bounds every message until lifted (`None`) by `cap` too (a set-up phase).
    pub(crate) fn cap(&mut self, cap: Option<std::time::Instant>) {
        self.stream.cap(cap);
    }

    /// Greets the peer on a connection already made or accepted.
    pub(crate) fn start(
        stream: TcpStream,
        peer: String,
        opts: &ConnectOptions,
    ) -> Result<Self, TransportError> {
        let mut t = Self {
            stream: CountingStream::new(stream),
            opts: opts.clone(),
            peer,
        };
        t.stream.arm(opts.handshake_timeout);
        t.greet()?;
        socket::set_timeouts(&t.stream.inner, opts.io_timeout)
            .map_err(|e| TransportError::io(format!("configuring connection to {}", t.peer), e))?;
        Ok(t)
    }

    fn greet(&mut self) -> Result<(), TransportError> {
        let what = format!("greeting plaintext peer {}", self.peer);
        let t = self.opts.handshake_timeout;
        self.stream
            .write_all(PLAINTEXT_PREAMBLE)
            .and_then(|()| self.stream.flush())
            .map_err(|e| framing::map_stream_error(e, &what, t))?;
        // Read up to 8 bytes; a TLS peer may send fewer (an alert) and then close.
        let mut got = [0u8; 8];
        let mut n = 0;
        while n < got.len() {
            match self.stream.read(&mut got[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if n > 0 && is_closed(&e) => break,
                Err(e) => return Err(framing::map_stream_error(e, &what, t)),
            }
            if looks_like_tls(&got[..n]) {
                return Err(TransportError::Tls(PEER_SPEAKS_TLS.into()));
            }
        }
        if &got[..n] == PLAINTEXT_PREAMBLE {
            Ok(())
        } else if n == 0 {
            Err(TransportError::PeerClosed)
        } else {
            Err(TransportError::Config(format!(
                "{} is not a privset plaintext endpoint (it sent {:02x?} instead of the greeting)",
                self.peer,
                &got[..n]
            )))
        }
    }
}

fn is_closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionAborted
    )
}

impl Transport for PlainTcpTransport {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        if message.len() > framing::MAX_FRAME {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max: framing::MAX_FRAME as u64,
            });
        }
        self.stream.arm(self.opts.io_timeout);
        framing::write_frame(&mut self.stream, message).map_err(|e| {
            framing::map_stream_error(
                e,
                &format!("sending to {}", self.peer),
                self.opts.io_timeout,
            )
        })
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let what = format!("waiting for a message from {}", self.peer);
        let t = self.opts.io_timeout;
        let map = |e| framing::map_stream_error(e, &what, t);
        self.stream.arm(t);
        // A TLS record read as a length is >= 335 MB; only call it TLS when that exceeds
        // the limit anyway, so a legitimate large message is never misread.
        match framing::read_prefix(&mut self.stream, max_len).map_err(map)? {
            Prefix::Closed => Err(TransportError::PeerClosed),
            Prefix::TooLarge(len) if looks_like_tls(&(len as u32).to_be_bytes()) => {
                Err(TransportError::Tls(PEER_SPEAKS_TLS.into()))
            }
            Prefix::TooLarge(len) => Err(TransportError::TooLarge {
                len,
                max: max_len as u64,
            }),
            Prefix::Len(len) => framing::read_body(&mut self.stream, len).map_err(map),
        }
    }

    fn counters(&self) -> ByteCounters {
        ByteCounters {
            sent: self.stream.sent,
            received: self.stream.received,
        }
    }
}
