//! Unbalanced labeled PSI for the front ends: the database file, the server's
//! endpoint service (the database loaded once, shared by concurrent sessions, replaced
//! when the file changes without disturbing sessions in flight), labels read from and
//! written to columns, and the client's report.
//!
//! A label is the label columns' cells of a row, as the database's [`LabelLayout`]
//! says: one column's cell as it is, or several columns' cells each after its length
//! (u16), so that any bytes round-trip; then zero bytes to the database's label length.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use privset_crypto::rng::SessionRng;
use privset_protocols::Meter;
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::engine::Engine;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::upsi::{self, ClientOutput, Database, LabelLayout, Server, store};

use crate::drive::Metered;
use crate::endpoint::{ServedParty, Service};
use crate::fail::Failure;
use crate::keys::{Keys, Normalize, check_recorded, split_key};
use crate::link::write_private_with;
use crate::source::{self, InputSpec};

/// Reads a database file (its polynomials packed: see [`serving`] for a database to
/// answer queries from).
pub fn read_database(path: &Path) -> Result<Database, Failure> {
    let cannot = |e: std::io::Error| Failure::input(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    store::load_from(file, len).map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

/// Writes a database file atomically (a new file renamed into place, so a server
/// reading it keeps the old one until the rename), readable by its owner only (it holds
/// the OPRF key), under the database's lock (see [`update_database`]).
pub fn write_database(path: &Path, db: &Database) -> Result<(), Failure> {
    let _lock = DatabaseLock::take(path)?;
    write_private_with(path, |f| Ok(store::save_to(db, f)?))
}

/// Reads the database file, changes it with `change` and writes it back, holding the
/// database's exclusive lock throughout: concurrent writers (two `upsi db add` and
/// `remove` at once, a Python `save`) take turns, and every update lands instead of one
/// silently overwriting another's.
pub fn update_database<T>(
    path: &Path,
    change: impl FnOnce(&mut Database) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let _lock = DatabaseLock::take(path)?;
    let mut db = read_database(path)?;
    let out = change(&mut db)?;
    write_private_with(path, |f| Ok(store::save_to(&db, f)?))?;
    Ok(out)
}

/// The exclusive lock of a database file: an advisory lock on `<file>.lock` beside it,
/// which the kernel drops when the holder exits however it dies, so a crashed writer
/// never leaves it held. Waits for the lock (writers take turns); the lock file stays.
struct DatabaseLock(std::fs::File);

impl DatabaseLock {
    fn take(db: &Path) -> Result<Self, Failure> {
        let mut name = db.as_os_str().to_owned();
        name.push(".lock");
        let path = std::path::PathBuf::from(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                Failure::other(format!("cannot open lock file {}: {e}", path.display()))
            })?;
        file.lock()
            .map_err(|e| Failure::other(format!("cannot lock {}: {e}", path.display())))?;
        Ok(Self(file))
    }
}

impl Drop for DatabaseLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// The rows of an input: identifiers and, labeled, one label per identifier.
#[derive(Clone)]
pub struct Rows {
    pub ids: Vec<Vec<u8>>,
    /// Empty when no label columns were read.
    pub labels: Vec<Vec<u8>>,
    /// How `labels` hold their cells (not yet padded).
    pub layout: LabelLayout,
    /// How the identifiers were made from the rows (`Keys::agreed`): recorded in a
    /// database built from them, checked against a database's before they change it.
    pub key_settings: AgreedSettings,
}

impl Rows {
    /// Unlabeled rows whose identifiers `keys` made.
    pub fn unlabeled(ids: Vec<Vec<u8>>, keys: &Keys) -> Self {
        Self {
            ids,
            labels: Vec::new(),
            layout: LabelLayout::default(),
            key_settings: keys.agreed(),
        }
    }

    /// Rows whose identifiers `keys` made, with labels made from each row's cells: raw
    /// when every row has one cell.
    pub fn labeled(
        ids: Vec<Vec<u8>>,
        cells: &[Vec<Vec<u8>>],
        keys: &Keys,
    ) -> Result<Self, Failure> {
        let layout = if cells.iter().all(|c| c.len() == 1) {
            LabelLayout::Raw
        } else {
            LabelLayout::Prefixed
        };
        let labels = cells
            .iter()
            .map(|c| encode_label(c, layout))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            ids,
            labels,
            layout,
            key_settings: keys.agreed(),
        })
    }

    /// The rows with their labels in `layout` (a database's), padded to `len` bytes.
    pub fn into_layout(self, layout: LabelLayout, len: usize) -> Result<Self, Failure> {
        let mut labels = if layout == self.layout {
            self.labels
        } else {
            self.labels
                .iter()
                .map(|label| {
                    let cells = decode_label(label, self.layout)
                        .ok_or_else(|| Failure::other("a label did not decode"))?;
                    encode_label(&cells, layout)
                })
                .collect::<Result<_, _>>()?
        };
        pad_labels(&mut labels, len)?;
        Ok(Self {
            ids: self.ids,
            labels,
            layout,
            key_settings: self.key_settings,
        })
    }
}

