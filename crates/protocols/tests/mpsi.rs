//! Multi-party PSI (Bay et al., Miyaji-Nishida, Hazay-Venkitasubramaniam) over the
//! in-memory n-party harness: every protocol on each threshold scheme (ElGamal with the
//! session's joint key, Paillier from a dealer) against the plaintext intersection on
//! random sets and the edge cases, and the errors a misbehaving participant causes.
#![allow(clippy::result_large_err)] // HarnessError carries every party's error; tests only.

use std::collections::HashSet;
use std::sync::Arc;

use privset_crypto::rng::SessionRng;
use privset_crypto::tahe::paillier::{Dealer, Params, insecure_test_primes};
use privset_net::memory::{HarnessError, HookAction, LinkHook, run_parties_with};
use privset_protocols::mpsi::{
    self, KIND_FILTER, KIND_POLYNOMIALS, KIND_PROOF, KIND_RELAYED, KIND_SHARES, KIND_VERDICT,
    MpsiConfig, MpsiKey, MpsiOutput, MpsiProtocol, Role,
};
use privset_protocols::party::{OutputParty, Party, PartyId};
use privset_protocols::wire::HEADER_LEN;
use privset_protocols::{PeerMisbehaved, ProtocolError};

type Set = Vec<Vec<u8>>;

/// The threshold scheme of a test run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    ElGamal,
    /// Threshold Paillier on a 1,024-bit key dealt from fixed test primes.
    Paillier,
}

const SCHEMES: [Scheme; 2] = [Scheme::ElGamal, Scheme::Paillier];

/// Each participant's key: nothing to give for ElGamal; for Paillier the public key for
/// everyone and holder `i`'s share for participant `i`.
fn keys(scheme: Scheme, participants: usize) -> Vec<MpsiKey> {
    match scheme {
        Scheme::ElGamal => vec![MpsiKey::Joint; participants],
        Scheme::Paillier => {
            let holders = participants as u32 - 1;
            let (p, q) = insecure_test_primes(1024).expect("test primes");
            let params = Params {
                modulus_bits: 1024,
                s: 1,
                parties: holders,
                threshold: holders,
            };
            let (public, shares) = Dealer::new(params)
                .unwrap()
                .deal_with_primes(&p, &q, &mut SessionRng::from_seed([5; 32]))
                .unwrap();
            let public = Arc::new(public);
            std::iter::once(None)
                .chain(shares.into_iter().map(|s| Some(Arc::new(s))))
                .map(|share| MpsiKey::Dealt {
                    public: Arc::clone(&public),
                    share,
                })
                .collect()
        }
    }
}

fn build(
    scheme: Scheme,
    protocol: MpsiProtocol,
    sets: &[Set],
    max_items: u64,
) -> Vec<Box<dyn OutputParty<MpsiOutput>>> {
    build_with_keys(protocol, sets, max_items, keys(scheme, sets.len()))
}

fn build_with_keys(
    protocol: MpsiProtocol,
    sets: &[Set],
    max_items: u64,
    keys: Vec<MpsiKey>,
) -> Vec<Box<dyn OutputParty<MpsiOutput>>> {
    let names = mpsi::default_names(protocol, sets.len());
    sets.iter()
        .zip(keys)
        .enumerate()
        .map(|(i, (set, key))| {
            let config = MpsiConfig {
                protocol,
                names: names.clone(),
                me: i as PartyId,
                items: set.clone(),
                max_items,
                max_peer_items: 1 << 24,
                key,
            };
            mpsi::new_party(config, [i as u8 + 7; 32]).expect("party")
        })
        .collect()
}

fn run_with(
    scheme: Scheme,
    protocol: MpsiProtocol,
    sets: &[Set],
    max_items: u64,
    hook: &mut LinkHook<'_>,
) -> Result<Vec<MpsiOutput>, HarnessError> {
    let mut parties = build(scheme, protocol, sets, max_items);
    {
        let mut refs: Vec<&mut dyn Party> = parties
            .iter_mut()
            .map(|p| p.as_mut() as &mut dyn Party)
            .collect();
        run_parties_with(&mut refs, hook)?;
    }
    Ok(parties
        .into_iter()
        .map(|p| p.into_output().expect("finished"))
        .collect())
}

