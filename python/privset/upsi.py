"""Unbalanced labeled PSI (Cong et al. 2021): a server holding a large database of
items, each with an optional label, and clients with small sets. A client learns
which of its items the server holds and their labels; the server learns how many items
the client asked about. See docs/upsi.md for the protocol, presets and threat model.

* :class:`UpsiDatabase`: the server's database (the CLI's database file; either side
  reads the other's): ``UpsiDatabase.build(items, labels)``, ``.load(path)``,
  ``.save(path)``, ``.insert()``, ``.remove()``, ``.rotate_key()``, ``.set_preset()``.
* :class:`UpsiClient` (``Upsi.client(items)``): ``.run(peer=..., tls=...)``.
* :class:`UpsiServer` (``Upsi.server(db or path)``): ``.serve(listen=..., tls=...)``
  for many clients at once (a database file is reloaded when it changes, as ``privset
  upsi serve`` does), or ``.run(listen=...)`` for one.

Both parties in one process: :func:`privset.local.upsi`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _native
from ._data import IdColumns, Normalize, _listed, _names, _normalizations, is_arrow, party_input
from ._link import TlsFiles
from ._pandas import is_frame, is_series
from ._party import Party
from ._results import UpsiResult, UpsiServerResult
from .apsi import _SERVE_DOC, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONCURRENT, DEFAULT_SERVE_TIMEOUT, _serve
from .errors import ConfigurationError
from .pi_sum import DEFAULT_VALUE_BOUND

#: Most items a client queries with, unless told otherwise (chooses the preset; the
#: CLI's ``--client-items``).
DEFAULT_CLIENT_ITEMS = 1024
#: Seconds between looks at a served database file for changes (the CLI's
#: ``--reload-interval``).
DEFAULT_RELOAD_INTERVAL = 2.0
#: MiB of polynomials a served database holds ready for queries (``privset upsi serve
#: --cache-mb``): a labeled 2^20-item database whole.
DEFAULT_CACHE_MB = 4096

PathOr = Union[str, "os.PathLike[str]"]

#: ``labels=``: one label per item, each a str / bytes (one cell), or a tuple of
#: cells (as several label columns make).
Labels = Optional[Sequence[Any]]


def _cells(label: Any) -> List[Any]:
    """A label's cells: a tuple or list is several, anything else one."""
    return list(label) if isinstance(label, (tuple, list)) else [label]


def _arrow_columns(data: Any, names: List[str]) -> Dict[str, List[Any]]:
    """The named columns of an Arrow table or polars frame, as lists."""
    if type(data).__module__.split(".")[0] == "polars":
        return {c: data[c].to_list() for c in names}
    import pyarrow

    table = pyarrow.table(data)
    return {c: table.column(c).to_pylist() for c in names}


def _rows(
    items: Any,
    labels: Labels,
    *,
    id_column: IdColumns,
    label_columns: Union[None, str, Sequence[str]],
    normalize: Normalize,
    phone_region: Optional[str],
    hash_ids: Optional[str],
) -> Any:
    """The native rows (identifiers made by the CLI's keys, labels encoded as the CLI
    encodes them) of ``items`` with ``labels`` or the ``label_columns`` of a frame,
    table or file."""
    id_columns = _names(id_column)
    label_names = _names(label_columns)
    keys = (_normalizations(normalize), phone_region, hash_ids)
    tabular = isinstance(items, os.PathLike) or is_frame(items) or is_arrow(items)
    if tabular:
        if not id_columns:
            raise ConfigurationError("a DataFrame, Arrow table or file needs id_column= (the identifiers' column)")
        if labels is not None:
            raise ConfigurationError("with a DataFrame, Arrow table or file, name the labels' columns: label_columns=")
        if isinstance(items, os.PathLike):
            return _native.UpsiRows.from_file(os.fspath(items), id_columns, label_names, *keys)
        wanted = [*id_columns, *label_names]
        if is_frame(items):
            missing = [c for c in wanted if c not in items.columns]
            if missing:
                raise ConfigurationError(
                    f"no column named {missing[0]!r} (columns: {', '.join(map(str, items.columns))})"
                )
            columns = {c: items[c].tolist() for c in wanted}
        else:
            columns = _arrow_columns(items, wanted)
        ids = [(c, columns[c]) for c in id_columns]
        rows = [list(cells) for cells in zip(*(columns[c] for c in label_names))] if label_names else None
        return _native.UpsiRows.from_rows(ids, rows, *keys)
    if label_names:
        raise ConfigurationError("label_columns= name columns of a DataFrame or file; with other data pass labels=")
    if len(id_columns) > 1:
        raise ConfigurationError("several id columns name columns of a DataFrame, Arrow table or file")
    listed = _listed(items, "items")
    name = id_columns[0] if id_columns else str(items.name) if is_series(items) and items.name is not None else "id"
    cells = None if labels is None else [_cells(label) for label in _listed(labels, "labels")]
    return _native.UpsiRows.from_rows([(name, listed)], cells, *keys)


