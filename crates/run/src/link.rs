//! How a party reaches its peer, from the command-line flags shared by every protocol
//! command: `--listen`, `--peer` or `--exchange-dir`, with mutual TLS unless
//! `--insecure-no-tls`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use privset_net::{
    ConnectOptions, DirOptions, ExchangeDir, PlainTcpTransport, TlsFiles, Transport, tls,
};
use sha2::{Digest, Sha256};

use crate::fail::Failure;

#[derive(Args, Debug, Clone, Default)]
pub struct ConnectArgs {
    /// Listen on HOST:PORT and accept the peer's connection.
    #[arg(long, value_name = "HOST:PORT", group = "link")]
    pub listen: Option<String>,
    /// Connect to the peer at HOST:PORT (retried until --timeout).
    #[arg(long, value_name = "HOST:PORT", group = "link")]
    pub peer: Option<String>,
    /// Exchange messages as files in DIR (shared storage, one directory per run).
    #[arg(long, value_name = "DIR", group = "link")]
    pub exchange_dir: Option<PathBuf>,
    /// CA certificate (PEM) both parties trust.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// This party's certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// This party's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Name to verify the server's certificate against (default: the --peer host).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Send everything in plaintext over TCP. Anyone on the path sees the protocol
    /// messages and can impersonate either party: use only on a trusted link.
    #[arg(long)]
    pub insecure_no_tls: bool,
    /// Seconds to wait for the peer (connection, or any one message).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
    /// Exchange directory: milliseconds between looks for the peer's next file.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub poll_interval_ms: u64,
    /// Exchange directory: where this party keeps its private resume state (its
    /// random seed). Never inside the shared directory. Default: a `.privset-state`
    /// folder next to --output.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// An open link to the peer.
pub struct Link {
    pub transport: Box<dyn Transport + Send>,
    pub kind: &'static str,
    /// Exchange directory runs: the file holding this party's seed, to delete on success.
    pub seed_file: Option<PathBuf>,
    pub seed: [u8; 32],
}

impl ConnectArgs {
    fn options(&self) -> ConnectOptions {
        ConnectOptions {
            connect_timeout: Duration::from_secs(self.timeout),
            io_timeout: Duration::from_secs(self.timeout),
            server_name: self.tls_server_name.clone(),
            ..ConnectOptions::default()
        }
    }

    fn tls_files(&self) -> Result<Option<TlsFiles>, Failure> {
        match (
            &self.tls_ca,
            &self.tls_cert,
            &self.tls_key,
            self.insecure_no_tls,
        ) {
            (Some(ca), Some(cert), Some(key), false) => Ok(Some(TlsFiles {
                ca: ca.clone(),
                cert: cert.clone(),
                key: key.clone(),
            })),
            (None, None, None, true) => Ok(None),
            (_, _, _, true) => Err(Failure::input(
                "--insecure-no-tls cannot be combined with --tls-* files",
            )),
            _ => Err(Failure::input(
                "TCP links use mutual TLS: pass --tls-ca, --tls-cert and --tls-key (make throwaway ones with \
                 `privset certs --out DIR --names p1,p2`), or --insecure-no-tls on a trusted link",
            )),
        }
    }

    /// Opens the link. `role`/`peer_role` name the message files in an exchange
    /// directory; `output` locates the default private state directory.
    pub fn open(&self, role: &str, peer_role: &str, output: &Path) -> Result<Link, Failure> {
        if let Some(dir) = &self.exchange_dir {
            let state_dir = self.state_dir.clone().unwrap_or_else(|| {
                output
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .join(".privset-state")
            });
            let (seed, seed_file) = resume_seed(&state_dir, dir, role)?;
            let opts = DirOptions {
                poll_interval: Duration::from_millis(self.poll_interval_ms),
                timeout: Duration::from_secs(self.timeout),
            };
            let transport = ExchangeDir::open(dir, role, peer_role, opts)?;
            return Ok(Link {
                transport: Box::new(transport),
                kind: "exchange-dir",
                seed_file: Some(seed_file),
                seed,
            });
        }
        let seed = fresh_seed();
        let opts = self.options();
        let tls = self.tls_files()?;
        let (transport, kind): (Box<dyn Transport + Send>, _) =
            match (&self.listen, &self.peer, tls) {
                (Some(addr), None, Some(files)) => {
                    (Box::new(tls::accept(addr, &files, &opts)?), "tcp+mtls")
                }
                (None, Some(addr), Some(files)) => {
                    (Box::new(tls::connect(addr, &files, &opts)?), "tcp+mtls")
                }
                (Some(addr), None, None) => (
                    Box::new(PlainTcpTransport::accept(addr, &opts)?),
                    "tcp-plaintext",
                ),
                (None, Some(addr), None) => (
                    Box::new(PlainTcpTransport::connect(addr, &opts)?),
                    "tcp-plaintext",
                ),
                _ => {
                    return Err(Failure::input(
                        "give exactly one of --listen, --peer or --exchange-dir",
                    ));
                }
            };
        Ok(Link {
            transport,
            kind,
            seed_file: None,
            seed,
        })
    }
}

impl From<privset_net::TransportError> for Failure {
    fn from(e: privset_net::TransportError) -> Self {
        Failure {
            code: 4,
            message: e.to_string(),
        }
    }
}

fn fresh_seed() -> [u8; 32] {
    privset_crypto::rng::SessionRng::from_os().seed()
}

/// The seed of this party for this exchange directory: read back if a previous
/// (killed) run left one, else made fresh and stored (mode 0600) before any message
/// is written, so a restart replays the same run.
fn resume_seed(
    state_dir: &Path,
    exchange_dir: &Path,
    role: &str,
) -> Result<([u8; 32], PathBuf), Failure> {
    std::fs::create_dir_all(state_dir).map_err(|e| {
        Failure::other(format!(
            "cannot create state directory {}: {e}",
            state_dir.display()
        ))
    })?;
    let canonical = std::fs::create_dir_all(exchange_dir)
        .and_then(|_| exchange_dir.canonicalize())
        .map_err(|e| {
            Failure::other(format!(
                "cannot open exchange directory {}: {e}",
                exchange_dir.display()
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

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Failure::other(format!("cannot write {}: {e}", tmp.display())))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
