//! Buckets (or units) run at once, `--concurrency` of them: each lane is a thread with
//! its own connection (over TCP) or its own exchange subdirectories (one per bucket).
//!
//! More lanes help where a party has cores one session leaves idle (between its
//! messages, or beyond what one session's batches use); on the 2-core machine of
//! docs/benchmarks.md one lane already kept both cores busy and two gained nothing.
//! Memory grows with the lanes: each holds one bucket.
//!
//! Lane `l` of `L` takes the buckets at positions `l, l + L, l + 2L, ...` of the run, in
//! order. Over TCP both parties pair lane `l` with lane `l`, so both must take the same
//! buckets in the same order: the run comes from the plan session both ran, and each
//! lane's connection opens with a plan session naming its lane. A value-partitioned job
//! adds waves: a unit starts only once every unit of an earlier wave has finished on this
//! side. That never deadlocks: the first unfinished unit of the run has every earlier
//! wave finished on both sides (waves grow with position), and its lane, having finished
//! its earlier positions, is at it on both sides.

use std::sync::{Condvar, Mutex, PoisonError};

use crate::fail::Failure;

/// What the lanes share: units still to finish per wave, whether a lane has failed,
/// and how many units finished.
struct Board {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    pending: Vec<usize>,
    failed: bool,
    finished: usize,
}

impl Board {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until every unit of a wave before `wave` has finished: `false` if a lane
    /// failed meanwhile (this lane stops).
    fn await_wave(&self, wave: usize) -> bool {
        let mut state = self.lock();
        while !state.failed && state.pending[..wave].iter().any(|&n| n > 0) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        !state.failed
    }

    fn finish(&self, wave: usize) {
        let mut state = self.lock();
        state.pending[wave] -= 1;
        state.finished += 1;
        self.changed.notify_all();
    }

    fn fail(&self) {
        self.lock().failed = true;
        self.changed.notify_all();
    }
}

/// Runs `work(lane, bucket)` for every `(bucket, wave)` of `run` (waves non-decreasing)
/// on one thread per lane; returns how many finished and the first failure. After a
/// failure every lane stops before its next bucket (a session in progress ends first).
pub fn run<T: Send>(
    run: &[(u32, usize)],
    lanes: Vec<T>,
    work: impl Fn(&mut T, u32) -> Result<(), Failure> + Sync,
) -> (usize, Result<(), Failure>) {
    let count = lanes.len().max(1);
    let mut pending = vec![0usize; run.iter().map(|&(_, w)| w + 1).max().unwrap_or(0)];
    for &(_, w) in run {
        pending[w] += 1;
    }
    let board = Board {
        state: Mutex::new(State {
            pending,
            failed: false,
            finished: 0,
        }),
        changed: Condvar::new(),
    };
    let results: Vec<Result<(), Failure>> = std::thread::scope(|scope| {
        let lanes: Vec<_> = lanes
            .into_iter()
            .enumerate()
            .map(|(l, mut lane)| {
                let (board, work) = (&board, &work);
                scope.spawn(move || {
                    for &(b, wave) in run.iter().skip(l).step_by(count) {
                        if !board.await_wave(wave) {
                            return Ok(());
                        }
                        if let Err(e) = work(&mut lane, b) {
                            board.fail();
                            return Err(e);
                        }
                        board.finish(wave);
                    }
                    Ok(())
                })
            })
            .collect();
        lanes
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Failure::other("a bucket lane panicked")))
            })
            .collect()
    });
    let finished = board.lock().finished;
    (finished, results.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_take_every_bucket_once_and_keep_the_waves_in_order() {
        // Units 0..6 in waves 0, 0, 0, 1, 1, 2 on 2 and 3 lanes: every unit runs once,
        // and none starts before every unit of an earlier wave has finished.
        let run: Vec<(u32, usize)> = [0, 0, 0, 1, 1, 2]
            .into_iter()
            .zip(0..)
            .map(|(w, b)| (b, w))
            .collect();
        for lanes in [1, 2, 3, 6] {
            let log = Mutex::new(Vec::new());
            let (finished, result) = super::run(&run, vec![(); lanes], |_, b| {
                let wave = run[b as usize].1;
                let mut log = log.lock().unwrap();
                let earlier = run.iter().filter(|&&(_, w)| w < wave).count();
                assert!(
                    log.iter().filter(|&&(_, w)| w < wave).count() == earlier,
                    "{lanes} lanes: {b}"
                );
                log.push((b, wave));
                Ok(())
            });
            result.unwrap();
            assert_eq!(finished, run.len());
            let mut done: Vec<u32> = log
                .into_inner()
                .unwrap()
                .into_iter()
                .map(|(b, _)| b)
                .collect();
            done.sort_unstable();
            assert_eq!(done, (0..6).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_failure_stops_the_other_lanes_and_is_reported() {
        let run: Vec<(u32, usize)> = (0..40).map(|b| (b, b as usize / 10)).collect();
        let ran = Mutex::new(0);
        let (finished, result) = super::run(&run, vec![(); 3], |_, b| {
            *ran.lock().unwrap() += 1;
            if b == 4 {
                return Err(Failure::other("bucket 4 failed"));
            }
            Ok(())
        });
        assert!(result.unwrap_err().message.contains("bucket 4"));
        // Wave 1 never starts: wave 0's unit 4 did not finish.
        assert!(*ran.lock().unwrap() <= 10 && finished < 10);
    }
}
