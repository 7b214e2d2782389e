"""An RDP curve known only at a finite set of orders (e.g. an entry of a schema-1 ledger file).

Sound extension to every order: a Renyi divergence is non-decreasing in its order (van Erven &
Harremoes 2014, Thm 3), hence so is an RDP guarantee eps(alpha) = sup over neighbours of
D_alpha. A value tabulated at order a_j therefore also bounds every order alpha <= a_j, and

    eps(alpha) <= values[j],   j = the smallest index with orders[j] >= alpha,

with +inf beyond the largest tabulated order. This never interpolates downwards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError, NumericalError
from .events import Neighbouring, PrivacyEvent, _check_orders


@dataclass(frozen=True)
class TabulatedRdpEvent(PrivacyEvent):
    """An RDP curve given by upper bounds ``values`` at increasing ``orders`` (> 1); +inf entries allowed."""

    orders: tuple[float, ...]
    values: tuple[float, ...]
    source: str = ""
    kind: ClassVar[str] = "tabulated_rdp"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("RDP tabulated at finite orders, extended upwards by the monotonicity of Renyi "
                            "divergences in the order (van Erven & Harremoes 2014, Thm 3)")
    vectorised: ClassVar[bool] = False

    def __post_init__(self):
        try:
            o = np.asarray([float(x) for x in self.orders])
            val = np.asarray([float(x) for x in self.values])
        except (TypeError, ValueError):
            raise InvalidParameterError("orders/values", "sequences of numbers", (self.orders, self.values)) from None
        if o.ndim != 1 or o.size == 0 or o.shape != val.shape:
            raise InvalidParameterError("orders/values", "non-empty sequences of equal length", (o.shape, val.shape))
        if np.any(~(o > 1)) or np.any(~np.isfinite(o)) or np.any(np.diff(o) <= 0):
            raise InvalidParameterError("orders", "finite, > 1 and strictly increasing", "not so")
        if np.any(np.isnan(val)) or np.any(val < 0):
            raise InvalidParameterError("values", "non-negative (possibly +inf) RDP values", "NaN or negative values")
        object.__setattr__(self, "orders", tuple(float(x) for x in o))
        object.__setattr__(self, "values", tuple(float(x) for x in val))
        object.__setattr__(self, "source", str(self.source))

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        alpha = _check_orders(alpha)
        o = np.asarray(self.orders)
        val = np.asarray(self.values)
        j = np.searchsorted(o, alpha, side="left")       # first order >= alpha
        out = np.where(j < o.size, val[np.minimum(j, o.size - 1)], np.inf)
        if np.isnan(out).any():  # pragma: no cover - values are checked on construction
            raise NumericalError("TabulatedRdpEvent.rdp: NaN")
        return out

    def candidate_orders(self) -> np.ndarray:
        return np.asarray(self.orders)

    @property
    def alpha_max(self) -> float:
        return float(np.nextafter(self.orders[-1], np.inf))

    def _params(self):  # pragma: no cover - rdp() is overridden
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        from .events import json_number

        return {"type": self.kind, "orders": list(self.orders), "values": [json_number(x) for x in self.values],
                "source": self.source}

    def describe(self) -> str:
        return f"tabulated RDP at {len(self.orders)} orders" + (f" ({self.source})" if self.source else "")
