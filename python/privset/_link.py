"""How a party reaches its peer: the keyword arguments of every ``run()``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one party: the CA both parties trust, this party's certificate
    (chain) and its private key."""

    ca: PathLike
    cert: PathLike
    key: PathLike

    @classmethod
    def in_dir(cls, directory: PathLike, name: str) -> "TlsFiles":
        """The files :func:`generate_certs` writes for ``name`` in ``directory``."""
        d = os.fspath(directory)
        return cls(os.path.join(d, "ca.pem"), os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key"))


def generate_certs(out: PathLike, names: Sequence[str] = ("p1", "p2")) -> Dict[str, TlsFiles]:
    """Writes a throwaway CA and a certificate per name into ``out`` (as
    ``privset certs --out DIR --names a,b``) and returns each name's :class:`TlsFiles`.

    Each certificate is valid for its name, localhost, 127.0.0.1 and ::1, to listen or
    to connect. Use your own PKI between real organisations.
    """
    _native.generate_certs(os.fspath(out), list(names))
    return {name: TlsFiles.in_dir(out, name) for name in names}


def link_args(
    *,
    listen: Optional[str],
    peer: Optional[str],
    exchange_dir: Optional[PathLike],
    tls: Optional[TlsFiles],
    insecure_no_tls: bool,
    server_name: Optional[str],
    timeout: float,
    poll_interval: float,
    state_dir: Optional[PathLike],
    peer_name: Optional[str] = None,
) -> Dict[str, Any]:
    """The dict the native ``run`` reads (it checks the combination)."""
    return {
        "listen": listen,
        "peer": peer,
        "exchange_dir": None if exchange_dir is None else os.fspath(exchange_dir),
        "tls": None if tls is None else (os.fspath(tls.ca), os.fspath(tls.cert), os.fspath(tls.key)),
        "insecure_no_tls": insecure_no_tls,
        "server_name": server_name,
        "peer_name": peer_name,
        "timeout": float(timeout),
        "poll_interval": float(poll_interval),
        "state_dir": None if state_dir is None else os.fspath(state_dir),
    }
