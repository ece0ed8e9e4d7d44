#!/usr/bin/env bash
# Killed parties over an exchange directory, at full count.
#
# Runs RUNS (default 20) executions each of pi-sum and psi-card-sum at N (default
# 5000) items a side, both parties as separate `target/release/privset` processes
# over one exchange directory per execution, each organisation with its own
# --state-dir. In every execution one party (either) or both are killed with SIGKILL
# at random moments, one to three times each, and restarted at once with the same
# command. Every execution must end with both RESULT.json files giving the plaintext
# answer computed here from the generated inputs (random identifiers, a random known
# overlap, random values up to VALUE_BOUND).
#
# Kill moments: a clean (unkilled) execution of each operation is timed first; each
# kill comes at a uniform moment in [0, 0.8 x that time] after the start of the
# victim's current process. A kill that finds the process already exited is not
# counted; a kill that lands after the party wrote a complete RESULT.json ends that
# party (its result is there; see docs/reliability.md).
#
# Prints one line per execution: operation, run, overlap, kills of each party and
# when (seconds from the start of the execution), wall time, and whether the answer
# matched; then a summary line. Exit status 0 iff every execution matched.
#
# Usage: scripts/kill_resume.sh            (from the repository root)
#   RUNS=20 N=5000 SEED=12345 HE_BITS=3072 POLL_MS=20 TIMEOUT=120 WORK=/tmp/dir \
#     scripts/kill_resume.sh
# SEED makes the inputs and kill moments reproducible (bash $RANDOM); it is printed.
# Needs bash 5 (EPOCHREALTIME), awk, jq. Builds the release binary if it is missing.

set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-20}
N=${N:-5000}
SEED=${SEED:-$(( $(date +%s) % 1000000 ))}
HE_BITS=${HE_BITS:-3072}
POLL_MS=${POLL_MS:-20}
TIMEOUT=${TIMEOUT:-120} # privset --timeout: seconds to wait for any one message
VALUE_BOUND=${VALUE_BOUND:-1000000}
BIN=$PWD/target/release/privset
WORK=${WORK:-$(mktemp -d /tmp/privset-kill-resume.XXXXXX)}
RANDOM=$SEED

if [[ ! -x $BIN ]]; then
    cargo build --release -p privset-cli
fi
mkdir -p "$WORK"
echo "# kill_resume: RUNS=$RUNS N=$N SEED=$SEED HE_BITS=$HE_BITS POLL_MS=$POLL_MS work=$WORK"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"

now() { echo "${EPOCHREALTIME/[.,]/}"; } # microseconds

# write_inputs DIR OVERLAP: a.csv (id), b.csv (id,value); prints "cardinality sum".
write_inputs() {
    local dir=$1 overlap=$2
    awk -v n="$N" -v ov="$overlap" -v seed="$RANDOM$RANDOM" -v vb="$VALUE_BOUND" -v dir="$dir" '
    function id(k) { return sprintf("%08x%08x-%d@example.org", int(rand() * 4294967296), int(rand() * 4294967296), k) }
    BEGIN {
        srand(seed); sum = 0
        print "id" > (dir "/a.csv"); print "id,value" > (dir "/b.csv")
        close(dir "/a.csv"); close(dir "/b.csv") # flushed before the rows are appended
        # Identifiers carry a counter, so they are distinct; rows are in random order
        # through a random sort key.
        for (k = 0; k < n; k++) {
            s = id(k); a[k] = s
            if (k < ov) { v = int(rand() * (vb + 1)); sum += v; b[k] = s "," v }
        }
        for (k = ov; k < n; k++) { v = int(rand() * (vb + 1)); b[k] = id(n + k) "," v }
        for (k = 0; k < n; k++) { printf "%.12f %s\n", rand(), a[k] | ("sort -n | cut -d\" \" -f2 >> " dir "/a.csv") }
        close("sort -n | cut -d\" \" -f2 >> " dir "/a.csv")
        for (k = 0; k < n; k++) { printf "%.12f %s\n", rand(), b[k] | ("sort -n | cut -d\" \" -f2 >> " dir "/b.csv") }
        close("sort -n | cut -d\" \" -f2 >> " dir "/b.csv")
        printf "%d %.0f\n", ov, sum # %d saturates at 2^31-1 in mawk
    }'
}

