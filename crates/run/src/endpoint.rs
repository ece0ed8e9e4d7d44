//! A long-lived endpoint: one listener serving many sessions of one party role at
//! once (the APSI server and judge, `privset apsi serve` / `privset judge serve` and
//! Python's `ApsiServer.serve` / `ApsiJudge.serve`).
//!
//! * The shared state (the server's prepared set, the judge's key and policy) lives in
//!   a [`Service`] behind an `Arc`; each session gets a fresh party from it, which
//!   borrows that state rather than copying it.
//! * The accepting thread only accepts: every connection gets its own thread, which
//!   completes the TLS handshake (or plaintext greeting), reads the client's hello,
//!   then runs the party and logs it.
//! * A connection holds a session slot (at most `max_concurrent` sessions run) only
//!   once its client has completed the handshake, passed the allow list and sent its
//!   hello. Before that it is in the pre-hello pool: at most `max_pending` connections
//!   (further ones wait in the kernel's backlog), at most `max_pending_per_address`
//!   from one address (the oldest makes way, see [`pending`]), each cut off
//!   `handshake_timeout` after its accept. So connections that never speak cannot
//!   take the slots: an honest client waits at most `handshake_timeout` for them.
//! * Every connection has a deadline of `timeout` from its accept: a silent or slow
//!   client is cut off then (its socket shut down through its own [`Cancel`]), without
//!   delaying any other session.
//! * Each session that got past the handshake ends in one [`SessionLog`] (number, peer,
//!   outcome, bytes, time, error kind and message), passed to the caller's callback.
//!   A connection that fails the handshake is no session: it is reported to the
//!   callback's sibling `on_refused` and does not count towards `max_sessions`.

mod deadline;
mod first_message;
mod pending;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use privset_crypto::rng::SessionRng;
use privset_net::{
    Cancel, ConnectOptions, PlainTcpTransport, RunError, TlsAcceptor, TlsFiles, Transport,
    TransportError,
};
use privset_protocols::{Party, ProtocolError};

use crate::allow_clients::{self, AllowList};
use crate::fail::{Failure, FailureKind};
use crate::metrics::{self, Stopwatch};
use deadline::Deadline;
use first_message::FirstMessage;
use pending::{Evictable, PendingByAddress};

/// Default `handshake_timeout`: the TLS handshake and a hello take milliseconds.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default `max_pending`: connections before their hello (or waiting for a slot).
pub const DEFAULT_MAX_PENDING: usize = 64;
/// Default `max_pending_per_address`: one address's share of the pre-hello pool.
pub const DEFAULT_MAX_PENDING_PER_ADDRESS: usize = 8;

/// One kind of session an endpoint serves: the state every session shares (read-only)
/// and how a session's party is made from it.
pub trait Service: Send + Sync {
    /// The role in the log ("apsi server", "judge").
    fn role(&self) -> &'static str;
    /// A fresh party for one session, all its randomness from `seed`.
    fn party(&self, seed: [u8; 32]) -> Result<Box<dyn ServedParty>, Failure>;
}

/// A session's party, and what its log line says about the outcome.
pub trait ServedParty: Party {
    /// The outcome fields of the log line (`null` when the session ended without one).
    fn outcome(self: Box<Self>) -> serde_json::Value;
}

/// How an endpoint listens and serves.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Mutual TLS files; `None` = plaintext (the front end must have had the user ask
    /// for it explicitly).
    pub tls: Option<TlsFiles>,
    /// Stop once this many sessions have ended (default: serve until cancelled).
    pub max_sessions: Option<u64>,
    /// Connections served at once (at least 1).
    pub max_concurrent: usize,
    /// Longest a connection may take, handshake included, from its accept.
    pub timeout: Duration,
    /// Longest a connection may take, from its accept, to complete the TLS handshake
    /// and send its hello; it holds no session slot until then.
    pub handshake_timeout: Duration,
    /// Connections accepted and not yet holding a session slot (at least 1).
    pub max_pending: usize,
    /// Of those, the most from one IP address still before their hello (at least 1).
    pub max_pending_per_address: usize,
    /// The clients served (by certificate name or fingerprint); `None` = any client
    /// the CA vouches for. Needs TLS.
    pub allow_clients: Option<Arc<AllowList>>,
    /// Stops the endpoint from another thread: no more accepts, every session cut off.
    pub cancel: Cancel,
}

