"""Exact GP posteriors in the parametrisation of seed 000, sec. 2.

    mu_D(x)     = k_X(x)^T (K_XX + r^2 I)^{-1} y
    k_D(x, x')  = k(x, x') - k_X(x)^T (K_XX + r^2 I)^{-1} k_X(x')

with effective ridge r (r^2 = lambda^2 / sigma^2, the noise-to-signal ratio) and kernel scale sigma:
the posterior is GP(mu_D, sigma^2 k_D). ``kD*`` methods return the normalised covariance k_D;
``cov``/``var`` include the factor sigma^2.

Jitter policy
-------------
The ridge r > 0 makes K + r^2 I positive definite, so no jitter is ever added to it. Round-off can
make a computed posterior variance slightly negative or a posterior covariance matrix slightly
indefinite; privgp only ever *raises* such values:

* posterior variances are clipped up to 0 (``kD_diag``, ``var``, ``batched_mean_var``,
  ``EigenPosterior``), and negative round-off eigenvalues of K in ``EigenPosterior`` are raised
  to 0 (which can only increase k_D);
* samplers factor the covariance plus the fixed, data-independent jitter
  ``SAMPLING_JITTER * I`` (times sigma^2 + eta^2); if Cholesky still fails they fall back to an
  eigendecomposition with negative eigenvalues raised to 0 (``privgp.models.sampling.psd_factor``);
* the circulant-embedding grid sampler raises negative eigenvalues of round-off size
  (changing no covariance entry by more than SAMPLING_JITTER) to 0, and otherwise refuses
  (``privgp.models.sampling.grid``).

Each of these adds a positive semidefinite matrix, i.e. adds variance and never removes it.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dtrtri

from ... import validation as v
from ...errors import NumericalError
from ..kernels import Kernel

SAMPLING_JITTER = 1e-10
_CHUNK = 2**20  # elements of the (datasets, queries, n) temporaries processed at once


def symmetrize_inplace(A: np.ndarray, block: int = 1024) -> np.ndarray:
    """A <- (A + A^T) / 2 in place, block by block (no m x m temporary)."""
    m = A.shape[0]
    for i in range(0, m, block):
        bi = slice(i, min(m, i + block))
        D = A[bi, bi]
        D[...] = 0.5 * (D + D.T)
        for j in range(i + block, m, block):
            bj = slice(j, min(m, j + block))
            avg = 0.5 * (A[bi, bj] + A[bj, bi].T)
            A[bi, bj] = avg
            A[bj, bi] = avg.T
    return A


def _check_hyper(r, sigma):
    return v.positive("r", r), v.positive("sigma", sigma)


def _single_point(name: str, x, dim: int) -> np.ndarray:
    """One input location as a (1, dim) array; a scalar or a flat array of length dim is accepted."""
    arr = v.finite_array(name, x, ndim=(0, 1, 2))
    if arr.size != dim or (arr.ndim == 2 and arr.shape[0] != 1):
        raise v.InvalidParameterError(name, f"a single point of dimension {dim}", f"shape {arr.shape}")
    return arr.reshape(1, dim)


def aggregate_duplicates(X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct inputs, mean response at each, count at each) of a dataset.

    Records sharing an input enter the exact posterior only through their count c and mean ybar:
    c observations y_j = f(x) + noise of variance sigma^2 r^2 have the likelihood of one observation
    ybar = f(x) + noise of variance sigma^2 r^2 / c, up to a factor free of f (ybar is sufficient).
    So the posterior of the aggregated data with noise r^2 / c is *exactly* the posterior of the
    original data (the sampler that uses it is exact, not an approximation). Distinct inputs are
    returned in lexicographic order.
    """
    X = v.points("X", X)
    y = v.responses("y", y, X.shape[0])
    Xu, inv, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    ybar = np.bincount(inv, weights=y, minlength=Xu.shape[0]) / counts
    return Xu, ybar, counts.astype(float)


