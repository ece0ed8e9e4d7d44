//! The server's database: its items after the OPRF, hashed into bins, cut into
//! bundles, with each bundle's polynomials precomputed and encoded (Cong et al. 2021,
//! Sec. 4.1 and 5). Items are inserted and removed without a rebuild: only the
//! bundles they touch are recomputed.
//!
//! A bin takes each item under all three cuckoo hash functions (the client placed it
//! under one of them). A bin's items are spread over bin bundles of at most
//! `max_items_per_bin`; a bundle's bins share one plaintext per polynomial
//! coefficient. In labeled mode no two items of a bin bundle share a value in any slot,
//! so that each slot's label interpolation is defined.
//!
//! Memory: an item costs its bytes, its 16-byte hash, its encrypted label and three
//! 4-byte bin entries ([`super::records`]); polynomials are kept packed (22 KB per
//! plaintext at n = 8192), and as many bundles as the cache budget allows are also kept
//! in NTT form at the preset's evaluation level, ready for queries (the rest are
//! converted block by block during each query). 2^24 items fit in 8 GB this way; the
//! NTT form alone would take about 4 GB for the unlabeled polynomials (128 KB a
//! plaintext at two primes) and five times that labeled.

use std::sync::Arc;

use privset_crypto::bfv::{
    self, BfvParameters, Coefficients, PackedPlaintext, PackedPolynomial, Polynomial, zt,
};
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;

use super::item::{
    self, LabelLayout, MAX_LABEL_LEN, Oprf, OprfKey, encrypted_label_len, nonce_len_for,
};
use super::preset::Preset;
use super::records::Records;
use crate::agreed::AgreedSettings;
use crate::error::ProtocolError;
use crate::meter::Meter;

/// Bytes of bundles kept in NTT form unless told otherwise: every bundle of a
/// 2^20-item database, labeled, on the n = 4096 presets.
pub const DEFAULT_CACHE_BYTES: usize = 4 << 30;

/// Items hashed under the OPRF at a time by [`Database::insert`].
const HASH_CHUNK: usize = 1 << 18;

/// A bin bundle's polynomials: matching, then one per label part.
pub struct PackedBundle {
    pub polynomials: Vec<PackedPolynomial>,
}

/// A bin bundle's polynomials as a query uses them: packed, and in NTT form when
/// the cache budget allowed.
#[derive(Clone)]
pub struct EncodedBundle {
    pub packed: Arc<PackedBundle>,
    ready: Option<Arc<Vec<Polynomial>>>,
}

impl EncodedBundle {
    /// Matching polynomial first, then the label parts'.
    pub fn polynomials(&self) -> Vec<&dyn Coefficients> {
        match &self.ready {
            Some(ready) => ready.iter().map(|p| p as &dyn Coefficients).collect(),
            None => self
                .packed
                .polynomials
                .iter()
                .map(|p| p as &dyn Coefficients)
                .collect(),
        }
    }

    /// Whether the bundle is held in NTT form.
    pub fn is_ready(&self) -> bool {
        self.ready.is_some()
    }

    fn plaintexts(&self) -> usize {
        self.packed
            .polynomials
            .iter()
            .map(|p| p.coefficients.len())
            .sum()
    }
}

/// The server's set for unbalanced (labeled) PSI. Cloning shares the encoded
/// polynomials (a change re-encodes the bundles it touches in the clone only).
#[derive(Clone)]
pub struct Database {
    preset: Preset,
    params: Arc<BfvParameters>,
    label_len: usize,
    /// Bytes of the nonce in front of each encrypted label ([`item::nonce_len_for`], or
    /// [`item::LEGACY_NONCE_LEN`] in a file saved before version 4).
    nonce_len: usize,
    /// How the labels hold the front end's label columns (kept and sent, never read).
    label_layout: LabelLayout,
    /// How the front end made the items from its rows (key columns, normalisation,
    /// hashing: `privset_run::keys::Keys::agreed`), recorded when the database was
    /// built; `None` in a file saved before version 6. The server states it in every
    /// session, so a client that makes its keys otherwise is refused instead of
    /// matching nothing.
    key_settings: Option<AgreedSettings>,
    /// The OPRF key (its group and seed, so that it can be stored).
    key: OprfKey,
    records: Records,
    /// For each bin of the table, its entries (record numbers) in each of its bundles.
    columns: Vec<Vec<Vec<u32>>>,
    /// For each bundle index, its bin bundles' polynomials (`None` after a change).
    encoded: Vec<Vec<Option<EncodedBundle>>>,
    cache_bytes: usize,
    /// Where the long steps (hashing, computing polynomials) count their progress.
    meter: Arc<Meter>,
}

