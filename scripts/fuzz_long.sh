#!/usr/bin/env bash
# The long fuzzing run for humans: every target (or those named after the seconds) for
# N seconds (default 600), PARALLEL at a time (default 1), each from its committed
# seeds plus the working corpus of earlier runs. Prints a table per target: seed
# corpus size, final corpus size, executions per second, total executions, crashes;
# docs/reliability.md ("Fuzzing") holds the last recorded one.
#   scripts/fuzz_long.sh [seconds] [target...]      e.g. PARALLEL=2 scripts/fuzz_long.sh 600
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
parallel="${PARALLEL:-1}"
bash scripts/fuzz_build.sh
source scripts/fuzz_common.sh
targets="${*:-$FUZZ_TARGETS}"
logs="$FUZZ_DIR/target/long-logs"
mkdir -p "$logs"
trap clean_scratch EXIT
one() {
  local t=$1
  run_target "$t" -max_total_time="$seconds" -timeout=30 >"$logs/$t.log" 2>&1 || true
}
running=0
for t in $targets; do
  one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
printf '| target | seed files | corpus after | exec/s | total execs | seconds | crashes |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for t in $targets; do
  log="$logs/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  seeds=$(ls "$FUZZ_DIR/corpus/$t" | wc -l)
  corpus=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
  crashes=$(find "$FUZZ_DIR/artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) 2>/dev/null | wc -l)
  grep -q 'panicked\|ERROR: libFuzzer' "$log" && crashes="$crashes (see $log)"
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$seeds" "${corpus:-?}" "${rate:-?}" "${execs:-?}" "$seconds" "$crashes"
done
