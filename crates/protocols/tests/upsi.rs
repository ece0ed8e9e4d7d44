//! Unbalanced labeled PSI (Cong et al. 2021) against the plaintext answer.

use privset_crypto::rng::SessionRng;
use privset_protocols::Meter;
use privset_protocols::upsi::item::{LEGACY_NONCE_LEN, nonce_len_for};
use privset_protocols::upsi::query::{ClientQuery, answer};
use privset_protocols::upsi::{Database, LabelLayout, Oprf, Preset};

fn item(i: u64) -> Vec<u8> {
    format!("+4479{i:08}").into_bytes()
}

fn label(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i as usize * 31 + k * 7) as u8).collect()
}

/// Runs the OPRF and the query on the functions the parties use; the client's answer
/// per item.
fn run(db: &Database, client: &[Vec<u8>], rng: &mut SessionRng) -> Vec<Option<Vec<u8>>> {
    let hashed = oprf(db, client, rng);
    let (query, message) = ClientQuery::new(db.preset().clone(), hashed, rng).unwrap();
    let meter = Meter::new();
    let reply = answer(db, &message, &meter).unwrap();
    // The server counts its evaluation bundle by bundle, to the end.
    let bundles: u32 = db.bundle_counts().iter().sum();
    let r = meter.read();
    assert_eq!((r.done, r.total), (u64::from(bundles), u64::from(bundles)));
    query
        .finish(&reply, &db.bundle_counts(), db.label_len(), db.nonce_len())
        .unwrap()
}

/// The client's items after the OPRF with the database's key, as the parties run it.
fn oprf(
    db: &Database,
    client: &[Vec<u8>],
    rng: &mut SessionRng,
) -> Vec<privset_protocols::upsi::item::HashedItem> {
    let (blinding, request) = db.oprf().blind(client, rng).unwrap();
    let response = db.oprf_key().evaluate(&request).unwrap();
    blinding.finish(client.len(), &response).unwrap()
}

/// A database of `server` items under `preset` (labeled when `label_len` > 0) queried
/// with `client`, against the plaintext answer.
fn check_with(preset: Preset, server: u64, client: &[Vec<u8>], label_len: usize) {
    check_in(Oprf::X25519, preset, server, client, label_len);
}

/// [`check_with`] with the OPRF in `oprf`'s group.
fn check_in(oprf: Oprf, preset: Preset, server: u64, client: &[Vec<u8>], label_len: usize) {
    let mut rng = SessionRng::from_seed([7; 32]);
    let mut db = Database::new(preset.clone(), label_len, oprf, &mut rng).unwrap();
    let items: Vec<Vec<u8>> = (0..server).map(item).collect();
    let labels: Vec<Vec<u8>> = if label_len > 0 {
        (0..server).map(|i| label(i, label_len)).collect()
    } else {
        Vec::new()
    };
    db.insert(&items, &labels, &mut rng).unwrap();
    let hashed = db.meter().read();
    assert_eq!((hashed.done, hashed.total), (server, server), "{hashed:?}");
    db.prepare().unwrap();
    let prepared = db.meter().read();
    assert_eq!(prepared.done, prepared.total, "{prepared:?}");
    let got = run(&db, client, &mut rng);
    for (i, (c, g)) in client.iter().zip(&got).enumerate() {
        let expected = items.iter().position(|x| x == c).map(|at| {
            if label_len > 0 {
                label(at as u64, label_len)
            } else {
                Vec::new()
            }
        });
        assert_eq!(
            g, &expected,
            "client item {i} ({}, server {server})",
            preset.name
        );
    }
}

/// `client_hits` items of the server's set (with repeats when the set is small) and
/// `client_misses` others.
fn check(preset: &str, server: u64, client_hits: u64, client_misses: u64, label_len: usize) {
    let mut client: Vec<Vec<u8>> = (0..client_hits)
        .map(|i| item(i * 3 % server.max(1)))
        .collect();
    client.extend((0..client_misses).map(|i| item(server + 10 + i)));
    check_with(Preset::named(preset).unwrap(), server, &client, label_len);
}

#[test]
fn unlabeled_matches_plaintext() {
    check("n4096-c1k", 5000, 100, 100, 0);
}

#[test]
fn labeled_matches_plaintext() {
    check("n4096-c1k", 3000, 50, 50, 16);
}

/// Databases on ristretto255 (every file before X25519 became the default) answer as
/// before, labeled and unlabeled, on the edges too.
#[test]
fn ristretto255_databases_match_plaintext() {
    let preset = Preset::named("n4096-c1k").unwrap();
    for (server, label_len) in [(3000u64, 0usize), (3000, 16), (1, 1), (0, 0)] {
        let mut client: Vec<Vec<u8>> = (0..40).map(|i| item(i * 3 % server.max(1))).collect();
        client.extend((0..40).map(|i| item(server + 10 + i)));
        check_in(
            Oprf::Ristretto255,
            preset.clone(),
            server,
            &client,
            label_len,
        );
    }
}

