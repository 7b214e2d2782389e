"""Experiments that reproduce the seed papers' tables and figures (the only library layer, with
the CLI, that writes files or plots).

Each experiment is a function ``run(out_dir: Path, *, quick: bool, executor, seed: int, <options>)
-> dict`` registered in :data:`EXPERIMENTS` as ``"module:function"``; it writes its PNG/CSV/Markdown
outputs and a ``run.json`` record (config, versions) under ``out_dir`` and returns a summary dict.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError

__all__ = ["EXPERIMENTS", "get_experiment", "run_experiment"]

EXPERIMENTS: dict[str, str] = {
    # seed 000: posterior sampling
    "table1": "seed000.excursion_1d:table1", "table2": "seed000.excursion_1d:table2",
    "table3": "seed000.excursion_1d:table3", "table4": "seed000.excursion_2d:table4",
    "fig7": "seed000.excursion_2d:fig7", "fig8": "seed000.excursion_2d:fig8", "realdata": "seed000.realdata:realdata",
    "fig1": "seed000.fig1:run", "fig2-bound": "seed000.fig2_bound:run", "fig2": "seed000.lira_figures:fig2",
    "fig3": "seed000.lira_figures:fig3", "fig5": "seed000.lira_figures:fig5", "fig6": "seed000.lira_histograms:fig6",
    "tightness": "seed000.tightness:run", "selection-study": "seed000.selection_study:run",
    # seed 001: the DP sparse GP
    "seed001-fig1": "seed001.fig1:run", "seed001-fig2": "seed001.fig2:run", "seed001-fig3": "seed001.fig3:run",
    # seed 002: functional mechanism, DPSetConv, DPConvCNP
    "seed002-fig4": "seed002.figures:fig4", "seed002-audit": "seed002.figures:audit",
    "seed002-train": "seed002.train:train", "seed002-tune": "seed002.nn:tune", "seed002-nll": "seed002.nn:nll",
    "seed002-fits": "seed002.nn:fits", "seed002-sim2real": "seed002.nn:sim2real", "seed002-s1": "seed002.gap:s1",
    "seed002-s6": "seed002.strict:s6", "seed002-fig5": "seed002.speed:fig5",
    # seed 003: leave-one-out distinguishability
    "seed003-toy": "seed003.toy:run", "seed003-activations": "seed003.activations:run",
    "seed003-reconstruction": "seed003.reconstruction:run", "seed003-multiquery": "seed003.multiquery:run",
    "seed003-mia": "seed003.mia:run", "seed003-nn": "seed003.nn:run",
    # seed 004: approximate samplers
    "seed004-fig1": "seed004.fig1:run", "seed004-thm2": "seed004.thm2:run",
    # privgp's own studies
    "mechanisms": "studies.mechanisms:run", "utility": "studies.utility:run", "thompson": "studies.thompson:run",
}


#: options an experiment's ``--quick`` mode sets itself (its small version), whatever is given: ``privgp experiment
#: NAME --quick --set KEY=...`` refuses them rather than silently running another configuration
QUICK_FIXED: dict[str, tuple[str, ...]] = {
    "seed002-train": ("channels", "first_channels"),   # the quick model's widths (they were silently ignored)
    "seed002-tune": ("n_trials", "n_datasets", "n_context", "epochs"),
    "seed002-nll": ("n_values", "eps_values", "n_for_eps", "tasks", "n_target", "timing_repeats",
                    "dpsvgp_timing_repeats"),
    "seed002-sim2real": ("n_values", "repeats"),
    "seed002-s1": ("lengthscales", "eps_values", "n_values", "tasks", "n_target"),
    "seed002-s6": ("eps_values", "deltas", "n_values", "tasks", "n_target", "fit_n_values"),
    "seed002-fig5": ("epochs", "n_context", "tasks", "timing_repeats", "nll_tasks", "n_target"),
    "seed004-thm2": ("n_values", "epochs"),
    "mechanisms": ("epsilons",),
}


def get_experiment(name: str) -> Callable[..., dict[str, Any]]:
    if name not in EXPERIMENTS:
        raise InvalidParameterError("experiment", f"one of {sorted(EXPERIMENTS)}", name)
    module, func = EXPERIMENTS[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), func)


def run_experiment(name: str, out_dir: str | Path, *, quick: bool = False, scheduler: Any = None,
                   workers: int | None = None, progress: bool | str | None = None, seed: int = 0,
                   **options) -> dict[str, Any]:
    from ..parallel import get_executor

    fn = get_experiment(name)
    out = Path(out_dir)
    with get_executor(scheduler=scheduler, workers=workers, progress=progress) as ex:
        out.mkdir(parents=True, exist_ok=True)  # after the executor: a missing or unreachable scheduler writes nothing
        try:
            return fn(out, quick=quick, executor=ex, seed=seed, **options)
        except TypeError as exc:  # an option the experiment does not know: a user error
            bad = [k for k in options if f"unexpected keyword argument '{k}'" in str(exc)]
            if bad:
                raise InvalidParameterError(f"option {bad[0]!r}", f"an option of experiment {name!r}",
                                            options[bad[0]]) from None
            raise
