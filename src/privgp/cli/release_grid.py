"""``privgp release --mechanism grid`` (and what ``--mechanism auto`` resolves to): noisy per-cell sums and
counts on a public grid of cells, smoothed onto the release grid (:mod:`privgp.mechanisms.grid`). The
options, the plan, the outputs, the picture's fields and the report's words of this mechanism; the
command itself is :mod:`privgp.cli.release`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..accounting import PrivacyCertificate
from ..errors import InvalidParameterError
from ..mechanisms.grid import GRID_SENSITIVITY, GridField, NoisyGridPlan, plan_grid
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField
from .release_report import MechanismReport

NAME = "grid"
HELP = ("noisy per-cell sums and counts of the clipped responses on a public grid of cells (Gaussian mechanism, "
        "L2 sensitivity 2, exact GDP calibration), smoothed onto the map: the practitioner's baseline")
DEFAULT_EPSILON = 5.0
DEFAULT_CELLS = 8
DEFAULT_BANDWIDTH = 1.0
DEFAULT_GRID = {1: 201, 2: 121}
FILES = ("field.npz", "field.csv")
OWN_OPTIONS = ("cells", "bandwidth")
PICTURE = "excursion.png"
#: options of the posterior-sample group that a grid-type mechanism cannot use
NOT_USED = ("r", "eta", "sigma", "snap")


def add_arguments(group) -> None:
    group.add_argument("--cells", type=int, metavar="C",
                       help=f"cells along the longest side of the box (default {DEFAULT_CELLS}; nearly square cells)")
    group.add_argument("--bandwidth", type=float, metavar="B",
                       help=f"smoothing bandwidth in cells (public post-processing; default {DEFAULT_BANDWIDTH:g})")


def refuse_unused(args, name: str) -> None:
    """Options of the posterior-sample mechanism that a grid-type mechanism does not use."""
    for flag in NOT_USED:
        if getattr(args, flag, None) is not None:
            raise InvalidParameterError("--" + flag, f"left out with --mechanism {name} (a posterior-sample option)",
                                        getattr(args, flag))
    if getattr(args, "L", 1) != 1:
        raise InvalidParameterError("--L", f"1 with --mechanism {name} (one released map per release)", args.L)
    if getattr(args, "sensitivity", "auto") != "auto":
        raise InvalidParameterError("--sensitivity", f"left out with --mechanism {name} (its sensitivity is exact)",
                                    args.sensitivity)
    if getattr(args, "conversion", "improved") != "improved":
        raise InvalidParameterError("--conversion", f"left out with --mechanism {name} (exact Gaussian-DP profile, "
                                    "no RDP conversion)", args.conversion)


def plan(args, data, domain, rmap, *, memory_limit: float) -> NoisyGridPlan:
    refuse_unused(args, NAME)
    if getattr(args, "lengthscale", None) is not None:
        raise InvalidParameterError("--lengthscale", "left out with --mechanism grid (no kernel: use --bandwidth)",
                                    args.lengthscale)
    return plan_grid(data.n, domain, rmap, epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                     delta=args.delta, cells=DEFAULT_CELLS if args.cells is None else args.cells,
                     bandwidth=DEFAULT_BANDWIDTH if args.bandwidth is None else args.bandwidth,
                     grid=DEFAULT_GRID[domain.dim] if args.grid is None else args.grid, memory_limit=memory_limit)


def plan_from_settings(doc: dict) -> NoisyGridPlan:
    """Rebuild the plan from a certificate's public settings (``privgp verify``), through :func:`plan_grid`."""
    def s(key):
        return publish.setting(doc, key)

    cells = publish.grid_points_setting(doc, "cells") if isinstance(s("cells"), list) and len(s("cells")) else s("cells")
    return plan_grid(publish.recorded_n(doc), publish.domain_setting(doc), publish.response_map_setting(doc),
                     epsilon=s("target_epsilon"), delta=s("delta"), cells=cells, bandwidth=s("bandwidth"),
                     grid=publish.grid_points_setting(doc), hyperparameter_source=s("hyperparameters"))


def write(out: Path, released: GridField, plan: NoisyGridPlan, data) -> list[str]:
    """field.npz (field, sd, reliable mask, the released per-cell statistics) and field.csv."""
    write_field(out, released, plan, list(data.coordinates))
    return list(FILES)


