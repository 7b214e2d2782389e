"""How good will a release be? A forecast from public simulation, computed before anything is charged.

The forecast runs the planned mechanism itself (its ``check`` and ``draw``, the same code as the
release) on synthetic records of the same size n, on the same public box and grid, drawn from the
public field families of :mod:`privgp.datasets.fields` with a known answer, and scores each
simulated release against the truth: the excursion IoU (the overlap of the released set
{field > threshold} with the true one, area-weighted), the fraction of the map on the correct side
of the threshold ("agreement") and the RMSE of the released field (model units, [-1, 1]). Every
input is public (n, epsilon, delta, box, grid and the mechanism's settings) and the simulation's
seed is fixed and public, so the forecast is reproducible and costs no privacy. It is a forecast
for fields *like* the synthetic ones, not a statement about the private data.

:func:`records_check` is its counterpart on records: the same plan drawn on the records themselves and compared with
their non-private map (``privgp release --measure-on-records`` prints it to stderr). It reads the records exactly, so it
is outside the guarantee: on private records nothing of it may be published, and a setting or a decision to publish
chosen from it is not covered by the certificate; on records one may look at (public, or synthetic from public
knowledge) it is what to choose settings on.

Library code: no printing, no files.
"""
from __future__ import annotations

import dataclasses
import math
import zlib
from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..datasets.fields import DEFAULT_NOISE, FAMILIES, SyntheticField
from ..formatting import format_short_of
from ..mechanisms.interface import simulation_twin
from ..mechanisms.registered.grid import cell_statistics
from ..mechanisms.release import ResponseMap
from ..models.domain import CellGrid, trapezoid_weights

#: the forecast's public simulation seed (fixed: the forecast is deterministic)
FORECAST_SEED = 20261125
#: expected IoU below this: the map is mostly noise; ``privgp release`` refuses without --allow-noisy
NOISY_IOU = 0.5
#: above this n, the grid-type mechanisms (released statistics are sums over records) are simulated with
#: this many records and the noise std scaled by SIMULATED_N / n: the same signal-to-noise ratio of the
#: privacy noise, a larger sampling noise (a conservative forecast), and a cost independent of n
SIMULATED_N = 200_000
#: the forecast stops simulating once its expected IoU has at most this standard error (after two rounds)
PRECISE_SE = 0.005
#: the most simulated releases a family a forecast may record: what ``privgp verify`` runs again (privgp release makes
#: 2-8; red team 19c: a certificate stating 1e308 kept verify busy, so a forecast stating more is NOT VERIFIED, and
#: privgp.publish refuses to write one: red team 20d)
MAX_VERIFIED_REPS = 64
#: ... and the most field families (a forecast of more is NOT VERIFIED, and privgp.publish does not write one)
MAX_VERIFIED_FAMILIES = 16
_IDENTITY = ResponseMap(threshold=0.0, clip=1.0)


def released_field(released) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray] | None:
    """(axes, field, excursion) of a released object of any mechanism (model units, threshold 0):
    a grid field, a predictive mean, one path, or the mean and the majority vote of L paths; a private
    selection's chosen release (an empty map when it accepted none: returns None)."""
    if hasattr(released, "selected") and hasattr(released, "model"):
        if not released.selected:
            return None
        released = released.model[1]
    axes = tuple(released.axes)
    if hasattr(released, "field"):
        f = np.asarray(released.field, dtype=float)
        return axes, f, f > 0
    if hasattr(released, "mean") and not callable(released.mean):
        f = np.asarray(released.mean, dtype=float)
        return axes, f, f > 0
    paths = np.asarray(released.paths, dtype=float)
    return axes, paths.mean(axis=0), (paths > 0).mean(axis=0) > 0.5


def _released_or_empty(released, domain) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """:func:`released_field`, or where nothing was released (a private selection that accepted none) an empty
    map on 41 points an axis: no excursion set."""
    got = released_field(released)
    if got is not None:
        return got
    axes = tuple(np.linspace(lo, hi, 41) for lo, hi in zip(domain.lower, domain.upper))
    f = np.zeros(tuple(len(a) for a in axes))
    return axes, f, f > 0


