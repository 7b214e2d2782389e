"""The one Gaussian calibrator: calibrate_gaussian / feasible_side land on the feasible side, re-checked."""
from __future__ import annotations

import itertools

import pytest

from privgp.accounting import DPSetConvEvent, GaussianEvent, calibrate_gaussian, certify, feasible_side, gaussian_noise_std
from privgp.accounting.calibrate import FEASIBLE_STEP
from privgp.accounting.functional_noise import dpsetconv_noise_scales
from privgp.accounting.gaussian import gdp_mu
from privgp.errors import InvalidParameterError, NumericalError


@pytest.mark.parametrize("sens,eps,delta", list(itertools.product([0.3, 2.0], [0.05, 1.0, 10.0], [1e-9, 1e-5, 0.1])))
def test_calibrate_gaussian_is_feasible_and_minimal_to_one_step(sens, eps, delta):
    event, cert = calibrate_gaussian(sens, eps, delta)
    assert isinstance(event, GaussianEvent) and event.sensitivity == sens
    assert cert.epsilon <= eps and certify(event, delta).epsilon == cert.epsilon
    s0 = float(gaussian_noise_std(sens, eps, delta))
    assert s0 <= event.noise_std <= s0 * (1 + FEASIBLE_STEP) ** 200
    if event.noise_std > s0:   # one step less would be above the target
        smaller = GaussianEvent(sens, event.noise_std / (1 + FEASIBLE_STEP))
        assert certify(smaller, delta).epsilon > eps


def test_certificate_words_are_passed_on():
    _, cert = calibrate_gaussian(1.0, 1.0, 1e-5, mechanism="noisy sums", public={"cells": 8})
    assert cert.mechanism == "noisy sums" and cert.public == {"cells": 8}


def test_feasible_side_lowers_a_gdp_mu():
    mu0 = float(gdp_mu(1.0, 1e-5))
    mu, event, cert = feasible_side(lambda m: DPSetConvEvent(1.0, *dpsetconv_noise_scales(m, 1.0, 0.5)), mu0, 1.0,
                                    1e-5, parameter="mu", direction="largest")
    assert mu <= mu0 and cert.epsilon <= 1.0 and event.mu <= mu0 * (1 + 1e-12)


def test_unreachable_and_bad_inputs_raise():
    with pytest.raises(NumericalError, match="noise_std"):   # far below the calibrated value: 200 steps do not reach it
        feasible_side(lambda s: GaussianEvent(1.0, s), 1e-3, 1.0, 1e-5, parameter="noise_std")
    with pytest.raises(InvalidParameterError, match="direction"):
        feasible_side(lambda s: GaussianEvent(1.0, s), 1.0, 1.0, 1e-5, parameter="s", direction="up")
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        calibrate_gaussian(0.0, 1.0, 1e-5)
