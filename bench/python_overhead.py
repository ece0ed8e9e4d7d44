#!/usr/bin/env python3
"""Overhead of the Python bindings: PI-Sum through Python against the same run
through the CLI.

Both runs are apples to apples: the same generated data (2^16 identifiers a side by
default, half of them shared), the same settings (the CLI's defaults: ristretto255,
Paillier 3072-bit with s = 2, GCS), both parties as separate processes over mutual
TLS 1.3 on loopback. The CLI parties read the CSV files; the Python parties read the
same files into lists with the csv module and pass them to privset.PiSum.p1 / .p2,
as a user would. Printed per variant (median of --repeat runs): wall time from
starting both processes until both exited, the parties' own wall and CPU seconds
(RESULT.json), and the ratio Python / CLI.

Usage: python bench/python_overhead.py [--items 65536] [--repeat 3]
       (with privset installed, e.g. target/py-venv/bin/python, and the CLI built:
        cargo build --release -p privset-cli)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

REPO = pathlib.Path(__file__).resolve().parents[1]


def party(args: argparse.Namespace) -> None:
    """One Python party (run in its own process by the benchmark)."""
    import privset

    with open(args.input, newline="") as f:
        rows = list(csv.DictReader(f))
    tls = privset.TlsFiles.in_dir(args.certs, args.party)
    if args.party == "p1":
        p = privset.PiSum.p1([r["id"] for r in rows])
        result = p.run(listen=args.addr, tls=tls)
    else:
        p = privset.PiSum.p2([r["id"] for r in rows], {"value": [int(r["value"]) for r in rows]})
        result = p.run(peer=args.addr, tls=tls)
    pathlib.Path(args.output).write_text(result.to_json())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_data(work: pathlib.Path, n: int) -> int:
    rng = random.Random(2026)
    shared = n // 2
    p1 = [f"user{i}@example.com" for i in range(n)]
    p2 = [f"user{i}@example.com" for i in range(shared)] + [f"buyer{i}@example.org" for i in range(n - shared)]
    rng.shuffle(p1)
    rng.shuffle(p2)
    values = {w: rng.randrange(1000) for w in p2}
    (work / "p1.csv").write_text("id\n" + "".join(f"{v}\n" for v in p1))
    (work / "p2.csv").write_text("id,value\n" + "".join(f"{w},{values[w]}\n" for w in p2))
    return sum(values[w] for w in set(p1) & set(p2))


def run_pair(commands: Dict[str, List[str]], outputs: Dict[str, pathlib.Path]) -> Dict[str, float]:
    start = time.perf_counter()
    procs = {name: subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True) for name, cmd in commands.items()}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed: {err}")
    elapsed = time.perf_counter() - start
    results = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    return {
        "elapsed": elapsed,
        "party_wall": max(r["wall_seconds"] for r in results.values()),
        "cpu": sum(r["cpu_seconds"] for r in results.values()),
        "sum": results["p2"]["sums"][0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1 << 16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli", default=os.environ.get("PRIVSET_BIN", str(REPO / "target" / "release" / "privset")))
    ap.add_argument("--party", choices=["p1", "p2"], help=argparse.SUPPRESS)
    ap.add_argument("--addr", help=argparse.SUPPRESS)
    ap.add_argument("--certs", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--output", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.party:
        party(args)
        return

    import privset

    with tempfile.TemporaryDirectory(prefix="privset-overhead-") as d:
        work = pathlib.Path(d)
        expected = write_data(work, args.items)
        privset.generate_certs(work / "certs", ["p1", "p2"])
        outputs = {name: work / f"{name}.json" for name in ("p1", "p2")}

        def cli(addr: str) -> Dict[str, List[str]]:
            def one(name: str, link: List[str], extra: List[str]) -> List[str]:
                certs = work / "certs"
                return [
                    args.cli, "pi-sum", "--role", name, *link,
                    "--tls-ca", str(certs / "ca.pem"), "--tls-cert", str(certs / f"{name}.pem"),
                    "--tls-key", str(certs / f"{name}.key"),
                    "--input", str(work / f"{name}.csv"), "--id-column", "id", *extra,
                    "--output", str(outputs[name]),
                ]  # fmt: skip

            return {
                "p1": one("p1", ["--listen", addr], []),
                "p2": one("p2", ["--peer", addr], ["--value-column", "value"]),
            }

        def python(addr: str) -> Dict[str, List[str]]:
            return {
                name: [
                    sys.executable, __file__, "--party", name, "--addr", addr, "--certs", str(work / "certs"),
                    "--input", str(work / f"{name}.csv"), "--output", str(outputs[name]),
                ]  # fmt: skip
                for name in ("p1", "p2")
            }

        runs: Dict[str, List[Dict[str, float]]] = {"cli": [], "python": []}
        for i in range(args.repeat):
            for variant, make in (("cli", cli), ("python", python)):
                m = run_pair(make(f"127.0.0.1:{free_port()}"), outputs)
                assert m["sum"] == expected, (variant, m["sum"], expected)
                runs[variant].append(m)
                print(
                    f"  run {i + 1} {variant:6}: {m['elapsed']:6.2f} s end to end, "
                    f"{m['party_wall']:6.2f} s party wall, {m['cpu']:6.2f} s CPU",
                    flush=True,
                )

        def median(variant: str, key: str) -> float:
            return statistics.median(m[key] for m in runs[variant])

        print()
        print(
            f"PI-Sum, {args.items} items a side, defaults (ristretto255, Paillier 3072/s=2, GCS), "
            f"two processes over mTLS on loopback, median of {args.repeat}:"
        )
        print(f"{'':24}{'CLI':>10}{'Python':>10}{'ratio':>9}")
        for key, label in (("elapsed", "end to end (s)"), ("party_wall", "party wall (s)"), ("cpu", "CPU, both (s)")):
            c, p = median("cli", key), median("python", key)
            print(f"{label:24}{c:10.2f}{p:10.2f}{p / c:9.3f}")
        print(f"intersection sum {expected}: both match the plaintext")


if __name__ == "__main__":
    main()
