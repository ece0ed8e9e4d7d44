//! The multi-party PSIs' messages (Bay et al., Miyaji-Nishida, Hazay-Venkitasubramaniam) to
//! every participant, each in the state that expects them.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1, 2];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::mpsi);
        write_seeds_if_asked("mpsi", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::mpsi), TO, data);
    }
);
