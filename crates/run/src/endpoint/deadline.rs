//! A connection's deadline: first the pre-hello one (`--handshake-timeout` from the
//! accept), then, once the client said hello, the session's (`--timeout` from the
//! accept). At the deadline, or when the endpoint stops, the connection's socket is
//! shut down through its own [`Cancel`], which ends whatever it was blocked on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use privset_net::Cancel;

/// How often the watcher looks at the clock and the endpoint's cancels.
const TICK: Duration = Duration::from_millis(50);

/// Cuts a connection off at its deadline, or when the endpoint is cancelled, unless
/// the connection ends first (dropping the guard).
pub(super) struct Deadline {
    at: Arc<Mutex<Instant>>,
    expired: Arc<AtomicBool>,
    _done: mpsc::Sender<()>,
}

impl Deadline {
    /// Watches `cancel` (the connection's) against `deadline`, `endpoint` (the
    /// endpoint's cancel) and `closing` (cancelled when the endpoint stops accepting).
    pub(super) fn start(
        deadline: Instant,
        cancel: Cancel,
        endpoint: Cancel,
        closing: Cancel,
    ) -> Self {
        let at = Arc::new(Mutex::new(deadline));
        let expired = Arc::new(AtomicBool::new(false));
        let (done, ended) = mpsc::channel::<()>();
        let (watched, flag) = (at.clone(), expired.clone());
        std::thread::spawn(move || {
            loop {
                let deadline = *watched.lock().unwrap_or_else(|p| p.into_inner());
                let left = deadline.saturating_duration_since(Instant::now());
                match ended.recv_timeout(left.min(TICK)) {
                    Err(RecvTimeoutError::Timeout) => {
                        if endpoint.is_cancelled() || closing.is_cancelled() {
                            cancel.cancel();
                            return;
                        }
                        // Under the lock: a deadline moved meanwhile is seen.
                        let deadline = watched.lock().unwrap_or_else(|p| p.into_inner());
                        if Instant::now() >= *deadline {
                            flag.store(true, Ordering::SeqCst);
                            cancel.cancel();
                            return;
                        }
                    }
                    // The connection ended (its guard dropped).
                    _ => return,
                }
            }
        });
        Self {
            at,
            expired,
            _done: done,
        }
    }

    /// Moves the deadline to `deadline`; false if the old one already passed (the
    /// connection is being cut off).
    pub(super) fn move_to(&self, deadline: Instant) -> bool {
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        if self.expired() {
            return false;
        }
        *at = deadline;
        true
    }

    pub(super) fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }
}
