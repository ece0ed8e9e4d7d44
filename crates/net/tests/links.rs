//! n-party TCP links: the toy sum over mutual TLS and plaintext in a star and a mesh,
//! and the connections an acceptor must refuse (or give up on) with a clear error.

mod common;

use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::temp_dir;
use privset_net::links::{Preamble, decode_reply};
use privset_net::{
    ConnectOptions, Identity, LinkPlan, PlainTcpTransport, Security, TlsFiles, Transport,
    TransportError, certs, drive_links,
};
use privset_protocols::party::PartyId;
use privset_protocols::toy::{self, Form, ToySumConfig};

fn opts() -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_secs(20),
        handshake_timeout: Duration::from_secs(10),
        io_timeout: Duration::from_secs(20),
        ..ConnectOptions::default()
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{i}")).collect()
}

/// Runs the toy sum among `n` participants over real sockets, one thread each; returns
/// each participant's total.
fn run_session(
    n: usize,
    form: Form,
    security: impl Fn(usize) -> Security,
    identities: Option<Vec<Identity>>,
) -> Vec<u128> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addresses: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(i, listener)| {
            let plan = LinkPlan {
                addresses: addresses.clone(),
                me: i as PartyId,
                topology: form.topology(),
                session: "toy-sum/test".into(),
                security: security(i),
                listen: None,
                identities: identities.clone(),
            };
            thread::spawn(move || {
                let listener = plan.needs_listener().then_some(listener);
                let mut links = plan.open_on(listener.as_ref(), &opts()).unwrap();
                let config = ToySumConfig {
                    parties: n,
                    me: i as PartyId,
                    form,
                    value: 1000 + i as u64,
                };
                let mut party = toy::new_party(config, [i as u8; 32]).unwrap();
                drive_links(&mut party, &mut links, &mut |_| {}).unwrap();
                assert!(links.counters().sent > 0);
                party.into_output().unwrap()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn expected(n: usize) -> u128 {
    (0..n).map(|i| 1000 + i as u128).sum()
}

#[test]
fn mutual_tls_star_and_mesh() {
    let dir = temp_dir("links-tls");
    certs::generate(&dir, &names(5)).unwrap();
    for form in [Form::Star, Form::Mesh] {
        let totals = run_session(
            5,
            form,
            |i| Security::MutualTls(TlsFiles::in_dir(&dir, &format!("p{i}"))),
            Some(identities(&dir, 5)),
        );
        assert_eq!(totals, vec![expected(5); 5], "{form:?}");
    }
}

/// Participants `p0` .. `p<n-1>` of `dir`'s certificates, as a parties file lists them.
fn identities(dir: &std::path::Path, n: usize) -> Vec<Identity> {
    (0..n)
        .map(|i| Identity {
            name: format!("p{i}"),
            certificate: privset_net::tls::end_entity_certificate(&dir.join(format!("p{i}.pem")))
                .unwrap(),
        })
        .collect()
}

/// Opens participant `me`'s links of a 3-party star (hub 0) at `addresses`, presenting
/// the certificate `cert` of `dir`, on `listener` if it is the hub.
fn star_member(
    dir: &std::path::Path,
    addresses: &[String],
    me: PartyId,
    cert: &str,
    listener: Option<TcpListener>,
) -> thread::JoinHandle<Result<privset_net::LinkSet, TransportError>> {
    let plan = LinkPlan {
        addresses: addresses.to_vec(),
        me,
        topology: Form::Star.topology(),
        session: "s".into(),
        security: Security::MutualTls(TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join(format!("{cert}.pem")),
            key: dir.join(format!("{cert}.key")),
        }),
        listen: None,
        identities: Some(identities(dir, 3)),
    };
    thread::spawn(move || plan.open_on(listener.as_ref(), &opts()))
}

#[test]
fn an_outsider_with_a_certificate_from_the_same_ca_is_refused_on_both_ends() {
    let dir = temp_dir("links-identity");
    let all: Vec<String> = ["p0", "p1", "p2", "outsider"].map(String::from).to_vec();
    certs::generate(&dir, &all).unwrap();
    let bind = || TcpListener::bind("127.0.0.1:0").unwrap();
    let link_error = |r: Result<privset_net::LinkSet, TransportError>| match r {
        Err(TransportError::Link(why)) => why,
        Err(other) => panic!("expected a link refusal, got {other}"),
        Ok(_) => panic!("the outsider was linked"),
    };
    // The outsider connects as participant 2: the hub refuses it, naming both.
    let hub = bind();
    let addresses = vec![
        hub.local_addr().unwrap().to_string(),
        "127.0.0.1:9".into(),
        "127.0.0.1:9".into(),
    ];
    let h = star_member(&dir, &addresses, 0, "p0", Some(hub));
    let o = star_member(&dir, &addresses, 2, "outsider", None);
    let why = link_error(h.join().unwrap());
    assert!(
        why.contains("participant 2 is \"p2\"") && why.contains("the certificate of outsider"),
        "{why}"
    );
    let why = link_error(o.join().unwrap());
    assert!(why.contains("refused the link"), "{why}");
    // The outsider listens as the hub: participant 1 refuses it before its preamble.
    let fake_hub = bind();
    let addresses = vec![
        fake_hub.local_addr().unwrap().to_string(),
        "127.0.0.1:9".into(),
        "127.0.0.1:9".into(),
    ];
    let _h = star_member(&dir, &addresses, 0, "outsider", Some(fake_hub));
    let c = star_member(&dir, &addresses, 1, "p1", None);
    let why = link_error(c.join().unwrap());
    assert!(
        why.contains("participant 0 is \"p0\"") && why.contains("the certificate of outsider"),
        "{why}"
    );
}

#[test]
fn plaintext_star_and_mesh() {
    for form in [Form::Star, Form::Mesh] {
        let totals = run_session(4, form, |_| Security::Plaintext, None);
        assert_eq!(totals, vec![expected(4); 4], "{form:?}");
    }
}

/// Participant 0 of a 3-party mesh, accepting on a listener of its own; returns its
/// address and the thread's result.
fn acceptor(
    security: Security,
    opts: ConnectOptions,
) -> (
    String,
    thread::JoinHandle<Result<privset_net::LinkSet, TransportError>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let plan = LinkPlan {
        addresses: vec![addr.clone(), "127.0.0.1:9".into(), "127.0.0.1:9".into()],
        me: 0,
        topology: Form::Mesh.topology(),
        session: "s".into(),
        security,
        listen: None,
        identities: None,
    };
    let handle = thread::spawn(move || plan.open_on(Some(&listener), &opts));
    (addr, handle)
}

/// Connects in plaintext, presents `preamble` and returns the acceptor's reply.
fn present(addr: &str, preamble: &Preamble) -> Result<Option<String>, String> {
    let mut t = PlainTcpTransport::connect(addr, &opts()).unwrap();
    t.send(&preamble.encode()).unwrap();
    let reply = t.recv(4096).unwrap();
    decode_reply(&reply)
}

fn preamble(connector: PartyId, acceptor: PartyId, session: &str) -> Preamble {
    Preamble {
        connector,
        acceptor,
        session: session.into(),
    }
}

fn link_error(result: Result<privset_net::LinkSet, TransportError>) -> String {
    match result {
        Err(TransportError::Link(why)) => why,
        Err(other) => panic!("expected a link error, got {other}"),
        Ok(_) => panic!("expected a link error, got links"),
    }
}

#[test]
fn out_of_range_index_is_refused() {
    let (addr, handle) = acceptor(Security::Plaintext, opts());
    let reply = present(&addr, &preamble(7, 0, "s")).unwrap();
    let reason = reply.expect("refused");
    assert!(reason.contains("out of range"), "{reason}");
    let why = link_error(handle.join().unwrap());
    assert!(
        why.contains("index 7 is out of range") && why.contains("3 participants"),
        "{why}"
    );
}

#[test]
fn duplicate_index_is_refused() {
    let (addr, handle) = acceptor(Security::Plaintext, opts());
    assert_eq!(present(&addr, &preamble(1, 0, "s")), Ok(None));
    let reason = present(&addr, &preamble(1, 0, "s"))
        .unwrap()
        .expect("refused");
    assert!(reason.contains("already linked"), "{reason}");
    let why = link_error(handle.join().unwrap());
    assert!(why.contains("participant 1 is already linked"), "{why}");
}

#[test]
fn other_session_or_acceptor_is_refused() {
    let (addr, handle) = acceptor(Security::Plaintext, opts());
    let reason = present(&addr, &preamble(1, 0, "other"))
        .unwrap()
        .expect("refused");
    assert!(reason.contains("session label"), "{reason}");
    assert!(link_error(handle.join().unwrap()).contains("\"other\""));

    let (addr, handle) = acceptor(Security::Plaintext, opts());
    let reason = present(&addr, &preamble(2, 1, "s"))
        .unwrap()
        .expect("refused");
    assert!(reason.contains("meant to reach participant 1"), "{reason}");
    let _ = handle.join().unwrap().err().unwrap();
}

#[test]
fn silent_connectors_time_out() {
    let quick = ConnectOptions {
        handshake_timeout: Duration::from_secs(1),
        ..opts()
    };
    let dir = temp_dir("links-silent");
    certs::generate(&dir, &names(1)).unwrap();
    // TLS: a TCP connection that never starts the handshake.
    let (addr, handle) = acceptor(
        Security::MutualTls(TlsFiles::in_dir(&dir, "p0")),
        quick.clone(),
    );
    let start = Instant::now();
    let _silent = TcpStream::connect(&addr).unwrap();
    let err = handle.join().unwrap().err().unwrap();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    assert!(start.elapsed() < Duration::from_secs(8));
    // Plaintext: greets, then sends no preamble.
    let (addr, handle) = acceptor(Security::Plaintext, quick);
    let start = Instant::now();
    let _silent = PlainTcpTransport::connect(&addr, &opts()).unwrap();
    let err = handle.join().unwrap().err().unwrap();
    assert!(
        matches!(&err, TransportError::Timeout { what, .. } if what.contains("link preamble")),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(8));
}

#[test]
fn missing_connectors_time_out_by_name() {
    let quick = ConnectOptions {
        connect_timeout: Duration::from_secs(1),
        ..opts()
    };
    let (addr, handle) = acceptor(Security::Plaintext, quick);
    assert_eq!(present(&addr, &preamble(2, 0, "s")), Ok(None));
    let err = handle.join().unwrap().err().unwrap();
    assert!(
        matches!(&err, TransportError::Timeout { what, .. } if what.contains("participants [1]")),
        "{err}"
    );
}

#[test]
fn plan_shape_is_checked() {
    let plan = |n: usize, me: PartyId| LinkPlan {
        addresses: vec!["127.0.0.1:1".into(); n],
        me,
        topology: Form::Star.topology(),
        session: "s".into(),
        security: Security::Plaintext,
        listen: None,
        identities: None,
    };
    assert!(matches!(plan(1, 0).check(), Err(TransportError::Config(_))));
    assert!(matches!(plan(3, 3).check(), Err(TransportError::Config(_))));
    assert!(plan(3, 2).check().is_ok());
    assert_eq!(plan(4, 2).peers(), vec![0]);
    assert_eq!(plan(4, 0).peers(), vec![1, 2, 3]);
    assert!(plan(4, 0).needs_listener() && !plan(4, 2).needs_listener());
}
