"""``privgp release --mechanism posterior-sample-tuned``: one exact GP posterior sample path (seed 000)
whose lengthscale is chosen *privately* among ``--lengthscales`` by seed 001's Alg. 2: a random
held-out split of the records (drawn from the release's randomness, not from the data), repeated
runs of a posterior-sample release of the training part scored on the held-out part by a private
mean (COINPRESS), Liu & Talwar's random stopping. The whole search is one
:class:`~privgp.accounting.selection.SelectionEvent` in the ledger: (epsilon, delta) for all n
records, whatever it selects (:class:`privgp.tasks.private_selection.LengthscaleSelectionPlan`).

Files: the posterior-sample files of the chosen path (paths.npz, paths.csv, excursion.png) and
``selection.json`` (the candidates, the chosen lengthscale and r, the number of runs). When no run is
accepted only ``selection.json`` is written (the search has still been charged).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import InvalidParameterError
from ..tasks.private_selection import LengthscaleSelectionPlan, SelectionResult, plan_lengthscale_selection
from . import release_posterior
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField
from .release_report import MechanismReport, chosen_by

NAME = "posterior-sample-tuned"
HELP = ("one exact posterior sample path, its lengthscale chosen privately among --lengthscales on a held-out "
        "split (seed 001, Alg. 2: Liu-Talwar private selection; one selection event)")
DEFAULT_EPSILON = 5.0
DEFAULT_GAMMA = 0.1
#: options of this mechanism only (refused with another --mechanism)
OWN_OPTIONS = ("lengthscales", "gamma", "validation_fraction")
PICTURE = release_posterior.PICTURE


def add_arguments(group) -> None:
    group.add_argument("--lengthscales", type=float, nargs="+", metavar="ELL",
                       help="candidate lengthscales (public; required for this mechanism)")
    group.add_argument("--gamma", type=float, metavar="G",
                       help=f"stopping probability of the private selection after each run (default {DEFAULT_GAMMA:g}; "
                            "smaller = more runs, better choice, more per-run budget spent on the delta term)")
    group.add_argument("--validation-fraction", type=float, metavar="F",
                       help="fraction of the records held out to score the candidates (default 0.5)")


def plan(args, data, domain, rmap, *, memory_limit: float) -> LengthscaleSelectionPlan:
    if not args.lengthscales:
        raise InvalidParameterError("--lengthscales", "given with --mechanism posterior-sample-tuned", None)
    for flag, val in (("--lengthscale", args.lengthscale), ("--r", args.r), ("--eta", args.eta)):
        if val is not None:
            raise InvalidParameterError(flag, "left out with --mechanism posterior-sample-tuned (the lengthscale "
                                        "is selected, r calibrated per candidate)", val)
    if args.L != 1:
        raise InvalidParameterError("--L", "1 with --mechanism posterior-sample-tuned", args.L)
    snap = release_posterior.DEFAULT_SNAP[domain.dim] if args.snap is None else args.snap
    if snap < 0:
        raise InvalidParameterError("--snap", "an integer >= 0", snap)
    return plan_lengthscale_selection(
        data.n, domain, rmap, args.lengthscales, epsilon_total=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
        delta_total=args.delta, gamma=DEFAULT_GAMMA if args.gamma is None else args.gamma,
        validation_fraction=0.5 if args.validation_fraction is None else args.validation_fraction,
        kernel=args.kernel, sigma=release_posterior.DEFAULT_SIGMA if args.sigma is None else args.sigma,
        sensitivity=args.sensitivity, conversion=args.conversion,
        grid=args.grid or release_posterior.DEFAULT_GRID[domain.dim], snap=snap or None, memory_limit=memory_limit)


def write(out: Path, released: SelectionResult, plan: LengthscaleSelectionPlan, data) -> list[str]:
    files = []
    doc = {"candidates": list(plan.lengthscales), "selected": released.selected,
           "lengthscale": released.candidate, "runs": released.draws, "accepted_runs": released.accepted,
           "max_runs": plan.budget.max_draws, "per_run_epsilon": plan.budget.epsilon,
           "per_run_delta": plan.budget.delta, "n_train": plan.n_train, "n_validation": plan.n - plan.n_train}
    if released.selected:
        chosen, paths = released.model
        doc["r"] = chosen.r
        files += release_posterior.write(out, paths, chosen, data)
    (out / "selection.json").write_text(json.dumps(doc, indent=2) + "\n")
    return files + ["selection.json"]


def summary(plan: LengthscaleSelectionPlan) -> dict:
    return {"lengthscales": list(plan.lengthscales), "gamma": plan.budget.gamma, "max_runs": plan.budget.max_draws,
            "per_run_epsilon": plan.budget.epsilon, "per_run_delta": plan.budget.delta, "kernel": plan.plans[0].kernel,
            "sigma": plan.plans[0].sigma, "r_per_candidate": [p.r for p in plan.plans]}


def summary_lines(plan: LengthscaleSelectionPlan, data) -> list[str]:
    b = plan.budget
    return [
        f"  mechanism   private lengthscale selection (seed 001, Alg. 2) among {list(plan.lengthscales)}: gamma "
        f"{b.gamma:g}, at most {b.max_draws} runs, each ({b.epsilon:.4g}, {b.delta:.3g})-DP",
        f"  settings    {plan.plans[0].kernel} kernel, sigma={plan.plans[0].sigma:g}, r per candidate "
        + ", ".join(f"{p.r:.4g}" for p in plan.plans) + f"; {plan.n_train} training / {plan.n - plan.n_train} "
        "held-out records (random split); the outcome is in selection.json",
    ]


def fields(released: SelectionResult, plan: LengthscaleSelectionPlan) -> ReleasedField | None:
    """The chosen candidate's released path, or None when the selection accepted no candidate."""
    if not released.selected:
        return None
    chosen, paths = released.model
    return release_posterior.fields(paths, chosen)


