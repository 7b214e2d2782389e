"""The search's clipped BCE (privgp.tasks.fast_bce) against the exact one (bce_from_margin, log_ndtr)."""
import math

import numpy as np
import pytest
from scipy.special import log_ndtr

from privgp.errors import InvalidParameterError
from privgp.tasks import excursion as ex
from privgp.tasks.fast_bce import Z_MAX, ClippedBCE


def pointwise(bce, z):
    """The clipped -log Phi(z) of each value (one mesh point per 'pair', unit weight, sigma = 1)."""
    return bce(np.asarray(z, dtype=float)[:, None], [1.0], [1.0])[0]


@pytest.mark.parametrize("clip", [ex.BCE_CLIP, 1e-4, 0.2])
def test_every_value_is_the_clipped_log_ndtr_to_rounding_and_within_the_clip_bounds(clip):
    bce = ClippedBCE(clip)
    assert bce.fast
    lo, hi = -math.log1p(-clip), -math.log(clip)
    z = np.concatenate([np.linspace(-8, 8, 400_001), [-1e300, 1e300, -np.inf, np.inf, 0.0, -0.0]])
    got = pointwise(bce, z)
    exact = np.clip(-log_ndtr(z), lo, hi)
    np.testing.assert_allclose(got, exact, rtol=1e-13, atol=0)
    assert got.min() >= lo and got.max() <= hi        # what the private search's sensitivity relies on


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_integrated_loss_equals_bce_from_margin(seed):
    rng = np.random.default_rng(seed)
    b, m = 7, 300
    margin = rng.normal(scale=rng.uniform(0.1, 20), size=(b, m))
    margin[0, :4] = [np.inf, -np.inf, 0.0, -0.0]
    sigmas = np.exp(rng.uniform(np.log(0.01), np.log(20), 9))
    w = ex.trapezoid_weights([np.linspace(0, 1, m)])
    bce = ClippedBCE()
    np.testing.assert_allclose(bce(margin, sigmas, w), ex.bce_from_margin(margin[None], sigmas[:, None], w),
                               rtol=1e-13)
    labels, mean, var = rng.uniform(size=(b, m)) < 0.5, rng.normal(size=(b, m)), rng.uniform(0, 2, (b, m))
    var[1, :5] = 0.0
    mean[1, :2] = 0.3                                  # on the threshold, without variance
    mean[2, 0] = np.nan
    ref = ex.integrated_bce(labels, mean, var, sigmas[:, None], w, t=0.3)
    got = bce.of_posterior(labels, mean, var, sigmas, w, t=0.3)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.isnan(got[:, 2]).all()
    np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_blocks_of_many_pairs_give_the_same_sums():
    rng = np.random.default_rng(5)
    margin, w = rng.normal(scale=3, size=(70, 800)), np.full(800, 1 / 800)
    bce = ClippedBCE()
    whole = bce(margin, [0.3, 2.0], w)
    assert whole.shape == (2, 70)
    np.testing.assert_array_equal(whole[:, 40:], bce(margin[40:], [0.3, 2.0], w))


def test_clips_beyond_the_polynomial_and_bad_sigmas_use_the_exact_loss():
    rng = np.random.default_rng(6)
    margin, w = rng.normal(scale=5, size=(3, 50)), rng.uniform(size=50)
    for clip, sig in ((0.0, [0.5, 1.0]), (1e-9, [0.5, 1.0]), (ex.BCE_CLIP, [0.5, 0.0])):
        bce = ClippedBCE(clip)
        assert bce.fast == (clip == ex.BCE_CLIP) and ex._clipped_beyond(ex.BCE_CLIP)[0] <= Z_MAX
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = ex.bce_from_margin(margin[None], np.asarray(sig)[:, None], w, clip=clip)
            np.testing.assert_array_equal(bce(margin, sig, w), ref)
    with pytest.raises(InvalidParameterError, match="clip"):
        ClippedBCE(0.5)
