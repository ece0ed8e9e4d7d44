"""PI-Sum through the Python API, both parties in one process, against the plaintext."""

from __future__ import annotations

import random

import pytest

import privset
from conftest import FAST, sets, values_for


@pytest.mark.parametrize(
    "n1, n2, overlap",
    [
        (60, 40, 25),  # random
        (200, 7, 5),  # unbalanced
        (20, 20, 0),  # disjoint
        (15, 15, 15),  # identical
        (1, 1, 1),  # size 1, matching
        (1, 1, 0),  # size 1, not matching
        (0, 10, 0),  # P1 empty
        (10, 0, 0),  # P2 empty
        (0, 0, 0),  # both empty
    ],
)
def test_cardinality_and_sum_match_the_plaintext(rng: random.Random, n1: int, n2: int, overlap: int) -> None:
    a, b = sets(rng, n1, n2, overlap)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], **FAST)
    assert r.cardinality == overlap
    assert r.sum == sum(values[w] for w in set(a) & set(b))
    assert not r.aborted
    # What each party learns, and nothing more.
    assert (r.p1.cardinality, r.p1.sums, r.p1.sum) == (overlap, None, None)
    assert (r.p2.cardinality, r.p2.sums, r.p2.sum) == (overlap, (r.sum,), r.sum)
    assert r.p2.to_dict()["sum"] == r.sum and r.p1.to_dict()["sum"] is None
    assert (r.p1.items, r.p1.peer_items, r.p2.items, r.p2.peer_items) == (n1, n2, n2, n1)
    assert r.p1.role == "p1" and r.p2.role == "p2" and r.p1.protocol == "pi-sum"
    assert r.p1.transport == "memory" and r.p1.bytes_sent == r.p2.bytes_received > 0


def test_default_parameters(rng: random.Random) -> None:
    """The CLI's defaults: ristretto255, Paillier 3072-bit with s = 2, GCS."""
    a, b = sets(rng, 30, 30, 12)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b])
    assert (r.cardinality, r.sum) == (12, sum(values[w] for w in set(a) & set(b)))
    assert (r.p2.group, r.p2.values_he, r.p2.z_encoding) == ("ristretto255", "paillier", "gcs")


@pytest.mark.parametrize(
    "settings",
    [
        {"values_he": "elgamal", "group": "p256", "z_encoding": "list"},
        {"values_he": "elgamal", "group": "p256-compressed", "z_encoding": "bloom"},
        {"he_modulus_bits": 1024, "dj_s": 3, "z_encoding": "bloom"},
        {"he_modulus_bits": 1536, "dj_s": 1, "z_encoding": "list"},
        {"values_he": "rlwe", "group": "x25519"},
        {"values_he": "rlwe", "protocol": "rot"},
    ],
)
def test_groups_schemes_and_encodings(rng: random.Random, settings: dict) -> None:
    a, b = sets(rng, 40, 50, 17)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], **settings)
    assert (r.cardinality, r.sum) == (17, sum(values[w] for w in set(a) & set(b)))
    assert r.p1.group == settings.get("group", "ristretto255")


@pytest.mark.parametrize("protocol", ["rot", "bloom"])
@pytest.mark.parametrize(
    "n1, n2, overlap",
    [(60, 40, 25), (20, 20, 0), (15, 15, 15), (1, 1, 1), (0, 10, 0), (10, 0, 0), (1, 300, 1)],
)
def test_random_ot_and_bloom_protocols_match_the_plaintext(
    rng: random.Random, protocol: str, n1: int, n2: int, overlap: int
) -> None:
    """Ion et al. 2020, Figs. 3 and 4, chosen with ``protocol=``: the same answer and the
    same split of what each party learns as the deployed protocol."""
    a, b = sets(rng, n1, n2, overlap)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], protocol=protocol, values_he="elgamal")
    assert (r.cardinality, r.sum) == (overlap, sum(values[w] for w in set(a) & set(b)))
    assert (r.p1.sum, r.p2.sum) == (None, r.sum)
    assert r.p1.pi_sum_protocol == r.p2.pi_sum_protocol == protocol


