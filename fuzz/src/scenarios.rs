//! The honest sessions the protocol targets start from: small sets (4 to 8 items) so an
//! iteration is cheap, and every variant whose messages have their own decoders.

use std::sync::Arc;

use privset_crypto::ahe::{HeId, elgamal, paillier};
use privset_crypto::bls::SecretKey;
use privset_crypto::cwprf::CwPrfId;
use privset_crypto::filter::FilterKind;
use privset_crypto::group::GroupId;
use privset_crypto::rng::SessionRng;
use privset_protocols::apsi::authorize::{self, ClientConfig, JudgeConfig};
use privset_protocols::apsi::intersect::{self, ServerConfig};
use privset_protocols::apsi::signatures::SignatureSet;
use privset_protocols::apsi::{AllowList, DEFAULT_MAX_PEER_ITEMS, Mode, PartialFraction};
use privset_protocols::input::Dataset;
use privset_protocols::party::{Party, PartyId};
use privset_protocols::pi_sum::{self, PiSumConfig, PiSumProtocol, Role};
use privset_protocols::pso::{self, Construction, LastMessage, Operation, PsoConfig, PsoRole};
use privset_protocols::set_encoding::SetEncoding;
use privset_protocols::toy::{self, Form, ToySumConfig};

use crate::{Make, Scenario};

/// A fixed seed per participant and scenario.
pub fn seed(scenario: u8, party: PartyId) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[0] = scenario;
    s[1] = party;
    s[31] = 0x5e;
    s
}

fn ids(range: std::ops::Range<u64>) -> Vec<Vec<u8>> {
    range
        .map(|i| format!("id-{i}-{}", "x".repeat((i % 5) as usize)).into_bytes())
        .collect()
}

// ----- set operations (protocol ids 2-7) -----

fn pso_config(
    op: Operation,
    cwprf: CwPrfId,
    construction: Construction,
    last: LastMessage,
) -> PsoConfig {
    let mut c = PsoConfig::new(op);
    c.cwprf = cwprf;
    c.construction = construction;
    c.last_message = last;
    c.max_value = 1000;
    c.max_peer_items = 64;
    c
}

fn pso_scenario(tag: u8, config: PsoConfig) -> Scenario {
    let name = format!(
        "{}/{:?}/{}/{}",
        config.operation.name(),
        config.cwprf,
        config.construction.name(),
        config.last_message.name()
    );
    let make: Make = Box::new(move |i| {
        let values = config.operation == Operation::PsiCardSum;
        let (role, input) = if i == 0 {
            (
                PsoRole::Receiver,
                Dataset {
                    ids: ids(0..5),
                    ..Dataset::default()
                },
            )
        } else {
            let ids = ids(3..9);
            let n = ids.len() as u64;
            (
                PsoRole::Sender,
                Dataset {
                    ids,
                    columns: if values {
                        vec![(1..=n).collect()]
                    } else {
                        vec![]
                    },
                    column_names: if values { vec!["v".into()] } else { vec![] },
                    ..Dataset::default()
                },
            )
        };
        pso::new_party(role, &config, input, seed(tag, i)).expect("valid pso party")
            as Box<dyn Party>
    });
    Scenario::record(name, 2, make)
}

/// psi, psi-card, psi-card-sum, psu and psi-share over every group and last message,
/// and psi from silent VOLE.
pub fn pso() -> Vec<Scenario> {
    use CwPrfId::{Group, X25519};
    use GroupId::*;
    let bloom = LastMessage::Set(SetEncoding::Filter(FilterKind::Bloom));
    let gcs = LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs));
    let list = LastMessage::LIST;
    let configs = [
        (
            Operation::Psi,
            Group(Ristretto255),
            Construction::Cwprf,
            bloom,
        ),
        (
            Operation::Psi,
            Group(P256Compressed),
            Construction::Poprf,
            list,
        ),
        (Operation::Psi, Group(P256), Construction::Cwprf, list),
        (
            Operation::Psi,
            X25519,
            Construction::Cwprf,
            LastMessage::Ordered,
        ),
        (
            Operation::PsiCard,
            Group(Ristretto255),
            Construction::Poprf,
            list,
        ),
        (Operation::PsiCard, X25519, Construction::Cwprf, gcs),
        (
            Operation::PsiCardSum,
            Group(Ristretto255),
            Construction::Cwprf,
            gcs,
        ),
        (
            Operation::PsiCardSum,
            Group(P256Compressed),
            Construction::Cwprf,
            bloom,
        ),
        (
            Operation::Psu,
            Group(Ristretto255),
            Construction::Cwprf,
            list,
        ),
        (Operation::Psu, X25519, Construction::Cwprf, bloom),
        (
            Operation::PsiShare,
            Group(Ristretto255),
            Construction::Poprf,
            list,
        ),
        (Operation::PsiShare, Group(P256), Construction::Cwprf, gcs),
        // psi from silent VOLE and an OKVS: its own messages (VOLE, OKVS, tags).
        (
            Operation::Psi,
            Group(Ristretto255),
            Construction::Vole,
            bloom,
        ),
    ];
    configs
        .into_iter()
        .enumerate()
        .map(|(t, (op, cw, con, last))| pso_scenario(t as u8, pso_config(op, cw, con, last)))
        .collect()
}

