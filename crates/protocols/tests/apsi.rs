//! APSI and Partial-APSI (Falzon-Markatou, "Re-visiting Authorized PSI") end to end over the in-memory pair: the client's
//! output is (authorized X) ∩ Y on random inputs and edges, forgeries and tampering are
//! refused with typed errors, and runs are unlinkable.
#![allow(clippy::result_large_err)] // PairError carries both sides' errors; tests only.

use std::collections::HashSet;
use std::sync::Arc;

use privset_crypto::bls::{self, SecretKey};
use privset_crypto::rng::SessionRng;
use privset_net::memory::{Direction, HookAction, PairError, run_pair, run_pair_with};
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::apsi::authorize::{self, JudgeConfig};
use privset_protocols::apsi::intersect::{self, ServerConfig};
use privset_protocols::apsi::signatures::SignatureSet;
use privset_protocols::apsi::{AllowList, DEFAULT_MAX_PEER_ITEMS, Mode, PartialFraction, h1};
use privset_protocols::party::Party;
use privset_protocols::{Engine, PeerMisbehaved, ProtocolError};
use sha2::Digest;

fn item(i: u64) -> Vec<u8> {
    format!("4111-{i:012}").into_bytes()
}

fn items(range: impl IntoIterator<Item = u64>) -> Vec<Vec<u8>> {
    range.into_iter().map(item).collect()
}

fn seed(rng: &mut SessionRng) -> [u8; 32] {
    let mut s = [0u8; 32];
    rng.fill(&mut s);
    s
}

struct Setup {
    key: Arc<SecretKey>,
    partial: Option<PartialFraction>,
    kc: bool,
    rng: SessionRng,
}

impl Setup {
    fn new(partial: Option<f64>, kc: bool) -> Self {
        let mut rng = SessionRng::from_os();
        Self {
            key: Arc::new(SecretKey::generate(&mut rng)),
            partial: partial.map(|p| PartialFraction::new(p).unwrap()),
            kc,
            rng,
        }
    }

    fn judge(&mut self, allowed: &[Vec<u8>]) -> Engine<authorize::Judge> {
        let config = JudgeConfig {
            partial: self.partial,
            key_consistency: self.kc,
            max_items: DEFAULT_MAX_PEER_ITEMS,
        };
        authorize::Judge::new(
            config,
            self.key.clone(),
            Arc::new(AllowList::new(allowed.iter().cloned())),
            seed(&mut self.rng),
        )
        .unwrap()
    }

    fn client(&mut self, id: &str, xs: &[Vec<u8>]) -> Engine<authorize::Client> {
        let config = authorize::ClientConfig {
            client_id: id.as_bytes().to_vec(),
            partial: self.partial,
            key_consistency: self.kc,
            key_settings: Default::default(),
        };
        authorize::Client::new(config, xs.to_vec(), seed(&mut self.rng)).unwrap()
    }

    /// Authorize with a judge that allows everything in `xs`.
    fn authorize(&mut self, id: &str, xs: &[Vec<u8>]) -> SignatureSet {
        let mut client = self.client(id, xs);
        let mut judge = self.judge(xs);
        let meters = (client.meter().unwrap(), judge.meter().unwrap());
        run_pair(&mut client, &mut judge).unwrap();
        // Both count their bulk work item by item, to the end (the CLI's bar).
        let n = xs.len() as u64;
        for (meter, phase) in [
            (
                &meters.0,
                "hashing our items to check the judge's signatures",
            ),
            (&meters.1, "hashing and signing the client's items"),
        ] {
            let r = meter.read();
            assert_eq!((r.phase, r.done, r.total), (phase, n, n), "{r:?}");
        }
        let out = judge.into_output().unwrap();
        assert_eq!(out.rejected, None);
        assert_eq!(out.items, xs.len() as u64);
        let expected_shown = match self.partial {
            None => xs.len(),
            Some(p) => p.opened(xs.len()),
        };
        assert_eq!(out.shown, expected_shown as u64);
        client.into_output().unwrap()
    }

    fn server(&mut self, ys: &[Vec<u8>]) -> Engine<intersect::Server> {
        let config = ServerConfig {
            mode: if self.partial.is_some() {
                Mode::Partial
            } else {
                Mode::Full
            },
            key_consistency: self.kc,
            judge_key: self.key.public_key(),
        };
        intersect::Server::new(config, ys.into(), seed(&mut self.rng)).unwrap()
    }

