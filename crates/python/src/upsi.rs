//! Unbalanced labeled PSI (Cong et al. 2021) for Python: the server's database
//! (`UpsiDatabase`, the CLI's database file), the rows that build or change it
//! (`UpsiRows`: identifiers made by the CLI's keys, labels encoded by
//! `privset_run::upsi::encode_label` in the same layouts, so Python- and CLI-built
//! databases are one format), and the two parties (`UpsiParty`) on the same state machines, endpoint and
//! reports as `privset upsi serve` / `privset upsi query`.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use privset_crypto::rng::SessionRng;
use privset_protocols::upsi::{self as protocol, Database};
use privset_protocols::{Engine, Party};
use privset_run::keys::Keys;
use privset_run::upsi::{
    self as files, QueryReport, Rows, ServerReport, SharedDatabase, UpsiService,
};
use privset_run::{Failure, Metered, Service};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString};

use crate::errors::{self, IntoPy};
use crate::input::{self, Input, InputData};
use crate::link::LinkArgs;
use crate::play::{self, Paired, Playable};
use crate::serve::{self, ServeArgs};

/// Rows for a database: identifiers and, labeled, each one's label (encoded, not yet
/// padded to the database's label length).
#[pyclass(frozen, module = "privset._native")]
pub struct UpsiRows {
    rows: Rows,
}

/// A label cell's bytes: str as UTF-8, bytes as they are, anything else by `str()`
/// (as the cell would read from a CSV file).
fn label_cell(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    Ok(obj.str()?.to_cow()?.as_bytes().to_vec())
}

#[pymethods]
impl UpsiRows {
    /// In-memory rows: the identifier columns as `(name, cells)` and, labeled, each
    /// row's label cells (one list per row).
    #[staticmethod]
    #[pyo3(signature = (ids, labels, normalize, phone_region, hash_ids))]
    fn from_rows(
        py: Python<'_>,
        ids: Vec<(String, Vec<Bound<'_, PyAny>>)>,
        labels: Option<Vec<Vec<Bound<'_, PyAny>>>>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
    ) -> PyResult<Self> {
        let (names, cells): (Vec<String>, Vec<Vec<Bound<'_, PyAny>>>) = ids.into_iter().unzip();
        let keys = input::keys(py, names, normalize, phone_region, hash_ids)?;
        let made = input::rows_from_python(&cells, &keys, &[], None).py_err(py)?;
        let ids: Vec<Vec<u8>> = made.into_iter().map(|r| r.id).collect();
        let rows = match labels {
            None => Rows::unlabeled(ids, &keys),
            Some(labels) => {
                if labels.len() != ids.len() {
                    return Err(errors::config(
                        py,
                        format!("{} labels for {} items", labels.len(), ids.len()),
                    ));
                }
                let cells = labels
                    .iter()
                    .map(|row| row.iter().map(label_cell).collect::<PyResult<Vec<_>>>())
                    .collect::<PyResult<Vec<_>>>()?;
                Rows::labeled(ids, &cells, &keys).py_err(py)?
            }
        };
        Ok(Self { rows })
    }

    /// Rows of a file (CSV, compressed CSV, Parquet, Arrow IPC), read as `privset upsi
    /// db build` reads them.
    #[staticmethod]
    #[pyo3(signature = (path, id_columns, label_columns, normalize, phone_region, hash_ids))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        id_columns: Vec<String>,
        label_columns: Vec<String>,
        normalize: Vec<String>,
        phone_region: Option<String>,
        hash_ids: Option<String>,
    ) -> PyResult<Self> {
        let keys: Keys = input::keys(py, id_columns, normalize, phone_region, hash_ids)?;
        let rows = py
            .detach(|| files::read_rows(&path, &keys, &label_columns))
            .py_err(py)?;
        Ok(Self { rows })
    }

    fn __len__(&self) -> usize {
        self.rows.ids.len()
    }
}

/// The server's database (the CLI's database file), shared with the servers made from
/// it: a change is seen by the sessions that start after it.
#[pyclass(frozen, module = "privset._native")]
pub struct UpsiDatabase {
    current: SharedDatabase,
}

impl UpsiDatabase {
    fn new(db: Database) -> Self {
        Self {
            current: Arc::new(RwLock::new(Arc::new(db))),
        }
    }

