//! Exponential ElGamal in bulk: many encryptions, re-randomisations and decodings at
//! once, on every core, with batched point compression. Shared by the threshold scheme
//! ([`crate::tahe::elgamal`]) and the protocols that encrypt one bit per Bloom-filter
//! position (Ion et al. 2020, Fig. 4; Bay et al.'s filters in de Jong's thesis).
//!
//! Compressing a ristretto255 point costs an inversion; dalek's
//! `double_and_compress_batch` compresses `2P` for many points with one inversion. Where
//! this module chooses the randomness it computes half of what it sends (randomness
//! `ρ/2`, messages times `1/2`) and compresses the doubles, which are exactly the values to
//! send, at about a quarter of the cost.
//!
//! On a CPU with AVX-512 IFMA the fixed-base products of encryptions run eight at a
//! time in privset's lanes instead (`crate::curve25519x8`, about 12 times faster per
//! product and encoding), which compute the sums sent directly; both paths give the
//! same bytes from the same random stream ([`super::lanes`]).
//!
//! Every function takes the fixed-base tables of the public key `h`
//! ([`BaseTable`]), so one code path serves a single party's key and a threshold
//! group's joint key alike.

use curve25519_dalek::constants::{RISTRETTO_BASEPOINT_POINT, RISTRETTO_BASEPOINT_TABLE};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::lanes::{ROWS, interleave, lanes_or, rows_for, wipe};
use super::{
    BaseTable, CIPHERTEXT_LEN, Ciphertext, CiphertextSums, SecretKey, decode,
    random_nonzero_scalar, random_scalar,
};
use crate::ahe::HeError;
use crate::rng::SessionRng;

/// Ciphertexts per parallel task (each task forks its own random stream, so a party
/// replays byte for byte whatever the number of threads).
const TASK: usize = 1024;

/// `1/2 mod ℓ`.
pub(crate) fn half() -> Scalar {
    Scalar::from(2u64).invert()
}

/// Compresses `2 p` for every `p`, appending the encodings to `out`.
pub(crate) fn double_and_compress(points: &[RistrettoPoint], out: &mut Vec<u8>) {
    for c in RistrettoPoint::double_and_compress_batch(points) {
        out.extend_from_slice(c.as_bytes());
    }
}

/// The encodings of `s P` for every point `P`, in curve25519-dalek: `(s/2) P` doubled
/// and compressed (a batch compression of doubles costs a quarter of compressing the
/// points). Constant time in `s`. (The lanes' path takes points they decoded already:
/// `crate::curve25519x8::varbase::mul_points`.)
pub(crate) fn mul_shared(points: &[RistrettoPoint], s: &Scalar) -> Vec<u8> {
    let mut s_half = s * half();
    let out = points
        .par_chunks(TASK)
        .map(|chunk| {
            let halves: Vec<RistrettoPoint> = chunk.iter().map(|p| p * s_half).collect();
            let mut out = Vec::with_capacity(32 * chunk.len());
            double_and_compress(&halves, &mut out);
            out
        })
        .collect::<Vec<_>>()
        .concat();
    s_half.zeroize();
    out
}

/// Runs `f` on chunks of `TASK` items in parallel, each with its own forked stream, and
/// concatenates the outputs in order.
fn par_chunks<T: Sync>(
    items: &[T],
    rng: &mut SessionRng,
    f: impl Fn(&[T], &mut SessionRng) -> Vec<u8> + Sync + Send,
) -> Vec<u8> {
    let chunks: Vec<&[T]> = items.chunks(TASK).collect();
    let mut rngs = rng.fork_many(chunks.len());
    let parts: Vec<Vec<u8>> = chunks
        .par_iter()
        .zip(rngs.par_iter_mut())
        .map(|(chunk, r)| f(chunk, r))
        .collect();
    parts.concat()
}

