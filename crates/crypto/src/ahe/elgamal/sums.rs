//! Running sums of received ciphertexts, one per item: the receiver's side of an
//! encrypted Bloom filter, which adds for each of its items the entries at the item's
//! positions as the filter streams in (Ion et al. 2020, Fig. 4, P2). On a CPU with
//! AVX-512 IFMA the touched entries are decoded and added eight at a time
//! (`crate::curve25519x8::sums`) and each sum is decoded by curve25519-dalek once at
//! the end; elsewhere dalek decodes every touched entry.

use curve25519_dalek::ristretto::CompressedRistretto;
use rayon::prelude::*;

use super::lanes::lanes_or;
use super::{CIPHERTEXT_LEN, Ciphertext, decode};
use crate::ahe::{HeError, touched_entries};
#[cfg(target_arch = "x86_64")]
use crate::curve25519x8::sums::{self as lane_sums, IDENTITY, StoredPoint};

/// Touched entries decoded per parallel task.
const DECODE_TASK: usize = 1024;

/// One sum per item (see the module docs).
pub struct CiphertextSums {
    inner: Inner,
}

enum Inner {
    Serial(Vec<Ciphertext>),
    #[cfg(target_arch = "x86_64")]
    Lanes {
        c1: Vec<StoredPoint>,
        c2: Vec<StoredPoint>,
    },
}

impl CiphertextSums {
    /// `items` sums, each the encryption of 0 with no randomness (the identity pair).
    pub fn new(items: usize) -> CiphertextSums {
        let inner = lanes_or(
            |_| {
                #[cfg(target_arch = "x86_64")]
                {
                    Inner::Lanes {
                        c1: vec![IDENTITY; items],
                        c2: vec![IDENTITY; items],
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                unreachable!("no lanes off x86-64")
            },
            || Inner::Serial(vec![Ciphertext::zero(); items]),
        );
        CiphertextSums { inner }
    }

    /// Adds, for every hit `(item, index)`, the `index`-th ciphertext of `encoded`
    /// (back-to-back 64-byte encodings) to `item`'s sum. Only the touched entries are
    /// decoded, each once; the error names the first invalid one by its index in
    /// `encoded`.
    pub fn add(&mut self, encoded: &[u8], hits: &[(u32, u32)]) -> Result<(), HeError> {
        if !encoded.len().is_multiple_of(CIPHERTEXT_LEN) {
            return Err(HeError::BadLength {
                len: encoded.len(),
                ct_len: CIPHERTEXT_LEN,
            });
        }
        let count = encoded.len() / CIPHERTEXT_LEN;
        let (touched, slots) = touched_entries(hits);
        if let Some(&last) = touched.last() {
            assert!((last as usize) < count, "a hit past the chunk");
        }
        let entry = |i: u32| &encoded[i as usize * CIPHERTEXT_LEN..][..CIPHERTEXT_LEN];
        match &mut self.inner {
            Inner::Serial(sums) => {
                let decoded: Vec<Ciphertext> = touched
                    .par_iter()
                    .map(|&i| decode(entry(i), i as usize))
                    .collect::<Result<_, _>>()?;
                for &(item, slot) in &slots {
                    let s = &mut sums[item as usize];
                    *s = *s + decoded[slot as usize];
                }
            }
            #[cfg(target_arch = "x86_64")]
            Inner::Lanes { c1, c2 } => {
                let decoded: Vec<(Vec<StoredPoint>, Vec<StoredPoint>)> = touched
                    .par_chunks(DECODE_TASK)
                    .map(|task| decode_task(task, &entry))
                    .collect::<Result<_, _>>()?;
                let (d1, d2): (Vec<StoredPoint>, Vec<StoredPoint>) = decoded
                    .into_iter()
                    .flat_map(|(a, b)| a.into_iter().zip(b))
                    .unzip();
                rayon::join(
                    || lane_sums::add_hits(c1, &d1, &slots),
                    || lane_sums::add_hits(c2, &d2, &slots),
                );
            }
        }
        Ok(())
    }

    /// The sums as lanes hold them (`c1`s, `c2`s), or as ciphertexts off the lanes.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn into_lanes(
        self,
    ) -> Result<(Vec<StoredPoint>, Vec<StoredPoint>), Vec<Ciphertext>> {
        match self.inner {
            Inner::Serial(sums) => Err(sums),
            Inner::Lanes { c1, c2 } => Ok((c1, c2)),
        }
    }

    /// The sums as ciphertexts.
    pub fn into_ciphertexts(self) -> Vec<Ciphertext> {
        match self.inner {
            Inner::Serial(sums) => sums,
            #[cfg(target_arch = "x86_64")]
            Inner::Lanes { c1, c2 } => {
                let (e1, e2) =
                    rayon::join(|| lane_sums::encode_all(&c1), || lane_sums::encode_all(&c2));
                e1.par_chunks_exact(32)
                    .zip(e2.par_chunks_exact(32))
                    .map(|(a, b)| Ciphertext {
                        c1: point(a),
                        c2: point(b),
                    })
                    .collect()
            }
        }
    }
}

/// A point that the lanes encoded (a sum of valid points): it decodes.
#[cfg(target_arch = "x86_64")]
fn point(bytes: &[u8]) -> curve25519_dalek::ristretto::RistrettoPoint {
    CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
        .expect("an encoding computed in lanes decodes")
}

/// The two points of each touched entry of one task, with [`decode`]'s errors and
/// checks (canonical encodings, `c1` not the identity).
#[cfg(target_arch = "x86_64")]
fn decode_task<'a>(
    task: &[u32],
    entry: &(impl Fn(u32) -> &'a [u8] + Sync),
) -> Result<(Vec<StoredPoint>, Vec<StoredPoint>), HeError> {
    let bytes: Vec<&[u8]> = task.iter().map(|&i| entry(i)).collect();
    let half = |range: core::ops::Range<usize>| -> Vec<&[u8; 32]> {
        bytes
            .iter()
            .map(|b| b[range.clone()].try_into().expect("32 bytes"))
            .collect()
    };
    let (first, second) = (half(0..32), half(32..64));
    let identity = first.iter().position(|b| b.iter().all(|&x| x == 0));
    let c1 = lane_sums::decode_all(&first);
    let c2 = lane_sums::decode_all(&second);
    let bad = [
        identity,
        c1.as_ref().err().copied(),
        c2.as_ref().err().copied(),
    ]
    .into_iter()
    .flatten()
    .min();
    match bad {
        // The first bad entry's error is exactly what `decode` says about it.
        Some(at) => Err(decode(bytes[at], task[at] as usize)
            .err()
            .unwrap_or_else(|| HeError::InvalidCiphertext {
                index: task[at] as usize,
                reason: "not a canonical ristretto255 encoding".into(),
            })),
        None => Ok((c1.expect("checked"), c2.expect("checked"))),
    }
}
