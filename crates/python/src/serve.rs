//! Serving sessions from Python: a long-lived party (APSI's judge or server, the
//! unbalanced-PSI server) on the shared Rust endpoint (`privset_run::serve`), the
//! same way `privset <protocol> serve` runs it, with the GIL released and Ctrl-C
//! ending the serve.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use privset_net::{Cancel, TlsFiles};
use privset_run::allow_clients::AllowList;
use privset_run::{Failure, Reporter, ServeOptions, ServeSummary, Service, endpoint};
use pyo3::prelude::*;

use crate::errors::{self, IntoPy};
use crate::link;
use crate::monitor::Monitor;
use crate::runner::{self, Job};

/// The keyword arguments of a `serve` method.
pub(crate) struct ServeArgs {
    pub listen: String,
    pub tls: Option<(PathBuf, PathBuf, PathBuf)>,
    pub insecure_no_tls: bool,
    pub max_sessions: Option<u64>,
    pub max_concurrent: usize,
    pub timeout: f64,
    /// Seconds a connection has for its handshake and hello before it is dropped.
    pub handshake_timeout: f64,
    /// The allowed-clients file (`--allow-clients`).
    pub allow_clients: Option<PathBuf>,
}

/// Serves `service` as `args` say until `max_sessions` have ended (or Ctrl-C).
/// Returns the session log lines (JSON), in the order the sessions ended.
pub(crate) fn serve(
    py: Python<'_>,
    role: &str,
    service: Arc<dyn Service>,
    args: ServeArgs,
) -> PyResult<Vec<String>> {
    let timeout = link::seconds(py, "timeout", args.timeout)?;
    let handshake_timeout = link::seconds(py, "handshake_timeout", args.handshake_timeout)?;
    let tls = match (args.tls, args.insecure_no_tls) {
        (Some((ca, cert, key)), false) => Some(TlsFiles { ca, cert, key }),
        (None, true) => None,
        (Some(_), true) => {
            return Err(errors::config(
                py,
                "insecure_no_tls=True cannot be combined with tls=",
            ));
        }
        (None, false) => {
            return Err(errors::config(
                py,
                "serving uses mutual TLS: pass tls=privset.TlsFiles(ca, cert, key), or insecure_no_tls=True on a trusted link",
            ));
        }
    };
    if args.max_concurrent == 0 {
        return Err(errors::config(py, "max_concurrent must be at least 1"));
    }
    let allow_clients = match &args.allow_clients {
        Some(_) if tls.is_none() => {
            return Err(errors::config(
                py,
                "allow_clients= needs TLS: a plaintext client has no certificate to check",
            ));
        }
        Some(path) => Some(Arc::new(AllowList::read(path).py_err(py)?)),
        None => None,
    };
    let cancel = Cancel::new();
    let opts = ServeOptions {
        tls,
        max_sessions: args.max_sessions,
        max_concurrent: args.max_concurrent,
        timeout,
        handshake_timeout,
        max_pending: endpoint::DEFAULT_MAX_PENDING,
        max_pending_per_address: endpoint::DEFAULT_MAX_PENDING_PER_ADDRESS,
        allow_clients,
        cancel: cancel.clone(),
    };
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let reporter = Arc::new(Reporter {
        on_session: Box::new(move |session| {
            if let Ok(line) = serde_json::to_string(session) {
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        }),
        on_refused: Box::new(|peer, e| {
            eprintln!("privset: connection from {peer} refused: {e}");
        }),
    });
    let listen = args.listen;
    let job = Job {
        monitor: Arc::new(Monitor::new(role, cancel)),
        work: Box::new(move |monitor: &Arc<Monitor>| {
            let listener = std::net::TcpListener::bind(&listen)
                .map_err(|e| Failure::other(format!("cannot listen on {listen}: {e}")))?;
            let opts = ServeOptions {
                cancel: monitor.cancel.clone(),
                ..opts
            };
            privset_run::serve(&listener, &opts, service, reporter)
        }) as runner::Work<ServeSummary>,
    };
    runner::run(py, vec![job], None)?;
    let lines = std::mem::take(&mut *lines.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(lines)
}