/// Rows of an input: identifiers (made by `keys`) and, when `label_columns` is not
/// empty, each row's label (the label cells, raw for one column, length-prefixed for
/// several; a cell may be empty). Rows repeating an identifier with the same label are
/// read once; with different labels the last wins in the database.
pub fn read_rows(path: &Path, keys: &Keys, label_columns: &[String]) -> Result<Rows, Failure> {
    if label_columns.is_empty() {
        let spec = InputSpec {
            keys,
            values: &[],
            segment: None,
        };
        let ids = source::read_input(path, &spec, DuplicatePolicy::First, 0)?.ids;
        return Ok(Rows::unlabeled(ids, keys));
    }
    // One read of the id and label columns together: the label cells unnormalised,
    // nothing hashed; the identifier is then made from its cells as `keys` makes it.
    let n_ids = keys.columns.len();
    if let Some(c) = label_columns.iter().find(|c| keys.columns.contains(c)) {
        return Err(Failure::config(format!(
            "column {c:?} is both an identifier and a label column"
        )));
    }
    let mut columns = keys.columns.clone();
    columns.extend(label_columns.iter().cloned());
    let combined = Keys {
        columns,
        normalize: (0..n_ids)
            .map(|i| *keys.normalize.get(i).unwrap_or(&keys.normalize[0]))
            .chain(label_columns.iter().map(|_| Normalize::LabelCell))
            .collect(),
        phone_region: keys.phone_region,
        hash: None,
    };
    let spec = InputSpec {
        keys: &combined,
        values: &[],
        segment: None,
    };
    let rows = source::read_input(path, &spec, DuplicatePolicy::First, 0)?.ids;
    let layout = LabelLayout::for_columns(label_columns.len());
    let mut ids = Vec::with_capacity(rows.len());
    let mut labels = Vec::with_capacity(rows.len());
    for row in rows {
        let cells = split_key(&row, n_ids + label_columns.len())
            .ok_or_else(|| Failure::other("a combined row did not split into its cells"))?;
        let id_cells: Vec<&[u8]> = cells[..n_ids].iter().map(Vec::as_slice).collect();
        ids.push(keys.key(&id_cells).map_err(Failure::input)?);
        labels.push(encode_label(&cells[n_ids..], layout)?);
    }
    Ok(Rows {
        ids,
        labels,
        layout,
        key_settings: keys.agreed(),
    })
}