# party_cmd OP WHICH DIR: the command line of party WHICH (0: a.csv, 1: b.csv).
party_cmd() {
    local op=$1 which=$2 dir=$3 role
    if [[ $op == pi-sum ]]; then roles=(p1 p2); else roles=(receiver sender); fi
    role=${roles[$which]}
    local cmd=("$BIN" "$op" --role "$role" --exchange-dir "$dir/exchange"
        --poll-interval-ms "$POLL_MS" --timeout "$TIMEOUT" --state-dir "$dir/state-$role"
        --id-column id --output "$dir/$role.json")
    if [[ $which == 0 ]]; then
        cmd+=(--input "$dir/a.csv")
    else
        cmd+=(--input "$dir/b.csv" --value-column value --value-bound "$VALUE_BOUND")
    fi
    [[ $op == pi-sum ]] && cmd+=(--he-modulus-bits "$HE_BITS")
    printf '%q ' "${cmd[@]}"
}

# supervise CMD OUTPUT T0 LOG DELAY_US...: runs CMD, killing it after each delay
# (from the start of its current process) and restarting it at once. Appends
# "kill@SECONDS" words to LOG, then "exit=STATUS".
supervise() {
    local cmd=$1 out=$2 t0=$3 log=$4; shift 4
    local attempt=0 status pid start
    while :; do
        attempt=$((attempt + 1))
        # exec: $! must be privset itself, not a shell around it, or the kill would
        # orphan a live party.
        eval "exec $cmd" >/dev/null 2>"$log.attempt$attempt.stderr" &
        pid=$!
        echo "$pid" >"$log.pid"
        start=$(now)
        if (( $# > 0 )); then
            local due=$1; shift
            while kill -0 "$pid" 2>/dev/null && (( $(now) - start < due )); do sleep 0.005; done
            if kill -KILL "$pid" 2>/dev/null; then
                status=0; wait "$pid" || status=$?
                if (( status == 137 )); then
                    local at; at=$(awk -v d=$(( $(now) - t0 )) 'BEGIN { printf "%.2f", d / 1e6 }')
                    if jq -e . "$out" >/dev/null 2>&1; then
                        echo -n "kill@${at}s(after-result) " >>"$log"; echo "exit=0" >>"$log"; return
                    fi
                    echo -n "kill@${at}s " >>"$log"
                    continue
                fi
                echo "exit=$status" >>"$log"; return
            fi
        fi
        status=0; wait "$pid" || status=$?
        echo "exit=$status" >>"$log"; return
    done
}

# execute OP DIR DELAYS0 DELAYS1: one execution; prints "matched|MISMATCH wall_s".
execute() {
    local op=$1 dir=$2 d0=$3 d1=$4 t0
    : >"$dir/log0"; : >"$dir/log1"
    t0=$(now)
    # shellcheck disable=SC2086
    supervise "$(party_cmd "$op" 0 "$dir")" "$dir/$(role_of "$op" 0).json" "$t0" "$dir/log0" $d0 2>/dev/null &
    local s0=$!
    # shellcheck disable=SC2086
    supervise "$(party_cmd "$op" 1 "$dir")" "$dir/$(role_of "$op" 1).json" "$t0" "$dir/log1" $d1 2>/dev/null &
    local s1=$!
    # A party that fails for good leaves its peer waiting up to --timeout: stop it.
    local first
    wait -n "$s0" "$s1" || true
    for first in 0 1; do
        if grep -qE 'exit=[1-9]' "$dir/log$first"; then
            kill -KILL "$(cat "$dir/log$((1 - first)).pid")" 2>/dev/null || true
        fi
    done
    wait "$s0" "$s1" || true
    awk -v d=$(( $(now) - t0 )) 'BEGIN { printf "%.2f", d / 1e6 }'
}

role_of() { if [[ $1 == pi-sum ]]; then [[ $2 == 0 ]] && echo p1 || echo p2; else [[ $2 == 0 ]] && echo receiver || echo sender; fi; }

# check OP DIR CARD SUM: "yes" if both results give the plaintext answer.
check() {
    local op=$1 dir=$2 card=$3 sum=$4 a b got
    a=$(role_of "$op" 0); b=$(role_of "$op" 1)
    if [[ $op == pi-sum ]]; then
        got=$(jq -r '.cardinality' "$dir/$a.json" 2>/dev/null) && got+=" $(jq -r '"\(.cardinality) \(.sums[0])"' "$dir/$b.json" 2>/dev/null)" || got=missing
    else
        got=$(jq -r '.cardinality' "$dir/$a.json" 2>/dev/null) && got+=" $(jq -r '"\(.cardinality) \(.sum)"' "$dir/$b.json" 2>/dev/null)" || got=missing
    fi
    if [[ $got == "$card $card $sum" ]]; then echo yes; else echo "NO(got $got, want $card $card $sum)"; fi
}

total=0 matched=0 kills_total=0 runs_with_kills=0
declare -A clean_s
for op in pi-sum psi-card-sum; do
    dir=$WORK/$op-clean; mkdir -p "$dir"
    read -r card sum < <(write_inputs "$dir" $((N * 2 / 5)))
    wall=$(execute "$op" "$dir" "" "")
    ok=$(check "$op" "$dir" "$card" "$sum")
    clean_s[$op]=$wall
    echo "$op clean: wall ${wall}s, answer matched: $ok"
    [[ $ok == yes ]] || { echo "clean run failed; see $dir"; exit 1; }
done

for op in pi-sum psi-card-sum; do
    window_us=$(awk -v s="${clean_s[$op]}" 'BEGIN { printf "%d", s * 0.8 * 1e6 }')
    for ((run = 1; run <= RUNS; run++)); do
        dir=$WORK/$op-$run; mkdir -p "$dir"
        overlap=$(( 1 + (RANDOM * 32768 + RANDOM) % (N - 1) ))
        read -r card sum < <(write_inputs "$dir" "$overlap")
        victims=$(( RANDOM % 3 )) # 0: first party, 1: second, 2: both
        delays=("" "")
        for which in 0 1; do
            if (( victims == 2 || victims == which )); then
                count=$(( 1 + RANDOM % 3 ))
                for ((k = 0; k < count; k++)); do
                    delays[which]+="$(( (RANDOM * 32768 + RANDOM) % (window_us + 1) )) "
                done
            fi
        done
        wall=$(execute "$op" "$dir" "${delays[0]}" "${delays[1]}")
        ok=$(check "$op" "$dir" "$card" "$sum")
        total=$((total + 1)); [[ $ok == yes ]] && matched=$((matched + 1))
        kills() { awk '{ n += gsub(/kill@/, "") } END { print n + 0 }' "$1"; }
        k0=$(kills "$dir/log0"); k1=$(kills "$dir/log1")
        kills_total=$((kills_total + k0 + k1)); (( k0 + k1 > 0 )) && runs_with_kills=$((runs_with_kills + 1))
        printf '%-12s run %2d overlap %4d | %-8s killed %dx: %-40s| %-8s killed %dx: %-40s| wall %6ss | matched: %s\n' \
            "$op" "$run" "$overlap" "$(role_of "$op" 0)" "$k0" "$(sed 's/exit=.*//' "$dir/log0")" \
            "$(role_of "$op" 1)" "$k1" "$(sed 's/exit=.*//' "$dir/log1")" "$wall" "$ok"
        [[ $ok == yes ]] || tail -n 3 "$dir"/log*.stderr || true
    done
done
echo "SUMMARY: $matched/$total executions gave the plaintext answer; $kills_total kills landed, in $runs_with_kills of $total executions (N=$N a side, SEED=$SEED, clean runs: pi-sum ${clean_s[pi-sum]}s, psi-card-sum ${clean_s[psi-card-sum]}s)"
[[ $matched == "$total" ]]