    fn intersect_client(
        &mut self,
        sigs: &SignatureSet,
        signed: Vec<(Vec<u8>, bls::G1Affine)>,
    ) -> Engine<intersect::Client> {
        intersect::Client::new(
            sigs,
            signed,
            &self.key.public_key(),
            self.kc,
            DEFAULT_MAX_PEER_ITEMS,
            seed(&mut self.rng),
        )
        .unwrap()
    }

    /// Intersect `subset` (the signed part of it) with `ys`.
    fn intersect(
        &mut self,
        sigs: &SignatureSet,
        subset: &[Vec<u8>],
        ys: &[Vec<u8>],
    ) -> Result<intersect::ClientOutput, PairError> {
        let (signed, _) = sigs.select(subset);
        let mut client = self.intersect_client(sigs, signed);
        let mut server = self.server(ys);
        run_pair(&mut client, &mut server)?;
        assert_eq!(server.into_output().unwrap().items, ys.len() as u64);
        Ok(client.into_output().unwrap())
    }
}

fn plaintext(authorized: &[Vec<u8>], subset: &[Vec<u8>], ys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let auth: HashSet<&Vec<u8>> = authorized.iter().collect();
    let y: HashSet<&Vec<u8>> = ys.iter().collect();
    subset
        .iter()
        .filter(|x| auth.contains(x) && y.contains(x))
        .cloned()
        .collect()
}

const MODES: [(Option<f64>, bool); 4] = [
    (None, false),
    (Some(0.3), true),
    (Some(0.3), false),
    (Some(1.0), true),
];

#[test]
fn output_is_authorized_subset_intersect_y_on_random_inputs() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let mut rng = SessionRng::from_os();
        for _ in 0..2 {
            let n = 20 + rng.below(60);
            let xs: Vec<Vec<u8>> = items((0..n).map(|_| rng.below(400)))
                .into_iter()
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let ys: Vec<Vec<u8>> = items((0..80).map(|_| rng.below(400)))
                .into_iter()
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let sigs = s.authorize("acme", &xs);
            // A random subset of the authorized items, plus items added afterwards
            // (some of which the server holds).
            let mut subset: Vec<Vec<u8>> =
                xs.iter().filter(|_| rng.below(3) != 0).cloned().collect();
            subset.extend(items(1000..1005));
            let mut ys = ys;
            ys.extend(items(1000..1005));
            let out = s.intersect(&sigs, &subset, &ys).unwrap();
            let expected = plaintext(&xs, &subset, &ys);
            assert_eq!(out.intersection, expected, "mode {partial:?} kc {kc}");
            assert_eq!(out.server_items, ys.len() as u64);
            assert_eq!(out.used, subset.len() as u64 - 5);
        }
    }
}

#[test]
fn edges() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        type Sets = (Vec<Vec<u8>>, Vec<Vec<u8>>);
        let cases: Vec<Sets> = vec![
            (vec![], vec![]),
            (vec![], items(0..5)),
            (items(0..5), vec![]),
            (items(0..1), items(0..1)),
            (items(0..1), items(1..2)),
            (items(0..10), items(10..20)),
            (items(0..10), items(0..10)),
            (items(0..1), items(0..1000)),
            (items(0..300), items(299..300)),
        ];
        for (xs, ys) in cases {
            let sigs = s.authorize("c", &xs);
            let out = s.intersect(&sigs, &xs, &ys).unwrap();
            assert_eq!(
                out.intersection,
                plaintext(&xs, &xs, &ys),
                "{} vs {}",
                xs.len(),
                ys.len()
            );
        }
    }
}

#[test]
fn full_coverage_partial_equals_apsi() {
    let xs = items(0..40);
    let ys = items(20..70);
    let mut full = Setup::new(None, false);
    let mut partial = Setup::new(Some(1.0), true);
    let a = full.authorize("c", &xs);
    let b = partial.authorize("c", &xs);
    let oa = full.intersect(&a, &xs, &ys).unwrap();
    let ob = partial.intersect(&b, &xs, &ys).unwrap();
    assert_eq!(oa, ob);
    assert_eq!(oa.intersection, items(20..40));
}

