"""Red team of the Python API beyond ``privgp.release``: the scikit-learn estimators, the accountant's top-level
functions and the events. Each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import privgp
from privgp.errors import InvalidParameterError
from privgp.ledger import Ledger
from privgp.mechanisms.sparse_gp import sufficient_statistics
from privgp.mechanisms.sparse_gp_estimator import box_bounds
from privgp.mechanisms.sparse_gp_sensitivity import statistics_sensitivity, weighted_sensitivity


def _data(n: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 1))
    return X, np.sin(X[:, 0])


# -- estimators: clone must not copy the noise ------------------------------------------------------------------

@pytest.mark.parametrize("make_rs", [lambda: np.random.default_rng(123), lambda: np.random.RandomState(1),
                                     lambda: np.random.PCG64(5)])
def test_clones_of_an_estimator_with_a_generator_draw_independent_noise(make_rs):
    """clone deep-copied a Generator: every fold of cross_val_score / candidate of GridSearchCV drew the same noise,
    so the difference of two releases on overlapping records was the exact difference of their statistics."""
    X, y = _data()
    est = privgp.DPSparseGPRegressor(random_state=make_rs())
    a = clone(est).fit(X[:30], y[:30])
    b = clone(est).fit(X[10:], y[10:])
    noise_a = a.release_.a_released - sufficient_statistics(X[:30], y[:30], a.release_.spec).A
    noise_b = b.release_.a_released - sufficient_statistics(X[10:], y[10:], b.release_.spec).A
    assert not np.allclose(noise_a, noise_b)


def test_clones_stay_reproducible_from_a_seeded_generator_and_a_fixed_seed_keeps_its_meaning():
    X, y = _data()

    def fits():
        est = privgp.DPSparseGPRegressor(random_state=np.random.default_rng(5))
        return [clone(est).fit(X, y).mean_ for _ in range(2)]
    first, second = fits(), fits()
    assert all(np.array_equal(p, q) for p, q in zip(first, second))
    assert not np.allclose(first[0], first[1])
    seeded = privgp.DPSparseGPRegressor(random_state=7)   # an int: the same noise at every fit, as documented
    assert clone(seeded).random_state == 7


def test_clones_of_the_classifier_and_the_sampler_draw_independent_noise():
    X, y = _data()
    labels = (X[:, 0] > 0).astype(int)
    clf = privgp.DPDirichletGPClassifier(epsilon=2.0, random_state=np.random.default_rng(2))
    p1 = clone(clf).fit(X, labels).predict_proba(X)
    p2 = clone(clf).fit(X, labels).predict_proba(X)
    assert not np.allclose(p1, p2)
    sampler = privgp.DPPosteriorSampler(float_noise=True, box=(-3, 3), random_state=np.random.default_rng(2))
    s1 = clone(sampler).fit(X, y).sample_y(X[:5])
    s2 = clone(sampler).fit(X, y).sample_y(X[:5])
    assert not np.allclose(s1, s2)


def test_a_deep_copy_draws_its_own_noise_and_a_copied_sampler_keeps_its_one_path():
    """copy.deepcopy copied the Generator, so the copy's fit drew the original's noise (red team 26, left open then);
    a fitted sampler's copy must still be the same one released path (another stream would publish a second path
    for the price of one)."""
    import copy

    X, y = _data()
    est = privgp.DPSparseGPRegressor(random_state=np.random.default_rng(3))
    twin = copy.deepcopy(est)
    a, b = est.fit(X[:30], y[:30]), twin.fit(X[10:], y[10:])
    noise_a = a.release_.a_released - sufficient_statistics(X[:30], y[:30], a.release_.spec).A
    noise_b = b.release_.a_released - sufficient_statistics(X[10:], y[10:], b.release_.spec).A
    assert not np.allclose(noise_a, noise_b)
    assert copy.deepcopy(privgp.DPSparseGPRegressor(random_state=7)).random_state == 7
    sampler = privgp.DPPosteriorSampler(float_noise=True, box=(-3, 3), random_state=np.random.default_rng(2)).fit(X, y)
    grid = np.linspace(-2.5, 2.5, 7)[:, None]
    released = sampler.sample_y(grid)
    copied = copy.deepcopy(sampler)
    np.testing.assert_array_equal(copied.sample_y(grid), released)
    assert copied.random_state is not sampler.random_state
    assert not np.allclose(copy.deepcopy(sampler).fit(X, y).sample_y(grid), sampler.sample_y(grid))


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copies_of_a_released_path_repeat_it_and_draw_no_new_points(how):
    """Red team 17c: two copies of one fitted sampler (a pickle loaded twice, as two workers of a service load a
    model, or two deep copies) drew new points from one random stream; asked for the same new points in opposite
    orders they answered one point of "one path" twice, and the two answers gave back the non-private posterior mean
    to 1e-14, for one charge. A copy now repeats the points its original released and refuses new ones; the original
    goes on drawing its one path."""
    import copy
    import pickle

    X, y = _data()
    sampler = privgp.DPPosteriorSampler(float_noise=True, box=(-3, 3), target_epsilon=5.0).fit(X[:30], y[:30])
    grid = np.linspace(-2.5, 2.5, 9)[:, None]
    released = sampler.sample_y(grid)
    copies = ([pickle.loads(pickle.dumps(sampler)) for _ in range(2)] if how == "pickle"
              else [copy.deepcopy(sampler) for _ in range(2)])
    fresh = np.array([[-1.7], [0.3], [2.2]])
    for c in copies:
        np.testing.assert_array_equal(c.sample_y(grid[::-1]), released[::-1])   # what was released, any order
        with pytest.raises(InvalidParameterError, match="a copy of a released path"):
            c.sample_y(fresh)
        with pytest.raises(InvalidParameterError, match="a copy of a released path"):
            c.sample_y(np.vstack([grid[:2], fresh[:1]]))   # one new point among released ones
    more = sampler.sample_y(fresh)   # the original draws on
    np.testing.assert_array_equal(sampler.sample_y(np.vstack([grid, fresh])), np.concatenate([released, more]))


def test_threads_extending_one_path_at_once_draw_each_point_once():
    """LazyPath's extension was not atomic: two threads asking for the same new points at once could each draw
    them. With the lock every point has one value, whichever thread asked first."""
    import threading

    X, y = _data()
    sampler = privgp.DPPosteriorSampler(float_noise=True, box=(-3, 3), target_epsilon=5.0).fit(X[:30], y[:30])
    pts = np.linspace(-2.9, 2.9, 400)[:, None]
    go, got = threading.Barrier(4), [None] * 4

    def ask(i):
        go.wait()
        got[i] = sampler.sample_y(pts if i % 2 else pts[::-1])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g if i % 2 else g[::-1], got[1])
    assert len(sampler.path_) == 400


def test_float32_records_fitted_by_an_estimator_share_the_key_of_the_same_values_anywhere(tmp_path):
    """The estimators widened float32 inputs, so the same records fitted by DPSparseGPRegressor and released from a
    CSV file (or a float32 Parquet file) had two ledger keys; they are now read through their shortest digits as
    every other entry point reads them, and a ledger that charged the widened key keeps charging it."""
    import pandas as pd

    from privgp.accounting import GaussianEvent
    from privgp.datasets.fingerprint import records_digest

    X, y = _data(60, seed=3)
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    csv = tmp_path / "r.csv"
    pd.DataFrame({"x": X32[:, 0], "v": y32}).to_csv(csv, index=False)      # shortest digits, as pandas prints them
    from_csv = privgp.records(pd.read_csv(csv), "v")
    budget = privgp.Budget(tmp_path / "fresh.sqlite", epsilon=100.0)
    privgp.DPSparseGPRegressor(budget=budget, random_state=1).fit(X32, y32)
    privgp.DPPosteriorSampler(float_noise=True, box=(-3, 3), budget=budget, random_state=1).fit(pd.DataFrame({"x": X32[:, 0]}),
                                                                            pd.Series(y32))
    spent = budget.spent(from_csv)
    assert spent is not None and spent.spent.entries == 2 and len(budget.ledger.datasets()) == 1
    # a ledger that charged the widened values (privgp before 2026-11-29) keeps that key for the float32 fit
    old = tmp_path / "old.sqlite"
    led = Ledger(old, create_on_charge=True)
    earlier = led.fingerprint(records_digest(X32.astype(float), y32.astype(float)))
    led.charge(earlier, GaussianEvent(sensitivity=1.0, noise_std=5.0), budget_epsilon=100.0, budget_delta=1e-6)
    fitted = privgp.DPSparseGPRegressor(budget=privgp.Budget(old), random_state=1).fit(X32, y32)
    assert fitted.charge_.fingerprint == earlier and len(Ledger(old).datasets()) == 1
    assert privgp.Budget(old).spent(from_csv).fingerprint == earlier          # linked: the CSV's values too


@pytest.mark.parametrize("dtype", ["float32", "Float32", "float[pyarrow]", "Float64", "double[pyarrow]"])
def test_pandas_extension_dtypes_key_like_numpy_and_fit(tmp_path, dtype):
    """Red team 17c: Arrow-backed float32 columns (``pd.read_parquet(..., dtype_backend="pyarrow")``) were widened,
    so privgp.records and the estimators gave the same Parquet records a key other than ``privgp release``'s; and a
    target Series of any pandas extension dtype (Float64, Int64, float[pyarrow]) raised a bare TypeError. Each dtype
    now keys like numpy's of its width, and fits."""
    import pandas as pd
    import pyarrow as pa

    X, y = _data(80, seed=5)
    width = np.float32 if dtype in ("float32", "Float32", "float[pyarrow]") else np.float64
    X, y = X.astype(width), y.astype(width)
    pandas_dtype = pd.ArrowDtype(pa.float32() if width is np.float32 else pa.float64()) if "pyarrow" in dtype \
        else dtype
    frame = pd.DataFrame({"x": pd.Series(X[:, 0], dtype=pandas_dtype), "v": pd.Series(y, dtype=pandas_dtype)})
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=100.0)
    assert budget.fingerprint(privgp.records(frame, "v")) == budget.fingerprint(privgp.records(X, y))
    fitted = privgp.DPSparseGPRegressor(box=(-3, 3), budget=budget, random_state=1).fit(frame[["x"]], frame["v"])
    assert fitted.charge_.fingerprint == budget.fingerprint((X, y)) and len(budget.ledger.datasets()) == 1