impl Database {
    /// An empty database under `preset` with labels of `label_len` bytes (0: unlabeled)
    /// and a fresh OPRF key in `oprf`'s group.
    pub fn new(
        preset: Preset,
        label_len: usize,
        oprf: Oprf,
        rng: &mut SessionRng,
    ) -> Result<Self, ProtocolError> {
        let nonce_len = nonce_len_for(&preset, label_len);
        Self::with_key(preset, label_len, nonce_len, OprfKey::random(oprf, rng))
    }

    /// [`Self::new`] with labels under `nonce_len`-byte nonces: a database as files
    /// saved before version 4 held ([`item::LEGACY_NONCE_LEN`]), for tests of loading
    /// and moving them.
    #[doc(hidden)]
    pub fn with_nonce_len(
        preset: Preset,
        label_len: usize,
        nonce_len: usize,
        oprf: Oprf,
        rng: &mut SessionRng,
    ) -> Result<Self, ProtocolError> {
        Self::with_key(preset, label_len, nonce_len, OprfKey::random(oprf, rng))
    }

    pub(crate) fn with_key(
        preset: Preset,
        label_len: usize,
        nonce_len: usize,
        key: OprfKey,
    ) -> Result<Self, ProtocolError> {
        preset.check()?;
        if label_len > MAX_LABEL_LEN {
            return Err(ProtocolError::Config(format!(
                "labels of {label_len} bytes (at most {MAX_LABEL_LEN})"
            )));
        }
        item::check_nonce_len(nonce_len).map_err(ProtocolError::Config)?;
        let params = preset
            .he()
            .build()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        Ok(Self {
            records: Records::new(encrypted_label_len(label_len, nonce_len)),
            columns: vec![Vec::new(); preset.table_size],
            encoded: vec![Vec::new(); preset.bundle_indices()],
            preset,
            params,
            label_len,
            nonce_len,
            label_layout: LabelLayout::default(),
            key_settings: None,
            key,
            cache_bytes: DEFAULT_CACHE_BYTES,
            meter: Arc::new(Meter::new()),
        })
    }

    pub fn preset(&self) -> &Preset {
        &self.preset
    }

    /// Where inserting, removing and preparing count their progress (a display reads
    /// it from another thread).
    pub fn meter(&self) -> Arc<Meter> {
        Arc::clone(&self.meter)
    }

    /// Counts into `meter` from now on.
    pub fn set_meter(&mut self, meter: Arc<Meter>) {
        self.meter = meter;
    }

    pub fn params(&self) -> &Arc<BfvParameters> {
        &self.params
    }

    /// Label bytes (0: unlabeled).
    pub fn label_len(&self) -> usize {
        self.label_len
    }

    /// Bytes of the nonce in front of each encrypted label (what a client needs to
    /// open one; sent in the server's hello).
    pub fn nonce_len(&self) -> usize {
        self.nonce_len
    }

    /// How the labels hold the label columns (sent in the server's hello).
    pub fn label_layout(&self) -> LabelLayout {
        self.label_layout
    }

    /// Records how the labels hold the label columns (before the first insert).
    pub fn set_label_layout(&mut self, layout: LabelLayout) {
        self.label_layout = layout;
    }

    /// How the items were made from rows, as recorded at the build; `None` for a
    /// database saved before file version 6 (or built without settings).
    pub fn key_settings(&self) -> Option<&AgreedSettings> {
        self.key_settings.as_ref()
    }

    /// Records how the items are made from rows (at the build; empty settings record
    /// none).
    pub fn set_key_settings(&mut self, settings: AgreedSettings) {
        self.key_settings = (!settings.is_empty()).then_some(settings);
    }

