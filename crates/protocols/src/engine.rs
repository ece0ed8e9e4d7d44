//! The party engine: what every protocol party does the same way, written once.
//!
//! A protocol supplies its typed states, messages and output as a [`Protocol`]; the
//! [`Engine`] around it implements [`Party`] and owns everything else:
//!
//! * the session randomness (a [`SessionRng`] from a seed, so a re-created party replays
//!   byte for byte) and this party's salt, drawn first;
//! * the hellos: each party sends its salt, its [`AgreedSettings`] (how its input rows
//!   became keys) and the protocol's settings to every peer it talks to; the engine
//!   checks each peer's agreed settings and the protocol its protocol settings;
//! * the participants' transcript: once every salt is known (in a star, the hub sends
//!   each spoke a roster of all salts), the [`SessionContext`] covers every participant;
//! * one [`Channel`] per peer, with its own sequence numbers, checking sender, recipient
//!   and session of every frame;
//! * sticky failure: after an error the party is spent, and [`Party::alerts`] tells every
//!   peer why;
//! * deferred work, status, the maximum incoming length (alerts always fit).
//!
//! ```text
//!   participant i                                   participant j (each peer)
//!     hello(salt_i, agreed, settings) ----------->
//!                                  <------------- hello(salt_j, agreed, settings)
//!     [star, spoke]                <------------- roster(salt_0 .. salt_n-1)  (hub)
//!     session established: transcript = H(protocol, n, salt_0 .. salt_n-1)
//!     Protocol::start, then Protocol::handle for each message, in the order
//!     Protocol::awaiting names the senders
//! ```

use std::collections::VecDeque;
use std::sync::Arc;

use privset_crypto::rng::SessionRng;

use crate::agreed::{AgreedSettings, MAX_AGREED_LEN};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::meter::Meter;
use crate::party::{Outgoing, OutputParty, Party};
use crate::session::{Channel, SALT_LEN, SessionContext};
use crate::wire::{self, HEADER_LEN, KIND_HELLO, KIND_ROSTER, MAX_ALERT_LEN, PartyId, ProtocolId};

/// Who talks to whom in a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Every participant talks to every other (two parties: the only choice).
    Mesh,
    /// Every participant talks to the hub only; the hub talks to all.
    Star { hub: PartyId },
}

impl Topology {
    /// True when `a` and `b`, of `count` participants, exchange messages.
    pub fn linked(self, count: usize, a: PartyId, b: PartyId) -> bool {
        a != b
            && (a as usize) < count
            && (b as usize) < count
            && match self {
                Topology::Mesh => true,
                Topology::Star { hub } => a == hub || b == hub,
            }
    }

    /// The participants `p` talks to, of `count`, in index order.
    pub fn peers_of(self, count: usize, p: PartyId) -> Vec<PartyId> {
        (0..count)
            .map(|q| q as PartyId)
            .filter(|&q| self.linked(count, p, q))
            .collect()
    }
}

/// The participants of a session, as one of them sees it.
#[derive(Clone, Debug)]
pub struct Roster {
    /// The protocol (in every frame and in the transcript).
    pub protocol: ProtocolId,
    /// Each participant's name by index ("receiver", "sender"; "hub", "party 3"), for
    /// errors and statuses.
    pub names: Vec<String>,
    /// This party's index.
    pub me: PartyId,
    pub topology: Topology,
}

impl Roster {
    /// A two-party session: `names[0]` plays the protocol's first role.
    pub fn pair(protocol: ProtocolId, names: [&str; 2], me: PartyId) -> Self {
        Self {
            protocol,
            names: names.iter().map(|n| n.to_string()).collect(),
            me,
            topology: Topology::Mesh,
        }
    }

    /// Number of participants.
    pub fn count(&self) -> usize {
        self.names.len()
    }

    /// The name of participant `p`.
    pub fn name(&self, p: PartyId) -> &str {
        self.names
            .get(p as usize)
            .map_or("unknown participant", String::as_str)
    }

