//! The one trait every protocol party implements.

use crate::error::ProtocolError;

/// A protocol party as a sans-IO state machine.
///
/// Call order, which every driver follows:
/// 1. take every message from [`Party::poll_outgoing`] and send it, in order;
/// 2. if [`Party::has_deferred_work`], call [`Party::do_deferred_work`] and go to 1 (a
///    driver may do this on another thread while step 1's messages are still leaving:
///    a peer busy computing reads nothing, and waiting for it would serialise the two
///    parties' work);
/// 3. if [`Party::is_finished`], stop: the concrete type's `into_output` gives the result;
/// 4. otherwise receive one message of at most [`Party::max_incoming_len`] bytes (a
///    transport must refuse a longer one *before* allocating for it), feed it to
///    [`Party::handle_message`], and go to 1.
///
/// An error from `handle_message` is final: the party is spent. The driver then sends
/// [`Party::alert`] (best effort) so the peer stops with a clear reason instead of
/// waiting for a timeout.
///
/// Randomness is an input: a party is built from a `SessionRng` seed, so re-creating it
/// from the same seed and replaying the same peer messages reproduces the same outgoing
/// messages byte for byte. The shared-directory driver relies on this to resume.
pub trait Party: Send {
    /// Next message to send, if any.
    fn poll_outgoing(&mut self) -> Option<Vec<u8>>;
    /// Processes one message from the peer.
    fn handle_message(&mut self, message: &[u8]) -> Result<(), ProtocolError>;
    /// Largest message this party will accept next, derived from what has been
    /// announced so far (set sizes, parameters). Never unbounded.
    fn max_incoming_len(&self) -> usize;
    /// True when the party has work that needs no further message and that it put off
    /// so its outgoing messages could leave first (the peer then computes in parallel).
    fn has_deferred_work(&self) -> bool {
        false
    }
    /// Does the deferred work. Errors are final, as from `handle_message`.
    fn do_deferred_work(&mut self) -> Result<(), ProtocolError> {
        Ok(())
    }
    /// True once the output is ready and nothing remains to send.
    fn is_finished(&self) -> bool;
    /// What the party is doing now, for progress displays ("exponentiating 100000 items").
    fn status(&self) -> String;
    /// An alert frame telling the peer why this party stopped.
    fn alert(&self, error: &ProtocolError) -> Vec<u8>;
}
