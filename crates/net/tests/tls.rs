//! TCP + mutual TLS 1.3 loopback, and the ways it must fail cleanly.

mod common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use common::{FRAME_LEN, PingPong, temp_dir};
use privset_net::tcp::PLAINTEXT_PREAMBLE;
use privset_net::{
    ConnectOptions, PlainTcpTransport, RunError, TlsFiles, Transport, TransportError, certs, drive,
    tls,
};

fn opts() -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_secs(10),
        handshake_timeout: Duration::from_secs(10),
        io_timeout: Duration::from_secs(10),
        server_name: None,
        ..ConnectOptions::default()
    }
}

fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    (l, addr)
}

fn certs_for(dir: &Path, names: &[&str]) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    certs::generate(dir, &names).unwrap();
}

#[test]
fn mutual_tls_loopback_runs_and_counts_socket_bytes() {
    let dir = temp_dir("tls-ok");
    certs_for(&dir, &["alice", "bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let server = thread::spawn(move || {
        let mut t = tls::accept_on(&l, &bob, &opts()).unwrap();
        let mut p = PingPong::new(false, 2);
        drive(&mut p, &mut t, &mut |_| {}).unwrap();
        (p.received, t.close())
    });
    let mut t = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &opts()).unwrap();
    let mut a = PingPong::new(true, 1);
    drive(&mut a, &mut t, &mut |_| {}).unwrap();
    let (b_received, cb) = server.join().unwrap();
    assert_eq!((a.received.len(), b_received.len()), (3, 3));
    let ca = t.counters();
    // Socket bytes: handshake with certificates plus records around 3 x (4 + frame).
    assert!(
        ca.sent > 3 * (4 + FRAME_LEN as u64) && ca.received > 1000,
        "{ca:?}"
    );
    assert_eq!(ca.sent, cb.received);
    // The server's close_notify (one 24-byte record) may or may not have been read along
    // with its last message.
    assert!(
        ca.received == cb.sent || ca.received + 24 == cb.sent,
        "{ca:?} {cb:?}"
    );
}

