"""What a party learns, as frozen dataclasses with the fields of the CLI's RESULT.json.

The native run returns RESULT.json exactly as ``privset`` writes it (the same Rust
structure builds both); the classes here only parse it, and add the rows the CLI would
write with ``--output-rows`` (intersection, union, shares, private-ID table) with the
caller's own identifiers.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar

from ._data import PartyInput
from ._pandas import pandas


@dataclass(frozen=True)
class Prices:
    """Cost-model prices (Ion et al. 2020, Table 1) used for ``cost_cents``."""

    cpu_dollars_per_hour: float
    network_dollars_per_gb: float


@dataclass(frozen=True)
class Segment:
    """One segment's result (PI-Sum with segmented input)."""

    #: P1: the segment's label; P2: its index (P2 never sees the labels).
    segment: str
    #: None for P2 when the segment is suppressed.
    cardinality: Optional[int]
    #: Per value column, for the party entitled to sums (never for a suppressed segment).
    sums: Optional[Tuple[int, ...]] = None
    #: The threshold withheld the segment from P2: fewer than the threshold matched.
    suppressed: bool = False


def _tuple(values: Optional[List[Any]]) -> Optional[Tuple[Any, ...]]:
    return None if values is None else tuple(values)


class _Report:
    """RESULT.json itself, for the result classes (which hold its fields)."""

    _json: str

    def to_dict(self) -> Dict[str, Any]:
        """RESULT.json as the CLI writes it, as a dict."""
        return json.loads(self._json)

    def to_json(self) -> str:
        """RESULT.json as the CLI writes it."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def _metering(d: Dict[str, Any]) -> Dict[str, Any]:
    keys = ("transport", "bytes_sent", "bytes_received", "cpu_seconds", "wall_seconds", "peak_rss_mib", "cost_cents")
    out = {k: d[k] for k in keys}
    out["prices"] = Prices(**d["prices"])
    return out


@dataclass(frozen=True)
class PiSumResult(_Report):
    """What one PI-Sum party learns (docs/pi-sum.md), with RESULT.json's fields in its
    order.

    Fields a party is not entitled to are None: P1 gets the cardinality, P2 the
    cardinality and the sums (P1 the sums with ``reverse=True``); with a threshold that
    stopped the run, ``aborted`` is True and the other party learns only that.
    """

    protocol: str
    #: "p1" or "p2".
    role: str
    #: True when the threshold variant stopped the run.
    aborted: bool
    #: |V ∩ W|; None for the party told only that a threshold run aborted.
    cardinality: Optional[int]
    #: Sum over the intersection when there is exactly one value column (the entitled
    #: party only): ``sums[0]``.
    sum: Optional[int]
    #: Sum over the intersection per value column (the entitled party only).
    sums: Optional[Tuple[int, ...]]
    sums_of_squares: Optional[Tuple[int, ...]]
    #: Population variance of the intersection's values per column.
    variance: Optional[Tuple[float, ...]]
    segments: Optional[Tuple[Segment, ...]]
    #: The peer's set size (revealed by the protocol) and this party's distinct items.
    peer_items: int
    items: int
    #: Which of Ion et al. 2020's protocols ran: "ddh" (Fig. 2), "rot" (Fig. 3) or
    #: "bloom" (Fig. 4).
    pi_sum_protocol: str
    group: str
    values_he: str
    z_encoding: str
    #: "tcp+mtls", "tcp-plaintext", "exchange-dir" or "memory" (local runs).
    transport: str
    #: Bytes on the wire (TLS and framing included) this party sent / received.
    bytes_sent: int
    bytes_received: int
    #: CPU of the whole process (both parties' in a local run) and wall time.
    cpu_seconds: float
    wall_seconds: float
    #: Peak resident memory of the process.
    peak_rss_mib: float
    #: This party's CPU plus the bytes it sent, at ``prices``.
    cost_cents: float
    prices: Prices
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from_json(cls, text: str) -> "PiSumResult":
        d = json.loads(text)
        segments = d.get("segments")
        return cls(
            **_metering(d),
            _json=text,
            protocol=d["protocol"],
            role=d["role"],
            aborted=d["aborted"],
            cardinality=d["cardinality"],
            sum=d["sum"],
            sums=_tuple(d["sums"]),
            sums_of_squares=_tuple(d["sums_of_squares"]),
            variance=_tuple(d["variance"]),
            segments=None
            if segments is None
            else tuple(
                Segment(s["segment"], s["cardinality"], _tuple(s.get("sums")), s.get("suppressed", False))
                for s in segments
            ),
            peer_items=d["peer_items"],
            items=d["items"],
            pi_sum_protocol=d["pi_sum_protocol"],
            group=d["group"],
            values_he=d["values_he"],
            z_encoding=d["z_encoding"],
        )


@dataclass(frozen=True)
class Share:
    """One row of a secret-shared intersection (psi-share): the position in the
    sender's shuffled order and this party's XOR share of the encoded identifier."""

    index: int
    share: bytes


@dataclass(frozen=True)
class PrivateIdRow:
    """One row of a private-ID table: a union identifier (hex) and this party's item
    for it, or None. Both parties' tables have the same rows in the same order."""

    private_id: str
    item: Any


