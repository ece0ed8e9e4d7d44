//! A bucketed set operation from Python (`privset.bucketed`, `privset.ray`): the CLI's
//! `--buckets` run (`privset_run::buckets::runner`) on a worker thread, its input streamed
//! from a file and its rows written to a file, so neither ever sits in memory whole.
//! The whole job runs in one call ([`BucketedPso::run`]), or step by step for a
//! distributed front end: [`BucketedPso::plan`] once, [`BucketedPso::run_bucket`] per
//! bucket in any process that sees the same state directory (wave after wave),
//! [`BucketedPso::finish`].

use std::path::PathBuf;
use std::sync::Arc;

use privset_net::Cancel;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::pi_sum::PiSumConfig;
use privset_protocols::pso::{PsoConfig, PsoRole};
use privset_run::buckets::operation::{self, JobConfig};
use privset_run::buckets::rendezvous;
use privset_run::buckets::runner::{
    self as job_runner, DriveFn, Job as BucketJob, Runner, TaskLink, Waves,
};
use privset_run::buckets::{self, job::JobDir};
use privset_run::keys::Keys;
use privset_run::link::LinkSpec;
use privset_run::report::BucketedReport;
use privset_run::{Failure, Prices};
use pyo3::prelude::*;

use crate::errors;
use crate::input::{duplicate_policy, keys};
use crate::link::{self, LinkArgs};
use crate::monitor::Monitor;
use crate::runner::{self, Job};

/// One party's bucketed job: its settings, checked when made.
#[pyclass(frozen, module = "privset._native")]
pub struct BucketedPso {
    spec: Arc<Spec>,
}

/// The job's operation and settings, owned.
enum Config {
    Pso(PsoConfig),
    PiSum(PiSumConfig),
}

impl Config {
    fn job(&self) -> JobConfig<'_> {
        match self {
            Config::Pso(c) => JobConfig::Pso(c),
            Config::PiSum(c) => JobConfig::PiSum(c),
        }
    }
}

struct Spec {
    config: Config,
    /// pi-sum: P1 plays the receiver, P2 the sender.
    role: PsoRole,
    input: PathBuf,
    keys: Keys,
    /// The value column (psi-card-sum's sender), if any.
    values: Vec<String>,
    policy: DuplicatePolicy,
    settings: String,
    link: LinkSpec,
    buckets: Option<u32>,
    concurrency: u32,
    state_dir: PathBuf,
    output_rows: Option<PathBuf>,
    prices: Prices,
}

impl Spec {
    /// Runs `step` on a worker thread (Ctrl-C and progress as every run), with the job
    /// borrowed from this spec and a drive function reporting to the monitor.
    fn on_worker<T: Send + 'static>(
        self: &Arc<Self>,
        py: Python<'_>,
        progress: Option<&Bound<'_, PyAny>>,
        step: impl FnOnce(&BucketJob<'_>, &DriveFn<'_>) -> Result<T, Failure> + Send + 'static,
    ) -> PyResult<T> {
        let cancel = Cancel::new();
        let job = self.config.job();
        let label = format!("{} {}", job.name(), job.role_name(self.role));
        let spec = self.clone();
        let job = Job {
            monitor: Arc::new(Monitor::new(&label, cancel.clone())),
            work: Box::new(move |monitor: &Arc<Monitor>| {
                let mut link = spec.link.clone();
                link.cancel = cancel;
                let job = BucketJob {
                    config: spec.config.job(),
                    role: spec.role,
                    input: &spec.input,
                    keys: &spec.keys,
                    values: &spec.values,
                    policy: spec.policy,
                    settings: spec.settings.clone(),
                    link: &link,
                    buckets: spec.buckets,
                    concurrency: spec.concurrency,
                    target: buckets::DEFAULT_TARGET,
                    state_dir: &spec.state_dir,
                    // The job's state is named after its input (Python has no result file).
                    output: &spec.input,
                    rows_path: spec.output_rows.as_deref(),
                    prices: spec.prices,
                };
                step(&job, &|party, transport, label| {
                    monitor.watch(party.meter());
                    monitor.set_status(label);
                    privset_net::drive(party, transport, &mut |s| {
                        monitor.set_status(&format!("{label}: {s}"))
                    })
                    .map_err(Failure::from)
                })
            }),
        };
        let mut outcomes = runner::run(py, vec![job], progress)?;
        Ok(outcomes.remove(0))
    }
}

