//! The shared exchange-directory transport (Ion et al. 2020, Sec. 2.4): each execution gets its
//! own directory on storage both parties can reach; every message is one file that the
//! other party polls for. Latency is poor, but nothing needs to be reachable over the
//! network and a party can be killed and restarted at any point.
//!
//! Layout of one execution's directory:
//! * `NNNN-<role>.msg`: message NNNN (that sender's index, from 0, zero-padded) of
//!   `<role>`. Written as `NNNN-<role>.msg.tmp`, fsynced, then renamed, so a reader
//!   never sees half a message.
//! * `<role>.lock`: holds the pid of the live process playing `<role>`, so two processes
//!   of the same role never write into one directory.
//!
//! An n-party session ([`open_links`]) shares one directory among all its participants,
//! named `p0`, `p1`, ... by index. Each ordered pair of participants that talk has its own
//! sequence of files, `NNNN-p<from>-to-p<to>.msg` (message NNNN on that link), so the
//! messages of different links never mix; each participant holds one lock, `p<i>.lock`,
//! for all its links.
//!
//! Resuming: a party re-created from the same RNG seed replays the same messages byte
//! for byte (see `privset_protocols::Party`). So sending message n when its file already
//! exists checks that the contents are identical and skips the write, and receiving a
//! message whose file exists just reads it. A *different* existing message means the
//! directory belongs to another run, which is refused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use privset_protocols::party::PartyId;

use crate::cancel::Cancel;
use crate::driver::LinkSet;
use crate::error::{TransportError, secs};
use crate::{ByteCounters, Transport};

/// Polling settings for [`ExchangeDir`].
#[derive(Clone, Debug)]
pub struct DirOptions {
    /// Pause between looks for the peer's next file. Short for tests; a batch deployment
    /// polling shared storage would use seconds to minutes.
    pub poll_interval: Duration,
    /// How long to wait for any one message before giving up.
    pub timeout: Duration,
    /// Stops waiting for the peer's next file once cancelled from another thread.
    pub cancel: Cancel,
}

impl Default for DirOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(200),
            timeout: Duration::from_secs(600),
            cancel: Cancel::default(),
        }
    }
}

/// One side of an exchange directory.
#[derive(Debug)]
pub struct ExchangeDir {
    dir: PathBuf,
    /// What names this side's message files ("receiver"; "p3-to-p0" in n-party runs).
    send_tag: String,
    /// What names the peer's message files.
    recv_tag: String,
    opts: DirOptions,
    next_send: u32,
    next_recv: u32,
    counters: ByteCounters,
    /// Shared by every link of one participant; removed when the last one goes.
    _lock: Arc<LockFile>,
}

/// A held lock file, removed on drop.
#[derive(Debug)]
struct LockFile(PathBuf);

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// The role of participant `p` of an n-party session in file names: `p<index>`.
pub fn participant_role(p: PartyId) -> String {
    format!("p{p}")
}

/// Opens `dir` (creating it if needed) as participant `me` of an n-party session, with
/// one link to each of `peers`, and takes `me`'s lock. Message files are named per
/// ordered pair (see the module documentation), so resuming replays each link as in a
/// two-party run.
pub fn open_links(
    dir: &Path,
    me: PartyId,
    peers: &[PartyId],
    opts: DirOptions,
) -> Result<LinkSet, TransportError> {
    if peers.contains(&me) {
        return Err(TransportError::Config(format!(
            "participant {me} cannot have a link to itself"
        )));
    }
    let role = participant_role(me);
    let lock = Arc::new(create_and_lock(dir, &role)?);
    let mut links = LinkSet::new();
    for &peer in peers {
        let peer_role = participant_role(peer);
        let link = ExchangeDir {
            dir: dir.to_path_buf(),
            send_tag: format!("{role}-to-{peer_role}"),
            recv_tag: format!("{peer_role}-to-{role}"),
            opts: opts.clone(),
            next_send: 0,
            next_recv: 0,
            counters: ByteCounters::default(),
            _lock: lock.clone(),
        };
        links.insert(peer, Box::new(link));
    }
    Ok(links)
}

