//! Decryption through a relay: every party sends its shares of the same ciphertexts to
//! one party, the relay, which sends every other party their sums, and each party checks
//! the sums it decrypts with at once (Miyaji-Nishida, de Jong Ch. 4).
//!
//! # Why a relay
//!
//! In a full mesh every one of `t` parties decoded the `t − 1` others' shares of every
//! ciphertext, and sent its own to each of them: at ten parties, nine inverse square
//! roots a ciphertext at every party, about a quarter of a party's time
//! (docs/benchmarks.md). Through a relay, the relay decodes `t − 1` shares and encodes one
//! sum per ciphertext and every other party decodes the sum; each party sends its shares
//! once. Miyaji-Nishida's protocol changes the relay with every chunk, so the work
//! rotates.
//!
//! # One check of the sums
//!
//! 1. party `i` sends the relay its shares `D_{i,k} = w_i c1_k` alone (32 bytes each);
//! 2. the relay, once it holds every party's shares, sends every other party the
//!    encodings of the sums `S_k = Σ_i D_{i,k}`;
//! 3. every party, the relay too, hashes the `c1_k` and the sums' encodings into a
//!    32-byte seed, expands it into 128-bit coefficients `ρ_k`, and sends every other
//!    party the seed, `D_i = w_i A` for `A = Σ ρ_k c1_k`, and a Chaum-Pedersen proof that
//!    `log_G W_i = log_A D_i` (as a batch's proof);
//! 4. a party checks each proof against its own `A` (a proof that names another seed is
//!    its sender's fault: an honest relay sends everybody the same sums), then every
//!    sum at once: `Σ_k ρ_k S_k = Σ_i D_i`.
//!
//! Two multi-scalar multiplications per chunk in all (`A`, and `Σ ρ_k S_k`). If some
//! `S_k ≠ x c1_k` (`x = Σ_i w_i`, so that `x c1_k` is what decryption needs), the
//! proofs force `Σ_i D_i = x A`, so the check holds only if `Σ_k ρ_k (S_k − x c1_k) = 0`:
//! the sums fix the seed before the coefficients exist, so that happens with
//! probability about `2^-128` per try. What is checked is the sums the party decrypts
//! with: errors of two parties that cancel in every sum change no result and pass.
//!
//! # Naming the party
//!
//! The relay holds every party's shares: when its check fails it checks each party on its
//! own, `Σ_k ρ_k D_{i,k} = D_i` over that party's shares (two multi-scalar
//! multiplications each), and names the first that fails ([`TaheError::BadShare`]). A
//! party whose shares are right passes; one whose shares are wrong passes with
//! probability about `2^-128`. Any other party holds only the sums, so its check fails
//! when the relay's sums are wrong or when a party sent the relay wrong shares, which the
//! relay's own check finds first. It therefore finishes only once the relay has said
//! that its check passed (the caller waits for that), and then names the relay. An honest
//! relay is never named; a dishonest one can get an honest party named (by naming it, or
//! by sending it other sums, so that its proof names another seed): only shares signed
//! by their sender would prevent that (docs/mpsi.md).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::traits::Identity;
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

use super::batch::{challenge, check_proof, expand, proof_scalars};
use super::tested::Tested;
use super::zero_test::Shares;
use super::zero_test::{ZeroTest, check_batch, check_count, zero_test_new};
use super::{KeyShare, PublicKey};
use crate::ahe::elgamal::random_nonzero_scalar;
use crate::rng::SessionRng;
use crate::tahe::TaheError;

/// Bytes of a proof: `seed ‖ D_i ‖ e ‖ z`.
pub(super) const PROOF_LEN: usize = 128;

/// A decryption of one set of ciphertexts through a relay, seen by one party.
pub struct Mesh {
    /// The sums: added up here at the relay, the relay's decoded elsewhere.
    test: ZeroTest,
    /// Every party's shares as received at the relay (this party's own as it made them).
    shares: Vec<Option<Vec<u8>>>,
    /// The sums' encodings, once made (at the relay) or received.
    relayed: Option<Relayed>,
    /// This party's seed, coefficients and `A`, once the sums are relayed.
    view: Option<View>,
    /// Each party's `D_i`, its proof checked.
    claims: Vec<Option<RistrettoPoint>>,
}

struct Relayed {
    encoded: Vec<u8>,
    /// The relay, when it is another party.
    from: Option<u32>,
}

struct View {
    seed: [u8; 32],
    rho: Vec<u128>,
    a: RistrettoPoint,
}

pub(super) fn mesh_new(pk: &PublicKey, count: usize) -> Mesh {
    let parties = pk.parties as usize;
    Mesh {
        test: zero_test_new(pk, count),
        shares: vec![None; parties],
        relayed: None,
        view: None,
        claims: (0..parties).map(|_| None).collect(),
    }
}

/// At the relay: adds `party`'s shares (32 bytes per ciphertext) to the sums and keeps
/// them.
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

/// This party's shares `w_i c1_k`, kept as every other party's are, to send the relay.
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

/// At the relay, once every party's shares are in: the sums' encodings, kept for the
/// seed.
pub(super) fn mesh_relay(
    _pk: &PublicKey,
    mesh: &mut Mesh,
    tested: &Tested,
) -> Result<Vec<u8>, TaheError> {
    check_count(&mesh.test, tested)?;
    if let Some(p) = mesh.test.absorbed.iter().position(|a| !a) {
        return Err(TaheError::MissingShares {
            party: p as u32 + 1,
        });
    }
    if mesh.relayed.is_some() {
        return Err(TaheError::Parameters("the sums are relayed once".into()));
    }
    let encoded = mesh.test.sums.encode();
    mesh.relayed = Some(Relayed {
        encoded: encoded.clone(),
        from: None,
    });
    Ok(encoded)
}

