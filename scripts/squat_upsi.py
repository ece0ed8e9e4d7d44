#!/usr/bin/env python3
"""Slot squatting, measured: serves a 200-row `upsi` database, opens N TCP connections
that never send a byte (default 50), then times one honest `upsi query`.

Usage: scripts/squat_upsi.py PRIVSET_BINARY [PORT] [extra `upsi serve` flags...]
(SILENT=N sets the number of silent connections). docs/reliability.md, item 4b.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

bin = os.path.abspath(sys.argv[1])
port = int(sys.argv[2]) if len(sys.argv) > 2 else 47311
extra = sys.argv[3:]
addr = f"127.0.0.1:{port}"
os.chdir(tempfile.mkdtemp(prefix="privset-squat-"))
subprocess.run([bin, "certs", "--out", "certs", "--names", "server,client"], check=True, capture_output=True)
with open("db.csv", "w") as f:
    f.write("phone,risk\n" + "".join(f"+4479{i:08},{i % 10}\n" for i in range(200)))
with open("contacts.csv", "w") as f:
    f.write("phone\n" + "".join(f"+4479{i:08}\n" for i in range(0, 400, 7)))
build = ["upsi", "db", "build", "--input", "db.csv", "--id-column", "phone", "--label-column", "risk", "--db", "db.upsi"]
subprocess.run([bin, *build], check=True, capture_output=True)


def tls(who):
    return ["--tls-ca", "certs/ca.pem", "--tls-cert", f"certs/{who}.pem", "--tls-key", f"certs/{who}.key"]


serve = ["upsi", "serve", "--db", "db.upsi", "--listen", addr, "--max-sessions", "1", "--timeout", "10"]
srv = subprocess.Popen([bin, *serve, *extra, *tls("server")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
while True:
    try:
        socket.create_connection(("127.0.0.1", port)).close()
        break
    except OSError:
        time.sleep(0.05)
silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(int(os.environ.get("SILENT", "50")))]
time.sleep(0.5)
query = ["upsi", "query", "--peer", addr, "--tls-server-name", "server", "--input", "contacts.csv"]
query += ["--id-column", "phone", "--output", "r.json", "--timeout", "120", *tls("client")]
t = time.monotonic()
q = subprocess.run([bin, *query], capture_output=True, text=True)
took = time.monotonic() - t
print(f"honest query with {len(silent)} silent connections open: {took:.2f} s (exit {q.returncode})")
out, err = srv.communicate(timeout=120)
print("server log line:", out.decode().strip())
refusals = [line for line in err.decode().splitlines() if "refused" in line]
for line in refusals[:2] + refusals[-1:]:
    print("  ", line)
