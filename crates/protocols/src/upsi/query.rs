//! The homomorphic part: the client's encrypted query, the server's answer, the
//! client's reading of it (Cong et al. 2021, Fig. 1 and Sec. 4-5).
//!
//! ```text
//! query  (client -> server): relinearization key, then per bundle index and source
//!        power (preset order): a seeded ciphertext of every bin's item to that power,
//!        at the preset's query level
//! answer (server -> client): per bundle index, per bin bundle: the matching result,
//!        then one result per label part; all switched down to the last level and
//!        shortened to the bits decryption reads (`privset_crypto::bfv::ResultCodec`)
//! ```
//! Every byte string is u32-length-prefixed.

use std::sync::Arc;

use privset_crypto::bfv::{
    self, BfvParameters, Ciphertext, FheEncrypter, PowerPlan, RelinearizationKey, ResultCodec,
    SecretKey, Serialize,
};
use privset_crypto::cuckoo::{self, HASH_FUNCTIONS};
use privset_crypto::rng::SessionRng;
use rayon::prelude::*;

use super::db::Database;
use super::item::{self, HashedItem};
use super::preset::Preset;
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::meter::Meter;
use crate::wire::Reader;
use privset_crypto::bfv::zt::pow as pow_mod;

/// Bytes of a serialized ciphertext or key is at most this many times n * log2(q) / 8
/// plus framing (checked before decoding).
fn ciphertext_bound(preset: &Preset) -> usize {
    preset.degree * preset.he().modulus_bits() / 8 * 2 + 1024
}

fn relin_key_bound(preset: &Preset) -> usize {
    ciphertext_bound(preset) * preset.moduli_bits.len()
}

/// Longest query message under `preset`.
pub fn query_len_bound(preset: &Preset) -> usize {
    4 + relin_key_bound(preset)
        + preset.bundle_indices() * preset.query_powers.len() * (4 + ciphertext_bound(preset))
}

/// Longest answer for `bundles` bin bundles with `parts` label parts.
pub fn answer_len_bound(preset: &Preset, bundles: usize, parts: usize) -> usize {
    bundles * (1 + parts) * (4 + ciphertext_bound(preset))
}

fn bfv_error(e: bfv::BfvError) -> ProtocolError {
    PeerMisbehaved::Malformed(e.to_string()).into()
}

/// The client's side of one query: its key and where each of its items sits.
pub struct ClientQuery {
    preset: Preset,
    params: Arc<BfvParameters>,
    secret: SecretKey,
    /// For each bin of the table, the index of the client item in it.
    table: Vec<Option<u32>>,
    hashed: Vec<HashedItem>,
    /// For each item, the index of its first copy (duplicates are placed once).
    first: Vec<u32>,
}

/// For each item, the index of the first item with the same hash.
fn first_copies(hashed: &[HashedItem]) -> Vec<u32> {
    let mut seen = std::collections::HashMap::with_capacity(hashed.len());
    hashed
        .iter()
        .enumerate()
        .map(|(i, h)| *seen.entry(h.hash).or_insert(i as u32))
        .collect()
}

/// Cuckoo hashing of the client's items (duplicates placed once, by their first copy):
/// bin -> item index, on the shared random-walk insertion of `privset_crypto::cuckoo`
/// with this preset's hash functions.
fn cuckoo(
    preset: &Preset,
    hashed: &[HashedItem],
    first: &[u32],
    rng: &mut SessionRng,
) -> Result<Vec<Option<u32>>, ProtocolError> {
    let placed: Vec<u32> = (0..hashed.len() as u32)
        .filter(|&i| first[i as usize] == i)
        .collect();
    let locations: Vec<[usize; HASH_FUNCTIONS]> = placed
        .iter()
        .map(|&i| {
            std::array::from_fn(|f| item::location(hashed[i as usize].hash, f, preset.table_size))
        })
        .collect();
    let table = cuckoo::insert(&locations, preset.table_size, rng).map_err(|_| {
        ProtocolError::Config(format!(
            "cuckoo hashing of {} items into {} bins failed (preset {}); use a preset with a larger table",
            hashed.len(),
            preset.table_size,
            preset.name
        ))
    })?;
    Ok(table
        .into_iter()
        .map(|slot| slot.map(|k| placed[k as usize]))
        .collect())
}

impl ClientQuery {
    /// Places the items and encrypts the query; returns the query message.
    pub fn new(
        preset: Preset,
        hashed: Vec<HashedItem>,
        rng: &mut SessionRng,
    ) -> Result<(Self, Vec<u8>), ProtocolError> {
        if hashed.len() > preset.max_client_items {
            return Err(ProtocolError::Config(format!(
                "{} client items, above the {} preset {} allows",
                hashed.len(),
                preset.max_client_items,
                preset.name
            )));
        }
        let params = preset
            .he()
            .build()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        let first = first_copies(&hashed);
        let table = cuckoo(&preset, &hashed, &first, rng)?;
        let secret = SecretKey::random(&params, rng);
        // A key at the full modulus for ciphertexts at the query level: the primes
        // below the query are the key switch's special primes.
        let rk = RelinearizationKey::new_leveled(&secret, preset.query_level, 0, rng)
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        let (t, f, bpb) = (
            preset.plain_modulus,
            preset.felts_per_item,
            preset.bins_per_bundle(),
        );
        let mut out = Vec::new();
        put(&mut out, &rk.to_bytes());
        let felts: Vec<Vec<u64>> = hashed.iter().map(|h| h.felts(&preset)).collect();
        // Every (bundle index, power) plaintext, then encrypted in parallel with forked
        // streams so the result does not depend on scheduling.
        let mut jobs = Vec::new();
        for index in 0..preset.bundle_indices() {
            for &power in &preset.query_powers {
                let mut values = vec![0u64; preset.degree];
                for b in 0..bpb {
                    if let Some(item) = table[index * bpb + b] {
                        for j in 0..f {
                            values[b * f + j] = pow_mod(felts[item as usize][j], power.into(), t);
                        }
                    }
                }
                jobs.push((values, rng.fork()));
            }
        }
        let cts: Vec<Vec<u8>> = jobs
            .into_par_iter()
            .map(|(values, mut rng)| {
                let pt = bfv::encode_at_level(&params, &values, preset.query_level)?;
                let ct: Ciphertext = secret.try_encrypt(&pt, &mut rng)?;
                Ok(ct.to_bytes())
            })
            .collect::<Result<_, bfv::BfvError>>()
            .map_err(|e| ProtocolError::Config(e.to_string()))?;
        for ct in &cts {
            put(&mut out, ct);
        }
        Ok((
            Self {
                preset,
                params,
                secret,
                table,
                hashed,
                first,
            },
            out,
        ))
    }

