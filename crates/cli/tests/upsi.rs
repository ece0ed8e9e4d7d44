//! `privset upsi` with real processes over mutual TLS: a labeled database built from a
//! CSV file, served, queried, changed while served, and refused when corrupted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_privset");

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("privset-upsi-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let o = run(&[
            "certs",
            "--out",
            &d.join("certs").display().to_string(),
            "--names",
            "server,client",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        Self(d)
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
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
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

/// The server's table: phone, risk, account.
fn write_db_csv(path: &str, range: std::ops::Range<u64>) -> BTreeMap<String, (String, String)> {
    let mut s = String::from("phone,risk,account\n");
    let mut rows = BTreeMap::new();
    for i in range {
        let (risk, account) = ((i * 37 % 100).to_string(), format!("acct-{i}"));
        s.push_str(&format!("{},{risk},{account}\n", phone(i)));
        rows.insert(phone(i), (risk, account));
    }
    std::fs::write(path, s).unwrap();
    rows
}

/// Builds `db.upsi` from `db.csv`, labeled with risk and account in 24 bytes, with the
/// flags `extra`.
fn build_labeled(d: &Dir, extra: &[&str]) -> Output {
    let (input, db) = (d.p("db.csv"), d.p("db.upsi"));
    let mut a = vec![
        "upsi",
        "db",
        "build",
        "--input",
        &input,
        "--id-column",
        "phone",
        "--label-column",
        "risk,account",
        "--label-bytes",
        "24",
        "--db",
        &db,
    ];
    a.extend(extra);
    run(&a)
}

/// What `privset upsi db info` prints about the database file `path`.
fn db_info(path: &str) -> serde_json::Value {
    let o = run(&["upsi", "db", "info", "--db", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn write_contacts(path: &str, phones: &[String]) {
    let mut s = String::from("phone\n");
    for p in phones {
        // Spaces around the number: the default --normalize trim matches them.
        s.push_str(&format!(" {p} \n"));
    }
    std::fs::write(path, s).unwrap();
}

fn serve(d: &Dir, addr: &str, sessions: u32) -> Child {
    let mut a: Vec<String> = [
        "upsi",
        "serve",
        "--db",
        &d.p("db.upsi"),
        "--listen",
        addr,
        "--max-sessions",
        &sessions.to_string(),
        "--reload-interval",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(d.tls("server"));
    Command::new(BIN)
        .args(&a)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn query(d: &Dir, addr: &str, contacts: &str, rows: &str) -> Output {
    let mut a: Vec<String> = [
        "upsi",
        "query",
        "--peer",
        addr,
        "--tls-server-name",
        "server",
        "--input",
        contacts,
        "--id-column",
        "phone",
        "--output",
        &d.p("result.json"),
        "--output-rows",
        rows,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(d.tls("client"));
    Command::new(BIN).args(&a).output().unwrap()
}

fn read_rows(path: &str) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("phone,label_1,label_2"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), (f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

fn expected(
    table: &BTreeMap<String, (String, String)>,
    phones: &[String],
) -> BTreeMap<String, (String, String)> {
    phones
        .iter()
        .filter_map(|p| table.get(p).map(|v| (p.clone(), v.clone())))
        .collect()
}

#[test]
fn labeled_queries_match_the_plaintext_answer_and_see_updates() {
    let d = Dir::new("labeled");
    let mut table = write_db_csv(&d.p("db.csv"), 0..6000);
    let o = build_labeled(&d, &["--oprf", "ristretto255"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = db_info(&d.p("db.upsi"));
    assert_eq!(info["items"], 6000);
    assert_eq!(info["label_bytes"], 24);
    assert_eq!(info["oprf"], "ristretto255");

    let addr = port();
    let mut server = serve(&d, &addr, 2);
    let said = ServerLog::of(&mut server);
    // Hits, misses, a duplicate.
    let mut phones: Vec<String> = (0..12000).step_by(37).map(phone).collect();
    phones.push(phone(37));
    write_contacts(&d.p("contacts.csv"), &phones);
    let o = query(&d, &addr, &d.p("contacts.csv"), &d.p("rows.csv"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_rows(&d.p("rows.csv")), expected(&table, &phones));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.p("result.json")).unwrap()).unwrap();
    assert_eq!(
        report["matches"].as_u64().unwrap() as usize,
        expected(&table, &phones).len()
    );

    // Change the database while it is served: remove 0..100, relabel 100..110, add
    // 20000..20050. The server picks the new file up.
    std::fs::write(
        d.p("remove.csv"),
        (0..100).fold(String::from("phone\n"), |s, i| s + &phone(i) + "\n"),
    )
    .unwrap();
    let o = run(&[
        "upsi",
        "db",
        "remove",
        "--input",
        &d.p("remove.csv"),
        "--id-column",
        "phone",
        "--db",
        &d.p("db.upsi"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut add = String::from("phone,risk,account\n");
    for i in (100..110).chain(20000..20050) {
        add.push_str(&format!("{},new,acct-new-{i}\n", phone(i)));
        table.insert(phone(i), ("new".into(), format!("acct-new-{i}")));
    }
    for i in 0..100 {
        table.remove(&phone(i));
    }
    std::fs::write(d.p("add.csv"), add).unwrap();
    let o = run(&[
        "upsi",
        "db",
        "add",
        "--input",
        &d.p("add.csv"),
        "--id-column",
        "phone",
        "--label-column",
        "risk,account",
        "--db",
        &d.p("db.upsi"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // And move it to an X25519 OPRF key.
    let o = run(&[
        "upsi",
        "db",
        "rotate-key",
        "--oprf",
        "x25519",
        "--db",
        &d.p("db.upsi"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("x25519 OPRF key"), "{}", stderr(&o));
    let info = db_info(&d.p("db.upsi"));
    assert_eq!(info["oprf"], "x25519");
    let phones2: Vec<String> = (0..130).chain(19990..20060).map(phone).collect();
    write_contacts(&d.p("contacts2.csv"), &phones2);
    // The watcher looks every second; wait until the server says it loaded the changed
    // contents (it may have loaded a step between them first).
    let loaded = format!("changed: {} items now", table.len());
    let start = Instant::now();
    while !said.contains(&loaded) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the server did not reload: {}",
            said.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = query(&d, &addr, &d.p("contacts2.csv"), &d.p("rows2.csv"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_rows(&d.p("rows2.csv")), expected(&table, &phones2));
    let start = Instant::now();
    while server.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", said.text());
}

/// What a server prints on stderr, read as it comes.
struct ServerLog(std::sync::Arc<std::sync::Mutex<String>>);

impl ServerLog {
    /// Takes `server`'s stderr and collects it on a thread of its own.
    fn of(server: &mut Child) -> Self {
        use std::io::Read;
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut pipe = server.stderr.take().unwrap();
        let into = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self(log)
    }

    fn contains(&self, text: &str) -> bool {
        self.0.lock().unwrap().contains(text)
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// One label column is stored as it is: a 1-byte risk score in 1-byte labels, blank
/// cells included, read back as the client's `label_1`.
#[test]
fn one_column_labels_fill_their_bytes_and_may_be_blank() {
    let d = Dir::new("one-column");
    let risk = |i: u64| {
        if i.is_multiple_of(3) {
            String::new()
        } else {
            (i % 10).to_string()
        }
    };
    let mut table = String::from("phone,risk,account\n");
    for i in 0..3000 {
        table.push_str(&format!("{},{},acct-{i}\n", phone(i), risk(i)));
    }
    std::fs::write(d.p("db.csv"), table).unwrap();
    let build = |label_columns: &str, change: &str| {
        let mut a = vec!["upsi", "db", change, "--input"];
        let input = d.p("db.csv");
        let db = d.p("db.upsi");
        a.extend([input.as_str(), "--id-column", "phone", "--label-column"]);
        a.extend([label_columns, "--db", db.as_str()]);
        if change == "build" {
            a.extend(["--label-bytes", "1"]);
        }
        run(&a)
    };
    let o = build("risk", "build");
    assert!(o.status.success(), "{}", stderr(&o));
    let info = db_info(&d.p("db.upsi"));
    assert_eq!(info["label_bytes"], 1);
    assert_eq!(info["label_layout"], "raw");

    let addr = port();
    let server = serve(&d, &addr, 1);
    let phones: Vec<String> = (0..6000).step_by(7).map(phone).collect();
    write_contacts(&d.p("contacts.csv"), &phones);
    let o = query(&d, &addr, &d.p("contacts.csv"), &d.p("rows.csv"));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = std::fs::read_to_string(d.p("rows.csv")).unwrap();
    let mut lines = rows.lines();
    assert_eq!(lines.next(), Some("phone,label_1"));
    let got: Vec<&str> = lines.collect();
    let want: Vec<String> = (0..3000)
        .step_by(7)
        .map(|i| format!("{},{}", phone(i), risk(i)))
        .collect();
    assert_eq!(got, want);
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // Two columns into a one-column database, and a 2-byte cell into 1-byte labels,
    // are refused, naming why.
    let o = build("risk,account", "add");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("hold one column"), "{}", stderr(&o));
    std::fs::write(d.p("db.csv"), format!("phone,risk\n{},10\n", phone(1))).unwrap();
    let o = build("risk", "add");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a label takes 2 bytes"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_databases_and_oversized_queries_are_clear_errors() {
    let d = Dir::new("errors");
    write_db_csv(&d.p("db.csv"), 0..500);
    let o = run(&[
        "upsi",
        "db",
        "build",
        "--input",
        &d.p("db.csv"),
        "--id-column",
        "phone",
        "--db",
        &d.p("db.upsi"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Corrupted and truncated files: input errors (exit 2) naming the file.
    let bytes = std::fs::read(d.p("db.upsi")).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x40;
    for (name, content) in [
        ("flipped.upsi", flipped),
        ("short.upsi", bytes[..bytes.len() / 3].to_vec()),
    ] {
        std::fs::write(d.p(name), content).unwrap();
        let o = run(&["upsi", "db", "info", "--db", &d.p(name)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("not valid"), "{}", stderr(&o));
    }
    // Moving to a preset of another layout is refused and leaves the file as it was;
    // moving to its own preset rewrites it.
    let db = d.p("db.upsi");
    let set_preset = |name: &str| run(&["upsi", "db", "set-preset", "--db", &db, "--preset", name]);
    let o = set_preset("n8192-c1k");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("lays out the data differently"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(d.p("db.upsi")).unwrap(), bytes);
    let own = db_info(&d.p("db.upsi"));
    let own = own["preset"].as_str().unwrap().to_string();
    let o = set_preset(&own);
    assert!(o.status.success(), "{}", stderr(&o));
    // An unknown preset and labels too long for the database.
    let o = run(&[
        "upsi",
        "db",
        "build",
        "--input",
        &d.p("db.csv"),
        "--id-column",
        "phone",
        "--preset",
        "huge",
        "--db",
        &d.p("x.upsi"),
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("no unbalanced-PSI preset"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "upsi",
        "db",
        "build",
        "--input",
        &d.p("db.csv"),
        "--id-column",
        "phone",
        "--label-column",
        "account",
        "--label-bytes",
        "4",
        "--db",
        &d.p("x.upsi"),
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("--label-bytes"),
        "{}",
        stderr(&o)
    );
    // A client over the server's preset is refused at the hello.
    let addr = port();
    let mut server = serve(&d, &addr, 1);
    let phones: Vec<String> = (0..1500).map(phone).collect();
    write_contacts(&d.p("big.csv"), &phones);
    let o = query(&d, &addr, &d.p("big.csv"), &d.p("rows.csv"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("at most 1024"), "{}", stderr(&o));
    let _ = server.kill();
    let _ = server.wait();
}

/// Ten `db add` and ten `db remove` run at once on one database file while a server
/// serves it: they take turns on the database's lock, so every update lands (without
/// the lock one update in three was lost), and the served answers
/// equal the plaintext table after all twenty.
#[test]
fn concurrent_updates_all_land_while_served() {
    let d = Dir::new("concurrent");
    let mut table = write_db_csv(&d.p("db.csv"), 0..2000);
    let o = build_labeled(&d, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let addr = port();
    let mut server = serve(&d, &addr, 1);
    let mut writers = Vec::new();
    for k in 0..10u64 {
        let add = d.p(&format!("add-{k}.csv"));
        let mut text = String::from("phone,risk,account\n");
        for i in 10_000 + 10 * k..10_010 + 10 * k {
            text.push_str(&format!("{},new,acct-{i}\n", phone(i)));
            table.insert(phone(i), ("new".into(), format!("acct-{i}")));
        }
        std::fs::write(&add, text).unwrap();
        let remove = d.p(&format!("remove-{k}.csv"));
        let mut text = String::from("phone\n");
        for i in 10 * k..10 * k + 10 {
            text.push_str(&format!("{}\n", phone(i)));
            table.remove(&phone(i));
        }
        std::fs::write(&remove, text).unwrap();
        for (what, file, labels) in [("add", add, true), ("remove", remove, false)] {
            let mut a = vec![
                "upsi".to_string(),
                "db".into(),
                what.into(),
                "--input".into(),
                file,
                "--id-column".into(),
                "phone".into(),
                "--db".into(),
                d.p("db.upsi"),
            ];
            if labels {
                a.extend(["--label-column".into(), "risk,account".into()]);
            }
            writers.push(
                Command::new(BIN)
                    .args(&a)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
    }
    for w in writers {
        let o = w.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(db_info(&d.p("db.upsi"))["items"], 2000);
    // The server picks the last file up within its reload interval (1 s).
    std::thread::sleep(Duration::from_millis(2500));
    let phones: Vec<String> = (0..120).chain(10_000..10_110).map(phone).collect();
    write_contacts(&d.p("contacts.csv"), &phones);
    let o = query(&d, &addr, &d.p("contacts.csv"), &d.p("rows.csv"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_rows(&d.p("rows.csv")), expected(&table, &phones));
    let _ = server.kill();
    let _ = server.wait();
}

/// The database records how its items were made from rows (here `--normalize email`,
/// lower-cased) and its server states that in every session. A client that trims only
/// used to get no match at all with exit 0 (its "User7@Example.com" is not the
/// database's "user7@example.com"); now it stops with exit 3 naming the setting. `db
/// add` and `db remove` with other settings are refused naming it (they would insert
/// items no client finds, or miss the ones to remove); the same settings work.
#[test]
fn key_settings_are_recorded_in_the_database_and_agreed_with_clients() {
    let d = Dir::new("agreed");
    let emails = |range: std::ops::Range<u64>| {
        let mut s = String::from("email\n");
        for i in range {
            s.push_str(&format!("User{i}@Example.com\n"));
        }
        s
    };
    std::fs::write(d.p("db.csv"), emails(0..300)).unwrap();
    let (input, db) = (d.p("db.csv"), d.p("db.upsi"));
    let email = ["--id-column", "email", "--normalize", "email"];
    let mut build = vec!["upsi", "db", "build", "--input", &input, "--db", &db];
    build.extend(email);
    let o = run(&build);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = db_info(&db);
    assert_eq!(info["key_settings"]["normalize"], "email");
    assert_eq!(info["key_settings"]["key-columns"], "1");
    assert_eq!(info["key_settings"]["hash-ids"], "none");

    // Changes with the database's settings only.
    std::fs::write(d.p("more.csv"), emails(300..320)).unwrap();
    let more = d.p("more.csv");
    for what in ["add", "remove"] {
        let o = run(&[
            "upsi",
            "db",
            what,
            "--input",
            &more,
            "--id-column",
            "email",
            "--db",
            &db,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(
                "normalize: the database uses normalize email, the input uses normalize trim"
            ),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(db_info(&db)["items"], 300);
    let mut add = vec!["upsi", "db", "add", "--input", &more, "--db", &db];
    add.extend(email);
    let o = run(&add);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(db_info(&db)["items"], 320);

    let addr = port();
    let mut server = serve(&d, &addr, 2);
    let log = ServerLog::of(&mut server);
    std::fs::write(d.p("contacts.csv"), emails(290..340)).unwrap();
    let contacts = d.p("contacts.csv");
    let (out, rows) = (d.p("result.json"), d.p("rows.csv"));
    let tls = d.tls("client");
    let query = |keys: &[&str]| {
        let mut a = vec![
            "upsi",
            "query",
            "--peer",
            &addr,
            "--tls-server-name",
            "server",
        ];
        a.extend([
            "--input",
            &contacts,
            "--output",
            &out,
            "--output-rows",
            &rows,
        ]);
        a.extend(keys);
        a.extend(tls.iter().map(String::as_str));
        run(&a)
    };
    let o = query(&["--id-column", "email"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "input settings differ, normalize: the client uses normalize trim, the server uses normalize email"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!std::path::Path::new(&out).exists());
    let o = query(&email);
    assert!(o.status.success(), "{}", stderr(&o));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(result["matches"], 30);
    let out = server.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", log.text());
}
