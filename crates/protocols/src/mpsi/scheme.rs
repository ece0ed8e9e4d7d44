//! The threshold scheme of a session, and where the set holders' key comes from.
//!
//! * Threshold exponential ElGamal on ristretto255 (the default): the holders agree an
//!   n-out-of-n key in the session's first round of proved contributions
//!   ([`super::setup::JointKey`]); nobody ever holds the whole secret.
//! * Threshold Paillier (de Jong, Sec. 2.4): a dealer makes the key before any session
//!   (`privset mpsi deal`), gives each holder its share privately and erases the
//!   factorisation. The dealer could decrypt every message of every session under that
//!   key: this scheme is exactly as trustworthy as the dealer's erasure
//!   (`privset_crypto::tahe::paillier`, "Trust in the dealer"). The holders compare the
//!   key's fingerprint in their hellos, so shares of two different keys never meet.
//!
//! The three protocols are written once over [`Scheme`]; only the key differs.

use std::sync::Arc;

use privset_crypto::tahe::ThresholdAhe;
use privset_crypto::tahe::elgamal::ThresholdElGamal;
use privset_crypto::tahe::paillier::{KeyShare, PublicKey, ThresholdPaillier};

use super::setup::JointKey;
use super::{MpsiConfig, SCHEME_ELGAMAL, SCHEME_PAILLIER};
use crate::error::ProtocolError;

/// A session's threshold key.
#[derive(Clone, Debug, Default)]
pub enum MpsiKey {
    /// Threshold exponential ElGamal; the holders agree the key in the session.
    #[default]
    Joint,
    /// Threshold Paillier from a dealer: the public key, and a set holder's own share
    /// (`None` for the server or the Miyaji-Nishida dealer, who hold no share).
    Dealt {
        public: Arc<PublicKey>,
        share: Option<Arc<KeyShare>>,
    },
}

impl MpsiKey {
    /// The scheme's name on the command line and in RESULT.json.
    pub fn scheme_name(&self) -> &'static str {
        match self {
            Self::Joint => ThresholdElGamal::NAME,
            Self::Dealt { .. } => ThresholdPaillier::NAME,
        }
    }

    /// The number of set holders a dealt key is for.
    pub fn holders(&self) -> Option<u32> {
        match self {
            Self::Joint => None,
            Self::Dealt { public, .. } => Some(ThresholdPaillier::parties(public)),
        }
    }

    /// Which holder a dealt share belongs to (1-based, as the participant's index).
    pub fn holder_index(&self) -> Option<u32> {
        match self {
            Self::Dealt {
                share: Some(share), ..
            } => Some(share.index()),
            _ => None,
        }
    }

    pub(super) fn code(&self) -> u8 {
        match self {
            Self::Joint => SCHEME_ELGAMAL,
            Self::Dealt { .. } => SCHEME_PAILLIER,
        }
    }

    /// What the hello carries to show which key: the dealt key's fingerprint, zeros for
    /// a joint key (made in the session, nothing to compare before).
    pub(super) fn fingerprint(&self) -> [u8; 32] {
        match self {
            Self::Joint => [0; 32],
            Self::Dealt { public, .. } => public.fingerprint(),
        }
    }

    /// Checks a dealt key against the session: a key for exactly the `holders` set
    /// holders, all needed to decrypt, and a share (with the participant's own index)
    /// held by the holders only.
    pub(super) fn check(&self, holders: u32, me: u32, hub: bool) -> Result<(), ProtocolError> {
        let Self::Dealt { public, share } = self else {
            return Ok(());
        };
        let (parties, threshold) = (
            ThresholdPaillier::parties(public),
            ThresholdPaillier::threshold(public),
        );
        if parties != holders || threshold != holders {
            return Err(ProtocolError::Config(format!(
                "the Paillier key is {threshold}-out-of-{parties}; this session has {holders} set holders, and every one must be needed to decrypt (deal a {holders}-out-of-{holders} key)"
            )));
        }
        match (share, hub) {
            (Some(_), true) => Err(ProtocolError::Config(
                "the coordinator (server or dealer) takes the public key only, not a key share"
                    .into(),
            )),
            (None, false) => Err(ProtocolError::Config(
                "a set holder needs its key share (the file `privset mpsi deal` wrote for it)"
                    .into(),
            )),
            (Some(s), false) if s.index() != me => Err(ProtocolError::Config(format!(
                "this key share is holder {}'s; this participant is holder {me}",
                s.index()
            ))),
            (Some(s), false) if s.public_key().fingerprint() != public.fingerprint() => Err(
                ProtocolError::Config("the key share is not a share of the public key".into()),
            ),
            _ => Ok(()),
        }
    }
}

/// A threshold scheme the protocols run on, with where its key comes from.
pub(super) trait Scheme: ThresholdAhe + 'static {
    /// The key given before the session, if the scheme's keys are dealt: the public key
    /// and this participant's share (a holder's).
    #[allow(clippy::type_complexity)]
    fn given(config: &MpsiConfig) -> Option<(Self::PublicKey, Option<Arc<Self::KeyShare>>)>;

    /// The public key agreed in the session's key round (every contribution in).
    fn joint_public(keys: &JointKey) -> Result<Self::PublicKey, ProtocolError>;

    /// This holder's share from the session's key round.
    fn joint_share(keys: &mut JointKey) -> Result<Arc<Self::KeyShare>, ProtocolError>;
}

impl Scheme for ThresholdElGamal {
    fn given(_: &MpsiConfig) -> Option<(Self::PublicKey, Option<Arc<Self::KeyShare>>)> {
        None
    }

    fn joint_public(keys: &JointKey) -> Result<Self::PublicKey, ProtocolError> {
        keys.public_key()
    }

    fn joint_share(keys: &mut JointKey) -> Result<Arc<Self::KeyShare>, ProtocolError> {
        keys.key_share().map(Arc::new)
    }
}

impl Scheme for ThresholdPaillier {
    fn given(config: &MpsiConfig) -> Option<(Self::PublicKey, Option<Arc<Self::KeyShare>>)> {
        match &config.key {
            MpsiKey::Dealt { public, share } => Some(((**public).clone(), share.clone())),
            MpsiKey::Joint => None,
        }
    }

    fn joint_public(_: &JointKey) -> Result<Self::PublicKey, ProtocolError> {
        Err(dealt_only())
    }

    fn joint_share(_: &mut JointKey) -> Result<Arc<Self::KeyShare>, ProtocolError> {
        Err(dealt_only())
    }
}

fn dealt_only() -> ProtocolError {
    ProtocolError::ApiMisuse("threshold Paillier keys come from a dealer, not a key round")
}