/// The OPRF's output is the same function of the item whichever blind the client drew
/// (X25519 redraws blinds that have no inverse key), and differs between the groups.
#[test]
fn the_oprf_output_does_not_depend_on_the_blind() {
    let preset = Preset::named("n4096-c1k").unwrap();
    let client: Vec<Vec<u8>> = (0..64).map(item).collect();
    let mut per_group = Vec::new();
    for group in Oprf::ALL {
        let mut rng = SessionRng::from_seed([8; 32]);
        let db = Database::new(preset.clone(), 0, group, &mut rng).unwrap();
        let first = oprf(&db, &client, &mut rng);
        for _ in 0..6 {
            assert_eq!(oprf(&db, &client, &mut rng), first, "{group:?}");
        }
        per_group.push(first);
    }
    assert_ne!(per_group[0], per_group[1]);
}

/// Every built-in preset on its deepest path: the query's sources at full size and at
/// the preset's query level, every derived power, a polynomial of the full bin degree
/// with random coefficients, the switch to the last level, the result shortened as
/// the server sends it; it must decrypt to the plaintext evaluation with noise to
/// spare, below what the shortening allows.
#[test]
fn presets_decrypt_on_their_deepest_path() {
    use privset_crypto::bfv::zt as poly;
    use privset_crypto::bfv::{self, FheEncrypter, RelinearizationKey, SecretKey};
    for preset in Preset::built_in() {
        let mut rng = SessionRng::from_seed([3; 32]);
        let params = preset.he().build().unwrap();
        let plan = preset.plan().unwrap();
        let t = preset.plain_modulus;
        let n = preset.degree;
        let sk = SecretKey::random(&params, &mut rng);
        let query_level = preset.query_level;
        let rk = RelinearizationKey::new_leveled(&sk, query_level, 0, &mut rng).unwrap();
        let x: Vec<u64> = (0..n).map(|_| rng.below(t)).collect();
        let sources = plan
            .sources()
            .iter()
            .map(|&s| {
                let values: Vec<u64> = x.iter().map(|&v| poly::pow(v, s.into(), t)).collect();
                let pt = bfv::encode_at_level(&params, &values, query_level).unwrap();
                sk.try_encrypt(&pt, &mut rng).unwrap()
            })
            .collect();
        let level = preset.evaluation_level;
        let powers = bfv::Powers::new(plan.compute(sources, &rk).unwrap(), &params, level).unwrap();
        let degree = preset.max_items_per_bin;
        let coefficients: Vec<Vec<u64>> = (0..=degree)
            .map(|_| (0..n).map(|_| rng.below(t)).collect())
            .collect();
        // Encoded as the server encodes them: packed, converted at the evaluation level.
        let polynomial = bfv::PackedPolynomial {
            par: params.clone(),
            level,
            coefficients: coefficients
                .iter()
                .map(|c| bfv::PackedPlaintext::from_slots(&params, c).unwrap())
                .collect(),
        };
        let mut ct = bfv::evaluate(&plan, &powers, &polynomial, &rk).unwrap();
        let before = bfv::noise_bits(&sk, &ct).unwrap();
        let budget = bfv::noise_budget_bits(&params, &preset.he(), query_level);
        ct.switch_to_level(params.max_level()).unwrap();
        let after = bfv::noise_bits(&sk, &ct).unwrap();
        let last_budget = bfv::noise_budget_bits(&params, &preset.he(), params.max_level());
        let codec = bfv::ResultCodec::new(&params).unwrap();
        let allowance = codec.noise_allowance_bits() as usize;
        println!(
            "{}: depth {}, query at level {query_level}, evaluated at level {level}: noise {before} of {budget} bits before the switch, {after} of {last_budget} after (the shortened result allows {allowance})",
            preset.name,
            plan.evaluation_depth()
        );
        let ct = codec.decode(&codec.encode(&ct).unwrap()).unwrap();
        let got = bfv::decrypt(&sk, &ct).unwrap();
        for slot in (0..n).step_by(97) {
            let c: Vec<u64> = coefficients.iter().map(|c| c[slot]).collect();
            assert_eq!(
                got[slot],
                poly::eval(&c, x[slot], t),
                "{} slot {slot}",
                preset.name
            );
        }
        assert!(
            before + 4 <= budget,
            "{}: {before} of {budget} bits",
            preset.name
        );
        assert!(
            after + 4 <= last_budget && after < allowance,
            "{}: {after} of {last_budget} bits (the shortened result allows {allowance})",
            preset.name
        );
    }
}

