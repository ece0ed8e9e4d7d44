use super::*;

#[test]
fn placeholder_roundtrip() {
    let n = 5000;
    let p = OkvsParams::for_items(n).unwrap();
    let keys: Vec<u128> = (0..n as u128).collect();
    let values: Vec<u128> = keys.iter().map(|k| k * 7 + 1).collect();
    let mut c = 0u128;
    let store = encode(&p, &[9; 16], &keys, &values, || {
        c += 1;
        c
    })
    .unwrap();
    let mut out = vec![0; n];
    decode(&p, &[9; 16], &store, &keys, &mut out).unwrap();
    assert_eq!(out, values);
}
