//! What a run cost: CPU, wall time, peak memory, bytes, and money under the cost model
//! of Ion et al. 2020 (Sec. 2.5, Table 1).

use std::time::Instant;

/// Prices of Ion et al. 2020, Table 1. Defaults are GCP's: $0.01 per CPU-hour and $0.08 per GB
/// of egress. As in the paper's own arithmetic (Table 2: 8.105 MB cost 0.06332 cents),
/// a GB is 2^30 bytes and an MB 2^20 bytes.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Prices {
    pub cpu_dollars_per_hour: f64,
    pub network_dollars_per_gb: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Self {
            cpu_dollars_per_hour: 0.01,
            network_dollars_per_gb: 0.08,
        }
    }
}

pub const GB: f64 = (1u64 << 30) as f64;
pub const MB: f64 = (1u64 << 20) as f64;

impl Prices {
    /// Cost in cents of `cpu_seconds` of computation and `bytes` on the network.
    pub fn cents(&self, cpu_seconds: f64, bytes: u64) -> f64 {
        100.0
            * (cpu_seconds / 3600.0 * self.cpu_dollars_per_hour
                + bytes as f64 / GB * self.network_dollars_per_gb)
    }
}

/// CPU seconds (user + system) this process has used so far, all threads.
pub fn process_cpu_seconds() -> f64 {
    let usage = rusage();
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Peak resident memory of this process so far, in MiB: the kernel's high-water mark
/// of this program's memory (`VmHWM`). `getrusage`'s `ru_maxrss` is not used where
/// `VmHWM` exists: Linux carries it over from the parent across fork and exec, so a
/// process started by a large one (a benchmark driver holding its inputs) would
/// report the parent's size.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 1024.0)
        })
        .unwrap_or_else(|| rusage().ru_maxrss as f64 / 1024.0)
}

fn rusage() -> libc::rusage {
    // SAFETY-free alternative is not available in std; getrusage only writes into the
    // zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage
}

/// Measures one run: wall clock and process CPU from `start` to `finish`.
pub struct Stopwatch {
    wall: Instant,
    cpu: f64,
}

impl Stopwatch {
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: process_cpu_seconds(),
        }
    }
    /// (cpu seconds, wall seconds) since start.
    pub fn elapsed(&self) -> (f64, f64) {
        (
            process_cpu_seconds() - self.cpu,
            self.wall.elapsed().as_secs_f64(),
        )
    }
}
