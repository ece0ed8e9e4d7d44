//! A long-lived endpoint: one listener serving many sessions of one party role at
//! once (the APSI server and judge, `privset apsi serve` / `privset judge serve` and
//! Python's `ApsiServer.serve` / `ApsiJudge.serve`).
//!
//! * The shared state (the server's prepared set, the judge's key and policy) lives in
//!   a [`Service`] behind an `Arc`; each session gets a fresh party from it, which
//!   borrows that state rather than copying it.
//! * The accepting thread only accepts: every connection gets its own thread, which
//!   completes the TLS handshake (or plaintext greeting), runs the party and logs it.
//!   At most `max_concurrent` connections are in progress; further ones wait in the
//!   kernel's backlog until one ends.
//! * Every connection has a deadline of `timeout` from its accept: a silent or slow
//!   client is cut off then (its socket shut down through its own [`Cancel`]), without
//!   delaying any other session.
//! * Each session that got past the handshake ends in one [`SessionLog`] (number, peer,
//!   outcome, bytes, time, error kind and message), passed to the caller's callback.
//!   A connection that fails the handshake is no session: it is reported to the
//!   callback's sibling `on_refused` and does not count towards `max_sessions`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use privset_crypto::rng::SessionRng;
use privset_net::{
    Cancel, ConnectOptions, PlainTcpTransport, RunError, TlsAcceptor, TlsFiles, Transport,
    TransportError,
};
use privset_protocols::{Party, ProtocolError};

use crate::fail::{Failure, FailureKind};
use crate::metrics::{self, Stopwatch};

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
    /// 1, 2, ... in the order the sessions got past the handshake.
    pub session: u64,
    pub peer: String,
    pub transport: &'static str,
    pub ok: bool,
    /// When the connection was accepted, in seconds since the Unix epoch.
    pub started: f64,
    /// Sessions in progress when this one got past the handshake, itself included.
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
    /// Connections refused at the handshake (not sessions).
    pub refused: u64,
}

/// Called with each session's log line, from the session's thread.
pub type OnSession = dyn Fn(&SessionLog) + Send + Sync;
/// Called with each connection refused at the handshake (peer, why).
pub type OnRefused = dyn Fn(SocketAddr, &TransportError) + Send + Sync;

/// Where the endpoint reports. Called from the sessions' threads.
pub struct Reporter {
    pub on_session: Box<OnSession>,
    pub on_refused: Box<OnRefused>,
}

/// Connections in progress and sessions done, shared by the accepting thread and the
/// sessions' threads.
#[derive(Default)]
struct Counts {
    /// Connections not yet past the handshake.
    handshaking: usize,
    /// Sessions past the handshake and not yet ended.
    running: usize,
    /// Sessions numbered so far.
    numbered: u64,
    ended: u64,
    failed: u64,
    refused: u64,
}

impl Counts {
    fn in_progress(&self) -> usize {
        self.handshaking + self.running
    }
}

