//! `privset apsi serve` as a long-lived endpoint, with real processes: sessions served
//! concurrently, and a silent client that delays no one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use privset_net::{ConnectOptions, TlsFiles, Transport, TransportError, tls};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "privset-endpoint-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn privset(args: &[String]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

fn spawn(args: &[String]) -> Child {
    privset(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn write_ids(path: &Path, ids: impl Iterator<Item = u64>) {
    let mut s = String::from("card\n");
    for i in ids {
        s.push_str(&format!("4111-{i:08}\n"));
    }
    std::fs::write(path, s).unwrap();
}

/// A scratch directory with certificates, the judge's keys, X (0..300) authorized into
/// x.sig, and Y (`y` items from 200).
struct Setup {
    dir: PathBuf,
    certs: PathBuf,
}

impl Setup {
    fn new(name: &str, y: u64) -> Self {
        let dir = scratch(name);
        let certs = dir.join("certs");
        let s = Self { dir, certs };
        let o = privset(&args(&[
            "certs",
            "--out",
            &s.p("certs"),
            "--names",
            "judge,client,server",
        ]))
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let o = privset(&args(&[
            "judge",
            "keygen",
            "--key",
            &s.p("judge.key"),
            "--public",
            &s.p("judge.pub"),
        ]))
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        write_ids(&s.dir.join("x.csv"), 0..300);
        write_ids(&s.dir.join("y.csv"), 200..200 + y);
        let judge_addr = port();
        let mut judge = args(&[
            "judge",
            "serve",
            "--listen",
            &judge_addr,
            "--max-sessions",
            "1",
            "--key",
            &s.p("judge.key"),
            "--policy",
            &format!("allow:{}", s.p("x.csv")),
        ]);
        judge.extend(s.tls("judge"));
        let judge = spawn(&judge);
        let mut auth = args(&[
            "apsi",
            "authorize",
            "--judge",
            &judge_addr,
            "--client-id",
            "acme",
            "--input",
            &s.p("x.csv"),
            "--id-column",
            "card",
            "--signatures",
            &s.p("x.sig"),
        ]);
        auth.extend(s.tls("client"));
        let o = privset(&auth).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let j = judge.wait_with_output().unwrap();
        assert!(j.status.success(), "{}", stderr(&j));
        // The judge's session log: one JSON line on stdout.
        let line: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&j.stdout).trim()).unwrap();
        assert_eq!(line["session"], 1);
        assert_eq!(line["ok"], true);
        assert_eq!(line["outcome"]["accepted"], true);
        s
    }

    fn p(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn tls(&self, name: &str) -> Vec<String> {
        vec![
            "--tls-ca".into(),
            self.certs.join("ca.pem").display().to_string(),
            "--tls-cert".into(),
            self.certs.join(format!("{name}.pem")).display().to_string(),
            "--tls-key".into(),
            self.certs.join(format!("{name}.key")).display().to_string(),
        ]
    }

    fn server(&self, addr: &str, extra: &[&str]) -> Child {
        self.server_with(addr, extra, self.tls("server"))
    }

    /// `apsi serve` with `security`: TLS flags, or `--insecure-no-tls`.
    fn server_with(&self, addr: &str, extra: &[&str], security: Vec<String>) -> Child {
        let mut serve = args(&[
            "apsi",
            "serve",
            "--listen",
            addr,
            "--judge-public",
            &self.p("judge.pub"),
            "--input",
            &self.p("y.csv"),
            "--id-column",
            "card",
        ]);
        serve.extend(args(extra));
        serve.extend(security);
        spawn(&serve)
    }

    fn intersect(&self, addr: &str, output: &str) -> Child {
        self.intersect_with(addr, output, self.tls("client"))
    }

    fn intersect_with(&self, addr: &str, output: &str, security: Vec<String>) -> Child {
        let mut inter = args(&[
            "apsi",
            "intersect",
            "--peer",
            addr,
            "--judge-public",
            &self.p("judge.pub"),
            "--client-id",
            "acme",
            "--signatures",
            &self.p("x.sig"),
            "--input",
            &self.p("x.csv"),
            "--id-column",
            "card",
            "--output",
            &self.p(output),
            "--timeout",
            "120",
        ]);
        inter.extend(security);
        spawn(&inter)
    }

    fn result(&self, output: &str) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join(output)).unwrap()).unwrap()
    }
}

/// The server's log: one JSON line per session on stdout.
fn log_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[test]
fn eight_concurrent_clients_are_served_in_parallel() {
    // Y: 1000 items, so each session's pairings take a while.
    let s = Setup::new("concurrent", 1000);
    let addr = port();
    let server = s.server(&addr, &["--max-concurrent", "8", "--max-sessions", "8"]);
    let clients: Vec<Child> = (0..8)
        .map(|i| s.intersect(&addr, &format!("r{i}.json")))
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "client {i}: {}", stderr(&o));
        let r = s.result(&format!("r{i}.json"));
        assert_eq!(r["cardinality"], 100, "client {i}");
        assert_eq!(r["server_items"], 1000, "client {i}");
    }
    let o = server.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = log_lines(&o);
    assert_eq!(lines.len(), 8, "{lines:?}");
    let mut numbers: Vec<u64> = lines
        .iter()
        .map(|l| l["session"].as_u64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=8).collect::<Vec<u64>>());
    for l in &lines {
        assert_eq!(l["ok"], true, "{l}");
        assert_eq!(l["outcome"]["client_id"], "acme", "{l}");
        assert_eq!(l["outcome"]["items"], 1000, "{l}");
        assert!(l["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{l}");
        assert!(l["bytes_sent"].as_u64().unwrap() > 1000 * 16, "{l}");
    }
    // In parallel: some session began while another was in progress, as the log says
    // both ways (its count of concurrent sessions, and the sessions' time spans).
    assert!(
        lines.iter().any(|l| l["concurrent"].as_u64().unwrap() > 1),
        "{lines:?}"
    );
    let spans: Vec<(f64, f64)> = lines
        .iter()
        .map(|l| {
            let start = l["started"].as_f64().unwrap();
            (start, start + l["wall_seconds"].as_f64().unwrap())
        })
        .collect();
    let overlapping = spans.iter().enumerate().any(|(i, a)| {
        spans
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && a.0 < b.1 && b.0 < a.1)
    });
    assert!(overlapping, "{spans:?}");
}

