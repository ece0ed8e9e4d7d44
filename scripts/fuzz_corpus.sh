#!/usr/bin/env bash
# Regenerates the committed seed corpora fuzz/corpus/<target>/ from real runs: each
# target's init writes the honest inputs it starts from (protocol messages recorded
# from in-memory sessions, encodings of keys, ciphertexts, filters, files) when
# PRIVSET_FUZZ_SEEDS is set. Run after changing a message layout or a scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fuzz_build.sh
source scripts/fuzz_common.sh
rm -rf "$FUZZ_DIR/corpus"
for t in $FUZZ_TARGETS; do
  PRIVSET_FUZZ_SEEDS="$FUZZ_DIR/corpus" "$FUZZ_BIN/$t" -runs=0 >/dev/null 2>&1
  echo "$t: $(ls "$FUZZ_DIR/corpus/$t" | wc -l) seeds, $(du -sh "$FUZZ_DIR/corpus/$t" | cut -f1)"
done
clean_scratch
