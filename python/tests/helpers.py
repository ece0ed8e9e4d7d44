"""Helpers for tests that use other processes: the privset binary, free ports, and a
party run by a second Python interpreter."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any, Dict, List

REPO = pathlib.Path(__file__).resolve().parents[2]


def privset_binary() -> str:
    """The `privset` CLI built by `cargo build --release` (scripts/test.sh builds it
    first; PRIVSET_BIN overrides)."""
    path = pathlib.Path(os.environ.get("PRIVSET_BIN", REPO / "target" / "release" / "privset"))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `cargo build --release -p privset-cli` first")
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PARTY = pathlib.Path(__file__).with_name("party_process.py")


def spawn_party(spec: Dict[str, Any]) -> "subprocess.Popen[str]":
    """Runs one party in another Python process (see party_process.py); its result
    (or error) comes back as JSON on stdout."""
    return subprocess.Popen(
        [sys.executable, str(PARTY), json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: "subprocess.Popen[str]", timeout: float = 120) -> Dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    lines: List[str] = out.strip().splitlines()
    return json.loads(lines[-1])
