//! The `run(...)` keyword arguments (collected into a dict by the Python layer) as the
//! shared `LinkSpec`, with errors worded for Python callers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use privset_net::{Cancel, TlsFiles};
use privset_run::Prices;
use privset_run::link::{self, Endpoint, LinkSpec};
use pyo3::prelude::*;

use crate::errors;

/// How to reach the peer, as the Python layer passes it.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct LinkArgs {
    listen: Option<String>,
    peer: Option<String>,
    exchange_dir: Option<PathBuf>,
    /// (ca, cert, key) PEM files.
    tls: Option<(PathBuf, PathBuf, PathBuf)>,
    insecure_no_tls: bool,
    server_name: Option<String>,
    /// The name the peer's certificate must hold (`--tls-peer-name`).
    peer_name: Option<String>,
    /// Seconds to wait for the peer (connection, or any one message).
    timeout: f64,
    /// Exchange directory: seconds between looks for the peer's next file.
    poll_interval: f64,
    /// Exchange directory: where the private resume seed is kept.
    state_dir: Option<PathBuf>,
}

pub(crate) fn seconds(py: Python<'_>, name: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            errors::config(
                py,
                format!("{name} must be a positive number of seconds, not {value}"),
            )
        })
}

impl LinkArgs {
    /// The link to open, stopped by `cancel`.
    pub fn spec(&self, py: Python<'_>, cancel: Cancel) -> PyResult<LinkSpec> {
        let timeout = seconds(py, "timeout", self.timeout)?;
        let endpoint = match (&self.listen, &self.peer, &self.exchange_dir) {
            (Some(addr), None, None) => Endpoint::Listen(addr.clone()),
            (None, Some(addr), None) => Endpoint::Peer(addr.clone()),
            (None, None, Some(dir)) => Endpoint::ExchangeDir {
                dir: dir.clone(),
                state_dir: self
                    .state_dir
                    .clone()
                    .unwrap_or_else(|| link::default_state_dir(Path::new(""))),
                poll_interval: seconds(py, "poll_interval", self.poll_interval)?,
            },
            _ => {
                return Err(errors::config(
                    py,
                    "give exactly one of listen=, peer= or exchange_dir=",
                ));
            }
        };
        let tcp = self.exchange_dir.is_none();
        let tls = match (&self.tls, self.insecure_no_tls) {
            (_, true) if !tcp => {
                return Err(errors::config(
                    py,
                    "insecure_no_tls= is for listen= / peer= links; an exchange directory has no TLS \
                     (its files are sealed for the peer; tls= there signs this party's link key)",
                ));
            }
            (None, false) if tcp => {
                return Err(errors::config(
                    py,
                    "TCP links use mutual TLS: pass tls=privset.TlsFiles(ca, cert, key) (make throwaway ones with \
                     privset.generate_certs(dir, names)), or insecure_no_tls=True on a trusted link",
                ));
            }
            (Some(_), true) => {
                return Err(errors::config(
                    py,
                    "insecure_no_tls=True cannot be combined with tls=",
                ));
            }
            // Over an exchange directory too: the files sign the link keys.
            (Some((ca, cert, key)), false) => Some(TlsFiles {
                ca: ca.clone(),
                cert: cert.clone(),
                key: key.clone(),
            }),
            (None, _) => None,
        };
        Ok(LinkSpec {
            endpoint,
            tls,
            timeout,
            server_name: self.server_name.clone(),
            peer_name: self.peer_name.clone(),
            cancel,
        })
    }
}

/// Seed 000's cost model prices from `(cpu $/hour, network $/GB)`.
pub(crate) fn prices(py: Python<'_>, (cpu, network): (f64, f64)) -> PyResult<Prices> {
    if !(cpu.is_finite() && cpu >= 0.0 && network.is_finite() && network >= 0.0) {
        return Err(errors::config(
            py,
            format!("prices must be non-negative numbers, not ({cpu}, {network})"),
        ));
    }
    Ok(Prices {
        cpu_dollars_per_hour: cpu,
        network_dollars_per_gb: network,
    })
}
