#!/usr/bin/env python3
r"""Peer PSI benchmark: OpenMined PSI (openmined-psi 2.0.6), SecretFlow PSI (spu 0.9.5)
and privset's own psi, on the same inputs in the same invocation.

Optional side benchmark for privset: it measures third-party PSI implementations
(OpenMined's ECDH-PSI; SecretFlow's ECDH-PSI and RR22 VOLE-based PSI) beside the
privset CLI, so that ratios come from one session on one machine. See README.md
beside this file for the exact definitions of every number. Run it with the venv
made by setup.sh:

    bash bench/peers/setup.sh
    ~/.cache/privset-peers-venv/bin/python bench/peers/peer_bench.py \
        --sizes 4096,65536 --peers openmined,secretflow --out results.jsonl

    # the race: privset psi against SecretFlow ECDH, RR22 and RR22 low-comm,
    # one table on stdout, JSON lines appended to peer-race.jsonl
    ~/.cache/privset-peers-venv/bin/python bench/peers/peer_bench.py \
        --race --privset target/release/privset

Each measurement is printed as one JSON object per line on stdout (and appended
to --out); with --race or --table, stdout gets a table instead. Progress and
notes go to stderr.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import select
import shutil
import socket
import struct
import subprocess
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


def _proc_status(field):
    """An integer field of /proc/self/status (e.g. Threads, VmHWM in KiB); -1 if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _os_threads():
    return _proc_status("Threads")


def _peak_rss_mib():
    """This process's peak resident memory (VmHWM), as privset's RESULT.json measures it.

    Not getrusage's ru_maxrss: Linux carries the parent's high-water mark over across
    fork and exec, so a party spawned by this harness (which holds both input lists)
    would report the harness's size.
    """
    return _proc_status("VmHWM") / 1024


# SecretFlow protocols this harness runs, by the name used on the command line.
SF_PROTOCOLS = ("ECDH", "RR22", "RR22-LOWCOMM")


def sf_protocol_conf(psi, protocol, curve):
    """The spu 0.9.5 PsiProtocolConfig for one of SF_PROTOCOLS.

    Names found by introspection of spu/libpsi.pyi: PsiProtocolConfig(protocol,
    receiver_rank, bucket_size, broadcast_result, ecdh_params, rr22_params), and the
    RR22 parameters class is spelled `Rr22Rarams` (sic) with one field, low_comm_mode.
    """
    common = dict(receiver_rank=0, broadcast_result=False)
    if protocol == "ECDH":
        return psi.PsiProtocolConfig(
            protocol=psi.PsiProtocol.PROTOCOL_ECDH,
            ecdh_params=psi.EcdhParams(curve=getattr(psi.EllipticCurveType, curve)),
            **common,
        )
    if protocol in ("RR22", "RR22-LOWCOMM"):
        return psi.PsiProtocolConfig(
            protocol=psi.PsiProtocol.PROTOCOL_RR22,
            rr22_params=psi.Rr22Rarams(low_comm_mode=protocol == "RR22-LOWCOMM"),
            **common,
        )
    raise ValueError(f"unknown SecretFlow protocol {protocol}")


def sf_variant(protocol, curve):
    """The `variant` of a SecretFlow row (ECDH keeps its curve, as older result files have it)."""
    return {"ECDH": f"ECDH/{curve}", "RR22": "RR22", "RR22-LOWCOMM": "RR22/low_comm"}[protocol]


def _sf_party(rank, ports, in_csv, out_csv, tmpdir, logpath, omp_threads, protocol, curve, q):
    """One SecretFlow party, in a fresh (spawned) process: link up, psi_execute, report
    CPU, wall, link bytes and peak RSS to the parent through q.

    The environment must be set before the native libraries load: OpenMP reads
    OMP_NUM_THREADS once.
    """
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
            protocol_conf=sf_protocol_conf(psi, protocol, curve),
            input_params=psi.InputParams(path=in_csv, selected_keys=["id"], keys_unique=True),
            output_params=psi.OutputParams(path=out_csv, disable_alignment=True),
        )
        rss_before = _peak_rss_mib()  # interpreter, spu's libraries and the link
        b0 = tcp_bytes_with(ports_set)
        c0, k0 = _rusage_cpu()
        w0 = time.perf_counter()
        rep = psi.psi_execute(cfg, lctx)
        w1 = time.perf_counter()
        c1, k1 = _rusage_cpu()
        lctx.barrier()
        b1 = tcp_bytes_with(ports_set)
        th = _os_threads()
        rss = _peak_rss_mib()
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
                "peak_rss_mib": rss,
                "peak_rss_mib_before": rss_before,
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