fn run(scheme: Scheme, protocol: MpsiProtocol, sets: &[Set]) -> Vec<MpsiOutput> {
    run_with(scheme, protocol, sets, 0, &mut |_, _, _, _| {
        HookAction::Deliver
    })
    .expect("run")
}

/// The items of `of` held by every set of `holders`, in `of`'s order, once each.
fn plain(of: &Set, holders: &[Set]) -> Set {
    let mut seen = HashSet::new();
    of.iter()
        .filter(|x| holders.iter().all(|s| s.contains(x)))
        .filter(|x| seen.insert((*x).clone()))
        .cloned()
        .collect()
}

/// Runs `protocol` and checks every participant's output against the plaintext answer.
/// `sets[0]` is the server's set (Bay, Hazay) or empty (the dealer, Miyaji-Nishida).
fn check(scheme: Scheme, protocol: MpsiProtocol, sets: &[Set]) {
    let outputs = run(scheme, protocol, sets);
    match protocol {
        MpsiProtocol::MiyajiNishida => {
            assert_eq!(
                outputs[0],
                MpsiOutput {
                    role: Role::Dealer,
                    intersection: None
                }
            );
            for (i, out) in outputs.iter().enumerate().skip(1) {
                assert_eq!(out.role, Role::Party);
                assert_eq!(
                    out.intersection.as_ref(),
                    Some(&plain(&sets[i], &sets[1..])),
                    "{scheme:?} {protocol:?}, party {i} of {}",
                    sets.len()
                );
            }
        }
        _ => {
            assert_eq!(outputs[0].role, Role::Server);
            assert_eq!(
                outputs[0].intersection.as_ref(),
                Some(&plain(&sets[0], &sets[1..])),
                "{scheme:?} {protocol:?}, {} participants",
                sets.len()
            );
            for out in &outputs[1..] {
                assert_eq!(
                    out,
                    &MpsiOutput {
                        role: Role::Client,
                        intersection: None
                    }
                );
            }
        }
    }
}

fn item(tag: &str, i: u64) -> Vec<u8> {
    format!("{tag}-{i:06}").into_bytes()
}

/// `holders` sets sharing `common` items, each with `own[i]` items of its own, and for
/// Bay / Hazay the server's set as `sets[0]` (with `common` and its own); for
/// Miyaji-Nishida `sets[0]` is the dealer's (empty).
fn random_sets(
    protocol: MpsiProtocol,
    holders: usize,
    common: u64,
    own: &[u64],
    seed: u8,
) -> Vec<Set> {
    let mut rng = SessionRng::from_seed([seed; 32]);
    let shared: Set = (0..common)
        .map(|i| item("common", rng.next_u64() % 1_000_000 + i * 1_000_000))
        .collect();
    let mut sets: Vec<Set> = Vec::new();
    for p in 0..=holders {
        if p == 0 && !protocol_has_hub_set(protocol) {
            sets.push(Vec::new());
            continue;
        }
        let mut s = shared.clone();
        s.extend((0..own[p % own.len()]).map(|i| item(&format!("p{p}"), i)));
        // Some items held by all but one participant: they must not come out.
        if p != 1 {
            s.push(item("almost", 0));
        }
        rng.shuffle(&mut s);
        sets.push(s);
    }
    sets
}

/// Sets for the failure tests: five common items and ten of each holder's own, or for
/// Miyaji-Nishida on Paillier (whose filter positions each cost a proof) two and three.
fn small_sets(scheme: Scheme, protocol: MpsiProtocol, holders: usize, seed: u8) -> Vec<Set> {
    if scheme == Scheme::Paillier && protocol == MpsiProtocol::MiyajiNishida {
        random_sets(protocol, holders, 2, &[3], seed)
    } else {
        random_sets(protocol, holders, 5, &[10], seed)
    }
}

fn protocol_has_hub_set(p: MpsiProtocol) -> bool {
    p != MpsiProtocol::MiyajiNishida
}

#[test]
fn random_sets_for_3_5_and_10_participants() {
    for scheme in SCHEMES {
        for protocol in MpsiProtocol::ALL {
            for (holders, seed) in [(2usize, 1u8), (4, 2), (9, 3)] {
                let sets = match (scheme, protocol) {
                    // Miyaji-Nishida on Paillier: every party checks every other's proof
                    // for every filter position (about 10 ms each on the test key), and
                    // the filter has ~45 positions per unit of the bound: small sets.
                    (Scheme::Paillier, MpsiProtocol::MiyajiNishida) => {
                        random_sets(protocol, holders, 3, &[4, 2, 1], seed)
                    }
                    _ => random_sets(protocol, holders, 9, &[20, 7, 33], seed),
                };
                check(scheme, protocol, &sets);
            }
        }
    }
}