/// Creates `dir` if needed and takes `role`'s lock in it.
fn create_and_lock(dir: &Path, role: &str) -> Result<LockFile, TransportError> {
    fs::create_dir_all(dir).map_err(|e| {
        TransportError::io(format!("creating exchange directory {}", dir.display()), e)
    })?;
    let lock = dir.join(format!("{role}.lock"));
    take_lock(&lock, role)?;
    Ok(LockFile(lock))
}

/// A lock file whose content cannot be read as a pid is considered abandoned after this
/// long (a process killed between creating and writing it).
const UNREADABLE_LOCK_GRACE: Duration = Duration::from_secs(60);

impl ExchangeDir {
    /// Opens (creating if needed) `dir` as `my_role`, talking to `peer_role`, and takes
    /// the role's lock. Role names are used in file names: letters, digits, `-`, `_`.
    pub fn open(
        dir: &Path,
        my_role: &str,
        peer_role: &str,
        opts: DirOptions,
    ) -> Result<Self, TransportError> {
        check_role(my_role)?;
        check_role(peer_role)?;
        if my_role == peer_role {
            return Err(TransportError::Config(format!(
                "both parties have the role {my_role:?}; roles must differ"
            )));
        }
        let lock = create_and_lock(dir, my_role)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            send_tag: my_role.to_string(),
            recv_tag: peer_role.to_string(),
            opts,
            next_send: 0,
            next_recv: 0,
            counters: ByteCounters::default(),
            _lock: Arc::new(lock),
        })
    }

    /// The directory in use.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Path of message `n` of `role`.
    pub fn message_path(&self, role: &str, n: u32) -> PathBuf {
        self.dir.join(message_file_name(role, n))
    }
}

/// File name of message `n` of `role`: `NNNN-<role>.msg`.
pub fn message_file_name(role: &str, n: u32) -> String {
    format!("{n:04}-{role}.msg")
}

fn check_role(role: &str) -> Result<(), TransportError> {
    if role.is_empty()
        || !role
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(TransportError::Config(format!(
            "role {role:?} must be non-empty and use only letters, digits, '-' and '_'"
        )));
    }
    Ok(())
}

/// Creates the lock file exclusively; takes over a lock whose process is gone.
fn take_lock(lock: &Path, role: &str) -> Result<(), TransportError> {
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(lock) {
            Ok(mut f) => {
                let pid = std::process::id();
                return f
                    .write_all(format!("{pid}\n").as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| {
                        TransportError::io(format!("writing lock file {}", lock.display()), e)
                    });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !lock_is_stale(lock, role)? {
                    return Err(lock_held_error(lock, role));
                }
                // Stale: the process that held it is gone. Take over.
                match fs::remove_file(lock) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(TransportError::io(
                            format!("removing stale lock file {}", lock.display()),
                            e,
                        ));
                    }
                }
            }
            Err(e) => {
                return Err(TransportError::io(
                    format!("creating lock file {}", lock.display()),
                    e,
                ));
            }
        }
    }
    Err(TransportError::ExchangeDir(format!(
        "could not take the lock file {} for role {role:?}: another process keeps creating it",
        lock.display()
    )))
}

/// Fails with a message naming the live holder.
fn lock_held_error(lock: &Path, role: &str) -> TransportError {
    let holder = fs::read_to_string(lock).unwrap_or_default();
    TransportError::ExchangeDir(format!(
        "role {role:?} is already in use in this directory by process {} (lock file {}); \
         if no such process is running, remove the lock file",
        holder.trim(),
        lock.display()
    ))
}

