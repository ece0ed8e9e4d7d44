//! The `privset` binary end to end: real processes, real sockets, real files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

/// A fresh scratch directory per test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn privset(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

fn spawn(args: &[&str]) -> Child {
    privset(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// Writes P1's and P2's CSVs; returns the plaintext (cardinality, sum).
fn write_inputs(dir: &Path, n1: u64, n2: u64, overlap: u64) -> (u64, u64) {
    let mut p1 = String::from("email\n");
    for i in 0..n1 {
        p1.push_str(&format!("  user{i}@example.com \n"));
    }
    std::fs::write(dir.join("p1.csv"), p1).unwrap();
    let mut p2 = String::from("id,spend\n");
    let mut sum = 0;
    for j in 0..n2 {
        let i = if j < overlap { j } else { n1 + j };
        let v = (j * 7919) % 1000;
        if j < overlap {
            sum += v;
        }
        p2.push_str(&format!("user{i}@example.com,{v}\n"));
    }
    std::fs::write(dir.join("p2.csv"), p2).unwrap();
    (overlap, sum)
}

const FAST: [&str; 2] = ["--he-modulus-bits", "1024"];

fn certs(dir: &Path, names: &str) -> PathBuf {
    let out = dir.join("certs");
    let o = privset(&["certs", "--out", out.to_str().unwrap(), "--names", names])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

fn tls_args(certs: &Path, name: &str) -> Vec<String> {
    vec![
        "--tls-ca".into(),
        certs.join("ca.pem").display().to_string(),
        "--tls-cert".into(),
        certs.join(format!("{name}.pem")).display().to_string(),
        "--tls-key".into(),
        certs.join(format!("{name}.key")).display().to_string(),
    ]
}

fn party_args(dir: &Path, role: &str, link: &[String], extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec!["pi-sum".into(), "--role".into(), role.into()];
    a.extend(link.iter().cloned());
    a.extend([
        "--input".into(),
        dir.join(format!("{role}.csv")).display().to_string(),
    ]);
    if role == "p1" {
        a.extend(["--id-column".into(), "email".into()]);
    } else {
        a.extend([
            "--id-column".into(),
            "id".into(),
            "--value-column".into(),
            "spend".into(),
        ]);
    }
    a.extend([
        "--output".into(),
        dir.join(format!("{role}.json")).display().to_string(),
    ]);
    a.extend(FAST.iter().map(|s| s.to_string()));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The flags of an exchange-directory link in `x`, polled every 20 ms.
fn dir_link(x: &Path) -> Vec<String> {
    vec![
        "--exchange-dir".to_string(),
        x.display().to_string(),
        "--poll-interval-ms".into(),
        "20".into(),
    ]
}

fn as_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

#[test]
fn two_processes_over_mutual_tls() {
    let dir = scratch("mtls");
    let (card, sum) = write_inputs(&dir, 300, 200, 120);
    let certs = certs(&dir, "bank,shop");
    let addr = port();
    let mut l1 = vec!["--listen".to_string(), addr.clone()];
    l1.extend(tls_args(&certs, "bank"));
    let mut l2 = vec!["--peer".to_string(), addr];
    l2.extend(tls_args(&certs, "shop"));
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, &[])));
    let p2 = spawn(&as_refs(&party_args(&dir, "p2", &l2, &[])));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(o1.status.success(), "p1: {}", stderr(&o1));
    assert!(o2.status.success(), "p2: {}", stderr(&o2));
    let (r1, r2) = (json(&dir.join("p1.json")), json(&dir.join("p2.json")));
    assert_eq!(r1["cardinality"], card);
    assert_eq!(r2["cardinality"], card);
    assert_eq!(r2["sums"][0], sum);
    assert_eq!(r2["sum"], sum, "one value column: `sum` next to `sums`");
    assert!(r1["sums"].is_null(), "P1 must not learn the sum");
    assert!(r1["sum"].is_null(), "P1 must not learn the sum");
    assert_eq!(r1["transport"], "tcp+mtls");
    for key in [
        "protocol",
        "role",
        "bytes_sent",
        "bytes_received",
        "cpu_seconds",
        "wall_seconds",
        "cost_cents",
    ] {
        assert!(
            !r1[key].is_null() && !r2[key].is_null(),
            "RESULT.json lacks {key}"
        );
    }
    // P1's counters are read before its TLS close_notify record (24 bytes) goes out.
    let (sent, received) = (
        r1["bytes_sent"].as_u64().unwrap(),
        r2["bytes_received"].as_u64().unwrap(),
    );
    assert!(
        received >= sent && received - sent <= 64,
        "P1 sent {sent}, P2 received {received}"
    );
}

/// `--tls-peer-name`: with one CA vouching for several organisations, a party accepts
/// only the peer it names, whether it listens or connects; the named peers run.
#[test]
fn tls_peer_name_refuses_another_certificate_from_the_same_ca() {
    let dir = scratch("peer-name");
    let (card, _) = write_inputs(&dir, 120, 80, 40);
    let certs = certs(&dir, "bank,shop,rival");
    // P1 listens presenting `p1_cert` and accepting only `p1_wants`; P2 connects
    // presenting `p2_cert` and accepting only `p2_wants`.
    let pair = |(p1_cert, p1_wants): (&str, &str), (p2_cert, p2_wants): (&str, &str)| {
        let addr = port();
        let side = |how: &str, cert: &str, peer: &str| {
            let mut l = vec![how.to_string(), addr.clone()];
            l.extend(tls_args(&certs, cert));
            l.extend(["--tls-peer-name".to_string(), peer.to_string()]);
            l
        };
        let p1 = spawn(&as_refs(&party_args(
            &dir,
            "p1",
            &side("--listen", p1_cert, p1_wants),
            &[],
        )));
        let p2 = spawn(&as_refs(&party_args(
            &dir,
            "p2",
            &side("--peer", p2_cert, p2_wants),
            &[],
        )));
        (finish(p1), finish(p2))
    };
    // The rival connects in the shop's place: the bank (listening) refuses it.
    let (o1, o2) = pair(("bank", "shop"), ("rival", "bank"));
    assert_eq!(o1.status.code(), Some(4), "p1: {}", stderr(&o1));
    assert!(!o2.status.success(), "p2: {}", stderr(&o2));
    assert!(
        stderr(&o1).contains("the certificate of rival") && stderr(&o1).contains("\"shop\""),
        "{}",
        stderr(&o1)
    );
    // The rival listens in the bank's place: the shop (connecting) refuses it.
    let (o1, o2) = pair(("rival", "shop"), ("shop", "bank"));
    assert_eq!(o2.status.code(), Some(4), "p2: {}", stderr(&o2));
    assert!(!o1.status.success(), "p1: {}", stderr(&o1));
    assert!(
        stderr(&o2).contains("the certificate of rival"),
        "{}",
        stderr(&o2)
    );
    // The named peers run.
    let (o1, o2) = pair(("bank", "shop"), ("shop", "bank"));
    assert!(o1.status.success(), "p1: {}", stderr(&o1));
    assert!(o2.status.success(), "p2: {}", stderr(&o2));
    assert_eq!(json(&dir.join("p1.json"))["cardinality"], card);
}

/// Ion et al. 2020's three protocols (and the DDH one on X25519) as two processes over
/// mutual TLS, each against the plaintext answer; a protocol mismatch stops both.
#[test]
fn every_pi_sum_protocol_over_mutual_tls() {
    let dir = scratch("protocols");
    let (card, sum) = write_inputs(&dir, 150, 120, 70);
    let certs = certs(&dir, "bank,shop");
    for extra in [
        &["--group", "x25519"][..],
        &["--protocol", "rot"][..],
        &["--protocol", "bloom", "--values-he", "elgamal"][..],
    ] {
        let addr = port();
        let mut l1 = vec!["--listen".to_string(), addr.clone()];
        l1.extend(tls_args(&certs, "bank"));
        let mut l2 = vec!["--peer".to_string(), addr];
        l2.extend(tls_args(&certs, "shop"));
        let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, extra)));
        let p2 = spawn(&as_refs(&party_args(&dir, "p2", &l2, extra)));
        let (o1, o2) = (finish(p1), finish(p2));
        assert!(o1.status.success(), "{extra:?} p1: {}", stderr(&o1));
        assert!(o2.status.success(), "{extra:?} p2: {}", stderr(&o2));
        let (r1, r2) = (json(&dir.join("p1.json")), json(&dir.join("p2.json")));
        assert_eq!(
            (&r1["cardinality"], &r2["cardinality"]),
            (&card.into(), &card.into()),
            "{extra:?}"
        );
        assert_eq!(r2["sum"], sum, "{extra:?}");
        assert!(r1["sum"].is_null(), "{extra:?}: P1 must not learn the sum");
        let protocol = if extra[0] == "--protocol" {
            extra[1]
        } else {
            "ddh"
        };
        assert_eq!(r1["pi_sum_protocol"], protocol);
    }
    let addr = port();
    let mut l1 = vec!["--listen".to_string(), addr.clone()];
    l1.extend(tls_args(&certs, "bank"));
    let mut l2 = vec!["--peer".to_string(), addr];
    l2.extend(tls_args(&certs, "shop"));
    let p1 = spawn(&as_refs(&party_args(
        &dir,
        "p1",
        &l1,
        &["--protocol", "rot"],
    )));
    let p2 = spawn(&as_refs(&party_args(
        &dir,
        "p2",
        &l2,
        &["--protocol", "bloom"],
    )));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(!o1.status.success() && !o2.status.success());
    assert!(stderr(&o1).contains("protocol"), "{}", stderr(&o1));
}

