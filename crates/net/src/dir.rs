//! The shared exchange-directory transport (Ion et al. 2020, Sec. 2.4): each execution gets its
//! own directory on storage both parties can reach; every message is one file that the
//! other party polls for. Latency is poor, but nothing needs to be reachable over the
//! network and a party can be killed and restarted at any point.
//!
//! Layout of one execution's directory:
//! * `NNNN-<role>.msg`: message NNNN (that sender's index, from 0, zero-padded) of
//!   `<role>`. Written as `NNNN-<role>.msg.tmp`, fsynced, then renamed, so a reader
//!   never sees half a message.
//! * `<role>.lock`: locked (advisory file lock) by the live process playing `<role>`, so
//!   two processes of the same role never write into one directory. The kernel drops
//!   the lock when its holder exits, however it dies; the file holds its pid only to
//!   name it in the refusal.
//!
//! * `<role>.pub`: the role's link key; every message file is sealed for its one
//!   recipient with keys agreed from these (see [`crate::sealed_dir`], which every front
//!   end uses: a plain [`ExchangeDir`] is for tests of the file mechanics).
//!
//! An n-party session ([`crate::sealed_dir::open_links`]) shares one directory among all its participants,
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

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use privset_protocols::party::PartyId;

use crate::cancel::Cancel;
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

/// The role of participant `p` of an n-party session in file names: `p<index>`.
pub fn participant_role(p: PartyId) -> String {
    format!("p{p}")
}

/// A participant's place in an exchange directory: the directory, its role there and
/// the role's lock, held until the last link made from it is dropped. Links made from
/// it are plain ([`DirPlace::link`]) or sealed for their peer
/// ([`crate::sealed_dir`]); every front end uses sealed ones.
#[derive(Debug)]
pub struct DirPlace {
    dir: PathBuf,
    role: String,
    opts: DirOptions,
    lock: Arc<LockFile>,
}

impl DirPlace {
    /// Opens (creating if needed) `dir` as `role` and takes the role's lock. Role names
    /// are used in file names: letters, digits, `-`, `_`.
    pub fn take(dir: &Path, role: &str, opts: DirOptions) -> Result<Self, TransportError> {
        check_role(role)?;
        let lock = Arc::new(create_and_lock(dir, role)?);
        Ok(Self {
            dir: dir.to_path_buf(),
            role: role.to_string(),
            opts,
            lock,
        })
    }

    /// The directory in use.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// This participant's role.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// A plain link whose own files are named by `send_tag` and the peer's by
    /// `recv_tag`.
    pub(crate) fn link(&self, send_tag: &str, recv_tag: &str) -> ExchangeDir {
        ExchangeDir {
            dir: self.dir.clone(),
            send_tag: send_tag.to_string(),
            recv_tag: recv_tag.to_string(),
            opts: self.opts.clone(),
            next_send: 0,
            next_recv: 0,
            counters: ByteCounters::default(),
            _lock: self.lock.clone(),
        }
    }

    /// Writes `name` in the directory so that it appears whole or not at all.
    pub(crate) fn write_file(&self, name: &str, contents: &[u8]) -> Result<(), TransportError> {
        write_atomically(&self.dir, &self.dir.join(name), contents)
    }
}

/// Creates `dir` if needed and takes `role`'s lock in it.
fn create_and_lock(dir: &Path, role: &str) -> Result<LockFile, TransportError> {
    create_exchange_dir(dir)?;
    take_lock(&dir.join(format!("{role}.lock")), role)
}

/// Creates the exchange directory `dir` if needed and returns its canonical path. A
/// path that is (or lies under) something other than a directory is refused with a
/// message naming the culprit, rather than the bare "File exists" of the system.
pub fn create_exchange_dir(dir: &Path) -> Result<PathBuf, TransportError> {
    if let Some(blocker) = dir
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && fs::metadata(p).is_ok_and(|m| !m.is_dir()))
    {
        let problem = if blocker == dir {
            "is a file, not a directory".to_string()
        } else {
            format!("lies under {}, which is a file", blocker.display())
        };
        return Err(TransportError::ExchangeDir(format!(
            "{} {problem}; give a directory (it is created if missing)",
            dir.display()
        )));
    }
    fs::create_dir_all(dir)
        .and_then(|()| dir.canonicalize())
        .map_err(|e| {
            TransportError::io(format!("creating exchange directory {}", dir.display()), e)
        })
}

