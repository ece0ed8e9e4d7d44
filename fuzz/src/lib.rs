//! Shared pieces of the privset fuzz targets: honest sessions recorded in memory, and
//! the replay that brings one party to the state where it expects message k, then feeds
//! it the fuzzer's bytes (docs/reliability.md, "Fuzzing").
//!
//! Every party is built from a fixed seed and fixed input, so it replays its part of a
//! recorded session byte for byte; a fuzz iteration rebuilds only the receiving party,
//! feeds it the honest messages that precede message k, and then the fuzzed one. Only
//! "no panic" is asserted: errors are the expected answer to hostile bytes.

pub mod scenarios;

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::Path;

use privset_protocols::party::{Party, PartyId};

/// Builds participant `i` of a scenario, always from the same seed and input.
pub type Make = Box<dyn Fn(PartyId) -> Box<dyn Party> + Send + Sync>;

/// One delivered message of an honest session.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub from: PartyId,
    pub to: PartyId,
    pub frame: Vec<u8>,
}

/// A protocol session with fixed inputs and seeds, and its honest transcript.
pub struct Scenario {
    pub name: String,
    pub make: Make,
    /// Every message in the order the harness delivered it.
    pub transcript: Vec<Recorded>,
}

/// Length of the frame header (docs/wire.md).
pub const HEADER_LEN: usize = 33;

fn settle(p: &mut dyn Party, out: &mut Vec<privset_protocols::Outgoing>) -> bool {
    loop {
        while let Some(o) = p.poll_outgoing() {
            out.push(o);
        }
        if p.has_deferred_work() {
            if p.do_deferred_work().is_err() {
                return false;
            }
        } else {
            return true;
        }
    }
}

