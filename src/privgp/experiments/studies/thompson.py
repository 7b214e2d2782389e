"""Private Thompson sampling on standard test functions: simple regret vs rounds and vs epsilon.

Setting (all public, fixed before any run): test functions of :mod:`privgp.datasets.objectives` on
the unit box (scaled so that max f = 1 and a median point scores 0), observed with Gaussian noise
(std ``noise``) and clipped to |y| <= M_Y = 1; T rounds on a regular candidate grid; kernel scale
sigma; delta = T^-1.1 (T records). Every method sees the same response noise sequence for a seed
(common random numbers), so differences between methods are paired.

Methods
* ``private TS`` at each epsilon: :func:`privgp.tasks.thompson.plan_thompson` (r calibrated; option
  ``schedule``, default "equal") -- the whole run is (epsilon, delta)-DP for replace-one among the T
  records;
* ``non-private TS``: the same loop with the model's own ridge r = noise / sigma (its certificate's
  epsilon is reported too: it is huge);
* ``random search`` (non-private): uniform random candidates, recommends its best observed response;
* ``noisy argmax`` at each epsilon: a private baseline without posterior sampling
  (:mod:`privgp.mechanisms.noisy_argmax`): the first t records taken round-robin on a coarse public
  grid, then one Gaussian report-noisy-max, calibrated to the full budget for each horizon t.

Metrics (regret = 1 - f(x), the function's maximum is 1)
* ``recommendation regret`` at round t: the regret of the point the method would recommend after t
  rounds -- TS (private and not, the same rule): the densest released query of rounds floor(t/2)+1..t
  (most other queries of that window within a quarter lengthscale;
  :func:`privgp.tasks.thompson.recommend_from_queries`, post-processing of released queries; the
  radius was chosen in a pilot on these functions); random search: its best observed response
  (non-private); noisy argmax: its release;
* ``latest-query regret``: 1 - f(x_t), the regret of the query itself (TS and random search);
* ``best-query regret`` at round t: 1 - max_{s <= t} f(x_s), the usual BO simple regret of the
  queries (an oracle quantity: picking that query needs the responses, which private TS does not
  release). Not defined for noisy argmax (its queries are a fixed grid).
Regret is measured against the function's global maximum 1, so a finite candidate grid has a floor
(its best candidate's regret; ``grid_floor`` in thompson_settings.csv). The table reports the
recommendation and latest-query regrets averaged over the last ``window`` rounds and the best-query
regret at T, mean +- SE over seeds; the PNG shows mean +- 1.96 SE bands.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...datasets.objectives import get_function
from ...errors import InvalidParameterError
from ...mechanisms.noisy_argmax import grid_argmax, plan_grid_argmax
from ...mechanisms.release import seed000_delta
from ...models.domain import Box
from ...tasks.thompson import Candidates, ThompsonPlan, plan_thompson, recommend_from_queries, run_thompson
from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table

#: per function: kernel, lengthscale, TS candidate grid per axis, noisy-argmax grid per axis
SETUPS: dict[str, dict[str, Any]] = {
    "forrester": {"kernel": "exponential", "lengthscale": 0.2, "grid": 256, "baseline_grid": 25},
    "branin": {"kernel": "matern52", "lengthscale": 0.2, "grid": 32, "baseline_grid": 5},
    "hartmann3": {"kernel": "matern52", "lengthscale": 0.25, "grid": 12, "baseline_grid": 3},
}
EPSILONS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
CURVE_EPSILONS = (1.0, 10.0, 100.0, 1000.0)
QUICK: dict[str, Any] = {"functions": ("forrester",), "rounds": 12, "seeds": 3, "epsilons": (10.0, 1000.0), "grid": 64}


@dataclass(frozen=True)
class SeedTask:
    """One (function, seed): every method on the same response noise."""

    function: str
    seed: int
    rounds: int
    noise: float
    M_Y: float
    grid: int
    baseline_grid: int
    ts_plans: tuple[tuple[float, ThompsonPlan], ...]   # (epsilon, plan); epsilon = inf: non-private
    baseline_noise: tuple[tuple[float, float], ...]     # (epsilon, noise std of the noisy argmax)


def _candidates(dim: int, grid: int) -> Candidates:
    return Candidates.grid(Box.unit(dim), grid)


def run_seed(task: SeedTask) -> list[dict]:
    """All methods for one (function, seed); one row per (method, epsilon) with the two regret curves."""
    f = get_function(task.function)
    T = task.rounds
    rows = []
    ss = np.random.SeedSequence([task.seed, sum(map(ord, task.function))])
    noise_seed, random_seed, *streams = ss.spawn(2 + len(task.ts_plans) + len(task.baseline_noise))
    ts_streams, base_streams = streams[: len(task.ts_plans)], streams[len(task.ts_plans):]

    def source():  # the same response sequence for every method (common random numbers)
        return f.noisy(task.noise, np.random.default_rng(noise_seed))

    for (eps, plan), st in zip(task.ts_plans, ts_streams, strict=True):
        res = run_thompson(plan, source(), np.random.default_rng(st))
        reg = f.regret(res.queries)
        rec = f.regret(plan.candidates.points[recommend_from_queries(res.indices, plan.candidates.points,
                                                                     plan.recommendation_radius)])
        rows.append({"method": "private TS" if math.isfinite(eps) else "non-private TS", "epsilon": eps,
                     "recommendation": rec, "latest_query": reg, "best_query": np.minimum.accumulate(reg)})
    # random search (non-private): recommends its best observed (clipped) response
    cand = _candidates(f.dim, task.grid).points
    rng = np.random.default_rng(random_seed)
    obj = source()
    idx = rng.integers(0, cand.shape[0], size=T)
    y = np.clip([obj(cand[i]) for i in idx], -task.M_Y, task.M_Y)
    reg = f.regret(cand[idx])
    rec = reg[np.array([int(np.argmax(y[: t + 1])) for t in range(T)])]
    rows.append({"method": "random search", "epsilon": math.inf, "recommendation": rec, "latest_query": reg,
                 "best_query": np.minimum.accumulate(reg)})
    # noisy argmax on a coarse grid: records round-robin, one release per horizon t (full budget each)
    grid_pts = Box.unit(f.dim).grid(task.baseline_grid)[0]
    G = grid_pts.shape[0]
    obj = source()
    order = np.arange(T) % G
    y = np.clip([obj(grid_pts[g]) for g in order], -task.M_Y, task.M_Y)
    grid_reg = f.regret(grid_pts)
    for (eps, s), st in zip(task.baseline_noise, base_streams, strict=True):
        rng = np.random.default_rng(st)
        base_plan = _BaselinePlan(task.M_Y, s)
        rec = np.empty(T)
        for t in range(T):
            sums = np.bincount(order[: t + 1], weights=y[: t + 1], minlength=G)
            counts = np.bincount(order[: t + 1], minlength=G)
            # grid_argmax reads only M_Y and noise_std; its annotation (GridArgmaxPlan) is narrower than that
            rec[t] = grid_reg[grid_argmax(base_plan, sums, counts, rng)]  # type: ignore[arg-type]
        rows.append({"method": "noisy argmax", "epsilon": eps, "recommendation": rec,
                     "latest_query": np.full(T, np.nan), "best_query": np.full(T, np.nan)})
    for row in rows:
        row.update(function=task.function, seed=task.seed)
    return rows


@dataclass(frozen=True)
class _BaselinePlan:
    """What :func:`grid_argmax` reads from a plan (M_Y, noise_std): the calibrated noise, shipped to workers."""

    M_Y: float
    noise_std: float


METRICS = ("recommendation", "latest_query", "best_query")


def _summarise(rows: list[dict], window: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-round curves (mean, SE over seeds) and the summary table."""
    curves, table = [], []
    keys = sorted({(r["function"], r["method"], r["epsilon"]) for r in rows}, key=lambda k: (k[0], k[1], k[2]))
    for fn, method, eps in keys:
        sel = [r for r in rows if (r["function"], r["method"], r["epsilon"]) == (fn, method, eps)]
        arr = {k: np.stack([r[k] for r in sel]) for k in METRICS}
        S = arr["recommendation"].shape[0]

        def mse(a):  # mean and standard error over seeds
            return a.mean(axis=0), a.std(axis=0, ddof=1) / math.sqrt(S)  # noqa: B023 (called within this iteration)

        stats = {k: mse(a) for k, a in arr.items()}
        for t in range(arr["recommendation"].shape[1]):
            row = {"function": fn, "method": method, "epsilon": eps, "round": t + 1, "seeds": S}
            for k, (m, se) in stats.items():
                row[f"{k}_mean"], row[f"{k}_se"] = m[t], se[t]
            curves.append(row)
        row = {"function": fn, "method": method, "epsilon": eps, "seeds": S}
        for k in ("recommendation", "latest_query"):
            m, se = mse(arr[k][:, -window:].mean(axis=1))
            row[f"{k}_regret_last"], row[f"{k}_regret_last_se"] = m, se
        m, se = mse(arr["best_query"][:, -1])
        row["best_query_regret_T"], row["best_query_regret_T_se"] = m, se
        table.append(row)
    return pd.DataFrame(curves), pd.DataFrame(table)


