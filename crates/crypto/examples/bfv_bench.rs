//! Costs of the BFV operations unbalanced PSI's server pays per plaintext: encoding a
//! stored coefficient vector into NTT form, and a plaintext dot product.
use std::time::Instant;

use fhe_traits::{FheEncoder, FheEncrypter};
use privset_crypto::bfv::{Ciphertext, Encoding, HeParams, Plaintext, SecretKey};
use privset_crypto::rng::SessionRng;

fn main() {
    let params = HeParams {
        degree: 8192,
        plain_modulus: 65537,
        moduli_bits: vec![56, 56, 56, 50],
    };
    let par = params.build().unwrap();
    let mut rng = SessionRng::from_seed([3; 32]);
    let v: Vec<u64> = (0..8192u64).map(|i| (i * 7919) % 65537).collect();
    let reps = 2000;
    let t = Instant::now();
    let mut pts = Vec::new();
    for _ in 0..reps {
        pts.push(Plaintext::try_encode(&v, Encoding::poly(), &par).unwrap());
        if pts.len() > 44 {
            pts.pop();
        }
    }
    println!(
        "encode poly: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    );
    let t = Instant::now();
    for _ in 0..reps {
        #[allow(unsafe_code)]
        let p = unsafe {
            <fhe::bfv::PlaintextVec as fhe_traits::FheEncoderVariableTime<&[u64]>>::try_encode_vt(
                &v,
                Encoding::poly(),
                &par,
            )
        }
        .unwrap();
        std::hint::black_box(p);
    }
    println!(
        "encode poly vt: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    );
    parts(&par, &v);
    let sk = SecretKey::random(&par, &mut rng);
    let cts: Vec<Ciphertext> = (0..44)
        .map(|_| sk.try_encrypt(&pts[0], &mut rng).unwrap())
        .collect();
    let t = Instant::now();
    for _ in 0..(reps / 44) {
        let _ = fhe::bfv::dot_product_scalar(cts.iter(), pts.iter()).unwrap();
    }
    println!(
        "dot product per term: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / ((reps / 44) * 44) as f64
    );
}

#[allow(dead_code)]
fn parts(par: &std::sync::Arc<fhe::bfv::BfvParameters>, v: &[u64]) {
    use fhe_math::rq::{Poly, Representation, traits::TryConvertFrom};
    let ctx = par.context_at_level(0).unwrap();
    let reps = 2000;
    let t = Instant::now();
    let mut polys = Vec::new();
    for _ in 0..reps {
        let p = Poly::try_convert_from(v, ctx, true, Representation::PowerBasis).unwrap();
        polys.push(p);
        if polys.len() > 4 {
            polys.pop();
        }
    }
    println!(
        "convert: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    );
    let t = Instant::now();
    for _ in 0..reps {
        let mut p = polys[0].clone();
        p.change_representation(Representation::Ntt);
        std::hint::black_box(p);
    }
    println!(
        "clone+ntt: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    );
    let t = Instant::now();
    for _ in 0..reps {
        let p = polys[0].clone();
        std::hint::black_box(p);
    }
    println!(
        "clone: {:.1} us",
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    );
}
