"""Accounting of private Thompson sampling (issue 17): the certificate is the accountant's epsilon of
the composed per-round events; a planned run never exceeds its budget under any schedule; the
batched composition used by the calibrator equals the composition of scalar events; the ledger is
charged once, for the whole planned run, before any round."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting import accountant, rdp_posterior_sample
from privgp.accounting.composed_batch import ComposedBatch
from privgp.accounting.conversion import epsilon_from_rdp
from privgp.accounting.events import ComposedEvent
from privgp.accounting.sensitivity import delta_exp1d, delta_generic, v_bar
from privgp.errors import BudgetExceededError, InfeasibleTargetError, InvalidParameterError
from privgp.ledger import Ledger
from privgp.mechanisms.posterior_sample import posterior_sample_batch, posterior_sample_event
from privgp.models.domain import Box
from privgp.tasks.thompson import Candidates, optimize, plan_thompson, released_certificate, run_thompson

GRID_1D = Candidates.grid(Box.unit(1), 33)
GRID_2D = Candidates.grid(Box.unit(2), 8)


def plan_1d(**kw):
    kw.setdefault("rounds", 8)
    return plan_thompson(GRID_1D, kernel="exponential", lengthscale=0.3, sigma=0.5, **kw)


def scalar_composition(plan) -> ComposedEvent:
    """The run's event rebuilt independently of the plan: one scalar event per data round."""
    return ComposedEvent.of([posterior_sample_event(int(n), float(r), plan.sigma, eta=float(e), kernel=plan.kernel,
                                                    lengthscale=plan.lengthscale, domain=plan.candidates.box,
                                                    M_Y=plan.M_Y, sensitivity=plan.sensitivity)
                             for n, r, e in zip(plan.n, plan.r, plan.eta)])


def test_certificate_is_the_accountants_epsilon_of_the_composed_round_events():
    plan = plan_1d(rounds=12, epsilon=5.0, delta=1e-3)
    ev = scalar_composition(plan)
    assert ev == plan.event                       # the same events, n = 1..T-1 (round 1 is not an event)
    assert [e.n for e, _ in plan.event.events] == list(range(1, 12))
    g = accountant.epsilon(ev, 1e-3)
    assert plan.certificate.epsilon == g.epsilon
    assert plan.certificate.epsilon <= 5.0
    assert plan.certificate.recompute().epsilon == plan.certificate.epsilon


def test_composed_epsilon_against_an_independent_sum_of_per_round_bounds():
    """Independent route: Thm 3.1 per round from the closed-form V_n (Prop. 3) and Delta_n (Lemma B.7),
    summed over rounds, converted on a dense grid of orders. The certificate's epsilon is a valid bound
    (never below the dense minimum by more than the grid's resolution) and close to it."""
    plan = plan_1d(rounds=10, epsilon=3.0, delta=1e-3)
    kappa = math.exp(-1.0 / 0.3)
    r = float(plan.r[0])
    V = v_bar(plan.n, r, kappa)
    D = delta_exp1d(r, V, M_Y=1.0)
    amax = float(np.min(1.0 + r * r / V))
    alphas = 1.0 + (amax - 1.0) * np.linspace(1e-4, 1 - 1e-6, 20001)
    total = sum(rdp_posterior_sample(alphas, Vk, Dk, r, plan.sigma) for Vk, Dk in zip(V, D))
    dense = float(np.min(epsilon_from_rdp(total, alphas, 1e-3)))
    assert plan.certificate.epsilon == pytest.approx(dense, rel=2e-3)
    # and with the generic lemma (2-D), growing Delta_n with n
    p2 = plan_thompson(GRID_2D, rounds=6, epsilon=50.0, delta=1e-3, kernel="matern52", lengthscale=0.3, sigma=1.0)
    k2 = float(np.asarray(p2.candidates.box.diameter))
    kap = float((1 + math.sqrt(5) * k2 / 0.3 + 5 * (k2 / 0.3) ** 2 / 3) * math.exp(-math.sqrt(5) * k2 / 0.3))
    r2 = float(p2.r[0])
    V2 = v_bar(p2.n, r2, kap)
    D2 = delta_generic(p2.n, r2, V2, M_Y=1.0)
    amax2 = float(np.min(1.0 + r2 * r2 / V2))
    al2 = 1.0 + (amax2 - 1.0) * np.linspace(1e-4, 1 - 1e-6, 20001)
    tot2 = sum(rdp_posterior_sample(al2, Vk, Dk, r2, 1.0) for Vk, Dk in zip(V2, D2))
    assert p2.certificate.epsilon == pytest.approx(float(np.min(epsilon_from_rdp(tot2, al2, 1e-3))), rel=2e-3)


