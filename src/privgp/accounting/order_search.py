"""Minimisation over the Rényi order alpha, vectorised over many settings at once.

Any order gives a valid bound, so the search may be approximate; what must hold is that the
reported value is the objective evaluated *at the reported alpha* (it is: the minimiser returns
the objective value it computed at the alpha it returns, never an interpolation).

Search coordinate. Orders are written alpha = 1 + (alpha_max - 1) sigmoid(t). For t -> -inf this
is log-uniform in alpha - 1 (alpha - 1 ~ (alpha_max - 1) e^t), for t -> +inf it is log-uniform in
the distance alpha_max - alpha, so one coordinate resolves both ends of the admissible range
1 < alpha < alpha_max, whatever its width. The range of t reaches down to alpha - 1 = ALPHA_M1_MIN
(or further when alpha_max is close to 1) and up to a relative distance e^-T_HI from alpha_max.
When alpha_max = inf, alpha = 1 + e^t on a wide log range. The search evaluates a grid of t, then
refines inside the two cells around the best grid point (all settings in lock-step): golden-section
steps for large batches (one order per setting per call), zoom rounds of many orders per call for a
few settings (where the per-call overhead dominates). For a unimodal objective the minimiser stays
bracketed, so the result is the exact minimum up to the final bracket width (at most 1e-5 of two
grid cells, i.e. below 1e-4 in t).

Large batches of settings whose objective can be evaluated for any subset of them (the accountant's
``EventBatch`` of one event type; argument ``rows``) take a cheaper path (2026-11-27, issue 30): a grid of
BRENT_GRID = 9 points, then Brent's method (parabolic steps where they are trusted, golden-section steps
elsewhere) until each setting's bracket is below 2 BRENT_TOL = 2e-5 in t. Brent's stopping test is made before
each step, and the settings found are dropped from the calls once they are a quarter of them. The batch is split
into up to MAX_THREADS parts searched in threads; in one thread, it is searched in parts of at most BRENT_PART
settings (smaller temporaries, which the allocator reuses instead of faulting them in again). About
18-19 objective evaluations per setting instead of 43; against the golden-section search on 2 x 10^5 random
settings the result was lower (tighter) or within 1e-8 relative of it, and within 2e-6 of a dense grid. Each
setting's search depends on that setting alone, so the result is the same to the bit however the batch is split,
and the same as Brent's method run for that setting alone in plain floats (tests/accounting/test_order_search.py).
Certificates of one setting use the zoom rounds, as before.
"""
from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from ..errors import NumericalError
from ..validation import all_true, any_true

ALPHA_M1_MIN = 1e-10           # smallest alpha - 1 searched (unless alpha_max - 1 is smaller still)
T_LO_MIN = 20.0                # at least sigmoid(-20) = 2e-9 of the range at the lower end
T_HI = 30.0                    # up to alpha_max - alpha = e^-30 (alpha_max - 1)
LOG_AM1_RANGE = (-23.0, 23.0)  # alpha - 1 in [1e-10, 1e10] when alpha_max = inf
GRID = 17
GOLDEN_ITERATIONS = 24
_GOLD = (np.sqrt(5.0) - 1.0) / 2.0
ZOOM_MAX_SETTINGS = 64     # at most this many settings: zoom rounds (few calls), else golden section
ZOOM_POINTS = 41
ZOOM_ROUNDS = 4            # final bracket (2/42)^4 = 5e-6 of two grid cells (golden: 0.618^24 = 1e-5)
BRENT_GRID = 9             # grid of a large batch's search given ``rows`` (then Brent's method)
BRENT_TOL = 1e-5           # Brent's tolerance in t: each setting stops once its bracket is below 2 BRENT_TOL (+ 2 BRENT_TOL)
BRENT_ITERATIONS = 60      # at most (golden-section steps alone need about 30 from the grid's bracket)
THREAD_MIN_SETTINGS = 16384  # settings per thread at least (with fewer, the threads' contention for the GIL costs more)
BRENT_PART = 25000         # settings searched together at most, where the search runs in one thread
PARTS_IN_THREADS = False   # whether each thread's share is searched in parts too (measured slower: _brent_in_parts)
MAX_THREADS = 2


