"""The event contract (privgp.accounting.events, module docstring; docs/architecture.md "Privacy events").

Every concrete event class of privgp -- found by walking PrivacyEvent's subclasses after importing every
module of privgp.accounting and privgp.mechanisms, not from a list -- has one instance in FACTORY (a new
class without an entry fails here), states its neighbouring relation, is registered under its kind, and
round-trips unchanged through its JSON, a real SQLite ledger (charge, reopen, reload: same events, the
accountant's spent epsilon) and a certificate (to_dict, reload, recompute: equal). Composing events of
different neighbouring relations is refused.
"""
from __future__ import annotations

import gc
import importlib
import json
import math
import pkgutil
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import privgp.accounting
import privgp.mechanisms
from privgp.accounting import accountant, events
from privgp.accounting.certificate import PrivacyCertificate, certify
from privgp.accounting.events import (
    EVENT_TYPES,
    ApproxDpEvent,
    ApproxOnlyEvent,
    ComposedEvent,
    GaussianCurve,
    GaussianEvent,
    GdpEvent,
    Neighbouring,
    PrivacyEvent,
    PureDpEvent,
    ZcdpEvent,
    event_from_dict,
    event_from_json,
    register_event,
)
from privgp.accounting.functional_noise import DPSetConvEvent, FunctionalEvent
from privgp.accounting.linear_regression import LinearRegressionPosteriorEvent
from privgp.accounting.sampler_bounds import SampleThenOptimiseEvent
from privgp.accounting.selection import liu_talwar_budget
from privgp.accounting.tabulated import TabulatedRdpEvent
from privgp.errors import InvalidParameterError, NumericalError
from privgp.ledger import Ledger
from privgp.mechanisms.posterior_sample import posterior_sample_event

DELTA = 1e-3
#: subclasses without a kind of their own: bases of event classes, never serialised themselves
ABSTRACT = {GaussianCurve, ApproxOnlyEvent}


def _posterior():
    return posterior_sample_event(10, 1.0, 5.0, kernel="exponential", lengthscale=1.0, M_Y=1.0, L=2)


#: one valid instance of every concrete event class, by kind
FACTORY = {
    "gdp": lambda: GdpEvent(0.8),
    "gaussian": lambda: GaussianEvent(1.0, 2.0),
    "zcdp": lambda: ZcdpEvent(0.05),
    "pure_dp": lambda: PureDpEvent(0.5),
    "approx_dp": lambda: ApproxDpEvent(0.3, 1e-7, "a test's (epsilon, delta) statement"),
    "composed": lambda: ComposedEvent.of([(GaussianEvent(1.0, 3.0), 2), ZcdpEvent(0.02), _posterior()]),
    "functional": lambda: FunctionalEvent(sensitivity=1.5, noise_std=4.0),
    "dpsetconv": lambda: DPSetConvEvent(clip=1.0, sigma_signal=4.0, sigma_density=3.0),
    "blr_posterior": lambda: LinearRegressionPosteriorEvent(n=1000, alpha=1.0, beta=4.0, x_h=1.0, x_l=0.5, c=10.0,
                                                            gamma1=0.3),
    "posterior_sample": _posterior,
    "sample_then_optimise": lambda: SampleThenOptimiseEvent(
        posterior_sample_event(10, 1.0, 5.0, kernel="exponential", lengthscale=1.0, M_Y=1.0), 1.0 / 11.0, 200),
    "selection": lambda: liu_talwar_budget(1.0, 1e-6, 0.05).event,
    "tabulated_rdp": lambda: TabulatedRdpEvent((2.0, 4.0, 8.0), (0.1, 0.3, 0.9), "a migrated ledger"),
}


def _import_all(package) -> None:
    for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
        try:
            importlib.import_module(info.name)
        except ImportError:   # an optional extra that is not installed defines no event
            pass


def _privgp_event_classes() -> list[type[PrivacyEvent]]:
    _import_all(privgp.accounting)
    _import_all(privgp.mechanisms)
    out, stack = [], [PrivacyEvent]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("privgp.") and sub not in out:
                out.append(sub)
    return out


