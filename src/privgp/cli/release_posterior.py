"""``privgp release --mechanism posterior-sample`` (the default): L exact GP posterior sample paths
(seed 000). The options, the plan and the outputs of this mechanism; the command itself (data,
domain, ledger, atomic outputs) is :mod:`privgp.cli.release`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidParameterError
from ..mechanisms.posterior_release import PosteriorSamplePlan, ReleasedPaths, plan_posterior_sample

NAME = "posterior-sample"
HELP = ("L exact GP posterior sample paths on the grid (seed 000: Thm 3.1 / Prop. 2, Lemma B.1 in 2-D, "
        "Lemma B.7 for the 1-D exponential kernel, proven constants)")
DEFAULT_EPSILON = 5.0
#: default kernel scale: with responses scaled to [-1, 1], sigma = 0.1 gave the best one-path IoU
#: at fixed epsilon in a synthetic (plume) study with n = 211 -- chosen without the private data
DEFAULT_SIGMA = 0.1
DEFAULT_GRID = {1: 201, 2: 121}
DEFAULT_SNAP = {1: 0, 2: 1}
FILES = ("paths.npz", "paths.csv", "excursion.png")


def add_arguments(group) -> None:
    group.add_argument("--r", type=float, metavar="R", help="effective ridge r (noise-to-signal ratio); "
                       "without --epsilon it is used as given, with --epsilon eta is calibrated")
    group.add_argument("--eta", type=float, metavar="ETA", help="scale of added prior GP noise (Prop. 2; default 0)")
    group.add_argument("--L", type=int, default=1, metavar="L", help="number of released paths (default: 1)")
    group.add_argument("--sensitivity", choices=["auto", "generic", "exp1d"], default="auto",
                       help="Delta_n lemma: auto = B.7 for the 1-D exponential kernel, else B.1 (default: auto)")
    group.add_argument("--snap", type=int, metavar="R",
                       help="move each input to the nearest point of the grid lattice refined R times per axis "
                            "(a fixed public per-record map, so the guarantee holds for the original data) and "
                            "sample by circulant embedding with one unknown per occupied site; 0 = no snapping, "
                            "exact dense sampling (2-D grids up to 8000 points). Default: 1 in 2-D, 0 in 1-D")


def plan(args, data, domain, rmap, *, memory_limit: float) -> PosteriorSamplePlan:
    snap = DEFAULT_SNAP[domain.dim] if args.snap is None else args.snap
    if snap < 0:
        raise InvalidParameterError("--snap", "an integer >= 0", snap)
    target = args.epsilon
    if target is None and args.r is None:
        target = DEFAULT_EPSILON
    return plan_posterior_sample(data.n, domain, rmap, kernel=args.kernel, lengthscale=args.lengthscale,
                                 sigma=DEFAULT_SIGMA if args.sigma is None else args.sigma, r=args.r, eta=args.eta,
                                 L=args.L, delta=args.delta, target_epsilon=target, sensitivity=args.sensitivity,
                                 conversion=args.conversion, grid=args.grid or DEFAULT_GRID[domain.dim],
                                 snap=snap or None, memory_limit=memory_limit)


def write(out: Path, released: ReleasedPaths, plan: PosteriorSamplePlan, data) -> list[str]:
    names = list(data.coordinates)
    _write_paths(out, released, plan, names)
    _plot(out, released, plan, names, data.response_name)
    return list(FILES)


def summary(plan: PosteriorSamplePlan) -> dict:
    return {"L": plan.L, "r": plan.r, "sigma": plan.sigma, "eta": plan.eta, "lengthscale": plan.lengthscale,
            "kernel": plan.kernel, "hyperparameters": plan.hyperparameter_source,
            "target_epsilon": plan.target_epsilon, "sensitivity": plan.sensitivity}


def summary_lines(plan: PosteriorSamplePlan, data) -> list[str]:
    lemma = plan.certificate.details.get("lemma_Delta")
    return [
        f"  mechanism   {plan.L} exact posterior sample path(s); {lemma}",
        f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
        f"({plan.hyperparameter_source}" + (f" for target epsilon {plan.target_epsilon:g}" if plan.target_epsilon else "")
        + f"), sigma={plan.sigma:g}, eta={plan.eta:.4g}",
        f"  grid        {' x '.join(map(str, plan.grid))}"
        + ("" if plan.snap is None else
           f"; inputs snapped to the grid{'' if plan.snap == 1 else f' refined {plan.snap}x'} (public per-record map)"),
    ]


def _write_paths(out: Path, rel: ReleasedPaths, plan: PosteriorSamplePlan, names) -> None:
    meta = dict(coordinates=np.array(names), level=np.float64(rel.level),
                threshold=np.float64(plan.response_map.threshold), clip=np.float64(plan.response_map.clip),
                transform=np.array(plan.response_map.transform))
    axes = {f"axis_{nm}": ax for nm, ax in zip(names, rel.axes)}
    np.savez(out / "paths.npz", paths=rel.paths, **axes, **meta)
    pts = rel.grid_points()
    flat = rel.paths.reshape(rel.paths.shape[0], -1).T
    header = ",".join(list(names) + [f"path_{i + 1}" for i in range(flat.shape[1])])
    np.savetxt(out / "paths.csv", np.column_stack([pts, flat]), delimiter=",", header=header,
               comments="", fmt="%.10g")


def _plot(out: Path, rel: ReleasedPaths, plan: PosteriorSamplePlan, names, response: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cert = plan.certificate
    title = (f"Private release: L={plan.L} path(s), epsilon={float(cert.epsilon):.3g}, "
             f"delta={float(cert.delta):.2g}")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if plan.domain.dim == 2:
        w = plan.domain.widths
        fig, ax = plt.subplots(figsize=(7.5, max(3.0, 7.5 * w[1] / w[0]) + 0.6), constrained_layout=True)
        X0, X1 = np.meshgrid(*rel.axes, indexing="ij")
        frac = rel.excursion().mean(axis=0)
        # shading: at least k of the L paths above the threshold, k = 1..L (L = 1: the excursion set)
        levels = np.append((np.arange(1, plan.L + 1) - 0.5) / plan.L, 1.5)
        cf = ax.contourf(X0, X1, frac, levels=levels, cmap="Greys", alpha=0.4, vmin=0.0, vmax=1.6)
        for i, f in enumerate(rel.paths):
            ax.contour(X0, X1, f, levels=[rel.level], colors=[colors[i % len(colors)]], linewidths=1.6,
                       linestyles="solid" if i == 0 else "dashed")
        ax.set_xlim(plan.domain.lower[0], plan.domain.upper[0])
        ax.set_ylim(plan.domain.lower[1], plan.domain.upper[1])
        ax.set_aspect("equal")
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        if 1 < plan.L <= 20:
            cb = fig.colorbar(cf, ax=ax, shrink=0.8, label="fraction of paths above the threshold")
            cb.set_ticks(np.arange(1, plan.L + 1) / plan.L, labels=[f"{k}/{plan.L}" for k in range(1, plan.L + 1)])
        ax.set_title(title + f"\nshaded: released excursion set {{{response} > {plan.response_map.threshold:g}}}; "
                     "lines: its boundary per path", fontsize=10)
    else:
        fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
        x = rel.axes[0]
        for i, f in enumerate(rel.paths):
            ax.plot(x, f, color=colors[i % len(colors)], lw=1.2, label=f"path {i + 1}" if plan.L <= 10 else None)
            ax.fill_between(x, rel.level, f, where=f >= rel.level, color=colors[i % len(colors)], alpha=0.15)
        ax.axhline(rel.level, color="k", lw=0.8)
        ax.set_xlim(plan.domain.lower[0], plan.domain.upper[0])
        ax.set_xlabel(names[0])
        ax.set_ylabel("released path, (g(z) - g(T)) / B")
        if plan.L <= 10:
            ax.legend(fontsize=8)
        ax.set_title(title + f"\nshaded: released excursion set {{{response} > {plan.response_map.threshold:g}}}",
                     fontsize=10)
    fig.savefig(out / "excursion.png", dpi=120)
    plt.close(fig)
