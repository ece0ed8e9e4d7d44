"""What every party class shares: running against a peer (``run``) and the local run
of two parties in one process used by :mod:`privset.local`."""

from __future__ import annotations

from typing import Any, Generic, Optional, Tuple, TypeVar

from ._data import PartyInput
from ._link import PathLike, TlsFiles, link_args
from ._progress import ProgressArg, callback

#: The CLI's defaults: seconds to wait for the peer, exchange-directory polling
#: interval, and Ion et al. 2020, Table 1 prices ($ per CPU-hour, $ per GB sent).
DEFAULT_TIMEOUT = 600.0
DEFAULT_POLL_INTERVAL = 0.5
DEFAULT_CPU_PRICE = 0.01
DEFAULT_NETWORK_PRICE = 0.08


#: The result type of a party's runs.
R = TypeVar("R")


class Party(Generic[R]):
    """A party of a protocol with its validated input and settings.

    Construction checks the input and settings and raises :class:`~privset.InputError`
    or :class:`~privset.ConfigurationError` before anything is sent; :meth:`run` may be
    called any number of times (each run is a fresh execution).
    """

    _native: Any
    _input: PartyInput

    def __len__(self) -> int:
        """This party's distinct identifiers (after the duplicate policy)."""
        return len(self._input.native)

    @property
    def role(self) -> str:
        """"p1"/"p2" (PI-Sum), "receiver"/"sender" (set operations) or
        "judge"/"client"/"server" (authorized PSI)."""
        return str(self._native.role)

    def _result(self, outcome: Any) -> R:
        raise NotImplementedError

    def run(
        self,
        *,
        listen: Optional[str] = None,
        peer: Optional[str] = None,
        exchange_dir: Optional[PathLike] = None,
        tls: Optional[TlsFiles] = None,
        insecure_no_tls: bool = False,
        server_name: Optional[str] = None,
        peer_name: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        state_dir: Optional[PathLike] = None,
        cpu_price: float = DEFAULT_CPU_PRICE,
        network_price: float = DEFAULT_NETWORK_PRICE,
        progress: ProgressArg = None,
    ) -> R:
        """Runs this party against its peer and returns what it learns.

        Give exactly one of:

        * ``listen="HOST:PORT"``: accept the peer's connection;
        * ``peer="HOST:PORT"``: connect to the peer (retried until ``timeout``);
        * ``exchange_dir=DIR``: exchange messages as files in a directory both parties
          can reach (one directory per run). A killed run started again with the same
          arguments resumes: its seed is kept in ``state_dir`` (default
          ``./.privset-state``, never inside the shared directory).

        TCP links use mutual TLS 1.3: ``tls=TlsFiles(ca, cert, key)``
        (:func:`privset.generate_certs` makes throwaway ones), or
        ``insecure_no_tls=True`` on a trusted link only. ``server_name`` is the name
        the peer's certificate must have (default: the host of ``peer``).
        ``peer_name`` (the CLI's ``--tls-peer-name``) is the name the peer's certificate
        must hold, checked whether this party listens or connects: with a CA that
        vouches for several organisations, only that one is accepted as the peer.

        ``timeout`` bounds every wait for the peer (seconds); ``poll_interval`` is the
        pause between looks for the peer's next file in an exchange directory.
        ``cpu_price`` and ``network_price`` price the run (Ion et al. 2020, Table 1).
        ``progress``: a callable taking a :class:`privset.Progress`, or True for a tqdm
        bar when tqdm is installed.

        The run happens on a separate thread with the GIL released; Ctrl-C raises
        KeyboardInterrupt here and stops the run (the party's thread ends at its next
        message). Errors: :class:`~privset.PeerMisbehaved`,
        :class:`~privset.TransportError`, :class:`~privset.ConfigurationError`, and
        for an APSI client whose set the judge refused,
        :class:`~privset.AuthorizationRejected`.
        """
        link = link_args(
            listen=listen,
            peer=peer,
            exchange_dir=exchange_dir,
            tls=tls,
            insecure_no_tls=insecure_no_tls,
            server_name=server_name,
            timeout=timeout,
            poll_interval=poll_interval,
            state_dir=state_dir,
            peer_name=peer_name,
        )
        with callback(progress) as cb:
            outcome = self._native.run(link, (cpu_price, network_price), cb)
        return self._result(outcome)


def run_local(
    a: Party[Any],
    b: Party[Any],
    *,
    timeout: float,
    cpu_price: float,
    network_price: float,
    progress: ProgressArg,
) -> Tuple[Any, Any]:
    """Runs ``a`` and ``b`` against each other in this process; returns their results."""
    with callback(progress) as cb:
        outcome_a, outcome_b = a._native.run_local(b._native, float(timeout), (cpu_price, network_price), cb)
    return a._result(outcome_a), b._result(outcome_b)