#[test]
fn a_silent_client_does_not_delay_an_honest_one() {
    let s = Setup::new("silent", 500);
    let addr = port();
    let (timeout, handshake_timeout) = (12u64, 3u64);
    let server = s.server(
        &addr,
        &[
            "--max-concurrent",
            "1",
            "--max-sessions",
            "2",
            "--timeout",
            &timeout.to_string(),
            "--handshake-timeout",
            &handshake_timeout.to_string(),
        ],
    );
    // The silent client: completes the TLS handshake, then sends nothing, not even
    // its hello. It holds no session slot (there is only one).
    let opts = ConnectOptions {
        connect_timeout: Duration::from_secs(30),
        io_timeout: Duration::from_millis(300),
        ..ConnectOptions::default()
    };
    let files = TlsFiles::in_dir(&s.certs, "client");
    let mut silent = tls::connect(&addr, &files, &opts).unwrap();
    let connected = Instant::now();
    // The honest client, started after it, is served at once.
    let o = s
        .intersect(&addr, "honest.json")
        .wait_with_output()
        .unwrap();
    let honest_done = connected.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(s.result("honest.json")["cardinality"], 100);
    assert!(
        honest_done < Duration::from_secs(handshake_timeout),
        "the honest client took {honest_done:?}"
    );
    // The server sends nothing before the client's hello, and cuts the silent client
    // off at --handshake-timeout (well before --timeout).
    let cut_after = loop {
        match silent.recv(1 << 20) {
            Err(TransportError::Timeout { .. }) => continue,
            Err(_) => break connected.elapsed(),
            Ok(m) => panic!("the server sent {} bytes to a silent client", m.len()),
        }
    };
    assert!(
        cut_after >= Duration::from_secs(handshake_timeout - 1)
            && cut_after < Duration::from_secs(timeout - 2),
        "cut off after {cut_after:?}"
    );
    // A second honest session ends the server; the silent one was no session.
    let o = s
        .intersect(&addr, "second.json")
        .wait_with_output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = server.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("timed out after 3 s waiting for the TLS handshake"),
        "{}",
        stderr(&o)
    );
    let lines = log_lines(&o);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l["ok"] == true), "{lines:?}");
    assert!(lines.iter().all(|l| l["client"] == "client"), "{lines:?}");
    assert_eq!(lines[0]["outcome"]["client_id"], "acme");
}

/// Connects to `addr` and sends `bytes` one per second (a slow-loris client), until
/// they run out or the server hangs up.
fn slow_loris(addr: &str, bytes: Vec<u8>) -> std::thread::JoinHandle<Duration> {
    use std::io::Write;
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    std::thread::spawn(move || {
        let start = Instant::now();
        for b in bytes {
            if sock.write_all(&[b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        start.elapsed()
    })
}

#[test]
fn a_slow_loris_client_does_not_delay_an_honest_one() {
    let s = Setup::new("loris", 300);
    // A TLS handshake record announcing 256 bytes; the plaintext greeting.
    let mut hello = vec![0x16, 0x03, 0x01, 0x01, 0x00];
    hello.extend([0u8; 256]);
    let cases = [
        ("tls", s.tls("server"), s.tls("client"), hello),
        (
            "plaintext",
            args(&["--insecure-no-tls"]),
            args(&["--insecure-no-tls"]),
            b"PSETPLN1".to_vec(),
        ),
    ];
    let timeout = 10u64;
    for (name, server_security, client_security, loris_bytes) in cases {
        let addr = port();
        let server = s.server_with(
            &addr,
            &["--max-sessions", "1", "--timeout", &timeout.to_string()],
            server_security,
        );
        // Wait for the server to listen, then start the slow client.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "{name}: server not listening");
            std::thread::sleep(Duration::from_millis(50));
        }
        let loris = slow_loris(&addr, loris_bytes);
        std::thread::sleep(Duration::from_secs(2));
        // The honest client, started after it, finishes normally and promptly.
        let started = Instant::now();
        let output = format!("{name}.json");
        let o = s
            .intersect_with(&addr, &output, client_security)
            .wait_with_output()
            .unwrap();
        let took = started.elapsed();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(s.result(&output)["cardinality"], 100, "{name}");
        assert!(
            took < Duration::from_secs(timeout - 2),
            "{name}: the honest client took {took:?}"
        );
        // The server logged the one session and refused the slow client at its
        // deadline, whatever it kept sending.
        let o = server.wait_with_output().unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let lines = log_lines(&o);
        assert_eq!(lines.len(), 1, "{name}: {lines:?}");
        assert_eq!(lines[0]["ok"], true, "{name}: {lines:?}");
        let cut = loris.join().unwrap();
        assert!(
            cut < Duration::from_secs(timeout + 5),
            "{name}: the slow client was cut off after {cut:?}"
        );
    }
}