def report_text(plan: LengthscaleSelectionPlan, ctx: PictureContext) -> MechanismReport:
    """What this mechanism says in the report (public facts only; the chosen lengthscale is in
    selection.json, released with the same guarantee)."""
    b = plan.budget
    resp = ctx.response
    released = (f"One random map of {resp.label} over the public domain (an exact posterior sample path), whose "
                f"kernel lengthscale was chosen privately among {', '.join(f'{x:g}' for x in plan.lengthscales)}, "
                "and which lengthscale was chosen (or that none was accepted).")
    how = ("The records are split at random into a training and a held-out part. Repeatedly, at random, one "
           "candidate lengthscale is tried: a private map is drawn from the training part and scored privately on "
           "the held-out part; the search stops at random (Liu and Talwar's random stopping), so that the choice "
           "itself is private. Only the chosen map is published.")
    statement = ("Liu & Talwar (2019), Thm 3.4 (random stopping) as in Honkela's Alg. 2 and Lemma 3, over runs that "
                 f"are each ({b.epsilon:.6g}, {b.delta:.3g})-DP (the posterior-sample bound of Maciazek 2026, "
                 "Thm 3.1, for each candidate; COINPRESS private mean of the held-out scores).")
    rows = (("candidate lengthscales", ", ".join(f"{x:g}" for x in plan.lengthscales), "set by the data holder"),
            ("stopping probability gamma", f"{b.gamma:g}", chosen_by(float(b.gamma), 0.1)),
            ("most runs", str(b.max_draws), "from gamma and the budget"),
            ("held-out share", f"{plan.validation_fraction:g}", chosen_by(float(plan.validation_fraction), 0.5)))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows, account_command=None,
                           references=("J. Liu and K. Talwar, Private Selection from Private Candidates (STOC 2019).",
                                       "A. Honkela, Gaussian Processes with Differential Privacy (seed paper 001).",
                                       "Maciazek (2026), Differential Privacy of Gaussian Process Posterior Sampling "
                                       "(seed paper 000)."))


def rebuild_plan(doc: dict) -> LengthscaleSelectionPlan:
    """The plan rebuilt from certificate.json's public settings through :func:`plan_lengthscale_selection`
    (each candidate's r calibrated again to the per-run budget)."""
    def s(key):
        return publish.setting(doc, key)

    sel = s("selection")
    if not isinstance(sel, dict):
        raise publish.CertificateMismatch("public_settings.selection", "the selection budget (a dict)")
    ells = s("lengthscales")
    if not isinstance(ells, list):
        raise publish.CertificateMismatch("public_settings.lengthscales", f"a list, found {ells!r}")
    for key in ("epsilon_total", "delta_total", "gamma"):
        if key not in sel:
            raise publish.CertificateMismatch(f"public_settings.selection.{key}", "missing")
    return plan_lengthscale_selection(
        publish.recorded_n(doc), publish.domain_setting(doc), publish.response_map_setting(doc), ells,
        epsilon_total=sel["epsilon_total"], delta_total=sel["delta_total"], gamma=sel["gamma"],
        validation_fraction=s("validation_fraction"), kernel=s("kernel"), sigma=s("sigma"),
        sensitivity=s("sensitivity"), conversion=s("conversion"), grid=publish.grid_points_setting(doc),
        snap=s("snap"), memory_limit=publish.VERIFY_MEMORY_LIMIT)


def verify(doc: dict):
    """Rebuild the plan from the public settings (:func:`rebuild_plan`: n, domain, response map, candidate
    lengthscales, total budget, gamma, held-out share, kernel, sigma, sensitivity lemma, conversion, grid,
    snapping) and compare it with everything recorded (:func:`~privgp.cli.release_publish.verify_against_plan`)."""
    return publish.verify_against_plan(doc, rebuild_plan(doc), mechanism=NAME)
