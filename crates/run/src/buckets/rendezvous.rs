//! Where the bucket tasks of two organisations meet over mutual TLS (`privset.ray` with
//! `listen` / `peer`, docs/scale.md).
//!
//! The listening organisation's driver serves the rendezvous on its plan port + 1. Each
//! of its bucket tasks binds a port of the organisation's range on whatever node Ray
//! chose, registers that endpoint here under its plan and bucket, and waits for its
//! peer; the other organisation's task for the same bucket asks here where to connect.
//! A registration lasts as long as the connection that made it: a task killed before
//! its peer connected withdraws its endpoint with its socket, and its retry registers
//! a new one.
//!
//! Every connection is mutual TLS under the job's CA, and only this organisation's
//! tasks may register: they show the driver's random token. A request is one message:
//!
//! ```text
//! "PSRV" | version 1 | kind (1 register, 2 find) | plan id (32) | bucket (u32 BE)
//!   register only: | token (32) | endpoint length (u8) | endpoint (UTF-8 "host:port")
//! ```
//!
//! and the answer one message: `status (0 ok, 1 refused) | length (u8) | text`, the
//! text being the endpoint of a find, nothing for a registration, or the reason for a
//! refusal. A find waits for a registration up to the server's timeout.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use privset_net::{Cancel, ConnectOptions, TlsAcceptor, TlsFiles, TlsTransport, Transport, tls};

use crate::fail::{Failure, FailureKind};

const MAGIC: &[u8; 4] = b"PSRV";
const VERSION: u8 = 1;
const REGISTER: u8 = 1;
const FIND: u8 = 2;
const OK: u8 = 0;
const REFUSED: u8 = 1;
/// The fixed part of a request: magic, version, kind, plan id, bucket.
const HEAD: usize = 4 + 1 + 1 + 32 + 4;
/// The longest request: a registration with a 255-byte endpoint.
const MAX_REQUEST: usize = HEAD + 32 + 1 + 255;
const MAX_ANSWER: usize = 2 + 255;
/// Connections served at once; further ones are closed at once.
const MAX_CONNECTIONS: usize = 1024;
/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(30);
/// How often waiting threads look at the cancel flag.
const POLL: Duration = Duration::from_millis(50);

/// A bucket of a plan: what a registration is filed under.
type Slot = ([u8; 32], u32);

/// The registrations: the endpoint of each slot, with the number of the registration
/// that made it (a withdrawal removes only its own).
#[derive(Default)]
struct Registry {
    entries: Mutex<Entries>,
    changed: Condvar,
}

