"""Plot and table of :func:`privgp.audit.samplers.langevin_gp.audit_sampler` (used by ``privgp audit sampler``)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...formatting import format_lower, format_upper
from ..common import new_figure, save_figure


def plot_sampler_audit(audit, path: Path) -> Path:
    """epsilon against the step count: the certified exact-posterior epsilon (seed 000), the certified
    iterate epsilon (sto), the iterate's pair epsilon (RDP of the worst pair found) and its exact lower bound,
    and the exact posterior's epsilon for the same pair. t = 0 and t = inf are drawn at the ends of the axis."""
    steps = np.array([row.steps for row in audit.rows])
    finite = steps[np.isfinite(steps) & (steps > 0)]
    hi = (finite.max() if finite.size else 1.0) * 3.0
    lo = (finite.min() if finite.size else 1.0) / 3.0
    x = np.where(np.isinf(steps), hi, np.where(steps == 0, lo, steps))
    fig, ax = new_figure(figsize=(7.5, 4.6))
    floor = 1e-4

    def curve(vals, **kw):
        vals = np.asarray(vals, dtype=float)
        ax.plot(x, np.maximum(np.where(np.isfinite(vals), vals, np.nan), floor), marker="o", ms=3, **kw)

    ax.axhline(audit.epsilon_posterior_certified, color="k", ls="--", lw=1.2,
               label=f"exact posterior, certified (seed 000): {format_upper(audit.epsilon_posterior_certified)}")
    if audit.sampler == "sto":
        curve([r.epsilon_iterate_certified for r in audit.rows], color="C3", lw=1.8, label="iterate, certified (upper bound)")
    curve([r.epsilon_iterate_pair for r in audit.rows], color="C0", label="iterate, worst pair found (RDP-converted)")
    curve([r.epsilon_iterate_lower for r in audit.rows], color="C0", ls=":", label="iterate, exact lower bound (one statistic)")
    curve([r.epsilon_posterior_pair for r in audit.rows], color="C2", ls="-.", label="exact posterior, same pair (RDP-converted)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [lo, *finite.tolist(), hi]
    labels = ["0"] + [f"{int(t):d}" for t in finite] + ["inf"]
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_xlabel("sampler steps t")
    ax.set_ylabel(f"epsilon (delta = {audit.delta:g})")
    name = {"sto": "sample-then-optimise", "ula": "preconditioned ULA"}[audit.sampler]
    ax.set_title(f"{name}: n = {audit.n}, r = {audit.r:g}, sigma = {audit.sigma:g}, h = {audit.step:.3g}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, Path(path))


def describe_factor(audit) -> str:
    """One sentence: is the iterate provably worse than the exact-posterior certificate, and by how much."""
    f = audit.worst_factor()   # a lower bound (what the search found) over the certified upper bound: rounded down
    shown, cert = format_lower(f, nan="nan"), format_upper(audit.epsilon_posterior_certified)
    t = max(audit.rows, key=lambda r: r.epsilon_iterate_lower).steps
    ts = "inf" if math.isinf(t) else f"{int(t)}"
    if f > 1:
        return (f"the iterate at t = {ts} is provably less private than the exact-posterior certificate allows: its "
                f"epsilon is at least {shown} times the certified {cert}")
    return (f"no step count found an iterate provably worse than the exact-posterior certificate (largest lower "
            f"bound = {shown} x certified, at t = {ts}); this is a search result, not a guarantee")
