//! Threshold encryption (de Jong): ElGamal and Paillier joint public keys, ciphertexts
//! and decryption shares (decoded, then verified and combined with honest shares), and
//! the ElGamal key generation's commitments and shares.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::ThresholdAhe;
use privset_crypto::tahe::elgamal::{
    self, DkgCommitments, DkgParams, DkgShare, ThresholdElGamal, dkg_deal, dkg_verify_share,
};
use privset_crypto::tahe::paillier::{self, Dealer, ThresholdPaillier};
use privset_fuzz::{Bytes, write_seeds_if_asked};

struct Keys<T: ThresholdAhe> {
    pk: T::PublicKey,
    shares: Vec<T::KeyShare>,
    ct: T::Ciphertext,
}

struct All {
    eg: Keys<ThresholdElGamal>,
    pa: Keys<ThresholdPaillier>,
    dkg: elgamal::DkgDealing,
}

const PARAMS: DkgParams = DkgParams {
    parties: 3,
    threshold: 2,
};

fn keys<T: ThresholdAhe>(pk: T::PublicKey, shares: Vec<T::KeyShare>) -> Keys<T> {
    let m = T::scalar_from_u64(&pk, 42);
    let ct = T::encrypt(&pk, &m, &mut SessionRng::from_seed([6u8; 32]));
    Keys { pk, shares, ct }
}

static ALL: OnceLock<All> = OnceLock::new();

fn all() -> &'static All {
    ALL.get_or_init(|| {
        let mut rng = SessionRng::from_seed([7u8; 32]);
        let shares = elgamal::dkg_local(&PARAMS, &mut rng).expect("dkg");
        let pk = ThresholdElGamal::share_public_key(&shares[0]).clone();
        let eg = keys::<ThresholdElGamal>(pk, shares);
        let (p, q) = paillier::insecure_test_primes(1024).expect("test primes");
        let dealer = Dealer::new(paillier::Params {
            modulus_bits: 1024,
            s: 1,
            parties: 3,
            threshold: 2,
        })
        .expect("params");
        let (pk, shares) = dealer.deal_with_primes(&p, &q, &mut rng).expect("deal");
        let pa = keys::<ThresholdPaillier>(pk, shares);
        let dkg = dkg_deal(&PARAMS, 1, &mut rng).expect("deal");
        All { eg, pa, dkg }
    })
}

fn scheme<T: ThresholdAhe>(k: &Keys<T>, op: u8, data: &[u8]) {
    let mut rng = SessionRng::from_seed([8u8; 32]);
    match op % 4 {
        0 => {
            if let Ok(pk) = T::decode_public_key(data, 16) {
                let m = T::scalar_from_u64(&pk, 1);
                let _ = T::encrypt(&pk, &m, &mut rng);
            }
        }
        1 => {
            if let Ok(c) = T::decode_ciphertext(&k.pk, data) {
                let shares: Vec<_> = k.shares[..2]
                    .iter()
                    .map(|s| T::decryption_share(s, &c, &mut rng))
                    .collect();
                let _ = T::combine(&k.pk, &c, &shares, 1000);
            }
        }
        _ => {
            if let Ok(share) = T::decode_share(&k.pk, data) {
                let _ = T::share_party(&share);
                let _ = T::verify_share(&k.pk, &k.ct, &share);
                let honest = T::decryption_share(&k.shares[1], &k.ct, &mut rng);
                let both = [share, honest];
                let _ = T::combine(&k.pk, &k.ct, &both, 1000);
                let _ = T::is_zero(&k.pk, &k.ct, &both);
            }
        }
    }
}

fn dkg(op: u8, b: &mut Bytes<'_>) {
    let dealer = u32::from(b.u8() % 5);
    let me = u32::from(b.u8() % 5);
    let data = std::mem::replace(b, Bytes(&[])).rest();
    let a = all();
    if op.is_multiple_of(2) {
        if let Ok(c) = DkgCommitments::decode(data, &PARAMS, dealer) {
            let _ = dkg_verify_share(&PARAMS, &c, &a.dkg.shares[0]);
        }
    } else if let Ok(s) = DkgShare::decode(data, &PARAMS, dealer, me) {
        let _ = dkg_verify_share(&PARAMS, &a.dkg.commitments, &s);
    }
}

fn seeds() -> Vec<Vec<u8>> {
    fn of<T: ThresholdAhe>(k: &Keys<T>, which: u8) -> Vec<Vec<u8>> {
        let mut rng = SessionRng::from_seed([10u8; 32]);
        let share = T::decryption_share(&k.shares[0], &k.ct, &mut rng);
        let with = |op: u8, body: Vec<u8>| [vec![which, op], body].concat();
        vec![
            with(0, T::encode_public_key(&k.pk)),
            with(1, T::encode_ciphertext(&k.pk, &k.ct)),
            with(2, T::encode_share(&k.pk, &share)),
        ]
    }
    let a = all();
    let mut s = [of(&a.eg, 0), of(&a.pa, 1)].concat();
    s.push([vec![2, 0, 1, 1], a.dkg.commitments.encode()].concat());
    s.push([vec![2, 1, 1, 1], a.dkg.shares[0].encode()].concat());
    s
}

fuzz_target!(
    init: {
        write_seeds_if_asked("tahe", seeds);
    },
    |data: &[u8]| {
        let mut b = Bytes(data);
        let (which, op) = (b.u8(), b.u8());
        let a = all();
        match which % 3 {
            0 => scheme(&a.eg, op, b.rest()),
            1 => scheme(&a.pa, op, b.rest()),
            _ => dkg(op, &mut b),
        }
    }
);