impl Scenario {
    /// Runs the honest session once, lock step, and records every message.
    pub fn record(name: impl Into<String>, parties: usize, make: Make) -> Self {
        let name = name.into();
        let mut ps: Vec<Box<dyn Party>> = (0..parties).map(|i| make(i as PartyId)).collect();
        let mut queues: BTreeMap<(PartyId, PartyId), VecDeque<Vec<u8>>> = BTreeMap::new();
        let mut transcript = Vec::new();
        loop {
            let mut progress = false;
            for (i, p) in ps.iter_mut().enumerate() {
                let mut out = Vec::new();
                assert!(
                    settle(p.as_mut(), &mut out),
                    "{name}: honest deferred work failed"
                );
                for o in out {
                    queues
                        .entry((i as PartyId, o.to))
                        .or_default()
                        .push_back(o.bytes);
                    progress = true;
                }
            }
            for (i, p) in ps.iter_mut().enumerate() {
                let to = i as PartyId;
                if let Some(from) = p.awaiting()
                    && let Some(frame) = queues.get_mut(&(from, to)).and_then(VecDeque::pop_front)
                {
                    p.handle_message(from, &frame)
                        .unwrap_or_else(|e| panic!("{name}: honest message refused: {e}"));
                    transcript.push(Recorded { from, to, frame });
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        assert!(
            ps.iter().all(|p| p.is_finished()),
            "{name}: the honest session did not finish"
        );
        Scenario {
            name,
            make,
            transcript,
        }
    }

    /// Indices (into the transcript) of the messages some participant in `to` receives.
    pub fn messages_to(&self, to: &[PartyId]) -> Vec<usize> {
        (0..self.transcript.len())
            .filter(|&i| to.contains(&self.transcript[i].to))
            .collect()
    }

    /// Rebuilds the recipient of message `index`, brings it to the state where it
    /// expects that message, and feeds it `frame` instead. Never panics unless the
    /// party does.
    pub fn replay_with(&self, index: usize, frame: &[u8]) {
        let target = &self.transcript[index];
        let me = target.to;
        let mut party = (self.make)(me);
        let mut sink = Vec::new();
        for m in self.transcript[..index].iter().filter(|m| m.to == me) {
            if !settle(party.as_mut(), &mut sink) || party.awaiting() != Some(m.from) {
                return;
            }
            sink.clear();
            if party.handle_message(m.from, &m.frame).is_err() {
                return;
            }
        }
        if !settle(party.as_mut(), &mut sink) || party.awaiting() != Some(target.from) {
            return;
        }
        // Every driver refuses a frame above this before the party sees it.
        if frame.len() > party.max_incoming_len() {
            return;
        }
        let _ = party.status();
        match party.handle_message(target.from, frame) {
            Ok(()) => {
                // Whatever the message let the party compute, and send, runs too.
                settle(party.as_mut(), &mut sink);
                let _ = party.status();
                let _ = party.is_finished();
                let _ = party.awaiting();
                let _ = party.max_incoming_len();
            }
            Err(e) => {
                let _ = party.alerts(&e);
                let _ = e.to_string();
            }
        }
    }
}

/// How fuzz bytes become a message: byte 0 picks the scenario, byte 1 the message (among
/// those the target's roles receive), byte 2 the mode; the rest is the payload.
///
/// Modes: 0 the payload is the whole frame; 1 the honest header (length fixed up) with
/// the payload as body; 2 the honest frame XORed with the payload from an offset; 3 a
/// prefix of the honest body followed by the payload.
pub fn run_protocol_input(scenarios: &[Scenario], to: &[PartyId], data: &[u8]) {
    if data.len() < 3 || scenarios.is_empty() {
        return;
    }
    let scenario = &scenarios[data[0] as usize % scenarios.len()];
    let candidates = scenario.messages_to(to);
    if candidates.is_empty() {
        return;
    }
    let index = candidates[data[1] as usize % candidates.len()];
    let honest = &scenario.transcript[index].frame;
    let payload = &data[3..];
    let frame = match data[2] % 4 {
        0 => payload.to_vec(),
        1 => with_body(honest, payload),
        2 => {
            let mut f = honest.clone();
            if payload.len() >= 2 && !f.is_empty() {
                let off = u16::from_be_bytes([payload[0], payload[1]]) as usize;
                for (i, b) in payload[2..].iter().enumerate() {
                    let n = f.len();
                    f[(off + i) % n] ^= b;
                }
            }
            f
        }
        _ => {
            let body = honest.get(HEADER_LEN..).unwrap_or(&[]);
            let cut = if payload.len() >= 2 {
                u16::from_be_bytes([payload[0], payload[1]]) as usize % (body.len() + 1)
            } else {
                body.len()
            };
            let mut b = body[..cut].to_vec();
            b.extend_from_slice(payload.get(2..).unwrap_or(&[]));
            with_body(honest, &b)
        }
    };
    scenario.replay_with(index, &frame);
}

/// The honest frame's header with `body`, its length field fixed up.
pub fn with_body(honest: &[u8], body: &[u8]) -> Vec<u8> {
    let mut f = honest[..HEADER_LEN.min(honest.len())].to_vec();
    if f.len() == HEADER_LEN {
        f[29..33].copy_from_slice(&(body.len() as u32).to_be_bytes());
    }
    f.extend_from_slice(body);
    f
}

/// Seed inputs for [`run_protocol_input`]: every message the roles `to` receive in
/// every scenario, whole (mode 0) and as a body (mode 1).
pub fn protocol_seeds(scenarios: &[Scenario], to: &[PartyId]) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (s, scenario) in scenarios.iter().enumerate() {
        for (k, &i) in scenario.messages_to(to).iter().enumerate() {
            let frame = &scenario.transcript[i].frame;
            let mut whole = vec![s as u8, k as u8, 0];
            whole.extend_from_slice(frame);
            seeds.push(whole);
            let mut body = vec![s as u8, k as u8, 1];
            body.extend_from_slice(frame.get(HEADER_LEN..).unwrap_or(&[]));
            seeds.push(body);
        }
    }
    seeds
}

/// [`protocol_seeds`] for sessions with megabyte messages: seeds longer than `max_seed`
/// bytes are left out, and every message gets small seeds of modes 2 and 3 instead
/// (bytes flipped in the body's header and middle, the body cut short), so the committed
/// corpus stays small and each input cheap.
pub fn protocol_seeds_capped(
    scenarios: &[Scenario],
    to: &[PartyId],
    max_seed: usize,
) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = protocol_seeds(scenarios, to)
        .into_iter()
        .filter(|s| s.len() <= max_seed)
        .collect();
    for (s, scenario) in scenarios.iter().enumerate() {
        for k in 0..scenario.messages_to(to).len() {
            let (s, k) = (s as u8, k as u8);
            out.push(vec![s, k, 2, 0, 40, 0xff, 0x01]);
            out.push(vec![s, k, 2, 0x80, 0, 0x10, 0x20, 0x40]);
            out.push(vec![s, k, 3, 0x01, 0x00]);
            out.push(vec![s, k, 3, 0xff, 0xf0, 0, 0, 0, 9]);
        }
    }
    out
}

/// Writes `seeds` as corpus files into `$PRIVSET_FUZZ_SEEDS/<target>/` when that variable
/// is set (scripts/fuzz_corpus.sh); the fuzz targets call this from their init.
pub fn write_seeds_if_asked(target: &str, seeds: impl FnOnce() -> Vec<Vec<u8>>) {
    let Some(root) = std::env::var_os("PRIVSET_FUZZ_SEEDS") else {
        return;
    };
    let dir = Path::new(&root).join(target);
    fs::create_dir_all(&dir).expect("creating the seed directory");
    for (i, seed) in seeds().into_iter().enumerate() {
        fs::write(dir.join(format!("seed-{i:04}")), seed).expect("writing a seed");
    }
}

/// A little-endian reader over fuzz bytes for targets that need a few parameters.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// A scratch directory for targets that read files (tmpfs when there is one), one per
/// process, emptied by the caller as it sees fit.
pub fn scratch_dir(target: &str) -> std::path::PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("privset-fuzz-{target}-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("creating a scratch directory");
    dir
}
