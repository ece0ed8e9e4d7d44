#!/usr/bin/env bash
# Bucketed psi (or psi-card, psi-card-sum, psu, private-id, pi-sum: --op) beside the unbucketed run: both parties as processes over loopback
# mutual TLS, on generated identifiers (10% shared). Prints one row per run: items a
# side, buckets, each party's CPU seconds, wall seconds, bytes sent, peak RSS (MiB),
# and CPU per item per party (µs). Figures, not assertions: docs/scale.md quotes them.
#
#   scripts/bench_buckets.sh [--group x25519] [--op psi|psi-card|psi-card-sum|psu|private-id|pi-sum] SIZE:BUCKETS ...
#     (psu: the receiver writes the union to a rows file; private-id: both parties write
#     their tables; the last column is then the receiver's row count)
#     (pi-sum: P1 plays the receiver's column, P2 the sender's; PRIVSET_PI_SUM_FLAGS adds
#     flags to both, e.g. "--values-he elgamal")
#     SIZE as a power of two (20 = 2^20 a side), BUCKETS = none | auto | N, optionally
#     xL for L buckets at once (--concurrency L): 22:4x2
#   scripts/bench_buckets.sh --kills 5 24:auto     # killed and restarted 5 times
#
# Needs the release binary (cargo build --release -p privset-cli) and ~40 bytes of
# disk per item per party for inputs and state (2^26: ~6 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PRIVSET_BIN:-target/release/privset}
GROUP=x25519
OP=psi
KILLS=0
RUNS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --group) GROUP=$2; shift 2 ;;
    --op) OP=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    *) RUNS+=("$1"); shift ;;
  esac
done
WORK=${BENCH_DIR:-$(mktemp -d /tmp/privset-bench-buckets.XXXXXX)}
mkdir -p "$WORK"
"$BIN" certs --out "$WORK/certs" --names receiver,sender >/dev/null

gen() { # gen N OFFSET FILE: N ids, the first N/10 shared by both sides (psi-card-sum,
  # pi-sum: with a value column v)
  python3 - "$1" "$2" "$3" "$OP" <<'PY'
import sys
n, off, path, op = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
shared = n // 10
values = op in ("psi-card-sum", "pi-sum")
value = (lambda i: f",{i * 7919 % 100000}") if values else (lambda i: "")
with open(path, "w") as f:
    f.write("id,v\n" if values else "id\n")
    for start in range(0, n, 1 << 16):
        f.write("".join(f"{(i if i < shared else i + off):014x}@example.org{value(i)}\n"
                        for i in range(start, min(n, start + (1 << 16)))))
PY
}

party() { # party ROLE TAG EXTRA... (always in the background: it execs privset)
  local role=$1 tag=$2; shift 2
  local link
  if [ "$role" = receiver ]; then link=(--listen "127.0.0.1:$PORT"); else link=(--peer "127.0.0.1:$PORT" --tls-server-name receiver); fi
  local as=$role
  if [ "$OP" = pi-sum ]; then
    if [ "$role" = receiver ]; then as=p1; else as=p2; fi
    # shellcheck disable=SC2206
    link+=(${PRIVSET_PI_SUM_FLAGS:-})
  fi
  if [ "$role" = sender ] && { [ "$OP" = psi-card-sum ] || [ "$OP" = pi-sum ]; }; then link+=(--value-column v); fi
  if [ "$role" = receiver ] && [ "$OP" = psu ]; then link+=(--output-rows "$WORK/$tag-rows.csv"); fi
  if [ "$OP" = private-id ]; then link+=(--output-rows "$WORK/$tag-$role-rows.csv"); fi
  exec "$BIN" --progress none "$OP" --role "$as" "${link[@]}" \
    --tls-ca "$WORK/certs/ca.pem" --tls-cert "$WORK/certs/$role.pem" --tls-key "$WORK/certs/$role.key" \
    --group "$GROUP" --input "$WORK/$role-$tag.csv" --id-column id \
    --output "$WORK/$tag-$role.json" --state-dir "$WORK/state-$role" --timeout 3600 "$@"
}

printf '%-6s %-8s %-6s %10s %10s %9s %12s %12s %9s %9s %11s %11s\n' \
  items buckets kills "cpu_r s" "cpu_s s" "wall s" "sent_r MB" "sent_s MB" "rss_r MiB" "rss_s MiB" "µs/item r" "µs/item s" \
  | sed 's/$/ cardinality/'
for spec in "${RUNS[@]}"; do
  log2=${spec%%:*}; buckets=${spec#*:}; n=$((1 << log2))
  lanes=1; case "$buckets" in *x*) lanes=${buckets#*x}; buckets=${buckets%x*} ;; esac
  tag="$log2-$buckets"
  [ -f "$WORK/receiver-$tag.csv" ] || gen "$n" 0 "$WORK/receiver-$tag.csv"
  [ -f "$WORK/sender-$tag.csv" ] || gen "$n" $((1 << 40)) "$WORK/sender-$tag.csv"
  extra=(); [ "$buckets" != none ] && extra=(--buckets "$buckets" --concurrency "$lanes")
  PORT=$((20000 + RANDOM % 20000))
  cpu_before_r=0; cpu_before_s=0; kills=0
  party sender "$tag" "${extra[@]}" > "$WORK/$tag-sender.log" 2>&1 &
  sp=$!
  start=$(date +%s.%N)
  while :; do
    party receiver "$tag" "${extra[@]}" > "$WORK/$tag-receiver.log" 2>&1 &
    rp=$!
    if [ "$kills" -lt "$KILLS" ]; then
      sleep $((20 + RANDOM % 60))
      if kill -0 "$rp" 2>/dev/null; then
        # The killed process's CPU is lost to RESULT.json: take it from /proc first.
        t=$(awk '{print $14 + $15}' "/proc/$rp/stat" 2>/dev/null || echo 0)
        cpu_before_r=$(echo "$cpu_before_r + $t / $(getconf CLK_TCK)" | bc -l)
        kill -9 "$rp"; wait "$rp" 2>/dev/null || true
        kills=$((kills + 1)); continue
      fi
    fi
    wait "$rp"; break
  done
  wait "$sp"
  end=$(date +%s.%N)
  python3 - "$WORK/$tag-receiver.json" "$WORK/$tag-sender.json" "$n" "${buckets}x$lanes" "$kills" "$cpu_before_r" "$(echo "$end - $start" | bc -l)" <<'PY'
import json, sys
r, s = (json.load(open(p)) for p in sys.argv[1:3])
n, buckets, kills, lost, wall = int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
cr, cs = r["cpu_seconds"] + lost, s["cpu_seconds"]
count = r.get("buckets", {}).get("count", "-")
lanes = buckets.split("x")[1]
if lanes != "1":
    count = f"{count}x{lanes}"
print(f"2^{n.bit_length()-1:<4} {str(count):<8} {kills:<6} {cr:10.2f} {cs:10.2f} {wall:9.1f} "
      f"{r['bytes_sent']/1e6:12.1f} {s['bytes_sent']/1e6:12.1f} {r['peak_rss_mib']:9.0f} {s['peak_rss_mib']:9.0f} "
      f"{cr/n*1e6:11.2f} {cs/n*1e6:11.2f} {r.get('cardinality', r.get('rows'))}")
PY
done
