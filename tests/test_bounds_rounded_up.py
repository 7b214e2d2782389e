"""Every printed privacy bound is on the safe side (red team 16, G3): a certified or spent epsilon/delta, a GDP mu,
an RDP value, a sensitivity bound is printed rounded UP (never below the bound); what an audit found (a lower bound
on the worst case) rounded DOWN (never above what was measured). Each place is driven with a value whose nearest
rounding is on the wrong side (epsilon 5.000004, a certified 11.5538...)."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from privgp.cli.main import main
from privgp.mechanisms.interface import PictureContext, Request, ResponseDisplay, get
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

IDENTITY = ResponseMap(0.0, 1.0)
BOX = Box((0.0, 0.0), (3.0, 2.0))
EPS = 5.000004   # ":g" prints 5


def _ctx(plan) -> PictureContext:
    return PictureContext(domain=plan.domain, axis_labels=("x", "y"), response=ResponseDisplay("y"),
                          response_map=plan.response_map, epsilon=float(plan.certificate.epsilon),
                          delta=float(plan.certificate.delta))


def _plan(name: str, **options):
    return get(name).build(Request(n=200, domain=BOX, response_map=IDENTITY, epsilon=EPS, delta=1e-6, grid=21,
                                   options=options))


def _number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return float(m.group(1))


def test_the_laplace_grids_statement_and_terminal_line_round_up():
    mech = get("laplace-grid")
    plan = _plan("laplace-grid")
    assert f"{plan.event.epsilon:g}" == "5"   # the nearest rounding is below the bound
    statement = mech.report_text(plan, _ctx(plan)).statement
    assert _number(r"scale [0-9.]+ is ([0-9.]+)-DP", statement) >= plan.event.epsilon
    line = "\n".join(mech.summary_lines(plan))
    assert _number(r"pure ([0-9.]+)-DP, smoothed", line) >= plan.event.epsilon


def test_the_grids_zcdp_rho_rounds_up():
    mech = get("grid")
    for k in range(40):   # an epsilon whose rho rounds down to 6 digits
        plan = get("grid").build(Request(n=200, domain=BOX, response_map=IDENTITY, epsilon=1.0 + k / 7, delta=1e-6,
                                         grid=21))
        if float(f"{plan.event.rho:.6g}") < plan.event.rho:
            break
    else:
        pytest.fail("no epsilon found whose rho rounds down")
    statement = mech.report_text(plan, _ctx(plan)).statement
    assert _number(r"\u03c1-zCDP with \u03c1 = ([0-9.e+-]+)", statement) >= plan.event.rho
    assert _number(r"L2 sensitivity ([0-9.e+-]+)", statement) >= plan.sensitivity > 2.0


def test_the_float_grids_gdp_mu_rounds_up():
    """The float-noise grid of certificates written before 2026-11-26 (its report is redone by verify)."""
    from privgp.mechanisms.registered.grid import plan_grid

    mech = get("grid")
    for k in range(40):   # an epsilon whose mu rounds down to 6 digits
        plan = plan_grid(200, BOX, IDENTITY, epsilon=1.0 + k / 7, delta=1e-6, grid=21, _noise="float")
        mu = 2.0 / plan.noise_std
        if float(f"{mu:.6g}") < mu:
            break
    else:
        pytest.fail("no epsilon found whose mu rounds down")
    statement = mech.report_text(plan, _ctx(plan)).statement
    assert _number(r"\u03bc-GDP with \u03bc = ([0-9.e+-]+)", statement) >= mu


@pytest.mark.parametrize("name, pattern, value", [
    ("functional", r"\u0394 \u2264 ([0-9.e+-]+)", lambda p: p.sensitivity),
    ("sparse-gp", r"L2 sensitivity ([0-9.e+-]+)", lambda p: p.spec.sensitivity()),
])
def test_sensitivity_bounds_in_statements_round_up(name, pattern, value):
    mech = get(name)
    plan = _plan(name)
    assert float(f"{value(plan):.6g}") < value(plan)   # the nearest rounding is below the bound
    statement = mech.report_text(plan, _ctx(plan)).statement
    assert _number(pattern, statement) >= value(plan)
    terminal = "\n".join(mech.summary_lines(plan))
    assert _number(r"sensitivity (?:<= )?([0-9.e+-]+)", terminal) >= value(plan)


def test_the_posterior_samples_target_and_delta_round_up():
    mech = get("posterior-sample")
    plan = get("posterior-sample").build(Request(n=200, domain=BOX, response_map=IDENTITY, epsilon=EPS,
                                                 delta=1 / 2110, grid=21))
    assert plan.calibration and plan.target_epsilon == EPS
    assert _number(r"for target epsilon ([0-9.]+)", "\n".join(mech.summary_lines(plan))) >= EPS
    rep = mech.report_text(plan, _ctx(plan))
    calibrated = next(row[2] for row in rep.hyperparameters if row[2].startswith("calibrated"))
    assert _number(r"at most the target ([0-9.]+)", calibrated) >= EPS
    delta_row = next(row for row in rep.hyperparameters if row[0] == "\u03b4")
    assert f"{1 / 2110:.6g}" == "0.000473934" and float(delta_row[1]) >= 1 / 2110


def test_the_tuned_mechanisms_per_run_guarantee_rounds_up():
    from privgp.accounting.selection import SelectionEvent

    mech = get("posterior-sample-tuned")
    plan = mech.build(Request(n=200, domain=BOX, response_map=IDENTITY, epsilon=4.99921, delta=1e-6, grid=21,
                              options={"lengthscales": [0.3, 1.0]}))
    b = plan.budget
    assert float(f"{b.epsilon:.6g}") < b.epsilon and float(f"{b.epsilon:.4g}") < b.epsilon   # 1.6664033...
    pat = r"each \(([0-9.e+-]+), ([0-9.e+-]+)\)-DP"
    for text in (mech.report_text(plan, _ctx(plan)).statement, "\n".join(mech.summary_lines(plan))):
        m = re.search(pat, text)
        assert m and float(m.group(1)) >= b.epsilon and float(m.group(2)) >= b.delta, text
    # the certificate's assumption states the same per-run guarantee, rounded up
    event = SelectionEvent(epsilon=1.0000004, delta=1.23456e-7, gamma=b.gamma, max_draws=b.max_draws)
    said = next(a for a in event.assumptions() if "fresh randomness" in a)
    m = re.search(r"is \(([0-9.e+-]+), ([0-9.e+-]+)\)-DP", said)
    assert m and float(m.group(1)) >= 1.0000004 and float(m.group(2)) >= 1.23456e-7, said


def test_the_calculators_details_and_rdp_round_up():
    from privgp.accounting import certify
    from privgp.accounting.events import GaussianEvent
    from privgp.mechanisms import posterior_sample_event

    noise = 8.449357778654091    # mu = 0.2367043806...: ".6g" gives 0.236704
    text = certify(GaussianEvent(sensitivity=2.0, noise_std=noise), delta=1e-6).summary()
    assert _number(r"mu:\s+([0-9.]+)", text) >= 2.0 / noise
    ev = posterior_sample_event(10, 1.0, 5.0, kernel="exponential", lengthscale=1.0, sensitivity="exp1d", L=10)
    cert = certify(ev, delta=0.05)
    text = cert.summary()
    for key in ("V_n", "Delta_n", "tau"):
        assert _number(rf"{key}:\s+([0-9.]+)", text) >= cert.details[key], key
    assert _number(r"alpha_max:\s+([0-9.]+)", text) <= cert.details["alpha_max"]
    assert _number(r"RDP ([0-9.]+)", text) >= cert.rdp


def test_audit_lira_prints_the_certified_epsilon_up_and_the_lower_bound_down(capsys):
    args = ["audit", "lira", "--n", "10", "--x0", "0.5", "--lengthscale", "1", "--r", "2", "--sigma", "0.5",
            "--M-xi", "0", "--L", "3", "--n-shadow", "100", "--n-eval", "100", "--attack", "paper", "--delta", "0.05",
            "--seed", "0"]
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"{d['epsilon_certified']:.4g}" == "11.55"   # the nearest rounding is below the bound
    assert _number(r"epsilon certified \(upper\)\s+([0-9.e+]+)", text) >= d["epsilon_certified"]
    assert _number(r"epsilon LOWER bound\s+([0-9.e+-]+)", text) <= d["epsilon_lower_bound"]


def test_audit_tightness_prints_found_down_and_certified_up(capsys):
    args = ["audit", "tightness", "--n", "4", "--r", "0.5", "--sigma", "1", "--restarts", "1", "--test-points", "0",
            "--lood-datasets", "1", "--delta", "1e-3"]
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert _number(r"certificate\s+\(([0-9.e+-]+),", text) >= d["epsilon_certified"]
    assert _number(r"exact D_alpha found \(one path\)\s+([0-9.e+-]+)", text) <= d["rdp_found_one_path"]
    assert _number(r"certified RDP bound \(one path\)\s+([0-9.e+-]+)", text) >= d["rdp_certified_one_path"]
    assert _number(r"found / certified\s+([0-9.e+-]+)", text) <= d["rdp_found_one_path"] / d["rdp_certified_one_path"]


def test_audit_lood_prints_the_certificate_up_and_what_it_found_down(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["audit", "lood", "--top", "2", "--candidates", "11", "--alpha", "2"]
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    m = re.search(r"certificate\s+\(([0-9.e+-]+), ([0-9.e+-]+)\)-DP.*: ([0-9.e+-]+)\n", text)
    assert m and float(m.group(1)) >= d["epsilon_certified"] and float(m.group(2)) >= d["delta"], text
    assert float(m.group(3)) >= d["certified_rdp_at_alpha"]
    assert _number(r"replace-one found  max ([0-9.e+-]+)", text) <= d["replace_one_max_found"]
    assert _number(r"KL median ([0-9.e+-]+)", text) <= d["kl_median"]
    assert _number(r"KL median [0-9.e+-]+, max ([0-9.e+-]+)", text) <= d["kl_max"]


def test_audit_sampler_rounds_its_columns_to_the_safe_side(tmp_path, capsys):
    from privgp.formatting import format_lower, format_upper

    args = ["audit", "sampler", "--sampler", "sto", "--n", "4", "--steps", "0,10", "--restarts", "1",
            "--png", str(tmp_path / "a.png")]
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert _number(r"certified epsilon \(seed 000\): ([0-9.e+-]+)", text) >= d["epsilon_posterior_certified"]
    for row in d["rows"]:
        t = "inf" if row["steps"] is None or row["steps"] == "inf" else str(int(row["steps"]))
        line = next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [t])
        cert = row["epsilon_iterate_certified"]
        if isinstance(cert, (int, float)):
            assert line[1] == format_upper(cert, 4)
        assert line[2:] == [format_lower(row[k], 4) for k in ("epsilon_iterate_pair", "epsilon_iterate_lower",
                                                               "epsilon_posterior_pair")]


def test_the_sampler_audits_verdict_states_the_factor_down_and_the_certificate_up():
    from privgp.experiments.studies.sampler_audit import describe_factor

    rows = [SimpleNamespace(steps=10, epsilon_iterate_lower=11.5538)]
    audit = SimpleNamespace(rows=rows, epsilon_posterior_certified=5.000004,
                            worst_factor=lambda: 11.5538 / 5.000004)
    text = describe_factor(audit)
    assert _number(r"at least ([0-9.]+) times", text) <= 11.5538 / 5.000004
    assert _number(r"times the certified ([0-9.]+)", text) >= 5.000004


def test_the_demo_states_its_epsilon_rounded_up(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "--json"]) == 0
    eps = json.loads(capsys.readouterr().out)["epsilon"]
    assert main(["demo", "--out", str(tmp_path / "e")]) == 0
    assert _number(r"releasing them is \(([0-9.]+),", capsys.readouterr().out) >= eps


def test_infeasibility_messages_state_epsilon_rounded_up():
    from privgp.accounting import accountant
    from privgp.errors import InfeasibleTargetError
    from privgp.mechanisms.posterior_sample import calibrate_L

    with pytest.raises(InfeasibleTargetError) as err:
        calibrate_L(0.01, 1e-3, n=10, r=1.0, sigma=1.0, L_max=1, kernel="exponential", lengthscale=1.0,
                    sensitivity="exp1d")
    from privgp.mechanisms import posterior_sample_event

    own = float(accountant.epsilon(posterior_sample_event(10, 1.0, 1.0, kernel="exponential", lengthscale=1.0,
                                                          sensitivity="exp1d"), 1e-3, conversion="improved").epsilon)
    assert _number(r"gives epsilon ([0-9.e+-]+) >", str(err.value)) >= own


def test_the_ledger_states_the_events_own_epsilon_rounded_up(tmp_path):
    from privgp.accounting import accountant
    from privgp.accounting.events import GaussianEvent
    from privgp.errors import InvalidParameterError
    from privgp.ledger import Ledger

    event = GaussianEvent(sensitivity=2.0, noise_std=8.449357778654091)
    own = float(accountant.epsilon(event, 1e-6, conversion="improved", composition="profile").epsilon)
    ledger = Ledger(tmp_path / "l.sqlite", create_on_charge=True)
    with pytest.raises(InvalidParameterError) as err:
        ledger.charge("f" * 64, event, epsilon=own / 2, delta=1e-6, budget_epsilon=10.0, budget_delta=1e-6)
    assert _number(r"own epsilon at delta=[0-9.e+-]+ \(([0-9.e+-]+)\)", str(err.value)) >= own


def test_verify_states_the_rebuilt_guarantee_rounded_up(tmp_path, capsys):
    """verify printed the rebuilt guarantee rounded to nearest at 10 digits (4.999998993 for 4.99999899326...):
    rounded up, as every bound privgp prints."""
    import json
    import re

    from privgp.cli.main import main

    out = tmp_path / "out"
    assert main(["release", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(out), "--seed", "1"]) == 0
    capsys.readouterr()
    assert main(["verify", str(out / "certificate.json")]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    eps = json.loads((out / "certificate.json").read_text())["certificate"]["epsilon"]
    shown = float(re.search(r"rebuilt from its public settings, \(([0-9.e+-]+),", line).group(1))
    assert shown >= eps and f"{eps:.10g}" != f"{shown:.10g}"
