"""``--mechanism posterior-sample-tuned``: one exact GP posterior sample path (seed 000) whose lengthscale
is chosen *privately* among ``--lengthscales`` by seed 001's Alg. 2: a random held-out split of the
records (drawn from the release's randomness, not from the data), repeated runs of a posterior-sample
release of the training part scored on the held-out part by a private mean (COINPRESS), Liu & Talwar's
random stopping. The whole search is one :class:`~privgp.accounting.selection.SelectionEvent` in the
ledger: (epsilon, delta) for all n records, whatever it selects
(:class:`privgp.mechanisms.private_selection.LengthscaleSelectionPlan`).

Files: the posterior-sample files of the chosen path (paths.npz, paths.csv, excursion.png) and
``selection.json`` (the candidates, the chosen lengthscale and r, the number of runs). When no run is
accepted only ``selection.json`` is written (the search has still been charged).
"""
from __future__ import annotations

from collections.abc import Sequence

from ...errors import CertificateMismatch, InvalidParameterError
from ...formatting import format_upper
from ..interface import (
    CONVERSION,
    KERNEL,
    SIGMA,
    VERIFY_MEMORY_LIMIT,
    JsonFile,
    Mechanism,
    MechanismReport,
    Option,
    OutputFile,
    PictureContext,
    Recorded,
    ReleasedField,
    Request,
    chosen_by,
    grid_text,
)
from ..private_selection import LengthscaleSelectionPlan, SelectionResult, plan_lengthscale_selection
from .posterior_sample import SENSITIVITY, SNAP, path_fields, path_files, sigma_of, snap_line, snap_of

DEFAULT_GAMMA = 0.1
LENGTHSCALES = Option("lengthscales", "candidate lengthscales (public; required for this mechanism)", float, "ELL",
                      nargs="+")
GAMMA = Option("gamma", f"stopping probability of the private selection after each run (default {DEFAULT_GAMMA:g}; "
               "smaller = more runs, better choice, more per-run budget spent on the delta term)", float, "G",
               default=DEFAULT_GAMMA)
VALIDATION_FRACTION = Option("validation-fraction", "fraction of the records held out to score the candidates "
                             "(default 0.5)", float, "F", default=0.5)