/// Fresh encryptions of `ms` under the key whose tables are `h_table`, encoded:
/// `(2ρ' G, 2ρ' h + m G)` with `2ρ'` uniform and non-zero. Dalek's path computes the
/// halves `(ρ' G, ρ' h + (m/2) G)` and compresses their doubles; messages 0 and 1
/// (filter bits) cost it no extra multiplication. The lanes compute the sums directly,
/// with one table row for `m G` when every message of the task is below 8. Both give
/// the same bytes from the same stream.
pub fn encrypt_encoded(h_table: &BaseTable, ms: &[Scalar], rng: &mut SessionRng) -> Vec<u8> {
    let half = half();
    let half_g = RISTRETTO_BASEPOINT_POINT * half;
    par_chunks(ms, rng, |chunk, r| {
        let mut rhos: Vec<Scalar> = chunk.iter().map(|_| random_nonzero_scalar(r)).collect();
        let g = BaseTable::basepoint();
        let out = lanes_or(
            |lanes| {
                let two_rhos: Vec<Scalar> = rhos.iter().map(|rho| rho + rho).collect();
                let c1 = lanes.products(&[(g, &two_rhos, ROWS)]);
                let c2 = lanes.products(&[(h_table, &two_rhos, ROWS), (g, chunk, rows_for(chunk))]);
                wipe(two_rhos);
                interleave(&c1, &c2)
            },
            || {
                let mut points = Vec::with_capacity(2 * chunk.len());
                for (m, rho) in chunk.iter().zip(&rhos) {
                    let c1 = rho * RISTRETTO_BASEPOINT_TABLE;
                    let mut c2 = rho * h_table.serial();
                    if *m == Scalar::ONE {
                        c2 += half_g;
                    } else if *m != Scalar::ZERO {
                        c2 += &(m * half) * RISTRETTO_BASEPOINT_TABLE;
                    }
                    points.push(c1);
                    points.push(c2);
                }
                let mut out = Vec::with_capacity(CIPHERTEXT_LEN * chunk.len());
                double_and_compress(&points, &mut out);
                out
            },
        );
        rhos.zeroize();
        out
    })
}

/// [`encrypt_encoded`] of small integers (Bloom-filter bits, counts).
pub fn encrypt_bits_encoded(h_table: &BaseTable, ms: &[u64], rng: &mut SessionRng) -> Vec<u8> {
    let scalars: Vec<Scalar> = ms.iter().map(|&m| Scalar::from(m)).collect();
    encrypt_encoded(h_table, &scalars, rng)
}

/// `ReRand(k c)` for a fresh random unit `k` per ciphertext, encoded: with `k = 2k'`
/// and randomness `2ρ'`, the doubles of `k' c + (ρ' G, ρ' h)`. The plaintext `m` becomes
/// `k m`: zero stays zero, anything else becomes uniform among the non-zero scalars, and
/// the fresh `ρ` makes the ciphertext independent of `c` given that plaintext.
///
/// The lanes take the doubles' encodings `2c` (cheap: dalek compresses doubles four
/// times faster than points) and compute `k (2c) + (2ρ') (G, h)` eight at a time, the
/// same bytes as dalek's path.
pub fn randomize_encoded(h_table: &BaseTable, cts: &[Ciphertext], rng: &mut SessionRng) -> Vec<u8> {
    par_chunks(cts, rng, |chunk, r| {
        let mut ks = Vec::with_capacity(chunk.len());
        let mut rhos = Vec::with_capacity(chunk.len());
        for _ in chunk {
            ks.push(random_nonzero_scalar(r));
            rhos.push(random_scalar(r));
        }
        let out = lanes_or(
            |lanes| {
                #[cfg(target_arch = "x86_64")]
                {
                    use super::lanes::Scalars;
                    let doubles = |half: fn(&Ciphertext) -> RistrettoPoint| {
                        let points: Vec<RistrettoPoint> = chunk.iter().map(half).collect();
                        let mut out = Vec::with_capacity(32 * chunk.len());
                        double_and_compress(&points, &mut out);
                        out
                    };
                    let two_rhos: Vec<Scalar> = rhos.iter().map(|rho| rho + rho).collect();
                    let g = BaseTable::basepoint();
                    let fixed = |table| [(table, two_rhos.as_slice(), ROWS)];
                    let each = Scalars::Each(&ks);
                    let c1 = lanes.variable_products(&doubles(|c| c.c1), each, &fixed(g));
                    let c2 = lanes.variable_products(&doubles(|c| c.c2), each, &fixed(h_table));
                    wipe(two_rhos);
                    interleave(
                        &c1.expect("dalek's encodings decode"),
                        &c2.expect("dalek's encodings decode"),
                    )
                }
                #[cfg(not(target_arch = "x86_64"))]
                unreachable!("no lanes off x86-64: {:p}", lanes)
            },
            || {
                let mut points = Vec::with_capacity(2 * chunk.len());
                for ((c, k), rho) in chunk.iter().zip(&ks).zip(&rhos) {
                    points.push(c.c1 * k + rho * RISTRETTO_BASEPOINT_TABLE);
                    points.push(c.c2 * k + rho * h_table.serial());
                }
                let mut out = Vec::with_capacity(CIPHERTEXT_LEN * chunk.len());
                double_and_compress(&points, &mut out);
                out
            },
        );
        wipe(ks);
        wipe(rhos);
        out
    })
}

