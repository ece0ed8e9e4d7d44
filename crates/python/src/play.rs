//! A party played over a link: to a peer elsewhere (TCP with mutual TLS, or an exchange
//! directory), or together with the other party in this process over an in-memory pair.
//! The protocol-specific parts (building the state machine, its result) are behind
//! [`Playable`]; this module does the rest the same way for every protocol.

use std::sync::Arc;

use privset_crypto::rng::SessionRng;
use privset_net::{Cancel, memory};
use privset_protocols::Party;
use privset_run::{Failure, Link, Metered, Prices, Stopwatch};
use pyo3::prelude::*;

use crate::errors;
use crate::link::{self, LinkArgs};
use crate::monitor::{Monitor, Monitored};
use crate::runner::{self, Job};

/// A party with its input and settings, ready to run any number of times: the
/// protocol-specific parts of a run.
pub(crate) trait Playable: Send + Sync + 'static {
    /// The protocol's state machine (e.g. `Box<dyn OutputParty<PiSumOutput>>`).
    type Machine;
    /// What a finished run gives back to the Python thread.
    type Outcome: Send + 'static;
    /// This party's name and its peer's ("p1"/"p2", "receiver"/"sender"), for progress
    /// and exchange-directory file names.
    fn names(&self) -> (&'static str, &'static str);
    /// A fresh state machine whose randomness comes from `seed`.
    fn machine(&self, seed: [u8; 32]) -> Result<Self::Machine, Failure>;
    /// The machine as the driver sees it.
    fn party(machine: &mut Self::Machine) -> &mut dyn Party;
    /// The outcome of a machine that finished a run measured as `run` (the machine is
    /// consumed: its output moves out rather than being copied).
    fn outcome(&self, machine: Self::Machine, run: Metered) -> Result<Self::Outcome, Failure>;
}

/// The error of a finished machine without an output (a bug, not the peer's doing).
pub(crate) fn no_output() -> Failure {
    Failure::other("the run ended without an output")
}

/// One run of `player` over `link`, reported to `monitor`. The exchange directory's
/// resume seed is removed only once the outcome is made.
fn play<P: Playable>(
    player: &P,
    mut link: Link,
    monitor: &Arc<Monitor>,
    stopwatch: &Stopwatch,
    prices: Prices,
) -> Result<P::Outcome, Failure> {
    let mut machine = player.machine(link.seed)?;
    link.transport = Box::new(Monitored::new(link.transport, monitor.clone()));
    monitor.watch(P::party(&mut machine).meter());
    let (run, seed_file) = privset_run::drive_metered(
        P::party(&mut machine),
        link,
        &mut |status| monitor.set_status(status),
        stopwatch,
        prices,
    )?;
    let outcome = player.outcome(machine, run)?;
    seed_file.remove();
    Ok(outcome)
}

/// Plays `party` against a peer reached as `link` says.
pub(crate) fn remote<P: Playable>(
    py: Python<'_>,
    party: Arc<P>,
    link: LinkArgs,
    prices: (f64, f64),
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<P::Outcome> {
    let prices = link::prices(py, prices)?;
    let cancel = Cancel::new();
    let spec = link.spec(py, cancel.clone())?;
    let (name, peer) = party.names();
    let job = Job {
        monitor: Arc::new(Monitor::new(name, cancel)),
        work: Box::new(move |monitor| {
            let stopwatch = Stopwatch::start();
            let link = spec.open(name, peer)?;
            play(party.as_ref(), link, monitor, &stopwatch, prices)
        }),
    };
    let mut outcomes = runner::run(py, vec![job], progress)?;
    Ok(outcomes.remove(0))
}

/// Plays `a` and `b` (opposite roles) against each other in this process over an
/// in-memory pair whose every wait gives up after `timeout` seconds.
pub(crate) fn local<P: Playable>(
    py: Python<'_>,
    a: Arc<P>,
    b: Arc<P>,
    timeout: f64,
    prices: (f64, f64),
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<(P::Outcome, P::Outcome)> {
    if a.names().0 == b.names().0 {
        return Err(errors::config(
            py,
            format!(
                "a local run needs the two roles {} and {}",
                a.names().0,
                a.names().1
            ),
        ));
    }
    let prices = link::prices(py, prices)?;
    let timeout = link::seconds(py, "timeout", timeout)?;
    let (end_a, end_b) = memory::pair_with_timeout(timeout);
    // Both parties share this process: one stopwatch, as `privset demo` measures.
    let stopwatch = Arc::new(Stopwatch::start());
    let job = |party: Arc<P>, end: memory::MemoryTransport| {
        let stopwatch = stopwatch.clone();
        Job {
            monitor: Arc::new(Monitor::new(party.names().0, Cancel::new())),
            work: Box::new(move |monitor: &Arc<Monitor>| {
                let link = Link {
                    transport: Box::new(end),
                    kind: "memory",
                    seed_file: None,
                    seed: SessionRng::from_os().seed(),
                };
                play(party.as_ref(), link, monitor, &stopwatch, prices)
            }) as runner::Work<P::Outcome>,
        }
    };
    let mut outcomes = runner::run(py, vec![job(a, end_a), job(b, end_b)], progress)?;
    let second = outcomes.remove(1);
    Ok((outcomes.remove(0), second))
}