#[test]
fn database_updates_save_and_load() {
    use privset_protocols::upsi::store;
    let mut rng = SessionRng::from_seed([9; 32]);
    let preset = Preset::named("n4096-c1k").unwrap();
    let mut db = Database::new(preset, 4, Oprf::Ristretto255, &mut rng).unwrap();
    let items: Vec<Vec<u8>> = (0..2000).map(item).collect();
    let labels: Vec<Vec<u8>> = (0..2000).map(|i| label(i, 4)).collect();
    db.insert(&items, &labels, &mut rng).unwrap();
    // Remove some, relabel some, add new ones: only their bundles change.
    assert_eq!(db.remove(&items[..10]), 10);
    assert_eq!(db.remove(&[item(999_999)]), 0);
    db.insert(&items[10..20], &vec![vec![0xee; 4]; 10], &mut rng)
        .unwrap();
    db.insert(&[item(5000)], &[label(5000, 4)], &mut rng)
        .unwrap();
    db.prepare().unwrap();
    let client: Vec<Vec<u8>> = vec![
        item(0),
        item(5),
        item(12),
        item(5000),
        item(1500),
        item(7777),
    ];
    let expected = vec![
        None,
        None,
        Some(vec![0xee; 4]),
        Some(label(5000, 4)),
        Some(label(1500, 4)),
        None,
    ];
    assert_eq!(run(&db, &client, &mut rng), expected);
    // A new OPRF key: the same answers (labels re-encrypted), other hashes; then a
    // key in the other group, which moves the database to X25519.
    let before = store::save(&db).unwrap();
    db.rotate_key(&mut rng).unwrap();
    db.prepare().unwrap();
    assert_eq!(db.oprf(), Oprf::Ristretto255);
    assert_eq!(run(&db, &client, &mut rng), expected);
    assert_ne!(store::save(&db).unwrap(), before);
    db.rotate_key_to(Oprf::X25519, &mut rng).unwrap();
    db.prepare().unwrap();
    assert_eq!(run(&db, &client, &mut rng), expected);
    let bytes = store::save(&db).unwrap();
    let mut loaded = store::load(&bytes).unwrap();
    assert_eq!(loaded.oprf(), Oprf::X25519);
    assert_eq!(loaded.memory().ready, 0);
    loaded.prepare().unwrap();
    assert_eq!(loaded.len(), db.len());
    assert_eq!(loaded.bundle_counts(), db.bundle_counts());
    assert_eq!(run(&loaded, &client, &mut rng), expected);
    // The same answers with every bundle converted during the query (no cache), and
    // after changes made to a loaded copy.
    let mut packed = loaded.clone();
    packed.set_cache_bytes(0);
    packed.prepare().unwrap();
    assert_eq!(packed.memory().ready, 0);
    assert!(loaded.memory().ready > 0);
    assert_eq!(run(&packed, &client, &mut rng), expected);
    packed
        .insert(&[item(7777)], &[label(7777, 4)], &mut rng)
        .unwrap();
    assert_eq!(packed.remove(&[item(1500), item(12)]), 2);
    packed.prepare().unwrap();
    let mut changed = expected.clone();
    changed[2] = None;
    changed[4] = None;
    changed[5] = Some(label(7777, 4));
    assert_eq!(run(&packed, &client, &mut rng), changed);
    assert_eq!(run(&loaded, &client, &mut rng), expected);
    // Truncated, flipped, wrong magic, an unknown OPRF group: clear errors.
    // The OPRF group follows the nonce length, the label layout and the key seed.
    let oprf_byte = nonce_byte_at(&db) + 2 + 32;
    assert_eq!(bytes[oprf_byte], Oprf::X25519.code());
    for bad in [
        with_checksum({
            let mut b = bytes.clone();
            b[oprf_byte] = 77;
            b
        }),
        bytes[..bytes.len() - 1].to_vec(),
        bytes[..40].to_vec(),
        {
            let mut b = bytes.clone();
            b[100] ^= 1;
            b
        },
        b"not a database".to_vec(),
    ] {
        let err = store::load(&bad).err().expect("refused").to_string();
        assert!(err.contains("not valid"), "{err}");
    }
}

/// `file` with its last 32 bytes replaced by the checksum of the rest.
fn with_checksum(mut file: Vec<u8>) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let body = file.len() - 32;
    let digest = Sha256::digest(&file[..body]);
    file[body..].copy_from_slice(&digest);
    file
}

/// Where the file of `db` holds its key settings (u16 length, then the text): after
/// the nonce length, the label layout, the key seed and the OPRF group.
fn settings_at(db: &Database) -> usize {
    nonce_byte_at(db) + 1 + 1 + 32 + 1
}

/// A database file as privset wrote it before the key settings were recorded (version
/// 5): the current file of a database recording none, without their empty field.
fn version_5_file(db: &Database) -> Vec<u8> {
    assert!(db.key_settings().is_none());
    let mut file = privset_protocols::upsi::store::save(db).unwrap();
    file[16..20].copy_from_slice(&5u32.to_be_bytes());
    let at = settings_at(db);
    assert_eq!(file[at..at + 2], [0, 0]);
    file.drain(at..at + 2);
    with_checksum(file)
}