/// [`randomize_encoded`] of `s + shift` for every sum `s` of `sums`, the same bytes from
/// the same stream: what Miyaji-Nishida's dealer answers. Sums kept in lanes stay there:
/// `(2k)(s + shift) + (2ρ')(G, h)` eight at a time, without encoding the sums and
/// decoding them again (curve25519-dalek's serial decoding was a sixth of the dealer's
/// time, docs/benchmarks.md).
pub fn randomize_sums(
    h_table: &BaseTable,
    sums: CiphertextSums,
    shift: &Ciphertext,
    rng: &mut SessionRng,
) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    let sums = match sums.into_lanes() {
        Ok((c1, c2)) => return randomize_lane_sums(h_table, &c1, &c2, shift, rng),
        Err(cts) => cts,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let sums = sums.into_ciphertexts();
    let shifted: Vec<Ciphertext> = sums.par_iter().map(|s| *s + *shift).collect();
    randomize_encoded(h_table, &shifted, rng)
}

#[cfg(target_arch = "x86_64")]
fn randomize_lane_sums(
    h_table: &BaseTable,
    c1: &[crate::curve25519x8::sums::StoredPoint],
    c2: &[crate::curve25519x8::sums::StoredPoint],
    shift: &Ciphertext,
    rng: &mut SessionRng,
) -> Vec<u8> {
    use super::lanes::Scalars;
    let stored = |p: &RistrettoPoint| {
        let bytes = p.compress().to_bytes();
        crate::curve25519x8::sums::decode_all(&[&bytes]).expect("a point's encoding decodes")[0]
    };
    let (shift1, shift2) = (stored(&shift.c1), stored(&shift.c2));
    let pairs: Vec<usize> = (0..c1.len()).collect();
    par_chunks(&pairs, rng, |chunk, r| {
        // Drawn as `randomize_encoded` draws them: `k`, then `ρ'`, per ciphertext.
        let mut two_ks = Vec::with_capacity(chunk.len());
        let mut two_rhos = Vec::with_capacity(chunk.len());
        for _ in chunk {
            let k = random_nonzero_scalar(r);
            let rho = random_scalar(r);
            two_ks.push(k + k);
            two_rhos.push(rho + rho);
        }
        let range = chunk[0]..chunk[chunk.len() - 1] + 1;
        let out = lanes_or(
            |lanes| {
                let each = Scalars::Each(&two_ks);
                let fixed = |table| [(table, two_rhos.as_slice(), ROWS)];
                let a = lanes.point_products(
                    &c1[range.clone()],
                    &shift1,
                    each,
                    &fixed(BaseTable::basepoint()),
                );
                let b = lanes.point_products(&c2[range.clone()], &shift2, each, &fixed(h_table));
                interleave(&a, &b)
            },
            || unreachable!("sums in lanes on a CPU that runs them"),
        );
        wipe(two_ks);
        wipe(two_rhos);
        out
    })
}

/// [`randomize_encoded`] of `c − (0, m G)` for every `c`: the ciphertexts of Ion et al.
/// 2020, Fig. 4, step 4b, `ARefresh(r · (c − AEnc(m)))`, which encrypt zero exactly when
/// `c` encrypts `m` and a uniform non-zero scalar otherwise.
pub fn randomize_difference_encoded(
    h_table: &BaseTable,
    cts: &[Ciphertext],
    m: u64,
    rng: &mut SessionRng,
) -> Vec<u8> {
    let shift = &Scalar::from(m) * RISTRETTO_BASEPOINT_TABLE;
    let shifted: Vec<Ciphertext> = cts
        .par_iter()
        .map(|c| Ciphertext {
            c1: c.c1,
            c2: c.c2 - shift,
        })
        .collect();
    randomize_encoded(h_table, &shifted, rng)
}

/// The key owner's fresh encryptions of `ms`, encoded: knowing `x`, it computes
/// `(2ρ' G, (2ρ' x + m) G)` with two fixed-base multiplications instead of three (the
/// same distribution as [`encrypt_encoded`]: `2ρ'` uniform and non-zero).
pub fn encrypt_owner_encoded(sk: &SecretKey, ms: &[Scalar], rng: &mut SessionRng) -> Vec<u8> {
    let half = half();
    par_chunks(ms, rng, |chunk, r| {
        let mut rhos: Vec<Scalar> = chunk.iter().map(|_| random_nonzero_scalar(r)).collect();
        let g = BaseTable::basepoint();
        let out = lanes_or(
            |lanes| {
                let two_rhos: Vec<Scalar> = rhos.iter().map(|rho| rho + rho).collect();
                let exponents: Vec<Scalar> = two_rhos
                    .iter()
                    .zip(chunk)
                    .map(|(r, m)| r * sk.x + m)
                    .collect();
                let c1 = lanes.products(&[(g, &two_rhos, ROWS)]);
                let c2 = lanes.products(&[(g, &exponents, ROWS)]);
                wipe(two_rhos);
                wipe(exponents);
                interleave(&c1, &c2)
            },
            || {
                let mut points = Vec::with_capacity(2 * chunk.len());
                for (m, rho) in chunk.iter().zip(&rhos) {
                    // Halves, so that the batch doubling compresses exactly
                    // (2ρ'G, (2ρ'x + m)G).
                    let mut c2 = rho * sk.x + m * half;
                    points.push(rho * RISTRETTO_BASEPOINT_TABLE);
                    points.push(&c2 * RISTRETTO_BASEPOINT_TABLE);
                    c2.zeroize();
                }
                let mut out = Vec::with_capacity(CIPHERTEXT_LEN * chunk.len());
                double_and_compress(&points, &mut out);
                out
            },
        );
        rhos.zeroize();
        out
    })
}

