//! The last round of the star protocols (Bay et al., Hazay-Venkitasubramaniam): the
//! server randomizes its sums, the clients return decryption shares, and the server
//! keeps the items whose sum decrypts to zero.

use super::scheme::Scheme;
use super::setup::{Expected, blame};
use super::{HUB, KIND_COMBINED, KIND_SHARES};
use crate::engine::Session;
use crate::error::ProtocolError;
use crate::wire::PartyId;

/// Adds `c` into `acc` (an empty accumulator takes `c`).
pub(super) fn accumulate<S: Scheme>(
    acc: &mut Option<S::Ciphertext>,
    c: &S::Ciphertext,
    pk: &S::PublicKey,
) {
    *acc = Some(match acc {
        Some(a) => S::add(pk, a, c),
        None => c.clone(),
    });
}

/// The server's side: the ciphertexts sent for decryption and the shares so far.
pub(super) struct ServerDecryption<S: Scheme> {
    pk: S::PublicKey,
    combined: S::Tested,
    zero: S::ZeroTest,
}

impl<S: Scheme> ServerDecryption<S> {
    /// Sends every client `ReRand(k_j s_j)` for every sum `s_j` (`k_j` a fresh random
    /// unit: zero stays zero, anything else becomes uniform) and expects their shares.
    pub fn start(
        pk: &S::PublicKey,
        sums: &[S::Ciphertext],
        clients: impl Iterator<Item = PartyId>,
        expected: &mut Expected,
        session: &mut Session<'_>,
    ) -> Self {
        let encoded = S::randomize_encoded(pk, sums, session.rng);
        let combined = S::tested_from_encoded(pk, &encoded).expect("own encoding");
        for c in clients {
            session.send(c, KIND_COMBINED, &encoded);
            expected.push(c, KIND_SHARES, S::share_batch_len(pk, sums.len()));
        }
        Self {
            pk: pk.clone(),
            zero: S::zero_test_new(pk, sums.len()),
            combined,
        }
    }

    /// One client's batch of shares, verified.
    pub fn absorb(
        &mut self,
        from: PartyId,
        name: String,
        batch: &[u8],
    ) -> Result<(), ProtocolError> {
        S::zero_test_absorb(
            &self.pk,
            &mut self.zero,
            &self.combined,
            u32::from(from),
            batch,
        )
        .map_err(blame(name, "decryption shares"))
    }

    /// The items (in the order of the sums) whose sum decrypts to zero.
    pub fn finish(self, items: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        let flags = S::zero_test_finish(&self.pk, self.zero, &self.combined)
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        Ok(items
            .iter()
            .zip(flags)
            .filter(|(_, zero)| *zero)
            .map(|(x, _)| x.clone())
            .collect())
    }
}

/// Absorbs one client's shares into `slot`'s decryption; once no message is expected any
/// more (the last client's shares are in), the items that decrypted to zero.
pub(super) fn on_shares<S: Scheme>(
    slot: &mut Option<ServerDecryption<S>>,
    expected: &Expected,
    from: PartyId,
    name: String,
    batch: &[u8],
    items: &[Vec<u8>],
) -> Result<Option<Vec<Vec<u8>>>, ProtocolError> {
    let decryption = slot.as_mut().ok_or(ProtocolError::ApiMisuse(
        "shares before the decryption round",
    ))?;
    decryption.absorb(from, name, batch)?;
    if !expected.is_empty() {
        return Ok(None);
    }
    let decryption = slot.take().expect("present above");
    decryption.finish(items).map(Some)
}

/// The client's side: its batch of shares of the server's ciphertexts.
pub(super) fn send_shares<S: Scheme>(
    key: &S::KeyShare,
    body: &[u8],
    server: String,
    session: &mut Session<'_>,
) -> Result<(), ProtocolError> {
    let cts = S::tested_from_encoded(S::share_public_key(key), body)
        .map_err(blame(server, "combined ciphertexts"))?;
    let batch = S::share_batch(key, &cts, session.rng);
    session.send(HUB, KIND_SHARES, &batch);
    Ok(())
}