/// Elsewhere: the sums `relay` sent, decoded, in place of every party's shares.
pub(super) fn mesh_absorb_relay(
    pk: &PublicKey,
    mesh: &mut Mesh,
    tested: &Tested,
    relay: u32,
    relayed: &[u8],
) -> Result<(), TaheError> {
    let bad = |reason: String| TaheError::BadShare {
        party: relay,
        reason,
    };
    if relay == 0 || relay > pk.parties {
        return Err(TaheError::UnknownParty {
            party: relay,
            parties: pk.parties,
        });
    }
    if mesh.relayed.is_some() {
        return Err(TaheError::DuplicateShare { party: relay });
    }
    check_count(&mesh.test, tested)?;
    if relayed.len() != 32 * tested.len() {
        return Err(bad(format!(
            "{} bytes of relayed sums for {} ciphertexts",
            relayed.len(),
            tested.len()
        )));
    }
    let sums = mesh
        .test
        .sums
        .decode(relayed)
        .map_err(|k| bad(format!("sum {k} is not a canonical ristretto255 encoding")))?;
    mesh.test.sums = sums.into();
    mesh.test.absorbed.fill(true);
    mesh.relayed = Some(Relayed {
        encoded: relayed.to_vec(),
        from: Some(relay),
    });
    Ok(())
}

/// This party's view, made once the sums are relayed: the seed hashes the `c1_k` and the
/// sums' encodings.
fn view<'a>(pk: &PublicKey, mesh: &'a mut Mesh, tested: &Tested) -> Result<&'a View, TaheError> {
    check_count(&mesh.test, tested)?;
    if mesh.view.is_none() {
        let Some(relayed) = &mesh.relayed else {
            let party = mesh.test.absorbed.iter().position(|a| !a).unwrap_or(0) as u32 + 1;
            return Err(TaheError::MissingShares { party });
        };
        let mut h = Sha512::new();
        h.update(b"privset/tahe/elgamal/relay/v1");
        h.update(pk.digest);
        h.update((tested.len() as u64).to_be_bytes());
        h.update(&tested.c1_encoded);
        h.update(&relayed.encoded);
        let seed: [u8; 32] = h.finalize()[..32].try_into().expect("32 bytes");
        let rho = expand(&seed, tested.len());
        let a = tested.combination(&rho);
        mesh.view = Some(View { seed, rho, a });
    }
    Ok(mesh.view.as_ref().expect("made above"))
}

/// This party's proof, once the sums are relayed: `seed ‖ D_i ‖ e ‖ z`.
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
    mesh.claims[ks.index as usize - 1] = Some(d_star);
    let mut out = Vec::with_capacity(PROOF_LEN);
    out.extend_from_slice(&seed);
    out.extend_from_slice(d_star.compress().as_bytes());
    out.extend_from_slice(e.as_bytes());
    out.extend_from_slice(z.as_bytes());
    Ok(out)
}

/// Checks `party`'s proof against this party's `A`, and keeps its `D_i`.
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
    if seed != own.seed {
        return Err(bad(
            "its proof is for other sums than the relay sent here".into()
        ));
    }
    check_proof(pk, party, &own.a, &d_star, scalars)?;
    mesh.claims[party as usize - 1] = Some(d_star);
    Ok(())
}

/// For each ciphertext, whether it decrypts to zero, once every party's proof is in: the
/// sum check, and on failure each party's own check at the relay, or the relay named
/// elsewhere.
pub(super) fn mesh_finish(
    pk: &PublicKey,
    mut mesh: Mesh,
    tested: &Tested,
) -> Result<Vec<bool>, TaheError> {
    view(pk, &mut mesh, tested)?;
    let mut claimed = RistrettoPoint::identity();
    for (p, claim) in mesh.claims.iter().enumerate() {
        claimed += claim.ok_or(TaheError::MissingShares {
            party: p as u32 + 1,
        })?;
    }
    let own = mesh.view.as_ref().expect("made above");
    if mesh.test.sums.combination(&own.rho) != claimed {
        return Err(name_bad_shares(&mesh, own));
    }
    // `c2_k − S_k` is zero iff the two are one element, iff their canonical encodings
    // are equal: the relayed sums' encodings are at hand, so no `c2_k` is decoded.
    let relayed = &mesh.relayed.as_ref().expect("the view hashed them").encoded;
    Ok(relayed
        .chunks_exact(32)
        .zip(tested.c2_encoded.chunks_exact(32))
        .map(|(sum, c2)| sum == c2)
        .collect())
}

/// Who the failed sum check names: the relay, elsewhere; at the relay, the first party
/// whose shares do not match its proof.
fn name_bad_shares(mesh: &Mesh, own: &View) -> TaheError {
    if let Some(relay) = mesh.relayed.as_ref().and_then(|r| r.from) {
        return TaheError::BadShare {
            party: relay,
            reason: "the sums it relayed do not match the parties' proofs of correct decryption"
                .into(),
        };
    }
    for (p, (shares, claim)) in mesh.shares.iter().zip(&mesh.claims).enumerate() {
        let shares = shares.as_ref().expect("every party's shares are in");
        let decoded = mesh
            .test
            .sums
            .decode(shares)
            .expect("decoded when absorbed");
        if decoded.combination(&own.rho) != claim.expect("every proof is in") {
            return TaheError::BadShare {
                party: p as u32 + 1,
                reason: "its decryption shares do not match its proof of correct decryption".into(),
            };
        }
    }
    TaheError::Parameters(
        "the shares' sum check failed though every party's shares match its proof".into(),
    )
}
