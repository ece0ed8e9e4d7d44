//! Where the bucket tasks of two organisations meet over mutual TLS (`privset.ray` with
//! `listen` / `peer`, docs/scale.md).
//!
//! The listening organisation's driver serves the rendezvous on its plan port + 1. Each
//! of its bucket tasks binds a port of the organisation's range on whatever node Ray
//! chose, registers that endpoint here under its round and unit, and waits for its
//! peer; the other organisation's task for the same unit asks here where to connect.
//! A registration lasts as long as the connection that made it: a task killed before
//! its peer connected withdraws its endpoint with its socket, and its retry registers
//! a new one.
//!
//! A round is one plan session's run (both parties derive its id from the session).
//! A task whose session ended reports the unit finished (before recording it), so that
//! the peer's task of that unit, retried after being killed between the session's end
//! and its own record, learns that no peer will come and returns without running; its
//! driver then aborts the round here (no later wave starts on either side: a later
//! unit would need the missing one), and the next plan session runs the unit again on
//! both sides.
//!
//! Every connection is mutual TLS under the job's CA, and only this organisation's
//! tasks may register: they show the driver's random token. A request is one message:
//!
//! ```text
//! "PSRV" | version 1 | kind | round id (32) | unit (u32 BE) | body
//!   kind 1 register: token (32) | endpoint length (u8) | endpoint (UTF-8 "host:port")
//!   kind 2 find, 3 check (a registered task's look while it waits), 5 abort: no body
//!   kind 4 finished: side (u8: 0 the listening organisation's task, 1 the other's)
//! ```
//!
//! and the answer one message: `status | length (u8) | text`, status 0 ok (a find's
//! text is the endpoint), 1 refused (the text says why), 2 the peer's task has
//! finished this unit, 3 the round is aborted. A find waits for a registration up to
//! the server's timeout; the server keeps only the latest round it has heard of.

use std::collections::{HashMap, HashSet};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use privset_net::{Cancel, ConnectOptions, TlsAcceptor, TlsFiles, TlsTransport, Transport, tls};
use privset_protocols::bucket_plan::MAX_BUCKETS;

use crate::fail::{Failure, FailureKind};

const MAGIC: &[u8; 4] = b"PSRV";
const VERSION: u8 = 1;
const REGISTER: u8 = 1;
const FIND: u8 = 2;
const CHECK: u8 = 3;
const FINISHED: u8 = 4;
const ABORT: u8 = 5;
/// The fixed part of a request: magic, version, kind, round id, unit.
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

/// A round's id and a unit number.
pub type Slot = ([u8; 32], u32);

/// Which organisation's task a report comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The organisation that listens (and serves the rendezvous).
    Listening,
    /// The organisation that connects.
    Connecting,
}

impl Side {
    fn other(self) -> Self {
        match self {
            Side::Listening => Side::Connecting,
            Side::Connecting => Side::Listening,
        }
    }
}

/// What a task learns from the rendezvous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Go on: a find's endpoint, or nothing (registered; nothing new for a check).
    Ok(String),
    /// The peer's task has recorded this unit: none will come this round.
    PeerFinished,
    /// The round is aborted: no unit not yet met runs in it.
    Aborted,
}

/// The latest round's state.
#[derive(Default)]
struct Round {
    id: [u8; 32],
    /// The last registration's number.
    numbered: u64,
    /// Each unit's endpoint, with the number of the registration that made it (a
    /// withdrawal removes only its own).
    endpoints: HashMap<u32, (u64, String)>,
    finished: HashSet<(u32, Side)>,
    aborted: bool,
}

/// The rounds' state, shared by every connection's thread.
#[derive(Default)]
struct Registry {
    round: Mutex<Round>,
    changed: Condvar,
}