/// private-id over each cwPRF and last message.
pub fn private_id() -> Vec<Scenario> {
    use CwPrfId::{Group, X25519};
    use GroupId::*;
    let configs = [
        (
            Group(Ristretto255),
            LastMessage::Set(SetEncoding::Filter(FilterKind::Bloom)),
        ),
        (
            Group(P256Compressed),
            LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs)),
        ),
        (X25519, LastMessage::LIST),
    ];
    configs
        .into_iter()
        .enumerate()
        .map(|(t, (cw, last))| {
            pso_scenario(
                100 + t as u8,
                pso_config(Operation::PrivateId, cw, Construction::Cwprf, last),
            )
        })
        .collect()
}

// ----- PI-Sum (protocol id 1) -----

fn pi_sum_scenario(tag: u8, config: PiSumConfig, segmented: bool) -> Scenario {
    let name = format!(
        "pi-sum/{:?}/{:?}/{}/{}{}",
        config.group,
        config.he,
        config.z_encoding.name(),
        if config.reverse { "reverse" } else { "forward" },
        if segmented { "/segmented" } else { "" }
    );
    let make: Make = Box::new(move |i| {
        let (role, input) = if i == 0 {
            let ids = ids(0..6);
            let (segment_of, segment_names) = if segmented {
                (Some(vec![0, 1, 0, 1, 0, 1]), vec!["a".into(), "b".into()])
            } else {
                (None, vec![])
            };
            (
                Role::P1,
                Dataset {
                    ids,
                    segment_of,
                    segment_names,
                    ..Dataset::default()
                },
            )
        } else {
            let ids = ids(3..8);
            let n = ids.len() as u64;
            let mut columns = vec![(1..=n).collect::<Vec<u64>>()];
            let mut column_names = vec!["v".to_string()];
            if config.sum_of_squares {
                columns.push((1..=n).map(|v| v * 3).collect());
                column_names.push("w".into());
            }
            (
                Role::P2,
                Dataset {
                    ids,
                    columns,
                    column_names,
                    ..Dataset::default()
                },
            )
        };
        pi_sum::new_party(role, &config, input, seed(tag, i)).expect("valid pi-sum party")
            as Box<dyn Party>
    });
    Scenario::record(name, 2, make)
}

/// Forward and reverse, both groups, every HE scheme (Ring-LWE on each protocol),
/// every Z encoding, segments, sums of squares, the threshold abort.
pub fn pi_sum() -> Vec<Scenario> {
    let base = PiSumConfig {
        he: HeId::ElGamal,
        elgamal: elgamal::Params { max_table_bits: 10 },
        paillier: paillier::Params {
            modulus_bits: 1024,
            s: 1,
        },
        max_value: 1000,
        max_sum: Some(100_000),
        max_peer_items: 64,
        ..PiSumConfig::default()
    };
    let gcs = SetEncoding::Filter(FilterKind::Gcs);
    let bloom = SetEncoding::Filter(FilterKind::Bloom);
    let mut out = Vec::new();
    let mut add = |config: PiSumConfig, segmented: bool| {
        let tag = 200 + out.len() as u8;
        out.push(pi_sum_scenario(tag, config, segmented));
    };
    add(base.clone(), false);
    add(
        PiSumConfig {
            z_encoding: bloom,
            group: CwPrfId::Group(GroupId::P256Compressed),
            sum_of_squares: true,
            ..base.clone()
        },
        true,
    );
    add(
        PiSumConfig {
            z_encoding: SetEncoding::List,
            he: HeId::Paillier,
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            reverse: true,
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            reverse: true,
            he: HeId::Paillier,
            group: CwPrfId::Group(GroupId::P256),
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            threshold: Some(100),
            z_encoding: gcs,
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            group: CwPrfId::X25519,
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            protocol: PiSumProtocol::Rot,
            ..base.clone()
        },
        false,
    );
    add(
        PiSumConfig {
            protocol: PiSumProtocol::Bloom,
            sum_of_squares: true,
            ..base.clone()
        },
        false,
    );
    // Ring-LWE values (added last: the seeds name scenarios by position).
    for protocol in [PiSumProtocol::Ddh, PiSumProtocol::Rot, PiSumProtocol::Bloom] {
        add(
            PiSumConfig {
                protocol,
                he: HeId::Rlwe,
                ..base.clone()
            },
            false,
        );
    }
    out
}