/// A label from its cells, in `layout`: raw (one cell, which must not end in a zero
/// byte: that would read as padding), or each cell after its u16 length.
pub fn encode_label(cells: &[Vec<u8>], layout: LabelLayout) -> Result<Vec<u8>, Failure> {
    match layout {
        LabelLayout::Raw => match cells {
            [cell] if cell.last() == Some(&0) => Err(Failure::input(
                "a label ends in a zero byte, which would read as padding (give it as two label columns to keep it)",
            )),
            [cell] => Ok(cell.clone()),
            _ => Err(Failure::config(format!(
                "a label of {} cells: this database's labels hold one column",
                cells.len()
            ))),
        },
        LabelLayout::Prefixed => {
            let mut out = Vec::new();
            for cell in cells {
                let len = u16::try_from(cell.len())
                    .map_err(|_| Failure::input(format!("a label cell of {} bytes", cell.len())))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(cell);
            }
            Ok(out)
        }
    }
}

/// The cells of a label in `layout` (padding dropped); `None` if it is not a label of
/// this form (a false match decrypts to noise).
pub fn decode_label(label: &[u8], layout: LabelLayout) -> Option<Vec<Vec<u8>>> {
    if layout == LabelLayout::Raw {
        let end = label.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        return Some(vec![label[..end].to_vec()]);
    }
    let mut rest = label;
    let mut cells = Vec::new();
    while rest.len() >= 2 && rest.iter().any(|&b| b != 0) {
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        cells.push(rest.get(2..2 + len)?.to_vec());
        rest = &rest[2 + len..];
    }
    rest.iter().all(|&b| b == 0).then_some(cells)
}

/// The cells of a matched item's label as the rows file holds them: decoded, or
/// the whole label in hex (`hex:...`) when it does not decode.
pub fn label_cells(label: &[u8], layout: LabelLayout) -> Vec<Vec<u8>> {
    decode_label(label, layout)
        .unwrap_or_else(|| vec![format!("hex:{}", hex::encode(label)).into_bytes()])
}

/// Pads labels to `len` bytes (the database's label length), or fails naming the
/// longest.
fn pad_labels(labels: &mut [Vec<u8>], len: usize) -> Result<(), Failure> {
    if let Some(longest) = labels.iter().map(Vec::len).max()
        && longest > len
    {
        return Err(Failure::config(format!(
            "a label takes {longest} bytes; this database's labels hold {len} (build it with a larger --label-bytes)"
        )));
    }
    for label in labels {
        label.resize(len, 0);
    }
    Ok(())
}

/// Bytes of a cache budget of `mb` MiB (saturating: a budget beyond memory means
/// "everything").
pub fn mib(mb: usize) -> usize {
    mb.saturating_mul(1 << 20)
}

/// Refuses a database that does not record how its items were made from rows (a file
/// saved before version 6): its server could state no key settings, and a client
/// whose keys are made otherwise would get a wrong answer (matches missed) with no
/// error. Nothing in the file tells the settings, so the one honest remedy is to build
/// it again from its rows.
pub fn require_key_settings(db: &Database) -> Result<&AgreedSettings, Failure> {
    db.key_settings().ok_or_else(|| {
        Failure::config(
            "this database was built before privset recorded how its items are made from \
             rows (key columns, normalisation, phone region, hashing), so a server could \
             not state them to its clients: build it again with `privset upsi db build` \
             (or UpsiDatabase.build) from its rows, with the same key flags",
        )
    })
}

/// Refuses to change `db` with `rows` whose identifiers were made otherwise than the
/// database's items (they would be inserted where no client finds them, or removals
/// would miss), naming the setting; and a database without recorded settings.
pub fn check_rows(db: &Database, rows: &Rows) -> Result<(), Failure> {
    let recorded = require_key_settings(db)?;
    check_recorded(
        recorded,
        "database",
        &rows.key_settings,
        "make the rows' identifiers as the database was built (privset upsi db info shows its key settings)",
    )
}

