//! Every private-id message, to both roles, in the state that expects it.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::private_id);
        write_seeds_if_asked("private_id", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::private_id), TO, data);
    }
);