impl Registry {
    /// The state of round `id`: a round not heard of before replaces the last one (its
    /// tasks have all ended once a new plan session ran).
    fn lock(&self, id: &[u8; 32]) -> MutexGuard<'_, Round> {
        let mut round = self.round.lock().unwrap_or_else(|p| p.into_inner());
        if round.id != *id {
            *round = Round {
                id: *id,
                ..Round::default()
            };
        }
        round
    }

    /// What `side`'s task of `unit` is told before it runs: that the peer's has
    /// finished, or the round is aborted.
    fn settled(round: &Round, unit: u32, side: Side) -> Option<Answer> {
        if round.aborted {
            Some(Answer::Aborted)
        } else if round.finished.contains(&(unit, side.other())) {
            Some(Answer::PeerFinished)
        } else {
            None
        }
    }

    fn register(&self, (id, unit): Slot, endpoint: String) -> Result<u64, Answer> {
        let mut round = self.lock(&id);
        if let Some(answer) = Self::settled(&round, unit, Side::Listening) {
            return Err(answer);
        }
        round.numbered += 1;
        let number = round.numbered;
        round.endpoints.insert(unit, (number, endpoint));
        self.changed.notify_all();
        Ok(number)
    }

    /// Withdraws registration `number` (a registration of an older round is gone with
    /// its round: the current one is left as it is).
    fn withdraw(&self, (id, unit): Slot, number: u64) {
        let mut round = self.round.lock().unwrap_or_else(|p| p.into_inner());
        if round.id == id
            && round
                .endpoints
                .get(&unit)
                .is_some_and(|(n, _)| *n == number)
        {
            round.endpoints.remove(&unit);
        }
    }

    fn finished(&self, (id, unit): Slot, side: Side) {
        self.lock(&id).finished.insert((unit, side));
        self.changed.notify_all();
    }

    fn abort(&self, id: &[u8; 32]) {
        self.lock(id).aborted = true;
        self.changed.notify_all();
    }

    fn aborted(&self, id: &[u8; 32]) -> bool {
        self.lock(id).aborted
    }

    fn check(&self, (id, unit): Slot) -> Answer {
        let round = self.lock(&id);
        Self::settled(&round, unit, Side::Listening).unwrap_or(Answer::Ok(String::new()))
    }

    /// The endpoint of `unit` once registered (or what settles it), or `None` at
    /// `deadline` or a cancel.
    fn find(&self, (id, unit): Slot, deadline: Instant, cancel: &Cancel) -> Option<Answer> {
        let mut round = self.lock(&id);
        loop {
            if let Some(answer) = Self::settled(&round, unit, Side::Connecting) {
                return Some(answer);
            }
            if let Some((_, endpoint)) = round.endpoints.get(&unit) {
                return Some(Answer::Ok(endpoint.clone()));
            }
            let now = Instant::now();
            if now >= deadline || cancel.is_cancelled() || round.id != id {
                return None;
            }
            let wait = (deadline - now).min(POLL);
            round = self
                .changed
                .wait_timeout(round, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// A running rendezvous: stopped (every connection cut off) when dropped.
pub struct Server {
    addr: SocketAddr,
    registry: Arc<Registry>,
    cancel: Cancel,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `bind` and serves registrations carrying `token`, finds and reports,
    /// each connection on its own thread; a registration or a find lasts at most
    /// `timeout`.
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
        let registry = Arc::new(Registry::default());
        let serving = Serving {
            acceptor,
            registry: registry.clone(),
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
            registry,
            cancel,
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Aborts round `round` (the driver's own, when one of its units did not run).
    pub fn abort(&self, round: &[u8; 32]) {
        self.registry.abort(round);
    }

    /// True once round `round` is aborted (by either driver).
    pub fn aborted(&self, round: &[u8; 32]) -> bool {
        self.registry.aborted(round)
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
        let reply = |transport: &mut TlsTransport, answer: Answer| {
            let (status, text) = match answer {
                Answer::Ok(text) => (OK, text),
                Answer::PeerFinished => (PEER_FINISHED, String::new()),
                Answer::Aborted => (ABORTED, String::new()),
            };
            transport.send(&encode_answer(status, &text)).is_ok()
        };
        let refuse = |transport: &mut TlsTransport, why: &str| {
            let _ = transport.send(&encode_answer(REFUSED, why));
        };
        match Request::parse(&message) {
            Err(reason) => refuse(transport, &reason),
            Ok(Request::Register { token, .. }) if !same(&token, &self.token) => refuse(
                transport,
                "only the listening organisation's own tasks may register",
            ),
            Ok(Request::Register { slot, endpoint, .. }) => {
                match self.registry.register(slot, endpoint) {
                    Err(answer) => {
                        reply(transport, answer);
                    }
                    Ok(number) => {
                        if reply(transport, Answer::Ok(String::new())) {
                            // Held until the task closes the connection (its peer
                            // connected, or it died) or the timeout.
                            let _ = transport.recv(1);
                        }
                        self.registry.withdraw(slot, number);
                    }
                }
            }
            Ok(Request::Find { slot }) => {
                let deadline = Instant::now() + self.timeout;
                match self.registry.find(slot, deadline, &self.cancel) {
                    Some(answer) => {
                        reply(transport, answer);
                    }
                    None => refuse(
                        transport,
                        &format!(
                            "no task of unit {} registered within {} s",
                            slot.1,
                            self.timeout.as_secs()
                        ),
                    ),
                }
            }
            Ok(Request::Check { slot }) => {
                reply(transport, self.registry.check(slot));
            }
            Ok(Request::Finished { slot, side }) => {
                self.registry.finished(slot, side);
                reply(transport, Answer::Ok(String::new()));
            }
            Ok(Request::Abort { slot }) => {
                self.registry.abort(&slot.0);
                reply(transport, Answer::Ok(String::new()));
            }
        }
    }
}

const OK: u8 = 0;
const REFUSED: u8 = 1;
const PEER_FINISHED: u8 = 2;
const ABORTED: u8 = 3;

/// Compares tokens in time independent of where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn encode_answer(status: u8, text: &str) -> Vec<u8> {
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
    Check {
        slot: Slot,
    },
    Finished {
        slot: Slot,
        side: Side,
    },
    Abort {
        slot: Slot,
    },
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let (kind, slot) = match self {
            Request::Register { slot, .. } => (REGISTER, slot),
            Request::Find { slot } => (FIND, slot),
            Request::Check { slot } => (CHECK, slot),
            Request::Finished { slot, .. } => (FINISHED, slot),
            Request::Abort { slot } => (ABORT, slot),
        };
        let mut out = Vec::with_capacity(MAX_REQUEST);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[VERSION, kind]);
        out.extend_from_slice(&slot.0);
        out.extend_from_slice(&slot.1.to_be_bytes());
        match self {
            Request::Register {
                token, endpoint, ..
            } => {
                out.extend_from_slice(token);
                out.push(endpoint.len() as u8);
                out.extend_from_slice(endpoint.as_bytes());
            }
            Request::Finished { side, .. } => out.push(match side {
                Side::Listening => 0,
                Side::Connecting => 1,
            }),
            _ => {}
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
        let round: [u8; 32] = message[6..38].try_into().expect("32 bytes");
        let unit = u32::from_be_bytes(message[38..42].try_into().expect("4 bytes"));
        // What a round records is bounded: at most this many units, two reports each.
        if unit >= MAX_BUCKETS {
            return Err(format!(
                "unit {unit}: a plan has fewer than {MAX_BUCKETS} units"
            ));
        }
        let slot = (round, unit);
        let wrong_length = || "a rendezvous request of the wrong length".to_string();
        let rest = &message[HEAD..];
        match message[5] {
            FIND | CHECK | ABORT if !rest.is_empty() => Err(wrong_length()),
            FIND => Ok(Request::Find { slot }),
            CHECK => Ok(Request::Check { slot }),
            ABORT => Ok(Request::Abort { slot }),
            FINISHED => match rest {
                [0] => Ok(Request::Finished {
                    slot,
                    side: Side::Listening,
                }),
                [1] => Ok(Request::Finished {
                    slot,
                    side: Side::Connecting,
                }),
                [side] => Err(format!("unknown side {side}")),
                _ => Err(wrong_length()),
            },
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
            REGISTER => Err(wrong_length()),
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

/// How a task reaches a rendezvous: its address, the TLS files and options.
pub struct Reach<'a> {
    pub addr: &'a str,
    pub files: &'a TlsFiles,
    pub opts: ConnectOptions,
}

/// A task's registration: withdrawn when dropped (its connection closed).
pub struct Registration {
    _transport: TlsTransport,
}

/// Registers `endpoint` for `slot`; the registration holds until the returned value
/// is dropped. `Err(answer)` when the slot is settled (the peer's task finished the
/// unit, or the round is aborted): nothing is registered. The reach's server name is
/// the organisation's own certificate's name ([`tls::certificate_name`]).
pub fn register(
    to: &Reach<'_>,
    slot: Slot,
    token: [u8; 32],
    endpoint: &str,
) -> Result<Result<Registration, Answer>, Failure> {
    check_endpoint(endpoint).map_err(Failure::config)?;
    let request = Request::Register {
        slot,
        token,
        endpoint: endpoint.to_string(),
    };
    let (transport, answer) = ask(to, &request)?;
    Ok(match answer {
        Answer::Ok(_) => Ok(Registration {
            _transport: transport,
        }),
        settled => Err(settled),
    })
}

/// Where the task of `slot` listens (waiting for its registration up to the server's
/// timeout), or what settles the slot.
pub fn find(to: &Reach<'_>, slot: Slot) -> Result<Answer, Failure> {
    let (_, answer) = ask(to, &Request::Find { slot })?;
    if let Answer::Ok(endpoint) = &answer {
        check_endpoint(endpoint)
            .map_err(|e| Failure::peer(format!("the rendezvous answered {e}")))?;
    }
    Ok(answer)
}

/// A registered task's look while it waits: whether the slot is settled.
pub fn check(to: &Reach<'_>, slot: Slot) -> Result<Answer, Failure> {
    Ok(ask(to, &Request::Check { slot })?.1)
}

/// Reports `side`'s task of `slot` finished (its session ended; it records next).
pub fn finished(to: &Reach<'_>, slot: Slot, side: Side) -> Result<(), Failure> {
    ask(to, &Request::Finished { slot, side }).map(drop)
}

/// Aborts the round of `round` (the connecting driver's, when one of its units did
/// not run).
pub fn abort(to: &Reach<'_>, round: [u8; 32]) -> Result<(), Failure> {
    ask(to, &Request::Abort { slot: (round, 0) }).map(drop)
}

/// Sends `request` and reads the answer; a refusal is an error.
fn ask(to: &Reach<'_>, request: &Request) -> Result<(TlsTransport, Answer), Failure> {
    let addr = to.addr;
    let mut transport = tls::connect(addr, to.files, &to.opts)?;
    transport.send(&request.encode())?;
    let reply = transport.recv(MAX_ANSWER)?;
    let [status, len, text @ ..] = reply.as_slice() else {
        return Err(Failure::peer(format!(
            "the rendezvous at {addr} answered nonsense"
        )));
    };
    if text.len() != *len as usize {
        return Err(Failure::peer(format!(
            "the rendezvous at {addr} answered nonsense"
        )));
    }
    let text = String::from_utf8_lossy(text).into_owned();
    let answer = match *status {
        OK => Answer::Ok(text),
        PEER_FINISHED => Answer::PeerFinished,
        ABORTED => Answer::Aborted,
        _ => {
            return Err(Failure::new(
                FailureKind::Transport,
                format!("the rendezvous at {addr} refused: {text}"),
            ));
        }
    };
    Ok((transport, answer))
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

    fn reach<'a>(addr: &'a str, files: &'a TlsFiles) -> Reach<'a> {
        let t = Duration::from_secs(5);
        Reach {
            addr,
            files,
            opts: ConnectOptions {
                connect_timeout: t,
                handshake_timeout: t,
                io_timeout: t,
                server_name: Some("receiver".into()),
                cancel: Cancel::new(),
            },
        }
    }

    const TOKEN: [u8; 32] = [7; 32];

    /// A find on its own thread (it waits for what the test does next).
    fn find_later(
        addr: &str,
        files: &TlsFiles,
        slot: Slot,
    ) -> std::thread::JoinHandle<Result<Answer, Failure>> {
        let (addr, files) = (addr.to_string(), files.clone());
        std::thread::spawn(move || find(&reach(&addr, &files), slot))
    }

    #[test]
    fn a_find_gets_the_endpoint_registered_and_a_withdrawn_one_is_gone() {
        let (own, peer) = certs("find");
        let server = Server::start("127.0.0.1:0", &own, TOKEN, Duration::from_secs(2)).unwrap();
        let addr = server.local_addr().to_string();
        let round = [1u8; 32];
        assert_eq!(tls::certificate_name(&own).unwrap(), "receiver");
        // A find waits for the registration.
        let finder = find_later(&addr, &peer, (round, 3));
        std::thread::sleep(Duration::from_millis(300));
        let held = register(&reach(&addr, &own), (round, 3), TOKEN, "10.0.0.2:7010")
            .unwrap()
            .unwrap();
        assert_eq!(
            finder.join().unwrap().unwrap(),
            Answer::Ok("10.0.0.2:7010".into())
        );
        let other = find(&reach(&addr, &peer), (round, 4)).unwrap_err();
        assert!(
            other.message.contains("no task of unit 4"),
            "{}",
            other.message
        );
        // Withdrawn with its connection.
        drop(held);
        std::thread::sleep(Duration::from_millis(300));
        let gone = find(&reach(&addr, &peer), (round, 3)).unwrap_err();
        assert!(
            gone.message.contains("registered within"),
            "{}",
            gone.message
        );
        // A retry's registration replaces an older one of the same unit.
        let _a = register(&reach(&addr, &own), (round, 5), TOKEN, "h1:1").unwrap();
        let _b = register(&reach(&addr, &own), (round, 5), TOKEN, "h2:2").unwrap();
        assert_eq!(
            find(&reach(&addr, &peer), (round, 5)).unwrap(),
            Answer::Ok("h2:2".into())
        );
        // A new round forgets the last one's registrations.
        let next = find(&reach(&addr, &peer), ([2u8; 32], 5)).unwrap_err();
        assert!(
            next.message.contains("registered within"),
            "{}",
            next.message
        );
    }

    #[test]
    fn a_unit_the_peer_finished_or_an_aborted_round_settles_the_waiting_task() {
        let (own, peer) = certs("settle");
        let server = Server::start("127.0.0.1:0", &own, TOKEN, Duration::from_secs(5)).unwrap();
        let addr = server.local_addr().to_string();
        let round = [3u8; 32];
        // The connecting side finished unit 1: the listening side's retry is told so
        // when it registers, and (registered first) when it checks.
        finished(&reach(&addr, &peer), (round, 1), Side::Connecting).unwrap();
        let r = register(&reach(&addr, &own), (round, 1), TOKEN, "h:1").unwrap();
        assert!(matches!(r, Err(Answer::PeerFinished)));
        let held = register(&reach(&addr, &own), (round, 2), TOKEN, "h:2").unwrap();
        assert!(held.is_ok());
        assert_eq!(
            check(&reach(&addr, &own), (round, 2)).unwrap(),
            Answer::Ok(String::new())
        );
        finished(&reach(&addr, &peer), (round, 2), Side::Connecting).unwrap();
        assert_eq!(
            check(&reach(&addr, &own), (round, 2)).unwrap(),
            Answer::PeerFinished
        );
        // The listening side finished unit 6: a waiting find learns it at once.
        let finder = find_later(&addr, &peer, (round, 6));
        std::thread::sleep(Duration::from_millis(200));
        finished(&reach(&addr, &own), (round, 6), Side::Listening).unwrap();
        assert_eq!(finder.join().unwrap().unwrap(), Answer::PeerFinished);
        // An abort (from the connecting driver) settles every unit not yet met.
        assert!(!server.aborted(&round));
        let finder = find_later(&addr, &peer, (round, 9));
        std::thread::sleep(Duration::from_millis(200));
        abort(&reach(&addr, &peer), round).unwrap();
        assert_eq!(finder.join().unwrap().unwrap(), Answer::Aborted);
        assert!(server.aborted(&round));
        assert_eq!(
            check(&reach(&addr, &own), (round, 2)).unwrap(),
            Answer::Aborted
        );
        let r = register(&reach(&addr, &own), (round, 10), TOKEN, "h:10").unwrap();
        assert!(matches!(r, Err(Answer::Aborted)));
        // The next round starts clean; the driver's own abort counts the same.
        let next = [4u8; 32];
        assert!(!server.aborted(&next));
        assert!(
            register(&reach(&addr, &own), (next, 1), TOKEN, "h:1")
                .unwrap()
                .is_ok()
        );
        server.abort(&next);
        assert_eq!(
            find(&reach(&addr, &peer), (next, 1)).unwrap(),
            Answer::Aborted
        );
    }

    #[test]
    fn registrations_without_the_token_and_malformed_requests_are_refused() {
        let (own, peer) = certs("refuse");
        let server = Server::start("127.0.0.1:0", &own, TOKEN, Duration::from_secs(1)).unwrap();
        let addr = server.local_addr().to_string();
        let e = register(&reach(&addr, &peer), ([1; 32], 0), [8u8; 32], "evil:1")
            .err()
            .unwrap();
        assert!(
            e.message.contains("own tasks may register"),
            "{}",
            e.message
        );
        assert!(register(&reach(&addr, &own), ([1; 32], 0), TOKEN, "no-port").is_err());
        let head = |kind: u8| [&b"PSRV\x01"[..], &[kind], &[0; 36]].concat();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"PSRV".to_vec(), "not a privset rendezvous"),
            ([&b"PSRV\x02\x02"[..], &[0; 36]].concat(), "version 2"),
            (head(9), "kind 9"),
            ([head(2), vec![0]].concat(), "wrong length"),
            ([head(3), vec![0]].concat(), "wrong length"),
            ([head(5), vec![0]].concat(), "wrong length"),
            (head(4), "wrong length"),
            ([head(4), vec![2]].concat(), "unknown side 2"),
            (
                [
                    &b"PSRV\x01\x04"[..],
                    &[0; 32],
                    &(1u32 << 20).to_be_bytes(),
                    &[1],
                ]
                .concat(),
                "fewer than 1048576 units",
            ),
            (
                [head(1), vec![7; 32], vec![5], b"a:1".to_vec()].concat(),
                "wrong length",
            ),
            (
                [head(1), vec![7; 32], vec![3], b"a:0".to_vec()].concat(),
                "not a host:port",
            ),
            (
                [head(1), vec![7; 32], vec![2], vec![0xff, 0xfe]].concat(),
                "not UTF-8",
            ),
        ];
        for (request, why) in cases {
            let mut t = tls::connect(&addr, &peer, &reach(&addr, &peer).opts).unwrap();
            t.send(&request).unwrap();
            let reply = t.recv(MAX_ANSWER).unwrap();
            assert_eq!(reply[0], REFUSED);
            let text = String::from_utf8_lossy(&reply[2..]);
            assert!(text.contains(why), "{why}: {text}");
        }
        // Too long a request is cut off before it is read.
        let mut t = tls::connect(&addr, &peer, &reach(&addr, &peer).opts).unwrap();
        t.send(&vec![0; MAX_REQUEST + 1]).unwrap();
        assert!(t.recv(MAX_ANSWER).is_err());
    }
}
