"""Bucketed psi with Ray beside the same job without it (docs/scale.md).

Both organisations run as separate processes on this machine over one exchange
directory; with ``--ray`` each starts its own local Ray cluster and its buckets run as
Ray tasks (privset.ray.psi), without it the buckets run one after another in the
process (privset.bucketed.psi). Prints, per mode: wall seconds of the whole job, each
party's CPU seconds (driver plus bucket tasks, from RESULT.json) and the wall seconds
per bucket. Figures, not assertions.

    python bench/ray_buckets.py --log2 20 --buckets 4
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

PARTY = r'''
import json, sys
spec = json.loads(sys.argv[1])
import privset
kwargs = dict(id_column="id", exchange_dir=spec["x"], state_dir=spec["state"], buckets=spec["buckets"],
              group="x25519", timeout=3600, poll_interval=0.01,
              output_rows=spec["rows"])
if spec["ray"]:
    import ray
    ray.init(address="local", num_cpus=2, object_store_memory=100 << 20, include_dashboard=False, log_to_driver=False)
    r = privset.ray.psi(spec["role"], spec["input"], **kwargs)
else:
    r = privset.bucketed.psi(spec["role"], spec["input"], **kwargs)
print(json.dumps(r))
'''


def write(path: pathlib.Path, n: int, offset: int) -> None:
    shared = n // 10
    with open(path, "w") as f:
        f.write("id\n")
        for start in range(0, n, 1 << 16):
            f.write("".join(f"{(i if i < shared else i + offset):014x}@example.org\n" for i in range(start, min(n, start + (1 << 16)))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2", type=int, default=20)
    ap.add_argument("--buckets", type=int, default=4)
    args = ap.parse_args()
    n = 1 << args.log2
    work = pathlib.Path(tempfile.mkdtemp(prefix="privset-ray-bench-"))
    write(work / "receiver.csv", n, 0)
    write(work / "sender.csv", n, 1 << 40)
    print(f"{'mode':<8} {'items':>6} {'buckets':>7} {'wall s':>8} {'cpu_r s':>9} {'cpu_s s':>9} {'wall/bucket s':>14}")
    for ray in (False, True):
        tag = "ray" if ray else "plain"
        procs = []
        start = time.monotonic()
        for role in ("receiver", "sender"):
            spec = {
                "role": role,
                "input": str(work / f"{role}.csv"),
                "x": str(work / f"x-{tag}"),
                "state": str(work / f"state-{tag}-{role}"),
                "buckets": args.buckets,
                "rows": str(work / f"rows-{tag}.csv") if role == "receiver" else None,
                "ray": ray,
            }
            procs.append(subprocess.Popen([sys.executable, "-c", PARTY, json.dumps(spec)], stdout=subprocess.PIPE, text=True))
        outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        wall = time.monotonic() - start
        r, s = outs
        print(f"{tag:<8} 2^{args.log2:<4} {args.buckets:>7} {wall:8.1f} {r['cpu_seconds']:9.2f} {s['cpu_seconds']:9.2f} {wall / args.buckets:14.1f}")


if __name__ == "__main__":
    main()