#[test]
fn forged_and_foreign_signatures_do_not_work() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..10);
        let ys = items(5..20);
        let sigs = s.authorize("alice", &xs);
        // An item added after authorization that the server holds, carried with the
        // signature of an item the server does not hold, with a random point, and with
        // H1(x || ID) itself (no key): none of them matches.
        let extra = item(15);
        let mut signed: Vec<_> = sigs.select(&xs).0;
        signed.push((extra.clone(), sigs.signatures[0]));
        signed.push((extra.clone(), bls::to_affine_batch(&[h1(b"x", b"y")])[0]));
        signed.push((
            extra.clone(),
            bls::to_affine_batch(&[h1(b"alice", &extra)])[0],
        ));
        let mut client = s.intersect_client(&sigs, signed);
        let mut server = s.server(&ys);
        run_pair(&mut client, &mut server).unwrap();
        let out = client.into_output().unwrap();
        assert_eq!(out.intersection, items(5..10), "mode {partial:?}");
        // Alice's signatures presented under Bob's ID.
        let mut as_bob = sigs.clone();
        as_bob.client_id = b"bob".to_vec();
        let out = s.intersect(&as_bob, &xs, &ys);
        match (partial, kc) {
            // Partial with key consistency: the judge's token names Alice.
            (Some(_), true) => {
                let e = out.unwrap_err();
                assert!(
                    matches!(
                        e.error(),
                        Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                            what: "key-consistency token",
                            ..
                        }))
                    ),
                    "{e}"
                );
            }
            _ => assert_eq!(out.unwrap().intersection, Vec::<Vec<u8>>::new()),
        }
    }
}

#[test]
fn unsigned_items_are_left_out_and_reported() {
    let mut s = Setup::new(None, false);
    let sigs = s.authorize("c", &items(0..5));
    let (signed, unsigned) = sigs.select(&items(3..8));
    assert_eq!(signed.len(), 2);
    assert_eq!(unsigned, items(5..8));
}

#[test]
fn tampered_judge_signatures_are_rejected() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..8);
        let mut client = s.client("c", &xs);
        let mut judge = s.judge(&xs);
        // Judge -> client is B->A; the last judge message carries the signatures. Swap
        // two signatures: each is a valid point, but no longer on its item.
        let last = if partial.is_some() { 2 } else { 1 };
        let e = run_pair_with(&mut client, &mut judge, &mut |d, i, m| {
            if d == Direction::BtoA && i == last {
                let h = privset_protocols::wire::HEADER_LEN;
                let (a, b) = m[h..].split_at_mut(48);
                a.swap_with_slice(&mut b[..48]);
            }
            HookAction::Deliver
        })
        .unwrap_err();
        assert!(
            matches!(
                e.error(),
                Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                    what: "judge signatures",
                    source: bls::BlsError::BadSignature
                }))
            ),
            "{e}"
        );
    }
}

#[test]
fn wrong_proofs_and_different_exponents_are_rejected() {
    // A tampered response in the exponent-equality proof.
    let mut s = Setup::new(Some(0.5), true);
    let xs = items(0..10);
    let mut client = s.client("c", &xs);
    let mut judge = s.judge(&xs);
    let e = run_pair_with(&mut client, &mut judge, &mut |d, i, m| {
        if d == Direction::AtoB && i == 2 {
            let n = m.len();
            m[n - 1] ^= 1;
        }
        HookAction::Deliver
    })
    .unwrap_err();
    assert!(
        matches!(
            e.error(),
            Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                what: "exponent-equality proof",
                ..
            }))
        ),
        "{e}"
    );
    // A commitment under another exponent r' (every item opened, so it is caught).
    let mut s = Setup::new(Some(1.0), false);
    let mut client = s.client("c", &xs);
    let mut judge = s.judge(&xs);
    let mut rng = SessionRng::from_os();
    let other = bls::random_scalar(&mut rng);
    let forged = bls::encode_g1(&bls::to_affine_batch(&[h1(b"c", &xs[0]) * other])[0]);
    let e = run_pair_with(&mut client, &mut judge, &mut |d, i, m| {
        if d == Direction::AtoB && i == 1 {
            let h = privset_protocols::wire::HEADER_LEN;
            m[h..h + 48].copy_from_slice(&forged);
        }
        HookAction::Deliver
    })
    .unwrap_err();
    assert!(
        matches!(
            e.error(),
            Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                what: "exponent-equality proof",
                source: bls::BlsError::BadProof
            }))
        ),
        "{e}"
    );
    // Intersect with an r other than the authorized one: the key-consistency proof
    // fails at the server.
    let mut s = Setup::new(Some(0.3), true);
    let sigs = s.authorize("c", &xs);
    let mut other_r = sigs.clone();
    other_r.secret = Some(bls::random_scalar(&mut rng));
    let e = s.intersect(&other_r, &xs, &xs).unwrap_err();
    assert!(
        matches!(
            e.error(),
            Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                what: "key-consistency proof",
                source: bls::BlsError::BadProof
            }))
        ),
        "{e}"
    );
}

