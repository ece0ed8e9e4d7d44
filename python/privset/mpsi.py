"""Multi-party PSI among 3 to 255 organisations: the three protocols of de Jong's
thesis ("Java Implementation and Analysis of Multi-party Private Set Intersection
Protocols") on threshold ElGamal (default) or threshold Paillier (a key from
:func:`mpsi_deal`, each participant given its file as ``paillier_key=``), as
``privset mpsi`` runs them. See docs/mpsi.md for
the messages and what each participant learns.

Every session has one coordinator, the first participant of the parties file, and set
holders:

* :class:`Bay` (Ch. 3, Bay et al.): the **server** (``Bay.server(ids)``) learns its
  items that every **client** (``Bay.client(ids)``) holds;
* :class:`MiyajiNishida` (Ch. 4): a **dealer** with no set (``MiyajiNishida.dealer()``)
  masks; every **party** (``MiyajiNishida.party(ids)``) learns the intersection;
* :class:`Hazay` (Ch. 5, Hazay and Venkitasubramaniam, with bins): as Bay et al.,
  server and clients.

Each organisation runs its participant with the shared parties file (``parties.toml``:
every participant in session order, with its address and certificate) and its name in
it; :func:`privset.local.mpsi` runs a whole session in one process. Identifiers are
given and compared as for every other party (docs/python.md, "Inputs");
``duplicates`` is "error" (default) or "first".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from . import _native
from ._data import IdColumns, Normalize, PartyInput, party_input
from ._link import PathLike, TlsFiles
from ._party import DEFAULT_CPU_PRICE, DEFAULT_NETWORK_PRICE, DEFAULT_TIMEOUT
from ._progress import ProgressArg, callback
from ._results import MpsiResult
from .errors import ConfigurationError
from .pi_sum import DEFAULT_VALUE_BOUND

#: ``privset mpsi --max-peer-items``: the largest set size (or bound) accepted from a peer.
DEFAULT_MAX_PEER_ITEMS = 1 << 24

#: ``privset mpsi``'s default pause between looks for a peer's next file (seconds).
DEFAULT_POLL_INTERVAL = 0.2


class MpsiParticipant:
    """A participant of a multi-party PSI with its validated set and settings; the
    subclasses fix the protocol and the role.

    Construction checks the input and settings and raises :class:`~privset.InputError`
    or :class:`~privset.ConfigurationError` before anything is sent; :meth:`run` may be
    called any number of times (each run is a fresh session).
    """

    _protocol = ""
    _role = ""
    _native: Any
    _input: Optional[PartyInput]

    def _setup(
        self,
        input: Optional[PartyInput],
        *,
        max_items: int,
        max_peer_items: int,
        paillier_key: Optional[PathLike],
    ) -> None:
        self._input = input
        self._native = _native.MpsiParty(
            self._protocol,
            self._role,
            None if input is None else input.native,
            max_items=max_items,
            max_peer_items=max_peer_items,
            paillier_key=None if paillier_key is None else os.fspath(paillier_key),
        )

    def __len__(self) -> int:
        """This participant's distinct identifiers (0 for the dealer)."""
        return 0 if self._input is None else len(self._input.native)

    @property
    def protocol(self) -> str:
        """"bay", "miyaji-nishida" or "hazay"."""
        return self._protocol

    @property
    def role(self) -> str:
        """"server", "client", "dealer" or "party"."""
        return self._role

    @property
    def scheme(self) -> str:
        """The threshold scheme: "elgamal" (the key agreed in each session) or
        "paillier" (a key from :func:`mpsi_deal`)."""
        return str(self._native.scheme)

    def _result(self, outcome: Any) -> MpsiResult:
        return MpsiResult._from_native(outcome, self._input)

    def run(
        self,
        *,
        parties: PathLike,
        name: str,
        listen: Optional[str] = None,
        exchange_dir: Optional[PathLike] = None,
        tls: Optional[TlsFiles] = None,
        tls_key: Optional[PathLike] = None,
        insecure_no_tls: bool = False,
        server_name: Optional[str] = None,
        session: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        state_dir: Optional[PathLike] = None,
        cpu_price: float = DEFAULT_CPU_PRICE,
        network_price: float = DEFAULT_NETWORK_PRICE,
        progress: ProgressArg = None,
    ) -> MpsiResult:
        """Runs as participant ``name`` of the parties file ``parties`` and returns what
        it learns. Its role must be the one its place in the file gives it (the first
        participant is the server or the dealer).

        Links are TCP to the addresses of the parties file (listening on this
        participant's own, or on ``listen="HOST:PORT"``), with mutual TLS 1.3:
        ``tls_key=`` this participant's private key, the CA and its certificate being
        the parties file's (or ``tls=TlsFiles(ca, cert, key)``), or
        ``insecure_no_tls=True`` on a trusted network only. Or ``exchange_dir=DIR``:
        every participant leaves its messages as files in one shared directory (one per
        session); a killed participant started again with the same arguments resumes
        (its seed is kept in ``state_dir``, default ``./.privset-state``).

        ``session`` is a label every participant of the session shares, keeping
        sessions at the same addresses apart. ``timeout`` bounds every wait for a peer;
        ``poll_interval`` is the pause between looks for a file. Ctrl-C stops the run;
        a participant that drops out makes every other stop with an error naming it
        (:class:`~privset.PeerMisbehaved` or :class:`~privset.TransportError`).
        """
        ca = cert = key = None
        if tls is not None:
            ca, cert, key = os.fspath(tls.ca), os.fspath(tls.cert), os.fspath(tls.key)
        if tls_key is not None:
            if tls is not None:
                raise ConfigurationError("give tls= or tls_key=, not both")
            key = os.fspath(tls_key)
        link = {
            "parties": os.fspath(parties),
            "name": name,
            "listen": listen,
            "exchange_dir": None if exchange_dir is None else os.fspath(exchange_dir),
            "tls_ca": ca,
            "tls_cert": cert,
            "tls_key": key,
            "insecure_no_tls": insecure_no_tls,
            "server_name": server_name,
            "session": session,
            "timeout": float(timeout),
            "poll_interval": float(poll_interval),
            "state_dir": None if state_dir is None else os.fspath(state_dir),
        }
        with callback(progress) as cb:
            outcome = self._native.run(link, (cpu_price, network_price), cb)
        return self._result(outcome)


