#!/usr/bin/env bash
# Killed parties over an exchange directory, at full count.
#
# Runs RUNS (default 20) executions of each operation in OPS (default: pi-sum and
# psi-card-sum at N = 5000 items a side; the multi-party protocols as mpsi:bay,
# mpsi:miyaji-nishida and mpsi:hazay, with MPSI_PARTIES participants, the first the
# coordinator, and MPSI_N items per set holder), every party a separate
# `target/release/privset` process over one exchange directory per execution, each
# organisation with its own --state-dir. In every execution one party or several are
# killed with SIGKILL at random moments, one to three times each, and restarted at
# once with the same command. Every execution must end with every RESULT.json (and
# every mpsi learner's rows file) giving the plaintext answer computed here from the
# generated inputs (random identifiers, a random known overlap, random values up to
# VALUE_BOUND).
#
# Kill moments: a clean (unkilled) execution of each operation is timed first; each
# kill comes at a uniform moment in [0, 0.8 x that time] after the start of the
# victim's current process. A kill that finds the process already exited is not
# counted; a kill that lands after the party wrote a complete RESULT.json ends that
# party (its result is there; see docs/reliability.md).
#
# Prints one line per execution: operation, run, overlap, kills of each killed party
# and when (seconds from the start of the execution), wall time, and whether the
# answer matched; then a summary line. Exit status 0 iff every execution matched.
#
# Usage: scripts/kill_resume.sh            (from the repository root)
#   RUNS=20 N=5000 SEED=12345 HE_BITS=3072 POLL_MS=20 TIMEOUT=120 WORK=/tmp/dir \
#     OPS="pi-sum psi-card-sum mpsi:bay" MPSI_PARTIES=5 MPSI_N=1000 scripts/kill_resume.sh
# SEED makes the inputs and kill moments reproducible (bash $RANDOM); it is printed.
# Needs bash 5 (EPOCHREALTIME), awk, jq. Builds the release binary if it is missing.

set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-20}
N=${N:-5000}
OPS=${OPS:-pi-sum psi-card-sum}
MPSI_PARTIES=${MPSI_PARTIES:-4}
MPSI_N=${MPSI_N:-1000}
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
echo "# kill_resume: OPS=\"$OPS\" RUNS=$RUNS N=$N MPSI_PARTIES=$MPSI_PARTIES MPSI_N=$MPSI_N SEED=$SEED HE_BITS=$HE_BITS POLL_MS=$POLL_MS work=$WORK"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"

now() { echo "${EPOCHREALTIME/[.,]/}"; } # microseconds
seconds_since() { awk -v d=$(( $(now) - $1 )) 'BEGIN { printf "%.2f", d / 1e6 }'; }

# Parties of OP: "p1 p2", "receiver sender", or mpsi participants org0 (the
# coordinator) to org<MPSI_PARTIES-1>.
parties_of() {
    case $1 in
        pi-sum) echo p1 p2 ;;
        psi-card-sum) echo receiver sender ;;
        mpsi:*) local k; for ((k = 0; k < MPSI_PARTIES; k++)); do echo -n "org$k "; done; echo ;;
        *) echo "unknown operation $1" >&2; exit 2 ;;
    esac
}

# The mpsi role of participant WHICH of protocol PROTO.
mpsi_role() {
    case $1:$2 in
        miyaji-nishida:0) echo dealer ;;
        miyaji-nishida:*) echo party ;;
        *:0) echo server ;;
        *) echo client ;;
    esac
}
mpsi_learns() { [[ $(mpsi_role "$1" "$2") == server || $(mpsi_role "$1" "$2") == party ]]; }

# A random identifier source for awk: distinct identifiers through a counter.
AWK_ID='function id(k) { return sprintf("%08x%08x-%d@example.org", int(rand() * 4294967296), int(rand() * 4294967296), k) }'

