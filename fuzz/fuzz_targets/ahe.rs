//! Additively homomorphic encryption: Paillier-DJ (s = 1 and 2), exponential ElGamal
//! and Ring-LWE (BFV coefficient encoding) public keys and ciphertexts as a peer sends them, and the packed-column
//! operations that read a peer's bytes (sum of a selected subset, masking, opening,
//! decrypting a sum).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_crypto::ahe::elgamal::{self, ElGamal};
use privset_crypto::ahe::paillier::{self, Paillier};
use privset_crypto::ahe::rlwe::{self, Rlwe};
use privset_crypto::ahe::{AdditiveHe, ColumnBounds, SubsetSum};
use privset_crypto::rng::SessionRng;
use privset_fuzz::{Bytes, write_seeds_if_asked};

struct Keys<H: AdditiveHe> {
    params: H::Params,
    pk: H::PublicKey,
    sk: H::SecretKey,
}

fn keys<H: AdditiveHe>(params: H::Params, seed: u8) -> Keys<H> {
    let (pk, sk) = H::keygen(&params, &mut SessionRng::from_seed([seed; 32]));
    Keys { params, pk, sk }
}

struct All {
    p1: Keys<Paillier>,
    p2: Keys<Paillier>,
    eg: Keys<ElGamal>,
    rl: Keys<Rlwe>,
}

static KEYS: OnceLock<All> = OnceLock::new();

fn all() -> &'static All {
    KEYS.get_or_init(|| All {
        p1: keys(
            paillier::Params {
                modulus_bits: 1024,
                s: 1,
            },
            1,
        ),
        p2: keys(
            paillier::Params {
                modulus_bits: 1024,
                s: 2,
            },
            2,
        ),
        eg: keys(elgamal::Params { max_table_bits: 10 }, 3),
        rl: keys(rlwe::Params::default(), 6),
    })
}

const BOUNDS: ColumnBounds = ColumnBounds {
    items: 4,
    max_value: 1000,
    max_sum: 4000,
};

fn scheme<H: SubsetSum>(k: &Keys<H>, op: u8, b: &mut Bytes<'_>) {
    let selected: Vec<usize> = (0..(b.u8() % 6)).map(|_| (b.u8() % 8) as usize).collect();
    let data = std::mem::replace(b, Bytes(&[])).rest();
    let mut rng = SessionRng::from_seed([9u8; 32]);
    match op % 7 {
        0 => {
            if let Ok(pk) = H::decode_public_key(data, &k.params) {
                let _ = H::encrypt(&pk, 5, &mut rng);
                let _ = H::column_ciphertexts(&pk, &BOUNDS);
            }
        }
        1 => {
            if let Ok(c) = H::decode_ciphertext(&k.pk, data) {
                let _ = H::decrypt(&k.sk, &c, 1000);
                let _ = H::rerandomize(&k.pk, &c, &mut rng);
            }
        }
        2 => {
            let _ = H::sum_selected(&k.pk, &BOUNDS, data, &selected, &mut rng);
        }
        3 => {
            let _ = H::decrypt_sum(&k.sk, &BOUNDS, data);
        }
        4 => {
            let _ = H::mask_each(&k.pk, data, &mut rng);
        }
        5 => {
            let _ = H::open_masked_sum(&k.sk, data, &selected);
        }
        _ => {
            let masks = honest_each(k).and_then(|each| H::mask_each(&k.pk, &each, &mut rng).ok());
            if let Some((_, masks)) = masks {
                let _ = H::unmask_sum(&k.pk, &BOUNDS, data, &masks, &selected);
            }
        }
    }
}

/// Values encrypted one by one (the reverse variant's form), for the schemes that offer
/// it (not Ring-LWE).
fn honest_each<H: SubsetSum>(k: &Keys<H>) -> Option<Vec<u8>> {
    H::encrypt_each(
        &k.pk,
        &k.sk,
        &BOUNDS,
        &[1, 2, 3, 4],
        &mut SessionRng::from_seed([4u8; 32]),
    )
    .ok()
}

fn seeds() -> Vec<Vec<u8>> {
    fn of<H: SubsetSum>(k: &Keys<H>, which: u8) -> Vec<Vec<u8>> {
        let mut rng = SessionRng::from_seed([5u8; 32]);
        let column = H::encrypt_column(&k.pk, &k.sk, &BOUNDS, &[1, 2, 3, 4], &mut rng).unwrap();
        let each = honest_each(k);
        let sum = H::sum_selected(&k.pk, &BOUNDS, &column, &[0, 2], &mut rng).unwrap();
        let pk = H::encode_public_key(&k.pk);
        let mut ct = vec![0u8; H::ciphertext_len(&k.pk)];
        H::encode_ciphertext(&k.pk, &H::encrypt(&k.pk, 7, &mut rng), &mut ct);
        let with = |op: u8, body: &[u8]| {
            let mut s = vec![which, op, 2, 0, 2];
            s.extend_from_slice(body);
            s
        };
        let mut out = vec![with(0, &pk), with(1, &ct), with(2, &column), with(3, &sum)];
        if let Some(each) = each {
            out.extend([with(4, &each), with(5, &each)]);
        }
        out
    }
    let a = all();
    [of(&a.p1, 0), of(&a.p2, 1), of(&a.eg, 2), of(&a.rl, 3)].concat()
}

fuzz_target!(
    init: {
        write_seeds_if_asked("ahe", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (which, op) = (b.u8(), b.u8());
        let a = all();
        match which % 4 {
            0 => scheme(&a.p1, op, &mut b),
            1 => scheme(&a.p2, op, &mut b),
            2 => scheme(&a.eg, op, &mut b),
            _ => scheme(&a.rl, op, &mut b),
        }
    }
);
