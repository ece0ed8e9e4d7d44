//! Connections still in their TLS handshake or hello, by client address: no address
//! may hold more than its share of the pre-hello pool. Past the limit, the address's
//! OLDEST such connection is cut off to make way for the new one, rather than the new
//! one being refused: a client behind the same address as a squatter (or the squatter's
//! own retry) gets in, while the squatter still holds at most the limit, and an honest
//! handshake, which takes milliseconds, is rarely the oldest.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use privset_net::Cancel;

/// How a connection in its handshake can be cut off to make way.
#[derive(Clone)]
pub(super) struct Evictable {
    cancel: Cancel,
    evicted: Arc<AtomicBool>,
}

impl Evictable {
    pub(super) fn new(cancel: Cancel) -> Self {
        Self {
            cancel,
            evicted: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether it was cut off to make way for a newer connection from its address.
    pub(super) fn was_evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }

    fn evict(&self) {
        self.evicted.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }
}

/// The pre-hello connections of every address, oldest first.
#[derive(Default)]
pub(super) struct PendingByAddress {
    by_address: HashMap<IpAddr, VecDeque<(u64, Evictable)>>,
}

impl PendingByAddress {
    /// Adds connection `id` from `address`; if that address then holds more than
    /// `limit` (at least 1), cuts off and forgets its oldest.
    pub(super) fn add(&mut self, address: IpAddr, id: u64, conn: Evictable, limit: usize) {
        let queue = self.by_address.entry(address).or_default();
        queue.push_back((id, conn));
        while queue.len() > limit.max(1) {
            if let Some((_, oldest)) = queue.pop_front() {
                oldest.evict();
            }
        }
    }

    /// Forgets connection `id` (past its hello, or ended).
    pub(super) fn remove(&mut self, address: IpAddr, id: u64) {
        if let Some(queue) = self.by_address.get_mut(&address) {
            queue.retain(|(i, _)| *i != id);
            if queue.is_empty() {
                self.by_address.remove(&address);
            }
        }
    }
}
