"""Tables 1-3 of seed 000 (sec. 5, App. D): the 1-D excursion-set privacy-utility study.

Per column: N_pair independent (f*, D) pairs (exponential-kernel GP target, l_gen = 1, rescaled to
sup-norm 1 - M_xi on mesh ∪ X so |y| <= 1 exactly, x_i ~ Unif[0, 1], y = f*(x) + Unif[-M_xi, M_xi]),
a separate validation pool for the cut-offs, the unconstrained and the eps_1 < 10 search
(coarse grid + two refinement rounds around the top 3), 800-point mesh, delta = 0.005, L = 1,
Lemma B.7 (kappa = exp(-1/l)) with the paper's conversion (eq. 3), and 50 posterior draws per pair
for the one-path IoU. Every column is run with both constant sets ("proven": the lemmas;
"published": Delta_n / sqrt(2) as in the paper's tables, not covered by the lemmas).

Target filter: the paper's numbers are reproduced only with the published script's rejection of
targets whose excursion set is tiny, huge or fragmented (docs/notes/seed000_published_scripts.md, sec. 1.3; the paper
does not mention it): without it about a third of the OU targets have no or almost no excursion
set and the IoU is degenerate. ``target_filter="published"`` is therefore our default here and is
recorded in run.json; ``target_filter="none"`` gives the unfiltered population.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...datasets.synthetic import check_noise_level, excursion_pairs_1d
from ...errors import InvalidParameterError
from ...formatting import format_upper
from ...models.domain import Box
from ...tasks.excursion_study import PrivacySpec, ReleaseSpec, StudyConfig, run_excursion_study, summarize
from ...tasks.hyperparameter_search import DEFAULT_REFINEMENT, SearchSpace
from ..common import as_tuple, write_run_record, write_table

CONSTANT_SETS = ("proven", "published")
#: Coarse grid of the published 1-D script's README (sigma = 0, a hard classifier, replaced by 0.05).
GRID_1D = dict(lengthscales=(0.08, 0.13, 0.2, 0.25, 0.35, 0.5, 0.6, 0.75, 1.0),
               rs=(0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0), sigmas=(0.05, 0.1, 0.5, 1.0, 2.0, 5.0))
QUICK_GRID_1D = dict(lengthscales=(0.13, 0.35, 1.0), rs=(0.1, 0.5, 2.0, 5.0), sigmas=(0.05, 0.5, 2.0))
#: The published 1-D script's refinement factors (docs/notes/seed000_published_scripts.md, sec. 1.3): l x {0.7 .. 1.5},
#: r and sigma x {0.4 .. 4}; one round for the unconstrained search, three for the private one.
_SCRIPT_FACTORS = ((0.7, 0.85, 1.0, 1.2, 1.5), (0.4, 0.55, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0, 4.0),
                   (0.4, 0.55, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0, 4.0))
#: search name -> (unconstrained refinement rounds, private refinement rounds)
SEARCHES = {"ours": (DEFAULT_REFINEMENT, DEFAULT_REFINEMENT),
            "script": ((_SCRIPT_FACTORS,), (_SCRIPT_FACTORS,) * 3)}

PAPER: dict[str, dict] = {  # seed 000, Tables 2 and 3: median [q25, q75]; scalars are medians only
    "table1": {
        0.1: {"eps_star": 2e4, "deff_star": (52.7, 52.0, 53.4), "deff_priv": (2.26, 2.25, 2.26),
              "rel_bce_increase": (1.15, 0.67, 1.87), "iou_star": (0.957, 0.932, 0.976),
              "iou_path_mean": (0.854, 0.799, 0.895), "rel_iou_gap": (0.101, 0.070, 0.148)},
        0.3: {"eps_star": 500, "deff_star": (17.7, 17.6, 17.9), "deff_priv": (2.21, 2.20, 2.22),
              "rel_bce_increase": (0.335, 0.140, 0.606), "iou_star": (0.922, 0.877, 0.956),
              "iou_path_mean": (0.833, 0.774, 0.880), "rel_iou_gap": (0.087, 0.055, 0.134)},
        0.5: {"eps_star": 63.6, "deff_star": (8.47, 8.42, 8.53), "deff_priv": (2.15, 2.14, 2.15),
              "rel_bce_increase": (0.088, 0.002, 0.194), "iou_star": (0.874, 0.806, 0.927),
              "iou_path_mean": (0.797, 0.720, 0.855), "rel_iou_gap": (0.077, 0.041, 0.131)},
        0.6: {"eps_star": 21.4, "deff_star": (6.01, 5.97, 6.05), "deff_priv": (2.08, 2.07, 2.09),
              "rel_bce_increase": (0.022, 0.0, 0.074), "iou_star": (0.844, 0.760, 0.905),
              "iou_path_mean": (0.772, 0.680, 0.839), "rel_iou_gap": (0.073, 0.029, 0.134)},
    },
    "table3": {
        50: {"eps_star": 90.4, "deff_star": (6.63, 6.55, 6.70), "deff_priv": (1.13, 1.12, 1.13),
             "rel_bce_increase": (0.142, 0.013, 0.330), "iou_star": (0.852, 0.790, 0.915),
             "iou_path_mean": (0.727, 0.629, 0.811), "iou_path_sd": (0.082, 0.055, 0.109),
             "rel_iou_gap": (0.087, 0.055, 0.134)},
        100: {"eps_star": 63.6, "deff_star": (8.47, 8.42, 8.53), "deff_priv": (2.15, 2.14, 2.15),
              "rel_bce_increase": (0.088, 0.002, 0.194), "iou_star": (0.874, 0.806, 0.927),
              "iou_path_mean": (0.797, 0.720, 0.855), "iou_path_sd": (0.056, 0.040, 0.080),
              "rel_iou_gap": (0.077, 0.041, 0.131)},
        200: {"eps_star": 39.0, "deff_star": (13.0, 12.9, 13.0), "deff_priv": (2.17, 2.16, 2.17),
              "rel_bce_increase": (0.043, 0.0, 0.115), "iou_star": (0.888, 0.831, 0.935),
              "iou_path_mean": (0.835, 0.767, 0.880), "iou_path_sd": (0.051, 0.039, 0.069),
              "rel_iou_gap": (0.057, 0.029, 0.100)},
        400: {"eps_star": 16.7, "deff_star": (14.6, 14.5, 14.6), "deff_priv": (4.25, 4.25, 4.26),
              "rel_bce_increase": (0.006, 0.0, 0.027), "iou_star": (0.913, 0.878, 0.946),
              "iou_path_mean": (0.874, 0.822, 0.909), "iou_path_sd": (0.038, 0.027, 0.049),
              "rel_iou_gap": (0.041, 0.024, 0.067)},
    },
}

#: Table rows: (key, label, kind) with kind "eps" (a number), "num" or "pct" (median [IQR]).
ROWS = (("eps_star", "ε, unconstrained", "eps"), ("deff_star", "d_eff, unconstrained", "num"),
        ("deff_priv", "d_eff, ε<ε0", "num"), ("rel_bce_increase", "relative BCE increase", "pct"),
        ("iou_star", "IoU, unconstrained", "num"), ("iou_path_mean", "1-path IoU mean, ε<ε0", "num"),
        ("iou_path_sd", "1-path IoU SD, ε<ε0", "num"), ("rel_iou_gap", "relative IoU gap", "pct"))


def _fmt(x: float, kind: str) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "inf" if x is not None and np.isinf(x) else "–"
    if kind == "pct":
        return f"{100 * x:.1f}%"
    if kind == "eps":   # a certified epsilon: rounded up (red team 18d: 917.835 read 917.8)
        if x < 1e4:
            return format_upper(x, 4)
        mant, ex = format_upper(x, 2).split("e")
        return f"{mant}e{int(ex)}"
    return f"{x:.3g}"


def format_cell(stat: Any, kind: str, iqr: bool) -> str:
    """'median' or 'median [q25, q75]' from a summary entry or a paper tuple."""
    if stat is None:
        return "–"
    if isinstance(stat, dict):
        med, lo, hi = stat["median"], stat["q25"], stat["q75"]
    elif isinstance(stat, tuple):
        med, lo, hi = stat
    else:
        return _fmt(float(stat), kind)
    return _fmt(med, kind) + (f" [{_fmt(lo, kind)}, {_fmt(hi, kind)}]" if iqr else "")


def results_table(columns: dict[Any, dict], header: str, *, iqr: bool, rows=ROWS) -> pd.DataFrame:
    """A paper-style table: one row per statistic, one column per setting (summaries of :func:`summarize`)."""
    data = {"": [label for _, label, _ in rows]}
    for col, summ in columns.items():
        cells = []
        for key, _, kind in rows:
            if not summ.get("feasible", True) and key not in ("eps_star", "deff_star", "iou_star"):
                cells.append("no feasible setting")
            else:
                stat = summ.get("epsilon_star", summ.get(key)) if key == "eps_star" else summ.get(key)
                cells.append(format_cell(stat, kind, iqr))
        data[f"{header}={col}"] = cells
    return pd.DataFrame(data)


def settings_table(columns: dict[Any, dict], header: str) -> pd.DataFrame:
    """The selected hyperparameters and cut-offs of each column."""
    recs = []
    for col, s in columns.items():
        ts, tp = s["theta_star"], s.get("theta_priv")
        recs.append({header: col, "l*": ts["lengthscale"], "r*": ts["r"], "sigma*": ts["sigma"],
                     "eps*": s["epsilon_star"], "C": s["C"],
                     "l_priv": tp["lengthscale"] if tp else np.nan, "r_priv": tp["r"] if tp else np.nan,
                     "sigma_priv": tp["sigma"] if tp else np.nan, "eps_priv": s.get("epsilon_priv", np.nan),
                     "c": s["c"] if s["c"] is not None else np.nan,
                     "note": "" if s["feasible"] else s.get("message", "no feasible setting")})
    return pd.DataFrame(recs)


def _paper_columns(paper: dict) -> dict:
    return {col: {**vals, "feasible": True} for col, vals in paper.items()}


def _constant_sets(constants: str | None) -> tuple[str, ...]:
    if constants is None or constants == "both":
        return CONSTANT_SETS
    if constants not in CONSTANT_SETS:
        raise InvalidParameterError("constants", f"one of {CONSTANT_SETS} or 'both'", constants)
    return (constants,)


def _check_inputs(M_values, eps0) -> None:
    """Validate every column before any work is done."""
    if len(M_values) == 0:
        raise InvalidParameterError("M_xi values", "at least one noise level", M_values)
    for M in M_values:
        check_noise_level(M)
    if not float(eps0) > 0:
        raise InvalidParameterError("eps0", "> 0", eps0)


def config_1d(*, quick: bool, n: int, eps0: float = 10.0, delta: float = 0.005, L: int = 1,
              n_pairs: int | None = None, n_val: int | None = None, mesh_size: int | None = None,
              n_mc: int | None = None, target_filter: str = "published", conversion: str = "mironov",
              clip: float = 1e-6, search: str = "ours", shared_target: bool = False) -> dict:
    """All settings of one 1-D study (what run.json records).

    ``search``: "ours" (coarse grid + two refinement rounds around the top 3, both searches) or
    "script" (the published script's refinement, docs/notes/seed000_published_scripts.md, sec. 1.3: one wide round for the
    unconstrained search, three for the private one). ``shared_target``: one target per pool (the
    script's design, D11) instead of independent pairs."""
    if search not in SEARCHES:
        raise InvalidParameterError("search", f"one of {tuple(SEARCHES)}", search)
    if not isinstance(shared_target, bool):   # "--set shared_target=maybe" must not read as True
        raise InvalidParameterError("shared_target", "true or false", shared_target)
    for key, val in (("n_pairs", n_pairs), ("n_val", n_val), ("mesh_size", mesh_size), ("n_mc", n_mc)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, (int, np.integer))):
            raise InvalidParameterError(key, "an integer", val)
    rounds, private_rounds = SEARCHES[search]
    cfg = {"n": n, "eps0": eps0, "delta": delta, "L": L, "lengthscale_gen": 1.0, "t": 0.0,
           "n_pairs": 40 if quick else 1000, "n_val": 20 if quick else 250,
           "mesh_size": 200 if quick else 800, "n_mc": 10 if quick else 50,
           "target_filter": target_filter, "conversion": conversion, "bce_clip": clip,
           "grid": QUICK_GRID_1D if quick else GRID_1D, "search": search, "shared_target": bool(shared_target),
           "refinement": rounds[:1] if quick else rounds,
           "private_refinement": private_rounds[:1] if quick else private_rounds, "top_k": 3,
           "sensitivity": "exp1d (Lemma B.7), kappa = exp(-1/l)", "kernel": "exponential"}
    for k, val in (("n_pairs", n_pairs), ("n_val", n_val), ("mesh_size", mesh_size), ("n_mc", n_mc)):
        if val is not None:
            cfg[k] = val
    return cfg