/// A database file as privset wrote it before its label layout was stored (version 4:
/// every label in prefixed cells): the version 5 file of such a database without it.
fn version_4_file(db: &Database) -> Vec<u8> {
    assert_eq!(db.label_layout(), LabelLayout::Prefixed);
    let mut file = version_5_file(db);
    file[16..20].copy_from_slice(&4u32.to_be_bytes());
    file.remove(nonce_byte_at(db) + 1);
    with_checksum(file)
}

/// A database file as privset wrote it before 2026-11-29 (version 3: no nonce length
/// either; 16-byte nonces).
fn version_3_file(db: &Database) -> Vec<u8> {
    assert_eq!(db.nonce_len(), LEGACY_NONCE_LEN);
    let mut file = version_4_file(db);
    file[16..20].copy_from_slice(&3u32.to_be_bytes());
    file.remove(nonce_byte_at(db));
    with_checksum(file)
}

/// A database file as privset wrote it before 2026-11-28 (version 2: no OPRF group
/// byte either; ristretto255).
fn version_2_file(db: &Database) -> Vec<u8> {
    assert_eq!(db.oprf(), Oprf::Ristretto255);
    let mut file = version_3_file(db);
    file[16..20].copy_from_slice(&2u32.to_be_bytes());
    file.remove(nonce_byte_at(db) + 32);
    with_checksum(file)
}

/// Where the file of `db` holds its labels' nonce length: after the magic, version,
/// preset (length and text) and label length; the label layout, the key seed and the
/// OPRF group follow.
fn nonce_byte_at(db: &Database) -> usize {
    16 + 4 + 4 + db.preset().to_toml().len() + 4
}

/// A prepared ristretto255 database of `n` items with 8-byte labels under 16-byte
/// nonces, as files of versions 1 to 3 hold.
fn ristretto255_database(n: u64, rng: &mut SessionRng) -> Database {
    let preset = Preset::named("n4096-c1k").unwrap();
    let mut db =
        Database::with_nonce_len(preset, 8, LEGACY_NONCE_LEN, Oprf::Ristretto255, rng).unwrap();
    let items: Vec<Vec<u8>> = (0..n).map(item).collect();
    let labels: Vec<Vec<u8>> = (0..n).map(|i| label(i, 8)).collect();
    db.insert(&items, &labels, rng).unwrap();
    db.prepare().unwrap();
    db
}

/// The client of the older-file tests and its answer from a [`ristretto255_database`]
/// of 2,000 items.
type Query = (Vec<Vec<u8>>, Vec<Option<Vec<u8>>>);

/// Loads `file`, an older file of `db` (a [`ristretto255_database`] of 2,000 items),
/// and checks that it answers as `db` would and saves as `db`'s current file.
fn load_old_file(file: &[u8], db: &Database, rng: &mut SessionRng) -> (Database, Query) {
    use privset_protocols::upsi::store;
    let mut old = store::load(file).unwrap();
    old.prepare().unwrap();
    let client = vec![item(7), item(1999), item(4000)];
    let expected = vec![Some(label(7, 8)), Some(label(1999, 8)), None];
    assert_eq!(run(&old, &client, rng), expected);
    assert_eq!(store::save(&old).unwrap(), store::save(db).unwrap());
    (old, (client, expected))
}

#[test]
fn version_4_files_load_with_prefixed_labels_and_the_layout_is_kept() {
    use privset_protocols::upsi::store;
    let mut rng = SessionRng::from_seed([15; 32]);
    let mut db = ristretto255_database(2000, &mut rng);
    let (old, _) = load_old_file(&version_4_file(&db), &db, &mut rng);
    assert_eq!(old.label_layout(), LabelLayout::Prefixed);
    // A raw layout is saved, loaded and kept by a key rotation.
    db.set_label_layout(LabelLayout::Raw);
    let mut again = store::load(&store::save(&db).unwrap()).unwrap();
    assert_eq!(again.label_layout(), LabelLayout::Raw);
    again.rotate_key(&mut rng).unwrap();
    assert_eq!(again.label_layout(), LabelLayout::Raw);
    // An unknown layout is a corrupt file.
    let mut bad = store::save(&db).unwrap();
    bad[nonce_byte_at(&db) + 1] = 2;
    let err = store::load(&with_checksum(bad)).err().unwrap().to_string();
    assert!(err.contains("label layout 2"), "{err}");
}

