#!/usr/bin/env bash
# Builds the one portable privset wheel and proves it installs:
#   target/wheels-manylinux/privset-<version>-cp39-abi3-manylinux_2_28_x86_64.whl
# 1. maturin builds it for x86-64-v2 (.cargo/config.toml: fast paths chosen at run time,
#    never target-cpu=native) with a manylinux tag, and refuses a wheel whose symbols or
#    libraries break that policy (--auditwheel check). The C and Rust code is compiled and
#    linked by zig (`maturin --zig`, zig from PyPI's `ziglang`) against the glibc 2.28
#    headers and stubs zig ships, so the build machine's own glibc (2.36 on Debian 12,
#    whose symbols would need manylinux_2_34) does not leak in: manylinux_2_28 is RHEL /
#    Rocky 8, Debian 10, Ubuntu 18.10 and later. PRIVSET_MANYLINUX picks another policy;
# 2. auditwheel (pypa) checks it again and prints its verdict;
# 3. a fresh virtual environment installs it with pip, runs `privset --version` (the
#    code paths this CPU gets) and a small PSI, with the fast paths and with the
#    portable path forced (PRIVSET_PORTABLE=1): the same answer either way.
# Tools go to target/wheel-tools (maturin, auditwheel, ziglang from PyPI); the build
# goes to target/zig (objects made by zig, never mixed with the host compiler's).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${RUSTFLAGS:-} ${CARGO_ENCODED_RUSTFLAGS:-}" in
  *target-cpu=native*)
    echo "wheel.sh: RUSTFLAGS asks for target-cpu=native; the wheel must run on any x86-64-v2 CPU" >&2
    exit 2 ;;
esac
if [ "$(uname -m)" != x86_64 ]; then
  echo "wheel.sh: builds the x86-64 wheel; this machine is $(uname -m)" >&2
  exit 2
fi
policy="${PRIVSET_MANYLINUX:-manylinux_2_28}"
tools="$PWD/target/wheel-tools"
out="$PWD/target/wheels-manylinux"
venv="$PWD/target/wheel-venv"
[ -x "$tools/bin/maturin" ] || {
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet 'maturin>=1.16,<2' 'auditwheel>=6'
}
[ -x "$tools/bin/python-zig" ] || "$tools/bin/python" -m pip install --quiet 'ziglang>=0.13'
# maturin finds zig as `python -m ziglang` of the Python on PATH.
export PATH="$tools/bin:$PATH"
rm -rf "$out"
"$tools/bin/maturin" build --release --locked --compatibility "$policy" --auditwheel check \
  --zig --target-dir target/zig --out "$out"
wheel=$(ls "$out"/privset-*-"$policy"_x86_64.whl)
echo "== auditwheel show $wheel"
"$tools/bin/auditwheel" show "$wheel" | tee "$out/auditwheel.txt"
grep -q "\"${policy}_x86_64\"" "$out/auditwheel.txt" || {
  echo "wheel.sh: auditwheel does not confirm $policy" >&2
  exit 1
}
echo "== fresh venv: pip install, privset --version, a PSI"
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet "$wheel"
"$venv/bin/privset" --version
smoke='
import privset
y = [f"id{i}" for i in range(5000)]
x = [f"id{i}" for i in range(2500, 7500)]
r = privset.local.psi(y, x)
assert r.cardinality == 2500, r.cardinality
print("psi of 5000 x 5000 items:", r.cardinality, "in common")
'
"$venv/bin/python" -c "$smoke"
PRIVSET_PORTABLE=1 "$venv/bin/privset" --version | grep "x25519"
PRIVSET_PORTABLE=1 "$venv/bin/python" -c "$smoke"
echo "wheel: $wheel"