def test_x25519_group_and_protocol_errors(rng: random.Random) -> None:
    a, b = sets(rng, 40, 30, 11)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], group="x25519", **FAST)
    assert (r.cardinality, r.sum, r.p1.group) == (11, sum(values[w] for w in set(a) & set(b)), "x25519")
    assert r.p1.pi_sum_protocol == "ddh"
    with pytest.raises(privset.ConfigurationError, match="protocol"):
        privset.PiSum.p1(a, protocol="garbled")
    with pytest.raises(privset.ConfigurationError, match="reverse"):
        privset.PiSum.p1(a, protocol="bloom", reverse=True)


def test_reverse_gives_p1_the_sum(rng: random.Random) -> None:
    a, b = sets(rng, 30, 25, 10)
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], reverse=True, values_he="elgamal")
    expected = sum(values[w] for w in set(a) & set(b))
    assert r.p1.sums == (expected,) and r.p2.sums is None
    assert (r.p1.sum, r.p2.sum) == (expected, None)
    assert r.p1.cardinality == r.p2.cardinality == 10
    assert r.sum == expected


def test_threshold_aborts_below_and_runs_at_the_threshold(rng: random.Random) -> None:
    a, b = sets(rng, 30, 30, 8)
    values = values_for(rng, b)
    column = [values[w] for w in b]
    r = privset.local.pi_sum(a, b, column, threshold=9, **FAST)
    assert r.aborted and r.p1.aborted and r.p2.aborted
    assert r.p1.cardinality == 8  # P1 computed the intersection
    assert (r.p2.cardinality, r.p2.sums) == (None, None)  # P2 learns only the abort
    assert r.sum is None
    r = privset.local.pi_sum(a, b, column, threshold=8, **FAST)
    assert not r.aborted and r.cardinality == 8


def test_several_columns_and_sums_of_squares(rng: random.Random) -> None:
    a, b = sets(rng, 40, 40, 20)
    spend, visits = values_for(rng, b), values_for(rng, b, 10)
    common = set(a) & set(b)
    r = privset.local.pi_sum(
        a,
        b,
        {"spend": [spend[w] for w in b], "visits": [visits[w] for w in b]},
        sum_of_squares=True,
        value_bound=10_000,
        **FAST,
    )
    s = (sum(spend[w] for w in common), sum(visits[w] for w in common))
    sq = (sum(spend[w] ** 2 for w in common), sum(visits[w] ** 2 for w in common))
    assert r.sums == s and r.p2.sums_of_squares == sq
    assert r.p2.sum is None  # RESULT.json's `sum` needs exactly one value column
    assert r.p2.variance is not None
    for col in range(2):
        mean = s[col] / 20
        assert r.p2.variance[col] == pytest.approx(sq[col] / 20 - mean * mean)


def test_segments(rng: random.Random) -> None:
    a, b = sets(rng, 60, 50, 30)
    labels = ["north" if i % 3 else "south" for i in range(len(a))]
    values = values_for(rng, b)
    r = privset.local.pi_sum(a, b, [values[w] for w in b], segments=labels, **FAST)
    common = set(a) & set(b)
    segment_of = dict(zip(a, labels))
    by_p1 = {s.segment: s.cardinality for s in r.p1.segments}
    for label in ("north", "south"):
        assert by_p1[label] == sum(1 for w in common if segment_of[w] == label)
    # P2 sees segment indices in order of first appearance, with a sum for each.
    order = list(dict.fromkeys(labels))
    for seg in r.p2.segments:
        label = order[int(seg.segment)]
        assert seg.sums == (sum(values[w] for w in common if segment_of[w] == label),)
    assert r.cardinality == len(common)


@pytest.mark.parametrize("policy", ["sum", "first"])
def test_duplicate_policies(rng: random.Random, policy: str) -> None:
    p1 = ["a", "b", "c", "a"]
    p2 = ["b", "c", "b", "d"]
    values = [5, 7, 11, 13]
    r = privset.local.pi_sum(p1, p2, values, duplicates=policy, **FAST)
    assert r.cardinality == 2
    assert r.sum == (5 + 7 + 11 if policy == "sum" else 5 + 7)
    assert r.p1.items == 3 and r.p2.items == 3


def test_duplicates_are_an_error_by_default() -> None:
    with pytest.raises(privset.InputError) as e:
        privset.PiSum.p2(["b", "c", "b"], [1, 2, 3])
    assert e.value.line == 4
    assert "line 4: duplicate identifier (first seen on line 2)" in str(e.value)
