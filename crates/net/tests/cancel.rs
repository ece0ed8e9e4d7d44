//! A cancel from another thread stops a party wherever it waits: accepting, connecting,
//! reading from a connected peer, or polling an exchange directory.

mod common;

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use common::{FRAME_LEN, temp_dir};
use privset_net::{
    Cancel, ConnectOptions, DirOptions, ExchangeDir, TlsFiles, Transport, TransportError, certs,
    tls,
};

/// Long timeouts, so only the cancel can end the waits below quickly.
fn opts(cancel: &Cancel) -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_secs(60),
        io_timeout: Duration::from_secs(60),
        cancel: cancel.clone(),
        ..ConnectOptions::default()
    }
}

/// Cancels `cancel` after 200 ms; returns how long `wait` took.
fn cancelled_after<T>(cancel: &Cancel, wait: impl FnOnce() -> T) -> (T, Duration) {
    let c = cancel.clone();
    let trigger = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        c.cancel();
    });
    let start = Instant::now();
    let out = wait();
    let took = start.elapsed();
    trigger.join().unwrap();
    (out, took)
}

fn files(name: &str) -> (std::path::PathBuf, TlsFiles, TlsFiles) {
    let dir = temp_dir(name);
    certs::generate(&dir, &["a".to_string(), "b".to_string()]).unwrap();
    let (a, b) = (TlsFiles::in_dir(&dir, "a"), TlsFiles::in_dir(&dir, "b"));
    (dir, a, b)
}

#[test]
fn cancel_stops_accepting() {
    let (_dir, a, _) = files("cancel-accept");
    let cancel = Cancel::new();
    let (r, took) = cancelled_after(&cancel, || tls::accept("127.0.0.1:0", &a, &opts(&cancel)));
    assert!(matches!(r, Err(TransportError::Cancelled)), "{r:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn cancel_stops_connecting() {
    let (_dir, a, _) = files("cancel-connect");
    // A port nobody listens on: the connect loop retries until its deadline.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cancel = Cancel::new();
    let (r, took) = cancelled_after(&cancel, || {
        tls::connect(&format!("127.0.0.1:{port}"), &a, &opts(&cancel))
    });
    assert!(matches!(r, Err(TransportError::Cancelled)), "{r:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn cancel_wakes_a_read_from_a_silent_peer() {
    let (_dir, a, b) = files("cancel-read");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let quiet = Cancel::new();
    let peer = thread::spawn(move || {
        // Connects, then says nothing until its own side is dropped.
        let t = tls::connect(&addr, &b, &opts(&quiet)).unwrap();
        thread::sleep(Duration::from_secs(3));
        drop(t);
    });
    let cancel = Cancel::new();
    let mut t = tls::accept_on(&listener, &a, &opts(&cancel)).unwrap();
    let (r, took) = cancelled_after(&cancel, || t.recv(FRAME_LEN));
    assert!(r.is_err(), "a cancelled read returned a message");
    assert!(took < Duration::from_secs(2), "{took:?}");
    peer.join().unwrap();
}

#[test]
fn cancel_stops_polling_an_exchange_directory() {
    let dir = temp_dir("cancel-dir");
    let cancel = Cancel::new();
    let mut t = ExchangeDir::open(
        &dir,
        "a",
        "b",
        DirOptions {
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(60),
            cancel: cancel.clone(),
        },
    )
    .unwrap();
    let (r, took) = cancelled_after(&cancel, || t.recv(FRAME_LEN));
    assert!(matches!(r, Err(TransportError::Cancelled)), "{r:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}
