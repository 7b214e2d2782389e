"""``privgp release``: a differentially private map from private data, with certificate and ledger.

Order of work (nothing is written or charged until every check has passed):
parse -> load and check the data -> public domain check -> plan (calibrate, certify for this n,
delta, domain) -> check the output folder -> charge the ledger (atomic; refusal = exit 3) ->
sample -> write outputs -> mark the ledger entry completed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import textwrap
from pathlib import Path

import numpy as np

from .. import __version__
from ..datasets import baltimore
from ..datasets.tabular import load_embedded_baltimore, load_table
from ..domain import Box
from ..errors import InvalidParameterError
from ..ledger import DEFAULT_BUDGET_EPSILON, Ledger
from ..jsonable import to_jsonable
from ..mechanisms.posterior_release import MECHANISM, PosteriorSamplePlan, ReleasedPaths, plan_posterior_sample
from ..mechanisms.release import ResponseMap, release
from .common import print_json

#: Default task on the embedded data: log sale price above $50k (price is in thousand USD).
BALTIMORE_THRESHOLD = 50.0
BALTIMORE_CLIP = 1.0
DEFAULT_EPSILON = 5.0
#: default kernel scale: with responses scaled to [-1, 1], sigma = 0.1 gave the best one-path IoU
#: at fixed epsilon in a synthetic (plume) study with n = 211 -- chosen without the private data
DEFAULT_SIGMA = 0.1
DEFAULT_GRID = {1: 201, 2: 121}
DEFAULT_SNAP = {1: 0, 2: 1}
OUTPUT_FILES = ("paths.npz", "paths.csv", "excursion.png", "certificate.json")

DESCRIPTION = textwrap.dedent(f"""\
    Release L exact posterior sample paths of a Gaussian process fitted to private data, on a grid
    over a PUBLIC domain, with a certified (epsilon, delta) differential-privacy guarantee
    (seed 000: Thm 3.1 / Prop. 2, Lemma B.1 in 2-D, Lemma B.7 for the 1-D exponential kernel,
    proven constants). The excursion set {{x: path(x) >= threshold}} is post-processing.

    Without --data: the embedded Baltimore 1978 house sales (211 sales; coordinates x, y; stated
    public box {baltimore.PUBLIC_BOX.describe()}); task: where the log sale price exceeds the
    public threshold $50k (--threshold 50 --transform log --clip 1).

    Everything except the data must be PUBLIC, i.e. chosen without looking at the private data:
    the domain (--box; never the min/max of the coordinates; points outside are an error), the
    threshold and clipping bound, and every hyperparameter (kernel, lengthscale, r, sigma, eta, L).
    Choosing hyperparameters from the private data (e.g. by fitting them) would need its own
    privacy budget, which this command does not account for. Give them, or give a target
    --epsilon and let r (or, with --r, eta) be calibrated from public quantities only.

    Responses z become y = clip(g(z) - g(threshold), -B, B)/B in [-1, 1] (M_Y = 1; seed 000,
    App. D.2) with g = --transform and B = --clip. How many values were clipped is a statistic
    of the private data and is never reported.

    Budget ledger (SQLite, --ledger, default $PRIVGP_LEDGER or ~/.local/share/privgp/ledger.sqlite):
    each dataset (keyed by a keyed hash of its content) has a total budget, fixed at its first
    release (default epsilon {DEFAULT_BUDGET_EPSILON:g}, delta = n^-1.1). Releases compose by adding
    their Renyi-DP curves on a fixed grid of orders; the spent epsilon is that sum converted at the
    budget's delta. A release is charged before anything is written; one that would exceed the
    budget is refused (exit status 3) and nothing is written. Bad input: exit status 2.

    Outputs in --out: paths.npz and paths.csv (the released paths on the grid), excursion.png
    (the released excursion boundaries; never the data points), certificate.json.
    """)


def _number_list(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def register(sub) -> None:
    p = sub.add_parser("release", help="release a private GP posterior sample map (certificate + ledger)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data (private)")
    d.add_argument("--data", metavar="CSV", help="CSV file with a header row (default: embedded Baltimore sales)")
    d.add_argument("--x-col", metavar="NAME", help="first coordinate column (default: x)")
    d.add_argument("--y-col", metavar="NAME", help="second coordinate column for 2-D data (default: none, i.e. 1-D)")
    d.add_argument("--response-col", metavar="NAME", help="response column (default: response)")
    t = p.add_argument_group("public task and domain")
    t.add_argument("--box", nargs="+", type=_number_list, metavar="V",
                   help="public domain XMIN XMAX [YMIN YMAX]; required with --data (default: the "
                        "embedded data's stated box)")
    t.add_argument("--threshold", type=_number_list, metavar="T",
                   help="public threshold in the response's own units; the released excursion set is "
                        "where the response exceeds it (required with --data; embedded: 50 = $50k)")
    t.add_argument("--clip", type=_number_list, metavar="B",
                   help="public clipping bound B on g(z) - g(T), in transformed units (required with "
                        "--data; embedded: 1, a factor e on log price)")
    t.add_argument("--transform", choices=["identity", "log"],
                   help="public response transform g (default: identity; embedded: log)")
    h = p.add_argument_group("public hyperparameters (never chosen from the private data)")
    h.add_argument("--kernel", default="exponential",
                   choices=["exponential", "matern32", "matern52", "squared_exponential"],
                   help="kernel (default: exponential)")
    h.add_argument("--lengthscale", type=float, metavar="ELL",
                   help="kernel lengthscale in coordinate units (default: one fifth of the box diameter)")
    h.add_argument("--r", type=float, metavar="R", help="effective ridge r (noise-to-signal ratio); "
                   "without --epsilon it is used as given, with --epsilon eta is calibrated")
    h.add_argument("--epsilon", type=float, metavar="E",
                   help=f"target epsilon: calibrate the smallest r (or, with --r, the smallest eta) meeting "
                        f"it (default: {DEFAULT_EPSILON:g} when --r is not given)")
    h.add_argument("--sigma", type=float, default=DEFAULT_SIGMA, metavar="S",
                   help=f"kernel scale sigma (default: {DEFAULT_SIGMA:g}, chosen on synthetic data, not on yours)")
    h.add_argument("--eta", type=float, metavar="ETA", help="scale of added prior GP noise (Prop. 2; default 0)")
    h.add_argument("--L", type=int, default=1, metavar="L", help="number of released paths (default: 1)")
    h.add_argument("--delta", type=float, metavar="D", help="delta of the certificate (default: n^-1.1, "
                   "as in seed 000's real-data study; n is public under replace-one DP)")
    h.add_argument("--sensitivity", choices=["auto", "generic", "exp1d"], default="auto",
                   help="Delta_n lemma: auto = B.7 for the 1-D exponential kernel, else B.1 (default: auto)")
    h.add_argument("--conversion", choices=["improved", "mironov"], default="improved",
                   help="RDP -> (epsilon, delta) conversion of the certificate (default: improved)")
    o = p.add_argument_group("output, randomness, ledger")
    o.add_argument("--grid", type=int, metavar="N",
                   help="grid points along the longest side of the box (default: 201 in 1-D, 121 in 2-D)")
    o.add_argument("--snap", type=int, metavar="R",
                   help="move each input to the nearest point of the grid lattice refined R times per axis "
                        "(a fixed public per-record map, so the guarantee holds for the original data) and "
                        "sample by fast circulant embedding; 0 = no snapping, exact dense sampling (2-D grids "
                        "up to 8000 points). Default: 1 in 2-D, 0 in 1-D")
    o.add_argument("--seed", type=int, metavar="S",
                   help="DEMO ONLY: fixed seed; anyone with the seed can reproduce the release, and the "
                        "guarantee holds only if the seed is secret and unguessable (default: fresh OS entropy)")
    o.add_argument("--out", default="privgp_release", metavar="DIR",
                   help="output folder, new or empty (default: ./privgp_release)")
    o.add_argument("--overwrite", action="store_true", help="allow replacing an earlier release in --out")
    o.add_argument("--ledger", metavar="PATH", help="ledger file (default: $PRIVGP_LEDGER or "
                   "~/.local/share/privgp/ledger.sqlite)")
    o.add_argument("--budget-epsilon", type=float, metavar="E",
                   help=f"total epsilon of a dataset new to the ledger (default {DEFAULT_BUDGET_EPSILON:g})")
    o.add_argument("--budget-delta", type=float, metavar="D",
                   help="total delta of a dataset new to the ledger (default: n^-1.1)")
    o.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


# -- steps -------------------------------------------------------------------------------------

def _load(args):
    """(TabularData, domain, ResponseMap) from the arguments; raises on bad input."""
    if args.data is None:
        for flag in ("x_col", "y_col", "response_col"):
            if getattr(args, flag) is not None:
                raise InvalidParameterError("--" + flag.replace("_", "-"), "used together with --data", getattr(args, flag))
        data = load_embedded_baltimore()
        domain = baltimore.PUBLIC_BOX if args.box is None else _box(args.box, 2)
        rmap = ResponseMap(threshold=BALTIMORE_THRESHOLD if args.threshold is None else args.threshold,
                           clip=BALTIMORE_CLIP if args.clip is None else args.clip,
                           transform=args.transform or "log")
    else:
        coords = [args.x_col or "x"] + ([args.y_col] if args.y_col else [])
        if args.box is None:
            raise InvalidParameterError("--box", "given with --data (the public domain: XMIN XMAX [YMIN YMAX]; "
                                        "never computed from the private coordinates)", None)
        for flag in ("threshold", "clip"):
            if getattr(args, flag) is None:
                raise InvalidParameterError("--" + flag, "given with --data (a public value chosen without "
                                            "looking at the data)", None)
        domain = _box(args.box, len(coords))
        rmap = ResponseMap(threshold=args.threshold, clip=args.clip, transform=args.transform or "identity")
        data = load_table(args.data, coords, args.response_col or "response")
    domain.check_contains("coordinates", data.X)
    rmap.apply(data.response)  # e.g. log of non-positive values: fail before anything is charged
    return data, domain, rmap


def _box(values, dim) -> Box:
    if len(values) != 2 * dim:
        raise InvalidParameterError("--box", f"{2 * dim} numbers (XMIN XMAX" + (" YMIN YMAX)" if dim == 2 else ")")
                                    + f" for {dim}-D data", len(values))
    return Box(tuple(values[0::2]), tuple(values[1::2]))


def _plan(args, data, domain, rmap) -> PosteriorSamplePlan:
    snap = DEFAULT_SNAP[domain.dim] if args.snap is None else args.snap
    if snap < 0:
        raise InvalidParameterError("--snap", "an integer >= 0", snap)
    target = args.epsilon
    if target is None and args.r is None:
        target = DEFAULT_EPSILON
    return plan_posterior_sample(data.n, domain, rmap, kernel=args.kernel, lengthscale=args.lengthscale,
                        sigma=args.sigma, r=args.r, eta=args.eta, L=args.L, delta=args.delta,
                        target_epsilon=target, sensitivity=args.sensitivity, conversion=args.conversion,
                        grid=args.grid or DEFAULT_GRID[domain.dim], snap=snap or None)


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InvalidParameterError("--out", "a folder (new or empty)", str(out))
    if out.is_dir():
        existing = [p.name for p in out.iterdir()]
        if existing and not overwrite:
            raise InvalidParameterError("--out", "a new or empty folder (or pass --overwrite)",
                                        f"{out} with {len(existing)} entries")
        if not os.access(out, os.W_OK):
            raise InvalidParameterError("--out", "a writable folder", str(out))
        return
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not (parent.is_dir() and os.access(parent, os.W_OK)):
        raise InvalidParameterError("--out", "creatable (its nearest existing parent must be a writable folder)",
                                    str(out))


def _randomness(seed):
    if seed is None:
        return np.random.default_rng(), {"source": "fresh OS entropy (numpy default_rng())"}
    return np.random.default_rng(seed), {
        "source": "fixed seed (demo); the seed is not recorded here",
        "warning": "anyone with the seed can reproduce this release; the privacy guarantee holds only if "
                   "the seed is secret and unguessable. Omit --seed for a real release."}


# -- outputs -----------------------------------------------------------------------------------

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


def _certificate_doc(plan: PosteriorSamplePlan, data, fingerprint, charge, ledger, randomness) -> dict:
    cert = plan.certificate
    return {
        "privgp_version": __version__,
        "mechanism": MECHANISM,
        "certificate": cert.to_dict(),
        "calibration": plan.calibration,
        "public_settings": plan.public_settings(),
        "dataset": {"fingerprint": fingerprint, "n": data.n, "dim": data.dim,
                    "coordinates": list(data.coordinates), "response": data.response_name,
                    "source": data.source if data.source.startswith("embedded:") else "user CSV file"},
        "ledger": {"entry_id": charge.entry_id, "path": str(ledger.path), **charge.to_dict()},
        "randomness": randomness,
        "outputs": list(OUTPUT_FILES),
        "notes": [
            "The guarantee assumes the domain, threshold, clipping bound and all hyperparameters were chosen "
            "independently of the private data; choosing them on the data needs its own privacy accounting.",
            "Neighbouring datasets: replace one record (n is public).",
            "The number of clipped responses is a statistic of the private data and is not reported.",
            "The fingerprint is a keyed hash (secret key in the ledger file), not a hash of the data.",
        ],
    }


def _summary(plan: PosteriorSamplePlan, data, out: Path, charge, ledger, randomness, fingerprint) -> dict:
    cert = plan.certificate
    return {"out": str(out), "files": list(OUTPUT_FILES), "epsilon": float(cert.epsilon),
            "delta": float(cert.delta), "n": data.n, "dim": data.dim, "L": plan.L, "r": plan.r,
            "sigma": plan.sigma, "eta": plan.eta, "lengthscale": plan.lengthscale, "kernel": plan.kernel,
            "hyperparameters": plan.hyperparameter_source, "target_epsilon": plan.target_epsilon,
            "domain": plan.domain.to_dict(), "response_map": plan.response_map.to_dict(),
            "sensitivity": plan.sensitivity, "fingerprint": fingerprint, "ledger": str(ledger.path),
            "entry_id": charge.entry_id, "budget_epsilon": charge.budget_epsilon,
            "budget_delta": charge.budget_delta, "spent_epsilon": charge.spent_after.epsilon,
            "remaining_epsilon": max(charge.budget_epsilon - charge.spent_after.epsilon, 0.0),
            "randomness": randomness}


def _print_summary(s: dict, plan: PosteriorSamplePlan, data) -> None:
    rm = plan.response_map
    cert = plan.certificate
    lemma = cert.details.get("lemma_Delta")
    source = " [embedded Baltimore 1978 house sales]" if data.source == "embedded:baltimore" else ""
    lines = [
        f"privgp release: {s['L']} posterior sample path(s) from {s['n']} private records ({s['dim']}-D){source}",
        f"  guarantee   ({s['epsilon']:.4g}, {s['delta']:.3g})-DP for replace-one neighbours"
        + (f"; {lemma}" if lemma else f"; sensitivity {plan.sensitivity}"),
        f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
        f"({plan.hyperparameter_source}" + (f" for target epsilon {plan.target_epsilon:g}" if plan.target_epsilon else "")
        + f"), sigma={plan.sigma:g}, eta={plan.eta:.4g}",
        f"  task        where {data.response_name} > {rm.threshold:g} (centred on the {rm.transform} scale, "
        f"clipped at +-{rm.clip:g}); domain {plan.domain.describe()}",
        f"  grid        {' x '.join(map(str, plan.grid))}"
        + ("" if plan.snap is None else
           f"; inputs snapped to the grid{'' if plan.snap == 1 else f' refined {plan.snap}x'} (public per-record map)"),
        f"  ledger      {s['ledger']}",
        f"              entry {s['entry_id']}; dataset {s['fingerprint'][:16]}: spent epsilon "
        f"{s['spent_epsilon']:.4g} of {s['budget_epsilon']:g} (at delta {s['budget_delta']:.3g})",
        f"  outputs     {s['out']}/: " + ", ".join(s["files"]),
    ]
    if "warning" in s["randomness"]:
        lines.append(f"  randomness  SEEDED (demo): {s['randomness']['warning']}")
    else:
        lines.append("  randomness  fresh OS entropy")
    print("\n".join(lines))


def run(args) -> int:
    data, domain, rmap = _load(args)
    plan = _plan(args, data, domain, rmap)
    out = Path(args.out)
    _check_out(out, args.overwrite)
    ledger = Ledger(args.ledger)
    rng, randomness = _randomness(args.seed)
    # check, charge (a refusal raises BudgetExceededError -> exit status 3), draw; nothing written yet
    result = release(plan, data, ledger, rng, budget_epsilon=args.budget_epsilon, budget_delta=args.budget_delta,
                     label=data.source if data.source.startswith("embedded:") else "", mark_completed=False)
    charge, released, fingerprint = result.charge, result.released, result.fingerprint
    out.mkdir(parents=True, exist_ok=True)
    names = list(data.coordinates)
    _write_paths(out, released, plan, names)
    _plot(out, released, plan, names, data.response_name)
    doc = _certificate_doc(plan, data, fingerprint, charge, ledger, randomness)
    (out / "certificate.json").write_text(json.dumps(to_jsonable(doc), indent=2) + "\n")
    ledger.complete(charge.entry_id)
    summary = _summary(plan, data, out, charge, ledger, randomness, fingerprint)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary, plan, data)
    return 0