#[test]
fn edge_cases() {
    edge_cases_on(Scheme::ElGamal, &MpsiProtocol::ALL);
    // Miyaji-Nishida's filters grow with the largest set (200 items here): its Paillier
    // edges are `miyaji_nishida_edges_on_paillier`.
    edge_cases_on(Scheme::Paillier, &[MpsiProtocol::Bay, MpsiProtocol::Hazay]);
}

#[test]
fn miyaji_nishida_edges_on_paillier() {
    let protocol = MpsiProtocol::MiyajiNishida;
    let check = |sets: &[Set]| check(Scheme::Paillier, protocol, sets);
    let a: Set = (0..4).map(|i| item("a", i)).collect();
    let b: Set = (0..4).map(|i| item("b", i)).collect();
    let one = vec![item("x", 1)];
    check(&[Vec::new(), a.clone(), b.clone(), a.clone()]);
    check(&[Vec::new(), a.clone(), a.clone(), a.clone()]);
    check(&[Vec::new(), a.clone(), Vec::new(), a.clone()]);
    check(&[Vec::new(), one.clone(), one.clone()]);
    check(&[Vec::new(), one.clone(), vec![item("x", 2)]]);
    let mut dup = a.clone();
    dup.extend(a[..2].iter().cloned());
    check(&[Vec::new(), dup, a.clone(), one]);
}

fn edge_cases_on(scheme: Scheme, protocols: &[MpsiProtocol]) {
    let check = |protocol, sets: &[Set]| check(scheme, protocol, sets);
    for &protocol in protocols {
        let hub = |s: Set| {
            if protocol_has_hub_set(protocol) {
                s
            } else {
                Vec::new()
            }
        };
        let a: Set = (0..12).map(|i| item("a", i)).collect();
        let b: Set = (0..12).map(|i| item("b", i)).collect();
        // Disjoint sets: empty intersection.
        check(protocol, &[hub(a.clone()), b.clone(), a.clone(), a.clone()]);
        // Everything shared.
        check(protocol, &[hub(a.clone()), a.clone(), a.clone(), a.clone()]);
        // One set holder with an empty set.
        check(
            protocol,
            &[hub(a.clone()), a.clone(), Vec::new(), a.clone()],
        );
        // One item each, the same and different.
        let one = vec![item("x", 1)];
        check(protocol, &[hub(one.clone()), one.clone(), one.clone()]);
        check(
            protocol,
            &[hub(one.clone()), one.clone(), vec![item("x", 2)]],
        );
        // Very different sizes.
        let big: Set = (0..200).map(|i| item("a", i)).collect();
        check(
            protocol,
            &[hub(a.clone()), big.clone(), one.clone(), a.clone()],
        );
        check(protocol, &[hub(big.clone()), a.clone(), big.clone()]);
        // Duplicates in an input are one item.
        let mut dup = a.clone();
        dup.extend(a[..5].iter().cloned());
        check(protocol, &[hub(dup.clone()), dup.clone(), a.clone()]);
    }
    // The server with an empty set learns an empty intersection.
    for protocol in [MpsiProtocol::Bay, MpsiProtocol::Hazay] {
        let a: Set = (0..12).map(|i| item("a", i)).collect();
        check(protocol, &[Vec::new(), a.clone(), a.clone()]);
    }
}

#[test]
fn miyaji_nishida_bound_is_the_largest_announced() {
    let a: Set = (0..40).map(|i| item("a", i)).collect();
    let sets = vec![Vec::new(), a.clone(), a[..30].to_vec(), a[10..].to_vec()];
    let outputs = run_with(
        Scheme::ElGamal,
        MpsiProtocol::MiyajiNishida,
        &sets,
        64,
        &mut |_, _, _, _| HookAction::Deliver,
    )
    .expect("run");
    assert_eq!(outputs[1].intersection.as_ref(), Some(&a[10..30].to_vec()));
    // A set above the announced bound is refused before anything is sent.
    let names = mpsi::default_names(MpsiProtocol::MiyajiNishida, 3);
    let config = MpsiConfig {
        protocol: MpsiProtocol::MiyajiNishida,
        names,
        me: 1,
        items: a.clone(),
        max_items: 8,
        max_peer_items: 1 << 20,
        key: Default::default(),
    };
    assert!(matches!(
        mpsi::new_party(config, [1; 32]),
        Err(ProtocolError::Config(_))
    ));
}