/// Agreed settings: a key setting on one side only (before this check, cardinality 260
/// instead of 500 for `--normalize email` against the default, and 0 for `--hash-ids`
/// on one side) stops both parties with exit 3 naming the setting, before any
/// set-dependent message; the same settings on both sides run. psi, psi with buckets
/// (checked in the plan session) and pi-sum, over an exchange directory.
#[test]
fn a_key_setting_on_one_side_only_stops_both_parties_naming_it() {
    let dir = scratch("agreed");
    let mut rows = String::from("phone,name\n");
    for i in 0..60 {
        rows.push_str(&format!("07700 900{i:03},Name {i}\n"));
    }
    std::fs::write(dir.join("people.csv"), &rows).unwrap();
    let run = |op: &str, receiver: &[&str], sender: &[&str], tag: &str| -> (Output, Output) {
        let x = dir.join(format!("x-{tag}"));
        let args = |role: &str, extra: &[&str]| -> Vec<String> {
            let mut a: Vec<String> = vec![op.into(), "--role".into(), role.into()];
            a.extend(dir_link(&x));
            a.extend([
                "--timeout".into(),
                "60".into(),
                "--input".into(),
                dir.join("people.csv").display().to_string(),
                "--output".into(),
                dir.join(format!("{tag}-{role}.json")).display().to_string(),
            ]);
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let r = spawn(&as_refs(&args("receiver", receiver)));
        let s = spawn(&as_refs(&args("sender", sender)));
        (finish(r), finish(s))
    };
    let phone = ["--id-column", "phone", "--normalize", "phone-e164"];
    let with = |base: &[&'static str], more: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(more).copied().collect()
    };
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "normalize",
            vec!["--id-column", "phone", "--normalize", "lower"],
            vec!["--id-column", "phone"],
        ),
        (
            "hash-ids",
            vec!["--id-column", "phone", "--hash-ids", "sha256"],
            vec!["--id-column", "phone"],
        ),
        (
            "key-columns",
            vec!["--id-column", "phone,name"],
            vec!["--id-column", "phone"],
        ),
        (
            "phone-region",
            with(&phone, &["--phone-region", "GB"]),
            with(&phone, &["--phone-region", "IE"]),
        ),
    ];
    for (setting, receiver, sender) in &cases {
        for op in ["psi", "psi-card"] {
            let (r, s) = run(op, receiver, sender, &format!("{op}-{setting}"));
            for (who, o) in [("receiver", &r), ("sender", &s)] {
                assert_eq!(
                    o.status.code(),
                    Some(3),
                    "{op} {setting} {who}: {}",
                    stderr(o)
                );
                assert!(
                    stderr(o).contains(&format!("input settings differ, {setting}")),
                    "{op} {setting} {who}: {}",
                    stderr(o)
                );
            }
        }
    }
    // Bucketed: the plan session refuses before any bucket.
    let (r, s) = run(
        "psi",
        &[
            "--id-column",
            "phone",
            "--normalize",
            "lower",
            "--buckets",
            "2",
        ],
        &["--id-column", "phone", "--buckets", "2"],
        "buckets",
    );
    for o in [&r, &s] {
        assert_eq!(o.status.code(), Some(3), "{}", stderr(o));
        assert!(
            stderr(o).contains("input settings differ, normalize"),
            "{}",
            stderr(o)
        );
    }
    // The same settings on both sides: the whole set matches.
    let same = with(&phone, &["--phone-region", "GB"]);
    let (r, s) = run("psi-card", &same, &same, "same");
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(s.status.success(), "{}", stderr(&s));
    assert_eq!(json(&dir.join("same-receiver.json"))["cardinality"], 60);
    // pi-sum: --normalize email on P1 only (cardinality 260 instead of 500 before).
    let x = dir.join("x-pi-sum");
    let link = dir_link(&x);
    write_inputs(&dir, 50, 40, 20);
    let p1 = spawn(&as_refs(&party_args(
        &dir,
        "p1",
        &link,
        &["--normalize", "email"],
    )));
    let p2 = spawn(&as_refs(&party_args(&dir, "p2", &link, &[])));
    for o in [finish(p1), finish(p2)] {
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        assert!(stderr(&o).contains("normalize email"), "{}", stderr(&o));
    }
}

