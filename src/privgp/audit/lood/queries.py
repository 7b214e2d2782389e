"""Optimal queries for LOOD (seed 003, sec. 4-5, eq. 2) and reconstruction of the differing data.

``argmax_Q dist(f_D(Q), f_D'(Q))`` over query sets Q (q, d), by Adam (Kingma & Ba) on analytic
gradients (numpy; no autodiff framework). The gradient of the multi-query KL (Def. C.3) and of the
mean distance (Def. C.1) is reverse-mode through the rank-s update of :mod:`.lood`:

    KL = 1/2 [ C (log|S1| - log|S0| - q + tr(S1^-1 S0)) + sum_c dmu_c^T S1^-1 dmu_c ],
    dKL/dS0 = C (S1^-1 - S0^-1) / 2,  dKL/dS1 = [C (S1^-1 - S1^-1 S0 S1^-1) - S1^-1 R S1^-1] / 2,
    dKL/ddmu = S1^-1 dmu,   R = dmu dmu^T,

with (S0, S1) = (Sigma_D, Sigma_D') for ``kl`` and swapped for ``kl_reverse``; then
Sigma_D' = Sigma_D - c B^-1 c^T, mu_D' - mu_D = c B^-1 e, c = K_QS - K_QD b,
Sigma_D = K_QQ - K_QD M_D^-1 K_DQ, and the kernels' own vector-Jacobian products
(:mod:`privgp.models.nngp`). For q = |S| = 1 this is the single-query formula of docs/notes/seed003_lood.md, sec. 1.6; the
paper's Thm 4.1 expression is twice it (its 1/2 is dropped), which does not change stationarity.

Reference-code choices kept (docs/notes/seed003_lood.md, sec. 2.1): Adam with default betas, no constraints on Q,
random-uniform initialisation over a box (the pixel domain) or from training records, several
restarts. Changed: the best iterate is tracked at every step (the code only every 10 steps), and
the early stop is opt-in (``patience``). Because LOOD(S) is the global maximum over query sets
(:mod:`.lood`), ``optimised LOOD / LOOD(S)`` <= 1 measures how far the optimiser got.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ... import validation as v
from ...errors import InvalidParameterError, NumericalError
from .models import GPPosterior, LoodPair, check_distinct

OBJECTIVES = ("kl", "kl_reverse", "mean_distance", "mean_distance_code")


#: a Cholesky pivot whose square is below this fraction of the largest diagonal entry counts as singular
#: (LAPACK may factor a numerically singular matrix with tiny positive pivots, depending on the build)
PIVOT_TOLERANCE = 1e-10


def _chol(name, S):
    try:
        ch = cho_factor(S, lower=True)
    except np.linalg.LinAlgError:
        ch = None
    if ch is None or not np.min(np.diag(ch[0])) ** 2 > PIVOT_TOLERANCE * float(np.max(np.abs(np.diag(S)))):
        raise InvalidParameterError(name, "positive definite (distinct, not nearly repeated query points)",
                                    "a singular predictive covariance")
    return ch


def _logdet(ch) -> float:
    return 2.0 * float(np.sum(np.log(np.diag(ch[0]))))


def _kl_cotangents(dmu, S0, S1):
    """KL(N(m0, S0) || N(m1, S1)) summed over the C columns of dmu = m0 - m1 (shared covariances), and
    its derivatives in S0, S1 and dmu."""
    q, C = dmu.shape
    c0, c1 = _chol("Sigma", S0), _chol("Sigma", S1)
    S1inv = cho_solve(c1, np.eye(q))
    S0inv = cho_solve(c0, np.eye(q))
    S1inv_dmu = S1inv @ dmu
    P = S1inv @ S0
    kl = 0.5 * (C * (_logdet(c1) - _logdet(c0) - q + np.trace(P)) + float(np.sum(dmu * S1inv_dmu)))
    G0 = 0.5 * C * (S1inv - S0inv)
    G1 = 0.5 * (C * (S1inv - P @ S1inv) - S1inv_dmu @ S1inv_dmu.T)
    return max(kl, 0.0), 0.5 * (G0 + G0.T), 0.5 * (G1 + G1.T), S1inv_dmu


def lood_value_and_grad(pair: LoodPair, Q, objective: str = "kl") -> tuple[float, np.ndarray]:
    """LOOD(Q) and its gradient in Q (q, d) for a pair built by :meth:`GPPosterior.add` (the base is
    D, whose data the adversary knows). The kernel must provide ``vjp`` (privgp.models.nngp kernels)."""
    if objective not in OBJECTIVES:
        raise InvalidParameterError("objective", f"one of {OBJECTIVES}", objective)
    if pair.removed is not None:
        raise InvalidParameterError("pair", "built by GPPosterior.add (query optimisation knows D)", "a leave_out pair")
    b = pair.base
    k = b.kernel
    if not hasattr(k, "vjp"):
        raise InvalidParameterError("kernel", "a kernel with gradients (privgp.models.nngp.RBF or NNGP)", type(k).__name__)
    Q = b._points("Q", Q)
    q = Q.shape[0]
    KQX = k(Q, b.X) if b.n else np.zeros((q, 0))
    KQS = k(Q, pair.XS)
    MinvKXQ = cho_solve(b._chol, KQX.T, check_finite=False) if b.n else np.zeros((0, q))
    Sig = k(Q, Q) - KQX @ MinvKXQ
    Sig = 0.5 * (Sig + Sig.T)
    bS = pair.b_S                                               # M_D^-1 K_DS (n, s)
    c = KQS - KQX @ bS
    cBinv = cho_solve(pair._Bchol, c.T, check_finite=False).T   # c B^-1 (q, s)
    delta = c @ pair._Binv_e                                    # mu_D' - mu_D (q, C)
    Sig_p = Sig - cBinv @ c.T
    Sig_p = 0.5 * (Sig_p + Sig_p.T)
    if objective.startswith("mean"):
        scale = 1.0 if objective == "mean_distance" else 1.0 / delta.size
        val = 0.5 * scale * float(np.sum(delta * delta))
        G_S, G_Sp, G_delta = np.zeros((q, q)), np.zeros((q, q)), scale * delta
    elif objective == "kl":
        val, G_S, G_Sp, G_delta = _kl_cotangents(-delta, Sig, Sig_p)
        G_delta = -G_delta
    else:
        val, G_Sp, G_S, G_delta = _kl_cotangents(delta, Sig_p, Sig)
    G_c = -2.0 * G_Sp @ cBinv + G_delta @ pair._Binv_e.T
    G_tot = G_S + G_Sp
    G_KQX = -2.0 * G_tot @ MinvKXQ.T - G_c @ bS.T
    grad = k.vjp(Q, pair.XS, G_c) + k.vjp(Q, Q, 2.0 * G_tot)
    if b.n:
        grad += k.vjp(Q, b.X, G_KQX)
    if not np.all(np.isfinite(grad)) or not np.isfinite(val):
        raise NumericalError("lood_value_and_grad: non-finite LOOD or gradient")
    return val, grad


@dataclass(frozen=True)
class QueryOptResult:
    """Outcome of :func:`optimize_queries`: the best query set over all restarts and steps."""

    best_Q: np.ndarray
    best_value: float
    value_at_S: float            # LOOD at Q = S (the global maximum for KL; for mean distance only a reference)
    objective: str
    restart_values: tuple[float, ...]   # best value of each restart
    history: np.ndarray = field(repr=False)   # (restarts, steps + 1) objective values along the runs
    steps: int = 0
    initial_Q: np.ndarray | None = field(default=None, repr=False)
    iterates: dict = field(default_factory=dict, repr=False)   # step -> Q of the first restart (keep_iterates)

    @property
    def ratio(self) -> float:
        """optimised LOOD / LOOD(S): <= 1 up to round-off for the KL objectives (convergence metric)."""
        return self.best_value / self.value_at_S if self.value_at_S > 0 else float("nan")

    def to_dict(self) -> dict:
        return {"objective": self.objective, "best_value": self.best_value, "value_at_S": self.value_at_S,
                "ratio_to_S": self.ratio, "restart_values": list(self.restart_values), "steps": self.steps}


def initial_queries(kind, q: int, *, pair: LoodPair, rng: np.random.Generator, box=None) -> np.ndarray:
    """Initial query set: ``"uniform"`` over ``box`` = (low, high) (scalars or per-feature arrays;
    the reference code draws pixels U(0, 255)), ``"data"`` (q distinct records of D), or an array."""
    d = pair.base.dim
    if isinstance(kind, str):
        if kind == "uniform":
            if box is None:
                raise InvalidParameterError("box", "given (low, high) for a uniform initialisation", None)
            lo, hi = (np.broadcast_to(np.asarray(t, float), (d,)) for t in box)
            if not np.all(np.isfinite(lo) & np.isfinite(hi) & (hi > lo)):
                raise InvalidParameterError("box", "finite (low, high) with high > low", box)
            return rng.uniform(lo, hi, size=(q, d))
        if kind == "data":
            if pair.base.n < q:
                raise InvalidParameterError("q", f"<= the number of records of D ({pair.base.n}) for init 'data'", q)
            return pair.base.X[rng.choice(pair.base.n, size=q, replace=False)].copy()
        raise InvalidParameterError("init", "'uniform', 'data' or an array of shape (q, d)", kind)
    Q0 = v.points("init", kind, dim=d)
    if Q0.shape[0] != q:
        raise InvalidParameterError("init", f"{q} rows (one per query)", Q0.shape[0])
    return Q0.copy()


def optimize_queries(pair: LoodPair, q: int = 1, *, objective: str = "kl", steps: int = 300, lr: float = 0.1,
                     restarts: int = 1, init="uniform", box=None, rng: np.random.Generator,
                     patience: int | None = None, tol: float = 1e-7, betas=(0.9, 0.999),
                     eps: float = 1e-8, progress=None, keep_iterates=()) -> QueryOptResult:
    """Maximise LOOD(Q) over q queries by Adam (eq. 2), from ``restarts`` initial sets; keeps the
    best iterate of all. ``patience``: stop a restart after that many steps with gain < ``tol``.
    ``progress``: an optional callable(restart, step, value) (e.g. a tqdm update); ``keep_iterates``:
    steps at which the first restart's query set is kept (Fig. 9 snapshots)."""
    rng = v.generator("rng", rng)
    q = v.integer("q", q, minimum=1)
    steps = v.integer("steps", steps, minimum=0)
    restarts = v.integer("restarts", restarts, minimum=1)
    lr = v.positive("lr", lr)
    if objective not in OBJECTIVES:
        raise InvalidParameterError("objective", f"one of {OBJECTIVES}", objective)
    if patience is not None:
        patience = v.integer("patience", patience, minimum=1)
    b1, b2 = betas
    at_S = pair.at_differing(objective)
    best_val, best_Q, first_Q = -np.inf, None, None
    hist = np.full((restarts, steps + 1), np.nan)
    per_restart, kept = [], {}
    for r in range(restarts):
        Q = initial_queries(init, q, pair=pair, rng=rng, box=box)
        check_distinct("init", Q)
        first_Q = Q.copy() if first_Q is None else first_Q
        m, s = np.zeros_like(Q), np.zeros_like(Q)
        run_best, stale, prev = -np.inf, 0, None
        for t in range(steps + 1):
            val, g = lood_value_and_grad(pair, Q, objective)
            hist[r, t] = val
            if r == 0 and t in keep_iterates:
                kept[t] = Q.copy()
            if val > run_best:
                run_best = val
            if val > best_val:
                best_val, best_Q = val, Q.copy()
            if progress is not None:
                progress(r, t, val)
            if patience is not None and prev is not None:
                stale = stale + 1 if val - prev < tol else 0
                if stale >= patience:
                    break
            prev = val
            if t == steps:
                break
            # Adam ascent step
            m = b1 * m + (1 - b1) * g
            s = b2 * s + (1 - b2) * g * g
            mhat = m / (1 - b1 ** (t + 1))
            shat = s / (1 - b2 ** (t + 1))
            Q = Q + lr * mhat / (np.sqrt(shat) + eps)
        per_restart.append(run_best)
    if best_Q is None:
        raise NumericalError("the LOOD objective was NaN at every step")
    return QueryOptResult(best_Q=best_Q, best_value=float(best_val), value_at_S=float(at_S), objective=objective,
                          restart_values=tuple(float(x) for x in per_restart), history=hist, steps=steps,
                          initial_Q=first_Q, iterates=kept)