    /// Bytes of one encrypted label, nonce included (0: unlabeled).
    pub fn encrypted_label_len(&self) -> usize {
        encrypted_label_len(self.label_len, self.nonce_len)
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Number of bin bundles per bundle index (what a client learns).
    pub fn bundle_counts(&self) -> Vec<u32> {
        self.encoded.iter().map(|b| b.len() as u32).collect()
    }

    /// Most bundles any bin is spread over.
    pub fn max_bundles_per_index(&self) -> usize {
        self.encoded.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The OPRF key.
    pub fn oprf_key(&self) -> &OprfKey {
        &self.key
    }

    /// The OPRF's group.
    pub fn oprf(&self) -> Oprf {
        self.key.oprf
    }

    /// Every stored item: its bytes, OPRF hash and encrypted label (`nonce || label
    /// XOR PRG`, empty when unlabeled), in record order.
    pub fn records(&self) -> impl Iterator<Item = (&[u8], u128, &[u8])> {
        (0..self.records.len() as u32).map(|i| {
            (
                self.records.item(i),
                self.records.hash(i),
                self.records.label(i),
            )
        })
    }

    /// Bytes of bundles to keep in NTT form (applied by [`Self::prepare`]):
    /// queries on the others convert their polynomials as they go, which costs about
    /// three times the products themselves.
    pub fn set_cache_bytes(&mut self, bytes: usize) {
        self.cache_bytes = bytes;
    }

    /// What the database holds in memory, in bytes: records, bins, packed polynomials,
    /// polynomials in NTT form.
    pub fn memory(&self) -> DatabaseMemory {
        let mut memory = DatabaseMemory {
            records: self.records.heap_bytes(),
            bins: self
                .columns
                .iter()
                .flatten()
                .map(|bin| bin.capacity() * 4 + 24)
                .sum(),
            ..DatabaseMemory::default()
        };
        for bundle in self.encoded.iter().flatten().flatten() {
            memory.packed += bundle
                .packed
                .polynomials
                .iter()
                .map(PackedPolynomial::heap_bytes)
                .sum::<usize>();
            if bundle.is_ready() {
                memory.ready += bundle.plaintexts()
                    * bfv::packed::plaintext_bytes(&self.params, self.preset.evaluation_level);
            }
        }
        memory
    }

    /// Inserts items (or replaces their labels), hashing them under the OPRF key with
    /// every core. `labels` is empty for an unlabeled database, else one label per item
    /// of exactly `label_len` bytes. Duplicate items: the last one wins.
    pub fn insert(
        &mut self,
        items: &[Vec<u8>],
        labels: &[Vec<u8>],
        rng: &mut SessionRng,
    ) -> Result<(), ProtocolError> {
        if self.label_len > 0 && labels.len() != items.len() {
            return Err(ProtocolError::Config(format!(
                "{} labels for {} items",
                labels.len(),
                items.len()
            )));
        }
        if self.label_len == 0 && !labels.is_empty() {
            return Err(ProtocolError::Config(
                "labels given to an unlabeled database".into(),
            ));
        }
        if let Some(bad) = labels.iter().position(|l| l.len() != self.label_len) {
            return Err(ProtocolError::Config(format!(
                "label {} has {} bytes; this database's labels have {}",
                bad + 1,
                labels[bad].len(),
                self.label_len
            )));
        }
        if let Some(bad) = items.iter().position(|i| i.len() > item::MAX_ITEM_LEN) {
            return Err(ProtocolError::Config(format!(
                "item {} has {} bytes (at most {})",
                bad + 1,
                items[bad].len(),
                item::MAX_ITEM_LEN
            )));
        }
        self.records
            .reserve(items.len(), items.iter().map(Vec::len).sum());
        let mut added = Vec::with_capacity(items.len());
        let mut relabeled = Vec::new();
        self.meter
            .begin("hashing the items under the OPRF key", items.len());
        // Hashed a chunk at a time: the OPRF outputs of 2^24 items would take 1.3 GB.
        for (chunk, items) in items.chunks(HASH_CHUNK).enumerate() {
            let hashed = self.key.hash_items(items);
            self.meter.add(items.len());
            for (k, (raw, h)) in items.iter().zip(&hashed).enumerate() {
                let i = chunk * HASH_CHUNK + k;
                let encrypted_label = if self.label_len > 0 {
                    let mut nonce = [0u8; item::MAX_NONCE_LEN];
                    let nonce = &mut nonce[..self.nonce_len];
                    rng.fill(nonce);
                    item::encrypt_label(&h.label_key, nonce, &labels[i])
                } else {
                    Vec::new()
                };
                match self.records.find(h.hash) {
                    Some(at) => {
                        if self.label_len > 0 {
                            self.records.set_label(at, &encrypted_label);
                            relabeled.push(at);
                        }
                    }
                    None => added.push(self.records.push(raw, h.hash, &encrypted_label)),
                }
            }
        }
        self.mark_changed(&relabeled);
        self.place(&added);
        Ok(())
    }

    /// Replaces the OPRF key: every item is hashed again under a fresh key and every
    /// label re-encrypted under its new label key (the old label keys are recomputed to
    /// open the labels), under nonces of [`nonce_len_for`] bytes (which moves a
    /// database saved before file version 4 to the shorter nonces). Clients of the old
    /// key learn nothing about the new hashes.
    pub fn rotate_key(&mut self, rng: &mut SessionRng) -> Result<(), ProtocolError> {
        self.rotate_key_to(self.oprf(), rng)
    }

    /// [`Self::rotate_key`] with the new key in `oprf`'s group (which moves a database
    /// to another OPRF group).
    pub fn rotate_key_to(&mut self, oprf: Oprf, rng: &mut SessionRng) -> Result<(), ProtocolError> {
        let items: Vec<Vec<u8>> = self.records().map(|(item, _, _)| item.to_vec()).collect();
        let labels: Vec<Vec<u8>> = if self.label_len > 0 {
            self.key
                .hash_items(&items)
                .par_iter()
                .enumerate()
                .map(|(i, h)| {
                    item::decrypt_label(&h.label_key, self.records.label(i as u32), self.nonce_len)
                })
                .collect()
        } else {
            Vec::new()
        };
        let key = OprfKey::random(oprf, rng);
        let (cache_bytes, meter, layout) = (self.cache_bytes, self.meter(), self.label_layout);
        let settings = self.key_settings.clone();
        let nonce_len = nonce_len_for(&self.preset, self.label_len);
        *self = Self::with_key(self.preset.clone(), self.label_len, nonce_len, key)?;
        self.cache_bytes = cache_bytes;
        self.meter = meter;
        self.label_layout = layout;
        self.key_settings = settings;
        self.insert(&items, &labels, rng)
    }

    /// Removes items; returns how many were present.
    pub fn remove(&mut self, items: &[Vec<u8>]) -> usize {
        let mut gone: Vec<u32> = self
            .key
            .hash_items(items)
            .iter()
            .filter_map(|h| self.records.find(h.hash))
            .collect();
        gone.sort_unstable();
        gone.dedup();
        if gone.is_empty() {
            return 0;
        }
        let old_len = self.records.len();
        let moves = self.records.remove_many(&gone);
        let new_len = self.records.len();
        // Record numbers at or above the new length either left or moved down.
        let mut gone_flags = vec![false; old_len];
        for &i in &gone {
            gone_flags[i as usize] = true;
        }
        let mut moved_to = vec![u32::MAX; old_len - new_len];
        for &(from, to) in &moves {
            moved_to[from as usize - new_len] = to;
        }
        let changed: Vec<Vec<usize>> = self
            .columns
            .par_iter_mut()
            .map(|column| {
                let mut changed = Vec::new();
                for (layer, bin) in column.iter_mut().enumerate() {
                    let before = bin.len();
                    bin.retain(|&i| !gone_flags[i as usize]);
                    if bin.len() != before {
                        changed.push(layer);
                    }
                    for i in bin.iter_mut() {
                        if *i as usize >= new_len {
                            *i = moved_to[*i as usize - new_len];
                        }
                    }
                }
                changed
            })
            .collect();
        self.invalidate(&changed);
        self.drop_empty_bundles();
        gone.len()
    }

    /// Marks the bundles holding `records` as changed (their labels were replaced).
    fn mark_changed(&mut self, records: &[u32]) {
        if records.is_empty() {
            return;
        }
        let mut flags = vec![false; self.records.len()];
        for &i in records {
            flags[i as usize] = true;
        }
        let changed: Vec<Vec<usize>> = self
            .columns
            .par_iter()
            .map(|column| {
                column
                    .iter()
                    .enumerate()
                    .filter(|(_, bin)| bin.iter().any(|&i| flags[i as usize]))
                    .map(|(layer, _)| layer)
                    .collect()
            })
            .collect();
        self.invalidate(&changed);
    }

    /// Drops the encodings of the bundles listed per bin (`changed[bin]` holds bundle
    /// numbers), making room for bundles the bins grew into.
    fn invalidate(&mut self, changed: &[Vec<usize>]) {
        let bpb = self.preset.bins_per_bundle();
        for (bin, layers) in changed.iter().enumerate() {
            let bundles = &mut self.encoded[bin / bpb];
            for &layer in layers {
                if bundles.len() <= layer {
                    bundles.resize(layer + 1, None);
                }
                bundles[layer] = None;
            }
        }
    }

    /// Removes bundles left empty in every bin of their bundle index (so that no empty
    /// bundle is evaluated or announced).
    fn drop_empty_bundles(&mut self) {
        let bpb = self.preset.bins_per_bundle();
        for (index, bundles) in self.encoded.iter_mut().enumerate() {
            let columns = &mut self.columns[index * bpb..(index + 1) * bpb];
            for layer in (0..bundles.len()).rev() {
                let empty = columns
                    .iter()
                    .all(|c| c.get(layer).is_none_or(Vec::is_empty));
                if empty {
                    bundles.remove(layer);
                    for column in columns.iter_mut() {
                        if column.len() > layer {
                            column.remove(layer);
                        }
                    }
                }
            }
        }
    }

    /// Puts new records into a bin bundle under each of their locations, every bin on
    /// its own core.
    fn place(&mut self, added: &[u32]) {
        if added.is_empty() {
            return;
        }
        let preset = &self.preset;
        let mut per_bin: Vec<Vec<u32>> = vec![Vec::new(); preset.table_size];
        for &i in added {
            for loc in item::locations(self.records.hash(i), preset.table_size) {
                per_bin[loc].push(i);
            }
        }
        let records = &self.records;
        let labeled = self.label_len > 0;
        let changed: Vec<Vec<usize>> = self
            .columns
            .par_iter_mut()
            .zip(per_bin)
            .map(|(column, adds)| place_in_bin(preset, records, labeled, column, &adds))
            .collect();
        self.invalidate(&changed);
    }

    /// Places every record (a database read from a file of version 1, which stored no
    /// bins).
    pub(crate) fn place_all(&mut self) {
        let all: Vec<u32> = (0..self.records.len() as u32).collect();
        self.place(&all);
    }

    /// Computes and encodes the polynomials of every bundle changed since the last call,
    /// on every core; then keeps as many bundles in NTT form as the cache budget
    /// allows (the first ones).
    pub fn prepare(&mut self) -> Result<(), ProtocolError> {
        self.encode_changed()?;
        self.apply_cache()
    }

    /// Computes and encodes the polynomials of every bundle changed since the last
    /// call (packed only).
    pub(crate) fn encode_changed(&mut self) -> Result<(), ProtocolError> {
        let parts = item::label_parts(&self.preset, self.encrypted_label_len());
        let bpb = self.preset.bins_per_bundle();
        let (preset, params, records, columns) =
            (&self.preset, &self.params, &self.records, &self.columns);
        let changed = self
            .encoded
            .iter()
            .flatten()
            .filter(|b| b.is_none())
            .count();
        let meter = &self.meter;
        meter.begin("computing the bin bundles' polynomials", changed);
        self.encoded
            .par_iter_mut()
            .enumerate()
            .flat_map(|(index, bundles)| {
                bundles
                    .par_iter_mut()
                    .enumerate()
                    .map(move |(layer, b)| (index, layer, b))
            })
            .filter(|(_, _, b)| b.is_none())
            .try_for_each(|(index, layer, bundle)| {
                let bins: Vec<&[u32]> = columns[index * bpb..(index + 1) * bpb]
                    .iter()
                    .map(|c| c.get(layer).map_or(&[][..], Vec::as_slice))
                    .collect();
                *bundle = Some(EncodedBundle {
                    packed: Arc::new(encode_bundle(preset, params, records, &bins, parts)?),
                    ready: None,
                });
                meter.add(1);
                Ok::<_, ProtocolError>(())
            })
    }

    /// Keeps the first bundles within the cache budget in NTT form, the rest packed.
    fn apply_cache(&mut self) -> Result<(), ProtocolError> {
        let per_plaintext =
            bfv::packed::plaintext_bytes(&self.params, self.preset.evaluation_level);
        let mut used = 0usize;
        let mut to_ready = Vec::new();
        for bundle in self.encoded.iter_mut().flatten().flatten() {
            let bytes = bundle.plaintexts() * per_plaintext;
            if used + bytes <= self.cache_bytes {
                used += bytes;
                if bundle.ready.is_none() {
                    to_ready.push(bundle);
                }
            } else {
                bundle.ready = None;
            }
        }
        let meter = &self.meter;
        if !to_ready.is_empty() {
            meter.begin("holding bundles ready for queries", to_ready.len());
        }
        to_ready.into_par_iter().try_for_each(|bundle| {
            let ready = bundle
                .packed
                .polynomials
                .par_iter()
                .map(PackedPolynomial::unpack)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ProtocolError::Config(e.to_string()))?;
            bundle.ready = Some(Arc::new(ready));
            meter.add(1);
            Ok(())
        })
    }

    /// Moves the database to `preset` without a rebuild, when the two lay out the data
    /// alike: ring degree, plaintext prime, slots per item, table and bin size. The
    /// moduli, the query and evaluation levels, the query powers, Paterson-Stockmeyer's
    /// degree and the client limit may differ: the stored polynomials are over Z_t, and
    /// only their NTT forms (made by [`Self::prepare`] or during a query) depend on the
    /// rest. This is what a database built before a privset release changed a preset's
    /// moduli or levels needs (`privset upsi db set-preset`). Call [`Self::prepare`]
    /// before queries.
    pub fn set_preset(&mut self, preset: Preset) -> Result<(), ProtocolError> {
        preset.check()?;
        let layout = |p: &Preset| {
            (
                p.degree,
                p.plain_modulus,
                p.felts_per_item,
                p.table_size,
                p.max_items_per_bin,
            )
        };
        if layout(&preset) != layout(&self.preset) {
            let show = |p: &Preset| {
                format!(
                    "{}: n = {}, t = {}, {} slots per item, {} bins of {} items",
                    p.name,
                    p.degree,
                    p.plain_modulus,
                    p.felts_per_item,
                    p.table_size,
                    p.max_items_per_bin
                )
            };
            return Err(ProtocolError::Config(format!(
                "preset {} lays out the data differently from the database's ({}): build the \
                 database again under it",
                show(&preset),
                show(&self.preset)
            )));
        }
        let params = preset
            .he()
            .build()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        for slot in self.encoded.iter_mut().flatten() {
            let Some(bundle) = slot.take() else { continue };
            // Moved when this database holds the only reference (a loaded file), copied
            // when a clone shares it.
            let polynomials = match Arc::try_unwrap(bundle.packed) {
                Ok(owned) => owned.polynomials,
                Err(shared) => shared.polynomials.clone(),
            };
            let polynomials = polynomials
                .into_iter()
                .map(|p| PackedPolynomial {
                    par: params.clone(),
                    level: preset.evaluation_level,
                    coefficients: p.coefficients,
                })
                .collect();
            *slot = Some(EncodedBundle {
                packed: Arc::new(PackedBundle { polynomials }),
                ready: None,
            });
        }
        self.preset = preset;
        self.params = params;
        Ok(())
    }

    /// The prepared bin bundles of bundle index `index` (after [`Self::prepare`]).
    pub fn encoded(&self, index: usize) -> Result<Vec<EncodedBundle>, ProtocolError> {
        self.encoded[index]
            .iter()
            .map(|b| {
                b.clone().ok_or(ProtocolError::ApiMisuse(
                    "the database was changed and not prepared",
                ))
            })
            .collect()
    }

    /// The bins' layout: for each bin, its entries in each of its bundles.
    pub(crate) fn columns(&self) -> &[Vec<Vec<u32>>] {
        &self.columns
    }

    /// A database from stored parts (see [`super::store`]): its records, the bins'
    /// layout and the packed polynomials of every bundle, checked against each other
    /// as far as the shapes go (the file's checksum vouches for the rest). Queries can
    /// use it at once; [`Self::prepare`] holds bundles ready within the cache budget.
    pub(crate) fn from_parts(
        mut db: Self,
        columns: Vec<Vec<Vec<u32>>>,
        packed: Vec<Vec<PackedBundle>>,
    ) -> Result<Self, ProtocolError> {
        let bad = |why: String| Err(ProtocolError::Config(why));
        let preset = &db.preset;
        if columns.len() != preset.table_size || packed.len() != preset.bundle_indices() {
            return bad("the bins do not match the preset".into());
        }
        let len = db.records.len();
        let mut seen = vec![0u8; len];
        for (bin, column) in columns.iter().enumerate() {
            let bundles = packed[bin / preset.bins_per_bundle()].len();
            if column.len() > bundles {
                return bad(format!("bin {bin} is spread over more bundles than stored"));
            }
            for entries in column {
                if entries.len() > preset.max_items_per_bin {
                    return bad(format!("bin {bin} holds too many items"));
                }
                for &i in entries {
                    let Some(count) = seen.get_mut(i as usize) else {
                        return bad(format!("bin {bin} names record {i} of {len}"));
                    };
                    *count = count.saturating_add(1);
                }
            }
        }
        let expected =
            |i: usize| item::locations(db.records.hash(i as u32), preset.table_size).len();
        if let Some(i) = (0..len).find(|&i| usize::from(seen[i]) != expected(i)) {
            return bad(format!("record {i} is not in each of its bins once"));
        }
        let parts = 1 + item::label_parts(preset, db.encrypted_label_len());
        for bundles in &packed {
            for bundle in bundles {
                if bundle.polynomials.len() != parts {
                    return bad("a bundle has the wrong number of polynomials".into());
                }
            }
        }
        db.columns = columns;
        db.encoded = packed
            .into_iter()
            .map(|bundles| {
                bundles
                    .into_iter()
                    .map(|b| {
                        Some(EncodedBundle {
                            packed: Arc::new(b),
                            ready: None,
                        })
                    })
                    .collect()
            })
            .collect();
        // Nothing is held ready yet: whoever serves it sets the budget and prepares.
        Ok(db)
    }

    pub(crate) fn records_mut(&mut self) -> &mut Records {
        &mut self.records
    }

    /// The packed polynomials of every bundle (after [`Self::prepare`]).
    pub(crate) fn packed_bundles(&self) -> Result<Vec<Vec<Arc<PackedBundle>>>, ProtocolError> {
        (0..self.encoded.len())
            .map(|index| Ok(self.encoded(index)?.into_iter().map(|b| b.packed).collect()))
            .collect()
    }
}

/// What a database holds in memory, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct DatabaseMemory {
    pub records: usize,
    pub bins: usize,
    pub packed: usize,
    pub ready: usize,
}