def run_column(cfg: dict, M_xi: float, *, executor, seed: int, constants: tuple[str, ...],
               label: str = "") -> dict[str, Any]:
    """One column (one M_xi and |D|) for each constant set: {constants: (StudyResult, summary)}."""
    M_xi = check_noise_level(M_xi)
    eps0 = float(cfg["eps0"])
    if not eps0 > 0:
        raise InvalidParameterError("eps0", "> 0", eps0)
    ss = np.random.SeedSequence([seed, int(round(M_xi * 1000)), int(cfg["n"])])
    g_train, g_val, g_study = (np.random.default_rng(s) for s in ss.spawn(3))
    kw = dict(n=cfg["n"], M_xi=M_xi, mesh_size=cfg["mesh_size"], lengthscale_gen=cfg["lengthscale_gen"],
              t=cfg["t"], target_filter=cfg["target_filter"], shared_target=cfg.get("shared_target", False))
    train = excursion_pairs_1d(cfg["n_pairs"], rng=g_train, **kw)
    val = excursion_pairs_1d(cfg["n_val"], rng=g_val, **kw)
    space = SearchSpace(refinement=cfg["refinement"], top_k=cfg["top_k"], **cfg["grid"])
    private_space = SearchSpace(refinement=cfg.get("private_refinement", cfg["refinement"]), top_k=cfg["top_k"],
                                **cfg["grid"])
    specs = {c: PrivacySpec(eps0=eps0, delta=cfg["delta"], n=cfg["n"], domain=Box.unit(1), L=cfg["L"],
                            sensitivity="exp1d", constants=c, conversion=cfg["conversion"]) for c in constants}
    study = StudyConfig(space=space, private_space=private_space, privacy=specs[constants[0]],
                        release=ReleaseSpec(train.mesh, train.axes), clip=cfg["bce_clip"], n_mc=cfg["n_mc"],
                        chunk_size=25 if cfg["n_pairs"] < 200 else 50)
    results = run_excursion_study(train, val, study, executor, seed=int(g_study.integers(2**31)), privacy=specs,
                                  label=label)
    return {c: (res, summarize(res)) for c, res in results.items()}


