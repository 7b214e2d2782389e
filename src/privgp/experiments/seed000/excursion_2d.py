"""Table 4 and Figures 7-8 of seed 000 (App. D.1): 2-D excursion sets of a plume field.

Per column: N_pair worlds on [0, 1]^2 (K = 2 anisotropic plumes, sigmoid gamma = 5 centred at the
65% quantile, priors of :class:`~privgp.datasets.plumes.PlumePrior`), |D| = 400 uniform sensors,
y = (1 - M_xi) f*(x) + Unif[-M_xi, M_xi], target {(1 - M_xi) f* >= 0}; exponential kernel;
BCE and IoU on an 80 x 80 mesh (tensor trapezoid rule); unconstrained search on the published
script's public grid and private search (eps_1 < 10, delta = 0.001) on its private grid (larger r),
both with two refinement rounds around the top 3; Lemma B.1 (generic Delta_n) with
kappa = exp(-sqrt(2)/l) on the unit square; C on a separate validation pool; one-path releases
drawn exactly on a 60 x 60 grid, smoothed by a fixed Gaussian filter (2 px, data-independent
post-processing) and thresholded at t = 0 (L = 1).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...datasets.plumes import PlumePrior, attenuated_signal, excursion_pairs_2d
from ...datasets.synthetic import check_noise_level
from ...errors import InvalidParameterError
from ...formatting import format_upper
from ...models.domain import Box
from ...tasks import excursion as ex
from ...tasks.excursion_study import PrivacySpec, ReleaseSpec, StudyConfig, posterior_paths, run_excursion_study, summarize
from ...tasks.hyperparameter_search import SearchSpace
from ..common import as_tuple, new_figure, save_figure, write_run_record
from .excursion_1d import _check_inputs, _constant_sets, _write_outputs

#: The published 2-D script's hard-coded grids (docs/notes/seed000_published_scripts.md, sec. 1.4), lengthscales united.
PUBLIC_GRID_2D = dict(lengthscales=(0.05, 0.10, 0.14, 0.18, 0.24, 0.35, 0.45),
                      rs=(0.27, 0.40, 0.60, 0.90, 1.3, 1.7, 2.5), sigmas=(0.05, 0.08, 0.12, 0.18, 0.27, 0.40, 0.60))
PRIVATE_GRID_2D = dict(lengthscales=(0.05, 0.10, 0.14, 0.18, 0.24, 0.35, 0.45),
                       rs=(2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0), sigmas=(0.01, 0.05, 0.08, 0.12, 0.18, 0.27, 0.40))
QUICK_PUBLIC_2D = dict(lengthscales=(0.1, 0.24), rs=(0.4, 1.3), sigmas=(0.08, 0.27))
QUICK_PRIVATE_2D = dict(lengthscales=(0.1, 0.24), rs=(4.0, 8.0), sigmas=(0.08, 0.27))
#: Refinement for 2-D (App. D.1: "a local refinement around the best feasible candidates"): one
#: round over (l, r, sigma), then a second round over (r, sigma) at the anchors' lengthscales. Each
#: new lengthscale costs an eigendecomposition and an m x n x n product per world; r and sigma are
#: nearly free.
REFINEMENT_2D = (((0.8, 1.0, 1.25), (0.6, 0.8, 1.0, 1.25, 1.6), (0.6, 0.8, 1.0, 1.25, 1.6)),
                 ((1.0,), (0.8, 0.9, 1.0, 1.1, 1.25), (0.8, 0.9, 1.0, 1.1, 1.25)))

PAPER = {"table4": {
    0.1: {"eps_star": 1e7, "deff_star": (211.8, 210.8, 212.8), "deff_priv": (5.64, 5.63, 5.64),
          "rel_bce_increase": (5.275, 3.925, 6.384), "iou_star": (0.979, 0.974, 0.983),
          "iou_path_mean": (0.824, 0.798, 0.850), "iou_path_sd": (0.034, 0.029, 0.039),
          "rel_iou_gap": (0.168, 0.138, 0.194)},
    0.3: {"eps_star": 1e5, "deff_star": (96.63, 96.24, 97.00), "deff_priv": (5.59, 5.58, 5.59),
          "rel_bce_increase": (1.970, 1.536, 2.405), "iou_star": (0.950, 0.939, 0.959),
          "iou_path_mean": (0.800, 0.772, 0.829), "iou_path_sd": (0.039, 0.033, 0.045),
          "rel_iou_gap": (0.158, 0.127, 0.184)},
    0.5: {"eps_star": 2e3, "deff_star": (39.55, 39.42, 39.67), "deff_priv": (5.47, 5.47, 5.48),
          "rel_bce_increase": (0.915, 0.699, 1.143), "iou_star": (0.908, 0.888, 0.927),
          "iou_path_mean": (0.776, 0.743, 0.808), "iou_path_sd": (0.048, 0.041, 0.057),
          "rel_iou_gap": (0.145, 0.104, 0.188)},
}}


def config_2d(*, quick: bool, n: int = 400, eps0: float = 10.0, delta: float = 0.001, L: int = 1,
              n_pairs: int | None = None, n_val: int | None = None, n_mc: int | None = None,
              conversion: str = "mironov", clip: float = 1e-6, lattice: int | None = None) -> dict:
    for key, val in (("n_pairs", n_pairs), ("n_val", n_val), ("n_mc", n_mc)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, (int, np.integer))):
            raise InvalidParameterError(key, "an integer", val)
    cfg = {"n": 120 if quick else n, "eps0": eps0, "delta": delta, "L": L, "q": 0.5,
           "n_pairs": 6 if quick else 1000, "n_val": 4 if quick else 200,
           "mesh_size": 24 if quick else 80, "path_grid": 20 if quick else 60,
           "smoothing_px": 1.0 if quick else 2.0, "n_mc": 4 if quick else 20,
           "conversion": conversion, "bce_clip": clip, "lattice": lattice,
           "public_grid": QUICK_PUBLIC_2D if quick else PUBLIC_GRID_2D,
           "private_grid": QUICK_PRIVATE_2D if quick else PRIVATE_GRID_2D,
           "refinement": REFINEMENT_2D[:1] if quick else REFINEMENT_2D, "top_k": 2 if quick else 3,
           "sensitivity": "generic (Lemma B.1), kappa = exp(-sqrt(2)/l) on [0,1]^2", "kernel": "exponential",
           "plume_prior": PlumePrior().to_dict()}
    if quick and n != 400:
        cfg["n"] = n
    for k, val in (("n_pairs", n_pairs), ("n_val", n_val), ("n_mc", n_mc)):
        if val is not None:
            cfg[k] = val
    return cfg


def run_column_2d(cfg: dict, M_xi: float, *, executor, seed: int, constants: tuple[str, ...], label: str = ""):
    """One Table-4 column: {constants: (StudyResult, summary)} plus the pools and the release spec."""
    M_xi = check_noise_level(M_xi)
    if not float(cfg["eps0"]) > 0:
        raise InvalidParameterError("eps0", "> 0", cfg["eps0"])
    ss = np.random.SeedSequence([seed, int(round(M_xi * 1000)), int(cfg["n"]), 2])
    g_train, g_val, g_study = (np.random.default_rng(s) for s in ss.spawn(3))
    kw = dict(n=cfg["n"], M_xi=M_xi, mesh_size=cfg["mesh_size"], q=cfg["q"], lattice=cfg["lattice"])
    train = excursion_pairs_2d(cfg["n_pairs"], rng=g_train, **kw)
    val = excursion_pairs_2d(cfg["n_val"], rng=g_val, **kw)
    grid, axes = Box.unit(2).grid(cfg["path_grid"])
    release = ReleaseSpec(grid, axes, smoothing_px=cfg["smoothing_px"])
    specs = {c: PrivacySpec(eps0=cfg["eps0"], delta=cfg["delta"], n=cfg["n"], domain=Box.unit(2), L=cfg["L"],
                            sensitivity="generic", constants=c, conversion=cfg["conversion"]) for c in constants}
    study = StudyConfig(space=SearchSpace(refinement=cfg["refinement"], top_k=cfg["top_k"], **cfg["public_grid"]),
                        private_space=SearchSpace(refinement=cfg["refinement"], top_k=cfg["top_k"],
                                                  **cfg["private_grid"]),
                        privacy=specs[constants[0]], release=release, clip=cfg["bce_clip"], n_mc=cfg["n_mc"],
                        chunk_size=max(1, min(10, cfg["n_pairs"] // 2)))
    results = run_excursion_study(train, val, study, executor, seed=int(g_study.integers(2**31)), privacy=specs,
                                  release_signal_train=attenuated_signal(train, grid),
                                  release_signal_val=attenuated_signal(val, grid), label=label)
    return {c: (res, summarize(res)) for c, res in results.items()}, train, release


def plot_examples(path: Path, pairs, rows, result, release: ReleaseSpec, *, seed: int, n_paths: int = 5,
                  title: str = "") -> Path:
    """Figures 7-8: per row, the field with sensors and true boundary | {p_D >= C} on the true set |
    n_paths smoothed private one-path boundaries on the true set."""
    from ...models.gp import ExactPosterior
    from ...models.kernels import make_kernel

    rows = list(rows)
    fig, axs = new_figure(len(rows), 3, figsize=(10.5, 3.4 * len(rows)), squeeze=False)
    mesh_shape = tuple(len(a) for a in pairs.axes)
    ext = (0, 1, 0, 1)
    theta_s = result.unconstrained.theta
    theta_p = result.private.theta if result.feasible else None
    rng = np.random.default_rng(seed)
    for i, j in enumerate(rows):
        sig = pairs.signal[j].reshape(mesh_shape)
        truth = pairs.truth[j].reshape(mesh_shape)
        a0, a1, a2 = axs[i]
        a0.imshow(sig.T, origin="lower", extent=ext, cmap="viridis")
        a0.scatter(pairs.X[j, :, 0], pairs.X[j, :, 1], s=3, c="w", edgecolors="none")
        for a in (a0, a1, a2):
            a.contour(pairs.axes[0], pairs.axes[1], sig.T, levels=[pairs.t], colors="k", linewidths=1.2)
            a.set_xticks([]), a.set_yticks([])
        for a in (a1, a2):
            a.imshow(truth.T, origin="lower", extent=ext, cmap="Greys", vmin=0, vmax=2.5)
        ell, r, sigma = theta_s
        post = ExactPosterior(make_kernel("exponential", ell), pairs.X[j], pairs.y[j], r, sigma)
        p = ex.excursion_probability(post.mean(pairs.mesh), post.kD_diag(pairs.mesh), sigma, pairs.t)
        a1.contour(pairs.axes[0], pairs.axes[1], p.reshape(mesh_shape).T, levels=[result.C], colors="tab:blue",
                   linewidths=1.5)
        a1.set_title(f"non-private {{p_D >= {result.C:.2f}}}" if i == 0 else "")
        if theta_p is not None:
            paths = posterior_paths("exponential", pairs.X[j], pairs.y[j], release, theta_p, n_paths, rng)
            for k in range(n_paths):
                a2.contour(release.axes[0], release.axes[1], paths[k].reshape(release.shape).T, levels=[pairs.t],
                           colors="tab:red", linewidths=0.9, linestyles="--")
            if i == 0:
                a2.set_title(f"{n_paths} private one-path releases (ε<{format_upper(result.private.eps0, 6)})")
        elif i == 0:
            a2.set_title("no feasible private setting")
        if i == 0:
            a0.set_title("f*, sensors, true boundary")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def _run(name: str, out_dir: Path, *, quick: bool, executor, seed: int, M_values, figures: dict,
         table: bool, constants=None, **options) -> dict:
    t0 = time.perf_counter()
    out = Path(out_dir)
    consts = _constant_sets(constants)
    _check_inputs(M_values, options.get("eps0", 10.0))
    cfg = config_2d(quick=quick, **options)
    columns, figs = {}, []
    for M in M_values:
        res, train, release = run_column_2d(cfg, M, executor=executor, seed=seed, constants=consts,
                                            label=f"{name} M_xi={M}")
        columns[M] = res
        if M in figures:
            fname, nrows = figures[M]
            study = res[consts[0]][0]
            nsr = M / (1 - M)
            figs.append(plot_examples(out / f"{fname}.png", train, range(min(nrows, len(train))), study, release,
                                      seed=seed, title=f"NSR={nsr:.2f}, |D|={cfg['n']}, δ={cfg['delta']:g}, "
                                                       f"constants={consts[0]}").name)
    written = _write_outputs(out, name, "M_xi", columns, PAPER["table4"] if table else None, iqr=True, constants=consts)
    summary = {c: {str(col): s for col, s in w.items()} for c, w in written.items()}
    write_run_record(out, name, {"columns": {"M_xi": list(M_values)}, "constant_sets": list(consts), **cfg},
                     summary, time.perf_counter() - t0)
    return {"tables": [f"{name}_{c}.md" for c in consts], "figures": figs,
            "feasible": {c: all(s["feasible"] for s in w.values()) for c, w in written.items()}}


def table4(out_dir: Path, *, quick: bool, executor, seed: int = 0, M_xi_values=(0.1, 0.3, 0.5),
           constants: str | None = None, **options) -> dict:
    """Table 4 (and the Figure 7/8 panels for M_xi = 0.5 / 0.1)."""
    figs = {0.5: ("fig7", 3), 0.1: ("fig8", 1)}
    return _run("table4", out_dir, quick=quick, executor=executor, seed=seed, M_values=as_tuple(M_xi_values),
                figures=figs, table=True, constants=constants, **options)


def fig7(out_dir: Path, *, quick: bool, executor, seed: int = 0, constants: str | None = None, **options) -> dict:
    """Figure 7: three example worlds at NSR = 1 (M_xi = 0.5)."""
    return _run("fig7", out_dir, quick=quick, executor=executor, seed=seed, M_values=(0.5,),
                figures={0.5: ("fig7", 3)}, table=False, constants=constants, **options)


def fig8(out_dir: Path, *, quick: bool, executor, seed: int = 0, constants: str | None = None, **options) -> dict:
    """Figure 8: one example world at NSR = 0.11 (M_xi = 0.1)."""
    return _run("fig8", out_dir, quick=quick, executor=executor, seed=seed, M_values=(0.1,),
                figures={0.1: ("fig8", 1)}, table=False, constants=constants, **options)


#: the --set options these pass on to config_2d (privgp experiment checks names against them)
table4.options_from = fig7.options_from = fig8.options_from = config_2d  # type: ignore[attr-defined]