#[test]
fn certificate_from_another_ca_is_rejected() {
    let dir = scratch("wrongca");
    write_inputs(&dir, 10, 10, 5);
    let good = certs(&dir, "p1,p2");
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let evil = certs(&other_dir, "p2");
    let addr = port();
    let mut l1 = vec![
        "--listen".to_string(),
        addr.clone(),
        "--timeout".into(),
        "20".into(),
    ];
    l1.extend(tls_args(&good, "p1"));
    let mut l2 = vec!["--peer".to_string(), addr, "--timeout".into(), "20".into()];
    // The attacker trusts the real CA but presents a certificate from its own CA.
    l2.extend([
        "--tls-ca".into(),
        good.join("ca.pem").display().to_string(),
        "--tls-cert".into(),
        evil.join("p2.pem").display().to_string(),
        "--tls-key".into(),
        evil.join("p2.key").display().to_string(),
    ]);
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, &[])));
    let p2 = spawn(&as_refs(&party_args(&dir, "p2", &l2, &[])));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(!o1.status.success() && !o2.status.success());
    assert_eq!(o1.status.code(), Some(4), "{}", stderr(&o1));
    assert!(
        stderr(&o1).to_lowercase().contains("certificate"),
        "{}",
        stderr(&o1)
    );
    assert!(!dir.join("p1.json").exists());
}

#[test]
fn plaintext_client_is_refused_by_a_tls_server() {
    let dir = scratch("plain");
    write_inputs(&dir, 10, 10, 5);
    let certs = certs(&dir, "p1,p2");
    let addr = port();
    let mut l1 = vec![
        "--listen".to_string(),
        addr.clone(),
        "--timeout".into(),
        "20".into(),
    ];
    l1.extend(tls_args(&certs, "p1"));
    let l2 = vec![
        "--peer".to_string(),
        addr,
        "--insecure-no-tls".into(),
        "--timeout".into(),
        "20".into(),
    ];
    let started = Instant::now();
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, &[])));
    let p2 = spawn(&as_refs(&party_args(&dir, "p2", &l2, &[])));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(!o1.status.success() && !o2.status.success());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "refusal must not wait for the timeout"
    );
    assert!(
        stderr(&o2).contains("TLS") || stderr(&o2).contains("tls"),
        "{}",
        stderr(&o2)
    );
}

#[test]
fn tcp_requires_tls_files_or_the_explicit_flag() {
    let dir = scratch("noflags");
    write_inputs(&dir, 3, 3, 1);
    let o = privset(&as_refs(&party_args(
        &dir,
        "p1",
        &["--listen".into(), port()],
        &[],
    )))
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--insecure-no-tls"), "{}", stderr(&o));
}

fn wait_for(path: &Path, timeout: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < timeout,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills `victim` ("p1" or "p2") once it has written message `after`, restarts it on
/// the same directory, and checks both reach the plaintext answer.
fn exchange_dir_with_restart(victim: &str, after: &str) {
    let dir = scratch(&format!("xdir-{victim}"));
    let (card, sum) = write_inputs(&dir, 400, 300, 150);
    let x = dir.join("exchange");
    let link = dir_link(&x);
    let a1 = party_args(&dir, "p1", &link, &[]);
    let a2 = party_args(&dir, "p2", &link, &[]);
    let (args_victim, args_other) = if victim == "p1" {
        (&a1, &a2)
    } else {
        (&a2, &a1)
    };
    let mut v = spawn(&as_refs(args_victim));
    let other = spawn(&as_refs(args_other));
    wait_for(&x.join(after), Duration::from_secs(60));
    v.kill().unwrap();
    let _ = v.wait();
    let restarted = spawn(&as_refs(args_victim));
    let (o1, o2) = (finish(restarted), finish(other));
    assert!(o1.status.success(), "restarted {victim}: {}", stderr(&o1));
    assert!(o2.status.success(), "other: {}", stderr(&o2));
    let (r1, r2) = (json(&dir.join("p1.json")), json(&dir.join("p2.json")));
    assert_eq!(r1["cardinality"], card);
    assert_eq!(r2["cardinality"], card);
    assert_eq!(r2["sums"][0], sum);
    assert_eq!(r1["transport"], "exchange-dir");
    assert_eq!(
        r1["bytes_sent"], r2["bytes_received"],
        "a resumed run reports the same totals"
    );
}

/// Link keys signed by certificates over a two-party exchange directory, so that a
/// storage that rewrites key files cannot sit in the middle: with certificates on both
/// sides the run gives the plaintext answer and leaves each party's certificate beside
/// its key file; a key file signed under another CA (what a rewriting storage could
/// make), one signed by another organisation of the same CA when --tls-peer-name names
/// the peer, and an unsigned one are each refused by the party that checks, naming why.
#[test]
fn exchange_dir_link_keys_signed_by_certificates_keep_a_rewriting_storage_out() {
    let dir = scratch("xdir-signed");
    let (card, sum) = write_inputs(&dir, 120, 90, 40);
    let ours = certs(&dir, "p1,p2,rival");
    let theirs = certs(&dir.join("other-ca"), "p2");
    let run = |name: &str, p2_tls: Vec<String>| {
        let x = dir.join(name);
        let mut link1 = dir_link(&x);
        link1.extend(tls_args(&ours, "p1"));
        link1.extend(["--tls-peer-name".into(), "p2".into()]);
        let mut link2 = dir_link(&x);
        link2.extend(p2_tls);
        let p1 = spawn(&as_refs(&party_args(
            &dir,
            "p1",
            &link1,
            &["--timeout", "10"],
        )));
        let p2 = spawn(&as_refs(&party_args(
            &dir,
            "p2",
            &link2,
            &["--timeout", "10"],
        )));
        (finish(p1), finish(p2), x)
    };
    let mut honest = tls_args(&ours, "p2");
    honest.extend(["--tls-peer-name".into(), "p1".into()]);
    let (o1, o2, x) = run("x-signed", honest);
    assert!(o1.status.success(), "p1: {}", stderr(&o1));
    assert!(o2.status.success(), "p2: {}", stderr(&o2));
    let (r1, r2) = (json(&dir.join("p1.json")), json(&dir.join("p2.json")));
    assert_eq!(r1["cardinality"], card);
    assert_eq!(r2["sums"][0], sum);
    for role in ["p1", "p2"] {
        assert_eq!(
            std::fs::read(x.join(format!("{role}.pem"))).unwrap(),
            std::fs::read(ours.join(format!("{role}.pem"))).unwrap(),
            "{role}'s certificate beside its key file"
        );
    }
    let refusals = [
        (
            "x-other-ca",
            tls_args(&theirs, "p2"),
            "does not vouch for it",
        ),
        (
            "x-rival",
            tls_args(&ours, "rival"),
            "not a certificate of \"p2\"",
        ),
        ("x-unsigned", Vec::new(), "no certificate signs it"),
    ];
    for (name, p2_tls, why) in refusals {
        let (o1, _, _) = run(name, p2_tls);
        assert!(!o1.status.success(), "{name}: p1 must refuse");
        assert!(stderr(&o1).contains(why), "{name}: {}", stderr(&o1));
        assert!(stderr(&o1).contains("p2.pub"), "{name}: {}", stderr(&o1));
    }
}

/// Seed reuse after a failed run, and what the storage sees: p1 times out
/// waiting for p2; rerun on the same directory it resumes its run (same link key) and
/// finishes with p2; with the folder recreated in between it draws fresh randomness (a
/// different link key, which is derived from the seed) and says so. No file ever holds a
/// privset frame in the clear.
#[test]
fn exchange_dir_files_hold_no_plaintext_and_a_recreated_dir_draws_fresh_randomness() {
    let dir = scratch("xdir-fresh");
    let (card, sum) = write_inputs(&dir, 200, 150, 60);
    let x = dir.join("exchange");
    let link = dir_link(&x);
    let p1_alone = || {
        let o = privset(&as_refs(&party_args(
            &dir,
            "p1",
            &link,
            &["--timeout", "2"],
        )))
        .output()
        .unwrap();
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        (std::fs::read(x.join("p1.pub")).unwrap(), stderr(&o))
    };
    let (first_key, first_err) = p1_alone();
    assert!(!first_err.contains("fresh randomness"), "{first_err}");
    // The same directory: the same run, resumed.
    let (again_key, again_err) = p1_alone();
    assert_eq!(again_key, first_key);
    assert!(!again_err.contains("fresh randomness"), "{again_err}");
    // The folder recreated: fresh randomness, said on stderr.
    std::fs::remove_dir_all(&x).unwrap();
    std::fs::create_dir(&x).unwrap();
    let (fresh_key, fresh_err) = p1_alone();
    assert_ne!(
        fresh_key, first_key,
        "a new run must not reuse the old seed"
    );
    assert!(fresh_err.contains("draws fresh randomness"), "{fresh_err}");
    // Now p2 comes: p1 resumes the run in the directory and both reach the answer.
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &link, &[])));
    let p2 = spawn(&as_refs(&party_args(&dir, "p2", &link, &[])));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(o1.status.success(), "p1: {}", stderr(&o1));
    assert!(o2.status.success(), "p2: {}", stderr(&o2));
    assert!(!stderr(&o1).contains("fresh randomness"), "{}", stderr(&o1));
    assert_eq!(std::fs::read(x.join("p1.pub")).unwrap(), fresh_key);
    let (r1, r2) = (json(&dir.join("p1.json")), json(&dir.join("p2.json")));
    assert_eq!(r1["cardinality"], card);
    assert_eq!(r2["sums"][0], sum);
    for entry in std::fs::read_dir(&x).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(4).any(|w| w == b"PSET"),
            "{} holds a privset frame in the clear",
            path.display()
        );
    }
}