/// True if the lock's pid no longer runs. Without /proc (not Linux) we cannot tell and
/// say "not stale", leaving the decision to the user.
fn lock_is_stale(lock: &Path, role: &str) -> Result<bool, TransportError> {
    let content = match fs::read_to_string(lock) {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => {
            return Err(TransportError::io(
                format!("reading lock file {} of role {role:?}", lock.display()),
                e,
            ));
        }
    };
    match content.trim().parse::<u32>() {
        Ok(pid) => {
            if !Path::new("/proc/self").exists() {
                return Ok(false);
            }
            Ok(!Path::new(&format!("/proc/{pid}")).exists())
        }
        Err(_) => {
            let age = fs::metadata(lock)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .unwrap_or_default();
            Ok(age > UNREADABLE_LOCK_GRACE)
        }
    }
}

impl Transport for ExchangeDir {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        let n = self.next_send;
        let path = self.message_path(&self.send_tag, n);
        match fs::metadata(&path) {
            Ok(meta) => {
                // Replay after a restart: the file must hold exactly this message.
                let same = meta.len() == message.len() as u64
                    && fs::read(&path).map_err(|e| {
                        TransportError::io(format!("reading {}", path.display()), e)
                    })? == message;
                if !same {
                    return Err(TransportError::ExchangeDir(format!(
                        "{} holds a different message {n} of {:?}; was this directory used by another run?",
                        path.display(),
                        self.send_tag
                    )));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_atomically(&self.dir, &path, message)?
            }
            Err(e) => {
                return Err(TransportError::io(
                    format!("checking {}", path.display()),
                    e,
                ));
            }
        }
        self.next_send += 1;
        self.counters.sent += message.len() as u64;
        Ok(())
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let n = self.next_recv;
        let path = self.message_path(&self.recv_tag, n);
        let start = Instant::now();
        let len = loop {
            self.opts.cancel.check()?;
            match fs::metadata(&path) {
                Ok(m) => break m.len(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if start.elapsed() >= self.opts.timeout {
                        return Err(TransportError::Timeout {
                            what: format!(
                                "waiting for message {n} of {:?} ({})",
                                self.recv_tag,
                                path.display()
                            ),
                            seconds: secs(self.opts.timeout),
                        });
                    }
                    thread::sleep(
                        self.opts
                            .poll_interval
                            .min(self.opts.timeout.saturating_sub(start.elapsed())),
                    );
                }
                Err(e) => {
                    return Err(TransportError::io(
                        format!("checking {}", path.display()),
                        e,
                    ));
                }
            }
        };
        if len > max_len as u64 {
            return Err(TransportError::TooLarge {
                len,
                max: max_len as u64,
            });
        }
        let file = File::open(&path)
            .map_err(|e| TransportError::io(format!("opening {}", path.display()), e))?;
        // Files are renamed into place whole, but never trust the size: read at most
        // max_len + 1 bytes so a file that grew is still refused.
        let mut body = Vec::with_capacity(len as usize);
        file.take(max_len as u64 + 1)
            .read_to_end(&mut body)
            .map_err(|e| TransportError::io(format!("reading {}", path.display()), e))?;
        if body.len() > max_len {
            return Err(TransportError::TooLarge {
                len: body.len() as u64,
                max: max_len as u64,
            });
        }
        self.next_recv += 1;
        self.counters.received += body.len() as u64;
        Ok(body)
    }

    fn counters(&self) -> ByteCounters {
        self.counters
    }
}

/// Writes `path` so that it appears complete or not at all: temp file, fsync, rename,
/// then fsync the directory so the rename survives a crash.
fn write_atomically(dir: &Path, path: &Path, contents: &[u8]) -> Result<(), TransportError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let io_err = |what: &str, e| TransportError::io(format!("{what} {}", tmp.display()), e);
    let mut f = File::create(&tmp).map_err(|e| io_err("creating", e))?;
    f.write_all(contents).map_err(|e| io_err("writing", e))?;
    f.sync_all().map_err(|e| io_err("syncing", e))?;
    drop(f);
    fs::rename(&tmp, path)
        .map_err(|e| TransportError::io(format!("renaming {} into place", tmp.display()), e))?;
    // Directory fsync is not supported everywhere (some network file systems); best effort.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