def _holder_input(
    ids: Any,
    *,
    id_column: IdColumns,
    duplicates: str,
    normalize: Normalize,
    phone_region: Optional[str],
    hash_ids: Optional[str],
) -> PartyInput:
    if duplicates not in ("error", "first"):
        raise ConfigurationError(
            f"duplicates must be 'error' or 'first' for multi-party PSI (a set has no values to sum), not {duplicates!r}"
        )
    return party_input(
        ids,
        id_column=id_column,
        duplicates=duplicates,
        value_bound=DEFAULT_VALUE_BOUND,
        normalize=normalize,
        phone_region=phone_region,
        hash_ids=hash_ids,
    )


class _Holder(MpsiParticipant):
    """A participant with a set: server, client, or Miyaji-Nishida party."""

    def __init__(
        self,
        ids: Any,
        *,
        id_column: IdColumns = None,
        duplicates: str = "error",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
        max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
        paillier_key: Optional[PathLike] = None,
    ) -> None:
        self._setup(
            _holder_input(
                ids,
                id_column=id_column,
                duplicates=duplicates,
                normalize=normalize,
                phone_region=phone_region,
                hash_ids=hash_ids,
            ),
            max_items=0,
            max_peer_items=max_peer_items,
            paillier_key=paillier_key,
        )


class BayServer(_Holder):
    """Bay et al. server (de Jong, Ch. 3): the first participant; learns its items that
    every client holds, and every client's set size."""

    _protocol, _role = "bay", "server"


class BayClient(_Holder):
    """Bay et al. client: sends its encrypted inverted Bloom filter; learns the
    server's set size only."""

    _protocol, _role = "bay", "client"


class HazayServer(_Holder):
    """Hazay-Venkitasubramaniam server (de Jong, Ch. 5, with bins): the first
    participant; learns its items that every client holds."""

    _protocol, _role = "hazay", "server"


class HazayClient(_Holder):
    """Hazay-Venkitasubramaniam client: sends encrypted polynomials per bin; learns the
    server's set size only."""

    _protocol, _role = "hazay", "client"