    fn get(&self) -> Arc<Database> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the database with `change` (then prepares it), the GIL released.
    /// Sessions in flight keep the database they started with: when one holds it,
    /// the change is made on a copy.
    fn edit<T: Send>(
        &self,
        py: Python<'_>,
        change: impl FnOnce(&mut Database) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let current = self.current.clone();
        py.detach(move || {
            let mut slot = current.write().unwrap_or_else(|p| p.into_inner());
            let mut copy = None;
            let db = match Arc::get_mut(&mut slot) {
                Some(db) => db,
                None => copy.insert(Database::clone(&slot)),
            };
            let out = change(db)?;
            db.prepare()?;
            if let Some(copy) = copy {
                *slot = Arc::new(copy);
            }
            Ok(out)
        })
        .py_err(py)
    }
}

#[pymethods]
impl UpsiDatabase {
    /// A new database from `rows` (every core, the GIL released): the preset by name,
    /// or chosen for `client_items` and the number of rows; labels of `label_bytes`
    /// (default: the longest label); the OPRF in the group named `oprf`.
    #[staticmethod]
    #[pyo3(signature = (rows, preset, client_items, label_bytes, cache_mb, oprf))]
    fn build(
        py: Python<'_>,
        rows: &UpsiRows,
        preset: Option<String>,
        client_items: usize,
        label_bytes: Option<usize>,
        cache_mb: usize,
        oprf: &str,
    ) -> PyResult<Self> {
        let oprf = oprf_named(py, oprf)?;
        let rows = rows.rows.clone();
        let db = py
            .detach(|| {
                let spec = files::DatabaseSpec {
                    preset: preset.as_deref(),
                    client_items,
                    label_bytes,
                    oprf,
                };
                files::build_database(rows, &spec, files::mib(cache_mb), Default::default())
            })
            .py_err(py)?;
        Ok(Self::new(db))
    }

    /// Reads a database file written by `save` or `privset upsi db build`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf, cache_mb: usize) -> PyResult<Self> {
        let db = py
            .detach(|| {
                files::serving(files::read_database(&path)?, files::mib(cache_mb))
                    .map_err(|f| f.in_file(&path))
            })
            .py_err(py)?;
        Ok(Self::new(db))
    }

    /// Writes the database file (atomically, mode 0600: it holds the OPRF key).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let db = self.get();
        py.detach(|| files::write_database(&path, &db)).py_err(py)
    }

    /// Inserts rows (or replaces their labels), as `privset upsi db add`.
    fn insert(&self, py: Python<'_>, rows: &UpsiRows) -> PyResult<()> {
        let labeled = self.get().label_len() > 0;
        if labeled && rows.rows.labels.is_empty() && !rows.rows.ids.is_empty() {
            return Err(errors::config(
                py,
                "this database is labeled: give labels= (or label_columns=) for the items added",
            ));
        }
        let rows = rows.rows.clone();
        self.edit(py, move |db| {
            files::check_rows(db, &rows)?;
            let Rows { ids, labels, .. } = rows.into_layout(db.label_layout(), db.label_len())?;
            db.insert(&ids, &labels, &mut SessionRng::from_os())?;
            Ok(())
        })
    }

    /// Removes the rows' items, as `privset upsi db remove`; returns how many were
    /// present.
    fn remove(&self, py: Python<'_>, rows: &UpsiRows) -> PyResult<usize> {
        let rows = rows.rows.clone();
        self.edit(py, move |db| {
            files::check_rows(db, &rows)?;
            Ok(db.remove(&rows.ids))
        })
    }

    /// Replaces the OPRF key, as `privset upsi db rotate-key`, in the group named
    /// `oprf` (default: the database's own).
    #[pyo3(signature = (oprf=None))]
    fn rotate_key(&self, py: Python<'_>, oprf: Option<&str>) -> PyResult<()> {
        let oprf = oprf.map(|name| oprf_named(py, name)).transpose()?;
        self.edit(py, move |db| {
            let oprf = oprf.unwrap_or(db.oprf());
            Ok(db.rotate_key_to(oprf, &mut SessionRng::from_os())?)
        })
    }

    /// Moves the database to a built-in preset of the same data layout, as `privset
    /// upsi db set-preset`.
    fn set_preset(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.edit(py, move |db| {
            Ok(db.set_preset(privset_protocols::upsi::Preset::named(&name)?)?)
        })
    }

    /// What `privset upsi db info` prints, as JSON.
    fn info(&self) -> String {
        files::info(&self.get()).to_string()
    }

    #[getter]
    fn preset(&self) -> String {
        self.get().preset().name.clone()
    }

    #[getter]
    fn oprf(&self) -> &'static str {
        self.get().oprf().name()
    }

    #[getter]
    fn label_bytes(&self) -> usize {
        self.get().label_len()
    }

    #[getter]
    fn bundle_counts(&self) -> Vec<u32> {
        self.get().bundle_counts()
    }

    fn __len__(&self) -> usize {
        self.get().len()
    }
}

