//! TCP with mutual TLS 1.3: the default link between two organisations.
//!
//! Both sides hold a certificate issued by a CA both trust (see [`crate::certs`] for a
//! throwaway one). The server requires and verifies the client's certificate; the
//! client verifies the server's against the host part of the address it dialled. Only
//! TLS 1.3 and only the `ring` provider are enabled, chosen explicitly rather than via a
//! process-wide default so that nothing else in the process can change them.
//!
//! Framing inside TLS is the same u32 length prefix as [`crate::tcp`]; the byte counters
//! count what crossed the socket (handshake, record overhead, prefixes).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::{
    ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection, StreamOwned,
};

use crate::client_check::{self, CheckedClientVerifier, ClientCheck};
use crate::counting::CountingStream;
use crate::error::TransportError;
use crate::framing::{self, Prefix};
use crate::socket::{self, ConnectOptions};
use crate::{ByteCounters, Transport};

/// PEM files of one party: the CA both sides trust, this party's certificate (chain)
/// and its private key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    /// The files `certs::generate` writes for `name` in `dir`.
    pub fn in_dir(dir: &Path, name: &str) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
        }
    }
}

/// The first DNS name `files.cert` is issued for: what a party's own processes verify
/// when they connect to a server presenting the same certificate (a bucket task to its
/// driver's rendezvous), without being told the name.
pub fn certificate_name(files: &TlsFiles) -> Result<String, TransportError> {
    let certs = load_certs(&files.cert)?;
    let bad = |e: &dyn fmt::Display| {
        TransportError::Config(format!("certificate file {}: {e}", files.cert.display()))
    };
    let cert = webpki::EndEntityCert::try_from(&certs[0]).map_err(|e| bad(&e))?;
    let name = cert.valid_dns_names().next().map(str::to_owned);
    name.ok_or_else(|| bad(&"the certificate names no DNS name"))
}

type Sock = CountingStream;

/// Either end of a TLS connection; `StreamOwned` is generic over the connection type.
enum Stream {
    Client(Box<StreamOwned<ClientConnection, Sock>>),
    Server(Box<StreamOwned<ServerConnection, Sock>>),
}

impl Stream {
    fn sock(&self) -> &Sock {
        match self {
            Stream::Client(s) => &s.sock,
            Stream::Server(s) => &s.sock,
        }
    }
    fn sock_mut(&mut self) -> &mut Sock {
        match self {
            Stream::Client(s) => &mut s.sock,
            Stream::Server(s) => &mut s.sock,
        }
    }
    /// Sends close_notify (best effort). Only writes: `complete_io` would also wait to
    /// read, which blocks until the peer speaks or the I/O timeout fires.
    fn close(&mut self, timeout: Duration) {
        self.sock_mut().arm(timeout);
        fn flush_tls<C, D>(s: &mut StreamOwned<C, Sock>)
        where
            C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>,
            D: rustls::SideData,
        {
            s.conn.send_close_notify();
            while s.conn.wants_write() {
                match s.conn.write_tls(&mut s.sock) {
                    Ok(n) if n > 0 => {}
                    _ => break,
                }
            }
            let _ = s.sock.flush();
        }
        match self {
            Stream::Client(s) => flush_tls(s),
            Stream::Server(s) => flush_tls(s),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Client(s) => s.read(buf),
            Stream::Server(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Client(s) => s.write(buf),
            Stream::Server(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Client(s) => s.flush(),
            Stream::Server(s) => s.flush(),
        }
    }
}

/// A framed, mutually authenticated TLS 1.3 connection.
pub struct TlsTransport {
    stream: Stream,
    io_timeout: Duration,
    peer: String,
    ca: PathBuf,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport")
            .field("peer", &self.peer)
            .field("counters", &self.counters())
            .finish()
    }
}

impl TlsTransport {
    /// The peer's address, for messages.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The end-entity certificate the peer presented (DER): what a run that expects one
    /// identity compares with the certificate it was told to expect.
    pub fn peer_certificate(&self) -> Option<&[u8]> {
        let certs = match &self.stream {
            Stream::Client(s) => s.conn.peer_certificates(),
            Stream::Server(s) => s.conn.peer_certificates(),
        };
        certs.and_then(|c| c.first()).map(|c| c.as_ref())
    }