    /// The participants `p` talks to, in index order.
    pub fn links_of(&self, p: PartyId) -> Vec<PartyId> {
        self.topology.peers_of(self.count(), p)
    }

    /// The participants this party talks to, in index order.
    pub fn peers(&self) -> Vec<PartyId> {
        self.links_of(self.me)
    }

    fn check(&self) -> Result<(), ProtocolError> {
        let n = self.count();
        if !(2..=255).contains(&n) || self.me as usize >= n {
            return Err(ProtocolError::Config(format!(
                "a session has 2 to 255 participants and this party must be one of them (got {n}, index {})",
                self.me
            )));
        }
        if let Topology::Star { hub } = self.topology
            && hub as usize >= n
        {
            return Err(ProtocolError::Config(format!(
                "the hub is participant {hub} of {n}"
            )));
        }
        Ok(())
    }
}

/// One message received from a peer, its frame already checked by the engine.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    pub from: PartyId,
    pub kind: u8,
    pub body: &'a [u8],
    names: fn(u8) -> &'static str,
}

impl<'a> Message<'a> {
    /// The body, if this is a message of the `expected` kind; otherwise a
    /// `PeerMisbehaved::UnexpectedMessage` naming both.
    pub fn expect(&self, expected: u8) -> Result<&'a [u8], ProtocolError> {
        if self.kind != expected {
            return Err(PeerMisbehaved::UnexpectedMessage {
                got: (self.names)(self.kind).to_string(),
                expected: (self.names)(expected).to_string(),
            }
            .into());
        }
        Ok(self.body)
    }
}

/// What the engine lends a protocol in each step: its randomness, the established
/// session, and a way to send.
pub struct Session<'a> {
    pub rng: &'a mut SessionRng,
    pub ctx: &'a SessionContext,
    pub roster: &'a Roster,
    /// Where bulk work counts its items (see [`crate::meter`]).
    pub meter: &'a Meter,
    out: &'a mut Outbox,
}

impl Session<'_> {
    /// Queues a message of `kind` for participant `to`, which this party must talk to.
    pub fn send(&mut self, to: PartyId, kind: u8, body: &[u8]) {
        self.out.send(to, kind, body);
    }

    /// [`Self::send`] for a body the protocol no longer needs: it is framed in its own
    /// allocation instead of copied, for messages of hundreds of MB.
    pub fn send_owned(&mut self, to: PartyId, kind: u8, body: Vec<u8>) {
        self.out.send_owned(to, kind, body);
    }

    /// In a two-party session: the other participant.
    pub fn peer(&self) -> PartyId {
        debug_assert_eq!(self.roster.count(), 2, "peer() is for two-party sessions");
        1 - self.roster.me
    }

    /// This party's index.
    pub fn me(&self) -> PartyId {
        self.roster.me
    }
}

/// The channels to every peer and the frames waiting to leave, in the order they were
/// queued.
struct Outbox {
    channels: Vec<Channel>,
    queue: VecDeque<Outgoing>,
}

impl Outbox {
    fn channel(&mut self, peer: PartyId) -> Option<&mut Channel> {
        self.channels.iter_mut().find(|c| c.peer() == peer)
    }

    fn send(&mut self, to: PartyId, kind: u8, body: &[u8]) {
        let bytes = self.linked(to).frame(kind, body);
        self.queue.push_back(Outgoing { to, bytes });
    }

    fn send_owned(&mut self, to: PartyId, kind: u8, body: Vec<u8>) {
        let bytes = self.linked(to).frame_in_place(kind, body);
        self.queue.push_back(Outgoing { to, bytes });
    }

    fn linked(&mut self, to: PartyId) -> &mut Channel {
        self.channel(to)
            .expect("a protocol sends only to participants it is linked with")
    }
}

