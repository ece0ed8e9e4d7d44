#!/usr/bin/env bash
# Creates (or reuses) a Python venv with the two third-party PSI peers that
# bench/peers/peer_bench.py measures. Idempotent: re-running only checks the pins.
#
#   VENV=${PRIVSET_PEERS_VENV:-$HOME/.cache/privset-peers-venv}
#   bash bench/peers/setup.sh && "$VENV/bin/python" bench/peers/peer_bench.py --help
#
# Needs CPython 3.11 on x86_64 Linux: spu 0.9.5 ships only a cp311 manylinux_2_17_x86_64 wheel.
set -euo pipefail
VENV="${PRIVSET_PEERS_VENV:-$HOME/.cache/privset-peers-venv}"
PY="${PRIVSET_PEERS_PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3.11 python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3,11) else 1)' 2>/dev/null; then
      PY="$c"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "setup.sh: need python3.11 (set PRIVSET_PEERS_PYTHON)" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv --help >/dev/null 2>&1; then
    # Debian's python3 lacks venv until python3-venv is installed.
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq python3-venv
  fi
  "$PY" -m venv "$VENV"
fi

PINS=(openmined-psi==2.0.6 spu==0.9.5)
if "$VENV/bin/python" - <<'PYEOF' 2>/dev/null; then
import importlib.metadata as m, sys
ok = m.version("openmined-psi") == "2.0.6" and m.version("spu") == "0.9.5"
sys.exit(0 if ok else 1)
PYEOF
  echo "setup.sh: peers already installed in $VENV"
else
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${PINS[@]}"
fi
"$VENV/bin/python" -c 'import private_set_intersection.python as psi, spu.psi; print("setup.sh: ok:", psi.__version__ if hasattr(psi, "__version__") else "openmined-psi", "+ spu.psi")'
