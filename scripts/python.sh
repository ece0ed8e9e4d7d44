#!/usr/bin/env bash
# Builds the privset wheel (maturin, through pip's isolated PEP 517 build) and installs
# it into a fresh virtual environment, as `pip install .` would on any machine:
#   target/wheels/privset-<version>-cp39-abi3-linux_<arch>.whl   one wheel, CPython >= 3.9
#   target/py-venv (or $PRIVSET_VENV)                            python with privset installed
# The wheel is built for this CPU (.cargo/config.toml: target-cpu=native); for one that
# runs on other x86-64 machines: RUSTFLAGS="-C target-cpu=x86-64-v2" bash scripts/python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PRIVSET_VENV:-$PWD/target/py-venv}"
python3 -m venv --clear "$venv"
rm -rf target/wheels
"$venv/bin/python" -m pip wheel --no-deps --wheel-dir target/wheels .
"$venv/bin/python" -m pip install --quiet target/wheels/privset-*.whl
"$venv/bin/python" -c 'import privset; print("privset", privset.__version__, "installed in", __import__("sys").prefix)'
echo "use it with: source $venv/bin/activate"
