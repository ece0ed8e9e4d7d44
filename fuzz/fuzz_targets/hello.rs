//! Hello settings of every protocol (set operations, private-id, PI-Sum, both
//! Authorized PSI sub-protocols, toy-sum, a bucketed job's plan and units), as the engine reads them: a fresh party of
//! either role is given the peer's hello with the honest salt and the fuzzed settings
//! (`Handshake::check_settings`). The set-operation hello is also decoded directly and
//! must re-encode to settings that decode.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{HEADER_LEN, Scenario, scenarios, with_body, write_seeds_if_asked};
use privset_protocols::pso::hello::Hello as PsoHello;

const SALT: usize = 32;

static ALL: OnceLock<Vec<Scenario>> = OnceLock::new();

fn all() -> &'static [Scenario] {
    ALL.get_or_init(|| {
        [
            scenarios::pso(),
            scenarios::private_id(),
            scenarios::pi_sum(),
            scenarios::apsi_authorize(),
            scenarios::apsi_intersect(),
            scenarios::toy(),
            scenarios::bucket_plan(),
            scenarios::partition_unit(),
        ]
        .into_iter()
        .flatten()
        .collect()
    })
}

/// The first message participant `to` receives: a hello.
fn first_to(s: &Scenario, to: u8) -> Option<usize> {
    s.transcript.iter().position(|m| m.to == to)
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, s) in all().iter().enumerate() {
        for to in 0..2u8 {
            if let Some(k) = first_to(s, to) {
                out.push(
                    [
                        vec![i as u8, to],
                        s.transcript[k].frame[HEADER_LEN + SALT..].to_vec(),
                    ]
                    .concat(),
                );
            }
        }
    }
    out
}

fuzz_target!(
    init: {
        write_seeds_if_asked("hello", seeds);
    },
    |data: &[u8]| {
        if data.len() < 2 {
            return;
        }
        let settings = &data[2..];
        let all = all();
        let s = &all[data[0] as usize % all.len()];
        if let Some(k) = first_to(s, data[1] % 2) {
            let honest = &s.transcript[k].frame;
            let body = [&honest[HEADER_LEN..HEADER_LEN + SALT], settings].concat();
            s.replay_with(k, &with_body(honest, &body));
        }
        if let Ok(h) = PsoHello::decode(settings) {
            PsoHello::decode(&h.encode()).expect("a re-encoded hello decodes");
        }
    }
);