/// A version 5 file loads with no key settings recorded (the front ends refuse to serve
/// or change it); the settings a database records are saved, loaded and kept by a key
/// rotation, and a malformed settings field is a corrupt file.
#[test]
fn version_5_files_load_without_key_settings_and_settings_are_kept() {
    use privset_protocols::agreed::AgreedSettings;
    use privset_protocols::upsi::store;
    let mut rng = SessionRng::from_seed([16; 32]);
    let mut db = ristretto255_database(2000, &mut rng);
    let (old, _) = load_old_file(&version_5_file(&db), &db, &mut rng);
    assert!(old.key_settings().is_none());
    let settings = AgreedSettings::new()
        .with("key-columns", "1")
        .with("normalize", "email")
        .with("hash-ids", "none");
    db.set_key_settings(settings.clone());
    let mut again = store::load(&store::save(&db).unwrap()).unwrap();
    assert_eq!(again.key_settings(), Some(&settings));
    again.rotate_key(&mut rng).unwrap();
    assert_eq!(again.key_settings(), Some(&settings));
    // A setting without '=' in the recorded text.
    let mut bad = store::save(&db).unwrap();
    let at = settings_at(&db) + 2;
    assert_eq!(&bad[at..at + 12], b"key-columns=");
    bad[at + 11] = b'-';
    let err = store::load(&with_checksum(bad)).err().unwrap().to_string();
    assert!(err.contains("key settings"), "{err}");
}

#[test]
fn version_2_files_load_as_ristretto255() {
    let mut rng = SessionRng::from_seed([13; 32]);
    let db = ristretto255_database(2000, &mut rng);
    let (old, _) = load_old_file(&version_2_file(&db), &db, &mut rng);
    assert_eq!(old.oprf(), Oprf::Ristretto255);
}

/// A file of version 3 (16-byte nonces) loads and answers; rotating its key moves its
/// labels to the sized nonces with the same labels (an 8-byte label on n4096-c1k then
/// takes two 95-bit parts, under a 15-byte nonce, instead of three).
#[test]
fn version_3_files_load_and_move_to_short_nonces() {
    use privset_protocols::upsi::store;
    let mut rng = SessionRng::from_seed([14; 32]);
    let db = ristretto255_database(2000, &mut rng);
    let (mut old, (client, expected)) = load_old_file(&version_3_file(&db), &db, &mut rng);
    assert_eq!(old.nonce_len(), LEGACY_NONCE_LEN);
    let before = old.memory().packed;
    old.rotate_key(&mut rng).unwrap();
    old.prepare().unwrap();
    assert_eq!(old.nonce_len(), nonce_len_for(old.preset(), 8));
    assert_eq!(old.nonce_len(), 15);
    assert_eq!(run(&old, &client, &mut rng), expected);
    assert!(
        old.memory().packed < before,
        "{} {before}",
        old.memory().packed
    );
    let again = store::load(&store::save(&old).unwrap()).unwrap();
    assert_eq!(again.nonce_len(), 15);
    // A nonce length outside 4 to 32 bytes is a corrupt file.
    let mut bad = store::save(&old).unwrap();
    bad[nonce_byte_at(&old)] = 3;
    let err = store::load(&with_checksum(bad)).err().unwrap().to_string();
    assert!(err.contains("nonces of 3 bytes"), "{err}");
}