/// What a party announces and checks before its session exists: who takes part, its
/// settings, and the check of each peer's. One type per protocol family, shared by the
/// family's roles.
pub trait Handshake: Send {
    /// The session's participants as this party sees them (asked once, at creation).
    fn roster(&self) -> Roster;
    /// The name of one of the protocol's message kinds, for errors.
    fn kind_name(kind: u8) -> &'static str
    where
        Self: Sized;
    /// This party's settings, announced in its hello after the salt (asked once).
    fn settings(&self) -> Vec<u8>;
    /// Longest settings a peer's hello may carry (asked once).
    fn max_settings_len(&self) -> usize;
    /// Checks one peer's announced settings against this party's; a mismatch is
    /// `ProtocolError::Incompatible` naming the setting.
    fn check_settings(&mut self, from: PartyId, settings: &[u8]) -> Result<(), ProtocolError>;
}

/// A protocol's states, messages and output: everything a party is beyond the engine.
///
/// The engine asks [`Protocol::handshake`] for the roster and settings once, and to check
/// each peer's settings; then it calls [`Protocol::start`] once the session is
/// established, [`Protocol::handle`] for each message, from the participant
/// [`Protocol::awaiting`] names, and [`Protocol::do_deferred_work`] whenever
/// [`Protocol::has_deferred_work`]. After an error it calls nothing more (failure is the
/// engine's, and sticky), so a protocol may leave its state half-moved on an error path.
pub trait Protocol: Send + Sized {
    /// What this party learns, and nothing else.
    type Output;
    /// The family's handshake (settings and roster).
    type Handshake: Handshake;
    /// This party's handshake part.
    fn handshake(&mut self) -> &mut Self::Handshake;
    /// The session is established: queue the first messages.
    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError>;
    /// One message from a peer.
    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError>;
    /// The participant whose message is needed next, if any.
    fn awaiting(&self) -> Option<PartyId>;
    /// Longest body the next message may have.
    fn max_message_len(&self) -> usize;
    /// Work put off until the queued messages have left (see [`Party::has_deferred_work`]).
    fn has_deferred_work(&self) -> bool {
        false
    }
    fn do_deferred_work(&mut self, _session: &mut Session<'_>) -> Result<(), ProtocolError> {
        Ok(())
    }
    /// True once the output is ready.
    fn is_done(&self) -> bool;
    /// What the party is doing now.
    fn status(&self) -> String;
    /// The output, once done.
    fn into_output(self) -> Option<Self::Output>;
}

enum Phase {
    /// Waiting for the peers' hellos.
    Hellos,
    /// A spoke of a star: waiting for the hub's roster of salts.
    AwaitRoster {
        hub: PartyId,
    },
    /// Established; the protocol runs.
    Running(SessionContext),
    Failed,
}

/// A protocol party: the engine around a [`Protocol`]. The one implementation of
/// [`Party`].
pub struct Engine<P: Protocol> {
    protocol: P,
    roster: Roster,
    /// Longest settings a peer's hello may carry.
    max_settings_len: usize,
    rng: SessionRng,
    salts: Vec<Option<[u8; SALT_LEN]>>,
    out: Outbox,
    /// The hello's salt and protocol settings until the hellos are queued (at the first
    /// poll or message), so that [`Party::agree`] can still add the agreed settings.
    pending_hello: Option<Vec<u8>>,
    /// What this party states about how its input was made.
    agreed: AgreedSettings,
    phase: Phase,
    meter: Arc<Meter>,
}