#[test]
fn policy_rejections_are_typed() {
    for partial in [None, Some(1.0), Some(0.5)] {
        let mut s = Setup::new(partial, true);
        let xs = items(0..10);
        let mut client = s.client("c", &xs);
        // The judge allows none of them: whatever is shown fails the policy.
        let mut judge = s.judge(&items(100..110));
        let e = run_pair(&mut client, &mut judge).unwrap_err();
        assert!(
            matches!(e.error(), Some(ProtocolError::Rejected(reason)) if reason.contains("allowlist")),
            "{e}"
        );
        let out = judge.into_output().unwrap();
        assert!(out.rejected.is_some());
    }
}

/// A judge whose policy answers with terminal escape sequences.
struct Hostile;

impl privset_protocols::apsi::Policy for Hostile {
    fn check(&self, _: &[u8], _: &[Vec<u8>]) -> Result<(), String> {
        Err("\x1b[2J\x1b[Hall clear \u{2713}".into())
    }
}

#[test]
fn a_reject_reason_reaches_the_client_without_control_characters() {
    let mut s = Setup::new(None, true);
    let mut client = s.client("c", &items(0..3));
    let config = JudgeConfig {
        partial: None,
        key_consistency: true,
        max_items: DEFAULT_MAX_PEER_ITEMS,
    };
    let mut judge =
        authorize::Judge::new(config, s.key.clone(), Arc::new(Hostile), seed(&mut s.rng)).unwrap();
    let e = run_pair(&mut client, &mut judge).unwrap_err();
    assert!(
        matches!(e.error(), Some(ProtocolError::Rejected(reason))
            if reason == "\\u{1b}[2J\\u{1b}[Hall clear \u{2713}"),
        "{e}"
    );
}

#[test]
fn mismatched_settings_are_refused_before_items_leave() {
    // Client wants Partial-APSI, judge runs APSI.
    let mut s = Setup::new(Some(0.2), true);
    let mut client = s.client("c", &items(0..5));
    let mut full = Setup::new(None, true);
    let mut judge = full.judge(&items(0..5));
    let mut saw_items = false;
    let e = run_pair_with(&mut client, &mut judge, &mut |d, i, _| {
        saw_items |= d == Direction::AtoB && i >= 1;
        HookAction::Deliver
    })
    .unwrap_err();
    assert!(
        matches!(e.error(), Some(ProtocolError::Incompatible(_))),
        "{e}"
    );
    assert!(!saw_items);
    // The judge asks to open more than the client agreed to.
    let mut strict = Setup::new(Some(0.5), true);
    let mut judge = strict.judge(&items(0..5));
    let mut client = s.client("c", &items(0..5));
    let e = run_pair(&mut client, &mut judge).unwrap_err();
    assert!(
        matches!(e.error(), Some(ProtocolError::Incompatible(_))),
        "{e}"
    );
    // A server trusting another judge.
    let mut a = Setup::new(None, false);
    let sigs = a.authorize("c", &items(0..5));
    let mut b = Setup::new(None, false);
    let (signed, _) = sigs.select(&items(0..5));
    let mut client = intersect::Client::new(
        &sigs,
        signed,
        &a.key.public_key(),
        false,
        DEFAULT_MAX_PEER_ITEMS,
        [1; 32],
    )
    .unwrap();
    let mut server = b.server(&items(0..5));
    let e = run_pair(&mut client, &mut server).unwrap_err();
    assert!(
        matches!(e.error(), Some(ProtocolError::Incompatible(_))),
        "{e}"
    );
    // The operator's judge key differs from the one in the signature file.
    assert!(matches!(
        intersect::Client::new(&sigs, vec![], &b.key.public_key(), false, 10, [1; 32]),
        Err(ProtocolError::Config(_))
    ));
}