/// `c + Enc(m)` with fresh randomness for every pair, encoded: the re-masking of Ion et
/// al. 2020, Fig. 3, step 5 (`ARefresh(ct + AEnc(r))`) by the party without the key. The
/// output is a fresh encryption of the sum, independent of `c`'s randomness. (Halving
/// `c` to use the batched doubling would cost a multiplication per point, more than the
/// two compressions it saves.)
pub fn add_encoded(
    h_table: &BaseTable,
    cts: &[Ciphertext],
    ms: &[Scalar],
    rng: &mut SessionRng,
) -> Vec<u8> {
    assert_eq!(cts.len(), ms.len(), "one plaintext per ciphertext");
    let pairs: Vec<(&Ciphertext, &Scalar)> = cts.iter().zip(ms).collect();
    par_chunks(&pairs, rng, |chunk, r| {
        let mut out = vec![0u8; CIPHERTEXT_LEN * chunk.len()];
        for ((c, m), dst) in chunk.iter().zip(out.chunks_exact_mut(CIPHERTEXT_LEN)) {
            let mut rho = random_scalar(r);
            let sum = Ciphertext {
                c1: c.c1 + &rho * RISTRETTO_BASEPOINT_TABLE,
                c2: c.c2 + &rho * h_table.serial() + *m * RISTRETTO_BASEPOINT_TABLE,
            };
            rho.zeroize();
            super::encode(&sum, dst);
        }
        out
    })
}

/// The encoding of `2M` for the message point `M = mG` of every ciphertext: one
/// multiplication per ciphertext and batched compression. Parties compare these with
/// [`doubled_base_points`] of the expected plaintexts, never taking a discrete logarithm.
pub fn decrypt_doubled_points(sk: &SecretKey, cts: &[Ciphertext]) -> Vec<[u8; 32]> {
    cts.par_chunks(TASK)
        .flat_map_iter(|chunk| {
            let points: Vec<RistrettoPoint> = chunk.iter().map(|c| sk.message_point(c)).collect();
            RistrettoPoint::double_and_compress_batch(&points)
                .into_iter()
                .map(|c| c.to_bytes())
        })
        .collect()
}

/// The encoding of `2mG` for every `m` (see [`decrypt_doubled_points`]).
pub fn doubled_base_points(ms: &[Scalar]) -> Vec<[u8; 32]> {
    let g = BaseTable::basepoint();
    ms.par_chunks(TASK)
        .flat_map_iter(|chunk| {
            let encoded = lanes_or(
                |lanes| {
                    let doubles: Vec<Scalar> = chunk.iter().map(|m| m + m).collect();
                    lanes.products(&[(g, &doubles, ROWS)])
                },
                || {
                    let points: Vec<RistrettoPoint> = chunk
                        .iter()
                        .map(|m| m * RISTRETTO_BASEPOINT_TABLE)
                        .collect();
                    let mut out = Vec::with_capacity(32 * chunk.len());
                    double_and_compress(&points, &mut out);
                    out
                },
            );
            encoded
                .chunks_exact(32)
                .map(|c| c.try_into().expect("32 bytes"))
                .collect::<Vec<[u8; 32]>>()
        })
        .collect()
}

/// Decodes back-to-back ciphertexts in parallel (canonical encodings only; `c1` not the
/// identity); the error names the first bad ciphertext's index.
pub fn decode_many(bytes: &[u8]) -> Result<Vec<Ciphertext>, HeError> {
    if !bytes.len().is_multiple_of(CIPHERTEXT_LEN) {
        return Err(HeError::BadLength {
            len: bytes.len(),
            ct_len: CIPHERTEXT_LEN,
        });
    }
    crate::in_order::collect_in_order(
        bytes
            .par_chunks_exact(CIPHERTEXT_LEN)
            .enumerate()
            .map(|(i, c)| decode(c, i)),
    )
}
