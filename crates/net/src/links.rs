//! The TCP links of one participant of an n-party session: mutual TLS 1.3 (or
//! plaintext, only when asked for explicitly), one connection per peer it talks to.
//!
//! Who listens is decided by the indices alone, so every participant computes the same
//! answer without talking: in a star the hub listens and every spoke connects to it; in
//! a mesh, of each pair the lower index listens and the higher connects. A participant
//! that listens binds its own address once and accepts all its connections there, while
//! it connects to the others at the same time (a connector never waits for an acceptor
//! busy with its own connections).
//!
//! An accepted connection says which participant it is in a link preamble, the first
//! frame inside TLS (after the plaintext greeting without TLS), in the same u32 length
//! framing as every message:
//!
//! ```text
//! connector -> acceptor                      acceptor -> connector
//! offset size field                          offset size field
//!      0    4 magic "PSLK"                        0    4 magic "PSLK"
//!      4    1 preamble version (1)                4    1 preamble version (1)
//!      5    1 connector's participant index       5    1 status: 0 accepted, 1 refused
//!      6    1 acceptor's participant index        6    2 reason length R (big-endian,
//!      7    1 session label length L (<= 255)              at most 1024)
//!      8    L session label (UTF-8)               8    R reason (UTF-8), empty if accepted
//! ```
//!
//! The acceptor refuses (and fails, telling the connector why) a preamble that is
//! malformed, names another session label or another acceptor, or claims an index that
//! is out of range, that does not connect to it in this topology, or that is already
//! linked: a clear error at once instead of a protocol run between the wrong
//! participants. The session label keeps concurrent sessions at the same addresses
//! apart; participants' settings (their count among them) are checked later by the
//! protocol's hellos, where a mismatch is the protocol's `Incompatible` error.
//!
//! Set-up is bounded: connecting retries until `connect_timeout`, accepting waits for
//! all expected connectors until `connect_timeout`, and a connection that stays silent
//! (no TLS handshake, no preamble) fails after `handshake_timeout`. On the first failure
//! every other connection attempt is stopped.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use privset_protocols::engine::Topology;
use privset_protocols::party::PartyId;

use crate::Transport;
use crate::cancel::Cancel;
use crate::driver::LinkSet;
use crate::error::{TransportError, secs};
use crate::socket::{self, ConnectOptions};
use crate::tcp::PlainTcpTransport;
use crate::tls::{self, TlsFiles, TlsTransport};

/// Magic of the link preamble and its reply.
pub const PREAMBLE_MAGIC: [u8; 4] = *b"PSLK";
/// Version of the link preamble.
pub const PREAMBLE_VERSION: u8 = 1;
/// Longest session label.
pub const MAX_SESSION_LABEL: usize = 255;
/// Longest refusal reason in a reply.
pub const MAX_REFUSAL_REASON: usize = 1024;
const PREAMBLE_HEADER: usize = 8;
const MAX_PREAMBLE: usize = PREAMBLE_HEADER + MAX_SESSION_LABEL;
const MAX_REPLY: usize = PREAMBLE_HEADER + MAX_REFUSAL_REASON;

/// What a connector announces right after the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preamble {
    /// The connector's participant index.
    pub connector: PartyId,
    /// The participant it means to reach.
    pub acceptor: PartyId,
    /// The session label both must share.
    pub session: String,
}

impl Preamble {
    /// The preamble's bytes (the label must be at most [`MAX_SESSION_LABEL`] bytes).
    pub fn encode(&self) -> Vec<u8> {
        let label = self.session.as_bytes();
        let len = label.len().min(MAX_SESSION_LABEL);
        let mut out = Vec::with_capacity(PREAMBLE_HEADER + len);
        out.extend_from_slice(&PREAMBLE_MAGIC);
        out.extend_from_slice(&[PREAMBLE_VERSION, self.connector, self.acceptor, len as u8]);
        out.extend_from_slice(&label[..len]);
        out
    }

    /// Parses a preamble; the error says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        check_head(bytes, "link preamble")?;
        let len = bytes[7] as usize;
        if bytes.len() != PREAMBLE_HEADER + len {
            return Err(format!(
                "link preamble of {} bytes announces a {len}-byte session label",
                bytes.len()
            ));
        }
        let session = std::str::from_utf8(&bytes[PREAMBLE_HEADER..])
            .map_err(|_| "the session label in the link preamble is not UTF-8".to_string())?;
        Ok(Self {
            connector: bytes[5],
            acceptor: bytes[6],
            session: session.to_string(),
        })
    }
}