/// A database file as privset wrote it before 2026-11-26 (version 1: items only).
fn version_1_file(db: &Database) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut out = b"PRIVSET-UPSI-DB\n".to_vec();
    out.extend_from_slice(&1u32.to_be_bytes());
    let preset = db.preset().to_toml();
    out.extend_from_slice(&(preset.len() as u32).to_be_bytes());
    out.extend_from_slice(preset.as_bytes());
    out.extend_from_slice(&(db.label_len() as u32).to_be_bytes());
    // The key seed, from the current format's header (after the nonce length and the
    // label layout).
    let current = privset_protocols::upsi::store::save(db).unwrap();
    let at = nonce_byte_at(db) + 2;
    out.extend_from_slice(&current[at..at + 32]);
    out.extend_from_slice(&(db.len() as u64).to_be_bytes());
    for (item, hash, label) in db.records() {
        out.extend_from_slice(&(item.len() as u32).to_be_bytes());
        out.extend_from_slice(item);
        out.extend_from_slice(&hash.to_be_bytes());
        out.extend_from_slice(label);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

#[test]
fn version_1_files_still_load() {
    use privset_protocols::upsi::store;
    let mut rng = SessionRng::from_seed([12; 32]);
    let db = ristretto255_database(3000, &mut rng);
    let mut old = store::load(&version_1_file(&db)).unwrap();
    old.prepare().unwrap();
    assert_eq!(old.len(), 3000);
    let client = vec![item(7), item(2999), item(4000)];
    let expected = vec![Some(label(7, 8)), Some(label(2999, 8)), None];
    assert_eq!(run(&old, &client, &mut rng), expected);
    // Saved again, it is a current file with the same answers.
    let again = store::load(&store::save(&old).unwrap()).unwrap();
    assert_eq!(run(&again, &client, &mut rng), expected);
    let mut bad = version_1_file(&db);
    let at = bad.len() - 40;
    bad[at] ^= 1;
    assert!(store::load(&bad).is_err());
}

#[test]
fn edge_cases() {
    // Empty server, empty client, one item, everything matching.
    check("n4096-c1k", 0, 0, 5, 0);
    check("n4096-c1k", 1, 1, 0, 1);
    check("n4096-c1k", 300, 300, 0, 0);
    check("n4096-c4k", 2000, 0, 0, 0);
    // A client over the preset's limit is refused before anything is sent.
    let mut rng = SessionRng::from_seed([1; 32]);
    let preset = Preset::named("n4096-c1k").unwrap();
    let hashed = vec![
        privset_protocols::upsi::item::HashedItem {
            hash: 1,
            label_key: [0; 32]
        };
        1025
    ];
    assert!(ClientQuery::new(preset, hashed, &mut rng).is_err());
}

/// The small-client preset (one ciphertext's bins): one item, a full 256, labeled and
/// unlabeled, and a client of 257 refused.
#[test]
fn small_client_preset_matches_plaintext() {
    check("n4096-c256", 4000, 1, 0, 0);
    check("n4096-c256", 4000, 0, 1, 8);
    check("n4096-c256", 4000, 128, 128, 16);
    let mut rng = SessionRng::from_seed([2; 32]);
    let hashed = vec![
        privset_protocols::upsi::item::HashedItem {
            hash: 1,
            label_key: [0; 32]
        };
        257
    ];
    let err = ClientQuery::new(Preset::named("n4096-c256").unwrap(), hashed, &mut rng);
    assert!(err.is_err());
}

mod parties {
    use super::*;
    use privset_net::memory::{Direction, HookAction, PairError, run_pair, run_pair_with};
    use privset_protocols::upsi::{Client, Server};
    use privset_protocols::{PeerMisbehaved, ProtocolError};
    use std::sync::Arc;

    fn database(server: u64, label_len: usize) -> Arc<Database> {
        database_in(Oprf::X25519, server, label_len)
    }

    fn database_in(oprf: Oprf, server: u64, label_len: usize) -> Arc<Database> {
        let mut rng = SessionRng::from_seed([4; 32]);
        let preset = Preset::named("n4096-c1k").unwrap();
        let mut db = Database::new(preset, label_len, oprf, &mut rng).unwrap();
        let items: Vec<Vec<u8>> = (0..server).map(item).collect();
        let labels: Vec<Vec<u8>> = if label_len > 0 {
            (0..server).map(|i| label(i, label_len)).collect()
        } else {
            Vec::new()
        };
        db.insert(&items, &labels, &mut rng).unwrap();
        db.prepare().unwrap();
        Arc::new(db)
    }

    /// Both OPRF groups, the client learning which (and the label layout) from the
    /// server's hello.
    #[test]
    fn client_and_server_agree_with_plaintext() {
        for (oprf, layout) in Oprf::ALL
            .into_iter()
            .zip([LabelLayout::Raw, LabelLayout::Prefixed])
        {
            let mut db = (*database_in(oprf, 4000, 32)).clone();
            db.set_label_layout(layout);
            let db = Arc::new(db);
            // Hits, misses and a duplicate.
            let client_items: Vec<Vec<u8>> = vec![
                item(1),
                item(9_000),
                item(3999),
                item(1),
                item(2500),
                item(4000),
            ];
            let mut client = Client::new(client_items.clone(), [1; 32]).unwrap();
            let mut server = Server::new(db.clone(), [2; 32]).unwrap();
            let (up, down) = run_pair(&mut client, &mut server).unwrap();
            let out = client.into_output().unwrap();
            assert_eq!(server.into_output().unwrap().client_items, 6);
            let expected: Vec<Option<Vec<u8>>> = client_items
                .iter()
                .map(|c| (0..4000).find(|&i| &item(i) == c).map(|i| label(i, 32)))
                .collect();
            assert_eq!(out.matches, expected, "{oprf:?}");
            assert_eq!(out.preset, "n4096-c1k");
            assert_eq!(out.label_layout, layout);
            assert!(
                out.false_positive_log2 < -40.0,
                "{}",
                out.false_positive_log2
            );
            assert!(up.sent > 0 && down.sent > 0);
        }
    }

    /// The run with the server hello's byte `back` bytes before its preset's length
    /// (which must hold `current`) set to `value`.
    fn fail_with_hello_byte(db: &Arc<Database>, back: usize, current: u8, value: u8) -> PairError {
        let toml = db.preset().to_toml();
        fail(db, vec![item(1)], &mut |d, i, m| {
            if d == Direction::BtoA && i == 0 {
                let at = m
                    .windows(toml.len())
                    .position(|w| w == toml.as_bytes())
                    .unwrap();
                let byte = at - 4 - back;
                assert_eq!(m[byte], current);
                m[byte] = value;
            }
            HookAction::Deliver
        })
    }

    #[test]
    fn an_unknown_oprf_group_in_the_servers_hello_is_refused() {
        let db = database(100, 0);
        // Before the preset's length: the label layout (1), the nonce length (1), the
        // label length (4), the group.
        let e = fail_with_hello_byte(&db, 1 + 1 + 4 + 1, Oprf::X25519.code(), 99);
        assert!(
            matches!(e.error(), Some(ProtocolError::Incompatible(m)) if m.contains("OPRF group (99)")),
            "{e}"
        );
    }

    #[test]
    fn a_label_nonce_outside_4_to_32_bytes_in_the_servers_hello_is_refused() {
        let db = database(100, 4);
        for nonce in [0u8, 3, 33, 255] {
            let e = fail_with_hello_byte(&db, 2, db.nonce_len() as u8, nonce);
            let expected = format!("nonces of {nonce} bytes");
            assert!(
                matches!(e.error(), Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::Malformed(m))) if m.contains(&expected)),
                "{e}"
            );
        }
    }

    #[test]
    fn an_unknown_label_layout_in_the_servers_hello_is_refused() {
        let db = database(100, 4);
        let e = fail_with_hello_byte(&db, 1, LabelLayout::Prefixed.code(), 2);
        assert!(
            matches!(e.error(), Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::Malformed(m))) if m.contains("label layout (2)")),
            "{e}"
        );
    }

    fn fail(
        db: &Arc<Database>,
        client_items: Vec<Vec<u8>>,
        hook: &mut dyn FnMut(Direction, u32, &mut Vec<u8>) -> HookAction,
    ) -> PairError {
        let mut client = Client::new(client_items, [1; 32]).unwrap();
        let mut server = Server::new(db.clone(), [2; 32]).unwrap();
        run_pair_with(&mut client, &mut server, hook).expect_err("the run fails")
    }

    #[test]
    fn too_many_client_items_are_refused_at_the_hello() {
        let db = database(100, 0);
        let e = fail(&db, (0..1025).map(item).collect(), &mut |_, _, _| {
            HookAction::Deliver
        });
        assert!(
            matches!(e.error(), Some(ProtocolError::Incompatible(m)) if m.contains("at most 1024")),
            "{e}"
        );
    }

    #[test]
    fn an_insecure_preset_from_the_server_is_refused() {
        let db = database(100, 0);
        let e = fail(&db, vec![item(1)], &mut |d, i, m| {
            if d == Direction::BtoA && i == 0 {
                let text = b"[36, 36, 37]";
                let at = m.windows(text.len()).position(|w| w == text).unwrap();
                m[at..at + text.len()].copy_from_slice(b"[40, 40, 40]");
            }
            HookAction::Deliver
        });
        assert!(
            matches!(e.error(), Some(ProtocolError::Incompatible(m)) if m.contains("128-bit")),
            "{e}"
        );
    }

    #[test]
    fn truncated_or_garbled_messages_fail_cleanly() {
        let db = database(500, 8);
        // (direction, message index): the OPRF request, the query, the OPRF answer, the answer.
        for (dir, index) in [
            (Direction::AtoB, 1),
            (Direction::AtoB, 2),
            (Direction::BtoA, 1),
            (Direction::BtoA, 2),
        ] {
            for garble in [false, true] {
                let e = fail(&db, vec![item(1), item(2)], &mut |d, i, m| {
                    if d == dir && i == index {
                        if garble {
                            let n = m.len();
                            for b in &mut m[n / 2..] {
                                *b = 0xff;
                            }
                        } else {
                            m.truncate(m.len() - 7);
                        }
                    }
                    HookAction::Deliver
                });
                assert!(
                    matches!(e.error(), Some(ProtocolError::PeerMisbehaved(_))),
                    "{dir:?} {index} garble={garble}: {e}"
                );
            }
        }
    }
}

