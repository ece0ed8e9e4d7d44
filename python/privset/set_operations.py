"""The set operations of Chen et al. 2024 (mqRPMT): PSI, PSI-cardinality, PSI-card-sum, PSU,
secret-shared intersection and private-ID. See docs/pso/ for each operation's messages
and what each party learns.

The **receiver** holds Y and gets the output; the **sender** holds X (and, for
psi-card-sum, a value per item). Either may listen or connect. Settings both must agree
on: ``mqrpmt``, the construction: "vole" (psi's default: psi from silent VOLE and an
OKVS, Raghuraman-Rindal 2022, symmetric-key work only), "cwprf" (the default of the other
operations, and of psi when ``group`` or ``last_message`` is given) or "poprf"; and, for
the Diffie-Hellman constructions, ``group`` ("ristretto255" default, "p256",
"p256-compressed", "x25519") and ``last_message`` ("bloom" default, "list", "gcs";
"ordered" for psi only, the classic DH-PSI: no OT, fewer bytes; "poprf" needs "list").
``None`` leaves a setting at its default.

Identifiers are any iterable of str / bytes / int, a pandas Series, a DataFrame with
``id_column=``, a pyarrow Table / RecordBatch or polars DataFrame (Arrow C stream, no
copy through CSV), or a ``pathlib.Path`` to a CSV, gzip / zstd CSV, Parquet or Arrow IPC
file; compared as bytes after trimming surrounding whitespace, exactly as the CLI reads
them. ``id_column`` may list several columns making one key; ``normalize`` ("trim"
default, "none", "lower", "email", "phone-e164" with ``phone_region``; one for all or a
list, one per column) and ``hash_ids="sha256"`` must be the same on both sides
(docs/inputs.md). ``duplicates``: "error" (default), "sum" or "first".
"""

from __future__ import annotations

from typing import Any, Optional

from . import _native
from ._data import IdColumns, Normalize, Values, party_input
from ._party import Party
from ._results import SetOperationResult
from .pi_sum import DEFAULT_MAX_PEER_ITEMS, DEFAULT_VALUE_BOUND


