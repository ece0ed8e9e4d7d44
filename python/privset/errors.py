"""The exceptions privset raises.

Every error carries the message the ``privset`` command line prints for the same
problem (``str(error)``), and ``exit_code``, the CLI's exit status for it::

    PrivsetError            anything else                           (exit code 1)
    ├── InputError          your data: bad value, duplicate, ...    (2; ``.line``)
    ├── ConfigurationError  your settings: keyword arguments        (2)
    ├── PeerMisbehaved      the peer broke the protocol, aborted,
    │                       or uses other settings                  (3)
    ├── TransportError      network, TLS, exchange directory,
    │                       certificate files                       (4)
    └── AuthorizationRejected  the APSI judge's policy refused
                            the client's set                        (5)

``InputError`` and ``ConfigurationError`` are also ``ValueError``\\ s.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "PrivsetError",
    "InputError",
    "ConfigurationError",
    "PeerMisbehaved",
    "TransportError",
    "AuthorizationRejected",
]


class PrivsetError(Exception):
    """Base class of every privset error."""

    #: The ``privset`` command line's exit status for this kind of error.
    exit_code = 1


class InputError(PrivsetError, ValueError):
    """The party's own input is unusable; raised before anything is sent.

    ``line`` is the input line to blame when there is one. In a CSV file the header is
    line 1; for in-memory data (lists, Series, DataFrames) row ``i`` (0-based) is line
    ``i + 2``, its line in ``df.to_csv(index=False)``.
    """

    exit_code = 2

    def __init__(self, message: str, *, line: Optional[int] = None) -> None:
        super().__init__(message)
        #: The line to blame (header = line 1), or None.
        self.line = line


class ConfigurationError(PrivsetError, ValueError):
    """A setting is invalid or settings contradict each other (raised before any run)."""

    exit_code = 2


class PeerMisbehaved(PrivsetError):
    """The peer sent something the protocol does not allow, aborted the run, or was
    configured differently (group, scheme, variant, ...)."""

    exit_code = 3


class TransportError(PrivsetError):
    """Moving messages failed: connection, timeout, TLS (including unreadable
    certificate files), or the exchange directory."""

    exit_code = 4


class AuthorizationRejected(PrivsetError):
    """The judge of authorized PSI refused to sign the client's set; the message is
    the reason its policy gave."""

    exit_code = 5
