"""Seed 004, Figure 1: what cyclic SGLD leaks between its private start and its private limit.

The figure plots (1/n) sum_r (mu_t - mu_t^r)^2 / (s_t^r)^2 over the SGLD steps for the pair D1, D2 of
eq. (7) at the caption's parameters (n = 1 149 019, alpha = 0.1, beta = 1, x_h = 1.8, x_l = 0.9,
gamma1 = 0.1, gamma2 = 1.001, c = 1 165 165; eta = 2/A^2, theta_0 ~ prior; epoch ends t = K n).
This experiment recomputes it exactly (every one of the n mixture components, stable centred form of
:class:`privgp.audit.samplers.sgld_model.CyclicSGLD`) and adds what the paper does not plot, per epoch:

* P(theta_hat_t > mu_t | D2), the distinguishing event S of Lemma A.6, its epsilon lower bound
  log((1/2 - delta) / P) and the Chernoff bound of Lemma 4.4;
* the exact epsilon(delta) of releasing theta_t (hockey-stick divergence, both directions) and the
  exact Renyi divergence D_2 (both directions) between the Gaussian and the n-component mixture;
* next to the exact posterior's values for the same pair (Lemma 4.1) and the certified worst-case
  posterior epsilon over the domain (Lemma 4.2 + 4.3; the caption claims (1.6, 0.01)).

A second table checks the scaling invariants of docs/notes/seed004_sgld.md (sec. 5, T3): F(c) = c^2 F(1) at fixed n,
the trend in n at c = n, and the step-size invariance (eta = 1/A^2 moves the peak to K = 50).

``quick`` runs n = 2000 (c = n^1.001) and small invariant tables (a few seconds).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import accountant
from ...accounting.divergences import renyi_gaussian_1d
from ...accounting.linear_regression import LinearRegressionPosteriorEvent, lemma43_epsilon
from ...accounting.mixtures import Mixture1D, PairTable, hockey_stick_epsilon, test_epsilon_lower_bound
from ...audit.samplers.sgld_bounds import (
    eq15_lower_bound,
    eq16_epsilon_prime,
    kdot,
    lemma_a2_gap_lower_bound,
    lemma_a4_variance_bounds,
    paper_step,
    theorem1_constants,
)
from ...audit.samplers.sgld_model import CyclicSGLD, posterior_pair
from ...errors import InvalidParameterError
from ...formatting import format_lower, format_upper
from ..common import new_figure, save_figure, write_run_record, write_table

CAPTION = dict(n=1149019, alpha=0.1, beta=1.0, x_h=1.8, x_l=0.9, gamma1=0.1, gamma2=1.001, c=1165165.0)
#: the figure as reproduced in docs/notes/seed004_sgld.md, sec. 3, for the comparison in run.json
DIGEST = {"F_peak": 3.033463, "K_peak": 25, "eps_at_peak_delta_0.01": 4.942, "F_inf": 1.566028e-9,
          "D2_at_peak": 3.0334, "ratio_at_peak": 2e9, "caption_posterior_eps": 1.6}


def _setting(n, c, alpha, beta, x_h, eta=None) -> CyclicSGLD:
    return CyclicSGLD(int(n), alpha, beta, x_h, c, eta=eta)


def epoch_row(task) -> dict:
    """Everything about epoch K (K = inf: the stationary laws) for one setting; ``task`` =
    (setting kwargs, K, delta, divergences?) so that executors can pickle it."""
    kw, K, delta, with_divergences = task
    s = _setting(**kw)
    law = s.law(math.inf if math.isinf(K) else int(K) * s.n)
    ratios = law.gaps ** 2 / law.vars2
    P = law.tail_probability()
    row = {"K": K, "t": law.t, "F": float(np.mean(ratios)), "F_min_r": float(ratios.min()), "F_max_r": float(ratios.max()),
           "P_tail_D2": P, "chernoff_bound": law.chernoff_bound(),
           "eps_test_lower": float(test_epsilon_lower_bound(0.5, P, delta))}
    if with_divergences:
        G, M = law.gaussian(), law.mixture()
        row["eps_exact_D1D2"] = hockey_stick_epsilon(delta, G, M)
        row["eps_exact_D2D1"] = hockey_stick_epsilon(delta, M, G)
        table = PairTable.build(G, M, orders=(2.0,))
        row["D2_D1D2"] = table.renyi(2.0, "PQ")
        row["D2_D2D1"] = table.renyi(2.0, "QP")
    return row


def posterior_summary(s: CyclicSGLD, delta: float, x_l: float, gamma1: float) -> dict:
    """Exact posterior divergences of the pair and the certified worst case over the domain."""
    (mu1, v1), (gap, v2) = posterior_pair(s)
    sd1, sd2 = math.sqrt(v1), math.sqrt(v2)
    G1, G2 = Mixture1D.gaussian(0.0, sd1), Mixture1D.gaussian(-gap, sd2)
    ev = LinearRegressionPosteriorEvent(s.n, s.alpha, s.beta, s.x_h, x_l, s.c, gamma1)
    nu_caption = 1.0 + 2.0 * math.log(1.0 / delta) / 1.6
    mir = accountant.epsilon(ev, delta, conversion="mironov")
    imp = accountant.epsilon(ev, delta)
    return {"mean_gap": gap, "var_D1": v1, "var_D2": v2, "snr2": gap * gap / v1,
            "D2_D1D2": float(renyi_gaussian_1d(2.0, 0.0, sd1, -gap, sd2)),
            "D2_D2D1": float(renyi_gaussian_1d(2.0, -gap, sd2, 0.0, sd1)),
            "eps_exact_pair": max(hockey_stick_epsilon(delta, G1, G2), hockey_stick_epsilon(delta, G2, G1)),
            "eps_certified_lemma43_mironov": float(mir.epsilon), "alpha_lemma43_mironov": float(mir.alpha),
            "eps_certified_improved": float(imp.epsilon),
            "eps_lemma43_at_nu_of_claim_d29": float(lemma43_epsilon(nu_caption, delta, s.n, s.alpha, s.beta, s.x_h, x_l,
                                                                   s.c, gamma1))}


def _peak(setting_kw, delta, max_epochs=200) -> dict:
    s = _setting(**setting_kw)
    best: dict[str, Any] | None = None
    for K in range(1, max_epochs + 1):
        law = s.law(K * s.n)
        F = law.indicator()
        if best is not None and F < best["F_peak"]:
            break
        best = {"K_peak": K, "F_peak": F, "eps_test_lower": float(test_epsilon_lower_bound(0.5, law.tail_probability(), delta))}
    if best is None:
        raise InvalidParameterError("max_epochs", "an integer >= 1", max_epochs)
    best["F_inf"] = s.law(math.inf).indicator()
    (mu1, v1), (gap, _) = posterior_pair(s)
    best["posterior_snr2"] = gap * gap / v1
    return best


def invariants(quick: bool, delta: float) -> pd.DataFrame:
    base = dict(alpha=0.1, beta=1.0, x_h=1.8)
    rows = []
    for c in ((1000.0, 2000.0) if quick else (1000.0, 2000.0, 4000.0)):
        kw = dict(n=1000, c=c, **base)
        p = _peak(kw, delta)
        rows.append({"table": "c^2 scaling (n = 1000)", "n": 1000, "c": c, "eta": "2/A^2", **p, "F_peak/c^2": p["F_peak"] / c ** 2})
    for n in ((100, 1000) if quick else (100, 1000, 10_000, 100_000)):
        kw = dict(n=n, c=float(n), **base)
        p = _peak(kw, delta)
        rows.append({"table": "n trend (c = n)", "n": n, "c": float(n), "eta": "2/A^2", **p, "F_peak/c^2": p["F_peak"] / n ** 2})
    n_step = 1000 if quick else CAPTION["n"]
    c_step = float(n_step) ** 1.001 if quick else CAPTION["c"]
    A = 0.1 + n_step * 1.8 ** 2
    for label, eta in (("2/A^2", 2.0 / A ** 2), ("1/A^2", 1.0 / A ** 2)):
        kw = dict(n=n_step, c=c_step, eta=eta, **base)
        p = _peak(kw, delta, max_epochs=400)
        rows.append({"table": "step size", "n": n_step, "c": c_step, "eta": label, **p, "F_peak/c^2": p["F_peak"] / c_step ** 2})
    return pd.DataFrame(rows)


def _plots(df: pd.DataFrame, post: dict, out_dir: Path, s: CyclicSGLD, delta: float, K_T: int) -> list[Path]:
    fin = df[np.isfinite(df["K"])]
    inf = df[~np.isfinite(df["K"])].iloc[0]
    fig, ax = new_figure(figsize=(7, 4.2))
    ax.semilogy(fin["K"], fin["F"], "o-", ms=3, label="SGLD: (1/n) sum_r (mu - mu^r)^2 / (s^r)^2")
    ax.axhline(inf["F"], color="C0", ls=":", lw=1, label=f"SGLD, t = inf: {inf['F']:.3g}")
    ax.axhline(post["snr2"], color="k", ls="--", lw=1, label=f"exact posterior (mu1 - mu2)^2 / s^2: {post['snr2']:.3g}")
    ax.axvline(K_T, color="C3", ls=":", lw=1, label=f"paper's step T = (ceil(k.) + 1) n, K = {K_T}")
    ax.set_xlabel("epoch K (step t = K n)")
    ax.set_ylabel("indicator (Figure 1)")
    ax.set_title(f"Seed 004, Figure 1: n = {s.n}, c = {s.c:g}, alpha = {s.alpha:g}, beta = {s.beta:g}, x_h = {s.x_h:g}",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    p1 = save_figure(fig, out_dir / "fig1_indicator.png")
    out = [p1]
    if "eps_exact_D1D2" in df:
        fig, (ax, bx) = new_figure(1, 2, figsize=(12, 4.4))
        eps = np.maximum(fin["eps_exact_D1D2"], fin["eps_exact_D2D1"])
        pos = eps > 0
        ax.semilogy(fin["K"][pos], eps[pos], "o-", ms=3, label=f"SGLD iterate: exact epsilon (delta = {delta:g}; 0 from K = "
                    f"{int(fin['K'][~pos & (fin['K'] > 0)].min()) if (~pos & (fin['K'] > 0)).any() else '-'} on)")
        lb = fin["eps_test_lower"] > 0
        ax.semilogy(fin["K"][lb], fin["eps_test_lower"][lb], "s--", ms=2,
                    label="SGLD: lower bound of the event {theta > mu_t} (Lemma A.6)")
        ax.axhline(post["eps_certified_lemma43_mironov"], color="C2", ls="-.", lw=1,
                   label=f"exact posterior, certified over the domain (Lemma 4.3): {format_upper(post['eps_certified_lemma43_mironov'])}")
        ax.axhline(1.6, color="C2", ls=":", lw=1, label="caption's claim for the posterior: 1.6")
        ax.set_xlabel("epoch K (step t = K n)")
        ax.set_ylabel(f"epsilon at delta = {delta:g}")
        ax.set_title(f"epsilon of one release (the posterior pair's exact epsilon is {format_lower(post['eps_exact_pair'])})",
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        d2 = np.maximum(fin["D2_D1D2"], fin["D2_D2D1"])
        ok = (d2 > 0) & (fin["K"] > 0)   # K = 0: both laws are the prior (D_2 is round-off)
        bx.semilogy(fin["K"][ok], d2[ok], "o-", ms=3, label="SGLD iterate: D_2, max of both directions")
        d2_post = max(post["D2_D1D2"], post["D2_D2D1"])
        bx.axhline(d2_post, color="k", ls="--", lw=1, label=f"exact posterior, same pair: {d2_post:.3g}")
        bx.set_xlabel("epoch K (step t = K n)")
        bx.set_ylabel("Renyi divergence of order 2")
        bx.set_title(f"peak / posterior = {d2.max() / d2_post:.3g}", fontsize=9)
        bx.grid(True, which="both", alpha=0.3)
        bx.legend(fontsize=7)
        out.append(save_figure(fig, out_dir / "fig1_epsilon.png"))
    return out


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, delta: float = 0.01, epochs: int = 60,
        divergences: bool = True) -> dict:
    """Write fig1_indicator.png, fig1_epsilon.png, figure1.csv/.md, invariants.csv/.md and run.json.
    No randomness (``seed`` unused). ``divergences=False`` skips the exact epsilon / D_2 columns."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    cap = dict(CAPTION)
    if quick:
        cap.update(n=2000, c=2000.0 ** 1.001)
    kw = dict(n=cap["n"], c=cap["c"], alpha=cap["alpha"], beta=cap["beta"], x_h=cap["x_h"])
    s = _setting(**kw)
    Ks = [float(K) for K in range(0, int(epochs) + 1)] + [math.inf]
    tasks = [(kw, K, delta, divergences) for K in Ks]
    rows = executor.map(epoch_row, tasks, desc="epochs") if executor is not None else [epoch_row(tk) for tk in tasks]
    df = pd.DataFrame(rows)
    post = posterior_summary(s, delta, cap["x_l"], cap["gamma1"])
    fin = df[np.isfinite(df["K"])]
    i_peak = int(fin["F"].idxmax())
    peak = df.loc[i_peak]
    K_T = math.ceil(kdot(s)) + 1
    law_T = s.law(K_T * s.n)
    lemma_checks = {"K": K_T, "gap_r1": float(law_T.gaps[0]), "lemma_a2_gap_lower_bound": float(lemma_a2_gap_lower_bound(s, K_T - 1)),
                    "var_r1": float(law_T.vars2[0]), "lemma_a4_var_bound_r1": float(lemma_a4_variance_bounds(s, 1)),
                    "min_ratio": float(np.min(law_T.gaps ** 2 / law_T.vars2)), "eq15_lower_bound": eq15_lower_bound(s)}
    theorem1 = {"inputs": dict(epsilon=1.0, epsilon_prime=2.0, delta=0.01, alpha=1.0, beta=4.0, x_h=1.0, gamma1=0.1,
                               gamma2=1.2),
                "constants": theorem1_constants(1.0, 2.0, 0.01, alpha=1.0, beta=4.0, x_h=1.0, gamma1=0.1,
                                                gamma2=1.2).to_dict()}
    summary: dict[str, Any] = {"n": s.n, "c": s.c, "eta": s.eta, "K_peak": int(peak["K"]), "F_peak": float(peak["F"]),
               "F_inf": float(df[~np.isfinite(df["K"])]["F"].iloc[0]), "kdot": kdot(s), "paper_step_T": paper_step(s),
               "K_of_T": K_T, "eq15_lower_bound": eq15_lower_bound(s), "eq16_epsilon_prime": eq16_epsilon_prime(s, delta),
               "posterior": post, "lemma_checks_at_T": lemma_checks, "theorem1_example": theorem1,
               "digest": DIGEST if not quick else "n/a (quick)"}
    if divergences:
        eps_peak = max(float(peak["eps_exact_D1D2"]), float(peak["eps_exact_D2D1"]))
        d2_peak = max(float(peak["D2_D1D2"]), float(peak["D2_D2D1"]))
        d2_post = max(post["D2_D1D2"], post["D2_D2D1"])
        i_eps = int(np.argmax(np.maximum(fin["eps_exact_D1D2"], fin["eps_exact_D2D1"])))
        summary.update({"eps_exact_at_peak": eps_peak, "D2_at_peak": d2_peak,
                        "D2_ratio_peak_to_posterior": d2_peak / d2_post,
                        # the posterior pair is often (0, delta)-indistinguishable: then the ratio is +inf
                        "eps_ratio_peak_to_posterior_pair": (eps_peak / post["eps_exact_pair"] if post["eps_exact_pair"] > 0
                                                             else math.inf),
                        "K_of_max_eps": int(fin["K"].iloc[i_eps]),
                        "max_eps_exact": float(np.maximum(fin["eps_exact_D1D2"], fin["eps_exact_D2D1"]).max()),
                        "D2_inf": max(float(df[~np.isfinite(df["K"])]["D2_D1D2"].iloc[0]),
                                      float(df[~np.isfinite(df["K"])]["D2_D2D1"].iloc[0]))})
    write_table(df, out_dir, "figure1", floatfmt=".7g")
    inv = invariants(quick, delta)
    write_table(inv, out_dir, "invariants", floatfmt=".7g")
    pngs = _plots(df, post, out_dir, s, delta, K_T)
    summary["png"] = [str(p) for p in pngs]
    seconds = round(time.perf_counter() - t0, 2)
    write_run_record(out_dir, "seed004-fig1", {"caption": cap, "delta": delta, "epochs": epochs, "quick": quick,
                                               "init": "prior", "eta": "2/A^2", "divergences": divergences}, summary, seconds)
    return summary
