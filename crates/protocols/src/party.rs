//! The one trait every protocol party implements, as the drivers see it.

use std::sync::Arc;

use crate::agreed::AgreedSettings;
use crate::error::ProtocolError;
use crate::meter::Meter;
pub use crate::wire::PartyId;

/// A message a party wants sent, and to whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The participant it is for.
    pub to: PartyId,
    /// The whole frame.
    pub bytes: Vec<u8>,
}

/// A protocol party as a sans-IO state machine: one participant of a session with two or
/// more named participants, each message addressed to one of them.
///
/// Call order, which every driver follows:
/// 1. take every message from [`Party::poll_outgoing`] and send each to its recipient, in
///    order;
/// 2. if [`Party::has_deferred_work`], call [`Party::do_deferred_work`] and go to 1 (a
///    driver may do this on another thread while step 1's messages are still leaving:
///    a peer busy computing reads nothing, and waiting for it would serialise the two
///    parties' work);
/// 3. if [`Party::is_finished`], stop: the concrete type's `into_output` gives the result;
/// 4. otherwise receive one message from [`Party::awaiting`], of at most
///    [`Party::max_incoming_len`] bytes (a transport must refuse a longer one *before*
///    allocating for it), feed it to [`Party::handle_message`], and go to 1.
///
/// An error from `handle_message` is final: the party is spent. The driver then sends
/// [`Party::alerts`] (best effort) so the peers stop with a clear reason instead of
/// waiting for a timeout.
///
/// Randomness is an input: a party is built from a `SessionRng` seed, so re-creating it
/// from the same seed and replaying the same peer messages reproduces the same outgoing
/// messages byte for byte. The shared-directory driver relies on this to resume.
///
/// Every party is an [`crate::engine::Engine`] around a protocol's states: this trait is
/// implemented once, there.
pub trait Party: Send {
    /// This party's participant index.
    fn id(&self) -> PartyId;
    /// Next message to send, if any.
    fn poll_outgoing(&mut self) -> Option<Outgoing>;
    /// The participant whose message this party needs next; `None` when it needs none
    /// (finished, or only deferred work or sending remains).
    fn awaiting(&self) -> Option<PartyId>;
    /// Processes one message from participant `from` (which must be [`Party::awaiting`]).
    fn handle_message(&mut self, from: PartyId, message: &[u8]) -> Result<(), ProtocolError>;
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
    /// Where the party counts the items of its bulk phases, for a display that reads it
    /// from another thread while the party works; `None` for a party that does not count.
    fn meter(&self) -> Option<Arc<Meter>> {
        None
    }
    /// States how this party's input was made (normalisation, hashing, key columns,
    /// the duplicates rule): sent in its hellos, and a peer stating other settings is
    /// refused before any set-dependent message ([`crate::agreed`]). Call before the
    /// first [`Party::poll_outgoing`].
    fn agree(&mut self, _settings: AgreedSettings) -> Result<(), ProtocolError> {
        Err(ProtocolError::ApiMisuse(
            "this party cannot state agreed settings",
        ))
    }
    /// Alert frames telling every peer this party talks to why it stopped.
    fn alerts(&self, error: &ProtocolError) -> Vec<Outgoing>;
    /// The name of participant `peer` for errors about its link, in sessions where
    /// names say more than "the peer" (three or more participants); `None` otherwise.
    fn peer_name(&self, _peer: PartyId) -> Option<String> {
        None
    }
}

/// A party whose output can be taken once it finished, with the protocol's types erased
/// (a front end picks the group or scheme at run time).
pub trait OutputParty<O>: Party {
    /// The output, if the party finished; consumes the party.
    fn into_output(self: Box<Self>) -> Option<O>;
}