fn kind_of(message: &[u8]) -> u8 {
    // The kind follows magic (4), version (1), protocol (1).
    message[6]
}

/// The error of the participant that detected the fault, and who it blames.
fn failure(case: &str, result: Result<Vec<MpsiOutput>, HarnessError>) -> (PartyId, ProtocolError) {
    match result {
        Err(HarnessError::Failed { party, error, .. }) => (party, error),
        Err(other) => panic!("{case}: expected a participant's failure, got {other}"),
        Ok(_) => panic!("{case}: the run succeeded"),
    }
}

#[test]
fn bad_decryption_shares_are_blamed_on_their_sender() {
    for (scheme, protocol) in SCHEMES
        .into_iter()
        .flat_map(|s| MpsiProtocol::ALL.map(|p| (s, p)))
    {
        let sets = small_sets(scheme, protocol, 3, 9);
        let (party, error) = failure(
            &format!("{scheme:?} {protocol:?} bad shares"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _to, _, m| {
                if from == 2 && kind_of(m) == KIND_SHARES {
                    let last = m.len() - 40;
                    m[last] ^= 1;
                }
                HookAction::Deliver
            }),
        );
        let text = error.to_string();
        assert!(
            matches!(error, ProtocolError::PeerMisbehaved(PeerMisbehaved::Threshold { ref party, .. }) if party.ends_with(" 2")),
            "{scheme:?} {protocol:?}: participant {party} failed with {text}"
        );
    }
}

/// Miyaji-Nishida's parties send their shares to the chunk's relay (participant 1 for
/// the first chunk) and, once the relay has passed them on, their proofs to everybody:
/// a party that sends the relay valid but wrong shares (two swapped), or a proof that
/// does not verify, is named; so is a relay that passes on wrong shares or sums.
#[test]
fn miyaji_nishida_names_wrong_shares_sent_to_one_party_and_bad_proofs() {
    let protocol = MpsiProtocol::MiyajiNishida;
    for scheme in SCHEMES {
        let sets = small_sets(scheme, protocol, 3, 13);
        let swapped = failure(
            &format!("{scheme:?} shares swapped for participant 1"),
            run_with(scheme, protocol, &sets, 0, &mut |from, to, _, m| {
                if from == 2 && to == 1 && kind_of(m) == KIND_SHARES {
                    let body = &mut m[HEADER_LEN..];
                    let (a, b) = body.split_at_mut(32);
                    a.swap_with_slice(&mut b[..32]);
                }
                HookAction::Deliver
            }),
        );
        let bad_proof = failure(
            &format!("{scheme:?} bad proof"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _, _, m| {
                if from == 2 && kind_of(m) == KIND_PROOF {
                    *m.last_mut().expect("a body") ^= 1;
                }
                HookAction::Deliver
            }),
        );
        for (case, (participant, error)) in [("swapped", swapped), ("proof", bad_proof)] {
            assert!(
                matches!(error, ProtocolError::PeerMisbehaved(PeerMisbehaved::Threshold { ref party, .. }) if party.ends_with(" 2")),
                "{scheme:?} {case}: participant {participant} failed with {error}"
            );
        }
        // What the relay of the first chunk passes on is changed on its way, the same
        // for every party. Paillier: the first forwarded share, the relay's own, fails
        // the relay's proof at every other party, which names the relay. ElGamal: the
        // first two sums swapped give the other parties another seed than the relay's,
        // so the relay names the first party whose proof names it and that party names
        // the relay, whichever checks first (a relay that proves with the sums it sent
        // is named after its verdict: the conformance suite's `dishonest_relay`).
        let (participant, error) = failure(
            &format!("{scheme:?} wrong relayed shares"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _, _, m| {
                if from == 1 && kind_of(m) == KIND_RELAYED {
                    let body = &mut m[HEADER_LEN..];
                    match scheme {
                        Scheme::ElGamal => {
                            let (a, b) = body.split_at_mut(32);
                            a.swap_with_slice(&mut b[..32]);
                        }
                        Scheme::Paillier => body[10] ^= 1,
                    }
                }
                HookAction::Deliver
            }),
        );
        let named = |suffix: &str| matches!(&error, ProtocolError::PeerMisbehaved(PeerMisbehaved::Threshold { party, .. }) if party.ends_with(suffix));
        let expected = match scheme {
            Scheme::Paillier => participant != 1 && named(" 1"),
            Scheme::ElGamal => {
                (participant == 1 && named(" 2")) || (participant == 2 && named(" 1"))
            }
        };
        assert!(
            expected,
            "{scheme:?} relayed: participant {participant} failed with {error}"
        );
        // A verdict that is not empty is malformed.
        let (participant, error) = failure(
            &format!("{scheme:?} long verdict"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _, _, m| {
                if from == 1 && kind_of(m) == KIND_VERDICT {
                    m.push(0);
                }
                HookAction::Deliver
            }),
        );
        assert!(
            matches!(error, ProtocolError::PeerMisbehaved(_)) && participant != 1,
            "{scheme:?} long verdict: participant {participant} failed with {error}"
        );
    }
}