# write_inputs OP DIR OVERLAP: the inputs of every party of OP; prints the plaintext
# answer: "cardinality sum" for the two-party operations, the cardinality for mpsi
# (the intersection itself goes to DIR/want.txt, sorted).
write_inputs() {
    local op=$1 dir=$2 overlap=$3
    if [[ $op == mpsi:* ]]; then
        local proto=${op#mpsi:} holders="" k
        : >"$dir/parties.toml"
        for ((k = 0; k < MPSI_PARTIES; k++)); do
            printf '[[party]]\nname = "org%d"\n' "$k" >>"$dir/parties.toml"
            [[ $(mpsi_role "$proto" "$k") == dealer ]] || holders+="org$k "
        done
        awk -v n="$MPSI_N" -v ov="$overlap" -v seed="$RANDOM$RANDOM" -v dir="$dir" -v holders="$holders" "$AWK_ID"'
        BEGIN {
            srand(seed); h = split(holders, name, " "); next_id = 0
            for (k = 0; k < ov; k++) { shared[k] = id(next_id++); print shared[k] > (dir "/want.unsorted") }
            close(dir "/want.unsorted")
            for (j = 1; j <= h; j++) {
                file = dir "/" name[j] ".csv"; print "id" > file; close(file)
                sorter = "sort -n | cut -d\" \" -f2 >> " file
                for (k = 0; k < n; k++) printf "%.12f %s\n", rand(), (k < ov ? shared[k] : id(next_id++)) | sorter
                close(sorter)
            }
            print ov
        }'
        LC_ALL=C sort "$dir/want.unsorted" >"$dir/want.txt"
        return
    fi
    awk -v n="$N" -v ov="$overlap" -v seed="$RANDOM$RANDOM" -v vb="$VALUE_BOUND" -v dir="$dir" "$AWK_ID"'
    BEGIN {
        srand(seed); sum = 0
        print "id" > (dir "/a.csv"); print "id,value" > (dir "/b.csv")
        close(dir "/a.csv"); close(dir "/b.csv") # flushed before the rows are appended
        # Rows are in random order through a random sort key.
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

# party_cmd OP WHICH DIR: the command line of party WHICH of OP (the same for every
# restart).
party_cmd() {
    local op=$1 which=$2 dir=$3 name
    read -ra names <<<"$(parties_of "$op")"
    name=${names[$which]}
    local cmd
    if [[ $op == mpsi:* ]]; then
        local proto=${op#mpsi:}
        cmd=("$BIN" mpsi --protocol "$proto" --role "$(mpsi_role "$proto" "$which")" --name "$name"
            --parties "$dir/parties.toml")
    else
        cmd=("$BIN" "$op" --role "$name")
    fi
    cmd+=(--exchange-dir "$dir/exchange" --poll-interval-ms "$POLL_MS" --timeout "$TIMEOUT"
        --state-dir "$dir/state-$name" --output "$dir/$name.json")
    if [[ $op == mpsi:* ]]; then
        local proto=${op#mpsi:}
        [[ $(mpsi_role "$proto" "$which") == dealer ]] || cmd+=(--input "$dir/$name.csv" --id-column id)
        mpsi_learns "$proto" "$which" && cmd+=(--output-rows "$dir/$name-rows.csv")
    elif [[ $which == 0 ]]; then
        cmd+=(--input "$dir/a.csv" --id-column id)
    else
        cmd+=(--input "$dir/b.csv" --id-column id --value-column value --value-bound "$VALUE_BOUND")
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
                    local at; at=$(seconds_since "$t0")
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

# execute OP DIR DELAYS...: one execution, one DELAYS word list per party (quoted,
# possibly empty); prints the wall time in seconds.
execute() {
    local op=$1 dir=$2 t0 k; shift 2
    read -ra names <<<"$(parties_of "$op")"
    local count=${#names[@]} sups=()
    t0=$(now)
    for ((k = 0; k < count; k++)); do
        : >"$dir/log$k"
        # shellcheck disable=SC2086
        supervise "$(party_cmd "$op" "$k" "$dir")" "$dir/${names[$k]}.json" "$t0" "$dir/log$k" ${1:-} 2>/dev/null &
        sups+=($!)
        shift || true
    done
    # A party that fails for good leaves the others waiting up to --timeout: once one
    # supervisor ends with a failure, stop them all.
    local left=$count failed=0
    while (( left > 0 )); do
        wait -n 2>/dev/null || true
        left=0
        for ((k = 0; k < count; k++)); do
            grep -qE 'exit=[1-9]' "$dir/log$k" && failed=1
            grep -q 'exit=' "$dir/log$k" || left=$((left + 1))
        done
        if (( failed )); then
            for ((k = 0; k < count; k++)); do kill -KILL "$(cat "$dir/log$k.pid")" 2>/dev/null || true; done
            break
        fi
    done
    wait "${sups[@]}" 2>/dev/null || true
    seconds_since "$t0"
}

# check OP DIR ANSWER...: "yes" if every result gives the plaintext answer.
check() {
    local op=$1 dir=$2 card=$3 sum=${4:-} got
    read -ra names <<<"$(parties_of "$op")"
    if [[ $op == mpsi:* ]]; then
        local proto=${op#mpsi:} k
        for ((k = 0; k < ${#names[@]}; k++)); do
            jq -e . "$dir/${names[$k]}.json" >/dev/null 2>&1 || { echo "NO(${names[$k]} has no result)"; return; }
            mpsi_learns "$proto" "$k" || continue
            got=$(tail -n +2 "$dir/${names[$k]}-rows.csv" 2>/dev/null | LC_ALL=C sort | cmp -s - "$dir/want.txt" && echo same || echo differs)
            [[ $got == same ]] || { echo "NO(${names[$k]}'s rows differ from the plaintext intersection of $card)"; return; }
        done
        echo yes
        return
    fi
    local a=${names[0]} b=${names[1]}
    if [[ $op == pi-sum ]]; then
        got=$(jq -r '.cardinality' "$dir/$a.json" 2>/dev/null) && got+=" $(jq -r '"\(.cardinality) \(.sums[0])"' "$dir/$b.json" 2>/dev/null)" || got=missing
    else
        got=$(jq -r '.cardinality' "$dir/$a.json" 2>/dev/null) && got+=" $(jq -r '"\(.cardinality) \(.sum)"' "$dir/$b.json" 2>/dev/null)" || got=missing
    fi
    if [[ $got == "$card $card $sum" ]]; then echo yes; else echo "NO(got $got, want $card $card $sum)"; fi
}

# A random overlap for OP: 1 to the set size - 1 (two-party) or 0 to the set size
# (mpsi: empty and full intersections included).
random_overlap() {
    local r=$(( RANDOM * 32768 + RANDOM ))
    if [[ $1 == mpsi:* ]]; then echo $(( r % (MPSI_N + 1) )); else echo $(( 1 + r % (N - 1) )); fi
}

total=0 matched=0 kills_total=0 runs_with_kills=0
declare -A clean_s
for op in $OPS; do
    dir=$WORK/${op/:/-}-clean; mkdir -p "$dir"
    if [[ $op == mpsi:* ]]; then overlap=$((MPSI_N / 10)); else overlap=$((N * 2 / 5)); fi
    read -r card sum < <(write_inputs "$op" "$dir" "$overlap")
    wall=$(execute "$op" "$dir")
    ok=$(check "$op" "$dir" "$card" "$sum")
    clean_s[$op]=$wall
    echo "$op clean: wall ${wall}s, answer matched: $ok"
    [[ $ok == yes ]] || { echo "clean run failed; see $dir"; exit 1; }
done

for op in $OPS; do
    read -ra names <<<"$(parties_of "$op")"
    count=${#names[@]}
    window_us=$(awk -v s="${clean_s[$op]}" 'BEGIN { printf "%d", s * 0.8 * 1e6 }')
    for ((run = 1; run <= RUNS; run++)); do
        dir=$WORK/${op/:/-}-$run; mkdir -p "$dir"
        overlap=$(random_overlap "$op")
        read -r card sum < <(write_inputs "$op" "$dir" "$overlap")
        # Victims: each party with probability 1/2, at least one.
        delays=()
        victims=0
        while (( victims == 0 )); do
            delays=()
            for ((k = 0; k < count; k++)); do
                d=""
                if (( RANDOM % 2 )); then
                    victims=$((victims + 1))
                    for ((j = 0; j < 1 + RANDOM % 3; j++)); do
                        d+="$(( (RANDOM * 32768 + RANDOM) % (window_us + 1) )) "
                    done
                fi
                delays+=("$d")
            done
        done
        wall=$(execute "$op" "$dir" "${delays[@]}")
        ok=$(check "$op" "$dir" "$card" "$sum")
        total=$((total + 1)); [[ $ok == yes ]] && matched=$((matched + 1))
        kills() { awk '{ n += gsub(/kill@/, "") } END { print n + 0 }' "$1"; }
        line="" run_kills=0
        for ((k = 0; k < count; k++)); do
            kk=$(kills "$dir/log$k")
            (( kk > 0 )) && line+="${names[$k]} killed ${kk}x: $(sed 's/exit=.*//' "$dir/log$k")| "
            run_kills=$((run_kills + kk))
        done
        kills_total=$((kills_total + run_kills)); (( run_kills > 0 )) && runs_with_kills=$((runs_with_kills + 1))
        printf '%-20s run %2d overlap %4d | %s wall %6ss | matched: %s\n' "$op" "$run" "$overlap" "$line" "$wall" "$ok"
        [[ $ok == yes ]] || tail -n 3 "$dir"/log*.stderr || true
    done
done
clean=""
for op in $OPS; do clean+="$op ${clean_s[$op]}s, "; done
echo "SUMMARY: $matched/$total executions gave the plaintext answer; $kills_total kills landed, in $runs_with_kills of $total executions (N=$N a side, mpsi: $MPSI_PARTIES participants x $MPSI_N, SEED=$SEED, clean runs: ${clean%, })"
[[ $matched == "$total" ]]