impl DatabaseMemory {
    pub fn total(&self) -> usize {
        self.records + self.bins + self.packed + self.ready
    }
}

/// Which values each slot of a bin bundle's bin already holds (labeled mode): one bit
/// per possible value, per slot.
struct SlotValues {
    bits: Vec<u64>,
    values: usize,
}

impl SlotValues {
    fn new(preset: &Preset) -> Self {
        let values = 1usize << preset.bits_per_felt();
        Self {
            bits: vec![0; (values * preset.felts_per_item).div_ceil(64)],
            values,
        }
    }

    fn position(&self, slot: usize, value: u64) -> usize {
        slot * self.values + value as usize
    }

    fn any(&self, felts: &[u64]) -> bool {
        felts.iter().enumerate().any(|(j, &v)| {
            let p = self.position(j, v);
            self.bits[p / 64] >> (p % 64) & 1 == 1
        })
    }

    fn add(&mut self, felts: &[u64]) {
        for (j, &v) in felts.iter().enumerate() {
            let p = self.position(j, v);
            self.bits[p / 64] |= 1 << (p % 64);
        }
    }
}

/// Places `adds` in one bin's bundles (first fit); returns the bundles it changed.
fn place_in_bin(
    preset: &Preset,
    records: &Records,
    labeled: bool,
    column: &mut Vec<Vec<u32>>,
    adds: &[u32],
) -> Vec<usize> {
    if adds.is_empty() {
        return Vec::new();
    }
    let felts = |i: u32| item::felts(records.hash(i), preset);
    let mut taken: Vec<SlotValues> = if labeled {
        column
            .iter()
            .map(|bin| {
                let mut values = SlotValues::new(preset);
                for &i in bin {
                    values.add(&felts(i));
                }
                values
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut changed = Vec::new();
    let mut first_open = 0;
    for &i in adds {
        let f = if labeled { felts(i) } else { Vec::new() };
        let fits = |layer: usize, bin: &Vec<u32>| {
            bin.len() < preset.max_items_per_bin && (!labeled || !taken[layer].any(&f))
        };
        while first_open < column.len() && column[first_open].len() >= preset.max_items_per_bin {
            first_open += 1;
        }
        let layer = match (first_open..column.len()).find(|&l| fits(l, &column[l])) {
            Some(layer) => layer,
            None => {
                column.push(Vec::with_capacity(preset.max_items_per_bin.min(adds.len())));
                if labeled {
                    taken.push(SlotValues::new(preset));
                }
                column.len() - 1
            }
        };
        column[layer].push(i);
        if labeled {
            taken[layer].add(&f);
        }
        if !changed.contains(&layer) {
            changed.push(layer);
        }
    }
    changed
}

/// The matching polynomial and label polynomials of one bin bundle, encoded.
fn encode_bundle(
    preset: &Preset,
    params: &Arc<BfvParameters>,
    records: &Records,
    bins: &[&[u32]],
    parts: usize,
) -> Result<PackedBundle, ProtocolError> {
    let (t, f, n) = (preset.plain_modulus, preset.felts_per_item, preset.degree);
    let depth = bins.iter().map(|b| b.len()).max().unwrap_or(0);
    let felts: Vec<Vec<Vec<u64>>> = bins
        .iter()
        .map(|bin| {
            bin.iter()
                .map(|&i| item::felts(records.hash(i), preset))
                .collect()
        })
        .collect();
    let label_felts: Vec<Vec<Vec<Vec<u64>>>> = bins
        .iter()
        .map(|bin| {
            bin.iter()
                .map(|&i| item::label_felts(preset, records.label(i), parts))
                .collect()
        })
        .collect();
    // coefficient i, slot (bin * f + j)
    let slots = |coefficients: usize, poly_of: &dyn Fn(usize, usize) -> Vec<u64>| {
        let mut out = vec![vec![0u64; n]; coefficients];
        for b in 0..bins.len() {
            for j in 0..f {
                for (i, c) in poly_of(b, j).into_iter().enumerate() {
                    out[i][b * f + j] = c;
                }
            }
        }
        out
    };
    let encode = |coefficients: Vec<Vec<u64>>| -> Result<PackedPolynomial, ProtocolError> {
        let coefficients = coefficients
            .iter()
            .map(|values| PackedPlaintext::from_slots(params, values))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        Ok(PackedPolynomial {
            par: params.clone(),
            level: preset.evaluation_level,
            coefficients,
        })
    };
    let mut polynomials = vec![encode(slots(depth + 1, &|b, j| {
        let roots: Vec<u64> = felts[b].iter().map(|e| e[j]).collect();
        zt::from_roots(&roots, t)
    }))?];
    if parts > 0 {
        // Every part's label polynomial of each bin and slot, interpolated together.
        let labels: Vec<Vec<Vec<Vec<u64>>>> = (0..bins.len())
            .map(|b| {
                (0..f)
                    .map(|j| {
                        let xs: Vec<u64> = felts[b].iter().map(|e| e[j]).collect();
                        let ys: Vec<Vec<u64>> = (0..parts)
                            .map(|p| label_felts[b].iter().map(|l| l[p][j]).collect())
                            .collect();
                        zt::interpolate_many(&xs, &ys, t)
                    })
                    .collect()
            })
            .collect();
        let parts: Vec<PackedPolynomial> = (0..parts)
            .map(|p| encode(slots(depth.max(2), &|b, j| labels[b][j][p].clone())))
            .collect::<Result<_, _>>()?;
        polynomials.extend(parts);
    }
    Ok(PackedBundle { polynomials })
}
