"""Red team 25, ``privgp audit sampler``: the pair epsilons it reports as lower estimates of the worst case are
not above the pair's own epsilon (the order is searched, not read off a coarse grid); huge --M-Y or --sigma and
memory blow-ups are one-line errors before any work."""
from __future__ import annotations

import math

import numpy as np
import pytest

from privgp.audit.samplers.langevin_gp import _laws, audit_sampler, pair_laws
from privgp.audit.tightness.neighbours import pair_epsilon
from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.models.kernels import Exponential

#: a dense grid of orders: the pair's RDP-converted epsilon is at most its minimum over them
DENSE = 1.0 + np.geomspace(1e-3, 1e3, 1500)


def test_pair_epsilons_are_not_above_the_pairs_epsilon():
    # privgp audit sampler --n 2 --r 1 --sigma 10 --lengthscale 0.1 --release-points 5 --steps inf --restarts 1
    # printed 9.808 as both pair values (rounded down, a "lower estimate of the worst case") above the certified
    # 8.658: the minimum over a grid of orders that jumps from 1.63 to 2, where the pair's curve converts to 7.286
    # at alpha = 1.93
    kernel = Exponential(0.1)
    XT = np.linspace(0.0, 1.0, 5)[:, None]
    audit = audit_sampler("sto", kernel=kernel, n=2, r=1.0, sigma=10.0, XT=XT, steps=[math.inf],
                          rng=np.random.default_rng(0), restarts=1)
    row = audit.rows[0]
    P, Q = pair_laws("sto", kernel, row.pair, XT, r=1.0, sigma=10.0, step=audit.step, steps=[math.inf])
    PP, QQ = pair_laws("posterior", kernel, row.pair, XT, r=1.0, sigma=10.0)
    dense_iterate = pair_epsilon(*_laws(P[0], Q[0]), audit.delta, orders=DENSE)[0]
    dense_posterior = pair_epsilon(*_laws(PP[0], QQ[0]), audit.delta, orders=DENSE)[0]
    assert row.epsilon_iterate_pair <= dense_iterate * (1 + 1e-6)
    assert row.epsilon_posterior_pair <= dense_posterior * (1 + 1e-6)
    assert row.epsilon_iterate_pair <= row.epsilon_iterate_certified
    assert row.epsilon_posterior_pair <= audit.epsilon_posterior_certified


def _one_line_error(capsys, flag):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"privgp: error: {flag} must be") and "Traceback" not in err
    return err


def test_a_huge_response_bound_is_refused_before_any_work(tmp_path, capsys):
    # --M-Y 1e300: OverflowError from the sto bound's (n M / (sigma r^2))^2, after RuntimeWarnings of the search
    png = tmp_path / "a.png"
    assert main(["audit", "sampler", "--M-Y", "1e300", "--steps", "1", "--png", str(png)]) == 2
    assert "1e+300" in _one_line_error(capsys, "--M-Y")
    assert not png.exists()
    with pytest.raises(InvalidParameterError, match="M_Y"):
        audit_sampler("ula", kernel=Exponential(0.3), n=8, r=1.0, sigma=10.0, M_Y=1e300, XT=[[0.5]], steps=[1],
                      rng=np.random.default_rng(0))


def test_a_huge_sigma_is_refused(tmp_path, capsys):
    # --sigma 1e200: "cov1 must be free of NaN and inf" (sigma^2 overflowed), naming no option of the command
    assert main(["audit", "sampler", "--sigma", "1e200", "--steps", "1", "--png", str(tmp_path / "s.png")]) == 2
    _one_line_error(capsys, "--sigma")


@pytest.mark.parametrize("flag", ["--n", "--release-points"])
def test_memory_is_checked_before_any_work(flag, tmp_path, capsys):
    # --n 100000 / --release-points 100000 --steps 1 ended in numpy's _ArrayMemoryError
    png = tmp_path / "m.png"
    assert main(["audit", "sampler", flag, "100000", "--steps", "1", "--png", str(png)]) == 2
    err = _one_line_error(capsys, flag)
    assert "100000" in err and "GiB" in err and "--memory-limit" in err
    assert not png.exists()
    # the limit is the user's: a tiny one refuses even the default audit
    assert main(["audit", "sampler", "--memory-limit", "1e-6", "--steps", "1", "--png", str(png)]) == 2
    _one_line_error(capsys, "--n")
    with pytest.raises(InvalidParameterError, match="n must be at most the limit"):
        audit_sampler("sto", kernel=Exponential(0.3), n=100_000, r=1.0, sigma=10.0, XT=[[0.5]], steps=[1],
                      rng=np.random.default_rng(0), memory_limit=4 * 2**30)
