//! The server's database: its items after the OPRF, hashed into bins, cut into
//! bundles, with each bundle's polynomials precomputed and encoded (Cong et al. 2021,
//! Sec. 4.1 and 5). Items are inserted and removed without a rebuild: only the
//! bundles they touch are recomputed.
//!
//! A bin takes each item under all three cuckoo hash functions (the client placed it
//! under one of them). A bin's items are spread over bundles of at most
//! `max_items_per_bin`; a bundle's bins share one ciphertext per polynomial
//! coefficient. In labeled mode no two items of a bin bundle share a value in any slot,
//! so that each slot's label interpolation is defined.

use std::collections::HashMap;
use std::sync::Arc;

use privset_crypto::bfv::{self, BfvParameters, Polynomial};
use privset_crypto::group::PrimeGroup;
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;

use super::item::{self, HashedItem, MAX_LABEL_LEN, NONCE_LEN, OPRF_DST};
use super::poly;
use super::preset::Preset;
use crate::error::ProtocolError;

/// One item in a bin: its slot values and, labeled, its label parts' slot values.
#[derive(Clone, Debug)]
struct Entry {
    hash: u128,
    felts: Vec<u64>,
    label: Vec<Vec<u64>>,
}

/// The bins of one bundle index, `max_items_per_bin` deep.
#[derive(Clone)]
struct BinBundle {
    bins: Vec<Vec<Entry>>,
    /// The encoded polynomials, or `None` after a change.
    encoded: Option<Arc<EncodedBundle>>,
}

/// A bin bundle's polynomials, ready for evaluation.
pub struct EncodedBundle {
    pub matching: Polynomial,
    pub labels: Vec<Polynomial>,
}

/// One stored item: what the database keeps to rebuild, remove and save it.
#[derive(Clone, Debug)]
pub struct Record {
    pub hashed: u128,
    /// `nonce || label XOR PRG`, empty when unlabeled.
    pub encrypted_label: Vec<u8>,
}

/// The server's set for unbalanced (labeled) PSI.
pub struct Database {
    preset: Preset,
    params: Arc<BfvParameters>,
    label_len: usize,
    /// Seed of the OPRF key (the key is derived from it, so it can be stored).
    key_seed: [u8; 32],
    records: HashMap<Vec<u8>, Record>,
    /// Per bundle index, its bin bundles.
    bundles: Vec<Vec<BinBundle>>,
}

impl Database {
    /// An empty database under `preset` with labels of `label_len` bytes (0: unlabeled)
    /// and a fresh OPRF key.
    pub fn new(
        preset: Preset,
        label_len: usize,
        rng: &mut SessionRng,
    ) -> Result<Self, ProtocolError> {
        let mut key_seed = [0u8; 32];
        rng.fill(&mut key_seed);
        Self::with_key(preset, label_len, key_seed)
    }

    fn with_key(
        preset: Preset,
        label_len: usize,
        key_seed: [u8; 32],
    ) -> Result<Self, ProtocolError> {
        preset.check()?;
        if label_len > MAX_LABEL_LEN {
            return Err(ProtocolError::Config(format!(
                "labels of {label_len} bytes (at most {MAX_LABEL_LEN})"
            )));
        }
        let params = preset
            .he()
            .build()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        let bundles = vec![Vec::new(); preset.bundle_indices()];
        Ok(Self {
            preset,
            params,
            label_len,
            key_seed,
            records: HashMap::new(),
            bundles,
        })
    }

    pub fn preset(&self) -> &Preset {
        &self.preset
    }

    pub fn params(&self) -> &Arc<BfvParameters> {
        &self.params
    }

    /// Label bytes (0: unlabeled).
    pub fn label_len(&self) -> usize {
        self.label_len
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
        self.bundles.iter().map(|b| b.len() as u32).collect()
    }