#[test]
fn client_certificate_from_another_ca_is_rejected_without_hang() {
    let dir = temp_dir("tls-ca1");
    let other = temp_dir("tls-ca2");
    certs_for(&dir, &["alice", "bob"]);
    certs_for(&other, &["mallory"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let server = thread::spawn(move || tls::accept_on(&l, &bob, &opts()).map(|_| ()));
    // Mallory trusts the right CA (so she accepts bob) but her own cert is from another CA.
    let mallory = TlsFiles {
        ca: dir.join("ca.pem"),
        ..TlsFiles::in_dir(&other, "mallory")
    };
    let start = Instant::now();
    let client = tls::connect(&addr, &mallory, &opts())
        .map_err(RunError::from)
        .and_then(|mut t| drive(&mut PingPong::new(true, 1), &mut t, &mut |_| {}));
    let server_err = server.join().unwrap().unwrap_err();
    assert!(
        matches!(server_err, TransportError::Tls(ref m) if m.contains("certificate was rejected")),
        "{server_err}"
    );
    let client_err = client.unwrap_err();
    assert!(client_err.to_string().contains("alert"), "{client_err}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn plaintext_client_against_tls_server_fails_clearly_on_both_sides() {
    let dir = temp_dir("tls-plain");
    certs_for(&dir, &["bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let server = thread::spawn(move || tls::accept_on(&l, &bob, &opts()).map(|_| ()));
    let client_err = PlainTcpTransport::connect(&addr, &opts()).unwrap_err();
    let server_err = server.join().unwrap().unwrap_err();
    assert!(
        server_err.to_string().contains("did not speak TLS"),
        "{server_err}"
    );
    assert!(
        client_err.to_string().contains("speaks TLS"),
        "{client_err}"
    );
}

#[test]
fn tls_client_against_plaintext_server_fails_clearly_on_both_sides() {
    let dir = temp_dir("tls-plain2");
    certs_for(&dir, &["alice"]);
    let (l, addr) = listener();
    let server = thread::spawn(move || PlainTcpTransport::accept_on(&l, &opts()).map(|_| ()));
    let client_err = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &opts()).unwrap_err();
    let server_err = server.join().unwrap().unwrap_err();
    assert!(
        server_err.to_string().contains("speaks TLS"),
        "{server_err}"
    );
    assert!(
        client_err.to_string().contains("did not speak TLS"),
        "{client_err}"
    );
}

#[test]
fn plaintext_loopback_runs() {
    let (l, addr) = listener();
    let server = thread::spawn(move || {
        let mut t = PlainTcpTransport::accept_on(&l, &opts()).unwrap();
        drive(&mut PingPong::new(false, 2), &mut t, &mut |_| {}).unwrap();
        t.counters()
    });
    let mut t = PlainTcpTransport::connect(&addr, &opts()).unwrap();
    drive(&mut PingPong::new(true, 1), &mut t, &mut |_| {}).unwrap();
    let cb = server.join().unwrap();
    let framed = 8 + 3 * (4 + FRAME_LEN as u64);
    assert_eq!(
        t.counters(),
        privset_net::ByteCounters {
            sent: framed,
            received: framed
        }
    );
    assert_eq!(
        cb,
        privset_net::ByteCounters {
            sent: framed,
            received: framed
        }
    );
}

#[test]
fn oversized_frame_is_refused_before_reading_it() {
    let (l, addr) = listener();
    let peer = thread::spawn(move || {
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.write_all(PLAINTEXT_PREAMBLE).unwrap();
        // Announce a 4 GiB message and send none of it; keep the socket open.
        raw.write_all(&u32::MAX.to_be_bytes()).unwrap();
        thread::sleep(Duration::from_secs(2));
    });
    let mut t = PlainTcpTransport::accept_on(&l, &opts()).unwrap();
    let start = Instant::now();
    let err = t.recv(FRAME_LEN).unwrap_err();
    assert!(
        matches!(err, TransportError::TooLarge { len, max } if len == u64::from(u32::MAX) && max == FRAME_LEN as u64),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(1));
    peer.join().unwrap();
}

#[test]
fn oversized_frame_over_tls_is_refused() {
    let dir = temp_dir("tls-big");
    certs_for(&dir, &["alice", "bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let server = thread::spawn(move || {
        let mut t = tls::accept_on(&l, &bob, &opts()).unwrap();
        t.recv(FRAME_LEN)
    });
    let mut t = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &opts()).unwrap();
    // The server stops reading after the prefix, so our write may fail; irrelevant here.
    let _ = t.send(&vec![0u8; 100_000]);
    let err = server.join().unwrap().unwrap_err();
    assert!(
        matches!(err, TransportError::TooLarge { len: 100_000, .. }),
        "{err}"
    );
}

#[test]
fn silent_peer_hits_the_read_timeout() {
    let dir = temp_dir("tls-timeout");
    certs_for(&dir, &["alice", "bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let short = ConnectOptions {
        io_timeout: Duration::from_millis(300),
        ..opts()
    };
    let server = thread::spawn(move || {
        let mut t = tls::accept_on(&l, &bob, &short).unwrap();
        let start = Instant::now();
        (t.recv(FRAME_LEN), start.elapsed())
    });
    let t = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &opts()).unwrap();
    let (result, waited) = server.join().unwrap();
    drop(t);
    let err = result.unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

#[test]
fn plaintext_read_timeout() {
    let (l, addr) = listener();
    let short = ConnectOptions {
        io_timeout: Duration::from_millis(200),
        ..opts()
    };
    let peer = thread::spawn(move || {
        let t = PlainTcpTransport::connect(&addr, &opts()).unwrap();
        thread::sleep(Duration::from_secs(2));
        drop(t);
    });
    let mut t = PlainTcpTransport::accept_on(&l, &short).unwrap();
    let err = t.recv(FRAME_LEN).unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    peer.join().unwrap();
}

#[test]
fn wrong_server_name_is_reported() {
    let dir = temp_dir("tls-name");
    certs_for(&dir, &["alice", "bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let server = thread::spawn(move || tls::accept_on(&l, &bob, &opts()).map(|_| ()));
    let o = ConnectOptions {
        server_name: Some("example.org".into()),
        ..opts()
    };
    let err = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &o).unwrap_err();
    assert!(
        err.to_string()
            .contains("not valid for the name \"example.org\""),
        "{err}"
    );
    assert!(server.join().unwrap().is_err());
}

#[test]
fn missing_files_are_named() {
    let dir = temp_dir("tls-missing");
    certs_for(&dir, &["alice"]);
    let files = TlsFiles {
        key: dir.join("nope.key"),
        ..TlsFiles::in_dir(&dir, "alice")
    };
    let err = tls::connect("127.0.0.1:1", &files, &opts()).unwrap_err();
    assert!(
        matches!(err, TransportError::Config(ref m) if m.contains("nope.key")),
        "{err}"
    );
    let files = TlsFiles {
        cert: dir.join("alice.key"),
        ..TlsFiles::in_dir(&dir, "alice")
    };
    let err = tls::accept("127.0.0.1:0", &files, &opts()).unwrap_err();
    assert!(
        matches!(err, TransportError::Config(ref m) if m.contains("alice.key") && m.contains("no PEM certificate")),
        "{err}"
    );
}

#[test]
fn connect_gives_up_after_the_timeout() {
    let (l, addr) = listener();
    drop(l); // nobody listens
    let o = ConnectOptions {
        connect_timeout: Duration::from_millis(500),
        ..opts()
    };
    let err = PlainTcpTransport::connect(&addr, &o).unwrap_err();
    assert!(
        matches!(err, TransportError::Timeout { ref what, .. } if what.contains(&addr)),
        "{err}"
    );
}

#[test]
fn connect_retries_until_the_peer_listens() {
    let (l, addr) = listener();
    drop(l);
    let addr2 = addr.clone();
    let server = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        PlainTcpTransport::accept(&addr2, &opts()).map(|_| ())
    });
    PlainTcpTransport::connect(&addr, &opts()).unwrap();
    server.join().unwrap().unwrap();
}

#[test]
fn large_messages_cross_tls_intact() {
    let dir = temp_dir("tls-large");
    certs_for(&dir, &["alice", "bob"]);
    let (l, addr) = listener();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let message: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let expected = message.clone();
    let server = thread::spawn(move || {
        let mut t = tls::accept_on(&l, &bob, &opts()).unwrap();
        let got = t.recv(4_000_000).unwrap();
        t.send(&got[..10]).unwrap();
        got
    });
    let mut t = tls::connect(&addr, &TlsFiles::in_dir(&dir, "alice"), &opts()).unwrap();
    t.send(&message).unwrap();
    assert_eq!(t.recv(10).unwrap(), &message[..10]);
    assert_eq!(server.join().unwrap(), expected);
    assert!(t.counters().sent > 3_000_004);
}

/// Connects to `addr` and writes `bytes` one at a time, `gap` apart, until done, the
/// server hangs up, or 5 s have passed.
fn trickle(addr: String, bytes: Vec<u8>, gap: Duration) -> thread::JoinHandle<()> {
    trickle_after(addr, Vec::new(), bytes, gap)
}

/// Like [`trickle`], after writing `first` at once.
fn trickle_after(
    addr: String,
    first: Vec<u8>,
    bytes: Vec<u8>,
    gap: Duration,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let start = Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&first).unwrap();
        for b in bytes {
            if start.elapsed() > Duration::from_secs(5) || s.write_all(&[b]).is_err() {
                return;
            }
            thread::sleep(gap);
        }
    })
}

