"""The one module of exceptions.

Every error privgp raises for bad input names the parameter, what was required and what was
found, so that the CLI can print it on one line and exit with status 2.
"""
from __future__ import annotations

from typing import Any


class PrivgpError(Exception):
    """Base class of all privgp errors."""


#: an error shows at most this many characters of the value it refuses (a forged certificate's field can be large)
MAX_SHOWN = 200


def _show(value: Any) -> str:
    try:
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.size <= 6:
                return " ".join(np.array2string(value, separator=", ").split())   # one line
            return f"array of shape {value.shape}"
        if isinstance(value, tuple) and any(isinstance(x, np.ndarray) for x in value):   # e.g. (s1, s2)
            shown = "(" + ", ".join(_show(x) for x in value) + ")"
            return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN - 3] + "..."
    except Exception:  # pragma: no cover - numpy always importable in practice
        pass
    shown = repr(value)   # repr: control characters of a string come out escaped, never raw on a terminal
    if not isinstance(value, str):   # a container's repr may break lines (a 16-line error: red team 25)
        shown = " ".join(shown.split())
    return shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN - 3] + "..."


class InvalidParameterError(PrivgpError, ValueError):
    """A parameter violates its requirement: ``<name> must be <requirement>; got <value>``."""

    def __init__(self, name: str, requirement: str, value: Any) -> None:
        self.name = name
        self.requirement = requirement
        self.value = value
        super().__init__(f"{name} must be {requirement}; got {_show(value)}")

    def __reduce__(self):
        # picklable (worker processes send errors back to the parent); the value may not be
        # picklable itself, so it travels as its displayed text
        return (type(self), (self.name, self.requirement, _show(self.value)))


class AssumptionError(PrivgpError, ValueError):
    """A bound (lemma, proposition) was asked for outside the assumptions it is proved under."""


class DataError(PrivgpError, ValueError):
    """A data file or table cannot be used (missing, unreadable, wrong columns, bad values)."""


class InfeasibleTargetError(PrivgpError, ValueError):
    """A calibration target cannot be met by any admissible value of the free parameter."""


class NoisyReleaseError(PrivgpError, ValueError):
    """A release whose utility forecast says the map would be mostly noise (refused before any charge)."""


class BudgetExceededError(PrivgpError):
    """A release would exceed the privacy budget recorded in the ledger."""


class MissingExtraError(PrivgpError, ImportError):
    """A feature needs a package of an optional extra that is not installed (``pip install 'privgp[EXTRA]'``)."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.feature, self.package, self.extra = feature, package, extra
        super().__init__(f"{feature} needs the optional package {package!r}, which is not installed: "
                         f"pip install 'privgp[{extra}]'")

    def __reduce__(self):
        return (type(self), (self.feature, self.package, self.extra))


class ObjectiveError(PrivgpError):
    """A user's objective (e.g. a Thompson-sampling response source) failed or cannot be used."""


class NumericalError(PrivgpError, ArithmeticError):
    """A computation produced NaN or failed where a guarantee was expected."""


class ClusterError(PrivgpError):
    """The Dask cluster failed while it reduced the records (a worker died, the scheduler went away): the
    release stops before anything is charged or written."""


class CertificateMismatch(NumericalError):
    """``privgp verify``: the certificate disagrees with what its public settings rebuild. ``field``
    names where (a dotted path into certificate.json, e.g. ``certificate.event.M_Y``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field

    def __reduce__(self):
        return (type(self), (self.field, str(self).split(": ", 1)[-1]))
