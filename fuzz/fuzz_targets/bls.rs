//! BLS12-381 (Authorized PSI): G1 and G2 points, scalars, packed G1 batches, the
//! judge's keys (bytes and key files), the equality-of-exponents proof, the
//! key-consistency token, and signature files (bytes and as `privset` reads them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_crypto::bls::{self, PublicKey, SecretKey, eea};
use privset_fuzz::{Bytes, scenarios, scratch_dir, write_seeds_if_asked};
use privset_protocols::apsi::signatures::SignatureSet;
use privset_protocols::apsi::{KcToken, PartialFraction};

fn seeds() -> Vec<Vec<u8>> {
    let half = PartialFraction::new(0.5).ok();
    let mut out = Vec::new();
    for (i, (partial, kc)) in [(None, false), (half, true)].into_iter().enumerate() {
        let sigs = scenarios::signature_set(partial, kc, 170 + i as u8);
        let file = sigs.encode();
        out.push([vec![8, 0], file.clone()].concat());
        out.push([vec![9, 0], file].concat());
        out.push([vec![0, 0], bls::encode_g1(&sigs.signatures[0]).to_vec()].concat());
        out.push([vec![1, 0], sigs.judge_key.to_bytes().to_vec()].concat());
        out.push([vec![3, 0], bls::encode_g1_batch(&sigs.signatures)].concat());
        if let Some(t) = sigs.kc_token {
            out.push([vec![7, 0], t.encode()].concat());
        }
        if let Some(r) = sigs.secret {
            out.push([vec![2, 0], bls::encode_scalar(&r).to_vec()].concat());
        }
    }
    let sk = SecretKey::generate(&mut privset_crypto::rng::SessionRng::from_seed([15u8; 32]));
    out.push([vec![5, 0], sk.to_bytes().to_vec()].concat());
    out.push([vec![4, 0], sk.public_key().to_bytes().to_vec()].concat());
    let dir = scratch_dir("bls-seeds");
    let (sp, pp) = (dir.join("judge.key"), dir.join("judge.pub"));
    privset_run::apsi::write_secret_key(&sp, &sk).unwrap();
    privset_run::apsi::write_public_key(&pp, &sk.public_key()).unwrap();
    out.push([vec![10, 0], std::fs::read(&sp).unwrap()].concat());
    out.push([vec![11, 0], std::fs::read(&pp).unwrap()].concat());
    let _ = std::fs::remove_dir_all(dir);
    out
}

fuzz_target!(
    init: {
        write_seeds_if_asked("bls", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (op, n) = (b.u8(), b.u8());
        let data = b.rest();
        match op % 12 {
            0 => {
                if let Ok(p) = bls::decode_g1(data) {
                    assert_eq!(&bls::encode_g1(&p)[..], data, "non-canonical G1 accepted");
                }
            }
            1 => {
                if let Ok(p) = bls::decode_g2(data) {
                    assert_eq!(&bls::encode_g2(&p)[..], data, "non-canonical G2 accepted");
                }
            }
            2 => {
                let _ = bls::decode_scalar(data);
            }
            3 => {
                let _ = bls::decode_g1_batch(data);
            }
            4 => {
                if let Ok(pk) = PublicKey::from_bytes(data) {
                    let _ = pk.fingerprint();
                }
            }
            5 => {
                let _ = SecretKey::from_bytes(data);
            }
            6 => {
                let _ = eea::Proof::decode(data, usize::from(n % 16));
            }
            7 => {
                let _ = KcToken::decode(data);
            }
            8 => {
                if let Ok(s) = SignatureSet::decode(data) {
                    let again = SignatureSet::decode(&s.encode()).expect("re-encoding decodes");
                    assert_eq!(again.items, s.items);
                    let _ = s.select(&s.items[..s.items.len() / 2]);
                }
            }
            _ => {
                thread_local! {
                    static DIR: std::path::PathBuf = scratch_dir("bls");
                }
                let path = DIR.with(|d| d.join("file"));
                std::fs::write(&path, data).unwrap();
                match op % 12 {
                    9 => {
                        let _ = privset_run::apsi::read_signatures(&path, Some(b"client-7"));
                    }
                    10 => {
                        let _ = privset_run::apsi::read_secret_key(&path);
                    }
                    _ => {
                        let _ = privset_run::apsi::read_public_key(&path);
                    }
                }
            }
        }
    }
);
