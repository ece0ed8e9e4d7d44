//! Exchange-directory files: the peer's message files (`NNNN-<role>.msg`, any content
//! and size), this party's own earlier files as found on a restart (compared with what
//! it sends again), and the peer role's lock file, read through `ExchangeDir`; each
//! message read is then given to the set-operation receiver in the state that expects
//! it, as the directory driver would.
#![no_main]

use std::fs;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, scenarios, scratch_dir, write_seeds_if_asked};
use privset_net::dir::message_file_name;
use privset_net::{DirOptions, ExchangeDir, Transport};

static PSI: OnceLock<Vec<Scenario>> = OnceLock::new();

fn psi() -> &'static Scenario {
    &PSI.get_or_init(|| scenarios::pso().into_iter().take(1).collect())[0]
}

/// Splits the input at `0xFF 0x00 0xFF` markers into up to four files.
fn parts(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() < 3 {
        match rest.windows(3).position(|w| w == [0xFF, 0x00, 0xFF]) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + 3..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

fn seeds() -> Vec<Vec<u8>> {
    let s = psi();
    let to_receiver: Vec<&[u8]> = s
        .transcript
        .iter()
        .filter(|m| m.to == 0)
        .map(|m| m.frame.as_slice())
        .collect();
    let from_receiver = &s.transcript.iter().find(|m| m.from == 0).unwrap().frame;
    let sep: &[u8] = &[0xFF, 0x00, 0xFF];
    vec![
        [
            to_receiver[0],
            sep,
            to_receiver.get(1).copied().unwrap_or(&[]),
        ]
        .concat(),
        [
            to_receiver[0],
            sep,
            to_receiver[1],
            sep,
            from_receiver,
            sep,
            b"12345\n",
        ]
        .concat(),
        to_receiver[0].to_vec(),
    ]
}

fuzz_target!(
    init: {
        write_seeds_if_asked("exchange_dir", seeds);
    },
    |data: &[u8]| {
        thread_local! {
            static DIR: std::path::PathBuf = scratch_dir("exchange-dir");
        }
        let dir = DIR.with(|d| d.clone());
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let p = parts(data);
        // Peer messages 0 and 1, this party's own message 0 (a restart), the peer's lock.
        fs::write(dir.join(message_file_name("sender", 0)), p[0]).unwrap();
        if let Some(m) = p.get(1) {
            fs::write(dir.join(message_file_name("sender", 1)), m).unwrap();
        }
        if let Some(m) = p.get(2) {
            fs::write(dir.join(message_file_name("receiver", 0)), m).unwrap();
        }
        if let Some(m) = p.get(3) {
            fs::write(dir.join("sender.lock"), m).unwrap();
        }
        let opts = DirOptions {
            poll_interval: Duration::from_millis(1),
            timeout: Duration::from_millis(2),
            ..DirOptions::default()
        };
        let Ok(mut link) = ExchangeDir::open(&dir, "receiver", "sender", opts) else { return };
        let s = psi();
        let honest_first = &s.transcript.iter().find(|m| m.from == 0).unwrap().frame;
        let _ = link.send(honest_first);
        let to_receiver = s.messages_to(&[0]);
        for &k in to_receiver.iter().take(2) {
            match link.recv(1 << 20) {
                Ok(bytes) => s.replay_with(k, &bytes),
                Err(e) => {
                    let _ = e.to_string();
                    break;
                }
            }
        }
        let _ = link.counters();
    }
);
