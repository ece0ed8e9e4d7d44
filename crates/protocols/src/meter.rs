//! How far a party is through its current phase: items done of a known total, shared
//! with whatever displays it (the CLI's bar, Python's callback).
//!
//! Why a shared meter and not `Party::status`: a party's bulk work (hashing a million
//! items, a million exponentiations) happens inside one call, between two messages,
//! where the driver cannot ask. The party counts into a [`Meter`] as it goes, and a
//! display thread reads it whenever it likes: the party never waits for the display and
//! never calls out of its state machine (it stays sans-IO).
//!
//! One mechanism for every protocol: a phase starts with [`Meter::begin`] (its name as
//! the protocol's documentation names the step, and the number of items), and the work
//! runs in slices of [`SLICE`] items through [`Meter::slices`] / [`Meter::try_slices`],
//! each finished slice counted. Counting is one relaxed atomic add per slice (tens of
//! milliseconds of work), so it costs nothing measurable.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Items per counted slice: a multiple of the crypto batch chunks (so slicing does not
/// leave partial vectors), small enough for several updates a second at ~10 µs an item
/// on two cores, large enough that slicing costs nothing.
pub const SLICE: usize = 1 << 13;

/// One party's progress through its current phase.
#[derive(Debug, Default)]
pub struct Meter {
    /// The phase's name; `""` before the first phase.
    phase: Mutex<&'static str>,
    done: AtomicU64,
    total: AtomicU64,
    /// Bumped by every [`Meter::begin`], so a reader notices a new phase even when two
    /// phases in a row have the same name and size.
    phase_number: AtomicU64,
    /// The last [`ENDED_KEPT`] phases that ended, as `(number, name, total)`: a reader
    /// that polls can report a phase that began and ended between two of its reads.
    ended: Mutex<VecDeque<(u64, &'static str, u64)>>,
}

/// Ended phases a [`Meter`] remembers (a display polling ten times a second never
/// falls that far behind).
pub const ENDED_KEPT: usize = 16;

/// A copy of a [`Meter`] at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The current phase ("" before any).
    pub phase: &'static str,
    /// 1 for the first phase, 2 for the second, ...; 0 before any.
    pub phase_number: u64,
    /// Items of this phase done so far (at most `total`).
    pub done: u64,
    /// Items in this phase.
    pub total: u64,
}

impl Reading {
    /// True while a phase has items left.
    pub fn is_active(&self) -> bool {
        self.phase_number > 0 && self.done < self.total
    }
}

