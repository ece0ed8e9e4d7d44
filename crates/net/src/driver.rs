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
        // 1. Send everything the party has.
        while let Some(message) = party.poll_outgoing() {
            match transport.send(&message) {
                Ok(()) => {}
                Err(TransportError::PeerClosed) => {
                    // Peer gone. Harmless only if we are done anyway.
                    while party.poll_outgoing().is_some() {}
                    if party.is_finished() {
                        report(party);
                        return Ok(());
                    }
                    return Err(TransportError::PeerClosed.into());
                }
                Err(e) => return Err(e.into()),
            }
        }
        // 2. Work that needed only the messages just sent out of the way (the peer
        //    computes meanwhile).
        if party.has_deferred_work() {
            if let Err(err) = party.do_deferred_work() {
                let _ = transport.send(&party.alert(&err));
                return Err(err.into());
            }
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
