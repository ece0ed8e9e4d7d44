//! Running one party end to end over a link, metered: what every front end does the
//! same way (drive, measure, report the cost, clean up the resume seed).

use privset_protocols::Party;

use crate::fail::Failure;
use crate::link::Link;
use crate::links::PartyLinks;
use crate::metrics::{self, Prices, Stopwatch};

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

impl Metered {
    /// The figures of a run that moved `counters` over a `transport` link, measured
    /// from `stopwatch` (started before the input was read).
    pub fn measure(
        transport: &'static str,
        counters: privset_net::ByteCounters,
        stopwatch: &Stopwatch,
        prices: Prices,
    ) -> Self {
        let (cpu_seconds, wall_seconds) = stopwatch.elapsed();
        Metered {
            transport,
            bytes_sent: counters.sent,
            bytes_received: counters.received,
            cpu_seconds,
            wall_seconds,
            peak_rss_mib: metrics::peak_rss_mib(),
            cost_cents: prices.cents(cpu_seconds, counters.sent),
            prices,
        }
    }
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

/// Drives `party` over `link` to the end, reporting each new status to `on_status`,
/// and meters the run from `stopwatch`.
pub fn drive_metered(
    party: &mut dyn Party,
    link: Link,
    on_status: &mut dyn FnMut(&str),
    stopwatch: &Stopwatch,
    prices: Prices,
) -> Result<(Metered, SeedFile), Failure> {
    let Link {
        mut transport,
        kind,
        seed_file,
        ..
    } = link;
    privset_net::drive(party, transport.as_mut(), on_status)?;
    let metered = Metered::measure(kind, transport.counters(), stopwatch, prices);
    Ok((metered, SeedFile(seed_file)))
}

/// Drives a participant of an n-party session over its `links` to the end, and meters
/// the run: bytes are summed over every link.
pub fn drive_links_metered(
    party: &mut dyn Party,
    links: PartyLinks,
    on_status: &mut dyn FnMut(&str),
    stopwatch: &Stopwatch,
    prices: Prices,
) -> Result<(Metered, SeedFile), Failure> {
    let PartyLinks {
        mut links,
        kind,
        seed_file,
        ..
    } = links;
    privset_net::drive_links(party, &mut links, on_status)?;
    let metered = Metered::measure(kind, links.counters(), stopwatch, prices);
    Ok((metered, SeedFile(seed_file)))
}
