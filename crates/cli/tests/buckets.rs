//! Bucketed runs (`--buckets`) end to end: real processes over mutual TLS and over an
//! exchange directory. Every run is checked against the plaintext intersection computed
//! here, and against the unbucketed run's answer; a party killed with SIGKILL at random
//! moments and started again with the same command must finish with the right answer,
//! without running again the buckets it had finished (at most the one in flight, which
//! the peer may not have recorded).
//!
//! The kill moments come from a seed printed at the start; rerun with
//! `PRIVSET_KILL_SEED=<seed>` to replay them.

#![cfg(unix)]

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-buckets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

fn spawn(args: &[String]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn write_ids(path: &Path, ids: &[String]) {
    let mut text = String::from("id\n");
    for id in ids {
        text.push_str(id);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn read_ids(path: &Path) -> BTreeSet<String> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records().map(|rec| rec.unwrap()[0].to_string()).collect()
}

fn certs(dir: &Path) -> PathBuf {
    let out = dir.join("certs");
    let o = Command::new(BIN)
        .args([
            "certs",
            "--out",
            out.to_str().unwrap(),
            "--names",
            "receiver,sender",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Where the two parties meet.
enum Meet {
    Tls { certs: PathBuf, addr: String },
    Dir(PathBuf),
}

/// One psi party's command line (the same for every restart).
fn args(dir: &Path, role: &str, meet: &Meet, tag: &str, extra: &[&str]) -> Vec<String> {
    args_op("psi", dir, role, meet, tag, extra)
}

/// One party's command line for `op` (psi's receiver also writes rows).
fn args_op(
    op: &str,
    dir: &Path,
    role: &str,
    meet: &Meet,
    tag: &str,
    extra: &[&str],
) -> Vec<String> {
    let p = |name: String| dir.join(name).display().to_string();
    // pi-sum's P1 plays the receiver's part, P2 the sender's (files keep those names).
    let role_flag = match (op, role) {
        ("pi-sum", "receiver") => "p1",
        ("pi-sum", _) => "p2",
        _ => role,
    };
    let mut a: Vec<String> = vec![op.into(), "--role".into(), role_flag.into()];
    match meet {
        Meet::Tls { certs, addr } => {
            let link = if role == "receiver" {
                "--listen"
            } else {
                "--peer"
            };
            a.extend([link.into(), addr.clone()]);
            for (flag, file) in [
                ("--tls-ca", "ca.pem".to_string()),
                ("--tls-cert", format!("{role}.pem")),
                ("--tls-key", format!("{role}.key")),
            ] {
                a.extend([flag.into(), certs.join(file).display().to_string()]);
            }
            if role == "sender" {
                a.extend(["--tls-server-name".into(), "receiver".into()]);
            }
        }
        Meet::Dir(x) => {
            a.extend([
                "--exchange-dir".into(),
                x.display().to_string(),
                "--poll-interval-ms".into(),
                "5".into(),
            ]);
        }
    }
    a.extend([
        "--input".into(),
        p(format!("{role}.csv")),
        "--id-column".into(),
        "id".into(),
        "--output".into(),
        p(format!("{tag}-{role}.json")),
        "--state-dir".into(),
        p(format!("state-{role}")),
        "--timeout".into(),
        "60".into(),
        "--progress".into(),
        "json".into(),
    ]);
    if role == "receiver" && (op == "psi" || op == "psu") {
        a.extend(["--output-rows".into(), p(format!("{tag}-rows.csv"))]);
    }
    if op == "private-id" {
        a.extend(["--output-rows".into(), p(format!("{tag}-{role}-rows.csv"))]);
    }
    if role == "sender" && (op == "psi-card-sum" || op == "pi-sum") {
        a.extend(["--value-column".into(), "v".into()]);
    }
    // P2's own settings.
    let p2_only = |flag: &&str| op == "pi-sum" && role == "receiver" && *flag == "--sum-of-squares";
    a.extend(extra.iter().filter(|f| !p2_only(f)).map(|s| s.to_string()));
    a
}

/// Runs both parties to the end; returns the receiver's matches and both reports.
fn run_pair(
    dir: &Path,
    meet: &Meet,
    tag: &str,
    extra: &[&str],
) -> (BTreeSet<String>, serde_json::Value, serde_json::Value) {
    let r = spawn(&args(dir, "receiver", meet, tag, extra));
    std::thread::sleep(Duration::from_millis(100));
    let s = spawn(&args(dir, "sender", meet, tag, extra));
    let (s, r) = (s.wait_with_output().unwrap(), r.wait_with_output().unwrap());
    assert!(r.status.success(), "receiver: {}", stderr(&r));
    assert!(s.status.success(), "sender: {}", stderr(&s));
    (
        read_ids(&dir.join(format!("{tag}-rows.csv"))),
        json(&dir.join(format!("{tag}-receiver.json"))),
        json(&dir.join(format!("{tag}-sender.json"))),
    )
}

/// The sender's value of its `k`-th item (the shared ones come first).
fn value_of(k: u64) -> u64 {
    k.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40
}

/// The plaintext sum over the first `shared` items.
fn plain_sum(shared: usize) -> u64 {
    (0..shared as u64).map(value_of).sum()
}

/// Receiver and sender sets with `shared` common items (the sender's with a value
/// column `v`, [`value_of`]); returns the plaintext intersection.
fn write_sets(dir: &Path, n_r: usize, n_s: usize, shared: usize, seed: u64) -> BTreeSet<String> {
    let id = |k: u64| {
        format!(
            "{:016x}@example.org",
            k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed
        )
    };
    let common: Vec<String> = (0..shared as u64).map(id).collect();
    let mut r = common.clone();
    r.extend((0..(n_r - shared) as u64).map(|k| id(1 << 40 | k)));
    let mut s: Vec<String> = common
        .iter()
        .cloned()
        .chain((0..(n_s - shared) as u64).map(|k| id(2 << 40 | k)))
        .enumerate()
        .map(|(k, i)| format!("{i},{}", value_of(k as u64)))
        .collect();
    s.reverse();
    write_ids(&dir.join("receiver.csv"), &r);
    let mut text = String::from("id,v\n");
    for row in &s {
        text.push_str(row);
        text.push('\n');
    }
    std::fs::write(dir.join("sender.csv"), text).unwrap();
    common.into_iter().collect()
}

fn check(
    (rows, r, s): &(BTreeSet<String>, serde_json::Value, serde_json::Value),
    want: &BTreeSet<String>,
    buckets: u64,
    what: &str,
) {
    assert_eq!(rows, want, "{what}: rows");
    assert_eq!(r["cardinality"], want.len() as u64, "{what}");
    assert_eq!(r["buckets"]["count"], buckets, "{what}");
    assert_eq!(s["buckets"]["count"], buckets, "{what}");
    assert!(
        s.get("cardinality").is_none(),
        "{what}: the sender learns nothing"
    );
    // Every bucket of a party has the same public size; the peer saw only that size.
    let padded = r["buckets"]["padded"].clone();
    let peer_padded = s["buckets"]["padded"].clone();
    for (mine, theirs) in r["buckets"]["per_bucket"]
        .as_array()
        .unwrap()
        .iter()
        .zip(s["buckets"]["per_bucket"].as_array().unwrap())
    {
        assert_eq!(mine["padded"], padded, "{what}");
        assert_eq!(mine["peer_padded"], peer_padded, "{what}");
        assert_eq!(theirs["peer_padded"], padded, "{what}");
    }
}

#[test]
fn bucketed_psi_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("answers");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    // (receiver, sender, shared, buckets)
    for (case, (n_r, n_s, shared, buckets)) in [
        (3000, 2000, 700, "7"),
        (1000, 1000, 1000, "3"), // identical
        (1000, 1000, 0, "4"),    // disjoint
        (1, 1, 1, "2"),          // size 1: one bucket is empty on each side
        (1, 3000, 1, "5"),       // very unbalanced
        (2000, 1, 0, "16"),
    ]
    .into_iter()
    .enumerate()
    {
        let want = write_sets(&dir, n_r, n_s, shared, case as u64);
        let got = run_pair(
            &dir,
            &tls(),
            &format!("case{case}"),
            &["--buckets", buckets],
        );
        check(
            &got,
            &want,
            buckets.parse().unwrap(),
            &format!("case {case}"),
        );
    }
    // VOLE psi runs bucket by bucket like the DH constructions, over both transports.
    let want = write_sets(&dir, 3000, 2000, 700, 42);
    let vole = ["--buckets", "5", "--mqrpmt", "vole"];
    check(&run_pair(&dir, &tls(), "vole", &vole), &want, 5, "vole");
    let exchange = Meet::Dir(dir.join("vole-exchange"));
    check(
        &run_pair(&dir, &exchange, "vole-dir", &vole),
        &want,
        5,
        "vole, exchange dir",
    );
    // auto picks one bucket for sets this small; its answer and the unbucketed one agree.
    let want = write_sets(&dir, 2500, 2500, 1234, 99);
    let auto = run_pair(&dir, &tls(), "auto", &["--buckets", "auto"]);
    check(&auto, &want, 1, "auto");
    let plain = run_pair(&dir, &tls(), "plain", &[]);
    assert_eq!(plain.0, want, "unbucketed");
    assert!(plain.1.get("buckets").is_none());
    // Duplicates meet in one staging file: refused by default, kept once with `first`.
    let mut r: Vec<String> = (0..500).map(|k| format!("d{k}")).collect();
    r.push("d7".into());
    write_ids(&dir.join("receiver.csv"), &r);
    write_ids(
        &dir.join("sender.csv"),
        &["d7".into(), "d8".into(), "x".into()],
    );
    let o = Command::new(BIN)
        .args(args(&dir, "receiver", &tls(), "dup", &["--buckets", "3"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 502"), "{}", stderr(&o));
    let got = run_pair(
        &dir,
        &tls(),
        "dupfirst",
        &["--buckets", "3", "--duplicates", "first"],
    );
    let want: BTreeSet<String> = ["d7".to_string(), "d8".to_string()].into();
    check(&got, &want, 3, "duplicates first");
    // Over an exchange directory, and the state is gone once the result is written.
    let want = write_sets(&dir, 1500, 1200, 300, 7);
    let got = run_pair(
        &dir,
        &Meet::Dir(dir.join("exchange")),
        "dir",
        &["--buckets", "4"],
    );
    check(&got, &want, 4, "exchange dir");
    assert_eq!(got.1["transport"], "exchange-dir");
    for role in ["receiver", "sender"] {
        let left: Vec<_> = std::fs::read_dir(dir.join(format!("state-{role}")))
            .unwrap()
            .collect();
        assert!(
            left.is_empty(),
            "{role}'s state directory still holds {left:?}"
        );
    }
    // Two different explicit counts are refused by both.
    let addr = port();
    let meet = Meet::Tls {
        certs: certs.clone(),
        addr,
    };
    let r = spawn(&args(
        &dir,
        "receiver",
        &meet,
        "mismatch",
        &["--buckets", "3"],
    ));
    std::thread::sleep(Duration::from_millis(100));
    let s = spawn(&args(
        &dir,
        "sender",
        &meet,
        "mismatch",
        &["--buckets", "4"],
    ));
    let (s, r) = (s.wait_with_output().unwrap(), r.wait_with_output().unwrap());
    assert!(!r.status.success() && !s.status.success());
    assert!(stderr(&r).contains("bucket count"), "{}", stderr(&r));
    // The staged rows are identifiers in the clear: a state directory inside the
    // exchange directory is refused before anything is staged.
    let x = dir.join("shared");
    let o = Command::new(BIN)
        .args([
            "psi",
            "--role",
            "receiver",
            "--exchange-dir",
            x.to_str().unwrap(),
        ])
        .args([
            "--state-dir",
            x.join("state").to_str().unwrap(),
            "--buckets",
            "2",
        ])
        .args([
            "--input",
            dir.join("receiver.csv").to_str().unwrap(),
            "--id-column",
            "id",
        ])
        .args(["--output", dir.join("o.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        !x.join("state").exists(),
        "nothing staged inside the shared directory"
    );
    // Operations whose per-bucket answers would reveal more are refused up front.
    let o = Command::new(BIN)
        .args([
            "psi-share",
            "--role",
            "receiver",
            "--listen",
            "127.0.0.1:1",
            "--insecure-no-tls",
        ])
        .args([
            "--input",
            "x.csv",
            "--id-column",
            "id",
            "--output",
            "o.json",
            "--buckets",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("and private-id only"), "{}", stderr(&o));
}

/// Runs both parties of `op` (no rows) to the end; returns both reports.
fn run_op(
    op: &str,
    dir: &Path,
    meet: &Meet,
    tag: &str,
    extra: &[&str],
) -> (serde_json::Value, serde_json::Value) {
    let r = spawn(&args_op(op, dir, "receiver", meet, tag, extra));
    std::thread::sleep(Duration::from_millis(100));
    let s = spawn(&args_op(op, dir, "sender", meet, tag, extra));
    let (s, r) = (s.wait_with_output().unwrap(), r.wait_with_output().unwrap());
    assert!(r.status.success(), "receiver: {}", stderr(&r));
    assert!(s.status.success(), "sender: {}", stderr(&s));
    (
        json(&dir.join(format!("{tag}-receiver.json"))),
        json(&dir.join(format!("{tag}-sender.json"))),
    )
}

/// The value layout's cases: (receiver, sender, shared, parts, extra settings), every
/// group and last message among them.
const VALUE_CASES: [(usize, usize, usize, &str, &[&str]); 7] = [
    (3000, 2000, 700, "7", &[]),
    (1000, 1000, 1000, "3", &["--last-message", "gcs"]), // identical
    (1000, 1000, 0, "4", &["--last-message", "list"]),   // disjoint
    (1, 1, 1, "2", &["--group", "x25519"]),              // size 1: empty parts
    (1, 3000, 1, "5", &["--group", "p256"]),             // very unbalanced
    (2000, 1, 0, "16", &[]),
    (2000, 1, 1, "1", &["--group", "p256-compressed"]),
];

/// Both parties' identifiers as [`write_sets`] wrote them: the plaintext union.
fn union_of_sets(dir: &Path) -> BTreeSet<String> {
    let mut union = read_ids(&dir.join("receiver.csv"));
    union.extend(read_ids(&dir.join("sender.csv")));
    union
}

/// Every row of a rows file (duplicates kept).
fn row_list(path: &Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records().map(|rec| rec.unwrap()[0].to_string()).collect()
}

/// psu in value-partitioned units with a transfer unit per part: the receiver's rows
/// are the plaintext union, each identifier once, as the unbucketed run's; the sender
/// learns nothing; over TLS and an exchange directory, every group and last message.
#[test]
fn bucketed_psu_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("psu");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    let check = |tag: &str, r: &serde_json::Value, s: &serde_json::Value, what: &str| {
        let want = union_of_sets(&dir);
        let rows = row_list(&dir.join(format!("{tag}-rows.csv")));
        assert_eq!(rows.len(), want.len(), "{what}: each union item once");
        assert_eq!(rows.into_iter().collect::<BTreeSet<_>>(), want, "{what}");
        assert_eq!(r["rows"], want.len() as u64, "{what}: {r}");
        assert!(r.get("cardinality").is_none(), "{what}: {r}");
        assert!(
            s.get("rows").is_none() && s.get("cardinality").is_none(),
            "{what}: {s}"
        );
    };
    for (case, (n_r, n_s, shared, buckets, extra)) in VALUE_CASES.into_iter().enumerate() {
        write_sets(&dir, n_r, n_s, shared, 60 + case as u64);
        let what = format!("case {case}");
        let mut flags = vec!["--buckets", buckets];
        flags.extend_from_slice(extra);
        let tag = format!("psu{case}");
        let (r, s) = run_op("psu", &dir, &tls(), &tag, &flags);
        check(&tag, &r, &s, &what);
        let units = r["buckets"]["per_bucket"].as_array().unwrap().len();
        let parts: usize = buckets.parse().unwrap();
        // Evaluate units, then a send, a compare and a transfer unit per part.
        assert!(units > 3 * parts, "{what}: {units} units for {parts} parts");
    }
    write_sets(&dir, 2500, 2400, 1234, 94);
    let (r, s) = run_op("psu", &dir, &tls(), "psu-auto", &["--buckets", "auto"]);
    check("psu-auto", &r, &s, "auto");
    let (r, s) = run_op("psu", &dir, &tls(), "psu-plain", &[]);
    check("psu-plain", &r, &s, "unbucketed");
    write_sets(&dir, 1500, 1200, 300, 93);
    let (r, s) = run_op(
        "psu",
        &dir,
        &Meet::Dir(dir.join("psu-exchange")),
        "psu-dir",
        &["--buckets", "4"],
    );
    check("psu-dir", &r, &s, "exchange directory");
    // Identifiers too long to transfer are refused before any traffic, as unbucketed.
    let long = "x".repeat(1025);
    write_ids(&dir.join("sender.csv"), &[long]);
    let o = Command::new(BIN)
        .args(args_op(
            "psu",
            &dir,
            "sender",
            &tls(),
            "psu-long",
            &["--buckets", "2"],
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("1025 bytes"), "{}", stderr(&o));
}

/// Checks the two private-id tables of run `tag` against the plaintext sets: the same
/// identifiers in the same order (sorted, each once), one per item of the union; each
/// party's items are its set, each once; two items share an identifier exactly when
/// they are equal.
fn check_private_ids(dir: &Path, tag: &str, what: &str) {
    let table = |role: &str| -> Vec<(String, String)> {
        let path = dir.join(format!("{tag}-{role}-rows.csv"));
        let mut r = csv::Reader::from_path(&path).unwrap();
        assert_eq!(r.headers().unwrap(), vec!["private_id", "id"], "{what}");
        r.records()
            .map(|rec| {
                let rec = rec.unwrap();
                (rec[0].to_string(), rec[1].to_string())
            })
            .collect()
    };
    let (r, s) = (table("receiver"), table("sender"));
    let ids: Vec<&String> = r.iter().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        s.iter().map(|(id, _)| id).collect::<Vec<_>>(),
        "{what}: the same identifiers in the same order"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{what}: sorted, once");
    assert_eq!(
        r.len(),
        union_of_sets(dir).len(),
        "{what}: one row per union item"
    );
    for (role, t) in [("receiver", &r), ("sender", &s)] {
        let items: Vec<&String> = t.iter().map(|(_, x)| x).filter(|x| !x.is_empty()).collect();
        let set = read_ids(&dir.join(format!("{role}.csv")));
        assert_eq!(items.len(), set.len(), "{what}: {role}'s items once each");
        assert_eq!(
            items.into_iter().cloned().collect::<BTreeSet<_>>(),
            set,
            "{what}: {role}"
        );
    }
    for ((_, x), (_, y)) in r.iter().zip(&s) {
        assert!(
            x.is_empty() || y.is_empty() || x == y,
            "{what}: {x} and {y} share an id"
        );
        assert!(
            !(x.is_empty() && y.is_empty()),
            "{what}: a row with no item"
        );
    }
}

/// private-id in value-partitioned units (Chen et al. 2024, Fig. 8's messages streamed,
/// the union sent back by identifier range): both tables agree with the plaintext
/// sets, as the unbucketed run's do; every group and last message, over TLS and an
/// exchange directory.
#[test]
fn bucketed_private_id_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("private-id");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    for (case, (n_r, n_s, shared, buckets, extra)) in VALUE_CASES.into_iter().enumerate() {
        write_sets(&dir, n_r, n_s, shared, 70 + case as u64);
        let what = format!("case {case}");
        let mut flags = vec!["--buckets", buckets];
        flags.extend_from_slice(extra);
        let tag = format!("pid{case}");
        let (r, s) = run_op("private-id", &dir, &tls(), &tag, &flags);
        check_private_ids(&dir, &tag, &what);
        let union = union_of_sets(&dir).len() as u64;
        assert_eq!(
            (&r["rows"], &s["rows"]),
            (&union.into(), &union.into()),
            "{what}"
        );
        assert!(r.get("cardinality").is_none(), "{what}: {r}");
        let units = r["buckets"]["per_bucket"].as_array().unwrap().len();
        let parts: usize = buckets.parse().unwrap();
        // Evaluate and reply units, then five units per part.
        assert!(units > 5 * parts, "{what}: {units} units for {parts} parts");
    }
    write_sets(&dir, 2500, 2400, 1234, 95);
    run_op(
        "private-id",
        &dir,
        &tls(),
        "pid-auto",
        &["--buckets", "auto"],
    );
    check_private_ids(&dir, "pid-auto", "auto");
    run_op("private-id", &dir, &tls(), "pid-plain", &[]);
    check_private_ids(&dir, "pid-plain", "unbucketed");
    write_sets(&dir, 1500, 1200, 300, 96);
    let exchange = Meet::Dir(dir.join("pid-exchange"));
    run_op(
        "private-id",
        &dir,
        &exchange,
        "pid-dir",
        &["--buckets", "4"],
    );
    check_private_ids(&dir, "pid-dir", "exchange directory");
}

/// `--concurrency`: buckets (units) on several connections or threads at once give the
/// plaintext answer for identifier buckets and for the value layout's waves, with the
/// two parties asking for different concurrencies (the smaller wins over TCP); without
/// --buckets the flag is refused.
#[test]
fn concurrent_buckets_match_the_plaintext() {
    let dir = scratch("lanes");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    let want = write_sets(&dir, 3000, 2500, 800, 97);
    let run_lanes = |op: &str, meet: &Meet, tag: &str, lanes: [&str; 2], extra: &[&str]| {
        let party = |role: &str, l: &str| {
            let mut flags = vec!["--buckets", "5", "--concurrency", l];
            flags.extend_from_slice(extra);
            spawn(&args_op(op, &dir, role, meet, tag, &flags))
        };
        let r = party("receiver", lanes[0]);
        std::thread::sleep(Duration::from_millis(100));
        let s = party("sender", lanes[1]);
        let (s, r) = (s.wait_with_output().unwrap(), r.wait_with_output().unwrap());
        assert!(r.status.success(), "{tag} receiver: {}", stderr(&r));
        assert!(s.status.success(), "{tag} sender: {}", stderr(&s));
        (
            json(&dir.join(format!("{tag}-receiver.json"))),
            json(&dir.join(format!("{tag}-sender.json"))),
        )
    };
    run_lanes("psi", &tls(), "lanes-psi", ["3", "2"], &[]);
    assert_eq!(read_ids(&dir.join("lanes-psi-rows.csv")), want, "psi");
    let (r, _) = run_lanes("psi-card", &tls(), "lanes-card", ["4", "4"], &[]);
    assert_eq!(r["cardinality"], want.len() as u64, "psi-card");
    let (r, s) = run_lanes("pi-sum", &tls(), "lanes-pi", ["2", "3"], &SMALL_PAILLIER);
    assert_eq!(r["cardinality"], want.len() as u64, "pi-sum");
    assert_eq!(s["sum"], plain_sum(want.len()), "pi-sum");
    run_lanes(
        "private-id",
        &Meet::Dir(dir.join("lanes-exchange")),
        "lanes-pid",
        ["3", "1"],
        &[],
    );
    check_private_ids(&dir, "lanes-pid", "private-id over an exchange directory");
    let o = Command::new(BIN)
        .args(args_op(
            "psi",
            &dir,
            "receiver",
            &tls(),
            "lanes-no",
            &["--concurrency", "2"],
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--buckets"), "{}", stderr(&o));
}

/// psi-card runs the mqRPMT's messages in units partitioned by PRF value
/// (docs/scale.md): its count equals the plaintext and the unbucketed run's, for every
/// edge, over TLS and an exchange directory, with each last message and group.
#[test]
fn bucketed_psi_card_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("card");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    for (case, (n_r, n_s, shared, buckets, extra)) in VALUE_CASES.into_iter().enumerate() {
        let want = write_sets(&dir, n_r, n_s, shared, 50 + case as u64).len() as u64;
        let what = format!("case {case}");
        let mut flags = vec!["--buckets", buckets];
        flags.extend_from_slice(extra);
        let (r, s) = run_op("psi-card", &dir, &tls(), &format!("card{case}"), &flags);
        assert_eq!(r["cardinality"], want, "{what}: {r}");
        assert!(
            s.get("cardinality").is_none(),
            "{what}: the sender learns nothing"
        );
        assert_eq!(r["peer_items"], n_s as u64, "{what}");
        assert_eq!(s["peer_items"], n_r as u64, "{what}");
        let units = r["buckets"]["per_bucket"].as_array().unwrap().len();
        assert_eq!(units, s["buckets"]["per_bucket"].as_array().unwrap().len());
        let parts: usize = buckets.parse().unwrap();
        // Evaluate units (at least one), then a send and a compare unit per part.
        assert!(units > 2 * parts, "{what}: {units} units for {parts} parts");
    }
    let want = write_sets(&dir, 2500, 2400, 1234, 98).len() as u64;
    let (auto, _) = run_op(
        "psi-card",
        &dir,
        &tls(),
        "card-auto",
        &["--buckets", "auto"],
    );
    assert_eq!(auto["cardinality"], want);
    let (plain, _) = run_op("psi-card", &dir, &tls(), "card-plain", &[]);
    assert_eq!(plain["cardinality"], want);
    assert!(plain.get("buckets").is_none());
    let want = write_sets(&dir, 1500, 1200, 300, 97).len() as u64;
    let (r, s) = run_op(
        "psi-card",
        &dir,
        &Meet::Dir(dir.join("card-exchange")),
        "card-dir",
        &["--buckets", "4"],
    );
    assert_eq!(r["cardinality"], want);
    assert_eq!(s["transport"], "exchange-dir");
    // The permuted OPRF is not streamed: refused before anything runs.
    let o = Command::new(BIN)
        .args(args_op(
            "psi-card",
            &dir,
            "receiver",
            &tls(),
            "card-poprf",
            &[
                "--buckets",
                "2",
                "--mqrpmt",
                "poprf",
                "--last-message",
                "list",
            ],
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cwprf"), "{}", stderr(&o));
}

/// SplitMix64, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The buckets a run's progress lines say it ran (`"party":"psi ROLE, bucket K of B"`).
fn buckets_run(stderr: &str) -> HashSet<u64> {
    stderr
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let party = v["party"].as_str()?;
            let rest = party
                .split(", bucket ")
                .nth(1)
                .or_else(|| party.split(", unit ").nth(1))?;
            let k = rest.split(' ').next()?;
            Some(k.parse::<u64>().ok()? - 1)
        })
        .collect()
}

/// The buckets the party's state directory records as finished.
fn recorded(state: &Path) -> HashSet<u64> {
    let mut out = HashSet::new();
    for job in std::fs::read_dir(state).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(job.path().join("done"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if let Some(k) = name.strip_suffix(".json") {
                out.insert(k.parse().unwrap());
            }
        }
    }
    out
}

fn killed_and_resumed(meet: impl Fn() -> Meet, name: &str, op: &str) {
    killed_and_resumed_in_lanes(meet, name, op, 1);
}

/// [`killed_and_resumed`] with `--concurrency lanes`: a restart may run again one
/// recorded bucket per lane (each lane's bucket in flight when the link broke).
fn killed_and_resumed_in_lanes(meet: impl Fn() -> Meet, name: &str, op: &str, lanes: usize) {
    let seed = std::env::var("PRIVSET_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64 ^ 0x5eed);
    eprintln!("{name}: PRIVSET_KILL_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = scratch(name);
    let want = write_sets(&dir, 6000, 5000, 1500, seed);
    let lanes_flag = lanes.to_string();
    let mut extra = vec!["--buckets", "12", "--concurrency", &lanes_flag];
    if op == "pi-sum" {
        extra.extend_from_slice(&SMALL_PAILLIER);
    }
    for victim in ["receiver", "sender"] {
        let meet = meet_in(&dir, &meet, victim);
        let tag = format!("kill-{victim}");
        let other = if victim == "receiver" {
            "sender"
        } else {
            "receiver"
        };
        let mut survivor = spawn(&args_op(op, &dir, other, &meet, &tag, &extra));
        let started = Instant::now();
        let mut kills = 0;
        // Kill the victim up to three times at random moments, then let it finish.
        let state = dir.join(format!("state-{victim}"));
        let result = dir.join(format!("{tag}-{victim}.json"));
        let last = loop {
            // What the victim had recorded when this start began.
            let before = recorded(&state);
            let mut child = spawn(&args_op(op, &dir, victim, &meet, &tag, &extra));
            if kills < 3 {
                std::thread::sleep(Duration::from_millis(200 + rng.next() % 1500));
                if child.try_wait().unwrap().is_none() {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    kills += 1;
                    assert!(
                        started.elapsed() < Duration::from_secs(240),
                        "{name}: too slow"
                    );
                    // A kill after the result: over an exchange directory a new start
                    // would be a new run (docs/reliability.md), and the peer needs
                    // nothing more. Over TCP the peer may have lost the last plan
                    // session with the connection: if it does not finish on its own, the
                    // restart tells it the job is done (or both start over).
                    if result.exists() {
                        let grace = Instant::now();
                        while grace.elapsed() < Duration::from_secs(3)
                            && survivor.try_wait().unwrap().is_none()
                        {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        if matches!(meet, Meet::Dir(_)) || survivor.try_wait().unwrap().is_some() {
                            break None;
                        }
                    }
                    continue;
                }
            }
            break Some((child.wait_with_output().unwrap(), before));
        };
        let survivor = survivor.wait_with_output().unwrap();
        assert!(
            survivor.status.success(),
            "{name} {other}: {}",
            stderr(&survivor)
        );
        if let Some((last, before)) = &last {
            assert!(last.status.success(), "{name} {victim}: {}", stderr(last));
            // The last start ran again at most one bucket it had recorded per lane (the
            // one the peer may have missed when the connection broke).
            if kills > 0 {
                let again = buckets_run(&stderr(last));
                let rerun = again.intersection(before).count();
                assert!(
                    rerun <= lanes,
                    "{name}: reran {rerun} finished buckets ({again:?} vs {before:?})"
                );
            }
        }
        let what = format!("{name}: {victim} killed {kills} times");
        eprintln!("{what}");
        if op == "psi" {
            let rows = read_ids(&dir.join(format!("{tag}-rows.csv")));
            assert_eq!(rows, want, "{what}");
        } else if op == "psu" {
            let rows = row_list(&dir.join(format!("{tag}-rows.csv")));
            let union = union_of_sets(&dir);
            assert_eq!(rows.len(), union.len(), "{what}");
            assert_eq!(rows.into_iter().collect::<BTreeSet<_>>(), union, "{what}");
        } else if op == "private-id" {
            check_private_ids(&dir, &tag, &what);
        } else {
            let r = json(&dir.join(format!("{tag}-receiver.json")));
            assert_eq!(r["cardinality"], want.len() as u64, "{what}");
        }
        if op == "psi-card-sum" || op == "pi-sum" {
            let s = json(&dir.join(format!("{tag}-sender.json")));
            assert_eq!(s["cardinality"], want.len() as u64, "{what}");
            assert_eq!(s["sum"], plain_sum(want.len()), "{what}");
        }
    }
}

/// A fresh meeting place for one run (an exchange directory serves one run).
fn meet_in(dir: &Path, meet: &impl Fn() -> Meet, run: &str) -> Meet {
    match meet() {
        Meet::Dir(_) => Meet::Dir(dir.join(format!("exchange-{run}"))),
        Meet::Tls { addr, .. } => Meet::Tls {
            certs: certs(dir),
            addr,
        },
    }
}

#[test]
fn a_killed_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "resume-tls",
        "psi",
    );
}

/// A party that finished while its peer was down keeps its state (the tombstone): the
/// sender dies between bucket 3's session and its record, so the receiver holds every
/// bucket, stops waiting after its `--timeout`, writes the plaintext answer and keeps
/// its job, naming it in RESULT.json. The same two commands run again: the receiver
/// serves bucket 3, the only one the sender lacks, and then removes its state.
#[test]
fn a_party_that_finished_while_its_peer_was_down_serves_the_missing_bucket_later() {
    let dir = scratch("tombstone");
    let want = write_sets(&dir, 3000, 2500, 700, 0x70b);
    let meet = Meet::Tls {
        certs: certs(&dir),
        addr: port(),
    };
    let extra = ["--buckets", "4"];
    let command = |role: &str, timeout: &str| {
        let mut a = args(&dir, role, &meet, "t", &extra);
        let at = a.iter().position(|x| x == "--timeout").unwrap();
        a[at + 1] = timeout.into();
        a
    };
    let sender = |timeout: &str| {
        Command::new(BIN)
            .args(command("sender", timeout))
            .env("PRIVSET_TEST_DIE_BEFORE_RECORD", "sender:3")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (state_r, state_s) = (dir.join("state-receiver"), dir.join("state-sender"));

    let r = spawn(&command("receiver", "5"));
    std::thread::sleep(Duration::from_millis(100));
    let s = sender("60").wait_with_output().unwrap();
    assert!(
        !s.status.success(),
        "the sender dies before recording bucket 3"
    );
    let r = r.wait_with_output().unwrap();
    assert!(r.status.success(), "receiver: {}", stderr(&r));
    assert!(
        stderr(&r).contains("serves the buckets the peer lacks"),
        "{}",
        stderr(&r)
    );
    assert_eq!(
        read_ids(&dir.join("t-rows.csv")),
        want,
        "the receiver's answer"
    );
    let kept = json(&dir.join("t-receiver.json"))["buckets"]["kept_state"].clone();
    let kept = PathBuf::from(kept.as_str().expect("kept_state names the job"));
    assert!(kept.starts_with(&state_r) && kept.is_dir(), "{kept:?}");
    assert_eq!(recorded(&state_r), HashSet::from([0, 1, 2, 3]));
    assert_eq!(recorded(&state_s), HashSet::from([0, 1, 2]));

    let s = sender("60");
    std::thread::sleep(Duration::from_millis(100));
    let r = spawn(&command("receiver", "60"));
    let (s, r) = (s.wait_with_output().unwrap(), r.wait_with_output().unwrap());
    assert!(r.status.success(), "receiver again: {}", stderr(&r));
    assert!(s.status.success(), "sender again: {}", stderr(&s));
    assert_eq!(
        buckets_run(&stderr(&r)),
        HashSet::from([3]),
        "only the missing bucket"
    );
    assert_eq!(buckets_run(&stderr(&s)), HashSet::from([3]));
    assert_eq!(
        read_ids(&dir.join("t-rows.csv")),
        want,
        "the receiver's answer again"
    );
    let report = json(&dir.join("t-receiver.json"));
    assert!(report["buckets"].get("kept_state").is_none(), "{report}");
    assert!(!kept.exists(), "the confirmed job is removed");
    assert_eq!(json(&dir.join("t-sender.json"))["buckets"]["count"], 4);
}

/// Buckets on three connections at once (units in waves for psi-card), a party killed
/// at random moments: each restart reopens every lane and the answer is the plaintext.
#[test]
fn a_killed_party_with_concurrent_buckets_resumes_over_tls() {
    for op in ["psi", "psi-card"] {
        let name = format!("lanes-resume-tls-{op}");
        let meet = || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        };
        killed_and_resumed_in_lanes(meet, &name, op, 3);
    }
}

#[test]
fn a_killed_party_with_concurrent_buckets_resumes_over_an_exchange_directory() {
    killed_and_resumed_in_lanes(|| Meet::Dir(PathBuf::new()), "lanes-resume-dir", "psu", 3);
}

#[test]
fn a_killed_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(|| Meet::Dir(PathBuf::new()), "resume-dir", "psi");
}

#[test]
fn a_killed_psi_card_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "card-resume-tls",
        "psi-card",
    );
}

/// psi-card-sum in value-partitioned units: both parties' counts and the sender's sum
/// equal the plaintext's and the unbucketed run's, over TLS and an exchange directory.
#[test]
fn bucketed_psi_card_sum_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("card-sum");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    for (case, (n_r, n_s, shared, buckets, extra)) in VALUE_CASES.into_iter().enumerate() {
        let want = write_sets(&dir, n_r, n_s, shared, 70 + case as u64).len();
        let what = format!("case {case}");
        let mut flags = vec!["--buckets", buckets];
        flags.extend_from_slice(extra);
        let (r, s) = run_op("psi-card-sum", &dir, &tls(), &format!("sum{case}"), &flags);
        assert_eq!(r["cardinality"], want as u64, "{what}: {r}");
        assert_eq!(s["cardinality"], want as u64, "{what}: {s}");
        assert_eq!(s["sum"], plain_sum(want), "{what}: {s}");
        assert!(r.get("sum").is_none(), "{what}: the receiver learns no sum");
    }
    let want = write_sets(&dir, 2500, 2400, 1234, 96).len();
    let (_, auto) = run_op(
        "psi-card-sum",
        &dir,
        &tls(),
        "sum-auto",
        &["--buckets", "auto"],
    );
    let (_, plain) = run_op("psi-card-sum", &dir, &tls(), "sum-plain", &[]);
    assert_eq!(auto["sum"], plain_sum(want));
    assert_eq!(plain["sum"], auto["sum"]);
    assert_eq!(plain["cardinality"], auto["cardinality"]);
    let want = write_sets(&dir, 1500, 1200, 300, 95).len();
    let (r, s) = run_op(
        "psi-card-sum",
        &dir,
        &Meet::Dir(dir.join("sum-exchange")),
        "sum-dir",
        &["--buckets", "4"],
    );
    assert_eq!(r["cardinality"], want as u64);
    assert_eq!(s["sum"], plain_sum(want));
}

#[test]
fn a_killed_psi_card_sum_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "sum-resume-tls",
        "psi-card-sum",
    );
}

#[test]
fn a_killed_psi_card_sum_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(
        || Meet::Dir(PathBuf::new()),
        "sum-resume-dir",
        "psi-card-sum",
    );
}

#[test]
fn a_killed_psu_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "psu-resume-tls",
        "psu",
    );
}

#[test]
fn a_killed_psu_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(|| Meet::Dir(PathBuf::new()), "psu-resume-dir", "psu");
}

#[test]
fn a_killed_private_id_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "pid-resume-tls",
        "private-id",
    );
}

