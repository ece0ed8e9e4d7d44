"""Running: Ctrl-C stops a long run at once without leaving a thread behind, progress
reaches a callback (or a tqdm bar), and other Python threads keep running meanwhile
(the GIL is released during the crypto)."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import List

import pytest

import privset
from conftest import sets

HERE = pathlib.Path(__file__).parent


def interrupt(kind: str, n: int, after: float) -> dict:
    """Starts interrupt_process.py, sends it SIGINT (Ctrl-C) `after` seconds into the
    run, and returns its report with the delay between the signal and the exception."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "interrupt_process.py"), kind, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    time.sleep(after)
    sent = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["interrupted"], "the run ended before the signal: make it longer"
    report["delay"] = report["raised_at"] - sent
    return report


def test_ctrl_c_stops_a_long_local_run() -> None:
    # 2^18 items a side: about 20 s of crypto on this machine; interrupted 1.5 s in.
    r = interrupt("local", 1 << 18, 1.5)
    assert r["delay"] < 1.0, r  # KeyboardInterrupt at once
    assert r["live_at_raise"] == 2, r  # both parties were still working...
    assert r["live_workers"] == 0, r  # ...and ended at their next message boundary
    assert r["workers_ended_after"] < 60, r
    assert r["python_threads"] == 1, r


@pytest.mark.parametrize("kind", ["listen", "exchange-dir"])
def test_ctrl_c_while_waiting_for_the_peer(kind: str) -> None:
    r = interrupt(kind, 10, 1.0)
    assert r["delay"] < 1.0, r
    # A party blocked on the network or polling a directory stops at once.
    assert r["workers_ended_after"] < 2.0 and r["live_workers"] == 0, r


def test_progress_reaches_the_callback(rng) -> None:
    y, x = sets(rng, 3000, 3000, 1000)
    events: List[privset.Progress] = []
    # The phases of the Diffie-Hellman psi (docs/pso/psi.md), asked for by name: psi's
    # default is vole.
    r = privset.local.psi(y, x, mqrpmt="cwprf", progress=events.append)
    assert r.cardinality == 1000
    parties = {e.party for e in events}
    assert parties == {"receiver", "sender"}
    last = {e.party: e for e in events}
    assert last["receiver"].status == last["sender"].status == "done"
    assert last["receiver"].bytes_sent == r.receiver.bytes_sent
    assert last["sender"].messages_received == last["receiver"].messages_sent > 0
    elapsed = [e.elapsed for e in events]
    assert elapsed == sorted(elapsed)
    # Items done of total per bulk phase, named as in docs/pso, each counted to its end.
    phases = {(e.party, e.phase): (e.done, e.total) for e in events if e.phase is not None}
    assert phases[("receiver", "S1: evaluating the sender's items")] == (3000, 3000)
    assert phases[("sender", "S2: evaluating the receiver's items")] == (3000, 3000)
    for e in events:
        assert 0 <= e.done <= e.total
        assert (e.phase is None) == (e.phase_number == 0)


def test_every_phase_reaches_the_callback_finished(rng) -> None:
    # Small sets: most phases begin and end between two polls of the progress thread;
    # each must still be reported, numbered in order and counted to its end.
    y, x = sets(rng, 40, 40, 10)
    events: List[privset.Progress] = []
    assert privset.local.psi(y, x, progress=events.append).cardinality == 10
    for party in ("receiver", "sender"):
        seen = [e for e in events if e.party == party and e.phase is not None]
        numbers = sorted({e.phase_number for e in seen})
        assert numbers == list(range(1, len(numbers) + 1)), (party, numbers)
        assert len(numbers) >= 2, (party, numbers)
        for n in numbers:
            assert any(e.phase_number == n and e.done == e.total for e in seen), (party, n)
        # Phase numbers never go back.
        order = [e.phase_number for e in seen]
        assert order == sorted(order), (party, order)


def test_an_exception_in_the_callback_stops_the_run(rng) -> None:
    y, x = sets(rng, 20000, 20000, 100)

    def fail(p: privset.Progress) -> None:
        if p.messages_sent:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        privset.local.psi(y, x, progress=fail)
    deadline = time.monotonic() + 60
    while privset._native.live_workers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert privset._native.live_workers() == 0


def test_progress_bar_with_tqdm(rng, capsys) -> None:
    pytest.importorskip("tqdm")  # the test command installs it
    y, x = sets(rng, 500, 500, 100)
    assert privset.local.psu(y, x, progress=True).receiver.rows == 900
    err = capsys.readouterr().err
    # A bar per party and phase, ending at the phase's item count.
    assert "receiver: S1: evaluating the sender's items" in err, err
    assert "sender: S2: evaluating the receiver's items" in err, err
    assert "500/500" in err, err


def test_progress_bar_without_tqdm_warns(rng, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails as if not installed
    y, x = sets(rng, 50, 50, 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert privset.local.psi_card(y, x, progress=True).cardinality == 10
    assert any("tqdm" in str(w.message) for w in caught)


def test_other_python_threads_run_during_the_crypto(rng) -> None:
    y, x = sets(rng, 40000, 40000, 5000)
    ticks: List[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    t = threading.Thread(target=tick)
    t.start()
    start = time.monotonic()
    r = privset.local.psi_card(y, x)
    end = time.monotonic()
    stop.set()
    t.join()
    assert r.cardinality == 5000
    during = [s for s in ticks if start <= s <= end]
    assert end - start > 0.5, "the run was too short to tell"
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert len(during) > (end - start) / 0.05 and max(gaps) < 0.25, (len(during), max(gaps))
