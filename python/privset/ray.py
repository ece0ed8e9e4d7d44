"""Bucketed runs spread over the organisation's own Ray cluster (docs/scale.md).

``privset.ray.psi``, ``psi_card``, ``psi_card_sum``, ``psu``, ``private_id`` and ``pi_sum`` are the functions of
:mod:`privset.bucketed` with each bucket (each unit of a value-partitioned job) a Ray
task: the driver stages the input and agrees on the plan with the other organisation,
then the buckets run as tasks on any node of this organisation's cluster, each talking
to the matching task of the other organisation through the bucket's own subdirectory of
a shared exchange directory (Ion et al. 2020, Sec. 2.4's deployment: no port has to be
reachable between the organisations).

psi's buckets all run at once. A value-partitioned job runs in waves, one per step
(evaluate, reply, key, send, return, compare, transfer, union, total: each operation
has some of them): a wave's units run at once, and a wave
starts when this organisation's previous one has finished (a unit reads what the
earlier steps left in ``state_dir``; it never waits for the other organisation's
waves, only for its own unit's messages).

A task that fails (its worker killed, its node lost) is retried by Ray and resumes from
its checkpoint: it replays its messages from its private seed in ``state_dir``.
Progress (buckets done of all) comes back to the driver, which writes the merged rows
and returns RESULT.json's fields.

``state_dir`` holds this organisation's staged rows and checkpoints, and
``exchange_dir`` the messages: both must be reachable from every node that runs tasks
(a shared file system), ``state_dir`` never by the other organisation. Ray is an
optional dependency: ``pip install privset[ray]``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Dict, Optional, Tuple

from . import bucketed
from ._link import PathLike
from ._progress import ProgressArg, callback
from .errors import ConfigurationError

#: The link arguments of privset.bucketed that a Ray job does not take: its link is
#: the exchange directory.
_LINK_ARGUMENTS = ("listen", "peer", "tls", "insecure_no_tls", "server_name")


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("privset.ray needs Ray: pip install privset[ray]") from e
    return ray


def _run_bucket(spec: Dict[str, Any], bucket: int) -> int:
    """One bucket of one organisation's job, on whichever node Ray chose."""
    bucketed.from_arguments(spec).run_bucket(bucket)
    return bucket


def psi(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """Runs this organisation's party of a bucketed psi with its buckets as Ray tasks.

    ``address``: the Ray cluster to join (``ray.init(address=...)``; None joins the
    cluster this process already initialised, or starts a local one). ``max_retries``:
    how often Ray runs a failed bucket task again. ``settings``: the other arguments of
    :func:`privset.bucketed.psi` but its link's (``output_rows``, ``buckets``,
    ``group``, ...).
    """
    return _run("psi", bucketed.psi, (role, input, exchange_dir, state_dir), (address, max_retries), settings, progress)


def psi_card(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """:func:`privset.bucketed.psi_card` with its units as Ray tasks, wave after wave;
    the arguments are :func:`psi`'s."""
    return _run(
        "psi-card", bucketed.psi_card, (role, input, exchange_dir, state_dir), (address, max_retries), settings, progress
    )


def psi_card_sum(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """:func:`privset.bucketed.psi_card_sum` with its units as Ray tasks, wave after
    wave; the arguments are :func:`psi`'s (``value_column``, ``value_bound`` among the
    settings)."""
    return _run(
        "psi-card-sum",
        bucketed.psi_card_sum,
        (role, input, exchange_dir, state_dir),
        (address, max_retries),
        settings,
        progress,
    )


def psu(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """:func:`privset.bucketed.psu` with its units as Ray tasks, wave after wave; the
    arguments are :func:`psi`'s (the receiver's ``output_rows`` among the settings)."""
    return _run("psu", bucketed.psu, (role, input, exchange_dir, state_dir), (address, max_retries), settings, progress)


def private_id(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """:func:`privset.bucketed.private_id` with its units as Ray tasks, wave after wave;
    the arguments are :func:`psi`'s (each party's ``output_rows`` among the settings)."""
    return _run(
        "private-id", bucketed.private_id, (role, input, exchange_dir, state_dir), (address, max_retries), settings, progress
    )


def pi_sum(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: ProgressArg = None,
    **settings: Any,
) -> Dict[str, Any]:
    """:func:`privset.bucketed.pi_sum` (``role`` "p1" or "p2") with its units as Ray
    tasks, wave after wave; the arguments are :func:`psi`'s (``value_columns``,
    ``values_he``, ``threshold``, ... among the settings)."""
    return _run(
        "pi-sum", bucketed.pi_sum, (role, input, exchange_dir, state_dir), (address, max_retries), settings, progress
    )


def _run(
    operation: str,
    public: Callable[..., Dict[str, Any]],
    party: Tuple[str, PathLike, PathLike, PathLike],
    cluster: Tuple[Optional[str], int],
    settings: Dict[str, Any],
    progress: ProgressArg,
) -> Dict[str, Any]:
    """Checks ``settings`` against ``public``'s signature, then plans on the driver and
    runs the buckets as tasks, wave after wave."""
    role, input, exchange_dir, state_dir = party
    address, max_retries = cluster
    refused = [k for k in _LINK_ARGUMENTS if k in settings]
    if refused:
        raise ConfigurationError(
            f"privset.ray runs over exchange_dir only: {', '.join(refused)} is not one of its arguments"
        )
    if "concurrency" in settings:
        raise ConfigurationError("privset.ray runs every unit of a wave as a task at once: concurrency is Ray's")
    try:
        bound = inspect.signature(public).bind(role, input, exchange_dir=exchange_dir, state_dir=state_dir, **settings)
    except TypeError as e:
        raise ConfigurationError(f"privset.ray.{public.__name__}: {e}") from None
    bound.apply_defaults()
    spec = bucketed.arguments(operation, bound.arguments)
    job = bucketed.from_arguments(spec)
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    task = ray.remote(max_retries=max_retries, retry_exceptions=True)(_run_bucket)
    label = f"{operation} {role}"
    with callback(progress) as cb:
        waves = job.plan(cb)
        total = sum(len(w) for w in waves)
        finished = 0
        for wave in waves:
            waiting = [task.remote(spec, b) for b in wave]
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1, timeout=1.0)
                ray.get(done)  # raises a task's final failure here
                finished += len(done)
                if cb is not None and done:
                    cb(label, f"buckets: {finished} of {total} finished", 0, 0, 0, 0, "buckets", 1, finished, total)
        text = job.finish()
    result: Dict[str, Any] = json.loads(text)
    return result
