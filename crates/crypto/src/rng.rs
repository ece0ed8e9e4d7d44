//! Session randomness.
//!
//! Every party draws all of its randomness (keys, shuffles, masks, encryption nonces)
//! from one [`SessionRng`]. It is a ChaCha20 stream seeded from the operating system's
//! CSPRNG, so it is cryptographically secure; and because it is an explicit value rather
//! than a global, a party can be re-created from the same seed and replay a run exactly.
//! That is how the shared-directory transport resumes a party that was killed mid-run:
//! the seed is kept in the party's *private* state directory, never in the exchange
//! directory.
//!
//! Parallel work takes independent child streams with [`SessionRng::fork`], so results
//! do not depend on how rayon schedules the work.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

/// Length of a session seed in bytes.
pub const SEED_LEN: usize = 32;

/// A cryptographically secure, forkable random stream (ChaCha20).
pub struct SessionRng {
    seed: [u8; SEED_LEN],
    stream: ChaCha20Rng,
    forks: u64,
}

impl SessionRng {
    /// A fresh stream seeded from the operating system's CSPRNG.
    pub fn from_os() -> Self {
        let mut seed = [0u8; SEED_LEN];
        getrandom::fill(&mut seed).expect("the operating system's random source failed");
        Self::from_seed(seed)
    }

    /// A stream that replays exactly from a seed previously taken with [`Self::seed`].
    pub fn from_seed(seed: [u8; SEED_LEN]) -> Self {
        Self {
            seed,
            stream: ChaCha20Rng::from_seed(seed),
            forks: 0,
        }
    }

    /// The seed this stream started from. Secret: whoever holds it can recompute every
    /// key and mask of the session.
    pub fn seed(&self) -> [u8; SEED_LEN] {
        self.seed
    }

    /// Fills `out` with random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        self.stream.fill_bytes(out);
    }

    /// A uniformly random `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.stream.next_u64()
    }

    /// A uniformly random integer in `0..bound` (rejection sampling, no modulo bias).
    ///
    /// # Panics
    /// If `bound` is zero (a caller bug, never driven by peer input).
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "SessionRng::below(0)");
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let x = self.stream.next_u64();
            if x < zone {
                return x % bound;
            }
        }
    }

    /// An independent child stream. The n-th fork of a stream is a deterministic
    /// function of the stream's seed and n, whatever has been drawn from the parent.
    pub fn fork(&mut self) -> SessionRng {
        let mut h = Sha256::new();
        h.update(b"privset/rng/fork/v1");
        h.update(self.seed);
        h.update(self.forks.to_be_bytes());
        self.forks += 1;
        SessionRng::from_seed(h.finalize().into())
    }

    /// `n` independent child streams, for splitting work across threads.
    pub fn fork_many(&mut self, n: usize) -> Vec<SessionRng> {
        (0..n).map(|_| self.fork()).collect()
    }

    /// Shuffles `items` in place with a Fisher-Yates shuffle driven by this stream.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// A uniformly random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<u32> {
        assert!(n <= u32::MAX as usize, "permutation larger than u32::MAX");
        let mut p: Vec<u32> = (0..n as u32).collect();
        self.shuffle(&mut p);
        p
    }
}

impl Drop for SessionRng {
    fn drop(&mut self) {
        self.seed.zeroize();
    }
}

impl std::fmt::Debug for SessionRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionRng { .. }")
    }
}

impl RngCore for SessionRng {
    fn next_u32(&mut self) -> u32 {
        self.stream.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.stream.next_u64()
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.stream.fill_bytes(dst)
    }
}

impl rand_core::CryptoRng for SessionRng {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_replays_and_forks_are_stable() {
        let mut a = SessionRng::from_seed([7; 32]);
        let mut b = SessionRng::from_seed([7; 32]);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut fa = a.fork();
        let _ = b.next_u64(); // drawing from the parent does not change the fork
        let mut fb = b.fork();
        assert_eq!(fa.next_u64(), fb.next_u64());
        assert_ne!(a.fork().next_u64(), b.next_u64());
    }

    #[test]
    fn shuffle_is_a_permutation_and_below_is_in_range() {
        let mut r = SessionRng::from_os();
        let p = r.permutation(1000);
        let mut s = p.clone();
        s.sort();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_ne!(p, s);
        for b in [1u64, 2, 3, 1000, u64::MAX] {
            assert!(r.below(b) < b);
        }
    }
}
