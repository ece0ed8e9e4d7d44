#!/usr/bin/env bash
# Runs every privset test: unit, conformance, RFC vectors, protocol, transport and
# CLI tests (two real processes over mutual TLS and over a shared directory).
# Tests are built with optimisation: crypto in debug builds is far too slow.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --release --locked