fn check_head(bytes: &[u8], what: &str) -> Result<(), String> {
    if bytes.len() < PREAMBLE_HEADER || bytes[..4] != PREAMBLE_MAGIC {
        return Err(format!(
            "the first message is not a privset {what} (is the peer an n-party participant?)"
        ));
    }
    if bytes[4] != PREAMBLE_VERSION {
        return Err(format!(
            "{what} version {}, this build speaks {PREAMBLE_VERSION}",
            bytes[4]
        ));
    }
    Ok(())
}

/// The acceptor's reply: accepted (`None`) or refused with a reason (truncated to
/// [`MAX_REFUSAL_REASON`] bytes).
pub fn encode_reply(refusal: Option<&str>) -> Vec<u8> {
    let reason = refusal.unwrap_or("");
    let mut end = reason.len().min(MAX_REFUSAL_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::with_capacity(PREAMBLE_HEADER + end);
    out.extend_from_slice(&PREAMBLE_MAGIC);
    out.extend_from_slice(&[PREAMBLE_VERSION, u8::from(refusal.is_some())]);
    out.extend_from_slice(&(end as u16).to_be_bytes());
    out.extend_from_slice(&reason.as_bytes()[..end]);
    out
}

/// Parses a reply: `Ok(None)` accepted, `Ok(Some(reason))` refused.
pub fn decode_reply(bytes: &[u8]) -> Result<Option<String>, String> {
    check_head(bytes, "link reply")?;
    let len = u16::from_be_bytes([bytes[6], bytes[7]]) as usize;
    if bytes.len() != PREAMBLE_HEADER + len {
        return Err(format!(
            "link reply of {} bytes announces a {len}-byte reason",
            bytes.len()
        ));
    }
    let reason = privset_protocols::peer_text::sanitize(&bytes[PREAMBLE_HEADER..]);
    match bytes[5] {
        0 => Ok(None),
        1 => Ok(Some(reason)),
        other => Err(format!("link reply with unknown status {other}")),
    }
}

/// True when `a` listens for `b`'s connection (rather than connecting to it).
pub fn listens(topology: Topology, a: PartyId, b: PartyId) -> bool {
    match topology {
        Topology::Star { hub } => a == hub,
        Topology::Mesh => a < b,
    }
}

/// Mutual TLS or, only when the user asked for it, plaintext.
#[derive(Clone, Debug)]
pub enum Security {
    MutualTls(TlsFiles),
    Plaintext,
}

/// Who each participant is: the name and end-entity certificate (DER) the parties file
/// lists for it. With mutual TLS every link is accepted only from the participant's own
/// certificate, checked on both ends, not from anyone the CA vouches for (a CA shared
/// by a consortium vouches for every member, and any of them could otherwise take
/// another's place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub certificate: Vec<u8>,
}

/// Everything one participant needs to open its links.
#[derive(Clone, Debug)]
pub struct LinkPlan {
    /// Every participant's address ("host:port"), by index.
    pub addresses: Vec<String>,
    /// This participant's index.
    pub me: PartyId,
    pub topology: Topology,
    /// Shared by every participant of the session (e.g. protocol name and run label).
    pub session: String,
    pub security: Security,
    /// Where to listen, when not on `addresses[me]` (e.g. "0.0.0.0:port" behind NAT).
    pub listen: Option<String>,
    /// Every participant's identity, by index; `None`: any certificate the CA vouches
    /// for (tests of the link mechanics only: every front end gives them).
    pub identities: Option<Vec<Identity>>,
}

impl LinkPlan {
    /// Checks the plan's shape: 2 to 255 participants, this one among them, the hub too.
    pub fn check(&self) -> Result<(), TransportError> {
        let n = self.addresses.len();
        if !(2..=255).contains(&n) || usize::from(self.me) >= n {
            return Err(TransportError::Config(format!(
                "an n-party session has 2 to 255 participants and this one must be among them \
                 (got {n} addresses, index {})",
                self.me
            )));
        }
        if let Topology::Star { hub } = self.topology
            && usize::from(hub) >= n
        {
            return Err(TransportError::Config(format!(
                "the hub is participant {hub} of {n}"
            )));
        }
        if let Some(ids) = &self.identities
            && ids.len() != n
        {
            return Err(TransportError::Config(format!(
                "{} identities for {n} participants",
                ids.len()
            )));
        }
        if self.session.len() > MAX_SESSION_LABEL {
            return Err(TransportError::Config(format!(
                "the session label has {} bytes, at most {MAX_SESSION_LABEL} are allowed",
                self.session.len()
            )));
        }
        Ok(())
    }