/// Why a session failed, as a kind the log can be filtered on and a message.
#[derive(serde::Serialize, Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    /// `timeout` (the client was too slow or silent), `peer_closed`, `tls`,
    /// `transport`, `peer_misbehaved`, `peer_aborted`, `incompatible`, `cancelled`
    /// (the endpoint stopped), or `other`.
    pub kind: &'static str,
    pub message: String,
}

impl SessionError {
    /// The kind of a driver's error; `expired` when the session's deadline cut it off
    /// (whatever error the shut-down socket then gave).
    fn of_run(err: &RunError, expired: bool, timeout: Duration) -> Self {
        if expired {
            return Self::timeout(timeout);
        }
        let kind = match err {
            RunError::Transport(t) | RunError::PeerTransport { source: t, .. } => transport_kind(t),
            RunError::Protocol(p) => match p {
                ProtocolError::PeerMisbehaved(_) => "peer_misbehaved",
                ProtocolError::PeerAborted(_) => "peer_aborted",
                ProtocolError::Incompatible(_) => "incompatible",
                _ => "other",
            },
            _ => "other",
        };
        Self {
            kind,
            message: err.to_string(),
        }
    }

    fn timeout(timeout: Duration) -> Self {
        Self {
            kind: "timeout",
            message: format!(
                "the session did not end within the {} s allowed (--timeout)",
                timeout.as_secs_f64()
            ),
        }
    }
}

fn transport_kind(t: &TransportError) -> &'static str {
    match t {
        TransportError::Timeout { .. } => "timeout",
        TransportError::PeerClosed => "peer_closed",
        TransportError::Tls(_) => "tls",
        TransportError::Cancelled => "cancelled",
        _ => "transport",
    }
}

/// One session, as the endpoint logs it (one JSON line).
#[derive(serde::Serialize, Debug, Clone)]
pub struct SessionLog {
    pub role: &'static str,
    /// 1, 2, ... in the order the sessions got their slots.
    pub session: u64,
    pub peer: String,
    /// The first name the client's certificate is issued for (`null` in plaintext).
    pub client: Option<String>,
    /// The SHA-256 fingerprint of the client's certificate, hex (`null` in plaintext).
    pub client_sha256: Option<String>,
    pub transport: &'static str,
    pub ok: bool,
    /// When the connection was accepted, in seconds since the Unix epoch.
    pub started: f64,
    /// Seconds from the accept until the session got its slot (handshake, hello, and
    /// any wait for a slot).
    pub waited_seconds: f64,
    /// Sessions in progress when this one got its slot, itself included.
    pub concurrent: usize,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Process CPU over the session: every concurrent session's work included.
    pub cpu_seconds: f64,
    /// From the accept to the end.
    pub wall_seconds: f64,
    pub peak_rss_mib: f64,
    /// The party's outcome (who asked, sizes, verdict), `null` if it ended without one.
    pub outcome: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<SessionError>,
}

/// What an endpoint did before it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Sessions that ended (successful or not).
    pub sessions: u64,
    /// Of those, the failed ones.
    pub failed: u64,
    /// Connections refused before their session: failed or refused handshake, no
    /// hello in time, made way for a newer connection from their address.
    pub refused: u64,
}

/// Called with each session's log line, from the session's thread.
pub type OnSession = dyn Fn(&SessionLog) + Send + Sync;
/// Called with each connection refused before its session (peer, why).
pub type OnRefused = dyn Fn(SocketAddr, &TransportError) + Send + Sync;

/// Where the endpoint reports. Called from the sessions' threads.
pub struct Reporter {
    pub on_session: Box<OnSession>,
    pub on_refused: Box<OnRefused>,
}

