"""Set operations too large for memory, run in buckets (docs/scale.md).

``privset.bucketed.psi`` is the CLI's ``privset psi --buckets``: the input is streamed
from a file (CSV, gzip / zstd CSV, Parquet or Arrow IPC) into bucket files under
``state_dir``, the two parties agree on a bucket count and a partition key, and each
bucket pair runs as one session of at most about 2^20 items, padded to a public size so
nothing is revealed beyond the unbucketed run's output. A party killed at any moment
and called again with the same arguments continues from the buckets not yet finished.
The receiver's matches are written to ``output_rows`` (CSV, or Parquet by its name),
never held in memory; the function returns RESULT.json's fields as a dict, with a
``buckets`` section of per-bucket figures.

``privset.bucketed.psi_card`` is ``privset psi-card --buckets``: no identifier
buckets (the receiver would learn each one's count) but the unbucketed protocol's own
messages streamed in bounded units, partitioned on disk by PRF values, so the receiver
learns the intersection size and nothing more (docs/scale.md).
``privset.bucketed.psi_card_sum`` runs psi-card-sum the same way: both parties learn the
intersection size and the sender the sum of its values over the intersection.

``privset.bucketed.psu`` runs psu the same way, with one more unit per part: an
oblivious transfer that gives the receiver the sender's identifiers it lacks, so the
receiver learns the union and nothing more, as unbucketed.

``privset.bucketed.private_id`` runs private-id the same way (Chen et al. 2024, Fig. 8's
messages streamed): each party's table, one row per identifier of the union in sorted
order with its own item where it has one, is written to ``output_rows``, and both
tables list the same identifiers in the same order.

``privset.bucketed.pi_sum`` runs Ion et al. 2020's intersection-sum the same way (P1
the receiver, P2 the sender): P2's values travel encrypted in each part's unit and P1
adds the parts' encrypted sums before masking them once, so P2 learns only the total.

psi-share is refused for now: its per-bucket answers would reveal more than its
unbucketed run (docs/scale.md).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Union

from . import _native
from ._data import IdColumns, Normalize, _names, _normalizations
from ._link import PathLike, TlsFiles, link_args
from ._party import DEFAULT_CPU_PRICE, DEFAULT_NETWORK_PRICE, DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT
from ._progress import ProgressArg, callback
from .errors import ConfigurationError
from .pi_sum import DEFAULT_MAX_PEER_ITEMS


def psi(
    role: str,
    input: PathLike,
    *,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: Optional[str] = None,
    mqrpmt: Optional[str] = None,
    last_message: Optional[str] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    output_rows: Optional[PathLike] = None,
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party ("receiver" or "sender") of a bucketed psi against its peer.

    ``buckets``: "auto" (about 2^20 items of the larger set per bucket) or a count both
    parties agree on. ``concurrency``: buckets run at once (over TCP on that many
    connections, the smaller of the two parties' values; over an exchange directory on
    that many threads), each holding one bucket in memory. ``state_dir`` keeps the staged rows and finished buckets until the
    result is returned (never inside an exchange directory). The link arguments are
    those of every ``run()`` (:meth:`privset.PsiReceiver.run`); the identifier
    arguments those of the party classes.
    """
    return _run(arguments("psi", locals()), progress)


