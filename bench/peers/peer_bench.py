#!/usr/bin/env python3
"""Peer PSI benchmark: OpenMined PSI (openmined-psi 2.0.6) and SecretFlow PSI (spu 0.9.5).

Optional side benchmark for privset: it measures two third-party ECDH-PSI
implementations on the same inputs that privset's own benchmark uses, so that
ratios can be printed side by side. See README.md beside this file for the exact
definitions of every number. Run it with the venv made by setup.sh:

    bash bench/peers/setup.sh
    ~/.cache/privset-peers-venv/bin/python bench/peers/peer_bench.py \
        --sizes 4096,65536 --peers openmined,secretflow --out results.jsonl

Each measurement is printed as one JSON object per line on stdout (and appended
to --out). Progress and notes go to stderr.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import shutil
import socket
import struct
import sys
import tempfile
import time

# --------------------------------------------------------------------------
# Inputs


def make_sets(n: int, seed: int):
    """Two lists of n distinct random 128-bit items as 32-char lowercase hex.

    The first n//2 items drawn are shared; each side then gets n - n//2 items of
    its own. Both lists are shuffled. Returns (client, server, plaintext
    intersection as a set), the intersection computed in plaintext.
    """
    rng = random.Random(f"privset-peers/{seed}/{n}")
    seen = set()

    def fresh():
        while True:
            x = f"{rng.getrandbits(128):032x}"
            if x not in seen:
                seen.add(x)
                return x

    shared = [fresh() for _ in range(n // 2)]
    client = shared + [fresh() for _ in range(n - n // 2)]
    server = shared + [fresh() for _ in range(n - n // 2)]
    rng.shuffle(client)
    rng.shuffle(server)
    truth = set(client) & set(server)
    return client, server, truth


def machine_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": model, "nproc": os.cpu_count(), "python": platform.python_version()}


def pkg_version(name: str) -> str:
    try:
        import importlib.metadata as md

        return md.version(name)
    except Exception:  # noqa: BLE001
        return "?"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# OpenMined PSI: client and server in this process, CPU time per role.


def bench_openmined(n, client_items, server_items, truth, op, ds_name, fpr):
    import private_set_intersection.python as psi

    reveal = op == "psi"
    ds = {"RAW": psi.DataStructure.RAW, "GCS": psi.DataStructure.GCS}[ds_name]
    cpu = {"server": 0.0, "client": 0.0}
    wall = {"server": 0.0, "client": 0.0}

    class role:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            self.c0 = time.process_time()
            self.w0 = time.perf_counter()

        def __exit__(self, *exc):
            cpu[self.name] += time.process_time() - self.c0
            wall[self.name] += time.perf_counter() - self.w0

    # Each role serializes what it sends and parses what it receives, and that
    # is counted in its own time. Key generation is counted too (negligible).
    with role("server"):
        server = psi.server.CreateWithNewKey(reveal)
        setup_b = server.CreateSetupMessage(fpr, len(client_items), server_items, ds).SerializeToString()
    with role("client"):
        client = psi.client.CreateWithNewKey(reveal)
        request_b = client.CreateRequest(client_items).SerializeToString()
    with role("server"):
        response_b = server.ProcessRequest(psi.Request.FromString(request_b)).SerializeToString()
    with role("client"):
        setup = psi.ServerSetup.FromString(setup_b)
        response = psi.Response.FromString(response_b)
        if reveal:
            idx = client.GetIntersection(setup, response)
        else:
            size = client.GetIntersectionSize(setup, response)

    if reveal:
        found = {client_items[i] for i in idx}
        size = len(found)
        correct = found == truth
    else:
        correct = size == len(truth)
    sizes = {"setup": len(setup_b), "request": len(request_b), "response": len(response_b)}
    return {
        "peer": "openmined",
        "op": op,
        "n": n,
        "variant": ds_name,
        "cpu_s_total": round(cpu["server"] + cpu["client"], 4),
        "cpu_s_by_role": {k: round(v, 4) for k, v in cpu.items()},
        "wall_s": round(wall["server"] + wall["client"], 4),
        "wall_s_by_role": {k: round(v, 4) for k, v in wall.items()},
        "bytes_total": sum(sizes.values()),
        "bytes_by_direction": {
            "server_to_client": sizes["setup"] + sizes["response"],
            "client_to_server": sizes["request"],
        },
        "bytes_by_message": sizes,
        "threads": 1,
        "intersection": size,
        "expected": len(truth),
        "correct": bool(correct),
        "params": {
            "curve": "P-256",
            "fpr": fpr,
            "fpr_meaning": "false-positive probability of the whole query of num_client_inputs items",
            "data_structure": ds_name,
            "reveal_intersection": reveal,
            "network": "none (same process; bytes are serialized message sizes)",
            "version": pkg_version("openmined-psi"),
        },
    }


# --------------------------------------------------------------------------
# SecretFlow PSI (spu.psi.psi_execute): two processes over brpc on 127.0.0.1.

# struct tcp_info offsets (linux/tcp.h): tcpi_bytes_acked @120, tcpi_bytes_received
# @128 (kernel >= 4.1), tcpi_bytes_sent @200 (kernel >= 4.19).
_TCPI_LEN = 232


def tcp_bytes_with(peer_ports):
    """Sum sent/received TCP payload bytes over this process's TCP sockets whose
    local or remote port is one of peer_ports (the two link ports), on loopback."""
    sent = recv = nsock = 0
    for fd_name in os.listdir("/proc/self/fd"):
        fd = int(fd_name)
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            dup = os.dup(fd)
        except OSError:
            continue
        try:
            s = socket.socket(fileno=dup)
        except OSError:
            os.close(dup)
            continue
        try:
            if s.family != socket.AF_INET or s.type != socket.SOCK_STREAM:
                continue
            try:
                lport = s.getsockname()[1]
                raddr = s.getpeername()
            except OSError:
                continue  # listening or unconnected socket
            if lport not in peer_ports and raddr[1] not in peer_ports:
                continue
            info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCPI_LEN)
            (acked,) = struct.unpack_from("Q", info, 120)
            (rcvd,) = struct.unpack_from("Q", info, 128)
            snt = struct.unpack_from("Q", info, 200)[0] if len(info) >= 208 else acked
            sent += snt
            recv += rcvd
            nsock += 1
        finally:
            s.close()
    return sent, recv, nsock


def _rusage_cpu():
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)  # the `sort` subprocesses psi_execute runs
    return a.ru_utime + a.ru_stime, b.ru_utime + b.ru_stime


def _os_threads():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return -1


def _sf_party(rank, ports, in_csv, out_csv, tmpdir, logpath, omp_threads, curve, q):
    # Runs in a fresh (spawned) process. Environment must be set before the
    # native libraries load: OpenMP reads OMP_NUM_THREADS once.
    os.environ["OMP_NUM_THREADS"] = str(omp_threads)
    os.environ["TMPDIR"] = tmpdir  # psi_execute's scratch dirs and trace files
    fd = os.open(logpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        import spu.libspu as libspu
        import spu.psi as psi

        desc = libspu.link.Desc()
        desc.id = "privset-peer-bench"
        desc.recv_timeout_ms = 3 * 3600 * 1000
        desc.http_timeout_ms = 3 * 3600 * 1000
        for i, p in enumerate(ports):
            desc.add_party(f"party{i}", f"127.0.0.1:{p}")
        lctx = libspu.link.create_brpc(desc, rank)
        lctx.barrier()  # connections up in both directions before measuring
        ports_set = set(ports)
        # Calibrate what one barrier costs on the wire: the measured window below
        # ends with a barrier too (so that all of the peer's messages have arrived
        # before we read the counters), and its bytes are subtracted.
        ba = tcp_bytes_with(ports_set)
        lctx.barrier()
        bb = tcp_bytes_with(ports_set)

        cfg = psi.PsiExecuteConfig(
            protocol_conf=psi.PsiProtocolConfig(
                protocol=psi.PsiProtocol.PROTOCOL_ECDH,
                receiver_rank=0,
                broadcast_result=False,
                ecdh_params=psi.EcdhParams(curve=getattr(psi.EllipticCurveType, curve)),
            ),
            input_params=psi.InputParams(path=in_csv, selected_keys=["id"], keys_unique=True),
            output_params=psi.OutputParams(path=out_csv, disable_alignment=True),
        )
        b0 = tcp_bytes_with(ports_set)
        c0, k0 = _rusage_cpu()
        w0 = time.perf_counter()
        rep = psi.psi_execute(cfg, lctx)
        w1 = time.perf_counter()
        c1, k1 = _rusage_cpu()
        lctx.barrier()
        b1 = tcp_bytes_with(ports_set)
        th = _os_threads()
        q.put(
            {
                "rank": rank,
                "ok": True,
                "wall": w1 - w0,
                "cpu_self": c1 - c0,
                "cpu_children": k1 - k0,
                "sent": (b1[0] - b0[0]) - (bb[0] - ba[0]),
                "recv": (b1[1] - b0[1]) - (bb[1] - ba[1]),
                "barrier_recv": bb[1] - ba[1],
                "sockets": b1[2],
                "os_threads": th,
                "original_count": rep.original_count,
                "intersection_count": rep.intersection_count,
            }
        )
        lctx.stop_link()
    except BaseException as e:  # noqa: BLE001
        q.put({"rank": rank, "ok": False, "error": repr(e)})
        raise


def _free_ports(k):
    socks, ports = [], []
    for _ in range(k):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def bench_secretflow(n, client_items, server_items, truth, workdir, omp_threads, curve, timeout_s):
    run_dir = tempfile.mkdtemp(prefix=f"sf-{n}-", dir=workdir)
    in_csv = [os.path.join(run_dir, f"in{r}.csv") for r in range(2)]
    out_csv = [os.path.join(run_dir, f"out{r}.csv") for r in range(2)]
    # rank 0 = receiver ("client", learns the intersection), rank 1 = sender ("server").
    for path, items in zip(in_csv, (client_items, server_items)):
        with open(path, "w") as f:
            f.write("id\n")
            f.write("\n".join(items))
            f.write("\n")
    ports = _free_ports(2)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [
        ctx.Process(
            target=_sf_party,
            args=(r, ports, in_csv[r], out_csv[r], run_dir, os.path.join(run_dir, f"party{r}.log"), omp_threads, curve, q),
        )
        for r in range(2)
    ]
    for p in procs:
        p.start()
    res = {}
    deadline = time.time() + timeout_s
    try:
        while len(res) < 2:
            m = q.get(timeout=max(1, deadline - time.time()))
            res[m["rank"]] = m
            if not m["ok"]:
                raise RuntimeError(f"secretflow party {m['rank']} failed: {m['error']} (log in {run_dir})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
                p.join()
    found = set()
    with open(out_csv[0]) as f:
        header = [h.strip().strip('"') for h in f.readline().strip().split(",")]
        col = header.index("id")
        for line in f:
            line = line.strip()
            if line:
                found.add(line.split(",")[col].strip('"'))
    correct = found == truth and res[0]["intersection_count"] == len(truth)
    cpu = {"receiver": res[0]["cpu_self"] + res[0]["cpu_children"], "sender": res[1]["cpu_self"] + res[1]["cpu_children"]}
    wall = {"receiver": res[0]["wall"], "sender": res[1]["wall"]}
    row = {
        "peer": "secretflow",
        "op": "psi",
        "n": n,
        "variant": f"ECDH/{curve}",
        "cpu_s_total": round(sum(cpu.values()), 4),
        "cpu_s_by_role": {k: round(v, 4) for k, v in cpu.items()},
        "wall_s": round(max(wall.values()), 4),
        "wall_s_by_role": {k: round(v, 4) for k, v in wall.items()},
        # A direction's bytes are what the other side's kernel delivered (tcpi_bytes_received):
        # retransmitted segments are not counted twice. The sender-side count (tcpi_bytes_sent,
        # which does include retransmissions) is kept as a cross-check.
        "bytes_total": res[0]["recv"] + res[1]["recv"],
        "bytes_by_direction": {"receiver_to_sender": res[1]["recv"], "sender_to_receiver": res[0]["recv"]},
        "bytes_cross_check_sent_incl_retrans": {"receiver_sent": res[0]["sent"], "sender_sent": res[1]["sent"]},
        "bytes_barrier_subtracted": res[0]["barrier_recv"] + res[1]["barrier_recv"],
        "threads": omp_threads,
        "threads_note": (
            f"OMP_NUM_THREADS={omp_threads} per party (2 parties, {os.cpu_count()} cores); "
            f"OS threads per process incl. brpc workers: {res[0]['os_threads']}/{res[1]['os_threads']}"
        ),
        "intersection": len(found),
        "expected": len(truth),
        "correct": bool(correct),
        "params": {
            "protocol": "PROTOCOL_ECDH",
            "curve": curve,
            "receiver_rank": 0,
            "broadcast_result": False,
            "keys_unique": True,
            "disable_alignment": True,
            "link": "brpc over 127.0.0.1 (two processes)",
            "bytes_method": "TCP payload bytes delivered (tcp_info bytes_received, per receiving side) on the "
            "link sockets between a barrier before psi_execute and a barrier after it, minus one barrier's bytes",
            "cpu_method": "getrusage(SELF)+getrusage(CHILDREN) user+sys deltas in each party process",
            "version": pkg_version("spu"),
        },
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return row


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4096,65536", help="comma-separated set sizes n (each side)")
    ap.add_argument("--peers", default="openmined,secretflow")
    ap.add_argument("--ops", default="psi,psi-card", help="psi and/or psi-card")
    ap.add_argument("--om-ds", default="RAW,GCS", help="OpenMined server data structures to run")
    ap.add_argument(
        "--om-fpr",
        type=float,
        default=1e-9,
        help="OpenMined fpr argument = false-positive probability of the whole query (default 1e-9)",
    )
    ap.add_argument("--sf-omp-threads", type=int, default=1, help="OMP_NUM_THREADS for each SecretFlow party")
    ap.add_argument("--sf-curve", default="CURVE_25519")
    ap.add_argument("--sf-timeout", type=float, default=3 * 3600, help="seconds per SecretFlow run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration (one row each)")
    ap.add_argument("--out", default=None, help="also append the JSON lines to this file")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a fresh temp dir)")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s]
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    for p in peers:
        if p not in ("openmined", "secretflow"):
            ap.error(f"unknown peer {p}")
    for o in ops:
        if o not in ("psi", "psi-card"):
            ap.error(f"unknown op {o}")
    workdir = args.workdir or tempfile.mkdtemp(prefix="privset-peers-")
    os.makedirs(workdir, exist_ok=True)
    out = open(args.out, "a") if args.out else None
    common = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(), "seed": args.seed}

    def emit(row):
        row.update(common)
        row["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
        line = json.dumps(row, sort_keys=False)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
        if not row["correct"]:
            log(f"WARNING: wrong result: {row['peer']} {row['op']} n={row['n']}: {row['intersection']} != {row['expected']}")

    failures = 0
    for n in sizes:
        client, server, truth = make_sets(n, args.seed)
        log(f"n={n}: |intersection|={len(truth)}")
        for peer in peers:
            for op in ops:
                if peer == "secretflow" and op == "psi-card":
                    log("secretflow psi-card: skipped: spu 0.9.5 psi_execute has no cardinality-only ECDH mode")
                    continue
                variants = [d.strip().upper() for d in args.om_ds.split(",")] if peer == "openmined" else [None]
                for v in variants:
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        if peer == "openmined":
                            row = bench_openmined(n, client, server, truth, op, v, args.om_fpr)
                        else:
                            row = bench_secretflow(
                                n, client, server, truth, workdir, args.sf_omp_threads, args.sf_curve, args.sf_timeout
                            )
                        log(f"  {peer} {op} {row['variant']} n={n}: cpu {row['cpu_s_total']}s wall {row['wall_s']}s "
                            f"bytes {row['bytes_total']} ({time.perf_counter() - t0:.1f}s elapsed)")
                        failures += not row["correct"]
                        emit(row)
    if out:
        out.close()
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
