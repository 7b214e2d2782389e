"""Many compositions at once: an :class:`EventBatch` whose settings are weighted sums of components.

A :class:`ComposedBatch` holds a batch of *components* of one event type, with parameter arrays of
shape (S, K) (S settings, K components each), and weights W of shape (S, K) (non-negative counts).
Setting i stands for the adaptive composition of the components k with W[i, k] > 0, each used
W[i, k] times: its RDP curve is sum_k W[i, k] eps_k(alpha) (Mironov 2017, Prop. 1), exactly the curve
of ``ComposedEvent.of([(component[i, k], W[i, k]) ...])``, computed in one numpy call for every
setting and order. The accountant (:func:`privgp.accounting.accountant.epsilon`) treats it as any
other batch, so one call gives the certified epsilon of S compositions, e.g.

* the same sequence of K rounds at S values of a noise scale (the grid of a calibration), or
* the K prefixes of one sequence of rounds (the spent epsilon after every round: W lower triangular).

It is an accounting shortcut, never a record: it does not round-trip through JSON and has no scalar
:meth:`item`; what is certified or stored is the :class:`~privgp.accounting.ComposedEvent` of the
scalar events (the calibrator re-checks its result with it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError, NumericalError
from .events import EventBatch, PrivacyEvent, _check_orders


@dataclass(frozen=True)
class ComposedBatch(EventBatch):
    """S compositions of K components each (see the module docstring). Build with :meth:`of`."""

    weights: np.ndarray = field(kw_only=True, repr=False)  # (S, K), >= 0
    components: EventBatch = field(kw_only=True, repr=False)
    #: searched in one block (a composition's curve sums over its components)
    by_rows: ClassVar[bool] = False

    @classmethod
    def of(cls, components: EventBatch, weights: ArrayLike | None = None) -> ComposedBatch:
        """Compose along the last axis of ``components`` (shape (S, K), or (K,): the same K components
        for every setting). ``weights``: non-negative use counts broadcast to (S, K) (default 1); e.g.
        components (K,) with lower-triangular ones (K, K) give the K prefixes of one sequence."""
        if not isinstance(components, EventBatch) or isinstance(components, ComposedBatch):
            raise InvalidParameterError("components", "an EventBatch of one event type", type(components).__name__)
        shape = components.shape
        if len(shape) == 1:
            shape = (1,) + shape
        if len(shape) != 2 or shape[1] < 1:
            raise InvalidParameterError("components", "a batch of shape (S, K) or (K,) with K >= 1", components.shape)
        W = np.ones(shape) if weights is None else np.asarray(weights, dtype=float)
        try:
            S, K = np.broadcast_shapes(shape, W.shape if W.ndim == 2 else (1,) + W.shape)
            W = np.broadcast_to(W, (S, K)).copy()
        except ValueError:
            raise InvalidParameterError("weights", f"broadcastable to the components' shape {shape}", W.shape) from None
        if np.any(~np.isfinite(W)) or np.any(W < 0) or np.any(W != np.floor(W)):
            raise InvalidParameterError("weights", "finite non-negative integers (use counts)", "other values")
        params = {k: np.broadcast_to(np.broadcast_to(np.asarray(p, float), components.shape).reshape(shape), (S, K))
                  for k, p in components.params.items()}
        comp = EventBatch(components.event_type, (S, K), params, {}, components.extra)
        return cls(components.event_type, (S,), {}, {}, {}, weights=W, components=comp)

    # -- what the accountant calls ------------------------------------------------------------------
    def alpha_max(self) -> np.ndarray:
        """Per composition: the smallest alpha_max of the components it uses (shape (S,))."""
        with np.errstate(all="ignore"):
            amax = np.broadcast_to(self.event_type._alpha_max_arrays(**self.components.params), self.weights.shape)
        return np.where(self.weights > 0, amax, np.inf).min(axis=1)

    def _curve(self, alpha: np.ndarray) -> np.ndarray:
        """sum_k W[i, k] eps_k(alpha[i, g]) for alpha of shape (S, G); +inf where a used component is."""
        a = alpha[:, :, None]                                        # (S, G, 1)
        p = {k: v[:, None, :] for k, v in self.components.params.items()}   # (S, 1, K)
        vals = self.event_type._masked_rdp_arrays(a, **p)
        W = self.weights[:, None, :]
        return np.where(W > 0, W * vals, 0.0).sum(axis=2)

    def rdp_flat(self, alpha: np.ndarray) -> np.ndarray:
        alpha = np.asarray(alpha, dtype=float)
        return self._curve(np.broadcast_to(alpha, (self.shape[0],) + alpha.shape[1:]))

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        """RDP of every composition at the order(s) alpha: scalar alpha -> (S,); (S, G) -> (S, G)."""
        alpha = _check_orders(alpha)
        with np.errstate(all="ignore"):
            if alpha.ndim == 0:
                out = self._curve(np.full((self.shape[0], 1), float(alpha)))[:, 0]
            else:
                a = np.broadcast_to(alpha.reshape(-1, alpha.shape[-1]) if alpha.ndim > 1 else alpha[None, :],
                                    (self.shape[0], alpha.shape[-1]))
                out = self._curve(a)
        if np.isnan(out).any():
            raise NumericalError("ComposedBatch.rdp: NaN from valid inputs")
        return out

    def flat_params(self) -> dict[str, np.ndarray]:  # pragma: no cover - the accountant uses rdp_flat/alpha_max
        raise InvalidParameterError("ComposedBatch", "used through rdp_flat/alpha_max", "flat_params()")

    def item(self, index: int | tuple[int, ...] = ()) -> PrivacyEvent:
        raise InvalidParameterError("ComposedBatch", "an accounting shortcut without scalar items (build the "
                                    "ComposedEvent of the components instead)", "item()")


__all__ = ["ComposedBatch"]