impl ExchangeDir {
    /// Opens (creating if needed) `dir` as `my_role`, talking to `peer_role`, and takes
    /// the role's lock. Role names are used in file names: letters, digits, `-`, `_`.
    pub fn open(
        dir: &Path,
        my_role: &str,
        peer_role: &str,
        opts: DirOptions,
    ) -> Result<Self, TransportError> {
        check_role(peer_role)?;
        if my_role == peer_role {
            return Err(TransportError::Config(format!(
                "both parties have the role {my_role:?}; roles must differ"
            )));
        }
        Ok(DirPlace::take(dir, my_role, opts)?.link(my_role, peer_role))
    }

    /// The directory in use.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Path of message `n` of `role`.
    pub fn message_path(&self, role: &str, n: u32) -> PathBuf {
        self.dir.join(message_file_name(role, n))
    }

    /// The index of the next message this side sends.
    pub(crate) fn next_send(&self) -> u32 {
        self.next_send
    }

    /// The index of the next message this side receives.
    pub(crate) fn next_recv(&self) -> u32 {
        self.next_recv
    }

    /// What names this side's message files.
    pub(crate) fn send_tag(&self) -> &str {
        &self.send_tag
    }

    /// What names the peer's message files.
    pub(crate) fn recv_tag(&self) -> &str {
        &self.recv_tag
    }

    /// Polls for `path` until it exists (returning its length), the timeout passes or
    /// the run is cancelled; `what` names the file in the timeout error.
    pub(crate) fn wait_for(&self, path: &Path, what: &str) -> Result<u64, TransportError> {
        let start = Instant::now();
        loop {
            self.opts.cancel.check()?;
            match fs::metadata(path) {
                Ok(m) => return Ok(m.len()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if start.elapsed() >= self.opts.timeout {
                        return Err(TransportError::Timeout {
                            what: format!("waiting for {what} ({})", path.display()),
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
        }
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

/// A held role lock: an advisory lock on `<role>.lock` that the kernel releases the
/// moment its holder exits, however it dies (killed, crashed), so a restarted party
/// never finds a stale lock and no pid has to be checked. The file holds the holder's
/// pid, only to name it in the refusal.
#[derive(Debug)]
struct LockFile {
    path: PathBuf,
    file: File,
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Removed while still locked: a process that opened the file meanwhile finds,
        // once it holds the lock, that the path no longer names it, and starts over.
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// How long a refused lock is retried: a party restarted right after being killed may
/// find the lock still held for the instant the kernel takes to tear the old process
/// down.
const LOCK_RETRY: Duration = Duration::from_secs(2);
const LOCK_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Takes `role`'s lock file `lock`, retrying a held lock for [`LOCK_RETRY`].
fn take_lock(lock: &Path, role: &str) -> Result<LockFile, TransportError> {
    let start = Instant::now();
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock)
            .map_err(|e| TransportError::io(format!("opening lock file {}", lock.display()), e))?;
        match file.try_lock() {
            Ok(()) => {
                if !same_file(&file, lock) {
                    // The previous holder removed it between our open and our lock.
                    continue;
                }
                let mut held = LockFile {
                    path: lock.to_path_buf(),
                    file,
                };
                write_pid(&mut held.file).map_err(|e| {
                    TransportError::io(format!("writing lock file {}", lock.display()), e)
                })?;
                return Ok(held);
            }
            Err(TryLockError::WouldBlock) => {
                if start.elapsed() >= LOCK_RETRY {
                    return Err(lock_held_error(lock, role));
                }
                thread::sleep(LOCK_RETRY_PAUSE);
            }
            Err(TryLockError::Error(e)) => {
                return Err(TransportError::io(
                    format!("locking {} for role {role:?}", lock.display()),
                    e,
                ));
            }
        }
    }
}

/// Replaces the lock file's content with this process's pid.
fn write_pid(file: &mut File) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    file.sync_all()
}

/// True if `path` still names the open `file` (not a newer file of the same name).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Elsewhere a file that is open cannot be removed by its holder, so the name still
/// refers to the file as long as it exists.
#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// Fails with a message naming the live holder.
fn lock_held_error(lock: &Path, role: &str) -> TransportError {
    let holder = fs::read_to_string(lock).unwrap_or_default();
    let holder = match holder.trim() {
        pid if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
            format!("process {pid}")
        }
        _ => "another process".to_string(),
    };
    TransportError::ExchangeDir(format!(
        "role {role:?} is already in use in this directory by {holder} (lock file {}); \
         the lock is released the moment that process exits: if it was just stopped, \
         retry in a moment, otherwise stop it first",
        lock.display()
    ))
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
        let what = format!("message {n} of {:?}", self.recv_tag);
        let len = self.wait_for(&path, &what)?;
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
