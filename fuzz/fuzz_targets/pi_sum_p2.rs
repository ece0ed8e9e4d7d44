//! Every message PI-Sum's P2 accepts (hello, round 1 and 3, reverse 2), forward and
//! reverse, on every value scheme (Paillier, ElGamal, Ring-LWE) and protocol (DDH,
//! Random-OT, Bloom filter).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{
    Scenario, protocol_seeds_capped, run_protocol_input, scenarios, write_seeds_if_asked,
};

static SCENARIOS: OnceLock<Vec<Scenario>> = OnceLock::new();
const TO: &[u8] = &[1];
/// Seeds above this size (Ring-LWE keys and columns) are replaced by XOR and cut seeds.
const MAX_SEED: usize = 1 << 16;

fuzz_target!(
    init: {
        let s = SCENARIOS.get_or_init(scenarios::pi_sum);
        write_seeds_if_asked("pi_sum_p2", || protocol_seeds_capped(s, TO, MAX_SEED));
    },
    |data: &[u8]| {
        run_protocol_input(SCENARIOS.get_or_init(scenarios::pi_sum), TO, data);
    }
);
