//! `privset --version` names the code paths this CPU gets, and `PRIVSET_PORTABLE=1`
//! moves privset's own X25519 code to its portable path.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_privset");

fn version(portable: bool) -> String {
    let mut cmd = Command::new(BIN);
    cmd.arg("--version").env_remove("PRIVSET_PORTABLE");
    if portable {
        cmd.env("PRIVSET_PORTABLE", "1");
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn version_lists_the_code_paths_and_the_portable_switch_works() {
    let fast = version(false);
    assert!(
        fast.starts_with(&format!("privset {}\n", env!("CARGO_PKG_VERSION"))),
        "{fast}"
    );
    for line in [
        "x25519 cwPRF",
        "curve25519-dalek",
        "blst",
        "Z_t",
        "BFV plaintext NTT",
        "Paillier / Damgard-Jurik",
        "ElGamal bulk encryptions",
        "GMP",
    ] {
        assert!(fast.contains(line), "{line} missing: {fast}");
    }
    let portable = version(true);
    assert!(
        portable.contains("x25519 cwPRF and its SHA-512: portable"),
        "{portable}"
    );
    assert!(!portable.contains("AVX-512 IFMA, 8 lanes"), "{portable}");
    assert!(
        portable.contains("Paillier / Damgard-Jurik products and powers: GMP"),
        "{portable}"
    );
    assert!(
        portable.contains(
            "ElGamal bulk encryptions (ristretto255 fixed-base products): curve25519-dalek tables"
        ),
        "{portable}"
    );
    assert!(
        portable.contains("polynomials over Z_t (unbalanced PSI database): portable"),
        "{portable}"
    );
}
