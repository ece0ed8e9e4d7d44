//! Every unbalanced-PSI message (OPRF request and answer, encrypted query and answer),
//! to the client and to the server, unlabeled and labeled.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::upsi);
        write_seeds_if_asked("upsi", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::upsi), TO, data);
    }
);