def write_input_csvs(n, client_items, server_items, workdir):
    """Writes the receiver's (client's) and the sender's (server's) items as CSVs with
    one column `id`, once per size: SecretFlow and privset read the same files.

    Absolute paths: spu's psi_execute fails on a bare file name ("cannot create
    directories: Invalid argument []").
    """
    d = os.path.abspath(os.path.join(workdir, f"inputs-{n}"))
    os.makedirs(d, exist_ok=True)
    paths = (os.path.join(d, "receiver.csv"), os.path.join(d, "sender.csv"))
    for path, items in zip(paths, (client_items, server_items)):
        with open(path, "w") as f:
            f.write("id\n")
            f.write("\n".join(items))
            f.write("\n")
    return paths


def read_id_column(path, column="id"):
    """The set of values of `column` in a CSV written by a PSI tool (quotes stripped)."""
    found = set()
    with open(path) as f:
        header = [h.strip().strip('"') for h in f.readline().strip().split(",")]
        col = header.index(column)
        for line in f:
            line = line.strip()
            if line:
                found.add(line.split(",")[col].strip('"'))
    return found


def _collect_party_reports(q, procs, timeout_s, what, logdir):
    """Waits for both parties' reports on q (rank -> dict); raises if one failed."""
    res = {}
    deadline = time.time() + timeout_s
    try:
        while len(res) < 2:
            m = q.get(timeout=max(1, deadline - time.time()))
            res[m["rank"]] = m
            if not m["ok"]:
                raise RuntimeError(f"{what} party {m['rank']} failed: {m['error']} (log in {logdir})")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
                p.join()
    return res


def drop_sf_meta(inputs):
    """Removes the `<input>.meta` files psi_execute leaves beside its inputs.

    spu caches there the input's key count and key hash (`keysHash`, `uniqueKeyCnt`,
    `sourceFileSize`) and skips that scan of the CSV when the file size still matches.
    The inputs are shared by all runs of a size, so without this only the first
    SecretFlow run would pay for reading and hashing its input.
    """
    for path in inputs:
        try:
            os.remove(path + ".meta")
        except FileNotFoundError:
            pass