struct Shared {
    counts: Mutex<Counts>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How often the accepting thread looks for a connection, a cancel or a free slot.
const POLL: Duration = Duration::from_millis(20);

/// Serves sessions of `service` on `listener` until `max_sessions` have ended or
/// `opts.cancel` is cancelled; returns what it did. Fails only if the listener or the
/// TLS files are unusable.
pub fn serve(
    listener: &TcpListener,
    opts: &ServeOptions,
    service: Arc<dyn Service>,
    reporter: Arc<Reporter>,
) -> Result<ServeSummary, Failure> {
    if opts.max_concurrent == 0 {
        return Err(Failure::config(
            "serving needs at least one concurrent session",
        ));
    }
    let acceptor = match &opts.tls {
        Some(files) => Some(Arc::new(TlsAcceptor::new(files)?)),
        None => None,
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| Failure::other(format!("cannot configure the listener: {e}")))?;
    let shared = Arc::new(Shared {
        counts: Mutex::new(Counts::default()),
        changed: Condvar::new(),
    });
    let max = opts.max_sessions.unwrap_or(u64::MAX);
    // Cut off connections still handshaking once no session can follow.
    let closing = Cancel::new();
    let mut threads = Vec::new();
    loop {
        // Room for one more connection: a free slot, and (with --max-sessions) sessions
        // still to number. Connections still in their handshake do not count against
        // --max-sessions: a client that never completes its handshake must not keep an
        // honest one out until its deadline. One that completes after the last session
        // was numbered is turned away.
        {
            let mut counts = shared.lock();
            loop {
                if opts.cancel.is_cancelled() || counts.ended >= max {
                    break;
                }
                if counts.in_progress() < opts.max_concurrent && counts.numbered < max {
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
        shared.lock().handshaking += 1;
        let connection = Connection {
            stream,
            peer,
            accepted: Instant::now(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
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
            .spawn(move || connection.run());
        match spawned {
            Ok(handle) => threads.push(handle),
            Err(e) => {
                let mut counts = shared.lock();
                counts.handshaking -= 1;
                counts.refused += 1;
                drop(counts);
                (reporter.on_refused)(
                    peer,
                    &TransportError::Config(format!("cannot start a session thread: {e}")),
                );
            }
        }
        threads.retain(|t| !t.is_finished());
    }
    // Stopped accepting: let the sessions in progress end (cut off if cancelled); no
    // connection still handshaking can become one.
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
    stream: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
    started: f64,
    opts: ServeOptions,
    /// Cancelled when the endpoint stops accepting.
    closing: Cancel,
    max: u64,
    acceptor: Option<Arc<TlsAcceptor>>,
    service: Arc<dyn Service>,
    reporter: Arc<Reporter>,
    shared: Arc<Shared>,
}

/// Cuts a connection off at its deadline, or when the endpoint is cancelled, unless
/// the connection ends first (dropping the guard).
struct Deadline {
    expired: Arc<AtomicBool>,
    _done: mpsc::Sender<()>,
}

impl Deadline {
    fn start(deadline: Instant, cancel: Cancel, endpoint: Cancel, closing: Cancel) -> Self {
        let expired = Arc::new(AtomicBool::new(false));
        let (done, ended) = mpsc::channel::<()>();
        let flag = expired.clone();
        std::thread::spawn(move || {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match ended.recv_timeout(left.min(Duration::from_millis(100))) {
                    Err(RecvTimeoutError::Timeout) => {
                        if endpoint.is_cancelled() || closing.is_cancelled() {
                            cancel.cancel();
                            return;
                        }
                        if Instant::now() >= deadline {
                            flag.store(true, Ordering::SeqCst);
                            cancel.cancel();
                            return;
                        }
                    }
                    // The connection ended (its guard dropped).
                    _ => return,
                }
            }
        });
        Self {
            expired,
            _done: done,
        }
    }

    fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }
}

impl Connection {
    fn run(self) {
        let cancel = Cancel::new();
        let deadline = Deadline::start(
            self.accepted + self.opts.timeout,
            cancel.clone(),
            self.opts.cancel.clone(),
            self.closing.clone(),
        );
        let conn_opts = ConnectOptions {
            connect_timeout: self.opts.timeout,
            handshake_timeout: self.opts.timeout,
            io_timeout: self.opts.timeout,
            server_name: None,
            cancel,
        };
        let stopwatch = Stopwatch::start();
        let opened: Result<(Box<dyn Transport + Send>, &'static str), TransportError> =
            match &self.acceptor {
                Some(acceptor) => acceptor
                    .handshake(self.stream, self.peer, &conn_opts)
                    .map(|t| (Box::new(t) as Box<dyn Transport + Send>, "tcp+mtls")),
                None => PlainTcpTransport::accept_stream(self.stream, self.peer, &conn_opts)
                    .map(|t| (Box::new(t) as Box<dyn Transport + Send>, "tcp-plaintext")),
            };
        let (mut transport, kind) = match opened {
            Ok(t) => t,
            Err(e) => {
                let mut counts = self.shared.lock();
                counts.handshaking -= 1;
                counts.refused += 1;
                drop(counts);
                self.shared.changed.notify_all();
                (self.reporter.on_refused)(self.peer, &e);
                return;
            }
        };
        let (number, concurrent) = {
            let mut counts = self.shared.lock();
            counts.handshaking -= 1;
            if counts.numbered >= self.max {
                // Over --max-sessions: another connection took the last session.
                counts.refused += 1;
                drop(counts);
                self.shared.changed.notify_all();
                (self.reporter.on_refused)(
                    self.peer,
                    &TransportError::Config("the endpoint has served its --max-sessions".into()),
                );
                return;
            }
            counts.numbered += 1;
            counts.running += 1;
            (counts.numbered, counts.running)
        };
        let role = self.service.role();
        let (result, outcome) = match self.service.party(SessionRng::from_os().seed()) {
            Ok(mut party) => {
                let result = privset_net::drive(party.as_mut(), transport.as_mut(), &mut |_| {})
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
        drop(deadline);
        let (cpu_seconds, _) = stopwatch.elapsed();
        let log = SessionLog {
            role,
            session: number,
            peer: self.peer.to_string(),
            transport: kind,
            ok: result.is_ok(),
            started: self.started,
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
