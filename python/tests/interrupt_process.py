"""A long run in its own process, for the Ctrl-C tests: prints "started", then runs
until interrupted and reports (JSON, last line) when KeyboardInterrupt was raised and
how long the party threads took to end.

Usage: python interrupt_process.py local|listen|exchange-dir|mpsi-local|mpsi-exchange-dir N
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time

import privset


def main() -> None:
    kind, n = sys.argv[1], int(sys.argv[2])
    ids = [f"user{i}@example.com" for i in range(n)]
    print("started", flush=True)
    try:
        if kind == "local":
            # A Diffie-Hellman psi: long enough to be interrupted in a computation step
            # (psi's default, vole, finishes 2^18 items in well under a second).
            privset.local.psi(ids, ids[n // 2 :] + [f"other{i}" for i in range(n // 2)], mqrpmt="cwprf")
        elif kind == "mpsi-local":  # a server and two clients, all computing
            privset.local.mpsi([ids, ids[n // 2 :], ids[: n // 2 + 1]], protocol="bay")
        elif kind == "mpsi-exchange-dir":  # a client whose server never writes
            with tempfile.TemporaryDirectory() as d:
                with open(f"{d}/parties.toml", "w") as f:
                    f.write("".join(f'[[party]]\nname = "org{i}"\n' for i in range(3)))
                privset.Bay.client(ids).run(
                    parties=f"{d}/parties.toml", name="org1", exchange_dir=f"{d}/x", state_dir=f"{d}/s"
                )
        elif kind == "listen":  # no peer ever connects
            privset.Psi.receiver(ids).run(listen="127.0.0.1:0", insecure_no_tls=True, timeout=600)
        else:  # no peer ever writes
            with tempfile.TemporaryDirectory() as d:
                privset.Psi.receiver(ids).run(exchange_dir=f"{d}/x", state_dir=f"{d}/s", timeout=600)
        print(json.dumps({"interrupted": False}))
    except KeyboardInterrupt:
        raised = time.time()
        live = privset._native.live_workers()
        while privset._native.live_workers() and time.time() - raised < 120:
            time.sleep(0.02)
        report = {
            "interrupted": True,
            "raised_at": raised,
            "live_at_raise": live,
            "workers_ended_after": time.time() - raised,
            "live_workers": privset._native.live_workers(),
            "python_threads": threading.active_count(),
        }
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
