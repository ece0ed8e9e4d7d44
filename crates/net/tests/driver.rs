//! The driver runs a party's deferred work while its messages are still leaving: a
//! large message leaves only as fast as the peer reads it, and a peer that reads only
//! after its own computation would otherwise serialise the two parties' work.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread;
use std::time::Duration;

use privset_net::{ByteCounters, Transport, TransportError, drive};
use privset_protocols::error::ProtocolError;
use privset_protocols::party::{Outgoing, Party, PartyId};

/// Long enough never to fire when the driver overlaps; the test fails when it does.
const PATIENCE: Duration = Duration::from_secs(30);

/// A transport whose `send` blocks until the peer's `recv` takes the message (a
/// zero-capacity channel): the worst case of a full socket buffer.
struct Rendezvous {
    tx: Option<SyncSender<Vec<u8>>>,
    rx: Option<Receiver<Vec<u8>>>,
}

impl Transport for Rendezvous {
    fn send(&mut self, message: &[u8]) -> Result<(), TransportError> {
        // The listener's alert, if it fails, goes nowhere.
        let Some(tx) = &self.tx else {
            return Err(TransportError::PeerClosed);
        };
        tx.send(message.to_vec())
            .map_err(|_| TransportError::PeerClosed)
    }
    fn recv(&mut self, _max_len: usize) -> Result<Vec<u8>, TransportError> {
        let rx = self.rx.as_ref().expect("this side only sends");
        rx.recv_timeout(PATIENCE)
            .map_err(|_| TransportError::PeerClosed)
    }
    fn counters(&self) -> ByteCounters {
        ByteCounters::default()
    }
}

/// Sends one message, then has deferred work that tells the peer it has started.
struct Talker {
    message: Option<Vec<u8>>,
    working: Option<SyncSender<()>>,
}

impl Party for Talker {
    fn id(&self) -> PartyId {
        0
    }
    fn poll_outgoing(&mut self) -> Option<Outgoing> {
        self.message.take().map(|bytes| Outgoing { to: 1, bytes })
    }
    fn awaiting(&self) -> Option<PartyId> {
        None
    }
    fn handle_message(&mut self, _: PartyId, _: &[u8]) -> Result<(), ProtocolError> {
        Err(ProtocolError::ApiMisuse("the talker expects nothing"))
    }
    fn max_incoming_len(&self) -> usize {
        0
    }
    fn has_deferred_work(&self) -> bool {
        self.working.is_some()
    }
    fn do_deferred_work(&mut self) -> Result<(), ProtocolError> {
        let _ = self.working.take().expect("work once").send(());
        Ok(())
    }
    fn is_finished(&self) -> bool {
        self.message.is_none() && self.working.is_none()
    }
    fn status(&self) -> String {
        "talking".into()
    }
    fn alerts(&self, _: &ProtocolError) -> Vec<Outgoing> {
        Vec::new()
    }
}

/// Computes first (until the talker's work has started), then reads one message.
struct Listener {
    talker_working: Option<Receiver<()>>,
    received: Option<Vec<u8>>,
}

impl Party for Listener {
    fn id(&self) -> PartyId {
        1
    }
    fn poll_outgoing(&mut self) -> Option<Outgoing> {
        None
    }
    fn awaiting(&self) -> Option<PartyId> {
        self.received.is_none().then_some(0)
    }
    fn handle_message(&mut self, _: PartyId, message: &[u8]) -> Result<(), ProtocolError> {
        self.received = Some(message.to_vec());
        Ok(())
    }
    fn max_incoming_len(&self) -> usize {
        1 << 20
    }
    fn has_deferred_work(&self) -> bool {
        self.talker_working.is_some()
    }
    fn do_deferred_work(&mut self) -> Result<(), ProtocolError> {
        let rx = self.talker_working.take().expect("work once");
        match rx.recv_timeout(PATIENCE) {
            Ok(()) => Ok(()),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => Err(
                ProtocolError::ApiMisuse("the talker's work never started while it was sending"),
            ),
        }
    }
    fn is_finished(&self) -> bool {
        self.received.is_some()
    }
    fn status(&self) -> String {
        "listening".into()
    }
    fn alerts(&self, _: &ProtocolError) -> Vec<Outgoing> {
        Vec::new()
    }
}

#[test]
fn deferred_work_runs_while_the_messages_leave() {
    let (tx, rx) = sync_channel(0);
    let (working_tx, working_rx) = sync_channel(1);
    let message = vec![7u8; 1000];
    let mut talker = Talker {
        message: Some(message.clone()),
        working: Some(working_tx),
    };
    let mut listener = Listener {
        talker_working: Some(working_rx),
        received: None,
    };
    let listening = thread::spawn(move || {
        let mut t = Rendezvous {
            tx: None,
            rx: Some(rx),
        };
        drive(&mut listener, &mut t, &mut |_| {}).map(|()| listener.received)
    });
    let mut t = Rendezvous {
        tx: Some(tx),
        rx: None,
    };
    drive(&mut talker, &mut t, &mut |_| {}).unwrap();
    assert_eq!(listening.join().unwrap().unwrap(), Some(message));
}