    /// Most bundles any bin is spread over.
    pub fn max_bundles_per_index(&self) -> usize {
        self.bundles.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The OPRF key.
    pub fn oprf_key(&self) -> <Ristretto255 as PrimeGroup>::Scalar {
        Ristretto255::random_scalar(&mut SessionRng::from_seed(self.key_seed))
    }

    pub(crate) fn key_seed(&self) -> [u8; 32] {
        self.key_seed
    }

    /// Every stored item and its record.
    pub fn records(&self) -> impl Iterator<Item = (&Vec<u8>, &Record)> {
        self.records.iter()
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
        let key = self.oprf_key();
        let packed = Ristretto255::hash_mul_encode_batch(OPRF_DST, items, &key);
        let hashed: Vec<HashedItem> = packed
            .par_chunks(item::ELEMENT_LEN)
            .map(HashedItem::from_oprf)
            .collect();
        for (i, (raw, h)) in items.iter().zip(&hashed).enumerate() {
            let encrypted_label = if self.label_len > 0 {
                let mut nonce = [0u8; NONCE_LEN];
                rng.fill(&mut nonce);
                item::encrypt_label(&h.label_key, nonce, &labels[i])
            } else {
                Vec::new()
            };
            self.remove_one(raw);
            let record = Record {
                hashed: h.hash,
                encrypted_label,
            };
            self.place(&record);
            self.records.insert(raw.clone(), record);
        }
        Ok(())
    }

    /// Replaces the OPRF key: every item is hashed again under a fresh key and every
    /// label re-encrypted under its new label key (the old label keys are recomputed to
    /// open the labels). Clients of the old key learn nothing about the new hashes.
    pub fn rotate_key(&mut self, rng: &mut SessionRng) -> Result<(), ProtocolError> {
        let items: Vec<Vec<u8>> = self.records.keys().cloned().collect();
        let labels: Vec<Vec<u8>> = if self.label_len > 0 {
            let packed = Ristretto255::hash_mul_encode_batch(OPRF_DST, &items, &self.oprf_key());
            packed
                .par_chunks(item::ELEMENT_LEN)
                .zip(&items)
                .map(|(point, raw)| {
                    let key = HashedItem::from_oprf(point).label_key;
                    item::decrypt_label(&key, &self.records[raw].encrypted_label)
                })
                .collect()
        } else {
            Vec::new()
        };
        rng.fill(&mut self.key_seed);
        self.records.clear();
        self.bundles = vec![Vec::new(); self.preset.bundle_indices()];
        self.insert(&items, &labels, rng)
    }

    /// Removes items; returns how many were present.
    pub fn remove(&mut self, items: &[Vec<u8>]) -> usize {
        items.iter().filter(|raw| self.remove_one(raw)).count()
    }

    fn remove_one(&mut self, raw: &[u8]) -> bool {
        let Some(record) = self.records.remove(raw) else {
            return false;
        };
        let bpb = self.preset.bins_per_bundle();
        for loc in locations(&self.preset, record.hashed) {
            let bundles = &mut self.bundles[loc / bpb];
            for bundle in bundles.iter_mut() {
                let bin = &mut bundle.bins[loc % bpb];
                if let Some(at) = bin.iter().position(|e| e.hash == record.hashed) {
                    bin.remove(at);
                    bundle.encoded = None;
                    break;
                }
            }
            bundles.retain(|b| b.bins.iter().any(|bin| !bin.is_empty()));
        }
        true
    }

    /// Puts an item into a bin bundle under each of its locations.
    fn place(&mut self, record: &Record) {
        let preset = &self.preset;
        let bpb = preset.bins_per_bundle();
        let felts = item::felts(record.hashed, preset);
        let label = item::label_felts(
            preset,
            &record.encrypted_label,
            item::label_parts(preset, self.label_len),
        );
        let labeled = self.label_len > 0;
        for loc in locations(preset, record.hashed) {
            let entry = Entry {
                hash: record.hashed,
                felts: felts.clone(),
                label: label.clone(),
            };
            let bundles = &mut self.bundles[loc / bpb];
            let fits = |bundle: &BinBundle| {
                let bin = &bundle.bins[loc % bpb];
                bin.len() < preset.max_items_per_bin
                    && (!labeled
                        || bin
                            .iter()
                            .all(|e| e.felts.iter().zip(&felts).all(|(a, b)| a != b)))
            };
            match bundles.iter_mut().find(|b| fits(b)) {
                Some(bundle) => {
                    bundle.bins[loc % bpb].push(entry);
                    bundle.encoded = None;
                }
                None => {
                    let mut bins = vec![Vec::new(); bpb];
                    bins[loc % bpb].push(entry);
                    bundles.push(BinBundle {
                        bins,
                        encoded: None,
                    });
                }
            }
        }
    }

    /// Computes and encodes the polynomials of every bundle changed since the last call,
    /// on every core.
    pub fn prepare(&mut self) -> Result<(), ProtocolError> {
        let (preset, params) = (&self.preset, &self.params);
        let parts = item::label_parts(preset, self.label_len);
        self.bundles
            .par_iter_mut()
            .flat_map(|b| b.par_iter_mut())
            .filter(|b| b.encoded.is_none())
            .try_for_each(|bundle| {
                bundle.encoded = Some(Arc::new(encode_bundle(
                    preset,
                    params,
                    &bundle.bins,
                    parts,
                )?));
                Ok(())
            })
    }

    /// The prepared bin bundles of bundle index `index` (after [`Self::prepare`]).
    pub fn encoded(&self, index: usize) -> Result<Vec<Arc<EncodedBundle>>, ProtocolError> {
        self.bundles[index]
            .iter()
            .map(|b| {
                b.encoded.clone().ok_or(ProtocolError::ApiMisuse(
                    "the database was changed and not prepared",
                ))
            })
            .collect()
    }

    /// Builds a database from stored records (see [`super::store`]).
    pub(crate) fn from_records(
        preset: Preset,
        label_len: usize,
        key_seed: [u8; 32],
        records: Vec<(Vec<u8>, Record)>,
    ) -> Result<Self, ProtocolError> {
        let mut db = Self::with_key(preset, label_len, key_seed)?;
        for (raw, record) in records {
            db.place(&record);
            db.records.insert(raw, record);
        }
        db.prepare()?;
        Ok(db)
    }
}

fn locations(preset: &Preset, hash: u128) -> Vec<usize> {
    item::locations(hash, preset.table_size)
}

/// The matching polynomial and label polynomials of one bin bundle, encoded.
fn encode_bundle(
    preset: &Preset,
    params: &Arc<BfvParameters>,
    bins: &[Vec<Entry>],
    parts: usize,
) -> Result<EncodedBundle, ProtocolError> {
    let (t, f, n) = (preset.plain_modulus, preset.felts_per_item, preset.degree);
    let depth = bins.iter().map(Vec::len).max().unwrap_or(0);
    // coefficient i, slot (bin * f + j)
    let slots = |coefficients: usize, poly_of: &dyn Fn(&[Entry], usize) -> Vec<u64>| {
        let mut out = vec![vec![0u64; n]; coefficients];
        for (b, bin) in bins.iter().enumerate() {
            for j in 0..f {
                for (i, c) in poly_of(bin, j).into_iter().enumerate() {
                    out[i][b * f + j] = c;
                }
            }
        }
        out
    };
    let encode = |coefficients: Vec<Vec<u64>>| -> Result<Polynomial, ProtocolError> {
        let coefficients = coefficients
            .iter()
            .map(|values| bfv::encode(params, values))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        Ok(Polynomial { coefficients })
    };
    let matching = encode(slots(depth + 1, &|bin, j| {
        let roots: Vec<u64> = bin.iter().map(|e| e.felts[j]).collect();
        poly::from_roots(&roots, t)
    }))?;
    let labels = (0..parts)
        .map(|p| {
            encode(slots(depth.max(2), &|bin, j| {
                let xs: Vec<u64> = bin.iter().map(|e| e.felts[j]).collect();
                let ys: Vec<u64> = bin.iter().map(|e| e.label[p][j]).collect();
                poly::interpolate(&xs, &ys, t)
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EncodedBundle { matching, labels })
}