def _compare(f: np.ndarray, exc: np.ndarray, ref: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """(IoU, agreement, RMSE) of a released field and excursion set against a reference field (threshold 0)."""
    t = ref > 0
    union = float(np.sum(w * (t | exc)))
    iou = float(np.sum(w * (t & exc)) / union) if union > 0 else 1.0
    agree = float(np.sum(w * (t == exc)))
    rmse = float(np.sqrt(np.sum(w * (np.clip(f, -1, 1) - np.clip(ref, -1, 1)) ** 2)))
    return iou, agree, rmse


#: the non-private reference map's cells per grid point along an axis, at most (:func:`nonprivate_map`)
REFERENCE_CELLS_PER_POINT = 4


def reference_settings(domain, n: int, axes=None, table_dim: int | None = None) -> tuple[tuple[int, ...], float]:
    """(cells per axis, bandwidth) of the non-private reference map of ``n`` records over ``domain``: the tuning
    table's lowest-noise entry for n, i.e. tuned for accuracy (``table_dim``: the table's dimension, default the
    box's). Given the map's ``axes``, at most :data:`REFERENCE_CELLS_PER_POINT` cells per grid point along each: a
    box of aspect 1e12 asked for 6e6 cells along it, a 23 GB smoothing matrix (red team 18g); no box of aspect under
    about 6 000 : 1 reaches the cap."""
    from ..mechanisms.registered.auto import cells_for_box, choose_grid_settings  # noqa: PLC0415
    from ..mechanisms.registered.grid import cell_sizes  # noqa: PLC0415

    entry = choose_grid_settings(n, 1e-9, dim=domain.dim if table_dim is None else table_dim)
    cells = cell_sizes(domain, cells_for_box(int(entry["cells"]), domain))
    if axes is not None:
        cells = tuple(min(int(c), REFERENCE_CELLS_PER_POINT * len(a)) for c, a in zip(cells, axes))
    return cells, float(entry["bandwidth"])


def nonprivate_map(domain, axes, X: np.ndarray, y: np.ndarray, table_dim: int | None = None) -> np.ndarray:
    """The non-private map the forecast compares with: the same records smoothed without any privacy noise
    (exact per-cell sums and counts, at :func:`reference_settings`)."""
    from ..mechanisms.registered.grid import cell_statistics, smooth_ratio  # noqa: PLC0415

    cells, bandwidth = reference_settings(domain, X.shape[0], axes, table_dim)
    sums, counts = cell_statistics(domain, cells, X, y, exact=False)
    return smooth_ratio(axes, domain, cells, sums, counts, 0.0, bandwidth)[0]


def score(released, truth_field: SyntheticField, X: np.ndarray | None = None, y: np.ndarray | None = None,
          reference_table_dim: int | None = None) -> dict[str, float]:
    """IoU, agreement and RMSE of one released object against a synthetic field's truth, and (given the
    simulated records X, y) against the non-private map of the same records (:func:`nonprivate_map`; its table
    ``reference_table_dim``, default the box's: 2 in 1-D only to verify a release of privgp before 2026-11-26)."""
    axes, f, exc = _released_or_empty(released, truth_field.domain)
    truth = truth_field.on_axes(axes)
    w = trapezoid_weights(axes).reshape(truth.shape)
    w = w / w.sum()
    iou, agree, rmse = _compare(f, exc, truth, w)
    out = {"iou_truth": iou, "agreement_truth": agree, "rmse_truth": rmse}
    if X is not None and y is not None:
        ref = nonprivate_map(truth_field.domain, axes, X, y, reference_table_dim)
        iou, agree, rmse = _compare(f, exc, ref, w)
        out.update({"iou": iou, "agreement": agree, "rmse": rmse})
        out["iou_nonprivate_vs_truth"] = _compare(ref, ref > 0, truth, w)[0]
    return out


@dataclass(frozen=True)
class Forecast:
    """Expected utility of one planned release on public synthetic fields (means and standard errors)."""

    mechanism: str
    n: int
    simulated_n: int
    reps_per_family: int
    families: tuple[str, ...]
    per_family: dict
    iou: float
    iou_se: float
    agreement: float
    rmse: float
    rmse_se: float
    noise: float
    seed: int
    #: simulated at fewer records with the noise scaled (sums over records) rather than the plan's own noise
    noise_scaled: bool = True

    @property
    def noisy(self) -> bool:
        """True when the expected IoU is below :data:`NOISY_IOU`: the map would be mostly noise."""
        return not (self.iou >= NOISY_IOU)

    @property
    def iou_truth(self) -> float:
        """Mean over families of the expected IoU against the synthetic field's truth."""
        return float(np.mean([v["iou_truth"] for v in self.per_family.values()]))

    @property
    def iou_nonprivate_vs_truth(self) -> float:
        return float(np.mean([v["iou_nonprivate_vs_truth"] for v in self.per_family.values()]))

    def words(self) -> str:
        """The forecast for a non-expert."""
        k = int(round(10 * self.agreement))
        return (f"about {k} in 10 places on the map will agree with the non-private map (the same records without "
                f"privacy noise), and the area above the threshold will overlap it by "
                f"{format_short_of(100 * self.iou, 100 * NOISY_IOU, 0)}% (IoU; 100% = "
                f"identical); against the true field the overlap is {self.iou_truth:.0%} (a non-private map: "
                f"{self.iou_nonprivate_vs_truth:.0%}) -- judged on {self.reps_per_family * len(self.families)} simulated "
                f"releases of {self.simulated_n} synthetic records (bump, blobs and rough fields"
                + ("" if self.simulated_n == self.n else
                   (f", noise scaled to {self.n} records' signal-to-noise ratio" if self.noise_scaled else
                    f", the plan's noise for {self.n} records at fewer records: a noisier map, a conservative "
                    "forecast")) + ")")

    def iou_text(self) -> str:
        """The expected IoU to 2 decimals, never rounded up to the refusal threshold it is below (0.497 is
        "0.49", not "0.50 < 0.5")."""
        return format_short_of(self.iou, NOISY_IOU)

    def noisy_note(self, short: bool = False) -> str:
        """What a release made although this forecast says mostly noise states on its outputs ("" otherwise);
        ``short``: the words of a picture's title."""
        if not self.noisy:
            return ""
        head = f"MOSTLY NOISE by its forecast (expected IoU {self.iou_text()} < {NOISY_IOU:g}): released "
        if short:
            return head + "anyway"
        return head + "only because --allow-noisy was given; do not read its boundaries as findings"

    def kinds_note(self, *, refused: bool = True) -> str:
        """Where a map forecast to be mostly noise has a kind of synthetic field on which it is not (walk-through 21:
        the sparse GP's refusal averaged bump 0.63, blobs 0.49 and rough 0.02, and on a smooth field it overlapped
        the truth by 0.77), each kind's expected IoU and which kinds pass, so that the data holder sees what the
        average hides; else "". Whether a field is like those kinds is for public knowledge to say, not the records
        (walk-through 22). ``refused``: the map is refused (else released anyway, labelled mostly noise)."""
        per = {name: float(v["iou"]) for name, v in self.per_family.items()}
        passing = [name for name, x in per.items() if x >= NOISY_IOU]
        if not self.noisy or not passing:
            return ""
        kinds = " and ".join(passing)
        return ("; by kind of synthetic field: " + ", ".join(f"{name} {format_short_of(x, NOISY_IOU)}"
                                                             for name, x in per.items())
                + f" (bump: one smooth hill; blobs: a few hills and hollows; rough: a rough surface) -- the "
                  f"{'refusal' if refused else 'MOSTLY NOISE label'} follows their average; if public knowledge, not "
                  f"these records, says your field is like the {kinds} field{'s' if len(passing) > 1 else ''}, the map "
                  "may do better")

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "n": self.n, "simulated_n": self.simulated_n,
                "reference": "the non-private map of the same records",
                "expected_iou": self.iou, "expected_iou_se": self.iou_se,
                "expected_iou_vs_truth": self.iou_truth, "nonprivate_iou_vs_truth": self.iou_nonprivate_vs_truth,
                "expected_agreement": self.agreement, "expected_rmse": self.rmse, "expected_rmse_se": self.rmse_se,
                "per_family": self.per_family, "families": list(self.families),
                "simulated_releases": self.reps_per_family * len(self.families), "response_noise_std": self.noise,
                "seed": self.seed, "noisy_below_iou": NOISY_IOU, "mostly_noise": self.noisy, "words": self.words(),
                "basis": "public simulation on synthetic fields with a known answer (no private data, no privacy cost)"}


