#!/usr/bin/env bash
# Installs what building privset needs on a fresh Debian/Ubuntu machine with Rust:
# m4 (GMP, bundled by the `rug` crate, is built from source and needs it), a C compiler
# (GMP; aws-lc, which provides X25519), cmake (aws-lc's fallback build), and Python's
# venv module; then builds the Python package and installs it into target/py-venv
# (scripts/python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v m4 >/dev/null 2>&1 || need+=(m4)
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# Debian's python3 ships venv (with ensurepip) separately.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "privset needs Rust (cargo) 1.89 or newer: https://rustup.rs" >&2
  exit 1
fi
bash scripts/python.sh