def bench_secretflow(n, inputs, truth, workdir, omp_threads, protocol, curve, timeout_s):
    """One SecretFlow psi_execute run: receiver (rank 0, reads inputs[0], learns the
    intersection) and sender (rank 1, inputs[1]) as two spawned processes over brpc."""
    run_dir = os.path.abspath(tempfile.mkdtemp(prefix=f"sf-{protocol}-{n}-", dir=workdir))
    out_csv = [os.path.join(run_dir, f"out{r}.csv") for r in range(2)]
    drop_sf_meta(inputs)
    ports = _free_ports(2)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [
        ctx.Process(
            target=_sf_party,
            args=(
                r,
                ports,
                inputs[r],
                out_csv[r],
                run_dir,
                os.path.join(run_dir, f"party{r}.log"),
                omp_threads,
                protocol,
                curve,
                q,
            ),
        )
        for r in range(2)
    ]
    for p in procs:
        p.start()
    res = _collect_party_reports(q, procs, timeout_s, f"secretflow {protocol}", run_dir)
    found = read_id_column(out_csv[0])
    correct = found == truth and res[0]["intersection_count"] == len(truth)
    roles = ("receiver", "sender")  # rank 0, rank 1
    cpu = {role: res[r]["cpu_self"] + res[r]["cpu_children"] for r, role in enumerate(roles)}
    wall = {role: res[r]["wall"] for r, role in enumerate(roles)}
    if protocol == "ECDH":
        proto_params = {"protocol": "PROTOCOL_ECDH", "curve": curve}
    else:
        proto_params = {"protocol": "PROTOCOL_RR22", "rr22_params.low_comm_mode": protocol == "RR22-LOWCOMM"}
    row = {
        "peer": "secretflow",
        "op": "psi",
        "n": n,
        "variant": sf_variant(protocol, curve),
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
        "peak_rss_mib_by_role": {role: round(res[r]["peak_rss_mib"], 1) for r, role in enumerate(roles)},
        "peak_rss_mib_before_run_by_role": {
            role: round(res[r]["peak_rss_mib_before"], 1) for r, role in enumerate(roles)
        },
        "threads": omp_threads,
        "threads_note": (
            f"OMP_NUM_THREADS={omp_threads} per party (2 parties, {os.cpu_count()} cores); "
            f"OS threads per process incl. brpc workers: {res[0]['os_threads']}/{res[1]['os_threads']}"
        ),
        "intersection": len(found),
        "expected": len(truth),
        "correct": bool(correct),
        "params": {
            **proto_params,
            "receiver_rank": 0,
            "broadcast_result": False,
            "keys_unique": True,
            "disable_alignment": True,
            "link": "brpc over 127.0.0.1 (two processes)",
            "bytes_method": "TCP payload bytes delivered (tcp_info bytes_received, per receiving side) on the "
            "link sockets between a barrier before psi_execute and a barrier after it, minus one barrier's bytes",
            "cpu_method": "getrusage(SELF)+getrusage(CHILDREN) user+sys deltas in each party process",
            "rss_method": "VmHWM of each party process after psi_execute (includes the Python interpreter and "
            "spu's libraries: peak_rss_mib_before_run_by_role is the same figure just before psi_execute)",
            "version": pkg_version("spu"),
        },
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return row


# --------------------------------------------------------------------------
# privset psi: the privset CLI as two processes over loopback.

# privset's fastest psi today (docs/pso/psi.md): DH-PSI on X25519 with the ordered last message.
DEFAULT_PRIVSET_ARGS = "--group x25519 --last-message ordered"
TIME_BIN = "/usr/bin/time"
_SYS_PIDFD_GETFD = 438  # x86_64 and aarch64 alike (Linux >= 5.6)
# tcpi_state values (include/net/tcp_states.h) in which the peer's FIN has arrived:
# TIME_WAIT, CLOSE, CLOSE_WAIT, LAST_ACK, CLOSING. CLOSE is where a socket we still hold
# ends after both sides shut down (FIN_WAIT2 + the peer's FIN hands the connection to a
# time-wait socket); it could also follow a reset, which privset's lingering close avoids.
_TCP_STATES_PEER_FIN = (6, 7, 8, 9, 11)


def _pidfd_getfd(pidfd, fd):
    """A duplicate, in this process, of file descriptor `fd` of the process behind `pidfd`."""
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0)
    if r < 0:
        raise OSError(ctypes.get_errno(), "pidfd_getfd")
    return r


class LinkSocketCounter:
    """Reads the kernel's byte counters of another process's link socket (our loopback
    cross-check of privset's own counters).

    TCP_INFO can only be read on a socket of this process, and a socket's counters are
    gone once its owner closes it. So while the party runs we take a duplicate of its
    connected socket(s) to or from the link port with pidfd_getfd; the duplicate keeps
    the socket alive past the party's exit, so read_and_close() gets the final figures.
    read_and_close() must be called as soon as the party has exited: until then our
    duplicate also holds back the FIN its peer may be waiting for.
    """

    def __init__(self, pid, port):
        self.pid, self.port = pid, port
        self.pidfd = os.pidfd_open(pid)
        self.seen = set()  # socket inodes already classified
        self.socks = []
        self.error = None

    def scan(self):
        """Takes any new connected socket of the party to or from the link port."""
        if self.error:
            return
        try:
            fds = os.listdir(f"/proc/{self.pid}/fd")
        except OSError:
            return  # exited
        for name in fds:
            try:
                target = os.readlink(f"/proc/{self.pid}/fd/{name}")
            except OSError:
                continue
            if not target.startswith("socket:") or target in self.seen:
                continue
            try:
                s = socket.socket(fileno=_pidfd_getfd(self.pidfd, int(name)))
            except OSError as e:
                if e.errno == 1:  # EPERM: no ptrace permission; give up the cross-check
                    self.error = f"pidfd_getfd: {e}"
                    return
                continue
            keep = False
            try:
                if s.family == socket.AF_INET and s.type == socket.SOCK_STREAM:
                    try:
                        rport = s.getpeername()[1]
                        keep = self.port in (s.getsockname()[1], rport)
                        self.seen.add(target)
                    except OSError:
                        # Listening (never useful) or still connecting (look again later).
                        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                            self.seen.add(target)
                else:
                    self.seen.add(target)
            finally:
                if keep:
                    self.socks.append(s)
                else:
                    s.close()

    @property
    def found(self):
        return bool(self.socks) or self.error is not None

    def read_and_close(self):
        """(payload bytes received from the peer, sockets), summed over the party's link
        sockets; None if none was taken.

        tcpi_bytes_received follows the receive sequence number, and a FIN takes one:
        once the peer has closed (it often exits first), the count is one above the
        payload, so that byte is taken off.
        """
        if not self.socks:
            return None
        recv = 0
        for s in self.socks:
            info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCPI_LEN)
            recv += struct.unpack_from("Q", info, 128)[0] - (info[0] in _TCP_STATES_PEER_FIN)
            s.close()
        n = len(self.socks)
        self.socks = []
        os.close(self.pidfd)
        return recv, n


