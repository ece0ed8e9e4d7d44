"""Progress of a long run: a callback of yours, or a tqdm bar.

The native run calls back from the waiting thread (never from the party's thread, so
your callback may do anything Python allows) each time a party's status or message
counts change, at most every 50 ms.
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


#: ``progress=`` of every run: a callable taking a :class:`Progress`, True for a tqdm
#: bar per party (when tqdm is installed), or None/False for nothing.
ProgressArg = Union[None, bool, Callable[[Progress], Any]]

NativeCallback = Callable[[str, str, int, int, int, int], None]


@contextmanager
def callback(progress: ProgressArg) -> Iterator[Optional[NativeCallback]]:
    """The native callback for ``progress``, closing any bars on exit."""
    if progress is None or progress is False:
        yield None
        return
    start = time.monotonic()

    def event(party: str, status: str, ms: int, mr: int, bs: int, br: int) -> Progress:
        return Progress(party, status, ms, mr, bs, br, time.monotonic() - start)

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
    bars: Dict[str, Any] = {}

    def show(*args: Any) -> None:
        p = event(*args)
        bar = bars.get(p.party)
        if bar is None:
            bar = bars[p.party] = tqdm(desc=p.party, unit="msg", position=len(bars), leave=True)
        bar.set_description(f"{p.party}: {p.status}", refresh=False)
        bar.set_postfix(sent=f"{p.bytes_sent / 2**20:.1f} MiB", received=f"{p.bytes_received / 2**20:.1f} MiB", refresh=False)
        bar.update(p.messages_sent + p.messages_received - bar.n)

    try:
        yield show
    finally:
        for bar in bars.values():
            bar.close()
