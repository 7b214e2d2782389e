"""Reference values for the Bayesian-optimisation test functions of privgp.datasets.objectives.

Independent transcription of the standard definitions (Forrester et al. 2008; Branin as in
Dixon & Szego 1978 / the Virtual Library of Simulation Experiments; Hartmann-3 as in Dixon &
Szego 1978), each written on its own domain and mapped here from the unit box. For each function
this writes the global minimum of the raw function (multi-start L-BFGS-B, polished; checked
against the literature value) with its minimiser(s) in unit-box coordinates, the maximum of the
raw function over the box (or a stated upper bound), and the median of the raw function under the
uniform distribution on the box (a regular grid of ~10^6 cell centres; SE of a grid median is far
below the 4 significant digits used). privgp scales each function as
    f(u) = (m - raw(u)) / (m - raw_min),   m = median,
so the maximum is 1 and a median point scores 0.

Run:  python scripts/generate_objective_reference.py   (writes tests/data/objective_reference.json)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "objective_reference.json"


def forrester(u):
    x = u[..., 0]
    return (6 * x - 2) ** 2 * np.sin(12 * x - 4)


def branin(u):
    x1 = -5.0 + 15.0 * u[..., 0]
    x2 = 15.0 * u[..., 1]
    b, c, t = 5.1 / (4 * np.pi ** 2), 5 / np.pi, 1 / (8 * np.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])


def hartmann3(u):
    d = ((u[..., None, :] - H3_P) ** 2 * H3_A).sum(-1)
    return -(H3_ALPHA * np.exp(-d)).sum(-1)


FUNCS = {"forrester": (forrester, 1, -6.02074), "branin": (branin, 2, 0.397887), "hartmann3": (hartmann3, 3, -3.86278)}


def global_min(f, dim, rng):
    best = []
    starts = rng.uniform(size=(400, dim))
    for s in starts:
        res = minimize(lambda z: float(f(z[None, :])[0]), s, method="L-BFGS-B", bounds=[(0, 1)] * dim,
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 2000})
        best.append((res.fun, tuple(np.round(res.x, 6))))
    fmin = min(b[0] for b in best)
    argmins = sorted({b[1] for b in best if b[0] <= fmin + 1e-7})
    return float(fmin), [list(a) for a in argmins]


def grid_centres(dim, per_axis):
    c = (np.arange(per_axis) + 0.5) / per_axis
    mesh = np.meshgrid(*([c] * dim), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


def main():
    rng = np.random.default_rng(20261122)
    out = {}
    for name, (f, dim, literature) in FUNCS.items():
        fmin, argmins = global_min(f, dim, rng)
        assert abs(fmin - literature) < 1e-5, (name, fmin, literature)
        per_axis = {1: 1_000_000, 2: 1000, 3: 100}[dim]
        vals = f(grid_centres(dim, per_axis))
        corners = grid_centres(dim, 2) * 2 - 0.5  # the box corners 0/1
        fmax_grid = float(max(vals.max(), f(corners).max()))
        out[name] = {"dim": dim, "raw_min": fmin, "argmin_unit": argmins, "literature_min": literature,
                     "raw_max_on_grid": fmax_grid, "raw_median": float(np.median(vals)),
                     "grid_cells_per_axis": per_axis}
        print(name, out[name])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
