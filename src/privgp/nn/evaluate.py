"""Meta-test evaluation of seed 002's methods on simulated tasks: NLL per target point of each task
(paper §5, Figs. 5-6 protocol) and the wall time per task. No files are written here.
"""
from __future__ import annotations

import json
import time
from importlib import resources

import numpy as np
import torch

from .dpsvgp import DpsvgpSettings, fit, noise_multiplier
from .model import DPConvCNP, gaussian_nll
from .oracle import gp_oracle, noise_floor_nll
from .tasks import TaskBatch

TUNED = "dpsvgp_tuned.json"


def dpconvcnp_nll(model: DPConvCNP, batch: TaskBatch, generator: torch.Generator) -> np.ndarray:
    """Per-task NLL of the DPConvCNP: each task's context released once at its own (eps, delta)
    (batched Alg. 3 with mu = gdp_mu(eps, delta) per task), predictions at its targets."""
    model.eval()
    with torch.no_grad():
        mean, std = model(batch.xc, batch.yc, batch.xt, batch.mu, generator)
        return gaussian_nll(batch.yt.double(), mean.double(), std.double()).mean(1).numpy()


def oracle_nll(batch: TaskBatch) -> np.ndarray:
    """Per-task NLL of the non-private oracle: the exact GP predictive with the true hyperparameters
    (GP families), or the observation-noise NLL lower bound (sawtooth; its Bayes posterior is intractable)."""
    yt = batch.yt.double().numpy()
    if batch.family == "sawtooth":
        return np.array([noise_floor_nll(float(s)) for s in batch.params["noise_std"]])
    out = np.empty(len(batch))
    for i in range(len(batch)):
        m, s = gp_oracle(batch.family, batch.xc[i:i + 1].double().numpy(), batch.yc[i:i + 1].double().numpy(),
                         batch.xt[i:i + 1].double().numpy(), float(batch.params["lengthscale"][i]),
                         float(batch.params["noise_std"][i]))
        out[i] = gaussian_nll(yt[i], m[0], s[0]).mean()
    return out


def dpsvgp_nll(settings: DpsvgpSettings, batch: TaskBatch, generator: torch.Generator,
               chunk: int = 64) -> np.ndarray:
    """Per-task NLL of the DP-SVGP: DP-SGD on each task's context at its own (eps, delta), then predict."""
    out = []
    for s in range(0, len(batch), chunk):
        sl = slice(s, s + chunk)
        f = fit(batch.xc[sl].double().numpy(), batch.yc[sl].double().numpy(), batch.epsilon[sl].double().numpy(),
                batch.delta, settings, generator)
        m, sd = f.predict(batch.xt[sl].double().numpy())
        out.append(gaussian_nll(batch.yt[sl].double().numpy(), m, sd).mean(1))
    return np.concatenate(out)


def time_dpconvcnp(model: DPConvCNP, batch: TaskBatch, repeats: int | None = None) -> np.ndarray:
    """Wall seconds of release + predict for single tasks (one private release each)."""
    times = []
    g = torch.Generator().manual_seed(0)
    for i in range(repeats or len(batch)):
        t0 = time.perf_counter()
        rep, _ = model.release(batch.xc[i].numpy(), batch.yc[i].numpy(), float(batch.epsilon[i]), batch.delta, generator=g)
        model.predict(rep, batch.xt[i].numpy())
        times.append(time.perf_counter() - t0)
    return np.array(times)


def time_dpsvgp(settings: DpsvgpSettings, batch: TaskBatch, repeats: int) -> np.ndarray:
    """Wall seconds of a DP-SGD fit + predict for single tasks. The PRV accountant's noise multiplier
    (about 1 s per (eps, N)) is computed before the clock starts and is not included."""
    times = []
    g = torch.Generator().manual_seed(0)
    n = batch.xc.shape[1]
    for i in range(repeats):
        x, y = batch.xc[i:i + 1].double().numpy(), batch.yc[i:i + 1].double().numpy()
        noise_multiplier(float(batch.epsilon[i]), batch.delta, settings.sample_rate(n), settings.steps(n))
        t0 = time.perf_counter()
        f = fit(x, y, float(batch.epsilon[i]), batch.delta, settings, g)
        f.predict(batch.xt[i:i + 1].double().numpy())
        times.append(time.perf_counter() - t0)
    return np.array(times)


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95 % normal interval (1.96 standard errors)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(1.96 * a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else float("nan")


def paired_mean_se(a, b) -> tuple[float, float]:
    """Mean of a - b over paired tasks (the same task at each index) and its standard error."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")


def tuned_settings(family: str) -> DpsvgpSettings:
    """The DP-SVGP settings tuned by ``privgp experiment seed002-tune`` and shipped with the package."""
    ref = resources.files("privgp.nn").joinpath("weights", TUNED)
    d = json.loads(ref.read_text())
    if family not in d:
        from ..errors import InvalidParameterError

        raise InvalidParameterError("family", f"one of {sorted(d)} (tuned DP-SVGP settings)", family)
    s = dict(d[family]["settings"])
    s["inducing_range"] = tuple(s["inducing_range"])
    return DpsvgpSettings(**s)