/// 40 client items, about half in the server's set.
fn check_preset(preset: Preset, server: u64, label_len: usize) {
    let client: Vec<Vec<u8>> = (0..40).map(|i| item(i * 97 % (2 * server))).collect();
    check_with(preset, server, &client, label_len);
}

#[test]
fn paterson_stockmeyer_preset_matches_plaintext() {
    check_preset(Preset::named("n8192-c1k").unwrap(), 3000, 16);
}

#[test]
fn labels_of_one_and_1024_bytes() {
    check_preset(Preset::named("n4096-c1k").unwrap(), 500, 1);
    check_preset(Preset::named("n4096-c1k").unwrap(), 300, 1024);
}

/// A preset with bins of 6 items: a few thousand items spread every bin over several
/// bundles, so colliding items land in later bundles.
#[test]
fn items_colliding_in_bins_spread_over_bundles() {
    let preset = Preset::parse(
        "name = \"tiny-bins\"\ndegree = 4096\nplain_modulus = 786433\n\
         moduli_bits = [36, 36, 37]\nfelts_per_item = 5\ntable_size = 1638\n\
         max_items_per_bin = 6\nmax_client_items = 1024\nps_low_degree = 0\n\
         query_powers = [1, 2, 4]\n",
    )
    .unwrap();
    let mut rng = SessionRng::from_seed([6; 32]);
    let mut db = Database::new(preset.clone(), 0, Oprf::X25519, &mut rng).unwrap();
    db.insert(&(0..8000).map(item).collect::<Vec<_>>(), &[], &mut rng)
        .unwrap();
    assert!(db.max_bundles_per_index() >= 3, "{:?}", db.bundle_counts());
    check_preset(preset.clone(), 8000, 0);
    check_preset(preset, 8000, 4);
}

