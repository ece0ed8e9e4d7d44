"""PI-Sum: Private Intersection-Sum with Cardinality (Ion et al. 2020, the DDH protocol Google
deployed for ad-conversion measurement). See docs/pi-sum.md for the protocol, its
variants and what each party learns.

* :class:`PiSumP1` (``PiSum.p1``) holds identifiers V (e.g. users who saw an ad);
* :class:`PiSumP2` (``PiSum.p2``) holds identifiers W with values (e.g. purchases);
* both learn |V ∩ W|; P2 learns the sum of its values over the intersection (P1 with
  ``reverse=True``).

Settings both parties must agree on (else the run stops at the hello with
:class:`~privset.PeerMisbehaved`): ``protocol``, ``group``, ``values_he``,
``he_modulus_bits``, ``dj_s``, ``z_encoding``, ``reverse``. Defaults are the CLI's: the
deployed DDH protocol (Fig. 2) on ristretto255 (``group="x25519"`` is the fast mode),
Paillier with a 3072-bit modulus and s = 2, Z as a Golomb-compressed set.
``protocol="bloom"`` runs the encrypted-Bloom-filter protocol (Fig. 4) instead: no
reverse variant, no segments (docs/pi-sum.md compares the protocols).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

from . import _native
from ._data import IdColumns, Normalize, Values, party_input
from ._party import Party
from ._results import PiSumResult

#: Largest value accepted by default (the CLI's --value-bound): 2^32 - 1.
DEFAULT_VALUE_BOUND = 2**32 - 1
#: Largest peer set accepted by default (the CLI's --max-peer-items): 2^26.
DEFAULT_MAX_PEER_ITEMS = 2**26


class _PiSumParty(Party[PiSumResult]):
    def _result(self, outcome: Any) -> PiSumResult:
        return PiSumResult._from_json(outcome)


class PiSumP1(_PiSumParty):
    """P1 of PI-Sum: holds identifiers only; learns the cardinality (and, with
    ``reverse=True``, the sums).

    ``ids``: an iterable of identifiers (str, bytes or int), a pandas Series, a
    DataFrame with ``id_column=``, a pyarrow Table / RecordBatch or polars DataFrame
    (read through the Arrow C stream interface, no copy through CSV), or a
    ``pathlib.Path`` to a file with a header row: CSV, gzip / zstd CSV, Parquet or Arrow
    IPC (``id_column=`` names the column). Identifiers are compared as bytes (str as UTF-8,
    int in decimal) after trimming surrounding whitespace, exactly as the CLI reads
    them, so a Python party and a CLI party agree.

    ``segments`` (or ``segment_column=`` of a DataFrame / CSV file): a label per
    identifier; the run then gives one cardinality (and sum for P2) per segment.
    ``threshold``: abort without computing any sum if the intersection is smaller (the
    party computing the intersection applies it: P1, or P2 with ``reverse``).
    ``duplicates``: "error" (default), "sum" or "first".

    ``id_column`` may list several columns (of a DataFrame, Arrow table or file) that
    together make the identifier. ``normalize``: "trim" (default), "none", "lower",
    "email" or "phone-e164" (with ``phone_region=``, e.g. "GB" or "44"), one for all
    identifier columns or a list with one per column; ``hash_ids="sha256"`` hashes each
    identifier before use. Both parties must choose the same (docs/inputs.md).
    """

    def __init__(
        self,
        ids: Any,
        *,
        id_column: IdColumns = None,
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
        duplicates: str = "error",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
        max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
    ) -> None:
        self._input = party_input(
            ids,
            id_column=id_column,
            segments=segments,
            segment_column=segment_column,
            duplicates=duplicates,
            value_bound=DEFAULT_VALUE_BOUND,
            normalize=normalize,
            phone_region=phone_region,
            hash_ids=hash_ids,
        )
        self._native = _native.PiSumParty(
            "p1",
            self._input.native,
            protocol=protocol,
            group=group,
            values_he=values_he,
            he_modulus_bits=he_modulus_bits,
            dj_s=dj_s,
            z_encoding=z_encoding,
            reverse=reverse,
            threshold=threshold,
            sum_of_squares=False,
            value_bound=DEFAULT_VALUE_BOUND,
            sum_bound=None,
            max_peer_items=max_peer_items,
        )


class PiSumP2(_PiSumParty):
    """P2 of PI-Sum: holds identifiers with one or more value columns; learns the
    cardinality and the sum of each column over the intersection (only the
    cardinality with ``reverse=True``).

    ``ids`` as for :class:`PiSumP1`. ``values``: one iterable of non-negative integers
    (a column named "value"), a mapping of column name to iterable, a pandas Series, or
    a DataFrame (all its columns); with a DataFrame or CSV file as ``ids``, name the
    columns with ``value_columns=`` instead. Values must be integers in
    [0, ``value_bound``]: 1.5, -3 or "x" is an :class:`~privset.InputError` naming the
    line. ``sum_of_squares=True`` adds each column's sum of squares and variance.
    ``sum_bound``: public bound on each column's total (default value_bound × items;
    smaller packs more values per ciphertext).
    """

    def __init__(
        self,
        ids: Any,
        values: Optional[Values] = None,
        *,
        id_column: IdColumns = None,
        value_columns: Union[None, str, Sequence[str]] = None,
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
    ) -> None:
        self._input = party_input(
            ids,
            id_column=id_column,
            values=values,
            value_columns=value_columns,
            duplicates=duplicates,
            value_bound=value_bound,
            normalize=normalize,
            phone_region=phone_region,
            hash_ids=hash_ids,
        )
        self._native = _native.PiSumParty(
            "p2",
            self._input.native,
            protocol=protocol,
            group=group,
            values_he=values_he,
            he_modulus_bits=he_modulus_bits,
            dj_s=dj_s,
            z_encoding=z_encoding,
            reverse=reverse,
            threshold=threshold,
            sum_of_squares=sum_of_squares,
            value_bound=value_bound,
            sum_bound=sum_bound,
            max_peer_items=max_peer_items,
        )


class PiSum:
    """PI-Sum's two roles: ``PiSum.p1(ids)`` and ``PiSum.p2(ids, values)``."""

    p1 = PiSumP1
    p2 = PiSumP2
