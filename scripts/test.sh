#!/usr/bin/env bash
# Runs every privset test: unit, conformance, RFC vectors, protocol, transport and
# CLI tests (two real processes over mutual TLS and over a shared directory), then the
# Python package's pytest suite against the wheel that scripts/setup.sh built and
# installed into a fresh virtual environment, then a short smoke run of every fuzz
# target (scripts/fuzz_smoke.sh: installs cargo-fuzz if missing, builds fuzz/ on the
# stable compiler, FUZZ_SECONDS per target, default 5; PRIVSET_SKIP_FUZZ=1 skips it).
# Tests are built with optimisation: crypto in debug builds is far too slow.
set -euo pipefail
cd "$(dirname "$0")/.."
# The wheel the Python tests import has the tests' fault injection (test-faults);
# the binary cargo test builds gets it from the CLI's dev-dependencies.
PRIVSET_WHEEL_FEATURES=test-faults bash scripts/setup.sh
cargo test --workspace --release --locked
venv="${PRIVSET_VENV:-$PWD/target/py-venv}"
"$venv/bin/python" -m pip install --quiet pytest pandas tqdm mypy pyarrow polars ray
# From the repository root the tests import the installed package (python/ is not on
# sys.path); some compare with the `privset` binary built by cargo test above.
PRIVSET_BIN="$PWD/target/release/privset" "$venv/bin/python" -m pytest python/tests -p no:cacheprovider
if [ "${PRIVSET_SKIP_FUZZ:-0}" != 1 ]; then
  bash scripts/fuzz_smoke.sh
fi