#[test]
fn malformed_truncated_and_replayed_messages_fail_the_run() {
    for (scheme, protocol) in SCHEMES
        .into_iter()
        .flat_map(|s| MpsiProtocol::ALL.map(|p| (s, p)))
    {
        let sets = small_sets(scheme, protocol, 2, 11);
        // A filter / polynomial chunk cut short.
        let (_, error) = failure(
            &format!("{scheme:?} {protocol:?} truncated"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _, _, m| {
                if from == 1 && m.len() > HEADER_LEN + 100 && kind_of(m) != KIND_SHARES {
                    m.truncate(m.len() - 64);
                }
                HookAction::Deliver
            }),
        );
        assert!(
            matches!(error, ProtocolError::PeerMisbehaved(_)),
            "{protocol:?}: {error}"
        );
        // Garbage in place of the ciphertexts of a chunk: not valid encodings. (The Bay
        // server decodes only the filter entries its items hash to: an entry nobody
        // looks at cannot change the answer.)
        let (_, error) = failure(
            &format!("{scheme:?} {protocol:?} garbage"),
            run_with(scheme, protocol, &sets, 0, &mut |from, _, _, m| {
                if from == 1 && (kind_of(m) == KIND_FILTER || kind_of(m) == KIND_POLYNOMIALS) {
                    m[HEADER_LEN..].fill(0xff);
                }
                HookAction::Deliver
            }),
        );
        assert!(
            matches!(error, ProtocolError::PeerMisbehaved(_)),
            "{protocol:?}: {error}"
        );
        // A message delivered twice.
        let (_, error) = failure(
            &format!("{scheme:?} {protocol:?} replayed"),
            run_with(scheme, protocol, &sets, 0, &mut |from, to, index, _| {
                // The hello to the hub, which reads on from this sender (a copy of a
                // link's last message is never read: it could change nothing).
                if from == 2 && to == 0 && index == 0 {
                    HookAction::Duplicate
                } else {
                    HookAction::Deliver
                }
            }),
        );
        assert!(
            matches!(error, ProtocolError::PeerMisbehaved(_)),
            "{protocol:?}: {error}"
        );
    }
}

#[test]
fn too_few_participants_or_a_dealer_with_a_set_are_refused() {
    let names = mpsi::default_names(MpsiProtocol::Bay, 2);
    let config = MpsiConfig {
        protocol: MpsiProtocol::Bay,
        names,
        me: 0,
        items: vec![item("a", 1)],
        max_items: 0,
        max_peer_items: 1 << 20,
        key: Default::default(),
    };
    assert!(matches!(
        mpsi::new_party(config, [1; 32]),
        Err(ProtocolError::Config(_))
    ));
    let names = mpsi::default_names(MpsiProtocol::MiyajiNishida, 3);
    let config = MpsiConfig {
        protocol: MpsiProtocol::MiyajiNishida,
        names,
        me: 0,
        items: vec![item("a", 1)],
        max_items: 0,
        max_peer_items: 1 << 20,
        key: Default::default(),
    };
    assert!(matches!(
        mpsi::new_party(config, [1; 32]),
        Err(ProtocolError::Config(_))
    ));
}

