"""LiRA audits (privgp.audit.membership.lira): the paper's qualitative claims on small configurations, lower <= certified
on every audited setting, exact >= paper, the CLI contract and the tightness audit."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from privgp.audit.membership.game import MembershipGame, play
from privgp.audit.membership.lira import audit_lira
from privgp.audit.tightness.settings import audit_tightness
from privgp.cli.main import main

SIZE = 1500


def audit(r, sigma, L, attacks=("paper",), seed=0, **kw):
    """Audit one setting; every audited private setting must have lower bound <= certified epsilon."""
    res = audit_lira(MembershipGame(r=r, sigma=sigma, L=L), attacks=attacks, n_shadow=SIZE, n_eval=SIZE, seed=seed,
                     keep_scores=True, **kw)
    for name, one in res.items():
        if name != "benchmark":
            assert 0.0 <= one.lower.epsilon <= one.epsilon_certified, one.to_dict()
    return res


def auc_se(n_in, n_out):
    """Standard error of an AUC near 1/2 (Mann-Whitney null variance)."""
    return math.sqrt((n_in + n_out + 1) / (12 * n_in * n_out))


SE = auc_se(SIZE, SIZE)


def test_success_collapses_toward_random_guessing_as_r_grows():
    aucs = [audit(r, 0.5, 1)["paper"].auc for r in (0.03, 0.3, 10.0)]
    assert aucs[0] > aucs[1] + 5 * SE > aucs[2] + 10 * SE
    assert abs(aucs[2] - 0.5) < 0.1 * (aucs[0] - 0.5)            # the excess over guessing shrinks > 10x
    assert abs(aucs[2] - 0.5) < 5 * SE                          # ... to indistinguishable from guessing


@pytest.mark.parametrize("sigma", [100.0, math.inf])
def test_large_sigma_alone_leaves_residual_signal(sigma):
    res = audit(0.01, sigma, 1)["paper"]
    assert res.auc > 0.5 + 20 * SE
    assert res.lower.significant and res.lower.epsilon > 1.0    # a certified-at-95% leakage
    assert res.epsilon_certified > 100.0                        # and the bound says so too


def test_success_grows_with_the_number_of_released_paths():
    res = [audit(1.0, 5.0, L)["paper"] for L in (1, 10, 100)]
    aucs = [a.auc for a in res]
    assert aucs[0] + 3 * SE < aucs[1] and aucs[1] + 3 * SE < aucs[2]
    eps = [a.epsilon_certified for a in res]
    assert eps[0] < eps[1] < eps[2] and eps[2] < 100 * eps[0]   # epsilon grows with L, sub-linearly


def paired_bootstrap_se(a_in, a_out, b_in, b_out, rng, reps=200):
    """Standard error of AUC(a) - AUC(b) on the same evaluation sets (paired bootstrap)."""
    lab = np.r_[np.ones(a_in.size), np.zeros(a_out.size)]
    diffs = []
    for _ in range(reps):
        i, o = rng.integers(0, a_in.size, a_in.size), rng.integers(0, a_out.size, a_out.size)
        diffs.append(roc_auc_score(lab, np.r_[a_in[i], a_out[o]]) - roc_auc_score(lab, np.r_[b_in[i], b_out[o]]))
    return float(np.std(diffs))


@pytest.mark.parametrize("r,sigma,L", [(0.3, 1.0, 10), (0.5, 0.5, 5)])
def test_exact_attack_is_at_least_as_strong_as_the_paper_attack(r, sigma, L):
    res = audit(r, sigma, L, attacks=("paper", "exact"))
    p, e = res["paper"], res["exact"]
    se = paired_bootstrap_se(e.scores_in, e.scores_out, p.scores_in, p.scores_out, np.random.default_rng(0))
    assert e.auc >= p.auc - 3 * se
    assert e.roc.tpr_at_fpr[2] >= p.roc.tpr_at_fpr[2] - 3 * math.sqrt(0.25 / SIZE)


def test_benchmark_is_not_private_and_dominates():
    res = audit(1.0, 5.0, 3, attacks=("paper", "benchmark"))
    assert math.isinf(res["benchmark"].epsilon_certified)
    assert res["benchmark"].auc > res["paper"].auc + 5 * SE


def test_attack_randomness_does_not_perturb_the_evaluation_data():
    g = MembershipGame(r=0.2, sigma=0.5, L=2)
    a = audit_lira(g, attacks=("paper",), n_shadow=300, n_eval=200, seed=4, keep_scores=True, restarts=1)["paper"]
    b = audit_lira(g, attacks=("paper",), n_shadow=300, n_eval=200, seed=4, keep_scores=True, restarts=4)["paper"]
    data, _ = play(g, 300, 200, 4)
    assert a.scores_in.shape == b.scores_in.shape == data.eval_in.fhat.shape
    c = audit_lira(g, attacks=("exact",), n_shadow=300, n_eval=200, seed=4)["exact"]
    d = audit_lira(g, attacks=("paper", "exact"), n_shadow=300, n_eval=200, seed=4)["exact"]
    assert c.auc == d.auc      # the paper fit (which draws from the attack stream) changes nothing for exact


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_lira_json_contract(capsys):
    code, out, _ = run_cli(capsys, "audit", "lira", "--n", "10", "--x0", "0.5", "--ell", "1", "--r", "0.1",
                           "--sigma", "0.5", "--m-xi", "0", "--L", "3", "--n-shadow", "300", "--n-eval", "300",
                           "--attack", "exact", "--covariates", "stratified", "--delta", "0.05", "--seed", "0",
                           "--json")
    assert code == 0
    d = json.loads(out)
    for key in ("auc", "tpr_at_fpr", "epsilon_lower_bound", "epsilon_certified", "seconds"):
        assert key in d
    assert set(d["tpr_at_fpr"]) == {"0.01", "0.05", "0.1"}
    assert d["covariates"] == "stratified" and d["attack"] == "exact"
    assert 0 <= d["epsilon_lower_bound"] <= d["epsilon_certified"]
    code, out, _ = run_cli(capsys, "audit", "lira", "--r", "1", "--sigma", "5", "--n-shadow", "200", "--n-eval", "100")
    assert code == 0 and "epsilon LOWER bound" in out and "AUC" in out


@pytest.mark.parametrize("argv,needle", [
    (["--n", "1"], "n must be"), (["--L", "0"], "L must be"), (["--fpr", "0.1", "1.0"], "--fpr must be"),
    (["--fpr", "0"], "--fpr must be"), (["--n-shadow", "20"], "--n-shadow must be"), (["--m-xi", "1"], "--m-xi must be"),
    (["--delta", "2"], "delta")])
def test_cli_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run_cli(capsys, "audit", "lira", "--r", "0.5", "--sigma", "1", "--n-eval", "50", *argv)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""


def test_tightness_found_divergence_is_below_the_bound(capsys):
    res = audit_tightness(MembershipGame(n=4, r=0.5, sigma=1.0, L=3), rng=np.random.default_rng(0), restarts=2,
                          test_points=1)
    assert 0 < res.found <= res.certified * (1 + 1e-9)
    assert res.alpha_source == "certificate" and 1 < res.alpha
    d = res.to_dict()
    assert d["rdp_found_L_paths"] == pytest.approx(3 * res.found)
    code, out, _ = run_cli(capsys, "audit", "tightness", "--n", "4", "--r", "0.5", "--sigma", "1", "--alpha", "2",
                           "--restarts", "1", "--test-points", "0", "--json")
    d = json.loads(out)
    assert code == 0 and d["alpha"] == 2.0 and d["found_le_certified"]
    assert d["rdp_found_one_path"] <= d["rdp_certified_one_path"]


def test_the_tightness_text_states_the_certified_epsilon(capsys):
    """The text output states the certificate's (epsilon, delta) (it was in --json only), equal to --json's."""
    args = ("audit", "tightness", "--n", "4", "--r", "0.5", "--sigma", "1", "--restarts", "1", "--test-points", "0",
            "--delta", "1e-3")
    code, out, _ = run_cli(capsys, *args, "--json")
    eps = json.loads(out)["epsilon_certified"]
    code, out, _ = run_cli(capsys, *args)
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("certificate"))
    from privgp.formatting import format_upper

    assert code == 0 and f"({format_upper(eps, 6)}, 0.001)-DP" in line, line   # rounded up (red team 16, G3)
