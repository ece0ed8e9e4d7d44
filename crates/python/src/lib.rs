//! `privset._native`: the Python package's bindings to the Rust core.
//!
//! No protocol logic lives here or in Python: a party is the same sans-IO state machine
//! the CLI drives (`privset_protocols`), over the same transports (`privset_net`), with
//! the same input validation, metering, RESULT.json and error messages (`privset_run`).
//! What this crate adds is the Python surface: inputs from Python objects
//! ([`input`]), keyword arguments ([`link`], [`pi_sum`], [`pso`], [`apsi`], [`mpsi`],
//! [`upsi`]), and running a party on a worker thread with the GIL released, progress
//! callbacks and Ctrl-C ([`runner`], [`play`], [`monitor`], [`serve`]). The pure-Python
//! layer in `python/privset` wraps these in one class per protocol and role and frozen
//! result dataclasses.

mod apsi;
mod buckets;
mod errors;
mod input;
mod link;
mod monitor;
mod mpsi;
mod pi_sum;
mod play;
mod pso;
mod runner;
mod serve;
mod upsi;

use std::path::PathBuf;

use pyo3::prelude::*;

/// Writes a throwaway CA and a certificate per name into `out` (as `privset certs`
/// does) and returns the paths written, CA first.
#[pyfunction]
fn generate_certs(py: Python<'_>, out: PathBuf, names: Vec<String>) -> PyResult<Vec<PathBuf>> {
    py.detach(|| privset_net::certs::generate(&out, &names))
        .map_err(|e| errors::to_py(py, e.into()))
}

/// Party threads still running (0 once every run has ended, even a cancelled one).
/// Which code this CPU gets: the wheel is built for x86-64-v2 and chooses its fast
/// paths at run time (privset_crypto::cpu), one line per path.
#[pyfunction]
fn code_paths() -> String {
    privset_crypto::cpu::report()
}

#[pyfunction]
fn live_workers() -> usize {
    runner::live_workers()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<input::Input>()?;
    m.add_class::<pi_sum::PiSumParty>()?;
    m.add_class::<pso::PsoParty>()?;
    m.add_class::<buckets::BucketedPso>()?;
    m.add_class::<buckets::Rendezvous>()?;
    m.add_class::<mpsi::MpsiParty>()?;
    m.add_class::<apsi::ApsiParty>()?;
    m.add_class::<apsi::JudgeKey>()?;
    m.add_class::<apsi::JudgePublicKey>()?;
    m.add_class::<apsi::Signatures>()?;
    m.add_class::<upsi::UpsiParty>()?;
    m.add_class::<upsi::UpsiDatabase>()?;
    m.add_class::<upsi::UpsiRows>()?;
    m.add_function(wrap_pyfunction!(pso::open_share, m)?)?;
    m.add_function(wrap_pyfunction!(generate_certs, m)?)?;
    m.add_function(wrap_pyfunction!(live_workers, m)?)?;
    m.add_function(wrap_pyfunction!(code_paths, m)?)?;
    m.add("APSI_DEFAULT_MAX_ITEMS", apsi::DEFAULT_MAX_ITEMS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
