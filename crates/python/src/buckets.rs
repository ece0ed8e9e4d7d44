//! A bucketed set operation from Python (`privset.bucketed.psi`): the CLI's `--buckets`
//! run (`privset_run::buckets::pso`) on a worker thread, its input streamed from a file
//! and its rows written to a file, so neither ever sits in memory whole. Progress comes
//! back through the same callback as every other run.

use std::path::PathBuf;
use std::sync::Arc;

use privset_net::Cancel;
use privset_protocols::input::DuplicatePolicy;
use privset_run::Failure;
use privset_run::buckets::{self, pso::PsoJob};
use pyo3::prelude::*;

use crate::errors;
use crate::input::{duplicate_policy, keys};
use crate::link::{self, LinkArgs};
use crate::monitor::Monitor;
use crate::runner::{self, Job};

/// Runs one party of a bucketed set operation to the end; returns RESULT.json's text.
#[pyfunction]
#[pyo3(signature = (operation, role, input, *, id_columns, normalize, phone_region, hash_ids,
    duplicates, group, mqrpmt, last_message, max_peer_items, buckets, state_dir, output_rows,
    link, prices, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_bucketed(
    py: Python<'_>,
    operation: &str,
    role: &str,
    input: PathBuf,
    id_columns: Vec<String>,
    normalize: Vec<String>,
    phone_region: Option<String>,
    hash_ids: Option<String>,
    duplicates: &str,
    group: &str,
    mqrpmt: &str,
    last_message: &str,
    max_peer_items: &Bound<'_, PyAny>,
    buckets: Option<u32>,
    state_dir: PathBuf,
    output_rows: Option<PathBuf>,
    link: LinkArgs,
    prices: (f64, f64),
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let value_bound = (u64::from(u32::MAX)).into_pyobject(py)?.into_any();
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
    buckets::pso::check_operation(config.operation).map_err(|e| errors::to_py(py, e))?;
    let policy: DuplicatePolicy = duplicate_policy(py, duplicates)?;
    let settings =
        format!("{id_columns:?} {normalize:?} {phone_region:?} {hash_ids:?} {duplicates}");
    let keys = keys(py, id_columns, normalize, phone_region, hash_ids)?;
    let prices = link::prices(py, prices)?;
    let cancel = Cancel::new();
    let spec = link.spec(py, cancel.clone())?;
    let label = format!("{} {}", config.operation.name(), role.name());
    let job = Job {
        monitor: Arc::new(Monitor::new(&label, cancel)),
        work: Box::new(move |monitor: &Arc<Monitor>| {
            let job = PsoJob {
                config: &config,
                role,
                input: &input,
                keys: &keys,
                values: &[],
                policy,
                settings,
                link: &spec,
                buckets,
                target: buckets::DEFAULT_TARGET,
                state_dir: &state_dir,
                // The job's state is named after its input (Python has no result file).
                output: &input,
                rows_path: output_rows.as_deref(),
                prices,
            };
            let (report, state) = buckets::pso::run(&job, &mut |party, transport, label| {
                monitor.watch(party.meter());
                monitor.set_status(label);
                privset_net::drive(party, transport, &mut |s| {
                    monitor.set_status(&format!("{label}: {s}"))
                })
                .map_err(Failure::from)
            })?;
            let text = serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::other(format!("cannot encode the result: {e}")))?;
            state.remove();
            Ok(text)
        }),
    };
    let mut outcomes = runner::run(py, vec![job], progress.as_ref())?;
    Ok(outcomes.remove(0))
}
