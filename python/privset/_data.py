"""A party's input from whatever the caller has: an iterable of identifiers, pandas
objects, an Arrow table (pyarrow ``Table`` / ``RecordBatch`` / ``RecordBatchReader``,
a polars ``DataFrame``: anything with ``__arrow_c_stream__``, read batch by batch in
Rust without a copy through CSV), or a file (``pathlib.Path``: CSV, gzip / zstd CSV,
Parquet, Arrow IPC), turned into the native, validated ``Input``.

Only the shape is handled here (which column is which, lists out of Series); every
check on the content — identifiers, values, duplicates, bounds, line numbers — is the
CLI's, in Rust.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._pandas import is_frame, is_series
from .errors import ConfigurationError

#: One value column: a name and its cells.
Column = Tuple[str, List[Any]]

#: What the ``values`` argument may be: one iterable (a column named "value"), a
#: mapping of column name to iterable, a pandas Series (named after it) or DataFrame
#: (all its columns).
Values = Union[Iterable[Any], Mapping[str, Iterable[Any]]]


@dataclass(frozen=True)
class PartyInput:
    """The native input and what results need to give the caller's objects back."""

    native: Any
    #: The caller's identifiers, row by row (None for a CSV file: results carry text).
    originals: Optional[List[Any]]
    #: Name of the identifier column (for data frames of results; several joined by ",").
    id_column: str
    #: How many columns make an identifier (results give several as a tuple).
    key_columns: int = field(default=1)
    #: Identifiers are hashed (results carry the hex digest when not the caller's own).
    hashed: bool = field(default=False)

    def item(self, row: Optional[int], raw: bytes) -> Any:
        """An identifier in a result: the caller's own object where it came from the
        caller's in-memory input, else its text (bytes when not UTF-8), a tuple of them
        for a key of several columns."""
        if self.originals is not None and row is not None:
            return self.originals[row]
        if self.key_columns > 1 and not self.hashed:
            cells = _split_key(raw, self.key_columns)
            if cells is not None:
                return tuple(_text(c) for c in cells)
        return _text(raw)


def _text(raw: bytes) -> Any:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _split_key(raw: bytes, n: int) -> Optional[List[bytes]]:
    """The cells of a key of ``n`` columns (each a 4-byte big-endian length, then bytes)."""
    cells = []
    at = 0
    for _ in range(n):
        if at + 4 > len(raw):
            return None
        (length,) = struct.unpack_from(">I", raw, at)
        at += 4
        if at + length > len(raw):
            return None
        cells.append(raw[at : at + length])
        at += length
    return cells if at == len(raw) else None


def is_arrow(obj: Any) -> bool:
    """True for anything exporting the Arrow C stream interface, or a polars frame;
    pandas objects (which may export it too) keep their own path."""
    if is_frame(obj) or is_series(obj):
        return False
    return hasattr(type(obj), "__arrow_c_stream__") or _is_polars_frame(obj)


