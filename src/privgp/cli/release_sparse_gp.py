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
from ..mechanisms.sparse_gp import CHUNK
from ..mechanisms.sparse_gp_release import (DEFAULT_INDUCING, DEFAULT_NOISE_STD, SparseGpPlan, SparseGpReleased,
                                            plan_sparse_gp)
from ..mechanisms.sparse_gp_sensitivity import KERNEL_BOUNDS

NAME = "sparse-gp"
HELP = ("DP sparse GP (seed 001, Alg. 1): noisy sufficient statistics on a public grid of inducing inputs, "
        "predictive mean and +-2 sd on the grid (exact Gaussian-mechanism calibration)")
DEFAULT_EPSILON = 5.0
DEFAULT_GRID = {1: 201, 2: 121}
FILES = ("prediction.npz", "prediction.csv", "inducing.csv", "prediction.png")


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
    _plot(folder / "prediction.png", released, plan, names, response_name)
    return list(FILES)


def _plot(path: Path, rel, plan, names, response: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cert = plan.certificate
    title = (f"DP sparse GP: epsilon={float(cert.epsilon):.3g}, delta={float(cert.delta):.2g}, "
             f"|Z|={rel.Z.shape[0]}; model units (g({response}) - g(T)) / B")
    if len(rel.axes) == 1:
        fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
        x = rel.axes[0]
        ax.plot(x, rel.mean, color="C0", lw=1.5, label="predictive mean")
        ax.fill_between(x, rel.mean - 2 * rel.sd, rel.mean + 2 * rel.sd, color="C0", alpha=0.25, label="+-2 sd")
        ax.plot(rel.Z[:, 0], rel.m, "o", color="C2", ms=4, label="q(u) means at Z")
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xlim(x[0], x[-1])
        ax.set_xlabel(names[0])
        ax.legend(fontsize=8)
    else:
        fig, axs = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
        X0, X1 = np.meshgrid(*rel.axes, indexing="ij")
        for ax, field, label, cmap in ((axs[0], rel.mean, "predictive mean", "RdBu_r"), (axs[1], rel.sd, "predictive sd", "viridis")):
            lim = float(np.max(np.abs(field))) or 1.0
            im = ax.pcolormesh(X0, X1, field, shading="auto", cmap=cmap,
                               **({"vmin": -lim, "vmax": lim} if cmap == "RdBu_r" else {}))
            if cmap == "RdBu_r":
                ax.contour(X0, X1, field, levels=[0.0], colors="k", linewidths=1.2)
            ax.plot(rel.Z[:, 0], rel.Z[:, 1], "k+", ms=5, alpha=0.6)
            ax.set_aspect("equal")
            ax.set_xlabel(names[0])
            ax.set_ylabel(names[1])
            ax.set_title(label + (" (black: 0 = the threshold)" if cmap == "RdBu_r" else "") + "; +: inducing inputs",
                         fontsize=9)
            fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=120)
    plt.close(fig)
