"""Seed 003 (LOOD), the neural-network side at a reduced scale: Figs 1b, 1c and 5 (NN part).

Needs torch (the optional ``nn`` extra); imported only when this experiment runs.

Paper: FC networks of depth 10, width 1024, 50 epochs of SGD on 10000 CIFAR-10 'car'/'plane' images;
per differing record 100 models with it (IN) and 100 without (OUT), differing only in their
initialisation; NN MIA AUC from 50 half-splits with Gaussian likelihood ratios on the logits of S;
NNGP MIA from the two prediction Gaussians. Fig. 1b: NNGP AUC vs NN AUC ("strong correlation");
Fig. 1c: mean-distance LOOD vs the IN/OUT logit difference (memorisation; "highest correlation");
Fig. 5: GeLU networks have higher MIA AUC than ReLU networks.

Here, **scaled down, qualitative agreement only**: scikit-learn digits of two confusable classes
(default 3 and 8, all ~357 records, standardised), bias-free MLPs ``[Linear, act] x depth -> Linear``
(default depth 3, width 128; N(0, 2/fan_in) weights as the reference code's ReLU nets, the same for
GeLU), ``models`` IN + ``models`` OUT per record trained jointly as one batched ensemble (full-batch
Adam, ``epochs`` steps, cross-entropy), ``records`` random differing records. The matching NNGP has
the same depth, activation and W_std = sqrt(2), b_std = 0, noise ``noise``.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...audit.lood.mia import correlation, half_split_gaussian_lr_auc, lr_auc_single
from ...audit.lood.models import GPPosterior, centred_one_hot
from ...models.nngp import NNGP
from ..common import as_tuple, import_torch, new_figure, save_figure, write_run_record, write_table
from .data import load_images, normaliser

ACTS = ("relu", "gelu")


def _torch():
    return import_torch("the seed-003 NN experiment")


def train_ensemble(X, labels, masks, *, depth: int, width: int, activation: str, epochs: int, lr: float, seed: int):
    """Train M bias-free MLPs at once (M = masks.shape[0]); model m trains on the records where
    masks[m] = 1. Returns a function x -> logits (M, len(x), C) in numpy. Initialisation N(0, 2/fan_in)."""
    torch = _torch()
    g = torch.Generator().manual_seed(int(seed))
    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(labels, dtype=torch.long)
    w = torch.as_tensor(masks, dtype=torch.float32)
    M, C = w.shape[0], int(labels.max()) + 1
    dims = [X.shape[1]] + [width] * depth + [C]
    Ws = [(torch.randn(M, a, b, generator=g) * math.sqrt(2.0 / a)).requires_grad_() for a, b in zip(dims[:-1], dims[1:])]
    act = torch.nn.functional.relu if activation == "relu" else torch.nn.functional.gelu
    opt = torch.optim.Adam(Ws, lr=lr)

    def forward(x):
        h = x.expand(M, *x.shape)
        for W in Ws[:-1]:
            h = act(torch.bmm(h, W))
        return torch.bmm(h, Ws[-1])

    for _ in range(epochs):
        opt.zero_grad()
        logits = forward(Xt)                                            # (M, n, C)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, C), yt.repeat(M), reduction="none").reshape(M, -1)
        loss = ((ce * w).sum(1) / w.sum(1)).sum()
        loss.backward()
        opt.step()

    def predict(x):
        with torch.no_grad():
            return forward(torch.as_tensor(np.atleast_2d(x), dtype=torch.float32)).numpy().astype(float)

    return predict


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, classes=(3, 8), records: int | None = None,
        models: int | None = None, depth: int = 3, width: int = 128, epochs: int | None = None, lr: float = 1e-3,
        noise: float = 0.05, splits: int = 50) -> dict:
    t0 = time.perf_counter()
    torch = _torch()
    torch.set_num_threads(1)
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    records = records or (3 if quick else 16)
    models = models or (6 if quick else 40)
    epochs = epochs or (20 if quick else 300)
    data = load_images("digits", classes=as_tuple(classes))
    N = data.X.shape[0]
    Z = normaliser(data, np.arange(N))(data.X)
    labels = data.labels
    Yc = centred_one_hot(labels, int(labels.max()) + 1)
    S_idx = rng.choice(N, size=records, replace=False)
    rows = []
    for act in ACTS:
        full = GPPosterior(NNGP(act, depth), Z, Yc, noise)
        for j in S_idx:
            pair = full.leave_out([int(j)])
            p = pair.predictive(Z[j:j + 1])
            masks = np.ones((2 * models, N))
            masks[models:, j] = 0.0                                    # OUT models never see record j
            pred = train_ensemble(Z, labels, masks, depth=depth, width=width, activation=act, epochs=epochs, lr=lr,
                                  seed=int(rng.integers(2**31)))
            out = pred(Z[j:j + 1])[:, 0, :]                            # (2 models, C) logits on S
            acc = float(np.mean(pred(Z).argmax(-1) == labels[None, :]))
            auc_nn, auc_nn_sd = half_split_gaussian_lr_auc(out[:models], out[models:], splits=splits, rng=rng)
            diff = float(np.mean((out[:models].mean(0) - out[models:].mean(0)) ** 2))
            rows.append({"activation": act, "record": int(j), "label": int(labels[j]),
                         "nngp_kl": pair.at_differing("kl"), "nngp_mean_distance": pair.at_differing("mean_distance"),
                         "nngp_auc": lr_auc_single(p.cov[0, 0], p.cov_prime[0, 0], p.mean_prime[0] - p.mean[0]),
                         "nn_auc": auc_nn, "nn_auc_sd": auc_nn_sd, "nn_logit_diff": diff, "nn_train_accuracy": acc})
    df = pd.DataFrame(rows)
    write_table(df, out_dir, "nn_vs_nngp")
    corr = {}
    for act in ACTS:
        sub = df[df["activation"] == act]
        corr[f"{act}:nngp_auc~nn_auc"] = correlation(sub["nngp_auc"], sub["nn_auc"])
        corr[f"{act}:mean_distance~logit_diff"] = correlation(np.sqrt(sub["nngp_mean_distance"]),
                                                               np.sqrt(sub["nn_logit_diff"]))
    w = df.pivot(index="record", columns="activation", values="nn_auc")
    wg = df.pivot(index="record", columns="activation", values="nngp_kl")
    fig, ax = new_figure(1, 3, figsize=(15, 4.3))
    for act, mk in zip(ACTS, ("o", "s")):
        sub = df[df["activation"] == act]
        ax[0].scatter(sub["nngp_auc"], sub["nn_auc"], marker=mk, s=14, label=act)
        ax[1].scatter(np.sqrt(sub["nngp_mean_distance"]), np.sqrt(sub["nn_logit_diff"]), marker=mk, s=14, label=act)
    ax[0].plot([0.5, 1], [0.5, 1], "k--", lw=0.6)
    ax[0].set_xlabel("MIA AUC under the NNGP (exact)")
    ax[0].set_ylabel(f"MIA AUC under NNs ({models}+{models} models, half-splits)")
    ax[0].set_title("Fig. 1b analogue", fontsize=9)
    ax[1].set_xlabel("sqrt(mean-distance LOOD), NNGP")
    ax[1].set_ylabel("sqrt(mean squared IN-OUT logit difference), NNs")
    ax[1].set_title("Fig. 1c analogue (memorisation)", fontsize=9)
    ax[2].scatter(w["relu"], w["gelu"], s=14)
    ax[2].plot([0.4, 1], [0.4, 1], "k--", lw=0.6)
    ax[2].set_xlabel("NN MIA AUC, ReLU")
    ax[2].set_ylabel("NN MIA AUC, GeLU")
    ax[2].set_title("Fig. 5 (NN part) analogue", fontsize=9)
    for a in ax[:2]:
        a.legend(fontsize=8)
    save_figure(fig, out_dir / "fig1bc_fig5nn.png")
    summary = {"records": records, "models_per_side": models, "correlations": corr,
               "frac_nn_auc_gelu_gt_relu": float(np.mean(w["gelu"] > w["relu"])),
               "median_nn_auc": {a: float(w[a].median()) for a in ACTS},
               "frac_nngp_kl_gelu_gt_relu": float(np.mean(wg["gelu"] > wg["relu"])),
               "mean_train_accuracy": float(df["nn_train_accuracy"].mean())}
    write_run_record(out_dir, "seed003-nn", {"seed": seed, "quick": quick, "classes": as_tuple(classes),
                                             "records": records, "models_per_side": models, "depth": depth,
                                             "width": width, "epochs": epochs, "lr": lr, "optimiser": "full-batch Adam",
                                             "init": "N(0, 2/fan_in), no biases", "noise": noise, "splits": splits,
                                             "torch": torch.__version__},
                     summary, round(time.perf_counter() - t0, 3))
    return summary
