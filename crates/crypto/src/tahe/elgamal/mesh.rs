//! Decryption in a full mesh: every party sends every other its shares of the same
//! ciphertexts, and each checks them all (Miyaji-Nishida, de Jong Ch. 4).
//!
//! # One check for everybody's shares
//!
//! With [`super::batch`]'s batches a party checks each other party's proof with two
//! multi-scalar multiplications over the batch: `2 (t − 1)` of them per chunk for every
//! one of `t` parties, which was over a quarter of a Miyaji-Nishida party's time
//! (docs/benchmarks.md). In the mesh every party decrypts with the same sums, so it
//! checks the sums instead, in two rounds:
//!
//! 1. party `i` sends its shares `D_{i,k} = w_i c1_k` alone (32 bytes each);
//! 2. once a party holds every party's shares, it hashes the `c1_k` and all the shares,
//!    in party order, into a 32-byte seed, and expands the seed into 128-bit
//!    coefficients `ρ_k`; it sends the seed, `D_i = w_i A` for `A = Σ ρ_k c1_k`, and a
//!    Chaum-Pedersen proof that `log_G W_i = log_A D_i` (as a batch's proof);
//! 3. a party whose own seed every proof names checks each proof against its own `A`
//!    (no multi-scalar multiplication), then every share at once:
//!    `Σ_k ρ_k S_k = Σ_i D_i`, where `S_k = Σ_i D_{i,k}` are the sums it decrypts with.
//!
//! Two multi-scalar multiplications per chunk in all (`A`, and `Σ ρ_k S_k`). If some
//! `S_k ≠ x c1_k` (`x = Σ_i w_i`, so that `x c1_k` is what decryption needs), the
//! proofs force `Σ_i D_i = x A`, so the check holds only if `Σ_k ρ_k (S_k − x c1_k) = 0`:
//! the shares fix the seed before the coefficients exist, so that happens with
//! probability about `2^-128` per try. What is checked is the sums the party decrypts
//! with: errors of two parties that cancel in every sum change no result and pass.
//!
//! # Naming the party
//!
//! When the sum check fails, or a proof names another seed (someone sent different
//! shares to different parties), the party checks each party on its own: its proof
//! against the `A` of the seed it named, and `Σ_k ρ'_k D_{i,k} = D_i` over its shares as
//! received here, with that seed's coefficients `ρ'_k` (two multi-scalar
//! multiplications each). The first party that fails is named
//! ([`TaheError::BadShare`]). A party whose shares are right passes under any seed; one
//! whose shares are wrong passes under a seed of its choosing with probability about
//! `2^-128` per try.

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::batch::{challenge, check_proof, expand, proof_scalars};
use super::tested::Tested;
use super::zero_test::Shares;
use super::zero_test::{ZeroTest, check_batch, check_count, zero_test_finish, zero_test_new};
use super::{KeyShare, PublicKey};
use crate::ahe::elgamal::random_nonzero_scalar;
use crate::rng::SessionRng;
use crate::tahe::TaheError;

/// Bytes of a proof: `seed ‖ D_i ‖ e ‖ z`.
pub(super) const PROOF_LEN: usize = 128;

/// A mesh decryption of one set of ciphertexts, seen by one party.
pub struct Mesh {
    test: ZeroTest,
    /// Every party's shares as received (this party's own as it made them).
    shares: Vec<Option<Vec<u8>>>,
    /// This party's seed, coefficients and `A`, once every party's shares are in.
    view: Option<View>,
    /// Each party's `D_i`, its proof checked, and the seed it named.
    claims: Vec<Option<Claim>>,
}

struct View {
    seed: [u8; 32],
    rho: Vec<u128>,
    a: RistrettoPoint,
}

struct Claim {
    seed: [u8; 32],
    d: RistrettoPoint,
}

pub(super) fn mesh_new(pk: &PublicKey, count: usize) -> Mesh {
    let parties = pk.parties as usize;
    Mesh {
        test: zero_test_new(pk, count),
        shares: vec![None; parties],
        view: None,
        claims: (0..parties).map(|_| None).collect(),
    }
}

