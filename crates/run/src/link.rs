//! How a party reaches its peer: listen or connect over TCP (mutual TLS unless the
//! front end was told otherwise), or a shared exchange directory with a private resume
//! seed. Front ends turn their own surface (CLI flags, Python keyword arguments) into a
//! [`LinkSpec`]; everything below is shared.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use privset_net::dir::DirPlace;
use privset_net::sealed_dir::{LinkKeyPair, LinkSigner, PeerKeyCheck, published_key};
use privset_net::tls::CaVerifier;
use privset_net::{
    Cancel, ConnectOptions, DirOptions, PlainTcpTransport, TlsFiles, Transport, tls,
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
    /// the user ask for it explicitly). Over an exchange directory, optional: they sign
    /// this party's link key and check its peer's.
    pub tls: Option<TlsFiles>,
    /// How long to wait for the peer (connection, or any one message).
    pub timeout: Duration,
    /// Name to verify the server's certificate against (default: the peer's host).
    pub server_name: Option<String>,
    /// The name the peer's certificate must hold, checked whether this party listens
    /// or connects: with a CA that vouches for several organisations, the one peer
    /// this run expects (`None`: anyone the CA vouches for).
    pub peer_name: Option<String>,
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
    /// What a front end should tell the user about how the seed was chosen (a stale
    /// one replaced by fresh randomness).
    pub notice: Option<String>,
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
            (Some(files), listen) => {
                let t = match listen {
                    true => tls::accept(addr, files, &opts)?,
                    false => tls::connect(addr, files, &opts)?,
                };
                self.check_peer_name(&t)?;
                (Box::new(t), "tcp+mtls")
            }
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
            notice: None,
        })
    }

    /// Refuses a TLS peer whose certificate does not hold [`LinkSpec::peer_name`] (every
    /// TLS link of a run: its own, and a distributed job's task links).
    pub(crate) fn check_peer_name(&self, t: &privset_net::TlsTransport) -> Result<(), Failure> {
        let Some(expected) = &self.peer_name else {
            return Ok(());
        };
        let presented = t.peer_certificate().unwrap_or_default();
        let holds = tls::certificate_names(presented)
            .is_some_and(|names| names.iter().any(|n| n.eq_ignore_ascii_case(expected)));
        if holds {
            return Ok(());
        }
        Err(privset_net::TransportError::Tls(format!(
            "the peer at {} presents {}, not a certificate of {expected:?} (--tls-peer-name): \
             the CA vouches for it, but it is not the peer this run expects",
            t.peer(),
            tls::describe_certificate(presented)
        ))
        .into())
    }

    fn open_dir(
        &self,
        dir: &Path,
        state_dir: &Path,
        poll_interval: Duration,
        role: &str,
        peer_role: &str,
    ) -> Result<Link, Failure> {
        let opts = DirOptions {
            poll_interval,
            timeout: self.timeout,
            cancel: self.cancel.clone(),
        };
        // With certificates, each party signs its link key and checks its peer's: a
        // storage that rewrites key files cannot sit in the middle.
        let (signer, check) = match &self.tls {
            Some(files) => (
                Some(LinkSigner::publishing_certificate(files)?),
                PeerKeyCheck::Vouched {
                    ca: Arc::new(CaVerifier::new(&files.ca)?),
                    name: self.peer_name.clone(),
                },
            ),
            None if self.peer_name.is_some() => {
                return Err(Failure::config(
                    "a peer name over an exchange directory is checked against the certificate \
                     that signs the peer's link key: give this party's certificates too \
                     (--tls-ca, --tls-cert, --tls-key)",
                ));
            }
            None => (None, PeerKeyCheck::Unchecked),
        };
        let run = join_exchange_dir(state_dir, dir, role, opts)?;
        let keys = run.place.publish_key(&run.seed, signer.as_ref())?;
        Ok(Link {
            transport: Box::new(run.place.seal_pair(keys, peer_role, check)),
            kind: "exchange-dir",
            notice: run.origin.notice(dir),
            seed_file: Some(run.seed_file),
            seed: run.seed,
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

/// How a party's seed for an exchange-directory run was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedOrigin {
    /// A new run: nothing of this role in the directory, no seed stored.
    New,
    /// The same run, restarted: the stored seed's link key is the one the directory
    /// holds, so the party replays its messages.
    Resumed,
    /// A stored seed whose run left nothing in the directory (the directory was emptied
    /// or recreated after a failure): never used again; the run draws fresh randomness.
    Replaced,
}

impl SeedOrigin {
    /// What to tell the user, if anything.
    pub fn notice(self, dir: &Path) -> Option<String> {
        (self == SeedOrigin::Replaced).then(|| {
            format!(
                "the resume state of an earlier run at {} was discarded (that run left no \
                 message there); this run draws fresh randomness",
                dir.display()
            )
        })
    }
}

/// A party's place in an exchange directory and the seed of its run there.
pub struct DirRun {
    /// The directory and this role's lock in it.
    pub place: DirPlace,
    pub seed: [u8; 32],
    /// Where the seed is kept (mode 0600), to delete once the run has succeeded.
    pub seed_file: PathBuf,
    pub origin: SeedOrigin,
}

/// Joins exchange directory `exchange_dir` as `role` (taking the role's lock) and
/// chooses the seed of this party's run there. A stored seed (in `state_dir`, named
/// after the directory's canonical path and the role) is resumed only when the run it
/// belongs to is provably this one: the link key the directory holds for this role is
/// the seed's. A stored seed whose run left nothing in the directory is replaced by a
/// fresh one (all of a party's randomness comes from its seed, so reusing it in a new
/// run would repeat salts, keys and masks); one whose role holds another key is deleted
/// and the run refused. Public for the fuzz target that feeds it corrupt state files
/// (fuzz/fuzz_targets/resume_state.rs).
pub fn join_exchange_dir(
    state_dir: &Path,
    exchange_dir: &Path,
    role: &str,
    opts: DirOptions,
) -> Result<DirRun, Failure> {
    refuse_shared_state_dir(state_dir, exchange_dir)?;
    let place = DirPlace::take(exchange_dir, role, opts)?;
    let canonical = exchange_dir
        .canonicalize()
        .map_err(|e| Failure::other(format!("cannot resolve {}: {e}", exchange_dir.display())))?;
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
    let stored = std::fs::read(&file).ok();
    let origin = match (published_key(place.path(), role)?, stored) {
        (None, None) => SeedOrigin::New,
        (None, Some(_)) => SeedOrigin::Replaced,
        (Some(public), Some(bytes)) => {
            let seed = parse_seed(&bytes).ok_or_else(|| {
                Failure::other(format!("corrupt resume state {}", file.display()))
            })?;
            if LinkKeyPair::from_seed(&seed).public() != public {
                // Its run is not this directory's: it can never be resumed.
                let _ = std::fs::remove_file(&file);
                return Err(another_run(place.path(), role));
            }
            return Ok(DirRun {
                place,
                seed,
                seed_file: file,
                origin: SeedOrigin::Resumed,
            });
        }
        (Some(_), None) => return Err(another_run(place.path(), role)),
    };
    let seed = fresh_seed();
    write_private(&file, hex::encode(seed).as_bytes())?;
    Ok(DirRun {
        place,
        seed,
        seed_file: file,
        origin,
    })
}

/// A stored seed: 64 hex digits, surrounding white space allowed.
fn parse_seed(bytes: &[u8]) -> Option<[u8; 32]> {
    hex::decode(bytes.trim_ascii())
        .ok()
        .and_then(|b| b.try_into().ok())
}

/// The refusal of a directory whose `role` belongs to a run this party cannot resume.
fn another_run(dir: &Path, role: &str) -> Failure {
    privset_net::TransportError::ExchangeDir(format!(
        "{} holds the messages of another run of {role:?} (a finished run, or one started \
         with another state directory); give each run its own directory",
        dir.display()
    ))
    .into()
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
            let err = join_exchange_dir(&state, &x, "p1", DirOptions::default())
                .err()
                .unwrap();
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
        let run = join_exchange_dir(&d.join("state"), &x, "p1", DirOptions::default()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&run.seed_file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    fn join(state: &Path, x: &Path) -> Result<DirRun, Failure> {
        join_exchange_dir(state, x, "p1", DirOptions::default())
    }

    #[test]
    fn a_seed_is_resumed_only_by_the_run_it_belongs_to() {
        let d = scratch("seed-reuse");
        let (x, state) = (d.join("exchange"), d.join("state"));
        let first = join(&state, &x).unwrap();
        assert_eq!(first.origin, SeedOrigin::New);
        first.place.publish_key(&first.seed, None).unwrap();
        let seed = first.seed;
        drop(first);
        // Restarted while the directory still holds the run: the same seed.
        let again = join(&state, &x).unwrap();
        assert_eq!((again.origin, again.seed), (SeedOrigin::Resumed, seed));
        drop(again);
        // The folder recreated after a failure (what a user does after a timeout): fresh
        // randomness, and a notice saying so.
        std::fs::remove_dir_all(&x).unwrap();
        let fresh = join(&state, &x).unwrap();
        assert_eq!(fresh.origin, SeedOrigin::Replaced);
        assert_ne!(fresh.seed, seed);
        assert!(
            fresh
                .origin
                .notice(&x)
                .unwrap()
                .contains("fresh randomness")
        );
        fresh.place.publish_key(&fresh.seed, None).unwrap();
        let seed_file = fresh.seed_file.clone();
        drop(fresh);
        // Another run's key in the directory: refused, and the stored seed (which can
        // never be resumed) deleted.
        std::fs::remove_dir_all(&x).unwrap();
        let other = join(&d.join("other-state"), &x).unwrap();
        other.place.publish_key(&other.seed, None).unwrap();
        drop(other);
        let err = join(&state, &x).err().unwrap();
        assert!(err.message.contains("another run"), "{}", err.message);
        assert!(!seed_file.exists());
        // And a finished run (its seed deleted) is not started again from scratch.
        let err = join(&state, &x).err().unwrap();
        assert!(err.message.contains("another run"), "{}", err.message);
    }
}
