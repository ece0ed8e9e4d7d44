//! What every APSI party holds: framing state, session randomness, its hello salt and
//! the session context once both hellos are known; plus the two settings both
//! sub-protocols share.

use privset_crypto::rng::SessionRng;

use super::kind;
use privset_crypto::bls;

use crate::error::{PeerMisbehaved, ProtocolError};
use crate::session::{Channel, SALT_LEN, SessionContext, expect_kind};
use crate::wire::{Frame, ProtocolId};

/// APSI (the judge sees every item) or Partial-APSI (the judge sees a random part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Full,
    Partial,
}

impl Mode {
    pub fn code(self) -> u8 {
        match self {
            Mode::Full => 1,
            Mode::Partial => 2,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Mode::Full),
            2 => Some(Mode::Partial),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Full => "apsi",
            Mode::Partial => "partial-apsi",
        }
    }
}

/// The fraction `p` of a Partial-APSI set the judge opens, in parts per million.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartialFraction(u32);

impl PartialFraction {
    const ONE: u32 = 1_000_000;

    /// `p` in (0, 1], to the nearest millionth.
    pub fn new(p: f64) -> Result<Self, ProtocolError> {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ProtocolError::Config(format!(
                "the partial fraction must be in (0, 1], got {p}"
            )));
        }
        Ok(Self(((p * Self::ONE as f64).round() as u32).max(1)))
    }

    pub fn from_ppm(ppm: u32) -> Option<Self> {
        (1..=Self::ONE).contains(&ppm).then_some(Self(ppm))
    }

    pub fn ppm(self) -> u32 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / Self::ONE as f64
    }

    /// `ceil(p n)`: how many of `n` items the judge opens.
    pub fn opened(self, n: usize) -> usize {
        (n as u128 * self.0 as u128).div_ceil(Self::ONE as u128) as usize
    }
}

pub(crate) struct Core {
    /// 0 for the client, 1 for the judge or server.
    pub me: crate::party::PartyId,
    pub channel: Channel,
    pub rng: SessionRng,
    pub salt: [u8; SALT_LEN],
    pub ctx: Option<SessionContext>,
    pub failed: bool,
    pub done: bool,
}

impl Core {
    pub fn start(protocol: ProtocolId, me: crate::party::PartyId, seed: [u8; 32]) -> Self {
        let mut rng = SessionRng::from_seed(seed);
        let mut salt = [0u8; SALT_LEN];
        rng.fill(&mut salt);
        Self {
            me,
            channel: Channel::new(protocol, me, 1 - me),
            rng,
            salt,
            ctx: None,
            failed: false,
            done: false,
        }
    }

    /// Establishes the session from both salts, the client's first.
    pub fn establish(
        &mut self,
        protocol: ProtocolId,
        client_salt: &[u8; SALT_LEN],
        other_salt: &[u8; SALT_LEN],
    ) -> SessionContext {
        let ctx = SessionContext::new(protocol, &[*client_salt, *other_salt]);
        self.channel.establish(ctx.id);
        self.ctx = Some(ctx.clone());
        ctx
    }

    pub fn open<'a>(
        &mut self,
        message: &'a [u8],
        expected: u8,
    ) -> Result<Frame<'a>, ProtocolError> {
        let frame = self.channel.open(message)?;
        expect_kind(&frame, expected, kind::name)?;
        Ok(frame)
    }

    /// The established session (after the hellos).
    pub fn ctx(&self) -> &SessionContext {
        self.ctx.as_ref().expect("session established by the hello")
    }
}

/// Maps a BLS decoding or verification error on peer data to a typed protocol error.
pub(crate) fn invalid(what: &'static str) -> impl Fn(bls::BlsError) -> ProtocolError {
    move |source| PeerMisbehaved::InvalidBls { what, source }.into()
}

/// [`invalid`] for a batch decode that also names the failing index.
pub(crate) fn invalid_at(what: &'static str) -> impl Fn((usize, bls::BlsError)) -> ProtocolError {
    move |(_, source)| PeerMisbehaved::InvalidBls { what, source }.into()
}

/// A message after the run ended.
pub(crate) fn after_end() -> ProtocolError {
    PeerMisbehaved::UnexpectedMessage {
        got: "a message".into(),
        expected: "nothing (the run is over)".into(),
    }
    .into()
}

/// "on" / "off", for messages about a setting.
pub(crate) fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// Implements [`crate::Party`] for an APSI party type with a `core: Core` field and the
/// methods `step(&mut self, message)`, `max_len(&self)` and `describe(&self)`.
/// Implements [`Party`](crate::party::Party) for an APSI party from its `step`,
/// `max_len` and `describe` methods; with `deferred`, also from `has_pending` and
/// `run_pending` (work put off until the outgoing messages have left).
macro_rules! impl_apsi_party {
    ($ty:ty, deferred) => {
        impl_apsi_party!(@impl $ty,
            fn has_deferred_work(&self) -> bool {
                !self.core.failed && self.has_pending()
            }
            fn do_deferred_work(&mut self) -> Result<(), crate::error::ProtocolError> {
                let result = self.run_pending();
                if result.is_err() {
                    self.core.failed = true;
                }
                result
            }
        );
    };
    ($ty:ty) => {
        impl_apsi_party!(@impl $ty,);
    };
    (@impl $ty:ty, $($deferred:item)*) => {
        impl crate::party::Party for $ty {
            $($deferred)*
            fn id(&self) -> crate::party::PartyId {
                self.core.me
            }
            fn poll_outgoing(&mut self) -> Option<crate::party::Outgoing> {
                let to = 1 - self.core.me;
                self.core.channel.pop().map(|bytes| crate::party::Outgoing { to, bytes })
            }
            fn awaiting(&self) -> Option<crate::party::PartyId> {
                (!self.is_finished()).then_some(1 - self.core.me)
            }
            fn handle_message(
                &mut self,
                _from: crate::party::PartyId,
                message: &[u8],
            ) -> Result<(), crate::error::ProtocolError> {
                if self.core.failed {
                    return Err(crate::error::ProtocolError::ApiMisuse(
                        "handle_message on a party that already failed",
                    ));
                }
                let result = self.step(message);
                if result.is_err() {
                    self.core.failed = true;
                }
                result
            }
            fn max_incoming_len(&self) -> usize {
                self.max_len()
            }
            fn is_finished(&self) -> bool {
                self.core.done && !self.core.channel.has_outgoing()
            }
            fn status(&self) -> String {
                self.describe()
            }
            fn alerts(&self, error: &crate::error::ProtocolError) -> Vec<crate::party::Outgoing> {
                let to = 1 - self.core.me;
                vec![crate::party::Outgoing { to, bytes: self.core.channel.alert(error) }]
            }
        }
    };
}
pub(crate) use impl_apsi_party;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions() {
        let p = PartialFraction::new(0.1).unwrap();
        assert_eq!(p.ppm(), 100_000);
        assert_eq!(p.opened(0), 0);
        assert_eq!(p.opened(1), 1);
        assert_eq!(p.opened(10), 1);
        assert_eq!(p.opened(11), 2);
        assert_eq!(PartialFraction::new(1.0).unwrap().opened(7), 7);
        assert!(PartialFraction::new(0.0).is_err());
        assert!(PartialFraction::new(1.5).is_err());
        assert!(PartialFraction::new(f64::NAN).is_err());
        assert_eq!(PartialFraction::from_ppm(0), None);
        assert_eq!(PartialFraction::from_ppm(1_000_001), None);
    }
}