# -- reconstruction ------------------------------------------------------------------------------

def kernel_similarity(kernel, A, B) -> np.ndarray:
    """Normalised kernel similarity k(a, b) / sqrt(k(a, a) k(b, b)) (the reference code's metric), (|A|, |B|)."""
    A, B = v.points("A", A), v.points("B", B)
    K = kernel(A, B)
    da, db = kernel.diag(A), kernel.diag(B)
    with np.errstate(divide="ignore", invalid="ignore"):
        return K / np.sqrt(np.outer(da, db))


@dataclass(frozen=True)
class Reconstruction:
    """How well optimal queries reconstruct the differing records S (the paper has no metric; see
    its footnote 7): for each query, the record of D u S it is most kernel-similar to."""

    similarity_to_S: np.ndarray       # (q, s) normalised kernel similarity
    nearest_record: np.ndarray        # (q,) index into D u S (S occupies the last s indices)
    recovered: np.ndarray             # (q,) index of the S member recovered, -1 if the nearest is in D
    cosine_to_S: np.ndarray           # (q, s) cosine similarity in input space
    mse_to_S: np.ndarray              # (q, s) mean squared difference in input space

    @property
    def any_recovered(self) -> bool:
        return bool(np.any(self.recovered >= 0))

    def to_dict(self) -> dict:
        return {"similarity_to_S": self.similarity_to_S, "nearest_record": self.nearest_record,
                "recovered": self.recovered, "cosine_to_S": self.cosine_to_S, "mse_to_S": self.mse_to_S}


def reconstruction(pair: LoodPair, Q) -> Reconstruction:
    """Compare optimal queries Q with the differing records (and with D, for the identification)."""
    b = pair.base
    Q = b._points("Q", Q)
    allX = np.vstack([b.X, pair.XS])
    sim_all = kernel_similarity(b.kernel, Q, allX)
    nearest = np.argmax(sim_all, axis=1)
    recovered = np.where(nearest >= b.n, nearest - b.n, -1)
    S = pair.XS
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = (Q @ S.T) / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(S, axis=1))
    mse = ((Q[:, None, :] - S[None, :, :]) ** 2).mean(-1)
    return Reconstruction(similarity_to_S=sim_all[:, b.n:], nearest_record=nearest, recovered=recovered,
                          cosine_to_S=cos, mse_to_S=mse)


def lood_pair(kernel, XD, YD, XS, YS, noise: float) -> LoodPair:
    """Shorthand: the pair (D, D u S) with D factorised once."""
    return GPPosterior(kernel, XD, YD, noise).add(XS, YS)