/// RESULT.json's text; the job's state is removed once the text is made, unless the
/// peer's completion is unconfirmed (the result's `buckets.kept_state` then names it).
fn report_text((report, state): (BucketedReport, JobDir)) -> Result<String, Failure> {
    let text = serde_json::to_string_pretty(&report)
        .map_err(|e| Failure::other(format!("cannot encode the result: {e}")))?;
    state.release();
    Ok(text)
}

/// How the constructors' identifiers are read (the CLI's key flags).
struct IdSettings<'a> {
    id_columns: Vec<String>,
    normalize: Vec<String>,
    phone_region: Option<String>,
    hash_ids: Option<String>,
    duplicates: &'a str,
}

impl BucketedPso {
    /// The job of `config` for `role` on `input` with its value columns, its state
    /// (bucket count, concurrency, directory, rows file) and its link: what both
    /// constructors share.
    fn with(
        py: Python<'_>,
        config: Config,
        (role, input, values): (PsoRole, PathBuf, Vec<String>),
        ids: IdSettings<'_>,
        (buckets, concurrency, state_dir, output_rows): (
            Option<u32>,
            u32,
            PathBuf,
            Option<PathBuf>,
        ),
        (link, prices): (LinkArgs, (f64, f64)),
    ) -> PyResult<Self> {
        let lanes = privset_protocols::bucket_plan::MAX_LANES;
        if !(1..=lanes).contains(&concurrency) {
            return Err(errors::config(
                py,
                format!("concurrency must be 1 to {lanes}, not {concurrency}"),
            ));
        }
        let IdSettings {
            id_columns,
            normalize,
            phone_region,
            hash_ids,
            duplicates,
        } = ids;
        let policy = duplicate_policy(py, duplicates)?;
        // A changed setting makes the staged rows stale.
        let settings = format!(
            "{id_columns:?} {normalize:?} {phone_region:?} {hash_ids:?} {duplicates} \
             {values:?} {}",
            config.job().max_value()
        );
        Ok(Self {
            spec: Arc::new(Spec {
                keys: keys(py, id_columns, normalize, phone_region, hash_ids)?,
                values,
                config,
                role,
                input,
                policy,
                settings,
                link: link.spec(py, Cancel::new())?,
                buckets,
                concurrency,
                state_dir,
                output_rows,
                prices: link::prices(py, prices)?,
            }),
        })
    }
}