/// A query whose ciphertexts or relinearization key are for another level than the
/// server's preset names is refused as the client's fault, before any evaluation.
#[test]
fn a_query_at_the_wrong_level_is_refused() {
    let preset = Preset::named("n8192-c1k").unwrap();
    assert_eq!(preset.query_level, 1);
    let mut rng = SessionRng::from_seed([12; 32]);
    let mut db = Database::new(preset.clone(), 0, Oprf::X25519, &mut rng).unwrap();
    let items: Vec<Vec<u8>> = (0..50).map(item).collect();
    db.insert(&items, &[], &mut rng).unwrap();
    db.prepare().unwrap();
    let client = vec![item(1), item(70)];
    let hashed = oprf(&db, &client, &mut rng);
    // The whole query at level 0: its key is refused first.
    let level_0 = Preset {
        query_level: 0,
        ..preset.clone()
    };
    let (_, message) = ClientQuery::new(level_0, hashed.clone(), &mut rng).unwrap();
    let e = answer(&db, &message, &Meter::new()).unwrap_err();
    assert!(
        matches!(e, privset_protocols::ProtocolError::PeerMisbehaved(_))
            && e.to_string().contains("level 1"),
        "{e}"
    );
    // The right key, then the level-1 ciphertexts replaced by level-0 ones.
    let (_, right) = ClientQuery::new(preset.clone(), hashed.clone(), &mut rng).unwrap();
    let mixed = [
        &right[..message_key_len(&right)],
        &message[message_key_len(&message)..],
    ]
    .concat();
    let e = answer(&db, &mixed, &Meter::new()).unwrap_err();
    assert!(
        matches!(e, privset_protocols::ProtocolError::PeerMisbehaved(_))
            && e.to_string()
                .contains("at level 0 where level 1 was expected"),
        "{e}"
    );
    // And the right query is answered.
    let (query, message) = ClientQuery::new(preset, hashed, &mut rng).unwrap();
    let reply = answer(&db, &message, &Meter::new()).unwrap();
    let got = query
        .finish(&reply, &db.bundle_counts(), 0, db.nonce_len())
        .unwrap();
    assert_eq!(got, vec![Some(Vec::new()), None]);
}

/// Bytes of a query message's length-prefixed relinearization key.
fn message_key_len(message: &[u8]) -> usize {
    4 + u32::from_be_bytes(message[..4].try_into().unwrap()) as usize
}

/// A database built under the earlier n8192 parameters (moduli
/// [56, 56, 56, 50], query at level 0) moves to today's n8192-c1k without a rebuild and
/// answers as a fresh one; a preset of another layout is refused.
#[test]
fn a_database_moves_to_a_preset_of_the_same_layout() {
    let new = Preset::named("n8192-c1k").unwrap();
    let old = Preset {
        moduli_bits: vec![56, 56, 56, 50],
        query_level: 0,
        ..new.clone()
    };
    let mut rng = SessionRng::from_seed([13; 32]);
    let mut db = Database::new(old.clone(), 16, Oprf::X25519, &mut rng).unwrap();
    let items: Vec<Vec<u8>> = (0..400).map(item).collect();
    let labels: Vec<Vec<u8>> = (0..400).map(|i| label(i, 16)).collect();
    db.insert(&items, &labels, &mut rng).unwrap();
    db.prepare().unwrap();
    let client: Vec<Vec<u8>> = (0..20).map(|i| item(i * 37)).collect();
    let expected: Vec<Option<Vec<u8>>> = (0..20u64)
        .map(|i| (i * 37 < 400).then(|| label(i * 37, 16)))
        .collect();
    assert_eq!(run(&db, &client, &mut rng), expected);
    let e = db
        .clone()
        .set_preset(Preset::named("n4096-c1k").unwrap())
        .unwrap_err();
    assert!(
        e.to_string().contains("lays out the data differently"),
        "{e}"
    );
    // A clone shares the polynomials: moving it leaves the original as it was.
    let mut moved = db.clone();
    moved.set_preset(new.clone()).unwrap();
    moved.prepare().unwrap();
    assert_eq!(moved.preset(), &new);
    assert_eq!(run(&moved, &client, &mut rng), expected);
    assert_eq!(db.preset(), &old);
    assert_eq!(run(&db, &client, &mut rng), expected);
    // Moved in place (the only reference), then changed and queried again.
    db.set_preset(new).unwrap();
    db.remove(&[item(0)]);
    db.prepare().unwrap();
    let mut after = expected.clone();
    after[0] = None;
    assert_eq!(run(&db, &client, &mut rng), after);
}