/// The last registration's number, and each slot's (number, endpoint).
type Entries = (u64, HashMap<Slot, (u64, String)>);

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(&self, slot: Slot, endpoint: String) -> u64 {
        let mut entries = self.lock();
        entries.0 += 1;
        let number = entries.0;
        entries.1.insert(slot, (number, endpoint));
        self.changed.notify_all();
        number
    }

    fn withdraw(&self, slot: Slot, number: u64) {
        let mut entries = self.lock();
        if entries.1.get(&slot).is_some_and(|(n, _)| *n == number) {
            entries.1.remove(&slot);
        }
    }

    /// The endpoint of `slot` once registered, or `None` at `deadline` or a cancel.
    fn find(&self, slot: Slot, deadline: Instant, cancel: &Cancel) -> Option<String> {
        let mut entries = self.lock();
        loop {
            if let Some((_, endpoint)) = entries.1.get(&slot) {
                return Some(endpoint.clone());
            }
            let now = Instant::now();
            if now >= deadline || cancel.is_cancelled() {
                return None;
            }
            let wait = (deadline - now).min(POLL);
            entries = self
                .changed
                .wait_timeout(entries, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// A running rendezvous: stopped (every connection cut off) when dropped.
pub struct Server {
    addr: SocketAddr,
    cancel: Cancel,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `bind` and serves registrations carrying `token` and finds, each
    /// connection on its own thread; a registration or a find lasts at most `timeout`.
    pub fn start(
        bind: &str,
        files: &TlsFiles,
        token: [u8; 32],
        timeout: Duration,
    ) -> Result<Self, Failure> {
        let acceptor = Arc::new(TlsAcceptor::new(files)?);
        let listener = TcpListener::bind(bind)
            .map_err(|e| Failure::config(format!("the rendezvous cannot listen on {bind}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::other(format!("the rendezvous's address: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Failure::other(format!("cannot configure the rendezvous: {e}")))?;
        let cancel = Cancel::new();
        let serving = Serving {
            acceptor,
            registry: Arc::new(Registry::default()),
            token,
            timeout,
            cancel: cancel.clone(),
            open: Arc::new(AtomicUsize::new(0)),
        };
        let thread = std::thread::Builder::new()
            .name("privset-rendezvous".into())
            .spawn(move || serving.accept_loop(&listener))
            .map_err(|e| Failure::other(format!("cannot start the rendezvous: {e}")))?;
        Ok(Self {
            addr,
            cancel,
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What every connection's thread shares.
#[derive(Clone)]
struct Serving {
    acceptor: Arc<TlsAcceptor>,
    registry: Arc<Registry>,
    token: [u8; 32],
    timeout: Duration,
    cancel: Cancel,
    /// Connections being served.
    open: Arc<AtomicUsize>,
}

impl Serving {
    fn accept_loop(self, listener: &TcpListener) {
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        while !self.cancel.is_cancelled() {
            let (stream, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(_) => {
                    std::thread::sleep(POLL);
                    continue;
                }
            };
            if self.open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                continue; // dropped: closed at once
            }
            self.open.fetch_add(1, Ordering::SeqCst);
            let serving = self.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("privset-rendezvous-{peer}"))
                .spawn(move || {
                    let opts = ConnectOptions {
                        connect_timeout: HANDSHAKE,
                        handshake_timeout: HANDSHAKE,
                        io_timeout: serving.timeout,
                        server_name: None,
                        cancel: serving.cancel.clone(),
                    };
                    // A client that fails its handshake or its request is only cut off.
                    if let Ok(mut transport) = serving.acceptor.handshake(stream, peer, &opts) {
                        serving.serve(&mut transport);
                    }
                    serving.open.fetch_sub(1, Ordering::SeqCst);
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(_) => {
                    self.open.fetch_sub(1, Ordering::SeqCst);
                }
            }
            threads.retain(|t| !t.is_finished());
        }
        for t in threads {
            let _ = t.join();
        }
    }

    /// One connection's request.
    fn serve(&self, transport: &mut TlsTransport) {
        let Ok(message) = transport.recv(MAX_REQUEST) else {
            return;
        };
        match Request::parse(&message) {
            Err(reason) => {
                let _ = transport.send(&answer(REFUSED, &reason));
            }
            Ok(Request::Register { token, .. }) if !same(&token, &self.token) => {
                let _ = transport.send(&answer(
                    REFUSED,
                    "only the listening organisation's own tasks may register",
                ));
            }
            Ok(Request::Register { slot, endpoint, .. }) => {
                let number = self.registry.register(slot, endpoint);
                if transport.send(&answer(OK, "")).is_ok() {
                    // Held until the task closes the connection (its peer connected, or
                    // it died) or the timeout.
                    let _ = transport.recv(1);
                }
                self.registry.withdraw(slot, number);
            }
            Ok(Request::Find { slot }) => {
                let deadline = Instant::now() + self.timeout;
                let reply = match self.registry.find(slot, deadline, &self.cancel) {
                    Some(endpoint) => answer(OK, &endpoint),
                    None => answer(
                        REFUSED,
                        &format!(
                            "no task of bucket {} registered within {} s",
                            slot.1,
                            self.timeout.as_secs()
                        ),
                    ),
                };
                let _ = transport.send(&reply);
            }
        }
    }
}

/// Compares tokens in time independent of where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn answer(status: u8, text: &str) -> Vec<u8> {
    let text = &text.as_bytes()[..text.len().min(255)];
    let mut out = vec![status, text.len() as u8];
    out.extend_from_slice(text);
    out
}

enum Request {
    Register {
        slot: Slot,
        token: [u8; 32],
        endpoint: String,
    },
    Find {
        slot: Slot,
    },
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let (kind, slot) = match self {
            Request::Register { slot, .. } => (REGISTER, slot),
            Request::Find { slot } => (FIND, slot),
        };
        let mut out = Vec::with_capacity(MAX_REQUEST);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[VERSION, kind]);
        out.extend_from_slice(&slot.0);
        out.extend_from_slice(&slot.1.to_be_bytes());
        if let Request::Register {
            token, endpoint, ..
        } = self
        {
            out.extend_from_slice(token);
            out.push(endpoint.len() as u8);
            out.extend_from_slice(endpoint.as_bytes());
        }
        out
    }

    /// The request in `message`, or why it is refused.
    fn parse(message: &[u8]) -> Result<Self, String> {
        if message.len() < HEAD || &message[..4] != MAGIC {
            return Err("not a privset rendezvous request".into());
        }
        if message[4] != VERSION {
            return Err(format!(
                "rendezvous version {} (this one speaks {VERSION})",
                message[4]
            ));
        }
        let plan: [u8; 32] = message[6..38].try_into().expect("32 bytes");
        let bucket = u32::from_be_bytes(message[38..42].try_into().expect("4 bytes"));
        let slot = (plan, bucket);
        let rest = &message[HEAD..];
        match message[5] {
            FIND if rest.is_empty() => Ok(Request::Find { slot }),
            REGISTER if rest.len() > 33 && rest.len() == 33 + rest[32] as usize => {
                let token = rest[..32].try_into().expect("32 bytes");
                let endpoint = std::str::from_utf8(&rest[33..])
                    .map_err(|_| "the endpoint is not UTF-8".to_string())?;
                check_endpoint(endpoint)?;
                Ok(Request::Register {
                    slot,
                    token,
                    endpoint: endpoint.to_string(),
                })
            }
            FIND | REGISTER => Err("a rendezvous request of the wrong length".into()),
            kind => Err(format!("unknown rendezvous request kind {kind}")),
        }
    }
}

/// A "host:port" with a nonzero port and a host of letters, digits, '.', '-', ':'
/// (IPv6 in brackets) only.
fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let bad = || format!("{endpoint:?} is not a host:port endpoint");
    let (host, port) = endpoint.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
    if port == 0 || !host_ok || endpoint.len() > 255 {
        return Err(bad());
    }
    Ok(())
}

/// A task's registration: withdrawn when dropped (its connection closed).
pub struct Registration {
    _transport: TlsTransport,
}

/// Registers `endpoint` for `bucket` of `plan` at the rendezvous `addr`; the
/// registration holds until the returned value is dropped. `opts.server_name` is the
/// organisation's own certificate's name ([`tls::certificate_name`]).
pub fn register(
    addr: &str,
    files: &TlsFiles,
    opts: &ConnectOptions,
    (plan, bucket): Slot,
    token: [u8; 32],
    endpoint: &str,
) -> Result<Registration, Failure> {
    check_endpoint(endpoint).map_err(Failure::config)?;
    let request = Request::Register {
        slot: (plan, bucket),
        token,
        endpoint: endpoint.to_string(),
    };
    let (transport, _) = ask(addr, files, opts, &request)?;
    Ok(Registration {
        _transport: transport,
    })
}

/// Where the task of `bucket` of `plan` listens, from the rendezvous `addr` (waiting
/// for its registration up to the server's timeout).
pub fn find(
    addr: &str,
    files: &TlsFiles,
    opts: &ConnectOptions,
    (plan, bucket): Slot,
) -> Result<String, Failure> {
    let (_, endpoint) = ask(
        addr,
        files,
        opts,
        &Request::Find {
            slot: (plan, bucket),
        },
    )?;
    check_endpoint(&endpoint).map_err(|e| Failure::peer(format!("the rendezvous answered {e}")))?;
    Ok(endpoint)
}

/// Sends `request` and reads the answer's text; a refusal is an error.
fn ask(
    addr: &str,
    files: &TlsFiles,
    opts: &ConnectOptions,
    request: &Request,
) -> Result<(TlsTransport, String), Failure> {
    let mut transport = tls::connect(addr, files, opts)?;
    transport.send(&request.encode())?;
    let reply = transport.recv(MAX_ANSWER)?;
    let text = match reply.as_slice() {
        [status, len, text @ ..] if text.len() == *len as usize => {
            let text = String::from_utf8_lossy(text).into_owned();
            match *status {
                OK => text,
                _ => {
                    return Err(Failure::new(
                        FailureKind::Transport,
                        format!("the rendezvous at {addr} refused: {text}"),
                    ));
                }
            }
        }
        _ => {
            return Err(Failure::peer(format!(
                "the rendezvous at {addr} answered nonsense"
            )));
        }
    };
    Ok((transport, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Certificates for "receiver" and "sender" in a directory of the test's own.
    fn certs(test: &str) -> (TlsFiles, TlsFiles) {
        let dir = std::env::temp_dir().join(format!("privset-rv-{test}-{}", std::process::id()));
        let names = ["receiver".to_string(), "sender".to_string()];
        privset_net::certs::generate(&dir, &names).unwrap();
        (
            TlsFiles::in_dir(&dir, "receiver"),
            TlsFiles::in_dir(&dir, "sender"),
        )
    }

    fn opts(timeout: u64) -> ConnectOptions {
        ConnectOptions {
            connect_timeout: Duration::from_secs(timeout),
            handshake_timeout: Duration::from_secs(timeout),
            io_timeout: Duration::from_secs(timeout),
            server_name: Some("receiver".into()),
            cancel: Cancel::new(),
        }
    }

    #[test]
    fn a_find_gets_the_endpoint_registered_and_a_withdrawn_one_is_gone() {
        let (own, peer) = certs("find");
        let token = [7u8; 32];
        let server = Server::start("127.0.0.1:0", &own, token, Duration::from_secs(2)).unwrap();
        let addr = server.local_addr().to_string();
        let plan = [1u8; 32];
        assert_eq!(tls::certificate_name(&own).unwrap(), "receiver");
        // A find waits for the registration.
        let finder = {
            let (addr, peer) = (addr.clone(), peer.clone());
            std::thread::spawn(move || find(&addr, &peer, &opts(5), (plan, 3)))
        };
        std::thread::sleep(Duration::from_millis(300));
        let held = register(&addr, &own, &opts(5), (plan, 3), token, "10.0.0.2:7010").unwrap();
        assert_eq!(finder.join().unwrap().unwrap(), "10.0.0.2:7010");
        // Another plan's bucket 3, or another bucket, is not this registration.
        let other = find(&addr, &peer, &opts(5), ([2u8; 32], 3)).unwrap_err();
        assert!(
            other.message.contains("no task of bucket 3"),
            "{}",
            other.message
        );
        // Withdrawn with its connection.
        drop(held);
        std::thread::sleep(Duration::from_millis(300));
        let gone = find(&addr, &peer, &opts(5), (plan, 3)).unwrap_err();
        assert!(
            gone.message.contains("registered within"),
            "{}",
            gone.message
        );
        // A retry's registration replaces an older one of the same bucket.
        let _a = register(&addr, &own, &opts(5), (plan, 4), token, "h1:1").unwrap();
        let _b = register(&addr, &own, &opts(5), (plan, 4), token, "h2:2").unwrap();
        assert_eq!(find(&addr, &peer, &opts(5), (plan, 4)).unwrap(), "h2:2");
    }

    #[test]
    fn registrations_without_the_token_and_malformed_requests_are_refused() {
        let (own, peer) = certs("refuse");
        let server = Server::start("127.0.0.1:0", &own, [7u8; 32], Duration::from_secs(1)).unwrap();
        let addr = server.local_addr().to_string();
        let e = register(&addr, &peer, &opts(5), ([1; 32], 0), [8u8; 32], "evil:1")
            .err()
            .unwrap();
        assert!(
            e.message.contains("own tasks may register"),
            "{}",
            e.message
        );
        assert!(register(&addr, &own, &opts(5), ([1; 32], 0), [7; 32], "no-port").is_err());
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"PSRV".to_vec(), "not a privset rendezvous"),
            ([&b"PSRV\x02\x02"[..], &[0; 36]].concat(), "version 2"),
            ([&b"PSRV\x01\x09"[..], &[0; 36]].concat(), "kind 9"),
            ([&b"PSRV\x01\x02"[..], &[0; 37]].concat(), "wrong length"),
            (
                [&b"PSRV\x01\x01"[..], &[0; 36], &[7; 32], &[5], b"a:1"].concat(),
                "wrong length",
            ),
            (
                [&b"PSRV\x01\x01"[..], &[0; 36], &[7; 32], &[3], b"a:0"].concat(),
                "not a host:port",
            ),
            (
                [
                    &b"PSRV\x01\x01"[..],
                    &[0; 36],
                    &[7; 32],
                    &[2],
                    &[0xff, 0xfe],
                ]
                .concat(),
                "not UTF-8",
            ),
        ];
        for (request, why) in cases {
            let mut t = tls::connect(&addr, &peer, &opts(5)).unwrap();
            t.send(&request).unwrap();
            let reply = t.recv(MAX_ANSWER).unwrap();
            assert_eq!(reply[0], REFUSED);
            let text = String::from_utf8_lossy(&reply[2..]);
            assert!(text.contains(why), "{why}: {text}");
        }
        // Too long a request is cut off before it is read.
        let mut t = tls::connect(&addr, &peer, &opts(5)).unwrap();
        t.send(&vec![0; MAX_REQUEST + 1]).unwrap();
        assert!(t.recv(MAX_ANSWER).is_err());
    }
}
