//! How a party reaches its peer: listen or connect over TCP (mutual TLS unless the
//! front end was told otherwise), or a shared exchange directory with a private resume
//! seed. Front ends turn their own surface (CLI flags, Python keyword arguments) into a
//! [`LinkSpec`]; everything below is shared.

use std::path::{Path, PathBuf};
use std::time::Duration;

use privset_net::{
    Cancel, ConnectOptions, DirOptions, ExchangeDir, PlainTcpTransport, TlsFiles, Transport, tls,
};
use sha2::{Digest, Sha256};

use crate::fail::Failure;

/// Where the peer is.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// Listen on HOST:PORT and accept the peer's one connection.
    Listen(String),
    /// Connect to the peer at HOST:PORT, retrying until the timeout.
    Peer(String),
    /// Exchange messages as files in a shared directory (one per run).
    ExchangeDir {
        dir: PathBuf,
        /// Where this party keeps its resume seed; never inside the shared directory.
        state_dir: PathBuf,
        /// Pause between looks for the peer's next file.
        poll_interval: Duration,
    },
}

/// Everything needed to open a link.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub endpoint: Endpoint,
    /// Mutual TLS files for TCP links; `None` = plaintext (the front end must have had
    /// the user ask for it explicitly).
    pub tls: Option<TlsFiles>,
    /// How long to wait for the peer (connection, or any one message).
    pub timeout: Duration,
    /// Name to verify the server's certificate against (default: the peer's host).
    pub server_name: Option<String>,
    /// Stops the link from another thread.
    pub cancel: Cancel,
}

/// An open link to the peer.
pub struct Link {
    pub transport: Box<dyn Transport + Send>,
    /// The `transport` field of RESULT.json.
    pub kind: &'static str,
    /// Exchange directory runs: the file holding this party's seed, to delete on success.
    pub seed_file: Option<PathBuf>,
    pub seed: [u8; 32],
}

impl LinkSpec {
    /// Opens the link. `role`/`peer_role` name the message files in an exchange
    /// directory.
    pub fn open(&self, role: &str, peer_role: &str) -> Result<Link, Failure> {
        let (addr, listen) = match &self.endpoint {
            Endpoint::ExchangeDir {
                dir,
                state_dir,
                poll_interval,
            } => return self.open_dir(dir, state_dir, *poll_interval, role, peer_role),
            Endpoint::Listen(addr) => (addr, true),
            Endpoint::Peer(addr) => (addr, false),
        };
        let opts = ConnectOptions {
            connect_timeout: self.timeout,
            handshake_timeout: self.timeout,
            io_timeout: self.timeout,
            server_name: self.server_name.clone(),
            cancel: self.cancel.clone(),
        };
        let (transport, kind): (Box<dyn Transport + Send>, _) = match (&self.tls, listen) {
            (Some(files), true) => (Box::new(tls::accept(addr, files, &opts)?), "tcp+mtls"),
            (Some(files), false) => (Box::new(tls::connect(addr, files, &opts)?), "tcp+mtls"),
            (None, true) => (
                Box::new(PlainTcpTransport::accept(addr, &opts)?),
                "tcp-plaintext",
            ),
            (None, false) => (
                Box::new(PlainTcpTransport::connect(addr, &opts)?),
                "tcp-plaintext",
            ),
        };
        Ok(Link {
            transport,
            kind,
            seed_file: None,
            seed: fresh_seed(),
        })
    }

    fn open_dir(
        &self,
        dir: &Path,
        state_dir: &Path,
        poll_interval: Duration,
        role: &str,
        peer_role: &str,
    ) -> Result<Link, Failure> {
        let (seed, seed_file) = resume_seed(state_dir, dir, role)?;
        let opts = DirOptions {
            poll_interval,
            timeout: self.timeout,
            cancel: self.cancel.clone(),
        };
        let transport = ExchangeDir::open(dir, role, peer_role, opts)?;
        Ok(Link {
            transport: Box::new(transport),
            kind: "exchange-dir",
            seed_file: Some(seed_file),
            seed,
        })
    }
}

/// The default private state directory: `.privset-state` inside `near` (the folder of
/// the result file for the CLI, the working directory for Python).
pub fn default_state_dir(near: &Path) -> PathBuf {
    let base = if near.as_os_str().is_empty() {
        Path::new(".")
    } else {
        near
    };
    base.join(".privset-state")
}

pub(crate) fn fresh_seed() -> [u8; 32] {
    privset_crypto::rng::SessionRng::from_os().seed()
}