#[test]
fn exchange_dir_resumes_a_killed_p2() {
    exchange_dir_with_restart("p2", "0000-p2.msg");
}

#[test]
fn exchange_dir_resumes_a_killed_p1() {
    exchange_dir_with_restart("p1", "0001-p1.msg");
}

#[test]
fn input_errors_name_the_line_and_duplicates_follow_the_policy() {
    let dir = scratch("input");
    std::fs::write(dir.join("dup.csv"), "id,spend\na,1\nb,2\na,3\n").unwrap();
    std::fs::write(dir.join("neg.csv"), "id,spend\na,1\nb,-2\n").unwrap();
    std::fs::write(dir.join("frac.csv"), "id,spend\na,1.5\n").unwrap();
    std::fs::write(dir.join("big.csv"), "id,spend\na,4294967296\n").unwrap();
    let run = |file: &str, extra: &[&str]| {
        let mut a = vec![
            "pi-sum",
            "--role",
            "p2",
            "--peer",
            "127.0.0.1:9",
            "--insecure-no-tls",
            "--timeout",
            "1",
            "--id-column",
            "id",
            "--value-column",
            "spend",
            "--output",
        ];
        let out = dir.join("out.json");
        let input = dir.join(file);
        a.push(out.to_str().unwrap());
        a.push("--input");
        a.push(input.to_str().unwrap());
        a.extend(extra);
        privset(&a).output().unwrap()
    };
    let o = run("dup.csv", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 4") && stderr(&o).contains("line 2"),
        "{}",
        stderr(&o)
    );
    let o = run("neg.csv", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    let o = run("frac.csv", &[]);
    assert!(
        stderr(&o).contains("line 2") && stderr(&o).contains("1.5"),
        "{}",
        stderr(&o)
    );
    let o = run("big.csv", &[]);
    assert!(
        stderr(&o).contains("line 2") && stderr(&o).contains("bound"),
        "{}",
        stderr(&o)
    );
    // Errors name the line an editor shows, whatever the line endings, and quote the
    // cell as written.
    let cases: [(&str, &[u8], &str); 5] = [
        ("crlf.csv", b"id,spend\r\na,1\r\nb,-2\r\n", "line 3"),
        ("cr.csv", b"id,spend\ra,1\rb,-2\r", "line 3"),
        ("multi.csv", b"id,spend\n\"a\nb\",1\nc,-2\n", "line 4"),
        ("ragged.csv", b"id,spend\r\na,1\r\nb\r\n", "line 3"),
        (
            "huge.csv",
            b"id,spend\r\na,123456789012345678901234567890123456789012345\r\n",
            "line 2: value 1234567890123456789012345678901234567890...",
        ),
    ];
    for (file, content, says) in cases {
        std::fs::write(dir.join(file), content).unwrap();
        let o = run(file, &[]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{file}: {}", stderr(&o));
    }
    // With an explicit policy the input is accepted: the run then fails only on the
    // network (exit code 4), after validation.
    for policy in ["sum", "first"] {
        let o = run("dup.csv", &["--duplicates", policy]);
        assert_eq!(o.status.code(), Some(4), "{policy}: {}", stderr(&o));
    }
}

#[test]
fn duplicates_sum_policy_end_to_end_and_empty_input() {
    let dir = scratch("dupsum");
    std::fs::write(dir.join("p1.csv"), "email\nx\ny\n").unwrap();
    std::fs::write(dir.join("p2.csv"), "id,spend\nx,1\ny,2\nx,10\nz,5\n").unwrap();
    let addr = port();
    let l1 = vec![
        "--listen".to_string(),
        addr.clone(),
        "--insecure-no-tls".into(),
    ];
    let l2 = vec!["--peer".to_string(), addr, "--insecure-no-tls".into()];
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, &[])));
    let p2 = spawn(&as_refs(&party_args(
        &dir,
        "p2",
        &l2,
        &["--duplicates", "sum"],
    )));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(
        o1.status.success() && o2.status.success(),
        "{} {}",
        stderr(&o1),
        stderr(&o2)
    );
    let r2 = json(&dir.join("p2.json"));
    assert_eq!(r2["cardinality"], 2);
    assert_eq!((&r2["sums"][0], &r2["sum"]), (&13.into(), &13.into()));

    std::fs::write(dir.join("p1.csv"), "email\n").unwrap();
    let addr = port();
    let l1 = vec![
        "--listen".to_string(),
        addr.clone(),
        "--insecure-no-tls".into(),
    ];
    let l2 = vec!["--peer".to_string(), addr, "--insecure-no-tls".into()];
    let p1 = spawn(&as_refs(&party_args(&dir, "p1", &l1, &[])));
    let p2 = spawn(&as_refs(&party_args(
        &dir,
        "p2",
        &l2,
        &["--duplicates", "first"],
    )));
    let (o1, o2) = (finish(p1), finish(p2));
    assert!(
        o1.status.success() && o2.status.success(),
        "{} {}",
        stderr(&o1),
        stderr(&o2)
    );
    assert_eq!(json(&dir.join("p2.json"))["cardinality"], 0);
    assert_eq!(json(&dir.join("p2.json"))["sums"][0], 0);
}