def _child_pid(pid, timeout_s=10.0):
    """The pid of the (single) child of `pid`: the privset process under /usr/bin/time."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        except OSError:
            return None  # /usr/bin/time already gone
        if kids:
            return int(kids[0])
        time.sleep(0.001)
    return None


def privset_party_argv(privset_bin, role, addr, input_csv, run_dir, privset_args, tls_dir):
    """The command line of one privset psi party, under /usr/bin/time for its peak RSS.

    /usr/bin/time's %M is the child's own ru_maxrss; the harness's would not do (Linux
    carries a parent's high-water mark into a child it spawns, and this harness holds
    both input lists). CPU comes from wait4 on /usr/bin/time (microseconds, its
    children included), so the time format only adds a cross-check.
    """
    link = ["--listen", addr] if role == "receiver" else ["--peer", addr]
    if tls_dir:
        tls = ["--tls-ca", f"{tls_dir}/ca.pem"]
        tls += ["--tls-cert", f"{tls_dir}/{role}.pem", "--tls-key", f"{tls_dir}/{role}.key"]
    else:
        tls = ["--insecure-no-tls"]
    argv = [TIME_BIN, "-f", "%e %U %S %M", "-o", os.path.join(run_dir, f"{role}.time")]
    argv += [privset_bin, "psi", "--role", role, *link, "--input", input_csv, "--id-column", "id"]
    argv += [*tls, "--output", os.path.join(run_dir, f"{role}-result.json")]
    if role == "receiver":
        argv += ["--output-rows", os.path.join(run_dir, "intersection.csv")]
    return argv + privset_args


def _spawn(argv, env, log_path):
    """Starts argv with stdout and stderr to log_path; returns the pid (reaped by the caller)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(argv[0], argv, env, file_actions=actions)


def run_privset_pair(argvs, env, run_dir, port, timeout_s):
    """Runs the receiver and the sender, watching their link sockets; returns the wall
    time (first spawn to last exit) and per role: wait4 CPU, exit status, link counters.

    The receiver starts first (it listens), the sender right after (privset's --peer
    retries until the listener is up). Each party's exit is seen through a pidfd, so
    its socket counters are read the moment it is gone.
    """
    t0 = time.perf_counter()
    pids = {role: _spawn(argv, env, os.path.join(run_dir, f"{role}.log")) for role, argv in argvs.items()}
    counters, watch, ended = {}, {}, {}
    poller = select.poll()
    for role, pid in pids.items():
        child = _child_pid(pid)
        try:
            watch[role] = LinkSocketCounter(child, port) if child else None
        except OSError:  # exited already
            watch[role] = None
        if watch[role] is None:
            ended[role] = time.perf_counter()
            continue
        poller.register(watch[role].pidfd, select.POLLIN)
    by_fd = {w.pidfd: role for role, w in watch.items() if w}
    deadline = t0 + timeout_s
    while len(ended) < 2:
        if time.perf_counter() > deadline:
            for role, pid in pids.items():  # privset itself, then /usr/bin/time
                for p in ([watch[role].pid] if watch[role] else []) + [pid]:
                    try:
                        os.kill(p, 9)
                    except ProcessLookupError:
                        pass
                os.waitpid(pid, 0)
            raise RuntimeError(f"privset pair timed out after {timeout_s}s (logs in {run_dir})")
        searching = any(w and not w.found and r not in ended for r, w in watch.items())
        for fd, _ in poller.poll(5 if searching else 200):
            role = by_fd[fd]
            ended[role] = time.perf_counter()
            poller.unregister(fd)
            counters[role] = watch[role].read_and_close()
        for role, w in watch.items():
            if w and role not in ended:
                w.scan()
    wall = max(ended.values()) - t0
    out = {}
    for role, pid in pids.items():
        _, status, ru = os.wait4(pid, 0)
        out[role] = {
            "cpu": ru.ru_utime + ru.ru_stime,
            "exit": os.waitstatus_to_exitcode(status),
            "tcp": counters.get(role),
            "tcp_error": watch[role].error if watch[role] else "party exited before its socket was found",
        }
    return wall, out


