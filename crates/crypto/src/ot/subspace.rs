//! SoftSpokenOT's small-field VOLE: from the `2^k` leaves of one GGM tree, the column
//! sums that turn `k` base OTs into `k` IKNP-style columns.
//!
//! Each leaf `x` (a `k`-bit index) is stretched into a column `r_x` of pseudorandom bits.
//! The tree owner computes `u = ⊕_x r_x` and `v_i = ⊕_{x : bit i of x} r_x` for
//! `i < k`. The punctured side, missing leaf `Δ`, computes the same sums (`u'`, `v'_i`)
//! with any stream `g` in place of `r_Δ` (that of the zero seed its tree gives there);
//! then `v'_i ⊕ Δ_i·u' = ⊕_{x ≠ Δ} (x_i ⊕ Δ_i)·r_x ⊕ Δ_i·g ⊕ Δ_i·g = v_i ⊕ Δ_i·u`: leaf
//! `Δ`'s coefficient is `Δ_i ⊕ Δ_i = 0`, so what stands in for it cancels. So `k`
//! columns satisfy `w_i = v_i ⊕ Δ_i·u` for one `u` per tree: IKNP's correlation
//! `q = t ⊕ Δ·u` for a `k`-bit slice of the offset, paid for with one `u` correction per
//! tree instead of one per column.
//!
//! Both sides run this same code, whose memory accesses depend on nothing secret.
//!
//! The sums are built like a binary counter over the leaves: the streams of leaves `2m`
//! and `2m + 1` meet at level 0, where the odd one enters `v_0` and their xor moves up as
//! item `m` of level 1, and so on, so each leaf costs about two xors whatever `k` is, and
//! only `k + 1` stretches of the column are live at a time.

use zeroize::Zeroizing;

use super::base::Seed;
use super::prg::CtrStream;

/// Bytes of a column processed at a time: every leaf's stream for this stretch, the
/// running `u` and the `k` sums stay in the first-level caches.
const SEGMENT: usize = 4096;

fn xor_into(acc: &mut [u8], x: &[u8]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a ^= b;
    }
}

/// Sets `u` to `⊕_x r_x` and `v[i]` to `⊕_{x : bit i of x} r_x`, where `r_x` is leaf
/// `x`'s stream ([`CtrStream`]) over the column's `u.len()` bytes (a multiple of 16).
/// `leaves.len() == 2^v.len()`; every `v[i]` is as long as `u`.
pub(super) fn column_sums(leaves: &[Seed], u: &mut [u8], v: &mut [&mut [u8]]) {
    let k = v.len();
    debug_assert_eq!(leaves.len(), 1 << k);
    let streams: Vec<CtrStream> = leaves.iter().map(CtrStream::new).collect();
    for column in v.iter_mut() {
        column.fill(0);
    }
    // pending[l]: the even item of the pair being formed at level l.
    let mut pending: Vec<Zeroizing<Vec<u8>>> =
        (0..k).map(|_| Zeroizing::new(vec![0u8; SEGMENT])).collect();
    let mut current = Zeroizing::new(vec![0u8; SEGMENT]);
    for offset in (0..u.len()).step_by(SEGMENT) {
        let end = (offset + SEGMENT).min(u.len());
        let n = end - offset;
        for (x, stream) in streams.iter().enumerate() {
            stream.fill(offset, &mut current[..n]);
            // Carry leaf x up while it completes pairs (x is a public loop index).
            let mut level = 0;
            loop {
                if level == k {
                    u[offset..end].copy_from_slice(&current[..n]);
                    break;
                }
                if (x >> level) & 1 == 0 {
                    std::mem::swap(&mut pending[level], &mut current);
                    break;
                }
                xor_into(&mut v[level][offset..end], &current[..n]);
                xor_into(&mut current[..n], &pending[level][..n]);
                level += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_follow_their_definition_and_the_vole_relation_holds() {
        let k = 3;
        let len = SEGMENT + 48; // two segments, the second partial
        let leaves: Vec<Seed> = (0..8u8).map(|x| [x.wrapping_mul(31) ^ 5; 16]).collect();
        let streams: Vec<Vec<u8>> = leaves
            .iter()
            .map(|l| {
                let mut r = vec![0u8; len];
                CtrStream::new(l).fill(0, &mut r);
                r
            })
            .collect();
        let mut u = vec![0u8; len];
        let mut cols = vec![vec![0u8; len]; k];
        let mut v: Vec<&mut [u8]> = cols.iter_mut().map(|c| c.as_mut_slice()).collect();
        column_sums(&leaves, &mut u, &mut v);
        let mut want_u = vec![0u8; len];
        for r in &streams {
            xor_into(&mut want_u, r);
        }
        assert_eq!(u, want_u);
        for (i, col) in cols.iter().enumerate() {
            let mut want = vec![0u8; len];
            for (x, r) in streams.iter().enumerate() {
                if (x >> i) & 1 == 1 {
                    xor_into(&mut want, r);
                }
            }
            assert_eq!(col, &want, "v_{i}");
        }

        // Leaf delta replaced by another seed: v'_i xor delta_i * u' == v_i xor delta_i * u.
        for delta in 0..8usize {
            let mut punctured = leaves.clone();
            punctured[delta] = [0; 16];
            let mut u2 = vec![0u8; len];
            let mut cols2 = vec![vec![0u8; len]; k];
            let mut v2: Vec<&mut [u8]> = cols2.iter_mut().map(|c| c.as_mut_slice()).collect();
            column_sums(&punctured, &mut u2, &mut v2);
            for i in 0..k {
                let bit = (delta >> i) & 1 == 1;
                let lhs: Vec<u8> = (0..len)
                    .map(|p| cols2[i][p] ^ if bit { u2[p] } else { 0 })
                    .collect();
                let rhs: Vec<u8> = (0..len)
                    .map(|p| cols[i][p] ^ if bit { u[p] } else { 0 })
                    .collect();
                assert_eq!(lhs, rhs, "delta {delta} column {i}");
            }
        }
    }
}