#[test]
fn a_killed_private_id_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(|| Meet::Dir(PathBuf::new()), "pid-resume-dir", "private-id");
}

#[test]
fn a_killed_psi_card_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(|| Meet::Dir(PathBuf::new()), "card-resume-dir", "psi-card");
}

/// pi-sum's cases: (P1, P2, shared, parts, extra settings): both schemes, every group
/// and Z encoding among them, and the edges of [`VALUE_CASES`].
const PI_SUM_CASES: [(usize, usize, usize, &str, &[&str]); 7] = [
    (3000, 2000, 700, "7", &[]),
    (
        1000,
        1000,
        1000,
        "3",
        &["--values-he", "elgamal", "--z-encoding", "bloom"],
    ), // identical
    (1000, 1000, 0, "4", &["--z-encoding", "list"]), // disjoint
    (
        1,
        1,
        1,
        "2",
        &["--group", "x25519", "--values-he", "elgamal"],
    ), // size 1: empty parts
    (1, 3000, 1, "5", &["--group", "p256", "--sum-of-squares"]), // very unbalanced
    (2000, 1, 0, "16", &["--values-he", "elgamal"]),
    (2000, 1, 1, "1", &["--group", "p256-compressed"]),
];

/// Paillier at a test-sized modulus (the default 3072 bits is for deployment).
const SMALL_PAILLIER: [&str; 4] = ["--he-modulus-bits", "1024", "--dj-s", "1"];