def _read_time_file(path):
    """/usr/bin/time's `%e %U %S %M` line: wall s, user s, sys s, peak RSS KiB."""
    with open(path) as f:
        last = f.read().strip().splitlines()[-1]
    e, u, s_, m = last.split()
    return {"wall": float(e), "cpu": float(u) + float(s_), "rss_mib": int(m) / 1024}


# RESULT.json fields kept in a privset row's `privset_reported`.
PRIVSET_REPORTED = ("cpu_seconds", "wall_seconds", "peak_rss_mib", "bytes_sent", "bytes_received")


def privset_variant(result, extra_args):
    """A short name of the privset construction: group/mqrpmt/last message as the
    receiver's RESULT.json states them, falling back to the extra arguments."""
    parts = [str(result[k]) for k in ("group", "mqrpmt", "last_message") if result.get(k)]
    return "/".join(parts) if parts else (" ".join(extra_args) or "default")


def bench_privset(n, inputs, truth, workdir, privset_bin, privset_args, tls, threads, timeout_s):
    """One privset psi run: receiver (reads inputs[0], learns the intersection rows)
    and sender (inputs[1]) as two processes of the CLI over 127.0.0.1."""
    if not os.path.exists(TIME_BIN):
        raise RuntimeError(f"{TIME_BIN} is needed for privset's peak RSS (apt-get install time)")
    run_dir = os.path.abspath(tempfile.mkdtemp(prefix=f"privset-{n}-", dir=workdir))
    extra = privset_args.split()
    tls_dir = None
    if tls:
        tls_dir = os.path.join(run_dir, "certs")
        subprocess.run([privset_bin, "certs", "--out", tls_dir, "--names", "receiver,sender"], check=True,
                       stdout=subprocess.DEVNULL)
    port = _free_ports(1)[0]
    addr = f"127.0.0.1:{port}"
    argvs = {role: privset_party_argv(privset_bin, role, addr, inputs[i], run_dir, extra, tls_dir)
             for i, role in enumerate(("receiver", "sender"))}
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    wall, proc = run_privset_pair(argvs, env, run_dir, port, timeout_s)
    for role, p in proc.items():
        if p["exit"] != 0:
            with open(os.path.join(run_dir, f"{role}.log")) as f:
                tail = f.read()[-2000:]
            raise RuntimeError(f"privset {role} exited with {p['exit']} (run dir {run_dir}):\n{tail}")
    roles = ("receiver", "sender")
    res = {r: json.load(open(os.path.join(run_dir, f"{r}-result.json"))) for r in roles}
    tm = {r: _read_time_file(os.path.join(run_dir, f"{r}.time")) for r in roles}
    found = read_id_column(os.path.join(run_dir, "intersection.csv"))
    correct = found == truth and res["receiver"].get("cardinality") == len(truth)
    cpu = {r: proc[r]["cpu"] for r in roles}
    r2s, s2r = res["receiver"]["bytes_sent"], res["sender"]["bytes_sent"]
    row = {
        "peer": "privset",
        "op": "psi",
        "n": n,
        "variant": privset_variant(res["receiver"], extra),
        "cpu_s_total": round(sum(cpu.values()), 4),
        "cpu_s_by_role": {k: round(v, 4) for k, v in cpu.items()},
        "wall_s": round(wall, 4),
        "wall_s_by_role": {r: round(res[r]["wall_seconds"], 4) for r in roles},
        "bytes_total": r2s + s2r,
        "bytes_by_direction": {"receiver_to_sender": r2s, "sender_to_receiver": s2r},
        "bytes_cross_check_loopback": loopback_cross_check(proc, r2s, s2r),
        "peak_rss_mib_by_role": {r: round(tm[r]["rss_mib"], 1) for r in roles},
        "privset_reported": {
            r: {k: res[r].get(k) for k in PRIVSET_REPORTED}
            for r in roles
        },
        "cpu_s_by_role_time_cmd": {r: round(tm[r]["cpu"], 2) for r in roles},
        "threads": threads,
        "threads_note": f"RAYON_NUM_THREADS={threads} per party (2 parties, {os.cpu_count()} cores)",
        "intersection": len(found),
        "expected": len(truth),
        "correct": bool(correct),
        "params": {
            "privset_args": " ".join(extra),
            "privset_bin": os.path.abspath(privset_bin),
            "transport": res["receiver"].get("transport"),
            "tls": "mutual TLS 1.3 (privset certs)" if tls else "none (--insecure-no-tls), as SecretFlow's brpc link",
            "link": "privset psi --listen / --peer over 127.0.0.1 (two processes)",
            "bytes_method": "RESULT.json bytes_sent of each party (privset's own counters); "
            "bytes_cross_check_loopback has the kernel's TCP_INFO counts of the same sockets",
            "cpu_method": "wait4 rusage (user+sys) of each party's whole process: start-up, CSV reading, "
            "connecting, the protocol, writing RESULT.json and the intersection CSV",
            "wall_method": "harness clock from spawning the receiver to the last party's exit",
            "rss_method": "/usr/bin/time %M (the party process's own ru_maxrss)",
            "version": privset_version(privset_bin),
        },
    }
    shutil.rmtree(run_dir, ignore_errors=True)
    return row


