//! A value-partitioned job's units, both roles: the one-message unit's payload and the
//! psi-card-sum transfer unit's base-OT messages, OT extension and masked values.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Scenario, protocol_seeds, run_protocol_input, scenarios, write_seeds_if_asked};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[0, 1];

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::partition_unit);
        write_seeds_if_asked("partition_unit", || protocol_seeds(s, TO));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::partition_unit), TO, data);
    }
);
