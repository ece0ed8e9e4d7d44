//! `--progress`: a psi run between two real processes over an exchange directory, with
//! the JSON lines read back (every bulk phase named, counted to its total), and nothing
//! on a non-terminal stderr by default.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_privset");
/// More than one counted slice (8,192 items), so a phase is seen part-way.
const ITEMS: usize = 20_000;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "privset-progress-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_set(path: &Path, prefix: &str, shared: usize) {
    let mut text = String::from("id\n");
    for i in 0..ITEMS {
        if i < shared {
            text.push_str(&format!("item{i}\n"));
        } else {
            text.push_str(&format!("{prefix}{i}\n"));
        }
    }
    std::fs::write(path, text).unwrap();
}

/// Runs a psi receiver and sender; returns their outputs.
fn run_psi(dir: &Path, extra: &[&str]) -> (Output, Output) {
    write_set(&dir.join("r.csv"), "r", ITEMS);
    write_set(&dir.join("s.csv"), "s", ITEMS / 2);
    let party = |role: &str, input: &str| {
        let mut args: Vec<String> = [
            "psi",
            "--role",
            role,
            "--exchange-dir",
            "ex",
            "--input",
            input,
            "--id-column",
            "id",
            "--group",
            "x25519",
            "--timeout",
            "120",
            "--output",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("{role}.json"));
        args.extend(extra.iter().map(|s| s.to_string()));
        Command::new(BIN)
            .args(&args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let receiver = party("receiver", "r.csv");
    let sender = party("sender", "s.csv");
    let r = receiver.wait_with_output().unwrap();
    let s = sender.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    (r, s)
}

/// The JSON lines of a party's stderr (the last line is its human summary).
fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The phases seen, each with the largest count reported and its total.
fn phases(lines: &[Value]) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for l in lines {
        let Some(phase) = l["phase"].as_str() else {
            continue;
        };
        let (done, total) = (l["done"].as_u64().unwrap(), l["total"].as_u64().unwrap());
        assert!(done <= total, "{l}");
        match out.last_mut() {
            Some(last) if last.0 == phase => last.1 = last.1.max(done),
            _ => out.push((phase.to_string(), done, total)),
        }
    }
    out
}

#[test]
fn json_progress_names_every_bulk_phase_and_counts_it_to_the_end() {
    let dir = scratch("json");
    let (r, s) = run_psi(&dir, &["--progress", "json"]);
    let (r, s) = (json_lines(&r), json_lines(&s));
    for l in r.iter().chain(&s) {
        assert!(l["party"].is_string() && l["status"].is_string(), "{l}");
        assert!(l["elapsed_seconds"].as_f64().is_some(), "{l}");
    }
    let n = ITEMS as u64;
    let sender_phases = phases(&s);
    assert_eq!(
        sender_phases,
        vec![
            ("S1: hashing and evaluating our items".into(), n, n),
            ("S2: evaluating the receiver's items".into(), n, n),
        ],
        "{s:#?}"
    );
    assert_eq!(
        phases(&r),
        vec![
            ("R1: hashing and evaluating our items".into(), n, n),
            ("S1: evaluating the sender's items".into(), n, n),
        ],
        "{r:#?}"
    );
    // The last line says the party is done.
    assert_eq!(r.last().unwrap()["status"], "done");
    assert_eq!(s.last().unwrap()["status"], "done");
}

#[test]
fn nothing_but_the_summary_when_stderr_is_not_a_terminal() {
    let dir = scratch("quiet");
    let (r, s) = run_psi(&dir, &[]);
    for o in [&r, &s] {
        let text = String::from_utf8_lossy(&o.stderr);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(json_lines(o).is_empty());
    }
}

/// `upsi db build` (no party: a long local computation) counts its two bulk steps.
#[test]
fn upsi_db_build_counts_hashing_and_polynomials() {
    let dir = scratch("upsi");
    write_set(&dir.join("db.csv"), "d", 0);
    let out = Command::new(BIN)
        .args([
            "upsi",
            "db",
            "build",
            "--input",
            "db.csv",
            "--id-column",
            "id",
            "--db",
            "x.upsi",
            "--progress",
            "json",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    let seen = phases(&lines);
    let n = ITEMS as u64;
    assert_eq!(
        seen[0],
        ("hashing the items under the OPRF key".into(), n, n),
        "{seen:?}"
    );
    assert_eq!(
        seen[1].0, "computing the bin bundles' polynomials",
        "{seen:?}"
    );
    assert!(seen[1].2 > 0 && seen[1].1 == seen[1].2, "{seen:?}");
    assert_eq!(seen.len(), 2, "{seen:?}");
}
