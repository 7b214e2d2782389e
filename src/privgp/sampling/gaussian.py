"""Square roots of covariance matrices under privgp's jitter policy.

Jitter policy (see :mod:`privgp.gp.posterior`): a covariance matrix C is factored as
C + j I = F F^T with the fixed, data-independent jitter j = SAMPLING_JITTER * scale (scale is the
variance scale sigma^2 + eta^2 of the process). If the Cholesky factorisation fails, C is
eigendecomposed, negative eigenvalues are raised to 0 and the jitter is added to every eigenvalue,
so that F F^T = C + j I + P with P positive semidefinite. Either way the factored matrix is C plus a
positive semidefinite matrix: variance is only ever added, never removed.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cholesky, eigh

from ..errors import NumericalError
from ..gp.posterior import SAMPLING_JITTER


def jitter_for(scale: float) -> float:
    """The fixed jitter j = SAMPLING_JITTER * scale added to every covariance that is factored."""
    return SAMPLING_JITTER * float(scale)


def psd_factor(C: np.ndarray, scale: float, *, triangular: bool = False) -> np.ndarray:
    """F with F F^T = C + j I (+ a positive semidefinite repair), j = SAMPLING_JITTER * scale.

    ``triangular=True`` guarantees a lower-triangular invertible F (needed by the lazy path, which
    extends the factor block by block): after an eigenvalue repair the repaired matrix is
    Cholesky-factored, raising the eigenvalue floor by factors of 10 (each step adds variance) if
    round-off still makes it fail.
    """
    C = np.asarray(C, dtype=float)
    m = C.shape[0]
    if m == 0:
        return np.zeros((0, 0))
    if not np.all(np.isfinite(C)):
        raise NumericalError("covariance matrix to factor contains NaN or inf")
    j = jitter_for(scale)
    C = 0.5 * (C + C.T)
    try:
        return cholesky(C + j * np.eye(m), lower=True, check_finite=False)
    except LinAlgError:
        pass
    lam, Q = eigh(C, check_finite=False)
    floor = j
    for _ in range(8):
        lam_rep = np.maximum(lam, 0.0) + floor
        if not triangular:
            return Q * np.sqrt(lam_rep)
        S = (Q * lam_rep) @ Q.T
        try:
            return cholesky(0.5 * (S + S.T), lower=True, check_finite=False)
        except LinAlgError:
            floor *= 10.0
    raise NumericalError(f"covariance matrix of size {m} could not be factored even with jitter {floor:g}")
