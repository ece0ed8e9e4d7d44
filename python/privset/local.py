"""Both parties in one process: for notebooks, tests and trying settings out.

Each function builds the two parties (the same classes as for a real run between
organisations), runs them against each other over an in-memory link on two threads,
and returns one result with the answer and both parties' results::

    r = privset.local.pi_sum(exposed_ids, buyer_ids, spend)
    r.cardinality, r.sum        # the answer
    r.p1, r.p2                  # what each party learned, with bytes, time and cost

Both parties share this process, so each result's ``cpu_seconds`` is the process's
(both parties'), as in ``privset demo``; bytes are each party's own.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union

from ._data import IdColumns, Normalize, Values
from ._link import PathLike
from ._party import DEFAULT_CPU_PRICE, DEFAULT_NETWORK_PRICE, DEFAULT_TIMEOUT, Party, run_local
from ._progress import ProgressArg
from ._results import (
    ApsiAuthorizeResult,
    ApsiJudgeResult,
    ApsiResult,
    ApsiServerResult,
    MpsiResult,
    PiSumResult,
    SetOperationResult,
    UpsiMatch,
    UpsiResult,
    UpsiServerResult,
)
from .apsi import (
    DEFAULT_MAX_ITEMS,
    ApsiAuthorizeClient,
    ApsiClient,
    ApsiJudge,
    ApsiServer,
    JudgeKey,
    PolicyArg,
)
from .errors import ConfigurationError, PrivsetError
from .mpsi import DEFAULT_MAX_PEER_ITEMS as MPSI_DEFAULT_MAX_PEER_ITEMS
from .mpsi import PROTOCOLS as MPSI_PROTOCOLS
from .mpsi import MpsiParticipant, mpsi_deal, run_session
from .pi_sum import DEFAULT_MAX_PEER_ITEMS, DEFAULT_VALUE_BOUND, PiSum
from .set_operations import PrivateId, Psi, PsiCard, PsiCardSum, PsiShare, Psu, open_share
from .upsi import UpsiClient, UpsiServer

__all__ = [
    "LocalApsi",
    "LocalPiSum",
    "LocalSetOperation",
    "LocalPrivateIdRow",
    "pi_sum",
    "psi",
    "psi_card",
    "psi_card_sum",
    "psu",
    "psi_share",
    "private_id",
    "apsi",
    "mpsi",
    "LocalMpsi",
    "run_pair",
]


@dataclass(frozen=True)
class LocalPiSum:
    """The answer of a local PI-Sum run and both parties' results."""

    #: |V ∩ W| (None only if neither party learned it).
    cardinality: Optional[int]
    #: Sum over the intersection per value column (P2's, or P1's with reverse).
    sums: Optional[Tuple[int, ...]]
    #: True when the threshold variant stopped the run.
    aborted: bool
    p1: PiSumResult
    p2: PiSumResult

    @property
    def sum(self) -> Optional[int]:
        """The first value column's sum over the intersection."""
        return self.sums[0] if self.sums else None


@dataclass(frozen=True)
class LocalPrivateIdRow:
    """One row of the joined private-ID tables: the identifier and each party's item
    for it (None where that party has none)."""

    private_id: str
    receiver_item: Any
    sender_item: Any


@dataclass(frozen=True)
class LocalSetOperation:
    """The answer of a local set operation and both parties' results."""

    operation: str
    #: |X ∩ Y| where the operation reveals it.
    cardinality: Optional[int]
    #: psi-card-sum: the sender's values summed over the intersection.
    sum: Optional[int]
    #: psi: X ∩ Y; psi-share: the intersection opened from both parties' shares.
    intersection: Optional[List[Any]]
    #: psu: X ∪ Y.
    union: Optional[List[Any]]
    #: private-id: both parties' tables joined row by row.
    private_ids: Optional[List[LocalPrivateIdRow]]
    receiver: SetOperationResult
    sender: SetOperationResult