_INDEX_ABOVE = 1024   # arrays of more values than this select scattered entries by index, not by mask


def _alphas(t: np.ndarray, alpha_max: np.ndarray, width: np.ndarray | None = None) -> np.ndarray:
    """Map search coordinates t to orders (see the module docstring). ``width``: alpha_max - 1 where the caller has it
    and every alpha_max is finite."""
    # sigmoid(t), no overflow; below t = -20 as e^t / (1 + e^t) (the tanh form cancels there and is exactly 0
    # below about -37, so orders closer to 1 than 1e-16 (alpha_max - 1) were out of reach)
    beta = 0.5 * (1.0 + np.tanh(0.5 * t))
    low = t < -20.0
    if any_true(low):
        if t.size <= _INDEX_ABOVE:          # few orders: the mask (fewer numpy calls)
            e = np.exp(np.minimum(t, -20.0))
            beta = np.where(low, e / (1.0 + e), beta)
        else:                               # many: by index (the low orders are few and scattered)
            beta = np.ascontiguousarray(beta)
            at = np.flatnonzero(low)
            e = np.exp(np.ravel(t)[at])
            beta.reshape(-1)[at] = e / (1.0 + e)
    if width is not None:
        return 1.0 + beta * width
    finite = np.isfinite(alpha_max)
    with np.errstate(over="ignore", invalid="ignore"):
        a_fin = 1.0 + beta * np.where(finite, alpha_max - 1.0, 1.0)
        a_inf = 1.0 + np.exp(np.minimum(t, 700.0))
    return np.where(finite, a_fin, a_inf)