    /// Ends the connection cleanly (TLS close_notify) and returns the final counters,
    /// which include the close_notify record. Dropping does the same, without counters.
    pub fn close(mut self) -> ByteCounters {
        self.stream.close(self.io_timeout);
        self.counters()
    }

    /// The TCP socket underneath, for timeouts and cancel registration.
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.stream.sock().inner
    }

    /// Bounds every message until lifted (`None`) by `cap` too (a set-up phase).
    pub(crate) fn cap(&mut self, cap: Option<std::time::Instant>) {
        self.stream.sock_mut().cap(cap);
    }

    fn map_err(&self, err: io::Error, what: &str) -> TransportError {
        map_tls_error(err, what, self.io_timeout, &self.ca, None)
    }
}

impl Drop for TlsTransport {
    /// close_notify, then the lingering close of a failed handshake: a party that stops
    /// on an error has just sent its alert, and closing with the peer's unread messages
    /// in our buffer would make the kernel reset the connection, which can destroy the
    /// alert before the peer reads it (in a session of three or more, the others would
    /// then blame us for closing instead of naming who dropped out).
    fn drop(&mut self) {
        self.stream.close(self.io_timeout);
        socket::linger_close(self.tcp());
    }
}

impl Transport for TlsTransport {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        if message.len() > framing::MAX_FRAME {
            return Err(TransportError::TooLarge {
                len: message.len() as u64,
                max: framing::MAX_FRAME as u64,
            });
        }
        self.stream.sock_mut().arm(self.io_timeout);
        framing::write_frame(&mut self.stream, message)
            .map_err(|e| self.map_err(e, &format!("sending to {}", self.peer)))
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let what = format!("waiting for a message from {}", self.peer);
        self.stream.sock_mut().arm(self.io_timeout);
        let prefix = framing::read_prefix(&mut self.stream, max_len);
        match prefix.map_err(|e| self.map_err(e, &what))? {
            Prefix::Closed => Err(TransportError::PeerClosed),
            Prefix::TooLarge(len) => Err(TransportError::TooLarge {
                len,
                max: max_len as u64,
            }),
            Prefix::Len(len) => {
                framing::read_body(&mut self.stream, len).map_err(|e| self.map_err(e, &what))
            }
        }
    }

    fn counters(&self) -> ByteCounters {
        let s = self.stream.sock();
        ByteCounters {
            sent: s.sent,
            received: s.received,
        }
    }
}

/// Connects to `addr` ("host:port"), retrying until `opts.connect_timeout`, and completes
/// a mutually authenticated TLS 1.3 handshake. The server certificate must be issued by
/// `files.ca` and valid for `opts.server_name`, or else the host part of `addr`.
pub fn connect(
    addr: &str,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    let config = client_config(files)?;
    let name_str = opts
        .server_name
        .clone()
        .unwrap_or_else(|| socket::host_of(addr).to_string());
    let name = ServerName::try_from(name_str.clone()).map_err(|_| {
        TransportError::Config(format!(
            "{name_str:?} is not a valid server name (DNS name or IP address)"
        ))
    })?;
    let tcp = socket::connect_tcp(addr, opts)?;
    let conn =
        ClientConnection::new(config, name).map_err(|e| TransportError::Tls(e.to_string()))?;
    let mut s = StreamOwned::new(conn, CountingStream::new(tcp));
    s.sock.arm(opts.handshake_timeout);
    let what = format!("TLS handshake with {addr}");
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).map_err(|e| {
            map_tls_error(e, &what, opts.handshake_timeout, &files.ca, Some(&name_str))
        })?;
    }
    finish(Stream::Client(Box::new(s)), addr.to_string(), files, opts)
}

