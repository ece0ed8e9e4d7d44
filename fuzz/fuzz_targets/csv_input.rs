//! CSV input files as `privset` reads them (`read_dataset`: header, identifier column,
//! value columns, segment column, duplicate policy, value bounds, line numbers in
//! errors) and as the APSI commands read identifiers (`read_ids`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Bytes, scratch_dir, write_seeds_if_asked};
use privset_protocols::input::DuplicatePolicy;
use privset_run::csv_input::{Columns, read_dataset};

fn seeds() -> Vec<Vec<u8>> {
    vec![
        [&[0u8, 255][..], b"id\nalice\nbob\n  carol  \n"].concat(),
        [&[1u8, 100][..], b"id,v\na,1\nb,2\nc,30\n"].concat(),
        [&[3u8, 255][..], b"id,v,w\r\na,1,2\r\nb,3,4\r\n"].concat(),
        [
            &[5u8, 255][..],
            b"id,v,seg\n\"x,1\",1,s1\n\"multi\nline\",2,s2\ny,3,s1\n",
        ]
        .concat(),
        [&[9u8, 255][..], b"id,v\na,1\na,2\nb,3\n"].concat(),
        [&[17u8, 255][..], b"id,v\na,1\na,2\n"].concat(),
        [&[32u8, 0][..], b"id\n\xff\xfe\nplain\n"].concat(),
        [&[1u8, 255][..], b"id,v\ra,1\rb,-2\r"].concat(),
    ]
}

fuzz_target!(
    init: {
        write_seeds_if_asked("csv_input", seeds);
    },
    |data: &[u8]| {
        thread_local! {
            static FILE: std::path::PathBuf = scratch_dir("csv").join("input.csv");
        }
        let mut b = Bytes(data);
        let (flags, max) = (b.u8(), b.u8());
        let path = FILE.with(|f| f.clone());
        std::fs::write(&path, b.rest()).unwrap();
        if flags & 32 != 0 {
            let _ = privset_run::apsi::read_ids(&path, "id");
            return;
        }
        let values: Vec<String> = match flags & 3 {
            0 => vec![],
            1 => vec!["v".into()],
            _ => vec!["v".into(), "w".into()],
        };
        let cols = Columns {
            id: "id",
            values: &values,
            segment: (flags & 4 != 0).then_some("seg"),
        };
        let policy = match (flags >> 3) % 3 {
            0 => DuplicatePolicy::Error,
            1 => DuplicatePolicy::Sum,
            _ => DuplicatePolicy::First,
        };
        let max_value = if max == 255 { u64::MAX } else { u64::from(max) * 1000 };
        match read_dataset(&path, &cols, policy, max_value) {
            Ok(d) => {
                assert!(d.columns.iter().all(|c| c.len() == d.ids.len()));
            }
            Err(e) => {
                let _ = format!("{e:?}");
            }
        }
    }
);
