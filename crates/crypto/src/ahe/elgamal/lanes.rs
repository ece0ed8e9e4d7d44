//! The bulk operations' choice between curve25519-dalek, one product at a time, and
//! privset's eight-lane fixed-base products (`crate::curve25519x8`, on a CPU with
//! AVX-512 IFMA unless [`crate::cpu::force_portable`]). Both paths of every operation in
//! [`super::bulk`] draw the same randomness and produce the same bytes
//! (`crates/crypto/tests/portable_elgamal.rs`).

use curve25519_dalek::scalar::Scalar;
use zeroize::Zeroize;

use super::BaseTable;

/// Radix-16 rows of a full scalar.
pub(crate) const ROWS: usize = 64;

/// Proof that this CPU runs the lanes: only [`lanes_or`] makes one.
pub(crate) struct Lanes(Witness);

#[cfg(target_arch = "x86_64")]
struct Witness;
#[cfg(not(target_arch = "x86_64"))]
enum Witness {}

/// `lanes(..)` when this CPU runs the eight-lane products, `serial()` otherwise.
pub(crate) fn lanes_or<T>(lanes: impl FnOnce(&Lanes) -> T, serial: impl FnOnce() -> T) -> T {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::ristretto_ifma() {
        return lanes(&Lanes(Witness));
    }
    let _ = lanes;
    serial()
}

/// A term of a sum of fixed-base products: the table, one scalar per output, and the
/// number of radix-16 rows its scalars need ([`ROWS`], or [`rows_for`] of small ones).
pub(crate) type Term<'a> = (&'a BaseTable, &'a [Scalar], usize);

#[cfg(target_arch = "x86_64")]
pub(crate) use crate::curve25519x8::varbase::Scalars;

impl Lanes {
    /// The encodings (32 bytes each) of `sum_t s_t B_t` for every output.
    pub(crate) fn products(&self, terms: &[Term<'_>]) -> Vec<u8> {
        #[cfg(target_arch = "x86_64")]
        {
            crate::curve25519x8::mul_and_encode(&lane_tables(terms))
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self.0 {}
    }

    /// The encodings of `s_k P_k + sum_t s_tk B_t` for the points of `encodings` (32
    /// bytes each), or the index of the first that does not decode
    /// ([`crate::curve25519x8::varbase`]).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn variable_products(
        &self,
        encodings: &[u8],
        scalars: Scalars<'_>,
        fixed: &[Term<'_>],
    ) -> Result<Vec<u8>, usize> {
        crate::curve25519x8::varbase::mul_encoded(encodings, scalars, &lane_tables(fixed))
    }
}

impl Lanes {
    /// The encodings of `s_k (P_k + Q) + sum_t s_tk B_t` for points the lanes hold
    /// (`crate::curve25519x8::varbase::mul_points`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn point_products(
        &self,
        points: &[crate::curve25519x8::sums::StoredPoint],
        shift: &crate::curve25519x8::sums::StoredPoint,
        scalars: Scalars<'_>,
        fixed: &[Term<'_>],
    ) -> Vec<u8> {
        let tables = lane_tables(fixed);
        crate::curve25519x8::varbase::mul_points(points, Some(shift), scalars, &tables, false).0
    }
}

/// The terms on the tables' lane forms.
#[cfg(target_arch = "x86_64")]
fn lane_tables<'a>(terms: &[Term<'a>]) -> Vec<crate::curve25519x8::FixedTerm<'a>> {
    terms
        .iter()
        .map(|(table, scalars, rows)| {
            let base = table.fixed_base().expect("a CPU with IFMA has lane tables");
            (base, *scalars, *rows)
        })
        .collect()
}

/// The rows that the scalars need: one when every scalar is below 8 (a radix-16 digit
/// in `[-8, 8)` with no carry), else one per nibble up to the longest scalar's, plus
/// one for the carry. The time of a task therefore depends on its largest message
/// (one row or more for filter bits and counts below 8, which is all it reveals).
pub(crate) fn rows_for(scalars: &[Scalar]) -> usize {
    let bits = scalars
        .iter()
        .map(|s| {
            let bytes = s.as_bytes();
            bytes
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |i| 8 * i + 8 - bytes[i].leading_zeros() as usize)
        })
        .max()
        .unwrap_or(0);
    if bits <= 3 {
        1
    } else {
        (bits.div_ceil(4) + 1).min(ROWS)
    }
}

/// `c1_0 ‖ c2_0 ‖ c1_1 ‖ c2_1 ‖ ...` from the two halves' encodings.
pub(crate) fn interleave(c1: &[u8], c2: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c1.len() + c2.len());
    for (a, b) in c1.chunks_exact(32).zip(c2.chunks_exact(32)) {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
    }
    out
}

/// Zeroizes secret scalars before dropping them.
pub(crate) fn wipe(mut scalars: Vec<Scalar>) {
    scalars.zeroize();
}
