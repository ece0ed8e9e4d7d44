//! The tests' faults, asked for through the environment of a party's process (a Ray
//! task's, or the CLI's): each strikes the first run of one unit in one role, once per
//! job directory (a marker file in it), so that the run which follows shows the party
//! recovering from it. They exist only in builds with the `test-faults` feature (the
//! CLI's tests and the test wheel); anywhere else these variables do nothing.
//!
//! - `PRIVSET_TEST_DIE_BEFORE_RECORD=<role>:<unit>`: the process aborts between the
//!   unit's session and its record, as a party killed there would. Its peer has then
//!   recorded the unit and this party has not: a Ray task's retry must learn that the
//!   peer finished and the next round run the unit again (python/tests/test_ray.py),
//!   and a peer that finished meanwhile must keep its state to serve the unit later
//!   (crates/cli/tests/buckets.rs).
//! - `PRIVSET_TEST_HOLD_AFTER_SEND=<role>:<unit>`: the session stops after its first
//!   message is sent, writes this process's id to `test-held-<unit>.pid` in the job
//!   directory and waits there (at most [`HOLD_AT_MOST`]) to be killed: a test kills
//!   the process mid-session at a point it knows, instead of hoping to catch a
//!   running task in a poll of the process table (python/tests/test_ray.py).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use privset_net::{ByteCounters, Transport, TransportError};

/// How long a held session waits to be killed before it goes on (the test that asked
/// for the hold then fails: it found no process to kill).
const HOLD_AT_MOST: Duration = Duration::from_secs(120);

/// Whether the environment variable `var` asks for a fault in `unit` of `role`, and
/// this is its first run in job directory `dir` (the marker `once` made now).
fn asked_first_time(var: &str, role: &str, unit: u32, dir: &Path, once: &str) -> bool {
    cfg!(feature = "test-faults")
        && std::env::var(var).is_ok_and(|asked| asked == format!("{role}:{unit}"))
        && std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(once))
            .is_ok()
}

/// `PRIVSET_TEST_DIE_BEFORE_RECORD`: aborts the process if asked (see the module).
pub(super) fn die_if_asked(role: &str, unit: u32, dir: &Path) {
    let once = format!("test-died-before-record-{unit}");
    if asked_first_time("PRIVSET_TEST_DIE_BEFORE_RECORD", role, unit, dir, &once) {
        std::process::abort();
    }
}

/// `PRIVSET_TEST_HOLD_AFTER_SEND`: the file to announce the hold in, if asked (see the
/// module); the session's transport is then wrapped in a [`HoldAfterSend`].
pub(super) fn hold_asked(role: &str, unit: u32, dir: &Path) -> Option<PathBuf> {
    let once = format!("test-hold-after-send-{unit}");
    asked_first_time("PRIVSET_TEST_HOLD_AFTER_SEND", role, unit, dir, &once)
        .then(|| dir.join(format!("test-held-{unit}.pid")))
}

/// A session's transport that holds after its first message is sent (see the module).
pub(super) struct HoldAfterSend<'a> {
    pub inner: &'a mut (dyn Transport + Send),
    /// Where to announce the hold; taken at the first send.
    pub announce: Option<PathBuf>,
}

impl Transport for HoldAfterSend<'_> {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        self.inner.send(message)?;
        if let Some(file) = self.announce.take() {
            // Written whole, then renamed: the test never reads half a process id.
            let partial = file.with_extension("partial");
            std::fs::write(&partial, std::process::id().to_string())
                .and_then(|()| std::fs::rename(&partial, &file))
                .map_err(|source| TransportError::Io {
                    what: "announcing the test's hold".into(),
                    source,
                })?;
            let start = Instant::now();
            while start.elapsed() < HOLD_AT_MOST {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        self.inner.recv(max_len)
    }

    fn counters(&self) -> ByteCounters {
        self.inner.counters()
    }
}
