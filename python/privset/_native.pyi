"""Type stubs of privset._native, the Rust extension (crates/python).

Internal: use the classes of :mod:`privset`. Every function raising a privset error
raises one of :mod:`privset.errors` with the CLI's message.
"""

from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, final

__all__ = [
    "Input",
    "PiSumParty",
    "PsoParty",
    "BucketedPso",
    "Rendezvous",
    "MpsiParty",
    "ApsiParty",
    "JudgeKey",
    "JudgePublicKey",
    "Signatures",
    "UpsiRows",
    "UpsiDatabase",
    "UpsiParty",
    "open_share",
    "generate_certs",
    "live_workers",
    "code_paths",
    "APSI_DEFAULT_MAX_ITEMS",
    "__version__",
]
__version__: str
APSI_DEFAULT_MAX_ITEMS: int

_Path = Union[str, PathLike[str]]

#: ``callback(party, status, messages_sent, messages_received, bytes_sent, bytes_received)``
_ProgressCallback = Callable[[str, str, int, int, int, int, Optional[str], int, int, int], Any]

#: ``(RESULT.json, rows)``; rows are None or ``(kind, list)`` with kind "items"
#: (``(own_row | None, identifier)``), "shares" (``(index, share)``) or "private_id"
#: (``(private_id_hex, own_row | None, identifier | None)``).
_PsoOutcome = Tuple[str, Optional[Tuple[str, List[Tuple[Any, ...]]]]]