def test_the_classifier_keys_numeric_labels_as_every_other_entry_point(tmp_path):
    """Red team 17c: DPDirichletGPClassifier keyed the records by each label's rank, so the same (X, y) with labels
    -1/+1 fitted by the regressor and by the classifier were two data sets (epsilon 15 under a budget of 10 with the
    sampler). Numeric labels are now keyed as given; a ledger that charged the ranks' key keeps it (an alias)."""
    from privgp.accounting import GaussianEvent

    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, (120, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=100.0)
    reg = privgp.DPSparseGPRegressor(epsilon=1.0, budget=budget, random_state=1).fit(X, y)
    clf = privgp.DPDirichletGPClassifier(epsilon=1.0, budget=budget, random_state=1).fit(X, y)
    again = privgp.DPDirichletGPClassifier(epsilon=1.0, budget=budget, random_state=2, classes=[1.0, -1.0]).fit(X, y)
    assert reg.charge_.fingerprint == clf.charge_.fingerprint == again.charge_.fingerprint
    assert len(budget.ledger.datasets()) == 1 and budget.spent((X, y)).spent.entries == 3
    old = tmp_path / "old.sqlite"   # privgp before: the ranks' key
    Ledger(old, create_on_charge=True)
    earlier = privgp.Budget(old, epsilon=100.0).charge((X, (y > 0).astype(float)), GaussianEvent(1.0, 5.0),
                                                      default_delta=1e-6)
    fitted = privgp.DPDirichletGPClassifier(epsilon=1.0, budget=privgp.Budget(old), random_state=1).fit(X, y)
    assert fitted.charge_.fingerprint == earlier.fingerprint and len(Ledger(old).datasets()) == 1


