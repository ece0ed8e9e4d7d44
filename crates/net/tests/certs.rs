//! Throwaway certificate generation.

mod common;

use privset_net::certs;

#[test]
fn writes_ca_and_party_files_with_private_keys_0600() {
    let dir = common::temp_dir("certs");
    let written = certs::generate(&dir, &["alice".to_string(), "bob".to_string()]).unwrap();
    let names: Vec<_> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "ca.pem",
            "ca.key",
            "alice.pem",
            "alice.key",
            "bob.pem",
            "bob.key"
        ]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for p in written.iter().filter(|p| p.extension().unwrap() == "key") {
            assert_eq!(
                std::fs::metadata(p).unwrap().permissions().mode() & 0o777,
                0o600,
                "{}",
                p.display()
            );
        }
    }
    // Regenerating over existing files works and keeps the mode.
    certs::generate(&dir, &["alice".to_string()]).unwrap();
    assert!(certs::generate(&dir, &["../x".to_string()]).is_err());
    assert!(certs::generate(&dir, &["ca".to_string()]).is_err());
}
