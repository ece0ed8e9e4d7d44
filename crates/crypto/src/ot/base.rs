//! The base OTs: Chou-Orlandi "simplest OT" over ristretto255, batched, semi-honest.
//!
//! The OT extension runs [`KAPPA`](super::KAPPA) = 128 of them; the KKRT OPRF ([`crate::oprf`]) runs one
//! per bit of its code width, so the count is a parameter here.
//!
//! One sender scalar `a` serves all the OTs (one message `A = a·G`); each OT `j` has its
//! own receiver scalar `b_j`, so the receiver's message `B_j = b_j·G + c_j·A` is a
//! uniformly random element whatever `c_j` is. The sender can compute both
//! `a·B_j` and `a·(B_j − A)`; the receiver knows only `b_j·A`, which equals the first
//! when `c_j = 0` and the second when `c_j = 1`. Computing the other one means computing
//! `a²·G` from `a·G` (equivalent to CDH). Keys hash the shared point with the context
//! digest, the OT's index and both public messages, so keys of different OTs, sessions
//! or transcripts are unrelated even if points repeated.
//!
//! ristretto255 has prime order and no cofactor, so [`Ristretto255::decode`] (canonical,
//! non-identity) is the only validation received points need.

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConditionallySelectable};
use zeroize::{Zeroize, Zeroizing};

use super::{BASE_FIRST_LEN, OtError};
use crate::group::PrimeGroup;
use crate::group::ristretto::Ristretto255;
use crate::rng::SessionRng;

/// Bytes of a base-OT key (one GGM level's mask in the extension).
pub(crate) const SEED_LEN: usize = 16;
pub(crate) type Seed = [u8; SEED_LEN];

const BASE_TAG: &[u8] = b"privset/ot/base/chou-orlandi/v1";

/// Decodes one received point; `index` names it in the error.
fn decode_point(bytes: &[u8], index: usize) -> Result<RistrettoPoint, OtError> {
    Ristretto255::decode(bytes).map_err(|_| OtError::InvalidPoint { index })
}

/// `H(ctx, j, A, B_j, P)`: SHA-256 under [`BASE_TAG`], truncated to a 16-byte seed.
fn base_key(ctx: &[u8; 32], j: usize, a: &[u8], b: &[u8], shared: &RistrettoPoint) -> Seed {
    let mut shared = shared.compress();
    let mut digest: [u8; 32] = Sha256::new()
        .chain_update(BASE_TAG)
        .chain_update(ctx)
        .chain_update((j as u64).to_be_bytes())
        .chain_update(a)
        .chain_update(b)
        .chain_update(shared.as_bytes())
        .finalize()
        .into();
    let mut seed = [0u8; SEED_LEN];
    seed.copy_from_slice(&digest[..SEED_LEN]);
    digest.zeroize();
    shared.zeroize();
    seed
}

/// Base-OT sender state: the secret `a` and the public `A = a·G`.
pub(crate) struct BaseSender {
    a: Zeroizing<Scalar>,
    a_point: RistrettoPoint,
    a_bytes: [u8; BASE_FIRST_LEN],
}

impl BaseSender {
    /// Draws `a` and returns the state and `A`.
    pub(crate) fn new(rng: &mut SessionRng) -> (Self, [u8; BASE_FIRST_LEN]) {
        let a = Zeroizing::new(Ristretto255::random_scalar(rng));
        let a_point = RistrettoPoint::mul_base(&a);
        let a_bytes = a_point.compress().to_bytes();
        (
            Self {
                a,
                a_point,
                a_bytes,
            },
            a_bytes,
        )
    }

    /// Both keys `(k_j^0, k_j^1)` of every base OT, from the receiver's `B_0..B_{count-1}`
    /// (`count · 32` bytes).
    pub(crate) fn keys(
        &self,
        ctx: &[u8; 32],
        reply: &[u8],
        count: usize,
    ) -> Result<Zeroizing<Vec<[Seed; 2]>>, OtError> {
        let expected = reply_len(count);
        if reply.len() != expected {
            return Err(OtError::WrongLength {
                what: "base-OT reply",
                expected,
                got: reply.len(),
            });
        }
        // Decode sequentially so the reported index is the first bad one.
        let points = reply
            .chunks_exact(BASE_FIRST_LEN)
            .enumerate()
            .map(|(j, bytes)| decode_point(bytes, j))
            .collect::<Result<Vec<_>, _>>()?;
        let a = &*self.a;
        // a·A, subtracted from a·B_j to get a·(B_j − A) with one multiplication per OT.
        let aa = Zeroizing::new(self.a_point * a);
        let keys = points
            .par_iter()
            .zip(reply.par_chunks_exact(BASE_FIRST_LEN))
            .enumerate()
            .map(|(j, (b, b_bytes))| {
                let mut p0 = b * a;
                let mut p1 = p0 - *aa;
                let k = [
                    base_key(ctx, j, &self.a_bytes, b_bytes, &p0),
                    base_key(ctx, j, &self.a_bytes, b_bytes, &p1),
                ];
                p0.zeroize();
                p1.zeroize();
                k
            })
            .collect();
        Ok(Zeroizing::new(keys))
    }
}

/// Bytes of the base-OT reply for `count` OTs: one point each.
pub(crate) const fn reply_len(count: usize) -> usize {
    count * BASE_FIRST_LEN
}

/// Checks the base-OT sender's first message and decodes `A`.
pub(crate) fn decode_first(first: &[u8]) -> Result<RistrettoPoint, OtError> {
    if first.len() != BASE_FIRST_LEN {
        return Err(OtError::WrongLength {
            what: "base-OT first message",
            expected: BASE_FIRST_LEN,
            got: first.len(),
        });
    }
    decode_point(first, 0)
}

/// Base-OT receiver: given `A` (decoded by [`decode_first`] from `first`) and packed
/// choice bits `choices` (OT `j` in byte `j / 8`, bit `j mod 8`: a little-endian bit
/// string), runs `8 · choices.len()` OTs and returns the key `k_j^{c_j}` of every one
/// and the reply `B_0, B_1, ..` ([`reply_len`] bytes).
pub(crate) fn receive(
    rng: &mut SessionRng,
    ctx: &[u8; 32],
    first: &[u8],
    a_point: &RistrettoPoint,
    choices: &[u8],
) -> (Zeroizing<Vec<Seed>>, Vec<u8>) {
    let count = 8 * choices.len();
    // Drawn sequentially from the session stream so a replay reproduces them exactly.
    let b: Zeroizing<Vec<Scalar>> = Zeroizing::new(
        (0..count)
            .map(|_| Ristretto255::random_scalar(rng))
            .collect(),
    );
    let identity = RistrettoPoint::identity();
    let mut reply = vec![0u8; reply_len(count)];
    let seeds = b
        .par_iter()
        .zip(reply.par_chunks_exact_mut(BASE_FIRST_LEN))
        .enumerate()
        .map(|(j, (b_j, out))| {
            // c_j·A selected without a branch on the secret bit.
            let c = Choice::from((choices[j / 8] >> (j % 8)) & 1);
            let offset = RistrettoPoint::conditional_select(&identity, a_point, c);
            out.copy_from_slice(
                (RistrettoPoint::mul_base(b_j) + offset)
                    .compress()
                    .as_bytes(),
            );
            let mut shared = a_point * b_j;
            let seed = base_key(ctx, j, first, out, &shared);
            shared.zeroize();
            seed
        })
        .collect();
    (Zeroizing::new(seeds), reply)
}