def run_pair(
    a: Party[Any],
    b: Party[Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> Tuple[Any, Any]:
    """Runs two parties you built (the two roles of one protocol, e.g. an
    :class:`~privset.ApsiClient` and an :class:`~privset.ApsiServer`) against each
    other in this process; returns their results, ``a``'s first. Each party can be run
    again (a fresh execution each time)."""
    return run_local(a, b, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress)


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def pi_sum(
    p1_ids: Any,
    p2_ids: Any,
    p2_values: Optional[Values] = None,
    *,
    id_column: IdColumns = None,
    value_columns: Union[None, str, Sequence[str]] = None,
    segments: Optional[Iterable[Any]] = None,
    segment_column: Optional[str] = None,
    protocol: str = "ddh",
    group: str = "ristretto255",
    values_he: str = "paillier",
    he_modulus_bits: int = 3072,
    dj_s: int = 2,
    z_encoding: str = "gcs",
    threshold: Optional[int] = None,
    reverse: bool = False,
    sum_of_squares: bool = False,
    duplicates: str = "error",
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    value_bound: int = DEFAULT_VALUE_BOUND,
    sum_bound: Optional[int] = None,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> LocalPiSum:
    """PI-Sum between P1 (``p1_ids``) and P2 (``p2_ids`` with ``p2_values``).

    Arguments are those of :class:`privset.PiSumP1` and :class:`privset.PiSumP2`:
    ``id_column`` (DataFrames / CSV files of both), ``value_columns`` (P2's DataFrame or
    CSV file), ``segments`` / ``segment_column`` (P1); shared settings go to both.
    """
    shared: Dict[str, Any] = dict(
        id_column=id_column,
        protocol=protocol,
        group=group,
        values_he=values_he,
        he_modulus_bits=he_modulus_bits,
        dj_s=dj_s,
        z_encoding=z_encoding,
        threshold=threshold,
        reverse=reverse,
        duplicates=duplicates,
        max_peer_items=max_peer_items,
        normalize=normalize,
        phone_region=phone_region,
        hash_ids=hash_ids,
    )
    p1 = PiSum.p1(p1_ids, segments=segments, segment_column=segment_column, **shared)
    p2 = PiSum.p2(
        p2_ids,
        p2_values,
        value_columns=value_columns,
        sum_of_squares=sum_of_squares,
        value_bound=value_bound,
        sum_bound=sum_bound,
        **shared,
    )
    r1, r2 = run_local(
        p1, p2, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress
    )
    return LocalPiSum(
        cardinality=_first(r1.cardinality, r2.cardinality),
        sums=_first(r2.sums, r1.sums),
        aborted=r1.aborted or r2.aborted,
        p1=r1,
        p2=r2,
    )


def _set_operation(
    operation: Type[Any],
    receiver_ids: Any,
    sender_ids: Any,
    sender_values: Optional[Values] = None,
    *,
    id_column: IdColumns,
    value_column: Optional[str] = None,
    value_bound: int = DEFAULT_VALUE_BOUND,
    timeout: float,
    cpu_price: float,
    network_price: float,
    progress: ProgressArg,
    **settings: Any,
) -> LocalSetOperation:
    receiver = operation.receiver(receiver_ids, id_column=id_column, **settings)
    if operation is PsiCardSum:
        sender = operation.sender(
            sender_ids,
            sender_values,
            id_column=id_column,
            value_column=value_column,
            value_bound=value_bound,
            **settings,
        )
    else:
        sender = operation.sender(sender_ids, id_column=id_column, **settings)
    r, s = run_local(
        receiver, sender, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress
    )
    intersection = r.intersection
    if r.shares is not None and s.shares is not None:
        intersection = _open_shares(receiver, r, s)
    private_ids = None
    if r.private_ids is not None and s.private_ids is not None:
        private_ids = _join(r, s)
    return LocalSetOperation(
        operation=r.protocol,
        cardinality=_first(r.cardinality, s.cardinality),
        sum=_first(s.sum, r.sum),
        intersection=intersection,
        union=r.union,
        private_ids=private_ids,
        receiver=r,
        sender=s,
    )


def _open_shares(receiver: Any, r: SetOperationResult, s: SetOperationResult) -> List[Any]:
    """The receiver's identifiers that both parties' psi-share shares open to."""
    theirs = {share.index: share.share for share in s.shares or []}
    data = receiver._input
    opened = []
    for share in r.shares or []:
        raw = open_share(share.share, theirs[share.index])
        opened.append(data.item(data.native.row_of(raw), raw))
    return opened


def _join(r: SetOperationResult, s: SetOperationResult) -> List[LocalPrivateIdRow]:
    """Both private-ID tables side by side (they list the same identifiers in order)."""
    mine, theirs = r.private_ids or [], s.private_ids or []
    if [row.private_id for row in mine] != [row.private_id for row in theirs]:
        raise PrivsetError("the two private-ID tables do not list the same identifiers")
    return [LocalPrivateIdRow(a.private_id, a.item, b.item) for a, b in zip(mine, theirs)]


def _identifiers_only(operation: Type[Any], name: str, learns: str) -> Callable[..., LocalSetOperation]:
    """The local function of a set operation whose parties hold identifiers only."""

    def run(
        receiver_ids: Any,
        sender_ids: Any,
        *,
        id_column: IdColumns = None,
        group: Optional[str] = None,
        mqrpmt: Optional[str] = None,
        last_message: Optional[str] = None,
        duplicates: str = "error",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
        max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
        timeout: float = DEFAULT_TIMEOUT,
        cpu_price: float = DEFAULT_CPU_PRICE,
        network_price: float = DEFAULT_NETWORK_PRICE,
        progress: ProgressArg = None,
    ) -> LocalSetOperation:
        return _set_operation(
            operation, receiver_ids, sender_ids, id_column=id_column, group=group, mqrpmt=mqrpmt,
            last_message=last_message, duplicates=duplicates, max_peer_items=max_peer_items,
            normalize=normalize, phone_region=phone_region, hash_ids=hash_ids, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress,
        )  # fmt: skip

    run.__name__ = run.__qualname__ = name
    run.__doc__ = _doc(operation, learns)
    return run


def _doc(operation: Type[Any], learns: str) -> str:
    return (
        f"{operation.__name__} between a receiver (``receiver_ids``, Y) and a sender "
        f"(``sender_ids``, X): {learns}\n\n"
        "Arguments are those of the party classes (:mod:`privset.set_operations`); "
        "``id_column`` names the identifiers' column of DataFrames / CSV files."
    )


def psi_card_sum(
    receiver_ids: Any,
    sender_ids: Any,
    sender_values: Optional[Values] = None,
    *,
    id_column: IdColumns = None,
    value_column: Optional[str] = None,
    group: Optional[str] = None,
    mqrpmt: Optional[str] = None,
    last_message: Optional[str] = None,
    duplicates: str = "error",
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    value_bound: int = DEFAULT_VALUE_BOUND,
    max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> LocalSetOperation:
    return _set_operation(
        PsiCardSum, receiver_ids, sender_ids, sender_values, id_column=id_column,
        value_column=value_column, value_bound=value_bound, group=group, mqrpmt=mqrpmt,
        last_message=last_message, duplicates=duplicates, max_peer_items=max_peer_items,
        normalize=normalize, phone_region=phone_region, hash_ids=hash_ids, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress,
    )  # fmt: skip


psi_card_sum.__doc__ = _doc(
    PsiCardSum,
    "the sender holds ``sender_values`` (or ``value_column=``); ``.cardinality`` is |X ∩ Y| "
    "and ``.sum`` the sender's values summed over it.",
)
psi = _identifiers_only(Psi, "psi", "``.intersection`` is X ∩ Y (the receiver's identifiers).")
psi_card = _identifiers_only(PsiCard, "psi_card", "``.cardinality`` is |X ∩ Y|.")
psu = _identifiers_only(Psu, "psu", "``.union`` is X ∪ Y.")
psi_share = _identifiers_only(
    PsiShare,
    "psi_share",
    "each party gets XOR shares; ``.intersection`` opens them (only possible here, with both "
    "parties' shares in one place) and ``.cardinality`` is |X ∩ Y|.",
)
private_id = _identifiers_only(
    PrivateId,
    "private_id",
    "``.private_ids`` joins both parties' tables: one row per element of X ∪ Y with each "
    "party's item or None.",
)


@dataclass(frozen=True)
class LocalApsi:
    """The answer of a local authorized-PSI run (Authorize, then one Intersect) and
    every party's result."""

    #: The authorized items the client used that the server holds.
    intersection: List[Any]
    #: |intersection| and |Y|.
    cardinality: int
    server_items: int
    #: The client's authorization (reusable: ``privset.ApsiClient(signatures, ...)``).
    signatures: Any
    judge: ApsiJudgeResult
    authorize: ApsiAuthorizeResult
    client: ApsiResult
    server: ApsiServerResult


def _accept_all(client_id: bytes, items: List[bytes]) -> bool:
    return True


def apsi(
    client_ids: Any,
    server_ids: Any,
    *,
    subset: Any = None,
    client_id: str = "client",
    policy: Optional[PolicyArg] = None,
    judge_key: Any = None,
    partial: Optional[float] = None,
    key_consistency: bool = True,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    max_items: int = DEFAULT_MAX_ITEMS,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> LocalApsi:
    """Authorized PSI with all three parties in this process: the judge signs
    ``client_ids`` for ``client_id`` (by ``policy``; default: accept), then the client
    intersects ``subset`` (default: all its items; unsigned ones are left out) with
    the server's ``server_ids``.

    ``judge_key``: a :class:`privset.JudgeKey` (default: a fresh one). ``partial``:
    Partial-APSI with this fraction opened. The other arguments are those of the party
    classes (:mod:`privset.apsi`). A rejected set raises
    :class:`privset.AuthorizationRejected`.
    """
    key = judge_key if judge_key is not None else JudgeKey.generate()
    judge = ApsiJudge(
        key,
        policy if policy is not None else _accept_all,
        partial=partial,
        key_consistency=key_consistency,
        max_items=max_items,
    )
    keys: Dict[str, Any] = dict(normalize=normalize, phone_region=phone_region, hash_ids=hash_ids)
    asking = ApsiAuthorizeClient(
        client_ids, client_id=client_id, id_column=id_column, partial=partial, key_consistency=key_consistency, **keys
    )
    shared: Dict[str, Any] = dict(timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress)
    judged, authorized = run_local(judge, asking, **shared)
    public = key.public_key if isinstance(key, JudgeKey) else JudgeKey.load(key).public_key
    client = ApsiClient(
        authorized.signatures,
        subset if subset is not None else client_ids,
        judge_public=public,
        id_column=id_column,
        key_consistency=key_consistency,
        max_server_items=max_items,
        **keys,
    )
    server = ApsiServer(
        server_ids, judge_public=public, id_column=id_column, partial=partial, key_consistency=key_consistency, **keys
    )
    found, served = run_local(client, server, **shared)
    return LocalApsi(
        intersection=found.intersection,
        cardinality=found.cardinality,
        server_items=found.server_items,
        signatures=authorized.signatures,
        judge=judged,
        authorize=authorized,
        client=found,
        server=served,
    )


@dataclass(frozen=True)
class LocalMpsi:
    """The answer of a local multi-party PSI session and every participant's result."""

    #: "bay", "miyaji-nishida" or "hazay".
    protocol: str
    #: The items every set holds: the server's (Bay et al., Hazay-Venkitasubramaniam)
    #: or the first party's (Miyaji-Nishida) own objects, in its input order.
    intersection: List[Any]
    #: Every participant's result, in session order (the server or the dealer first).
    participants: Tuple[MpsiResult, ...]


def mpsi(
    sets: Sequence[Any],
    protocol: str = "bay",
    *,
    names: Optional[Sequence[str]] = None,
    id_column: IdColumns = None,
    duplicates: str = "error",
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    max_items: int = 0,
    max_peer_items: int = MPSI_DEFAULT_MAX_PEER_ITEMS,
    scheme: str = "elgamal",
    paillier_modulus_bits: int = 3072,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> LocalMpsi:
    """Runs a whole multi-party PSI session (de Jong's thesis; docs/mpsi.md) in this
    process, one thread per participant over in-memory links, and returns the
    intersection of ``sets`` and every participant's result.

    ``sets`` are the set holders' sets: with "bay" and "hazay" the first is the
    server's and every other a client's (3 sets at least); with "miyaji-nishida" each
    is a party's and a dealer with no set is added as the first participant (2 sets at
    least). ``names`` name the participants in session order (default: their roles).
    The other keywords are the party classes' (``max_items``: Miyaji-Nishida's bound
    ``N``). ``scheme="paillier"`` runs on threshold Paillier with a key of
    ``paillier_modulus_bits`` dealt for the session first (:func:`privset.mpsi_deal`,
    into a temporary directory removed afterwards; 3,072 bits takes minutes).
    """
    namespace = MPSI_PROTOCOLS.get(protocol)
    if namespace is None:
        raise ConfigurationError(f"protocol must be one of bay, miyaji-nishida, hazay, not {protocol!r}")
    if scheme not in ("elgamal", "paillier"):
        raise ConfigurationError(f"scheme must be 'elgamal' or 'paillier', not {scheme!r}")
    how: Dict[str, Any] = dict(
        id_column=id_column,
        duplicates=duplicates,
        normalize=normalize,
        phone_region=phone_region,
        hash_ids=hash_ids,
        max_peer_items=max_peer_items,
    )
    is_mn = protocol == "miyaji-nishida"
    with tempfile.TemporaryDirectory(prefix="privset-mpsi-key-") as tmp:
        # One key file per participant: the first's public key, then each holder's share.
        key_files: List[Optional[PathLike]] = [None] * (len(sets) + int(is_mn))
        if scheme == "paillier":
            holders = [f"holder-{i}" for i in range(1, len(key_files))]
            dealt = mpsi_deal(holders, tmp, modulus_bits=paillier_modulus_bits)
            key_files = [dealt.public, *dealt.holders]
        participants: List[MpsiParticipant]
        if is_mn:
            dealer = namespace.dealer(max_peer_items=max_peer_items, paillier_key=key_files[0])  # type: ignore[attr-defined]
            parties = [
                namespace.party(s, max_items=max_items, paillier_key=k, **how)  # type: ignore[attr-defined]
                for s, k in zip(sets, key_files[1:])
            ]
            participants = [dealer, *parties]
            learner = 1
        else:
            server = [namespace.server(s, paillier_key=key_files[0], **how) for s in sets[:1]]  # type: ignore[attr-defined]
            clients = [
                namespace.client(s, paillier_key=k, **how)  # type: ignore[attr-defined]
                for s, k in zip(sets[1:], key_files[1:])
            ]
            participants = [*server, *clients]
            learner = 0
    results = run_session(
        participants,
        names=None if names is None else list(names),
        timeout=timeout,
        cpu_price=cpu_price,
        network_price=network_price,
        progress=progress,
    )
    intersection = results[learner].intersection if len(results) > learner else None
    return LocalMpsi(
        protocol=protocol,
        intersection=list(intersection or []),
        participants=tuple(results),
    )


@dataclass(frozen=True)
class LocalUpsi:
    """The answer of a local unbalanced-PSI run and both parties' results."""

    #: The client's items the database holds, with their labels, in input order.
    matches: List[UpsiMatch]
    client: UpsiResult
    server: UpsiServerResult


def upsi(
    database: Any,
    items: Any,
    *,
    id_column: IdColumns = None,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    cpu_price: float = DEFAULT_CPU_PRICE,
    network_price: float = DEFAULT_NETWORK_PRICE,
    progress: ProgressArg = None,
) -> LocalUpsi:
    """Unbalanced labeled PSI (Cong et al. 2021; docs/upsi.md) in this process: the
    client with ``items`` asks the server of ``database`` (a
    :class:`privset.UpsiDatabase` or the path of a database file) which of them it
    holds, and their labels. The other arguments are :class:`privset.UpsiClient`'s."""
    server = UpsiServer(database)
    client = UpsiClient(items, id_column=id_column, normalize=normalize, phone_region=phone_region, hash_ids=hash_ids)
    found, served = run_local(
        client, server, timeout=timeout, cpu_price=cpu_price, network_price=network_price, progress=progress
    )
    return LocalUpsi(matches=found.matches, client=found, server=served)
