"""``privgp release``: a differentially private release from private data, with certificate and ledger.

One command for every mechanism (``--mechanism``, default ``auto``): the mechanisms are the registry of
:mod:`privgp.mechanisms.interface` (one class each in :mod:`privgp.mechanisms.registered`); this module adds
their declared options to the parser, refuses an option the chosen mechanism does not declare, and turns
the arguments into a :class:`~privgp.mechanisms.interface.Request`.

Order of work (nothing is written or charged until every check has passed):
parse -> load and check the data -> public domain check -> plan (calibrate, certify for this n,
delta, domain) -> check the output folder (probe file) -> open the ledger (a corrupt file is refused)
-> check the private data against the plan (sampler feasibility, memory) -> charge (atomic; refusal =
exit 3) -> draw -> write outputs (data files, picture, certificate, report.html) into a temporary
folder -> rename it into place -> mark the ledger entry completed. A failure after the charge (disk
full, a kill) leaves the entry charged.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import sys
import textwrap
from pathlib import Path

from .. import __version__
from ..datasets import baltimore
from ..datasets.sources import ReducedData
from ..errors import BudgetExceededError, ClusterError, InvalidParameterError, NoisyReleaseError, NumericalError
from ..formatting import exact_number
from ..ledger import DEFAULT_BUDGET_EPSILON, Ledger, check_budget, ledger_path, remaining_epsilon
from ..mechanisms.interface import DEFAULT_MEMORY_LIMIT, Mechanism, Request, all_options, check_publishable, float_noise_leak, get, registry
from ..mechanisms.release import ResponseMap, check_extents, check_map_is_possible, check_records, default_delta, release
from ..progress import Progress
from ..tasks.forecast import NOISY_IOU, Forecast, RecordsCheck, forecast, records_check
from . import picture_process
from . import release_publish as publish
from .common import box_from_values as _box
from .common import dataset_id as _dataset_id
from .common import grid_points, nonnegative_int, print_json
from .common import memory_limit as _memory_limit
from .common import number_list as _number_list
from .common import randomness as _randomness
from .outputs import AtomicOutput, check_output_dir
from .release_figure import format_upper

DEFAULT_MECHANISM = "auto"

CERTIFICATE = "certificate.json"


def _description() -> str:
    mechs = "\n".join(f"      {name}: {mech.help}" for name, mech in registry().items())
    return textwrap.dedent("""\
    Release a function of private data on a grid over a PUBLIC domain, with a certified
    (epsilon, delta) differential-privacy guarantee, charged to a budget ledger. Mechanisms:
    """) + mechs + "\n\n" + textwrap.dedent(f"""\
    Without --data: the embedded Baltimore 1978 house sales (211 sales; coordinates x, y; stated
    public box {baltimore.PUBLIC_BOX.describe()}); task: where the log sale price exceeds the
    public threshold ${baltimore.THRESHOLD:g}k (--threshold {baltimore.THRESHOLD:g} --transform {baltimore.TRANSFORM} --clip {baltimore.CLIP:g}).

    Before anything is charged, the release is FORECAST: the planned mechanism runs on simulated records
    of the same size from public synthetic fields with a known answer, and the expected overlap (IoU) of
    its map with the non-private map is printed in words. A map forecast to be mostly noise (expected IoU
    below {NOISY_IOU:g}) is refused (exit status 2, nothing charged) unless --allow-noisy is given; so is a
    box the records fill under a tenth of on every side (the forecast assumes records spread over the box).
    --dry-run checks the records and prints the forecast, then stops: nothing is charged or written. A
    release or dry run also notes, to you alone, when your records repeat rows or leave many of the map's
    cells empty: statistics of your records, outside the guarantee like the measure below.
    --measure-on-records (opt-in, OUTSIDE THE GUARANTEE) draws the plan on your own records and says how
    those maps overlap their non-private map: the forecast cannot see how your records cluster, but
    settings or a decision to publish chosen from what the records say are not covered by the certificate. The
    default mechanism, auto, chooses the mechanism and its settings from public inputs only (n, epsilon,
    delta, box); today that is the noisy grid tuned on public pilot simulations (in 1-D and 2-D).

    The unit of privacy is a ROW: (epsilon, delta) bounds what one record (row) changes. A person with k
    rows (repeated visits, duplicates) is protected at about k epsilon; give one row per person where that
    matters.

    Everything except the data must be PUBLIC, i.e. chosen without looking at the private data:
    the domain (--box; never the min/max of the coordinates; points outside are an error), the
    threshold and clipping bound, and every hyperparameter (kernel, lengthscale, r, sigma, eta, L).
    Choosing hyperparameters from the private data (e.g. by fitting them) would need its own
    privacy budget, which this command does not account for. Give them, or give a target
    --epsilon and let r (or, with --r, eta) be calibrated from public quantities only.

    Responses z become y = clip(g(z) - g(threshold), -B, B)/B in [-1, 1] (M_Y = 1; seed 000,
    App. D.2) with g = --transform and B = --clip. How many values were clipped is a statistic
    of the private data and is never reported.

    Budget ledger (SQLite, --ledger, default $PRIVGP_LEDGER, else $XDG_DATA_HOME/privgp/ledger.sqlite,
    else ~/.local/share/privgp/ledger.sqlite):
    each dataset (a keyed hash of the records used, or --dataset-id) has a total budget, fixed at
    its first release (default epsilon {DEFAULT_BUDGET_EPSILON:g}, delta = min(1e-6, 1/(10 n))). The ledger stores
    each release's privacy event; the spent epsilon is the accountant's epsilon of their composition
    at the budget's delta. A release is charged before anything is written; one that would exceed
    the budget is refused (exit status 3) and nothing is written. Bad input: exit status 2, one line;
    such messages may name counts of your data and are for you, not for publication. The ledger
    protects an honest data holder from overspending by mistake; it cannot stop someone who edits
    the data on purpose to get a fresh budget.

    Outputs in --out (written to a temporary folder and renamed into place at the end): the
    mechanism's files (e.g. paths.npz, paths.csv; never the data points), its picture (e.g.
    excursion.png: the released field in the response's units, the excursion boundary, the public
    domain; a vote map for L > 1), certificate.json and report.html (a self-contained page for
    publication: what was released, from how many records, what the guarantee means, the settings,
    the ledger's totals, how to verify; --no-report skips it; --map adds a map to explore in the
    page). Both are public: no local paths, no statistics of the data beyond n. Check a certificate
    with `privgp verify certificate.json`. With two or more CPUs the picture is drawn by a second
    Python process, started first, that receives only the released field and public settings
    (PRIVGP_PICTURE_PROCESS=0 draws it in this process; the files are the same).
    """)




def register(sub) -> None:
    p = sub.add_parser("release", help="release a private map from private data (certificate + ledger)",
                       description=_description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mechanism", choices=list(registry()), default=DEFAULT_MECHANISM,
                   help=f"what to release (default: {DEFAULT_MECHANISM}: privgp chooses from public inputs)")
    add_data_arguments(p)
    add_mechanism_options(p)
    o = p.add_argument_group("output, randomness, ledger")
    o.add_argument("--grid", type=grid_points, metavar="N",
                   help="grid points along the longest side of the box (default: 201 in 1-D, 121 in 2-D)")
    o.add_argument("--seed", type=nonnegative_int, metavar="SEED",
                   help="DEMO ONLY: fixed seed; anyone with the seed can reproduce the release, and the "
                        "guarantee holds only if the seed is secret and unguessable (default: fresh OS entropy)")
    o.add_argument("--out", default="privgp_release", metavar="DIR",
                   help="output folder, new or empty, created with any missing parent folders (default: "
                        "./privgp_release)")
    o.add_argument("--overwrite", action="store_true", help="allow replacing an earlier release in --out")
    o.add_argument("--no-report", dest="report", action="store_false",
                   help="do not write report.html (the one-page report for publication; written by default)")
    o.add_argument("--map", action="store_true",
                   help="add an interactive map to report.html (2-D releases: pan, zoom and read the released value "
                        "under the pointer; drawn in the page by one inline script, loads nothing from the network)")
    o.add_argument("--ledger", metavar="PATH", help="ledger file (default: $PRIVGP_LEDGER, else "
                   "$XDG_DATA_HOME/privgp/ledger.sqlite, else ~/.local/share/privgp/ledger.sqlite)")
    o.add_argument("--budget-epsilon", type=float, metavar="EPSILON",
                   help=f"total epsilon of a dataset new to the ledger (default {DEFAULT_BUDGET_EPSILON:g})")
    o.add_argument("--budget-delta", type=float, metavar="DELTA",
                   help="total delta of a dataset new to the ledger (default: min(1e-6, 1/(10 n)))")
    o.add_argument("--dataset-id", metavar="NAME",
                   help="name the dataset in the ledger (e.g. across versions of a file): releases with the same "
                        "NAME share one budget, whatever the records, and the records are linked to it (given "
                        "again without a name they are charged to it); records charged before without a name or "
                        "under another one are refused (default: a keyed fingerprint of the records)")
    o.add_argument("--memory-limit", type=float, default=DEFAULT_MEMORY_LIMIT / 2**30, metavar="GIB",
                   help="refuse (before anything is charged) a release whose sampler would need more memory "
                        f"than this many GiB (default {DEFAULT_MEMORY_LIMIT / 2**30:g})")
    o.add_argument("--allow-noisy", action="store_true",
                   help="release even when the utility forecast says the map would be mostly noise (expected "
                        f"IoU below {NOISY_IOU:g}; the report and certificate then say so), or over a box the "
                        "records fill under a tenth of on every side")
    o.add_argument("--dry-run", action="store_true",
                   help="check the records and print the utility forecast, then stop: nothing is charged or "
                        "written (compare --epsilon values or mechanisms by their forecasts before spending any "
                        "budget)")
    o.add_argument("--measure-on-records", action="store_true",
                   help="OUTSIDE THE GUARANTEE, opt-in: also draw the plan 24 times on your own records and say "
                        "(stderr; on_your_records with --dry-run --json) how those maps overlap their non-private "
                        "map. It reads the records exactly: a threshold, epsilon, mechanism or decision to publish "
                        "chosen from it is not covered by the certificate (for records you may look at: public or "
                        "synthetic data, a study of privgp); publish none of it")
    o.add_argument("--progress", action="store_true",
                   help="plain progress lines on stderr (for logs); a terminal shows a bar anyway")
    o.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def add_mechanism_options(p, mechanisms: list[str] | None = None) -> None:
    """Every option of the registered mechanisms (or of ``mechanisms``), each once, in one group per set of
    mechanisms that accept it ("--mechanism posterior-sample, functional")."""
    groups: dict[tuple[str, ...], object] = {}
    for opt, owners in all_options().values():
        names = tuple(n for n in owners if mechanisms is None or n in mechanisms)
        if not names:
            continue
        if names not in groups:
            groups[names] = p.add_argument_group("--mechanism " + ", ".join(names))
        opt.add_to(groups[names])


def mechanism_options(args) -> dict:
    """The mechanism options given on the command line, by dest (None: not given)."""
    return {dest: getattr(args, dest, None) for dest in all_options()}


def add_data_arguments(p, *, cluster: bool = True) -> None:
    """The private data, public task/domain and shared hyperparameter flags (also used by
    ``privgp audit lood``, which plans the same release without releasing and reads every record in this
    process: ``cluster=False`` leaves out --dask and --scheduler)."""
    d = p.add_argument_group("data (private)")
    d.add_argument("--data", metavar="SOURCE",
                   help="the private records (default: embedded Baltimore sales): a CSV file with a header row; a "
                        "Parquet file; a folder or a glob ('lake/*.parquet') of Parquet or CSV files; or a DuckDB "
                        "database, duckdb:///path/db.duckdb or db.duckdb, with --query or --table. Files are read "
                        "in record batches of the used columns only (pip install 'privgp[data]')")
    d.add_argument("--query", metavar="SQL", help="with a DuckDB --data: the SELECT whose result holds the records "
                   "(e.g. \"SELECT lon, lat, price FROM sales WHERE year = 2024\")")
    d.add_argument("--table", metavar="NAME", help="with a DuckDB --data: a table or view holding the records (the "
                   "database is opened read-only and without file access: a view over CSV or Parquet files cannot "
                   "be read; load them into a table, or give the files as --data)")
    if cluster:
        d.add_argument("--dask", choices=["local"], help="with --data: compute the per-site statistics on a local Dask "
                       "cluster (2 worker processes); only the statistics come back. For the mechanisms that release "
                       f"from them: {statistics_mechanisms()}; the others refuse it")
        d.add_argument("--scheduler", metavar="ADDR", help="as --dask, on the Dask cluster at this scheduler address "
                       "(e.g. tcp://10.0.0.5:8786); the workers must be able to read --data at the same path")
    d.add_argument("--x-col", metavar="NAME", help="first coordinate column (default: x)")
    d.add_argument("--y-col", metavar="NAME", help="second coordinate column for 2-D data (default: none, i.e. 1-D)")
    d.add_argument("--response-col", metavar="NAME", help="response column (default: response)")
    t = p.add_argument_group("public task and domain")
    t.add_argument("--box", nargs="+", type=_number_list, metavar="V",
                   help="public domain XMIN XMAX [YMIN YMAX] (each axis's lower and upper bound in turn, not GIS's "
                        "minx miny maxx maxy); required with --data (default: the embedded data's stated box)")
    t.add_argument("--crs", metavar="CRS",
                   help="coordinate reference system of the coordinates and --box (e.g. EPSG:4326, x = longitude): "
                        "a geographic CRS is projected to a local metric CRS centred on the box before any kernel "
                        "or grid sees it (lengthscales in metres), and the release also writes field.tif (GeoTIFF) "
                        "and excursion.geojson; needs pip install 'privgp[gis]' (default: plain coordinates)")
    t.add_argument("--threshold", type=_number_list, metavar="T",
                   help="public threshold in the response's own units; the released excursion set is "
                        "where the response exceeds it (required with --data; embedded: "
                        f"{baltimore.THRESHOLD:g} = ${baltimore.THRESHOLD:g}k)")
    t.add_argument("--clip", type=_number_list, metavar="B",
                   help="public clipping bound B on g(z) - g(T), in transformed units (log units with --transform "
                        "log): values further than B from the threshold count as +-B. Choose it from public "
                        "knowledge, about as far as values typically lie from the threshold: a B much wider than "
                        "their spread shrinks the map's signal against the same noise, which the forecast cannot "
                        "see (required with --data; embedded: 1, a factor e on log price)")
    t.add_argument("--transform", choices=["identity", "log"],
                   help="public response transform g (default: identity; embedded: log)")
    h = p.add_argument_group("public privacy target (the mechanisms' own settings follow, by mechanism)")
    h.add_argument("--epsilon", type=float, metavar="EPSILON",
                   help="target epsilon: the mechanism's noise is calibrated to meet it (posterior-sample: the "
                        "smallest r, or with --r the smallest eta; default 5 when --r is not given)")
    h.add_argument("--delta", type=float, metavar="DELTA", help="delta of the certificate (default: min(1e-6, 1/(10 n)); n is "
                   "public under replace-one DP)")


# -- steps -------------------------------------------------------------------------------------

def load_data(args):
    """(TabularData, domain, ResponseMap) from the arguments; raises on bad input."""
    from ..datasets.tabular import load_embedded_baltimore  # pandas: imported where used

    if args.data is None:
        for flag in ("x_col", "y_col", "response_col", "dask", "scheduler", "query", "table"):
            if getattr(args, flag, None) is not None:
                raise InvalidParameterError("--" + flag.replace("_", "-"), "used together with --data", getattr(args, flag))
        data = load_embedded_baltimore()
        domain = baltimore.PUBLIC_BOX if args.box is None else _box(args.box, 2)
        rmap = ResponseMap(threshold=baltimore.THRESHOLD if args.threshold is None else args.threshold,
                           clip=baltimore.CLIP if args.clip is None else args.clip,
                           transform=args.transform or baltimore.TRANSFORM)
    else:
        coords = [args.x_col or "x"] + ([args.y_col] if args.y_col else [])
        if args.box is None:
            raise InvalidParameterError("--box", "given with --data (the public domain: XMIN XMAX [YMIN YMAX]; "
                                        "never computed from the private coordinates)", None)
        for flag in ("threshold", "clip"):
            if getattr(args, flag) is None:
                raise InvalidParameterError("--" + flag, "given with --data (a public value chosen without "
                                            "looking at the data)", None)
        if getattr(args, "crs", None) is not None and degree_names(coords) == "lat, lon":
            raise InvalidParameterError("--x-col/--y-col", "the longitude (east) column as --x-col and the latitude "
                                        "(north) column as --y-col with --crs (and --box XMIN XMAX YMIN YMAX in that "
                                        "order: longitudes, then latitudes)", f"--x-col {coords[0]} --y-col {coords[1]}")
        domain = _box(args.box, len(coords))
        rmap = ResponseMap(threshold=args.threshold, clip=args.clip, transform=args.transform or "identity")
        data = _load_source(args, coords, domain, rmap)
    if getattr(args, "crs", None) is not None:
        if _cluster_wanted(args):
            raise InvalidParameterError("--crs", "left out with --dask/--scheduler (project the coordinates first)",
                                        args.crs)  # public projection to a local metric CRS (privgp.geo)
        from ..geo import project_records

        data, domain, _ = project_records(data, domain, args.crs)
    if data.X.shape[0]:  # (a cluster's pass checked its records where they live)
        domain.check_contains("coordinates", data.X)
        rmap.check(data.response)  # e.g. log of non-positive values: fail before anything is charged
        try:
            check_map_is_possible(data.X, data.response, domain, rmap,
                                  allow_noisy=bool(getattr(args, "allow_noisy", False)))
        except InvalidParameterError as exc:   # walk-through 20: the box the user typed, not only its metres
            if getattr(args, "crs", None) is None or exc.name != "box":
                raise
            typed = " ".join(f"{float(b):g}" for b in args.box)
            raise InvalidParameterError("box", exc.requirement, f"{typed} in {args.crs} (in metres of the local "
                                        f"projection: {exc.value})") from None
    return data, domain, rmap


_LONGITUDE, _LATITUDE = ("lon", "lng", "long", "longitude"), ("lat", "latitude")


def _note_repeated_rows(data) -> None:
    """A note (stderr, the data holder's own) when records repeat exactly: the unit of privacy is a row, so a person
    with k identical rows is protected at about k epsilon (walk-through 15: 1000 rows of 210 sales, released as
    1000 people)."""
    from ..datasets.fingerprint import repeated_records

    repeats, most = repeated_records(data.X, data.response)
    if repeats:
        print(f"privgp: note: {repeats} of the {data.n} records repeat another record exactly (same coordinates and "
              f"response; up to {most} copies of one): the guarantee is per row, so if copies are one person's, "
              f"that person is protected at about {most} x epsilon; give one row per person", file=sys.stderr)


#: a note when the records leave more than this share of the map's cells empty, and more than twice the share records
#: spread over the box would leave by chance (211 uniform records in 40 cells about 0.5%); the embedded sales leave 25% of their 8 x 5 cells empty,
#: and at $50k 20 releases of them overlapped the non-private map by IoU 0.51 where the forecast said 0.68 (audit 18c,
#: docs/runs/forecast-calibration)
EMPTY_CELLS_NOTE = 0.1


def _note_empty_cells(plan, data) -> None:
    """A note (stderr, the data holder's own: nothing of it is published) when the records leave more than
    :data:`EMPTY_CELLS_NOTE` of the map's cells empty: there the map is privacy noise, and the forecast, which
    simulates records spread over the box, does not see. The cells are the noisy grid's own, or for the other
    mechanisms those of the forecast's non-private reference map."""
    import numpy as np

    from ..mechanisms.registered.grid import cell_statistics
    from ..tasks.forecast import reference_settings

    domain = plan.domain
    cells = getattr(plan, "cells", None)
    if not (isinstance(cells, tuple) and len(cells) == domain.dim):
        cells = reference_settings(domain, data.n)[0]
    X = np.asarray(data.X, dtype=float)
    counts = cell_statistics(domain, cells, X, np.zeros(X.shape[0]), exact=False)[1]
    empty, total = int(np.sum(counts == 0)), int(np.size(counts))
    # records spread evenly leave a share exp(-n / cells) empty by chance (red team 19a: 15% of 32 x 32 reference
    # cells for 2 000 uniform records): the note is for more than twice that, and more than a tenth
    by_chance = math.exp(-data.n / total)
    if empty > EMPTY_CELLS_NOTE * total and empty > 2 * by_chance * total:
        print(f"privgp: note: {empty} of the map's {total} cells ({' x '.join(map(str, cells))}) hold none of your "
              f"records ({100 * empty / total:.0f}%; records spread over the box would leave "
              f"{_share_words(by_chance)} empty): there the released map is privacy noise, which the forecast, simulating "
              "records spread over the box, does not see; read only the unhatched areas (this count is yours alone and "
              "outside the guarantee: choose no setting from it)", file=sys.stderr)


#: how the own-records measure is labelled wherever it is printed (red team 19a: it is an exact function of the
#: records, so what is chosen from it is not covered by the certificate)
OWN_RECORDS_LABEL = ("privgp: note (--measure-on-records: read from your records exactly, OUTSIDE THE GUARANTEE: a "
                     "setting or a decision to publish chosen from it is not covered by the certificate; publish none "
                     "of it)")


def _share_words(share: float) -> str:
    """A share as a whole percentage, or "under 1%" (red team 19d: exp(-211/40) = 0.5% read "about 1%")."""
    return "under 1%" if share < 0.01 else f"about {100 * share:.0f}%"


def _note_own_records(own: RecordsCheck | None) -> None:
    """``--measure-on-records``: the plan drawn on the data holder's own records
    (:func:`~privgp.tasks.forecast.records_check`; None where the records were reduced to statistics), on stderr,
    labelled as outside the guarantee (opt-in: what is chosen from it is not covered by the certificate)."""
    if own is None:
        print(f"{OWN_RECORDS_LABEL}: not measured: the records were reduced to per-cell statistics in one pass "
              "(Parquet, a database, a cluster), and no record is kept to draw from", file=sys.stderr)
        return
    print(f"{OWN_RECORDS_LABEL}: {own.words()}", file=sys.stderr)


def degree_names(coordinates) -> str | None:
    """"lon, lat" for 2-D coordinates named like longitude then latitude, "lat, lon" for the reverse, else None."""
    names = [str(c).strip().lower() for c in coordinates]
    if len(names) == 2 and names[0] in _LONGITUDE and names[1] in _LATITUDE:
        return "lon, lat"
    if len(names) == 2 and names[0] in _LATITUDE and names[1] in _LONGITUDE:
        return "lat, lon"
    return None


def _note_coordinates(args, plan, data) -> None:
    """The notes on coordinate columns named like degrees, from their names and the public box (on stderr; a dry run
    prints them too: walk-through 20)."""
    if getattr(args, "crs", None) is None and looks_like_degrees(data.coordinates, plan.domain):
        print("privgp: note: the coordinate columns are named like longitude and latitude; if they are degrees, "
              "without --crs they are taken as planar units (away from the equator a degree of longitude is "
              "shorter than one of latitude, so cells and lengthscales are stretched) and --crs EPSG:4326 "
              "projects them to metres; planar coordinates need nothing", file=sys.stderr)
    elif degree_names(data.coordinates) == "lat, lon":
        print("privgp: note: the x (east) column is named like latitude and the y (north) column like longitude: "
              "the map is drawn with them across and up as given; if they are swapped, give --x-col and --y-col "
              "the other way round (and --box in that order)", file=sys.stderr)


#: on the log scale a clip above this lets values a factor of 1000 either side of the threshold count in full: wider
#: than prices, incomes or concentrations usually spread about a threshold, so a note says what it costs
WIDE_LOG_CLIP = math.log(1000.0)


def wide_clip_note(plan) -> str | None:
    """A note (from the public settings alone) on a clip so wide on the log scale that it most likely was meant in
    the response's own units (walk-through 20: ``--clip 20`` with ``--transform log`` passed the forecast, which assumes
    values fill the clip range, and released noise); None for any other clip. A real run prints it beside the forecast,
    before the charge; a dry run and a ``--json`` run on stderr."""
    rmap = getattr(plan, "response_map", None)
    if not isinstance(rmap, ResponseMap) or rmap.transform != "log" or not rmap.clip > WIDE_LOG_CLIP:
        return None
    return (f"--clip {rmap.clip:g} is in log units (--transform log): values up to a factor of "
            f"{math.exp(min(rmap.clip, 700.0)):.3g} either side of the threshold count in full, and the map's signal is "
            f"your values' log distance from the threshold divided by {rmap.clip:g}, against privacy noise scaled to 1; "
            "the forecast assumes values fill the clip range and cannot see this. A clip of about the log of the factor "
            "values typically differ from the threshold by (1 for a factor 2.7, 2.3 for 10), chosen from public "
            "knowledge, keeps the signal")


def _note_public_settings(plan) -> None:
    """:func:`wide_clip_note` and the plan's measured float-noise leak on stderr (a dry run; a ``--json`` run, whose
    stdout is its JSON; in text a real run prints them beside the forecast, before the charge)."""
    if (note := wide_clip_note(plan)) is not None:
        print(f"privgp: note: {note}", file=sys.stderr)
    if (leak := float_noise_leak(plan)) is not None:
        print(f"privgp: warning: FLOAT NOISE: {leak}", file=sys.stderr)


def _note_wide_budget_delta(budget_delta: float, n: int) -> None:
    """A note (public: the budget's delta and n) where the data set's budget delta is above 1/n: at such a delta a
    budget bounds little, since the same releases spend less epsilon at a larger delta (red team 20b: at 0.999999
    an epsilon-5 release spent "0 of 10")."""
    if budget_delta > 1.0 / n:
        print(f"privgp: note: this data set's budget delta, {_delta_text(budget_delta)}, is above 1/n = {1.0 / n:.3g}: "
              "a guarantee at such a delta may fail for a record outright, and the budget's epsilon bounds little "
              "(its releases spend less epsilon at a larger delta); privgp's default is min(1e-6, 1/(10 n))",
              file=sys.stderr)


def looks_like_degrees(coordinates, domain) -> bool:
    """2-D coordinates named like longitude and latitude (x then y) over a box inside [-180, 180] x [-90, 90]."""
    if degree_names(coordinates) != "lon, lat":
        return False
    (x0, y0), (x1, y1) = domain.lower, domain.upper
    return -180.0 <= x0 and x1 <= 180.0 and -90.0 <= y0 and y1 <= 90.0


def statistics_mechanisms() -> str:
    """The registered mechanisms that can release from per-site statistics reduced in one pass, in words: those
    that always read per-cell statistics, and those whose options decide it (``reads_statistics`` overridden:
    the GP mechanisms, when they snap their inputs to the grid)."""
    mechs = registry()
    always = [n for n, m in mechs.items() if m.reads_cell_statistics]
    some = [n for n, m in mechs.items() if not m.reads_cell_statistics
            and type(m).reads_statistics is not Mechanism.reads_statistics]
    return ", ".join(always) + (f", or {' or '.join(some)} with snapping (as in 2-D by default)" if some else "")


def _cluster_wanted(args) -> bool:
    return getattr(args, "dask", None) is not None or getattr(args, "scheduler", None) is not None


def _reduced(args) -> bool:
    """Whether the release reads per-cell statistics reduced in a pass (a cluster, or the noisy grid from
    Parquet/CSV folders/DuckDB in this process) rather than records held in memory."""
    if _cluster_wanted(args):
        return True
    return (_reads_cells(args) and getattr(args, "crs", None) is None
            and getattr(args, "data", None) is not None and not _single_csv(args))


def _reads_cells(args) -> bool:
    """Whether the chosen mechanism, with these options, releases from per-site statistics (one pass)."""
    name = getattr(args, "mechanism", None)
    if name not in registry():
        return False
    dim = 2 if getattr(args, "y_col", None) is not None or getattr(args, "data", None) is None else 1
    return registry()[name].reads_statistics(mechanism_options(args), dim)


def _single_csv(args) -> bool:
    from ..datasets.sources import is_single_csv

    return is_single_csv(str(args.data)) and getattr(args, "query", None) is None and getattr(args, "table", None) is None


def _load_source(args, coords, domain, rmap):
    """The records of --data: one CSV file read whole (pyarrow.csv); Parquet, folders, globs and DuckDB in
    one checked streaming pass (privgp.datasets.sources); every source the v3 order-independent fingerprint; with a cluster,
    only n and the fingerprint come back here (ReducedData), the statistics follow in _cluster_statistics."""
    from ..datasets import sources
    from ..datasets.batch_memory import keep_freed_memory
    from ..datasets.tabular import check_distinct_columns, load_table

    response = args.response_col or "response"
    check_distinct_columns(coords, response)   # every source, before any is read
    query, table = getattr(args, "query", None), getattr(args, "table", None)
    cluster = _cluster_wanted(args)
    if cluster:
        if not _reads_cells(args):
            raise InvalidParameterError("--dask/--scheduler", f"used with --mechanism {statistics_mechanisms()}: the "
                                        "mechanisms that release from statistics reduced in one pass",
                                        getattr(args, "mechanism", None))
        if args.dask is not None and args.scheduler is not None:
            raise InvalidParameterError("--dask", "left out with --scheduler (one cluster)", args.dask)
    keep_freed_memory()   # this process reads records, simulates the forecast's releases and exits: reuse memory
    if _single_csv(args) and not cluster:
        return load_table(args.data, coords, response)
    parts = sources.resolve(str(args.data), query=query, table=table)
    source = "data source" if parts[0].kind == "duckdb" else str(args.data)
    if not _reduced(args):
        return sources.as_table(sources.scan(parts, coords, response, domain, rmap.apply), coords, response, source)
    # n for the plan: Parquet footers are counted, not read (the one pass of _cluster_statistics reads, checks and
    # fingerprints every record); CSV files and DuckDB queries are read, checked and fingerprinted here
    if cluster:
        with _client(args) as client:
            res = sources.cluster_scan(client, parts, coords, response, domain, rmap.apply, count_only=True)
    else:  # statistics from files in bounded memory, no records kept
        res = sources.scan(parts, coords, response, domain, rmap.apply, keep=False, count_only=True)
    if res.n == 0:
        raise InvalidParameterError("--data", "at least one record", 0)
    return sources.ReducedData(n=res.n, dim=len(coords), coordinates=tuple(coords), response_name=response,
                               source=source, content_digest=res.digest() if res.hashed else None,
                               aliases=res.aliases() if res.hashed else ())


class _client:
    """A distributed.Client for --scheduler ADDR, or on a local cluster for --dask local; closed on exit -- or,
    inside :class:`_cluster_session` (``privgp release``), opened once and shared by both steps of the command."""

    def __init__(self, args, *, shared: bool = True):
        self.args, self.shared = args, shared

    def __enter__(self):
        self.client, self.cluster = None, None    # what __exit__ closes: nothing of a shared session's
        session = getattr(self.args, "_dask_session", None) if self.shared else None
        if session is not None:
            if session.client is None:
                session.client = session.opened.__enter__()
            return session.client
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InvalidParameterError("--dask/--scheduler", "Dask installed (pip install 'privgp[dask]')",
                                        "no distributed module") from None
        if self.args.scheduler is not None:
            try:
                self.client = Client(self.args.scheduler, timeout="20s")
            except (OSError, ValueError, TypeError) as exc:   # unreachable, refused, not an address; TimeoutError too
                raise ClusterError(f"cannot connect to the Dask scheduler at {self.args.scheduler} ("
                                   f"{type(exc).__name__}: {(str(exc).splitlines() or ['no message'])[0]}); "
                                   "nothing was charged") from None
        else:
            import tempfile

            # the workers' scratch space (and Dask's lock files) in a folder of our own, removed on exit
            import dask

            self.scratch = tempfile.TemporaryDirectory(prefix="privgp-dask-")
            with dask.config.set({"temporary-directory": self.scratch.name}):   # the scheduler's too
                self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                            dashboard_address=None, local_directory=self.scratch.name)
            self.client = Client(self.cluster)
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.scratch.cleanup()
        return False


class _cluster_session:
    """One Dask client (and local cluster) for a whole ``privgp release``: the count of the records and their
    reduction share it (a LocalCluster started twice cost seconds); opened at first use, closed on exit."""

    def __init__(self, args):
        self.args, self.client = args, None
        self.opened = _client(args, shared=False)

    def __enter__(self):
        if _cluster_wanted(self.args):
            self.args._dask_session = self
        return self

    def __exit__(self, *exc):
        if getattr(self.args, "_dask_session", None) is self:
            del self.args._dask_session
        if self.client is not None:
            self.opened.__exit__(*exc)
        return False


def _cluster_statistics(args, plan, data):
    """The per-site (sums, counts) of the records by the plan's public rule (``plan.site_rule()``: cells of a
    noisy grid, lattice sites of a snapped posterior-sample release), on the cluster or streamed here; the
    pass checks and fingerprints every record (the count before it may have read only Parquet footers) and must
    find as many records as the release was planned for (and the same, where they were fingerprinted before).
    Returns the release and ``data`` with the fingerprint of the records reduced."""
    from ..datasets import sources
    from ..mechanisms.release import StatisticsRelease

    rule = plan.reduction() if hasattr(plan, "reduction") else plan.site_rule() if hasattr(plan, "site_rule") else None
    if rule is None:
        raise InvalidParameterError("--mechanism", "a plan that releases from per-site statistics", plan.mechanism)
    parts = sources.resolve(str(args.data), query=getattr(args, "query", None), table=getattr(args, "table", None))
    if _cluster_wanted(args):
        with _client(args) as client:
            res = sources.cluster_scan(client, parts, data.coordinates, data.response_name, plan.domain,
                                       plan.response_map.apply, cells=rule)
    else:
        res = sources.scan(parts, data.coordinates, data.response_name, plan.domain, plan.response_map.apply,
                           keep=False, cells=rule)
    if res.n != data.n or data.content_digest not in (None, res.digest()):
        raise InvalidParameterError("--data", "the same records as counted before the plan (did the data "
                                    "change?)", f"{res.n} records, {data.n} before")
    data = dataclasses.replace(data, content_digest=res.digest(), aliases=res.aliases())
    if res.z_range is not None:   # the checks of an in-memory release, from the pass's extents (before the charge)
        check_extents(res.lo, res.hi, res.z_range, res.n, plan.domain, plan.response_map,
                      allow_noisy=bool(getattr(args, "allow_noisy", False)))
    if res.cells is None:  # pragma: no cover - scan(cells=...) always reduces them
        raise InvalidParameterError("--data", "per-cell statistics from the pass", "none")
    if hasattr(rule, "start"):    # the plan's own reduction
        return StatisticsRelease(plan, tuple(res.cells.result())), data
    sums, counts = res.cells.result()
    shape = getattr(plan, "cells", None) or (rule.shape if hasattr(rule, "shape") else (rule.size,))
    return StatisticsRelease(plan, (sums.reshape(shape), counts.reshape(shape))), data








# -- outputs -----------------------------------------------------------------------------------

def certificate_doc(mechanism: str, plan, data, fingerprint, charge, randomness, files, folder: Path | None = None,
                    forecast_: Forecast | None = None) -> dict:
    """certificate.json: public quantities only (no local paths, no statistics of the data). With ``folder``
    (where the outputs were written) it records the sha256 of every other file in ``files``, so that
    ``privgp verify`` detects a swapped output."""
    cert = plan.certificate
    hashes = {} if folder is None else {f: publish.sha256_file(folder / f) for f in files if f != CERTIFICATE}
    return {
        "privgp_version": __version__,
        "mechanism": mechanism,
        "certificate": cert.to_dict(),
        "calibration": getattr(plan, "calibration", None),
        "public_settings": plan.public_settings(),
        "dataset": {"fingerprint": fingerprint, "n": data.n, "dim": data.dim,
                    "coordinates": list(data.coordinates), "response": data.response_name,
                    "source": data.source if data.source.startswith("embedded:") else publish.source_words(data)},
        "ledger": {"entry_id": charge.entry_id, **charge.to_dict()},
        "randomness": randomness,
        "outputs": list(files),
        **({"forecast": forecast_.to_dict()} if forecast_ is not None else {}),
        **({"sha256": hashes} if folder is not None else {}),
        "notes": [
            "The guarantee assumes the domain, threshold, clipping bound and all hyperparameters were chosen "
            "independently of the private data; choosing them on the data needs its own privacy accounting.",
            "Neighbouring datasets: replace one record (n is public).",
            "The number of clipped responses is a statistic of the private data and is not reported.",
            "The fingerprint is a keyed hash (secret key in the ledger file), not a hash of the data.",
        ],
    }


def _summary(mech: Mechanism, plan, data, out: Path, files, charge, ledger, randomness, fingerprint) -> dict:
    cert = plan.certificate
    return {"mechanism": mech.name, "out": str(out), "files": list(files), "epsilon": float(cert.epsilon),
            "delta": float(cert.delta), "n": data.n, "dim": data.dim, **mech.summary(plan),
            "domain": plan.domain.to_dict(), "response_map": plan.response_map.to_dict(),
            "fingerprint": fingerprint, "ledger": str(ledger.path), "entry_id": charge.entry_id,
            "budget_epsilon": charge.budget_epsilon, "budget_delta": charge.budget_delta,
            "spent_epsilon": charge.spent_after.epsilon,
            "remaining_epsilon": remaining_epsilon(charge.budget_epsilon, charge.spent_after.epsilon),
            "randomness": randomness}


def _print_summary(s: dict, mech: Mechanism, plan, data) -> None:
    rm = plan.response_map
    source = " [embedded Baltimore 1978 house sales]" if data.source == "embedded:baltimore" else ""
    lines = [
        f"privgp release ({s['mechanism']}{', chosen by --mechanism auto' if s.get('chosen_by') == 'auto' else ''}) "
        f"from {s['n']} private records ({s['dim']}-D){source}",
        f"  guarantee   ({format_upper(s['epsilon'], 4)}, {format_upper(s['delta'])})-DP for replace-one neighbours"
        + (f"; pure {format_upper(s['target_epsilon'], 4)}-DP (it holds with delta = 0 too)" if s.get("pure_epsilon")
           else ""),
        *mech.summary_lines(plan),
        f"  task        where {data.response_name} > {exact_number(rm.threshold)} (centred on the {rm.transform} "
        f"scale, clipped at +-{exact_number(rm.clip)}); domain {plan.domain.exact_text()}",
        f"  ledger      {s['ledger']}",
        f"              entry {s['entry_id']}; dataset {s['fingerprint'][:16]}: spent epsilon "
        f"{format_upper(s['spent_epsilon'], 4)} of {s['budget_epsilon']:g} (at delta {_delta_text(s['budget_delta'])})",
        f"  outputs     {s['out']}/: " + ", ".join(s["files"]),
    ]
    if s.get("warning"):
        lines.append(f"  WARNING     {s['warning']}")
    if "warning" in s["randomness"]:
        lines.append(f"  randomness  SEEDED (demo): {s['randomness']['warning']}")
    else:
        lines.append("  randomness  fresh OS entropy")
    print("\n".join(lines))


def _delta_text(delta: float) -> str:
    """A budget's delta rounded up (the safe side), but never shown as 1, which no budget is (red team 20b: 0.999999
    read "at delta 1")."""
    shown = format_upper(delta)
    return shown if float(shown) < 1.0 else repr(float(delta))


STAGES = ("load data", "plan and certify", "forecast and check", "charge and sample", "write outputs")

def forecast_line(fc: Forecast) -> str:
    return (f"expected IoU {fc.iou_text()} +- {fc.iou_se:.2f}, RMSE {fc.rmse:.2f} (model units): {fc.words()}")


def forecast_release(plan, *, allow_noisy: bool, quiet: bool = False, reps: int | None = None,
                     chosen_by_auto: bool = False) -> Forecast:
    """The utility forecast of this release (public simulation; nothing private is read), printed (text
    mode) before anything is charged; a map forecast to be mostly noise is refused (exit status 2, the
    forecast in the one-line message) unless ``allow_noisy``. ``chosen_by_auto``: auto chose the settings (the
    refusal then does not suggest it)."""
    from ..mechanisms.interface import for_plan

    fc = forecast(plan, reps=for_plan(plan).forecast_reps if reps is None else reps)
    if not all(math.isfinite(x) for x in (fc.iou, fc.iou_se, fc.agreement, fc.rmse)):
        raise NumericalError("refused before anything was charged: the utility forecast of these public settings is "
                             f"not finite (expected IoU {fc.iou}, agreement {fc.agreement}, RMSE {fc.rmse}); check "
                             "--box, --grid and the mechanism's options")
    if fc.noisy and not allow_noisy:
        raise NoisyReleaseError(
            f"refused before anything was charged: the forecast says this map would be mostly noise (expected IoU "
            f"{fc.iou_text()} +- {fc.iou_se:.2f} < {NOISY_IOU:g}; {fc.words()}{fc.kinds_note()}). What would help: "
            # walk-through 22: auto first (the sparse GP's forecast went from 0.29 at epsilon 2 to 0.33 at 10)
            + ("" if chosen_by_auto else "--mechanism auto (settings tuned for this n and epsilon), or ")
            + "a larger --epsilon or more records; --dry-run prints the forecast of other settings without charging "
            "anything; --allow-noisy releases this map anyway and says so")
    if not quiet:
        print(f"forecast before the charge: {forecast_line(fc)}", flush=True)
        if fc.noisy:
            print(f"warning: {fc.noisy_note()}{fc.kinds_note(refused=False)}", flush=True)
        if (note := wide_clip_note(plan)) is not None:   # review 20c B4: before the charge, not after it
            print(f"note: {note}", flush=True)
        if (leak := float_noise_leak(plan)) is not None:   # red team 20f
            print(f"warning: FLOAT NOISE: {leak}", flush=True)
    return fc


def _dry_run(args, plan, data, fc: Forecast, ledger: Ledger, fingerprint: str, own: RecordsCheck | None) -> int:
    """``--dry-run``: the records were checked and the forecast made; print it, and what a real run would do -- be
    released, be refused as mostly noise, or be refused by the budget (the ledger asked, nothing recorded). ``own``:
    with ``--measure-on-records``, the plan drawn on the records themselves (:func:`~privgp.tasks.forecast.records_check`;
    None for statistics reduced in one pass), the data holder's alone and outside the guarantee: on stderr, or in
    ``--json`` under ``on_your_records``."""
    cert = plan.certificate
    budget = None
    try:
        ledger.charge(fingerprint, plan.event, epsilon=float(cert.epsilon), delta=float(cert.delta),
                      budget_epsilon=args.budget_epsilon, budget_delta=args.budget_delta,
                      default_budget_delta=default_delta(plan.n), dry_run=True)
    except BudgetExceededError as exc:
        budget = str(exc).replace("nothing was charged or written", "the real run would be refused, exit status 3")
    noisy = fc.noisy and not args.allow_noisy
    would = (f"be refused: the forecast says mostly noise{fc.kinds_note()} (exit status 2; --allow-noisy releases "
             "it anyway)" if noisy else "be refused by the budget (exit status 3)" if budget else "be released")
    if args.json:
        print_json({"dry_run": True, "n": data.n, "mechanism": plan.mechanism, "settings": plan.describe(),
                    "forecast": fc.to_dict(),
                    **({"on_your_records": None if own is None else own.to_dict()} if args.measure_on_records else {}),
                    "a_real_run_would": would, "budget": budget})
        return 0
    if args.measure_on_records:
        _note_own_records(own)
    print(f"forecast: {forecast_line(fc)}")
    print(f"dry run: nothing was charged or written ({data.n} records checked; {plan.describe()})")
    print(f"a real run would {would}" + (f": {budget}" if budget and not noisy else ""))
    return 0


def _check_map_size(plan) -> None:
    """--map draws the released map's values into report.html, at most MAX_VALUES of them: a larger grid is refused
    before the charge (the page was written without its map, silently: red team 25)."""
    from .release_map import MAX_VALUES

    sizes = tuple(getattr(plan.grid, "sizes", plan.grid))
    points = math.prod(int(m) for m in sizes)
    if points > MAX_VALUES:
        raise InvalidParameterError("--map", f"a released map of at most {MAX_VALUES} grid points (the page holds "
                                    "its values; a coarser --grid), or left out", f"{points} points "
                                    f"({' x '.join(str(int(m)) for m in sizes)})")


def run(args) -> int:
    mech = get(args.mechanism)
    check_publishable(mech)   # before any data is read
    options = mechanism_options(args)
    mech.check_options(options)   # before any data is read
    if args.map and not args.report:
        raise InvalidParameterError("--map", "left out with --no-report (the map is part of report.html)", True)
    # the picture's process imports matplotlib on another core meanwhile; ended on every way out
    with _cluster_session(args), contextlib.ExitStack() as stack, \
            Progress(len(STAGES), "release", "lines" if args.progress else None) as progress:
        painter = None if args.dry_run else picture_process.claim()   # a dry run draws nothing
        if painter is not None:
            stack.enter_context(painter)
        progress.stage(STAGES[0])
        data, domain, rmap = load_data(args)
        if args.map and domain.dim != 2:
            raise InvalidParameterError("--map", "used with 2-D data (the map to explore is drawn over a plane)",
                                        f"{domain.dim}-D data")
        progress.update(1)
        progress.stage(STAGES[1])
        plan = mech.build(Request(n=data.n, domain=domain, response_map=rmap, epsilon=args.epsilon, delta=args.delta,
                                  grid=args.grid, memory_limit=_memory_limit(args.memory_limit), options=options))
        mech = mech.resolve(plan)   # auto: the chosen mechanism releases, writes, reports and verifies
        check_publishable(mech, plan)   # a plan measured to leak (red team 21c: posterior-sample unsnapped)
        if args.map:
            _check_map_size(plan)
        progress.update(1)
        progress.stage(STAGES[2])
        out = None if args.dry_run else check_output_dir(args.out, args.overwrite, protect=(
            ("ledger", ledger_path(args.ledger)), ("input data", args.data)))
        # every check before the ledger is opened: a refused release creates no file
        reduced = isinstance(data, ReducedData)
        to_release, data = _cluster_statistics(args, plan, data) if reduced else (plan, data)
        # checked once, before the ledger (the map's extent already by load_data)
        records = data if reduced else check_records(plan, data, allow_noisy=args.allow_noisy, map_checked=True)
        if not reduced:
            _note_repeated_rows(data)
        # (a dry run reports the forecast's verdict instead of refusing on it)
        fc = forecast_release(plan, allow_noisy=args.allow_noisy or out is None, quiet=args.json or out is None,
                              reps=mech.forecast_reps, chosen_by_auto=args.mechanism == "auto")
        name = _dataset_id(args.dataset_id) if args.dataset_id is not None else None
        rng, randomness = _randomness(args.seed)
        check_budget(args.budget_epsilon, args.budget_delta)  # a refused budget creates no ledger file
        ledger = Ledger(args.ledger, create_on_charge=True)   # a refused charge writes no file
        records_key = (data.content_digest, getattr(data, "legacy_digests", None), data.aliases)
        fingerprint = (ledger.named_fingerprint(name, records=records_key) if name is not None   # old keys: ledger
                       else ledger.fingerprint_of(*records_key))
        own = None
        if args.measure_on_records and not reduced:
            progress.stage("measure on your records (--measure-on-records)")
            own = records_check(plan, records, fc)
        if out is None:   # --dry-run
            if not reduced:
                _note_empty_cells(plan, data)
            _note_coordinates(args, plan, data)
            _note_public_settings(plan)
            if args.budget_delta is not None:   # review 20e: before the data set's delta is fixed in the ledger
                _note_wide_budget_delta(args.budget_delta, plan.n)
            return _dry_run(args, plan, data, fc, ledger, fingerprint, own)
        progress.update(1)
        progress.stage(STAGES[3])
        # check (everything that can fail), charge (a refusal raises BudgetExceededError -> exit status 3),
        # draw; nothing is written before the charge, and after it only failures the user cannot cause remain
        result = release(to_release, records, ledger, rng, fingerprint=fingerprint, budget_epsilon=args.budget_epsilon,
                         budget_delta=args.budget_delta,
                         label=(args.dataset_id or (data.source if data.source.startswith("embedded:") else "")),
                         mark_completed=False, randomness=randomness)
        if to_release is not plan:
            result = dataclasses.replace(result, plan=plan)
        charge = result.charge
        if not reduced:   # (once charged, as the notes below: a refusal before it stays one line)
            _note_empty_cells(plan, data)
        if args.measure_on_records:
            _note_own_records(own)
        _note_coordinates(args, plan, data)   # (once charged: a user error or a refusal before it stays one line)
        if args.json:   # (in text the forecast's lines hold them, before the charge)
            _note_public_settings(plan)
        _note_wide_budget_delta(charge.budget_delta, plan.n)
        progress.update(1)
        progress.stage(STAGES[4])
        from ..publish import write_outputs  # the writers Python users call (privgp.publish)

        with AtomicOutput(out, args.overwrite) as tmp:
            files = write_outputs(tmp, result, report=args.report, forecast=fc, mechanism=mech.name,
                                  interactive_map=args.map, painter=painter)
        ledger.complete(charge.entry_id)
        progress.update(1)
    summary = _summary(mech, plan, data, Path(args.out), files, charge, ledger, randomness, charge.fingerprint)
    summary["forecast"] = fc.to_dict()
    if fc.noisy:
        summary["warning"] = fc.noisy_note()
    if args.mechanism == "auto":
        summary["chosen_by"] = "auto"
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary, mech, plan, data)
    return 0