CLASSES = _privgp_event_classes()
CONCRETE = {c.__dict__["kind"]: c for c in CLASSES if c.__dict__.get("kind")}


def test_every_event_class_has_an_instance_here_and_is_registered():
    kindless = [c.__name__ for c in CLASSES if not c.__dict__.get("kind") and c not in ABSTRACT]
    assert not kindless, f"event classes without a kind of their own (name one, or add them to ABSTRACT): {kindless}"
    missing = sorted(set(CONCRETE) - set(FACTORY))
    assert not missing, f"no instance in FACTORY for the event kinds {missing}: add one"
    assert not sorted(set(FACTORY) - set(CONCRETE)), "FACTORY names kinds that no event class has"
    for kind, cls in CONCRETE.items():
        assert EVENT_TYPES[kind] is cls and privgp.accounting.EVENT_TYPES[kind] is cls
        assert register_event(cls) is cls  # the old decorator: a check that passes


@pytest.mark.parametrize("kind", sorted(FACTORY))
def test_an_event_states_its_neighbouring_relation(kind):
    cls, ev = CONCRETE[kind], FACTORY[kind]()
    assert type(ev) is cls
    if not cls.composite:
        assert isinstance(cls.__dict__["neighbouring"], Neighbouring)
    # every privgp event is replace-one today (seeds 000-004); an add/remove class changes the docs' table
    assert ev.neighbouring is Neighbouring.REPLACE_ONE
    assert "neighbouring" not in ev.to_dict() and "neighbouring" not in ev.details()


@pytest.mark.parametrize("kind", sorted(FACTORY))
def test_an_event_round_trips_through_json(kind):
    ev = FACTORY[kind]()
    d = ev.to_dict()
    assert d["type"] == kind
    back = event_from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == ev and type(back) is type(ev) and back.to_dict() == d
    assert event_from_json(ev.to_json()) == ev


@pytest.mark.parametrize("kind", sorted(FACTORY))
def test_an_event_round_trips_through_a_ledger(kind, tmp_path):
    ev = FACTORY[kind]()
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    fp = led.fingerprint("a dataset")
    led.charge(fp, ev, budget_epsilon=1e9, budget_delta=DELTA, description=kind)
    led.charge(fp, ev, description=kind)
    again = Ledger(path)      # a fresh handle on the file: everything below is read back from SQLite
    entries = again.entries(fp)
    assert [event_from_dict(e.event) for e in entries] == [ev, ev]
    assert [e.epsilon for e in entries] == [float(accountant.epsilon(ev, DELTA).epsilon)] * 2
    spent = again.dataset(fp).spent
    assert spent.entries == 2
    assert spent.epsilon == pytest.approx(float(accountant.epsilon(ComposedEvent.of([ev, ev]), DELTA).epsilon),
                                          rel=1e-12)


@pytest.mark.parametrize("kind", sorted(FACTORY))
def test_an_event_round_trips_through_a_certificate(kind):
    cert = certify(FACTORY[kind](), DELTA, mechanism=f"a {kind} release")
    d = json.loads(cert.to_json())
    back = PrivacyCertificate.from_dict(d)
    assert back == cert and back.to_dict() == d
    assert back.recompute() == cert


@dataclass(frozen=True)
class _AddRemoveGdp(GaussianCurve):
    """A mu-GDP guarantee over add/remove neighbours (no kind: never registered, never stored)."""

    mu: float
    neighbouring: ClassVar[Neighbouring] = Neighbouring.ADD_REMOVE


def test_composing_events_of_different_relations_raises():
    add_remove = _AddRemoveGdp(0.5)
    assert ComposedEvent.of([add_remove, _AddRemoveGdp(0.3)]).neighbouring is Neighbouring.ADD_REMOVE
    for parts in ([GdpEvent(0.5), add_remove], [ComposedEvent.of([GaussianEvent(1.0, 2.0)]), (add_remove, 3)]):
        with pytest.raises(InvalidParameterError, match="neighbouring relation"):
            ComposedEvent.of(parts)
    with pytest.raises(InvalidParameterError, match="neighbouring relation"):
        GdpEvent(0.5) + add_remove


