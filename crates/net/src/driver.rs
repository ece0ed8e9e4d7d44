//! The one driver loop: runs a sans-IO [`Party`] over a transport per peer (one for a
//! two-party session), following the call order documented on `Party`.

use std::collections::BTreeMap;

use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::party::{Outgoing, Party, PartyId};

use crate::{ByteCounters, Transport, TransportError};

/// Why a run stopped: the protocol (a party's own verdict) or the transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The protocol failed: the peer misbehaved, aborted, or the settings differ.
    #[error("protocol failed: {0}")]
    Protocol(#[from] ProtocolError),
    /// Moving bytes failed: connection, TLS, timeout, exchange directory.
    #[error("transport failed: {0}")]
    Transport(#[from] TransportError),
    /// Moving bytes to or from one participant of a session of three or more failed
    /// (it dropped out, timed out, ...): the error names it.
    #[error("transport failed with the {peer}: {source}")]
    PeerTransport {
        peer: String,
        #[source]
        source: TransportError,
    },
}

impl RunError {
    /// The transport error, whichever participant it concerns.
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            RunError::Transport(t) | RunError::PeerTransport { source: t, .. } => Some(t),
            RunError::Protocol(_) => None,
        }
    }

    /// A transport error about `peer`, named when the party has names for its peers.
    fn with_peer(party: &dyn Party, peer: PartyId, error: TransportError) -> Self {
        match party.peer_name(peer) {
            Some(name) => RunError::PeerTransport {
                peer: name,
                source: error,
            },
            None => RunError::Transport(error),
        }
    }
}

/// A link of a session of three or more failed: tells the other peers who dropped out
/// (so they stop now, naming it, rather than at their own timeout), then returns the
/// error.
fn dropped(
    party: &dyn Party,
    links: &mut dyn Links,
    peer: PartyId,
    error: TransportError,
) -> RunError {
    if matches!(error, TransportError::Cancelled) {
        // Our own run was cancelled: nobody dropped out.
        return RunError::Transport(error);
    }
    // Only a link that broke means the peer is gone; a local fault (an exchange
    // directory that holds another message, a configuration error) does not.
    let gone = matches!(
        error,
        TransportError::PeerClosed
            | TransportError::Timeout { .. }
            | TransportError::Io { .. }
            | TransportError::Tls(_)
    );
    let error = RunError::with_peer(party, peer, error);
    if let (true, RunError::PeerTransport { peer: name, source }) = (gone, &error) {
        let why = ProtocolError::PeerDropped {
            peer: name.clone(),
            reason: source.to_string(),
        };
        send_alerts(party, links, &why, Some(peer));
    }
    error
}

/// The transports of one party to its peers, by participant.
pub trait Links: Send {
    /// The transport to `peer`.
    fn link(&mut self, peer: PartyId) -> Result<&mut dyn Transport, TransportError>;
}

/// One transport that carries every message: a two-party link, whoever the peer is.
struct OneLink<'a>(&'a mut (dyn Transport + Send));

impl Links for OneLink<'_> {
    fn link(&mut self, _peer: PartyId) -> Result<&mut dyn Transport, TransportError> {
        Ok(self.0)
    }
}

/// A transport per peer: what a participant of an n-party session drives over.
#[derive(Default)]
pub struct LinkSet {
    links: BTreeMap<PartyId, Box<dyn Transport + Send>>,
}

impl LinkSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the transport to `peer`.
    pub fn insert(&mut self, peer: PartyId, transport: Box<dyn Transport + Send>) {
        self.links.insert(peer, transport);
    }

    /// The peers linked so far, in index order.
    pub fn peers(&self) -> impl Iterator<Item = PartyId> + '_ {
        self.links.keys().copied()
    }

    /// Every link passed through `wrap` (a front end metering or cancelling all of a
    /// participant's links alike).
    pub fn wrap(
        self,
        mut wrap: impl FnMut(Box<dyn Transport + Send>) -> Box<dyn Transport + Send>,
    ) -> Self {
        Self {
            links: self
                .links
                .into_iter()
                .map(|(peer, t)| (peer, wrap(t)))
                .collect(),
        }
    }

    /// Bytes moved over every link together.
    pub fn counters(&self) -> ByteCounters {
        self.links
            .values()
            .map(|t| t.counters())
            .fold(ByteCounters::default(), |a, c| ByteCounters {
                sent: a.sent + c.sent,
                received: a.received + c.received,
            })
    }
}

impl Links for LinkSet {
    fn link(&mut self, peer: PartyId) -> Result<&mut dyn Transport, TransportError> {
        match self.links.get_mut(&peer) {
            Some(t) => Ok(t.as_mut()),
            None => Err(TransportError::Config(format!(
                "no link to participant {peer}"
            ))),
        }
    }
}

/// Runs a two-party `party` to completion over `transport` (see [`drive_links`]).
pub fn drive(
    party: &mut dyn Party,
    transport: &mut (dyn Transport + Send),
    on_status: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    drive_links(party, &mut OneLink(transport), on_status)
}