/// Listens on `listen` ("host:port"), accepts ONE connection (until
/// `opts.connect_timeout`) and completes the handshake, requiring a client certificate
/// issued by `files.ca`. If that first connection fails the handshake, accept fails:
/// the error (wrong CA, plaintext peer) is then reported at once rather than hidden
/// behind a wait for a better peer.
pub fn accept(
    listen: &str,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    let config = server_config(files)?;
    let listener = socket::bind(listen)?;
    accept_with(&listener, listen, config, files, opts)
}

/// Like [`accept`] on a listener the caller bound (e.g. to port 0 in tests).
pub fn accept_on(
    listener: &TcpListener,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    let config = server_config(files)?;
    let name = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "listener".into());
    accept_with(listener, &name, config, files, opts)
}

fn accept_with(
    listener: &TcpListener,
    listen: &str,
    config: Arc<ServerConfig>,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    let (tcp, peer) = socket::accept_on(listener, listen, opts)?;
    handshake_accepted(tcp, peer, config, files, opts)
}

/// Completes the server side of the handshake on a connection already accepted.
pub(crate) fn handshake_accepted(
    tcp: TcpStream,
    peer: std::net::SocketAddr,
    config: Arc<ServerConfig>,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    let conn = ServerConnection::new(config).map_err(|e| TransportError::Tls(e.to_string()))?;
    let mut s = StreamOwned::new(conn, CountingStream::new(tcp));
    s.sock.arm(opts.handshake_timeout);
    let what = format!("TLS handshake with {peer}");
    while s.conn.is_handshaking() {
        if let Err(e) = s.conn.complete_io(&mut s.sock) {
            socket::linger_close(&s.sock.inner);
            return Err(map_tls_error(
                e,
                &what,
                opts.handshake_timeout,
                &files.ca,
                None,
            ));
        }
    }
    finish(Stream::Server(Box::new(s)), peer.to_string(), files, opts)
}

/// The server side of mutual TLS with its configuration built once, for a listener
/// that accepts connections itself and hands each to its own thread: the handshake
/// runs there ([`TlsAcceptor::handshake`]), so a client that connects and stalls
/// holds up no other.
pub struct TlsAcceptor {
    config: Arc<ServerConfig>,
    files: TlsFiles,
}

impl fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAcceptor")
            .field("files", &self.files)
            .finish()
    }
}

impl TlsAcceptor {
    /// Reads the certificate, key and CA files (errors name the file).
    pub fn new(files: &TlsFiles) -> Result<Self, TransportError> {
        Ok(Self {
            config: server_config(files)?,
            files: files.clone(),
        })
    }

    /// Like [`TlsAcceptor::new`], and a client the CA vouches for must also pass
    /// `check`; one that does not gets the TLS alert `access_denied`, and the
    /// handshake fails with `check`'s reason.
    pub fn with_client_check(files: &TlsFiles, check: ClientCheck) -> Result<Self, TransportError> {
        Ok(Self {
            config: server_config_with(files, Some(check))?,
            files: files.clone(),
        })
    }

    /// Completes the handshake on a connection accepted from `peer` (within
    /// `opts.handshake_timeout`; `opts.cancel` stops it), requiring a client
    /// certificate issued by the CA; then `opts.io_timeout` bounds every read and write.
    pub fn handshake(
        &self,
        tcp: TcpStream,
        peer: std::net::SocketAddr,
        opts: &ConnectOptions,
    ) -> Result<TlsTransport, TransportError> {
        socket::prepare_accepted(&tcp, peer, opts)?;
        let conn = ServerConnection::new(self.config.clone())
            .map_err(|e| TransportError::Tls(e.to_string()))?;
        let mut s = StreamOwned::new(conn, CountingStream::new(tcp));
        s.sock.arm(opts.handshake_timeout);
        let what = format!("TLS handshake with {peer}");
        client_check::take_refusal(); // none left from an earlier handshake here
        while s.conn.is_handshaking() {
            if let Err(e) = s.conn.complete_io(&mut s.sock) {
                socket::linger_close(&s.sock.inner);
                if let Some(why) = client_check::take_refusal() {
                    return Err(TransportError::Tls(format!(
                        "{what}: client refused: {why}"
                    )));
                }
                return Err(map_tls_error(
                    e,
                    &what,
                    opts.handshake_timeout,
                    &self.files.ca,
                    None,
                ));
            }
        }
        finish(
            Stream::Server(Box::new(s)),
            peer.to_string(),
            &self.files,
            opts,
        )
    }
}

