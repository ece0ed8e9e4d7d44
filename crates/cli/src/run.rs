//! Running one party end to end from the command line: the shared metered run of
//! `privset-run`, with a progress display and the cost model's prices as flags.

use std::path::Path;

use clap::Args;
use privset_protocols::Party;
pub use privset_run::Metered;
use privset_run::report::BucketedReport;
use privset_run::{Failure, Link, Prices, SeedFile, Stopwatch};

use crate::progress::Progress;

/// Prices of Ion et al.'s cost model, as command-line flags.
#[derive(Args, Debug, Clone)]
pub struct PriceArgs {
    /// Price of a CPU-hour in dollars (Ion et al. 2020, Table 1, GCP).
    #[arg(long, value_name = "USD", default_value_t = 0.01)]
    pub cpu_price: f64,
    /// Price of a GB (2^30 bytes) of egress in dollars (Ion et al. 2020, Table 1, GCP).
    #[arg(long, value_name = "USD", default_value_t = 0.08)]
    pub network_price: f64,
}

impl PriceArgs {
    pub fn prices(&self) -> Prices {
        Prices {
            cpu_dollars_per_hour: self.cpu_price,
            network_dollars_per_gb: self.network_price,
        }
    }
}

/// Drives `party` over `link` to the end, showing its status under `label`, and meters
/// the run from `stopwatch` (started before the input was read).
pub fn drive_metered(
    party: &mut dyn Party,
    link: Link,
    label: &str,
    stopwatch: &Stopwatch,
    prices: Prices,
) -> Result<(Metered, SeedFile), Failure> {
    let mut progress = Progress::new(label, party.meter());
    let result =
        privset_run::drive_metered(party, link, &mut |s| progress.status(s), stopwatch, prices);
    progress.finish();
    result
}

/// Writes `value` as pretty JSON (RESULT.json and its kin), ending in a newline.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Failure::other(e.to_string()))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))
}

/// Runs a bucketed job with a progress display per session, writes its RESULT.json
/// and then removes its state, unless the peer went away before confirming that it
/// holds every bucket (then the state is kept for a rerun to serve it, and said so).
pub fn run_job(job: &privset_run::buckets::runner::Job<'_>) -> Result<BucketedReport, Failure> {
    let (report, state) = privset_run::buckets::runner::run(job, &|party, transport, label| {
        let mut progress = Progress::new(label, party.meter());
        let result = privset_net::drive(party, transport, &mut |s| progress.status(s));
        progress.finish();
        result.map_err(Failure::from)
    })?;
    write_json(job.output, &report)?;
    if let Some(kept) = state.release() {
        eprintln!(
            "privset: finished, but the peer went away before confirming that it has every \
             bucket. This party's state stays in {} so that running this same command \
             again serves the buckets the peer lacks; remove it once the peer has its \
             result.",
            kept.display()
        );
    }
    Ok(report)
}