impl Meter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a phase of `total` items (nothing done yet).
    pub fn begin(&self, phase: &'static str, total: usize) {
        let mut current = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let number = self.phase_number.load(Ordering::Acquire);
        if number > 0 {
            let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
            ended.push_back((number, *current, self.total.load(Ordering::Relaxed)));
            if ended.len() > ENDED_KEPT {
                ended.pop_front();
            }
        }
        *current = phase;
        // Under the lock, so a reader never sees the new name with the old counts.
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total as u64, Ordering::Relaxed);
        self.phase_number.fetch_add(1, Ordering::Release);
    }

    /// Counts `n` more items of the current phase as done.
    pub fn add(&self, n: usize) {
        self.done.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The numbers, names and totals of the phases numbered `after + 1 .. before`
    /// (phases that ended), in order, as far as the meter still remembers them.
    pub fn ended_between(&self, after: u64, before: u64) -> Vec<(u64, &'static str, u64)> {
        let ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        ended
            .iter()
            .filter(|(number, _, _)| *number > after && *number < before)
            .copied()
            .collect()
    }

    /// The current phase and its counts.
    pub fn read(&self) -> Reading {
        let phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let total = self.total.load(Ordering::Relaxed);
        Reading {
            phase: *phase,
            phase_number: self.phase_number.load(Ordering::Acquire),
            done: self.done.load(Ordering::Relaxed).min(total),
            total,
        }
    }

    /// Runs the phase `phase` over `data`, which holds items of `width` entries each
    /// (1 for a slice of items, the element length for packed bytes): `f` gets the index
    /// of a slice's first item and the slice, and the outputs are concatenated in order.
    pub fn slices<T, U>(
        &self,
        phase: &'static str,
        data: &[T],
        width: usize,
        mut f: impl FnMut(usize, &[T]) -> Vec<U>,
    ) -> Vec<U> {
        let result: Result<Vec<U>, std::convert::Infallible> =
            self.try_slices(phase, data, width, |first, slice| Ok(f(first, slice)));
        match result {
            Ok(out) => out,
            Err(never) => match never {},
        }
    }

    /// [`Meter::slices`] for work that can fail: stops at the first error (an index in
    /// it is relative to the slice; add the first index `f` was given).
    pub fn try_slices<T, U, E>(
        &self,
        phase: &'static str,
        data: &[T],
        width: usize,
        mut f: impl FnMut(usize, &[T]) -> Result<Vec<U>, E>,
    ) -> Result<Vec<U>, E> {
        let width = width.max(1);
        let items = data.len() / width;
        self.begin(phase, items);
        let mut out = Vec::new();
        for (i, slice) in data.chunks(SLICE * width).enumerate() {
            let part = f(i * SLICE, slice)?;
            if out.is_empty() {
                out = part;
            } else {
                out.extend(part);
            }
            self.add(slice.len() / width);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Phases that ended are remembered (the last [`ENDED_KEPT`]) with their totals.
    #[test]
    fn ended_phases_are_remembered() {
        let meter = Meter::new();
        assert!(meter.ended_between(0, 1).is_empty());
        meter.begin("one", 10);
        meter.begin("two", 20);
        meter.begin("three", 30);
        assert_eq!(meter.read().phase_number, 3);
        assert_eq!(meter.ended_between(0, 3), [(1, "one", 10), (2, "two", 20)]);
        assert_eq!(meter.ended_between(1, 3), [(2, "two", 20)]);
        for _ in 0..2 * ENDED_KEPT {
            meter.begin("more", 1);
        }
        assert_eq!(meter.ended_between(0, u64::MAX).len(), ENDED_KEPT);
    }

    #[test]
    fn slices_count_every_item_and_keep_the_order() {
        let meter = Meter::new();
        let data: Vec<u32> = (0..(3 * SLICE as u32 + 5)).collect();
        let mut firsts = Vec::new();
        let out = meter.slices("doubling", &data, 1, |first, s| {
            firsts.push(first);
            s.iter().map(|x| x * 2).collect()
        });
        assert_eq!(out, data.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert_eq!(firsts, vec![0, SLICE, 2 * SLICE, 3 * SLICE]);
        let r = meter.read();
        assert_eq!(
            (r.phase, r.phase_number, r.done, r.total),
            ("doubling", 1, data.len() as u64, data.len() as u64)
        );
        assert!(!r.is_active());
    }

    #[test]
    fn packed_items_are_counted_by_width() {
        let meter = Meter::new();
        let packed = vec![0u8; 32 * (SLICE + 1)];
        let out = meter.slices("packed", &packed, 32, |_, s| s.to_vec());
        assert_eq!(out.len(), packed.len());
        assert_eq!(meter.read().done, SLICE as u64 + 1);
    }

    #[test]
    fn an_error_stops_the_phase_part_way() {
        let meter = Meter::new();
        let data = vec![0u8; 2 * SLICE];
        let result: Result<Vec<u8>, usize> = meter.try_slices("failing", &data, 1, |first, _| {
            if first > 0 { Err(first) } else { Ok(vec![]) }
        });
        assert_eq!(result, Err(SLICE));
        let r = meter.read();
        assert_eq!((r.done, r.total), (SLICE as u64, 2 * SLICE as u64));
        assert!(r.is_active());
    }

    #[test]
    fn a_new_phase_resets_the_counts() {
        let meter = Meter::new();
        meter.begin("a", 10);
        meter.add(10);
        meter.begin("a", 10);
        let r = meter.read();
        assert_eq!((r.phase_number, r.done), (2, 0));
        // More done than the total (a miscount) never shows as more than 100%.
        meter.add(11);
        assert_eq!(meter.read().done, 10);
    }
}
