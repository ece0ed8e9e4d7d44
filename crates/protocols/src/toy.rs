//! The toy sum: the smallest protocol on the [`Engine`], and the harness test for
//! n-party transports.
//!
//! Every participant holds a `u64`; every participant outputs the total (a `u128`, so
//! 255 values never overflow). It hides nothing (every value is sent in the clear) and
//! exists so that links, drivers and front ends for 3 to 255 participants can be tested
//! end to end without any cryptography in the way:
//!
//! * [`Form::Star`]: participant 0 is the hub. Every other participant sends its value
//!   to the hub; the hub adds them and returns the total to everyone.
//! * [`Form::Mesh`]: every participant sends its value to every other and adds what it
//!   receives.
//!
//! ```text
//! hello settings: count u8 (2..=255), form u8 (0 = star, 1 = mesh)
//! value (kind 1): u64 big-endian           spoke -> hub (star), everyone -> everyone (mesh)
//! total (kind 2): u128 big-endian          hub -> every spoke (star)
//! ```

use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session, Topology};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{self, PartyId, ProtocolId};

/// Message kind of a participant's value.
pub const KIND_VALUE: u8 = 1;
/// Message kind of the hub's total.
pub const KIND_TOTAL: u8 = 2;

/// The hub of the star form.
pub const HUB: PartyId = 0;

/// Who talks to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Participant 0 is the hub; the others talk only to it.
    Star,
    /// Every participant talks to every other.
    Mesh,
}

impl Form {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Form::Star => "star",
            Form::Mesh => "mesh",
        }
    }

    fn code(self) -> u8 {
        match self {
            Form::Star => 0,
            Form::Mesh => 1,
        }
    }

    /// The engine's topology for this form.
    pub fn topology(self) -> Topology {
        match self {
            Form::Star => Topology::Star { hub: HUB },
            Form::Mesh => Topology::Mesh,
        }
    }
}

/// One participant's settings and input.
#[derive(Clone, Copy, Debug)]
pub struct ToySumConfig {
    /// Number of participants (2 to 255).
    pub parties: usize,
    /// This participant's index.
    pub me: PartyId,
    pub form: Form,
    /// This participant's number.
    pub value: u64,
}

/// The participants' names: "hub", "party 1", ... in a star; "party 0", ... in a mesh.
pub fn names(parties: usize, form: Form) -> Vec<String> {
    (0..parties)
        .map(|i| match form {
            Form::Star if i == HUB as usize => "hub".to_string(),
            _ => format!("party {i}"),
        })
        .collect()
}

/// A toy-sum participant: the protocol's state, run inside an [`Engine`].
pub struct ToySum {
    config: ToySumConfig,
    /// Sum of the values received so far (and this party's own).
    total: u128,
    /// The peers whose value (or, for a spoke, the hub's total) is still needed, in
    /// index order; the first is awaited.
    pending: Vec<PartyId>,
    started: bool,
    done: bool,
}

/// A toy-sum party ready to run: hellos queued. Its randomness (only the hello salt)
/// comes from `seed`.
pub fn new_party(config: ToySumConfig, seed: [u8; 32]) -> Result<Engine<ToySum>, ProtocolError> {
    Engine::new(
        ToySum {
            config,
            total: u128::from(config.value),
            pending: Vec::new(),
            started: false,
            done: false,
        },
        seed,
    )
}

impl ToySum {
    fn is_hub(&self) -> bool {
        self.config.form == Form::Star && self.config.me == HUB
    }

    /// Largest total `n` values can add up to.
    fn max_total(&self) -> u128 {
        u128::from(u64::MAX) * self.config.parties as u128
    }
}

impl Handshake for ToySum {
    fn roster(&self) -> Roster {
        Roster {
            protocol: ProtocolId::Toy,
            names: names(self.config.parties, self.config.form),
            me: self.config.me,
            topology: self.config.form.topology(),
        }
    }