impl<P: Protocol> Engine<P> {
    /// A party whose randomness all comes from `seed` (keep it private): its salt first,
    /// then whatever the protocol draws. The hellos are queued at the first poll or
    /// message.
    pub fn new(mut protocol: P, seed: [u8; 32]) -> Result<Self, ProtocolError> {
        let handshake = protocol.handshake();
        let roster = handshake.roster();
        let max_settings_len = handshake.max_settings_len();
        roster.check()?;
        let mut rng = SessionRng::from_seed(seed);
        let mut salt = [0u8; SALT_LEN];
        rng.fill(&mut salt);
        let mut salts = vec![None; roster.count()];
        salts[roster.me as usize] = Some(salt);
        let out = Outbox {
            channels: roster
                .peers()
                .into_iter()
                .map(|p| Channel::new(roster.protocol, roster.me, p))
                .collect(),
            queue: VecDeque::new(),
        };
        let mut hello = salt.to_vec();
        hello.extend_from_slice(&protocol.handshake().settings());
        Ok(Self {
            protocol,
            roster,
            max_settings_len,
            rng,
            salts,
            out,
            pending_hello: Some(hello),
            agreed: AgreedSettings::new(),
            phase: Phase::Hellos,
            meter: Arc::new(Meter::new()),
        })
    }

    /// The protocol's output, once the party finished.
    pub fn into_output(self) -> Option<P::Output> {
        if self.is_finished() {
            self.protocol.into_output()
        } else {
            None
        }
    }

    /// The protocol inside (for tests and reports).
    pub fn protocol(&self) -> &P {
        &self.protocol
    }

    /// Queues the hello to every peer (once): salt, agreed settings, protocol settings.
    fn queue_hellos(&mut self) {
        let Some(pending) = self.pending_hello.take() else {
            return;
        };
        let (salt, settings) = pending.split_at(SALT_LEN);
        let mut hello = salt.to_vec();
        self.agreed.encode_into(&mut hello);
        hello.extend_from_slice(settings);
        for peer in self.roster.peers() {
            self.out.send(peer, KIND_HELLO, &hello);
        }
    }

    fn step(&mut self, from: PartyId, bytes: &[u8]) -> Result<(), ProtocolError> {
        let me = self.roster.me;
        let Some(channel) = self.out.channel(from) else {
            return Err(ProtocolError::ApiMisuse(
                "a message from a participant this party does not talk to",
            ));
        };
        let frame = match channel.open(bytes) {
            Err(ProtocolError::PeerMisbehaved(PeerMisbehaved::Misrouted { sender, .. }))
                if sender == me =>
            {
                return Err(ProtocolError::Incompatible(format!(
                    "another party also plays the {} (participant {me}); each participant must be played once",
                    self.roster.name(me)
                )));
            }
            other => other?,
        };
        let (kind, body) = (frame.kind, frame.body);
        match &self.phase {
            Phase::Hellos => {
                self.expect_engine_kind(kind, KIND_HELLO)?;
                let mut r = wire::Reader::new(body, "hello");
                let salt = r.array::<SALT_LEN>()?;
                let theirs = AgreedSettings::read(&mut r)?;
                let names = (self.roster.name(me), self.roster.name(from));
                self.agreed.check(&theirs, names.0, names.1)?;
                self.protocol.handshake().check_settings(from, r.rest())?;
                self.salts[from as usize] = Some(salt);
                if self.hellos_missing().is_none() {
                    self.on_hellos()?;
                }
                Ok(())
            }
            Phase::AwaitRoster { .. } => {
                self.expect_engine_kind(kind, KIND_ROSTER)?;
                self.on_roster(body)
            }
            Phase::Running(_) => {
                if kind == KIND_HELLO || kind == KIND_ROSTER {
                    return Err(self.unexpected(kind, "a protocol message"));
                }
                let message = Message {
                    from,
                    kind,
                    body,
                    names: <P::Handshake as Handshake>::kind_name,
                };
                self.with_session(|protocol, session| protocol.handle(session, message))
            }
            Phase::Failed => Err(ProtocolError::ApiMisuse(
                "handle_message on a party that already failed",
            )),
        }
    }

    fn expect_engine_kind(&self, kind: u8, expected: u8) -> Result<(), ProtocolError> {
        if kind == expected {
            Ok(())
        } else {
            Err(self.unexpected(kind, engine_kind_name(expected)))
        }
    }