def _write_outputs(out: Path, stem: str, header: str, columns: dict, paper: dict | None, *, iqr: bool,
                   constants: tuple[str, ...]) -> dict:
    written = {}
    for c in constants:
        summ = {col: res[c][1] for col, res in columns.items()}
        write_table(results_table(summ, header, iqr=iqr), out, f"{stem}_{c}")
        write_table(settings_table(summ, header), out, f"{stem}_settings_{c}")
        for col, res in columns.items():
            res[c][0].per_pair.to_csv(out / f"per_pair_{header}{col}_{c}.csv", index=False)
            res[c][0].private.table.to_csv(out / f"search_private_{header}{col}_{c}.csv", index=False)
        written[c] = summ
    for col, res in columns.items():
        res[constants[0]][0].unconstrained.table.to_csv(out / f"search_unconstrained_{header}{col}.csv", index=False)
    if paper is not None:
        write_table(results_table(_paper_columns(paper), header, iqr=iqr), out, f"{stem}_paper")
    return written


def _run_table(name: str, out_dir: Path, *, quick: bool, executor, seed: int, values, vary: str,
               paper_key: str, iqr: bool, constants=None, **options) -> dict:
    t0 = time.perf_counter()
    out = Path(out_dir)
    consts = _constant_sets(constants)
    _check_inputs(values if vary == "M_xi" else [options.get("M_xi", 0.5)], options.get("eps0", 10.0))
    columns = {}
    for val in values:
        if vary == "M_xi":
            cfg = config_1d(quick=quick, n=int(options.get("n", 100)),
                            **{k: o for k, o in options.items() if k != "n"})
            M = float(val)
        else:
            cfg = config_1d(quick=quick, n=int(val), **{k: o for k, o in options.items() if k != "M_xi"})
            M = float(options.get("M_xi", 0.5))
        columns[val] = run_column(cfg, M, executor=executor, seed=seed, constants=consts,
                                  label=f"{name} {vary}={val}")
    header = "M_xi" if vary == "M_xi" else "n"
    written = _write_outputs(out, name, header, columns, PAPER[paper_key], iqr=iqr, constants=consts)
    if name in ("table1", "table2"):  # the same study: write the other format too
        other = "table2" if name == "table1" else "table1"
        for c in consts:
            write_table(results_table(written[c], header, iqr=not iqr), out, f"{other}_{c}")
        write_table(results_table(_paper_columns(PAPER[paper_key]), header, iqr=not iqr), out, f"{other}_paper")
    summary = {c: {str(col): s for col, s in w.items()} for c, w in written.items()}
    config = {"columns": {vary: list(values)}, "constant_sets": list(consts), **cfg}
    if vary == "M_xi":
        config.pop("M_xi", None)
    else:
        config["M_xi"] = M
        config["n"] = [int(x) for x in values]
    write_run_record(out, name, config, summary, time.perf_counter() - t0)
    return {"tables": [f"{name}_{c}.md" for c in consts],
            "feasible": {c: all(s["feasible"] for s in w.values()) for c, w in written.items()}}