/// The authorize client states its key settings (the judge holds no set and states
/// none, so nothing is compared between them) and records them in the signature set;
/// every intersect client made from the set states them, so a server that makes its
/// keys otherwise is refused before any item leaves. A version 1 signature file (no
/// settings field) still loads, recording none.
#[test]
fn key_settings_recorded_at_authorize_are_stated_at_intersect() {
    let settings = |normalize: &str| {
        AgreedSettings::new()
            .with("key-columns", "1")
            .with("normalize", normalize)
            .with("hash-ids", "none")
    };
    let mut s = Setup::new(None, false);
    let xs = items(0..10);
    let config = authorize::ClientConfig {
        client_id: b"c".to_vec(),
        partial: None,
        key_consistency: false,
        key_settings: settings("email"),
    };
    let mut client = authorize::Client::new(config, xs.clone(), [3; 32]).unwrap();
    let mut judge = s.judge(&xs);
    run_pair(&mut client, &mut judge).unwrap();
    let sigs = client.into_output().unwrap();
    assert_eq!(sigs.key_settings, Some(settings("email")));
    let bytes = sigs.encode();
    let back = SignatureSet::decode(&bytes).unwrap();
    assert_eq!(back.key_settings, sigs.key_settings);
    for (server_settings, agrees) in [(settings("trim"), false), (settings("email"), true)] {
        let (signed, _) = back.select(&xs);
        let mut client = s.intersect_client(&back, signed);
        let mut server = s.server(&items(5..15));
        server.agree(server_settings).unwrap();
        let mut saw_items = false;
        let result = run_pair_with(&mut client, &mut server, &mut |d, i, _| {
            saw_items |= i >= 1 && d == Direction::BtoA;
            HookAction::Deliver
        });
        if agrees {
            result.unwrap();
            assert_eq!(client.into_output().unwrap().intersection, items(5..10));
        } else {
            let e = result.unwrap_err();
            assert!(
                matches!(e.error(), Some(ProtocolError::Incompatible(m))
                    if m.contains("normalize: the client uses normalize email, the server uses normalize trim")),
                "{e}"
            );
            assert!(!saw_items);
        }
    }
    // Version 1: no settings field (after the key-consistency token), none recorded.
    let mut v1 = bytes[..bytes.len() - 32].to_vec();
    v1[17] = 1;
    let at = 17 + 1 + 1 + 96 + 4 + 1 + 33 + 145;
    let len = u16::from_be_bytes([v1[at], v1[at + 1]]) as usize;
    assert_eq!(&v1[at + 2..at + 2 + 12], b"key-columns=");
    v1.drain(at..at + 2 + len);
    let digest = sha2::Sha256::digest(&v1);
    v1.extend_from_slice(&digest);
    let old = SignatureSet::decode(&v1).unwrap();
    assert_eq!(old.key_settings, None);
    assert_eq!(old.items, sigs.items);
}

#[test]
fn runs_are_unlinkable() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..30);
        let ys = items(10..40);
        let sigs = s.authorize("c", &xs);
        let mut transcripts: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..2 {
            let (signed, _) = sigs.select(&xs);
            let mut client = s.intersect_client(&sigs, signed);
            let mut server = s.server(&ys);
            let mut server_messages = Vec::new();
            run_pair_with(&mut client, &mut server, &mut |d, _, m| {
                if d == Direction::BtoA {
                    server_messages.push(m.clone());
                }
                HookAction::Deliver
            })
            .unwrap();
            assert_eq!(client.into_output().unwrap().intersection, items(10..30));
            transcripts.push(server_messages);
        }
        // No 16-byte tag, no 48-byte element, and not S, appear in both runs.
        let h = privset_protocols::wire::HEADER_LEN;
        let chunks = |m: &Vec<u8>, w: usize| -> HashSet<Vec<u8>> {
            m[h..].chunks(w).map(<[u8]>::to_vec).collect()
        };
        for (a, b) in transcripts[0].iter().zip(&transcripts[1]).skip(1) {
            assert_ne!(a, b);
            for w in [16, 48, 96] {
                let common = chunks(a, w).intersection(&chunks(b, w)).count();
                assert_eq!(
                    common, 0,
                    "mode {partial:?}: {w}-byte chunks repeat across runs"
                );
            }
        }
    }
}

