//! Frames and wire headers: `decode_frame` for every protocol id (header checks,
//! alerts and their reason text), the n-party link preamble and reply, and the
//! `Reader` every message decoder uses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_fuzz::{Bytes, write_seeds_if_asked};
use privset_net::links::{Preamble, decode_reply, encode_reply};
use privset_protocols::wire::{
    Header, ProtocolId, Reader, alert_frame, decode_frame, encode_frame,
};

fn seeds() -> Vec<Vec<u8>> {
    let session = [7u8; 16];
    let mut out = Vec::new();
    for (i, p) in ProtocolId::ALL.into_iter().enumerate() {
        let h = Header {
            protocol: p,
            kind: 2,
            sender: 0,
            recipient: 1,
            session: &session,
            seq: 3,
        };
        out.push([vec![0, i as u8], encode_frame(h, b"body bytes")].concat());
        out.push(
            [
                vec![0, i as u8],
                alert_frame(h, "stopped: \u{1b}[31mred\u{202e}"),
            ]
            .concat(),
        );
    }
    let pre = Preamble {
        connector: 2,
        acceptor: 0,
        session: "run-42".into(),
    };
    out.push([vec![1, 0], pre.encode()].concat());
    out.push([vec![2, 0], encode_reply(None)].concat());
    out.push([vec![2, 0], encode_reply(Some("not in this session"))].concat());
    out.push(vec![
        3, 0, 1, 0, 0, 0, 4, b'a', b'b', b'c', b'd', 0, 0, 0, 0, 0, 0, 0, 9,
    ]);
    out
}

fuzz_target!(
    init: {
        write_seeds_if_asked("wire", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (op, p) = (b.u8(), b.u8());
        let data = b.rest();
        match op % 4 {
            0 => {
                let protocol = ProtocolId::ALL[p as usize % ProtocolId::ALL.len()];
                match decode_frame(protocol, data) {
                    Ok(f) => {
                        let h = Header {
                            protocol,
                            kind: f.kind,
                            sender: f.sender,
                            recipient: f.recipient,
                            session: &f.session,
                            seq: f.seq,
                        };
                        assert_eq!(encode_frame(h, f.body), data, "frame does not round-trip");
                    }
                    Err(e) => {
                        let _ = e.to_string();
                    }
                }
            }
            1 => {
                if let Ok(pre) = Preamble::decode(data) {
                    assert_eq!(Preamble::decode(&pre.encode()), Ok(pre));
                }
            }
            2 => {
                let _ = decode_reply(data);
            }
            _ => {
                // A little program over the reader: each byte of `data` up to the first
                // 16 picks an operation, the rest is what it reads.
                let (ops, input) = data.split_at(data.len().min(16));
                let mut r = Reader::new(input, "fuzz");
                for &o in ops {
                    let _ = match o % 8 {
                        0 => r.u8().map(drop),
                        1 => r.u32().map(drop),
                        2 => r.u64().map(drop),
                        3 => r.u128().map(drop),
                        4 => r.array::<32>().map(drop),
                        5 => r.bytes(usize::from(o)).map(drop),
                        6 => r.take(usize::from(o / 8)).map(drop),
                        _ => {
                            r.rest();
                            Ok(())
                        }
                    };
                }
                let _ = r.finish();
            }
        }
    }
);
