//! Who a server serves, and who can hold it up, with real processes: `--allow-clients`
//! (by certificate name and by fingerprint) refuses unlisted clients while listed ones
//! are served, each session's log line names its client, and connections that never
//! speak cannot take the session slots of `upsi serve` (`--handshake-timeout`).

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use privset_net::tls;

const BIN: &str = env!("CARGO_BIN_EXE_privset");

/// A scratch directory with certificates for a server and three clients, and a small
/// labeled database.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("privset-access-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let d = Self(d);
        let certs = d.p("certs");
        ok(&run(&[
            "certs",
            "--out",
            &certs,
            "--names",
            "server,client,other,third",
        ]));
        let mut table = String::from("phone,risk\n");
        for i in 0..200 {
            table.push_str(&format!("{},{}\n", phone(i), i % 10));
        }
        std::fs::write(d.p("db.csv"), table).unwrap();
        let (input, db) = (d.p("db.csv"), d.p("db.upsi"));
        ok(&run(&[
            "upsi",
            "db",
            "build",
            "--input",
            &input,
            "--id-column",
            "phone",
            "--label-column",
            "risk",
            "--db",
            &db,
        ]));
        let mut contacts = String::from("phone\n");
        for i in (0..400).step_by(7) {
            contacts.push_str(&format!("{}\n", phone(i)));
        }
        std::fs::write(d.p("contacts.csv"), contacts).unwrap();
        d
    }

    fn p(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    fn tls(&self, who: &str) -> Vec<String> {
        vec![
            "--tls-ca".into(),
            self.p("certs/ca.pem"),
            "--tls-cert".into(),
            self.p(&format!("certs/{who}.pem")),
            "--tls-key".into(),
            self.p(&format!("certs/{who}.key")),
        ]
    }

    /// `upsi serve` on `addr` with `extra` flags.
    fn serve(&self, addr: &str, extra: &[&str]) -> Server {
        let db = self.p("db.upsi");
        let mut a: Vec<String> = ["upsi", "serve", "--db", &db, "--listen", addr]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        a.extend(self.tls("server"));
        let mut child = Command::new(BIN)
            .args(&a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = collect(child.stderr.take().unwrap());
        wait_listening(addr);
        Server { child, stderr }
    }

    /// `upsi query` against `addr` as client `who`.
    fn query(&self, addr: &str, who: &str) -> Output {
        let (contacts, out) = (self.p("contacts.csv"), self.p(&format!("{who}.json")));
        let mut a: Vec<String> = [
            "upsi",
            "query",
            "--peer",
            addr,
            "--tls-server-name",
            "server",
            "--input",
            &contacts,
            "--id-column",
            "phone",
            "--output",
            &out,
            "--timeout",
            "60",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(self.tls(who));
        Command::new(BIN).args(&a).output().unwrap()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Server {
    child: Child,
    /// Its stderr so far (refusals), collected on a thread of its own.
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Waits for it to stop; its session log lines (stdout) and its stderr.
    fn finish(self) -> (Vec<serde_json::Value>, String) {
        let o = self.child.wait_with_output().unwrap();
        // Give the collecting thread a moment to read the last of stderr.
        std::thread::sleep(Duration::from_millis(100));
        let err = self.stderr.lock().unwrap().clone();
        assert!(o.status.success(), "server failed: {err}");
        let lines = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect();
        (lines, err)
    }
}

fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let into = text.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    text
}

fn wait_listening(addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "server not listening on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", l.local_addr().unwrap().port())
}

fn phone(i: u64) -> String {
    format!("+4479{i:08}")
}

/// The fingerprint as `openssl x509 -noout -fingerprint -sha256` prints it.
fn openssl_fingerprint(cert: &Path) -> String {
    let der = tls::end_entity_certificate(cert).unwrap();
    let hex = tls::certificate_fingerprint(&der).to_uppercase();
    let pairs: Vec<&str> = (0..32).map(|i| &hex[2 * i..2 * i + 2]).collect();
    pairs.join(":")
}

#[test]
fn only_listed_clients_are_served_by_name_or_fingerprint() {
    let d = Dir::new("allow");
    let third = d.0.join("certs/third.pem");
    let third_sha = tls::certificate_fingerprint(&tls::end_entity_certificate(&third).unwrap());
    let other_sha = tls::certificate_fingerprint(
        &tls::end_entity_certificate(&d.0.join("certs/other.pem")).unwrap(),
    );
    std::fs::write(
        d.p("allowed.txt"),
        format!(
            "# partners\n\nclient   # by name\nsha256:{}\n",
            openssl_fingerprint(&third)
        ),
    )
    .unwrap();
    let addr = port();
    let allowed = d.p("allowed.txt");
    let server = d.serve(&addr, &["--max-sessions", "2", "--allow-clients", &allowed]);

    // Listed by name: served.
    let o = d.query(&addr, "client");
    assert!(o.status.success(), "{}", stderr(&o));
    // Not listed (same CA): refused, with a clear error on both sides.
    let o = d.query(&addr, "other");
    assert!(!o.status.success());
    let said = stderr(&o);
    assert!(
        said.contains("access_denied") && said.contains("--allow-clients"),
        "{said}"
    );
    // Listed by fingerprint: served.
    let o = d.query(&addr, "third");
    assert!(o.status.success(), "{}", stderr(&o));

    let (lines, err) = server.finish();
    assert!(
        err.contains("client refused") && err.contains("the certificate of other"),
        "{err}"
    );
    assert!(err.contains(&format!("sha256:{other_sha}")), "{err}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    let clients: Vec<&str> = lines
        .iter()
        .map(|l| l["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["client", "third"], "{lines:?}");
    assert_eq!(lines[1]["client_sha256"], third_sha.as_str());
    assert!(lines.iter().all(|l| l["ok"] == true), "{lines:?}");
}

#[test]
fn a_bad_allow_list_stops_the_server_at_start_up() {
    let d = Dir::new("bad-list");
    let db = d.p("db.upsi");
    for (text, says) in [
        ("client\nnot a name!\n", "line 2"),
        ("sha256:abcd\n", "64 hex digits"),
        ("localhost\n", "every client"),
        ("# nobody\n", "lists no client"),
    ] {
        std::fs::write(d.p("allowed.txt"), text).unwrap();
        let addr = port();
        let allowed = d.p("allowed.txt");
        let mut a: Vec<String> = ["upsi", "serve", "--db", &db, "--listen", &addr]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--allow-clients".into(), allowed]);
        a.extend(d.tls("server"));
        let o = Command::new(BIN).args(&a).output().unwrap();
        assert!(!o.status.success(), "{text:?}");
        assert!(stderr(&o).contains(says), "{text:?}: {}", stderr(&o));
    }
    let missing = d.p("missing.txt");
    let addr = port();
    let mut a: Vec<String> = ["upsi", "serve", "--db", &db, "--listen", &addr]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(["--allow-clients".into(), missing]);
    a.extend(d.tls("server"));
    let o = Command::new(BIN).args(&a).output().unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("allowed-clients file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fifty_silent_connections_do_not_hold_up_an_honest_query() {
    let d = Dir::new("squat");
    let handshake_timeout = 3u64;
    let addr = port();
    let server = d.serve(
        &addr,
        &[
            "--max-sessions",
            "2",
            "--timeout",
            "30",
            "--handshake-timeout",
            &handshake_timeout.to_string(),
        ],
    );
    // How long a query takes with nobody in the way.
    let started = Instant::now();
    let o = d.query(&addr, "client");
    let alone = started.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));

    // Fifty connections that never send a byte, more than every slot.
    let silent: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let o = d.query(&addr, "client");
    let squatted = started.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    let bound = alone + Duration::from_secs(handshake_timeout + 1);
    assert!(
        squatted < bound,
        "with 50 silent connections the query took {squatted:?} (alone {alone:?})"
    );
    drop(silent);

    let (lines, err) = server.finish();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l["client"] == "client"), "{lines:?}");
    assert!(
        err.contains("--handshake-timeout") || err.contains("this was the oldest"),
        "the silent connections were not reported: {err}"
    );
}
