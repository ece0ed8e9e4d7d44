"""The walkthrough of docs/python.md runs as written: its Python blocks, in order, in
one namespace."""

from __future__ import annotations

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def walkthrough_blocks() -> list:
    text = DOC.read_text()
    section = text.split("## Walkthrough", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_walkthrough_runs(capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("pandas")  # the walkthrough starts from two DataFrames
    blocks = walkthrough_blocks()
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out
    assert "exposed buyers spent" in out and "conversion rate" in out