fn short(handshake: Duration, io: Duration) -> ConnectOptions {
    ConnectOptions {
        handshake_timeout: handshake,
        io_timeout: io,
        ..opts()
    }
}

#[test]
fn a_trickled_plaintext_greeting_hits_the_total_deadline() {
    let (l, addr) = listener();
    let client = trickle(
        addr,
        PLAINTEXT_PREAMBLE.to_vec(),
        Duration::from_millis(400),
    );
    let start = Instant::now();
    let err =
        PlainTcpTransport::accept_on(&l, &short(Duration::from_secs(1), Duration::from_secs(10)))
            .unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "{:?}",
        start.elapsed()
    );
    client.join().unwrap();
}

#[test]
fn a_trickled_tls_hello_hits_the_total_deadline() {
    let dir = temp_dir("tls-trickle");
    certs_for(&dir, &["bob"]);
    let (l, addr) = listener();
    // A handshake record header announcing 256 bytes, then the bytes, slowly.
    let mut hello = vec![0x16, 0x03, 0x01, 0x01, 0x00];
    hello.extend([0u8; 256]);
    let client = trickle(addr, hello, Duration::from_millis(200));
    let start = Instant::now();
    let bob = TlsFiles::in_dir(&dir, "bob");
    let err = tls::accept_on(
        &l,
        &bob,
        &short(Duration::from_secs(1), Duration::from_secs(10)),
    )
    .unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    assert!(
        start.elapsed() < Duration::from_millis(3500),
        "{:?}",
        start.elapsed()
    );
    drop(l);
    client.join().unwrap();
}

#[test]
fn a_trickled_message_hits_the_total_deadline() {
    let (l, addr) = listener();
    let mut bytes = 100u32.to_be_bytes().to_vec();
    bytes.extend([7u8; 100]);
    let gap = Duration::from_millis(200);
    let client = trickle_after(addr, PLAINTEXT_PREAMBLE.to_vec(), bytes, gap);
    let opts = short(Duration::from_secs(5), Duration::from_secs(1));
    let mut t = PlainTcpTransport::accept_on(&l, &opts).unwrap();
    let start = Instant::now();
    let err = t.recv(1000).unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "{:?}",
        start.elapsed()
    );
    drop(t);
    client.join().unwrap();
}
