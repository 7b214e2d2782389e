"""The LiRA sweeps behind Figures 2, 3 and 5 of seed 000 (sec. 4, App. C): grid points, one audited task
per (grid point, seed), the sweep through an executor, the check "empirical lower bound <= certified
epsilon", summaries over seeds and the run record. The figures are drawn by :mod:`.lira_figures`.

Setting (docs/notes/seed000_published_scripts.md, sec. 4): n = 10, x0 = 1/2, M_xi = 0, lengthscale 1, uniform covariates,
10^4 shadow + 10^4 evaluation datasets per hypothesis, delta = 0.05, seeds base..base+9 (the same data
streams at every grid point: common random numbers across the curves). The paper did not publish its
r and sigma grids; the ones used here are recorded in run.json:

* L = 1 sweep (Fig. 2 / Fig. 5 left): sigma in {0.5, 1, 5, inf} (inf = the covariance-only release of
  sec. 4), r on 10 log-spaced values from 0.01 to 5 (the certified epsilon then spans 1e9 .. 0.1);
* L sweep (Fig. 3 / Fig. 5 right): r = 1, sigma = 5, L in {1, 2, 3, 5, 10, 20, 50, 100}, with the
  non-private benchmark (the attack on the exact posterior mean and variance at x0) at the first L.

Attacks: ``paper`` (App. C) everywhere; ``exact`` (likelihood ratio of all L values) on every point of
the L sweep and on the first three seeds of the L = 1 sweep. For every audited point the empirical
epsilon lower bound (95% confidence) is checked against the certified epsilon (proven Lemma B.7
constants, improved RDP conversion); a violation stops the experiment.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...audit.membership.game import MembershipGame
from ...audit.membership.lira import audit_lira
from ...errors import InvalidParameterError
from ..common import write_run_record, write_table

N, X0, LENGTHSCALE, M_XI, DELTA, CONFIDENCE = 10, 0.5, 1.0, 0.0, 0.05, 0.95
SEEDS = 10
SIZE = 10_000
FIG2_SIGMAS = (0.5, 1.0, 5.0, math.inf)
FIG2_R = tuple(float(r) for r in np.geomspace(0.01, 5.0, 10))
FIG2_EXACT_SEEDS = 3
FIG3_R, FIG3_SIGMA = 1.0, 5.0
FIG3_L = (1, 2, 3, 5, 10, 20, 50, 100)
QUICK: dict[str, Any] = dict(seeds=2, size=400, fig2_sigmas=(0.5, math.inf), fig2_r=(0.03, 0.3, 3.0), fig3_L=(1, 5, 25))

METRICS = ("auc", "tpr@0.01", "tpr@0.05", "tpr@0.1", "excess@0.01", "excess@0.05", "excess@0.1",
           "epsilon_lower_bound")


@dataclass(frozen=True)
class Task:
    """One audited grid point and seed."""

    game: MembershipGame
    seed: int
    attacks: tuple[str, ...]
    n_shadow: int
    n_eval: int
    delta: float = DELTA


def game_at(r: float, sigma: float, L: int) -> MembershipGame:
    return MembershipGame(n=N, x0=X0, lengthscale=LENGTHSCALE, r=r, sigma=sigma, M_xi=M_XI, L=L,
                          covariates="uniform")


def run_task(task: Task) -> list[dict]:
    """Audit one grid point with each of its attacks (same data); one flat row per attack."""
    res = audit_lira(task.game, attacks=task.attacks, n_shadow=task.n_shadow, n_eval=task.n_eval, delta=task.delta,
                     seed=task.seed, confidence=CONFIDENCE)
    rows = []
    for name, r in res.items():
        roc = r.roc.to_dict()
        row = {"attack": name, "r": task.game.r, "sigma": task.game.sigma, "L": task.game.L, "seed": task.seed,
               "n_shadow": task.n_shadow, "n_eval": task.n_eval, "auc": roc["auc"]}
        for a, t in roc["tpr_at_fpr"].items():
            row[f"tpr@{a}"] = t
            row[f"excess@{a}"] = roc["excess_tpr_at_fpr"][a]
        row.update(epsilon_lower_bound=r.lower.epsilon, lower_significant=r.lower.significant,
                   epsilon_certified=r.epsilon_certified, epsilon_published_not_covered=r.epsilon_published,
                   seconds=r.seconds)
        rows.append(row)
    return rows


def run_sweep(tasks: list[Task], executor, desc: str) -> pd.DataFrame:
    rows = executor.map(run_task, tasks, desc=desc)
    return pd.DataFrame([row for block in rows for row in block])


def check_lower_le_certified(df: pd.DataFrame) -> int:
    """Every private point: empirical lower bound <= certified epsilon. Returns the number checked."""
    private = df[df["attack"] != "benchmark"]
    bad = private[~(private["epsilon_lower_bound"] <= private["epsilon_certified"])]
    if len(bad):
        raise RuntimeError("empirical epsilon lower bound above the certified epsilon (certificate refuted?):\n"
                           + bad.to_string())
    return int(len(private))


def summarise(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean and standard deviation over seeds of each metric (the certified epsilons are per point)."""
    g = df.groupby(keys, sort=True)
    out = g[list(METRICS)].agg(["mean", "std"])
    out.columns = [f"{m}_{s}" for m, s in out.columns]
    out["seeds"] = g.size()
    out["epsilon_lower_bound_max"] = g["epsilon_lower_bound"].max()
    out["epsilon_certified"] = g["epsilon_certified"].first()
    out["epsilon_published_not_covered"] = g["epsilon_published_not_covered"].first()
    return out.reset_index()