// ----- Authorized PSI (protocol ids 8 and 9) -----

fn judge_key() -> Arc<SecretKey> {
    Arc::new(SecretKey::generate(&mut SessionRng::from_seed([7u8; 32])))
}

fn apsi_items() -> Vec<Vec<u8>> {
    ids(0..4)
}

fn authorize_make(tag: u8, partial: Option<PartialFraction>, kc: bool) -> Make {
    let key = judge_key();
    Box::new(move |i| {
        if i == 0 {
            let config = ClientConfig {
                client_id: b"client-7".to_vec(),
                partial,
                key_consistency: kc,
                key_settings: Default::default(),
            };
            Box::new(authorize::Client::new(config, apsi_items(), seed(tag, 0)).unwrap())
                as Box<dyn Party>
        } else {
            let config = JudgeConfig {
                partial,
                key_consistency: kc,
                max_items: 64,
            };
            Box::new(
                authorize::Judge::new(
                    config,
                    key.clone(),
                    Arc::new(AllowList::new(apsi_items())),
                    seed(tag, 1),
                )
                .unwrap(),
            )
        }
    })
}

fn apsi_modes() -> [(Option<PartialFraction>, bool); 3] {
    let half = PartialFraction::new(0.5).ok();
    [(None, false), (half, false), (half, true)]
}

/// Authorize (client and judge): APSI, Partial-APSI, Partial-APSI with key consistency.
pub fn apsi_authorize() -> Vec<Scenario> {
    apsi_modes()
        .into_iter()
        .enumerate()
        .map(|(t, (partial, kc))| {
            Scenario::record(
                format!("apsi-authorize/{partial:?}/kc={kc}"),
                2,
                authorize_make(150 + t as u8, partial, kc),
            )
        })
        .collect()
}