class PosteriorSampleTuned(Mechanism):
    """``privgp release --mechanism posterior-sample-tuned``: publish one random posterior map whose
    lengthscale was itself chosen privately, among public candidates, by how well it predicts held-out
    records (seed 001, Alg. 2: Liu & Talwar's private selection; one selection event)."""

    name = "posterior-sample-tuned"
    help = ("one exact posterior sample path, its lengthscale chosen privately among --lengthscales on a held-out "
            "split (seed 001, Alg. 2: Liu-Talwar private selection; one selection event)")
    options = (KERNEL, SIGMA, CONVERSION, SENSITIVITY, SNAP, LENGTHSCALES, GAMMA, VALIDATION_FRACTION)
    plan_type = LengthscaleSelectionPlan
    in_utility_study = False   # needs held-out records and its own search; the study scores pilot tuning instead
    order = 15

    def plan(self, request: Request) -> LengthscaleSelectionPlan:
        if not request.given("lengthscales"):
            raise InvalidParameterError("--lengthscales", f"given with --mechanism {self.name}", None)
        return plan_lengthscale_selection(
            request.n, request.domain, request.response_map, request.given("lengthscales"),
            epsilon_total=self.epsilon(request), delta_total=request.delta, gamma=self.option(request, "gamma"),
            validation_fraction=self.option(request, "validation_fraction"), kernel=self.option(request, "kernel"),
            sigma=sigma_of(request), sensitivity=self.option(request, "sensitivity"),
            conversion=self.option(request, "conversion"), grid=request.grid_points(), snap=snap_of(self, request),
            memory_limit=request.memory_limit)

    def rebuild(self, recorded: Recorded) -> LengthscaleSelectionPlan:
        """Through :func:`plan_lengthscale_selection` (each candidate's r calibrated again to the per-run budget)."""
        s = recorded.setting
        sel = s("selection")
        if not isinstance(sel, dict):
            raise CertificateMismatch("public_settings.selection", "the selection budget (a dict)")
        ells = s("lengthscales")
        if not isinstance(ells, list):
            raise CertificateMismatch("public_settings.lengthscales", f"a list, found {ells!r}")
        for key in ("epsilon_total", "delta_total", "gamma"):
            if key not in sel:
                raise CertificateMismatch(f"public_settings.selection.{key}", "missing")
        return plan_lengthscale_selection(
            recorded.n, recorded.domain(), recorded.response_map(), ells, epsilon_total=sel["epsilon_total"],
            delta_total=sel["delta_total"], gamma=sel["gamma"], validation_fraction=s("validation_fraction"),
            kernel=s("kernel"), sigma=s("sigma"), sensitivity=s("sensitivity"), conversion=s("conversion"),
            grid=recorded.grid_points(), snap=s("snap"), memory_limit=VERIFY_MEMORY_LIMIT)

    data_files = ("selection.json", "paths.npz", "paths.csv")   # the paths only when a candidate was selected

    def files(self, released: SelectionResult, plan: LengthscaleSelectionPlan,
              coordinates: Sequence[str]) -> list[OutputFile]:
        # not the number of runs nor of accepted runs: Liu & Talwar's Thm 3.4 covers the selected candidate only (the
        # random number of runs, revealed, would leave each run's own epsilon composed over that many runs)
        doc = {"candidates": list(plan.lengthscales), "selected": released.selected,
               "lengthscale": released.candidate, "max_runs": plan.budget.max_draws, "per_run_epsilon": plan.budget.epsilon,
               "per_run_delta": plan.budget.delta, "n_train": plan.n_train, "n_validation": plan.n - plan.n_train}
        files: list[OutputFile] = []
        if released.selected:
            chosen, paths = released.model
            doc["r"] = chosen.r
            files += path_files(paths, chosen, coordinates)
        return files + [JsonFile("selection.json", doc)]

    def fields(self, released: SelectionResult, plan: LengthscaleSelectionPlan) -> ReleasedField | None:
        """The chosen candidate's released path, or None when the selection accepted no candidate."""
        if not released.selected:
            return None
        chosen, paths = released.model
        return path_fields(paths, chosen)

    def report_text(self, plan: LengthscaleSelectionPlan, ctx: PictureContext) -> MechanismReport:
        """Public facts only; the chosen lengthscale is in selection.json, released with the same guarantee."""
        b = plan.budget
        resp = ctx.response
        released = (f"One random map of {resp.label} over the public domain (an exact posterior sample path), whose "
                    f"kernel lengthscale was chosen privately among {', '.join(f'{x:g}' for x in plan.lengthscales)}, "
                    "and which lengthscale was chosen (or that none was accepted).")
        how = ("The records are split at random into a training and a held-out part. Repeatedly, at random, one "
               "candidate lengthscale is tried: a private map is drawn from the training part and scored privately "
               "on the held-out part; the search stops at random (Liu and Talwar's random stopping), so that the "
               "choice itself is private. Only the chosen map is published.")
        statement = ("Liu & Talwar (2019), Thm 3.4 (random stopping) as in Honkela's Alg. 2 and Lemma 3, over runs "
                     f"that are each ({format_upper(b.epsilon, 6)}, {format_upper(b.delta, 3)})-DP (the posterior-sample bound of Maciazek 2026, "
                     "Thm 3.1, for each candidate; COINPRESS private mean of the held-out scores).")
        rows = (("candidate lengthscales", ", ".join(f"{x:g}" for x in plan.lengthscales), "set by the data holder"),
                ("stopping probability gamma", f"{b.gamma:g}", chosen_by(float(b.gamma), DEFAULT_GAMMA)),
                ("most runs", str(b.max_draws), "from gamma and the budget"),
                ("held-out share", f"{plan.validation_fraction:g}", chosen_by(float(plan.validation_fraction), 0.5)))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=("J. Liu and K. Talwar, Private Selection from Private Candidates (STOC "
                                           "2019).",
                                           "A. Honkela, Gaussian Processes with Differential Privacy (seed paper 001).",
                                           "Maciazek (2026), Differential Privacy of Gaussian Process Posterior "
                                           "Sampling (seed paper 000)."))

    def summary(self, plan: LengthscaleSelectionPlan) -> dict:
        return {"lengthscales": list(plan.lengthscales), "gamma": plan.budget.gamma,
                "max_runs": plan.budget.max_draws, "per_run_epsilon": plan.budget.epsilon,
                "per_run_delta": plan.budget.delta, "kernel": plan.plans[0].kernel, "sigma": plan.plans[0].sigma,
                "r_per_candidate": [p.r for p in plan.plans]}

    def summary_lines(self, plan: LengthscaleSelectionPlan) -> list[str]:
        b = plan.budget
        return [
            f"  mechanism   private lengthscale selection (seed 001, Alg. 2) among {list(plan.lengthscales)}: gamma "
            f"{b.gamma:g}, at most {b.max_draws} runs, each ({format_upper(b.epsilon, 4)}, {format_upper(b.delta, 3)})-DP",
            f"  settings    {plan.plans[0].kernel} kernel, sigma={plan.plans[0].sigma:g}, r per candidate "
            + ", ".join(f"{p.r:.4g}" for p in plan.plans) + f"; {plan.n_train} training / {plan.n - plan.n_train} "
            "held-out records (random split); the outcome is in selection.json",
            f"  grid        {grid_text(plan.plans[0].grid)}" + snap_line(plan.plans[0].snap),
        ]
