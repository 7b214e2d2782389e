"""The one interface of a releasable mechanism, and the registry that finds every one of them.

A mechanism that ``privgp release --mechanism NAME`` (and ``privgp verify``, ``privgp account
--mechanism``, :func:`privgp.publish.write_release`, the utility study and the release forecast) can
use is ONE class, a subclass of :class:`Mechanism`, defined in a module of the package
:mod:`privgp.mechanisms.registered`. Defining the class registers it (``__init_subclass__``); the
registry imports every module of that package, so nothing else lists mechanisms. The class

* declares its options (:class:`Option`: flag, type, help, default); the framework adds them to the
  command line and refuses, before anything is read, an option the chosen mechanism does not declare;
* builds its plan from PUBLIC inputs only (:meth:`Mechanism.plan` from a :class:`Request`: n, domain,
  response map, target (epsilon, delta), grid, memory limit, its options). The plan (see :class:`Plan`)
  holds the privacy event and certificate, checks the private data before the charge (``check``) and
  draws (``draw``); :func:`privgp.mechanisms.release.release` checks, charges and draws;
* rebuilds that plan from a certificate's recorded public settings (:meth:`Mechanism.rebuild`, what
  ``privgp verify`` compares field by field with the certificate);
* describes what it released: its data files (:meth:`Mechanism.files`, contents only: the output
  layer writes them), its released function(s) on the grid for the picture (:meth:`Mechanism.fields`),
  its words for the report (:meth:`Mechanism.report_text`) and the command's summary.

``docs/architecture.md`` ("Adding a mechanism") walks through a new one.
"""
from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, ClassVar, Protocol

import numpy as np

from ..errors import CertificateMismatch, InvalidParameterError
from ..formatting import exact_number
from ..models.domain import Box
from .release import ResponseMap

#: default grid points along the longest side of the box, by dimension (every mechanism of the command)
DEFAULT_GRID = {1: 201, 2: 121}
#: the memory limit of a plan rebuilt by ``privgp verify`` (it samples nothing: no limit applies)
VERIFY_MEMORY_LIMIT = float(2**62)
#: the command's default memory limit for a plan (GiB on the command line)
DEFAULT_MEMORY_LIMIT = 4 * 2**30