def _simulation_plan(plan):
    """The plan with the identity response map: synthetic responses are already in model units (also in the
    candidate plans of a private selection); its simulation twin (:func:`simulation_twin`)."""
    plan = simulation_twin(plan)
    if getattr(plan, "response_map", None) is None:
        return plan
    changes: dict = {"response_map": _IDENTITY}
    if isinstance(getattr(plan, "plans", None), tuple):
        changes["plans"] = tuple(_simulation_plan(p) for p in plan.plans)
    return dataclasses.replace(plan, **changes)


def _scaled_plan(plan):
    """For a plan with n > :data:`SIMULATED_N` that offers ``scaled(m)``: the same plan for m records (with the
    noise scaled by m / n where its statistics are sums over records: the grids, the sparse GP; the same noise
    for posterior sampling and the functional mechanism, whose noise does not grow with n: fewer records, a
    noisier map). Either way a conservative forecast at a cost independent of n (:data:`SIMULATED_N`)."""
    if not hasattr(plan, "scaled") or plan.n <= SIMULATED_N:
        return plan
    return plan.scaled(SIMULATED_N)


def _combined_se(per_family: list[np.ndarray]) -> float:
    """The standard error of the mean over families of the per-family means (+inf with one value a family)."""
    if min(a.size for a in per_family) < 2:
        return math.inf
    return float(np.sqrt(np.sum([np.var(a, ddof=1) / a.size for a in per_family])) / len(per_family))


