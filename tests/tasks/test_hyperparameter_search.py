"""The coarse-to-fine (privacy-constrained) hyperparameter search (seed 000, eqs. 6-7, App. D)."""
import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.tasks.hyperparameter_search import CachedLoss, EpsilonCache, SearchSpace, grid_search

TARGET = np.array([0.33, 1.7, 0.45])


def bowl(c):
    c = np.asarray(c)
    return np.sum(np.log(c / TARGET) ** 2, axis=1)


class Recorder:
    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, c):
        self.calls.append(np.array(c))
        return self.fn(c)


SPACE = SearchSpace(lengthscales=(0.1, 0.3, 1.0), rs=(0.5, 1.0, 3.0), sigmas=(0.1, 0.5, 2.0))


def test_refinement_improves_on_the_coarse_grid_and_nothing_is_evaluated_twice():
    rec = Recorder(bowl)
    res = grid_search(CachedLoss(rec), SPACE)
    coarse_best = bowl(SPACE.coarse()).min()
    assert res.feasible and res.best["loss"] < coarse_best
    assert res.best["loss"] == pytest.approx(res.table["loss"].min())
    seen = np.concatenate(rec.calls)
    assert len({tuple(np.round(r, 9)) for r in seen}) == len(seen)
    assert res.rounds == 2 and set(res.table["round"]) == {0, 1, 2}


def test_private_search_only_evaluates_feasible_settings_and_returns_the_best_of_them():
    rec = Recorder(bowl)
    eps = EpsilonCache(lambda ell, r, s: 4.0 / (r * s))   # small r * sigma: large epsilon
    res = grid_search(CachedLoss(rec), SPACE, epsilon=eps, eps0=3.0)
    seen = np.concatenate(rec.calls)
    assert np.all(4.0 / (seen[:, 1] * seen[:, 2]) < 3.0)
    assert res.feasible and res.best["epsilon"] < 3.0
    feas = res.table[res.table["feasible"]]
    assert res.best["loss"] == pytest.approx(feas["loss"].min())
    assert np.isnan(res.table.loc[~res.table["feasible"], "loss"]).all()
    unc = grid_search(CachedLoss(bowl), SPACE)
    assert unc.best["loss"] <= res.best["loss"]          # the constraint can only cost


def test_no_feasible_setting_is_reported_not_raised():
    res = grid_search(CachedLoss(bowl), SPACE, epsilon=EpsilonCache(lambda e, r, s: np.full(np.shape(r), 50.0)),
                      eps0=10.0)
    assert not res.feasible and res.best is None
    assert "no feasible setting" in res.message and "50" in res.message
    with pytest.raises(InvalidParameterError, match="feasible"):
        _ = res.theta
    inf = grid_search(CachedLoss(bowl), SPACE, epsilon=EpsilonCache(lambda e, r, s: np.full(np.shape(r), np.inf)),
                      eps0=10.0)
    assert not inf.feasible and "inf" in inf.message


@pytest.mark.parametrize("eps0", [0.0, -1.0, float("nan")])
def test_nonpositive_eps0_is_rejected(eps0):
    with pytest.raises(InvalidParameterError, match="eps0"):
        grid_search(CachedLoss(bowl), SPACE, epsilon=EpsilonCache(lambda e, r, s: r), eps0=eps0)


def test_bad_grids_are_rejected():
    with pytest.raises(InvalidParameterError, match="lengthscales"):
        SearchSpace(lengthscales=(), rs=(1.0,), sigmas=(1.0,))
    with pytest.raises(InvalidParameterError, match="rs"):
        SearchSpace(lengthscales=(1.0,), rs=(0.0, 1.0), sigmas=(1.0,))
    with pytest.raises(InvalidParameterError, match="epsilon"):
        grid_search(CachedLoss(bowl), SPACE, eps0=1.0)


def test_epsilon_nan_is_an_error_not_a_feasible_setting():
    with pytest.raises(InvalidParameterError, match="epsilon"):
        grid_search(CachedLoss(bowl), SPACE, epsilon=EpsilonCache(lambda e, r, s: np.full(np.shape(r), np.nan)),
                    eps0=1.0)


def test_lockstep_searches_give_the_same_results_with_fewer_loss_calls():
    from privgp.tasks.hyperparameter_search import grid_searches

    eps = EpsilonCache(lambda ell, r, s: 4.0 / (r * s))
    alone = [grid_search(CachedLoss(bowl), SPACE), grid_search(CachedLoss(bowl), SPACE, epsilon=eps, eps0=3.0)]
    rec = Recorder(bowl)
    both = grid_searches(CachedLoss(rec), [{"space": SPACE}, {"space": SPACE, "epsilon": eps, "eps0": 3.0}])
    for a, b in zip(alone, both):
        assert a.theta == b.theta and a.best["loss"] == b.best["loss"]
        pd_a = a.table.sort_values(["lengthscale", "r", "sigma"]).reset_index(drop=True)
        pd_b = b.table.sort_values(["lengthscale", "r", "sigma"]).reset_index(drop=True)
        assert pd_a.equals(pd_b)
    assert len(rec.calls) == 3          # coarse + two rounds, each one call for both searches