    fn unexpected(&self, kind: u8, expected: &str) -> ProtocolError {
        let got = match kind {
            KIND_HELLO | KIND_ROSTER => engine_kind_name(kind),
            other => <P::Handshake as Handshake>::kind_name(other),
        };
        PeerMisbehaved::UnexpectedMessage {
            got: got.to_string(),
            expected: expected.to_string(),
        }
        .into()
    }

    /// The first peer (in index order) whose hello has not arrived.
    fn hellos_missing(&self) -> Option<PartyId> {
        self.roster
            .peers()
            .into_iter()
            .find(|&p| self.salts[p as usize].is_none())
    }

    /// Every peer's hello is in: establish, or (a star's spoke) wait for the roster.
    fn on_hellos(&mut self) -> Result<(), ProtocolError> {
        if let Some(salts) = self.all_salts() {
            // A hub gives the spokes, which know only their own and its salt, all of them.
            let spokes: Vec<PartyId> = self
                .roster
                .peers()
                .into_iter()
                .filter(|&p| self.roster.links_of(p).len() + 1 < self.roster.count())
                .collect();
            let roster: Vec<u8> = salts.concat();
            for spoke in spokes {
                self.out.send(spoke, KIND_ROSTER, &roster);
            }
            return self.establish(&salts);
        }
        match self.roster.topology {
            Topology::Star { hub } => {
                self.phase = Phase::AwaitRoster { hub };
                Ok(())
            }
            Topology::Mesh => unreachable!("in a mesh every salt comes in a hello"),
        }
    }

    /// A spoke receives every participant's salt from the hub; the ones it knows must
    /// match.
    fn on_roster(&mut self, body: &[u8]) -> Result<(), ProtocolError> {
        let n = self.roster.count();
        wire::expect_len("roster", body, n * SALT_LEN)?;
        let mut salts = Vec::with_capacity(n);
        for (i, chunk) in body.chunks_exact(SALT_LEN).enumerate() {
            let salt: [u8; SALT_LEN] = chunk.try_into().expect("chunks of SALT_LEN");
            if self.salts[i].is_some_and(|known| known != salt) {
                return Err(PeerMisbehaved::Inconsistent(format!(
                    "the hub's roster gives the {} another salt than its hello did",
                    self.roster.name(i as PartyId)
                ))
                .into());
            }
            salts.push(salt);
        }
        self.establish(&salts)
    }

    fn all_salts(&self) -> Option<Vec<[u8; SALT_LEN]>> {
        self.salts.iter().copied().collect()
    }

    fn establish(&mut self, salts: &[[u8; SALT_LEN]]) -> Result<(), ProtocolError> {
        let ctx = SessionContext::new(self.roster.protocol, salts);
        for channel in &mut self.out.channels {
            channel.establish(ctx.id);
        }
        self.phase = Phase::Running(ctx);
        self.with_session(P::start)
    }

    /// Runs `step` on the protocol with the established session; `Ok(())` before the
    /// session is established (nothing of the protocol's can run then).
    fn with_session(
        &mut self,
        step: impl FnOnce(&mut P, &mut Session<'_>) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        let Phase::Running(ctx) = &self.phase else {
            return Ok(());
        };
        let mut session = Session {
            rng: &mut self.rng,
            ctx,
            roster: &self.roster,
            meter: &self.meter,
            out: &mut self.out,
        };
        step(&mut self.protocol, &mut session)
    }

    fn fail_on_error<T>(&mut self, result: Result<T, ProtocolError>) -> Result<T, ProtocolError> {
        if result.is_err() {
            self.phase = Phase::Failed;
        }
        result
    }
}

fn engine_kind_name(kind: u8) -> &'static str {
    match kind {
        KIND_HELLO => "hello",
        KIND_ROSTER => "roster",
        _ => "a protocol message",
    }
}

impl<P: Protocol> Party for Engine<P> {
    fn id(&self) -> PartyId {
        self.roster.me
    }

    fn poll_outgoing(&mut self) -> Option<Outgoing> {
        self.queue_hellos();
        self.out.queue.pop_front()
    }

