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

Or the tasks talk over mutual TLS, with no storage shared between the organisations:
one organisation passes ``listen="host:port"`` and ``ports="first-last"``, the other
``peer="host:port"``, both ``tls=`` (and the connecting one ``server_name=`` when the
listening organisation's certificate is not issued for the host it dials). The
drivers agree on the plan on that port; the listening driver serves a rendezvous on
port + 1; each of its tasks listens on the first free port of ``ports`` on its node
(``advertise``: the host the other organisation reaches that node under, by default
the node's IP address) and registers it there, and the other organisation's task of
the same unit asks the rendezvous where to connect. The other organisation must reach
the listening driver's two ports and the range on every node of the listening
cluster. Rounds repeat until a plan session finds both holding every unit (a unit one
party lost to a crash runs again).

``state_dir`` holds this organisation's staged rows and checkpoints, and
``exchange_dir`` the messages: both must be reachable from every node that runs tasks
(a shared file system), ``state_dir`` never by the other organisation. Ray is an
optional dependency: ``pip install privset[ray]``.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _native, bucketed
from ._link import PathLike
from ._progress import ProgressArg, callback
from .errors import ConfigurationError, TransportError

#: The rendezvous of a job over TCP listens on the plan port + 1.
_RENDEZVOUS_OFFSET = 1

#: Ports: "first-last" or (first, last).
Ports = Union[str, Tuple[int, int]]


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


def _run_bucket_tcp(spec: Dict[str, Any], unit: Tuple[int, int], round: str, link: Dict[str, Any]) -> bool:
    """One unit ``(bucket, runs)`` of round ``round`` of a job over TCP, meeting the
    other organisation's task of the same unit through the rendezvous (the listening
    organisation's task listens on this node); False if it did not run."""
    listening = dict(link)
    if "ports" in listening and listening["advertise"] is None:
        listening["advertise"] = _ray().util.get_node_ip_address()
    rendezvous = listening.pop("rendezvous")
    ran: bool = bucketed.from_arguments(spec).run_bucket_tcp(unit[0], unit[1], round, rendezvous, **listening)
    return ran


def psi(
    role: str,
    input: PathLike,
    *,
    exchange_dir: Optional[PathLike] = None,
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
    exchange_dir: Optional[PathLike] = None,
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
    exchange_dir: Optional[PathLike] = None,
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
    exchange_dir: Optional[PathLike] = None,
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
    exchange_dir: Optional[PathLike] = None,
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
    exchange_dir: Optional[PathLike] = None,
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
    party: Tuple[str, PathLike, Optional[PathLike], PathLike],
    cluster: Tuple[Optional[str], int],
    settings: Dict[str, Any],
    progress: ProgressArg,
) -> Dict[str, Any]:
    """Checks ``settings`` against ``public``'s signature, then plans on the driver and
    runs the buckets as tasks, wave after wave."""
    role, input, exchange_dir, state_dir = party
    address, max_retries = cluster
    ports, advertise = settings.pop("ports", None), settings.pop("advertise", None)
    listen, peer = settings.get("listen"), settings.get("peer")
    if settings.get("insecure_no_tls"):
        raise ConfigurationError("privset.ray runs over mutual TLS or an exchange directory: not insecure_no_tls")
    if "concurrency" in settings:
        raise ConfigurationError("privset.ray runs every unit of a wave as a task at once: concurrency is Ray's")
    if (exchange_dir is None) == (listen is None and peer is None):
        raise ConfigurationError("privset.ray needs exchange_dir, or listen / peer with tls: exactly one link")
    if listen is not None and ports is None:
        raise ConfigurationError("the listening organisation's tasks need ports='first-last' to listen on")
    if listen is None and (ports is not None or advertise is not None):
        raise ConfigurationError("ports and advertise are the listening organisation's (listen=) only")
    tcp_link = (listen, peer, _port_range(ports), advertise)
    if exchange_dir is None:
        _host_port(listen or peer or "")
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
    label = f"{operation} {role}"
    with callback(progress) as cb:
        if exchange_dir is not None:
            task = ray.remote(max_retries=max_retries, retry_exceptions=True)(_run_bucket)
            _waves(ray, job.plan(cb), lambda b: task.remote(spec, b), (label, cb))
        else:
            _over_tcp(ray, job, spec, tcp_link, max_retries, (label, cb))
        text = job.finish()
    result: Dict[str, Any] = json.loads(text)
    return result


def _waves(
    ray: Any,
    waves: List[List[Any]],
    submit: Callable[[Any], Any],
    progress: Tuple[str, Any],
    round_over: Callable[[], bool] = lambda: False,
    missed: Callable[[], None] = lambda: None,
) -> None:
    """Runs each wave's units as tasks (``submit`` makes one's), a wave once the one
    before has finished, reporting units finished; raises a task's final failure. A
    task returning False (its unit did not run) calls ``missed`` and ends the round
    after its wave, as does ``round_over()`` before a wave."""
    label, cb = progress
    total = sum(len(w) for w in waves)
    finished = 0
    for wave in waves:
        if round_over():
            return
        waiting = [submit(unit) for unit in wave]
        all_ran = True
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1, timeout=1.0)
            for ran in ray.get(done):
                if ran is False and all_ran:
                    all_ran = False
                    missed()
            finished += len(done)
            if cb is not None and done:
                cb(label, f"buckets: {finished} of {total} finished", 0, 0, 0, 0, "buckets", 1, finished, total)
        if not all_ran:
            return


#: Rounds a job over TCP may take: each after the first reruns a unit a crash left
#: recorded on one side only.
_MAX_ROUNDS = 100


def _over_tcp(
    ray: Any,
    job: Any,
    spec: Dict[str, Any],
    link: Tuple[Optional[str], Optional[str], Optional[Tuple[int, int]], Optional[str]],
    max_retries: int,
    progress: Tuple[str, Any],
) -> None:
    """Rounds of a plan session on the job's link and the round's units as tasks,
    until a plan session finds both organisations holding every unit. A round in
    which a unit did not run is aborted at the rendezvous (no later wave starts on
    either side); the next round runs that unit again."""
    listen, peer, ports, advertise = link
    task = ray.remote(max_retries=max_retries, retry_exceptions=True)(_run_bucket_tcp)
    rendezvous = None
    if listen is not None:
        host, port = _host_port(listen)
        token = os.urandom(32)
        rendezvous = _native.Rendezvous(
            f"{host}:{port + _RENDEZVOUS_OFFSET}", spec["link"]["tls"], token, spec["link"]["timeout"]
        )
        # Its own tasks reach the driver by its node's address when it listens on all.
        reach = ray.util.get_node_ip_address() if host in ("", "0.0.0.0", "::", "[::]") else host
        task_link: Dict[str, Any] = {
            "rendezvous": f"{reach}:{rendezvous.port}",
            "ports": ports,
            "advertise": advertise,
            "token": token,
        }
    else:
        host, port = _host_port(peer or "")
        task_link = {"rendezvous": f"{host}:{port + _RENDEZVOUS_OFFSET}"}
    try:
        for _ in range(_MAX_ROUNDS):
            round_id, waves = job.plan_tcp(progress[1])
            if not waves:
                return
            round_over, missed = _abort_hooks(job, rendezvous, round_id, task_link["rendezvous"])
            _waves(
                ray,
                waves,
                lambda unit: task.remote(spec, unit, round_id, task_link),
                progress,
                round_over,
                missed,
            )
        raise TransportError(f"the job did not finish in {_MAX_ROUNDS} rounds: units keep failing on one side")
    finally:
        if rendezvous is not None:
            rendezvous.close()


def _abort_hooks(
    job: Any, rendezvous: Any, round_id: str, addr: str
) -> Tuple[Callable[[], bool], Callable[[], None]]:
    """Whether round ``round_id`` is aborted, and how this driver aborts it: the
    listening driver in its own rendezvous; the connecting one at the peer's (it learns
    of the peer's abort from its tasks, which then do not run)."""
    if rendezvous is not None:
        return (lambda: bool(rendezvous.aborted(round_id))), (lambda: rendezvous.abort(round_id))
    return (lambda: False), (lambda: job.abort_round(round_id, addr))


def _host_port(address: str) -> Tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65535:
        raise ConfigurationError(f"{address!r} is not host:port (with a port below 65535: the rendezvous takes port + 1)")
    return host, int(port)


def _port_range(ports: Optional[Ports]) -> Optional[Tuple[int, int]]:
    """``ports`` as (first, last), checked."""
    if ports is None:
        return None
    try:
        if isinstance(ports, str):
            first_s, last_s = ports.split("-")
            first, last = int(first_s), int(last_s)
        else:
            first, last = (int(p) for p in ports)
    except (TypeError, ValueError):
        raise ConfigurationError(f"ports must be 'first-last' or (first, last), not {ports!r}") from None
    if not 0 < first <= last < 65536:
        raise ConfigurationError(f"ports {first}-{last} is not a range of ports 1 to 65535")
    return first, last
