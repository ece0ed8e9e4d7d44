//! The one driver loop: runs a sans-IO [`Party`] over any [`Transport`], following the
//! call order documented on `Party`.

use privset_protocols::error::{PeerMisbehaved, ProtocolError};
use privset_protocols::party::Party;

use crate::{Transport, TransportError};

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
}

/// Runs `party` to completion over `transport`.
///
/// `on_status` is called with [`Party::status`] whenever it changes, for progress
/// displays. On a [`ProtocolError`] the party's alert is sent (best effort) so the peer
/// stops with our reason rather than a timeout. If the peer closes the connection once
/// our party has finished (it needed nothing more from us), the run succeeded.
pub fn drive(
    party: &mut dyn Party,
    transport: &mut dyn Transport,
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
        let outgoing: Vec<Vec<u8>> = std::iter::from_fn(|| party.poll_outgoing()).collect();
        let deferred = party.has_deferred_work();
        let (sent, worked) = if deferred {
            send_while_working(party, transport, &outgoing)
        } else {
            (send_all(transport, &outgoing), Ok(()))
        };
        if let Err(err) = worked {
            let _ = transport.send(&party.alert(&err));
            return Err(err.into());
        }
        if let Some(done) = finish_sending(party, sent) {
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
        // 4. Receive one message and feed it.
        let max = party.max_incoming_len();
        let message = match transport.recv(max) {
            Ok(m) => m,
            Err(TransportError::TooLarge { len, max }) => {
                // The peer broke the size the protocol allows: tell it, then stop.
                let why = PeerMisbehaved::Malformed(format!(
                    "message of {len} bytes exceeds the {max} bytes allowed next"
                ));
                let _ = transport.send(&party.alert(&why.into()));
                return Err(TransportError::TooLarge { len, max }.into());
            }
            Err(e) => return Err(e.into()),
        };
        if let Err(err) = party.handle_message(&message) {
            // The peer already stopped if it sent an alert; answering it is pointless.
            if !matches!(err, ProtocolError::PeerAborted(_)) {
                let _ = transport.send(&party.alert(&err));
            }
            return Err(err.into());
        }
    }
}

/// Sends `messages` in order, stopping at the first failure.
fn send_all(transport: &mut dyn Transport, messages: &[Vec<u8>]) -> Result<(), TransportError> {
    messages.iter().try_for_each(|m| transport.send(m))
}

/// Sends `messages` on this thread while the party's deferred work runs on another.
///
/// A large message leaves only as fast as the peer reads it, and a peer busy with its
/// own computation reads nothing: sending first and working after would hold our
/// computation back until the peer's ended, serialising what the protocol overlaps.
fn send_while_working(
    party: &mut dyn Party,
    transport: &mut dyn Transport,
    messages: &[Vec<u8>],
) -> (Result<(), TransportError>, Result<(), ProtocolError>) {
    if messages.is_empty() {
        return (Ok(()), party.do_deferred_work());
    }
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| party.do_deferred_work());
        let sent = send_all(transport, messages);
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
    sent: Result<(), TransportError>,
) -> Option<Result<(), RunError>> {
    match sent {
        Ok(()) => None,
        Err(TransportError::PeerClosed) => {
            while party.poll_outgoing().is_some() {}
            if party.is_finished() {
                Some(Ok(()))
            } else {
                Some(Err(TransportError::PeerClosed.into()))
            }
        }
        Err(e) => Some(Err(e.into())),
    }
}
