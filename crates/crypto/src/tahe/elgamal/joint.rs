//! An n-out-of-n key in one round, with no private channels.
//!
//! The multi-party protocols decrypt with every key holder, so their keys are
//! n-out-of-n. For such keys the distributed key generation of the parent module
//! collapses to one broadcast: party `i` picks `x_i` at random and publishes
//! `X_i = x_i G` with a Schnorr proof of knowledge of `x_i` bound to the session (so
//! nobody can choose its `X_i` as a function of the others' and cancel them: the
//! rogue-key attack). The joint key is `h = Σ_i X_i`, and nothing is sent privately,
//! which lets the parties of a star (who talk only to the hub) agree a key through the
//! hub without the hub learning anything it could decrypt with.
//!
//! To reuse the threshold machinery unchanged, the additive shares are turned into Shamir
//! shares of the same `x`: with `λ_j` the Lagrange coefficients at zero over `1..=n`,
//! party `j`'s Shamir share is `s_j = x_j / λ_j` and its verification key
//! `h_j = X_j / λ_j`. Any `n` values define one polynomial of degree `n - 1`, whose value
//! at zero is `Σ_j λ_j s_j = Σ_j x_j = x`, so the result is an ordinary n-out-of-n
//! [`KeyShare`] / [`PublicKey`] (and batched shares, which weight by `λ_j`, use `x_j`
//! itself).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::IsIdentity;
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::{KeyShare, PublicKey, lagrange_at_zero, point_from, scalar_from};
use crate::ahe::elgamal::random_nonzero_scalar;
use crate::rng::SessionRng;
use crate::tahe::{TaheError, check_counts};

/// Bytes of an encoded [`KeyContribution`]: `party (u32) ‖ X ‖ e ‖ z`.
pub const CONTRIBUTION_LEN: usize = 4 + 3 * 32;

/// Party `party`'s public part `X = x G` with a proof of knowledge of `x`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyContribution {
    party: u32,
    point: RistrettoPoint,
    e: Scalar,
    z: Scalar,
}

/// The secret `x` behind this party's contribution. Zeroized on drop.
pub struct ContributionSecret {
    party: u32,
    parties: u32,
    x: Scalar,
}

impl Drop for ContributionSecret {
    fn drop(&mut self) {
        self.x.zeroize();
    }
}

impl std::fmt::Debug for ContributionSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ContributionSecret {{ party: {}, .. }}", self.party)
    }
}

fn pok_challenge(context: &[u8], party: u32, x: &RistrettoPoint, a: &RistrettoPoint) -> Scalar {
    let mut h = Sha512::new();
    h.update(b"privset/tahe/elgamal/joint-key/v1");
    h.update((context.len() as u64).to_be_bytes());
    h.update(context);
    h.update(party.to_be_bytes());
    h.update(x.compress().as_bytes());
    h.update(a.compress().as_bytes());
    Scalar::from_bytes_mod_order_wide(&h.finalize().into())
}

/// Party `me` of `parties`: a fresh secret and its contribution, the proof bound to
/// `context` (the session's transcript: a proof cannot be replayed in another session).
pub fn contribute(
    parties: u32,
    me: u32,
    context: &[u8],
    rng: &mut SessionRng,
) -> Result<(ContributionSecret, KeyContribution), TaheError> {
    check_counts(parties, parties)?;
    check_party(parties, me)?;
    let x = random_nonzero_scalar(rng);
    let point = &x * RISTRETTO_BASEPOINT_TABLE;
    let mut k = random_nonzero_scalar(rng);
    let a = &k * RISTRETTO_BASEPOINT_TABLE;
    let e = pok_challenge(context, me, &point, &a);
    let z = k + e * x;
    k.zeroize();
    Ok((
        ContributionSecret {
            party: me,
            parties,
            x,
        },
        KeyContribution {
            party: me,
            point,
            e,
            z,
        },
    ))
}

fn check_party(parties: u32, party: u32) -> Result<(), TaheError> {
    if party == 0 || party > parties {
        return Err(TaheError::UnknownParty { party, parties });
    }
    Ok(())
}

