#!/usr/bin/env bash
# Builds the privset wheel (maturin, through pip's isolated PEP 517 build) and installs
# it into a fresh virtual environment, as `pip install .` would on any machine:
#   target/wheels/privset-<version>-cp39-abi3-linux_<arch>.whl   one wheel, CPython >= 3.9
#   target/py-venv (or $PRIVSET_VENV)                            python with privset installed
# The wheel is portable (.cargo/config.toml: x86-64-v2, fast paths chosen at run time);
# scripts/wheel.sh builds the manylinux-tagged one, checked by auditwheel.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PRIVSET_VENV:-$PWD/target/py-venv}"
python3 -m venv --clear "$venv"
rm -rf target/wheels
# PRIVSET_WHEEL_FEATURES: cargo features of the wheel (scripts/test.sh asks for the
# tests' fault injection, `test-faults`; the set-up and release wheels have none).
MATURIN_PEP517_ARGS="${PRIVSET_WHEEL_FEATURES:+--features $PRIVSET_WHEEL_FEATURES}" \
  "$venv/bin/python" -m pip wheel --no-deps --wheel-dir target/wheels .
"$venv/bin/python" -m pip install --quiet target/wheels/privset-*.whl
"$venv/bin/python" -c 'import privset; print("privset", privset.__version__, "installed in", __import__("sys").prefix)'
echo "use it with: source $venv/bin/activate"
