"""The torch DPSetConv encoder against part 1's numpy DPSetConv (privgp.mechanisms.dpsetconv):
same noise scales and event, same noise-free channels, and the same law of the released channels
(two-sample comparison of means and covariances over Monte Carlo releases)."""
import importlib
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dps = importlib.import_module("privgp.mechanisms.dpsetconv")   # the module (privgp.mechanisms exports a function of its name)
from privgp.accounting.gaussian import gdp_mu  # noqa: E402
from privgp.models.domain import PublicGrid  # noqa: E402
from privgp.nn.model import DPConvCNP, ModelConfig  # noqa: E402

CFG = ModelConfig(window=(-2.0, 2.0), points_per_unit=16, first_channels=4, channels=(4, 4), lengthscale_init=0.3,
                  amortise=False, clip_init=1.5, split_init=0.4)
XC, YC = np.array([-0.7, 0.1, 0.15, 1.2]), np.array([0.3, -2.5, 1.0, 0.8])
EPS, DELTA = 1.5, 1e-3


def numpy_plan():
    grid = PublicGrid.regular(CFG.window[0], CFG.grid()[-1], CFG.grid_size)
    np.testing.assert_allclose(grid.points()[:, 0], CFG.grid(), atol=1e-12)
    return dps.plan_dpsetconv(grid, lengthscale=0.3, clip=1.5, t=0.4, epsilon=EPS, delta=DELTA)


def test_same_noise_scales_event_and_noise_free_channels():
    model = DPConvCNP(CFG).eval()
    rep, event = model.release(XC, YC, EPS, DELTA, generator=torch.Generator().manual_seed(0))
    plan = numpy_plan()
    assert rep.sigma_signal == pytest.approx(plan.sigma_signal, rel=1e-6)
    assert rep.sigma_density == pytest.approx(plan.sigma_density, rel=1e-6)
    assert event.mu == pytest.approx(plan.event.mu, rel=1e-9)
    density, signal = dps.setconv_channels(XC, YC, plan.grid.points(), 0.3, 1.5)
    w = torch.exp(-0.5 * ((model.encoder.grid.double()[:, None] - torch.tensor(XC)[None]) / 0.3) ** 2)
    np.testing.assert_allclose(w.sum(1).numpy(), density, atol=1e-5)
    np.testing.assert_allclose((w @ torch.tensor(np.clip(YC, -1.5, 1.5))).numpy(), signal, atol=1e-5)


def test_released_channels_have_the_same_law():
    n = 2000
    plan = numpy_plan()
    rng = np.random.default_rng(3)
    ref = np.stack([dps.dpsetconv_release(plan, XC, YC, rng).channels() for _ in range(n)])  # (n, 2, G)
    model = DPConvCNP(CFG).eval()
    with torch.no_grad():
        ch, info = model.encoder(torch.tensor(XC, dtype=torch.float32).expand(n, 4),
                                 torch.tensor(YC, dtype=torch.float32).expand(n, 4),
                                 torch.full((n,), float(gdp_mu(EPS, DELTA))), torch.Generator().manual_seed(4))
    ours = ch[:, :2].double().numpy()
    for c, s in ((0, plan.sigma_signal), (1, plan.sigma_density)):
        # means: difference of two independent means, SE <= s sqrt(2 / n); covariances: SE <= s^2 sqrt(4 / n)
        assert np.max(np.abs(ours[:, c].mean(0) - ref[:, c].mean(0))) < 6 * s * math.sqrt(2 / n)
        diff = (np.cov(ours[:, c].T) - np.cov(ref[:, c].T)) / s**2
        assert np.max(np.abs(diff)) < 6 * math.sqrt(4 / n)