# -- estimators: private records never in an error; settings refused before the charge --------------------------

@pytest.mark.parametrize("which", ["X", "y"])
def test_complex_records_are_refused_without_printing_them(which):
    X, y = _data()
    X[0, 0], y[0] = 1.2345678, 1.2345678
    args = (X + 0j, y) if which == "X" else (X, y + 0j)
    with pytest.raises(ValueError, match="Complex data not supported") as info:
        privgp.DPSparseGPRegressor(random_state=0).fit(*args)
    assert "1.2345" not in str(info.value) and "private records" in str(info.value)


def test_a_noise_std_whose_square_overflows_is_refused_before_the_charge(tmp_path):
    X, y = _data()
    budget = privgp.Budget(tmp_path / "ledger.sqlite", epsilon=5.0)
    with pytest.raises(InvalidParameterError, match="noise_std"):
        privgp.DPSparseGPRegressor(noise_std=1e300, random_state=0, budget=budget).fit(X, y)
    path = tmp_path / "ledger.sqlite"
    assert not path.exists() or Ledger(path).entries() == []


@pytest.mark.parametrize("kw", [{"response_bound": 1e300}, {"signal_variance": 1e300}])
def test_bounds_whose_fourth_power_overflows_are_an_invalid_parameter(kw):
    X, y = _data()
    # the exact noise's lattice of 2^-16 of the bound refuses it first (naming it); the sensitivity's own check below
    with pytest.raises(InvalidParameterError, match=f"{next(iter(kw))} must be between 2\\^-384 and 2\\^416"):
        privgp.DPSparseGPRegressor(random_state=0, **kw).fit(X, y)
    with pytest.raises(InvalidParameterError, match="float range"):
        weighted_sensitivity(1e300, 1.0, 1.0, 1.0)
    assert statistics_sensitivity(1.0, 1.0) == pytest.approx(np.sqrt(0.5 + 2 + 2))   # unchanged in range


