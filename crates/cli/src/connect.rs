//! How a party reaches its peer, from the command-line flags shared by every protocol
//! command: `--listen`, `--peer` or `--exchange-dir`, with mutual TLS unless
//! `--insecure-no-tls`; and, for the long-running APSI listeners, the bound listener
//! that `privset_run::endpoint` serves sessions on.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use privset_net::{Cancel, TlsFiles, Transport};
use privset_run::link::{self, Endpoint, LinkSpec};
use privset_run::{Failure, Link};

/// How to secure and time out a TCP link: shared by every command that talks to
/// another party (two-party protocols, the judge, the APSI server and client).
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// CA certificate (PEM) both parties trust. Over an exchange directory the three
    /// --tls files are optional: given, each party signs its link key with its
    /// certificate and refuses a peer's that the CA does not vouch for.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// This party's certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// This party's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Name to verify the server's certificate against (default: the peer's host).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// The name the peer's certificate must hold (as `privset certs` names it),
    /// checked whether this party listens or connects: with a CA that vouches for
    /// several organisations, only this one is accepted as the peer.
    #[arg(long, value_name = "NAME")]
    pub tls_peer_name: Option<String>,
    /// Send everything in plaintext over TCP. Anyone on the path sees the protocol
    /// messages and can impersonate either party: use only on a trusted link.
    #[arg(long)]
    pub insecure_no_tls: bool,
    /// Seconds to wait for the peer (connection, or any one message).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
}

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
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Exchange directory: milliseconds between looks for the peer's next file.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub poll_interval_ms: u64,
    /// Exchange directory: where this party keeps its private resume state (its
    /// random seed). Never inside the shared directory. Default: a `.privset-state`
    /// folder next to --output.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl TlsArgs {
    /// The mutual TLS files, or `None` for an explicit `--insecure-no-tls`.
    pub fn tls_files(&self) -> Result<Option<TlsFiles>, Failure> {
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
            (_, _, _, true) => Err(Failure::config(
                "--insecure-no-tls cannot be combined with --tls-* files",
            )),
            _ => Err(Failure::config(
                "TCP links use mutual TLS: pass --tls-ca, --tls-cert and --tls-key (make throwaway ones with \
                 `privset certs --out DIR --names p1,p2`), or --insecure-no-tls on a trusted link",
            )),
        }
    }

    /// True when any of --tls-ca, --tls-cert, --tls-key is given.
    fn gives_files(&self) -> bool {
        self.tls_ca.is_some() || self.tls_cert.is_some() || self.tls_key.is_some()
    }

    /// Connects to `addr` (retrying until --timeout); returns the link and its kind.
    pub fn connect(
        &self,
        addr: &str,
    ) -> Result<(Box<dyn Transport + Send>, &'static str), Failure> {
        let spec = LinkSpec {
            endpoint: Endpoint::Peer(addr.to_string()),
            tls: self.tls_files()?,
            timeout: Duration::from_secs(self.timeout),
            server_name: self.tls_server_name.clone(),
            peer_name: self.tls_peer_name.clone(),
            cancel: Cancel::default(),
        };
        let link = spec.open("client", "server")?;
        Ok((link.transport, link.kind))
    }

    /// Binds `listen` once, for a listener that serves many sessions.
    pub fn bind(&self, listen: &str) -> Result<TcpListener, Failure> {
        self.tls_files()?; // refuse bad TLS flags before listening
        TcpListener::bind(listen)
            .map_err(|e| Failure::other(format!("cannot listen on {listen}: {e}")))
    }
}

impl ConnectArgs {
    /// Opens the link. `role`/`peer_role` name the message files in an exchange
    /// directory; `output` locates the default private state directory.
    pub fn open(&self, role: &str, peer_role: &str, output: &Path) -> Result<Link, Failure> {
        let link = self.spec(output)?.open(role, peer_role)?;
        if let Some(notice) = &link.notice {
            eprintln!("note: {notice}");
        }
        Ok(link)
    }

    /// The private state directory: `--state-dir`, or one beside `output`.
    pub fn state_dir_for(&self, output: &Path) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| link::default_state_dir(output.parent().unwrap_or(Path::new(""))))
    }

    /// The link these flags describe. `output` locates the default private state
    /// directory of an exchange-directory run.
    pub fn spec(&self, output: &Path) -> Result<LinkSpec, Failure> {
        let endpoint = match (&self.listen, &self.peer, &self.exchange_dir) {
            (Some(addr), None, None) => Endpoint::Listen(addr.clone()),
            (None, Some(addr), None) => Endpoint::Peer(addr.clone()),
            (None, None, Some(dir)) => Endpoint::ExchangeDir {
                dir: dir.clone(),
                state_dir: self.state_dir_for(output),
                poll_interval: Duration::from_millis(self.poll_interval_ms),
            },
            _ => {
                return Err(Failure::config(
                    "give exactly one of --listen, --peer or --exchange-dir",
                ));
            }
        };
        // Over an exchange directory, certificates are optional: given, they sign this
        // party's link key and check the peer's.
        let tls = match &self.exchange_dir {
            Some(_) if !self.tls.gives_files() => None,
            _ => self.tls.tls_files()?,
        };
        Ok(LinkSpec {
            endpoint,
            tls,
            timeout: Duration::from_secs(self.tls.timeout),
            server_name: self.tls.tls_server_name.clone(),
            peer_name: self.tls.tls_peer_name.clone(),
            cancel: Cancel::default(),
        })
    }
}