class SetOperationParty(Party[SetOperationResult]):
    """A party of a set operation; the subclasses fix the operation and the role."""

    _operation = ""
    _role = ""

    def __init__(
        self,
        ids: Any,
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
    ) -> None:
        self._setup(
            ids,
            None,
            id_column=id_column,
            value_column=None,
            group=group,
            mqrpmt=mqrpmt,
            last_message=last_message,
            duplicates=duplicates,
            value_bound=DEFAULT_VALUE_BOUND,
            max_peer_items=max_peer_items,
            normalize=normalize,
            phone_region=phone_region,
            hash_ids=hash_ids,
        )

    def _setup(
        self,
        ids: Any,
        values: Optional[Values],
        *,
        id_column: IdColumns,
        value_column: Optional[str],
        group: Optional[str],
        mqrpmt: Optional[str],
        last_message: Optional[str],
        duplicates: str,
        value_bound: int,
        max_peer_items: int,
        normalize: Normalize,
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> None:
        self._input = party_input(
            ids,
            id_column=id_column,
            values=values,
            value_columns=value_column,
            duplicates=duplicates,
            value_bound=value_bound,
            normalize=normalize,
            phone_region=phone_region,
            hash_ids=hash_ids,
        )
        self._native = _native.PsoParty(
            self._operation,
            self._role,
            self._input.native,
            group=group,
            mqrpmt=mqrpmt,
            last_message=last_message,
            value_bound=value_bound,
            max_peer_items=max_peer_items,
        )

    @property
    def operation(self) -> str:
        """"psi", "psi-card", "psi-card-sum", "psu", "psi-share" or "private-id"."""
        return self._operation

    def _result(self, outcome: Any) -> SetOperationResult:
        return SetOperationResult._from_native(outcome, self._input)


class PsiReceiver(SetOperationParty):
    """PSI receiver: learns X ∩ Y (``result.intersection``: your own identifiers)."""

    _operation, _role = "psi", "receiver"


class PsiSender(SetOperationParty):
    """PSI sender: learns only the receiver's set size."""

    _operation, _role = "psi", "sender"


class PsiCardReceiver(SetOperationParty):
    """PSI-cardinality receiver: learns |X ∩ Y|, not which items match."""

    _operation, _role = "psi-card", "receiver"


class PsiCardSender(SetOperationParty):
    """PSI-cardinality sender: learns only the receiver's set size."""

    _operation, _role = "psi-card", "sender"


class PsiCardSumReceiver(SetOperationParty):
    """PSI-card-sum receiver: learns |X ∩ Y|."""

    _operation, _role = "psi-card-sum", "receiver"


class PsiCardSumSender(SetOperationParty):
    """PSI-card-sum sender: holds a value per identifier; learns |X ∩ Y| and the sum of
    its values over the intersection.

    ``values``: an iterable of non-negative integers in [0, ``value_bound``] aligned
    with ``ids`` (or a Series); with a DataFrame or CSV file, ``value_column=`` names
    the column.
    """

    _operation, _role = "psi-card-sum", "sender"

    def __init__(  # noqa: D107 - documented on the class
        self,
        ids: Any,
        values: Optional[Values] = None,
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
    ) -> None:
        self._setup(
            ids,
            values,
            id_column=id_column,
            value_column=value_column,
            group=group,
            mqrpmt=mqrpmt,
            last_message=last_message,
            duplicates=duplicates,
            value_bound=value_bound,
            max_peer_items=max_peer_items,
            normalize=normalize,
            phone_region=phone_region,
            hash_ids=hash_ids,
        )


class PsuReceiver(SetOperationParty):
    """PSU receiver: learns X ∪ Y (``result.union``)."""

    _operation, _role = "psu", "receiver"


class PsuSender(SetOperationParty):
    """PSU sender: learns only the receiver's set size."""

    _operation, _role = "psu", "sender"


class PsiShareReceiver(SetOperationParty):
    """Secret-shared intersection, receiver: learns |X ∩ Y| and its XOR shares of the
    intersection's identifiers (``result.shares``; join with the sender's on
    ``index`` and open with :func:`privset.open_share`)."""

    _operation, _role = "psi-share", "receiver"


class PsiShareSender(SetOperationParty):
    """Secret-shared intersection, sender: gets a share for each of its (shuffled)
    positions; learns nothing else but the receiver's set size."""

    _operation, _role = "psi-share", "sender"


class PrivateIdReceiver(SetOperationParty):
    """Private-ID receiver: gets an identifier for each union element, with its own item
    where it has one (``result.private_ids``; both tables align row by row)."""

    _operation, _role = "private-id", "receiver"


class PrivateIdSender(SetOperationParty):
    """Private-ID sender: the same table as the receiver, with its own items."""

    _operation, _role = "private-id", "sender"


class Psi:
    """PSI (Chen et al. 2024, Fig. 7): ``Psi.receiver(ids)`` learns X ∩ Y; ``Psi.sender(ids)``."""

    receiver = PsiReceiver
    sender = PsiSender


class PsiCard:
    """PSI-cardinality: ``PsiCard.receiver(ids)`` learns |X ∩ Y|."""

    receiver = PsiCardReceiver
    sender = PsiCardSender


class PsiCardSum:
    """PSI-card-sum: both learn |X ∩ Y|; ``PsiCardSum.sender(ids, values)`` learns the
    sum of its values over it."""

    receiver = PsiCardSumReceiver
    sender = PsiCardSumSender


class Psu:
    """PSU: ``Psu.receiver(ids)`` learns X ∪ Y."""

    receiver = PsuReceiver
    sender = PsuSender


class PsiShare:
    """Secret-shared intersection (card-secret-sharing): both get XOR shares of each
    intersection element; the receiver learns |X ∩ Y|."""

    receiver = PsiShareReceiver
    sender = PsiShareSender


class PrivateId:
    """Private-ID (Chen et al. 2024, Sec. 6.2): both get one pseudorandom identifier space for
    X ∪ Y and the identifiers of their own items."""

    receiver = PrivateIdReceiver
    sender = PrivateIdSender


def open_share(receiver_share: bytes, sender_share: bytes) -> bytes:
    """Opens one psi-share row: XORs the two parties' shares of the same ``index`` and
    returns the identifier they encode (bytes)."""
    return bytes(_native.open_share(receiver_share, sender_share))