#[test]
fn signature_files_round_trip_and_detect_corruption() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..20);
        let sigs = s.authorize("c", &xs);
        let bytes = sigs.encode();
        let back = SignatureSet::decode(&bytes).unwrap();
        assert_eq!(back.items, sigs.items);
        assert_eq!(back.signatures, sigs.signatures);
        assert_eq!(back.secret, sigs.secret);
        assert_eq!(back.kc_token, sigs.kc_token);
        assert_eq!(back.judge_key, sigs.judge_key);
        let out = s.intersect(&back, &xs, &items(5..10)).unwrap();
        assert_eq!(out.intersection, items(5..10));
        let mut bad = bytes.clone();
        bad[200] ^= 1;
        assert!(SignatureSet::decode(&bad).is_err());
        assert!(SignatureSet::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(SignatureSet::decode(b"not a file").is_err());
    }
}

#[test]
fn a_bad_server_key_or_result_is_rejected() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..12);
        let sigs = s.authorize("c", &xs);
        // The server's messages: hello (0), key (1), [request (2)], result (last).
        let mut tamper = |edit: &dyn Fn(u32, &mut Vec<u8>)| {
            let (signed, _) = sigs.select(&xs);
            let mut client = s.intersect_client(&sigs, signed);
            let mut server = s.server(&xs);
            run_pair_with(&mut client, &mut server, &mut |d, i, m| {
                if d == Direction::BtoA {
                    edit(i, m);
                }
                HookAction::Deliver
            })
            .unwrap_err()
        };
        let h = privset_protocols::wire::HEADER_LEN;
        // S replaced by the identity of G2 (compressed: 0xc0 then zeros).
        let e = tamper(&|i, m| {
            if i == 1 {
                m[h..].fill(0);
                m[h] = 0xc0;
            }
        });
        assert!(
            matches!(
                e.error(),
                Some(ProtocolError::PeerMisbehaved(PeerMisbehaved::InvalidBls {
                    what: "server key S",
                    ..
                }))
            ),
            "mode {partial:?}: {e}"
        );
        // S not on the curve.
        let e = tamper(&|i, m| {
            if i == 1 {
                m[h + 5] ^= 0x40;
            }
        });
        assert!(
            matches!(
                e.error(),
                Some(ProtocolError::PeerMisbehaved(
                    PeerMisbehaved::InvalidBls { .. }
                ))
            ),
            "mode {partial:?}: {e}"
        );
        // A result one tag short.
        let last = if partial.is_some() { 3 } else { 2 };
        let e = tamper(&|i, m| {
            if i == last {
                m.truncate(m.len() - 16);
            }
        });
        assert!(e.error().is_some(), "mode {partial:?}: {e}");
    }
}

/// A party re-created from the same seed and fed the same messages sends the same bytes:
/// the server's order of its items, `s` and `t` are drawn from the seed at the start of
/// the session, not at construction from elsewhere.
#[test]
fn replaying_from_the_seed_is_byte_identical() {
    for (partial, kc) in MODES {
        let mut s = Setup::new(partial, kc);
        let xs = items(0..12);
        let ys = items(6..30);
        let sigs = s.authorize("c", &xs);
        let config = ServerConfig {
            mode: sigs.mode,
            key_consistency: kc,
            judge_key: s.key.public_key(),
        };
        let ys: Arc<[Vec<u8>]> = ys.into();
        let run = || {
            let (signed, _) = sigs.select(&xs);
            let mut client = intersect::Client::new(
                &sigs,
                signed,
                &s.key.public_key(),
                kc,
                DEFAULT_MAX_PEER_ITEMS,
                [7; 32],
            )
            .unwrap();
            let mut server = intersect::Server::new(config.clone(), ys.clone(), [9; 32]).unwrap();
            let mut messages = Vec::new();
            run_pair_with(&mut client, &mut server, &mut |d, _, m| {
                messages.push((d == Direction::AtoB, m.clone()));
                HookAction::Deliver
            })
            .unwrap();
            assert_eq!(client.into_output().unwrap().intersection, items(6..12));
            messages
        };
        assert_eq!(run(), run(), "mode {partial:?} kc {kc}");
    }
}