    /// Reads the server's answer: for each client item, whether it matched and its
    /// label (decrypted). `bundle_counts`, `label_len` and `nonce_len` come from the
    /// server's hello.
    pub fn finish(
        &self,
        answer: &[u8],
        bundle_counts: &[u32],
        label_len: usize,
        nonce_len: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, ProtocolError> {
        let preset = &self.preset;
        let (f, bpb) = (preset.felts_per_item, preset.bins_per_bundle());
        let encrypted_len = item::encrypted_label_len(label_len, nonce_len);
        let parts = item::label_parts(preset, encrypted_len);
        let codec = ResultCodec::new(&self.params).map_err(bfv_error)?;
        let mut r = Reader::new(answer, "unbalanced-PSI answer");
        let mut found: Vec<Option<Vec<u8>>> = vec![None; self.hashed.len()];
        for (index, &count) in bundle_counts.iter().enumerate() {
            for _ in 0..count {
                let decrypt = |r: &mut Reader| -> Result<Vec<u64>, ProtocolError> {
                    let ct = codec.decode(r.bytes(codec.len())?).map_err(bfv_error)?;
                    bfv::decrypt(&self.secret, &ct).map_err(bfv_error)
                };
                let matching = decrypt(&mut r)?;
                let labels = (0..parts)
                    .map(|_| decrypt(&mut r))
                    .collect::<Result<Vec<_>, _>>()?;
                for b in 0..bpb {
                    let Some(item) = self.table[index * bpb + b] else {
                        continue;
                    };
                    if !matching[b * f..(b + 1) * f].iter().all(|&v| v == 0) {
                        continue;
                    }
                    let slot = &mut found[item as usize];
                    if slot.is_some() {
                        continue;
                    }
                    let felts: Vec<Vec<u64>> = labels
                        .iter()
                        .map(|l| l[b * f..(b + 1) * f].to_vec())
                        .collect();
                    let encrypted = item::label_from_felts(preset, &felts, encrypted_len);
                    *slot = Some(if label_len > 0 {
                        let key = &self.hashed[item as usize].label_key;
                        item::decrypt_label(key, &encrypted, nonce_len)
                    } else {
                        Vec::new()
                    });
                }
            }
        }
        r.finish()?;
        Ok(self
            .first
            .iter()
            .map(|&i| found[i as usize].clone())
            .collect())
    }
}

/// The server's answer to a query message, counted on `meter` bundle by bundle.
pub fn answer(db: &Database, query: &[u8], meter: &Meter) -> Result<Vec<u8>, ProtocolError> {
    let preset = db.preset();
    let params = db.params();
    let plan: PowerPlan = preset.plan()?;
    let mut r = Reader::new(query, "unbalanced-PSI query");
    let level = preset.query_level;
    let rk = bfv::decode_relin_key(r.bytes(relin_key_bound(preset))?, params, level)
        .map_err(bfv_error)?;
    let bound = ciphertext_bound(preset);
    let mut sources = Vec::with_capacity(preset.bundle_indices());
    for _ in 0..preset.bundle_indices() {
        let cts = (0..preset.query_powers.len())
            .map(|_| bfv::decode_ciphertext(r.bytes(bound)?, params, level).map_err(bfv_error))
            .collect::<Result<Vec<_>, _>>()?;
        sources.push(cts);
    }
    r.finish()?;
    let last = params.max_level();
    let codec = ResultCodec::new(params).map_err(bfv_error)?;
    let mut out = Vec::new();
    let encoded = (0..sources.len())
        .map(|index| db.encoded(index))
        .collect::<Result<Vec<_>, _>>()?;
    let total = encoded.iter().map(Vec::len).sum();
    meter.begin("evaluating the database's polynomials", total);
    for (sources, bundles) in sources.into_iter().zip(encoded) {
        if bundles.is_empty() {
            continue;
        }
        let powers = plan.compute(sources, &rk).map_err(bfv_error)?;
        let powers =
            bfv::Powers::new(powers, params, preset.evaluation_level).map_err(bfv_error)?;
        let results: Vec<Vec<Vec<u8>>> = bundles
            .par_iter()
            .map(|bundle| {
                bundle
                    .polynomials()
                    .into_iter()
                    .map(|poly| {
                        let mut ct = bfv::evaluate(&plan, &powers, poly, &rk)?;
                        ct.switch_to_level(last)?;
                        codec.encode(&ct)
                    })
                    .collect::<Result<Vec<_>, bfv::BfvError>>()
            })
            .collect::<Result<_, _>>()
            .map_err(|e| ProtocolError::Config(format!("evaluating the query: {e}")))?;
        for ct in results.iter().flatten() {
            put(&mut out, ct);
        }
        meter.add(bundles.len());
    }
    Ok(out)
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}