STYLE = {"non-private TS": dict(color="k", ls="-"), "random search": dict(color="0.5", ls=":")}


def _plot(curves: pd.DataFrame, table: pd.DataFrame, functions, curve_eps, path: Path, T: int, window: int):
    import matplotlib

    fig, axes = new_figure(len(functions), 3, figsize=(16, 4.4 * len(functions)), squeeze=False,
                           constrained_layout=True)
    cmap = matplotlib.colormaps["viridis"]
    eps_all = sorted({e for e in table["epsilon"] if math.isfinite(e)})
    color = {e: cmap(i / max(len(eps_all) - 1, 1)) for i, e in enumerate(eps_all)}

    def band(ax, d, col, label, **kw):
        t, m, se = d["round"].to_numpy(), d[col + "_mean"].to_numpy(), d[col + "_se"].to_numpy()
        line = ax.plot(t, m, label=label, **kw)[0]
        ax.fill_between(t, np.maximum(m - 1.96 * se, 0.0), m + 1.96 * se, color=line.get_color(), alpha=0.15, lw=0)

    for i, fn in enumerate(functions):
        c = curves[curves["function"] == fn]
        for j, col in enumerate(("recommendation", "best_query")):
            ax = axes[i][j]
            for method in ("non-private TS", "random search"):
                band(ax, c[c["method"] == method], col, method, **STYLE[method])
            for e in curve_eps:
                d = c[(c["method"] == "private TS") & (c["epsilon"] == e)]
                if len(d):
                    band(ax, d, col, f"private TS, ε={e:g}", color=color[e])
                if col == "recommendation":
                    d = c[(c["method"] == "noisy argmax") & (c["epsilon"] == e)]
                    if len(d):
                        band(ax, d, col, f"noisy argmax, ε={e:g}", color=color[e], ls="--")
            ax.set_xlabel("round t")
            ax.set_ylabel("recommendation regret" if col == "recommendation" else "best-query regret (oracle)")
            if col == "recommendation":  # the first rounds of the noisy argmax (few records) can be far off
                late = c[c["round"] >= min(10, T)]["recommendation_mean"]
                ax.set_ylim(0.0, max(1.5, 1.15 * float(late.max())) if len(late) else None)
            ax.set_title(f"{fn}: " + ("regret of the recommended point (TS: densest query, 2nd half)"
                                      if col == "recommendation" else "best-query regret: 1 - max f over queries so far"),
                         fontsize=9)
            if col == "best_query":
                ax.set_yscale("symlog", linthresh=1e-2)
            if col == "best_query":
                ax.set_ylim(bottom=0.0)
        ax = axes[i][2]
        tb = table[table["function"] == fn]
        for method, kw in (("private TS", dict(color="C0", marker="o")), ("noisy argmax", dict(color="C3", marker="s", ls="--"))):
            d = tb[tb["method"] == method].sort_values("epsilon")
            m, se = d["recommendation_regret_last"].to_numpy(), d["recommendation_regret_last_se"].to_numpy()
            ax.errorbar(d["epsilon"], m, yerr=1.96 * se, label=method, capsize=3, **kw)
        for method in ("non-private TS", "random search"):
            d = tb[tb["method"] == method]
            if len(d):
                m, se = float(d["recommendation_regret_last"].iloc[0]), float(d["recommendation_regret_last_se"].iloc[0])
                ax.axhline(m, label=method, **STYLE[method])
                ax.axhspan(m - 1.96 * se, m + 1.96 * se, color=STYLE[method]["color"], alpha=0.12, lw=0)
        ax.set_xscale("log")
        ax.set_xlabel("total ε of the run (δ = T^-1.1)")
        ax.set_ylabel(f"recommendation regret (rounds {T - window + 1}..{T})")
        ax.set_title(f"{fn}: regret vs ε after {T} rounds", fontsize=9)
        for a in axes[i]:
            a.grid(alpha=0.3)
        axes[i][0].legend(fontsize=6.5, ncol=2)
        ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=90)


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, functions=None, rounds: int | None = None,
        seeds: int | None = None, epsilons=None, curve_epsilons=None, sigma: float = 0.5, noise: float = 0.1,
        M_Y: float = 1.0, grid: int | None = None, window: int = 10, schedule: str = "equal") -> dict:
    """Write thompson.png, thompson_curves.csv, thompson_table.csv (+ .md) and run.json."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    functions = as_tuple(functions) if functions is not None else (QUICK["functions"] if quick else tuple(SETUPS))
    for fn in functions:
        if fn not in SETUPS:
            raise InvalidParameterError("functions", f"names from {sorted(SETUPS)}", fn)
    T = int(rounds if rounds is not None else (QUICK["rounds"] if quick else 100))
    S = int(seeds if seeds is not None else (QUICK["seeds"] if quick else 20))
    if T < 1:
        raise InvalidParameterError("rounds", ">= 1", T)
    if S < 2:
        raise InvalidParameterError("seeds", ">= 2 (standard errors need two)", S)
    eps_list = tuple(float(e) for e in as_tuple(epsilons if epsilons is not None else (QUICK["epsilons"] if quick else EPSILONS)))
    curve_eps = tuple(float(e) for e in as_tuple(curve_epsilons)) if curve_epsilons is not None else \
        tuple(e for e in eps_list if e in CURVE_EPSILONS) or eps_list
    window = min(int(window), T)
    delta = seed000_delta(T)
    tasks, plans_info, grids = [], [], {}
    for fn in functions:
        setup = SETUPS[fn]
        f = get_function(fn)
        g = int(grid or (QUICK["grid"] if quick else setup["grid"]))
        if f.dim > 1 and quick:
            g = min(g, 16)
        grids[fn] = g
        cand = _candidates(f.dim, g)
        common = dict(rounds=T, kernel=setup["kernel"], lengthscale=setup["lengthscale"], sigma=sigma, M_Y=M_Y,
                      delta=delta)
        plans = [(math.inf, plan_thompson(cand, r=noise / sigma, **common))]
        plans += [(e, plan_thompson(cand, epsilon=e, schedule=schedule, **common)) for e in eps_list]
        base = [(e, plan_grid_argmax(epsilon=e, delta=delta, M_Y=M_Y).noise_std) for e in eps_list]
        ts_floor = float(f.regret(cand.points).min())
        base_floor = float(f.regret(Box.unit(f.dim).grid(setup["baseline_grid"])[0]).min())
        for e, p in plans:
            plans_info.append({"function": fn, "method": "private TS" if math.isfinite(e) else "non-private TS",
                               "epsilon": e, "certified_epsilon": p.epsilon, "r": float(p.r[0]),
                               "round_epsilon_first": float(p.round_epsilon[0]),
                               "round_epsilon_last": float(p.round_epsilon[-1]), "grid_floor": ts_floor})
        plans_info.append({"function": fn, "method": "random search", "epsilon": math.inf, "grid_floor": ts_floor})
        for e, s in base:
            plans_info.append({"function": fn, "method": "noisy argmax", "epsilon": e, "certified_epsilon": e,
                               "noise_std": s, "grid_floor": base_floor})
        for sd in range(S):
            tasks.append(SeedTask(fn, seed + sd, T, noise, M_Y, g, setup["baseline_grid"], tuple(plans), tuple(base)))
    mapper = executor.map if executor is not None else (lambda fn, items, desc=None: [fn(x) for x in items])
    rows = [row for block in mapper(run_seed, tasks, desc="thompson: seeds") for row in block]
    curves, table = _summarise(rows, window)
    settings = pd.DataFrame(plans_info)
    table = table.merge(settings[["function", "method", "epsilon", "certified_epsilon"]], how="left",
                        on=["function", "method", "epsilon"])
    png = _plot(curves, table, functions, curve_eps, out_dir / "thompson.png", T, window)
    curves.to_csv(out_dir / "thompson_curves.csv", index=False, float_format="%.6g")
    write_table(table, out_dir, "thompson_table")
    write_table(settings, out_dir, "thompson_settings")
    seconds = round(time.perf_counter() - t0, 2)
    summary = {"png": str(png), "rows": len(table), "seconds": seconds,
               "recommendation_regret_last": {f"{r.function}/{r.method}/{r.epsilon:g}": round(float(r.recommendation_regret_last), 4)
                                              for r in table.itertuples()}}
    config = {"functions": list(functions), "rounds": T, "seeds": S, "base_seed": seed, "epsilons": list(eps_list),
              "delta": delta, "sigma": sigma, "noise": noise, "M_Y": M_Y, "window": window, "quick": quick,
              "setups": {fn: {**SETUPS[fn], "grid": grids[fn]} for fn in functions},
              "schedule": schedule, "knob": "r", "conversion": "improved", "constants": "proven"}
    write_run_record(out_dir, "thompson", config, summary, seconds)
    return summary


__all__ = ["EPSILONS", "SETUPS", "SeedTask", "run", "run_seed"]
