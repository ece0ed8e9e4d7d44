//! The resume state a party keeps in its state directory for an exchange-directory run
//! (the seed file `privset` reads back after a restart, while the directory holds its
//! run's link key): any content must give the stored seed, when it is that run's, or a
//! clear error.
#![no_main]

use std::fs;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{scratch_dir, write_seeds_if_asked};
use privset_net::DirOptions;
use privset_run::link::{SeedOrigin, join_exchange_dir};

fn seeds() -> Vec<Vec<u8>> {
    let hex: Vec<u8> = (0..32u8)
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect();
    vec![
        hex.clone(),
        [hex.as_slice(), b"\n"].concat(),
        [
            b"  ".as_slice(),
            hex.to_ascii_uppercase().as_slice(),
            b"\r\n",
        ]
        .concat(),
        hex[..40].to_vec(),
    ]
}

fuzz_target!(
    init: {
        write_seeds_if_asked("resume_state", seeds);
    },
    |data: &[u8]| {
        thread_local! {
            static DIRS: (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) = {
                let root = scratch_dir("resume-state");
                let (x, s) = (root.join("exchange"), root.join("state"));
                // The first call creates the seed file; the directory then holds the link
                // key of the run whose seed is 00 01 .. 1f (the seed corpus's), so that
                // seed resumes and any other content is refused.
                let run = join_exchange_dir(&s, &x, "receiver", DirOptions::default()).expect("fresh seed");
                let known: [u8; 32] = std::array::from_fn(|i| i as u8);
                run.place.publish_key(&known, None).expect("link key");
                (x, s, run.seed_file.clone())
            };
        }
        let (x, s, file) = DIRS.with(|d| d.clone());
        fs::write(&file, data).unwrap();
        match join_exchange_dir(&s, &x, "receiver", DirOptions::default()) {
            Ok(run) => {
                assert_eq!(run.origin, SeedOrigin::Resumed, "the directory holds the run");
                assert_eq!(run.seed_file, file);
                let seed = run.seed;
                let text = std::str::from_utf8(data.trim_ascii()).expect("an accepted seed is hex");
                assert!(text.eq_ignore_ascii_case(&seed.iter().map(|b| format!("{b:02x}")).collect::<String>()));
            }
            Err(e) => {
                let _ = format!("{e:?}");
            }
        }
    }
);
