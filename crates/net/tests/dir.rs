//! Shared exchange-directory transport: runs, resume after a kill, refusals.

mod common;

use std::fs;
use std::path::Path;
use std::thread;
use std::time::Duration;

use common::{FRAME_LEN, PingPong, temp_dir};
use privset_net::dir::message_file_name;
use privset_net::{
    ByteCounters, DirOptions, ExchangeDir, RunError, Transport, TransportError, drive, run_pair,
};
use privset_protocols::party::Party;

fn opts() -> DirOptions {
    DirOptions {
        poll_interval: Duration::from_millis(10),
        timeout: Duration::from_secs(20),
        ..DirOptions::default()
    }
}

/// Runs the initiator ("a") to completion in a thread.
fn spawn_a(dir: &Path) -> thread::JoinHandle<Result<(Vec<u64>, ByteCounters), RunError>> {
    let dir = dir.to_path_buf();
    thread::spawn(move || {
        let mut t = ExchangeDir::open(&dir, "a", "b", opts())?;
        let mut p = PingPong::new(true, 1);
        drive(&mut p, &mut t, &mut |_| {})?;
        Ok((p.received, t.counters()))
    })
}

#[test]
fn two_threads_exchange_through_a_directory() {
    let dir = temp_dir("dir-run");
    let a = spawn_a(&dir);
    let mut t = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
    let mut b = PingPong::new(false, 2);
    drive(&mut b, &mut t, &mut |_| {}).unwrap();
    let (a_received, ca) = a.join().unwrap().unwrap();
    assert_eq!((a_received.len(), b.received.len()), (3, 3));
    let frames = 3 * FRAME_LEN as u64;
    assert_eq!(
        ca,
        ByteCounters {
            sent: frames,
            received: frames
        }
    );
    assert_eq!(t.counters(), ca);
    for n in 0..3 {
        assert!(dir.join(message_file_name("a", n)).exists());
        assert!(dir.join(message_file_name("b", n)).exists());
    }
    drop(t);
    assert!(!dir.join("b.lock").exists(), "lock removed on drop");
}

#[test]
fn killed_party_resumes_with_identical_results_and_counters() {
    // Reference: the same parties in memory.
    let (mut ra, mut rb) = (PingPong::new(true, 1), PingPong::new(false, 2));
    run_pair(&mut ra, &mut rb).unwrap();

    let dir = temp_dir("dir-resume");
    let a = spawn_a(&dir);
    {
        // First life of b: receive 0, reply, receive 1, then "crash" before replying.
        let mut t = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
        let mut b = PingPong::new(false, 2);
        for _ in 0..2 {
            while let Some(m) = b.poll_outgoing() {
                t.send(&m.bytes).unwrap();
            }
            let m = t.recv(b.max_incoming_len()).unwrap();
            b.handle_message(0, &m).unwrap();
        }
        assert!(!dir.join(message_file_name("b", 1)).exists());
    }
    // Second life: re-created from the same seed, replays and finishes.
    let mut t = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
    let mut b = PingPong::new(false, 2);
    drive(&mut b, &mut t, &mut |_| {}).unwrap();
    let (a_received, ca) = a.join().unwrap().unwrap();
    assert_eq!(a_received, ra.received);
    assert_eq!(b.received, rb.received);
    assert_eq!(
        t.counters(),
        ByteCounters {
            sent: ca.received,
            received: ca.sent
        }
    );
    assert_eq!(t.counters(), ca);
}

#[test]
fn a_different_existing_message_is_refused() {
    let dir = temp_dir("dir-other-run");
    fs::write(
        dir.join(message_file_name("a", 0)),
        b"a message from another run",
    )
    .unwrap();
    let mut t = ExchangeDir::open(&dir, "a", "b", opts()).unwrap();
    let err = drive(&mut PingPong::new(true, 1), &mut t, &mut |_| {}).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, RunError::Transport(TransportError::ExchangeDir(_))),
        "{text}"
    );
    assert!(
        text.contains("different message 0") && text.contains("another run"),
        "{text}"
    );
}

