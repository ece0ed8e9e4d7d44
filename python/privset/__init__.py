"""privset: private set operations between organisations, over a Rust core.

Each organisation runs one party; the parties exchange cryptographic messages (over
mutual TLS, or files in a shared directory) and each learns the agreed answer about
the two sets and nothing else::

    import privset

    # the advertiser: who saw the ad
    p1 = privset.PiSum.p1(exposures["email"])
    result = p1.run(listen="0.0.0.0:7000", tls=privset.TlsFiles.in_dir("certs", "advertiser"))
    result.cardinality

    # the shop: who bought, for how much
    p2 = privset.PiSum.p2(purchases["email"], purchases["spend"])
    result = p2.run(peer="advertiser.example:7000", tls=privset.TlsFiles.in_dir("certs", "shop"))
    result.cardinality, result.sum

    # both in one process (notebooks, tests)
    privset.local.pi_sum(exposures["email"], purchases["email"], purchases["spend"]).sum

Protocols: :class:`PiSum` (Ion et al. 2020, intersection-sum with cardinality) and the set
operations of Chen et al. 2024 — :class:`Psi`, :class:`PsiCard`, :class:`PsiCardSum`,
:class:`Psu`, :class:`PsiShare`, :class:`PrivateId`; authorized PSI of Falzon and Markatou —
:class:`ApsiJudge`, :class:`ApsiAuthorizeClient`, :class:`ApsiClient`,
:class:`ApsiServer` (also as :class:`Apsi`); multi-party PSI among 3 to 255
organisations (de Jong's thesis) — :class:`Bay`, :class:`MiyajiNishida`, :class:`Hazay`
(:func:`privset.local.mpsi` runs a whole session); unbalanced labeled PSI (Cong et al.
2021) between a server's large database and small client sets — :class:`UpsiDatabase`,
:class:`UpsiClient`, :class:`UpsiServer` (also as :class:`Upsi`). Every party is the same Rust state
machine the ``privset`` command line runs, with the same settings, results
(RESULT.json's fields) and error messages. See docs/python.md.
"""

from . import _native, bucketed, local, ray
from ._link import TlsFiles, generate_certs
from ._party import Party
from ._progress import Progress
from ._results import (
    ApsiAuthorizeResult,
    ApsiJudgeResult,
    ApsiResult,
    ApsiServerResult,
    MpsiResult,
    PiSumResult,
    PrivateIdRow,
    Prices,
    Segment,
    SetOperationResult,
    Share,
    UpsiMatch,
    UpsiResult,
    UpsiServerResult,
)
from .apsi import (
    Apsi,
    ApsiAuthorizeClient,
    ApsiClient,
    ApsiJudge,
    ApsiServer,
    JudgeKey,
    JudgePublicKey,
    Signatures,
)
from .errors import (
    AuthorizationRejected,
    ConfigurationError,
    InputError,
    PeerMisbehaved,
    PrivsetError,
    TransportError,
)
from .mpsi import (
    Bay,
    BayClient,
    BayServer,
    DealtKey,
    Hazay,
    HazayClient,
    HazayServer,
    MiyajiNishida,
    MiyajiNishidaDealer,
    MiyajiNishidaParty,
    MpsiParticipant,
    mpsi_deal,
)
from .pi_sum import PiSum, PiSumP1, PiSumP2
from .set_operations import (
    PrivateId,
    PrivateIdReceiver,
    PrivateIdSender,
    Psi,
    PsiCard,
    PsiCardReceiver,
    PsiCardSender,
    PsiCardSum,
    PsiCardSumReceiver,
    PsiCardSumSender,
    PsiReceiver,
    PsiSender,
    PsiShare,
    PsiShareReceiver,
    PsiShareSender,
    Psu,
    PsuReceiver,
    PsuSender,
    SetOperationParty,
    open_share,
)
from .upsi import Upsi, UpsiClient, UpsiDatabase, UpsiServer

__version__: str = _native.__version__


def code_paths() -> str:
    """Which code this CPU gets, one line per fast path: the wheel is built for any
    x86-64-v2 CPU and picks AVX-512 IFMA (X25519 in eight lanes, curve25519-dalek) or
    ADX (blst) at run time where the CPU has them. ``PRIVSET_PORTABLE=1`` forces
    privset's own portable path."""
    return _native.code_paths()


__all__ = [
    "code_paths",
    "Apsi",
    "ApsiAuthorizeClient",
    "ApsiAuthorizeResult",
    "ApsiClient",
    "ApsiJudge",
    "ApsiJudgeResult",
    "ApsiResult",
    "ApsiServer",
    "ApsiServerResult",
    "AuthorizationRejected",
    "Bay",
    "BayClient",
    "BayServer",
    "ConfigurationError",
    "Hazay",
    "HazayClient",
    "HazayServer",
    "InputError",
    "JudgeKey",
    "JudgePublicKey",
    "MiyajiNishida",
    "MiyajiNishidaDealer",
    "MiyajiNishidaParty",
    "MpsiParticipant",
    "MpsiResult",
    "DealtKey",
    "mpsi_deal",
    "Party",
    "PeerMisbehaved",
    "PiSum",
    "PiSumP1",
    "PiSumP2",
    "PiSumResult",
    "Prices",
    "PrivateId",
    "PrivateIdReceiver",
    "PrivateIdRow",
    "PrivateIdSender",
    "PrivsetError",
    "Progress",
    "Psi",
    "PsiCard",
    "PsiCardReceiver",
    "PsiCardSender",
    "PsiCardSum",
    "PsiCardSumReceiver",
    "PsiCardSumSender",
    "PsiReceiver",
    "PsiSender",
    "PsiShare",
    "PsiShareReceiver",
    "PsiShareSender",
    "Psu",
    "PsuReceiver",
    "PsuSender",
    "Segment",
    "SetOperationParty",
    "SetOperationResult",
    "Share",
    "Signatures",
    "TlsFiles",
    "TransportError",
    "Upsi",
    "UpsiClient",
    "UpsiDatabase",
    "UpsiMatch",
    "UpsiResult",
    "UpsiServer",
    "UpsiServerResult",
    "generate_certs",
    "bucketed",
    "local",
    "ray",
    "open_share",
]
