//! Running one party end to end over a link, metered: what every protocol command does
//! the same way (connect, drive with a progress display, measure, clean up).

use clap::Args;
use privset_protocols::Party;

use crate::connect::Link;
use crate::fail::Failure;
use crate::metrics::{self, Prices, Stopwatch};
use crate::progress::Progress;

/// Prices of seed 000's cost model, as command-line flags.
#[derive(Args, Debug, Clone)]
pub struct PriceArgs {
    /// Price of a CPU-hour in dollars (seed 000 Table 1, GCP).
    #[arg(long, value_name = "USD", default_value_t = 0.01)]
    pub cpu_price: f64,
    /// Price of a GB (2^30 bytes) of egress in dollars (seed 000 Table 1, GCP).
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

/// What one party's run cost; flattened into every RESULT.json.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Metered {
    pub transport: &'static str,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub peak_rss_mib: f64,
    pub cost_cents: f64,
    pub prices: Prices,
}

/// The private seed file of an exchange-directory run: removed once the result is
/// written, so a crash before that can still resume.
pub struct SeedFile(Option<std::path::PathBuf>);

impl SeedFile {
    pub fn remove(self) {
        if let Some(path) = self.0 {
            let _ = std::fs::remove_file(path);
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
    let Link {
        mut transport,
        kind,
        seed_file,
        ..
    } = link;
    let progress = Progress::new(label);
    let result = privset_net::drive(party, transport.as_mut(), &mut |s| progress.status(s));
    progress.finish();
    result?;
    let (cpu_seconds, wall_seconds) = stopwatch.elapsed();
    let counters = transport.counters();
    let metered = Metered {
        transport: kind,
        bytes_sent: counters.sent,
        bytes_received: counters.received,
        cpu_seconds,
        wall_seconds,
        peak_rss_mib: metrics::peak_rss_mib(),
        cost_cents: prices.cents(cpu_seconds, counters.sent),
        prices,
    };
    Ok((metered, SeedFile(seed_file)))
}
