//! What every set-operation party holds whatever its role: settings, input, session
//! randomness, framing state, hello and, at the end, output.

use privset_crypto::cwprf::CwPrf;
use privset_crypto::rng::SessionRng;

use super::hello::Hello;
use super::{PsoConfig, PsoOutput, PsoRole, kind};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::session::{Channel, SessionContext, expect_kind};
use crate::wire::{Frame, ProtocolId};

pub struct Core {
    pub role: PsoRole,
    pub config: PsoConfig,
    pub input: Dataset,
    pub rng: SessionRng,
    pub channel: Channel,
    pub hello: Hello,
    pub output: Option<PsoOutput>,
}

/// What both parties derive once the hellos are exchanged.
pub struct Session {
    pub ctx: SessionContext,
    pub peer: Hello,
    /// Domain-separation tag of the hash into the cwPRF's domain.
    pub dst: Vec<u8>,
}

impl Core {
    /// Derives everything from `seed` (so a re-created party replays byte for byte) and
    /// queues the hello.
    pub fn start(role: PsoRole, config: PsoConfig, input: Dataset, seed: [u8; 32]) -> Self {
        let mut rng = SessionRng::from_seed(seed);
        let mut salt = [0u8; 32];
        rng.fill(&mut salt);
        let hello = Hello::new(role, &config, &input, salt);
        let me = role.code() - 1;
        let mut channel = Channel::new(config.operation.protocol(), me, 1 - me);
        channel.push(kind::HELLO, &hello.encode());
        Self {
            role,
            config,
            input,
            rng,
            channel,
            hello,
            output: None,
        }
    }

    pub fn protocol(&self) -> ProtocolId {
        self.config.operation.protocol()
    }

    /// Checks the peer's hello and establishes the session.
    pub fn on_hello<C: CwPrf>(&mut self, body: &[u8]) -> Result<Session, ProtocolError> {
        let peer = Hello::decode(body)?;
        self.hello.check_peer(&peer, self.config.max_peer_items)?;
        let (first, second) = match self.role {
            PsoRole::Receiver => (&self.hello.salt, &peer.salt),
            PsoRole::Sender => (&peer.salt, &self.hello.salt),
        };
        let ctx = SessionContext::new(self.protocol(), &[*first, *second]);
        self.channel.establish(ctx.id);
        let dst = ctx.hash_dst(self.protocol(), C::ID.suite());
        Ok(Session { ctx, peer, dst })
    }

    /// Opens a frame and checks it is of the `expected` kind.
    pub fn open<'a>(
        &mut self,
        message: &'a [u8],
        expected: u8,
    ) -> Result<Frame<'a>, ProtocolError> {
        let frame = self.channel.open(message)?;
        expect_kind(&frame, expected, kind::name)?;
        Ok(frame)
    }

    pub fn finish(&mut self, output: PsoOutput) {
        self.output = Some(output);
    }

    pub fn empty_output(&self, peer_items: u64) -> PsoOutput {
        PsoOutput::empty(self.config.operation, self.role, peer_items)
    }
}

/// Wraps an oblivious-transfer error on peer data.
pub fn bad_ot(source: privset_crypto::ot::OtError) -> ProtocolError {
    PeerMisbehaved::InvalidOt(source).into()
}

/// Work a party defers until its outgoing messages have left (see
/// `Party::has_deferred_work`); most parties have none.
pub trait DeferredWork {
    fn has_work(&self) -> bool {
        false
    }
    fn work(&mut self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

/// Implements [`crate::Party`] and [`super::PsoParty`] for a party type with a `core:
/// Core` field, a `state` whose `Failed` variant marks a spent party, and the methods
/// `step(&mut self, message) -> Result<(), ProtocolError>`, `max_len(&self) -> usize`,
/// `describe(&self) -> String`, and implementing [`DeferredWork`].
macro_rules! impl_pso_party {
    ($ty:ident) => {
        impl<C: privset_crypto::cwprf::CwPrf> crate::party::Party for $ty<C> {
            fn id(&self) -> crate::party::PartyId {
                self.core.role.code() - 1
            }
            fn poll_outgoing(&mut self) -> Option<crate::party::Outgoing> {
                let to = 2 - self.core.role.code();
                self.core
                    .channel
                    .pop()
                    .map(|bytes| crate::party::Outgoing { to, bytes })
            }
            fn awaiting(&self) -> Option<crate::party::PartyId> {
                (!self.is_finished()).then_some(2 - self.core.role.code())
            }
            fn handle_message(
                &mut self,
                _from: crate::party::PartyId,
                message: &[u8],
            ) -> Result<(), crate::error::ProtocolError> {
                let result = self.step(message);
                if result.is_err() {
                    self.state = State::Failed;
                }
                result
            }
            fn max_incoming_len(&self) -> usize {
                self.max_len()
            }
            fn has_deferred_work(&self) -> bool {
                crate::pso::core::DeferredWork::has_work(self)
            }
            fn do_deferred_work(&mut self) -> Result<(), crate::error::ProtocolError> {
                let result = crate::pso::core::DeferredWork::work(self);
                if result.is_err() {
                    self.state = State::Failed;
                }
                result
            }
            fn is_finished(&self) -> bool {
                self.core.output.is_some() && !self.core.channel.has_outgoing()
            }
            fn status(&self) -> String {
                self.describe()
            }
            fn alerts(&self, error: &crate::error::ProtocolError) -> Vec<crate::party::Outgoing> {
                let to = 2 - self.core.role.code();
                vec![crate::party::Outgoing {
                    to,
                    bytes: self.core.channel.alert(error),
                }]
            }
        }
        impl<C: privset_crypto::cwprf::CwPrf> crate::pso::PsoParty for $ty<C> {
            fn output(&self) -> Option<crate::pso::PsoOutput> {
                self.core.output.clone()
            }
        }
    };
}
pub(crate) use impl_pso_party;