/// Adds `party`'s shares (32 bytes per ciphertext) to the sums and keeps them.
pub(super) fn mesh_absorb_shares(
    pk: &PublicKey,
    mesh: &mut Mesh,
    tested: &Tested,
    party: u32,
    shares: &[u8],
) -> Result<(), TaheError> {
    keep_shares(pk, mesh, tested, party, shares, None)
}

/// Checks `party`'s shares, adds them to the sums (`decoded`, or decoded from `shares`)
/// and keeps their bytes.
fn keep_shares(
    pk: &PublicKey,
    mesh: &mut Mesh,
    tested: &Tested,
    party: u32,
    shares: &[u8],
    decoded: Option<Shares>,
) -> Result<(), TaheError> {
    check_batch(pk, &mesh.test, tested, party, shares, 32 * tested.len())?;
    let decoded = match decoded {
        Some(d) => d,
        None => mesh
            .test
            .sums
            .decode(shares)
            .map_err(|k| TaheError::BadShare {
                party,
                reason: format!("share {k} is not a canonical ristretto255 encoding"),
            })?,
    };
    mesh.test.sums.add(decoded);
    mesh.test.absorbed[party as usize - 1] = true;
    mesh.shares[party as usize - 1] = Some(shares.to_vec());
    Ok(())
}

/// This party's shares `w_i c1_k`, kept as every other party's are, to send.
pub(super) fn mesh_own_shares(
    ks: &KeyShare,
    mesh: &mut Mesh,
    tested: &Tested,
) -> Result<Vec<u8>, TaheError> {
    let mut w = ks.pk.weight(ks.index) * ks.x;
    let shares = tested.shares(&w);
    w.zeroize();
    // Made in lanes: added as they are, not decoded from their encodings again.
    #[cfg(target_arch = "x86_64")]
    let decoded = shares.points.map(Shares::Lanes);
    #[cfg(not(target_arch = "x86_64"))]
    let decoded = None;
    keep_shares(&ks.pk, mesh, tested, ks.index, &shares.encoded, decoded)?;
    Ok(shares.encoded)
}

/// The coefficients of `seed` and `A = Σ ρ_k c1_k`.
fn seed_view(seed: [u8; 32], tested: &Tested) -> View {
    let rho = expand(&seed, tested.len());
    let a = tested.combination(&rho);
    View { seed, rho, a }
}

/// This party's view, made once every party's shares are in.
fn view<'a>(pk: &PublicKey, mesh: &'a mut Mesh, tested: &Tested) -> Result<&'a View, TaheError> {
    check_count(&mesh.test, tested)?;
    if mesh.view.is_none() {
        let mut h = Sha512::new();
        h.update(b"privset/tahe/elgamal/mesh/v1");
        h.update(pk.digest);
        h.update((tested.len() as u64).to_be_bytes());
        h.update(&tested.c1_encoded);
        for (p, shares) in mesh.shares.iter().enumerate() {
            let shares = shares.as_ref().ok_or(TaheError::MissingShares {
                party: p as u32 + 1,
            })?;
            h.update(shares);
        }
        let seed: [u8; 32] = h.finalize()[..32].try_into().expect("32 bytes");
        mesh.view = Some(seed_view(seed, tested));
    }
    Ok(mesh.view.as_ref().expect("made above"))
}

