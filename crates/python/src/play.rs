//! A party played over its links: to peers elsewhere (TCP with mutual TLS, or an
//! exchange directory), or together with every other party of the session in this
//! process over in-memory links. Two-party protocols have one link ([`Wires::Pair`]);
//! multi-party PSI has one per peer ([`Wires::Session`]). The protocol-specific parts
//! (building the state machine, its result) are behind [`Playable`]; this module does
//! the rest the same way for every protocol and every number of parties.

use std::sync::Arc;

use privset_crypto::rng::SessionRng;
use privset_net::{Cancel, LinkSet, memory};
use privset_protocols::Party;
use privset_protocols::engine::Topology;
use privset_run::{Failure, Link, Metered, PartiesSpec, PartyLinks, Prices, Stopwatch};
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
    /// Which party this is, for progress callbacks and the worker thread's name.
    fn label(&self) -> String;
    /// A fresh state machine whose randomness comes from `seed`.
    fn machine(&self, seed: [u8; 32]) -> Result<Self::Machine, Failure>;
    /// The machine as the driver sees it.
    fn party(machine: &mut Self::Machine) -> &mut dyn Party;
    /// The outcome of a machine that finished a run measured as `run` (the machine is
    /// consumed: its output moves out rather than being copied).
    fn outcome(&self, machine: Self::Machine, run: Metered) -> Result<Self::Outcome, Failure>;
}

/// A party of a two-party protocol, whose one link is named by the two roles.
pub(crate) trait Paired: Playable {
    /// This party's role and its peer's ("p1"/"p2", "receiver"/"sender"), which name
    /// the exchange-directory files.
    fn names(&self) -> (&'static str, &'static str);
}

/// The error of a finished machine without an output (a bug, not the peer's doing).
pub(crate) fn no_output() -> Failure {
    Failure::other("the run ended without an output")
}

/// How a party reaches its peers.
pub(crate) enum Wires {
    /// The one link of a two-party protocol.
    Pair(Link),
    /// A link to every peer of a multi-party session.
    Session(PartyLinks),
}

impl Wires {
    fn seed(&self) -> [u8; 32] {
        match self {
            Wires::Pair(link) => link.seed,
            Wires::Session(links) => links.seed,
        }
    }
}

/// One run of `player` over `wires`, reported to `monitor`. The exchange directory's
/// resume seed is removed only once the outcome is made.
fn play<P: Playable>(
    player: &P,
    wires: Wires,
    monitor: &Arc<Monitor>,
    stopwatch: &Stopwatch,
    prices: Prices,
) -> Result<P::Outcome, Failure> {
    let mut machine = player.machine(wires.seed())?;
    let monitored = |t| Box::new(Monitored::new(t, monitor.clone())) as _;
    let on_status = &mut |status: &str| monitor.set_status(status);
    monitor.watch(P::party(&mut machine).meter());
    let party = P::party(&mut machine);
    let (run, seed_file) = match wires {
        Wires::Pair(mut link) => {
            link.transport = monitored(link.transport);
            privset_run::drive_metered(party, link, on_status, stopwatch, prices)?
        }
        Wires::Session(mut links) => {
            links.links = links.links.wrap(monitored);
            privset_run::drive_links_metered(party, links, on_status, stopwatch, prices)?
        }
    };
    let outcome = player.outcome(machine, run)?;
    seed_file.remove();
    Ok(outcome)
}

/// The job of playing `party` over the wires `open` makes on its thread, stopped by
/// `cancel`, measured from `stopwatch`.
fn job<P: Playable>(
    party: Arc<P>,
    cancel: Cancel,
    stopwatch: Arc<Stopwatch>,
    prices: Prices,
    open: impl FnOnce() -> Result<Wires, Failure> + Send + 'static,
) -> Job<P::Outcome> {
    Job {
        monitor: Arc::new(Monitor::new(&party.label(), cancel)),
        work: Box::new(move |monitor: &Arc<Monitor>| {
            play(party.as_ref(), open()?, monitor, &stopwatch, prices)
        }),
    }
}

/// Plays `party` against a peer reached as `link` says.
pub(crate) fn remote<P: Paired>(
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
    let stopwatch = Arc::new(Stopwatch::start());
    let open = move || Ok(Wires::Pair(spec.open(name, peer)?));
    let job = job(party, cancel, stopwatch, prices, open);
    let mut outcomes = runner::run(py, vec![job], progress)?;
    Ok(outcomes.remove(0))
}

/// Plays `party` as one participant of a multi-party session whose links `spec`
/// describes (its cancel token stops the run).
pub(crate) fn remote_session<P: Playable>(
    py: Python<'_>,
    party: Arc<P>,
    spec: PartiesSpec,
    prices: Prices,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<P::Outcome> {
    let stopwatch = Arc::new(Stopwatch::start());
    let cancel = spec.cancel.clone();
    let open = move || Ok(Wires::Session(spec.open()?));
    let job = job(party, cancel, stopwatch, prices, open);
    let mut outcomes = runner::run(py, vec![job], progress)?;
    Ok(outcomes.remove(0))
}

/// Plays `a` and `b` (opposite roles) against each other in this process over an
/// in-memory pair whose every wait gives up after `timeout` seconds.
pub(crate) fn local<P: Paired>(
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
    let pair_job = |party: Arc<P>, end: memory::MemoryTransport| {
        let open = move || {
            Ok(Wires::Pair(Link {
                transport: Box::new(end),
                kind: "memory",
                seed_file: None,
                seed: SessionRng::from_os().seed(),
                notice: None,
            }))
        };
        job(party, Cancel::new(), stopwatch.clone(), prices, open)
    };
    let jobs = vec![pair_job(a, end_a), pair_job(b, end_b)];
    let mut outcomes = runner::run(py, jobs, progress)?;
    let second = outcomes.remove(1);
    Ok((outcomes.remove(0), second))
}

/// Plays every participant of a session (`parties[i]` is participant `i`) in this
/// process, over an in-memory link for each pair `topology` links, each wait giving up
/// after `timeout` seconds. Returns the outcomes in participant order.
pub(crate) fn local_session<P: Playable>(
    py: Python<'_>,
    parties: Vec<Arc<P>>,
    topology: Topology,
    timeout: f64,
    prices: (f64, f64),
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<P::Outcome>> {
    let prices = link::prices(py, prices)?;
    let timeout = link::seconds(py, "timeout", timeout)?;
    let count = parties.len();
    let mut sets: Vec<LinkSet> = (0..count).map(|_| LinkSet::new()).collect();
    for a in 0..count {
        for b in topology.peers_of(count, a as u8) {
            if usize::from(b) > a {
                let (end_a, end_b) = memory::pair_with_timeout(timeout);
                sets[a].insert(b, Box::new(end_a));
                sets[usize::from(b)].insert(a as u8, Box::new(end_b));
            }
        }
    }
    // Every participant shares this process: one stopwatch, as for a pair.
    let stopwatch = Arc::new(Stopwatch::start());
    let jobs = parties
        .into_iter()
        .zip(sets)
        .map(|(party, links)| {
            let open = move || {
                Ok(Wires::Session(PartyLinks {
                    links,
                    kind: "memory",
                    seed_file: None,
                    seed: SessionRng::from_os().seed(),
                    notice: None,
                }))
            };
            job(party, Cancel::new(), stopwatch.clone(), prices, open)
        })
        .collect();
    runner::run(py, jobs, progress)
}
