"""privset.bucketed.psi: a bucketed psi from Python, both parties on threads of this
process over loopback mutual TLS and over an exchange directory, and against the CLI's
bucketed party; every answer against the plaintext intersection."""

from __future__ import annotations

import csv
import pathlib
import random
import subprocess
import threading
from typing import Any, Callable, Dict, List, Set

import pytest

import privset
from helpers import free_port, privset_binary


def write_ids(path: pathlib.Path, ids: List[str]) -> None:
    path.write_text("id\n" + "".join(f"{i}\n" for i in ids))


def read_ids(path: pathlib.Path) -> Set[str]:
    with open(path, newline="") as f:
        return {row["id"] for row in csv.DictReader(f)}


def sets(tmp: pathlib.Path, rng: random.Random, n_r: int, n_s: int, shared: int) -> Set[str]:
    pool = [f"u{rng.getrandbits(48):012x}" for _ in range(n_r + n_s)]
    common = pool[:shared]
    receiver = common + pool[shared:n_r]
    sender = common + pool[n_r : n_r + n_s - shared]
    rng.shuffle(sender)
    write_ids(tmp / "receiver.csv", receiver)
    write_ids(tmp / "sender.csv", sender)
    return set(common)


def on_threads(call: Callable[[str], Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Runs ``call("receiver")`` and ``call("sender")`` on two threads; returns each
    one's result."""
    results: Dict[str, Any] = {}

    def party(role: str) -> None:
        try:
            results[role] = call(role)
        except Exception as e:  # reported by the assertion below
            results[role] = e

    threads = [threading.Thread(target=party, args=(r,)) for r in ("receiver", "sender")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for role in ("receiver", "sender"):
        assert not isinstance(results.get(role), Exception), results.get(role)
    return results


def both(tmp: pathlib.Path, links: Dict[str, Dict[str, Any]], **kwargs: Any) -> Dict[str, Dict[str, Any]]:
    """Runs a bucketed psi's receiver and sender on two threads."""
    return on_threads(lambda role: privset.bucketed.psi(
        role,
        tmp / f"{role}.csv",
        id_column="id",
        state_dir=tmp / f"state-{role}",
        output_rows=tmp / "rows.csv" if role == "receiver" else None,
        timeout=60,
        **links[role],
        **kwargs,
    ))


def tls_links(tmp: pathlib.Path) -> Dict[str, Dict[str, Any]]:
    certs = privset.generate_certs(tmp / "certs", ["receiver", "sender"])
    addr = f"127.0.0.1:{free_port()}"
    return {
        "receiver": {"listen": addr, "tls": certs["receiver"]},
        "sender": {"peer": addr, "tls": certs["sender"], "server_name": "receiver"},
    }


@pytest.mark.parametrize("n_r,n_s,shared,buckets", [(3000, 2000, 600, 5), (1, 1, 1, 3), (500, 1, 0, 4), (800, 800, 800, "auto")])
def test_bucketed_psi_over_tls_matches_the_plaintext(tmp_path: pathlib.Path, n_r: int, n_s: int, shared: int, buckets: Any) -> None:
    want = sets(tmp_path, random.Random(n_r * 31 + n_s), n_r, n_s, shared)
    out = both(tmp_path, tls_links(tmp_path), buckets=buckets)
    assert read_ids(tmp_path / "rows.csv") == want
    r, s = out["receiver"], out["sender"]
    assert r["cardinality"] == len(want) and "cardinality" not in s
    count = 1 if buckets == "auto" else buckets
    assert r["buckets"]["count"] == s["buckets"]["count"] == count
    assert sum(b["rows"] for b in r["buckets"]["per_bucket"]) == len(want)
    assert r["items"] == n_r and r["peer_items"] == n_s
    # The state is gone once the result is back.
    assert list((tmp_path / "state-receiver").iterdir()) == []


def test_bucketed_psi_refuses_a_peer_other_than_peer_name(tmp_path: pathlib.Path) -> None:
    """A certificate from the same CA is not enough when the run names its peer: a
    rival organisation's sender is refused by the receiver (naming both), and the named
    sender then runs."""
    want = sets(tmp_path, random.Random(11), 400, 300, 90)
    certs = privset.generate_certs(tmp_path / "certs", ["receiver", "sender", "rival"])
    addr = f"127.0.0.1:{free_port()}"
    errors: Dict[str, Any] = {}

    def rival() -> None:
        try:
            privset.bucketed.psi(
                "sender", tmp_path / "sender.csv", id_column="id", state_dir=tmp_path / "state-rival",
                peer=addr, tls=certs["rival"], server_name="receiver", timeout=20, buckets=2,
            )
        except Exception as e:  # the receiver closes the link on it
            errors["rival"] = e

    t = threading.Thread(target=rival)
    t.start()
    with pytest.raises(privset.TransportError) as e:
        privset.bucketed.psi(
            "receiver", tmp_path / "receiver.csv", id_column="id", state_dir=tmp_path / "state-receiver",
            listen=addr, tls=certs["receiver"], peer_name="sender", timeout=20, buckets=2,
        )
    t.join(timeout=60)
    assert "rival" in str(e.value) and "sender" in str(e.value), e.value
    assert "rival" in errors
    links = tls_links(tmp_path)
    links["receiver"]["peer_name"] = "sender"
    links["sender"]["peer_name"] = "receiver"
    both(tmp_path, links, buckets=2)
    assert read_ids(tmp_path / "rows.csv") == want


def test_bucketed_psi_over_an_exchange_directory(tmp_path: pathlib.Path) -> None:
    want = sets(tmp_path, random.Random(5), 1200, 900, 250)
    x = tmp_path / "exchange"
    links = {role: {"exchange_dir": x, "poll_interval": 0.005} for role in ("receiver", "sender")}
    out = both(tmp_path, links, buckets=3, group="x25519")
    assert read_ids(tmp_path / "rows.csv") == want
    assert out["receiver"]["transport"] == "exchange-dir"


def test_a_python_receiver_and_a_cli_sender(tmp_path: pathlib.Path) -> None:
    want = sets(tmp_path, random.Random(9), 1500, 1500, 400)
    links = tls_links(tmp_path)
    certs = tmp_path / "certs"
    cli = subprocess.Popen(
        [privset_binary(), "--progress", "none", "psi", "--role", "sender", "--peer", links["sender"]["peer"],
         "--tls-server-name", "receiver", "--tls-ca", str(certs / "ca.pem"), "--tls-cert", str(certs / "sender.pem"),
         "--tls-key", str(certs / "sender.key"), "--input", str(tmp_path / "sender.csv"), "--id-column", "id",
         "--buckets", "4", "--state-dir", str(tmp_path / "cli-state"), "--output", str(tmp_path / "sender.json")],
        stderr=subprocess.PIPE,
        text=True,
    )
    r = privset.bucketed.psi(
        "receiver", tmp_path / "receiver.csv", id_column="id", buckets=4, state_dir=tmp_path / "state",
        output_rows=tmp_path / "rows.csv", timeout=60, **links["receiver"],
    )
    _, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    assert read_ids(tmp_path / "rows.csv") == want and r["cardinality"] == len(want)


@pytest.mark.parametrize("n_r,n_s,shared,buckets,link,concurrency", [
    (2000, 1500, 321, 5, "tls", 1), (1, 1, 1, 2, "tls", 1), (700, 900, 0, 3, "dir", 1),
    (2000, 1500, 321, 5, "tls", 3), (700, 900, 100, 3, "dir", 2),
])
def test_bucketed_psi_card_matches_the_plaintext(
    tmp_path: pathlib.Path, n_r: int, n_s: int, shared: int, buckets: int, link: str, concurrency: int
) -> None:
    want = sets(tmp_path, random.Random(n_r * 7 + n_s), n_r, n_s, shared)
    x = tmp_path / "exchange"
    links = tls_links(tmp_path) if link == "tls" else {
        role: {"exchange_dir": x, "poll_interval": 0.005} for role in ("receiver", "sender")}
    out = on_threads(lambda role: privset.bucketed.psi_card(
        role, tmp_path / f"{role}.csv", id_column="id", buckets=buckets, concurrency=concurrency,
        state_dir=tmp_path / f"state-{role}", timeout=60, **links[role]))
    r, s = out["receiver"], out["sender"]
    assert r["protocol"] == "psi-card" and r["cardinality"] == len(want)
    assert s.get("cardinality") is None
    assert r["peer_items"] == n_s and s["peer_items"] == n_r


def test_bucketed_psi_card_sum_matches_the_plaintext(tmp_path: pathlib.Path) -> None:
    rng = random.Random(12)
    want = sets(tmp_path, rng, 1500, 1300, 222)
    ids = [row["id"] for row in csv.DictReader(open(tmp_path / "sender.csv", newline=""))]
    values = {i: rng.randrange(1000) for i in ids}
    (tmp_path / "sender.csv").write_text("id,v\n" + "".join(f"{i},{values[i]}\n" for i in ids))
    links = tls_links(tmp_path)
    sender: Dict[str, Any] = {"value_column": "v", "value_bound": 1000}
    out = on_threads(lambda role: privset.bucketed.psi_card_sum(
        role, tmp_path / f"{role}.csv", id_column="id", buckets=3, state_dir=tmp_path / f"state-{role}",
        timeout=60, **links[role], **(sender if role == "sender" else {})))
    r, s = out["receiver"], out["sender"]
    assert r["cardinality"] == s["cardinality"] == len(want)
    assert s["sum"] == sum(values[i] for i in want) and r.get("sum") is None


@pytest.mark.parametrize("n_r,n_s,shared,link", [(1800, 1400, 300, "tls"), (1, 1, 1, "tls"), (600, 900, 0, "dir")])
def test_bucketed_psu_writes_the_plaintext_union(tmp_path: pathlib.Path, n_r: int, n_s: int, shared: int, link: str) -> None:
    sets(tmp_path, random.Random(n_r * 13 + n_s), n_r, n_s, shared)
    union = read_ids(tmp_path / "receiver.csv") | read_ids(tmp_path / "sender.csv")
    x = tmp_path / "exchange"
    links = tls_links(tmp_path) if link == "tls" else {
        role: {"exchange_dir": x, "poll_interval": 0.005} for role in ("receiver", "sender")}
    out = on_threads(lambda role: privset.bucketed.psu(
        role, tmp_path / f"{role}.csv", id_column="id", buckets=3, state_dir=tmp_path / f"state-{role}",
        output_rows=tmp_path / "union.csv" if role == "receiver" else None, timeout=60, **links[role]))
    with open(tmp_path / "union.csv", newline="") as f:
        rows = [row["id"] for row in csv.DictReader(f)]
    assert len(rows) == len(union) and set(rows) == union
    r, s = out["receiver"], out["sender"]
    assert r["protocol"] == "psu" and r["rows"] == len(union)
    assert s.get("rows") is None and s["peer_items"] == n_r


def check_private_id_tables(tmp: pathlib.Path, receiver: pathlib.Path, sender: pathlib.Path) -> int:
    """Both private-id tables against the plaintext sets: the same identifiers in the
    same order, sorted, one per union item; each party's items once each; equal items,
    equal identifiers. Returns the union's size."""
    def table(path: pathlib.Path) -> List[Dict[str, str]]:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))

    r, s = table(receiver), table(sender)
    ids = [row["private_id"] for row in r]
    assert ids == [row["private_id"] for row in s] and ids == sorted(set(ids))
    mine, theirs = read_ids(tmp / "receiver.csv"), read_ids(tmp / "sender.csv")
    assert len(ids) == len(mine | theirs)
    for rows, own in ((r, mine), (s, theirs)):
        items = [row["id"] for row in rows if row["id"]]
        assert len(items) == len(own) and set(items) == own
    for a, b in zip(r, s):
        assert a["id"] or b["id"]
        assert not (a["id"] and b["id"]) or a["id"] == b["id"]
    return len(ids)


@pytest.mark.parametrize("n_r,n_s,shared,link", [(1700, 1300, 400, "tls"), (1, 1, 0, "tls"), (700, 500, 500, "dir")])
def test_bucketed_private_id_tables_agree_with_the_plaintext(
    tmp_path: pathlib.Path, n_r: int, n_s: int, shared: int, link: str
) -> None:
    sets(tmp_path, random.Random(n_r * 7 + n_s), n_r, n_s, shared)
    x = tmp_path / "exchange"
    links = tls_links(tmp_path) if link == "tls" else {
        role: {"exchange_dir": x, "poll_interval": 0.005} for role in ("receiver", "sender")}
    out = on_threads(lambda role: privset.bucketed.private_id(
        role, tmp_path / f"{role}.csv", id_column="id", buckets=3, state_dir=tmp_path / f"state-{role}",
        output_rows=tmp_path / f"{role}-ids.csv", timeout=60, **links[role]))
    union = check_private_id_tables(tmp_path, tmp_path / "receiver-ids.csv", tmp_path / "sender-ids.csv")
    r, s = out["receiver"], out["sender"]
    assert r["protocol"] == "private-id" and r["rows"] == s["rows"] == union
    assert r.get("cardinality") is None and s["peer_items"] == n_r


@pytest.mark.parametrize("values_he,extra", [
    ("paillier", {"he_modulus_bits": 1024, "dj_s": 1}),
    ("elgamal", {"sum_of_squares": True}),
])
def test_bucketed_pi_sum_matches_the_plaintext(tmp_path: pathlib.Path, values_he: str, extra: Dict[str, Any]) -> None:
    rng = random.Random(13)
    want = sets(tmp_path, rng, 1400, 1200, 321)
    ids = [row["id"] for row in csv.DictReader(open(tmp_path / "sender.csv", newline=""))]
    values = {i: (rng.randrange(1000), rng.randrange(50)) for i in ids}
    (tmp_path / "sender.csv").write_text(
        "id,v,w\n" + "".join(f"{i},{values[i][0]},{values[i][1]}\n" for i in ids))
    links = tls_links(tmp_path)
    p2: Dict[str, Any] = {"value_columns": ["v", "w"], "value_bound": 1000, **extra}
    party = {"receiver": "p1", "sender": "p2"}
    out = on_threads(lambda role: privset.bucketed.pi_sum(
        party[role], tmp_path / f"{role}.csv", id_column="id", buckets=3, values_he=values_he,
        state_dir=tmp_path / f"state-{role}", timeout=60, **links[role],
        **(p2 if role == "sender" else {k: v for k, v in extra.items() if k != "sum_of_squares"})))
    p1, p2_out = out["receiver"], out["sender"]
    assert p1["cardinality"] == p2_out["cardinality"] == len(want)
    assert p2_out["sums"] == [sum(values[i][c] for i in want) for c in (0, 1)]
    assert p1["sum"] is None and p1["sums"] is None
    assert p2_out["buckets"]["count"] == 3
    if extra.get("sum_of_squares"):
        assert p2_out["sums_of_squares"] == [sum(values[i][c] ** 2 for i in want) for c in (0, 1)]


def test_bucketed_pi_sum_refuses_what_it_does_not_run(tmp_path: pathlib.Path) -> None:
    write_ids(tmp_path / "p1.csv", ["a", "b"])
    with pytest.raises(privset.ConfigurationError, match="paillier or elgamal"):
        privset.bucketed.pi_sum("p1", tmp_path / "p1.csv", values_he="rlwe", listen="127.0.0.1:1",
                                insecure_no_tls=True)
    with pytest.raises(privset.ConfigurationError, match="value columns"):
        privset.bucketed.pi_sum("p2", tmp_path / "p1.csv", listen="127.0.0.1:1", insecure_no_tls=True)


def test_bad_settings_and_refused_operations_are_clear(tmp_path: pathlib.Path) -> None:
    write_ids(tmp_path / "receiver.csv", ["a", "b", "a"])
    with pytest.raises(privset.ConfigurationError, match="concurrency must be 1 to 64"):
        privset.bucketed.psi("receiver", tmp_path / "receiver.csv", concurrency=0, listen="127.0.0.1:1",
                             insecure_no_tls=True)
    with pytest.raises(privset.ConfigurationError, match="buckets must be"):
        privset.bucketed.psi("receiver", tmp_path / "receiver.csv", buckets=0, listen="127.0.0.1:1", insecure_no_tls=True)
    # Duplicates are refused before anything is sent, naming the line.
    with pytest.raises(privset.InputError, match="line 4"):
        privset.bucketed.psi("receiver", tmp_path / "receiver.csv", id_column="id", buckets=2,
                             state_dir=tmp_path / "s", listen=f"127.0.0.1:{free_port()}", insecure_no_tls=True, timeout=5)