def psi_card(
    role: str,
    input: PathLike,
    *,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: Optional[str] = None,
    last_message: Optional[str] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party of a psi-card larger than memory; the receiver's result holds
    ``cardinality``.

    ``buckets`` counts the value parts ("auto": one per about 2^20 items of the larger
    set); the other arguments are :func:`psi`'s (the cwPRF mqRPMT only, no rows).
    """
    return _run(arguments("psi-card", locals()), progress)


def psi_card_sum(
    role: str,
    input: PathLike,
    *,
    value_column: Optional[str] = None,
    value_bound: int = 2**32 - 1,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: Optional[str] = None,
    last_message: Optional[str] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party of a psi-card-sum larger than memory: both results hold
    ``cardinality``, the sender's also ``sum``.

    ``value_column`` (the sender's, exactly one) and ``value_bound`` (every value at most
    this) are the CLI's ``--value-column`` and ``--value-bound``; the other arguments
    are :func:`psi_card`'s.
    """
    return _run(arguments("psi-card-sum", locals()), progress)


def psu(
    role: str,
    input: PathLike,
    *,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: Optional[str] = None,
    last_message: Optional[str] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    output_rows: Optional[PathLike] = None,
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party of a psu larger than memory: the receiver's union (its own items,
    then the sender's it lacks) is written to ``output_rows``, never held in memory; the
    sender learns the receiver's set size only.

    The arguments are :func:`psi_card`'s, with :func:`psi`'s ``output_rows``.
    """
    return _run(arguments("psu", locals()), progress)


def private_id(
    role: str,
    input: PathLike,
    *,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: Optional[str] = None,
    last_message: Optional[str] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    output_rows: Optional[PathLike] = None,
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party of a private-id larger than memory: this party's table (columns
    ``private_id`` and the identifier's, a row per identifier of the union in sorted
    order, the item empty where this party has none) is written to ``output_rows``,
    never held in memory. Both parties' tables list the same identifiers in the same
    order; neither learns which of its items the other holds.

    The arguments are :func:`psu`'s (``output_rows`` for both roles).
    """
    return _run(arguments("private-id", locals()), progress)


def pi_sum(
    role: str,
    input: PathLike,
    *,
    value_columns: Union[None, str, Sequence[str]] = None,
    value_bound: int = 2**32 - 1,
    sum_bound: Optional[int] = None,
    sum_of_squares: bool = False,
    threshold: Optional[int] = None,
    values_he: str = "paillier",
    he_modulus_bits: int = 3072,
    dj_s: int = 2,
    z_encoding: str = "gcs",
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    duplicates: str = "error",
    group: str = "ristretto255",
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    buckets: Union[str, int] = "auto",
    concurrency: int = 1,
    state_dir: PathLike = ".privset-state",
    listen: Optional[str] = None,
    peer: Optional[str] = None,
    exchange_dir: Optional[PathLike] = None,
    tls: Optional[TlsFiles] = None,
    insecure_no_tls: bool = False,
    server_name: Optional[str] = None,
    peer_name: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Dict[str, Any]:
    """Runs one party ("p1" or "p2") of a pi-sum larger than memory (Ion et al. 2020,
    Fig. 2, as ``privset pi-sum --buckets``): both results hold ``cardinality``, P2's
    also ``sum`` / ``sums`` (and ``sums_of_squares``, ``variance``); ``aborted`` when
    P1's ``threshold`` stopped the run.

    The value settings are :class:`privset.PiSumP2`'s (``value_columns``: P2's, one or
    more); the ddh protocol, forward, with ``values_he`` "paillier" or "elgamal". The
    other arguments are :func:`psi_card`'s.
    """
    return _run(arguments("pi-sum", locals()), progress)


#: pi-sum's settings of the values and their encryption, passed to the native job as is.
_PI_SUM_SETTINGS = (
    "value_bound", "sum_bound", "sum_of_squares", "threshold", "values_he", "he_modulus_bits", "dj_s", "z_encoding",
)


def arguments(operation: str, args: Dict[str, Any]) -> Dict[str, Any]:
    """The native job's arguments as plain data (a Ray task rebuilds the job from them):
    ``operation`` ("psi", "psi-card", "psi-card-sum", "psu", "private-id" or "pi-sum") and every argument of
    its public function in this module (``progress`` is left out)."""
    args = {k: v for k, v in args.items() if k != "progress"}
    if operation == "pi-sum":
        names = args.pop("value_columns")
        columns = [names] if isinstance(names, str) else list(names or [])
        he = {k: args.pop(k) for k in _PI_SUM_SETTINGS}
        common = job_arguments(**dict(args, mqrpmt=None, last_message=None, output_rows=None))
        for key in ("mqrpmt", "last_message", "output_rows"):
            common.pop(key)
        return dict(common, operation=operation, value_columns=columns, **he)
    if operation != "psi":
        # The value layout runs the cwPRF mqRPMT (the default of every operation but psi).
        args.update(mqrpmt=None, output_rows=args.get("output_rows"))
    value_column, value_bound = args.pop("value_column", None), args.pop("value_bound", None)
    return dict(job_arguments(**args), operation=operation, value_column=value_column, value_bound=value_bound)


def _run(spec: Dict[str, Any], progress: ProgressArg) -> Dict[str, Any]:
    job = from_arguments(spec)
    with callback(progress) as cb:
        text = job.run(cb)
    result: Dict[str, Any] = json.loads(text)
    return result


def job_arguments(
    role: str,
    input: PathLike,
    *,
    id_column: IdColumns,
    normalize: Normalize,
    phone_region: Optional[str],
    hash_ids: Optional[str],
    duplicates: str,
    group: Optional[str],
    mqrpmt: Optional[str],
    last_message: Optional[str],
    max_peer_items: int,
    buckets: Union[str, int],
    concurrency: int,
    state_dir: PathLike,
    output_rows: Optional[PathLike],
    listen: Optional[str],
    peer: Optional[str],
    exchange_dir: Optional[PathLike],
    tls: Optional[TlsFiles],
    insecure_no_tls: bool,
    server_name: Optional[str],
    peer_name: Optional[str],
    timeout: float,
    poll_interval: float,
    cpu_price: float,
    network_price: float,
) -> Dict[str, Any]:
    """The identifier, link and bucket arguments every native job shares, as plain data."""
    if buckets == "auto":
        count = None
    elif isinstance(buckets, int) and not isinstance(buckets, bool) and buckets >= 1:
        count = buckets
    else:
        raise ConfigurationError(f"buckets must be 'auto' or a positive count, not {buckets!r}")
    link = link_args(
        listen=listen,
        peer=peer,
        exchange_dir=exchange_dir,
        tls=tls,
        insecure_no_tls=insecure_no_tls,
        server_name=server_name,
        peer_name=peer_name,
        timeout=timeout,
        poll_interval=poll_interval,
        state_dir=state_dir,
    )
    for key in ("exchange_dir", "state_dir"):
        if link[key] is not None:
            link[key] = os.path.abspath(link[key])
    return {
        "role": role,
        # Absolute: a Ray task may run in another working directory.
        "input": os.path.abspath(input),
        "id_columns": _names(id_column) or ["id"],
        "normalize": _normalizations(normalize),
        "phone_region": phone_region,
        "hash_ids": hash_ids,
        "duplicates": duplicates,
        "group": group,
        "mqrpmt": mqrpmt,
        "last_message": last_message,
        "max_peer_items": max_peer_items,
        "buckets": count,
        "concurrency": concurrency,
        "state_dir": os.path.abspath(state_dir),
        "output_rows": None if output_rows is None else os.path.abspath(output_rows),
        "link": link,
        "prices": (cpu_price, network_price),
    }


def from_arguments(args: Dict[str, Any]) -> Any:
    """The native bucketed job from :func:`arguments`' data."""
    args = dict(args)
    operation, role, input = args.pop("operation"), args.pop("role"), args.pop("input")
    if operation == "pi-sum":
        return _native.BucketedPso.pi_sum(role, input, **args)
    return _native.BucketedPso(operation, role, input, **args)