#[pymethods]
impl BucketedPso {
    /// Checks the settings (nothing is read or sent yet). Defaults are the CLI's.
    #[new]
    #[pyo3(signature = (operation, role, input, *, id_columns, normalize, phone_region, hash_ids,
        duplicates, group, mqrpmt, last_message, max_peer_items, buckets, state_dir, output_rows,
        concurrency,
        link, prices, value_column=None, value_bound=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        operation: &str,
        role: &str,
        input: PathBuf,
        id_columns: Vec<String>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
        duplicates: &str,
        group: Option<&str>,
        mqrpmt: Option<&str>,
        last_message: Option<&str>,
        max_peer_items: &Bound<'_, PyAny>,
        buckets: Option<u32>,
        state_dir: PathBuf,
        output_rows: Option<PathBuf>,
        concurrency: u32,
        link: LinkArgs,
        prices: (f64, f64),
        value_column: Option<String>,
        value_bound: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let value_bound = match value_bound {
            Some(v) => v,
            None => u64::from(u32::MAX).into_pyobject(py)?.into_any(),
        };
        let (role, config) = crate::pso::settings(
            py,
            operation,
            role,
            group,
            mqrpmt,
            last_message,
            &value_bound,
            max_peer_items,
        )?;
        operation::check_operation(config.operation).map_err(|e| errors::to_py(py, e))?;
        Self::with(
            py,
            Config::Pso(config),
            (role, input, value_column.into_iter().collect()),
            IdSettings {
                id_columns,
                normalize,
                phone_region,
                hash_ids,
                duplicates,
            },
            (buckets, concurrency, state_dir, output_rows),
            (link, prices),
        )
    }

    /// A pi-sum job (`role` "p1" or "p2"), checked as the CLI's `pi-sum --buckets`
    /// checks it (the ddh protocol, forward, paillier or elgamal). The other
    /// arguments are the constructor's and `PiSumParty`'s.
    #[staticmethod]
    #[pyo3(signature = (role, input, *, id_columns, normalize, phone_region, hash_ids,
        duplicates, value_columns, group, values_he, he_modulus_bits, dj_s, z_encoding,
        threshold, sum_of_squares, value_bound, sum_bound, max_peer_items, buckets, concurrency,
        state_dir, link, prices))]
    #[allow(clippy::too_many_arguments)]
    fn pi_sum(
        py: Python<'_>,
        role: &str,
        input: PathBuf,
        id_columns: Vec<String>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
        duplicates: &str,
        value_columns: Vec<String>,
        group: &str,
        values_he: &str,
        he_modulus_bits: &Bound<'_, PyAny>,
        dj_s: &Bound<'_, PyAny>,
        z_encoding: &str,
        threshold: Option<Bound<'_, PyAny>>,
        sum_of_squares: bool,
        value_bound: &Bound<'_, PyAny>,
        sum_bound: Option<Bound<'_, PyAny>>,
        max_peer_items: &Bound<'_, PyAny>,
        buckets: Option<u32>,
        concurrency: u32,
        state_dir: PathBuf,
        link: LinkArgs,
        prices: (f64, f64),
    ) -> PyResult<Self> {
        let role = match role {
            "p1" => PsoRole::Receiver,
            "p2" => PsoRole::Sender,
            other => {
                return Err(errors::config(
                    py,
                    format!("role must be 'p1' or 'p2', not {other:?}"),
                ));
            }
        };
        let config = crate::pi_sum::config(
            py,
            crate::pi_sum::Settings {
                protocol: "ddh",
                group,
                values_he,
                he_modulus_bits,
                dj_s,
                z_encoding,
                reverse: false,
                threshold: threshold.as_ref(),
                sum_of_squares,
                value_bound,
                sum_bound: sum_bound.as_ref(),
                max_peer_items,
            },
        )?;
        JobConfig::PiSum(&config)
            .check(role, value_columns.len())
            .map_err(|e| errors::to_py(py, e))?;
        Self::with(
            py,
            Config::PiSum(config),
            (role, input, value_columns),
            IdSettings {
                id_columns,
                normalize,
                phone_region,
                hash_ids,
                duplicates,
            },
            (buckets, concurrency, state_dir, None),
            (link, prices),
        )
    }

    /// The whole job in this process; returns RESULT.json's text.
    #[pyo3(signature = (progress=None))]
    fn run(&self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<String> {
        self.spec.on_worker(py, progress.as_ref(), |job, drive| {
            report_text(job_runner::run(job, drive)?)
        })
    }

    /// Stages the input and agrees on the plan over the exchange directory (or reads
    /// the recorded plan); returns the buckets (units) not yet finished, in waves: a
    /// wave's buckets may run at once, each wave once the earlier ones have finished.
    #[pyo3(signature = (progress=None))]
    fn plan(&self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<Vec<Vec<u32>>> {
        self.spec.on_worker(py, progress.as_ref(), |job, drive| {
            Runner::open(job)?.plan_over_exchange_dir(drive)
        })
    }

    /// Runs bucket `bucket` over its exchange subdirectory and records it (a retried
    /// attempt replays its messages from its private seed).
    #[pyo3(signature = (bucket, progress=None))]
    fn run_bucket(
        &self,
        py: Python<'_>,
        bucket: u32,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.spec
            .on_worker(py, progress.as_ref(), move |job, drive| {
                Runner::open_staged(job)?.bucket_over_exchange_dir(bucket, drive)
            })
    }

    /// Steps 2 and 3 over the job's TCP link (listen= / peer=) for a distributed front
    /// end: returns the round's id (hex) and its units in waves, each as `(unit, runs
    /// recorded so far)`; no units once both parties hold every unit.
    #[pyo3(signature = (progress=None))]
    fn plan_tcp(
        &self,
        py: Python<'_>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(String, Waves)> {
        let (round, waves) = self.spec.on_worker(py, progress.as_ref(), |job, drive| {
            Runner::open(job)?.plan_over_tcp(drive)
        })?;
        Ok((hex::encode(round), waves))
    }

    /// Runs unit `bucket` of round `round` as a task that meets the peer's task
    /// through `rendezvous`: the listening organisation's task (`ports` given) listens
    /// on the first free port of `ports` and registers `advertise:port` with `token`;
    /// the other connects. False when the unit did not run (the peer's task had
    /// finished it, or the round is aborted).
    #[pyo3(signature = (bucket, runs, round, rendezvous, *, ports=None, advertise=None, token=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_bucket_tcp(
        &self,
        py: Python<'_>,
        bucket: u32,
        runs: u32,
        round: &str,
        rendezvous: String,
        ports: Option<(u16, u16)>,
        advertise: Option<String>,
        token: Option<Vec<u8>>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let round = round_id(py, round)?;
        let link = match (ports, advertise, token) {
            (Some(ports), Some(advertise), Some(token)) => TaskLink::Listen {
                ports,
                advertise,
                rendezvous,
                token: token_bytes(py, &token)?,
            },
            (None, None, None) => TaskLink::Connect { rendezvous },
            _ => {
                return Err(errors::config(
                    py,
                    "a listening task takes ports, advertise and token together",
                ));
            }
        };
        self.spec
            .on_worker(py, progress.as_ref(), move |job, drive| {
                Runner::open_staged(job)?.bucket_over_tcp((bucket, runs), round, &link, drive)
            })
    }

    /// Aborts round `round` at the peer's rendezvous (the connecting driver's part).
    fn abort_round(&self, py: Python<'_>, round: &str, rendezvous: String) -> PyResult<()> {
        let round = round_id(py, round)?;
        self.spec.on_worker(py, None, move |job, _| {
            Runner::open_staged(job)?.abort_round(round, &rendezvous)
        })
    }

    /// Once every bucket is recorded: writes the rows and returns RESULT.json's text,
    /// the buckets' CPU and bytes added from their records.
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        self.spec.on_worker(py, None, |job, _| {
            report_text(Runner::open_staged(job)?.finish(true)?)
        })
    }
}

