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
    "table1": "excursion_1d:table1", "table2": "excursion_1d:table2", "table3": "excursion_1d:table3",
    "table4": "excursion_2d:table4", "fig7": "excursion_2d:fig7", "fig8": "excursion_2d:fig8",
    "realdata": "realdata:realdata",
    "fig1": "fig1:run", "fig2-bound": "fig2_bound:run",
    "seed002-train": "seed002_train:train", "seed002-tune": "seed002_nn:tune", "seed002-nll": "seed002_nn:nll",
    "seed002-fits": "seed002_nn:fits", "seed002-sim2real": "seed002_nn:sim2real",
    "seed004-fig1": "seed004_fig1:run",
    "seed001-fig1": "seed001_fig1:run", "seed001-fig2": "seed001_fig2:run", "seed001-fig3": "seed001_fig3:run",
    "seed002-fig4": "seed002:fig4", "seed002-audit": "seed002:audit",
    "mechanisms": "mechanisms:run", "utility": "utility:run",
    "fig2": "lira_figures:fig2", "fig3": "lira_figures:fig3", "fig5": "lira_figures:fig5", "fig6": "lira_histograms:fig6",
    "tightness": "tightness:run", "selection-study": "selection_study:run",
    "seed003-toy": "seed003_toy:run", "seed003-activations": "seed003_activations:run",
    "seed003-reconstruction": "seed003_reconstruction:run", "seed003-multiquery": "seed003_multiquery:run",
    "seed003-mia": "seed003_mia:run", "seed003-nn": "seed003_nn:run",
    "thompson": "thompson:run",
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