def _is_polars_frame(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "polars" and hasattr(obj, "to_arrow")


def _arrow_stream(obj: Any) -> Any:
    """``obj`` or, for a polars frame without the interface, its pyarrow table."""
    if hasattr(type(obj), "__arrow_c_stream__"):
        return obj
    return obj.to_arrow()


def _listed(obj: Any, what: str) -> List[Any]:
    if isinstance(obj, (str, bytes)):
        raise ConfigurationError(
            f"{what} must be a collection (list, Series, ...), not a single {type(obj).__name__}; "
            "pass a pathlib.Path to read a CSV file"
        )
    if is_series(obj):
        return obj.tolist()
    try:
        return list(obj)
    except TypeError:
        raise ConfigurationError(f"{what} must be iterable, not {type(obj).__name__}") from None


def _columns(values: Any) -> List[Column]:
    """The value columns of ``values`` (see :data:`Values`)."""
    if values is None:
        return []
    if is_series(values):
        name = values.name if values.name is not None else "value"
        return [(str(name), values.tolist())]
    if is_frame(values):
        return [(str(c), values[c].tolist()) for c in values.columns]
    if isinstance(values, Mapping):
        return [(str(name), _listed(col, f"value column {name!r}")) for name, col in values.items()]
    return [("value", _listed(values, "values"))]


def _names(columns: Union[None, str, Sequence[str]]) -> List[str]:
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    return [str(c) for c in columns]


#: ``id_column=``: one column name, or several (a list) making one key.
IdColumns = Union[None, str, Sequence[str]]

#: ``normalize=``: one normalisation for every identifier column, or one per column
#: ("none", "trim", "lower", "email", "phone-e164"; see docs/inputs.md).
Normalize = Union[str, Sequence[str]]


def _normalizations(normalize: Normalize) -> List[str]:
    if isinstance(normalize, str):
        return [n.strip() for n in normalize.split(",")]
    return [str(n) for n in normalize]


def party_input(
    data: Any,
    *,
    id_column: IdColumns,
    values: Optional[Values] = None,
    value_columns: Union[None, str, Sequence[str]] = None,
    segments: Optional[Iterable[Any]] = None,
    segment_column: Optional[str] = None,
    duplicates: str,
    value_bound: int,
    normalize: Normalize = "trim",
    phone_region: Optional[str] = None,
    hash_ids: Optional[str] = None,
) -> PartyInput:
    """Builds a party's native input from ``data`` (see the party classes' docs)."""
    names = _names(value_columns)
    id_columns = _names(id_column)
    how = _normalizations(normalize)
    keyed: Dict[str, Any] = dict(key_columns=max(len(id_columns), 1), hashed=hash_ids is not None)
    joined = ",".join(id_columns)
    kind = (
        "file" if isinstance(data, os.PathLike)
        else "DataFrame" if is_frame(data)
        else "Arrow table" if is_arrow(data)
        else None
    )  # fmt: skip
    if kind is not None:
        if not id_columns:
            raise ConfigurationError(f"a {kind} needs id_column= (the identifiers' column or columns)")
        if values is not None or segments is not None:
            raise ConfigurationError(
                f"with a {kind}, name its columns: value_columns= / segment_column=, not values= / segments="
            )
    if isinstance(data, os.PathLike):
        native = _native.Input.from_file(
            os.fspath(data), id_columns, names, segment_column, duplicates, value_bound,
            how, phone_region, hash_ids,
        )  # fmt: skip
        return PartyInput(native, None, joined, **keyed)
    if is_frame(data):
        missing = [c for c in [*id_columns, *names, *_names(segment_column)] if c not in data.columns]
        if missing:
            raise ConfigurationError(
                f"no column named {missing[0]!r} (columns: {', '.join(map(str, data.columns))})"
            )
        id_lists = [(c, data[c].tolist()) for c in id_columns]
        ids: List[Any] = (
            id_lists[0][1] if len(id_lists) == 1 else list(zip(*(cells for _, cells in id_lists)))
        )
        columns = [(c, data[c].tolist()) for c in names]
        labels = data[segment_column].tolist() if segment_column is not None else None
        name = joined
    elif is_arrow(data):
        native = _native.Input.from_arrow(
            _arrow_stream(data), type(data).__name__, id_columns, names, segment_column, duplicates,
            value_bound, how, phone_region, hash_ids,
        )  # fmt: skip
        return PartyInput(native, None, joined, **keyed)
    else:
        if len(id_columns) > 1:
            raise ConfigurationError(
                "several id columns name columns of a DataFrame, Arrow table or file; "
                "with other data pass one identifier per row"
            )
        if names or segment_column is not None:
            raise ConfigurationError(
                "value_columns= / segment_column= name columns of a DataFrame or CSV file; "
                "with other data pass values= / segments="
            )
        ids = _listed(data, "identifiers")
        columns = _columns(values)
        labels = _listed(segments, "segments") if segments is not None else None
        series_name = data.name if is_series(data) else None
        name = joined or (str(series_name) if series_name is not None else "id")
        id_lists = [(name, ids)]
    native = _native.Input.from_rows(
        id_lists, columns, labels, duplicates, value_bound, how, phone_region, hash_ids
    )
    return PartyInput(native, ids, name, **keyed)