def table1(out_dir: Path, *, quick: bool, executor, seed: int = 0, M_xi_values=(0.1, 0.3, 0.5, 0.6),
           constants: str | None = None, **options) -> dict:
    """Table 1: medians across noise levels M_xi at |D| = 100 (both constant sets)."""
    return _run_table("table1", out_dir, quick=quick, executor=executor, seed=seed, values=as_tuple(M_xi_values),
                      vary="M_xi", paper_key="table1", iqr=False, constants=constants, **options)


def table2(out_dir: Path, *, quick: bool, executor, seed: int = 0, M_xi_values=(0.1, 0.3, 0.5, 0.6),
           constants: str | None = None, **options) -> dict:
    """Table 2: Table 1 with interquartile ranges."""
    return _run_table("table2", out_dir, quick=quick, executor=executor, seed=seed, values=as_tuple(M_xi_values),
                      vary="M_xi", paper_key="table1", iqr=True, constants=constants, **options)


#: the --set options table1 and table2 pass on to config_1d (privgp experiment checks names against them)
table1.options_from = table2.options_from = config_1d  # type: ignore[attr-defined]


def table3(out_dir: Path, *, quick: bool, executor, seed: int = 0, n_values=None,
           constants: str | None = None, **options) -> dict:
    """Table 3: |D| in {50, 100, 200, 400} at NSR = 1 (M_xi = 0.5)."""
    if n_values is None:
        n_values = (25, 50, 100) if quick else (50, 100, 200, 400)
    return _run_table("table3", out_dir, quick=quick, executor=executor, seed=seed, values=as_tuple(n_values),
                      vary="n", paper_key="table3", iqr=True, constants=constants, **options)


def _table3_options(*, M_xi: float = 0.5) -> None:
    """table3's own --set option; the others are :func:`config_1d`'s but n (table3's columns)."""


table3.options_from = (_table3_options, config_1d)  # type: ignore[attr-defined]
table3.options_excluded = ("n",)  # type: ignore[attr-defined]