class ExactPosterior:
    """The exact posterior Pi_D = GP(mu_D, sigma^2 k_D) of one dataset D = (X, y).

    ``counts`` (optional, >= 1 each): observation i is the mean of counts[i] records at X[i], i.e.
    has noise variance sigma^2 r^2 / counts[i] (:func:`aggregate_duplicates`); the posterior is then
    that of the original records. :meth:`aggregated` builds it from raw records."""

    def __init__(self, kernel: Kernel, X, y, r: float, sigma: float = 1.0, counts=None, *, gram=None):
        """``gram``: k(X, X) precomputed (n x n), e.g. from distances computed once for several
        lengthscales; it is not modified."""
        self.kernel = kernel
        self.r, self.sigma = _check_hyper(r, sigma)
        self.X = v.points("X", X)
        self.y = v.responses("y", y, self.X.shape[0])
        if counts is None:
            self.counts = None
        else:
            c = v.finite_array("counts", counts, ndim=1, allow_empty=True)
            if c.shape[0] != self.X.shape[0] or np.any(c < 1):
                raise v.InvalidParameterError("counts", f"{self.X.shape[0]} values >= 1", c)
            self.counts = c
        if gram is not None:
            gram = np.asarray(gram, dtype=float)
            n = self.X.shape[0]
            if gram.shape != (n, n):
                raise v.InvalidParameterError("gram", f"k(X, X) of shape {(n, n)}", gram.shape)
        self._factor(gram)

    @classmethod
    def aggregated(cls, kernel: Kernel, X, y, r: float, sigma: float = 1.0) -> ExactPosterior:
        """The exact posterior of (X, y) computed on its distinct inputs (one unknown per site)."""
        Xu, ybar, counts = aggregate_duplicates(X, y)
        return cls(kernel, Xu, ybar, r, sigma, counts=counts)

    @classmethod
    def prior(cls, kernel: Kernel, dim: int, r: float, sigma: float = 1.0) -> ExactPosterior:
        """The posterior of the empty dataset, i.e. the prior GP(0, sigma^2 k)."""
        self = cls.__new__(cls)
        self.kernel = kernel
        self.r, self.sigma = _check_hyper(r, sigma)
        self.X = np.zeros((0, v.integer("dim", dim, minimum=1)))
        self.y = np.zeros(0)
        self.counts = None
        self._factor()
        return self

    def _factor(self, gram=None):
        n = self.X.shape[0]
        self.n = n
        self._Linv = None
        if n == 0:
            self._chol = None
            self._w = np.zeros(0)
            return
        A = self.kernel(self.X) if gram is None else np.array(gram, dtype=float)
        noise = self.r**2 if self.counts is None else self.r**2 / self.counts
        A[np.diag_indices(n)] += noise
        try:
            self._chol = cho_factor(A, lower=True, overwrite_a=True)
        except np.linalg.LinAlgError:   # a traceback before (red team 25: r = 1e-8)
            raise NumericalError(f"K + r^2 I is not positive definite in float64 (r = {self.r:g} is too small for "
                                 f"these {n} inputs, whose kernel matrix is numerically singular): use a larger r") \
                from None
        self._w = cho_solve(self._chol, self.y)

    @property
    def dim(self) -> int:
        return self.X.shape[1]

    def _kq(self, Xq) -> np.ndarray:
        return self.kernel(self.X, v.points("Xq", Xq, dim=self.dim, allow_empty=True))

    def _lower_factor(self) -> np.ndarray:
        """The Cholesky factor L of K + N (lower triangle); the callers handle the empty dataset."""
        assert self._chol is not None, "no Cholesky factor: the dataset is empty"
        return self._chol[0]

    def _whiten(self, Kxq: np.ndarray) -> np.ndarray:
        return solve_triangular(self._lower_factor(), Kxq, lower=True)

    def mean(self, Xq) -> np.ndarray:
        """Posterior mean mu_D at the rows of Xq."""
        Xq = v.points("Xq", Xq, dim=self.dim)
        if self.n == 0:
            return np.zeros(Xq.shape[0])
        return self._kq(Xq).T @ self._w

    def kD(self, Xq1, Xq2=None) -> np.ndarray:
        """Normalised posterior covariance k_D(Xq1, Xq2) (matrix)."""
        Xq1 = v.points("Xq", Xq1, dim=self.dim)
        Xq2 = Xq1 if Xq2 is None else v.points("Xq2", Xq2, dim=self.dim)
        out = self.kernel(Xq1, Xq2)
        if self.n == 0:
            return out
        V1 = self._whiten(self._kq(Xq1))
        V2 = V1 if Xq2 is Xq1 else self._whiten(self._kq(Xq2))
        out -= V1.T @ V2
        if Xq2 is Xq1:
            symmetrize_inplace(out)
        return out

    def kD_diag(self, Xq) -> np.ndarray:
        """Normalised posterior variance k_D(x, x) at each row of Xq (clipped up to >= 0)."""
        Xq = v.points("Xq", Xq, dim=self.dim)
        prior = self.kernel.diag(Xq)
        if self.n == 0:
            return prior
        V = self._whiten(self._kq(Xq))
        return np.maximum(prior - np.einsum("ij,ij->j", V, V), 0.0)

    def mean_kD_diag(self, Xq, *, cross=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`mean` and :meth:`kD_diag` at the rows of Xq from one k(X, Xq) and one triangular
        product L^-1 k(X, Xq) (n^2 m / 2 multiply-adds: half of :class:`EigenPosterior`'s product; L^-1 is
        formed once, n^3 / 3, which is ~2x faster than a triangular solve with m right-hand sides). For
        statistics of many datasets (the excursion studies); the samplers keep :meth:`kD` (solves).
        ``cross``: k(Xq, X) precomputed, shape (m, n)."""
        Xq = v.points("Xq", Xq, dim=self.dim)
        prior = self.kernel.diag(Xq)
        if self.n == 0:
            return np.zeros(Xq.shape[0]), prior
        if cross is None:
            Kxq = self._kq(Xq)
        else:
            cross = np.asarray(cross, dtype=float)
            if cross.shape != (Xq.shape[0], self.n):
                raise v.InvalidParameterError("cross", f"k(Xq, X) of shape {(Xq.shape[0], self.n)}", cross.shape)
            Kxq = cross.T
        mean = Kxq.T @ self._w
        V = dtrmm(1.0, self._inverse_factor(), Kxq, lower=1)   # L^-1 k(X, Xq), (n, m)
        return mean, np.maximum(prior - np.einsum("ij,ij->j", V, V), 0.0)

    def _inverse_factor(self) -> np.ndarray:
        """L^-1 for the Cholesky factor L of K + N (lower triangle; the strict upper one is not used)."""
        if self._Linv is None:
            Linv, info = dtrtri(self._lower_factor(), lower=1)
            if info != 0:  # pragma: no cover - a Cholesky factor of K + N has a positive diagonal
                raise NumericalError(f"inverting the Cholesky factor failed (LAPACK info {info})")
            self._Linv = np.tril(Linv)
        return self._Linv

    def effective_dimension(self) -> float:
        """d_eff = tr K (K + N)^{-1} = n - tr N (K + N)^{-1} (seed 000, App. D), N the noise covariance
        (r^2 I, or r^2 / counts): [(K + N)^{-1}]_ii is the squared norm of column i of L^-1. The same
        number as :func:`privgp.tasks.excursion.effective_dimension` on the eigenvalues of K."""
        if self.n == 0:
            return 0.0
        noise = self.r**2 if self.counts is None else self.r**2 / self.counts
        Linv = self._inverse_factor()
        return float(self.n - np.sum(noise * np.einsum("ki,ki->i", Linv, Linv)))

    def cov(self, Xq1, Xq2=None) -> np.ndarray:
        """Posterior covariance sigma^2 k_D(Xq1, Xq2)."""
        out = self.kD(Xq1, Xq2)
        out *= self.sigma**2
        return out

    def var(self, Xq) -> np.ndarray:
        """Posterior variance sigma^2 k_D(x, x)."""
        return self.sigma**2 * self.kD_diag(Xq)

    def with_point(self, x, y: float) -> ExactPosterior:
        """The posterior of D with (x, y) appended (a refit)."""
        x = _single_point("x", x, self.dim)
        counts = None if self.counts is None else np.append(self.counts, 1.0)
        return ExactPosterior(self.kernel, np.vstack([self.X, x]), np.append(self.y, float(y)),
                              self.r, self.sigma, counts=counts)


def one_step_update(core: ExactPosterior, x, y: float, XT) -> tuple[np.ndarray, np.ndarray]:
    """Mean and normalised covariance on XT after adding (x, y) to the core D_- (seed 000, eq. 9).

        mu_D(X_T) = mu_{D-}(X_T) + (y - mu_{D-}(x)) / (v(x) + r^2) c(x)
        K_D       = C - c(x) c(x)^T / (v(x) + r^2)

    with C = k_{D-}(X_T, X_T), c(x) = k_{D-}(X_T, x), v(x) = k_{D-}(x, x).
    """
    x = _single_point("x", x, core.dim)
    XT = v.points("XT", XT, dim=core.dim)
    C = core.kD(XT)
    c = core.kD(XT, x)[:, 0]
    vx = float(core.kD(x)[0, 0])
    denom = vx + core.r**2
    mean = core.mean(XT) + (float(y) - float(core.mean(x)[0])) / denom * c
    return mean, C - np.outer(c, c) / denom


def _query_points(Xq, d: int) -> np.ndarray:
    Xq = v.finite_array("Xq", Xq, ndim=(1, 2, 3))
    if Xq.ndim == 1:
        Xq = Xq[:, None]
    if Xq.shape[-1] != d:
        raise v.InvalidParameterError("Xq", f"points of dimension {d}", f"dimension {Xq.shape[-1]}")
    return Xq


def batched_mean_var(kernel: Kernel, X, y, Xq, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and normalised variance for a batch of equal-size datasets in one call.

    X: (B, n, d) or (B, n); y: (B, n); Xq: (m, d) shared or (B, m, d) per dataset.
    Returns mean (B, m) and k_D(x, x) (B, m), clipped up to >= 0 (jitter policy).
    One batched LU solve of (K + r^2 I) [y, k_X(Xq)] per dataset (LAPACK via numpy's gufunc).
    """
    r = v.positive("r", r)
    X = v.batched_points("X", X)
    B, n, d = X.shape
    y = v.finite_array("y", y, ndim=2)
    if y.shape != (B, n):
        raise v.InvalidParameterError("y", f"of shape {(B, n)} (one response per input)", y.shape)
    Xq = _query_points(Xq, d)
    if Xq.ndim == 3 and Xq.shape[0] != B:
        raise v.InvalidParameterError("Xq", f"shared (m, d) or per dataset ({B}, m, d)", Xq.shape)
    m = Xq.shape[-2]
    mean = np.empty((B, m))
    var = np.empty((B, m))
    prior = kernel.diag(Xq)
    step = max(1, _CHUNK // (n * (n + m + 1)))  # datasets per chunk: bounded temporaries
    diag = np.arange(n)
    for b0 in range(0, B, step):
        b = slice(b0, min(B, b0 + step))
        Xb = X[b]
        A = kernel(Xb)
        A[..., diag, diag] += r**2
        Kxq = kernel(Xb, Xq[b] if Xq.ndim == 3 else Xq)  # (b, n, m)
        rhs = np.empty(Kxq.shape[:-1] + (m + 1,))
        rhs[..., 0] = y[b]
        rhs[..., 1:] = Kxq
        sol = np.linalg.solve(A, rhs)
        mean[b] = np.matmul(y[b, None, :], sol[..., 1:])[:, 0, :]  # y^T A^{-1} k_X(x)
        var[b] = (prior[b] if prior.ndim == 2 else prior) - np.sum(Kxq * sol[..., 1:], axis=1)
    return mean, np.maximum(var, 0.0, out=var)


class EigenPosterior:
    """All values of r from one eigendecomposition per (dataset, lengthscale).

    With K_XX = Q diag(lam) Q^T and B = k(Xq, X) Q:
        mu_r       = B diag(1 / (lam + r^2)) Q^T y
        k_D,r(x,x) = k(x, x) - sum_j B_j^2 / (lam_j + r^2)
    Batched over leading dataset axes: X (B, n, d), y (B, n); a single dataset is (n, d), (n,).
    Negative round-off eigenvalues of K are raised to 0 (adds variance, see the jitter policy).
    Every contraction is a batched matrix product (BLAS).

    ``gram`` (k(X, X), shape (B, n, n)) and ``cross`` of :meth:`mean_var` (k(Xq, X), shape (B, m, n))
    may be passed precomputed, e.g. from distances computed once for several lengthscales.
    """

    def __init__(self, kernel: Kernel, X, y, *, gram=None):
        self.kernel = kernel
        X = np.asarray(X, dtype=float)
        self.single = X.ndim == 1 or (X.ndim == 2 and np.asarray(y).ndim == 1)
        if self.single:
            X = v.points("X", X)[None]
            y = v.responses("y", y, X.shape[1])[None]
        else:
            X = v.batched_points("X", X)
            y = v.finite_array("y", y, ndim=2)
            if y.shape != X.shape[:2]:
                raise v.InvalidParameterError("y", f"of shape {X.shape[:2]}", y.shape)
        self.X, self.y = X, y
        if gram is None:
            gram = kernel(X)
        elif np.shape(gram) != X.shape[:2] + X.shape[1:2]:
            raise v.InvalidParameterError("gram", f"k(X, X) of shape {X.shape[:2] + X.shape[1:2]}", np.shape(gram))
        lam, Q = np.linalg.eigh(gram)
        self.lam = np.maximum(lam, 0.0)
        self.Q = Q
        self.Qty = np.matmul(y[:, None, :], Q)[:, 0, :]  # (B, n): Q^T y

    def _squeeze(self, a):
        return a[:, 0] if self.single else a

    def mean_var(self, Xq, r_values, *, cross=None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and normalised variance, shapes (R, B, m) (or (R, m) for a single dataset).
        ``cross``: k(Xq, X) precomputed, shape (B, m, n) (or (m, n) for a single dataset)."""
        r = np.atleast_1d(v.finite_array("r_values", r_values))
        if r.ndim != 1 or np.any(r <= 0):
            raise v.InvalidParameterError("r_values", "all > 0", r)
        Xq = _query_points(Xq, self.X.shape[-1])
        if Xq.ndim == 3:
            raise v.InvalidParameterError("Xq", "query points shared by all datasets, shape (m, d)", Xq.shape)
        inv = 1.0 / (self.lam[:, None, :] + (r**2)[None, :, None])  # (B, R, n)
        nb, n = self.X.shape[:2]
        m, R = Xq.shape[0], r.shape[0]
        mean = np.empty((R, nb, m))
        var = np.empty((R, nb, m))
        if cross is not None:
            cross = np.asarray(cross, dtype=float)
            cross = cross[None] if self.single and cross.ndim == 2 else cross
            if cross.shape != (nb, m, n):
                raise v.InvalidParameterError("cross", f"k(Xq, X) of shape {(nb, m, n)}", cross.shape)
        prior = self.kernel.diag(Xq)
        step = max(1, _CHUNK // max(1, m * n))  # datasets per chunk: bounded temporaries, reused memory
        for b0 in range(0, nb, step):
            b = slice(b0, min(nb, b0 + step))
            K = self.kernel(Xq, self.X[b]) if cross is None else cross[b]
            Bm = np.matmul(K, self.Q[b])  # (b, m, n)
            # the r values as rows, (b, R, n) @ (b, n, m): the (R, m) layout directly, and a faster
            # product than (m, n) @ (n, R) for few r
            mean[:, b] = np.matmul(inv[b] * self.Qty[b, None, :], Bm.transpose(0, 2, 1)).transpose(1, 0, 2)
            np.multiply(Bm, Bm, out=Bm)
            var[:, b] = prior - np.matmul(inv[b], Bm.transpose(0, 2, 1)).transpose(1, 0, 2)
        np.maximum(var, 0.0, out=var)
        return self._squeeze(mean), self._squeeze(var)

    def effective_dimension(self, r_values) -> np.ndarray:
        """d_eff = tr K (K + r^2 I)^{-1} = sum_j lam_j / (lam_j + r^2), shape (R, B) or (R,)."""
        r = np.atleast_1d(v.finite_array("r_values", r_values))
        if r.ndim != 1 or np.any(r <= 0):
            raise v.InvalidParameterError("r_values", "all > 0", r)
        out = np.sum(self.lam[None] / (self.lam[None] + (r**2)[:, None, None]), axis=-1)
        return self._squeeze(out)