@settings(max_examples=25)
@given(n=st.lists(st.integers(1, 60), min_size=1, max_size=12), r=st.floats(0.2, 50.0), sigma=st.floats(0.1, 5.0),
       eta=st.floats(0.0, 3.0), delta=st.floats(1e-8, 0.3), two_d=st.booleans())
def test_batched_composition_equals_the_scalar_composition(n, r, sigma, eta, delta, two_d):
    dom = Box.unit(2 if two_d else 1)
    opts = dict(kernel="matern32" if two_d else "exponential", lengthscale=0.4, domain=dom,
                sensitivity="generic" if two_d else "exp1d")
    rs = r * (1.0 + 0.1 * np.arange(len(n)))
    ev = ComposedEvent.of([posterior_sample_event(k, float(rk), sigma, eta=eta, **opts) for k, rk in zip(n, rs)])
    cb = ComposedBatch.of(posterior_sample_batch(np.asarray(n), rs, sigma, eta=eta, **opts))
    alphas = np.array([1.01, 1.5, 3.0, 1.0 + 0.99 * (ev.alpha_max - 1.0)])
    np.testing.assert_allclose(cb.rdp(alphas)[0], ev.rdp(alphas), rtol=1e-12)
    assert cb.alpha_max()[0] == ev.alpha_max
    e1 = float(accountant.epsilon(cb, delta).epsilon[0])
    e2 = float(accountant.epsilon(ev, delta).epsilon)
    assert e1 == pytest.approx(e2, rel=1e-9, abs=1e-12)


def test_prefix_compositions_give_the_spent_epsilon_after_each_round():
    plan = plan_1d(rounds=9, epsilon=4.0, delta=1e-3)
    ev = scalar_composition(plan)
    for k in (1, 4, 8):
        prefix = ComposedEvent.of([e for e, _ in ev.events[:k]])
        assert plan.cumulative_epsilon[k - 1] == pytest.approx(float(accountant.epsilon(prefix, 1e-3).epsilon), rel=1e-9)
    assert np.all(np.diff(plan.cumulative_epsilon) >= -1e-12)
    assert plan.cumulative_epsilon[-1] == pytest.approx(plan.epsilon, rel=1e-9)
    assert plan.round_epsilon[0] == pytest.approx(plan.cumulative_epsilon[0], rel=1e-12)


