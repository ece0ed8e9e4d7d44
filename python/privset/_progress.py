"""Progress of a long run: a callback of yours, or a tqdm bar per phase.

The native run calls back from the waiting thread (never from the party's thread, so
your callback may do anything Python allows) each time a party's status, message
counts or items done change, at most every 50 ms. A party counts the items of its bulk
phases (hashing and evaluating its items, evaluating the peer's, pairings, encrypted
filters...) as it goes; ``phase`` names the step as the protocol's docs do, with
``done`` of ``total`` items.
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Optional, Union


@dataclass(frozen=True)
class Progress:
    """One party's progress."""

    #: "p1", "p2", "receiver" or "sender".
    party: str
    #: What the party is doing now ("waiting for P2's round 2 (65536 items, ...)").
    status: str
    messages_sent: int
    messages_received: int
    bytes_sent: int
    bytes_received: int
    #: Seconds since the run started.
    elapsed: float
    #: The current bulk phase ("R1: hashing and evaluating our items"), or None before
    #: the party's first.
    phase: Optional[str] = None
    #: Items of that phase done so far, and in total.
    done: int = 0
    total: int = 0
    #: 1 for the party's first phase, 2 for its second, ... (0 before any).
    phase_number: int = 0


#: ``progress=`` of every run: a callable taking a :class:`Progress`, True for a tqdm
#: bar per party (when tqdm is installed), or None/False for nothing.
ProgressArg = Union[None, bool, Callable[[Progress], Any]]

NativeCallback = Callable[[str, str, int, int, int, int, Optional[str], int, int, int], None]


@contextmanager
def callback(progress: ProgressArg) -> Iterator[Optional[NativeCallback]]:
    """The native callback for ``progress``, closing any bars on exit."""
    if progress is None or progress is False:
        yield None
        return
    start = time.monotonic()

    def event(
        party: str,
        status: str,
        ms: int,
        mr: int,
        bs: int,
        br: int,
        phase: Optional[str],
        phase_number: int,
        done: int,
        total: int,
    ) -> Progress:
        return Progress(party, status, ms, mr, bs, br, time.monotonic() - start, phase, done, total, phase_number)

    if callable(progress):
        yield lambda *args: progress(event(*args))
        return
    if progress is not True:
        raise TypeError(f"progress must be None, a bool or a callable, not {type(progress).__name__}")
    try:
        from tqdm.auto import tqdm
    except ImportError:
        warnings.warn("progress=True shows a bar only when tqdm is installed (pip install tqdm)", stacklevel=3)
        yield None
        return
    # One bar per party and phase: a new phase closes the party's last bar (left on
    # screen as the phase's summary) and opens the next.
    bars: Dict[str, Any] = {}
    phases: Dict[str, int] = {}

    def show(*args: Any) -> None:
        p = event(*args)
        if p.phase is None:
            return
        bar = bars.get(p.party)
        if bar is None or phases.get(p.party) != p.phase_number:
            if bar is not None:
                # A new phase starts only once the last one ended (between two polls).
                bar.update(bar.total - bar.n)
                bar.close()
            bar = bars[p.party] = tqdm(desc=f"{p.party}: {p.phase}", total=p.total, unit="item", unit_scale=True, leave=True)
            phases[p.party] = p.phase_number
        bar.set_postfix_str(p.status, refresh=False)
        bar.update(p.done - bar.n)

    try:
        yield show
    finally:
        for bar in bars.values():
            bar.close()
