//! Set filters a peer sends (Bloom, GCS), decoded for 0 to 63 elements and up to 255
//! look-ups, queried; and `SetEncoding::read`, which reads a list or a length-prefixed
//! filter out of a message, then tests membership.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_crypto::filter::{self, FilterKind, FilterParams, SetFilter};
use privset_fuzz::{Bytes, write_seeds_if_asked};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::wire::Reader;

const KEY: [u8; 32] = [0x42; 32];
const WIDTH: usize = 32;

fn elements(n: usize, tag: u8) -> Vec<u8> {
    (0..n * WIDTH)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(tag) ^ (i / WIDTH) as u8)
        .collect()
}

fn encoding(code: u8) -> SetEncoding {
    match code % 3 {
        0 => SetEncoding::List,
        1 => SetEncoding::Filter(FilterKind::Gcs),
        _ => SetEncoding::Filter(FilterKind::Bloom),
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (code, kind) in [(1u8, FilterKind::Gcs), (2, FilterKind::Bloom)] {
        for n in [0usize, 1, 5, 40] {
            let params = FilterParams::new(kind, n, 8);
            let f = filter::encode(&params, &KEY, &elements(n, 1), WIDTH);
            out.push([vec![0, code, n as u8, 8], f.clone()].concat());
            let mut framed = (f.len() as u32).to_be_bytes().to_vec();
            framed.extend_from_slice(&f);
            out.push([vec![1, code, n as u8, 8], framed].concat());
        }
    }
    out.push([vec![1, 0, 3, 8], elements(3, 1)].concat());
    out
}

fuzz_target!(
    init: {
        write_seeds_if_asked("filters", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (op, code, n, queries) = (b.u8(), b.u8(), (b.u8() % 64) as usize, b.u8() as usize);
        let data = b.rest();
        let probes = elements(n.max(1) + 2, 1);
        match op % 2 {
            0 => {
                let kind = if code % 2 == 1 { FilterKind::Gcs } else { FilterKind::Bloom };
                let params = FilterParams::new(kind, n, queries);
                if let Ok(f) = SetFilter::decode(&params, &KEY, data) {
                    for e in probes.chunks_exact(WIDTH) {
                        let _ = f.contains(e);
                    }
                }
            }
            _ => {
                let mut r = Reader::new(data, "fuzz");
                if let Ok(set) = encoding(code).read(&mut r, n, WIDTH, queries, &KEY, "fuzz set") {
                    let _ = set.matching_positions(&probes, WIDTH);
                    let _ = r.finish();
                }
            }
        }
    }
);