# -- options and requests ------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    """One option of a mechanism: ``--NAME`` on the command line, ``NAME`` (with ``_`` for ``-``) in a
    :class:`Request`'s options. ``default``: the value the mechanism uses when the option is not given
    (None: the mechanism decides, e.g. from the domain). Two mechanisms that accept the same option
    declare the same :class:`Option` object (define it once, import it)."""

    name: str
    help: str
    type: Callable[[str], Any] | None = float
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    nargs: str | None = None
    default: Any = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        return "--" + self.name

    def add_to(self, group: Any) -> None:
        """Add to an argparse group (default None on the command line, so that "not given" is seen)."""
        kw: dict[str, Any] = {"help": self.help, "default": None, "dest": self.dest}
        if self.choices is not None:
            kw["choices"] = list(self.choices)
        elif self.type is not None:
            kw["type"] = self.type
        if self.metavar is not None and self.choices is None:
            kw["metavar"] = self.metavar
        if self.nargs is not None:
            kw["nargs"] = self.nargs
        group.add_argument(self.flag, **kw)


#: GP hyperparameter options several mechanisms accept (one definition each)
KERNEL = Option("kernel", "kernel (default: exponential)", None,
                choices=("exponential", "matern32", "matern52", "squared_exponential"), default="exponential")
LENGTHSCALE = Option("lengthscale", "kernel lengthscale in coordinate units (default: one fifth of the box diameter; "
                     "discretised-gaussian: the point spacing)",
                     float, "LENGTHSCALE")
SIGMA = Option("sigma", "kernel scale sigma (default 0.1, chosen on synthetic data, not on yours)", float, "SIGMA")
CONVERSION = Option("conversion", "RDP -> (epsilon, delta) conversion of the certificate (default: improved)", None,
                    choices=("improved", "mironov"), default="improved")


@dataclass(frozen=True)
class Request:
    """The public inputs of a plan: record count, domain, response map, target (epsilon, delta) (None:
    the mechanism's defaults), grid points along the longest side (None: :data:`DEFAULT_GRID`), the
    memory limit of its sampler, and the mechanism's own options by ``dest`` (absent or None: not given)."""

    n: int
    domain: Box
    response_map: ResponseMap
    epsilon: float | None = None
    delta: float | None = None
    grid: int | None = None
    memory_limit: float = DEFAULT_MEMORY_LIMIT
    options: Mapping[str, Any] = field(default_factory=dict)

    def given(self, dest: str) -> Any:
        """The option as given (None when not given)."""
        return self.options.get(dest)

    def grid_points(self) -> int:
        return DEFAULT_GRID[self.domain.dim] if self.grid is None else int(self.grid)


# -- reading a certificate's public settings (privgp verify) -------------------------------------

def _short(x: Any) -> str:
    import json

    text = json.dumps(x) if not isinstance(x, str) else repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


class Recorded:
    """A certificate.json (as a dict) read for :meth:`Mechanism.rebuild`: its public settings, ``dataset.n``
    and the parsed box, response map and grid. A missing or malformed setting raises
    :class:`~privgp.errors.CertificateMismatch` naming it (a certificate whose settings were deleted cannot
    be rebuilt, so it does not verify)."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc

    def setting(self, key: str, section: str = "public_settings") -> Any:
        sec = self.doc.get(section)
        if not isinstance(sec, dict) or key not in sec:
            raise CertificateMismatch(f"{section}.{key}", "missing: the release cannot be rebuilt from its public "
                                      "settings")
        return sec[key]

    def has(self, key: str) -> bool:
        sec = self.doc.get("public_settings")
        return isinstance(sec, dict) and key in sec

    @property
    def n(self) -> int:
        """The data set's size as the certificate states it (``dataset.n``, public under replace-one DP)."""
        n = self.setting("n", "dataset")
        if isinstance(n, bool) or not isinstance(n, int):
            raise CertificateMismatch("dataset.n", f"an integer record count, found {_short(n)}")
        return n

    def domain(self, key: str = "domain") -> Box:
        d = self.setting(key)
        if not isinstance(d, dict) or "lower" not in d or "upper" not in d:
            raise CertificateMismatch(f"public_settings.{key}", f"a box {{lower, upper}}, found {_short(d)}")
        return Box(tuple(d["lower"]), tuple(d["upper"]))

    def response_map(self) -> ResponseMap:
        """threshold, clip and transform (the rest of the recorded dict is derived and compared)."""
        d = self.setting("response_map")
        if not isinstance(d, dict) or not {"threshold", "clip", "transform"} <= set(d):
            raise CertificateMismatch("public_settings.response_map", f"threshold, clip and transform, found "
                                      f"{_short(d)}")
        return ResponseMap(threshold=d["threshold"], clip=d["clip"], transform=d["transform"])

    def grid_points(self, key: str = "grid") -> int:
        """The grid size argument (points along the longest side) of a recorded per-axis grid ``[m1, m2, ...]``."""
        g = self.setting(key)
        if not isinstance(g, list) or not g or not all(isinstance(x, int) and not isinstance(x, bool) for x in g):
            raise CertificateMismatch(f"public_settings.{key}", f"a list of grid sizes, found {_short(g)}")
        return max(g)


# -- what a mechanism hands to the output layer --------------------------------------------------

@dataclass(frozen=True)
class NpzFile:
    """A ``.npz`` data file: named arrays (numpy.savez)."""

    name: str
    arrays: Mapping[str, Any]


@dataclass(frozen=True)
class CsvFile:
    """A CSV data file: a header row and numeric columns (10 significant digits)."""

    name: str
    header: Sequence[str]
    columns: np.ndarray


@dataclass(frozen=True)
class JsonFile:
    """A JSON data file."""

    name: str
    content: Mapping[str, Any]


OutputFile = NpzFile | CsvFile | JsonFile


#: how many released standard deviations from the threshold a released value must be to count as reliable
RELIABLE_SD = 2.0


#: what a released field's ``sd`` can measure (:attr:`ReleasedField.sd_covers`)
SD_COVERS = ("privacy", "predictive")


def reliable_mask(values: Any, sd: Any) -> np.ndarray:
    """Where a released map (model units, the threshold at 0) is farther than :data:`RELIABLE_SD` of its released sd
    from the threshold: field.csv's and field.npz's ``reliable``, the area the picture leaves unhatched, the GIS
    files' reliable features and band (post-processing of released values)."""
    return np.asarray(np.abs(np.asarray(values, dtype=float)) > RELIABLE_SD * np.asarray(sd, dtype=float))


@dataclass(frozen=True)
class ReleasedField:
    """Released function(s) on the public grid, as a mechanism hands them to the picture and report.

    ``values``: (K, *grid) in model units (the response map's scale: (g(z) - g(T)) / B, threshold 0).
    ``noun``/``plural``: what one of them is, in plain words ("posterior sample path").
    ``band``: optional (lower, upper), each of the grid's shape, model units (drawn in 1-D only),
    described by ``band_label`` (e.g. "mean \u00b1 2 sd")."""

    axes: tuple[np.ndarray, ...]
    values: np.ndarray
    noun: str
    plural: str
    band: tuple[np.ndarray, np.ndarray] | None = None
    #: optional released pointwise standard deviation (grid shape, model units): in 2-D the map marks where
    #: the released value is within RELIABLE_SD sd of the threshold as unreliable (:func:`reliable_mask`) and
    #: draws the boundary there dashed
    sd: np.ndarray | None = None
    #: what ``sd`` measures, for the picture's words (format 6): "privacy" (the noisy grids: the privacy noise's sd
    #: alone) or "predictive" (the DP sparse GP: a model's predictive sd, the privacy noise and the model's own
    #: uncertainty together)
    sd_covers: str = "privacy"
    band_label: str = ""
    #: a sentence the caption adds about how far the picture can be trusted (e.g. one random draw)
    caveat: str = ""

    def __post_init__(self) -> None:
        vals = np.asarray(self.values, dtype=float)
        shape = tuple(len(a) for a in self.axes)
        if vals.ndim == len(shape):
            vals = vals[None]
        if vals.shape[1:] != shape:
            raise InvalidParameterError("values", f"shape (K, {', '.join(map(str, shape))}) on the grid", vals.shape)
        object.__setattr__(self, "values", vals)
        if self.sd_covers not in SD_COVERS:
            raise InvalidParameterError("sd_covers", f"one of {SD_COVERS}", self.sd_covers)

    @property
    def count(self) -> int:
        return int(self.values.shape[0])

    @property
    def dim(self) -> int:
        return len(self.axes)

    def what(self) -> str:
        """'1 posterior sample path' / '5 posterior sample paths'."""
        return f"{self.count} {self.noun if self.count == 1 else self.plural}"


@dataclass(frozen=True)
class ResponseDisplay:
    """How the response is named in pictures and reports: ``label`` ("sale price"), ``unit``
    ("$1,000" or "" when unknown) and ``value_format`` for one value ("${:g}k" or "{:g}")."""

    label: str
    unit: str = ""
    value_format: str = "{:g}"

    def value(self, x: float, number: Callable[[float], str] | None = None) -> str:
        """One value in the response's format; ``number``: how the number itself is written (e.g.
        :func:`privgp.formatting.exact_number`) instead of ``{:g}``'s 6 significant digits."""
        if number is None:
            return self.value_format.format(x)
        return self.value_format.replace("{:g}", "{}").format(number(x))

    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass(frozen=True)
class PictureContext:
    """The public facts a picture and a report state: domain, axis labels, response, response map, guarantee."""

    domain: Box
    axis_labels: tuple[str, ...]
    response: ResponseDisplay
    response_map: ResponseMap
    epsilon: float
    delta: float
    #: a warning every picture states under its title ("" for none), e.g. a map released although its forecast
    #: says mostly noise (:meth:`privgp.tasks.forecast.Forecast.noisy_note`)
    note: str = ""
    #: the unit of the domain's coordinates where privgp knows it ("m": records projected from a CRS), else ""
    domain_unit: str = ""
    #: whether the public domain and the threshold are stated exactly (picture format 4, the report); False: in
    #: ``{:g}``'s 6 significant digits, as pictures of format 3 and earlier state them (red team 25: a UTM box
    #: [4312345, 4312678] read [4.31234e+06, 4.31268e+06])
    exact: bool = True

    def domain_text(self) -> str:
        """The public domain in words, with its unit where known."""
        return (self.domain.exact_text() if self.exact else self.domain.describe()) + \
            (f" {self.domain_unit}" if self.domain_unit else "")

    def value(self, x: float) -> str:
        """A public value in response units (the threshold), exactly where :attr:`exact`."""
        return self.response.value(x, exact_number if self.exact else None)

    def threshold_text(self) -> str:
        return f"{self.response.label} > {self.value(self.response_map.threshold)}"

    def clip_range(self) -> tuple[float, float]:
        """The public clipping range in response units: responses outside it count as its ends."""
        lo, hi = self.response_map.to_response_units([-1.0, 1.0])
        return float(lo), float(hi)


@dataclass(frozen=True)
class MechanismReport:
    """A mechanism's own words for the report (plain text; the renderer escapes it).

    ``released``: one sentence, what was published ("One random map of ... drawn from ...").
    ``how``: a short paragraph, how the release is made and where its protection comes from.
    ``statement``: the exact result the certificate applies (paper, theorem, lemmas).
    ``hyperparameters``: rows (name, value, how it was chosen).
    ``account_command``: ``privgp`` arguments that recompute epsilon from the public settings alone
    (None when no calculator covers the mechanism).
    ``references``: full references of the papers named above."""

    released: str
    how: str
    statement: str
    hyperparameters: tuple[tuple[str, str, str], ...] = ()
    account_command: tuple[str, ...] | None = None
    references: tuple[str, ...] = ()


def chosen_by(value: Any, default: Any) -> str:
    """Who chose a setting, for the report's "how it was chosen" column: privgp (its default) or the data holder."""
    same = value == default or (isinstance(value, float) and isinstance(default, float)
                                and math.isclose(value, default, rel_tol=1e-12))
    return "privgp's default" if same else "set by the data holder"


def file_mismatch(field: str, reason: str) -> CertificateMismatch:
    """``privgp verify``: a released file (``field``: file name or file.key) disagrees with its certificate."""
    return CertificateMismatch(field, reason + " (the released file does not match the certificate)")


def released_array(arrays: Mapping[str, np.ndarray], npz: str, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float array ``key`` of a released .npz with the ``shape`` the plan gives it (else :func:`file_mismatch`)."""
    a = arrays.get(key)
    if a is None:
        raise file_mismatch(f"{npz}.{key}", "missing from the released file")
    if a.shape != tuple(shape) or a.dtype.kind not in "fi":
        raise file_mismatch(f"{npz}.{key}", f"{a.dtype} array of shape {a.shape} where the certificate's settings "
                            f"give numbers of shape {tuple(shape)}")
    out = np.asarray(a, dtype=float)
    if not np.all(np.isfinite(out)):
        raise file_mismatch(f"{npz}.{key}", "values that are not finite (a release never holds them)")
    return out


def grid_axes(domain: Box, sizes: Sequence[int]) -> tuple[np.ndarray, ...]:
    """The public release grid: ``sizes[j]`` equally spaced points from ``domain.lower[j]`` to ``domain.upper[j]``."""
    return tuple(np.linspace(a, b, int(m)) for a, b, m in zip(domain.lower, domain.upper, sizes))


def grid_text(sizes: Sequence[int], sep: str = " x ") -> str:
    """'121 x 61'."""
    return sep.join(map(str, sizes))


# -- the interface -------------------------------------------------------------------------------

class Plan(Protocol):
    """What a mechanism's plan provides (frozen dataclasses in each mechanism's module)."""

    mechanism: str
    domain: Box
    response_map: ResponseMap

    @property
    def event(self) -> Any: ...

    @property
    def certificate(self) -> Any: ...

    def public_settings(self) -> dict: ...

    def check(self, X: Any, y: Any) -> Any: ...

    def draw(self, X: Any, y: Any, rng: np.random.Generator) -> Any: ...


_CLASSES: dict[str, type[Mechanism]] = {}


class Mechanism(ABC):
    """One releasable mechanism (see the module docstring). Subclass it in a module of
    :mod:`privgp.mechanisms.registered`; defining the class registers it under :attr:`name`."""

    #: ``--mechanism NAME``; also the certificate's ``mechanism`` label
    name: ClassVar[str]
    #: one line for ``privgp release --help``
    help: ClassVar[str]
    #: the options it accepts beyond the common ones (data, box, task, --epsilon, --delta, --grid, ...)
    options: ClassVar[tuple[Option, ...]] = ()
    #: the plan class it builds (None: it builds another mechanism's plan, as ``auto`` does)
    plan_type: ClassVar[type | None] = None
    #: the picture's file name
    picture: ClassVar[str] = "excursion.png"
    #: epsilon when --epsilon is not given
    default_epsilon: ClassVar[float] = 5.0
    #: its private input is per-cell statistics, which --dask/--scheduler and file sources reduce in a pass
    reads_cell_statistics: ClassVar[bool] = False
    #: simulated releases per synthetic family in the release forecast (cheap mechanisms afford more)
    forecast_reps: ClassVar[int] = 2
    #: scored by the utility study (``privgp experiment utility``) with its default plan
    in_utility_study: ClassVar[bool] = True
    #: position in listings (help, tables) and in the utility study, which draws its releases in this order
    #: (a new order changes its random draws)
    order: ClassVar[int] = 100
    #: why a release of it would not hold its certificate as computed ("" : it does); such a mechanism is planned,
    #: accounted and simulated but never released (:func:`check_publishable`)
    not_publishable: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or "name" not in cls.__dict__:
            return
        if not cls.__dict__.get("__doc__") and isinstance(cls.__dict__.get("help"), str):
            # a mechanism without a docstring is described in the words of its --help line
            cls.__doc__ = f"``privgp release --mechanism {cls.name}``: {cls.help}."
        old = _CLASSES.get(cls.name)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise TypeError(f"two mechanisms named {cls.name!r}: {old.__module__}.{old.__qualname__} and "
                            f"{cls.__module__}.{cls.__qualname__}")
        _CLASSES[cls.name] = cls

    # -- what every mechanism implements --------------------------------------------------------------

    @abstractmethod
    def plan(self, request: Request) -> Any:
        """The plan for these public inputs (calibrated and certified; raises on bad settings)."""

    @abstractmethod
    def rebuild(self, recorded: Recorded) -> Any:
        """The plan rebuilt from a certificate's public settings through the same plan function (n from
        ``dataset.n``; calibrations run again). ``privgp verify`` compares it with the certificate."""

    @abstractmethod
    def files(self, released: Any, plan: Any, coordinates: Sequence[str]) -> list[OutputFile]:
        """Its data files (contents; the output layer writes them)."""

    #: the .npz of its data files, holding the released arrays (None: no .npz)
    npz: ClassVar[str | None] = None
    #: the names of every data file :meth:`files` may write (``privgp verify`` requires those of a release hashed,
    #: and refuses another mechanism's)
    data_files: ClassVar[tuple[str, ...]] = ()

    def released_from_arrays(self, arrays: dict[str, np.ndarray], plan: Any) -> Any:
        """The released object rebuilt from the arrays of its :attr:`npz` under ``plan`` (public settings only: a
        map is recomputed from the released statistics where it is their public post-processing), so that
        ``privgp verify`` can compare every data file beside a certificate with what :meth:`files` writes from
        it; raises :func:`file_mismatch` when the arrays cannot be this plan's release. None: not
        supported (the mechanism's files are hashed only)."""
        return None

    @abstractmethod
    def fields(self, released: Any, plan: Any) -> ReleasedField | None:
        """Its released function(s) on the grid in model units, for the picture (None: no map released)."""

    @abstractmethod
    def report_text(self, plan: Any, ctx: PictureContext) -> MechanismReport:
        """Its words for report.html (public facts only)."""

    @abstractmethod
    def summary(self, plan: Any) -> dict:
        """Its settings for the command's ``--json`` summary."""

    @abstractmethod
    def summary_lines(self, plan: Any) -> list[str]:
        """Its lines of the command's text summary ("  mechanism   ...", "  settings    ...")."""

    # -- provided ---------------------------------------------------------------------------------------

    def check_options(self, options: Mapping[str, Any], *, python: bool = False) -> None:
        """Refuse a given option (not None) that this mechanism does not declare, naming who accepts it (in the
        command's words, or with ``python`` in :func:`plan`'s: the keyword and ``privgp.plan("NAME", ...)``)."""
        mine = {o.dest for o in self.options}
        for dest, value in options.items():
            if value is not None and dest not in mine:
                owners = [m.name for m in registry().values() if dest in {o.dest for o in m.options}]
                flag = dest if python else "--" + dest.replace("_", "-")

                def named(name: str) -> str:
                    return f'privgp.plan("{name}", ...)' if python else f"--mechanism {name}"

                if not owners:   # no mechanism has it: a misspelling, most likely
                    raise InvalidParameterError(flag, f"an option of a mechanism ({named(self.name)} takes: "
                                                f"{', '.join(sorted(mine)) or 'none'})", value)
                raise InvalidParameterError(flag, f"used with {' or '.join(named(o) for o in owners)} only "
                                            f"(not {self.name})", value)

    def build(self, request: Request) -> Any:
        """:meth:`plan` after refusing options this mechanism does not accept (the framework's check)."""
        self.check_options(request.options)
        return self.plan(request)

    def option(self, request: Request, dest: str) -> Any:
        """The option's value: as given, else its declared default."""
        value = request.given(dest)
        if value is not None:
            return value
        for o in self.options:
            if o.dest == dest:
                return o.default
        raise KeyError(dest)

    def epsilon(self, request: Request) -> float:
        """The target epsilon: as requested (finite and > 0, one message whatever the bad value), else the default."""
        if request.epsilon is None:
            return self.default_epsilon
        from .. import validation as v

        return v.positive("epsilon", request.epsilon)

    def reads_statistics(self, options: Mapping[str, Any], dim: int) -> bool:
        """Whether its plan for these options releases from per-site statistics reduced in one pass
        (``site_rule()`` and ``draw_from_statistics``), so that ``--dask``/``--scheduler`` and file sources can
        reduce the records where they live (default: :attr:`reads_cell_statistics`)."""
        return self.reads_cell_statistics

    def resolve(self, plan: Any) -> Mechanism:
        """The mechanism that releases, writes, reports and verifies ``plan`` (itself; ``auto`` names the
        chosen one)."""
        return self


@lru_cache(maxsize=1)
def _discover() -> tuple[str, ...]:
    from . import registered

    for mod in pkgutil.iter_modules(registered.__path__):
        importlib.import_module(f"{registered.__name__}.{mod.name}")
    return tuple(_CLASSES)


def registry() -> dict[str, Mechanism]:
    """Every mechanism, by name, in listing order (imports the modules of :mod:`privgp.mechanisms.registered`)."""
    _discover()
    classes = sorted(_CLASSES.values(), key=lambda c: (c.order, c.name))
    return {c.name: _instance(c) for c in classes}


@cache
def _instance(cls: type[Mechanism]) -> Mechanism:
    return cls()


def get(name: str, parameter: str = "--mechanism") -> Mechanism:
    """The mechanism called ``name``; an unknown name is an InvalidParameterError naming ``parameter``."""
    mechs = registry()
    if name not in mechs:
        raise InvalidParameterError(parameter, f"one of {', '.join(mechs)}", name)
    return mechs[name]


def for_plan(plan: Any) -> Mechanism:
    """The mechanism whose plan ``plan`` is (by its plan class)."""
    for mech in registry().values():
        if mech.plan_type is not None and type(plan) is mech.plan_type:
            return mech
    raise InvalidParameterError("plan", "a plan of a registered mechanism (privgp.mechanisms.registered)",
                                type(plan).__name__)


def all_options() -> dict[str, tuple[Option, list[str]]]:
    """Every option of every mechanism, by dest: (the option, the names of the mechanisms accepting it).
    Two mechanisms declaring different options under one name is an error."""
    out: dict[str, tuple[Option, list[str]]] = {}
    for mech in registry().values():
        for o in mech.options:
            if o.dest in out and out[o.dest][0] != o:
                raise TypeError(f"option {o.flag} of {mech.name} differs from the one of {out[o.dest][1]}: declare "
                                "one Option and import it")
            out.setdefault(o.dest, (o, []))[1].append(mech.name)
    return out


def plan(mechanism: str, n: int, domain: Box, response_map: ResponseMap, *, epsilon: float | None = None,
         delta: float | None = None, grid: int | None = None, memory_limit: float = DEFAULT_MEMORY_LIMIT,
         **options: Any) -> Any:
    """The plan ``privgp release --mechanism MECHANISM`` makes for these public inputs: ``options`` are the
    mechanism's own (``cells=10``, ``lengthscale=0.2``, ...; an option it does not accept is an error).
    ``mechanism="auto"`` lets privgp choose from n, epsilon, delta and the box. Then
    ``privgp.release(plan, privgp.records(...), privgp.Budget(...))`` checks, charges and draws."""
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.Box(lower, upper) of the public domain, e.g. "
                                    "privgp.Box((xmin, ymin), (xmax, ymax))", type(domain).__name__)
    if not isinstance(response_map, ResponseMap):
        raise InvalidParameterError("response_map", "a privgp.ResponseMap(threshold, clip[, transform])",
                                    type(response_map).__name__)
    if domain.dim not in DEFAULT_GRID:
        raise InvalidParameterError("domain", "a box of 1 or 2 coordinates (privgp maps responses along a line or "
                                    "over a plane)", f"{domain.dim} coordinates")
    mech = get(mechanism, "mechanism")
    mech.check_options(options, python=True)      # in Python's words (build checks again, in the command's)
    return mech.build(Request(n=n, domain=domain, response_map=response_map, epsilon=epsilon, delta=delta, grid=grid,
                              memory_limit=memory_limit, options=options))