/// Connections in progress and sessions done, shared by the accepting thread and the
/// connections' threads.
#[derive(Default)]
struct Counts {
    /// Connections accepted so far (each one's id).
    accepted: u64,
    /// Connections accepted and not yet holding a slot (or refused).
    pending: usize,
    /// Of those, the ones before their hello, by address.
    pre_hello: PendingByAddress,
    /// Sessions holding a slot.
    running: usize,
    /// Sessions numbered so far.
    numbered: u64,
    ended: u64,
    failed: u64,
    refused: u64,
}

struct Shared {
    counts: Mutex<Counts>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection that will not become a session: out of the pending ones.
    fn refuse(&self) {
        let mut counts = self.lock();
        counts.pending -= 1;
        counts.refused += 1;
        drop(counts);
        self.changed.notify_all();
    }
}

/// How often the accepting thread looks for a connection, a cancel or room in the
/// pre-hello pool; and a connection waiting for a slot, for its deadline.
const POLL: Duration = Duration::from_millis(20);

/// Serves sessions of `service` on `listener` until `max_sessions` have ended or
/// `opts.cancel` is cancelled; returns what it did. Fails only if the options, the
/// listener or the TLS files are unusable.
pub fn serve(
    listener: &TcpListener,
    opts: &ServeOptions,
    service: Arc<dyn Service>,
    reporter: Arc<Reporter>,
) -> Result<ServeSummary, Failure> {
    if opts.max_concurrent == 0 || opts.max_pending == 0 || opts.max_pending_per_address == 0 {
        return Err(Failure::config(
            "serving needs room for at least one session and one connection in its handshake",
        ));
    }
    let acceptor = match (&opts.tls, &opts.allow_clients) {
        (Some(files), None) => Some(Arc::new(TlsAcceptor::new(files)?)),
        (Some(files), Some(allowed)) => {
            let allowed = allowed.clone();
            Some(Arc::new(TlsAcceptor::with_client_check(
                files,
                Arc::new(move |cert: &[u8]| allowed.check(cert)),
            )?))
        }
        (None, Some(_)) => {
            return Err(Failure::config(
                "an allowed-clients list needs TLS: a plaintext client has no certificate to check",
            ));
        }
        (None, None) => None,
    };
    // The whole connection's deadline bounds its handshake too.
    let opts = &ServeOptions {
        handshake_timeout: opts.handshake_timeout.min(opts.timeout),
        ..opts.clone()
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| Failure::other(format!("cannot configure the listener: {e}")))?;
    let shared = Arc::new(Shared {
        counts: Mutex::new(Counts::default()),
        changed: Condvar::new(),
    });
    let max = opts.max_sessions.unwrap_or(u64::MAX);
    // Cut off connections without a slot once no session can follow.
    let closing = Cancel::new();
    let mut threads = Vec::new();
    loop {
        // Room for one more connection: room in the pre-hello pool, and (with
        // --max-sessions) sessions still to number. Running sessions do not count:
        // slots are taken only after the hello. One that says hello after the last
        // session was numbered is turned away.
        {
            let mut counts = shared.lock();
            loop {
                if opts.cancel.is_cancelled() || counts.ended >= max {
                    break;
                }
                if counts.pending < opts.max_pending && counts.numbered < max {
                    break;
                }
                counts = shared
                    .changed
                    .wait_timeout(counts, POLL)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            if opts.cancel.is_cancelled() || counts.ended >= max {
                break;
            }
        }
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted =>
            {
                std::thread::sleep(POLL);
                continue;
            }
            Err(e) => {
                // Out of file descriptors and the like: wait, and go on.
                (reporter.on_refused)(
                    listener
                        .local_addr()
                        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
                    &TransportError::Config(format!("accepting a connection: {e}")),
                );
                std::thread::sleep(POLL * 10);
                continue;
            }
        };
        let cancel = Cancel::new();
        let evictable = Evictable::new(cancel.clone());
        let id = {
            let mut counts = shared.lock();
            counts.accepted += 1;
            counts.pending += 1;
            let id = counts.accepted;
            let limit = opts.max_pending_per_address;
            counts
                .pre_hello
                .add(peer.ip(), id, evictable.clone(), limit);
            id
        };
        let connection = Connection {
            id,
            peer,
            accepted: Instant::now(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            cancel,
            evictable,
            opts: opts.clone(),
            closing: closing.clone(),
            max,
            acceptor: acceptor.clone(),
            service: service.clone(),
            reporter: reporter.clone(),
            shared: shared.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("privset-session-{peer}"))
            .spawn(move || connection.run(stream));
        match spawned {
            Ok(handle) => threads.push(handle),
            Err(e) => {
                shared.lock().pre_hello.remove(peer.ip(), id);
                shared.refuse();
                (reporter.on_refused)(
                    peer,
                    &TransportError::Config(format!("cannot start a session thread: {e}")),
                );
            }
        }
        threads.retain(|t| !t.is_finished());
    }
    // Stopped accepting: let the sessions in progress end (cut off if cancelled); no
    // connection without a slot can become one.
    closing.cancel();
    for t in threads {
        let _ = t.join();
    }
    let counts = shared.lock();
    Ok(ServeSummary {
        sessions: counts.ended,
        failed: counts.failed,
        refused: counts.refused,
    })
}

/// One accepted connection, on its own thread.
struct Connection {
    id: u64,
    peer: SocketAddr,
    accepted: Instant,
    started: f64,
    /// Shuts the connection's socket down (deadline, eviction, endpoint stopping).
    cancel: Cancel,
    evictable: Evictable,
    opts: ServeOptions,
    /// Cancelled when the endpoint stops accepting.
    closing: Cancel,
    max: u64,
    acceptor: Option<Arc<TlsAcceptor>>,
    service: Arc<dyn Service>,
    reporter: Arc<Reporter>,
    shared: Arc<Shared>,
}

/// A connection past its handshake and hello, ready for a slot.
struct Greeted {
    transport: Box<dyn Transport + Send>,
    kind: &'static str,
    /// The client's certificate name and fingerprint (TLS only).
    client: Option<(String, String)>,
    /// The session's party, made before the hello to know how long a hello may be.
    party: Result<Box<dyn ServedParty>, Failure>,
    /// The client's hello (none if the party could not be made).
    hello: Option<Vec<u8>>,
}

impl Connection {
    fn run(self, stream: TcpStream) {
        let deadline = Deadline::start(
            self.accepted + self.opts.handshake_timeout,
            self.cancel.clone(),
            self.opts.cancel.clone(),
            self.closing.clone(),
        );
        let greeted = self.greet(stream);
        self.shared.lock().pre_hello.remove(self.peer.ip(), self.id);
        // Evicted or past its deadline just as its hello came: its socket is shut down.
        let in_time =
            !self.evictable.was_evicted() && deadline.move_to(self.accepted + self.opts.timeout);
        let greeted = match greeted {
            Ok(g) if in_time => g,
            Ok(_) => return self.refuse(&self.late(&deadline, None)),
            Err(e) => return self.refuse(&self.late(&deadline, Some(e))),
        };
        let Some((number, concurrent)) = self.take_slot(&deadline) else {
            return;
        };
        self.run_session(greeted, number, concurrent, &deadline);
    }

    /// The TLS handshake (or plaintext greeting), and the client's hello.
    fn greet(&self, stream: TcpStream) -> Result<Greeted, TransportError> {
        let conn_opts = ConnectOptions {
            connect_timeout: self.opts.handshake_timeout,
            handshake_timeout: self.opts.handshake_timeout,
            io_timeout: self.opts.timeout,
            server_name: None,
            cancel: self.cancel.clone(),
        };
        let (mut transport, kind, client): (Box<dyn Transport + Send>, _, _) = match &self.acceptor
        {
            Some(acceptor) => {
                let t = acceptor.handshake(stream, self.peer, &conn_opts)?;
                let client =
                    allow_clients::client_identity(t.peer_certificate().unwrap_or_default());
                (Box::new(t), "tcp+mtls", Some(client))
            }
            None => {
                let t = PlainTcpTransport::accept_stream(stream, self.peer, &conn_opts)?;
                (Box::new(t), "tcp-plaintext", None)
            }
        };
        let party = self.service.party(SessionRng::from_os().seed());
        let hello = match &party {
            Ok(p) => Some(transport.recv(p.max_incoming_len())?),
            Err(_) => None,
        };
        Ok(Greeted {
            transport,
            kind,
            client,
            party,
            hello,
        })
    }

    /// Why a connection that did not get to its hello in time was refused: its
    /// handshake deadline, a newer connection from its address, or `error`.
    fn late(&self, deadline: &Deadline, error: Option<TransportError>) -> TransportError {
        if self.evictable.was_evicted() {
            return TransportError::Link(format!(
                "dropped before its hello: more than {} connections from {} were in their \
                 TLS handshake, and this was the oldest",
                self.opts.max_pending_per_address,
                self.peer.ip()
            ));
        }
        if deadline.expired() {
            return TransportError::Timeout {
                what: "waiting for the TLS handshake and the client's hello \
                       (--handshake-timeout); dropped"
                    .into(),
                seconds: self.opts.handshake_timeout.as_secs_f64().round() as u64,
            };
        }
        error.unwrap_or(TransportError::Cancelled)
    }

    fn refuse(&self, why: &TransportError) {
        self.shared.refuse();
        (self.reporter.on_refused)(self.peer, why);
    }

    /// Waits for a session slot (until the session's deadline); the session's number
    /// and the sessions running with it, or `None` (refused, and reported).
    fn take_slot(&self, deadline: &Deadline) -> Option<(u64, usize)> {
        let mut counts = self.shared.lock();
        loop {
            if counts.numbered >= self.max {
                drop(counts);
                self.refuse(&TransportError::Config(
                    "the endpoint has served its --max-sessions".into(),
                ));
                return None;
            }
            if counts.running < self.opts.max_concurrent {
                counts.pending -= 1;
                counts.numbered += 1;
                counts.running += 1;
                return Some((counts.numbered, counts.running));
            }
            if deadline.expired() || self.cancel.is_cancelled() {
                drop(counts);
                self.refuse(&TransportError::Timeout {
                    what: "waiting for a session slot (--timeout, --max-concurrent)".into(),
                    seconds: self.opts.timeout.as_secs_f64().round() as u64,
                });
                return None;
            }
            counts = self
                .shared
                .changed
                .wait_timeout(counts, POLL)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn run_session(&self, greeted: Greeted, number: u64, concurrent: usize, deadline: &Deadline) {
        let waited_seconds = self.accepted.elapsed().as_secs_f64();
        let stopwatch = Stopwatch::start();
        let mut transport = FirstMessage::new(greeted.hello, greeted.transport);
        let (result, outcome) = match greeted.party {
            Ok(mut party) => {
                let result = privset_net::drive(party.as_mut(), &mut transport, &mut |_| {})
                    .map_err(|e| SessionError::of_run(&e, deadline.expired(), self.opts.timeout));
                (result, party.outcome())
            }
            Err(f) => (
                Err(SessionError {
                    kind: failure_kind(f.kind),
                    message: f.message,
                }),
                serde_json::Value::Null,
            ),
        };
        let counters = transport.counters();
        drop(transport);
        let (cpu_seconds, _) = stopwatch.elapsed();
        let (client, client_sha256) = greeted.client.unzip();
        let log = SessionLog {
            role: self.service.role(),
            session: number,
            peer: self.peer.to_string(),
            client,
            client_sha256,
            transport: greeted.kind,
            ok: result.is_ok(),
            started: self.started,
            waited_seconds,
            concurrent,
            bytes_sent: counters.sent,
            bytes_received: counters.received,
            cpu_seconds,
            wall_seconds: self.accepted.elapsed().as_secs_f64(),
            peak_rss_mib: metrics::peak_rss_mib(),
            outcome,
            error: result.err(),
        };
        (self.reporter.on_session)(&log);
        let mut counts = self.shared.lock();
        counts.running -= 1;
        counts.ended += 1;
        counts.failed += u64::from(!log.ok);
        drop(counts);
        self.shared.changed.notify_all();
    }
}

fn failure_kind(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Input => "input",
        FailureKind::Config => "config",
        FailureKind::Peer => "peer_misbehaved",
        FailureKind::Transport => "transport",
        FailureKind::Rejected => "rejected",
        FailureKind::Cancelled => "cancelled",
        FailureKind::Other => "other",
    }
}
