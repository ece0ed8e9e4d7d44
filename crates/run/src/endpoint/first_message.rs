//! A transport whose first message was already received: the endpoint reads a
//! client's hello before giving it a session slot, and the party then reads it from
//! here as if it had just arrived.

use privset_net::{ByteCounters, Transport, TransportError};

pub(super) struct FirstMessage {
    first: Option<Vec<u8>>,
    inner: Box<dyn Transport + Send>,
}

impl FirstMessage {
    pub(super) fn new(first: Option<Vec<u8>>, inner: Box<dyn Transport + Send>) -> Self {
        Self { first, inner }
    }
}

impl Transport for FirstMessage {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        self.inner.send(message)
    }

    fn recv(&mut self, max_len: usize) -> Result<Vec<u8>, TransportError> {
        match self.first.take() {
            Some(m) if m.len() > max_len => Err(TransportError::TooLarge {
                len: m.len() as u64,
                max: max_len as u64,
            }),
            Some(m) => Ok(m),
            None => self.inner.recv(max_len),
        }
    }

    fn counters(&self) -> ByteCounters {
        self.inner.counters()
    }
}
