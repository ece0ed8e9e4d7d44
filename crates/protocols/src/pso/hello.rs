//! The settings every set-operation party announces in its hello (the engine adds the
//! salt): construction, set size, and what the sender's payloads will look like.
//! Mismatched settings end the run with
//! `ProtocolError::Incompatible` naming the setting, before any set element is sent.

use privset_crypto::cwprf::CwPrfId;

use super::{Construction, LastMessage, MAX_ITEM_LEN, PsoConfig, PsoRole};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::wire::Reader;

/// Upper bound of the encoded settings.
pub const MAX_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub cwprf: CwPrfId,
    pub construction: Construction,
    pub last_message: LastMessage,
    pub items: u64,
    /// Sender: the longest identifier in bytes (psu and psi-share transfer identifiers
    /// in fixed-width slots of this size); 0 otherwise.
    pub max_item_len: u32,
    /// Sender of psi-card-sum: the bound on every value; 0 otherwise.
    pub max_value: u64,
}

impl Hello {
    pub fn new(role: PsoRole, config: &PsoConfig, input: &Dataset) -> Self {
        let sender = role == PsoRole::Sender;
        let op = config.operation;
        let transfers_items = matches!(op, super::Operation::Psu | super::Operation::PsiShare);
        Hello {
            cwprf: config.cwprf,
            construction: config.construction,
            last_message: config.last_message,
            items: input.ids.len() as u64,
            max_item_len: if sender && transfers_items {
                input.ids.iter().map(|i| i.len()).max().unwrap_or(0) as u32
            } else {
                0
            },
            max_value: if sender && op == super::Operation::PsiCardSum {
                config.max_value
            } else {
                0
            },
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(MAX_LEN);
        b.push(self.cwprf.code());
        b.push(self.construction.code());
        b.push(self.last_message.code());
        b.extend_from_slice(&self.items.to_be_bytes());
        b.extend_from_slice(&self.max_item_len.to_be_bytes());
        b.extend_from_slice(&self.max_value.to_be_bytes());
        b
    }

    pub fn decode(body: &[u8]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new(body, "hello");
        let code = r.u8()?;
        let cwprf = CwPrfId::from_code(code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown group {code}"))
        })?;
        let code = r.u8()?;
        let construction = Construction::from_code(code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown mqRPMT construction {code}"))
        })?;
        let code = r.u8()?;
        let last_message = LastMessage::from_code(code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown last-message encoding {code}"))
        })?;
        let items = r.u64()?;
        let max_item_len = r.u32()?;
        let max_value = r.u64()?;
        r.finish()?;
        if max_item_len as usize > MAX_ITEM_LEN {
            return Err(PeerMisbehaved::Malformed(format!(
                "hello announces identifiers of {max_item_len} bytes (max {MAX_ITEM_LEN})"
            ))
            .into());
        }
        Ok(Hello {
            cwprf,
            construction,
            last_message,
            items,
            max_item_len,
            max_value,
        })
    }

    /// Checks that `peer` has the same settings, within `limit` items (the engine
    /// checked that it plays the other role).
    pub fn check_peer(&self, peer: &Hello, limit: u64) -> Result<(), ProtocolError> {
        let mismatch = |what: &str, mine: &str, theirs: &str| {
            Err(ProtocolError::Incompatible(format!(
                "{what}: this party uses {mine}, the peer uses {theirs}"
            )))
        };
        if peer.cwprf != self.cwprf {
            return mismatch("group", self.cwprf.name(), peer.cwprf.name());
        }
        if peer.construction != self.construction {
            return mismatch(
                "mqRPMT construction",
                self.construction.name(),
                peer.construction.name(),
            );
        }
        if peer.last_message != self.last_message {
            return mismatch(
                "last message",
                self.last_message.name(),
                peer.last_message.name(),
            );
        }
        if peer.items > limit {
            return Err(PeerMisbehaved::TooLarge {
                got: peer.items,
                limit,
            }
            .into());
        }
        Ok(())
    }
}