/// One party of unbalanced PSI with its settings, ready to run any number of times.
enum Spec {
    Client { input: Arc<InputData> },
    Server { service: Arc<UpsiService> },
}

enum Machine {
    Client(Box<Engine<protocol::Client>>),
    Server(Box<Engine<protocol::Server>>),
}

/// A matched item and its label's cells (`None` from an unlabeled database).
type Match = (Vec<u8>, Option<Vec<Vec<u8>>>);

/// A finished run: the report (JSON) and, for the client, the matches.
pub(crate) struct Outcome {
    json: String,
    matches: Vec<Match>,
}

fn json(report: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string(report).map_err(|e| Failure::other(e.to_string()))
}

impl Playable for Spec {
    type Machine = Machine;
    type Outcome = Outcome;

    fn label(&self) -> String {
        self.names().0.to_string()
    }

    fn machine(&self, seed: [u8; 32]) -> Result<Machine, Failure> {
        Ok(match self {
            Spec::Client { input } => {
                let mut client = protocol::Client::new(input.dataset.ids.clone(), seed)?;
                client.agree(input.agreed.clone())?;
                Machine::Client(Box::new(client))
            }
            Spec::Server { service } => {
                Machine::Server(Box::new(protocol::Server::new(service.database(), seed)?))
            }
        })
    }

    fn party(machine: &mut Machine) -> &mut dyn Party {
        match machine {
            Machine::Client(m) => m.as_mut(),
            Machine::Server(m) => m.as_mut(),
        }
    }

    fn outcome(&self, machine: Machine, run: Metered) -> Result<Outcome, Failure> {
        match (self, machine) {
            (Spec::Client { input }, Machine::Client(m)) => {
                let out = m.into_output().ok_or_else(play::no_output)?;
                let items = &input.dataset.ids;
                let matches: Vec<_> = items
                    .iter()
                    .zip(&out.matches)
                    .filter_map(|(item, m)| {
                        let label = m.as_ref()?;
                        let cells = (out.label_len > 0)
                            .then(|| files::label_cells(label, out.label_layout));
                        Some((item.clone(), cells))
                    })
                    .collect();
                let report = QueryReport::new(&out, items.len(), Some(matches.len() as u64), run);
                Ok(Outcome {
                    json: json(&report)?,
                    matches,
                })
            }
            (Spec::Server { service }, Machine::Server(m)) => {
                let out = m.into_output().ok_or_else(play::no_output)?;
                let db = service.database();
                let report = ServerReport {
                    protocol: "upsi-server",
                    preset: db.preset().name.clone(),
                    items: db.len() as u64,
                    client_items: out.client_items,
                    run,
                };
                Ok(Outcome {
                    json: json(&report)?,
                    matches: Vec::new(),
                })
            }
            _ => Err(Failure::other("an unbalanced-PSI machine of another role")),
        }
    }
}

impl Paired for Spec {
    fn names(&self) -> (&'static str, &'static str) {
        match self {
            Spec::Client { .. } => ("client", "server"),
            Spec::Server { .. } => ("server", "client"),
        }
    }
}

/// What Python gets from a run: `(json, matches)`, the matches as `(row, item,
/// label cells or None)` (row: the caller's 0-based row of an in-memory input).
type PyOutcome<'py> = (String, Bound<'py, PyList>);

/// One party of unbalanced PSI: the client (a small set) or the server (a database).
#[pyclass(frozen, module = "privset._native")]
pub struct UpsiParty {
    spec: Arc<Spec>,
}

impl UpsiParty {
    fn to_python<'py>(&self, py: Python<'py>, outcome: Outcome) -> PyResult<PyOutcome<'py>> {
        let list = PyList::empty(py);
        if let Spec::Client { input } = &*self.spec {
            for (item, cells) in &outcome.matches {
                let cells = cells
                    .as_ref()
                    .map(|c| PyList::new(py, c.iter().map(|x| PyBytes::new(py, x))))
                    .transpose()?;
                list.append((input.row_of(item), PyBytes::new(py, item), cells))?;
            }
        }
        Ok((outcome.json, list))
    }
}