def sizes(quick: bool) -> tuple[int, int]:
    """(seeds, datasets per hypothesis)."""
    return (QUICK["seeds"], QUICK["size"]) if quick else (SEEDS, SIZE)


def l1_tasks(quick: bool, seed: int) -> list[Task]:
    """The L = 1 sweep (Figs 2 and 5, left): every (seed, sigma, r)."""
    seeds, size = sizes(quick)
    sigmas = QUICK["fig2_sigmas"] if quick else FIG2_SIGMAS
    rs = QUICK["fig2_r"] if quick else FIG2_R
    exact_seeds = 1 if quick else FIG2_EXACT_SEEDS
    return [Task(game_at(r, s, 1), seed + i, ("paper", "exact") if i < exact_seeds else ("paper",), size, size)
            for i in range(seeds) for s in sigmas for r in rs]


def l_tasks(quick: bool, seed: int) -> list[Task]:
    """The sweep over L (Figs 3 and 5, right), with the non-private benchmark at the first L."""
    seeds, size = sizes(quick)
    Ls = QUICK["fig3_L"] if quick else FIG3_L
    tasks = []
    for i in range(seeds):
        for L in Ls:
            attacks = ("paper", "exact", "benchmark") if L == Ls[0] else ("paper", "exact")
            tasks.append(Task(game_at(FIG3_R, FIG3_SIGMA, L), seed + i, attacks, size, size))
    return tasks


def _task_keys(tasks: list[Task]) -> set:
    return {(t.game.r, t.game.sigma, t.game.L, t.seed, t.n_shadow, a) for t in tasks for a in t.attacks}


def _sweep(tasks, out_dir, executor, stem, desc, runs_from: Path | None) -> pd.DataFrame:
    """Run the tasks, or read the per-point rows of an earlier run of exactly these tasks (``runs_from``:
    a CSV written by this module: the same grid points, seeds, sizes and attacks, so the same data)."""
    if runs_from is None:
        return run_sweep(tasks, executor, desc=desc)
    path = Path(runs_from)
    if not path.is_file():
        raise InvalidParameterError("sweeps_from", "CSV files of earlier sweeps (*_runs.csv)", str(path))
    df = pd.read_csv(path)
    have = {(float(r), float(s), int(L), int(sd), int(n), str(a)) for r, s, L, sd, n, a in
            df[["r", "sigma", "L", "seed", "n_shadow", "attack"]].itertuples(index=False)}
    want = {(float(r), float(s), int(L), int(sd), int(n), a) for r, s, L, sd, n, a in _task_keys(tasks)}
    if have != want:
        raise InvalidParameterError("sweeps_from", f"the runs of exactly this sweep ({len(want)} audited points)",
                                    f"{path} with {len(have)} points, {len(want ^ have)} different")
    return df