/// Every participant of every protocol counts its bulk work on its meter (the CLI's bar,
/// Python's callback) and ends its last phase counted to its total.
#[test]
fn every_participant_counts_its_last_phase_to_the_end() {
    for protocol in MpsiProtocol::ALL {
        let sets = random_sets(protocol, 3, 9, &[40, 7, 33], 4);
        let mut parties = build(Scheme::ElGamal, protocol, &sets, 0);
        let meters: Vec<_> = parties
            .iter()
            .map(|p| p.meter().expect("every engine party has a meter"))
            .collect();
        let mut refs: Vec<&mut dyn Party> = parties
            .iter_mut()
            .map(|p| p.as_mut() as &mut dyn Party)
            .collect();
        run_parties_with(&mut refs, &mut |_, _, _, _| HookAction::Deliver).expect("run");
        for (i, meter) in meters.iter().enumerate() {
            let r = meter.read();
            assert!(
                r.phase_number > 0 && !r.phase.is_empty() && r.total > 0,
                "{protocol:?} participant {i} counted nothing: {r:?}"
            );
            assert_eq!(r.done, r.total, "{protocol:?} participant {i}: {r:?}");
        }
    }
}

/// Participants on different schemes, or holding shares of different dealt keys, stop
/// at the hello with an error that says so; a dealt key that does not fit the session
/// is refused before anything is sent.
#[test]
fn mismatched_schemes_and_keys_are_refused() {
    let protocol = MpsiProtocol::Bay;
    let sets = random_sets(protocol, 2, 3, &[5], 21);
    let run_keys = |keys: Vec<MpsiKey>| {
        let mut parties = build_with_keys(protocol, &sets, 0, keys);
        let mut refs: Vec<&mut dyn Party> = parties
            .iter_mut()
            .map(|p| p.as_mut() as &mut dyn Party)
            .collect();
        match run_parties_with(&mut refs, &mut |_, _, _, _| HookAction::Deliver) {
            Err(HarnessError::Failed { error, .. }) => error,
            other => panic!("expected a failure, got {:?}", other.err()),
        }
    };
    // The server on Paillier, the clients on ElGamal.
    let mut mixed = keys(Scheme::ElGamal, 3);
    mixed[0] = keys(Scheme::Paillier, 3).remove(0);
    let error = run_keys(mixed);
    assert!(
        matches!(&error, ProtocolError::Incompatible(m) if m.contains("threshold scheme")),
        "{error}"
    );
    // Client 2 holds a share of another dealing (other primes).
    let (p, q) = privset_crypto::tahe::paillier::insecure_test_primes_alt();
    let params = Params {
        modulus_bits: 1024,
        s: 1,
        parties: 2,
        threshold: 2,
    };
    let (other_pk, mut other) = Dealer::new(params)
        .unwrap()
        .deal_with_primes(&p, &q, &mut SessionRng::from_seed([6; 32]))
        .unwrap();
    let mut two_keys = keys(Scheme::Paillier, 3);
    two_keys[2] = MpsiKey::Dealt {
        public: Arc::new(other_pk),
        share: Some(Arc::new(other.remove(1))),
    };
    let error = run_keys(two_keys);
    assert!(
        matches!(&error, ProtocolError::Incompatible(m) if m.contains("threshold key")),
        "{error}"
    );
    // Before any message: a key for another number of holders, a share on the server,
    // no share on a client, another holder's share.
    let config = |me: u8, key: MpsiKey| MpsiConfig {
        protocol,
        names: mpsi::default_names(protocol, 3),
        me,
        items: sets[me as usize].clone(),
        max_items: 0,
        max_peer_items: 1 << 20,
        key,
    };
    let four = keys(Scheme::Paillier, 4);
    let three = keys(Scheme::Paillier, 3);
    let MpsiKey::Dealt { public, share } = three[1].clone() else {
        unreachable!()
    };
    for (me, key, why) in [
        (1, four[1].clone(), "2-out-of-2"),
        (0, three[1].clone(), "server"),
        (
            1,
            MpsiKey::Dealt {
                public: public.clone(),
                share: None,
            },
            "needs its key share",
        ),
        (2, MpsiKey::Dealt { public, share }, "holder 1's"),
    ] {
        match mpsi::new_party(config(me, key), [1; 32]) {
            Err(ProtocolError::Config(m)) => assert!(
                m.contains(why) || why == "2-out-of-2" && m.contains("holders"),
                "{why}: {m}"
            ),
            Err(e) => panic!("{why}: {e}"),
            Ok(_) => panic!("{why}: accepted"),
        }
    }
}
