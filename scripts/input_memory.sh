#!/usr/bin/env bash
# Peak memory of reading a party's input of 2^24 rows (issue 19) from CSV, zstd CSV and
# Parquet: each read in its own process, printing rows, file size, the dataset's own
# size, time and peak RSS. Usage: scripts/input_memory.sh [ROWS] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${1:-16777216}"
dir="${2:-target/input-memory}"
cargo build --release -q -p privset-run --example input_memory
bin=target/release/examples/input_memory
[ -f "$dir/ids.parquet" ] && [ "$(cat "$dir/rows" 2>/dev/null)" = "$rows" ] || {
  "$bin" gen "$dir" "$rows"
  echo "$rows" > "$dir/rows"
}
"$bin" synth "$rows"
for f in ids.csv ids.csv.zst ids.parquet; do
  "$bin" read "$dir/$f"
done
