"""Figure 4's analogue on real data: where do Baltimore (1978) house prices exceed a public threshold?

Seed 000, sec. 5 and App. D.2 used HM Land Registry sales aggregated into London hexagons; we use
the 211 Baltimore sales shipped with privgp, one record per sale (no aggregation: with so few
sales hexagons would leave almost one sale per cell).

* Threshold (public constant, not a statistic of the data): a price of 50 thousand USD (1978).
  y_raw = log(price) - log(50); label s = 1{y_raw > 0}; y = clip(y_raw, -B, B) / B with the public
  B = 1 (a factor e around the threshold), so |y| <= M_Y = 1 (App. D.2).
* Split: a random half of the sales (seeded, drawn before looking at the responses) is *declared
  public*; the other half is the private dataset D. Hyperparameters (l, r, sigma) and the cut-off
  C are chosen on the public half only (5-fold cross-validated BCE and IoU on held-out sales), the
  private search restricted to certified eps_1 < 10 at n = |D|, delta = n^-1.1 (as Fig. 4).
* Privacy: exponential kernel, generic Delta_n (Lemma B.1), kappa = inf k over the public box
  ``PUBLIC_BOX`` (planar units, diameter ~ 175), Thm 3.1 and the paper's conversion (eq. 3).
  A record is one sale; replace-one neighbours.
* Figure: the non-private boundary {p_D = C} (fitted on D with theta_*, shown as the benchmark)
  and several independent private one-path boundaries {f = 0} (each path smoothed by a fixed 1-px
  Gaussian filter, post-processing). Private sales are never plotted; public-half sales are.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...datasets.baltimore import ATTRIBUTION, PUBLIC_BOX, load_baltimore
from ...formatting import format_upper
from ...models.gp import EigenPosterior, ExactPosterior
from ...models.kernels import make_kernel
from ...tasks import excursion as ex
from ...tasks.excursion_study import PrivacySpec, ReleaseSpec, posterior_paths
from ...tasks.hyperparameter_search import CachedLoss, EpsilonCache, SearchSpace, grid_search
from ..common import new_figure, save_figure, write_run_record, write_table
from .excursion_1d import _constant_sets

THRESHOLD_PRICE = 50.0   # thousand USD; public constant
CLIP_B = 1.0             # clip |log(price / threshold)| at B (public constant)
PUBLIC_GRID = dict(lengthscales=(5.0, 10.0, 20.0, 35.0, 60.0, 100.0, 160.0, 250.0), rs=(0.1, 0.3, 0.6, 1.0, 1.5, 2.5),
                   sigmas=(0.1, 0.2, 0.4, 0.7, 1.0, 1.5))
PRIVATE_GRID = dict(lengthscales=(5.0, 10.0, 20.0, 35.0, 60.0, 100.0, 160.0, 250.0), rs=(2.0, 3.0, 4.0, 6.0, 8.0, 12.0),
                    sigmas=(0.05, 0.1, 0.2, 0.4, 0.7))


def prepare(seed: int):
    """Coordinates, clipped responses, labels and the public/private split (a seeded random half)."""
    df = load_baltimore()
    X = PUBLIC_BOX.check_contains("Baltimore locations", df[["x", "y"]].to_numpy(dtype=float))
    y_raw = np.log(df["price"].to_numpy(dtype=float)) - math.log(THRESHOLD_PRICE)
    y = np.clip(y_raw, -CLIP_B, CLIP_B) / CLIP_B
    perm = np.random.default_rng(np.random.SeedSequence([seed, 4])).permutation(len(df))
    pub, priv = np.sort(perm[: len(df) // 2]), np.sort(perm[len(df) // 2:])
    return X, y, y_raw > 0, pub, priv


def cv_folds(n: int, k: int, seed: int):
    idx = np.random.default_rng(np.random.SeedSequence([seed, 5])).permutation(n)
    return [np.sort(f) for f in np.array_split(idx, k)]


def cv_bce(candidates, X, y, labels, folds, clip):
    """Mean held-out BCE per candidate (each held-out sale weighs 1 / #held-out)."""
    cand = np.asarray(candidates, dtype=float)
    out = np.zeros(cand.shape[0])
    all_idx = np.arange(len(y))
    for f in folds:
        tr = np.setdiff1d(all_idx, f)
        for ell in np.unique(cand[:, 0]):
            rows = np.flatnonzero(cand[:, 0] == ell)
            rs = np.unique(cand[rows, 1])
            mean, var = EigenPosterior(make_kernel("exponential", ell), X[tr], y[tr]).mean_var(X[f], rs)
            for ri, r in enumerate(rs):
                sub = rows[cand[rows, 1] == r]
                margin = ex.standardized_margin(labels[f], mean[ri], var[ri])
                out[sub] += ex.bce_from_margin(margin[None], cand[sub, 2][:, None], np.full(len(f), 1 / len(f)),
                                               clip=clip)[:, 0] / len(folds)
    return out


def cv_probabilities(theta, X, y, folds):
    ell, r, sigma = theta
    p = np.empty(len(y))
    for f in folds:
        tr = np.setdiff1d(np.arange(len(y)), f)
        post = ExactPosterior(make_kernel("exponential", ell), X[tr], y[tr], r, sigma)
        p[f] = ex.excursion_probability(post.mean(X[f]), post.kD_diag(X[f]), sigma)
    return p


def realdata(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, constants: str | None = None,
             eps0: float = 10.0, n_paths: int = 3, conversion: str = "mironov") -> dict:
    """Baltimore excursion figure and table (see the module docstring)."""
    from ...models.sampling import sample_joint

    t0 = time.perf_counter()
    out = Path(out_dir)
    consts = _constant_sets(constants)
    X, y, labels, pub, priv = prepare(seed)
    n_priv = len(priv)
    delta = n_priv ** -1.1
    folds = cv_folds(len(pub), 3 if quick else 5, seed)
    grid_kw: dict[str, Any] = {k: val[::2] for k, val in PUBLIC_GRID.items()} if quick else PUBLIC_GRID
    pgrid_kw: dict[str, Any] = {k: val[::2] for k, val in PRIVATE_GRID.items()} if quick else PRIVATE_GRID
    kw: dict[str, Any] = {"refinement": ()} if quick else {}
    loss = CachedLoss(lambda c: cv_bce(c, X[pub], y[pub], labels[pub], folds, ex.BCE_CLIP))
    uncon = grid_search(loss, SearchSpace(**grid_kw, **kw))
    theta_s = uncon.theta
    p_cv = cv_probabilities(theta_s, X[pub], y[pub], folds)
    C, _ = ex.choose_cutoff(p_cv, labels[pub], np.ones(len(pub)), ex.default_probability_cutoffs(99))

    gx = 150 if not quick else 60
    grid, axes = PUBLIC_BOX.grid((gx, int(gx * 0.6)))
    path_grid, path_axes = PUBLIC_BOX.grid((60, 36) if not quick else (30, 18))
    release = ReleaseSpec(path_grid, path_axes, smoothing_px=1.0)
    ell, r, sigma = theta_s
    post_s = ExactPosterior(make_kernel("exponential", ell), X[priv], y[priv], r, sigma)
    p_grid = ex.excursion_probability(post_s.mean(grid), post_s.kD_diag(grid), sigma)
    p_pub = ex.excursion_probability(post_s.mean(X[pub]), post_s.kD_diag(X[pub]), sigma)

    rows, figs = [], []
    for c in consts:
        spec = PrivacySpec(eps0=eps0, delta=delta, n=n_priv, domain=PUBLIC_BOX, L=1, sensitivity="generic",
                           constants=c, conversion=conversion)
        eps = EpsilonCache(spec.epsilon)
        res = grid_search(loss, SearchSpace(**pgrid_kw, **kw), epsilon=eps, eps0=eps0)
        eps_s = float(eps(np.array([theta_s]))[0])
        row = {"constants": c, "n_public": len(pub), "n_private": n_priv, "delta": delta,
               "l*": ell, "r*": r, "sigma*": sigma, "eps*": eps_s, "C": C, "cv_bce*": uncon.best_setting["loss"],
               "public_accuracy*": float(np.mean((p_pub >= C) == labels[pub])),
               "public_accuracy_constant_guess": float(max(labels[pub].mean(), 1 - labels[pub].mean()))}
        fig, ax = new_figure(figsize=(7.5, 5.0))
        pg = p_grid.reshape(len(axes[0]), len(axes[1])).T
        ax.contourf(axes[0], axes[1], pg, levels=[C, 1.0], colors=["0.85"])
        ax.contour(axes[0], axes[1], pg, levels=[C], colors="k", linewidths=2.0)
        ax.plot([], [], "k-", lw=2, label=f"non-private {{p_D ≥ {C:.2f}}} (grey; θ*, ε*={format_upper(eps_s)})")
        ax.scatter(X[pub, 0], X[pub, 1], s=8, c=np.where(labels[pub], "tab:orange", "tab:gray"),
                   label="public-half sales (orange: above threshold)")
        if res.feasible:
            tp = res.theta
            rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
            paths = posterior_paths("exponential", X[priv], y[priv], release, tp, n_paths, rng)
            post_p = ExactPosterior(make_kernel("exponential", tp[0]), X[priv], y[priv], tp[1], tp[2])
            for k in range(n_paths):
                ax.contour(path_axes[0], path_axes[1], paths[k].reshape(release.shape).T, levels=[0.0],
                           colors=f"C{k + 3}", linewidths=1.3, linestyles="--")
            # utility on the public half: independent one-path draws at the public sales
            draws = sample_joint(post_p, X[pub], n_paths, np.random.default_rng(np.random.SeedSequence([seed, 7])))
            accs = [float(np.mean((d >= 0) == labels[pub])) for d in draws]
            ax.plot([], [], "r--", lw=1.3, label=f"{n_paths} private one-path boundaries (ε={format_upper(res.best_setting['epsilon'])} each)")
            row.update({"l_priv": tp[0], "r_priv": tp[1], "sigma_priv": tp[2], "eps_priv": res.best_setting["epsilon"],
                        "cv_bce_priv": res.best_setting["loss"],
                        "eps_all_paths": float(PrivacySpec(eps0=eps0, delta=delta, n=n_priv, domain=PUBLIC_BOX,
                                                           L=n_paths, sensitivity="generic", constants=c,
                                                           conversion=conversion).epsilon(*tp)),
                        "public_accuracy_one_path_mean": float(np.mean(accs)), "note": ""})
        else:
            row.update({"note": res.message})
            ax.set_title("no feasible private setting")
        ax.set_xlim(PUBLIC_BOX.lower[0], PUBLIC_BOX.upper[0])
        ax.set_ylim(PUBLIC_BOX.lower[1], PUBLIC_BOX.upper[1])
        ax.set_aspect("equal")
        ax.set_title(f"Baltimore 1978: price > {THRESHOLD_PRICE:g}k USD; n={n_priv} private sales, "
                     f"δ=n^-1.1, constants={c}", fontsize=9)
        ax.legend(loc="lower left", fontsize=7)
        figs.append(save_figure(fig, out / f"realdata_{c}.png").name)
        rows.append(row)
    table = pd.DataFrame(rows)
    write_table(table, out, "realdata")
    config = {"threshold_price_kUSD": THRESHOLD_PRICE, "clip_B": CLIP_B, "M_Y": 1.0, "split": "seeded random half "
              "declared public", "folds": len(folds), "eps0": eps0, "delta": "n_private^-1.1", "L": 1,
              "n_paths_plotted": n_paths, "public_grid": grid_kw, "private_grid": pgrid_kw,
              "refinement": "none (quick)" if quick else "default two rounds", "domain": PUBLIC_BOX.to_dict(),
              "sensitivity": "generic (Lemma B.1)", "conversion": conversion, "data": ATTRIBUTION,
              "constant_sets": list(consts), "smoothing_px": 1.0}
    summary = {"rows": rows, "figures": figs}
    write_run_record(out, "realdata", config, summary, time.perf_counter() - t0)
    return {"figures": figs, "feasible": {r["constants"]: not r["note"] for r in rows}}
