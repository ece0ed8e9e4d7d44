"""A bucketed job with Ray beside the same job without it (docs/scale.md).

Both organisations run as separate processes on this machine over one exchange
directory, or with ``--link tls`` over loopback mutual TLS (the first role listens;
with Ray its tasks listen on a port range and meet the other's through its driver's
rendezvous); with Ray each starts its own Ray cluster on this machine (a head and a worker
node, one CPU each) and its buckets (units) run as Ray tasks (``privset.ray.<op>``), without it they run one after another in the
process (``privset.bucketed.<op>``). ``--kill-after S`` SIGKILLs the Ray worker of one
running bucket task S seconds into the Ray job (Ray retries it; it resumes from its
checkpoint). Prints, per mode: wall seconds of the whole job, each party's CPU seconds
(driver plus bucket tasks, from RESULT.json), the wall seconds per bucket (unit), and
whether the answer is the plaintext one. Figures, not assertions.

    python bench/ray_buckets.py --op psi --log2 20 --buckets 4
    python bench/ray_buckets.py --op psi-card --log2 20 --buckets 4 --modes ray --kill-after 60
    python bench/ray_buckets.py --op pi-sum --log2 20 --buckets 4 --modes ray --kill-after 60
    python bench/ray_buckets.py --op psi-card --log2 22 --buckets 4 --link tls
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

PARTY = r'''
import json, sys
spec = json.loads(sys.argv[1])
import privset
link = dict(spec["link"])
if "tls_dir" in link:
    link["tls"] = privset.TlsFiles.in_dir(link.pop("tls_dir"), spec["role"])
    if not spec["ray"]:
        link.pop("ports", None)
kwargs = dict(id_column="id", state_dir=spec["state"], buckets=spec["buckets"],
              group="x25519", timeout=3600, poll_interval=0.01, **link, **spec["settings"])
name = spec["op"].replace("-", "_")
if spec["ray"]:
    import ray
    from ray.cluster_utils import Cluster
    # A head and a worker node, one CPU each: the organisation's own two-node cluster.
    node = {"num_cpus": 1, "object_store_memory": 100 << 20}
    cluster = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
    cluster.add_node(**node)
    ray.init(address=cluster.address, log_to_driver=False)
    r = getattr(privset.ray, name)(spec["role"], spec["input"], **kwargs)
    ray.shutdown()
    cluster.shutdown()
else:
    r = getattr(privset.bucketed, name)(spec["role"], spec["input"], **kwargs)
print(json.dumps(r))
'''

ROLES = {"psi": ("receiver", "sender"), "psi-card": ("receiver", "sender"), "pi-sum": ("p1", "p2")}


def value(i: int) -> int:
    return (i * 7919) % 100_000


def write(path: pathlib.Path, n: int, offset: int, values: bool) -> int:
    """n identifiers, the first n // 10 shared; with ``values`` a value column. Returns
    the sum of the values over the shared identifiers."""
    shared = n // 10
    with open(path, "w") as f:
        f.write("id,spend\n" if values else "id\n")
        for start in range(0, n, 1 << 16):
            rows = range(start, min(n, start + (1 << 16)))
            if values:
                f.write("".join(f"{(i if i < shared else i + offset):014x}@example.org,{value(i)}\n" for i in rows))
            else:
                f.write("".join(f"{(i if i < shared else i + offset):014x}@example.org\n" for i in rows))
    return sum(value(i) for i in range(shared))


def bucket_workers() -> List[int]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()[1:] if "ray::_run_bucket" in line]


def killer(after: float, done: threading.Event, log: List[str]) -> None:
    """Kills the worker of one running bucket task `after` seconds in."""
    start = time.monotonic()
    if done.wait(after):
        return
    while not done.is_set():
        workers = bucket_workers()
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            log.append(f"killed bucket worker {workers[0]} at {time.monotonic() - start:.1f} s")
            return
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", choices=sorted(ROLES), default="psi")
    ap.add_argument("--log2", type=int, default=20)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--modes", default="plain,ray", help="plain, ray or both (comma-separated)")
    ap.add_argument("--kill-after", type=float, default=None, help="seconds into a Ray job to kill a bucket worker")
    ap.add_argument("--link", choices=("exchange", "tls"), default="exchange")
    ap.add_argument("--port", type=int, default=27000, help="--link tls: the plan port (the rendezvous takes the next)")
    args = ap.parse_args()
    n = 1 << args.log2
    work = pathlib.Path(tempfile.mkdtemp(prefix="privset-ray-bench-"))
    first, second = ROLES[args.op]
    write(work / f"{first}.csv", n, 0, False)
    want_sum = write(work / f"{second}.csv", n, 1 << 40, args.op == "pi-sum")
    settings: Dict[str, Dict[str, Any]] = {first: {}, second: {}}
    if args.op == "psi":
        settings[first]["output_rows"] = str(work / "rows.csv")
    if args.op == "pi-sum":
        settings[second]["value_columns"] = "spend"
    if args.link == "tls":
        import privset

        privset.generate_certs(work / "certs", [first, second])
    print(
        f"{'op':<8} {'mode':<6} {'link':<8} {'items':>6} {'buckets':>7} {'units':>5} {'wall s':>8} {'cpu_1 s':>9} "
        f"{'cpu_2 s':>9} {'wall/unit s':>11} answer"
    )
    for tag in args.modes.split(","):
        ray = tag == "ray"
        procs = []
        start = time.monotonic()
        for role in (first, second):
            if args.link == "tls":
                p = args.port
                link: Dict[str, Any] = {"tls_dir": str(work / "certs")}
                if role == first:
                    link.update(listen=f"127.0.0.1:{p}", ports=f"{p + 2}-{p + 41}")
                else:
                    link.update(peer=f"127.0.0.1:{p}", server_name=first)
            else:
                link = {"exchange_dir": str(work / f"x-{tag}")}
            spec = {
                "op": args.op,
                "role": role,
                "input": str(work / f"{role}.csv"),
                "link": link,
                "state": str(work / f"state-{tag}-{role}"),
                "buckets": args.buckets,
                "settings": settings[role],
                "ray": ray,
            }
            procs.append(subprocess.Popen([sys.executable, "-c", PARTY, json.dumps(spec)], stdout=subprocess.PIPE, text=True))
        done, log = threading.Event(), []  # type: threading.Event, List[str]
        kill: Optional[threading.Thread] = None
        if ray and args.kill_after is not None:
            kill = threading.Thread(target=killer, args=(args.kill_after, done, log))
            kill.start()
        outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        done.set()
        if kill is not None:
            kill.join()
        wall = time.monotonic() - start
        a, b = outs
        units = len(a["buckets"]["per_bucket"])
        right = a.get("cardinality", b.get("cardinality")) == n // 10
        if args.op == "pi-sum":
            right = right and b["sum"] == want_sum
        print(
            f"{args.op:<8} {tag:<6} {args.link:<8} 2^{args.log2:<4} {args.buckets:>7} {units:>5} {wall:8.1f} "
            f"{a['cpu_seconds']:9.2f} {b['cpu_seconds']:9.2f} {wall / units:11.1f} {'right' if right else 'WRONG'}"
        )
        for line in log:
            print(f"  {line}")


if __name__ == "__main__":
    main()
