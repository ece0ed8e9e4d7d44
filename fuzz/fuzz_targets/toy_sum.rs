//! toy-sum's messages to every participant: the engine's n-party paths (hellos, roster, routing, sequence numbers).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1, 2, 3];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::toy);
        write_seeds_if_asked("toy_sum", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::toy), TO, data);
    }
);