def _simulated_draw(sim, X: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    """``sim.draw(X, y, rng)``; for a plan that releases from per-cell statistics (the grids), from their float64
    ``bincount`` instead of the exact sums a release uses (:func:`cell_statistics`, ``exact=False``): they differ by
    rounding only (relative 1e-16), the same noise draws follow, and a simulation needs no order-independence."""
    return _drawer(sim, X, y)(rng)


def _drawer(sim, X: np.ndarray, y: np.ndarray):
    """``rng -> sim.draw(X, y, rng)``, a noisy grid's per-cell statistics reduced once for every draw
    (:func:`_simulated_draw`)."""
    if draws_from_cell_statistics(sim):
        rule = sim.site_rule()
        stats = cell_statistics(rule.domain, rule.cells, X, y, exact=False)
        return lambda rng: sim.draw_from_statistics(*stats, rng)
    return lambda rng: sim.draw(X, y, rng)


def draws_from_cell_statistics(plan) -> bool:
    """Whether ``plan`` releases from per-cell (sums, counts) (the noisy grids): a draw again costs a bincount and
    the noise, whatever n."""
    return (hasattr(plan, "site_rule") and hasattr(plan, "draw_from_statistics")
            and isinstance(plan.site_rule(), CellGrid))


def forecast(plan, *, reps: int | None = None, families: tuple[str, ...] = FAMILIES, noise: float = DEFAULT_NOISE,
             seed: int = FORECAST_SEED, precise_se: float = PRECISE_SE,
             reference_table_dim: int | None = None) -> Forecast:
    """Simulate up to ``reps`` releases of ``plan`` per field family (same n, box, grid, settings) and score them
    (``reps`` None: the mechanism's own ``forecast_reps``, as ``privgp release`` runs it, so that a certificate
    written with this forecast verifies)
    (grid-type mechanisms above :data:`SIMULATED_N` records: :func:`_scaled_plan`). Releases are simulated in
    rounds of one per family, each family from its own public stream (seed, CRC-32 of its name); after two rounds the
    simulation stops as soon as the expected IoU's standard error is at most ``precise_se`` (large n: a few
    releases say it all; near the refusal threshold all ``reps`` run)."""
    if reps is None:
        from ..mechanisms.interface import for_plan  # noqa: PLC0415

        reps = for_plan(plan).forecast_reps
    reps = v.integer("reps", reps, minimum=1)
    sim = _scaled_plan(_simulation_plan(plan))
    fields = [SyntheticField(fam, plan.domain) for fam in families]
    rngs = [np.random.default_rng([seed, zlib.crc32(fam.encode())]) for fam in families]
    scores: list[list[dict]] = [[] for _ in families]
    for r in range(reps):
        for field_, rng, got in zip(fields, rngs, scores):
            X, y = field_.records(sim.n, rng, noise)
            Xc, yc = sim.check(X, y)
            got.append(score(_simulated_draw(sim, Xc, yc, rng), field_, X, y, reference_table_dim))
        if r >= 1 and _combined_se([np.array([s["iou"] for s in got]) for got in scores]) <= precise_se:
            break
    done = len(scores[0])
    per: dict[str, dict[str, float]] = {}
    all_iou, all_rmse, all_agree = [], [], []
    for fam, got in zip(families, scores):
        ious = np.array([s["iou"] for s in got])
        rmses = np.array([s["rmse"] for s in got])
        per[fam] = {"iou": float(ious.mean()), "rmse": float(rmses.mean()),
                    "iou_truth": float(np.mean([s["iou_truth"] for s in got])),
                    "rmse_truth": float(np.mean([s["rmse_truth"] for s in got])),
                    "iou_nonprivate_vs_truth": float(np.mean([s["iou_nonprivate_vs_truth"] for s in got]))}
        all_iou.append(ious)
        all_rmse.append(rmses)
        all_agree.append([s["agreement"] for s in got])
    # the mean over families of the per-family means; its se from the per-family standard errors
    fam_iou = np.array([a.mean() for a in all_iou])
    fam_rmse = np.array([a.mean() for a in all_rmse])
    iou_se, rmse_se = _combined_se(all_iou), _combined_se(all_rmse)
    return Forecast(mechanism=str(plan.mechanism), n=int(plan.n), simulated_n=int(sim.n), reps_per_family=done,
                    noise_scaled=bool(getattr(plan, "scaled_noise", True)),
                    families=tuple(families),
                    per_family=per, iou=float(fam_iou.mean()), iou_se=iou_se,
                    agreement=float(np.mean([np.mean(a) for a in all_agree])), rmse=float(fam_rmse.mean()),
                    rmse_se=rmse_se, noise=float(noise), seed=int(seed))


#: the draws :func:`records_check` makes at least: with the forecast's 6 (the GP mechanisms) its standard error was
#: 0.05-0.12 and 10-12% of its answers fell over 2 standard errors from the mean of 20 real releases (audit 19b)
RECORDS_CHECK_RELEASES = 24


@dataclass(frozen=True)
class RecordsCheck:
    """How good a planned release is on the data holder's own records (:func:`records_check`): ``releases`` draws of
    the plan compared with the non-private map of the same records. Private and outside the guarantee: it is an exact
    function of the records, so a setting or a decision to publish chosen from it is not covered by the release's
    certificate (red team 19a: one record moved it from 0.54 to 0.49 or 0.61)."""

    releases: int
    iou: float
    iou_se: float
    share_below: float
    forecast_iou: float
    #: the share of the map above the threshold in the non-private map of the records (0: IoU is 1 for a draw with
    #: nothing above it and 0 for any other, red team 19a)
    reference_area: float = math.nan

    def words(self) -> str:
        empty = (" (the non-private map has nothing above the threshold: a draw scores 1 if it has nothing above it "
                 "either, else 0)" if self.reference_area == 0 else "")
        return (f"{self.releases} draws of this plan on your own records (simulated: nothing charged or written) "
                f"overlapped the non-private map of them by IoU {self.iou:.2f} +- {self.iou_se:.2f} (standard error; "
                f"{100 * self.share_below:.0f}% of them below {NOISY_IOU:g}), against the forecast's "
                f"{format_short_of(self.forecast_iou, NOISY_IOU)}{empty}")

    def to_dict(self) -> dict:
        return {"releases": self.releases, "iou": self.iou, "iou_se": self.iou_se, "share_below_half": self.share_below,
                "forecast_iou": self.forecast_iou, "reference_area_above": self.reference_area,
                "private": "computed from your records exactly, outside the guarantee: do not publish, and settings "
                           "or a decision to publish chosen from it are not covered by the certificate"}


def records_check(plan, data, fc: Forecast, *, releases: int | None = None, seed: int = FORECAST_SEED) -> RecordsCheck:
    """Draw ``plan`` ``releases`` times on the records themselves (``data``: anything
    :func:`privgp.release` takes, or what :func:`privgp.check_records` returned for this plan) and compare each map,
    as the forecast compares its simulated ones (:func:`score`), with the non-private map of the same records
    (:func:`nonprivate_map`). ``releases`` None: :data:`RECORDS_CHECK_RELEASES`, or as many as the forecast ``fc``
    simulated if more. The forecast simulates records spread over the box, on fields with a sixth to a third of it
    above the threshold; on records unlike them (clustered, more or less of the box above the threshold) it can be
    far off either way (README: the embedded sales at $50k, 0.51 against a forecast of 0.68; at $40k and epsilon 2,
    0.64 against 0.50), and this says so. It reads the records exactly: for the data holder only, never to
    be published, and OUTSIDE THE GUARANTEE -- a threshold, epsilon, mechanism or decision to publish chosen from it
    is not covered by the certificate (use it on records you may look at: public or synthetic data, a study of
    privgp). The draws' randomness is a fixed public seed: it reproduces, and it is not the release's."""
    from ..mechanisms.release import CheckedRecords, check_records  # noqa: PLC0415

    checked = (data if isinstance(data, CheckedRecords) and data.plan is plan
               else check_records(plan, data, allow_noisy=True))
    X, y_checked = checked.X, checked.y
    # a noisy grid's checked responses are the model's (ResponseMap.apply): not computed again for 10^6 records
    y_model = y_checked if draws_from_cell_statistics(plan) else plan.response_map.apply(checked.records.response)
    if releases is None:
        releases = max(RECORDS_CHECK_RELEASES, fc.reps_per_family * len(fc.families))
    releases = v.integer("releases", releases, minimum=2)
    rng = np.random.default_rng([seed, zlib.crc32(b"records")])
    draw = _drawer(plan, X, y_checked)
    ious = []
    grids: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}   # per map grid (an empty selection's differs)
    area = math.nan
    for _ in range(releases):
        axes, f, exc = _released_or_empty(draw(rng), plan.domain)
        if f.shape not in grids:   # its weights and the reference map, once
            w = trapezoid_weights(axes).reshape(f.shape)
            ref = nonprivate_map(plan.domain, axes, np.asarray(X, dtype=float), np.asarray(y_model, dtype=float))
            grids[f.shape] = (w / w.sum(), ref)
            if math.isnan(area):
                area = float(np.sum(grids[f.shape][0] * (ref > 0)))
        w, ref = grids[f.shape]
        ious.append(_compare(f, exc, ref, w)[0])
    a = np.array(ious)
    return RecordsCheck(releases=releases, iou=float(a.mean()), iou_se=float(a.std(ddof=1) / math.sqrt(a.size)),
                        share_below=float(np.mean(a < NOISY_IOU)), forecast_iou=float(fc.iou), reference_area=area)