@pytest.mark.parametrize("kw", [{"sigma": 1e160}, {"r": 1.0, "eta": 1e160, "target_epsilon": None}])
def test_the_sampler_refuses_a_sigma_or_eta_whose_square_overflows_before_the_charge(kw, tmp_path):
    """They passed fit (and its charge) and overflowed in sample_y: budget spent, nothing released."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (30, 1))
    y = np.sin(3 * X[:, 0])
    budget = privgp.Budget(tmp_path / "ledger.sqlite", epsilon=1e9)
    name = "sigma" if "sigma" in kw else "eta"
    with pytest.raises(InvalidParameterError, match=name):
        privgp.DPPosteriorSampler(float_noise=True, random_state=0, budget=budget, **kw).fit(X, y)
    path = tmp_path / "ledger.sqlite"
    assert not path.exists() or Ledger(path).entries() == []
    with pytest.raises(InvalidParameterError, match=name):
        privgp.plan_posterior_sample(30, privgp.Box.unit(1), privgp.ResponseMap(0.0, 1.0), **kw)


def test_a_box_with_bounds_for_other_features_is_an_invalid_parameter():
    with pytest.raises(InvalidParameterError, match="box"):
        box_bounds(((0, 0), (1, 1)), 1)
    with pytest.raises(InvalidParameterError, match="box"):
        privgp.DPPosteriorSampler(float_noise=True, box=((0, 0), (1, 1)), random_state=0).fit(*_data())
    lo, hi = box_bounds(((0, 0), (1, 2)), 2)
    assert lo.tolist() == [0, 0] and hi.tolist() == [1, 2]
    lo, hi = box_bounds((-1, 1), 3)
    assert lo.tolist() == [-1] * 3


# -- the accountant's functions and the events ----------------------------------------------------------------------

EVENT = privgp.GaussianEvent(sensitivity=1.0, noise_std=2.0)


@pytest.mark.parametrize("bad", [True, "1e-6", 1e-6 + 0j, 10**400, None, object(), np.array([True])])
def test_epsilon_refuses_a_delta_that_is_not_real_numbers(bad):
    with pytest.raises(InvalidParameterError, match="delta"):
        privgp.epsilon(EVENT, bad)


@pytest.mark.parametrize("bad", [True, "1", 1 + 0j, 10**400, None])
def test_delta_refuses_an_epsilon_that_is_not_real_numbers(bad):
    """delta(event, True) was the delta at epsilon 1; complex and huge ints were raw TypeError/OverflowError."""
    with pytest.raises(InvalidParameterError, match="epsilon"):
        privgp.delta(EVENT, bad)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        privgp.delta(EVENT, bad, composition="basic")


def test_the_accountant_still_takes_numbers_arrays_and_numpy_scalars():
    ref = privgp.epsilon(EVENT, 1e-6).epsilon
    for d in (np.float64(1e-6), np.array(1e-6), [1e-6], np.array([1e-6], dtype=object)):
        assert np.all(np.asarray(privgp.epsilon(EVENT, d).epsilon) == ref)
    assert privgp.delta(EVENT, 1).delta == privgp.delta(EVENT, 1.0).delta == privgp.delta(EVENT, np.int64(1)).delta
    assert np.asarray(privgp.epsilon(EVENT, np.array([1e-6, 1e-3], dtype=np.float32)).epsilon).shape == (2,)


@pytest.mark.parametrize("tiny", [1e-310, 5e-324])
def test_a_subnormal_delta_gives_a_finite_checked_epsilon_without_a_warning(tiny, recwarn):
    """1 / delta overflowed: a RuntimeWarning and epsilon = inf (an upper bound, but a vacuous one)."""
    g = privgp.epsilon(EVENT, tiny)
    assert np.isfinite(g.epsilon) and 15 < g.epsilon < 25
    assert privgp.delta(EVENT, g.epsilon).delta <= tiny * (1 + 1e-9) + 2 * 5e-324   # up to delta's rounding up
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_exact_gdp_epsilon_is_unchanged_in_the_normal_range():
    from privgp.accounting.gaussian import _epsilon_upper
    d = np.array([1e-300, 1e-12, 1e-6, 0.5])
    mu = np.full(4, 0.5)
    assert np.array_equal(_epsilon_upper(mu, d), 2.0 * (0.5 * mu * mu + mu * np.sqrt(2.0 * np.log(1.0 / d))) + 1.0)


def test_a_composition_count_beyond_the_float_range_is_an_invalid_parameter():
    with pytest.raises(InvalidParameterError, match="count"):
        EVENT.times(10**400)
    inner = EVENT.times(10**300)
    with pytest.raises(InvalidParameterError, match="count"):
        privgp.ComposedEvent.of([(inner, 10**10)])     # nested counts multiply
    assert privgp.epsilon(EVENT.times(10**30), 1e-6).epsilon > 1e29


def test_a_huge_integer_is_refused_by_name_even_beyond_the_str_conversion_limit():
    with pytest.raises(InvalidParameterError, match="sensitivity.*float range"):
        privgp.GaussianEvent(10**5000, 1.0)


def test_a_gaussian_event_whose_mu_overflows_is_refused_naming_its_own_fields():
    """sensitivity / noise_std = inf passed; the accountant then refused a "mu" the caller never gave."""
    with pytest.raises(InvalidParameterError, match="noise_std"):
        privgp.GaussianEvent(sensitivity=1e300, noise_std=1e-300)
    assert privgp.epsilon(privgp.GaussianEvent(sensitivity=1e200, noise_std=1.0), 1e-6).epsilon == np.inf


@pytest.mark.parametrize("alpha", ["2", 2 + 0j, True])
def test_a_given_renyi_order_must_be_a_real_number(alpha):
    """alpha="2" was used as 2; a complex order was a raw TypeError."""
    with pytest.raises(InvalidParameterError, match="alpha"):
        privgp.epsilon(EVENT, 1e-6, alpha=alpha)


@pytest.mark.parametrize("kw, name", [({"n": True}, "n"), ({"r": "1"}, "r"), ({"sigma": 0.3 + 0j}, "sigma"),
                                      ({"L": True}, "L")])
def test_the_posterior_sample_event_refuses_booleans_strings_and_complex_numbers(kw, name):
    """posterior_sample_event(True, ...) was an event for n = 1; r="1" was r = 1."""
    args = {"n": 100, "r": 1.0, "sigma": 0.3, **kw}
    L = args.pop("L", 1)
    with pytest.raises(InvalidParameterError, match=name):
        privgp.posterior_sample_event(args["n"], args["r"], args["sigma"], L=L)


@pytest.mark.parametrize("bounds", [(0.01, 10**400), ("0.1", "10"), (False, True)])
def test_calibration_bounds_must_be_real_numbers(bounds):
    from privgp.accounting import calibrate
    with pytest.raises(InvalidParameterError, match="noise_std bounds"):
        calibrate(lambda s: privgp.GaussianEvent(1.0, s), "noise_std", bounds, 1.0, 1e-6)
    result = calibrate(lambda s: privgp.GaussianEvent(1.0, s), "noise_std", (0.01, 100), 1.0, 1e-6)
    assert privgp.epsilon(privgp.GaussianEvent(1.0, result.value), 1e-6).epsilon <= 1.0


@pytest.mark.parametrize("kwargs, param", [(dict(n_inducing=10**6), "n_inducing"),
                                           (dict(inducing_points=np.zeros((200_000, 2))), "inducing_points")])
def test_inducing_inputs_beyond_the_memory_limit_are_refused_by_name_before_anything_is_built(kwargs, param):
    """Red team 26: n_inducing=10**6 was a raw MemoryError (14.6 TiB for the kernel bound's pairwise differences)."""
    from privgp import DPSparseGPRegressor

    rng = np.random.default_rng(0)
    X, y = rng.uniform(0, 1, (50, 2)), rng.normal(size=50)
    with pytest.raises(InvalidParameterError, match=rf"^{param} must be at most the limit of 4 GiB for the sparse GP's "
                       r"inducing inputs \(m x m matrices\); use fewer inducing inputs; got"):
        DPSparseGPRegressor(box=((0, 0), (1, 1)), **kwargs).fit(X, y)


def test_no_admissible_order_says_no_finite_epsilon_and_what_drives_it():
    """Red team 26: r = 1e-12 gave "no admissible Rényi order (alpha_max <= 1)", naming nothing a user sets."""
    from privgp.errors import NumericalError

    with pytest.raises(NumericalError, match=r"^no finite epsilon can be certified: .* r too small for n and the kernel"):
        privgp.epsilon(privgp.posterior_sample_event(100, 1e-12, 0.3), 1e-6)


def test_a_dirichlet_alpha_whose_target_variance_is_zero_is_refused_by_name():
    """Red team 26: alpha_epsilon=1e300 warned of a 0/0 and failed naming min_noise_var."""
    import warnings

    X = np.random.default_rng(0).uniform(0, 1, (60, 2))
    y = (X[:, 0] > 0.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match=r"^alpha_epsilon must be small enough that the target variances"):
            privgp.DPDirichletGPClassifier(alpha_epsilon=1e300, box=((0, 0), (1, 1))).fit(X, y)
