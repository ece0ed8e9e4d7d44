"""privset.ray: each organisation runs its own local Ray cluster (a separate process),
the buckets run as Ray tasks that talk through a shared exchange directory, and one of
the receiver's bucket tasks is killed (SIGKILL to its Ray worker) mid-job: Ray runs it
again, it resumes from its checkpoint, and the answer is the plaintext intersection."""

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
from typing import Any, Dict, List, Optional, Set

import pytest

pytest.importorskip("ray")  # scripts/test.sh installs it (pip install privset[ray])

PARTY = pathlib.Path(__file__).with_name("ray_party.py")


def write_ids(path: pathlib.Path, ids: List[str]) -> None:
    path.write_text("id\n" + "".join(f"{i}\n" for i in ids))


def bucket_workers() -> List[int]:
    """Ray workers running a bucket task right now (their process title names it)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()[1:] if "ray::_run_bucket" in line]


def spawn(spec: Dict[str, Any]) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [sys.executable, str(PARTY), json.dumps(spec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_buckets_as_ray_tasks_survive_a_killed_worker(tmp_path: pathlib.Path) -> None:
    rng = random.Random(18)
    pool = [f"u{rng.getrandbits(48):012x}" for _ in range(12000)]
    want: Set[str] = set(pool[:1500])
    write_ids(tmp_path / "receiver.csv", pool[:6000])
    sender = pool[:1500] + pool[6000:10500]
    rng.shuffle(sender)
    write_ids(tmp_path / "sender.csv", sender)
    x = tmp_path / "exchange"
    specs = {
        role: {
            "role": role,
            "input": str(tmp_path / f"{role}.csv"),
            "exchange_dir": str(x),
            "state_dir": str(tmp_path / f"state-{role}"),
            "output_rows": str(tmp_path / "rows.csv") if role == "receiver" else None,
            "buckets": 6,
        }
        for role in ("receiver", "sender")
    }
    procs = {role: spawn(spec) for role, spec in specs.items()}
    # Kill one bucket task's worker once it runs (the receiver's or the sender's: both
    # organisations' tasks have the same title; either must survive it).
    killed: Optional[int] = None
    deadline = time.monotonic() + 180
    while killed is None and time.monotonic() < deadline and all(p.poll() is None for p in procs.values()):
        workers = bucket_workers()
        if workers:
            time.sleep(0.3)
            if workers[0] in bucket_workers():
                os.kill(workers[0], signal.SIGKILL)
                killed = workers[0]
        time.sleep(0.05)
    outs = {role: p.communicate(timeout=300) for role, p in procs.items()}
    for role, p in procs.items():
        assert p.returncode == 0, f"{role}: {outs[role][1][-3000:]}"
    assert killed is not None, "no bucket task was seen running to kill"
    results = {role: json.loads(outs[role][0].strip().splitlines()[-1]) for role in procs}
    with open(tmp_path / "rows.csv", newline="") as f:
        rows = {r["id"] for r in csv.DictReader(f)}
    assert rows == want
    r, s = results["receiver"], results["sender"]
    assert r["cardinality"] == len(want) and "cardinality" not in s
    assert r["buckets"]["count"] == s["buckets"]["count"] == 6
    assert r["transport"] == "exchange-dir"
    # The buckets' bytes are counted into the driver's report.
    assert r["bytes_sent"] >= sum(b["bytes_sent"] for b in r["buckets"]["per_bucket"]) > 0