/// Runs `party` to completion, sending each message over the link to its recipient and
/// receiving from the link of the participant it awaits.
///
/// `on_status` is called with [`Party::status`] whenever it changes, for progress
/// displays. On a [`ProtocolError`] the party's alerts are sent (best effort) so the
/// peers stop with our reason rather than a timeout. If a peer closes its connection
/// once our party has finished (it needed nothing more from us), the run succeeded.
pub fn drive_links(
    party: &mut dyn Party,
    links: &mut dyn Links,
    on_status: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    let mut last_status = String::new();
    let mut report = |party: &dyn Party| {
        let status = party.status();
        if status != last_status {
            on_status(&status);
            last_status = status;
        }
    };
    loop {
        report(party);
        // 1. Send everything the party has; 2. meanwhile, work that needed only those
        //    messages out of the way (the peer computes meanwhile too).
        let outgoing: Vec<Outgoing> = std::iter::from_fn(|| party.poll_outgoing()).collect();
        let deferred = party.has_deferred_work();
        let (sent, worked) = if deferred {
            send_while_working(party, links, &outgoing)
        } else {
            (send_all(links, &outgoing), Ok(()))
        };
        if let Err(err) = worked {
            send_alerts(party, links, &err, None);
            return Err(err.into());
        }
        if let Some(done) = finish_sending(party, links, sent) {
            return done.inspect(|()| report(party));
        }
        if deferred {
            continue;
        }
        // 3. Done?
        if party.is_finished() {
            report(party);
            return Ok(());
        }
        // 4. Receive one message from the participant awaited and feed it.
        let Some(from) = party.awaiting() else {
            return Err(ProtocolError::ApiMisuse(
                "the party is neither finished nor waiting for anyone",
            )
            .into());
        };
        let max = party.max_incoming_len();
        let received = links.link(from).and_then(|link| link.recv(max));
        let message = match received {
            Ok(m) => m,
            Err(TransportError::TooLarge { len, max }) => {
                // The peer broke the size the protocol allows: tell it, then stop.
                let why = PeerMisbehaved::Malformed(format!(
                    "message of {len} bytes exceeds the {max} bytes allowed next"
                ));
                send_alerts(party, links, &why.into(), None);
                return Err(RunError::with_peer(
                    party,
                    from,
                    TransportError::TooLarge { len, max },
                ));
            }
            Err(e) => return Err(dropped(party, links, from, e)),
        };
        if let Err(err) = party.handle_message(from, &message) {
            // A peer that sent an alert already stopped; the others still wait.
            let aborted = matches!(err, ProtocolError::PeerAborted(_)).then_some(from);
            send_alerts(party, links, &err, aborted);
            return Err(err.into());
        }
    }
}

/// Sends the party's alerts (best effort), except to `skip` (a peer that stopped).
fn send_alerts(
    party: &dyn Party,
    links: &mut dyn Links,
    err: &ProtocolError,
    skip: Option<PartyId>,
) {
    for alert in party.alerts(err).into_iter().filter(|a| Some(a.to) != skip) {
        if let Ok(link) = links.link(alert.to) {
            let _ = link.send(&alert.bytes);
        }
    }
}

/// Sends `messages` in order, each over its recipient's link, stopping at the first
/// failure (and its recipient).
fn send_all(links: &mut dyn Links, messages: &[Outgoing]) -> Result<(), (PartyId, TransportError)> {
    messages.iter().try_for_each(|m| {
        links
            .link(m.to)
            .and_then(|link| link.send(&m.bytes))
            .map_err(|e| (m.to, e))
    })
}

/// Sends `messages` on this thread while the party's deferred work runs on another.
///
/// A large message leaves only as fast as the peer reads it, and a peer busy with its
/// own computation reads nothing: sending first and working after would hold our
/// computation back until the peer's ended, serialising what the protocol overlaps.
fn send_while_working(
    party: &mut dyn Party,
    links: &mut dyn Links,
    messages: &[Outgoing],
) -> (
    Result<(), (PartyId, TransportError)>,
    Result<(), ProtocolError>,
) {
    if messages.is_empty() {
        return (Ok(()), party.do_deferred_work());
    }
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| party.do_deferred_work());
        let sent = send_all(links, messages);
        let worked = match worker.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        (sent, worked)
    })
}
/// What a failed send means: nothing (`None`, go on) if it succeeded; success if the
/// peer closed once our party had finished (it needed nothing more from us); otherwise
/// the error.
fn finish_sending(
    party: &mut dyn Party,
    links: &mut dyn Links,
    sent: Result<(), (PartyId, TransportError)>,
) -> Option<Result<(), RunError>> {
    match sent {
        Ok(()) => None,
        Err((to, TransportError::PeerClosed)) => {
            while party.poll_outgoing().is_some() {}
            if party.is_finished() {
                Some(Ok(()))
            } else {
                Some(Err(dropped(party, links, to, TransportError::PeerClosed)))
            }
        }
        Err((to, e)) => Some(Err(dropped(party, links, to, e))),
    }
}
