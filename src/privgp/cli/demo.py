"""``privgp demo [--out DIR] [--seed S]``: draw and plot exact posterior paths on a tiny 1-D dataset.

A synthetic dataset (n = 30 inputs uniform on the public domain [0, 1], responses
y = 0.8 sin(2 pi x) + noise clipped to [-1, 1], so |y| <= M_Y = 1) is fitted with the exact GP
posterior of seed 000 (exponential kernel, public hyperparameters fixed in advance), three exact
posterior paths are drawn with the O(n + m) sampler and plotted with the posterior mean and a
+-2 sd band. The plot title states the (epsilon, delta) certified for releasing those paths
(Theorem 3.1 with Prop. 3 and Lemma B.7). Writes a PNG (never shows a window) and prints its path.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..formatting import format_upper
from .common import nonnegative_int, print_json
from .outputs import AtomicOutput, check_output_dir

N_DATA, LENGTHSCALE, R, SIGMA, DELTA, N_PATHS, M_GRID = 30, 0.3, 2.0, 1.0, 1e-3, 3, 2001


def register(sub) -> None:
    p = sub.add_parser("demo", help="draw and plot exact GP posterior paths on a tiny synthetic dataset",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--out", default="privgp-demo", metavar="DIR", help="output directory, new or empty (default: ./privgp-demo)")
    p.add_argument("--overwrite", action="store_true", help="allow replacing an earlier demo in --out")
    p.add_argument("--seed", type=nonnegative_int, default=None,
                   help="seed of the data and the draws (default: fresh OS entropy, printed)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=_run)


def _run(args) -> int:
    import numpy as np

    out = check_output_dir(args.out, args.overwrite)
    from ..experiments.common import new_figure, save_figure
    from ..mechanisms.posterior_sample import epsilon_posterior_sampling
    from ..models.domain import Box
    from ..models.gp import ExactPosterior
    from ..models.kernels import Exponential
    from ..models.sampling import exp1d_paths

    entropy = np.random.SeedSequence().entropy          # an int when drawn from the OS
    assert isinstance(entropy, int)
    seed = int(args.seed) if args.seed is not None else int(entropy % 2**63)
    rng = np.random.default_rng(seed)
    domain = Box.unit(1)
    X = np.sort(rng.uniform(0.0, 1.0, N_DATA))
    y = np.clip(0.8 * np.sin(2 * math.pi * X) + 0.2 * rng.standard_normal(N_DATA), -1.0, 1.0)
    kernel = Exponential(LENGTHSCALE)
    post = ExactPosterior(kernel, X, y, R, SIGMA)
    grid = np.linspace(0.0, 1.0, M_GRID)
    paths = exp1d_paths(X, y, grid, lengthscale=LENGTHSCALE, r=R, sigma=SIGMA, rng=rng, L=N_PATHS)
    eps = epsilon_posterior_sampling(N_DATA, R, SIGMA, DELTA, kernel="exponential", lengthscale=LENGTHSCALE,
                                     domain=domain, L=N_PATHS, M_Y=1.0, sensitivity="exp1d")
    epsilon = float(eps.item()["epsilon"])

    mean, sd = post.mean(grid), np.sqrt(post.var(grid))
    fig, ax = new_figure(figsize=(7, 4))
    ax.fill_between(grid, mean - 2 * sd, mean + 2 * sd, color="0.85", label="posterior mean +- 2 sd")
    ax.plot(grid, mean, color="k", lw=1.5, label="posterior mean")
    for i, path in enumerate(paths):
        ax.plot(grid, path, lw=0.8, label="exact posterior paths" if i == 0 else None)
    ax.scatter(X, y, s=14, color="crimson", zorder=5, label=f"data (n = {N_DATA})")
    ax.set_xlabel("x")
    ax.set_ylabel("f(x)")
    ax.set_title(f"{N_PATHS} exact posterior paths, exponential kernel l = {LENGTHSCALE}, r = {R}, "
                 f"sigma = {SIGMA}\nreleasing them is ({format_upper(epsilon)}, {format_upper(DELTA)})-DP (Thm 3.1, Lemma B.7)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    with AtomicOutput(out, args.overwrite) as tmp:
        save_figure(fig, tmp / "demo_posterior_paths.png")
    png = Path(args.out) / "demo_posterior_paths.png"

    summary = {"figure": str(png), "seed": seed, "n": N_DATA, "lengthscale": LENGTHSCALE, "r": R,
               "sigma": SIGMA, "paths": N_PATHS, "grid_points": M_GRID, "epsilon": epsilon, "delta": DELTA}
    if args.json:
        print_json(summary)
    else:
        print(f"privgp demo: drew {N_PATHS} exact posterior paths on {M_GRID} points from n = {N_DATA} "
              f"synthetic data (seed {seed}); releasing them is ({format_upper(epsilon)}, {format_upper(DELTA)})-DP")
        print(f"wrote {png}")
    return 0
