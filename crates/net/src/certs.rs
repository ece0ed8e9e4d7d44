//! Throwaway certificates for trying privset out or for tests: one CA and, per party, a
//! certificate usable both to listen and to connect. Real deployments should use
//! certificates from their own PKI; these are only as safe as the directory holding them.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, date_time_ymd,
};

use crate::error::TransportError;

/// Writes `ca.pem`, `ca.key` and, for each name, `<name>.pem` + `<name>.key` into `out`
/// (created if needed) and returns the paths written, CA first.
///
/// Each party certificate is valid for the name itself, `localhost`, `127.0.0.1` and
/// `::1`, with both the serverAuth and clientAuth purposes, so any party may listen or
/// connect. Certificates are valid from the start of last year to the start of the year
/// after next. Key files are written with mode 0600.
pub fn generate(out: &Path, names: &[String]) -> Result<Vec<PathBuf>, TransportError> {
    for (i, name) in names.iter().enumerate() {
        if name.is_empty()
            || name == "ca"
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(TransportError::Config(format!(
                "certificate name {name:?} must be non-empty, not \"ca\", and use only letters, digits, '-', '_', '.'"
            )));
        }
        if names[..i].contains(name) {
            return Err(TransportError::Config(format!(
                "certificate name {name:?} is given twice"
            )));
        }
    }
    fs::create_dir_all(out)
        .map_err(|e| TransportError::io(format!("creating {}", out.display()), e))?;
    let rc =
        |what: &str, e: rcgen::Error| TransportError::Config(format!("generating {what}: {e}"));
    let year = current_year();

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| rc("CA", e))?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "privset throwaway CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut ca_params, year);
    let ca_key = KeyPair::generate().map_err(|e| rc("CA key", e))?;
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(|e| rc("CA certificate", e))?;

    let mut written = Vec::new();
    written.push(write_file(
        &out.join("ca.pem"),
        ca_cert.pem().as_bytes(),
        false,
    )?);
    written.push(write_file(
        &out.join("ca.key"),
        ca_key.serialize_pem().as_bytes(),
        true,
    )?);
    let issuer = Issuer::new(ca_params, ca_key);

    for name in names {
        let sans = vec![
            name.clone(),
            "localhost".into(),
            "127.0.0.1".into(),
            "::1".into(),
        ];
        let mut params = CertificateParams::new(sans)
            .map_err(|e| rc(&format!("certificate for {name:?}"), e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, name.as_str());
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, year);
        let key = KeyPair::generate().map_err(|e| rc(&format!("key for {name:?}"), e))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| rc(&format!("certificate for {name:?}"), e))?;
        written.push(write_file(
            &out.join(format!("{name}.pem")),
            cert.pem().as_bytes(),
            false,
        )?);
        written.push(write_file(
            &out.join(format!("{name}.key")),
            key.serialize_pem().as_bytes(),
            true,
        )?);
    }
    Ok(written)
}

fn current_year() -> i32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Average Gregorian year; off by at most a day around New Year, which the one-year
    // margin on each side absorbs.
    1970 + (secs / 31_556_952) as i32
}

fn set_validity(params: &mut CertificateParams, year: i32) {
    params.not_before = date_time_ymd(year - 1, 1, 1);
    params.not_after = date_time_ymd(year + 2, 1, 1);
}

/// Writes a file, replacing any old one; secret files are created with mode 0600 so the
/// key is never readable by others, not even briefly.
fn write_file(path: &Path, contents: &[u8], secret: bool) -> Result<PathBuf, TransportError> {
    let err = |e| TransportError::io(format!("writing {}", path.display()), e);
    if secret {
        // Remove first: an existing file would keep its old (possibly wider) mode.
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
    }
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).create_new(true);
    }
    let mut f = opts.open(path).map_err(err)?;
    f.write_all(contents)
        .and_then(|()| f.sync_all())
        .map_err(err)?;
    Ok(path.to_path_buf())
}
