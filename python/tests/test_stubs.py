"""The type information shipped in the wheel is right: the stubs of the native module
match it (mypy's stubtest), and the package type-checks against them."""

from __future__ import annotations

import subprocess
import sys

import pytest

import privset


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True)


def test_native_stubs_match_the_extension() -> None:
    pytest.importorskip("mypy")  # the test command installs it
    r = run("mypy.stubtest", "--ignore-disjoint-bases", "privset._native")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_package_type_checks() -> None:
    pytest.importorskip("mypy")
    r = run("mypy", "--python-version", "3.10", "--ignore-missing-imports", "--no-incremental", "-p", "privset")
    assert r.returncode == 0, r.stdout + r.stderr
    assert privset.__file__ is not None