def write_field(out: Path, rel: GridField, plan, names) -> None:
    rm = plan.response_map
    reliable = rel.reliable()
    stats = {f"released_{k}": v for k, v in rel.statistics.items()}
    np.savez(out / "field.npz", field=rel.field, sd=rel.sd, reliable=reliable,
             **{f"axis_{nm}": ax for nm, ax in zip(names, rel.axes)}, **stats,
             threshold=np.float64(rm.threshold), clip=np.float64(rm.clip), transform=np.array(rm.transform),
             units=np.array("field and sd in model units: (g(response) - g(threshold)) / clip, in [-1, 1]; "
                            "threshold at 0"))
    pts = rel.grid_points()
    cols = np.column_stack([pts, rel.field.ravel(), rm.to_response_units(rel.field.ravel()), rel.sd.ravel(),
                            reliable.ravel().astype(int)])
    header = ",".join(list(names) + ["field_model_units", "field_response_units", "sd_model_units",
                                     "reliable"])
    np.savetxt(out / "field.csv", cols, delimiter=",", header=header, comments="", fmt="%.10g")


def fields(released: GridField, plan) -> ReleasedField:
    return ReleasedField(axes=released.axes, values=released.field[None], noun="smoothed noisy-grid map",
                         plural="smoothed noisy-grid maps", sd=released.sd)


def _describe_cells(plan) -> str:
    return " \u00d7 ".join(map(str, plan.cells))


def report_text(plan: NoisyGridPlan, ctx: PictureContext) -> MechanismReport:
    resp = ctx.response
    thr = resp.value(plan.response_map.threshold)
    released = (f"One map of {resp.label} over the public domain, smoothed from noisy per-cell totals on a public grid of "
                f"{_describe_cells(plan)} cells, and where it exceeds the threshold {thr}; with the released "
                "uncertainty of the map at every point.")
    how = ("The domain was cut into equal cells fixed in advance. For every cell, the total of the clipped responses "
           "and the number of records in it were computed, and Gaussian noise was added to each total and count, "
           f"with a standard deviation of {plan.noise_std:.4g} (on the clipped scale) calibrated so that replacing one "
           "record (which changes these numbers by at most 2 in total, Euclidean length) is covered by the guarantee. "
           "The map is the ratio of the smoothed noisy totals to the smoothed noisy counts; its uncertainty comes from "
           "the known noise. Places where the map is closer to the threshold than twice its uncertainty are marked "
           "as unreliable: there the released map cannot say on which side of the threshold the response is.")
    statement = (f"The Gaussian mechanism with L2 sensitivity {GRID_SENSITIVITY:g} (the per-cell sums and counts under "
                 f"replacement of one record with |y| \u2264 1) and noise standard deviation {plan.noise_std:.6g} is "
                 f"\u03bc-GDP with \u03bc = {GRID_SENSITIVITY / plan.noise_std:.6g} (Dong, Roth & Su 2022, Thm 2.7); "
                 "(\u03b5, \u03b4) from its exact privacy profile (Balle & Wang 2018, Thm 8). Smoothing is "
                 "post-processing.")
    src = plan.hyperparameter_source
    chosen = ("chosen by privgp (--mechanism auto) from public inputs only (n, \u03b5, \u03b4) on pilot "
              "simulations" if src.startswith("auto") else "privgp's default" if src == "default" else
              "set by the data holder")
    rows = (("cells", _describe_cells(plan), chosen), ("smoothing bandwidth", f"{plan.bandwidth:g} cells", chosen),
            ("noise standard deviation", f"{plan.noise_std:.6g}", "calibrated from \u03b5 and \u03b4 (exact Gaussian-DP)"),
            ("grid", " \u00d7 ".join(map(str, plan.grid)), "resolution of the released map (post-processing)"))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows, account_command=None,
                           references=("J. Dong, A. Roth and W. J. Su, Gaussian Differential Privacy, JRSS B 2022.",
                                       "B. Balle and Y.-X. Wang, Improving the Gaussian Mechanism for Differential "
                                       "Privacy, ICML 2018."))


def verify(doc: dict) -> PrivacyCertificate:
    """Rebuild the plan from the public settings and check the certificate against it."""
    return publish.verify_against_plan(doc, plan_from_settings(doc))


def summary(plan: NoisyGridPlan) -> dict:
    return {"L": 1, "cells": list(plan.cells), "bandwidth": plan.bandwidth, "noise_std": plan.noise_std,
            "sensitivity": GRID_SENSITIVITY, "target_epsilon": plan.target_epsilon,
            "hyperparameters": plan.hyperparameter_source}


def summary_lines(plan: NoisyGridPlan, data) -> list[str]:
    return [
        f"  mechanism   noisy grid sums and counts (Gaussian, L2 sensitivity 2, noise std {plan.noise_std:.4g}), smoothed",
        f"  settings    {_describe_cells(plan)} cells, bandwidth {plan.bandwidth:g} cells ({plan.hyperparameter_source})",
        f"  grid        {' x '.join(map(str, plan.grid))}",
    ]