#[test]
fn batch_runs_many_executions_through_shared_storage() {
    let dir = scratch("batch");
    let mut expected = HashMap::new();
    for role in ["p1", "p2"] {
        std::fs::create_dir_all(dir.join(format!("jobs-{role}"))).unwrap();
    }
    for run in 0..4u64 {
        let data = dir.join(format!("data-{run}"));
        std::fs::create_dir_all(&data).unwrap();
        expected.insert(run, write_inputs(&data, 50 + run * 10, 40, 10 + run));
        for role in ["p1", "p2"] {
            let mut spec = serde_json::json!({
                "role": role,
                "exchange-dir": format!("../shared/run-{run}"),
                "input": format!("../data-{run}/{role}.csv"),
                "output": format!("../results/{role}-{run}.json"),
                "he-modulus-bits": 1024,
                "poll-interval-ms": 20,
            });
            if role == "p1" {
                spec["id-column"] = "email".into();
            } else {
                spec["id-column"] = "id".into();
                spec["value-column"] = serde_json::json!(["spend"]);
            }
            std::fs::write(
                dir.join(format!("jobs-{role}/run-{run}.json")),
                spec.to_string(),
            )
            .unwrap();
        }
    }
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let b1 = spawn(&[
        "batch",
        "--jobs",
        dir.join("jobs-p1").to_str().unwrap(),
        "--concurrency",
        "2",
    ]);
    let b2 = spawn(&[
        "batch",
        "--jobs",
        dir.join("jobs-p2").to_str().unwrap(),
        "--concurrency",
        "3",
    ]);
    let (o1, o2) = (finish(b1), finish(b2));
    assert!(o1.status.success(), "{}", stderr(&o1));
    assert!(o2.status.success(), "{}", stderr(&o2));
    let table = String::from_utf8_lossy(&o2.stdout);
    assert!(
        table.contains("run-3.json") && table.contains("total: 4 jobs, 0 failed"),
        "{table}"
    );
    for (run, (card, sum)) in expected {
        let r = json(&dir.join(format!("results/p2-{run}.json")));
        assert_eq!(r["cardinality"], card);
        assert_eq!(r["sums"][0], sum);
    }
}

