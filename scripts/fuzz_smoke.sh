#!/usr/bin/env bash
# Smoke run of every fuzz target (part of scripts/test.sh): builds fuzz/ once, then runs
# each target for FUZZ_SECONDS (default 5) from its committed seeds. Fails on the first
# crash, leaving the input in fuzz/artifacts/<target>/ (replay it with
# `fuzz/target/<host>/release/<target> <file>`; fix the library, add a regression test).
#   scripts/fuzz_smoke.sh [target...]      (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-5}"
bash scripts/fuzz_build.sh
source scripts/fuzz_common.sh
trap clean_scratch EXIT
for t in ${*:-$FUZZ_TARGETS}; do
  log="$FUZZ_DIR/target/smoke-$t.log"
  if ! run_target "$t" -max_total_time="$seconds" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "fuzz smoke: $t FAILED (log $log, input in fuzz/artifacts/$t/)" >&2
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  echo "fuzz smoke: $t ok, $execs executions, $rate/s"
done