def l1_sweep(out_dir, quick, executor, seed, stem, runs_from=None):
    df = _sweep(l1_tasks(quick, seed), out_dir, executor, stem, f"{stem}: LiRA sweep (L = 1)", runs_from)
    checked = check_lower_le_certified(df)
    summ = summarise(df, ["attack", "sigma", "r"])
    write_table(df, out_dir, f"{stem}_runs")
    write_table(summ, out_dir, f"{stem}_summary")
    return df, summ, checked


def l_sweep(out_dir, quick, executor, seed, stem, runs_from=None):
    df = _sweep(l_tasks(quick, seed), out_dir, executor, stem, f"{stem}: LiRA sweep over L", runs_from)
    bench = df[df["attack"] == "benchmark"]
    checked = check_lower_le_certified(df)
    summ = summarise(df[df["attack"] != "benchmark"], ["attack", "L"])
    bsum = summarise(bench, ["attack"]) if len(bench) else pd.DataFrame()
    summ = pd.concat([summ, bsum.assign(L=np.nan)], ignore_index=True) if len(bsum) else summ
    write_table(df, out_dir, f"{stem}_runs")
    write_table(summ, out_dir, f"{stem}_summary")
    return df, summ, checked


def exact_vs_paper(df: pd.DataFrame) -> dict:
    """Paired comparison on the points where both attacks ran (same data)."""
    both = df[df["attack"].isin(["paper", "exact"])]
    keys = ["r", "sigma", "L", "seed"]
    wide = both.pivot_table(index=keys, columns="attack", values=["auc", "tpr@0.1", "tpr@0.01"])
    wide = wide.dropna()
    if wide.empty:
        return {}
    d_auc = wide[("auc", "exact")] - wide[("auc", "paper")]
    return {"points": int(len(wide)), "auc_exact_minus_paper_mean": float(d_auc.mean()),
            "auc_exact_minus_paper_min": float(d_auc.min()),
            "tpr@0.1_exact_minus_paper_mean": float((wide[("tpr@0.1", "exact")] - wide[("tpr@0.1", "paper")]).mean()),
            "tpr@0.01_exact_minus_paper_mean": float((wide[("tpr@0.01", "exact")]
                                                      - wide[("tpr@0.01", "paper")]).mean())}


def eps_column(constants: str) -> str:
    """The epsilon column a figure's axis shows: certified (proven constants) or the paper's
    published, uncovered value. The audits themselves always check against the certified one."""
    return "epsilon_certified" if constants == "proven" else "epsilon_published_not_covered"


def check_constants(constants: str) -> None:
    if constants not in ("proven", "published"):
        raise InvalidParameterError("constants", "'proven' or 'published'", constants)


def grid(key, full, quick):
    vals = QUICK[key] if quick else full
    return ["inf" if isinstance(x, float) and math.isinf(x) else x for x in vals]


def finish(out_dir, name, t0, quick, seed, constants, df, summ, checked, png, grids) -> dict:
    """The run record of a sweep figure and its summary."""
    seeds, size = sizes(quick)
    summary = {"png": str(png), "points_audited": int(len(df)), "lower_le_certified_checked": checked,
               "max_epsilon_lower_bound": float(df.loc[df["attack"] != "benchmark", "epsilon_lower_bound"].max()),
               "exact_vs_paper": exact_vs_paper(df)}
    seconds = round(time.perf_counter() - t0, 3)
    summary["seconds"] = seconds
    write_run_record(out_dir, name, {"n": N, "x0": X0, "lengthscale": LENGTHSCALE, "M_xi": M_XI,
                                     "covariates": "uniform", "delta": DELTA, "confidence": CONFIDENCE,
                                     "seeds": list(range(seed, seed + seeds)), "n_shadow": size, "n_eval": size,
                                     "certified": "proven constants, improved conversion",
                                     "x_axis_constants": constants, "quick": quick, **grids}, summary, seconds)
    return summary
