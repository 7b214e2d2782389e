"""Seed 003 (LOOD), sec. 4: optimal queries and reconstruction of the differing data (Figs 2, 8, 9),
leave-one-group-out reconstruction (Fig. 3, App. E.2) and the NNGP perturbation landscape (Fig. 4b).

Setting (scaled down; stated in docs/results.md): D = a class-balanced subset of ``n`` records of
scikit-learn's digits (all 10 classes; the paper: CIFAR-10, |D| = 1000 in Figs 8-9, all 10000
'car'/'plane' images in Fig. 2), centred one-hot labels, inputs standardised with D's per-channel
statistics (the same map for D and D'), NNGP of an FC ReLU network of depth ``depth`` (W_std =
sqrt(2), b_std = 0), noise sigma^2 = ``noise``. A differing record S is drawn from the records not
in D (never a duplicate of a member; docs/notes/seed003_lood.md, sec. 4). The query starts uniform over the pixel
domain (digits: [0, 16]) and is optimised by Adam in the standardised space, best of ``restarts``.

Reported per run: LOOD(S) (the maximum), the optimised LOOD and their ratio (the convergence
metric), the exact LR-test AUC at S and at the optimised query, the normalised kernel similarity
of the query to S, and whether S is the query's most kernel-similar record of D u S ("recovered").
The paper reports no quantitative reconstruction metric (its footnote 7).

Group (App. E.2): |S| = 3, q = 3 and q = 1 queries, ``group_rounds`` random groups x ``group_inits``
initialisations; which S_i each optimised query recovers, against the ranking of the S_i by the
group pair's LOOD when querying S_i alone (paper: the most exposed S_i recovered 61 % of the time,
the least 8 %), and how often a single optimised query beats querying the record it recovers.

Landscape (Fig. 4b): Q = S + x R (pixel units R ~ U(-1, 1)^d x range / 255, x on 101 points of
[-50, 50]) for ``landscape_records`` random S; the paper finds the argmax at x = 0.000 +- 0.000.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...audit.lood.mia import lr_auc_single
from ...audit.lood.models import GPPosterior, centred_one_hot
from ...audit.lood.queries import optimize_queries, reconstruction
from ..common import new_figure, save_figure, write_run_record, write_table
from .data import kernel as make_kernel
from .data import load_images, show_row, training_set


def _auc(pair, Q) -> float:
    p = pair.predictive(Q)
    return lr_auc_single(p.cov[0, 0], p.cov_prime[0, 0], p.mean_prime[0] - p.mean[0])


def _single_run(task: dict) -> dict:
    """One reconstruction run (executor task): optimise q queries against the pair (D, D u S)."""
    rng = np.random.default_rng(task["seed"])
    P = GPPosterior(task["kernel"], task["Z"], task["Y"], task["noise"])
    pair = P.add(task["ZS"], task["YS"])
    res = optimize_queries(pair, task["q"], steps=task["steps"], lr=task["lr"], restarts=task["restarts"],
                           init="uniform", box=task["box"], rng=rng, keep_iterates=task.get("keep", ()))
    rec = reconstruction(pair, res.best_Q)
    out = {"lood_S": res.value_at_S, "lood_opt": res.best_value, "ratio": res.ratio, "best_Q": res.best_Q,
           "recovered": rec.recovered, "similarity": rec.similarity_to_S, "history": res.history,
           "iterates": res.iterates, "restart_values": res.restart_values}
    if task["q"] == 1 and pair.size == 1:
        out["auc_S"], out["auc_opt"] = _auc(pair, task["ZS"]), _auc(pair, res.best_Q)
    if pair.size > 1:  # exposure of each group member: the group pair's LOOD when querying that member alone
        out["single_lood"] = [pair.lood(task["ZS"][i:i + 1]) for i in range(pair.size)]
    return out


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, dataset: str = "digits", cifar_dir=None,
        classes=None, n: int | None = None, depth: int = 5, activation: str = "relu", noise: float = 0.1,
        runs: int | None = None, restarts: int = 3, steps: int | None = None, lr: float = 0.05,
        group_rounds: int | None = None, group_inits: int | None = None, landscape_records: int | None = None) -> dict:
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    data = load_images(dataset, cifar_dir=cifar_dir, classes=classes)
    n = n or (100 if quick else 1000)
    runs = runs or (2 if quick else 50)
    steps = steps or (30 if quick else 300)
    group_rounds = group_rounds or (1 if quick else 10)
    group_inits = group_inits or (2 if quick else 5)
    landscape_records = landscape_records or (3 if quick else 70)
    ts = training_set(data, n, rng)
    C, rest, nm, Z, Y = ts.C, ts.rest, ts.normaliser, ts.Z, ts.Y
    lo, hi = data.pixel_range
    d = int(data.X.shape[1])
    box = (nm(np.full(d, lo)), nm(np.full(d, hi)))
    k = make_kernel("nngp", activation=activation, depth=depth)
    base = dict(kernel=k, Z=Z, Y=Y, noise=noise, steps=steps, lr=lr, restarts=restarts, box=box)

    # -- single differing record, single query (Figs 2, 8, 9) --------------------------------------
    S_idx = rng.choice(rest, size=runs, replace=False)
    tasks = [dict(base, ZS=nm(data.X[j:j + 1]), YS=centred_one_hot(data.labels[j:j + 1], C), q=1,
                  seed=int(rng.integers(2**31)), keep=(0, 10, 20) if i == 0 else ()) for i, j in enumerate(S_idx)]
    single = executor.map(_single_run, tasks, desc="seed003 reconstruction") if executor else list(map(_single_run, tasks))
    rows = [{"record": int(j), "label": int(data.labels[j]), "lood_S": r["lood_S"], "lood_opt": r["lood_opt"],
             "ratio": r["ratio"], "auc_S": r["auc_S"], "auc_opt": r["auc_opt"],
             "similarity_to_S": float(r["similarity"][0, 0]), "recovered": bool(r["recovered"][0] == 0)}
            for j, r in zip(S_idx, single)]
    df = pd.DataFrame(rows)
    write_table(df, out_dir, "reconstruction")

    # -- group (App. E.2) ----------------------------------------------------------------------------
    gtasks, gmeta = [], []
    for rnd in range(group_rounds):
        G = rng.choice(rest, size=3, replace=False)
        for q in (3, 1):
            for init in range(group_inits):
                gtasks.append(dict(base, restarts=1, ZS=nm(data.X[G]), YS=centred_one_hot(data.labels[G], C), q=q,
                                   seed=int(rng.integers(2**31))))
                gmeta.append({"round": rnd, "q": q, "init": init, "group": G})
    group = executor.map(_single_run, gtasks, desc="seed003 group") if executor else list(map(_single_run, gtasks))
    grows = []
    for m, r in zip(gmeta, group):
        order = np.argsort(-np.asarray(r["single_lood"]))       # rank 0 = most exposed member
        rank_of = {int(i): int(np.flatnonzero(order == i)[0]) for i in range(3)}
        rec = [int(x) for x in r["recovered"]]
        beats = (m["q"] == 1 and rec[0] >= 0 and r["lood_opt"] > r["single_lood"][rec[0]] * (1 + 1e-9))
        grows.append({"round": m["round"], "q": m["q"], "init": m["init"], "lood_group": r["lood_S"],
                      "lood_opt": r["lood_opt"], "ratio": r["ratio"], "beats_recovered_record": bool(beats),
                      "recovered_ranks": ",".join(str(rank_of[i]) for i in sorted(set(rec)) if i >= 0),
                      **{f"recovered_rank{t}": any(i >= 0 and rank_of[i] == t for i in rec) for t in range(3)}})
    gdf = pd.DataFrame(grows)
    write_table(gdf, out_dir, "group")

    # -- landscape (Fig. 4b) ---------------------------------------------------------------------------
    P = GPPosterior(k, Z, Y, noise)
    xs = np.linspace(-50.0, 50.0, 101)
    L_idx = rng.choice(rest, size=landscape_records, replace=False)
    argmax_x, curves = [], []
    for j in L_idx:
        R = rng.uniform(-1, 1, size=d) * (hi - lo) / 255.0
        Qraw = data.X[j][None, :] + xs[:, None] * R[None, :]
        kl = P.add_each(nm(Qraw), nm(data.X[j:j + 1]), centred_one_hot(data.labels[j:j + 1], C), "kl")[:, 0]
        argmax_x.append(float(xs[np.argmax(kl)]))
        curves.append(kl)
    write_table(pd.DataFrame({"record": L_idx, "argmax_x": argmax_x}), out_dir, "landscape")

    # -- figures -------------------------------------------------------------------------------------
    show = min(10, runs)
    fig, ax = new_figure(2, show, figsize=(1.3 * show + 1, 3.2), squeeze=False)
    show_row(ax[0], [data.X[j] for j in S_idx[:show]], data, [f"S (LOOD {r['lood_S']:.2g})" for r in single[:show]])
    show_row(ax[1], [nm.inverse(r["best_Q"][0]) for r in single[:show]], data,
             [f"Q* ratio {r['ratio']:.2f}" for r in single[:show]])
    fig.suptitle("Figs 2/8: differing records (top) and optimised queries (bottom)", fontsize=9)
    save_figure(fig, out_dir / "reconstruction.png")

    first = single[0]
    fig, ax = new_figure(1, 5, figsize=(13, 2.8), squeeze=False)
    ax = ax[0]
    snaps = [nm.inverse(first["iterates"][t][0]) for t in (0, 10, 20) if t in first["iterates"]]
    show_row(ax[:len(snaps)], snaps, data, [f"iteration {t}" for t in (0, 10, 20)][:len(snaps)])
    show_row(ax[3:4], [data.X[S_idx[0]]], data, ["differing record S"])
    h = first["history"][0]
    ax[4].plot(np.arange(h.size), h, label="LOOD(Q_t)")
    ax[4].axhline(first["lood_S"], color="k", ls="--", lw=0.8, label="LOOD(S)")
    ax[4].set_xlabel("Adam iteration")
    ax[4].legend(fontsize=7)
    fig.suptitle("Fig. 9: one optimisation run", fontsize=9)
    save_figure(fig, out_dir / "fig9.png")

    fig, ax = new_figure(1, 3, figsize=(14, 3.8))
    ax[0].hist(np.clip(df["ratio"], 1e-4, None), bins=np.geomspace(1e-4, 1.0, 30))
    ax[0].set_xscale("log")
    ax[0].set_xlabel("optimised LOOD / LOOD(S)")
    ax[0].set_title(f"Fig. 2c analogue: {runs} runs", fontsize=9)
    ax[1].scatter(df["auc_S"], df["auc_opt"], s=10)
    ax[1].plot([0.5, 1], [0.5, 1], "k--", lw=0.6)
    ax[1].set_xlabel("LR-test AUC at S")
    ax[1].set_ylabel("LR-test AUC at the optimised query")
    for c_ in curves:
        ax[2].plot(xs, c_ / c_.max(), lw=0.7)
    ax[2].set_xlabel("perturbation scale x (Q = S + x R)")
    ax[2].set_ylabel("KL LOOD / max")
    ax[2].set_title(f"Fig. 4b: argmax x = {np.mean(argmax_x):.3f} +- {np.std(argmax_x):.3f}", fontsize=9)
    save_figure(fig, out_dir / "summary.png")

    def rate(q, t):
        sub = gdf[gdf["q"] == q]
        return float(sub[f"recovered_rank{t}"].mean()) if len(sub) else float("nan")

    summary = {"runs": runs, "n": n, "median_ratio": float(df["ratio"].median()),
               "frac_ratio_ge_0.99": float(np.mean(df["ratio"] >= 0.99)),
               "max_ratio": float(df["ratio"].max()), "frac_recovered": float(df["recovered"].mean()),
               "median_auc_S": float(df["auc_S"].median()), "median_auc_opt": float(df["auc_opt"].median()),
               "group_max_ratio": float(gdf["ratio"].max()),
               "group_recovery_rate_by_rank_q3": [rate(3, t) for t in range(3)],
               "group_recovery_rate_by_rank_q1": [rate(1, t) for t in range(3)],
               "group_frac_any_recovered": float(np.mean(gdf["recovered_ranks"] != "")),
               "group_q1_frac_beats_recovered_record": float(gdf[gdf["q"] == 1]["beats_recovered_record"].mean()),
               "landscape_argmax_mean": float(np.mean(argmax_x)), "landscape_argmax_std": float(np.std(argmax_x))}
    write_run_record(out_dir, "seed003-reconstruction",
                     {"seed": seed, "quick": quick, "dataset": data.name, "n": n, "kernel": k.describe(),
                      "noise": noise, "runs": runs, "restarts": restarts, "steps": steps, "lr": lr,
                      "init": f"uniform over the pixel domain {data.pixel_range}", "group_size": 3,
                      "group_rounds": group_rounds, "group_inits": group_inits,
                      "landscape_records": landscape_records, "normalisation": "per-channel statistics of D"},
                     summary, round(time.perf_counter() - t0, 3))
    return summary