impl KeyContribution {
    /// The party it claims to come from.
    pub fn party(&self) -> u32 {
        self.party
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(CONTRIBUTION_LEN);
        out.extend_from_slice(&self.party.to_be_bytes());
        out.extend_from_slice(self.point.compress().as_bytes());
        out.extend_from_slice(self.e.as_bytes());
        out.extend_from_slice(self.z.as_bytes());
        out
    }

    /// Decodes and verifies the contribution of `expected_party` (its encoding, its
    /// index and its proof of knowledge under `context`); any failure is a
    /// [`TaheError::Complaint`] naming it.
    pub fn decode(
        bytes: &[u8],
        parties: u32,
        expected_party: u32,
        context: &[u8],
    ) -> Result<Self, TaheError> {
        check_party(parties, expected_party)?;
        let complain = |reason: &str| TaheError::Complaint {
            dealer: expected_party,
            reason: reason.to_string(),
        };
        if bytes.len() != CONTRIBUTION_LEN {
            return Err(complain("key contribution has the wrong length"));
        }
        let party = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        if party != expected_party {
            return Err(complain(&format!("key contribution claims party {party}")));
        }
        let point = point_from(&bytes[4..36])
            .ok_or_else(|| complain("key contribution is not a canonical point"))?;
        if point.is_identity() {
            return Err(complain("key contribution is the identity"));
        }
        let e = scalar_from(&bytes[36..68]).ok_or_else(|| complain("e is not canonical"))?;
        let z = scalar_from(&bytes[68..100]).ok_or_else(|| complain("z is not canonical"))?;
        let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&-e, &point, &z);
        if pok_challenge(context, party, &point, &a) != e {
            return Err(complain(
                "proof of knowledge of the key contribution does not verify",
            ));
        }
        Ok(KeyContribution { party, point, e, z })
    }
}

/// The joint n-out-of-n public key from every party's (verified) contribution, in any
/// order: for the parties that hold no share (a server, a dealer).
pub fn joint_public_key(
    parties: u32,
    contributions: &[KeyContribution],
) -> Result<PublicKey, TaheError> {
    check_counts(parties, parties)?;
    let mut points = vec![None; parties as usize];
    for c in contributions {
        check_party(parties, c.party)?;
        if points[c.party as usize - 1].replace(c.point).is_some() {
            return Err(TaheError::Complaint {
                dealer: c.party,
                reason: "two key contributions".into(),
            });
        }
    }
    let points: Vec<RistrettoPoint> = points
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.ok_or(TaheError::Complaint {
                dealer: i as u32 + 1,
                reason: "no key contribution received".into(),
            })
        })
        .collect::<Result<_, _>>()?;
    let h: RistrettoPoint = points.iter().sum();
    if h.is_identity() {
        return Err(TaheError::Parameters("joint key is the identity".into()));
    }
    let all: Vec<u32> = (1..=parties).collect();
    let verification = lagrange_at_zero(&all)
        .iter()
        .zip(&points)
        .map(|(l, x)| x * l.invert())
        .collect();
    Ok(PublicKey::new(parties, parties, h, verification))
}

/// This party's n-out-of-n key share from its secret and every party's contribution
/// (its own included).
pub fn joint_key_share(
    secret: &ContributionSecret,
    contributions: &[KeyContribution],
) -> Result<KeyShare, TaheError> {
    let pk = joint_public_key(secret.parties, contributions)?;
    let all: Vec<u32> = (1..=secret.parties).collect();
    let lambda = lagrange_at_zero(&all)[secret.party as usize - 1];
    let x = secret.x * lambda.invert();
    if &x * RISTRETTO_BASEPOINT_TABLE != pk.verification[secret.party as usize - 1] {
        return Err(TaheError::Complaint {
            dealer: secret.party,
            reason: "this party's own contribution is not among those given".into(),
        });
    }
    let pk_digest = pk.digest;
    Ok(KeyShare {
        index: secret.party,
        x,
        pk,
        pk_digest,
    })
}
