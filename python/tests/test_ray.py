"""privset.ray: each organisation runs its own local Ray cluster (a separate process:
a head and a worker node), the buckets (or units) run as Ray tasks that talk through a
shared exchange directory or over mutual TLS (meeting through the listening driver's
rendezvous), and one bucket task is killed (SIGKILL to its Ray worker) mid-session: Ray
runs it again, it resumes from its checkpoint (or meets its peer's retry), and the
answer is the plaintext one. psi's buckets run at once; psi-card's, private-id's and
pi-sum's units wave after wave."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Optional, Tuple

import pytest
import socket

pytest.importorskip("ray")  # scripts/test.sh installs it (pip install privset[ray])

from privset.errors import ConfigurationError  # noqa: E402

PARTY = pathlib.Path(__file__).with_name("ray_party.py")


def free_ports(count: int) -> int:
    """The first of `count` consecutive ports free on this host right now, between Ray's
    worker ports (10002-19999) and the kernel's ephemeral range (from 32768), so neither
    Ray nor an outgoing connection takes one before the test binds it."""
    for _ in range(100):
        first = random.randrange(20000, 32000)
        sockets = []
        try:
            for p in range(first, first + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return first
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free port range")


def tls_links(tmp_path: pathlib.Path, roles: Tuple[str, str]) -> Dict[str, Dict[str, Any]]:
    """Link settings over mutual TLS: roles[0] listens (plan port, rendezvous on the
    next, its tasks on a range after), roles[1] connects."""
    import privset

    privset.generate_certs(tmp_path / "certs", list(roles))
    port = free_ports(12)
    return {
        roles[0]: {"listen": f"127.0.0.1:{port}", "ports": f"{port + 2}-{port + 11}"},
        roles[1]: {"peer": f"127.0.0.1:{port}", "server_name": roles[0]},
    }


def run_both(
    tmp_path: pathlib.Path,
    operation: str,
    roles: Tuple[str, str],
    settings: Dict[str, Dict[str, Any]],
    over_tls: bool = False,
    fault: Optional[str] = None,
) -> Dict[str, Dict[str, Any]]:
    """Runs both organisations' parties (roles[i] reads roles[i].csv) as processes, kills
    the worker of roles[0]'s task of unit 1 mid-session (held there after its first
    message, PRIVSET_TEST_HOLD_AFTER_SEND), or, given `fault`, lets that task die
    between its session and its record instead, and returns each party's result."""
    procs = {}
    links = tls_links(tmp_path, roles) if over_tls else {}
    for role in roles:
        spec: Dict[str, Any] = {
            "operation": operation,
            "role": role,
            "input": str(tmp_path / f"{role}.csv"),
            "state_dir": str(tmp_path / f"state-{role}"),
            "settings": dict(settings[role], **links.get(role, {})),
        }
        if fault is not None:
            spec["env"] = {"PRIVSET_TEST_DIE_BEFORE_RECORD": fault}
        else:
            spec["env"] = {"PRIVSET_TEST_HOLD_AFTER_SEND": f"{roles[0]}:1"}
        if over_tls:
            spec["tls_dir"] = str(tmp_path / "certs")
        else:
            spec["exchange_dir"] = str(tmp_path / "exchange")
        procs[role] = subprocess.Popen(
            [sys.executable, str(PARTY), json.dumps(spec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    # Kill the held task's worker once it announces the hold (its pid in the job
    # directory); Ray runs the task again and the peer's task must meet the retry.
    killed: Optional[int] = None
    deadline = time.monotonic() + 180
    while (
        fault is None
        and killed is None
        and time.monotonic() < deadline
        and all(p.poll() is None for p in procs.values())
    ):
        held = list(tmp_path.glob(f"state-{roles[0]}/**/test-held-1.pid"))
        if held:
            killed = int(held[0].read_text())
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.02)
    outs = {role: p.communicate(timeout=600) for role, p in procs.items()}
    for role, p in procs.items():
        assert p.returncode == 0, f"{role}: {outs[role][1][-3000:]}"
    assert fault is not None or killed is not None, "no held task was seen to kill"
    return {role: json.loads(outs[role][0].strip().splitlines()[-1]) for role in procs}


@pytest.mark.parametrize("over_tls", [False, True], ids=["exchange-dir", "tls"])
def test_psi_buckets_as_ray_tasks_survive_a_killed_worker(tmp_path: pathlib.Path, over_tls: bool) -> None:
    rng = random.Random(18)
    pool = [f"u{rng.getrandbits(48):012x}" for _ in range(12000)]
    want = set(pool[:1500])
    (tmp_path / "receiver.csv").write_text("id\n" + "".join(f"{i}\n" for i in pool[:6000]))
    sender = pool[:1500] + pool[6000:10500]
    rng.shuffle(sender)
    (tmp_path / "sender.csv").write_text("id\n" + "".join(f"{i}\n" for i in sender))
    common = {"buckets": 6, "group": "x25519"}
    results = run_both(
        tmp_path,
        "psi",
        ("receiver", "sender"),
        {"receiver": dict(common, output_rows=str(tmp_path / "rows.csv")), "sender": common},
        over_tls,
    )
    with open(tmp_path / "rows.csv", newline="") as f:
        rows = {r["id"] for r in csv.DictReader(f)}
    assert rows == want
    r, s = results["receiver"], results["sender"]
    assert r["cardinality"] == len(want) and "cardinality" not in s
    assert r["buckets"]["count"] == s["buckets"]["count"] == 6
    assert r["transport"] == ("tcp+mtls" if over_tls else "exchange-dir")
    # The buckets' bytes are counted into the driver's report.
    assert r["bytes_sent"] >= sum(b["bytes_sent"] for b in r["buckets"]["per_bucket"]) > 0


@pytest.mark.parametrize("fault", ["receiver:1", "sender:4"])
def test_a_task_dying_between_its_session_and_its_record_reruns_its_unit_next_round(
    tmp_path: pathlib.Path, fault: str
) -> None:
    """Over TLS, one side's task of a unit dies after the session, before its record; the
    other side's records it. The retry learns the peer finished, the round is aborted on
    both sides, and the next round runs the unit again: the side that had it runs it
    twice, and the answer is the plaintext one."""
    want = shared_sets(tmp_path, ("receiver", "sender"), (3000, 2500), 700)
    common = {"buckets": 3, "group": "x25519"}
    results = run_both(
        tmp_path, "psi_card", ("receiver", "sender"), {"receiver": common, "sender": common}, True, fault
    )
    assert results["receiver"]["cardinality"] == len(want)
    dying, unit = fault.split(":")
    other = "sender" if dying == "receiver" else "receiver"
    runs = {b["bucket"]: b["runs"] for b in results[other]["buckets"]["per_bucket"]}
    assert runs[int(unit)] == 2 and sum(runs.values()) == len(runs) + 1, runs


def shared_sets(tmp_path: pathlib.Path, roles: Tuple[str, str], sizes: Tuple[int, int], shared: int) -> Dict[str, int]:
    """Writes roles[0].csv (identifiers) and roles[1].csv (identifiers and a value), with
    `shared` identifiers in common; returns the second's values of the shared ones."""
    rng = random.Random(sizes[0] * 31 + sizes[1])
    pool = [f"v{rng.getrandbits(48):012x}" for _ in range(sizes[0] + sizes[1])]
    first = pool[: sizes[0]]
    second = first[:shared] + pool[sizes[0] : sizes[0] + sizes[1] - shared]
    rng.shuffle(second)
    values = {i: rng.randrange(1 << 20) for i in second}
    (tmp_path / f"{roles[0]}.csv").write_text("id\n" + "".join(f"{i}\n" for i in first))
    (tmp_path / f"{roles[1]}.csv").write_text("id,spend\n" + "".join(f"{i},{values[i]}\n" for i in second))
    return {i: values[i] for i in first[:shared]}


@pytest.mark.parametrize("over_tls", [False, True], ids=["exchange-dir", "tls"])
def test_psi_card_units_as_ray_tasks_survive_a_killed_worker(tmp_path: pathlib.Path, over_tls: bool) -> None:
    want = shared_sets(tmp_path, ("receiver", "sender"), (5000, 4000), 1200)
    common = {"buckets": 4, "group": "x25519"}
    results = run_both(tmp_path, "psi_card", ("receiver", "sender"), {"receiver": common, "sender": common}, over_tls)
    r, s = results["receiver"], results["sender"]
    assert r["cardinality"] == len(want) and "cardinality" not in s
    # 4 parts: 4 evaluate units, 4 send, 4 compare, every one recorded once.
    assert [b["bucket"] for b in r["buckets"]["per_bucket"]] == list(range(12))
    assert r["bytes_received"] >= sum(b["bytes_received"] for b in r["buckets"]["per_bucket"]) > 0


def test_private_id_units_as_ray_tasks_survive_a_killed_worker(tmp_path: pathlib.Path) -> None:
    shared_sets(tmp_path, ("receiver", "sender"), (4000, 3000), 900)
    rows = {role: str(tmp_path / f"{role}-ids.csv") for role in ("receiver", "sender")}
    settings = {role: {"buckets": 3, "group": "x25519", "output_rows": rows[role]} for role in rows}
    results = run_both(tmp_path, "private_id", ("receiver", "sender"), settings)
    tables = {}
    for role in rows:
        with open(rows[role], newline="") as f:
            tables[role] = [(row["private_id"], row["id"]) for row in csv.DictReader(f)]
    r, s = tables["receiver"], tables["sender"]
    assert [i for i, _ in r] == [i for i, _ in s] and len(r) == 4000 + 3000 - 900
    # Identical items, identical identifiers: the rows both parties fill are the shared ones.
    assert sum(1 for (_, a), (_, b) in zip(r, s) if a and b) == 900
    assert all(a == b for (_, a), (_, b) in zip(r, s) if a and b)
    assert results["receiver"]["rows"] == results["sender"]["rows"] == len(r)
    # 3 parts: 3 evaluate and 3 reply units, then 5 units per part.
    assert len(results["sender"]["buckets"]["per_bucket"]) == 3 + 3 + 5 * 3


@pytest.mark.parametrize("values_he,over_tls", [("paillier", False), ("elgamal", False), ("elgamal", True)])
def test_pi_sum_units_as_ray_tasks_survive_a_killed_worker(
    tmp_path: pathlib.Path, values_he: str, over_tls: bool
) -> None:
    want = shared_sets(tmp_path, ("p1", "p2"), (3000, 2500), 700)
    # A small Paillier modulus keeps the test short; the protocol is the same.
    he: Dict[str, Any] = {"values_he": values_he}
    if values_he == "paillier":
        he.update(he_modulus_bits=1024, dj_s=1)
    common = dict(he, buckets=3, group="x25519")
    results = run_both(
        tmp_path, "pi_sum", ("p1", "p2"), {"p1": common, "p2": dict(common, value_columns="spend")}, over_tls
    )
    p1, p2 = results["p1"], results["p2"]
    assert p1["cardinality"] == p2["cardinality"] == len(want)
    assert p2["sum"] == sum(want.values()) and p1["sum"] is None
    # 3 parts: 3 evaluate units, the key, 3 send, 3 compare and the total.
    assert len(p2["buckets"]["per_bucket"]) == 11


def test_a_ray_job_refuses_wrong_links_and_unknown_arguments(tmp_path: pathlib.Path) -> None:
    import privset

    (tmp_path / "ids.csv").write_text("id\na\n")
    common = {"exchange_dir": tmp_path / "x", "state_dir": tmp_path / "s"}
    ids = tmp_path / "ids.csv"
    tls = privset.TlsFiles.in_dir(tmp_path / "certs", "receiver")
    with pytest.raises(ConfigurationError, match="exactly one link"):
        privset.ray.psi_card("receiver", ids, peer="127.0.0.1:1", tls=tls, **common)
    with pytest.raises(ConfigurationError, match="exactly one link"):
        privset.ray.psi_card("receiver", ids, state_dir=tmp_path / "s")
    over_tcp = {"state_dir": tmp_path / "s", "tls": tls}
    with pytest.raises(ConfigurationError, match="need ports"):
        privset.ray.psi("receiver", ids, listen="127.0.0.1:7000", **over_tcp)
    with pytest.raises(ConfigurationError, match="listening organisation's"):
        privset.ray.psi("sender", ids, peer="127.0.0.1:7000", ports="7002-7010", **over_tcp)
    for ports, why in (("7010-7002", "not a range"), ("70a-7002", "first-last"), ((0, 5), "not a range")):
        with pytest.raises(ConfigurationError, match=why):
            privset.ray.psi("receiver", ids, listen="127.0.0.1:7000", ports=ports, **over_tcp)
    with pytest.raises(ConfigurationError, match="not host:port"):
        privset.ray.psi("receiver", ids, listen="127.0.0.1:65535", ports="7002-7010", **over_tcp)
    with pytest.raises(ConfigurationError, match="not insecure_no_tls"):
        privset.ray.psi("sender", ids, peer="127.0.0.1:7000", insecure_no_tls=True, state_dir=tmp_path / "s")
    with pytest.raises(ConfigurationError, match="concurrency is Ray's"):
        privset.ray.psi("receiver", tmp_path / "ids.csv", concurrency=2, **common)
    with pytest.raises(ConfigurationError, match="value_colums"):
        privset.ray.pi_sum("p2", tmp_path / "ids.csv", value_colums="spend", **common)
    with pytest.raises(ConfigurationError, match="role must be"):
        privset.ray.pi_sum("receiver", tmp_path / "ids.csv", **common)
