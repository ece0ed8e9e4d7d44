//! Running one party end to end from the command line: the shared metered run of
//! `privset-run`, with a progress display and the cost model's prices as flags.

use clap::Args;
use privset_protocols::Party;
pub use privset_run::Metered;
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
