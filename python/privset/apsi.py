"""Authorized PSI (Falzon and Markatou): a judge, a client and a server. See docs/apsi.md for the
protocols, the threat model and what each party learns.

Two phases, each a run between two parties:

* **Authorize** (once): the client (:class:`ApsiAuthorizeClient`) asks the judge
  (:class:`ApsiJudge`) to sign its items for its client ID. With APSI the judge sees
  every item and applies its policy; with Partial-APSI (``partial=p``) it sees a random
  ``ceil(p n)`` of them, checked with a zero-knowledge argument. The client keeps the
  :class:`Signatures` (``.save(path)`` writes the CLI's signature file).
* **Intersect** (any number of times): the client (:class:`ApsiClient`) uses any
  subset of its authorized items against the server (:class:`ApsiServer`), which
  honours the judge's public key. The client learns which of its items the server
  holds and the server's set size; the server learns the client's ID only. An item
  without a signature is left out (``result.unauthorized``).

Keys: :meth:`JudgeKey.generate` (``.save(key, public)`` writes the files of ``privset
judge keygen``), :meth:`JudgeKey.load`, :meth:`JudgePublicKey.load`. Every party runs
as the other classes do: ``party.run(listen=... | peer=... | exchange_dir=..., tls=...)``,
or both parties of a phase in one process with :func:`privset.local.apsi`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Union

from . import _native
from ._data import IdColumns, Normalize, PartyInput, party_input
from ._link import TlsFiles
from ._party import Party
from ._results import ApsiAuthorizeResult, ApsiJudgeResult, ApsiResult, ApsiServerResult
from .errors import ConfigurationError
from .pi_sum import DEFAULT_VALUE_BOUND

JudgeKey = _native.JudgeKey
JudgePublicKey = _native.JudgePublicKey
Signatures = _native.Signatures

#: Largest set the judge accepts, and the client accepts from the server, by default
#: (the CLI's --max-items / --max-server-items): 2^24.
DEFAULT_MAX_ITEMS: int = _native.APSI_DEFAULT_MAX_ITEMS
#: Seconds an ``exec:`` policy may take (the CLI's --policy-timeout).
DEFAULT_POLICY_TIMEOUT = 60.0

#: A judge's policy: an allowlist of identifiers (iterable, Series, ``pathlib.Path`` to
#: a CSV file with ``allow_column=``), ``"allow:FILE.csv"`` / ``"exec:COMMAND"`` as in
#: ``privset judge serve --policy`` (``allow_column=`` names the allowlist's column,
#: default the first), or a callable ``policy(client_id: bytes, items: list[bytes])``
#: returning True to accept, False or a reason (str) to reject. The policy sees the
#: items the judge sees: all of them with APSI, the ``ceil(p n)`` opened ones with
#: Partial-APSI. A callable runs on the judge's thread and takes the GIL for the call;
#: if it raises, the client is told only that the policy failed and the judge's
#: ``run()`` raises the exception.
PolicyArg = Union[str, Callable[[bytes, List[bytes]], Union[bool, str]], Any]

PathOr = Union[str, "os.PathLike[str]"]


def _public(judge_public: Any) -> Any:
    """A :class:`JudgePublicKey` from itself or its file."""
    if isinstance(judge_public, _native.JudgePublicKey):
        return judge_public
    if isinstance(judge_public, (str, os.PathLike)):
        return _native.JudgePublicKey.load(os.fspath(judge_public))
    raise ConfigurationError(
        f"judge_public must be a JudgePublicKey or the path of its file, not {type(judge_public).__name__}"
    )


def _ids(ids: Any, id_column: IdColumns, duplicates: str, **keys: Any) -> PartyInput:
    return party_input(ids, id_column=id_column, duplicates=duplicates, value_bound=DEFAULT_VALUE_BOUND, **keys)


#: Sessions a serving judge or server runs at once unless told otherwise.
DEFAULT_MAX_CONCURRENT = 8
#: Seconds one served session may take, handshake included, unless told otherwise.
DEFAULT_SERVE_TIMEOUT = 600.0
#: Seconds a served connection has, from connecting, for its TLS handshake and hello.
DEFAULT_HANDSHAKE_TIMEOUT = 5.0


def _serve(
    native: Any,
    listen: str,
    tls: Optional[TlsFiles],
    insecure_no_tls: bool,
    max_sessions: Optional[int],
    max_concurrent: int,
    timeout: float,
    handshake_timeout: float,
    allow_clients: Optional[Union[str, "os.PathLike[str]"]],
) -> List[Dict[str, Any]]:
    native_tls = None if tls is None else (os.fspath(tls.ca), os.fspath(tls.cert), os.fspath(tls.key))
    lines = native.serve(
        listen,
        tls=native_tls,
        insecure_no_tls=insecure_no_tls,
        max_sessions=max_sessions,
        max_concurrent=max_concurrent,
        timeout=timeout,
        handshake_timeout=handshake_timeout,
        allow_clients=None if allow_clients is None else os.fspath(allow_clients),
    )
    return [json.loads(line) for line in lines]


_SERVE_DOC = """Serves sessions on ``listen="HOST:PORT"`` as ``privset {cmd} serve``
        does: up to ``max_concurrent`` at once, each on its own thread, each cut off
        after ``timeout`` seconds (handshake included), until ``max_sessions`` have
        ended (default: until interrupted with Ctrl-C). Runs on the same Rust endpoint
        as the CLI, with the GIL released; the {what} is shared by every session, not
        copied. Mutual TLS with ``tls=TlsFiles(...)``, or ``insecure_no_tls=True`` on a
        trusted link only.

        A connection holds a session slot only once it has completed the TLS handshake
        and sent its hello, which it must do within ``handshake_timeout`` seconds
        (default 5) of connecting, so silent connections cannot take the slots.
        ``allow_clients``: a file listing the clients served (``--allow-clients`` of
        the CLI: one a line, a certificate name or ``sha256:FINGERPRINT``, ``#``
        comments); any other client is refused with the TLS alert access_denied.

        Returns one dict per session, in the order they ended: the CLI's JSON log line
        (``session``, ``peer``, ``client`` (its certificate's name), ``ok``, ``outcome``, ``bytes_sent``, ``wall_seconds``,
        ``error`` with ``kind`` and ``message`` for a failed one; docs/apsi.md)."""


class ApsiJudge(Party[ApsiJudgeResult]):
    """The judge of Authorize: holds the signing key and decides by ``policy`` (see
    :data:`PolicyArg`) whether to sign a client's set. One ``run()`` serves one client;
    run it in a loop to serve many (``privset judge serve`` does that as a service).

    ``partial``: Partial-APSI, opening this fraction (0 < p <= 1) of each set;
    ``key_consistency`` (default True) binds the client's Partial-APSI key to its
    later Intersect runs (docs/apsi.md).
    """

    def __init__(
        self,
        key: Any,
        policy: PolicyArg,
        *,
        partial: Optional[float] = None,
        key_consistency: bool = True,
        max_items: int = DEFAULT_MAX_ITEMS,
        policy_timeout: float = DEFAULT_POLICY_TIMEOUT,
        allow_column: Optional[str] = None,
    ) -> None:
        if not isinstance(key, _native.JudgeKey):
            key = _native.JudgeKey.load(os.fspath(key))
        self._allowlist: Optional[PartyInput] = None
        native_policy: Any = policy
        if not isinstance(policy, str) and not callable(policy):
            self._allowlist = _ids(policy, allow_column, "first")
            native_policy = self._allowlist.native
        self._native = _native.ApsiParty.judge(
            key,
            native_policy,
            partial=partial,
            key_consistency=key_consistency,
            max_items=max_items,
            policy_timeout=policy_timeout,
            allow_column=allow_column,
        )

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        """The allowlist's size (a judge with another kind of policy has none)."""
        if self._allowlist is None:
            raise TypeError("this judge's policy is not an allowlist")
        return len(self._allowlist.native)

    def _result(self, outcome: Any) -> ApsiJudgeResult:
        return ApsiJudgeResult._from_native(outcome)

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

    serve.__doc__ = _SERVE_DOC.format(cmd="judge", what="key and policy")


class ApsiAuthorizeClient(Party[ApsiAuthorizeResult]):
    """The client of Authorize: gets the judge's signatures on ``ids`` for
    ``client_id``. ``result.signatures`` is the authorization to keep.

    ``ids``: an iterable of identifiers (str, bytes or int), a pandas Series, a
    DataFrame with ``id_column=``, a pyarrow / polars table, or a ``pathlib.Path`` to a
    file (CSV, compressed CSV, Parquet, Arrow). ``partial``: Partial-APSI, revealing at
    most this fraction of the items to the judge (it must match the judge's). Duplicates
    are kept once, as the CLI does. ``id_column`` (one or several columns),
    ``normalize``, ``phone_region`` and ``hash_ids`` as for the other parties
    (docs/inputs.md); the client's later ``ApsiClient`` must use the same.
    """

    def __init__(
        self,
        ids: Any,
        *,
        client_id: str,
        id_column: IdColumns = None,
        partial: Optional[float] = None,
        key_consistency: bool = True,
        duplicates: str = "first",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> None:
        self._input = _ids(ids, id_column, duplicates, normalize=normalize, phone_region=phone_region, hash_ids=hash_ids)
        self._native = _native.ApsiParty.authorize(
            self._input.native, client_id=client_id, partial=partial, key_consistency=key_consistency
        )

    def _result(self, outcome: Any) -> ApsiAuthorizeResult:
        return ApsiAuthorizeResult._from_native(outcome)


class ApsiClient(Party[ApsiResult]):
    """The client of Intersect: intersects the items of ``ids`` that ``signatures``
    covers (default: all of them) with the server's set.

    ``signatures``: a :class:`Signatures` or the path of a signature file;
    ``judge_public``: the judge key you trust (a :class:`JudgePublicKey` or its file),
    which must be the one that signed. Items of ``ids`` without a signature are left
    out and listed in ``result.unauthorized``.

    The client states to the server how its items were made from rows (the key
    settings ``signatures.key_settings`` recorded at authorize); ``ids`` given with
    other ``id_column`` count, ``normalize``, ``phone_region`` or ``hash_ids`` raise
    :class:`ConfigurationError` naming the setting, and a server that makes its keys
    otherwise stops the run with :class:`PeerMisbehaved` (docs/apsi.md).
    """

    def __init__(
        self,
        signatures: Any,
        ids: Any = None,
        *,
        judge_public: Any,
        id_column: IdColumns = None,
        key_consistency: bool = True,
        max_server_items: int = DEFAULT_MAX_ITEMS,
        duplicates: str = "first",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> None:
        if not isinstance(signatures, _native.Signatures):
            signatures = _native.Signatures.load(os.fspath(signatures))
        keys: Any = dict(normalize=normalize, phone_region=phone_region, hash_ids=hash_ids)
        signed_items = ids is None
        if signed_items:
            # The signed items are identifiers already made (normalised, hashed): taken
            # as they are, and the settings stated to the server are those the
            # signatures record from authorize.
            ids = [_text(x) for x in signatures.items]
            keys = dict(normalize="none")
        self._input = _ids(ids, id_column, duplicates, **keys)
        self._native = _native.ApsiParty.intersect(
            signatures,
            self._input.native,
            judge_public=_public(judge_public),
            key_consistency=key_consistency,
            max_server_items=max_server_items,
            signed_items=signed_items,
        )

    def _result(self, outcome: Any) -> ApsiResult:
        return ApsiResult._from_native(outcome, self._input)


class ApsiServer(Party[ApsiServerResult]):
    """The server of Intersect: answers one client run per ``run()``, or many at once
    with ``serve()``, with its set ``ids``, honouring signatures of ``judge_public``. ``partial``: serve Partial-APSI
    clients (True, or the judge's fraction, as the CLI's ``--partial P``)."""

    def __init__(
        self,
        ids: Any,
        *,
        judge_public: Any,
        id_column: IdColumns = None,
        partial: Union[None, bool, float] = None,
        key_consistency: bool = True,
        duplicates: str = "first",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
    ) -> None:
        fraction = None if partial is None or partial is False else 1.0 if partial is True else float(partial)
        self._input = _ids(ids, id_column, duplicates, normalize=normalize, phone_region=phone_region, hash_ids=hash_ids)
        self._native = _native.ApsiParty.server(
            self._input.native,
            judge_public=_public(judge_public),
            partial=fraction,
            key_consistency=key_consistency,
        )

    def _result(self, outcome: Any) -> ApsiServerResult:
        return ApsiServerResult._from_native(outcome)

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

    serve.__doc__ = _SERVE_DOC.format(cmd="apsi", what="set (each session in a fresh random order)")


def _text(raw: bytes) -> Any:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class Apsi:
    """The parties of authorized PSI by role: ``Apsi.judge(key, policy)``,
    ``Apsi.authorize(ids, client_id=...)``, ``Apsi.client(signatures, ids,
    judge_public=...)``, ``Apsi.server(ids, judge_public=...)``."""

    judge = ApsiJudge
    authorize = ApsiAuthorizeClient
    client = ApsiClient
    server = ApsiServer
