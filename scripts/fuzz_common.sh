# Sourced by the fuzz scripts: the target list and the binary directory.
FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz" && pwd)"
FUZZ_BIN="$FUZZ_DIR/target/$(rustc -vV | sed -n 's/^host: //p')/release"
FUZZ_TARGETS=$(cd "$FUZZ_DIR/fuzz_targets" && ls -- *.rs | sed 's/\.rs$//')

# run_target <target> <libFuzzer options...>: fuzzes from the committed seeds
# (fuzz/corpus/<target>, read only) plus the working corpus fuzz/target/corpus/<target>
# (new inputs land there); a crash is written to fuzz/artifacts/<target>/.
run_target() {
  local t=$1
  shift
  mkdir -p "$FUZZ_DIR/target/corpus/$t" "$FUZZ_DIR/artifacts/$t"
  "$FUZZ_BIN/$t" "$FUZZ_DIR/target/corpus/$t" "$FUZZ_DIR/corpus/$t" \
    -artifact_prefix="$FUZZ_DIR/artifacts/$t/" -print_final_stats=1 "$@"
}

# Scratch directories the file-reading targets made (/dev/shm/privset-fuzz-<t>-<pid>).
clean_scratch() {
  local base=/dev/shm
  [ -d "$base" ] || base="${TMPDIR:-/tmp}"
  # Only those of processes that are gone: another fuzz run of the same user (a smoke
  # run beside a long one) keeps its own.
  local d pid
  for d in "$base"/privset-fuzz-*; do
    [ -d "$d" ] && [ -O "$d" ] || continue
    pid="${d##*-}"
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -rf "$d"
    fi
  done
}
