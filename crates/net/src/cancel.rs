//! Cancelling a run from another thread (a user's Ctrl-C in the Python package).
//!
//! A party's thread can be blocked in three places: waiting for a connection (connect
//! retries, accept polling), inside a socket read or write, or polling an exchange
//! directory. A [`Cancel`] token reaches all three: the polling loops check it, and
//! every socket opened under it is registered so that [`Cancel::cancel`] can shut it
//! down, which wakes a blocked read or write at once. The crypto between two messages
//! is not interrupted; the driver stops at the next message boundary (see the Python
//! bindings' wrapper transport), so no thread is left waiting for a peer that will
//! never answer.

use std::fmt;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::TransportError;

/// A shared cancellation flag. Clones refer to the same flag; the default token is
/// never cancelled unless someone calls [`Cancel::cancel`] on it or a clone.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Clones of the sockets opened under this token, shut down on cancel.
    sockets: Mutex<Vec<TcpStream>>,
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// A fresh token, not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every registered socket is shut down (waking blocked reads and writes)
    /// and every later check fails with [`TransportError::Cancelled`]. Idempotent.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let sockets = self.0.sockets.lock().unwrap_or_else(|e| e.into_inner());
        for s in sockets.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// True once [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// `Err(Cancelled)` once cancelled: for polling loops and wrapper transports.
    pub fn check(&self) -> Result<(), TransportError> {
        if self.is_cancelled() {
            Err(TransportError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Registers a connected socket so that cancelling shuts it down. A socket
    /// registered after the cancel is shut down at once.
    pub(crate) fn watch(&self, stream: &TcpStream) -> io::Result<()> {
        let clone = stream.try_clone()?;
        let mut sockets = self.0.sockets.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_cancelled() {
            let _ = clone.shutdown(Shutdown::Both);
        }
        sockets.push(clone);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    #[test]
    fn cancel_wakes_a_blocked_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        let cancel = Cancel::new();
        cancel.watch(&client).unwrap();
        let reader = std::thread::spawn(move || {
            let mut c = client;
            let mut buf = [0u8; 8];
            c.read(&mut buf)
        });
        std::thread::sleep(Duration::from_millis(100));
        let start = Instant::now();
        cancel.cancel();
        // The blocked read returns (end of stream or an error) instead of waiting.
        let _ = reader.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(matches!(cancel.check(), Err(TransportError::Cancelled)));
    }
}