@dataclass(frozen=True)
class SetOperationResult(_Report):
    """What one party of a set operation learns (docs/pso/), with RESULT.json's fields
    in its order, then the rows the CLI writes with ``--output-rows``.

    Identifiers in ``intersection``, ``union`` and ``private_ids`` are your own objects
    where they came from your in-memory input; the peer's (psu) and a CSV file's are
    text (bytes when not UTF-8).
    """

    protocol: str
    #: "receiver" or "sender".
    role: str
    #: This party's distinct identifiers and the peer's set size.
    items: int
    peer_items: int
    #: |X ∩ Y| where this party is entitled to it.
    cardinality: Optional[int]
    #: psi-card-sum: the sender's values summed over the intersection.
    sum: Optional[int]
    #: Rows of this party's table (intersection, union, shares or private IDs).
    rows: Optional[int]
    #: Always None here (the CLI's --output-rows file); the rows are in the fields below.
    rows_file: Optional[str]
    group: str
    mqrpmt: str
    last_message: str
    #: "tcp+mtls", "tcp-plaintext", "exchange-dir" or "memory" (local runs).
    transport: str
    #: Bytes on the wire (TLS and framing included) this party sent / received.
    bytes_sent: int
    bytes_received: int
    #: CPU of the whole process (both parties' in a local run) and wall time.
    cpu_seconds: float
    wall_seconds: float
    #: Peak resident memory of the process.
    peak_rss_mib: float
    #: This party's CPU plus the bytes it sent, at ``prices``.
    cost_cents: float
    prices: Prices
    #: psi receiver: X ∩ Y.
    intersection: Optional[List[Any]]
    #: psu receiver: X ∪ Y.
    union: Optional[List[Any]]
    #: psi-share: this party's shares (receiver: intersection positions only).
    shares: Optional[List[Share]]
    #: private-id: the table, one row per union identifier in sorted order.
    private_ids: Optional[List[PrivateIdRow]]
    #: Column name for identifiers in :meth:`to_frame`.
    id_column: str = field(repr=False)
    _json: str = field(repr=False, compare=False)

    def to_frame(self) -> Any:
        """This party's rows as a pandas DataFrame, with the columns of the CLI's
        ``--output-rows`` file: the identifier column (psi, psu), ``index, share``
        (psi-share) or ``private_id, <identifier column>`` (private-id)."""
        pd = pandas()
        if self.intersection is not None or self.union is not None:
            items = self.intersection if self.intersection is not None else self.union
            return pd.DataFrame({self.id_column: items})
        if self.shares is not None:
            return pd.DataFrame(
                {"index": [s.index for s in self.shares], "share": [s.share for s in self.shares]}
            )
        if self.private_ids is not None:
            return pd.DataFrame(
                {
                    "private_id": [r.private_id for r in self.private_ids],
                    self.id_column: [r.item for r in self.private_ids],
                }
            )
        raise ValueError(f"{self.protocol} gives the {self.role} no rows")

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any], data: PartyInput) -> "SetOperationResult":
        text, rows = outcome
        d = json.loads(text)
        extra: Dict[str, Any] = dict(intersection=None, union=None, shares=None, private_ids=None)
        if rows is not None:
            kind, table = rows
            if kind == "items":
                items = [data.item(row, raw) for row, raw in table]
                extra["intersection" if d["protocol"] == "psi" else "union"] = items
            elif kind == "shares":
                extra["shares"] = [Share(index, share) for index, share in table]
            else:
                extra["private_ids"] = [
                    PrivateIdRow(pid, None if raw is None else data.item(row, raw))
                    for pid, row, raw in table
                ]
        return cls(
            **_metering(d),
            _json=text,
            protocol=d["protocol"],
            role=d["role"],
            items=d["items"],
            peer_items=d["peer_items"],
            cardinality=d.get("cardinality"),
            sum=d.get("sum"),
            rows=d.get("rows"),
            rows_file=d.get("rows_file"),
            group=d["group"],
            mqrpmt=d["mqrpmt"],
            last_message=d["last_message"],
            id_column=data.id_column,
            **extra,
        )


