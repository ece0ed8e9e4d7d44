//! The resume state a party keeps in its state directory for an exchange-directory run
//! (the seed file `privset` reads back after a restart): any content must give the
//! stored seed or a clear "corrupt resume state" error.
#![no_main]

use std::fs;

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{scratch_dir, write_seeds_if_asked};
use privset_run::link::resume_seed;

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
                // The first call creates the seed file; its path is what later runs read.
                let (_, file) = resume_seed(&s, &x, "receiver").expect("fresh seed");
                (x, s, file)
            };
        }
        let (x, s, file) = DIRS.with(|d| d.clone());
        fs::write(&file, data).unwrap();
        match resume_seed(&s, &x, "receiver") {
            Ok((seed, path)) => {
                assert_eq!(path, file);
                let text = std::str::from_utf8(data.trim_ascii()).expect("an accepted seed is hex");
                assert!(text.eq_ignore_ascii_case(&seed.iter().map(|b| format!("{b:02x}")).collect::<String>()));
            }
            Err(e) => {
                let _ = format!("{e:?}");
            }
        }
    }
);
