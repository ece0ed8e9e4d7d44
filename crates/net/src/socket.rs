//! Opening the TCP connection under both socket transports: the connecting side retries
//! until a deadline (the peer may not be listening yet, both parties are started by hand
//! or by separate schedulers), the listening side accepts exactly one connection.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::error::{TransportError, secs};

/// Timeouts and naming for [`crate::tls::connect`] / [`crate::tls::accept`] and their
/// plaintext counterparts.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// How long to keep retrying a connection (connect side) or to wait for one
    /// (accept side).
    pub connect_timeout: Duration,
    /// How long the TLS handshake (or plaintext greeting) may take once connected, in
    /// total: a peer sending a byte at a time does not extend it.
    pub handshake_timeout: Duration,
    /// Longest wait for any one message to arrive in full (or to be sent), so a
    /// vanished or trickling peer cannot hang us forever.
    pub io_timeout: Duration,
    /// Name to verify the server certificate against, instead of the host part of the
    /// address (useful when connecting by IP to a certificate issued for a DNS name).
    pub server_name: Option<String>,
    /// Stops connecting, accepting, and any blocked read or write on the connection
    /// once cancelled from another thread (never, with the default token).
    pub cancel: Cancel,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(30),
            io_timeout: Duration::from_secs(600),
            server_name: None,
            cancel: Cancel::default(),
        }
    }
}

/// Pause between connection attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Longest single connection attempt: a peer that drops our SYNs must not keep us from
/// noticing a cancel or the deadline for longer; the loop simply tries again.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to `addr` ("host:port"), retrying until `opts.connect_timeout`.
pub(crate) fn connect_tcp(addr: &str, opts: &ConnectOptions) -> Result<TcpStream, TransportError> {
    let deadline = Instant::now() + opts.connect_timeout;
    let mut last_err: Option<String> = None;
    loop {
        opts.cancel.check()?;
        let now = Instant::now();
        if now >= deadline {
            let last = last_err
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default();
            return Err(TransportError::Timeout {
                what: format!("connecting to {addr}{last}"),
                seconds: secs(opts.connect_timeout),
            });
        }
        let remaining = deadline - now;
        match resolve(addr) {
            Ok(addrs) => {
                for sa in addrs {
                    let attempt = remaining.min(ATTEMPT_TIMEOUT).max(Duration::from_millis(1));
                    match TcpStream::connect_timeout(&sa, attempt) {
                        Ok(stream) => {
                            prepare(&stream, opts).map_err(|e| {
                                TransportError::io(format!("configuring socket to {addr}"), e)
                            })?;
                            return Ok(stream);
                        }
                        Err(e) => last_err = Some(e.to_string()),
                    }
                }
            }
            // Name resolution can fail transiently too (DNS not up yet); keep trying.
            Err(e) => last_err = Some(e),
        }
        thread::sleep(RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now())));
    }
}

fn resolve(addr: &str) -> Result<Vec<SocketAddr>, String> {
    match addr.to_socket_addrs() {
        Ok(it) => {
            let v: Vec<_> = it.collect();
            if v.is_empty() {
                Err(format!("{addr} resolves to no address"))
            } else {
                Ok(v)
            }
        }
        Err(e) => Err(format!("cannot resolve {addr}: {e}")),
    }
}

/// Binds `listen` ("host:port") and accepts one connection before `opts.connect_timeout`.
pub(crate) fn accept_tcp(
    listen: &str,
    opts: &ConnectOptions,
) -> Result<(TcpStream, SocketAddr), TransportError> {
    let listener = bind(listen)?;
    accept_on(&listener, listen, opts)
}

/// Binds a listener; the error names the address.
pub(crate) fn bind(listen: &str) -> Result<TcpListener, TransportError> {
    TcpListener::bind(listen).map_err(|e| TransportError::io(format!("listening on {listen}"), e))
}

/// Accepts one connection on an already bound listener before `opts.connect_timeout`.
pub(crate) fn accept_on(
    listener: &TcpListener,
    listen: &str,
    opts: &ConnectOptions,
) -> Result<(TcpStream, SocketAddr), TransportError> {
    // Non-blocking accept polled against a deadline: std has no accept timeout.
    listener
        .set_nonblocking(true)
        .map_err(|e| TransportError::io(format!("configuring listener on {listen}"), e))?;
    let deadline = Instant::now() + opts.connect_timeout;
    loop {
        opts.cancel.check()?;
        match listener.accept() {
            Ok((stream, peer)) => {
                stream
                    .set_nonblocking(false)
                    .and_then(|()| prepare(&stream, opts))
                    .map_err(|e| {
                        TransportError::io(format!("configuring connection from {peer}"), e)
                    })?;
                return Ok((stream, peer));
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                if Instant::now() >= deadline {
                    return Err(TransportError::Timeout {
                        what: format!("waiting for the peer to connect to {listen}"),
                        seconds: secs(opts.connect_timeout),
                    });
                }
                thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(TransportError::io(
                    format!("accepting a connection on {listen}"),
                    e,
                ));
            }
        }
    }
}

/// Socket settings shared by both sides: no Nagle delay (messages are written whole),
/// handshake timeouts until the caller switches to the I/O timeout, and registration
/// with the cancel token so a cancel wakes any blocked read or write.
pub(crate) fn prepare(stream: &TcpStream, opts: &ConnectOptions) -> io::Result<()> {
    stream.set_nodelay(true)?;
    opts.cancel.watch(stream)?;
    set_timeouts(stream, opts.handshake_timeout)
}

/// Makes a connection the caller accepted itself (e.g. a listener handing each
/// connection to its own thread) ready for a handshake: blocking, no Nagle delay,
/// handshake timeouts, registered with `opts.cancel`.
pub(crate) fn prepare_accepted(
    stream: &TcpStream,
    peer: SocketAddr,
    opts: &ConnectOptions,
) -> Result<(), TransportError> {
    stream
        .set_nonblocking(false)
        .and_then(|()| prepare(stream, opts))
        .map_err(|e| TransportError::io(format!("configuring connection from {peer}"), e))
}

/// Sets read and write timeouts (zero would mean "none" to std, so clamp to 1 ms).
pub(crate) fn set_timeouts(stream: &TcpStream, t: Duration) -> io::Result<()> {
    let t = Some(t.max(Duration::from_millis(1)));
    stream.set_read_timeout(t)?;
    stream.set_write_timeout(t)
}

/// Closes after a failed handshake without losing our alert: in TLS 1.3 the client
/// considers the handshake done before the server has checked its certificate, and may
/// already be sending. Closing a socket with unread data makes the kernel send a reset,
/// which can destroy the alert before the client reads it. So: stop writing, drain what
/// the peer sends for a moment, then close.
pub(crate) fn linger_close(stream: &TcpStream) {
    use std::io::Read;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut buf = [0u8; 4096];
    let mut s = stream;
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// The host part of "host:port" / "[v6]:port", for verifying the server certificate.
pub fn host_of(addr: &str) -> &str {
    let host = match addr.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => addr,
    };
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_part() {
        assert_eq!(host_of("127.0.0.1:9000"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9000"), "::1");
        assert_eq!(host_of("example.org:443"), "example.org");
        assert_eq!(host_of("example.org"), "example.org");
    }
}