def _apsi_items(data: PartyInput, table: Optional[List[Tuple[Optional[int], bytes]]]) -> List[Any]:
    return [data.item(row, raw) for row, raw in table or []]


_R = TypeVar("_R")


def _from_report(cls: Type[_R], text: str, **extra: Any) -> _R:
    """A result of ``cls`` whose fields are the report's (RESULT.json) keys of the same
    names, the metering, and ``extra`` (what the report does not hold)."""
    d = json.loads(text)
    metering = _metering(d)
    fields = {f.name for f in dataclasses.fields(cls)} - set(extra) - set(metering) - {"_json"}  # type: ignore[arg-type]
    return cls(**{name: d[name] for name in fields}, **metering, **extra, _json=text)  # type: ignore[call-arg]


@dataclass(frozen=True)
class ApsiAuthorizeResult(_Report):
    """What the client of Authorize gets (docs/apsi.md): the judge's signatures on its
    items, reusable by every later :class:`~privset.ApsiClient` run."""

    protocol: str
    #: "apsi" or "partial-apsi".
    mode: str
    client_id: str
    #: Items signed.
    items: int
    #: The authorization; ``signatures.save(path)`` writes the CLI's signature file.
    signatures: Any
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any, Any, Any]) -> "ApsiAuthorizeResult":
        return _from_report(cls, outcome[0], signatures=outcome[1])


@dataclass(frozen=True)
class ApsiJudgeResult(_Report):
    """What the judge knows after one Authorize session: who asked, how many items,
    how many it saw in the clear, and its verdict."""

    protocol: str
    mode: str
    client_id: str
    #: Items the client asked to have signed.
    items: int
    #: Items the judge saw in the clear (all with APSI, the opened ones with Partial).
    shown: int
    accepted: bool
    #: The policy's reason for a rejection.
    reason: Optional[str]
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any, Any, Any]) -> "ApsiJudgeResult":
        return _from_report(cls, outcome[0])


@dataclass(frozen=True)
class ApsiResult(_Report):
    """What the client of Intersect learns: the authorized items it used that the
    server holds, and the server's set size. RESULT.json's fields of ``privset apsi
    intersect``, then the rows of its ``--output-rows`` file."""

    protocol: str
    mode: str
    client_id: str
    #: Authorized items used.
    items_used: int
    #: Items of the input without a signature (left out; listed in ``unauthorized``).
    unauthorized_items: int
    #: |Y|.
    server_items: int
    cardinality: int
    rows: Optional[int]
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    #: The authorized items used that the server holds (your own objects where they
    #: came from in-memory input).
    intersection: List[Any]
    #: Items of the input the signatures do not cover.
    unauthorized: List[Any]
    id_column: str = field(repr=False)
    _json: str = field(repr=False, compare=False)

    def to_frame(self) -> Any:
        """The intersection as a pandas DataFrame (the CLI's ``--output-rows`` file)."""
        return pandas().DataFrame({self.id_column: self.intersection})

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any, Any, Any], data: PartyInput) -> "ApsiResult":
        text, _, found, unauthorized = outcome
        return _from_report(
            cls,
            text,
            intersection=_apsi_items(data, found),
            unauthorized=_apsi_items(data, unauthorized),
            id_column=data.id_column,
        )


@dataclass(frozen=True)
class ApsiServerResult(_Report):
    """What the server of Intersect knows after a run: the client's ID (and nothing
    about its items)."""

    protocol: str
    mode: str
    client_id: str
    #: The server's own items.
    items: int
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any, Any, Any]) -> "ApsiServerResult":
        return _from_report(cls, outcome[0])


