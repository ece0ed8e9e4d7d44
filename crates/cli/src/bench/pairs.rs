//! Running the two parties of a benchmark as separate processes over mutual TLS on
//! loopback, and reading the figures their RESULT.json files give.

use std::path::Path;
use std::process::Command;

use crate::demo::free_port;
use crate::fail::Failure;
use crate::metrics::{MB, Prices};

/// A JSON file a benchmarked process wrote (its RESULT.json or build report).
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(&std::fs::read_to_string(path)?).map_err(|e| Failure::other(e.to_string()))
}

/// A number field of a report, NaN when absent (printed as such, never invented).
pub(crate) fn number(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

pub struct PartyResult {
    pub cpu: f64,
    pub wall: f64,
    pub sent: u64,
    pub rss: f64,
    pub cardinality: Option<u64>,
    /// pi-sum: the first column's sum; set operations: `sum`.
    pub sum: Option<u128>,
    /// Rows written (set operations with --output-rows).
    pub rows: Option<u64>,
}

/// The measured columns of a pair's row: CPU of each party, their sum and the wall
/// time; MB each way and in total; peak RSS of each; cost in cents.
pub fn pair_figures(a: &PartyResult, b: &PartyResult, prices: &Prices) -> String {
    let cpu = a.cpu + b.cpu;
    let total = a.sent + b.sent;
    format!(
        "{:>8.2} {:>8.2} {:>8.2} {:>7.2} | {:>8.3} {:>8.3} {:>8.3} | {:>7.0} {:>7.0} | {:>8.5}",
        a.cpu,
        b.cpu,
        cpu,
        a.wall.max(b.wall),
        a.sent as f64 / MB,
        b.sent as f64 / MB,
        total as f64 / MB,
        a.rss,
        b.rss,
        prices.cents(cpu, total)
    )
}

/// One benchmark pair: which subcommand, the two role names (the first listens and
/// reads `p1.csv`, the second connects and reads `p2.csv`), and whether the second
/// holds the value column.
pub struct PairSpec<'a> {
    pub command: &'a str,
    pub roles: [&'a str; 2],
    pub second_has_values: bool,
    /// Extra environment for both processes (e.g. `RAYON_NUM_THREADS`).
    pub env: &'a [(String, String)],
}

/// Runs both parties as separate processes over mutual TLS on loopback and reads their
/// RESULT.json files.
pub fn run_pair(
    exe: &Path,
    spec: &PairSpec<'_>,
    data: &Path,
    certs: &Path,
    extra: &[String],
) -> Result<(PartyResult, PartyResult), Failure> {
    run_pair_split(exe, spec, data, certs, extra, extra)
}

/// [`run_pair`] with different extra flags for each party.
pub fn run_pair_split(
    exe: &Path,
    spec: &PairSpec<'_>,
    data: &Path,
    certs: &Path,
    first_extra: &[String],
    second_extra: &[String],
) -> Result<(PartyResult, PartyResult), Failure> {
    let port = free_port()?;
    let spawn = |role: &str, file: &str, link: [&str; 2], values: bool, extra: &[String]| {
        let mut c = Command::new(exe);
        c.args([spec.command, "--role", role, link[0], link[1]])
            .arg("--input")
            .arg(data.join(file))
            .args(["--id-column", "id"])
            .arg("--tls-ca")
            .arg(certs.join("ca.pem"))
            .arg("--tls-cert")
            .arg(certs.join(format!("{role}.pem")))
            .arg("--tls-key")
            .arg(certs.join(format!("{role}.key")))
            .arg("--output")
            .arg(data.join(format!("{role}-result.json")))
            .args(extra)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stderr(std::process::Stdio::null());
        if values {
            c.args(["--value-column", "value"]);
        }
        c.spawn()
            .map_err(|e| Failure::other(format!("cannot start {}: {e}", exe.display())))
    };
    let addr = format!("127.0.0.1:{port}");
    let [first, second] = spec.roles;
    let mut a = spawn(first, "p1.csv", ["--listen", &addr], false, first_extra)?;
    let mut b = spawn(
        second,
        "p2.csv",
        ["--peer", &addr],
        spec.second_has_values,
        second_extra,
    )?;
    let sb = b.wait()?;
    let sa = a.wait()?;
    if !sa.success() || !sb.success() {
        return Err(Failure::other(format!(
            "a benchmark party failed ({first}: {sa}, {second}: {sb}); rerun the pair by hand with the flags {first_extra:?} to see why"
        )));
    }
    Ok((
        read_result(&data.join(format!("{first}-result.json")))?,
        read_result(&data.join(format!("{second}-result.json")))?,
    ))
}

fn read_result(path: &Path) -> Result<PartyResult, Failure> {
    let text = std::fs::read_to_string(path)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Failure::other(e.to_string()))?;
    Ok(PartyResult {
        cpu: v["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        wall: v["wall_seconds"].as_f64().unwrap_or(f64::NAN),
        sent: v["bytes_sent"].as_u64().unwrap_or(0),
        rss: v["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
        cardinality: v["cardinality"].as_u64(),
        sum: v["sums"]
            .get(0)
            .or(v.get("sum"))
            .and_then(|s| s.as_u64())
            .map(|s| s as u128),
        rows: v["rows"].as_u64(),
    })
}