fn round_id(py: Python<'_>, round: &str) -> PyResult<[u8; 32]> {
    let mut id = [0u8; 32];
    hex::decode_to_slice(round, &mut id)
        .map_err(|_| errors::config(py, format!("{round:?} is not a round id (64 hex digits)")))?;
    Ok(id)
}

fn token_bytes(py: Python<'_>, token: &[u8]) -> PyResult<[u8; 32]> {
    token.try_into().map_err(|_| {
        errors::config(
            py,
            format!("a rendezvous token is 32 bytes, not {}", token.len()),
        )
    })
}

/// The rendezvous of a Ray job over mutual TLS (`privset.ray` with `listen=`), served
/// by the listening organisation's driver on its own threads until closed: its tasks
/// register where they listen, the other organisation's tasks ask
/// (`privset_run::buckets::rendezvous`).
#[pyclass(frozen, module = "privset._native")]
pub struct Rendezvous {
    server: std::sync::Mutex<Option<rendezvous::Server>>,
    port: u16,
}

#[pymethods]
impl Rendezvous {
    /// Listens on `bind` ("host:port") with the (ca, cert, key) files `tls`; only
    /// registrations showing `token` are taken, and a find waits up to `timeout` s.
    #[new]
    fn new(
        py: Python<'_>,
        bind: String,
        tls: (PathBuf, PathBuf, PathBuf),
        token: Vec<u8>,
        timeout: f64,
    ) -> PyResult<Self> {
        let (ca, cert, key) = tls;
        let files = privset_net::TlsFiles { ca, cert, key };
        let timeout = link::seconds(py, "timeout", timeout)?;
        let token = token_bytes(py, &token)?;
        let server = py
            .detach(|| rendezvous::Server::start(&bind, &files, token, timeout))
            .map_err(|e| errors::to_py(py, e))?;
        Ok(Self {
            port: server.local_addr().port(),
            server: std::sync::Mutex::new(Some(server)),
        })
    }

    /// The port it listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.port
    }

    /// Aborts round `round` (this driver's own part).
    fn abort(&self, py: Python<'_>, round: &str) -> PyResult<()> {
        let round = round_id(py, round)?;
        if let Some(server) = self.lock().as_ref() {
            server.abort(&round);
        }
        Ok(())
    }

    /// True once round `round` is aborted, by either driver.
    fn aborted(&self, py: Python<'_>, round: &str) -> PyResult<bool> {
        let round = round_id(py, round)?;
        Ok(self.lock().as_ref().is_some_and(|s| s.aborted(&round)))
    }

    /// Stops serving (every connection cut off); the same when garbage-collected.
    fn close(&self, py: Python<'_>) {
        let server = self.lock().take();
        py.detach(|| drop(server));
    }
}

impl Rendezvous {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<rendezvous::Server>> {
        self.server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