class MiyajiNishidaParty(MpsiParticipant):
    """Miyaji-Nishida party (de Jong, Ch. 4): learns the intersection (its own items
    that every party holds).

    ``max_items`` is the public bound ``N`` on every party's set size, the same at
    every party (0, the default: this party's size rounded up to a power of two, which
    the others then learn)."""

    _protocol, _role = "miyaji-nishida", "party"

    def __init__(
        self,
        ids: Any,
        *,
        id_column: IdColumns = None,
        duplicates: str = "error",
        normalize: Normalize = "trim",
        phone_region: Optional[str] = None,
        hash_ids: Optional[str] = None,
        max_items: int = 0,
        max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
        paillier_key: Optional[PathLike] = None,
    ) -> None:
        self._setup(
            _holder_input(
                ids,
                id_column=id_column,
                duplicates=duplicates,
                normalize=normalize,
                phone_region=phone_region,
                hash_ids=hash_ids,
            ),
            max_items=max_items,
            max_peer_items=max_peer_items,
            paillier_key=paillier_key,
        )


class MiyajiNishidaDealer(MpsiParticipant):
    """Miyaji-Nishida dealer: the first participant; holds no set, adds and masks the
    parties' encrypted filters, learns the bound ``N`` and the number of parties."""

    _protocol, _role = "miyaji-nishida", "dealer"

    def __init__(
        self,
        *,
        max_peer_items: int = DEFAULT_MAX_PEER_ITEMS,
        paillier_key: Optional[PathLike] = None,
    ) -> None:
        self._setup(None, max_items=0, max_peer_items=max_peer_items, paillier_key=paillier_key)


class Bay:
    """Bay et al. (de Jong, Ch. 3): ``Bay.server(ids)``, ``Bay.client(ids)``."""

    server = BayServer
    client = BayClient


class MiyajiNishida:
    """Miyaji-Nishida (de Jong, Ch. 4): ``MiyajiNishida.dealer()``,
    ``MiyajiNishida.party(ids)``."""

    dealer = MiyajiNishidaDealer
    party = MiyajiNishidaParty


class Hazay:
    """Hazay-Venkitasubramaniam (de Jong, Ch. 5): ``Hazay.server(ids)``,
    ``Hazay.client(ids)``."""

    server = HazayServer
    client = HazayClient


@dataclass(frozen=True)
class DealtKey:
    """The files of one threshold Paillier key (:func:`mpsi_deal`)."""

    #: For the first participant (server or Miyaji-Nishida dealer).
    public: Path
    #: Each set holder's share, in session order (give each its own, privately).
    holders: Tuple[Path, ...]
    #: Hex of the key's fingerprint, compared by the participants' hellos.
    fingerprint: str


def mpsi_deal(holders: Sequence[str], out: PathLike, *, modulus_bits: int = 3072) -> DealtKey:
    """The trusted dealer of threshold Paillier (``privset mpsi-deal``): makes an
    n-out-of-n key for the set holders named ``holders`` (every participant but the
    first, in session order), writes ``out/public.key`` and ``out/NAME.key`` for each
    holder (owner-only permissions), and keeps nothing. Whoever runs it could decrypt
    every session under the key unless it is trusted to forget the factorisation
    (docs/mpsi.md). 3,072 bits (128-bit security) takes minutes; smaller moduli are for
    tests only. Pass each file as ``paillier_key=`` to its participant."""
    public, files, fingerprint = _native.MpsiParty.deal(list(holders), os.fspath(out), int(modulus_bits))
    return DealtKey(public=Path(public), holders=tuple(Path(f) for f in files), fingerprint=fingerprint)


#: The namespace class of each protocol, by the CLI's name.
PROTOCOLS = {"bay": Bay, "miyaji-nishida": MiyajiNishida, "hazay": Hazay}


def run_session(
    participants: List[MpsiParticipant],
    *,
    names: Optional[List[str]],
    timeout: float,
    cpu_price: float,
    network_price: float,
    progress: ProgressArg,
) -> List[MpsiResult]:
    """Runs every participant of one session in this process (``participants[i]`` is
    participant ``i``); returns their results in order."""
    with callback(progress) as cb:
        outcomes = _native.MpsiParty.run_session(
            [p._native for p in participants], names, float(timeout), (cpu_price, network_price), cb
        )
    return [p._result(o) for p, o in zip(participants, outcomes)]


__all__ = [
    "DealtKey",
    "mpsi_deal",
    "Bay",
    "BayClient",
    "BayServer",
    "Hazay",
    "HazayClient",
    "HazayServer",
    "MiyajiNishida",
    "MiyajiNishidaDealer",
    "MiyajiNishidaParty",
    "MpsiParticipant",
]
