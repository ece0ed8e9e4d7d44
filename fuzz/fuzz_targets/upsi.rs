//! Every unbalanced-PSI message (OPRF request and answer, encrypted query and answer),
//! to the client and to the server, unlabeled and labeled.
//!
//! The encrypted query and answer can be megabytes long: their seeds are the small
//! modes of `run_protocol_input` (bytes XORed into, or a cut of, the honest message)
//! rather than whole copies, so the committed corpus stays small and each input cheap.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{
    Scenario, protocol_seeds_capped, run_protocol_input, scenarios, write_seeds_if_asked,
};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];
/// Seeds above this size are replaced by XOR and cut seeds.
const MAX_SEED: usize = 1 << 16;

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::upsi);
        write_seeds_if_asked("upsi", || protocol_seeds_capped(s, TO, MAX_SEED));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::upsi), TO, data);
    }
);
