//! Every Authorize message, to the client and to the judge, in each APSI mode.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::apsi_authorize);
        write_seeds_if_asked("apsi_authorize", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::apsi_authorize), TO, data);
    }
);
