//! Group elements of every group and cwPRF: ristretto255, P-256 compressed and
//! uncompressed (single decode with a canonical round trip, and the packed batch
//! decoders), and x25519 (the packed batch decoders).
#![no_main]

use libfuzzer_sys::fuzz_target;
use privset_crypto::cwprf::CwPrf;
use privset_crypto::cwprf::x25519::X25519;
use privset_crypto::group::PrimeGroup;
use privset_crypto::group::p256::{P256, P256Uncompressed};
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::rng::SessionRng;
use privset_fuzz::write_seeds_if_asked;

fn group<G: PrimeGroup>(data: &[u8]) {
    if let Ok(e) = G::decode(data) {
        let mut out = vec![0u8; G::ELEMENT_LEN];
        G::encode(&e, &mut out);
        assert_eq!(out, data, "decode accepted a non-canonical encoding");
    }
    let k = G::random_scalar(&mut SessionRng::from_seed([1u8; 32]));
    let _ = G::decode_mul_encode_batch(data, &k);
    let _ = G::element_count(data);
}

fn cwprf<C: CwPrf>(data: &[u8]) {
    let _ = C::validate_batch(data);
    let k = C::random_key(&mut SessionRng::from_seed([2u8; 32]));
    let _ = C::eval_batch(data, &k);
}

fn seeds() -> Vec<Vec<u8>> {
    fn of<C: CwPrf>(tag: u8) -> Vec<u8> {
        let k = C::random_key(&mut SessionRng::from_seed([3u8; 32]));
        let mut s = vec![tag];
        s.extend(C::hash_eval_batch(
            b"privset-fuzz-seed",
            &[b"a".as_slice(), b"b", b"c"],
            &k,
        ));
        s
    }
    vec![
        of::<Ristretto255>(0),
        of::<P256>(1),
        of::<P256Uncompressed>(2),
        of::<X25519>(3),
        of::<Ristretto255>(4),
        of::<P256>(5),
        of::<P256Uncompressed>(6),
        of::<Ristretto255>(0)[..33].to_vec(),
        of::<P256>(1)[..34].to_vec(),
        of::<P256Uncompressed>(2)[..66].to_vec(),
    ]
}

fuzz_target!(
    init: {
        write_seeds_if_asked("groups", seeds);
    },
    |data: &[u8]| {
        let Some((&which, rest)) = data.split_first() else { return };
        match which % 8 {
            0 => group::<Ristretto255>(rest),
            1 => group::<P256>(rest),
            2 => group::<P256Uncompressed>(rest),
            3 => cwprf::<X25519>(rest),
            4 => cwprf::<Ristretto255>(rest),
            5 => cwprf::<P256>(rest),
            6 => cwprf::<P256Uncompressed>(rest),
            _ => {}
        }
    }
);
