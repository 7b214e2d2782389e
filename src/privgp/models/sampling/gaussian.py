"""Square roots of covariance matrices under privgp's jitter policy.

Jitter policy (see :mod:`privgp.models.gp.posterior`): a covariance matrix C is factored as
C + j I = F F^T with the fixed, data-independent jitter j = SAMPLING_JITTER * scale (scale is the
variance scale sigma^2 + eta^2 of the process). If the Cholesky factorisation fails, C is
eigendecomposed, negative eigenvalues are raised to 0 and the jitter is added to every eigenvalue,
so that F F^T = C + j I + P with P positive semidefinite. Either way the factored matrix is C plus a
positive semidefinite matrix: variance is only ever added, never removed.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh, qr
from scipy.linalg.lapack import dpotrf

from ...errors import NumericalError
from ..gp.posterior import SAMPLING_JITTER, symmetrize_inplace

_BLOCK = 1024


def jitter_for(scale: float) -> float:
    """The fixed jitter j = SAMPLING_JITTER * scale added to every covariance that is factored."""
    return SAMPLING_JITTER * float(scale)


def _zero_strict_upper(A: np.ndarray) -> None:
    m = A.shape[0]
    for i in range(0, m, _BLOCK):
        rows = slice(i, min(m, i + _BLOCK))
        A[rows, i:] = np.tril(A[rows, i:], 0)


def psd_factor(C: np.ndarray, scale: float, *, triangular: bool = False, overwrite: bool = False) -> np.ndarray:
    """F with F F^T = C + j I (+ a positive semidefinite repair), j = SAMPLING_JITTER * scale.

    ``triangular=True`` guarantees a lower-triangular invertible F (needed by the lazy path, which
    extends the factor block by block): after an eigenvalue repair the repaired square root is
    triangularised by a QR decomposition, which adds nothing further. ``overwrite=True`` lets the factorisation reuse C's memory (for
    large dense fallbacks); C is then destroyed.
    """
    C = np.array(C, dtype=float, copy=not overwrite, order="C")
    m = C.shape[0]
    if m == 0:
        return np.zeros((0, 0))
    if not np.all(np.isfinite(C)):
        raise NumericalError("covariance matrix to factor contains NaN or inf")
    j = jitter_for(scale)
    symmetrize_inplace(C, _BLOCK)
    diag = np.einsum("ii->i", C)  # a view of the diagonal
    saved = diag.copy()
    diag += j
    # LAPACK potrf in place on the Fortran view C^T (= C): its "lower" triangle is C's upper
    # triangle, so C's strict lower triangle survives a failure and C can be restored.
    Ft, info = dpotrf(C.T, lower=1, clean=0, overwrite_a=1)
    if info == 0:
        L = Ft if np.shares_memory(Ft, C) else np.array(Ft)
        _zero_strict_upper(L)  # L = tril(Ft): lower triangular, L L^T = C + j I
        return L
    # restore C from its intact strict lower triangle and the saved diagonal, then repair
    for i in range(0, m, _BLOCK):
        rows = slice(i, min(m, i + _BLOCK))
        upper = np.triu(np.ones((rows.stop - i, m - i), dtype=bool))
        C[rows, i:] = np.where(upper, C[i:, rows].T, C[rows, i:])
    np.einsum("ii->i", C)[:] = saved
    lam, Q = eigh(C, check_finite=False, overwrite_a=True)
    del C
    F = Q * np.sqrt(np.maximum(lam, 0.0) + j)  # F F^T = C + j I + (negative part of C raised to 0)
    if not triangular:
        return F
    # A lower-triangular factor of the same matrix without any further jitter: F^T = Q' R gives
    # F F^T = R^T R, so L = R^T (columns signed to make the diagonal positive).
    R = qr(F.T, mode="r", check_finite=False, overwrite_a=True)[0]
    L = R.T
    signs = np.where(np.diagonal(L) < 0, -1.0, 1.0)
    return L * signs[None, :]