def search_range(alpha_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-setting range [lo, hi] of the search coordinate t."""
    finite = np.isfinite(alpha_max)
    width = np.where(finite, alpha_max - 1.0, 1.0)     # > 0 (alpha_max > 1 is checked first): no floating-point error
    lo_fin = -np.maximum(T_LO_MIN, np.log(width / ALPHA_M1_MIN))
    lo = np.where(finite, lo_fin, LOG_AM1_RANGE[0])
    hi = np.where(finite, T_HI, LOG_AM1_RANGE[1])
    return lo, hi


def minimize_over_alpha(objective: Callable[[np.ndarray], np.ndarray], alpha_max: ArrayLike,
                        *, grid: int = GRID, iterations: int = GOLDEN_ITERATIONS,
                        rows: Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]] | None = None,
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ``objective(alpha)`` over 1 < alpha < alpha_max, elementwise over settings.

    ``objective`` receives alpha of shape (S, G) (S settings, G candidate orders per setting) and
    returns values of the same shape (+inf where inadmissible). alpha_max has shape (S,) (inf
    allowed). Returns (alpha_best, value_best), each of shape (S,); value_best is the objective at
    alpha_best as computed during the search (the best of every order evaluated).

    Search: a grid of ``grid`` points in the coordinate t over the whole range, then inside the two
    grid cells around the best grid point either golden-section search (more than
    ZOOM_MAX_SETTINGS settings: ``iterations`` steps, each one objective call for all settings at
    once; the bracket shrinks by 0.618 per step) or ZOOM_ROUNDS zoom rounds of ZOOM_POINTS orders. For a unimodal
    objective this converges to the exact minimiser; for any objective the result is the best order
    evaluated, so the bound is valid whatever the shape.

    ``rows(index)`` (optional; ``index`` an integer array of settings): the objective of those settings
    alone. Given it, a batch of more than ZOOM_MAX_SETTINGS settings is searched by :func:`_brent_search`
    instead of golden section: a grid of BRENT_GRID points, then Brent's method in the bracket, each
    setting dropped from the calls once its bracket is below 2 BRENT_TOL in t (``grid`` and ``iterations``
    apply to the other searches only); batches of at least 2 THREAD_MIN_SETTINGS settings are split into
    contiguous parts searched in threads (numpy releases the GIL; :func:`search_threads`); a batch searched in one
    thread is searched in parts of at most BRENT_PART settings (:func:`_brent_in_parts`). Each setting's
    search depends on that setting alone, so the result is the same to the bit however the batch is split
    (tests/accounting/test_order_search.py).
    """
    alpha_max = np.atleast_1d(np.asarray(alpha_max, dtype=float))
    if any_true(~(alpha_max > 1.0)):
        raise NumericalError("alpha_max must exceed 1 for every setting")
    S = alpha_max.shape[0]
    if S <= ZOOM_MAX_SETTINGS or rows is None:
        return _search(objective, alpha_max, grid, iterations, S <= ZOOM_MAX_SETTINGS)
    threads = max(1, min(search_threads(), S // THREAD_MIN_SETTINGS))
    if threads == 1:
        return _brent_in_parts(rows, alpha_max, np.arange(S))
    err = np.geterr()   # numpy's error handling is per thread: the caller's holds in the search's threads too

    search = _brent_in_parts if PARTS_IN_THREADS else _brent_search

    def part(idx):
        with np.errstate(**err):
            return search(rows, alpha_max, idx)

    # each thread runs in a copy of the caller's context (context variables, e.g. the composition rule in force)
    jobs = [(contextvars.copy_context(), idx) for idx in np.array_split(np.arange(S), threads)]
    with ThreadPoolExecutor(threads) as pool:
        done = list(pool.map(lambda job: job[0].run(part, job[1]), jobs))
    return np.concatenate([a for a, _ in done]), np.concatenate([v for _, v in done])


def search_threads() -> int:
    """Threads of a large batch's search: the CPUs this process may use, at most MAX_THREADS, and at most
    OMP_NUM_THREADS where that is set to a positive integer (the usual limit on a process's compute threads;
    privgp's own worker processes set it to 1, so a sweep's workers do not multiply their threads)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        cpus = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    omp = int(limit) if limit.isdigit() and int(limit) > 0 else MAX_THREADS
    return max(1, min(MAX_THREADS, cpus, omp))


_ABOVE_ONE = np.nextafter(1.0, 2.0)   # the smallest order a search evaluates


def _evaluator(objective, alpha_max):
    """evaluate(t) -> (alpha, objective(alpha)) for search coordinates t of shape (S, G), alpha in the open
    interval (1, alpha_max) (see :func:`_alphas`); NaN raises."""
    upper = np.nextafter(alpha_max, 1.0)[:, None]
    lower = _ABOVE_ONE
    amax_col = alpha_max[:, None]
    width = amax_col - 1.0 if all_true(np.isfinite(alpha_max)) else None   # made once, not at every call

    def evaluate(t):
        a = np.minimum(np.maximum(_alphas(t, amax_col, width), lower), upper)
        vals = np.asarray(objective(a), dtype=float)
        if any_true(np.isnan(vals)):
            raise NumericalError("objective returned NaN during the search over alpha")
        return a, vals
    return evaluate


@lru_cache(maxsize=8)
def _grid_steps(grid: int) -> np.ndarray:
    """``np.linspace(0, 1, grid)``, made once per grid size (read-only)."""
    steps = np.linspace(0.0, 1.0, grid)
    steps.flags.writeable = False
    return steps


def _grid_points(lo: np.ndarray, hi: np.ndarray, grid: int) -> np.ndarray:
    """``grid`` evenly spaced search coordinates from lo to hi per setting, shape (settings, grid)."""
    return lo[:, None] + (hi - lo)[:, None] * _grid_steps(grid)[None, :]


def _grid_stage(evaluate, alpha_max, grid):
    """The grid of ``grid`` points over each setting's whole range of t: (t, alpha, values, argmin, lo, hi), the
    arrays of shape (settings, grid)."""
    lo, hi = search_range(alpha_max)
    t = _grid_points(lo, hi, grid)
    alpha, vals = evaluate(t)
    return t, alpha, vals, np.argmin(vals, axis=1), lo, hi


def _grid_by_rows(evaluate, alpha_max, grid):
    """:func:`_grid_stage` one grid point per call (contiguous arrays of one order per setting: faster for many
    settings): (lo, hi - lo, alpha, values, argmin), alpha and values of shape (grid, settings), the same numbers.
    Grid point j of a setting is lo + (hi - lo) steps[j] (:func:`_grid_points`; steps: :func:`_grid_steps`), made
    one row at a time, not kept."""
    lo, hi = search_range(alpha_max)
    span, steps = hi - lo, _grid_steps(grid)
    alpha, vals = np.empty((grid, lo.shape[0])), np.empty((grid, lo.shape[0]))
    for j in range(grid):
        a_j, v_j = evaluate((lo + span * steps[j])[:, None])
        alpha[j], vals[j] = a_j[:, 0], v_j[:, 0]
    return lo, span, alpha, vals, np.argmin(vals, axis=0)


def _no_order_found(best_a, best_v, alpha_max):
    """Settings where every candidate was +inf keep alpha = a valid order in range with value inf."""
    none = ~np.isfinite(best_v)
    if any_true(none):
        best_a = np.where(none, np.where(np.isfinite(alpha_max), 1.0 + 0.5 * (alpha_max - 1.0), 2.0), best_a)
    return best_a


def _search(objective, alpha_max, grid, iterations, zoom):
    """:func:`minimize_over_alpha` without ``rows`` (``zoom``: the search for few settings)."""
    evaluate = _evaluator(objective, alpha_max)
    t, alpha, vals, idx, lo, hi = _grid_stage(evaluate, alpha_max, grid)
    rows = np.arange(alpha_max.shape[0])
    best_v = vals[rows, idx]
    best_a = alpha[rows, idx]
    width = (hi - lo) / (grid - 1)
    centre = t[rows, idx]
    a = np.maximum(centre - width, lo)[:, None]
    b = np.minimum(centre + width, hi)[:, None]
    if zoom:
        best_a, best_v = _zoom(evaluate, a, b, best_a, best_v)
    else:
        best_a, best_v = _golden(evaluate, a, b, best_a, best_v, iterations)
    return _no_order_found(best_a, best_v, alpha_max), best_v


_CGOLD = (3.0 - np.sqrt(5.0)) / 2.0    # 1 - 0.618...: Brent's golden-section step


def _mask_into(cond: np.ndarray, out: np.ndarray) -> np.ndarray:
    """All bits set where ``cond``, none elsewhere, written into the int64 array ``out`` (for :func:`_pick_into`)."""
    return np.negative(cond.view(np.int8), out=out, casting="unsafe")   # -1 where true: every bit set


def _mask(cond: np.ndarray) -> np.ndarray:
    """:func:`_mask_into` a new array (faster than ``np.negative(..., dtype=np.int64)``)."""
    return _mask_into(cond, np.empty(cond.shape, dtype=np.int64))


def _pick_into(mask: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray, work: np.ndarray) -> np.ndarray:
    """np.where(cond, a, b) for float arrays of one shape, ``mask = _mask(cond)``: the same bits, without a branch
    per element (about twice as fast as np.where where ``cond`` is unpredictable, as in Brent's updates), written into
    ``out`` (``a`` or ``b`` themselves allowed) with the int64 array ``work``, which must not share memory with ``a``, ``b``
    or ``mask`` (it may be ``out``'s where ``out`` is neither ``a`` nor ``b``)."""
    bits = b.view(np.int64)
    np.bitwise_xor(a.view(np.int64), bits, out=work)
    np.bitwise_and(work, mask, out=work)
    np.bitwise_xor(work, bits, out=out.view(np.int64))
    return out


def _pick(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`_pick_into` a new array."""
    out = np.empty_like(b)
    return _pick_into(mask, a, b, out, out.view(np.int64))


_SIGN_BIT = np.int64(-2 ** 63)
_TOL1_BITS = np.array(BRENT_TOL).view(np.int64)[()]


def _tol1_signed(y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """np.copysign(BRENT_TOL, y) from the bits (y's sign bit on BRENT_TOL's), written into the float array ``out`` (``y``
    itself allowed): the same bits, NaN included, by two vectorised integer operations instead of numpy's scalar
    copysign loop."""
    bits = out.view(np.int64)
    np.bitwise_and(y.view(np.int64), _SIGN_BIT, out=bits)
    np.bitwise_or(bits, _TOL1_BITS, out=bits)
    return out


class _Work:
    """The arrays one lock-step Brent iteration of n settings works in (:func:`_brent_done`, :func:`_brent_step`): every
    temporary of the settings' size is written into one of them, so that an iteration allocates nothing of that size
    but what the objective does. Why (issue 30): a step that allocated its some forty temporaries (200 kB each for
    25 000 settings) freed them again at the top of the heap, which glibc handed back to the system and the next step
    faulted in again; reused, the arrays also stay in the cache. Same operations on the same numbers, so the same
    bits; the times and page faults are in BENCHMARKS.md ("Brent's step in place")."""

    def __init__(self, n: int):
        self.xm = np.empty(n)                                     # the bracket's middle (kept for the step)
        self.f = [np.empty(n) for _ in range(7)]
        self.i = [np.empty(n, dtype=np.int64) for _ in range(5)]
        self.c = [np.empty(n, dtype=bool) for _ in range(5)]


def _brent_in_parts(rows, alpha_max, index):
    """:func:`_brent_search` of the settings ``index`` in equal contiguous parts of at most BRENT_PART settings, one
    after the other (the same bits: each setting's search depends on that setting alone). Why: the search's
    temporaries are then at most 200 kB each, which the allocator keeps and reuses; those of 10^5 settings (800 kB)
    go back to the operating system when freed and are faulted in again (7 000-14 000 page faults per 10^5 settings,
    against 0-5 000 in parts). Measured on this machine class: 0.91-0.96 of the time of one part (five runs of
    ``benchmarks/bench_brent_parts.py``, ``benchmarks/logs/issue30_brent_parts.txt``; 0.98 and 1.03 in two runs before,
    in a noisier phase). Smaller parts cost more in numpy's per-call overhead than they save; in two threads (each
    thread's share 5 x 10^4 settings) parts were 1.02x the CPU and 1.04x the wall time of whole shares
    (``--threads 2``, ``issue30_brent_parts_threads.txt``), so threads search their share whole (PARTS_IN_THREADS)."""
    parts = -(-index.shape[0] // BRENT_PART)
    if parts <= 1:
        return _brent_search(rows, alpha_max, index)
    done = [_brent_search(rows, alpha_max, idx) for idx in np.array_split(index, parts)]
    return np.concatenate([a for a, _ in done]), np.concatenate([v for _, v in done])


def _brent_search(rows, alpha_max, index):
    """The search of the settings ``index`` (integer array) of a large batch: a grid of BRENT_GRID points,
    then Brent's method (R. P. Brent, *Algorithms for minimization without derivatives*, 1973, ch. 5:
    parabolic interpolation through the three best points, a golden-section step where the parabola's step
    is not trusted) in the two grid cells around the best grid point, in lock-step. A setting is done once
    its bracket is below 2 BRENT_TOL (Brent's test) and from then on evaluated at its best point only, which
    changes nothing of it; the done settings are dropped from the calls once they are a quarter of them.
    Brent's x is always the best order evaluated, so (alpha, value) at x is returned, the value as computed."""
    amax = alpha_max[index]
    evaluate = _evaluator(rows(index), amax)
    lo, span, alpha, vals, idx = _grid_by_rows(evaluate, amax, BRENT_GRID)
    k = np.arange(index.shape[0])
    il, ir = np.maximum(idx - 1, 0), np.minimum(idx + 1, BRENT_GRID - 1)
    steps = _grid_steps(BRENT_GRID)
    a, x, b = (lo + span * steps[j] for j in (il, idx, ir))  # the bracket a <= x <= b, f(x) the smallest seen
    # the grid's entries by flat index into the (grid, settings) arrays (faster than indexing by two arrays)
    flat_vals, at_x = vals.reshape(-1), idx * k.shape[0] + k
    fx, ax = flat_vals[at_x], alpha.reshape(-1)[at_x]
    fl, fr = flat_vals[il * k.shape[0] + k], flat_vals[ir * k.shape[0] + k]
    left = _mask(fl <= fr)                                   # w: the better neighbour, v: the other one
    w, fw = _pick(left, a, b), _pick(left, fl, fr)
    v, fv = _pick(left, b, a), _pick(left, fr, fl)
    state = dict(a=a, b=b, x=x, fx=fx, ax=ax, w=w, fw=fw, v=v, fv=fv,
                 d=b - a, e=b - a,                           # lets the first two steps be parabolic
                 done=np.zeros(x.shape, dtype=bool), pos=k)  # pos: where each setting's result goes
    out_a, out_v = np.empty_like(amax), np.empty_like(amax)
    work = _Work(k.shape[0])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(BRENT_ITERATIONS):
            done = _brent_done(state, work)     # tested before the step, so that the newly done are not evaluated
            n_done = int(np.count_nonzero(done))
            if n_done and 4 * n_done >= done.shape[0]:      # drop the done settings from the calls
                pos = state["pos"]
                # indices, not masks: done settings are scattered, and indexing by an irregular mask costs about
                # 6 ns per value against about 1 ns per index
                found, keep = np.flatnonzero(done), np.flatnonzero(~done)
                out_a[pos[found]], out_v[pos[found]] = state["ax"][found], state["fx"][found]
                if not keep.size:
                    return _no_order_found(out_a, out_v, amax), out_v
                state = {name: z[keep] for name, z in state.items()}
                evaluate = _evaluator(rows(index[state["pos"]]), amax[state["pos"]])
                work = _Work(keep.size)
                _brent_done(state, work)        # the middle of the kept settings' brackets (none of them is done)
            _brent_step(evaluate, state, work)
    pos = state["pos"]
    out_a[pos], out_v[pos] = state["ax"], state["fx"]
    return _no_order_found(out_a, out_v, amax), out_v


def _brent_done(s, work):
    """Brent's stopping test on the state ``s``, in place in ``s["done"]`` (returned): the settings done before, and those
    whose best point is within 2 BRENT_TOL of their bracket's middle xm less half the bracket (xm is kept in
    ``work.xm`` for the step)."""
    a, b, x = s["a"], s["b"], s["x"]
    f0, f1 = work.f[0], work.f[1]
    xm = np.multiply(0.5, np.add(a, b, out=work.xm), out=work.xm)                  # 0.5 (a + b)
    bound = np.subtract(2.0 * BRENT_TOL, np.multiply(0.5, np.subtract(b, a, out=f0), out=f0), out=f0)
    near = np.less_equal(np.abs(np.subtract(x, xm, out=f1), out=f1), bound, out=work.c[0])
    return np.logical_or(s["done"], near, out=s["done"])


def _brent_step(evaluate, s, work):
    """One lock-step iteration of Brent's method on the state ``s``, its arrays updated in place (see
    :func:`_brent_search`; ``s["done"]`` and ``work.xm``: :func:`_brent_done` of this state; the temporaries in
    ``work``). Under np.errstate: the parabola may divide by 0 (then it is not trusted)."""
    a, b, x, fx, ax, w, fw, v, fv, d, e = (s[k] for k in ("a", "b", "x", "fx", "ax", "w", "fw", "v", "fv", "d", "e"))
    tol1, tol2 = BRENT_TOL, 2.0 * BRENT_TOL
    xm, done = work.xm, s["done"]
    f0, f1, f2, f3, f4, f5, f6 = work.f
    m0, m1, m2, m3, tmp = work.i
    c0, c1, c2, c3, c4 = work.c
    # the parabola through (v, fv), (w, fw), (x, fx) has its vertex at x + p / q
    x_w = np.subtract(x, w, out=f0)
    r = np.multiply(x_w, np.subtract(fx, fv, out=f1), out=f1)                      # (x - w)(fx - fv)
    x_v = np.subtract(x, v, out=f2)
    q = np.multiply(x_v, np.subtract(fx, fw, out=f3), out=f3)                      # (x - v)(fx - fw)
    p = np.multiply(x_v, q, out=f2)
    np.subtract(p, np.multiply(x_w, r, out=f0), out=p)                             # (x - v) q - (x - w) r
    np.multiply(2.0, np.subtract(q, r, out=q), out=q)                              # 2 (q - r)
    # p = -p where q > 0 (Brent), here by q's sign bit: that also flips p where q is +0 or NaN, where the parabola is
    # not trusted (|p| < q |e| / 2 fails), so the step taken is the same
    flip = np.bitwise_and(np.invert(q.view(np.int64), out=tmp), _SIGN_BIT, out=tmp)
    np.bitwise_xor(p.view(np.int64), flip, out=p.view(np.int64))
    np.abs(q, out=q)
    abs_e, a_x, b_x = np.abs(e, out=f0), np.subtract(a, x, out=f1), np.subtract(b, x, out=f4)
    # trusted: below half the step before last and inside the bracket (false where p or q is NaN or inf);
    # q |e| / 2 is |q e / 2| to the bit (q >= 0)
    para = np.greater(abs_e, tol1, out=c0)
    half_qe = np.multiply(np.multiply(0.5, q, out=f5), abs_e, out=f5)
    np.logical_and(para, np.less(np.abs(p, out=f6), half_qe, out=c1), out=para)
    np.logical_and(para, np.greater(p, np.multiply(q, a_x, out=f5), out=c1), out=para)
    np.logical_and(para, np.less(p, np.multiply(q, b_x, out=f5), out=c1), out=para)
    dpar = np.divide(p, q, out=f6)
    u = np.add(x, dpar, out=f2)
    near_end = np.less(np.subtract(u, a, out=f3), tol2, out=c1)
    np.logical_or(near_end, np.less(np.subtract(b, u, out=f3), tol2, out=c2), out=near_end)
    # not closer than tol2 to an end: tol1 towards the middle
    _pick_into(_mask_into(near_end, m0), _tol1_signed(np.subtract(xm, x, out=f3), f3), dpar, dpar, tmp)
    golden = _pick_into(_mask_into(np.greater_equal(x, xm, out=c1), m0), a_x, b_x, f4, tmp)   # the larger part
    m_para = _mask_into(para, m0)
    _pick_into(m_para, d, golden, e, tmp)                                          # e: the step before last
    _pick_into(m_para, dpar, np.multiply(_CGOLD, golden, out=f4), d, tmp)
    big = _mask_into(np.greater_equal(np.abs(d, out=f3), tol1, out=c1), m0)
    u = np.add(x, _pick_into(big, d, _tol1_signed(d, f4), f4, tmp), out=f2)
    _pick_into(_mask_into(done, m0), x, u, u, tmp)                                 # a done setting stays at its best point
    au, fu = evaluate(u[:, None])
    au, fu = au[:, 0], fu[:, 0]
    better = np.less_equal(fu, fx, out=c0)
    m_better = _mask_into(better, m0)
    # the bracket: the worse of x and u becomes its lower end a where u is better and u >= x or u is worse and u < x,
    # its upper end b otherwise
    worse = _pick_into(m_better, x, u, f3, tmp)
    m_lower = _mask_into(np.equal(better, np.greater_equal(u, x, out=c1), out=c1), m1)
    _pick_into(m_lower, worse, a, a, tmp)
    _pick_into(m_lower, b, worse, b, tmp)
    # (x, w, v): the best, second best and previous second best, each updated before the one it is taken from
    worse_u = np.logical_not(better, out=c1)                                       # u is not better than x
    to_w = np.logical_or(np.less_equal(fu, fw, out=c2), np.equal(w, x, out=c3), out=c2)
    np.logical_and(to_w, worse_u, out=to_w)
    to_v = np.logical_or(np.less_equal(fu, fv, out=c3), np.equal(v, x, out=c4), out=c3)
    np.logical_or(to_v, np.equal(v, w, out=c4), out=to_v)
    np.logical_and(np.logical_and(to_v, worse_u, out=to_v), np.logical_not(to_w, out=c4), out=to_v)
    m_shift = _mask_into(np.logical_or(better, to_w, out=c4), m1)
    m_to_w, m_to_v = _mask_into(to_w, m2), _mask_into(to_v, m3)
    _pick_into(m_shift, w, _pick_into(m_to_v, u, v, v, tmp), v, tmp)
    _pick_into(m_shift, fw, _pick_into(m_to_v, fu, fv, fv, tmp), fv, tmp)
    _pick_into(m_better, x, _pick_into(m_to_w, u, w, w, tmp), w, tmp)
    _pick_into(m_better, fx, _pick_into(m_to_w, fu, fw, fw, tmp), fw, tmp)
    _pick_into(m_better, u, x, x, tmp)
    _pick_into(m_better, fu, fx, fx, tmp)
    _pick_into(m_better, au, ax, ax, tmp)


def _keep_better(al: np.ndarray, f: np.ndarray, best_a: np.ndarray, best_v: np.ndarray,
                 j: np.ndarray | None = None, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best (order, value) per setting among the old best and the new candidates (S, G);
    ``j``: the per-setting argmin of f when the caller has it; ``rows``: np.arange(S) when the caller has it."""
    if f.shape[1] == 1:                        # one candidate per setting (golden steps): no argmin
        better = f[:, 0] < best_v
        return np.where(better, al[:, 0], best_a), np.where(better, f[:, 0], best_v)
    if j is None:
        j = np.argmin(f, axis=1)
    if rows is None:
        rows = np.arange(f.shape[0])
    f_j = f[rows, j]
    better = f_j < best_v
    return np.where(better, al[rows, j], best_a), np.where(better, f_j, best_v)


def _golden(evaluate, a, b, best_a, best_v, iterations):
    """Golden-section search in [a, b] (one order per setting per objective call: cheap per setting,
    used for large batches)."""
    c = b - _GOLD * (b - a)
    d = a + _GOLD * (b - a)
    (ac, fc), (ad, fd) = evaluate(c), evaluate(d)
    for al, f in ((ac, fc), (ad, fd)):
        best_a, best_v = _keep_better(al, f, best_a, best_v)
    for _ in range(iterations):
        left = fc < fd                       # the minimum lies in [a, d]
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        new_t = np.where(left, b - _GOLD * (b - a), a + _GOLD * (b - a))
        an, fn = evaluate(new_t)
        c, d = np.where(left, new_t, d), np.where(left, c, new_t)
        fc, fd = np.where(left, fn, fd), np.where(left, fc, fn)
        best_a, best_v = _keep_better(an, fn, best_a, best_v)
    return best_a, best_v


#: the zoom rounds' interior points as fractions of the bracket, a row (made once)
_ZOOM_FRACTIONS = (np.arange(1, ZOOM_POINTS + 1) / (ZOOM_POINTS + 1))[None, :]
_ZOOM_FRACTIONS.flags.writeable = False


def _zoom(evaluate, a, b, best_a, best_v):
    """Zoom rounds in [a, b]: ZOOM_POINTS evenly spaced interior points per round, the bracket
    shrinks to the two cells around the best (by 2 / (ZOOM_POINTS + 1)). Few objective calls with
    many orders each: for a few settings the per-call overhead dominates, so this is the fast path
    there; ZOOM_ROUNDS rounds shrink the bracket at least as much as the golden-section steps."""
    frac, rows = _ZOOM_FRACTIONS, np.arange(a.shape[0])
    for _ in range(ZOOM_ROUNDS):
        span = b - a
        t = a + span * frac
        al, f = evaluate(t)
        j = np.argmin(f, axis=1)
        best_a, best_v = _keep_better(al, f, best_a, best_v, j, rows)
        step = span / (ZOOM_POINTS + 1)
        cell = j[:, None]
        a, b = a + step * cell, a + step * (cell + 2)
    return best_a, best_v


def smallest_integer(ok: Callable[[int], bool], start: int = 2, limit: int = 10 ** 18) -> int | None:
    """The smallest integer n >= ``start`` with ``ok(n)``, for a monotone ``ok`` (false up to some n, true from
    there on): doubling, then bisection, so O(log n) calls. None when ``ok`` is still false past ``limit``."""
    if ok(start):
        return start
    lo, hi = start, start
    while not ok(hi):
        lo, hi = hi, 2 * hi
        if hi > limit:
            return None
    while hi - lo > 1:   # ok(hi) and not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
