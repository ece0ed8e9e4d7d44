"""The six set operations of Chen et al. 2024 through the Python API, both parties in one
process, against the plaintext answer."""

from __future__ import annotations

import random
from typing import Any, List

import pytest

import privset
from conftest import sets

SIZES = [
    (70, 50, 30),  # random
    (300, 9, 4),  # unbalanced
    (25, 25, 0),  # disjoint
    (20, 20, 20),  # identical
    (1, 1, 1),  # size 1
    (0, 12, 0),  # receiver empty
    (12, 0, 0),  # sender empty
]


def check(op: str, r: Any, y: List[str], x: List[str], values: List[int]) -> None:
    """`r` (a LocalSetOperation) is the right answer for receiver Y, sender X."""
    inter = set(x) & set(y)
    assert r.operation == op
    assert (r.receiver.items, r.receiver.peer_items) == (len(set(y)), len(set(x)))
    assert (r.sender.items, r.sender.peer_items) == (len(set(x)), len(set(y)))
    if op == "psi":
        assert sorted(r.intersection) == sorted(inter)
        assert r.receiver.cardinality == len(inter) and r.sender.intersection is None
    elif op == "psi-card":
        assert r.cardinality == r.receiver.cardinality == len(inter)
        assert r.sender.cardinality is None
    elif op == "psi-card-sum":
        weight = dict(zip(x, values))
        assert r.receiver.cardinality == r.sender.cardinality == len(inter)
        assert r.sum == r.sender.sum == sum(weight[i] for i in inter)
        assert r.receiver.sum is None
    elif op == "psu":
        assert sorted(r.union) == sorted(set(x) | set(y))
        assert r.receiver.rows == len(set(x) | set(y))
    elif op == "psi-share":
        assert sorted(r.intersection) == sorted(inter)
        assert r.cardinality == len(inter)
        assert len(r.sender.shares) == len(set(x))  # a share per sender position
    elif op == "private-id":
        rows = r.private_ids
        assert len(rows) == len(set(x) | set(y)) == r.receiver.rows == r.sender.rows
        assert len({row.private_id for row in rows}) == len(rows)
        assert {row.receiver_item for row in rows} - {None} == set(y)
        assert {row.sender_item for row in rows} - {None} == set(x)
        for row in rows:
            if row.receiver_item is not None and row.sender_item is not None:
                assert row.receiver_item == row.sender_item
        assert sum(1 for row in rows if row.receiver_item and row.sender_item) == len(inter)


def local(op: str, y: List[Any], x: List[Any], values: List[int], **settings: Any) -> Any:
    if op == "psi-card-sum":
        return privset.local.psi_card_sum(y, x, values, **settings)
    return getattr(privset.local, op.replace("-", "_"))(y, x, **settings)


OPERATIONS = ["psi", "psi-card", "psi-card-sum", "psu", "psi-share", "private-id"]


@pytest.mark.parametrize("n1, n2, overlap", SIZES)
@pytest.mark.parametrize("op", OPERATIONS)
def test_matches_the_plaintext(rng: random.Random, op: str, n1: int, n2: int, overlap: int) -> None:
    y, x = sets(rng, n1, n2, overlap)
    values = [rng.randrange(10**6) for _ in x]
    check(op, local(op, y, x, values), y, x, values)


@pytest.mark.parametrize(
    "settings",
    [
        {"group": "x25519"},
        {"group": "p256", "last_message": "list"},
        {"group": "p256-compressed", "last_message": "gcs"},
        {"mqrpmt": "poprf", "last_message": "list"},
    ],
)
@pytest.mark.parametrize("op", OPERATIONS)
def test_groups_and_constructions(rng: random.Random, op: str, settings: dict) -> None:
    if op == "private-id" and settings.get("mqrpmt") == "poprf":
        with pytest.raises(privset.ConfigurationError, match="private-id"):
            local(op, ["a"], ["b"], [1], **settings)
        return
    y, x = sets(rng, 40, 30, 12)
    values = [rng.randrange(1000) for _ in x]
    r = local(op, y, x, values, **settings)
    check(op, r, y, x, values)
    assert r.receiver.group == settings.get("group", "ristretto255")
    assert r.receiver.mqrpmt == settings.get("mqrpmt", "cwprf")


@pytest.mark.parametrize("op", OPERATIONS)
def test_duplicates_follow_the_policy(op: str) -> None:
    y = ["a", "b", "c", "b"]
    x = ["c", "d", "c", "a"]
    values = [1, 2, 3, 4]
    with pytest.raises(privset.InputError, match="line 5: duplicate identifier") as e:
        local(op, y, x, values)
    assert e.value.line == 5
    r = local(op, y, x, values, duplicates="first")
    check(op, r, ["a", "b", "c"], ["c", "d", "a"], [1, 2, 4])
    if op == "psi-card-sum":
        assert local(op, y, x, values, duplicates="sum").sum == (1 + 3) + 4


def test_identifiers_are_compared_as_the_cli_reads_them() -> None:
    """str as UTF-8, bytes as they are, int in decimal, surrounding whitespace trimmed:
    the same bytes as the CLI reads from a CSV cell, so a Python party and a CLI party
    agree. Results give back the receiver's own objects."""
    r = privset.local.psi(["alice", 42, b"\xff\x00", " bob ", "émile"], ["42", "bob", "alice", b"\xff\x00", "émile"])
    assert sorted(map(repr, r.intersection)) == sorted(map(repr, ["alice", 42, b"\xff\x00", " bob ", "émile"]))
    union = privset.local.psu([1, 2], ["2", "3", b"\xfe"]).union
    assert sorted(map(repr, union)) == sorted(map(repr, [1, 2, "3", b"\xfe"]))


def test_open_share_rejects_mismatched_shares() -> None:
    r = privset.local.psi_share(["a", "b"], ["b", "c"])
    (share,) = r.receiver.shares
    theirs = {s.index: s.share for s in r.sender.shares}
    assert privset.open_share(share.share, theirs[share.index]) == b"b"
    wrong = next(i for i in theirs if i != share.index)
    with pytest.raises(privset.InputError, match="do not open"):
        privset.open_share(share.share, theirs[wrong])


@pytest.mark.parametrize("group", ["ristretto255", "x25519"])
def test_ordered_psi_is_dh_psi_and_psi_only(rng: random.Random, group: str) -> None:
    y, x = sets(rng, 60, 45, 20)
    r = privset.local.psi(y, x, group=group, last_message="ordered")
    assert sorted(r.intersection) == sorted(set(x) & set(y))
    assert r.receiver.last_message == "ordered"
    for op in ("psi-card", "psu", "psi-share"):
        with pytest.raises(privset.ConfigurationError, match="ordered"):
            local(op, y, x, None, last_message="ordered")


@pytest.mark.parametrize("n1, n2, overlap", SIZES)
def test_vole_psi_matches_the_plaintext(rng: random.Random, n1: int, n2: int, overlap: int) -> None:
    """psi from silent VOLE and an OKVS (Raghuraman-Rindal 2022) through the same call."""
    y, x = sets(rng, n1, n2, overlap)
    r = privset.local.psi(y, x, mqrpmt="vole")
    assert sorted(map(repr, r.intersection)) == sorted(map(repr, set(x) & set(y)))
    assert r.receiver.mqrpmt == "vole"


def test_vole_runs_psi_only() -> None:
    for op in ("psi-card", "psu", "psi-share", "private-id"):
        with pytest.raises(privset.ConfigurationError, match="vole"):
            local(op, ["a"], ["a"], None, mqrpmt="vole")