def mechanism_names() -> list[str]:
    """The names of every registered mechanism (what ``--mechanism`` accepts)."""
    return list(registry())


def simulation_twin(plan: Any) -> Any:
    """The plan a simulation on public synthetic data draws with (the forecast, the utility and comparison studies):
    ``plan.simulation()`` where the plan offers one -- the same noise law without the exact sampler's cost (the sparse
    GP: float Gaussian noise of the very stds its discrete noise has, on unrounded statistics) -- else the plan.
    Never a plan to release with."""
    return plan.simulation() if hasattr(plan, "simulation") else plan


def float_noise_leak(plan: Any) -> str | None:
    """What a plan's release leaks beyond its certificate in floating point, measured (the plan's
    ``float_noise_leak()``; red team 20f), or None."""
    leak = plan.float_noise_leak() if hasattr(plan, "float_noise_leak") else None
    return leak or None


def check_publishable(mech: Mechanism, plan: Any = None) -> None:
    """Refuse (before anything is read or charged) a release by a mechanism whose certificate does not hold as computed
    (:attr:`Mechanism.not_publishable`), or of a plan that says why it may not be released (its ``unpublishable()``:
    e.g. a sparse-GP plan drawing float noise, which only rebuilds an earlier certificate or simulates; red team 21a)."""
    if mech.not_publishable:
        raise InvalidParameterError("mechanism", f"a mechanism whose certificate holds as computed ({mech.name}: "
                                    f"{mech.not_publishable}; nothing was charged)", mech.name)
    why = plan.unpublishable() if plan is not None and hasattr(plan, "unpublishable") else None
    if why:
        raise InvalidParameterError("plan", f"a plan whose certificate holds as computed ({why}; nothing was charged)",
                                    type(plan).__name__)