/// `db` made ready to answer queries: the first bundles within `cache_bytes` held in
/// NTT form (the rest are converted during each query). A database without recorded
/// key settings is refused ([`require_key_settings`]).
pub fn serving(mut db: Database, cache_bytes: usize) -> Result<Database, Failure> {
    require_key_settings(&db)?;
    db.set_cache_bytes(cache_bytes);
    // Blocks of 128 KiB and more get their own mappings while the cache is filled, and
    // come from the heap again for queries (see `set_mmap_threshold`).
    set_mmap_threshold(128 << 10);
    let prepared = db.prepare();
    set_mmap_threshold(32 << 20);
    prepared?;
    Ok(db)
}

/// Sets glibc's mmap threshold (blocks this large or larger get their own mapping),
/// which also stops glibc from moving it on its own.
///
/// Filling the cache converts tens of thousands of plaintexts through 64-256 KiB
/// temporaries (fhe.rs clones each result out of its encoder) while the results stay:
/// on the heap the two interleave and the holes are never returned. A labeled 2^22
/// database's server peaked at 6.46 GB before its first query, and at 5.22 GB (what
/// its records, packed polynomials and cache add up to) with mapped blocks. During
/// queries the same temporaries come and go with nothing kept between them, and their
/// own mappings would cost a system call and fresh pages each: about 3.5 s more server
/// CPU in a 10 s query of that database (measured). A no-op where the allocator is not
/// glibc's.
fn set_mmap_threshold(bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt(3) sets a parameter of the allocator; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// What a new database is made as.
pub struct DatabaseSpec<'a> {
    /// The preset by name, or `None` for the one chosen for `client_items` and the
    /// number of rows.
    pub preset: Option<&'a str>,
    pub client_items: usize,
    /// Bytes of every label (`None`: the longest label given).
    pub label_bytes: Option<usize>,
    /// The OPRF's group (a fresh key in it).
    pub oprf: upsi::Oprf,
}

/// A new database from rows, as `spec` says; the first bundles within `cache_bytes`
/// held ready for queries (0 for a database only written to a file).
pub fn build_database(
    rows: Rows,
    spec: &DatabaseSpec<'_>,
    cache_bytes: usize,
    meter: Arc<Meter>,
) -> Result<Database, Failure> {
    let preset = match spec.preset {
        Some(name) => upsi::Preset::named(name)?,
        None => upsi::Preset::for_sizes(rows.ids.len() as u64, spec.client_items)?,
    };
    let label_len = match spec.label_bytes {
        Some(n) => n,
        None => rows.labels.iter().map(Vec::len).max().unwrap_or(0),
    };
    if !rows.labels.is_empty() && label_len == 0 {
        return Err(Failure::config(
            "--label-bytes must be at least 1 with label columns",
        ));
    }
    let layout = rows.layout;
    let Rows {
        ids,
        labels,
        key_settings,
        ..
    } = rows.into_layout(layout, label_len)?;
    let mut rng = SessionRng::from_os();
    let mut db = Database::new(preset, label_len, spec.oprf, &mut rng)?;
    db.set_label_layout(layout);
    db.set_key_settings(key_settings);
    db.set_cache_bytes(cache_bytes);
    db.set_meter(meter);
    db.insert(&ids, &labels, &mut rng)?;
    // The database keeps its own copy: free the rows before the polynomials are made.
    drop((ids, labels));
    db.prepare()?;
    Ok(db)
}

/// The database a server serves, shared with whoever may replace it (the file
/// watcher, or the Python `UpsiDatabase` it belongs to): sessions take the `Arc` current
/// at their start and keep it to their end.
pub type SharedDatabase = Arc<RwLock<Arc<Database>>>;

/// What `privset upsi db info` prints (and `UpsiDatabase.info()` returns).
pub fn info(db: &Database) -> serde_json::Value {
    let preset = db.preset();
    serde_json::json!({
        "items": db.len(),
        "preset": preset.name,
        "label_bytes": db.label_len(),
        "label_nonce_bytes": db.nonce_len(),
        "label_layout": db.label_layout().name(),
        "oprf": db.oprf().name(),
        "key_settings": db.key_settings().map(|s| {
            s.iter()
                .map(|(n, v)| (n.to_string(), serde_json::Value::from(v)))
                .collect::<serde_json::Map<_, _>>()
        }),
        "bundle_counts": db.bundle_counts(),
        "max_client_items": preset.max_client_items,
        "false_positive_log2": preset.false_positive_log2(preset.max_client_items, db.max_bundles_per_index()),
        "ring_degree": preset.degree,
        "plain_modulus": preset.plain_modulus,
        "moduli_bits": preset.moduli_bits,
        "memory_mib": memory_mib(db),
    })
}