    fn agree(&mut self, settings: AgreedSettings) -> Result<(), ProtocolError> {
        if self.pending_hello.is_none() {
            return Err(ProtocolError::ApiMisuse(
                "agree after the hellos were sent: state the settings before the first poll",
            ));
        }
        self.agreed = settings;
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match &self.phase {
            Phase::Hellos => self.hellos_missing(),
            Phase::AwaitRoster { hub } => Some(*hub),
            Phase::Running(_) if self.protocol.is_done() => None,
            Phase::Running(_) => self.protocol.awaiting(),
            Phase::Failed => None,
        }
    }

    fn handle_message(&mut self, from: PartyId, message: &[u8]) -> Result<(), ProtocolError> {
        self.queue_hellos();
        if matches!(self.phase, Phase::Failed) {
            return Err(ProtocolError::ApiMisuse(
                "handle_message on a party that already failed",
            ));
        }
        if self.awaiting() != Some(from) {
            let result = Err(PeerMisbehaved::UnexpectedMessage {
                got: format!("a message from the {}", self.roster.name(from)),
                expected: match self.awaiting() {
                    Some(p) => format!("one from the {}", self.roster.name(p)),
                    None => "nothing (no message is needed now)".into(),
                },
            }
            .into());
            return self.fail_on_error(result);
        }
        let mut result = self.step(from, message);
        if self.roster.count() > 2
            && let Err(ProtocolError::PeerMisbehaved(fault)) = result
        {
            let peer = format!("{} (participant {from})", self.roster.name(from));
            result = Err(ProtocolError::PeerMisbehaved(fault.by(peer)));
        }
        self.fail_on_error(result)
    }

    fn max_incoming_len(&self) -> usize {
        let body = match &self.phase {
            Phase::Hellos => (SALT_LEN + 2 + MAX_AGREED_LEN).saturating_add(self.max_settings_len),
            Phase::AwaitRoster { .. } => self.roster.count() * SALT_LEN,
            Phase::Running(_) => self.protocol.max_message_len(),
            Phase::Failed => 0,
        };
        HEADER_LEN.saturating_add(body.max(MAX_ALERT_LEN))
    }

    fn has_deferred_work(&self) -> bool {
        matches!(self.phase, Phase::Running(_)) && self.protocol.has_deferred_work()
    }

    fn do_deferred_work(&mut self) -> Result<(), ProtocolError> {
        let result = self.with_session(P::do_deferred_work);
        self.fail_on_error(result)
    }

    fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Running(_))
            && self.protocol.is_done()
            && self.out.queue.is_empty()
    }

    fn status(&self) -> String {
        match &self.phase {
            Phase::Hellos => match self.hellos_missing() {
                Some(p) => format!("waiting for the {}'s hello", self.roster.name(p)),
                None => "hellos exchanged".into(),
            },
            Phase::AwaitRoster { hub } => {
                format!("waiting for the {}'s roster", self.roster.name(*hub))
            }
            Phase::Running(_) if self.protocol.is_done() => "done".into(),
            Phase::Running(_) => self.protocol.status(),
            Phase::Failed => "failed".into(),
        }
    }

    fn meter(&self) -> Option<Arc<Meter>> {
        Some(Arc::clone(&self.meter))
    }

    fn peer_name(&self, peer: PartyId) -> Option<String> {
        (self.roster.count() > 2)
            .then(|| format!("{} (participant {peer})", self.roster.name(peer)))
    }

    fn alerts(&self, error: &ProtocolError) -> Vec<Outgoing> {
        self.out
            .channels
            .iter()
            .map(|c| Outgoing {
                to: c.peer(),
                bytes: c.alert(error),
            })
            .collect()
    }
}

impl<P: Protocol> OutputParty<P::Output> for Engine<P>
where
    P::Output: 'static,
{
    fn into_output(self: Box<Self>) -> Option<P::Output> {
        Engine::into_output(*self)
    }
}
