"""``privgp release --mechanism sparse-gp``: the DP sparse GP of seed 001 (Honkela, Alg. 1): noisy
sufficient statistics on public inducing inputs (a grid over the public box), the noise-aware
posterior (eqs. 9-15), and its predictive mean and +-2 sd on the grid. The options, the plan and the
outputs of this mechanism; the command itself (data, domain, ledger, atomic outputs) is
:mod:`privgp.cli.release`.

Files:

* ``prediction.npz`` / ``prediction.csv``: the public grid, the latent predictive mean and standard
  deviation, and mean -+ 2 sd (model units: the response map's (g(z) - g(T)) / B, clipped to [-1, 1]);
* ``inducing.csv``: the inducing inputs Z, the mean m of q(u) and the standard deviations sqrt(diag S);
* ``prediction.png``: 1-D, the mean with a +-2 sd band; 2-D, maps of the mean and of the sd.

Everything written is post-processing of the released statistics; no private value is plotted. The
shared options --sigma, --conversion and the posterior-sample options (--r, --eta, --L, --snap,
--sensitivity) do not apply; given with this mechanism they are an error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError
from ..mechanisms.posterior_release import default_lengthscale
from ..mechanisms.sparse_gp import CHUNK
from ..mechanisms.sparse_gp_release import DEFAULT_INDUCING, DEFAULT_NOISE_STD, SparseGpPlan, SparseGpReleased, plan_sparse_gp
from ..mechanisms.sparse_gp_sensitivity import KERNEL_BOUNDS
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField
from .release_report import MechanismReport, chosen_by

NAME = "sparse-gp"
#: options of this mechanism only (refused with another --mechanism)
OWN_OPTIONS = ("noise_std", "inducing", "kernel_bound", "noise_ratio", "s2")
HELP = ("DP sparse GP (seed 001, Alg. 1): noisy sufficient statistics on a public grid of inducing inputs, "
        "predictive mean and +-2 sd on the grid (exact Gaussian-mechanism calibration)")
DEFAULT_EPSILON = 5.0
DEFAULT_GRID = {1: 201, 2: 121}
FILES = ("prediction.npz", "prediction.csv", "inducing.csv")
PICTURE = "prediction.png"


def _ratio(text: str):
    if text == "min-sensitivity":
        return text
    try:
        return float(text)
    except ValueError:
        raise InvalidParameterError("--noise-ratio", "a positive number or 'min-sensitivity'", text) from None


def add_arguments(group) -> None:
    group.add_argument("--noise-std", type=float, metavar="S",
                       help=f"observation noise std in model units, y in [-1, 1] (default {DEFAULT_NOISE_STD:g}, "
                            "chosen without any data)")
    group.add_argument("--inducing", type=int, metavar="M",
                       help="inducing inputs along the longest side of the box, a regular grid over the box "
                            f"(default {DEFAULT_INDUCING[1]} in 1-D, {DEFAULT_INDUCING[2]} in 2-D)")
    group.add_argument("--kernel-bound", choices=list(KERNEL_BOUNDS), default=None,
                       help="rule for R_k >= ||k(x)||: auto = the tightest proven (default), trivial = eq. 4, "
                            "separation = eq. 8, grid-1d = eq. 7 corrected, grid-1d-printed = eq. 7 as printed")
    group.add_argument("--noise-ratio", type=str, metavar="C",
                       help="sigma_a / sigma_b, a number or 'min-sensitivity' (default 1, the paper's choice)")
    group.add_argument("--s2", choices=["symmetric", "paper", "none"], default=None,
                       help="the S_2 covariance correction (default symmetric; paper = eq. 14 as printed)")


def _refuse_foreign(args) -> None:
    given = {"--sigma": args.sigma, "--r": getattr(args, "r", None), "--eta": getattr(args, "eta", None),
             "--snap": getattr(args, "snap", None)}
    if getattr(args, "L", 1) != 1:
        given["--L"] = args.L
    if getattr(args, "sensitivity", "auto") != "auto":
        given["--sensitivity"] = args.sensitivity
    if getattr(args, "conversion", "improved") != "improved":
        given["--conversion"] = args.conversion
    for flag, val in given.items():
        if val is not None:
            raise InvalidParameterError(flag, "left out with --mechanism sparse-gp (a posterior-sample option; "
                                        "the sparse GP's noise level is --noise-std)", val)


def plan(args, data, domain, rmap, *, memory_limit: float) -> SparseGpPlan:
    _refuse_foreign(args)
    p = plan_sparse_gp(data.n, domain, rmap, epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                       delta=args.delta, kernel=args.kernel, lengthscale=args.lengthscale,
                       noise_std=DEFAULT_NOISE_STD if args.noise_std is None else args.noise_std,
                       inducing=args.inducing, grid=args.grid or DEFAULT_GRID[domain.dim],
                       kernel_bound=args.kernel_bound or "auto",
                       noise_ratio=1.0 if args.noise_ratio is None else _ratio(args.noise_ratio),
                       correction=args.s2 or "symmetric")
    m, d = int(np.prod(p.grid)), p.spec.n_inducing
    need = 8.0 * (m * (d + 6) + CHUNK * (d + 2) + 4 * d * d)
    if need > memory_limit:
        raise InvalidParameterError("memory", f"at most the limit of {memory_limit / 2**30:.3g} GiB (grid {m} points, "
                                    f"{d} inducing inputs); use a coarser grid or raise --memory-limit",
                                    f"an estimated {need / 2**30:.3g} GiB")
    return p


def write(out: Path, released: SparseGpReleased, plan: SparseGpPlan, data) -> list[str]:
    return write_outputs(out, released, plan, list(data.coordinates), data.response_name)


def summary(plan: SparseGpPlan) -> dict:
    k = plan.spec.kernel.describe()
    return {"kernel": k["kernel"], "lengthscale": k.get("lengthscale"), "noise_std": plan.noise_std,
            "inducing_points": plan.spec.n_inducing, "kernel_bound": plan.spec.kernel_bound_method,
            "R_k": plan.spec.kernel_bound, "sensitivity": plan.spec.sensitivity(), "sigma_a": plan.noise.sigma_a,
            "sigma_b": plan.noise.sigma_b, "correction": plan.spec.correction, "target_epsilon": plan.target_epsilon}


def summary_lines(plan: SparseGpPlan, data) -> list[str]:
    k = plan.spec.kernel.describe()
    return [
        f"  mechanism   DP sparse GP (seed 001, Alg. 1): Gaussian mechanism, sensitivity {plan.spec.sensitivity():.4g} "
        f"(eq. 6, R_k = {plan.spec.kernel_bound:.4g} by {plan.spec.kernel_bound_method}), sigma_a = {plan.noise.sigma_a:.4g}",
        f"  settings    {k['kernel']} kernel, lengthscale {k.get('lengthscale', float('nan')):.4g}, noise std "
        f"{plan.noise_std:g}, {plan.spec.n_inducing} inducing inputs on a grid over the box, S_2 {plan.spec.correction}",
        f"  grid        {' x '.join(map(str, plan.grid))}",
    ]




def write_outputs(folder, released: SparseGpReleased, plan: SparseGpPlan, names,
                  response_name: str = "response") -> list[str]:
    """Write the files of :data:`FILES` for ``released`` of ``plan`` (``names``: the coordinate names)."""
    folder = Path(folder)
    names = list(names)
    rm = plan.response_map
    axes = {f"axis_{nm}": ax for nm, ax in zip(names, released.axes)}
    np.savez(folder / "prediction.npz", mean=released.mean, sd=released.sd, Z=released.Z, m=released.m, S=released.S,
             coordinates=np.array(names), threshold=np.float64(rm.threshold), clip=np.float64(rm.clip),
             transform=np.array(rm.transform), **axes)
    pts = released.grid_points()
    mu, sd = released.mean.ravel(), released.sd.ravel()
    np.savetxt(folder / "prediction.csv", np.column_stack([pts, mu, sd, mu - 2 * sd, mu + 2 * sd]), delimiter=",",
               header=",".join(names + ["mean", "sd", "lower_2sd", "upper_2sd"]), comments="", fmt="%.10g")
    np.savetxt(folder / "inducing.csv", np.column_stack([released.Z, released.m, np.sqrt(np.maximum(np.diag(released.S), 0))]),
               delimiter=",", header=",".join(names + ["m", "sd"]), comments="", fmt="%.10g")
    return list(FILES)


def fields(released: SparseGpReleased, plan: SparseGpPlan) -> ReleasedField:
    """The released predictive mean for the picture (model units, threshold 0), with its +-2 sd band."""
    mean = np.asarray(released.mean, dtype=float)
    sd = np.asarray(released.sd, dtype=float)
    return ReleasedField(axes=released.axes, values=mean[None], noun="predictive mean", plural="predictive means",
                         band=(mean - 2 * sd, mean + 2 * sd), band_label="predictive mean \u00b1 2 sd", sd=sd)


def report_text(plan: SparseGpPlan, ctx: PictureContext) -> MechanismReport:
    """What this mechanism says in the report (public facts only)."""
    resp = ctx.response
    thr = resp.value(plan.response_map.threshold)
    k = plan.spec.kernel.describe()
    released = (f"The predictive mean (and standard deviation) of {resp.label} over the public domain from a "
                f"sparse Gaussian-process model fitted to noisy summaries of the private records, and where the "
                f"mean exceeds the threshold {thr}.")
    how = ("Each record contributes to a few summary numbers on a fixed, public set of reference locations (the "
           "\u201cinducing inputs\u201d, laid out on a grid over the domain before seeing the data). Random noise "
           "calibrated to how much one record can move these summaries is added once; everything shown is computed "
           "from the noisy summaries only, with a model that knows how much noise was added. Responses were first "
           "clipped to a public bound, so no single record can move the summaries far.")
    statement = ("Honkela, Gaussian Processes with Differential Privacy, Alg. 1: one Gaussian mechanism on "
                 f"the sufficient statistics with L2 sensitivity {plan.spec.sensitivity():.6g} (eq. 6, with the "
                 f"kernel bound R_k = {plan.spec.kernel_bound:.6g} by {plan.spec.kernel_bound_method}) and noise "
                 "calibrated by the exact Gaussian privacy profile (Balle & Wang 2018); the prediction is "
                 "post-processing.")
    rows = (("kernel", str(k["kernel"]), chosen_by(str(k["kernel"]), "exponential")),
            ("lengthscale", f"{k.get('lengthscale', float('nan')):.6g}",
             chosen_by(float(k.get("lengthscale", float("nan"))), float(default_lengthscale(plan.domain)))),
            ("inducing inputs", str(plan.spec.n_inducing), "a public grid over the domain"),
            ("noise std of the model", f"{plan.noise_std:g}", chosen_by(float(plan.noise_std), float(DEFAULT_NOISE_STD))),
            ("noise added (sigma_a)", f"{plan.noise.sigma_a:.6g}", "calibrated to the target (epsilon, delta)"),
            ("grid", " \u00d7 ".join(map(str, plan.grid)), "resolution of the released map"))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                           account_command=None,
                           references=("A. Honkela, Gaussian Processes with Differential Privacy (the seed paper 001 of "
                                       "privgp).",))


def _inducing_setting(doc: dict) -> int:
    """The ``inducing`` argument (points along the longest side) of the recorded inducing grid."""
    Z = publish.setting(doc, "inducing_points")
    try:
        Z = np.asarray(Z, dtype=float)
    except (TypeError, ValueError):
        raise publish.CertificateMismatch("public_settings.inducing_points", "a list of points") from None
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise publish.CertificateMismatch("public_settings.inducing_points", "a list of points")
    return 1 if Z.shape[0] == 1 else max(len(np.unique(Z[:, j])) for j in range(Z.shape[1]))


def rebuild_plan(doc: dict) -> SparseGpPlan:
    """The plan rebuilt from certificate.json's public settings through :func:`plan_sparse_gp`, called as
    ``privgp release`` called it (the noise calibrated again to the recorded target (epsilon, delta))."""
    def s(key):
        return publish.setting(doc, key)

    rule = s("noise_ratio_rule")
    return plan_sparse_gp(publish.recorded_n(doc), publish.domain_setting(doc), publish.response_map_setting(doc),
                          epsilon=s("target_epsilon"), delta=s("delta"), kernel=s("kernel"),
                          lengthscale=s("lengthscale"), noise_std=s("noise_std"), inducing=_inducing_setting(doc),
                          grid=publish.grid_points_setting(doc), kernel_bound=s("kernel_bound_method"),
                          noise_ratio=s("noise_ratio") if rule == "given" else rule, rho=s("rho"),
                          correction=s("correction"))


def verify(doc: dict):
    """Rebuild the plan from the public settings (:func:`rebuild_plan`: n, domain, response map, kernel,
    lengthscale, noise std, inducing inputs, R_k rule, noise ratio, rho, S_2 correction, target (epsilon,
    delta), grid) and compare it with everything recorded, the Gaussian event's sensitivity and noise std
    included (:func:`~privgp.cli.release_publish.verify_against_plan`)."""
    return publish.verify_against_plan(doc, rebuild_plan(doc))
