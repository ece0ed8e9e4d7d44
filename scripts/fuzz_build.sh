#!/usr/bin/env bash
# Builds the coverage-guided fuzz targets of fuzz/ (cargo-fuzz, libFuzzer) on the stable
# compiler: RUSTC_BOOTSTRAP=1 lets stable rustc take the -Z flags cargo-fuzz passes.
# No sanitizer (`-s none`: the decoders are safe Rust; AddressSanitizer would halve the
# speed and the C libraries are not instrumented anyway); debug assertions and overflow
# checks on (`-a`), so an arithmetic overflow is a crash. Installs cargo-fuzz if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
cd fuzz
RUSTC_BOOTSTRAP=1 cargo fuzz build -s none -a "$@"