def test_a_new_event_class_registers_itself_when_defined(monkeypatch):
    monkeypatch.setattr(events, "EVENT_TYPES", dict(EVENT_TYPES))   # the session's registry stays as it was

    @dataclass(frozen=True)
    class ContractTestEvent(GaussianCurve):
        mu: float
        kind: ClassVar[str] = "contract_test_gdp"
        neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE

    assert events.EVENT_TYPES["contract_test_gdp"] is ContractTestEvent
    assert event_from_dict({"type": "contract_test_gdp", "mu": 0.5}) == ContractTestEvent(0.5)
    with pytest.raises(TypeError, match="neighbouring relation"):
        @dataclass(frozen=True)
        class NoRelation(GaussianCurve):
            mu: float
            kind: ClassVar[str] = "contract_test_no_relation"
    with pytest.raises(TypeError, match="own kind"):
        @dataclass(frozen=True)
        class InheritsKind(ContractTestEvent):
            pass
    with pytest.raises(TypeError, match="already registered"):
        @dataclass(frozen=True)
        class SameKind(GaussianCurve):
            mu: float
            kind: ClassVar[str] = "gdp"
            neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    del ContractTestEvent
    gc.collect()


def test_an_unknown_kind_imports_the_event_modules_then_fails_clearly(monkeypatch):
    monkeypatch.delitem(EVENT_TYPES, "zcdp")     # as if its module had not been imported yet
    assert event_from_dict({"type": "zcdp", "rho": 0.1}) == ZcdpEvent(0.1)
    assert EVENT_TYPES["zcdp"] is ZcdpEvent
    with pytest.raises(InvalidParameterError, match="import the module that defines it"):
        event_from_dict({"type": "no_such_event_kind", "mu": 1.0})
    with pytest.raises(InvalidParameterError, match="event type"):
        event_from_dict({"type": ["not", "a", "string"]})


def _posterior_events():
    from privgp.mechanisms.posterior_sample import posterior_sample_event
    from privgp.models.domain import Box

    return [posterior_sample_event(10, 1.0, 5.0, sensitivity="exp1d"),
            posterior_sample_event(40, 0.3, 2.0, kernel="matern32", lengthscale=0.4, domain=Box.unit(2), eta=0.5, L=3),
            posterior_sample_event(25, 2.0, float("inf"), kernel="exponential", lengthscale=1.0, domain=None)]


@pytest.mark.parametrize("index", range(3))
def test_a_single_events_search_reads_its_curve_once_and_gets_the_same_bits(index, monkeypatch):
    """The accountant gathers a single event's parameters and order bound once per search: the same guarantee, to
    the bit, as evaluating ``event.rdp`` at every order tried."""
    event = _posterior_events()[index]
    gathered = accountant.epsilon(event, 1e-5, composition="basic")
    monkeypatch.setattr(PrivacyEvent, "_search_curve", lambda e: e.rdp)
    each_order = accountant.epsilon(event, 1e-5, composition="basic")
    assert (gathered.epsilon, gathered.alpha, gathered.rdp) == (each_order.epsilon, each_order.alpha, each_order.rdp)
    assert gathered.method == "rdp" and math.isfinite(gathered.epsilon)


def test_a_curve_that_gives_nan_during_the_search_still_raises(monkeypatch):
    monkeypatch.setattr(events, "EVENT_TYPES", dict(EVENT_TYPES))   # the session's registry stays as it was

    @dataclass(frozen=True)
    class NanAboveThree(PrivacyEvent):
        rho: float
        kind: ClassVar[str] = "contract_test_nan_above_three"
        neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE

        def _params(self):
            return {"rho": self.rho}

        @classmethod
        def _rdp_arrays(cls, alpha, rho):
            return np.where(alpha > 3.0, np.nan, alpha * rho)

    with pytest.raises(NumericalError, match="NaN"):
        accountant.epsilon(NanAboveThree(0.1), 1e-5)
    del NanAboveThree
    gc.collect()