def loopback_cross_check(proc, r2s, s2r):
    """The kernel's view of the privset link: payload each side's socket received (that
    is, the other direction's bytes), beside privset's own counters."""
    r, s = proc["receiver"]["tcp"], proc["sender"]["tcp"]
    if not r or not s:
        errs = {k: v["tcp_error"] for k, v in proc.items() if not v["tcp"]}
        return {"available": False, "why": errs}
    return {
        "available": True,
        "receiver_to_sender": s[0],
        "sender_to_receiver": r[0],
        # 0 without TLS; with TLS, each side's close_notify (24 bytes), sent after privset
        # read its counters.
        "kernel_minus_privset": {"receiver_to_sender": s[0] - r2s, "sender_to_receiver": r[0] - s2r},
        "sockets": {"receiver": r[1], "sender": s[1]},
    }


def privset_version(privset_bin):
    """`privset --version`: the version, then the fast paths the binary chose on this CPU."""
    try:
        return subprocess.run([privset_bin, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


# --------------------------------------------------------------------------


PEERS = ("openmined", "secretflow", "privset")

# What --race runs unless the flag is given explicitly.
RACE_DEFAULTS = {
    "sizes": "1048576",
    "peers": "privset,secretflow",
    "ops": "psi",
    "sf_protocols": ",".join(SF_PROTOCOLS),
    "out": "peer-race.jsonl",
}
PLAIN_DEFAULTS = {
    "sizes": "4096,65536",
    "peers": "openmined,secretflow",
    "ops": "psi,psi-card",
    "sf_protocols": "ECDH",
    "out": None,
}


def parse_args():
    """Command line; --race only changes the defaults of the flags not given."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--race",
        action="store_true",
        help="privset psi against SecretFlow ECDH, RR22 and RR22 low-comm at 2^20 (defaults: "
        + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in RACE_DEFAULTS.items())
        + "); prints one table, appends the JSON lines to --out",
    )
    ap.add_argument("--sizes", help="comma-separated set sizes n (each side; half in common) [4096,65536]")
    ap.add_argument("--peers", help=f"comma-separated, of {','.join(PEERS)} [openmined,secretflow]")
    ap.add_argument("--ops", help="psi and/or psi-card [psi,psi-card]; only OpenMined has psi-card")
    ap.add_argument("--om-ds", default="RAW,GCS", help="OpenMined server data structures to run")
    ap.add_argument(
        "--om-fpr",
        type=float,
        default=1e-9,
        help="OpenMined fpr argument = false-positive probability of the whole query (default 1e-9)",
    )
    ap.add_argument(
        "--sf-protocols", help=f"SecretFlow protocols, comma-separated, of {','.join(SF_PROTOCOLS)} [ECDH]"
    )
    ap.add_argument("--sf-omp-threads", type=int, default=1, help="OMP_NUM_THREADS for each SecretFlow party")
    ap.add_argument("--sf-curve", default="CURVE_25519", help="SecretFlow ECDH curve")
    ap.add_argument(
        "--timeout", "--sf-timeout", type=float, default=3 * 3600, help="seconds per SecretFlow or privset run"
    )
    ap.add_argument(
        "--privset", metavar="BIN", help="the privset binary (target/release/privset); needed for peer privset"
    )
    ap.add_argument(
        "--privset-args",
        action="append",
        metavar='"ARGS"',
        help="extra arguments of both privset psi parties, one construction per flag (repeatable) "
        f'["{DEFAULT_PRIVSET_ARGS}"]',
    )
    ap.add_argument("--privset-threads", type=int, default=1, help="RAYON_NUM_THREADS for each privset party")
    ap.add_argument(
        "--privset-tls", action="store_true", help="mutual TLS between the privset parties (default: --insecure-no-tls)"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration, interleaved (one row each)")
    ap.add_argument("--out", help="also append the JSON lines to this file [--race: peer-race.jsonl]")
    ap.add_argument(
        "--table", action="store_true", help="print a table on stdout instead of JSON lines (--race implies it)"
    )
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a fresh temp dir)")
    args = ap.parse_args()

    defaults = RACE_DEFAULTS if args.race else PLAIN_DEFAULTS
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.table = args.table or args.race
    args.privset_args = args.privset_args or [DEFAULT_PRIVSET_ARGS]
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    args.peers = split_list(args.peers)
    args.ops = split_list(args.ops)
    args.sf_protocols = [p.upper() for p in split_list(args.sf_protocols)]
    for p in args.peers:
        if p not in PEERS:
            ap.error(f"unknown peer {p}")
    for o in args.ops:
        if o not in ("psi", "psi-card"):
            ap.error(f"unknown op {o}")
    for p in args.sf_protocols:
        if p not in SF_PROTOCOLS:
            ap.error(f"unknown SecretFlow protocol {p}")
    if "privset" in args.peers and not args.privset:
        ap.error("peer privset needs --privset BIN (e.g. target/release/privset)")
    return args


def split_list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def plan_runs(n, client, server, truth, inputs, args, workdir):
    """The configurations to measure at size n, as (label, thunk returning a row)."""
    runs = []
    for peer in args.peers:
        for op in args.ops:
            if peer != "openmined" and op == "psi-card":
                log(f"{peer} psi-card: skipped: only OpenMined's psi-card is measured here")
                continue
            if peer == "openmined":
                for ds in [d.strip().upper() for d in args.om_ds.split(",")]:
                    runs.append(
                        (
                            f"openmined {op} {ds}",
                            lambda op=op, ds=ds: bench_openmined(n, client, server, truth, op, ds, args.om_fpr),
                        )
                    )
            elif peer == "secretflow":
                for proto in args.sf_protocols:
                    runs.append(
                        (
                            f"secretflow psi {proto}",
                            lambda proto=proto: bench_secretflow(
                                n, inputs, truth, workdir, args.sf_omp_threads, proto, args.sf_curve, args.timeout
                            ),
                        )
                    )
            else:
                for extra in args.privset_args:
                    runs.append(
                        (
                            f"privset psi {extra}",
                            lambda extra=extra: bench_privset(
                                n, inputs, truth, workdir, args.privset, extra, args.privset_tls,
                                args.privset_threads, args.timeout,
                            ),
                        )
                    )
    return runs


TABLE_COLUMNS = (
    # header, width, how to get it from a row
    ("tool", 10, lambda r: r["peer"]),
    ("protocol", 24, lambda r: r["variant"] if r["op"] == "psi" else f"{r['variant']} ({r['op']})"),
    ("n", 8, lambda r: str(r["n"])),
    ("CPU rcv s", 9, lambda r: f"{r['cpu_s_by_role'].get('receiver', r['cpu_s_by_role'].get('client', 0)):.2f}"),
    ("CPU snd s", 9, lambda r: f"{r['cpu_s_by_role'].get('sender', r['cpu_s_by_role'].get('server', 0)):.2f}"),
    ("CPU sum s", 9, lambda r: f"{r['cpu_s_total']:.2f}"),
    ("wall s", 7, lambda r: f"{r['wall_s']:.2f}"),
    ("r->s MB", 8, lambda r: _mb(_dir_bytes(r, "receiver_to_sender", "client_to_server"))),
    ("s->r MB", 8, lambda r: _mb(_dir_bytes(r, "sender_to_receiver", "server_to_client"))),
    ("total MB", 8, lambda r: _mb(r["bytes_total"])),
    ("RSS r MiB", 9, lambda r: _rss(r, "receiver")),
    ("RSS s MiB", 9, lambda r: _rss(r, "sender")),
    ("correct", 7, lambda r: "yes" if r["correct"] else "NO"),
    ("load", 5, lambda r: f"{r['loadavg_1m_after']:.1f}"),
)


def _mb(b):
    return f"{b / 2**20:.2f}"


def _dir_bytes(row, *keys):
    d = row["bytes_by_direction"]
    return next((d[k] for k in keys if k in d), 0)


def _rss(row, role):
    v = row.get("peak_rss_mib_by_role", {}).get(role)
    return "-" if v is None else f"{v:.0f}"


def print_table(rows, file=sys.stdout):
    """One line per measured row, in the order run, under a legend of the columns."""
    print(
        "PSI, each party its own process over 127.0.0.1; n items a side, n/2 in common.\n"
        "CPU = user+sys s of each party (rcv learns the intersection, snd); wall = s until both are done;\n"
        "MB = 2^20 bytes each way; RSS = peak resident MiB per party; correct = equals the plaintext\n"
        "intersection; load = 1-min load average after the row (2 would be this benchmark alone).",
        file=file,
    )
    print("  ".join(f"{h:>{w}}" for h, w, _ in TABLE_COLUMNS), file=file)
    for r in rows:
        print("  ".join(f"{get(r):>{w}}" for _, w, get in TABLE_COLUMNS), file=file)
    file.flush()


def main():
    args = parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="privset-peers-")
    os.makedirs(workdir, exist_ok=True)
    out = open(args.out, "a") if args.out else None
    common = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(), "seed": args.seed}
    rows, failed = [], []

    def emit(row):
        row.update(common)
        row["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
        line = json.dumps(row, sort_keys=False)
        if not args.table:
            print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
        rows.append(row)
        if not row["correct"]:
            log(f"WARNING: wrong result: {row['peer']} {row['variant']} {row['op']} n={row['n']}: "
                f"{row['intersection']} != {row['expected']}")

    for n in args.sizes:
        client, server, truth = make_sets(n, args.seed)
        log(f"n={n}: |intersection|={len(truth)}")
        inputs = None
        if any(p in args.peers for p in ("secretflow", "privset")):
            inputs = write_input_csvs(n, client, server, workdir)
        runs = plan_runs(n, client, server, truth, inputs, args, workdir)
        for rep in range(args.repeat):
            for label, run in runs:
                t0 = time.perf_counter()
                try:
                    row = run()
                except Exception as e:  # noqa: BLE001 -- one tool failing must not stop the others
                    failed.append(f"{label} n={n}: {e}")
                    log(f"  [{rep + 1}/{args.repeat}] {label} n={n}: FAILED: {e}")
                    continue
                log(f"  [{rep + 1}/{args.repeat}] {label} n={n}: cpu {row['cpu_s_total']}s wall {row['wall_s']}s "
                    f"bytes {row['bytes_total']} correct {row['correct']} ({time.perf_counter() - t0:.1f}s elapsed)")
                emit(row)
    if out:
        out.close()
    if args.table:
        print_table(rows)
        for f in failed:
            print(f"FAILED: {f}")
    if failed:
        log(f"scratch files kept in {workdir}")
    elif not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(0 if rows and all(r["correct"] for r in rows) and not failed else 1)


if __name__ == "__main__":
    main()