/// The seed of this party for this exchange directory: read back if a previous
/// (killed) run left one, else made fresh and stored (mode 0600) before any message
/// is written, so a restart replays the same run. Public for the fuzz target that feeds
/// it corrupt state files (fuzz/fuzz_targets/resume_state.rs).
pub fn resume_seed(
    state_dir: &Path,
    exchange_dir: &Path,
    role: &str,
) -> Result<([u8; 32], PathBuf), Failure> {
    refuse_shared_state_dir(state_dir, exchange_dir)?;
    let canonical = privset_net::dir::create_exchange_dir(exchange_dir)?;
    std::fs::create_dir_all(state_dir).map_err(|e| {
        Failure::other(format!(
            "cannot create state directory {}: {e}",
            state_dir.display()
        ))
    })?;
    let mut h = Sha256::new();
    h.update(canonical.as_os_str().as_encoded_bytes());
    h.update(role.as_bytes());
    let file = state_dir.join(format!("{}.seed", hex::encode(&h.finalize()[..16])));
    if let Ok(bytes) = std::fs::read(&file) {
        let seed: [u8; 32] = hex::decode(bytes.trim_ascii())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| Failure::other(format!("corrupt resume state {}", file.display())))?;
        return Ok((seed, file));
    }
    let seed = fresh_seed();
    write_private(&file, hex::encode(seed).as_bytes())?;
    Ok((seed, file))
}

/// Refuses a state directory inside the exchange directory: the other organisation
/// reads that directory, and the seed in the state directory would let it recompute
/// this party's secrets. Compares canonical paths (symlinks, `..`, relative paths
/// resolved) and runs before anything is created or written.
pub(crate) fn refuse_shared_state_dir(
    state_dir: &Path,
    exchange_dir: &Path,
) -> Result<(), Failure> {
    let resolve = |p: &Path| {
        canonical_lenient(p)
            .map_err(|e| Failure::other(format!("cannot resolve {}: {e}", p.display())))
    };
    let (state, exchange) = (resolve(state_dir)?, resolve(exchange_dir)?);
    if state.starts_with(&exchange) {
        return Err(Failure::config(format!(
            "the state directory {} is inside the exchange directory {}, which the other \
             party reads: it would see this party's secret resume seed. Put the state \
             directory elsewhere (--state-dir, or an --output outside the exchange directory)",
            state_dir.display(),
            exchange.display()
        )));
    }
    Ok(())
}

/// The canonical form of `path`, which need not exist yet: resolved one component at
/// a time, following symlinks while the path exists and applying `..` lexically after.
fn canonical_lenient(path: &Path) -> std::io::Result<PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(path)?;
    let mut out = PathBuf::new();
    let mut exists = true;
    for part in absolute.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match out.canonicalize() {
                        Ok(c) => out = c,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Writes `bytes` to `path` atomically, readable by the owner only (mode 0600). The
/// temporary file is new (`create_new`: an existing file or symlink of that name is
/// never reused, so its permissions cannot leak into the result).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    write_private_with(path, |f| Ok(f.write_all(bytes)?))
}

/// [`write_private`] for content written as a stream by `write`.
pub fn write_private_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<(), Failure>,
) -> Result<(), Failure> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut nonce = [0u8; 8];
    privset_crypto::rng::SessionRng::from_os().fill(&mut nonce);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}.tmp", hex::encode(nonce)));
    let tmp = PathBuf::from(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Failure::other(format!("cannot write {}: {e}", tmp.display())))?;
    if let Err(e) = write(&mut f).and_then(|()| Ok(f.sync_all()?)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("privset-run-link-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_state_directory_inside_the_exchange_directory_is_refused_before_writing() {
        let d = scratch("shared-state");
        let x = d.join("exchange");
        // Directly inside, and through a path that only resolves inside.
        for state in [x.join(".privset-state"), d.join("elsewhere/../exchange/s")] {
            let err = resume_seed(&state, &x, "p1").unwrap_err();
            assert_eq!(
                err.kind,
                crate::fail::FailureKind::Config,
                "{}",
                err.message
            );
            assert!(
                err.message.contains("inside the exchange directory"),
                "{}",
                err.message
            );
            assert!(!x.exists(), "nothing is created before the refusal");
        }
        // Beside it is fine, and the seed is readable by its owner only.
        let (_, seed_file) = resume_seed(&d.join("state"), &x, "p1").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&seed_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