    fn kind_name(kind: u8) -> &'static str {
        match kind {
            KIND_VALUE => "value",
            KIND_TOTAL => "total",
            _ => "an unknown toy-sum message",
        }
    }

    fn settings(&self) -> Vec<u8> {
        // Roster::check refuses more than 255 participants before this is sent.
        vec![self.config.parties as u8, self.config.form.code()]
    }

    fn max_settings_len(&self) -> usize {
        2
    }

    fn check_settings(&mut self, from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "toy-sum hello");
        let (count, form) = (r.u8()?, r.u8()?);
        r.finish()?;
        let name = |p: PartyId| names(self.config.parties, self.config.form)[p as usize].clone();
        if usize::from(count) != self.config.parties {
            return Err(ProtocolError::Incompatible(format!(
                "participant count: the {} has {}, the {} announces {count}",
                name(self.config.me),
                self.config.parties,
                name(from),
            )));
        }
        if form != self.config.form.code() {
            let theirs = match form {
                0 => "star",
                1 => "mesh",
                _ => "an unknown form",
            };
            return Err(ProtocolError::Incompatible(format!(
                "form: the {} runs {}, the {} announces {theirs}",
                name(self.config.me),
                self.config.form.name(),
                name(from),
            )));
        }
        Ok(())
    }
}

impl Protocol for ToySum {
    type Output = u128;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let value = self.config.value.to_be_bytes();
        match self.config.form {
            Form::Star if self.is_hub() => {
                self.pending = session.roster.peers();
            }
            Form::Star => {
                session.send(HUB, KIND_VALUE, &value);
                self.pending = vec![HUB];
            }
            Form::Mesh => {
                for peer in session.roster.peers() {
                    session.send(peer, KIND_VALUE, &value);
                }
                self.pending = session.roster.peers();
            }
        }
        self.started = true;
        self.done = self.pending.is_empty();
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        if self.pending.first() != Some(&message.from) {
            return Err(ProtocolError::ApiMisuse(
                "a toy-sum message from a participant not awaited",
            ));
        }
        let spoke = self.config.form == Form::Star && !self.is_hub();
        if spoke {
            let body = message.expect(KIND_TOTAL)?;
            wire::expect_len("total", body, 16)?;
            let total = u128::from_be_bytes(body.try_into().expect("16 bytes"));
            // The hub cannot be checked, only caught out when its total is impossible.
            if total < u128::from(self.config.value) || total > self.max_total() {
                return Err(PeerMisbehaved::Inconsistent(format!(
                    "the hub's total {total} cannot be a sum of {} values including this party's {}",
                    self.config.parties, self.config.value
                ))
                .into());
            }
            self.total = total;
        } else {
            let body = message.expect(KIND_VALUE)?;
            wire::expect_len("value", body, 8)?;
            self.total += u128::from(u64::from_be_bytes(body.try_into().expect("8 bytes")));
        }
        self.pending.remove(0);
        if self.pending.is_empty() {
            if self.is_hub() {
                let total = self.total.to_be_bytes();
                for peer in session.roster.peers() {
                    session.send(peer, KIND_TOTAL, &total);
                }
            }
            self.done = true;
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.pending.first().copied()
    }

    fn max_message_len(&self) -> usize {
        16
    }

    fn is_done(&self) -> bool {
        self.started && self.done
    }

    fn status(&self) -> String {
        match self.pending.first() {
            Some(_) if self.config.form == Form::Star && !self.is_hub() => {
                "waiting for the hub's total".into()
            }
            Some(&p) => format!(
                "waiting for {}'s value ({} of {} still missing)",
                names(self.config.parties, self.config.form)[p as usize],
                self.pending.len(),
                self.config.parties - 1
            ),
            None => "adding up".into(),
        }
    }

    fn into_output(self) -> Option<u128> {
        self.is_done().then_some(self.total)
    }
}
