"""Private hyperparameter selection (seed 001, sec. 4, Alg. 2, App. B-C): zCDP conversion (eq. 19),
the Liu-Talwar split and event (eq. 20), COINPRESS, the split, random stopping and both users."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.accounting import accountant
from privgp.accounting.events import ComposedEvent, GaussianEvent, event_from_dict
from privgp.accounting.selection import SelectionEvent, liu_talwar_budget
from privgp.accounting.zcdp import zcdp_epsilon, zcdp_rho_for
from privgp.errors import BudgetExceededError, InfeasibleTargetError, InvalidParameterError
from privgp.ledger import Ledger
from privgp.mechanisms.coinpress import coinpress_mean, paper_schedule
from privgp.mechanisms.private_selection import (
    TrainValidationSplit,
    loglik_clip_interval,
    plan_lengthscale_selection,
    random_stopping,
    select_posterior_sample_lengthscale,
    select_sparse_gp,
)
from privgp.mechanisms.release import ResponseMap, release
from privgp.models.domain import Box

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "sparse_gp_reference.json").read_text())


# -------------------------------------------------------------------------------------- eq. 19
@pytest.mark.parametrize("row", REF["zcdp_rho"])
def test_zcdp_rho_matches_eq19(row):
    assert zcdp_rho_for(row["epsilon"], row["delta"]) == pytest.approx(row["rho"], rel=1e-12)


@given(st.floats(1e-4, 100), st.floats(1e-12, 0.5))
def test_zcdp_round_trip_lands_on_the_feasible_side(eps, delta):
    rho = zcdp_rho_for(eps, delta)
    back = zcdp_epsilon(rho, delta)
    assert back <= eps
    assert back >= eps * (1 - 1e-9)


# ------------------------------------------------------------------------------------- eq. 20
@pytest.mark.parametrize("row", REF["liu_talwar"])
def test_budget_split_matches_app_c(row):
    b = liu_talwar_budget(row["epsilon_total"], row["delta_total"], row["gamma"])
    assert b.t0 == pytest.approx(row["t0"], rel=1e-10)
    assert b.max_draws == math.ceil(row["T_paper"])           # integer T (Alg. 2 issue b)
    assert b.delta == pytest.approx(row["delta_paper"], rel=2e-3)
    assert b.epsilon == pytest.approx(row["epsilon_paper"], rel=1e-8)
    e, d = b.event.approx_dp()
    assert e <= row["epsilon_total"] and d <= row["delta_total"]


@given(st.floats(0.01, 100), st.floats(1e-10, 1e-2), st.floats(0.001, 1.0))
def test_budget_never_exceeds_its_target(eps_tot, delta_tot, gamma):
    try:
        b = liu_talwar_budget(eps_tot, delta_tot, gamma)
    except InfeasibleTargetError:
        return
    e, d = b.event.approx_dp()
    assert e <= eps_tot and d <= delta_tot
    assert e >= eps_tot * (1 - 1e-9) and d >= 0.5 * delta_tot
    assert b.event.delta2 <= b.t0 * (1 + 1e-12)


def test_selection_event_in_the_accountant():
    ev = SelectionEvent(0.5, 1e-14, 0.05, 400)
    e, d = ev.approx_dp()
    assert e == pytest.approx(1.5 + 3 * math.sqrt(2e-14))
    assert d == pytest.approx(math.sqrt(2e-14) * 400 + math.exp(-20.0))
    assert event_from_dict(ev.to_dict()) == ev
    g = accountant.epsilon(ev, d * 1.01, composition="basic")
    assert g.epsilon == pytest.approx(e) and g.method == "pure"
    # the default rule: the tight profile of one (e, d)-DP mechanism (Kairouz, Oh & Viswanath 2015),
    # d + (1 - d) (e^e - e^x) / (1 + e^e) = 1.01 d  at  x = log(e^e - 0.01 d (1 + e^e) / (1 - d))
    g = accountant.epsilon(ev, d * 1.01)
    tight = math.log(math.exp(e) - 0.01 * d * (1 + math.exp(e)) / (1 - d))
    assert g.method == "profile" and tight <= g.epsilon <= tight * (1 + 1e-9) and g.epsilon < e
    for rule in ("basic", "profile"):
        assert accountant.epsilon(ev, d * 0.99, composition=rule).epsilon == math.inf
        both = ComposedEvent.of([ev, GaussianEvent(1.0, 2.0)])
        assert accountant.epsilon(both, 2 * d, composition=rule).epsilon > e  # plus the RDP part
    for bad in (dict(gamma=0.0), dict(gamma=1.5), dict(max_draws=0), dict(delta=1.0)):
        kw = dict(epsilon=0.5, delta=1e-14, gamma=0.05, max_draws=400) | bad
        with pytest.raises(InvalidParameterError):
            SelectionEvent(**kw)
    with pytest.raises(InfeasibleTargetError):
        liu_talwar_budget(1e-9, 0.5, 0.9)


# ------------------------------------------------------------------------------- random stopping
def test_random_stopping_sentinel_trace_and_stopping():
    b = liu_talwar_budget(3.0, 1e-4, 0.05)
    never = lambda i, g: (None, 1.0, False)
    i, model, score, draws, acc, trace = random_stopping(never, 4, b, np.random.default_rng(0), keep_trace=True)
    assert i is None and model is None and score == -math.inf and acc == 0 and len(trace) == draws
    # stopping: mean number of runs ~ 1/gamma (truncated at T, far beyond)
    runs = [random_stopping(never, 4, b, np.random.default_rng(s))[3] for s in range(400)]
    assert np.mean(runs) == pytest.approx(1 / 0.05, rel=0.15)
    assert max(runs) <= b.max_draws
    # the best accepted score wins; rejected runs never do
    scores = {0: 1.0, 1: 5.0, 2: 9.0, 3: 2.0}
    pick = lambda i, g: (f"model{i}", scores[i], i != 2)
    i, model, score, *_ = random_stopping(pick, 4, liu_talwar_budget(3.0, 1e-4, 0.001), np.random.default_rng(1))
    assert (i, model, score) == (1, "model1", 5.0)


# ---------------------------------------------------------------------------------- COINPRESS
@pytest.mark.parametrize("row", REF["coinpress_interval"])
def test_clip_interval_is_eqs_30_33(row):
    C, R = loglik_clip_interval(row["noise_std"], row["Ry"])
    assert C == pytest.approx(row["C"], rel=1e-12) and R == pytest.approx(row["R"], rel=1e-12)
    assert C + R == pytest.approx(row["L_max"], rel=1e-12) and C - R == pytest.approx(row["L_min"], rel=1e-12)


def test_coinpress_schedule_and_accuracy():
    s = paper_schedule(0.2)
    assert s.shape == (12,) and s.sum() == pytest.approx(0.2) and s[-1] == pytest.approx(0.15)
    np.testing.assert_allclose(s[:-1], 0.2 / 44)
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 1.0, 2000)
    errs = [coinpress_mean(x, 0.0, 100.0, paper_schedule(0.5), np.random.default_rng(k)).estimate - x.mean()
            for k in range(50)]
    # the last step adds N(0, sd^2) with sd ~ 2 (r + g1)/(n sqrt(2 * 0.375)); r ~ 0.13 after step 11
    assert np.sqrt(np.mean(np.square(errs))) < 0.02
    out = coinpress_mean(x, 0.0, 100.0, s, rng)
    assert out.event.rho == pytest.approx(0.2) and len(out.centres) == 12
    with pytest.raises(InvalidParameterError, match="schedule"):
        coinpress_mean(x, 0.0, 1.0, [0.1, -0.1], rng)


# ----------------------------------------------------------------------------------------- split
def test_split_partitions_rows():
    s = TrainValidationSplit.random(101, 0.5, np.random.default_rng(0))
    assert np.intersect1d(s.train, s.validation).size == 0
    assert np.union1d(s.train, s.validation).size == 101
    s2 = TrainValidationSplit.from_validation_rows(10, np.array([1, 4, 7]))
    np.testing.assert_array_equal(s2.train, [0, 2, 3, 5, 6, 8, 9])
    for rows, match in ((np.array([1, 1]), "distinct"), (np.array([10]), r"\[0, 10\)"), (np.arange(10), "training"),
                        (np.array([0.5]), "indices")):
        with pytest.raises(InvalidParameterError, match=match):
            TrainValidationSplit.from_validation_rows(10, rows)
    with pytest.raises(InvalidParameterError, match="validation_fraction"):
        TrainValidationSplit.random(3, 0.01, np.random.default_rng(0))


# ------------------------------------------------------------------------------------ Alg. 2
def test_sparse_gp_selection_prefers_the_right_model_at_large_epsilon():
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, 1200)
    y = np.sinc(2 * x / np.pi) + 0.1 * rng.standard_normal(1200)
    cands = [(1.0, 0.1), (0.05, 0.1), (1.0, 1.0), (8.0, 0.1)]
    hits = drawn = 0
    for k in range(12):
        r = select_sparse_gp(x, y, cands, inducing_points=np.linspace(-3, 3, 9), response_bound=1.5,
                             epsilon_total=60.0, delta_total=1e-4, gamma=0.2, rng=np.random.default_rng(k),
                             keep_trace=True)
        assert r.split.train.size == r.split.validation.size == 600
        assert r.event == r.budget.event and r.draws == len(r.trace) <= r.budget.max_draws
        if any(i == 0 for i, _, _ in r.trace):      # the right model was among the runs
            drawn += 1
            hits += r.index == 0
    # (drawn: a sample-size guard, 5 of 12 with these seeds since the runs draw exact discrete noise)
    assert drawn >= 5 and hits >= drawn - 1, (hits, drawn)


def test_sparse_gp_selection_rejects_bad_input_before_data():
    x = np.linspace(-3, 3, 50)
    kw = dict(inducing_points=np.linspace(-3, 3, 5), response_bound=1.0, epsilon_total=3.0, delta_total=1e-4)
    with pytest.raises(InvalidParameterError, match="candidates"):
        select_sparse_gp(x, np.sin(x), [], **kw)
    with pytest.raises(InvalidParameterError, match="noise_std"):
        select_sparse_gp(x, np.sin(x), [(1.0, 0.0)], **kw)
    with pytest.raises(InvalidParameterError, match="split"):
        select_sparse_gp(x, np.sin(x), [(1.0, 0.1)], split=TrainValidationSplit.random(10, 0.5, np.random.default_rng(0)),
                         **kw)


def test_seed000_lengthscale_selection_runs_and_costs_the_selection_event():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (80, 1))
    z = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    res = select_posterior_sample_lengthscale(X, z, [0.05, 0.3], domain=Box((0.0,), (1.0,)),
                                              response_map=ResponseMap(0.0, 1.5), epsilon_total=30.0,
                                              delta_total=1e-3, gamma=0.5, rng=rng, grid=41, keep_trace=True)
    assert res.draws == len(res.trace) >= 1
    assert res.split.train.size == res.split.validation.size == 40
    if res.selected:
        plan, released = res.model
        assert plan.lengthscale == res.candidate and plan.n == 40
        assert float(plan.certificate.epsilon) <= res.budget.epsilon
        assert released.paths.shape == (1, 41)
    assert res.event.approx_dp()[0] <= 30.0


def test_seed000_lengthscale_selection_through_the_ledger(tmp_path):
    @dataclass
    class Data:
        X: np.ndarray
        response: np.ndarray
        content_digest: str = "digest"

    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (60, 1))
    d = Data(X, np.sin(6 * X[:, 0]))
    plan = plan_lengthscale_selection(60, Box((0.0,), (1.0,)), ResponseMap(0.0, 1.5), [0.1, 0.4], epsilon_total=20.0,
                                      delta_total=1e-3, gamma=0.5, grid=31)
    assert plan.certificate.epsilon == pytest.approx(20.0) and plan.certificate.method == "pure"
    led = Ledger(tmp_path / "l.sqlite")
    res = release(plan, d, led, rng, budget_epsilon=25.0, budget_delta=1e-2)
    assert isinstance(res.released.draws, int)
    (entry,) = led.entries()
    assert entry.event["type"] == "selection"
    # the ledger composes at its budget's delta 1e-2 (> the selection's delta): through the privacy profile
    # (the rule of a new ledger), a little below the 20.0 of basic composition
    spent = led.dataset(res.fingerprint).spent.epsilon
    assert led.composition == "profile"
    assert spent == accountant.epsilon(plan.event, 1e-2).epsilon and 19.9 < spent <= 20.0
    assert accountant.epsilon(plan.event, 1e-2, composition="basic").epsilon == pytest.approx(20.0)
    with pytest.raises(BudgetExceededError):          # a second search would exceed the budget
        release(plan, d, led, rng)
    with pytest.raises(InvalidParameterError, match="rows"):
        release(plan, Data(X[:50], d.response[:50]), led, rng)
    assert len(led.entries()) == 1