/// The signature set an honest Authorize gives the client (also a signature-file seed).
pub fn signature_set(partial: Option<PartialFraction>, kc: bool, tag: u8) -> SignatureSet {
    let make = authorize_make(tag, partial, kc);
    let mut client = authorize::Client::new(
        ClientConfig {
            client_id: b"client-7".to_vec(),
            partial,
            key_consistency: kc,
            key_settings: Default::default(),
        },
        apsi_items(),
        seed(tag, 0),
    )
    .unwrap();
    let mut judge = make(1);
    // Run the pair to completion with the same lock-step loop as Scenario::record.
    let mut parties: [&mut dyn Party; 2] = [&mut client, judge.as_mut()];
    let mut queues: [Vec<Vec<u8>>; 2] = [vec![], vec![]];
    loop {
        let mut progress = false;
        for (i, p) in parties.iter_mut().enumerate() {
            while let Some(o) = p.poll_outgoing() {
                queues[1 - i].push(o.bytes);
                progress = true;
            }
            while p.has_deferred_work() {
                p.do_deferred_work().unwrap();
                progress = true;
            }
        }
        for (i, p) in parties.iter_mut().enumerate() {
            if p.awaiting().is_some() && !queues[i].is_empty() {
                let m = queues[i].remove(0);
                p.handle_message(1 - i as PartyId, &m).unwrap();
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    client.into_output().expect("authorized")
}

/// Intersect (client and server) in each mode.
pub fn apsi_intersect() -> Vec<Scenario> {
    apsi_modes()
        .into_iter()
        .enumerate()
        .map(|(t, (partial, kc))| {
            let tag = 160 + t as u8;
            let sigs = signature_set(partial, kc, tag);
            let judge = judge_key().public_key();
            let mode = if partial.is_some() {
                Mode::Partial
            } else {
                Mode::Full
            };
            let make: Make = Box::new(move |i| {
                if i == 0 {
                    let (signed, _) = sigs.select(&apsi_items());
                    Box::new(
                        intersect::Client::new(
                            &sigs,
                            signed,
                            &judge,
                            kc,
                            DEFAULT_MAX_PEER_ITEMS,
                            seed(tag, 0),
                        )
                        .unwrap(),
                    ) as Box<dyn Party>
                } else {
                    let config = ServerConfig {
                        mode,
                        key_consistency: kc,
                        judge_key: judge,
                    };
                    Box::new(
                        intersect::Server::new(config, ids(2..7).into(), seed(tag, 1)).unwrap(),
                    )
                }
            });
            Scenario::record(format!("apsi-intersect/{partial:?}/kc={kc}"), 2, make)
        })
        .collect()
}

// ----- toy-sum (protocol id 10): the engine's n-party paths (roster, routing) -----

pub fn toy() -> Vec<Scenario> {
    [(3usize, Form::Star), (3, Form::Mesh), (4, Form::Star)]
        .into_iter()
        .enumerate()
        .map(|(t, (parties, form))| {
            let make: Make = Box::new(move |i| {
                let config = ToySumConfig {
                    parties,
                    me: i,
                    form,
                    value: 10 + i as u64,
                };
                Box::new(toy::new_party(config, seed(240 + t as u8, i)).unwrap()) as Box<dyn Party>
            });
            Scenario::record(format!("toy-sum/{parties}/{}", form.name()), parties, make)
        })
        .collect()
}

// ----- bucket-plan (protocol id 15): a bucketed job's plan, with and without a prior plan -----

pub fn bucket_plan() -> Vec<Scenario> {
    use privset_protocols::bucket_plan::{self, PlanRequest};
    use privset_protocols::wire::ProtocolId;
    [false, true]
        .into_iter()
        .enumerate()
        .map(|(t, prior)| {
            let make: Make = Box::new(move |i| {
                let request = PlanRequest {
                    operation: ProtocolId::Psi,
                    items: 1000 + i as u64,
                    buckets: (i == 0).then_some(12),
                    target: 1 << 20,
                    lanes: 1 + i as u32,
                    lane: 0,
                    prior: prior.then(|| {
                        (
                            [5u8; 32],
                            (0..12)
                                .map(|b| (b + i as usize).is_multiple_of(3))
                                .collect(),
                        )
                    }),
                };
                Box::new(
                    bucket_plan::new_party(
                        ["receiver", "sender"],
                        i,
                        request,
                        seed(250 + t as u8, i),
                    )
                    .unwrap(),
                ) as Box<dyn Party>
            });
            let name = if prior {
                "bucket-plan/prior"
            } else {
                "bucket-plan/new"
            };
            Scenario::record(name.to_string(), 2, make)
        })
        .collect()
}

// ----- partition-unit (protocol id 16): a value-partitioned job's units -----

/// A one-message unit (the sender's payload of a send unit), a psi-card-sum transfer
/// unit (base OT, extension, masked values) and a psu one (identifier slots) on a part
/// of 6 elements.
pub fn partition_unit() -> Vec<Scenario> {
    use privset_protocols::partition_unit::{self, TransferInput, UnitId};
    use privset_protocols::wire::ProtocolId;
    let names = ["receiver", "sender"];
    let id = |operation, unit| UnitId {
        operation,
        plan: [7u8; 32],
        unit,
        producer: 1,
    };
    let payload: Make = Box::new(move |i| {
        let id = id(ProtocolId::PsiCard, 4);
        Box::new(if i == 1 {
            partition_unit::producer(names, id, vec![0x42; 6 * 32], seed(220, 1)).unwrap()
        } else {
            partition_unit::consumer(names, id, 8 * 32, seed(220, 0)).unwrap()
        }) as Box<dyn Party>
    });
    let transfer: Make = Box::new(move |i| {
        let id = id(ProtocolId::PsiCardSum, 9);
        let input = if i == 0 {
            TransferInput::Choices(vec![true, false, true, true, false, false])
        } else {
            TransferInput::Values {
                values: vec![3, 1, 4, 1, 5, 9],
                max_value: 100,
            }
        };
        Box::new(
            partition_unit::transfer_party(names, id, 50, input, seed(221, 9 + i), seed(221, i))
                .unwrap(),
        ) as Box<dyn Party>
    });
    // psu's transfer: the sender's identifier slots, the receiver's items not in its set.
    let items: Make = Box::new(move |i| {
        use privset_protocols::pso::transfer;
        let id = id(ProtocolId::Psu, 10);
        let input = if i == 0 {
            TransferInput::Choices(vec![true, false, false, true, false, true])
        } else {
            let width = transfer::item_width(12);
            let slots = (0..6u8)
                .flat_map(|k| transfer::encode_item(&vec![b'a' + k; usize::from(k) * 2], width))
                .collect();
            TransferInput::Items { slots, width }
        };
        Box::new(
            partition_unit::transfer_party(names, id, 50, input, seed(222, 9 + i), seed(222, i))
                .unwrap(),
        ) as Box<dyn Party>
    });
    vec![
        Scenario::record("partition-unit/payload".to_string(), 2, payload),
        Scenario::record("partition-unit/transfer".to_string(), 2, transfer),
        Scenario::record("partition-unit/items".to_string(), 2, items),
    ]
}

// ----- mpsi (protocol ids 11-13): every participant of the three multi-party PSIs -----

pub fn mpsi() -> Vec<Scenario> {
    use privset_protocols::mpsi::{self, MpsiConfig, MpsiProtocol};
    MpsiProtocol::ALL
        .into_iter()
        .enumerate()
        .map(|(t, protocol)| {
            let parties = 3usize;
            let make: Make = Box::new(move |i| {
                let items: Vec<Vec<u8>> = if i == 0 && protocol == MpsiProtocol::MiyajiNishida {
                    Vec::new()
                } else {
                    (0..4u8).map(|k| vec![b'x', k, i % 2]).collect()
                };
                let config = MpsiConfig {
                    protocol,
                    names: mpsi::default_names(protocol, parties),
                    me: i,
                    items,
                    max_items: 0,
                    max_peer_items: 1 << 16,
                    key: Default::default(),
                };
                let party = mpsi::new_party(config, seed(230 + t as u8, i)).unwrap();
                party as Box<dyn Party>
            });
            Scenario::record(format!("mpsi/{}", protocol.name()), parties, make)
        })
        .collect()
}

/// Unbalanced labeled PSI (client 0, server 1): an unlabeled and a labeled database of
/// a few items under the smallest preset, built once and shared by every replay.
/// The unbalanced-PSI scenarios' preset: one ciphertext per query power and bins of
/// eight items, so that a query the fuzzer leaves well-formed is evaluated in well under
/// a second under coverage instrumentation (a built-in preset's full evaluation took
/// 55 s there, most of the `upsi` smoke run). Every check a built-in preset passes, it
/// passes; a server's hello carries it to the client as any other.
const UPSI_FUZZ_PRESET: &str = "name = \"fuzz-small\"\ndegree = 4096\nplain_modulus = 786433\n\
     moduli_bits = [36, 36, 37]\nfelts_per_item = 5\ntable_size = 819\n\
     max_items_per_bin = 8\nmax_client_items = 16\nps_low_degree = 0\nquery_powers = [1, 3]\n";

pub fn upsi() -> Vec<Scenario> {
    use privset_protocols::upsi::{Client, Database, Oprf, Preset, Server};
    [0usize, 8]
        .into_iter()
        .enumerate()
        .map(|(t, label_len)| {
            let mut rng = SessionRng::from_seed(seed(250 + t as u8, 9));
            let preset = Preset::parse(UPSI_FUZZ_PRESET).unwrap();
            let mut db = Database::new(preset, label_len, Oprf::X25519, &mut rng).unwrap();
            let labels: Vec<Vec<u8>> = if label_len > 0 {
                (0..6u8).map(|i| vec![i; label_len]).collect()
            } else {
                Vec::new()
            };
            db.insert(&ids(0..6), &labels, &mut rng).unwrap();
            db.prepare().unwrap();
            let db = Arc::new(db);
            let make: Make = Box::new(move |i| {
                if i == 0 {
                    Box::new(Client::new(ids(3..9), seed(250 + t as u8, 0)).unwrap())
                        as Box<dyn Party>
                } else {
                    Box::new(Server::new(db.clone(), seed(250 + t as u8, 1)).unwrap())
                }
            });
            Scenario::record(format!("upsi/labels={label_len}"), 2, make)
        })
        .collect()
}