def test_composed_batch_rejects_bad_weights():
    b = posterior_sample_batch(np.arange(1, 4), 2.0, 1.0, kernel="exponential", lengthscale=0.3, sensitivity="exp1d")
    with pytest.raises(InvalidParameterError):
        ComposedBatch.of(b, weights=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(InvalidParameterError):
        ComposedBatch.of(b, weights=np.ones((2, 5)))
    with pytest.raises(InvalidParameterError):
        ComposedBatch.of(b).item()
    # weights are counts: 2 x an event = the event used twice
    cb = ComposedBatch.of(b, weights=np.array([2.0, 0.0, 1.0]))
    ev = ComposedEvent.of([(posterior_sample_event(1, 2.0, 1.0, kernel="exponential", lengthscale=0.3,
                                                   sensitivity="exp1d"), 2),
                           posterior_sample_event(3, 2.0, 1.0, kernel="exponential", lengthscale=0.3,
                                                  sensitivity="exp1d")])
    np.testing.assert_allclose(cb.rdp(np.array([1.2, 2.0]))[0], ev.rdp(np.array([1.2, 2.0])), rtol=1e-12)


SCHEDULE = st.one_of(st.just("equal"), st.tuples(st.just("early"), st.floats(1.01, 10.0)),
                     st.tuples(st.just("custom"), st.integers(0, 2**31 - 1)))


@settings(max_examples=15)
@given(rounds=st.integers(2, 30), epsilon=st.floats(0.05, 2000.0), schedule=SCHEDULE, knob=st.sampled_from(["r", "eta"]),
       log_delta=st.floats(-10, -1))
def test_a_planned_run_never_exceeds_its_budget(rounds, epsilon, schedule, knob, log_delta):
    delta = 10.0 ** log_delta
    kw: dict = {"knob": knob}
    if knob == "eta":
        kw["r"] = 1.0
    if schedule == "equal":
        kw["schedule"] = "equal"
    elif schedule[0] == "early":
        kw.update(schedule="early", early_factor=schedule[1])
    else:
        kw["schedule"] = np.random.default_rng(schedule[1]).uniform(0.5, 3.0, size=rounds - 1)
    try:
        plan = plan_1d(rounds=rounds, epsilon=epsilon, delta=delta, **kw)
    except InfeasibleTargetError:
        return  # a budget no value in range can meet is refused, never exceeded
    assert plan.epsilon <= epsilon
    assert float(accountant.epsilon(scalar_composition(plan), delta).epsilon) <= epsilon
    assert np.all(plan.cumulative_epsilon <= epsilon * (1 + 1e-9))
    # any prefix (a run stopped early) certifies no more than the whole plan
    k = max(2, rounds // 2)
    _, cert = released_certificate(plan, k)
    assert cert is None or cert.epsilon <= plan.epsilon
    # the knob follows the schedule: r_t (or eta_t) = s m_t
    knob_values = plan.r if knob == "r" else plan.eta
    ratio = knob_values / plan.multipliers
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_more_noise_early_means_cheaper_early_rounds():
    eq = plan_1d(rounds=12, epsilon=5.0, delta=1e-3)
    early = plan_1d(rounds=12, epsilon=5.0, delta=1e-3, schedule="early", early_factor=3.0)
    assert early.r[0] == pytest.approx(3.0 * early.r[-1])
    assert early.round_epsilon[0] < eq.round_epsilon[0] and early.round_epsilon[-1] > eq.round_epsilon[-1]
    assert early.epsilon <= 5.0 and eq.epsilon <= 5.0


def test_without_a_budget_the_certificate_states_the_cost_of_the_given_r():
    plan = plan_1d(rounds=6, r=0.2)
    assert plan.calibration is None and np.all(plan.r == 0.2)
    assert plan.epsilon > 100  # the model's own ridge: essentially no privacy, and the certificate says so


def test_bad_plans_are_refused():
    with pytest.raises(InvalidParameterError, match="rounds"):
        plan_1d(rounds=1, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="r must be given"):
        plan_1d()
    with pytest.raises(InvalidParameterError, match="r must be left out"):
        plan_1d(epsilon=1.0, r=1.0)
    with pytest.raises(InvalidParameterError, match="r must be given"):
        plan_1d(epsilon=1.0, knob="eta")
    with pytest.raises(InvalidParameterError, match="schedule"):
        plan_1d(epsilon=1.0, schedule="late")
    with pytest.raises(InvalidParameterError, match="schedule"):
        plan_1d(epsilon=1.0, schedule=[1.0, 2.0])
    with pytest.raises(InfeasibleTargetError, match="cannot cover 1 round"):
        plan_1d(rounds=2, epsilon=0.5, r_bounds=(0.01, 0.1))


def counting(objective):
    calls = []

    def f(x):
        calls.append(x)
        return objective(x)
    return f, calls


def test_ledger_is_charged_once_for_the_whole_plan_before_any_round(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    plan = plan_1d(rounds=6, epsilon=2.0, delta=1e-3)
    obj, calls = counting(lambda x: float(np.sin(6 * x[0])))
    res = optimize(plan, obj, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=plan.epsilon * (1 + 1e-6),
                   budget_delta=plan.delta)
    assert len(calls) == 6 and res.status == "completed"
    entries = led.entries("fp")
    assert len(entries) == 1 and entries[0].status == "completed"
    assert entries[0].epsilon == plan.epsilon
    assert res.charge.spent_after.epsilon == pytest.approx(plan.epsilon, rel=1e-9)
    # a second run does not fit the budget: refused before any objective call
    obj2, calls2 = counting(lambda x: 0.0)
    with pytest.raises(BudgetExceededError):
        optimize(plan, obj2, led, np.random.default_rng(1), fingerprint="fp")
    assert calls2 == [] and len(led.entries("fp")) == 1


def test_only_an_unchanged_plan_is_charged_and_run(tmp_path):
    """Red team round 15: optimize charged a plan's stored event and ran whatever r, M_Y, rounds and candidates the
    object held: r edited in place (charged epsilon 2, the run's event epsilon 1.7e10), dataclasses.replace(plan,
    M_Y=100) (responses up to 50 used unclipped), rounds set to 60 (charged for 30). The arrays are immutable and
    only a plan plan_thompson made, unchanged, is charged; an objective cannot change the run's plan mid-run."""
    import dataclasses

    led = Ledger(tmp_path / "l.sqlite")
    plan = plan_1d(rounds=6, epsilon=2.0, delta=1e-3)
    for a in (plan.r, plan.eta, plan.multipliers, plan.candidates.points):
        with pytest.raises(ValueError):
            a[0] = 1e-3
    other_points = np.linspace(-5, 5, plan.candidates.m)[:, None]
    changed = [dataclasses.replace(plan, M_Y=100.0), dataclasses.replace(plan, rounds=60)]
    for field, value in (("rounds", 60), ("r", plan.r * 1e-3), ("_extra", 1)):
        p = plan_1d(rounds=6, epsilon=2.0, delta=1e-3)
        object.__setattr__(p, field, value)
        changed.append(p)
    p = plan_1d(rounds=6, epsilon=2.0, delta=1e-3)
    object.__setattr__(p.candidates, "given", other_points)
    changed.append(p)
    for p in changed:
        obj, calls = counting(lambda x: 0.0)
        with pytest.raises(InvalidParameterError, match="made by plan_thompson and unchanged"):
            optimize(p, obj, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=50.0)
        assert calls == [] and led.dataset("fp") is None

    def meddling(x):
        object.__setattr__(plan, "M_Y", 100.0)
        object.__setattr__(plan.candidates, "given", other_points)
        return 50.0

    res = optimize(plan, meddling, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=50.0)
    assert res.status == "completed" and np.all(np.abs(res.responses) <= 1.0)
    assert np.all((res.queries >= 0) & (res.queries <= 1))


def test_a_plan_whose_event_or_certificate_was_edited_inside_is_refused(tmp_path):
    """Red team round 16: the identity check passed a plan whose event and certificate were edited in place
    (object.__setattr__ on the frozen event: a run calibrated for epsilon 5 charged 0.05). optimize computes the
    event and certificate again from the plan's fields and refuses a plan whose stored ones differ."""
    led = Ledger(tmp_path / "l.sqlite")
    cheap = plan_1d(rounds=6, epsilon=0.05, delta=1e-3)
    for edit in (lambda p: object.__setattr__(p.event, "events", cheap.event.events),
                 lambda p: object.__setattr__(p.certificate, "epsilon", cheap.certificate.epsilon)):
        plan = plan_1d(rounds=6, epsilon=5.0, delta=1e-3)
        edit(plan)
        plan.event.__dict__.pop("_stacked_cache", None)
        obj, calls = counting(lambda x: 0.0)
        with pytest.raises(InvalidParameterError, match="no longer follows from its settings"):
            optimize(plan, obj, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=50.0)
        assert calls == [] and led.dataset("fp") is None
    plan = plan_1d(rounds=6, epsilon=5.0, delta=1e-3)

    def meddling(x):
        object.__setattr__(plan.certificate, "epsilon", 0.05)
        return 0.0

    res = optimize(plan, meddling, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=50.0)
    assert res.certificate.epsilon > 4.9 and led.entries("fp")[0].epsilon > 4.9    # the run's own, not 0.05


def test_a_new_datasets_budget_delta_is_privgps_default_not_the_runs(tmp_path):
    """Red team round 11: the run's own delta (--delta) became the record source's budget delta, so that every
    later charge composed at it. It is privgp's default for the planned rounds unless a budget delta is given."""
    from privgp.mechanisms.release import default_delta

    led = Ledger(tmp_path / "l.sqlite")
    plan = plan_1d(rounds=6, epsilon=2.0, delta=1e-3)
    optimize(plan, lambda x: 0.0, led, np.random.default_rng(0), fingerprint="fp", budget_epsilon=50.0)
    assert led.dataset("fp").budget_delta == default_delta(6) < plan.delta


def test_a_run_that_fails_mid_way_keeps_the_full_charge(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    plan = plan_1d(rounds=10, epsilon=2.0, delta=1e-3)

    def obj(x, state={"n": 0}):  # noqa: B006 (a call counter, on purpose)
        state["n"] += 1
        if state["n"] == 4:
            raise RuntimeError("assay failed")
        return 0.5

    res = optimize(plan, obj, led, np.random.default_rng(0), fingerprint="fp2", budget_epsilon=10.0, budget_delta=plan.delta)
    assert res.status == "stopped" and "round 4" in res.failure and "assay failed" in res.failure
    assert "assay failed" not in res.stop_reason and res.stop_reason.startswith("round 4: ")
    assert res.released == 4 and res.responses.shape == (3,)
    assert res.certificate.epsilon < plan.epsilon          # what was released
    assert led.dataset("fp2").spent.epsilon == pytest.approx(plan.epsilon, rel=1e-9)  # what was charged
    assert [e.n for e, _ in res.event.events] == [1, 2, 3]


def test_run_without_ledger_matches_plan_and_round_one_is_free():
    plan = plan_1d(rounds=5, epsilon=1.0, delta=1e-3)
    res = run_thompson(plan, lambda x: 0.0, np.random.default_rng(0))
    assert res.certificate is plan.certificate
    _, none = released_certificate(plan, 1)
    assert none is None
    assert res.history()["round_epsilon"].iloc[0] == 0.0
