//! `privset mpsi` end to end: every protocol with ten real processes over mutual TLS,
//! an exchange directory, and a participant that drops out.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-mpsi-test-{}-{name}", std::process::id()));
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

fn name(i: usize) -> String {
    format!("org{i}")
}

/// Certificates for every participant and the parties file naming them.
fn roster(dir: &Path, n: usize, tcp: bool) -> PathBuf {
    roster_with(dir, n, tcp, &[])
}

/// [`roster`], with certificates from the same CA for `others`, who are not listed.
fn roster_with(dir: &Path, n: usize, tcp: bool, others: &[&str]) -> PathBuf {
    let names: Vec<String> = (0..n).map(name).collect();
    let all: Vec<String> = names
        .iter()
        .cloned()
        .chain(others.iter().map(|s| s.to_string()))
        .collect();
    let o = Command::new(BIN)
        .args([
            "certs",
            "--out",
            dir.join("certs").to_str().unwrap(),
            "--names",
            &all.join(","),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut toml = String::from("ca = \"certs/ca.pem\"\n");
    for n in &names {
        toml.push_str(&format!(
            "\n[[party]]\nname = \"{n}\"\ncertificate = \"certs/{n}.pem\"\n"
        ));
        if tcp {
            toml.push_str(&format!("address = \"{}\"\n", port()));
        }
    }
    let path = dir.join("parties.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Participant `i`'s set: `common` items everyone holds, plus its own.
fn set(i: usize, common: usize) -> Vec<String> {
    let mut s: Vec<String> = (0..common).map(|k| format!("plate-{k:05}")).collect();
    s.extend((0..20 + 3 * i).map(|k| format!("own-{i}-{k}")));
    // Held by every participant but 1: never in the intersection.
    if i != 1 {
        s.push("almost".into());
    }
    s
}

fn write_input(dir: &Path, i: usize, common: usize) -> PathBuf {
    let p = dir.join(format!("{}.csv", name(i)));
    let mut text = String::from("plate\n");
    for x in set(i, common) {
        text.push_str(&x);
        text.push('\n');
    }
    std::fs::write(&p, text).unwrap();
    p
}

fn role(protocol: &str, i: usize) -> &'static str {
    match (protocol, i) {
        ("miyaji-nishida", 0) => "dealer",
        ("miyaji-nishida", _) => "party",
        (_, 0) => "server",
        _ => "client",
    }
}

fn spawn(dir: &Path, protocol: &str, i: usize, parties: &Path, link: &[String]) -> Child {
    spawn_holding(dir, protocol, i, parties, link, 15)
}

/// [`spawn`] with `common` items held by every participant.
fn spawn_holding(
    dir: &Path,
    protocol: &str,
    i: usize,
    parties: &Path,
    link: &[String],
    common: usize,
) -> Child {
    let mut args: Vec<String> = vec![
        "mpsi".into(),
        "--protocol".into(),
        protocol.into(),
        "--role".into(),
        role(protocol, i).into(),
        "--name".into(),
        name(i),
        "--parties".into(),
        parties.display().to_string(),
        "--timeout".into(),
        "60".into(),
        "--output".into(),
        dir.join(format!("{}.json", name(i))).display().to_string(),
    ];
    if role(protocol, i) != "dealer" {
        args.extend([
            "--input".into(),
            write_input(dir, i, common).display().to_string(),
            "--id-column".into(),
            "plate".into(),
        ]);
    }
    if matches!(role(protocol, i), "server" | "party") {
        args.extend([
            "--output-rows".into(),
            dir.join(format!("{}-rows.csv", name(i)))
                .display()
                .to_string(),
        ]);
    }
    args.extend(link.iter().cloned());
    Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn tls_key(dir: &Path, i: usize) -> Vec<String> {
    vec![
        "--tls-key".into(),
        dir.join("certs")
            .join(format!("{}.key", name(i)))
            .display()
            .to_string(),
    ]
}

fn check(dir: &Path, protocol: &str, n: usize, children: Vec<Child>, transport: &str) {
    let holders: Vec<HashSet<String>> = (1..n).map(|i| set(i, 15).into_iter().collect()).collect();
    for (i, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "{protocol} participant {i}: {}",
            stderr(&o)
        );
        let text = std::fs::read_to_string(dir.join(format!("{}.json", name(i)))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["mpsi_protocol"], protocol);
        assert_eq!(report["role"], role(protocol, i));
        assert_eq!(report["participants"], n);
        assert_eq!(report["transport"], transport);
        match role(protocol, i) {
            "server" | "party" => {
                let expected: Vec<String> = set(i, 15)
                    .into_iter()
                    .filter(|x| holders.iter().all(|h| h.contains(x)))
                    .collect();
                assert_eq!(
                    report["intersection_size"],
                    expected.len(),
                    "{protocol} {i}"
                );
                let rows =
                    std::fs::read_to_string(dir.join(format!("{}-rows.csv", name(i)))).unwrap();
                let got: Vec<&str> = rows.lines().skip(1).collect();
                assert_eq!(got, expected, "{protocol} participant {i}");
            }
            _ => assert!(report["intersection_size"].is_null()),
        }
    }
}

#[test]
fn ten_processes_over_mutual_tls_for_every_protocol() {
    const N: usize = 10;
    for protocol in ["bay", "miyaji-nishida", "hazay"] {
        let dir = scratch(&format!("tls-{protocol}"));
        let parties = roster(&dir, N, true);
        let children: Vec<Child> = (0..N)
            .map(|i| spawn(&dir, protocol, i, &parties, &tls_key(&dir, i)))
            .collect();
        check(&dir, protocol, N, children, "tcp+mtls");
    }
}

/// Runs `n` participants of `protocol` over one exchange directory, participant `i`
/// with parties file `file(i)` and the extra flags `extra(i)`; checks that every one
/// stops with exit 3 and that participant `odd`'s error names `setting`.
fn refused_at_the_hellos(
    dir: &Path,
    protocol: &str,
    n: usize,
    file: impl Fn(usize) -> PathBuf,
    extra: impl Fn(usize) -> Vec<String>,
    (odd, setting): (usize, &str),
) {
    let exchange = dir.join("exchange");
    let outputs: Vec<Output> = (0..n)
        .map(|i| {
            let mut link = vec![
                "--exchange-dir".to_string(),
                exchange.display().to_string(),
                "--poll-interval-ms".into(),
                "10".into(),
            ];
            link.extend(extra(i));
            spawn(dir, protocol, i, &file(i), &link)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for (i, o) in outputs.iter().enumerate() {
        assert_eq!(
            o.status.code(),
            Some(3),
            "{protocol} participant {i}: {}",
            stderr(o)
        );
    }
    let said = stderr(&outputs[odd]);
    assert!(
        said.contains(&format!("input settings differ, {setting}")),
        "{protocol}: {said}"
    );
}

/// A participant that normalises its identifiers differently stops the session with
/// exit 3 naming the setting, for every protocol; the dealer of Miyaji-Nishida, which
/// holds no set, states none of the key settings.
#[test]
fn a_key_setting_on_one_participant_stops_the_session() {
    for protocol in ["bay", "miyaji-nishida", "hazay"] {
        let dir = scratch(&format!("agreed-{protocol}"));
        let parties = roster(&dir, 3, false);
        let lower = |i: usize| match i {
            2 => vec!["--normalize".to_string(), "lower".into()],
            _ => vec![],
        };
        refused_at_the_hellos(
            &dir,
            protocol,
            3,
            |_| parties.clone(),
            lower,
            (2, "normalize"),
        );
    }
}

/// A participant whose parties file lists the others in another order (org1 and org2
/// swapped; it stays fourth) states another roster and the session stops at the hellos
/// with exit 3 naming it, over an exchange directory too (over TCP the certificates
/// listed at each index already differ).
#[test]
fn a_roster_in_another_order_is_refused() {
    for protocol in ["bay", "miyaji-nishida"] {
        let dir = scratch(&format!("roster-{protocol}"));
        let parties = roster(&dir, 4, false);
        let text = std::fs::read_to_string(&parties).unwrap();
        let swapped = text
            .replace("org1", "TMP")
            .replace("org2", "org1")
            .replace("TMP", "org2");
        let other = dir.join("parties-swapped.toml");
        std::fs::write(&other, swapped).unwrap();
        let file = |i: usize| {
            if i == 3 {
                other.clone()
            } else {
                parties.clone()
            }
        };
        refused_at_the_hellos(&dir, protocol, 4, file, |_| vec![], (3, "roster"));
    }
}

/// Over an exchange directory with `--tls-key`, each participant signs its link key
/// file with its certificate's key, and the others check it against the parties file:
/// the session runs, and an outsider (a certificate from the same CA) writing org2's
/// key file is refused, so a storage that rewrites key files cannot sit in the middle.
#[test]
fn signed_link_keys_over_an_exchange_directory() {
    const N: usize = 3;
    let dir = scratch("signed-dir");
    let parties = roster_with(&dir, N, false, &["outsider"]);
    let link = |exchange: &str, cert: &str| {
        let certs = dir.join("certs");
        vec![
            "--exchange-dir".to_string(),
            dir.join(exchange).display().to_string(),
            "--poll-interval-ms".into(),
            "10".into(),
            "--tls-cert".into(),
            certs.join(format!("{cert}.pem")).display().to_string(),
            "--tls-key".into(),
            certs.join(format!("{cert}.key")).display().to_string(),
        ]
    };
    let children: Vec<Child> = (0..N)
        .map(|i| spawn(&dir, "bay", i, &parties, &link("x-ok", &name(i))))
        .collect();
    check(&dir, "bay", N, children, "exchange-dir");
    let key_file = std::fs::read(dir.join("x-ok").join("p2.pub")).unwrap();
    assert!(
        key_file.len() > 6 + 2 + 32 + 4,
        "the key file carries a signature"
    );
    // The outsider writes org2's key file: the server refuses it.
    let children: Vec<Child> = (0..N)
        .map(|i| {
            let cert = if i == 2 {
                "outsider".to_string()
            } else {
                name(i)
            };
            spawn(&dir, "bay", i, &parties, &link("x-outsider", &cert))
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    assert!(outputs.iter().all(|o| !o.status.success()));
    let said = stderr(&outputs[0]);
    assert!(
        said.contains("p2.pub is refused") && said.contains("not by the certificate listed"),
        "{said}"
    );
}

/// An outsider holding a certificate from the consortium's CA tries to take org2's place:
/// every listed participant it links with refuses it, naming the participant and both
/// certificates, and nobody finishes (before this check, an intersection of
/// 41 where the real sets give 37, every participant exiting 0).
#[test]
fn an_outsider_with_a_certificate_from_the_same_ca_is_refused() {
    const N: usize = 3;
    for protocol in ["bay", "miyaji-nishida", "hazay"] {
        let dir = scratch(&format!("outsider-{protocol}"));
        // The consortium's CA signs the outsider's certificate too.
        let parties = roster_with(&dir, N, true, &["outsider"]);
        let certs = dir.join("certs");
        let outsider_tls = vec![
            "--tls-cert".to_string(),
            certs.join("outsider.pem").display().to_string(),
            "--tls-key".to_string(),
            certs.join("outsider.key").display().to_string(),
        ];
        let mut children: Vec<Child> = (0..2)
            .map(|i| spawn(&dir, protocol, i, &parties, &tls_key(&dir, i)))
            .collect();
        children.push(spawn(&dir, protocol, 2, &parties, &outsider_tls));
        let outputs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        for (i, o) in outputs.iter().enumerate() {
            assert!(
                !o.status.success(),
                "{protocol} participant {i} finished with the outsider"
            );
        }
        let refused = outputs.iter().take(2).any(|o| {
            stderr(o).contains("participant 2 is \"org2\"")
                && stderr(o).contains("the certificate of outsider")
        });
        assert!(
            refused,
            "{protocol}: {}",
            outputs
                .iter()
                .map(stderr)
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        assert!(
            stderr(&outputs[2]).contains("refused"),
            "{protocol}: {}",
            stderr(&outputs[2])
        );
    }
}

/// `privset mpsi-deal` makes the Paillier key files, and every protocol runs on them with
/// four processes over mutual TLS; a holder given another holder's file is refused.
#[test]
fn four_processes_on_a_dealt_paillier_key() {
    const N: usize = 4;
    let dir = scratch("paillier");
    let parties = roster(&dir, N, true);
    let keys = dir.join("keys");
    let o = Command::new(BIN)
        .args(["mpsi-deal", "--parties", parties.to_str().unwrap(), "--out"])
        .arg(&keys)
        .args(["--modulus-bits", "1024"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(files.len(), N, "{files:?}");
    let key_of = |i: usize| {
        let file = if i == 0 {
            keys.join("public.key")
        } else {
            keys.join(format!("{}.key", name(i)))
        };
        vec![
            "--scheme".to_string(),
            "paillier".into(),
            "--paillier-key".into(),
            file.display().to_string(),
        ]
    };
    for protocol in ["bay", "miyaji-nishida", "hazay"] {
        let children: Vec<Child> = (0..N)
            .map(|i| {
                let mut link = tls_key(&dir, i);
                link.extend(key_of(i));
                spawn(&dir, protocol, i, &parties, &link)
            })
            .collect();
        check(&dir, protocol, N, children, "tcp+mtls");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("org1.json")).unwrap()).unwrap();
        assert_eq!(report["scheme"], "paillier");
    }
    // Holder 2 with holder 1's file: refused before any link opens.
    let mut link = tls_key(&dir, 2);
    link.extend(key_of(1));
    let o = spawn(&dir, "bay", 2, &parties, &link)
        .wait_with_output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("holder 1's"), "{}", stderr(&o));
}

#[test]
fn four_processes_over_an_exchange_directory() {
    const N: usize = 4;
    for protocol in ["bay", "miyaji-nishida"] {
        let dir = scratch(&format!("dir-{protocol}"));
        let parties = roster(&dir, N, false);
        let exchange = dir.join("exchange");
        let link = vec![
            "--exchange-dir".to_string(),
            exchange.display().to_string(),
            "--poll-interval-ms".into(),
            "10".into(),
        ];
        let children: Vec<Child> = (0..N)
            .map(|i| spawn(&dir, protocol, i, &parties, &link))
            .collect();
        check(&dir, protocol, N, children, "exchange-dir");
    }
}

#[test]
fn a_participant_that_drops_out_is_named() {
    const N: usize = 4;
    let dir = scratch("dropout");
    let parties = roster(&dir, N, true);
    // Party 2 reports its progress, and is killed once it waits for one of the dealer's
    // chunks: it has not yet sent its decryption shares of that chunk, so no one can
    // finish without it, however fast the machine. (The line may come a tick late; with
    // 300 common items there are many chunks left by then.)
    let mut children: Vec<Child> = (0..N)
        .map(|i| {
            let mut link = tls_key(&dir, i);
            if i == 2 {
                link.extend(["--progress".into(), "json".into()]);
            }
            spawn_holding(&dir, "miyaji-nishida", i, &parties, &link, 300)
        })
        .collect();
    let progress = BufReader::new(children[2].stderr.take().unwrap());
    let mut seen = Vec::new();
    for line in progress.lines() {
        let line = line.unwrap();
        let waiting = line.contains("waiting for the dealer's chunk");
        seen.push(line);
        if waiting {
            break;
        }
    }
    assert!(
        seen.last()
            .is_some_and(|l| l.contains("waiting for the dealer's chunk")),
        "party 2 never waited for a chunk of the dealer's: {seen:?}"
    );
    children[2].kill().unwrap();
    let started = std::time::Instant::now();
    for (i, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        if i == 2 {
            continue;
        }
        assert!(
            !o.status.success(),
            "participant {i} finished without party 2"
        );
        let why = stderr(&o);
        assert!(
            why.contains("org2"),
            "participant {i} does not name org2: {why}"
        );
    }
    assert!(
        started.elapsed().as_secs() < 40,
        "the others took {:?} to stop",
        started.elapsed()
    );
    // A role that does not match the parties file is refused before anything is sent.
    let o = Command::new(BIN)
        .args([
            "mpsi",
            "--protocol",
            "bay",
            "--role",
            "client",
            "--name",
            "org0",
            "--parties",
        ])
        .arg(&parties)
        .args([
            "--input",
            "x.csv",
            "--id-column",
            "plate",
            "--output",
            "x.json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its role in bay is server"),
        "{}",
        stderr(&o)
    );
}

/// `privset bench mpsi`: a small run finishes with the right intersection; a run past
/// `--max-seconds` is stopped and reported, and the same protocol is then not run at a
/// size at least as large (but still at a smaller one).
#[test]
fn bench_reports_finished_stopped_and_skipped_runs() {
    let dir = scratch("bench");
    let bench_with = |sizes: &str, max_seconds: &str, extra: &[&str]| {
        let out = Command::new(BIN)
            .args(["bench", "mpsi", "--tests", "--sizes", sizes])
            .args(["--protocols", "bay", "--progress", "none"])
            .args(["--max-seconds", max_seconds])
            .args(extra)
            .arg("--dir")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let bench = |sizes: &str, max_seconds: &str| bench_with(sizes, max_seconds, &[]);
    let finished = bench("3x20", "600");
    let row = finished
        .lines()
        .find(|l| l.starts_with("bay") && l.contains("3 x 20"))
        .unwrap_or_else(|| panic!("no row: {finished}"));
    assert!(row.contains("intersection 3"), "{finished}");
    let stopped = bench("3x20,4x20,3x10", "0");
    let lines: Vec<&str> = stopped
        .lines()
        .filter(|l| l.trim_start().starts_with("bay"))
        .collect();
    assert_eq!(lines.len(), 3, "{stopped}");
    assert!(
        lines[0].contains("not finished after 0 s: stopped"),
        "{stopped}"
    );
    assert!(
        lines[1].contains("not run: stopped at 3 x 20 after 0 s"),
        "{stopped}"
    );
    assert!(
        lines[2].contains("not finished after 0 s: stopped"),
        "{stopped}"
    );
    // With Paillier, no key is dealt for a size where every protocol is skipped.
    let paillier = ["--scheme", "paillier", "--modulus-bits", "1024"];
    let dealt = bench_with("3x20,4x20", "0", &paillier);
    assert_eq!(dealt.matches("Paillier key dealt").count(), 1, "{dealt}");
    assert!(dealt.contains("not run: stopped at 3 x 20"), "{dealt}");
    let _ = std::fs::remove_dir_all(&dir);
}
