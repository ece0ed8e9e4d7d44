//! The KKRT batched OPRF's messages as each side reads a peer's bytes: the base-OT
//! first message as the OPRF sender reads it, the base-OT reply as the OPRF receiver
//! reads it (both code widths), and the receiver's OPRF message as the sender reads it
//! (1 to 64 instances), followed by an evaluation of the resulting key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_crypto::oprf::{CodeWidth, OprfReceiver, OprfSender};
use privset_crypto::rng::SessionRng;
use privset_fuzz::{Bytes, write_seeds_if_asked};

const CTX: &[u8] = b"privset-fuzz-oprf";

fn width(b: u8) -> CodeWidth {
    if b.is_multiple_of(2) {
        CodeWidth::Bits448
    } else {
        CodeWidth::Bits512
    }
}

fn inputs(count: usize) -> Vec<[u8; 8]> {
    (0..count as u64).map(u64::to_le_bytes).collect()
}

/// The receiver and sender the target rebuilds from fixed seeds: an honest message
/// recorded from them is accepted, so mutations of it reach the checks past the length.
fn honest_pair(w: CodeWidth) -> (OprfReceiver, OprfSender, Vec<u8>) {
    let mut rng = SessionRng::from_seed([21u8; 32]);
    let (receiver, first) = OprfReceiver::new(&mut rng, CTX, w);
    let mut rng = SessionRng::from_seed([22u8; 32]);
    let (sender, reply) = OprfSender::respond(&mut rng, CTX, w, &first).expect("honest first");
    (receiver, sender, reply)
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for w in [0u8, 1] {
        let (receiver, _, reply) = honest_pair(width(w));
        let mut rng = SessionRng::from_seed([23u8; 32]);
        let (_, first) = OprfReceiver::new(&mut rng, CTX, width(w));
        out.push([vec![0, w], first.to_vec()].concat());
        out.push([vec![1, w, 4], reply.clone()].concat());
        let (message, _) = receiver
            .finish::<16, _>(&reply, &inputs(5))
            .expect("honest reply");
        out.push([vec![2, w, 4], message].concat());
    }
    out
}

fuzz_target!(
    init: {
        write_seeds_if_asked("oprf", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (op, w) = (b.u8(), width(b.u8()));
        match op % 3 {
            0 => {
                let mut rng = SessionRng::from_seed([24u8; 32]);
                if let Ok((_, reply)) = OprfSender::respond(&mut rng, CTX, w, b.rest()) {
                    assert_eq!(reply.len(), w.base_reply_len());
                }
            }
            1 => {
                let count = 1 + (b.u8() % 64) as usize;
                let (receiver, _, _) = honest_pair(w);
                if let Ok((message, outputs)) = receiver.finish::<16, _>(b.rest(), &inputs(count)) {
                    assert_eq!(message.len(), w.message_len(count));
                    assert_eq!(outputs.len(), count);
                }
            }
            _ => {
                let count = 1 + (b.u8() % 64) as usize;
                let (_, sender, _) = honest_pair(w);
                if let Ok(key) = sender.finish::<16>(b.rest(), count) {
                    assert_eq!(key.len(), count);
                    let _ = key.eval(count - 1, b"x");
                }
            }
        }
    }
);