#[test]
fn a_replayed_party_with_another_seed_is_refused() {
    let dir = temp_dir("dir-other-seed");
    let a = spawn_a(&dir);
    let mut t = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
    drive(&mut PingPong::new(false, 2), &mut t, &mut |_| {}).unwrap();
    a.join().unwrap().unwrap();
    drop(t);
    let mut t = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
    let err = drive(&mut PingPong::new(false, 3), &mut t, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("different message 0"), "{err}");
}

#[test]
fn lock_prevents_two_live_parties_of_one_role_and_stale_locks_are_taken_over() {
    let dir = temp_dir("dir-lock");
    let first = ExchangeDir::open(&dir, "a", "b", opts()).unwrap();
    let err = ExchangeDir::open(&dir, "a", "b", opts()).unwrap_err();
    assert!(err.to_string().contains("already in use"), "{err}");
    let other_role = ExchangeDir::open(&dir, "b", "a", opts()).unwrap();
    drop(first);
    drop(other_role);
    // A lock file left by a process that no longer exists.
    fs::write(dir.join("a.lock"), "4000000000\n").unwrap();
    let t = ExchangeDir::open(&dir, "a", "b", opts()).unwrap();
    let held = fs::read_to_string(dir.join("a.lock")).unwrap();
    assert_eq!(held.trim(), std::process::id().to_string());
    drop(t);
}

#[test]
fn a_lock_file_nobody_holds_is_taken_over_whatever_pid_it_names() {
    // The pid of a live process (this one, or any thread id of any process) does not
    // make a lock file held: only a process holding the lock does.
    let dir = temp_dir("dir-lock-pid");
    fs::write(dir.join("a.lock"), format!("{}\n", std::process::id())).unwrap();
    let t = ExchangeDir::open(&dir, "a", "b", opts()).unwrap();
    drop(t);
    // A refusal says the lock goes with its holder and to retry.
    let _held = ExchangeDir::open(&dir, "a", "b", opts()).unwrap();
    let err = ExchangeDir::open(&dir, "a", "b", opts()).unwrap_err();
    assert!(err.to_string().contains("retry"), "{err}");
}

#[test]
fn an_exchange_directory_that_is_a_file_is_refused_clearly() {
    let dir = temp_dir("dir-file");
    let file = dir.join("plain-file");
    fs::write(&file, "not a directory").unwrap();
    for (path, says) in [
        (file.clone(), "is a file, not a directory"),
        (file.join("run-1"), "lies under"),
    ] {
        let err = ExchangeDir::open(&path, "a", "b", opts()).unwrap_err();
        assert!(
            matches!(&err, TransportError::ExchangeDir(why) if why.contains(says)),
            "{err}"
        );
    }
}

#[test]
fn bad_roles_are_refused() {
    let dir = temp_dir("dir-roles");
    assert!(matches!(
        ExchangeDir::open(&dir, "a", "a", opts()),
        Err(TransportError::Config(_))
    ));
    assert!(matches!(
        ExchangeDir::open(&dir, "../a", "b", opts()),
        Err(TransportError::Config(_))
    ));
}

#[test]
fn oversized_file_is_refused_and_silence_times_out() {
    let dir = temp_dir("dir-big");
    fs::write(dir.join(message_file_name("b", 0)), vec![0u8; 1000]).unwrap();
    let mut t = ExchangeDir::open(
        &dir,
        "a",
        "b",
        DirOptions {
            poll_interval: Duration::from_millis(10),
            timeout: Duration::from_millis(200),
            ..DirOptions::default()
        },
    )
    .unwrap();
    let err = t.recv(FRAME_LEN).unwrap_err();
    assert!(
        matches!(err, TransportError::TooLarge { len: 1000, .. }),
        "{err}"
    );
    let mut t2 = ExchangeDir::open(
        &dir,
        "c",
        "d",
        DirOptions {
            poll_interval: Duration::from_millis(10),
            timeout: Duration::from_millis(200),
            ..DirOptions::default()
        },
    )
    .unwrap();
    let err = t2.recv(FRAME_LEN).unwrap_err();
    assert!(
        matches!(err, TransportError::Timeout { ref what, .. } if what.contains("0000-d.msg")),
        "{err}"
    );
}