#[test]
fn demo_runs_and_matches_the_plaintext() {
    let dir = scratch("demo");
    let o = privset(&["demo", "--items", "500", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MATCH") && !out.contains("MISMATCH"), "{out}");
}

// ---- Set operations (Chen et al. 2024) ----

/// Runs one set operation with both parties as processes over mTLS; p1.csv is the
/// receiver's input, p2.csv the sender's. Returns both RESULT.json values.
fn run_pso(dir: &Path, op: &str, extra: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let certs = certs(dir, "receiver,sender");
    let addr = port();
    let args = |role: &str, link: [&str; 2], input: &str, id: &str| -> Vec<String> {
        let mut a: Vec<String> = vec![op.into(), "--role".into(), role.into()];
        a.extend(link.iter().map(|s| s.to_string()));
        a.extend(tls_args(&certs, role));
        a.extend([
            "--input".into(),
            dir.join(input).display().to_string(),
            "--id-column".into(),
            id.into(),
            "--output".into(),
            dir.join(format!("{op}-{role}.json")).display().to_string(),
            "--output-rows".into(),
            dir.join(format!("{op}-{role}.csv")).display().to_string(),
        ]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let r = spawn(&as_refs(&args(
        "receiver",
        ["--listen", &addr],
        "p1.csv",
        "email",
    )));
    std::thread::sleep(Duration::from_millis(200));
    let mut sender = args("sender", ["--peer", &addr], "p2.csv", "id");
    if op == "psi-card-sum" {
        sender.extend(["--value-column".into(), "spend".into()]);
    }
    let s = finish(spawn(&as_refs(&sender)));
    let r = finish(r);
    assert!(r.status.success(), "receiver: {}", stderr(&r));
    assert!(s.status.success(), "sender: {}", stderr(&s));
    (
        json(&dir.join(format!("{op}-receiver.json"))),
        json(&dir.join(format!("{op}-sender.json"))),
    )
}

fn read_rows(path: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records()
        .map(|rec| rec.unwrap().iter().map(|s| s.to_string()).collect())
        .collect()
}

#[test]
fn set_operations_over_mtls_match_the_plaintext() {
    let dir = scratch("pso");
    let (card, sum) = write_inputs(&dir, 300, 200, 80);
    let emails = |range: std::ops::Range<u64>| -> Vec<String> {
        range.map(|i| format!("user{i}@example.com")).collect()
    };
    for g in [
        ["--group", "ristretto255"],
        ["--group", "x25519"],
        ["--group", "p256-compressed"],
        ["--mqrpmt", "vole"],
    ] {
        let group = g.join(" ");
        let (r, _) = run_pso(&dir, "psi", &g);
        assert_eq!(r["cardinality"], card, "{group}");
        let mut got: Vec<String> = read_rows(&dir.join("psi-receiver.csv"))
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        got.sort();
        let mut want = emails(0..card);
        want.sort();
        assert_eq!(got, want, "{group}");
    }
    let (r, _) = run_pso(
        &dir,
        "psi-card",
        &["--mqrpmt", "poprf", "--last-message", "list"],
    );
    assert_eq!(r["cardinality"], card);
    let (r, s) = run_pso(&dir, "psi-card-sum", &["--last-message", "gcs"]);
    assert_eq!(r["cardinality"], card);
    assert_eq!(s["cardinality"], card);
    assert_eq!(s["sum"], sum);
    assert!(
        r.get("sum").is_none(),
        "the receiver must not learn the sum"
    );
    let (r, _) = run_pso(&dir, "psu", &["--group", "x25519"]);
    assert_eq!(r["rows"], 300 + 200 - card);
    let union: std::collections::HashSet<String> = read_rows(&dir.join("psu-receiver.csv"))
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(union.len() as u64, 300 + 200 - card);
    assert!(
        union.contains("user0@example.com")
            && union.contains(&format!("user{}@example.com", 300 + 199))
    );
}

#[test]
fn psi_share_files_xor_to_the_intersection() {
    let dir = scratch("pso-share");
    let (card, _) = write_inputs(&dir, 120, 90, 40);
    let (r, s) = run_pso(&dir, "psi-share", &[]);
    assert_eq!(r["cardinality"], card);
    assert_eq!(s["rows"], 90);
    let mine: HashMap<String, String> = read_rows(&dir.join("psi-share-sender.csv"))
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    let mut opened = Vec::new();
    for row in read_rows(&dir.join("psi-share-receiver.csv")) {
        let a = hex::decode(&row[1]).unwrap();
        let b = hex::decode(&mine[&row[0]]).unwrap();
        let x: Vec<u8> = a.iter().zip(&b).map(|(a, b)| a ^ b).collect();
        let len = u16::from_be_bytes([x[0], x[1]]) as usize;
        opened.push(String::from_utf8(x[2..2 + len].to_vec()).unwrap());
    }
    opened.sort();
    let mut want: Vec<String> = (0..card).map(|i| format!("user{i}@example.com")).collect();
    want.sort();
    assert_eq!(opened, want);
}

#[test]
fn private_id_tables_join_on_one_id_space() {
    let dir = scratch("pso-pid");
    let (card, _) = write_inputs(&dir, 150, 100, 60);
    let (r, s) = run_pso(&dir, "private-id", &[]);
    let total = 150 + 100 - card;
    assert_eq!(r["rows"], total);
    assert_eq!(s["rows"], total);
    let a = read_rows(&dir.join("private-id-receiver.csv"));
    let b = read_rows(&dir.join("private-id-sender.csv"));
    // Same identifiers, same order: the files join row by row.
    let ids = |t: &[Vec<String>]| t.iter().map(|r| r[0].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
    let mut both = 0;
    for (ra, rb) in a.iter().zip(&b) {
        if !ra[1].is_empty() && !rb[1].is_empty() {
            assert_eq!(ra[1], rb[1], "one identifier, two different items");
            both += 1;
        }
        assert!(
            !ra[1].is_empty() || !rb[1].is_empty(),
            "an identifier nobody holds"
        );
    }
    assert_eq!(both, card);
}

#[test]
fn psu_over_an_exchange_directory() {
    let dir = scratch("pso-dir");
    let (card, _) = write_inputs(&dir, 50, 40, 10);
    let ex = dir.join("exchange");
    let args = |role: &str, input: &str, id: &str| -> Vec<String> {
        vec![
            "psu".into(),
            "--role".into(),
            role.into(),
            "--exchange-dir".into(),
            ex.display().to_string(),
            "--input".into(),
            dir.join(input).display().to_string(),
            "--id-column".into(),
            id.into(),
            "--output".into(),
            dir.join(format!("{role}.json")).display().to_string(),
            "--output-rows".into(),
            dir.join(format!("{role}.csv")).display().to_string(),
        ]
    };
    let r = spawn(&as_refs(&args("receiver", "p1.csv", "email")));
    let s = finish(spawn(&as_refs(&args("sender", "p2.csv", "id"))));
    let r = finish(r);
    assert!(
        r.status.success() && s.status.success(),
        "{} {}",
        stderr(&r),
        stderr(&s)
    );
    assert_eq!(json(&dir.join("receiver.json"))["rows"], 50 + 40 - card);
}

#[test]
fn set_operation_input_and_flag_errors_are_clear() {
    let dir = scratch("pso-errors");
    write_inputs(&dir, 10, 10, 5);
    let base = |op: &str, role: &str, extra: &[&str]| {
        let mut a = vec![
            op.to_string(),
            "--role".into(),
            role.into(),
            "--peer".into(),
            "127.0.0.1:9".into(),
            "--insecure-no-tls".into(),
            "--input".into(),
            dir.join("p2.csv").display().to_string(),
            "--id-column".into(),
            "id".into(),
            "--output".into(),
            dir.join("o.json").display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        privset(&as_refs(&a)).output().unwrap()
    };
    let o = base("psi-card-sum", "sender", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--value-column"));
    let o = base("psi", "sender", &["--value-column", "spend"]);
    assert_eq!(o.status.code(), Some(2));
    let o = base("psi", "sender", &["--mqrpmt", "poprf"]);
    assert!(stderr(&o).contains("last-message"), "{}", stderr(&o));
    let o = base(
        "private-id",
        "sender",
        &["--mqrpmt", "poprf", "--last-message", "list"],
    );
    assert!(stderr(&o).contains("private-id"), "{}", stderr(&o));
    let o = base(
        "psi-card-sum",
        "sender",
        &["--value-column", "spend", "--value-bound", "10"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line"), "{}", stderr(&o));
}

fn write_ids(path: &Path, header: &str, ids: impl Iterator<Item = u64>) {
    let mut s = format!("{header}\n");
    for i in ids {
        s.push_str(&format!("4111-{i:08}\n"));
    }
    std::fs::write(path, s).unwrap();
}

/// `judge.key` and `judge.pub` in `dir`, from `privset judge keygen`.
fn judge_keygen(dir: &Path) {
    let (key, public) = (dir.join("judge.key"), dir.join("judge.pub"));
    let o = privset(&[
        "judge",
        "keygen",
        "--key",
        key.to_str().unwrap(),
        "--public",
        public.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Judge, client and server as separate processes over mutual TLS: authorize once,
/// intersect twice with the same signature file, in both modes; a set failing the
/// exec policy is rejected with exit code 5; a subset item without signature is
/// reported and left out.
#[test]
fn apsi_three_processes_over_mutual_tls() {
    let dir = scratch("apsi");
    let certs = certs(&dir, "judge,client,server");
    let p = |name: &str| dir.join(name).display().to_string();
    judge_keygen(&dir);
    write_ids(&dir.join("x.csv"), "card", 0..300);
    write_ids(&dir.join("allow.csv"), "valid", 0..1000);
    write_ids(&dir.join("y.csv"), "card", 200..700);
    // 150..350: 150..300 authorized (100 of them held by the server), 300..350 not.
    write_ids(&dir.join("subset.csv"), "card", 150..350);
    for partial in [None, Some("0.25")] {
        let mode: Vec<&str> = partial.map_or(vec![], |p| vec!["--partial", p]);
        let judge_addr = port();
        let mut judge_args = vec![
            "judge",
            "serve",
            "--listen",
            &judge_addr,
            "--max-sessions",
            "1",
        ];
        let (jk, pol, jlog) = (
            p("judge.key"),
            format!("allow:{}", p("allow.csv")),
            p("judge.jsonl"),
        );
        judge_args.extend(["--key", &jk, "--policy", &pol, "--log", &jlog]);
        let judge_tls = tls_args(&certs, "judge");
        judge_args.extend(as_refs(&judge_tls));
        judge_args.extend(&mode);
        let judge = spawn(&judge_args);
        let client_tls = tls_args(&certs, "client");
        let (xin, sig) = (p("x.csv"), p("x.sig"));
        let mut auth = vec![
            "apsi",
            "authorize",
            "--judge",
            &judge_addr,
            "--client-id",
            "acme",
            "--input",
            &xin,
            "--id-column",
            "card",
            "--signatures",
            &sig,
        ];
        auth.extend(as_refs(&client_tls));
        auth.extend(&mode);
        let o = privset(&auth).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let j = finish(judge);
        assert!(j.status.success(), "{}", stderr(&j));

        let server_addr = port();
        let (jp, yin) = (p("judge.pub"), p("y.csv"));
        let mut serve = vec![
            "apsi",
            "serve",
            "--listen",
            &server_addr,
            "--judge-public",
            &jp,
            "--input",
            &yin,
            "--id-column",
            "card",
            "--max-sessions",
            "2",
        ];
        let server_tls = tls_args(&certs, "server");
        serve.extend(as_refs(&server_tls));
        serve.extend(&mode);
        let server = spawn(&serve);
        for run in 0..2 {
            let (sub, out, rows) = (p("subset.csv"), p("r.json"), p("rows.csv"));
            let mut inter = vec![
                "apsi",
                "intersect",
                "--peer",
                &server_addr,
                "--judge-public",
                &jp,
                "--client-id",
                "acme",
                "--signatures",
                &sig,
                "--input",
                &sub,
                "--id-column",
                "card",
                "--output",
                &out,
                "--output-rows",
                &rows,
            ];
            inter.extend(as_refs(&client_tls));
            let o = privset(&inter).output().unwrap();
            assert!(o.status.success(), "run {run}: {}", stderr(&o));
            assert!(stderr(&o).contains("50 items"), "{}", stderr(&o));
            let r = json(&dir.join("r.json"));
            assert_eq!(r["cardinality"], 100);
            assert_eq!(r["server_items"], 500);
            assert_eq!(r["unauthorized_items"], 50);
            assert_eq!(r["items_used"], 150);
            let got: Vec<String> = read_rows(&dir.join("rows.csv"))
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            let expected: Vec<String> = (200..300).map(|i| format!("4111-{i:08}")).collect();
            assert_eq!(got, expected);
        }
        let s = finish(server);
        assert!(s.status.success(), "{}", stderr(&s));
        // The wrong client ID is refused before connecting.
        let mut wrong = vec![
            "apsi",
            "intersect",
            "--peer",
            &server_addr,
            "--judge-public",
            &jp,
            "--client-id",
            "other",
            "--signatures",
            &sig,
            "--input",
            &xin,
            "--id-column",
            "card",
            "--output",
            "/dev/null",
        ];
        wrong.extend(as_refs(&client_tls));
        let o = privset(&wrong).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("issued to client"), "{}", stderr(&o));
    }
    // An exec policy that rejects: the client exits with 5 and the reason.
    let judge_addr = port();
    let mut judge_args = vec![
        "judge",
        "serve",
        "--listen",
        &judge_addr,
        "--max-sessions",
        "1",
        "--policy",
        "exec:grep -q 4111-00000299 && echo 'card 299 is blocked' || echo accept",
    ];
    let jk = p("judge.key");
    judge_args.extend(["--key", &jk]);
    let judge_tls = tls_args(&certs, "judge");
    judge_args.extend(as_refs(&judge_tls));
    let judge = spawn(&judge_args);
    let (xin, sig2) = (p("x.csv"), p("x2.sig"));
    let mut auth = vec![
        "apsi",
        "authorize",
        "--judge",
        &judge_addr,
        "--client-id",
        "acme",
        "--input",
        &xin,
        "--id-column",
        "card",
        "--signatures",
        &sig2,
    ];
    let client_tls = tls_args(&certs, "client");
    auth.extend(as_refs(&client_tls));
    let o = privset(&auth).output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("card 299 is blocked"), "{}", stderr(&o));
    assert!(!dir.join("x2.sig").exists());
    finish(judge);
}

/// Authorized PSI with the two sides' key settings apart: the client authorized and
/// intersects e-mail addresses under `--normalize email` (lower-cased), the server
/// keeps the default `trim`. Before the settings were agreed the intersection was
/// silently empty (exit 0): the client's "user7@example.com" never met the server's
/// "User7@Example.com". Now the client stops with exit 3 naming the setting, before
/// any item leaves; the server logs the failed session. An input made otherwise
/// than at authorize is refused before connecting (exit 2); the same settings on
/// both sides give the whole overlap.
#[test]
fn apsi_key_settings_are_agreed_between_client_and_server() {
    let dir = scratch("apsi-agreed");
    let certs = certs(&dir, "judge,client,server");
    let p = |name: &str| dir.join(name).display().to_string();
    judge_keygen(&dir);
    let emails = |range: std::ops::Range<u64>| {
        let mut s = String::from("email\n");
        for i in range {
            s.push_str(&format!("User{i}@Example.com\n"));
        }
        s
    };
    std::fs::write(dir.join("x.csv"), emails(0..40)).unwrap();
    std::fs::write(dir.join("y.csv"), emails(25..90)).unwrap();
    let email = ["--id-column", "email", "--normalize", "email"];

    let judge_addr = port();
    let (jk, jp) = (p("judge.key"), p("judge.pub"));
    let mut judge = vec![
        "judge",
        "serve",
        "--listen",
        &judge_addr,
        "--max-sessions",
        "1",
    ];
    judge.extend(["--key", &jk, "--policy", "exec:cat >/dev/null; echo accept"]);
    let judge_tls = tls_args(&certs, "judge");
    judge.extend(as_refs(&judge_tls));
    let judge = spawn(&judge);
    let client_tls = tls_args(&certs, "client");
    let (xin, sig) = (p("x.csv"), p("x.sig"));
    let mut auth = vec!["apsi", "authorize", "--judge", &judge_addr];
    auth.extend(["--client-id", "acme", "--input", &xin, "--signatures", &sig]);
    auth.extend(email);
    auth.extend(as_refs(&client_tls));
    let o = privset(&auth).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(finish(judge).status.success());

    let yin = p("y.csv");
    let server_tls = tls_args(&certs, "server");
    let serve = |addr: &str, keys: &[&str]| {
        let mut a = vec!["apsi", "serve", "--listen", addr, "--judge-public", &jp];
        a.extend(["--input", &yin, "--max-sessions", "1"]);
        a.extend(keys);
        a.extend(as_refs(&server_tls));
        spawn(&a)
    };
    let (out, rows) = (p("r.json"), p("rows.csv"));
    let intersect = |addr: &str, keys: &[&str]| {
        let mut a = vec!["apsi", "intersect", "--peer", addr, "--judge-public", &jp];
        a.extend(["--client-id", "acme", "--signatures", &sig, "--input", &xin]);
        a.extend(["--output", &out, "--output-rows", &rows]);
        a.extend(keys);
        a.extend(as_refs(&client_tls));
        privset(&a).output().unwrap()
    };

    // The server trims only: refused at the hello, exit 3, naming the setting.
    let addr = port();
    let server = serve(&addr, &["--id-column", "email"]);
    let o = intersect(&addr, &email);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "input settings differ, normalize: the client uses normalize email, the server uses normalize trim"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("r.json").exists());
    let s = finish(server);
    let log = String::from_utf8_lossy(&s.stdout).into_owned();
    assert!(
        log.contains("\"ok\":false") && log.contains("normalize"),
        "{log}"
    );

    // The intersect input made otherwise than at authorize: refused before connecting.
    let o = intersect(&port(), &["--id-column", "email"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("the signature file uses normalize email, the input uses normalize trim"),
        "{}",
        stderr(&o)
    );

    // The same settings on both sides: the 15 shared addresses, lower-cased.
    let addr = port();
    let server = serve(&addr, &email);
    let o = intersect(&addr, &email);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&dir.join("r.json"))["cardinality"], 15);
    let mut got: Vec<String> = read_rows(&dir.join("rows.csv"))
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    got.sort();
    let mut expected: Vec<String> = (25..40).map(|i| format!("user{i}@example.com")).collect();
    expected.sort();
    assert_eq!(got, expected);
    assert!(finish(server).status.success());
}

#[test]
fn exchange_dir_that_is_a_file_exits_4_and_a_killed_party_restarts_at_once() {
    let dir = scratch("xdir-file");
    write_inputs(&dir, 20, 20, 5);
    let file = dir.join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    for x in [file.clone(), file.join("run-1")] {
        let link = vec!["--exchange-dir".to_string(), x.display().to_string()];
        let o = privset(&as_refs(&party_args(&dir, "p1", &link, &[])))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        assert!(stderr(&o).contains("not a directory") || stderr(&o).contains("lies under"));
    }
    // Killed and restarted before the old process is reaped: the kernel released the
    // lock with the process, so the restart is not refused.
    let x = dir.join("exchange");
    let link = dir_link(&x);
    let args = party_args(&dir, "p1", &link, &[]);
    let mut first = spawn(&as_refs(&args));
    wait_for(&x.join("p1.lock"), Duration::from_secs(30));
    first.kill().unwrap();
    let mut second = spawn(&as_refs(&args));
    std::thread::sleep(Duration::from_secs(3));
    let exited = second.try_wait().unwrap();
    let _ = second.kill();
    let o = finish(second);
    let _ = first.wait();
    assert!(exited.is_none(), "restart refused: {}", stderr(&o));
}

#[test]
fn a_state_directory_inside_the_exchange_directory_is_refused() {
    let dir = scratch("xdir-state");
    write_inputs(&dir, 20, 20, 5);
    let x = dir.join("exchange");
    let link = vec!["--exchange-dir".to_string(), x.display().to_string()];
    // --output in the shared directory puts the default state directory there too.
    let mut args = party_args(&dir, "p1", &link, &["--timeout", "2"]);
    let out = args.iter().position(|a| a == "--output").unwrap();
    args[out + 1] = x.join("p1.json").display().to_string();
    let o = privset(&as_refs(&args)).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("inside the exchange directory"),
        "{}",
        stderr(&o)
    );
    assert!(
        !x.join(".privset-state").exists(),
        "no seed in the shared directory"
    );
}

#[test]
fn a_silent_peer_is_dropped_after_timeout_not_a_fixed_handshake_wait() {
    let dir = scratch("silent-greeting");
    write_inputs(&dir, 20, 20, 5);
    let addr = port();
    let link = vec![
        "--listen".to_string(),
        addr.clone(),
        "--insecure-no-tls".into(),
    ];
    let start = Instant::now();
    let child = spawn(&as_refs(&party_args(
        &dir,
        "p1",
        &link,
        &["--timeout", "2"],
    )));
    let deadline = Instant::now() + Duration::from_secs(10);
    let silent = loop {
        match std::net::TcpStream::connect(&addr) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("{e}"),
        }
    };
    let o = finish(child);
    drop(silent);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        start.elapsed() < Duration::from_secs(12),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn output_rows_carry_the_identifiers_exact_bytes() {
    let dir = scratch("pso-bytes");
    let odd: [&[u8]; 3] = [b"caf\xe9", b"\xff\xfe-id", b"quoted, \"yes\""];
    let quote = |id: &[u8]| {
        let mut q = b"\"".to_vec();
        for &b in id {
            if b == b'"' {
                q.push(b'"');
            }
            q.push(b);
        }
        q.extend(b"\"");
        q
    };
    let mut p1 = b"email\n".to_vec();
    let mut p2 = b"id,spend\n".to_vec();
    for (i, id) in odd.iter().enumerate() {
        p1.extend(quote(id));
        p1.push(b'\n');
        p2.extend(quote(id));
        p2.extend(format!(",{i}\n").as_bytes());
    }
    p1.extend(b"only-p1\n");
    p2.extend(b"only-p2,9\n");
    std::fs::write(dir.join("p1.csv"), p1).unwrap();
    std::fs::write(dir.join("p2.csv"), p2).unwrap();
    run_pso(&dir, "psi", &[]);
    let mut r = csv::Reader::from_path(dir.join("psi-receiver.csv")).unwrap();
    let mut got: Vec<Vec<u8>> = r
        .byte_records()
        .map(|rec| rec.unwrap()[0].to_vec())
        .collect();
    got.sort();
    let mut want: Vec<Vec<u8>> = odd.iter().map(|id| id.to_vec()).collect();
    want.sort();
    assert_eq!(got, want);
}
