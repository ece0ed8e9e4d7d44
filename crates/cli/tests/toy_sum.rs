//! `privset toy-sum` end to end: ten real processes over mutual TLS (star and mesh) and
//! over one exchange directory, and a participant with another count failing the run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_privset");
const N: usize = 10;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-toy-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn certs(dir: &Path) -> PathBuf {
    let out = dir.join("certs");
    let names: Vec<String> = (0..N).map(|i| format!("p{i}")).collect();
    let o = Command::new(BIN)
        .args([
            "certs",
            "--out",
            out.to_str().unwrap(),
            "--names",
            &names.join(","),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

fn value(i: usize) -> u64 {
    1_000_000_007 * (i as u64 + 1)
}

fn expected() -> u64 {
    (0..N).map(value).sum()
}

/// Starts participant `i` with the link flags `link` and `extra`; writes pI.json.
fn spawn(dir: &Path, i: usize, parties: usize, link: &[String], extra: &[&str]) -> Child {
    let mut args: Vec<String> = vec![
        "toy-sum".into(),
        "--parties".into(),
        parties.to_string(),
        "--me".into(),
        i.to_string(),
        "--value".into(),
        value(i).to_string(),
        "--timeout".into(),
        "60".into(),
        "--output".into(),
        dir.join(format!("p{i}.json")).display().to_string(),
    ];
    args.extend(link.iter().cloned());
    args.extend(extra.iter().map(|s| s.to_string()));
    Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn tls_link(certs: &Path, i: usize, addresses: &[String]) -> Vec<String> {
    vec![
        "--addresses".into(),
        addresses.join(","),
        "--tls-ca".into(),
        certs.join("ca.pem").display().to_string(),
        "--tls-cert".into(),
        certs.join(format!("p{i}.pem")).display().to_string(),
        "--tls-key".into(),
        certs.join(format!("p{i}.key")).display().to_string(),
    ]
}

fn check_all(dir: &Path, children: Vec<Child>, form: &str, transport: &str) {
    for (i, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "participant {i}: {}", stderr(&o));
        let text = std::fs::read_to_string(dir.join(format!("p{i}.json"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["protocol"], "toy-sum");
        assert_eq!(report["form"], form);
        assert_eq!(report["parties"], N);
        assert_eq!(report["me"], i);
        assert_eq!(report["total"], expected(), "participant {i}");
        assert_eq!(report["transport"], transport);
        assert!(report["bytes_sent"].as_u64().unwrap() > 0);
    }
}

#[test]
fn ten_processes_over_mutual_tls_star_and_mesh() {
    let dir = scratch("tls");
    let certs = certs(&dir);
    for form in ["star", "mesh"] {
        let addresses: Vec<String> = (0..N).map(|_| port()).collect();
        let children: Vec<Child> = (0..N)
            .map(|i| {
                spawn(
                    &dir,
                    i,
                    N,
                    &tls_link(&certs, i, &addresses),
                    &["--form", form],
                )
            })
            .collect();
        check_all(&dir, children, form, "tcp+mtls");
    }
}

#[test]
fn ten_processes_over_an_exchange_directory() {
    let dir = scratch("dir");
    for form in ["star", "mesh"] {
        let exchange = dir.join(format!("exchange-{form}"));
        let link = vec![
            "--exchange-dir".to_string(),
            exchange.display().to_string(),
            "--poll-interval-ms".into(),
            "20".into(),
        ];
        let children: Vec<Child> = (0..N)
            .map(|i| spawn(&dir, i, N, &link, &["--form", form]))
            .collect();
        check_all(&dir, children, form, "exchange-dir");
        assert!(exchange.join("0000-p3-to-p0.msg").exists());
        // The resume seeds are removed once the results are written.
        let state = dir.join(".privset-state");
        assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
    }
}

#[test]
fn a_participant_with_another_count_fails_the_run() {
    let dir = scratch("count");
    let certs = certs(&dir);
    let addresses: Vec<String> = (0..N).map(|_| port()).collect();
    // Participant 5 believes there are 9 participants (and knows 9 addresses).
    let children: Vec<Child> = (0..N)
        .map(|i| {
            if i == 5 {
                spawn(
                    &dir,
                    i,
                    N - 1,
                    &tls_link(&certs, i, &addresses[..N - 1]),
                    &[],
                )
            } else {
                spawn(&dir, i, N, &tls_link(&certs, i, &addresses), &[])
            }
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    // The hub finds the mismatch in participant 5's hello.
    let hub = &outputs[0];
    assert_eq!(hub.status.code(), Some(3), "{}", stderr(hub));
    let why = stderr(hub);
    assert!(
        why.contains("settings do not match") && why.contains("participant count"),
        "{why}"
    );
    assert!(why.contains("party 5 announces 9"), "{why}");
    // Everyone else is told why and stops with the same exit code.
    for (i, o) in outputs.iter().enumerate().skip(1) {
        assert_eq!(o.status.code(), Some(3), "participant {i}: {}", stderr(o));
        assert!(
            stderr(o).contains("participant count"),
            "participant {i}: {}",
            stderr(o)
        );
        assert!(!dir.join(format!("p{i}.json")).exists());
    }
}
