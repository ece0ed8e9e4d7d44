#!/usr/bin/env bash
# Installs what building privset needs on a fresh Debian/Ubuntu machine with Rust:
# m4 (GMP, bundled by the `rug` crate, is built from source and needs it), a C compiler
# (GMP; aws-lc, which provides X25519), and cmake (aws-lc's fallback build).
set -euo pipefail
need=()
command -v m4 >/dev/null 2>&1 || need+=(m4)
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
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