/// What the database holds in memory, in MiB: records (items, hashes, labels, index),
/// bins, packed polynomials, polynomials held ready for queries.
fn memory_mib(db: &Database) -> serde_json::Value {
    let m = db.memory();
    let mib = |b: usize| (b as f64 / f64::from(1 << 20) * 10.0).round() / 10.0;
    serde_json::json!({
        "records": mib(m.records),
        "bins": mib(m.bins),
        "packed_polynomials": mib(m.packed),
        "ready_polynomials": mib(m.ready),
        "total": mib(m.total()),
    })
}

/// Refuses a query set larger than any preset takes, before connecting (the server's
/// own preset may take fewer; it refuses those at the handshake).
pub fn check_client_items(items: usize) -> Result<(), Failure> {
    let largest = upsi::Preset::built_in()
        .iter()
        .map(|p| p.max_client_items)
        .max()
        .unwrap_or(0);
    if items > largest {
        return Err(Failure::config(format!(
            "{items} items to query; the largest preset takes {largest} (split the set)"
        )));
    }
    Ok(())
}

/// What the server of one session reports (the endpoint logs `client_items` only).
#[derive(serde::Serialize, Debug)]
pub struct ServerReport {
    pub protocol: &'static str,
    pub preset: String,
    pub items: u64,
    pub client_items: u64,
    pub run: Metered,
}

/// The server as the endpoint serves it: the current database, replaced by a watcher
/// when its file changes (or by its owner, for a database held in memory). A session
/// takes the database current at its start and keeps it to its end.
pub struct UpsiService {
    /// The file the database came from; `None` for a database held in memory.
    path: Option<PathBuf>,
    /// The file's stamp at the last load.
    loaded: RwLock<Stamp>,
    /// Bytes of bundles held ready for queries (see [`serving`]).
    cache_bytes: usize,
    current: SharedDatabase,
}

/// A file's modification time and length: what tells a changed database file.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl UpsiService {
    /// Loads the database file, the first bundles within `cache_bytes` made ready for
    /// queries.
    pub fn open(path: &Path, cache_bytes: usize) -> Result<Self, Failure> {
        let stamp = stamp(path);
        let db = serving(read_database(path)?, cache_bytes).map_err(|f| f.in_file(path))?;
        Ok(Self {
            path: Some(path.to_path_buf()),
            loaded: RwLock::new(stamp),
            cache_bytes,
            current: Arc::new(RwLock::new(Arc::new(db))),
        })
    }

    /// Serves a database held in memory: whatever `current` holds when a session
    /// starts (its owner may replace it; there is no file to watch).
    pub fn shared(current: SharedDatabase) -> Self {
        Self {
            path: None,
            loaded: RwLock::new(None),
            cache_bytes: 0,
            current,
        }
    }

    /// The database new sessions get.
    pub fn database(&self) -> Arc<Database> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reloads the file if it changed since the last load; `Ok(true)` if it did.
    /// A file that does not load leaves the current database in place.
    pub fn reload_if_changed(&self) -> Result<bool, Failure> {
        let Some(path) = &self.path else {
            return Ok(false);
        };
        let now = stamp(path);
        if now == *self.loaded.read().unwrap_or_else(|p| p.into_inner()) {
            return Ok(false);
        }
        let db = serving(read_database(path)?, self.cache_bytes).map_err(|f| f.in_file(path))?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(db);
        *self.loaded.write().unwrap_or_else(|p| p.into_inner()) = now;
        Ok(true)
    }

    /// Polls the file every `period` on a thread of its own, reloading it when it
    /// changes; `report` hears of each reload or failed reload. The thread ends once
    /// the service is dropped.
    pub fn watch(
        self: &Arc<Self>,
        period: Duration,
        report: impl Fn(Result<&Database, &Failure>) + Send + 'static,
    ) {
        if self.path.is_none() {
            return;
        }
        let service = Arc::downgrade(self);
        std::thread::spawn(move || {
            while let Some(service) = service.upgrade() {
                match service.reload_if_changed() {
                    Ok(true) => report(Ok(&service.database())),
                    Ok(false) => {}
                    Err(e) => report(Err(&e)),
                }
                drop(service);
                std::thread::sleep(period);
            }
        });
    }
}