class UpsiDatabase:
    """The server's database: every item hashed under the server's OPRF key, its
    label encrypted, the bins' polynomials computed (every core, the GIL released).
    The file format is the CLI's, so ``privset upsi db`` and this class read and write
    the same files.

    A server made from a database (``Upsi.server(db)``) serves it as it is when each
    session starts: ``insert``/``remove``/``rotate_key`` reach the sessions that start
    after them, never one in flight.
    """

    def __init__(self, native: Any) -> None:
        self._native = native

    @classmethod
    def build(
        cls,
        items: Any,
        labels: Labels = None,
        *,
        preset: Optional[str] = None,
        client_items: int = DEFAULT_CLIENT_ITEMS,
        label_bytes: Optional[int] = None,
        cache_mb: int = DEFAULT_CACHE_MB,
        oprf: str = "x25519",
        id_column: IdColumns = None,
        label_columns: Union[None, str, Sequence[str]] = None,
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> "UpsiDatabase":
        """A new database, as ``privset upsi db build``.

        ``items``: an iterable of identifiers (str, bytes or int), a pandas Series, a
        DataFrame / pyarrow or polars table with ``id_column=``, or a ``pathlib.Path``
        to a file (CSV, compressed CSV, Parquet, Arrow). ``labels``: one per item (str
        or bytes, or a tuple of cells), or ``label_columns=`` naming a frame's or
        file's columns; none: an unlabeled database. A label of one cell is stored as
        it is (a 1-byte score fits in 1 byte), several cells each after its length (2
        bytes); padded to ``label_bytes`` (1 to 1,024; default: the longest; leave room
        for labels inserted later).

        ``preset``: a preset's name (docs/upsi.md); default: chosen from the number of
        items and ``client_items``, the most items a client will query with.
        ``normalize``, ``phone_region``, ``hash_ids``: as for every input
        (docs/inputs.md); clients must make their identifiers the same way. The
        database records them (``info()["key_settings"]``) and its server states them
        in every session: a client making its identifiers otherwise is refused at the
        hello (:class:`privset.PeerMisbehaved`), naming the setting.
        ``cache_mb``: MiB of polynomials held ready for queries, as ``privset upsi
        serve --cache-mb`` (docs/upsi.md, "Memory"). ``oprf``: the OPRF's group,
        ``"x25519"`` (default) or ``"ristretto255"``, as ``--oprf``.
        """
        rows = _rows(
            items, labels, id_column=id_column, label_columns=label_columns,
            normalize=normalize, phone_region=phone_region, hash_ids=hash_ids,
        )  # fmt: skip
        native = _native.UpsiDatabase.build(rows, preset, client_items, label_bytes, cache_mb, oprf)
        return cls(native)

    @classmethod
    def load(cls, path: PathOr, *, cache_mb: int = DEFAULT_CACHE_MB) -> "UpsiDatabase":
        """Reads a database file (written by :meth:`save` or ``privset upsi db
        build``); ``cache_mb`` as for :meth:`build`. A file written before privset
        recorded the key settings raises :class:`privset.ConfigurationError`: build
        it again from its rows."""
        return cls(_native.UpsiDatabase.load(os.fspath(path), cache_mb))

    def save(self, path: PathOr) -> None:
        """Writes the database file atomically, readable by its owner only (mode
        0600: it holds the OPRF key)."""
        self._native.save(os.fspath(path))

    def insert(
        self,
        items: Any,
        labels: Labels = None,
        *,
        id_column: IdColumns = None,
        label_columns: Union[None, str, Sequence[str]] = None,
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> None:
        """Inserts items (or replaces their labels) without a rebuild, as ``privset
        upsi db add``. Arguments as for :meth:`build`; a labeled database needs a label
        per item, no longer than :attr:`label_bytes`. ``id_column`` count,
        ``normalize``, ``phone_region`` and ``hash_ids`` must make the identifiers as
        the database was built, or :class:`privset.ConfigurationError` names the
        setting."""
        rows = _rows(
            items, labels, id_column=id_column, label_columns=label_columns,
            normalize=normalize, phone_region=phone_region, hash_ids=hash_ids,
        )  # fmt: skip
        self._native.insert(rows)

    def remove(
        self,
        items: Any,
        *,
        id_column: IdColumns = None,
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> int:
        """Removes items without a rebuild, as ``privset upsi db remove``; returns how
        many were present. The key arguments must be the build's, as for
        :meth:`insert`."""
        rows = _rows(
            items, None, id_column=id_column, label_columns=None,
            normalize=normalize, phone_region=phone_region, hash_ids=hash_ids,
        )  # fmt: skip
        return int(self._native.remove(rows))

    def rotate_key(self, oprf: Optional[str] = None) -> None:
        """Replaces the OPRF key (every item hashed again, every label re-encrypted),
        as ``privset upsi db rotate-key``: what clients learned before says nothing
        about the new hashes. ``oprf``: the new key's group (default: the database's
        own; ``"x25519"`` moves a database built on ``"ristretto255"``)."""
        self._native.rotate_key(oprf)

    def set_preset(self, name: str) -> None:
        """Moves the database to the built-in preset ``name`` without a rebuild, as
        ``privset upsi db set-preset``: the presets must lay out the data alike (ring,
        plaintext prime, slots per item, table, bin size); for databases built before a
        release changed a preset's moduli or levels."""
        self._native.set_preset(name)

    def __len__(self) -> int:
        return len(self._native)

    @property
    def preset(self) -> str:
        """The parameter preset's name."""
        return str(self._native.preset)

    @property
    def oprf(self) -> str:
        """The OPRF's group: ``"x25519"`` or ``"ristretto255"``."""
        return str(self._native.oprf)

    @property
    def label_bytes(self) -> int:
        """Bytes of every label (0: unlabeled)."""
        return int(self._native.label_bytes)

    @property
    def bundle_counts(self) -> List[int]:
        """Bin bundles per bundle index (what a client learns of the set's size)."""
        return list(self._native.bundle_counts)

    def info(self) -> Dict[str, Any]:
        """What ``privset upsi db info`` prints: items, preset, label_bytes,
        bundle_counts, max_client_items, false_positive_log2 and the preset's
        encryption parameters."""
        out: Dict[str, Any] = json.loads(self._native.info())
        return out

    def __repr__(self) -> str:
        return f"UpsiDatabase(items={len(self)}, preset={self.preset!r}, label_bytes={self.label_bytes})"


class UpsiClient(Party[UpsiResult]):
    """The client: asks which of ``items`` the server holds, and their labels
    (``result.matches``). ``items``: as for every party (an iterable, Series,
    DataFrame / table with ``id_column=``, or a ``pathlib.Path``); repeated items are
    asked about once. At most the server preset's ``max_client_items`` (1,024 for the
    default presets); split a larger set.
    """

    def __init__(
        self,
        items: Any,
        *,
        id_column: IdColumns = None,
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> None:
        self._input = party_input(
            items, id_column=id_column, duplicates="first", value_bound=DEFAULT_VALUE_BOUND,
            normalize=normalize, phone_region=phone_region, hash_ids=hash_ids,
        )  # fmt: skip
        self._native = _native.UpsiParty.client(self._input.native)

    def _result(self, outcome: Any) -> UpsiResult:
        return UpsiResult._from_native(outcome, self._input)


class UpsiServer(Party[UpsiServerResult]):
    """The server of a :class:`UpsiDatabase`, or of a database file: the file is
    looked at every ``reload_interval`` seconds and reloaded when it changes (sessions
    in flight keep the database they started with), as ``privset upsi serve``;
    ``cache_mb`` is the file's as :meth:`UpsiDatabase.load`'s."""

    def __init__(
        self,
        database: Union[UpsiDatabase, PathOr],
        *,
        reload_interval: float = DEFAULT_RELOAD_INTERVAL,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> None:
        if isinstance(database, UpsiDatabase):
            self._database: Optional[UpsiDatabase] = database
            self._native = _native.UpsiParty.server(database._native)
        elif isinstance(database, (str, os.PathLike)):
            self._database = None
            self._native = _native.UpsiParty.server_of_file(os.fspath(database), float(reload_interval), cache_mb)
        else:
            raise ConfigurationError(
                f"database must be an UpsiDatabase or the path of a database file, not {type(database).__name__}"
            )

    def __len__(self) -> int:
        """The database's items (of the file as last loaded: use the database itself)."""
        if self._database is None:
            raise TypeError("a server of a database file has no fixed size")
        return len(self._database)

    def _result(self, outcome: Any) -> UpsiServerResult:
        return UpsiServerResult._from_native(outcome)

    def serve(
        self,
        *,
        listen: str,
        tls: Optional[TlsFiles] = None,
        insecure_no_tls: bool = False,
        max_sessions: Optional[int] = None,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
        timeout: float = DEFAULT_SERVE_TIMEOUT,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        allow_clients: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> List[Dict[str, Any]]:
        return _serve(
            self._native,
            listen,
            tls,
            insecure_no_tls,
            max_sessions,
            max_concurrent,
            timeout,
            handshake_timeout,
            allow_clients,
        )

    serve.__doc__ = _SERVE_DOC.format(cmd="upsi", what="database")


class Upsi:
    """The parties of unbalanced labeled PSI by role: ``Upsi.client(items)``,
    ``Upsi.server(db or path)``."""

    client = UpsiClient
    server = UpsiServer