fn finish(
    stream: Stream,
    peer: String,
    files: &TlsFiles,
    opts: &ConnectOptions,
) -> Result<TlsTransport, TransportError> {
    socket::set_timeouts(&stream.sock().inner, opts.io_timeout)
        .map_err(|e| TransportError::io(format!("configuring connection to {peer}"), e))?;
    Ok(TlsTransport {
        stream,
        io_timeout: opts.io_timeout,
        peer,
        ca: files.ca.clone(),
    })
}

/// Turns an I/O error from rustls or the socket into a clear [`TransportError`].
fn map_tls_error(
    err: io::Error,
    what: &str,
    timeout: Duration,
    ca: &Path,
    server_name: Option<&str>,
) -> TransportError {
    let Some(tls) = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    else {
        return framing::map_stream_error(err, what, timeout);
    };
    use rustls::Error as E;
    let text = match tls {
        E::InvalidMessage(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. } => format!(
            "{what}: the peer did not speak TLS (was it started with --insecure-no-tls?): {tls}"
        ),
        E::InvalidCertificate(rustls::CertificateError::NotValidForName)
        | E::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. }) => {
            format!(
                "{what}: the peer's certificate is not valid for the name {:?}; pass the name it was issued for: {tls}",
                server_name.unwrap_or("?")
            )
        }
        E::InvalidCertificate(_) => format!(
            "{what}: the peer's certificate was rejected (it must be issued by the CA in {}): {tls}",
            ca.display()
        ),
        E::NoCertificatesPresented => format!("{what}: the peer presented no client certificate"),
        E::AlertReceived(rustls::AlertDescription::AccessDenied) => format!(
            "{what}: the peer refused our certificate (TLS alert access_denied): its CA vouches \
             for us, but the server does not list us among its allowed clients (--allow-clients)"
        ),
        E::AlertReceived(alert) => format!(
            "{what}: the peer refused the connection with TLS alert {alert:?} (does it trust our CA, \
             and was our certificate issued by its CA?)"
        ),
        other => format!("{what}: {other}"),
    };
    TransportError::Tls(text)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(files: &TlsFiles) -> Result<RootCertStore, TransportError> {
    roots_of(&files.ca)
}

fn roots_of(ca: &Path) -> Result<RootCertStore, TransportError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(ca)? {
        roots.add(cert).map_err(|e| {
            TransportError::Config(format!(
                "CA file {}: unusable certificate: {e}",
                ca.display()
            ))
        })?;
    }
    Ok(roots)
}

/// Checks certificates met outside a TLS handshake (one a party put beside its link key
/// in an exchange directory) the way a TLS server checks a client's: chained to the CA
/// file, valid now, fit for client authentication.
pub struct CaVerifier {
    verifier: Arc<dyn ClientCertVerifier>,
    ca: PathBuf,
}

impl CaVerifier {
    /// The verifier of the CA certificates in the PEM file `ca`.
    pub fn new(ca: &Path) -> Result<Self, TransportError> {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots_of(ca)?), provider())
                .build()
                .map_err(|e| TransportError::Config(format!("CA file {}: {e}", ca.display())))?;
        Ok(Self {
            verifier,
            ca: ca.to_path_buf(),
        })
    }

    /// Whether the CA vouches for `chain` (end entity first, then intermediates); the
    /// error says why not.
    pub fn verify(&self, chain: &[CertificateDer<'_>]) -> Result<(), String> {
        let (end, intermediates) = chain
            .split_first()
            .ok_or_else(|| "it holds no certificate".to_string())?;
        self.verifier
            .verify_client_cert(end, intermediates, UnixTime::now())
            .map(drop)
            .map_err(|e| format!("the CA of {} does not vouch for it: {e}", self.ca.display()))
    }
}

