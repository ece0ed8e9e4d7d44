//! The database's items, stored by column so that 2^24 of them take about 60 bytes
//! each plus their label: the item bytes in one arena, the OPRF hashes and encrypted
//! labels in flat vectors, and an index from hash to record number that holds only the
//! number (4 bytes per slot; the hash is read from the column).
//!
//! Records are numbered densely: removing one moves the last record into its place
//! (the caller is told, to renumber its references).

use hashbrown::HashTable;

/// Columns of every stored item.
#[derive(Clone)]
pub struct Records {
    /// Bytes of one encrypted label (nonce included); 0 when unlabeled.
    label_stride: usize,
    hashes: Vec<u128>,
    labels: Vec<u8>,
    /// Every item's bytes, back to back (with holes left by removals).
    arena: Vec<u8>,
    /// Item i is `arena[starts[i]..starts[i] + lens[i]]`.
    starts: Vec<u64>,
    lens: Vec<u32>,
    /// Bytes of `arena` no record uses.
    garbage: usize,
    index: HashTable<u32>,
}

/// The index's hash of an OPRF hash (already pseudorandom).
fn slot_hash(hash: u128) -> u64 {
    hash as u64 ^ (hash >> 64) as u64
}

impl Records {
    pub fn new(label_stride: usize) -> Self {
        Self {
            label_stride,
            hashes: Vec::new(),
            labels: Vec::new(),
            arena: Vec::new(),
            starts: Vec::new(),
            lens: Vec::new(),
            garbage: 0,
            index: HashTable::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Room for `more` records.
    pub fn reserve(&mut self, more: usize, item_bytes: usize) {
        self.hashes.reserve(more);
        self.labels.reserve(more * self.label_stride);
        self.arena.reserve(item_bytes);
        self.starts.reserve(more);
        self.lens.reserve(more);
        let hashes = &self.hashes;
        self.index.reserve(more, |&i| slot_hash(hashes[i as usize]));
    }

    /// The record whose OPRF hash is `hash`.
    pub fn find(&self, hash: u128) -> Option<u32> {
        self.index
            .find(slot_hash(hash), |&i| self.hashes[i as usize] == hash)
            .copied()
    }

    /// Adds a record (its hash must not be stored yet); returns its number.
    pub fn push(&mut self, item: &[u8], hash: u128, encrypted_label: &[u8]) -> u32 {
        debug_assert_eq!(encrypted_label.len(), self.label_stride);
        debug_assert!(self.find(hash).is_none());
        let i = self.hashes.len() as u32;
        self.hashes.push(hash);
        self.labels.extend_from_slice(encrypted_label);
        self.starts.push(self.arena.len() as u64);
        self.lens.push(item.len() as u32);
        self.arena.extend_from_slice(item);
        let hashes = &self.hashes;
        self.index
            .insert_unique(slot_hash(hash), i, |&j| slot_hash(hashes[j as usize]));
        i
    }

    /// Replaces record `i`'s encrypted label.
    pub fn set_label(&mut self, i: u32, encrypted_label: &[u8]) {
        let at = i as usize * self.label_stride;
        self.labels[at..at + self.label_stride].copy_from_slice(encrypted_label);
    }

    /// Removes the records `gone` (sorted, distinct). The records numbered at or above
    /// the new length that stay move into the holes below it; returns each move as
    /// `(old number, new number)`.
    pub fn remove_many(&mut self, gone: &[u32]) -> Vec<(u32, u32)> {
        debug_assert!(gone.windows(2).all(|w| w[0] < w[1]));
        let (old, new) = (self.len(), self.len() - gone.len());
        for &i in gone {
            let hash = self.hashes[i as usize];
            self.index
                .find_entry(slot_hash(hash), |&j| j == i)
                .expect("every record is indexed")
                .remove();
            self.garbage += self.lens[i as usize] as usize;
        }
        let holes = gone.iter().copied().filter(|&i| (i as usize) < new);
        let movers = (new as u32..old as u32).filter(|i| gone.binary_search(i).is_err());
        let moves: Vec<(u32, u32)> = movers.zip(holes).collect();
        let s = self.label_stride;
        for &(from, to) in &moves {
            let (f, t) = (from as usize, to as usize);
            self.hashes[t] = self.hashes[f];
            self.starts[t] = self.starts[f];
            self.lens[t] = self.lens[f];
            self.labels.copy_within(f * s..(f + 1) * s, t * s);
            *self
                .index
                .find_mut(slot_hash(self.hashes[t]), |&j| j == from)
                .expect("every record is indexed") = to;
        }
        self.hashes.truncate(new);
        self.starts.truncate(new);
        self.lens.truncate(new);
        self.labels.truncate(new * s);
        if self.garbage > 1 << 20 && self.garbage > self.arena.len() / 2 {
            self.compact();
        }
        moves
    }

    /// Rewrites the arena without its holes.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(self.arena.len() - self.garbage);
        for (start, &len) in self.starts.iter_mut().zip(&self.lens) {
            let from = *start as usize;
            *start = arena.len() as u64;
            arena.extend_from_slice(&self.arena[from..from + len as usize]);
        }
        self.arena = arena;
        self.garbage = 0;
    }

    pub fn hash(&self, i: u32) -> u128 {
        self.hashes[i as usize]
    }

    pub fn item(&self, i: u32) -> &[u8] {
        let start = self.starts[i as usize] as usize;
        &self.arena[start..start + self.lens[i as usize] as usize]
    }

    pub fn label(&self, i: u32) -> &[u8] {
        let at = i as usize * self.label_stride;
        &self.labels[at..at + self.label_stride]
    }

    /// Heap bytes held (what `upsi db info` reports).
    pub fn heap_bytes(&self) -> usize {
        self.hashes.capacity() * 16
            + self.labels.capacity()
            + self.arena.capacity()
            + self.starts.capacity() * 8
            + self.lens.capacity() * 4
            + self.index.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_pushes_and_removals() {
        let mut r = Records::new(3);
        let mut model: std::collections::HashMap<u128, (Vec<u8>, Vec<u8>)> =
            std::collections::HashMap::new();
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        for round in 0..20_000u64 {
            if next() % 3 == 0 && !r.is_empty() {
                let mut gone: Vec<u32> = (0..1 + next() % 4)
                    .map(|_| (next() % r.len() as u64) as u32)
                    .collect();
                gone.sort_unstable();
                gone.dedup();
                let kept: Vec<u128> = (0..r.len() as u32)
                    .filter(|i| gone.binary_search(i).is_err())
                    .map(|i| r.hash(i))
                    .collect();
                for &i in &gone {
                    model.remove(&r.hash(i));
                }
                let moves = r.remove_many(&gone);
                assert_eq!(r.len(), kept.len());
                for (from, to) in moves {
                    assert!(from as usize >= r.len() && (to as usize) < r.len());
                }
                let mut now: Vec<u128> = (0..r.len() as u32).map(|i| r.hash(i)).collect();
                let mut kept = kept;
                now.sort_unstable();
                kept.sort_unstable();
                assert_eq!(now, kept);
            } else {
                let hash = u128::from(next()) << 64 | u128::from(round);
                let item = vec![round as u8; (next() % 40) as usize];
                let label = [round as u8, 1, 2];
                r.push(&item, hash, &label);
                model.insert(hash, (item, label.to_vec()));
            }
        }
        assert_eq!(r.len(), model.len());
        for (hash, (item, label)) in &model {
            let i = r.find(*hash).expect("stored");
            assert_eq!(r.item(i), item.as_slice());
            assert_eq!(r.label(i), label.as_slice());
        }
        assert!(r.find(12345).is_none());
    }
}
