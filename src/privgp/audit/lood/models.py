"""Leave-one-out distinguishability (LOOD) of GP models (seed 003: Ye, Borovykh, Hayou, Shokri, ICLR 2024).

Model (sec. 3): f ~ GP(0, K), labels y = f(x) + N(0, noise) with ``noise`` the paper's sigma^2 (the
reference code's REG_CONST). The prediction distribution at queries Q is the posterior of the latent
f (no label noise added):

    mu_D(Q) = K_QD M_D^-1 Y_D,   Sigma_D(Q) = K_QQ - K_QD M_D^-1 K_DQ,   M_D = K_DD + noise I.

Multi-output (C classes, centred one-hot labels, :func:`centred_one_hot`): C independent GPs with
the same kernel share Sigma_D(Q); divergences add over outputs.

Convention (seed 003, Fig. 1a, Defs C.1 and C.3; docs/notes/seed003_lood.md, sec. 1.1): **D' = D u S**, D the smaller set. LOOD (Def. 2.1, eq. 1) is
dist(f_D(Q), f_D'(Q)); the divergences available (:data:`DIVERGENCES`):

* ``kl``: KL(f_D(Q) || f_D'(Q)) (Def. C.3, eqs. 5-6; base = the larger set D'), the paper's metric;
* ``kl_reverse``: KL(f_D'(Q) || f_D(Q));
* ``mean_distance``: 1/2 |mu_D(Q) - mu_D'(Q)|^2 summed over queries and outputs (Def. C.1, eq. 3);
* ``mean_distance_code``: 1/2 mean over the q C entries (what the reference code computes);
* ``renyi`` / ``renyi_reverse``: D_alpha(f_D || f_D') / D_alpha(f_D' || f_D) of order alpha > 1
  (closed forms of :mod:`privgp.accounting.divergences`; not in the paper, which names Rényi DP
  as the closest DP notion). KL is the alpha -> 1 limit.

Exact updates (docs/notes/seed003_lood.md, sec. 1.5): with b = M_D^-1 K_DS, B = Sigma_D(S, S) + noise I,
e = Y_S - mu_D(S) and c(Q) = Sigma_D(Q, S),

    mu_D'(Q) = mu_D(Q) + c(Q) B^-1 e,      Sigma_D'(Q) = Sigma_D(Q) - c(Q) B^-1 c(Q)^T,

a rank-s update: M_D is factorised once and every S and Q is evaluated without refactorising.
Removing records G from a fitted D' uses the same identities read backwards, from A = M_D'^-1:
B = (A_GG)^-1, e = B (A Y)_G and c(Q) = Sigma_D'(Q, G) B / noise (:meth:`GPPosterior.leave_out`).

At the differing point (docs/notes/seed003_lood.md, sec. 1.5, derived) with v = Sigma_D(S), single S and output:

    LOOD_KL(S) = 1/2 [ v/noise - log(1 + v/noise) + v e^2 / (noise (noise + v)) ],

and for a group, the same in the eigenbasis of V = Sigma_D(S, S) (:meth:`LoodPair.at_differing`).
Because f_D' is f_D conditioned on one more noisy observation of f at S, the law of f(S) is a
sufficient statistic of the pair: for every query set Q, LOOD(Q) <= LOOD(S) and LOOD(S u Q) = LOOD(S)
for every f-divergence and Rényi divergence (docs/notes/seed003_lood.md, sec. 1.6, derived; the paper shows stationarity,
Thm 4.1, and observes maximality, Fig. 4, App. E.1). It needs the same kernel and input
normalisation for D and D' (data-independent preprocessing).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh, solve_triangular

from ... import validation as v
from ...accounting.divergences import kl_gaussian_1d, kl_gaussians, renyi_divergence_gaussians, renyi_gaussian_1d
from ...errors import InvalidParameterError

DIVERGENCES = ("kl", "kl_reverse", "mean_distance", "mean_distance_code", "renyi", "renyi_reverse")


def check_divergence(divergence: str, alpha=None) -> float | None:
    """Validate a divergence name (and alpha > 1 for the Rényi ones); returns alpha or None."""
    if divergence not in DIVERGENCES:
        raise InvalidParameterError("divergence", f"one of {DIVERGENCES}", divergence)
    if divergence.startswith("renyi"):
        if alpha is None:
            raise InvalidParameterError("alpha", "given (> 1) for a Rényi divergence", None)
        return v.greater_than("alpha", alpha, 1.0)
    return None


def centred_one_hot(labels, n_classes: int | None = None) -> np.ndarray:
    """Centred one-hot labels onehot(label) - 1/C (the reference code's multi-output targets)."""
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0 or not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0:
        raise InvalidParameterError("labels", "a non-empty 1-D array of integers >= 0", lab)
    C = int(lab.max()) + 1 if n_classes is None else v.integer("n_classes", n_classes, minimum=2)
    if lab.max() >= C:
        raise InvalidParameterError("labels", f"< n_classes = {C}", int(lab.max()))
    Y = np.full((lab.size, C), -1.0 / C)
    Y[np.arange(lab.size), lab] += 1.0
    return Y


def _responses(name: str, Y, n: int) -> np.ndarray:
    Y = v.finite_array(name, Y, ndim=(1, 2), allow_empty=(n == 0))
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.shape[0] != n:
        raise InvalidParameterError(name, f"{n} rows (one per input point)", f"{Y.shape[0]} rows")
    return Y


def check_distinct(name: str, Q: np.ndarray) -> None:
    """Reject repeated query points: they make the joint predictive covariance singular."""
    if Q.shape[0] > 1 and np.unique(Q, axis=0).shape[0] < Q.shape[0]:
        raise InvalidParameterError(name, "distinct points (a repeated point makes the predictive covariance "
                                    "singular)", f"{Q.shape[0] - np.unique(Q, axis=0).shape[0]} repeated row(s)")


@dataclass(frozen=True)
class Predictive:
    """Prediction distributions of f_D and f_D' at queries Q: means (q, C), shared covariances (q, q)."""

    mean: np.ndarray
    cov: np.ndarray
    mean_prime: np.ndarray
    cov_prime: np.ndarray

    @property
    def outputs(self) -> int:
        return self.mean.shape[1]

    def divergence(self, divergence: str = "kl", alpha=None) -> float:
        """The LOOD of these two prediction distributions (see :data:`DIVERGENCES`)."""
        alpha = check_divergence(divergence, alpha)
        d = self.mean - self.mean_prime
        if divergence == "mean_distance":
            return 0.5 * float(np.sum(d * d))
        if divergence == "mean_distance_code":
            return 0.5 * float(np.mean(d * d))
        a, b = (self.mean, self.cov), (self.mean_prime, self.cov_prime)
        if divergence.endswith("reverse"):
            a, b = b, a
        total = 0.0
        for c in range(self.outputs):
            if divergence.startswith("kl"):
                total += kl_gaussians(a[0][:, c], a[1], b[0][:, c], b[1])
            else:
                total += renyi_divergence_gaussians(alpha, a[0][:, c], a[1], b[0][:, c], b[1])
        return total


def single_query_divergence(divergence: str, var, var_prime, dmu, alpha=None) -> np.ndarray:
    """Vectorised single-query LOOD from the variances Sigma_D, Sigma_D' (any shape) and the mean
    differences ``dmu`` (same shape + an output axis of size C)."""
    alpha = check_divergence(divergence, alpha)
    var, var_prime, dmu = np.asarray(var, float), np.asarray(var_prime, float), np.asarray(dmu, float)
    if divergence == "mean_distance":
        return 0.5 * np.sum(dmu * dmu, axis=-1)
    if divergence == "mean_distance_code":
        return 0.5 * np.mean(dmu * dmu, axis=-1)
    s0, s1 = np.sqrt(var)[..., None], np.sqrt(var_prime)[..., None]
    if divergence.endswith("reverse"):
        s0, s1 = s1, s0
    zero = np.zeros_like(dmu)
    if divergence.startswith("kl"):
        return np.sum(kl_gaussian_1d(dmu, s0, zero, s1), axis=-1)
    return np.sum(renyi_gaussian_1d(alpha, dmu, s0, zero, s1), axis=-1)


def _eigen_divergence(divergence: str, lam, E_rot, noise: float, alpha) -> float:
    """Divergence at the differing points in the eigenbasis of V = Sigma_D(S, S) (eigenvalues lam,
    rotated residuals E_rot = U^T e, one row per eigenvector): independent 1-D pairs with variances
    lam and noise lam / (lam + noise) and mean differences lam / (lam + noise) E_rot. Directions with
    lam = 0 carry no information (both distributions are the same point mass there)."""
    keep = lam > 1e-14 * max(1.0, float(np.max(lam, initial=0.0)))
    lam, E_rot = lam[keep], E_rot[keep]
    if lam.size == 0:
        return 0.0
    shrink = lam / (lam + noise)
    dmu = shrink[:, None] * E_rot
    if divergence == "kl":
        x = lam / noise
        C = E_rot.shape[1]
        return float(0.5 * np.sum(C * (x - np.log1p(x)) + lam * np.sum(E_rot ** 2, 1) / (noise * (noise + lam))))
    return float(np.sum(single_query_divergence(divergence, lam, noise * shrink, dmu, alpha)))


class GPPosterior:
    """The exact GP posterior of a dataset D = (X, Y) in seed 003's parametrisation (see module doc).

    ``kernel`` is any callable ``kernel(X1, X2) -> Gram`` with ``kernel.diag(X)`` (privgp.models.nngp kernels,
    or seed-000 kernels); M_D = K_DD + noise I is Cholesky-factorised once here. An empty X (n = 0)
    gives the prior."""

    def __init__(self, kernel, X, Y, noise: float):
        self.kernel = kernel
        self.noise = v.positive("noise", noise)
        self.X = v.points("X", X, allow_empty=True)
        self.Y = _responses("Y", Y, self.X.shape[0])
        self.n = self.X.shape[0]
        if self.n:
            self._chol = cho_factor(kernel(self.X, self.X) + self.noise * np.eye(self.n), lower=True)
            self._alpha = cho_solve(self._chol, self.Y)
        else:
            self._chol, self._alpha = None, np.zeros((0, self.Y.shape[1]))

    @property
    def dim(self) -> int:
        return self.X.shape[1]

    @property
    def outputs(self) -> int:
        return self.Y.shape[1]

    def _points(self, name, Q, allow_empty=False):
        return v.points(name, Q, dim=self.dim, allow_empty=allow_empty)

    def _whiten(self, Q) -> np.ndarray:
        """L^-1 K_DQ (n, q)."""
        if not self.n:
            return np.zeros((0, Q.shape[0]))
        return solve_triangular(self._chol[0], self.kernel(self.X, Q), lower=True)

    def mean(self, Q) -> np.ndarray:
        Q = self._points("Q", Q)
        if not self.n:
            return np.zeros((Q.shape[0], self.outputs))
        return self.kernel(Q, self.X) @ self._alpha

    def cov(self, Q, Q2=None) -> np.ndarray:
        Q = self._points("Q", Q)
        Q2_ = Q if Q2 is None else self._points("Q2", Q2)
        W1 = self._whiten(Q)
        W2 = W1 if Q2 is None else self._whiten(Q2_)
        out = self.kernel(Q, Q2_) - W1.T @ W2
        return 0.5 * (out + out.T) if Q2 is None else out

    def var(self, Q) -> np.ndarray:
        Q = self._points("Q", Q)
        W = self._whiten(Q)
        return self.kernel.diag(Q) - np.einsum("ij,ij->j", W, W)

    # -- pairs ---------------------------------------------------------------------------------
    def add(self, XS, YS) -> LoodPair:
        """The pair (D, D' = D u S) with D this posterior's data (a rank-s update, no refactorising)."""
        XS = self._points("XS", XS)
        YS = _responses("YS", YS, XS.shape[0])
        if YS.shape[1] != self.outputs:
            raise InvalidParameterError("YS", f"{self.outputs} output column(s) (as Y)", f"{YS.shape[1]} columns")
        check_distinct("XS", XS)
        V = self.cov(XS)
        E = YS - self.mean(XS)
        return LoodPair(self, XS, YS, V, E, removed=None)

    def leave_out(self, indices) -> LoodPair:
        """The pair (D = this data minus the records ``indices``, D' = this data), from M_D'^-1."""
        idx = np.atleast_1d(np.asarray(indices))
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise InvalidParameterError("indices", "a non-empty list of record indices", indices)
        if idx.min() < 0 or idx.max() >= self.n or np.unique(idx).size != idx.size:
            raise InvalidParameterError("indices", f"distinct integers in [0, {self.n})", idx)
        E_idx = np.eye(self.n)[:, idx]
        A_G = cho_solve(self._chol, E_idx)           # columns of A = M^-1 for the group (n, s)
        A_GG = A_G[idx]
        B = np.linalg.inv(0.5 * (A_GG + A_GG.T))
        B = 0.5 * (B + B.T)
        V = B - self.noise * np.eye(idx.size)
        E = B @ self._alpha[idx]
        return LoodPair(self, self.X[idx], self.Y[idx], V, E, removed=idx, A_G=A_G, B=B)

    # -- many pairs at once ----------------------------------------------------------------------
    def add_each(self, Q, XS, YS, divergence: str = "kl", alpha=None) -> np.ndarray:
        """LOOD[i, j] of the single query Q_i for the pair (D, D u {S_j}), every candidate S_j a
        separate pair: one (q, m) matrix from rank-1 updates, O(n^2 (q + m)) after the factorisation."""
        check_divergence(divergence, alpha)
        Q, XS = self._points("Q", Q), self._points("XS", XS)
        YS = _responses("YS", YS, XS.shape[0])
        WQ, WS = self._whiten(Q), self._whiten(XS)
        varQ = self.kernel.diag(Q) - np.einsum("ij,ij->j", WQ, WQ)
        vS = self.kernel.diag(XS) - np.einsum("ij,ij->j", WS, WS)
        Cm = self.kernel(Q, XS) - WQ.T @ WS                     # Sigma_D(Q_i, S_j)
        E = YS - self.mean(XS)                                  # (m, C)
        beta = vS + self.noise
        var_prime = varQ[:, None] - Cm * Cm / beta[None, :]
        dmu = -(Cm / beta[None, :])[..., None] * E[None, :, :]  # mu_D - mu_D'
        return single_query_divergence(divergence, np.broadcast_to(varQ[:, None], Cm.shape), var_prime, dmu, alpha)

    def leave_each_out(self, Q, divergence: str = "kl", alpha=None) -> np.ndarray:
        """LOOD[i, j] of the single query Q_i for the pair (D minus record j, D), all records j: (q, n)."""
        check_divergence(divergence, alpha)
        Q = self._points("Q", Q)
        A = self._inverse()
        KA = self.kernel(Q, self.X) @ A                         # Sigma_D'(Q, X) / noise
        dA = np.diag(A)
        Cm = KA / dA[None, :]                                   # c = Sigma_{D-j}(Q, x_j)
        var_prime = self.var(Q)
        var = var_prime[:, None] + Cm * Cm * dA[None, :]        # + c^2 / beta, beta = 1 / A_jj
        dmu = -(Cm[..., None] * self._alpha[None, :, :])        # mu_D - mu_D' = -c e / beta, e / beta = (A Y)_j
        return single_query_divergence(divergence, var, np.broadcast_to(var_prime[:, None], Cm.shape), dmu, alpha)

    def leave_each_out_at_record(self, divergence: str = "kl", alpha=None) -> np.ndarray:
        """LOOD of every record j queried at itself, pair (D minus record j, D): closed form from
        A = M_D^-1 alone (v_j = 1/A_jj - noise, e_j = (A Y)_j / A_jj); shape (n,). This is the
        largest LOOD over all query sets for each record (sufficient statistic, module doc)."""
        alpha = check_divergence(divergence, alpha)
        A = self._inverse()
        dA = np.diag(A)
        vS = np.maximum(1.0 / dA - self.noise, 0.0)
        E = self._alpha / dA[:, None]
        out = np.empty(self.n)
        for j in range(self.n):
            out[j] = _eigen_divergence(divergence, vS[j:j + 1], E[j:j + 1], self.noise, alpha)
        return out

    def _inverse(self) -> np.ndarray:
        if not self.n:
            raise InvalidParameterError("X", "non-empty to leave records out", "an empty dataset")
        A = cho_solve(self._chol, np.eye(self.n))
        return 0.5 * (A + A.T)


class LoodPair:
    """A leave-one(-group)-out pair (D, D' = D u S) built on one factorised posterior (see
    :meth:`GPPosterior.add` and :meth:`GPPosterior.leave_out`). Holds V = Sigma_D(S, S) and the
    residuals E = Y_S - mu_D(S); evaluates both prediction distributions at any queries."""

    def __init__(self, base: GPPosterior, XS, YS, V, E, *, removed, A_G=None, B=None):
        self.base = base
        self.XS, self.YS = XS, YS
        self.V = 0.5 * (V + V.T)
        self.E = E
        self.removed = removed
        self.noise = base.noise
        self.B = self.V + self.noise * np.eye(XS.shape[0]) if B is None else B
        self._Bchol = cho_factor(self.B, lower=True)
        self._A_G = A_G
        self._Binv_e = cho_solve(self._Bchol, E)
        self._b_S: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.XS.shape[0]

    @property
    def b_S(self) -> np.ndarray:
        """M_D^-1 K_DS (n, s), computed once (D the smaller dataset; pairs from :meth:`GPPosterior.add`)."""
        if self._b_S is None:
            b = self.base
            self._b_S = cho_solve(b._chol, b.kernel(b.X, self.XS)) if b.n else np.zeros((0, self.size))
        return self._b_S

    def _c(self, Q) -> np.ndarray:
        """c(Q) = Sigma_D(Q, S) (q, s)."""
        b = self.base
        if self.removed is None:
            return b.cov(Q, self.XS)
        # Sigma_D'(Q, G) = noise (K_QX A)_G ; c = Sigma_D'(Q, G) B / noise
        return (b.kernel(Q, b.X) @ self._A_G) @ self.B

    def predictive(self, Q) -> Predictive:
        """Means and covariances of f_D(Q) and f_D'(Q) (rank-s update of the base posterior)."""
        b = self.base
        Q = b._points("Q", Q)
        mu, S = b.mean(Q), b.cov(Q)
        c = self._c(Q)
        dmu = c @ self._Binv_e
        dS = c @ cho_solve(self._Bchol, c.T)
        dS = 0.5 * (dS + dS.T)
        if self.removed is None:
            return Predictive(mu, S, mu + dmu, S - dS)
        return Predictive(mu - dmu, S + dS, mu, S)

    def lood(self, Q, divergence: str = "kl", alpha=None) -> float:
        """LOOD(Q; D, D') (Def. 2.1) for a query set Q (q, d); multi-query when q > 1."""
        Q = self.base._points("Q", Q)
        check_distinct("Q", Q)
        return self.predictive(Q).divergence(divergence, alpha)

    def at_differing(self, divergence: str = "kl", alpha=None) -> float:
        """LOOD at Q = S (all differing points queried jointly), closed form (docs/notes/seed003_lood.md, sec. 1.5):
        the maximum over all query sets for the f- and Rényi divergences."""
        alpha = check_divergence(divergence, alpha)
        if divergence.startswith("mean"):
            d = self.V @ self._Binv_e
            return 0.5 * float(np.sum(d * d)) if divergence == "mean_distance" else 0.5 * float(np.mean(d * d))
        lam, U = eigh(self.V)
        lam = np.maximum(lam, 0.0)
        return _eigen_divergence(divergence, lam, U.T @ self.E, self.noise, alpha)
