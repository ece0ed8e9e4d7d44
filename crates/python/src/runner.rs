//! Running parties on worker threads while the calling Python thread waits.
//!
//! Each party runs on its own Rust thread (holding no Python object), so the crypto
//! never holds the GIL. The calling thread waits with the GIL released, waking every
//! [`POLL`] to let Python handle signals (Ctrl-C raises `KeyboardInterrupt` there) and to
//! pass progress to the caller's callback. On an exception — KeyboardInterrupt, or one
//! raised by the callback — every party's [`Cancel`](privset_net::Cancel) is tripped:
//! blocked sockets are shut down, connection and directory polling stop, and each worker
//! ends at its next message boundary, so no thread is left waiting on a peer.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use privset_run::{Failure, FailureKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors;
use crate::monitor::{Monitor, Snapshot};

/// How often the waiting Python thread wakes: the latency of Ctrl-C and of progress.
const POLL: Duration = Duration::from_millis(50);

/// Worker threads alive right now (for tests: a cancelled run must leave none behind).
static LIVE_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Counts a worker thread from spawn to exit, even if it panics.
struct WorkerGuard;

impl WorkerGuard {
    fn new() -> Self {
        LIVE_WORKERS.fetch_add(1, Ordering::SeqCst);
        WorkerGuard
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        LIVE_WORKERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Number of party threads still running.
pub(crate) fn live_workers() -> usize {
    LIVE_WORKERS.load(Ordering::SeqCst)
}

pub(crate) type Work<T> = Box<dyn FnOnce(&Arc<Monitor>) -> Result<T, Failure> + Send>;

/// One party to run: its monitor and what to do on its thread.
pub(crate) struct Job<T> {
    pub monitor: Arc<Monitor>,
    pub work: Work<T>,
}

/// Runs `jobs` (one per party) to completion and returns their outcomes in order, or
/// raises: the first exception from Python (signals, the progress callback), else the
/// failure that caused the others.
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    jobs: Vec<Job<T>>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<T>> {
    let monitors: Vec<Arc<Monitor>> = jobs.iter().map(|j| j.monitor.clone()).collect();
    let cancel_all = || monitors.iter().for_each(|m| m.cancel.cancel());
    let (tx, mut rx) = mpsc::channel();
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    for (index, job) in jobs.into_iter().enumerate() {
        let tx = tx.clone();
        let guard = WorkerGuard::new();
        let spawned = std::thread::Builder::new()
            .name(format!("privset-{}", job.monitor.label))
            .spawn(move || {
                let _guard = guard;
                let Job { monitor, work } = job;
                let outcome =
                    catch_unwind(AssertUnwindSafe(|| work(&monitor))).unwrap_or_else(|_| {
                        Err(Failure::other(format!(
                            "the {} party's thread panicked",
                            monitor.label
                        )))
                    });
                let _ = tx.send((index, outcome));
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                cancel_all();
                return Err(PyRuntimeError::new_err(format!(
                    "cannot start a thread: {e}"
                )));
            }
        }
    }
    drop(tx);
    let mut outcomes: Vec<Option<Result<T, Failure>>> = monitors.iter().map(|_| None).collect();
    let mut shown: Vec<Option<Snapshot>> = vec![None; monitors.len()];
    let mut pending = monitors.len();
    while pending > 0 {
        let (back, received) = py.detach(move || {
            let r = rx.recv_timeout(POLL);
            (rx, r)
        });
        rx = back;
        match received {
            Ok((index, outcome)) => {
                if outcome.is_err() {
                    // The other party of a local run need not wait for its timeout.
                    cancel_all();
                }
                outcomes[index] = Some(outcome);
                pending -= 1;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Err(e) = py.check_signals() {
            cancel_all();
            return Err(e);
        }
        if let Some(callback) = progress
            && let Err(e) = report(callback, &monitors, &mut shown)
        {
            cancel_all();
            return Err(e);
        }
    }
    // Every worker has sent its outcome and is exiting: wait, so none outlives the call.
    py.detach(move || handles.into_iter().for_each(|h| drop(h.join())));
    collect(py, outcomes)
}

/// Calls `callback(label, status, messages_sent, messages_received, bytes_sent,
/// bytes_received, phase, phase_number, done, total)` for each party whose progress
/// changed since last shown (`phase` is None before the party's first bulk phase),
/// after one call for each phase that ended unseen since then (done = total).
fn report(
    callback: &Bound<'_, PyAny>,
    monitors: &[Arc<Monitor>],
    shown: &mut [Option<Snapshot>],
) -> PyResult<()> {
    for (monitor, last) in monitors.iter().zip(shown.iter_mut()) {
        let now = monitor.snapshot();
        if last.as_ref() == Some(&now) {
            continue;
        }
        for missed in monitor.ended_since(last.as_ref(), &now) {
            call(callback, &monitor.label, &missed)?;
        }
        call(callback, &monitor.label, &now)?;
        *last = Some(now);
    }
    Ok(())
}

fn call(callback: &Bound<'_, PyAny>, label: &str, s: &Snapshot) -> PyResult<()> {
    callback.call1((
        label,
        s.status.as_str(),
        s.messages_sent,
        s.messages_received,
        s.bytes_sent,
        s.bytes_received,
        (s.phase_number > 0).then_some(s.phase),
        s.phase_number,
        s.done,
        s.total,
    ))?;
    Ok(())
}

/// The outcomes, or the failure to raise: one that is not merely a reaction to the
/// other party stopping (its alert, its closed connection, our cancel).
fn collect<T>(py: Python<'_>, outcomes: Vec<Option<Result<T, Failure>>>) -> PyResult<Vec<T>> {
    let mut failures = Vec::new();
    let mut done = Vec::new();
    for outcome in outcomes {
        match outcome {
            Some(Ok(t)) => done.push(t),
            Some(Err(f)) => failures.push(f),
            None => failures.push(Failure::other("a party's thread ended without an outcome")),
        }
    }
    let secondary = |f: &Failure| f.peer_stopped || f.kind == FailureKind::Cancelled;
    match failures.iter().position(|f| !secondary(f)) {
        Some(i) => Err(errors::to_py(py, failures.swap_remove(i))),
        None if !failures.is_empty() => Err(errors::to_py(py, failures.swap_remove(0))),
        None => Ok(done),
    }
}