impl Service for UpsiService {
    fn role(&self) -> &'static str {
        "upsi server"
    }

    fn party(&self, seed: [u8; 32]) -> Result<Box<dyn ServedParty>, Failure> {
        Ok(Box::new(Server::new(self.database(), seed)?))
    }
}

impl ServedParty for Engine<Server> {
    fn outcome(self: Box<Self>) -> serde_json::Value {
        self.into_output()
            .map(|o| serde_json::json!({ "client_items": o.client_items }))
            .unwrap_or(serde_json::Value::Null)
    }
}

/// RESULT.json of a query.
#[derive(serde::Serialize, Debug)]
pub struct QueryReport {
    pub protocol: &'static str,
    pub preset: String,
    pub items: u64,
    pub matches: u64,
    pub label_bytes: usize,
    /// Bin bundles per bundle index: what the client learned of the server's set size.
    pub bundle_counts: Vec<u32>,
    pub false_positive_log2: f64,
    pub rows: Option<u64>,
    pub run: Metered,
}

impl QueryReport {
    pub fn new(out: &ClientOutput, items: usize, rows: Option<u64>, run: Metered) -> Self {
        Self {
            protocol: "upsi",
            preset: out.preset.clone(),
            items: items as u64,
            matches: out.matches.iter().filter(|m| m.is_some()).count() as u64,
            label_bytes: out.label_len,
            bundle_counts: out.bundle_counts.clone(),
            false_positive_log2: out.false_positive_log2,
            rows,
            run,
        }
    }
}