#[pymethods]
impl UpsiParty {
    /// The client: asks which of `input`'s items the server holds, and their labels.
    #[staticmethod]
    fn client(py: Python<'_>, input: &Input) -> PyResult<Self> {
        files::check_client_items(input.data.dataset.ids.len()).py_err(py)?;
        Ok(Self {
            spec: Arc::new(Spec::Client {
                input: input.data.clone(),
            }),
        })
    }

    /// The server of a database held in memory: each session gets the database as it
    /// is when the session starts.
    #[staticmethod]
    fn server(database: &UpsiDatabase) -> Self {
        Self {
            spec: Arc::new(Spec::Server {
                service: Arc::new(UpsiService::shared(database.current.clone())),
            }),
        }
    }

    /// The server of a database file, looked at every `reload_interval` seconds and
    /// reloaded when it changes (sessions in flight keep the database they started
    /// with), as `privset upsi serve`; the watch ends with the party.
    #[staticmethod]
    fn server_of_file(
        py: Python<'_>,
        path: PathBuf,
        reload_interval: f64,
        cache_mb: usize,
    ) -> PyResult<Self> {
        let period = crate::link::seconds(py, "reload_interval", reload_interval)?;
        let service = Arc::new(
            py.detach(|| UpsiService::open(&path, files::mib(cache_mb)))
                .py_err(py)?,
        );
        let shown = path.display().to_string();
        service.watch(period, move |result| {
            if let Err(e) = result {
                eprintln!(
                    "privset upsi server: {shown} changed but does not load ({}); still serving the previous database",
                    e.message
                );
            }
        });
        Ok(Self {
            spec: Arc::new(Spec::Server { service }),
        })
    }

    /// "client" or "server".
    #[getter]
    fn role(&self) -> &'static str {
        self.spec.names().0
    }

    /// Runs against the peer reached as `link` says.
    #[pyo3(signature = (link, prices, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        link: LinkArgs,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<PyOutcome<'py>> {
        let outcome = play::remote(py, self.spec.clone(), link, prices, progress.as_ref())?;
        self.to_python(py, outcome)
    }

    /// The server: serves sessions on `listen` as `privset upsi serve` does. Returns
    /// the session log lines (JSON).
    #[pyo3(signature = (listen, *, tls, insecure_no_tls, max_sessions, max_concurrent, timeout, handshake_timeout=5.0, allow_clients=None))]
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &self,
        py: Python<'_>,
        listen: String,
        tls: Option<(PathBuf, PathBuf, PathBuf)>,
        insecure_no_tls: bool,
        max_sessions: Option<u64>,
        max_concurrent: usize,
        timeout: f64,
        handshake_timeout: f64,
        allow_clients: Option<PathBuf>,
    ) -> PyResult<Vec<String>> {
        let Spec::Server { service } = &*self.spec else {
            return Err(errors::config(
                py,
                "only the server serves sessions; a client runs with run()",
            ));
        };
        let args = ServeArgs {
            listen,
            tls,
            insecure_no_tls,
            max_sessions,
            max_concurrent,
            timeout,
            handshake_timeout,
            allow_clients,
        };
        serve::serve(py, "server", service.clone() as Arc<dyn Service>, args)
    }

    /// Runs this party and `other` (the other role) in this process.
    #[pyo3(signature = (other, timeout, prices, progress=None))]
    fn run_local<'py>(
        &self,
        py: Python<'py>,
        other: &UpsiParty,
        timeout: f64,
        prices: (f64, f64),
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(PyOutcome<'py>, PyOutcome<'py>)> {
        let (mine, theirs) = play::local(
            py,
            self.spec.clone(),
            other.spec.clone(),
            timeout,
            prices,
            progress.as_ref(),
        )?;
        Ok((self.to_python(py, mine)?, other.to_python(py, theirs)?))
    }
}

/// The OPRF group named `name` ("x25519" or "ristretto255").
fn oprf_named(py: Python<'_>, name: &str) -> PyResult<protocol::Oprf> {
    protocol::Oprf::from_name(name).ok_or_else(|| {
        errors::config(
            py,
            format!("oprf={name:?}: expected \"x25519\" or \"ristretto255\""),
        )
    })
}