@dataclass(frozen=True)
class MpsiResult(_Report):
    """What one participant of a multi-party PSI learns (docs/mpsi.md), with
    RESULT.json's fields in its order, then the intersection the CLI writes with
    ``--output-rows``.

    The server (Bay et al., Hazay-Venkitasubramaniam) and every Miyaji-Nishida party
    learn the intersection; clients and the dealer learn nothing (``intersection`` and
    ``intersection_size`` are None).
    """

    protocol: str
    #: "bay", "miyaji-nishida" or "hazay".
    mpsi_protocol: str
    #: The threshold scheme: "elgamal" or "paillier".
    scheme: str
    #: "server", "client", "dealer" or "party".
    role: str
    #: This participant's name in the session.
    name: str
    #: How many participants the session had.
    participants: int
    #: This participant's distinct identifiers (0 for the dealer).
    items: int
    #: |intersection| for the participants that learn it.
    intersection_size: Optional[int]
    #: Rows of ``intersection`` (None for the participants that learn none).
    rows: Optional[int]
    #: Always None here (the CLI's --output-rows file); the rows are in ``intersection``.
    rows_file: Optional[str]
    #: "tcp+mtls", "tcp-plaintext", "exchange-dir" or "memory" (local runs).
    transport: str
    #: Bytes on the wire (TLS and framing included) over every link of this participant.
    bytes_sent: int
    bytes_received: int
    #: CPU of the whole process (every participant's in a local run) and wall time.
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    #: This participant's items that every set holder holds, in input order: your own
    #: objects where they came from your in-memory input.
    intersection: Optional[List[Any]]
    #: Column name for identifiers in :meth:`to_frame`.
    id_column: str = field(repr=False)
    _json: str = field(repr=False, compare=False)

    def to_frame(self) -> Any:
        """The intersection as a pandas DataFrame with the column of the CLI's
        ``--output-rows`` file."""
        if self.intersection is None:
            raise ValueError(f"the {self.role} of {self.mpsi_protocol} learns no intersection")
        return pandas().DataFrame({self.id_column: self.intersection})

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any], data: Optional[PartyInput]) -> "MpsiResult":
        text, table = outcome
        intersection = None
        if table is not None:
            intersection = [data.item(row, raw) if data is not None else raw for row, raw in table]
        return _from_report(
            cls,
            text,
            intersection=intersection,
            id_column=data.id_column if data is not None else "id",
        )


def _label_cell(raw: bytes) -> Any:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


@dataclass(frozen=True)
class UpsiMatch:
    """One of the client's items the server holds, with its label."""

    #: Your own object where it came from your in-memory input, else its text.
    item: Any
    #: The label's cells (str, or bytes when not UTF-8), as the CLI's rows file holds
    #: them in ``label_1``, ``label_2``, ...; None from an unlabeled database.
    label: Optional[Tuple[Any, ...]]


def _upsi_report(cls: Type[_R], text: str, **extra: Any) -> _R:
    """A result whose fields are the report's keys, its ``run`` object's metering
    (unbalanced PSI's RESULT.json nests it) and ``extra``."""
    d = json.loads(text)
    metering = _metering(d["run"])
    fields = {f.name for f in dataclasses.fields(cls)} - set(extra) - set(metering) - {"_json"}  # type: ignore[arg-type]
    return cls(**{name: d[name] for name in fields}, **metering, **extra, _json=text)  # type: ignore[call-arg]


@dataclass(frozen=True)
class UpsiResult(_Report):
    """What the client of unbalanced labeled PSI (Cong et al. 2021) learns: which of
    its items the server holds, and their labels. RESULT.json's fields of ``privset
    upsi query`` (its ``matches`` count is ``len(matches)`` here), then the rows of its
    ``--output-rows`` file."""

    protocol: str
    #: The server's parameter preset.
    preset: str
    #: Distinct items queried.
    items: int
    #: Bytes of every label (0: an unlabeled database).
    label_bytes: int
    #: Bin bundles per bundle index: what the client learns of the server's set size.
    bundle_counts: List[int]
    #: log2 of the probability that some item matched falsely.
    false_positive_log2: float
    rows: Optional[int]
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    #: The matched items with their labels, in input order.
    matches: List[UpsiMatch]
    id_column: str = field(repr=False)
    _json: str = field(repr=False, compare=False)

    def to_frame(self) -> Any:
        """The matches as a pandas DataFrame with the columns of the CLI's
        ``--output-rows`` file: the identifier, then ``label_1``, ``label_2``, ..."""
        width = max((len(m.label) for m in self.matches if m.label is not None), default=0)
        columns: Dict[str, List[Any]] = {self.id_column: [m.item for m in self.matches]}
        for i in range(width):
            columns[f"label_{i + 1}"] = [
                m.label[i] if m.label is not None and i < len(m.label) else "" for m in self.matches
            ]
        return pandas().DataFrame(columns)

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any], data: PartyInput) -> "UpsiResult":
        text, table = outcome
        matches = [
            UpsiMatch(data.item(row, raw), None if cells is None else tuple(_label_cell(c) for c in cells))
            for row, raw, cells in table
        ]
        return _upsi_report(cls, text, matches=matches, id_column=data.id_column)


@dataclass(frozen=True)
class UpsiServerResult(_Report):
    """What the server of unbalanced PSI knows after one session: how many items the
    client queried (nothing about them)."""

    protocol: str
    preset: str
    #: The database's items when the session started.
    items: int
    client_items: int
    transport: str
    bytes_sent: int
    bytes_received: int
    cpu_seconds: float
    wall_seconds: float
    peak_rss_mib: float
    cost_cents: float
    prices: Prices
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from_native(cls, outcome: Tuple[str, Any]) -> "UpsiServerResult":
        return _upsi_report(cls, outcome[0])
