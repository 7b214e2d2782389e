"""Seed 003 (LOOD), Figs 1a and 6: LOOD against the success of the leave-one-out membership
inference attack on the NNGP / RBF model.

Paper: D a class-balanced CIFAR-10 subset of size 1000, D' = D u S for 200 random S (CIFAR-10 images
or uniform noise over the pixel domain), kernels RBF and NNGP of a depth-1 FC network, metrics
mean distance and KL; the attack's AUC from 5000 samples of each prediction distribution. Claim:
KL LOOD correlates strongly with the AUC, the mean distance poorly (especially for noise S).

Here (scaled down, stated in docs/results.md): D = 1000 class-balanced digits (10 classes; 797
records remain for S), ``records`` S drawn from the remaining digits and as many uniform over
[0, 16]^64 with a random label; centred one-hot labels (C = 10); the query is S itself (the
maximum, docs/notes/seed003_lood.md, sec. 1.6). AUC both ways: Monte Carlo with ``mc_samples`` per side (the reference
code's method) and exact (:func:`privgp.audit.lood.mia.lr_auc_single`).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...audit.lood.mia import correlation, lr_auc_monte_carlo, lr_auc_single
from ...audit.lood.models import GPPosterior, centred_one_hot
from ..common import new_figure, save_figure, write_run_record, write_table
from .data import kernel as make_kernel
from .data import load_images, training_set

KERNELS: dict[str, dict[str, Any]] = {"rbf": dict(name="rbf", gamma=1.0), "nngp_fc1": dict(name="nngp", activation="relu", depth=1)}


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, dataset: str = "digits", cifar_dir=None,
        n: int | None = None, records: int | None = None, noise: float = 0.1, mc_samples: int = 5000) -> dict:
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    data = load_images(dataset, cifar_dir=cifar_dir)
    n = n or (100 if quick else 1000)
    records = records or (10 if quick else 100)
    ts = training_set(data, n, rng)
    C, rest, nm, Z, Y = ts.C, ts.rest, ts.normaliser, ts.Z, ts.Y
    d = data.X.shape[1]
    S_data = rng.choice(rest, size=min(records, rest.size), replace=False)
    XS = np.vstack([data.X[S_data], rng.uniform(*data.pixel_range, size=(records, d))])
    labels = np.concatenate([data.labels[S_data], rng.integers(0, C, records)])
    source = ["data"] * S_data.size + ["uniform"] * records
    ZS, YS = nm(XS), centred_one_hot(labels, C)
    rows = []
    for kname, kspec in KERNELS.items():
        P = GPPosterior(make_kernel(**kspec), Z, Y, noise)
        for i in range(ZS.shape[0]):
            pair = P.add(ZS[i:i + 1], YS[i:i + 1])
            p = pair.predictive(ZS[i:i + 1])
            rows.append({"kernel": kname, "source": source[i], "kl": pair.at_differing("kl"),
                         "mean_distance": pair.at_differing("mean_distance"),
                         "auc_exact": lr_auc_single(p.cov[0, 0], p.cov_prime[0, 0], p.mean_prime[0] - p.mean[0]),
                         "auc_mc": lr_auc_monte_carlo(p, n_samples=mc_samples, rng=rng)})
    df = pd.DataFrame(rows)
    write_table(df, out_dir, "lood_vs_auc")
    corr, corr_data = {}, {}
    for kname in KERNELS:
        sub = df[df["kernel"] == kname]
        own = sub[sub["source"] == "data"]
        for metric in ("kl", "mean_distance"):
            corr[f"{kname}:{metric}"] = correlation(np.log(sub[metric]), sub["auc_mc"])
            corr_data[f"{kname}:{metric}"] = correlation(np.log(own[metric]), own["auc_mc"])
    fig, ax = new_figure(2, 2, figsize=(10, 8.5), constrained_layout=True)
    for r, kname in enumerate(KERNELS):
        sub = df[df["kernel"] == kname]
        for c, metric in enumerate(("mean_distance", "kl")):
            for src, mk in (("data", "o"), ("uniform", "x")):
                s = sub[sub["source"] == src]
                ax[r, c].scatter(s[metric], s["auc_mc"], s=12, marker=mk, label=f"S from {src}")
            cc = corr[f"{kname}:{metric}"]
            ax[r, c].set_xscale("log")
            ax[r, c].set_xlabel(f"{metric} LOOD at S")
            ax[r, c].set_ylabel("MIA AUC (5000 samples per side)")
            cd = corr_data[f"{kname}:{metric}"]
            ax[r, c].set_title(f"{kname}: Spearman {cc['spearman_rho']:.2f} (data S only {cd['spearman_rho']:.2f})",
                               fontsize=9)
            ax[r, c].legend(fontsize=7)
    fig.suptitle(f"Figs 1a / 6: LOOD vs LR-test AUC, |D| = {n} {data.name}", fontsize=10)
    save_figure(fig, out_dir / "fig6.png")
    summary = {"n": n, "records_per_source": records, "correlations": corr, "correlations_data_S_only": corr_data,
               "median_auc_uniform_S": float(df[df["source"] == "uniform"]["auc_exact"].median()),
               "max_abs_mc_minus_exact_auc": float(np.max(np.abs(df["auc_mc"] - df["auc_exact"]))),
               "max_auc_when_kl_below_0.1": float(df[df["kl"] < 0.1]["auc_exact"].max())
               if (df["kl"] < 0.1).any() else None}
    write_run_record(out_dir, "seed003-mia", {"seed": seed, "quick": quick, "dataset": data.name, "n": n,
                                              "records_per_source": records, "noise": noise,
                                              "mc_samples": mc_samples, "kernels": KERNELS,
                                              "correlation": "of log(LOOD) with the Monte Carlo AUC"},
                     summary, round(time.perf_counter() - t0, 3))
    return summary
