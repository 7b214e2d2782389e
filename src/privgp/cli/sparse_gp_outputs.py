"""Output files of a DP sparse-GP release (seed 001), for ``privgp release --mechanism sparse-gp``.

:func:`write_sparse_gp_outputs` writes, into a folder (the CLI passes its atomic temporary folder):

* ``prediction.npz`` / ``prediction.csv``: the public grid, the latent predictive mean and standard
  deviation, and mean -+ 2 sd (model units: the response map's (g(z) - g(T)) / B, clipped to [-1, 1]);
* ``inducing.csv``: the inducing inputs Z, the mean m of q(u) and the standard deviations sqrt(diag S);
* ``prediction.png``: 1-D, the mean with a +-2 sd band; 2-D, maps of the mean and of the sd.

Everything written is post-processing of the released statistics; no private value is plotted.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

SPARSE_GP_OUTPUT_FILES = ("prediction.npz", "prediction.csv", "inducing.csv", "prediction.png")


def write_sparse_gp_outputs(folder, released, plan, names, response_name: str = "response") -> tuple[str, ...]:
    """Write the files of :data:`SPARSE_GP_OUTPUT_FILES` for ``released`` (a
    :class:`~privgp.mechanisms.sparse_gp_release.SparseGpReleased`) of ``plan``; ``names``: the
    coordinate names. Returns the file names."""
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
    return SPARSE_GP_OUTPUT_FILES


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
