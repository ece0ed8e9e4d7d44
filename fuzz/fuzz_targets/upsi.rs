//! Every unbalanced-PSI message (OPRF request and answer, encrypted query and answer),
//! to the client and to the server, unlabeled and labeled.
//!
//! The encrypted query and answer are megabytes long: their seeds are the small
//! modes of `run_protocol_input` (bytes XORed into, or a cut of, the honest message)
//! rather than whole copies, so the committed corpus stays small and each input cheap.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];
/// Seeds above this size are replaced by XOR and cut seeds.
const MAX_SEED: usize = 1 << 16;

fn seeds(scenarios: &[Scenario]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = protocol_seeds(scenarios, TO)
        .into_iter()
        .filter(|s| s.len() <= MAX_SEED)
        .collect();
    for (s, scenario) in scenarios.iter().enumerate() {
        for k in 0..scenario.messages_to(TO).len() {
            let (s, k) = (s as u8, k as u8);
            // Flip bytes in the header of the body, in the middle, and cut it short.
            out.push(vec![s, k, 2, 0, 40, 0xff, 0x01]);
            out.push(vec![s, k, 2, 0x80, 0, 0x10, 0x20, 0x40]);
            out.push(vec![s, k, 3, 0x01, 0x00]);
            out.push(vec![s, k, 3, 0xff, 0xf0, 0, 0, 0, 9]);
        }
    }
    out
}

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::upsi);
        write_seeds_if_asked("upsi", || seeds(s));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::upsi), TO, data);
    }
);
