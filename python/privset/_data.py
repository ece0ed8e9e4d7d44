"""A party's input from whatever the caller has: an iterable of identifiers, pandas
objects, or a CSV file (``pathlib.Path``), turned into the native, validated ``Input``.

Only the shape is handled here (which column is which, lists out of Series); every
check on the content — identifiers, values, duplicates, bounds, line numbers — is the
CLI's, in Rust.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

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
    #: Name of the identifier column (for data frames of results).
    id_column: str


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


def party_input(
    data: Any,
    *,
    id_column: Optional[str],
    values: Optional[Values] = None,
    value_columns: Union[None, str, Sequence[str]] = None,
    segments: Optional[Iterable[Any]] = None,
    segment_column: Optional[str] = None,
    duplicates: str,
    value_bound: int,
) -> PartyInput:
    """Builds a party's native input from ``data`` (see the party classes' docs)."""
    names = _names(value_columns)
    if isinstance(data, os.PathLike):
        if id_column is None:
            raise ConfigurationError("a CSV file needs id_column= (the identifiers' column)")
        if values is not None or segments is not None:
            raise ConfigurationError(
                "with a CSV file, name its columns: value_columns= / segment_column=, not values= / segments="
            )
        native = _native.Input.from_csv(
            os.fspath(data), id_column, names, segment_column, duplicates, value_bound
        )
        return PartyInput(native, None, id_column)
    if is_frame(data):
        if id_column is None:
            raise ConfigurationError("a DataFrame needs id_column= (the identifiers' column)")
        if values is not None or segments is not None:
            raise ConfigurationError(
                "with a DataFrame, name its columns: value_columns= / segment_column=, not values= / segments="
            )
        missing = [c for c in [id_column, *names, *_names(segment_column)] if c not in data.columns]
        if missing:
            raise ConfigurationError(
                f"no column named {missing[0]!r} (columns: {', '.join(map(str, data.columns))})"
            )
        ids = data[id_column].tolist()
        columns = [(c, data[c].tolist()) for c in names]
        labels = data[segment_column].tolist() if segment_column is not None else None
        name = id_column
    else:
        if names or segment_column is not None:
            raise ConfigurationError(
                "value_columns= / segment_column= name columns of a DataFrame or CSV file; "
                "with other data pass values= / segments="
            )
        ids = _listed(data, "identifiers")
        columns = _columns(values)
        labels = _listed(segments, "segments") if segments is not None else None
        series_name = data.name if is_series(data) else None
        name = id_column or (str(series_name) if series_name is not None else "id")
    native = _native.Input.from_rows(ids, columns, labels, duplicates, value_bound)
    return PartyInput(native, ids, name)


def item(originals: Optional[List[Any]], row: Optional[int], raw: bytes) -> Any:
    """An identifier in a result: the caller's own object where it came from the
    caller's in-memory input, else the text (bytes when it is not UTF-8)."""
    if originals is not None and row is not None:
        return originals[row]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
