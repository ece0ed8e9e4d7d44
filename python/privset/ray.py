"""Bucketed runs spread over the organisation's own Ray cluster (docs/scale.md).

``privset.ray.psi`` is :func:`privset.bucketed.psi` with each bucket a Ray task: the
driver stages the input and agrees on the plan with the other organisation, then every
bucket runs as a task on any node of this organisation's cluster, talking to the
matching task of the other organisation through the bucket's own subdirectory of a
shared exchange directory (Ion et al. 2020, Sec. 2.4's deployment: no port has to be
reachable between the organisations). A task that fails (its worker killed, its node
lost) is retried by Ray and resumes from its checkpoint: it replays its messages from
its private seed in ``state_dir``. Progress (buckets done of all) comes back to the
driver, which writes the merged rows and returns RESULT.json's fields.

``state_dir`` holds this organisation's staged rows and checkpoints, and
``exchange_dir`` the messages: both must be reachable from every node that runs tasks
(a shared file system), ``state_dir`` never by the other organisation. Ray is an
optional dependency: ``pip install privset[ray]``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

from ._data import IdColumns, Normalize
from ._link import PathLike
from ._party import DEFAULT_CPU_PRICE, DEFAULT_NETWORK_PRICE, DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT
from ._progress import ProgressArg, callback
from .bucketed import from_arguments, job_arguments
from .pi_sum import DEFAULT_MAX_PEER_ITEMS


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("privset.ray needs Ray: pip install privset[ray]") from e
    return ray


def _run_bucket(args: Dict[str, Any], bucket: int) -> int:
    """One bucket of one organisation's job, on whichever node Ray chose."""
    from_arguments(args).run_bucket(bucket)
    return bucket


def psi(
    role: str,
    input: PathLike,
    *,
    exchange_dir: PathLike,
    state_dir: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: str = "ristretto255",
    mqrpmt: str = "cwprf",
    last_message: str = "bloom",
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    output_rows: Optional[PathLike] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs this organisation's party of a bucketed psi with its buckets as Ray tasks.

    ``address``: the Ray cluster to join (``ray.init(address=...)``; None joins the
    cluster this process already initialised, or starts a local one). ``max_retries``:
    how often Ray runs a failed bucket task again. The other arguments are those of
    :func:`privset.bucketed.psi`; the link is the exchange directory.
    """
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    args = job_arguments(
        role,
        input,
        id_column=id_column,
        normalize=normalize,
        phone_region=phone_region,
        hash_ids=hash_ids,
        duplicates=duplicates,
        group=group,
        mqrpmt=mqrpmt,
        last_message=last_message,
        max_peer_items=max_peer_items,
        buckets=buckets,
        state_dir=state_dir,
        output_rows=output_rows,
        listen=None,
        peer=None,
        exchange_dir=exchange_dir,
        tls=None,
        insecure_no_tls=False,
        server_name=None,
        timeout=timeout,
        poll_interval=poll_interval,
        cpu_price=cpu_price,
        network_price=network_price,
    )
    job = from_arguments(args)
    task = ray.remote(max_retries=max_retries, retry_exceptions=True)(_run_bucket)
    with callback(progress) as cb:
        pending: List[int] = job.plan(cb)
        refs = [task.remote(args, b) for b in pending]
        label = f"psi {role}"
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1, timeout=1.0)
            ray.get(done)  # raises a task's final failure here
            if cb is not None:
                finished = len(refs) - len(waiting)
                cb(label, f"buckets: {finished} of {len(refs)} finished", 0, 0, 0, 0, "buckets", 1, finished, len(refs))
        text = job.finish()
    result: Dict[str, Any] = json.loads(text)
    return result