/// This party's proof, once every party's shares are in: `seed ‖ D_i ‖ e ‖ z`.
pub(super) fn mesh_own_proof(
    ks: &KeyShare,
    mesh: &mut Mesh,
    tested: &Tested,
    rng: &mut SessionRng,
) -> Result<Vec<u8>, TaheError> {
    let pk = &ks.pk;
    let mut w = pk.weight(ks.index) * ks.x;
    let view = view(pk, mesh, tested)?;
    let (seed, a_star) = (view.seed, view.a);
    let d_star = a_star * w;
    let mut k = random_nonzero_scalar(rng);
    let e = challenge(
        pk,
        ks.index,
        &a_star,
        &d_star,
        &(&k * RISTRETTO_BASEPOINT_TABLE),
        &(a_star * k),
    );
    let z = k + e * w;
    k.zeroize();
    w.zeroize();
    mesh.claims[ks.index as usize - 1] = Some(Claim { seed, d: d_star });
    let mut out = Vec::with_capacity(PROOF_LEN);
    out.extend_from_slice(&seed);
    out.extend_from_slice(d_star.compress().as_bytes());
    out.extend_from_slice(e.as_bytes());
    out.extend_from_slice(z.as_bytes());
    Ok(out)
}

/// Checks `party`'s proof against the `A` of the seed it names, and keeps its `D_i`.
pub(super) fn mesh_absorb_proof(
    pk: &PublicKey,
    mesh: &mut Mesh,
    tested: &Tested,
    party: u32,
    proof: &[u8],
) -> Result<(), TaheError> {
    let bad = |reason: String| TaheError::BadShare { party, reason };
    if party == 0 || party > pk.parties {
        return Err(TaheError::UnknownParty {
            party,
            parties: pk.parties,
        });
    }
    if mesh.claims[party as usize - 1].is_some() {
        return Err(TaheError::DuplicateShare { party });
    }
    if proof.len() != PROOF_LEN {
        return Err(bad(format!(
            "a proof of {} bytes ({PROOF_LEN} expected)",
            proof.len()
        )));
    }
    let seed: [u8; 32] = proof[..32].try_into().expect("32 bytes");
    let d_star = CompressedRistretto::from_slice(&proof[32..64])
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| bad("D is not a canonical ristretto255 encoding".into()))?;
    let scalars = proof_scalars(&proof[64..]).map_err(bad)?;
    let own = view(pk, mesh, tested)?;
    let a_star = if seed == own.seed {
        own.a
    } else {
        seed_view(seed, tested).a
    };
    check_proof(pk, party, &a_star, &d_star, scalars)?;
    mesh.claims[party as usize - 1] = Some(Claim { seed, d: d_star });
    Ok(())
}

/// For each ciphertext, whether it decrypts to zero, once every party's shares and
/// proof are in: the sum check, and on failure each party's own check.
pub(super) fn mesh_finish(
    pk: &PublicKey,
    mut mesh: Mesh,
    tested: &Tested,
) -> Result<Vec<bool>, TaheError> {
    view(pk, &mut mesh, tested)?;
    let mut claims = Vec::with_capacity(mesh.claims.len());
    for (p, claim) in mesh.claims.iter().enumerate() {
        claims.push(claim.as_ref().ok_or(TaheError::MissingShares {
            party: p as u32 + 1,
        })?);
    }
    let own = mesh.view.as_ref().expect("made above");
    let same_seed = claims.iter().all(|c| c.seed == own.seed);
    let sums_hold = same_seed && {
        let claimed: RistrettoPoint = claims.iter().map(|c| c.d).sum();
        mesh.test.sums.combination(&own.rho) == claimed
    };
    if !sums_hold {
        for (p, claim) in claims.iter().enumerate() {
            let party = p as u32 + 1;
            let rho = if claim.seed == own.seed {
                own.rho.clone()
            } else {
                expand(&claim.seed, tested.len())
            };
            let shares = mesh.shares[p]
                .as_ref()
                .expect("every party's shares are in");
            let decoded = mesh
                .test
                .sums
                .decode(shares)
                .expect("decoded when absorbed");
            if decoded.combination(&rho) != claim.d {
                return Err(TaheError::BadShare {
                    party,
                    reason: "its decryption shares do not match its proof of correct decryption"
                        .into(),
                });
            }
        }
        if same_seed {
            return Err(TaheError::Parameters(
                "the shares' sum check failed though every party's shares match its proof".into(),
            ));
        }
    }
    zero_test_finish(mesh.test, tested)
}