/// Checks a party's own files before it uses them outside a handshake (to sign its
/// exchange-directory link key): readable, the certificate and the key belong together,
/// and the CA vouches for the certificate.
pub fn check_own_files(files: &TlsFiles) -> Result<(), TransportError> {
    client_config(files)?;
    let chain = load_certs(&files.cert)?;
    CaVerifier::new(&files.ca)?.verify(&chain).map_err(|why| {
        TransportError::Config(format!("certificate file {}: {why}", files.cert.display()))
    })
}

/// The certificates of a PEM text (a certificate file read from shared storage).
pub fn certificates_in_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("it is not PEM: {e}"))?;
    if certs.is_empty() {
        return Err("it holds no PEM certificate".into());
    }
    Ok(certs)
}

fn client_config(files: &TlsFiles) -> Result<Arc<ClientConfig>, TransportError> {
    let roots = roots(files)?;
    let (certs, key) = (load_certs(&files.cert)?, load_key(&files.key)?);
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransportError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| mismatch(files, e))?;
    Ok(Arc::new(config))
}

pub(crate) fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, TransportError> {
    server_config_with(files, None)
}

/// The server configuration; with `check`, a client must pass it too.
fn server_config_with(
    files: &TlsFiles,
    check: Option<ClientCheck>,
) -> Result<Arc<ServerConfig>, TransportError> {
    let provider = provider();
    let roots = Arc::new(roots(files)?);
    let (certs, key) = (load_certs(&files.cert)?, load_key(&files.key)?);
    let mut verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| TransportError::Config(format!("CA file {}: {e}", files.ca.display())))?;
    if let Some(check) = check {
        verifier = Arc::new(CheckedClientVerifier {
            inner: verifier,
            check,
        });
    }
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TransportError::Tls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| mismatch(files, e))?;
    Ok(Arc::new(config))
}

fn mismatch(files: &TlsFiles, e: rustls::Error) -> TransportError {
    TransportError::Config(format!(
        "certificate {} with key {} is unusable (do they belong together?): {e}",
        files.cert.display(),
        files.key.display()
    ))
}

/// The end-entity certificate (the first) of a PEM file, in DER: what a parties file
/// lists for a participant, to compare with what its connections present.
pub fn end_entity_certificate(path: &Path) -> Result<Vec<u8>, TransportError> {
    Ok(load_certs(path)?.swap_remove(0).as_ref().to_vec())
}

/// The DNS names a certificate (DER) is issued for (`None` if it cannot be read).
pub fn certificate_names(der: &[u8]) -> Option<Vec<String>> {
    let der = CertificateDer::from(der);
    let cert = webpki::EndEntityCert::try_from(&der).ok()?;
    Some(cert.valid_dns_names().map(str::to_owned).collect())
}

/// The SHA-256 fingerprint of a certificate (DER), as lower-case hex: what
/// `openssl x509 -noout -fingerprint -sha256` prints, without its colons.
pub fn certificate_fingerprint(der: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(der))
}

/// The names a certificate (DER) is issued for, for messages: "the certificate of
/// NAME, ...", "a certificate that names no host" or "an unreadable certificate".
pub fn describe_certificate(der: &[u8]) -> String {
    match certificate_names(der) {
        Some(names) if names.is_empty() => "a certificate that names no host".into(),
        Some(names) => format!("the certificate of {}", names.join(", ")),
        None => "an unreadable certificate".into(),
    }
}

/// All certificates in a PEM file; the error names the file.
fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let bad = |e: &dyn fmt::Display| {
        TransportError::Config(format!("certificate file {}: {e}", path.display()))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate found"));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1); the error names the file.
pub(crate) fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TransportError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let e = match e {
            rustls::pki_types::pem::Error::NoItemsFound => "no PEM private key found".to_string(),
            e => e.to_string(),
        };
        TransportError::Config(format!("private key file {}: {e}", path.display()))
    })
}
