//! What the Python thread sees of a party running on a worker thread: its status,
//! message and byte counts and the items of its current phase (the party's
//! [`Meter`], for progress callbacks), and the cancel token it obeys.
//!
//! The party's thread writes; the Python thread reads a [`Snapshot`] whenever it wakes
//! to check for signals. [`Monitored`] wraps the link's transport to count messages
//! and to stop at the next message boundary once cancelled: the crypto between two
//! messages is not interrupted, so that is where a cancelled run ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use privset_net::{ByteCounters, Cancel, Transport, TransportError};
use privset_protocols::Meter;

/// One party's progress, shared between its worker thread and the Python thread.
pub(crate) struct Monitor {
    /// "p1", "receiver", ...: which party, for callbacks.
    pub label: String,
    pub cancel: Cancel,
    status: Mutex<String>,
    /// The party's meter, once the party exists.
    meter: Mutex<Option<Arc<Meter>>>,
    messages_sent: AtomicU64,
    messages_received: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
}

/// A consistent-enough copy of a [`Monitor`] for a progress callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub status: String,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The current bulk phase ("" before any), items done of total.
    pub phase: &'static str,
    pub phase_number: u64,
    pub done: u64,
    pub total: u64,
}

impl Monitor {
    pub fn new(label: &str, cancel: Cancel) -> Self {
        Self {
            label: label.to_string(),
            cancel,
            status: Mutex::new("connecting".into()),
            meter: Mutex::new(None),
            messages_sent: AtomicU64::new(0),
            messages_received: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
        }
    }

    pub fn set_status(&self, status: &str) {
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = status.to_string();
    }

    /// Reads the items of the party's phases from `meter` from now on.
    pub fn watch(&self, meter: Option<Arc<Meter>>) {
        *self.meter.lock().unwrap_or_else(|e| e.into_inner()) = meter;
    }

    /// Adds one link's messages and its bytes since it last reported (`bytes`): a
    /// participant of a multi-party session reports all its links into one monitor.
    fn count(&self, bytes: ByteCounters, sent: u64, received: u64) {
        self.messages_sent.fetch_add(sent, Ordering::Relaxed);
        self.messages_received
            .fetch_add(received, Ordering::Relaxed);
        self.bytes_sent.fetch_add(bytes.sent, Ordering::Relaxed);
        self.bytes_received
            .fetch_add(bytes.received, Ordering::Relaxed);
    }

    /// What a display that last showed `last` missed before `now`: `last`'s phase if it
    /// had not been seen to end, and every phase that began and ended between the two
    /// reads ([`Meter::ended_between`]), each as a snapshot of `now` with that phase
    /// finished (done = total). Phases run one after another, so a later phase means
    /// the earlier ones are complete.
    pub fn ended_since(&self, last: Option<&Snapshot>, now: &Snapshot) -> Vec<Snapshot> {
        let seen = last.map_or(0, |l| l.phase_number);
        if now.phase_number <= seen {
            return Vec::new();
        }
        let finished = |phase_number, phase, total| Snapshot {
            phase,
            phase_number,
            done: total,
            total,
            ..now.clone()
        };
        let mut out = Vec::new();
        if let Some(l) = last.filter(|l| l.phase_number > 0 && l.done < l.total) {
            out.push(finished(l.phase_number, l.phase, l.total));
        }
        if now.phase_number > seen + 1
            && let Some(meter) = self
                .meter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
        {
            out.extend(
                meter
                    .ended_between(seen, now.phase_number)
                    .into_iter()
                    .map(|(number, phase, total)| finished(number, phase, total)),
            );
        }
        out
    }

    pub fn snapshot(&self) -> Snapshot {
        let reading = self
            .meter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|m| m.read());
        Snapshot {
            phase: reading.map_or("", |r| r.phase),
            phase_number: reading.map_or(0, |r| r.phase_number),
            done: reading.map_or(0, |r| r.done),
            total: reading.map_or(0, |r| r.total),
            status: self
                .status
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            messages_sent: self.messages_sent.load(Ordering::Relaxed),
            messages_received: self.messages_received.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
        }
    }
}

/// A transport that reports to a [`Monitor`] and refuses to go on once cancelled.
pub(crate) struct Monitored {
    inner: Box<dyn Transport + Send>,
    monitor: Arc<Monitor>,
    /// This link's byte counts when it last reported.
    reported: ByteCounters,
}

impl Monitored {
    pub fn new(inner: Box<dyn Transport + Send>, monitor: Arc<Monitor>) -> Self {
        Self {
            inner,
            monitor,
            reported: ByteCounters::default(),
        }
    }

    fn count(&mut self, sent: u64, received: u64) {
        let now = self.inner.counters();
        let delta = ByteCounters {
            sent: now.sent.saturating_sub(self.reported.sent),
            received: now.received.saturating_sub(self.reported.received),
        };
        self.reported = now;
        self.monitor.count(delta, sent, received);
    }
}

impl Transport for Monitored {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        self.monitor.cancel.check()?;
        self.inner.send(message)?;
        self.count(1, 0);
        Ok(())
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        self.monitor.cancel.check()?;
        let received = self.inner.recv(max_len);
        // A cancel that woke a blocked read shows as a closed socket: say what it was.
        self.monitor.cancel.check()?;
        let message = received?;
        self.count(0, 1);
        Ok(message)
    }

    fn counters(&self) -> ByteCounters {
        self.inner.counters()
    }
}