/// pi-sum in value-partitioned units (Ion et al. 2020, Fig. 2, its messages streamed):
/// both parties' counts and P2's sums equal the plaintext's and the unbucketed run's,
/// over TLS and an exchange directory, with both schemes; P1's threshold stops it
/// before any sum.
#[test]
fn bucketed_pi_sum_matches_the_plaintext_and_the_unbucketed_run() {
    let dir = scratch("pi-sum");
    let certs = certs(&dir);
    let tls = || Meet::Tls {
        certs: certs.clone(),
        addr: port(),
    };
    for (case, (n_1, n_2, shared, buckets, extra)) in PI_SUM_CASES.into_iter().enumerate() {
        let want = write_sets(&dir, n_1, n_2, shared, 90 + case as u64).len();
        let what = format!("case {case}");
        let mut flags = vec!["--buckets", buckets];
        flags.extend_from_slice(extra);
        flags.extend_from_slice(&SMALL_PAILLIER);
        let (r, s) = run_op("pi-sum", &dir, &tls(), &format!("pi{case}"), &flags);
        assert_eq!(r["cardinality"], want as u64, "{what}: {r}");
        assert_eq!(s["cardinality"], want as u64, "{what}: {s}");
        assert_eq!(s["sum"], plain_sum(want), "{what}: {s}");
        assert!(r["sum"].is_null(), "{what}: P1 learns no sum");
        assert_eq!(r["peer_items"], n_2 as u64, "{what}");
        assert_eq!(s["peer_items"], n_1 as u64, "{what}");
        if extra.contains(&"--sum-of-squares") {
            let squares: u128 = (0..want as u64)
                .map(|k| u128::from(value_of(k)).pow(2))
                .sum();
            assert_eq!(s["sums_of_squares"][0], squares as u64, "{what}: {s}");
        }
        let units = s["buckets"]["per_bucket"].as_array().unwrap().len();
        assert_eq!(units, r["buckets"]["per_bucket"].as_array().unwrap().len());
    }
    let want = write_sets(&dir, 2500, 2400, 1234, 94).len();
    let mut flags = vec!["--buckets", "auto"];
    flags.extend_from_slice(&SMALL_PAILLIER);
    let (_, auto) = run_op("pi-sum", &dir, &tls(), "pi-auto", &flags);
    let (_, plain) = run_op("pi-sum", &dir, &tls(), "pi-plain", &SMALL_PAILLIER);
    assert_eq!(auto["sum"], plain_sum(want));
    assert_eq!(plain["sum"], auto["sum"]);
    assert_eq!(plain["cardinality"], auto["cardinality"]);
    assert!(plain.get("buckets").is_none());
    let want = write_sets(&dir, 1500, 1200, 300, 93).len();
    let mut flags = vec!["--buckets", "4", "--values-he", "elgamal"];
    flags.extend_from_slice(&["--threshold", "1"]);
    let (r, s) = run_op(
        "pi-sum",
        &dir,
        &Meet::Dir(dir.join("pi-exchange")),
        "pi-dir",
        &flags,
    );
    assert_eq!(r["cardinality"], want as u64);
    assert_eq!(s["sum"], plain_sum(want));
    assert_eq!(s["transport"], "exchange-dir");
    // Below P1's threshold: P1 learns the count, P2 only that the run stopped.
    let flags = [
        "--buckets",
        "3",
        "--values-he",
        "elgamal",
        "--threshold",
        "301",
    ];
    let (r, s) = run_op("pi-sum", &dir, &tls(), "pi-threshold", &flags);
    assert_eq!(r["cardinality"], want as u64);
    assert_eq!(r["aborted"], true, "{r}");
    assert_eq!(s["aborted"], true, "{s}");
    assert!(s["cardinality"].is_null() && s["sum"].is_null(), "{s}");
    // Refused before anything runs: ring-LWE, the reverse variant, segments.
    for (flags, says) in [
        (
            &["--buckets", "2", "--values-he", "rlwe"][..],
            "paillier or elgamal",
        ),
        (&["--buckets", "2", "--reverse"][..], "reverse"),
    ] {
        let o = Command::new(BIN)
            .args(args_op(
                "pi-sum",
                &dir,
                "receiver",
                &tls(),
                "pi-refused",
                flags,
            ))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
}

#[test]
fn a_killed_pi_sum_party_resumes_over_tls() {
    killed_and_resumed(
        || Meet::Tls {
            certs: PathBuf::new(),
            addr: port(),
        },
        "pi-resume-tls",
        "pi-sum",
    );
}

#[test]
fn a_killed_pi_sum_party_resumes_over_an_exchange_directory() {
    killed_and_resumed(|| Meet::Dir(PathBuf::new()), "pi-resume-dir", "pi-sum");
}