@final
class Input:
    """A validated party input (identifiers, value columns, segments)."""

    @staticmethod
    def from_rows(
        ids: Sequence[Tuple[str, Sequence[Any]]],
        values: Sequence[Tuple[str, Sequence[Any]]],
        segments: Optional[Sequence[Any]],
        duplicates: str,
        value_bound: int,
        normalize: Sequence[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> Input:
        """In-memory rows (one or more identifier columns making one key); row ``i``
        is line ``i + 2`` in error messages."""

    @staticmethod
    def from_file(
        path: _Path,
        id_columns: Sequence[str],
        value_columns: Sequence[str],
        segment_column: Optional[str],
        duplicates: str,
        value_bound: int,
        normalize: Sequence[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> Input:
        """A file with a header row (CSV, gzip / zstd CSV, Parquet, Arrow IPC), read as
        the CLI reads it."""

    @staticmethod
    def from_arrow(
        data: Any,
        what: str,
        id_columns: Sequence[str],
        value_columns: Sequence[str],
        segment_column: Optional[str],
        duplicates: str,
        value_bound: int,
        normalize: Sequence[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> Input:
        """An object with ``__arrow_c_stream__`` (pyarrow, polars), read batch by batch."""

    def __len__(self) -> int:
        """Distinct identifiers after the duplicate policy."""

    def row_of(self, id: bytes) -> Optional[int]:
        """The 0-based row of an in-memory input holding ``id``."""

@final
class PiSumParty:
    """A PI-Sum party (role "p1" or "p2")."""

    def __new__(
        cls,
        role: str,
        input: Input,
        *,
        protocol: str,
        group: str,
        values_he: str,
        he_modulus_bits: int,
        dj_s: int,
        z_encoding: str,
        reverse: bool,
        threshold: Optional[int],
        sum_of_squares: bool,
        value_bound: int,
        sum_bound: Optional[int],
        max_peer_items: int,
    ) -> PiSumParty: ...
    @property
    def role(self) -> str: ...
    def run(
        self,
        link: dict[str, Any],
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> str:
        """Runs against a peer; returns RESULT.json."""

    def run_local(
        self,
        other: PiSumParty,
        timeout: float,
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> Tuple[str, str]:
        """Runs with ``other`` in this process; returns both RESULT.json, this first."""

@final
class PsoParty:
    """A set-operation party (role "receiver" or "sender")."""

    def __new__(
        cls,
        operation: str,
        role: str,
        input: Input,
        *,
        group: Optional[str],
        mqrpmt: Optional[str],
        last_message: Optional[str],
        value_bound: int,
        max_peer_items: int,
    ) -> PsoParty: ...
    @property
    def role(self) -> str: ...
    @property
    def operation(self) -> str: ...
    def run(
        self,
        link: dict[str, Any],
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> _PsoOutcome:
        """Runs against a peer."""

    def run_local(
        self,
        other: PsoParty,
        timeout: float,
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> Tuple[_PsoOutcome, _PsoOutcome]:
        """Runs with ``other`` in this process; this party's outcome first."""

#: RESULT.json of an mpsi participant and its intersection as (own row or None,
#: identifier bytes), None for the participants that learn none.
_MpsiOutcome = Tuple[str, Optional[List[Tuple[Optional[int], bytes]]]]

@final
class MpsiParty:
    """A multi-party PSI participant (protocol "bay", "miyaji-nishida" or "hazay"; role
    "server", "client", "dealer" or "party")."""

    def __new__(
        cls,
        protocol: str,
        role: str,
        input: Optional[Input],
        *,
        max_items: int,
        max_peer_items: int,
        paillier_key: Optional[str] = None,
    ) -> MpsiParty: ...
    @property
    def role(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def scheme(self) -> str: ...
    @staticmethod
    def deal(holders: List[str], out: str, modulus_bits: int) -> Tuple[str, List[str], str]:
        """The trusted dealer: a threshold Paillier key for ``holders``, written to ``out``."""
    def run(
        self,
        link: dict[str, Any],
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> _MpsiOutcome:
        """Runs as the parties file's participant ``link["name"]``."""

    @staticmethod
    def run_session(
        parties: List[MpsiParty],
        names: Optional[List[str]],
        timeout: float,
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> List[_MpsiOutcome]:
        """Runs every participant of a session in this process, in order."""

@final
class JudgeKey:
    """The judge's BLS12-381 signing key."""

    @staticmethod
    def generate() -> JudgeKey: ...
    @staticmethod
    def load(path: _Path) -> JudgeKey: ...
    def save(self, path: _Path, public: Optional[_Path] = None) -> None: ...
    @property
    def public_key(self) -> JudgePublicKey: ...

@final
class JudgePublicKey:
    """The judge's public key."""

    @staticmethod
    def load(path: _Path) -> JudgePublicKey: ...
    def save(self, path: _Path) -> None: ...
    @property
    def fingerprint(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]

@final
class Signatures:
    """A client's authorization (the judge's signatures on its items)."""

    @staticmethod
    def load(path: _Path, client_id: Optional[str] = None) -> Signatures: ...
    def save(self, path: _Path) -> None: ...
    @property
    def mode(self) -> str: ...
    @property
    def client_id(self) -> str: ...
    @property
    def judge_public_key(self) -> JudgePublicKey: ...
    @property
    def key_settings(self) -> Optional[Dict[str, str]]: ...
    @property
    def items(self) -> List[bytes]: ...
    def __len__(self) -> int: ...

#: ``(report JSON, signatures, intersection, unauthorized)``; item lists hold
#: ``(own_row | None, identifier)``.
_ApsiOutcome = Tuple[
    str,
    Optional[Signatures],
    Optional[List[Tuple[Optional[int], bytes]]],
    Optional[List[Tuple[Optional[int], bytes]]],
]

@final
class ApsiParty:
    """A party of authorized PSI: judge, client (authorize or intersect) or server."""

    @staticmethod
    def judge(
        key: JudgeKey,
        policy: Union[Input, str, Callable[[bytes, List[bytes]], Union[bool, str]]],
        *,
        partial: Optional[float],
        key_consistency: bool,
        max_items: int,
        policy_timeout: float,
        allow_column: Optional[str] = None,
    ) -> ApsiParty: ...
    @staticmethod
    def authorize(
        input: Input, *, client_id: str, partial: Optional[float], key_consistency: bool
    ) -> ApsiParty: ...
    @staticmethod
    def intersect(
        signatures: Signatures,
        input: Input,
        *,
        judge_public: JudgePublicKey,
        key_consistency: bool,
        max_server_items: int,
        signed_items: bool = False,
    ) -> ApsiParty: ...
    @staticmethod
    def server(
        input: Input, *, judge_public: JudgePublicKey, partial: Optional[float], key_consistency: bool
    ) -> ApsiParty: ...
    @property
    def role(self) -> str: ...
    @property
    def phase(self) -> str: ...
    def run(
        self,
        link: dict[str, Any],
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> _ApsiOutcome:
        """Runs against a peer."""

    def serve(
        self,
        listen: str,
        *,
        tls: Optional[Tuple[str, str, str]],
        insecure_no_tls: bool,
        max_sessions: Optional[int],
        max_concurrent: int,
        timeout: float,
        handshake_timeout: float = 5.0,
        allow_clients: Optional[str] = None,
    ) -> List[str]:
        """A judge or server: serves sessions concurrently; returns their JSON log lines."""

    def run_local(
        self,
        other: ApsiParty,
        timeout: float,
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> Tuple[_ApsiOutcome, _ApsiOutcome]:
        """Runs with ``other`` in this process; this party's outcome first."""

@final
class UpsiRows:
    """Rows for an unbalanced-PSI database: identifiers and encoded labels."""

    @staticmethod
    def from_rows(
        ids: List[Tuple[str, List[Any]]],
        labels: Optional[List[List[Any]]],
        normalize: List[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> UpsiRows: ...
    @staticmethod
    def from_file(
        path: _Path,
        id_columns: List[str],
        label_columns: List[str],
        normalize: List[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
    ) -> UpsiRows: ...
    def __len__(self) -> int: ...

@final
class UpsiDatabase:
    """The server's database of unbalanced labeled PSI (the CLI's database file)."""

    @staticmethod
    def build(
        rows: UpsiRows,
        preset: Optional[str],
        client_items: int,
        label_bytes: Optional[int],
        cache_mb: int,
        oprf: str,
    ) -> UpsiDatabase: ...
    @staticmethod
    def load(path: _Path, cache_mb: int) -> UpsiDatabase: ...
    def save(self, path: _Path) -> None: ...
    def insert(self, rows: UpsiRows) -> None: ...
    def remove(self, rows: UpsiRows) -> int: ...
    def rotate_key(self, oprf: Optional[str] = None) -> None: ...
    def set_preset(self, name: str) -> None: ...
    def info(self) -> str: ...
    @property
    def preset(self) -> str: ...
    @property
    def oprf(self) -> str: ...
    @property
    def label_bytes(self) -> int: ...
    @property
    def bundle_counts(self) -> List[int]: ...
    def __len__(self) -> int: ...

#: ``(report JSON, matches)``; matches hold ``(own_row | None, identifier, label
#: cells | None)`` (empty for the server).
_UpsiOutcome = Tuple[str, List[Tuple[Optional[int], bytes, Optional[List[bytes]]]]]

@final
class UpsiParty:
    """A party of unbalanced labeled PSI: client or server."""

    @staticmethod
    def client(input: Input) -> UpsiParty: ...
    @staticmethod
    def server(database: UpsiDatabase) -> UpsiParty: ...
    @staticmethod
    def server_of_file(path: _Path, reload_interval: float, cache_mb: int) -> UpsiParty: ...
    @property
    def role(self) -> str: ...
    def run(
        self,
        link: dict[str, Any],
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> _UpsiOutcome:
        """Runs against a peer."""

    def serve(
        self,
        listen: str,
        *,
        tls: Optional[Tuple[str, str, str]],
        insecure_no_tls: bool,
        max_sessions: Optional[int],
        max_concurrent: int,
        timeout: float,
        handshake_timeout: float = 5.0,
        allow_clients: Optional[str] = None,
    ) -> List[str]:
        """The server: serves sessions concurrently; returns their JSON log lines."""

    def run_local(
        self,
        other: UpsiParty,
        timeout: float,
        prices: Tuple[float, float],
        progress: Optional[_ProgressCallback] = None,
    ) -> Tuple[_UpsiOutcome, _UpsiOutcome]:
        """Runs with ``other`` in this process; this party's outcome first."""

@final
class BucketedPso:
    """One party's bucketed job (privset.bucketed, privset.ray)."""

    def __new__(
        cls,
        operation: str,
        role: str,
        input: _Path,
        *,
        id_columns: List[str],
        normalize: List[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
        duplicates: str,
        group: Optional[str],
        mqrpmt: Optional[str],
        last_message: Optional[str],
        max_peer_items: int,
        buckets: Optional[int],
        state_dir: _Path,
        output_rows: Optional[_Path],
        concurrency: int,
        link: Dict[str, Any],
        prices: Tuple[float, float],
        value_column: Optional[str] = None,
        value_bound: Optional[int] = None,
    ) -> "BucketedPso": ...
    @staticmethod
    def pi_sum(
        role: str,
        input: _Path,
        *,
        id_columns: List[str],
        normalize: List[str],
        phone_region: Optional[str],
        hash_ids: Optional[str],
        duplicates: str,
        value_columns: List[str],
        group: str,
        values_he: str,
        he_modulus_bits: int,
        dj_s: int,
        z_encoding: str,
        threshold: Optional[int],
        sum_of_squares: bool,
        value_bound: int,
        sum_bound: Optional[int],
        max_peer_items: int,
        buckets: Optional[int],
        concurrency: int,
        state_dir: _Path,
        link: Dict[str, Any],
        prices: Tuple[float, float],
    ) -> "BucketedPso": ...
    def run(self, progress: Optional[_ProgressCallback] = None) -> str: ...
    def plan(self, progress: Optional[_ProgressCallback] = None) -> List[List[int]]: ...
    def run_bucket(self, bucket: int, progress: Optional[_ProgressCallback] = None) -> None: ...
    def plan_tcp(self, progress: Optional[_ProgressCallback] = None) -> Tuple[str, List[List[Tuple[int, int]]]]: ...
    def run_bucket_tcp(
        self,
        bucket: int,
        runs: int,
        round: str,
        rendezvous: str,
        *,
        ports: Optional[Tuple[int, int]] = None,
        advertise: Optional[str] = None,
        token: Optional[bytes] = None,
        progress: Optional[_ProgressCallback] = None,
    ) -> bool: ...
    def abort_round(self, round: str, rendezvous: str) -> None: ...
    def finish(self) -> str: ...

@final
class Rendezvous:
    """Where the bucket tasks of a Ray job over mutual TLS meet (the listening driver's)."""

    def __new__(cls, bind: str, tls: Tuple[str, str, str], token: bytes, timeout: float) -> "Rendezvous": ...
    @property
    def port(self) -> int: ...
    def abort(self, round: str) -> None: ...
    def aborted(self, round: str) -> bool: ...
    def close(self) -> None: ...

def open_share(receiver_share: bytes, sender_share: bytes) -> bytes:
    """XORs two psi-share shares and decodes the identifier."""

def generate_certs(out: _Path, names: List[str]) -> List[str]:
    """Throwaway CA and per-name certificates, as ``privset certs``."""

def code_paths() -> str: ...
def live_workers() -> int:
    """Party threads still running."""