    /// The participants this one talks to, in index order.
    pub fn peers(&self) -> Vec<PartyId> {
        self.topology.peers_of(self.addresses.len(), self.me)
    }

    /// True when this participant accepts connections (and so binds its address).
    pub fn needs_listener(&self) -> bool {
        self.peers()
            .iter()
            .any(|&p| listens(self.topology, self.me, p))
    }

    /// Opens a link to every peer, binding `listen` (or this participant's address)
    /// if it accepts any.
    pub fn open(&self, opts: &ConnectOptions) -> Result<LinkSet, TransportError> {
        self.check()?;
        if !self.needs_listener() {
            return self.open_on(None, opts);
        }
        let listen = self
            .listen
            .clone()
            .unwrap_or_else(|| self.addresses[usize::from(self.me)].clone());
        let listener = socket::bind(&listen)?;
        self.open_on(Some(&listener), opts)
    }

    /// Like [`LinkPlan::open`] on a listener the caller bound (e.g. to port 0 in tests);
    /// `None` is fine for a participant that only connects.
    pub fn open_on(
        &self,
        listener: Option<&TcpListener>,
        opts: &ConnectOptions,
    ) -> Result<LinkSet, TransportError> {
        self.check()?;
        let peers = self.peers();
        let (accept_from, connect_to): (Vec<PartyId>, Vec<PartyId>) = peers
            .iter()
            .partition(|&&p| listens(self.topology, self.me, p));
        let listener = match (accept_from.is_empty(), listener) {
            (true, _) => None,
            (false, Some(l)) => Some(l),
            (false, None) => {
                return Err(TransportError::Config(format!(
                    "participant {} accepts connections but has no listener",
                    self.me
                )));
            }
        };
        let server = match (&self.security, listener) {
            (Security::MutualTls(files), Some(_)) => Some(tls::server_config(files)?),
            _ => None,
        };
        // Set-up runs under a token of its own, cancelled on the first failure (or the
        // caller's cancel) so that no attempt outlives it; each link is registered with
        // the caller's token once made.
        let setup = Cancel::new();
        let setup_opts = ConnectOptions {
            cancel: setup.clone(),
            ..opts.clone()
        };
        let (tx, rx) =
            mpsc::channel::<Result<(PartyId, Box<dyn Transport + Send>), TransportError>>();
        let acceptor = listener.map(|listener| {
            (
                listener,
                Acceptor {
                    plan: self,
                    expected: accept_from.iter().copied().collect(),
                    claimed: Mutex::new(BTreeSet::new()),
                    server,
                    opts: &setup_opts,
                    cancel: &opts.cancel,
                },
            )
        });
        let mut links = LinkSet::new();
        let mut failure = None;
        std::thread::scope(|scope| {
            for &peer in &connect_to {
                let tx = tx.clone();
                let setup_opts = &setup_opts;
                scope.spawn(move || {
                    let result = self.connect(peer, setup_opts, &opts.cancel);
                    let _ = tx.send(result.map(|t| (peer, t)));
                });
            }
            if let Some((listener, acceptor)) = &acceptor {
                let tx = tx.clone();
                scope.spawn(move || acceptor.run(scope, listener, tx));
            }
            drop(tx);
            while links.peers().count() < peers.len() {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(Ok((peer, transport))) => links.insert(peer, transport),
                    Ok(Err(e)) => {
                        failure = Some(e);
                        break;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if opts.cancel.is_cancelled() {
                            failure = Some(TransportError::Cancelled);
                            break;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        failure = Some(TransportError::Link(
                            "every link attempt ended without a link".into(),
                        ));
                        break;
                    }
                }
            }
            if failure.is_some() {
                setup.cancel();
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(links),
        }
    }

    /// Why `link` is not participant `p`'s, if it is not: its certificate is not the one
    /// the identities list (a plaintext link has no identity to check).
    fn wrong_identity(&self, link: &Link, p: PartyId) -> Option<String> {
        let (Some(ids), Link::Tls(t)) = (&self.identities, link) else {
            return None;
        };
        identity_mismatch(ids, p, t.peer_certificate().unwrap_or_default())
    }

    /// Connects to `peer`, handshakes and presents this participant.
    fn connect(
        &self,
        peer: PartyId,
        opts: &ConnectOptions,
        cancel: &Cancel,
    ) -> Result<Box<dyn Transport + Send>, TransportError> {
        let addr = &self.addresses[usize::from(peer)];
        let preamble = Preamble {
            connector: self.me,
            acceptor: peer,
            session: self.session.clone(),
        };
        let mut link = match &self.security {
            Security::MutualTls(files) => Link::Tls(tls::connect(addr, files, opts)?),
            Security::Plaintext => Link::Plain(PlainTcpTransport::connect(addr, opts)?),
        };
        cancel
            .watch(link.tcp())
            .map_err(|e| TransportError::io(format!("configuring connection to {addr}"), e))?;
        let what = format!("participant {peer} at {addr}");
        if let Some(why) = self.wrong_identity(&link, peer) {
            return Err(TransportError::Link(format!("{what}: {why}")));
        }
        link.during_handshake(opts, &what, |t| {
            t.send(&preamble.encode())?;
            let reply = t.recv(MAX_REPLY)?;
            match decode_reply(&reply) {
                Ok(None) => Ok(()),
                Ok(Some(reason)) => Err(TransportError::Link(format!(
                    "{what} refused the link: {reason}"
                ))),
                Err(why) => Err(TransportError::Link(format!("{what}: {why}"))),
            }
        })?;
        Ok(link.boxed())
    }
}

/// Why a connection that presented the certificate `presented` is not participant
/// `p` of `ids`, if it is not.
fn identity_mismatch(ids: &[Identity], p: PartyId, presented: &[u8]) -> Option<String> {
    let expected = &ids[usize::from(p)];
    (presented != expected.certificate.as_slice()).then(|| {
        format!(
            "participant {p} is {:?}, whose certificate is {}, but the connection presents \
             {} (not the certificate the parties file lists for it, though the CA may vouch \
             for it)",
            expected.name,
            tls::describe_certificate(&expected.certificate),
            tls::describe_certificate(presented)
        )
    })
}

/// One accepted or made connection, before it is boxed.
enum Link {
    Tls(TlsTransport),
    Plain(PlainTcpTransport),
}

impl Link {
    fn tcp(&self) -> &TcpStream {
        match self {
            Link::Tls(t) => t.tcp(),
            Link::Plain(t) => t.tcp(),
        }
    }

    fn transport(&mut self) -> &mut dyn Transport {
        match self {
            Link::Tls(t) => t,
            Link::Plain(t) => t,
        }
    }

    fn boxed(self) -> Box<dyn Transport + Send> {
        match self {
            Link::Tls(t) => Box::new(t),
            Link::Plain(t) => Box::new(t),
        }
    }

    /// Runs the preamble exchange `f` within the handshake timeout, in total (a silent
    /// or trickling peer must not hold the set-up for the much longer I/O timeout).
    fn during_handshake<T>(
        &mut self,
        opts: &ConnectOptions,
        what: &str,
        f: impl FnOnce(&mut dyn Transport) -> Result<T, TransportError>,
    ) -> Result<T, TransportError> {
        self.cap(Some(Instant::now() + opts.handshake_timeout));
        let result = f(self.transport()).map_err(|e| match e {
            TransportError::Timeout { .. } => TransportError::Timeout {
                what: format!("exchanging the link preamble with {what}"),
                seconds: secs(opts.handshake_timeout),
            },
            other => other,
        });
        self.cap(None);
        result
    }

    fn cap(&mut self, cap: Option<Instant>) {
        match self {
            Link::Tls(t) => t.cap(cap),
            Link::Plain(t) => t.cap(cap),
        }
    }
}

type Made = Result<(PartyId, Box<dyn Transport + Send>), TransportError>;

/// The accepting half of a participant's set-up.
struct Acceptor<'a> {
    plan: &'a LinkPlan,
    expected: BTreeSet<PartyId>,
    claimed: Mutex<BTreeSet<PartyId>>,
    server: Option<Arc<rustls::ServerConfig>>,
    opts: &'a ConnectOptions,
    cancel: &'a Cancel,
}

impl Acceptor<'_> {
    /// Accepts one connection per expected connector, each handshaken on a thread of
    /// its own (a slow one does not hold up the others).
    fn run<'scope, 'env>(
        &'env self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        listener: &TcpListener,
        tx: mpsc::Sender<Made>,
    ) {
        let name = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "listener".into());
        let deadline = Instant::now() + self.opts.connect_timeout;
        for _ in 0..self.expected.len() {
            let opts = ConnectOptions {
                connect_timeout: deadline.saturating_duration_since(Instant::now()),
                ..self.opts.clone()
            };
            match socket::accept_on(listener, &name, &opts) {
                Ok((tcp, peer)) => {
                    let tx = tx.clone();
                    scope.spawn(move || {
                        let _ = tx.send(self.handshake(tcp, peer));
                    });
                }
                Err(TransportError::Timeout { .. }) => {
                    let claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
                    let missing: Vec<PartyId> =
                        self.expected.difference(&claimed).copied().collect();
                    let _ = tx.send(Err(TransportError::Timeout {
                        what: format!("waiting for participants {missing:?} to connect to {name}"),
                        seconds: secs(self.opts.connect_timeout),
                    }));
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    }

    /// Handshakes an accepted connection and checks the participant it claims to be.
    fn handshake(&self, tcp: TcpStream, peer: SocketAddr) -> Made {
        let mut link = match &self.server {
            Some(config) => {
                let Security::MutualTls(files) = &self.plan.security else {
                    unreachable!("a server configuration exists only for mutual TLS")
                };
                Link::Tls(tls::handshake_accepted(
                    tcp,
                    peer,
                    config.clone(),
                    files,
                    self.opts,
                )?)
            }
            None => Link::Plain(PlainTcpTransport::start(tcp, peer.to_string(), self.opts)?),
        };
        self.cancel
            .watch(link.tcp())
            .map_err(|e| TransportError::io(format!("configuring connection from {peer}"), e))?;
        let what = format!("the connection from {peer}");
        let presented = match &link {
            Link::Tls(t) => Some(t.peer_certificate().unwrap_or_default().to_vec()),
            Link::Plain(_) => None,
        };
        let index = link.during_handshake(self.opts, &what, |t| {
            let bytes = match t.recv(MAX_PREAMBLE) {
                Err(TransportError::TooLarge { len, .. }) => {
                    let why = format!("a link preamble of {len} bytes is too long");
                    return Err(self.refuse(t, peer, &why));
                }
                other => other?,
            };
            let preamble = Preamble::decode(&bytes).map_err(|why| self.refuse(t, peer, &why))?;
            match self.admit(&preamble, presented.as_deref()) {
                Ok(()) => {
                    t.send(&encode_reply(None))?;
                    Ok(preamble.connector)
                }
                Err(why) => Err(self.refuse(t, peer, &why)),
            }
        })?;
        Ok((index, link.boxed()))
    }

    /// Whether `preamble` may be linked here, over a connection that presented the
    /// certificate `presented` (`None`: plaintext); claims its index if so.
    fn admit(&self, preamble: &Preamble, presented: Option<&[u8]>) -> Result<(), String> {
        let me = self.plan.me;
        let n = self.plan.addresses.len();
        let c = preamble.connector;
        if preamble.session != self.plan.session {
            return Err(format!(
                "the connector's session label {:?} is not this participant's {:?}",
                preamble.session, self.plan.session
            ));
        }
        if preamble.acceptor != me {
            return Err(format!(
                "the connector meant to reach participant {}, this is participant {me}",
                preamble.acceptor
            ));
        }
        if usize::from(c) >= n {
            return Err(format!(
                "participant index {c} is out of range: the session has {n} participants (0 to {})",
                n - 1
            ));
        }
        if !self.expected.contains(&c) {
            return Err(format!(
                "participant {c} does not connect to participant {me} in this session's topology"
            ));
        }
        if let (Some(ids), Some(presented)) = (&self.plan.identities, presented)
            && let Some(why) = identity_mismatch(ids, c, presented)
        {
            return Err(why);
        }
        let mut claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        if !claimed.insert(c) {
            return Err(format!(
                "participant {c} is already linked (do two processes claim index {c}?)"
            ));
        }
        Ok(())
    }

    /// Tells the connector why it is refused (best effort); the acceptor's error.
    fn refuse(&self, t: &mut dyn Transport, peer: SocketAddr, why: &str) -> TransportError {
        let _ = t.send(&encode_reply(Some(why)));
        TransportError::Link(format!("refused the connection from {peer}: {why}"))
    }
}
