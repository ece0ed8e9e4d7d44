//! What every set-operation party keeps besides its protocol state: its role, settings
//! and input, its hello, and what the session agreed (the peer's hello, the hash tag).

use privset_crypto::cwprf::CwPrf;

use super::hello::{self, Hello};
use super::transfer::SumModulus;
use super::{Operation, PsoConfig, PsoRole, kind};
use crate::engine::{Handshake, Roster};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::session::SessionContext;
use crate::wire::PartyId;

/// The receiver is participant 0, the sender participant 1.
pub const RECEIVER: PartyId = 0;
pub const SENDER: PartyId = 1;

pub struct Common {
    pub role: PsoRole,
    pub config: PsoConfig,
    pub input: Dataset,
    pub hello: Hello,
    /// The peer's hello, once checked.
    peer: Option<Hello>,
    /// Domain-separation tag of the hash into the cwPRF's domain (set by `start`).
    dst: Vec<u8>,
}

impl Common {
    pub fn new(role: PsoRole, config: PsoConfig, input: Dataset) -> Self {
        let hello = Hello::new(role, &config, &input);
        Self {
            role,
            config,
            input,
            hello,
            peer: None,
            dst: Vec::new(),
        }
    }

    /// The session is established: derives the hash tag of the cwPRF `C`.
    pub fn start<C: CwPrf>(&mut self, ctx: &SessionContext) {
        self.dst = ctx.hash_dst(self.config.operation.protocol(), C::ID.suite());
    }

    /// The peer's hello (the engine calls the protocol only after checking it).
    pub fn peer(&self) -> &Hello {
        self.peer
            .as_ref()
            .expect("the peer's hello precedes the protocol")
    }

    /// The peer's set size.
    pub fn peer_items(&self) -> u64 {
        self.peer().items
    }

    pub fn dst(&self) -> &[u8] {
        &self.dst
    }

    /// psi-card-sum's modulus for the masked sum, from what the sender announced.
    pub fn sum_modulus(&self) -> Result<SumModulus, ProtocolError> {
        let peer = self.peer();
        SumModulus::announced(peer.items, peer.max_value)
    }
}

/// Every role of every set operation announces and checks the same settings.
impl Handshake for Common {
    fn roster(&self) -> Roster {
        let me = match self.role {
            PsoRole::Receiver => RECEIVER,
            PsoRole::Sender => SENDER,
        };
        Roster::pair(self.config.operation.protocol(), ["receiver", "sender"], me)
    }

    fn kind_name(k: u8) -> &'static str {
        kind::name(k)
    }

    fn settings(&self) -> Vec<u8> {
        self.hello.encode()
    }

    fn max_settings_len(&self) -> usize {
        hello::MAX_LEN
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let peer = Hello::decode(settings)?;
        self.hello.check_peer(&peer, self.config.max_peer_items)?;
        self.peer = Some(peer);
        if self.role == PsoRole::Receiver && self.config.operation == Operation::PsiCardSum {
            self.sum_modulus()?;
        }
        Ok(())
    }
}

/// Wraps an oblivious-transfer error on peer data.
pub fn bad_ot(source: privset_crypto::ot::OtError) -> ProtocolError {
    PeerMisbehaved::InvalidOt(source).into()
}

/// A message arrived when the protocol state expects none (the engine prevents this;
/// kept as an error rather than a panic).
pub fn no_message_now() -> ProtocolError {
    ProtocolError::ApiMisuse("a message while the party expects none")
}