/// The rows file of a query: the identifier columns, then the label's cells as
/// `label_1`, `label_2`, ... (a label that does not decode is written whole, in hex, as
/// `label_hex`).
pub fn match_rows(
    keys: &Keys,
    items: &[Vec<u8>],
    out: &ClientOutput,
) -> (Vec<String>, Vec<Vec<Vec<u8>>>) {
    let cells = items
        .iter()
        .zip(&out.matches)
        .filter_map(|(_, m)| m.as_ref())
        .map(|label| decode_label(label, out.label_layout).map_or(1, |c| c.len()))
        .max()
        .unwrap_or(0);
    let mut header = keys.output_columns();
    if out.label_len > 0 {
        header.extend((1..=cells).map(|i| format!("label_{i}")));
    }
    let rows = items
        .iter()
        .zip(&out.matches)
        .filter_map(|(item, m)| {
            let label = m.as_ref()?;
            let mut row = keys.split(item);
            if out.label_len > 0 {
                let mut cells_of = label_cells(label, out.label_layout);
                cells_of.resize(cells, Vec::new());
                row.extend(cells_of);
            }
            Some(row)
        })
        .collect();
    (header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip() {
        let cells = vec![b"42".to_vec(), Vec::new(), b"acct-7".to_vec()];
        let mut label = encode_label(&cells, LabelLayout::Prefixed).unwrap();
        label.resize(40, 0);
        assert_eq!(decode_label(&label, LabelLayout::Prefixed).unwrap(), cells);
        assert!(decode_label(&[0, 9, 1], LabelLayout::Prefixed).is_none());
        let none = Vec::<Vec<u8>>::new();
        assert_eq!(decode_label(&[0; 8], LabelLayout::Prefixed).unwrap(), none);
        // One column, raw: a 1-byte cell in a 1-byte label; an empty cell.
        for cell in [b"7".to_vec(), Vec::new(), vec![0, 1, 2]] {
            let mut label = encode_label(std::slice::from_ref(&cell), LabelLayout::Raw).unwrap();
            assert_eq!(label.len(), cell.len());
            label.resize(4, 0);
            assert_eq!(decode_label(&label, LabelLayout::Raw).unwrap(), vec![cell]);
        }
        assert!(encode_label(&[vec![1, 0]], LabelLayout::Raw).is_err());
        assert!(encode_label(&cells, LabelLayout::Raw).is_err());
    }

    #[test]
    fn rows_move_between_layouts() {
        let keys = Keys::single("id");
        let one = Rows::labeled(vec![b"a".to_vec()], &[vec![b"high".to_vec()]], &keys).unwrap();
        assert_eq!(one.layout, LabelLayout::Raw);
        let raw = one.clone().into_layout(LabelLayout::Raw, 4).unwrap();
        assert_eq!(raw.labels, vec![b"high".to_vec()]);
        // Into a database of prefixed labels (an older file): re-encoded.
        let prefixed = one.clone().into_layout(LabelLayout::Prefixed, 8).unwrap();
        assert_eq!(prefixed.labels, vec![b"\0\x04high\0\0".to_vec()]);
        // Too long for the database's labels; two cells into a one-column database.
        assert!(one.into_layout(LabelLayout::Raw, 3).is_err());
        let two = Rows::labeled(
            vec![b"a".to_vec()],
            &[vec![b"x".to_vec(), b"y".to_vec()]],
            &keys,
        );
        assert!(two.unwrap().into_layout(LabelLayout::Raw, 8).is_err());
    }

    /// A database records how its items were made; rows made otherwise may not change
    /// it (naming the setting), and a database recording nothing (a file of version 5
    /// or older) is neither served nor changed.
    #[test]
    fn databases_record_their_key_settings_and_refuse_others() {
        let keys =
            |normalize: &str| Keys::new(vec!["email".into()], &[normalize.into()], None, None);
        let email = keys("email").unwrap();
        let rows = Rows::unlabeled(vec![b"a@example.com".to_vec()], &email);
        let spec = DatabaseSpec {
            preset: Some("n4096-c1k"),
            client_items: 16,
            label_bytes: None,
            oprf: upsi::Oprf::X25519,
        };
        let db = build_database(rows.clone(), &spec, 0, Default::default()).unwrap();
        assert_eq!(db.key_settings(), Some(&email.agreed()));
        assert!(check_rows(&db, &rows).is_ok());
        let trim = Rows::unlabeled(vec![b"a@example.com".to_vec()], &keys("trim").unwrap());
        let e = check_rows(&db, &trim).unwrap_err();
        assert_eq!(e.kind, crate::fail::FailureKind::Config);
        assert!(
            e.message.contains(
                "normalize: the database uses normalize email, the input uses normalize trim"
            ),
            "{}",
            e.message
        );
        // Saved and loaded, the settings stay; a database without them is refused.
        let again = store::load(&store::save(&db).unwrap()).unwrap();
        assert_eq!(again.key_settings(), Some(&email.agreed()));
        assert!(serving(again, 0).is_ok());
        let mut old = db.clone();
        old.set_key_settings(AgreedSettings::new());
        for e in [
            serving(old.clone(), 0).err().unwrap(),
            check_rows(&old, &rows).unwrap_err(),
        ] {
            assert!(e.message.contains("build it again"), "{}", e.message);
        }
        assert!(info(&old)["key_settings"].is_null());
        assert_eq!(info(&db)["key_settings"]["normalize"], "email");
    }
}
