"""Privacy evidence for the DPConvCNP's DPSetConv release (seed 002, Alg. 3, Thm 4.2, Eq. 12)."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgp.accounting.gaussian import gdp_mu  # noqa: E402
from privgp.errors import InvalidParameterError  # noqa: E402
from privgp.nn.model import DPConvCNP, ModelConfig  # noqa: E402

SMALL = ModelConfig(window=(-2.0, 2.0), points_per_unit=16, first_channels=4, channels=(4, 4), lengthscale_init=0.3)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = DPConvCNP(SMALL)
    with torch.no_grad():  # move lambda and the C/t nets off their initial values
        m.encoder.log_lengthscale.fill_(math.log(0.27))
        for p in m.encoder.clip_net.parameters():
            p.add_(0.3 * torch.randn(p.shape))
    return m.eval()


def rbf(grid, lam):
    return np.exp(-0.5 * (grid[:, None] - grid[None, :]) ** 2 / lam**2)


def test_noise_factor_is_the_encoders_own_rbf(model):
    """L L^T = K_lambda + jitter I exactly, K the unit-amplitude RBF with the encoder's lambda."""
    L = model.encoder.noise_factor().detach().numpy()
    lam = float(model.encoder.lengthscale.detach())
    K = rbf(SMALL.grid(), lam) + SMALL.jitter * np.eye(SMALL.grid_size)
    np.testing.assert_allclose(L @ L.T, K, atol=1e-12)


def test_release_is_the_encoder_pass(model):
    """release() returns exactly the encoder's channels for the same generator state (so the Monte
    Carlo check below, run through the batched encoder, is a check of what release() publishes)."""
    xc, yc = np.array([-0.5, 0.2, 0.9]), np.array([0.4, -3.0, 1.1])
    rep, ev = model.release(xc, yc, 1.5, 1e-3, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        ch, _ = model.encoder(torch.tensor(xc, dtype=torch.float32)[None], torch.tensor(yc, dtype=torch.float32)[None],
                              torch.tensor([float(gdp_mu(1.5, 1e-3))], dtype=torch.float64), torch.Generator().manual_seed(9))
    torch.testing.assert_close(rep.channels, ch[0], rtol=0, atol=0)


def test_released_noise_has_the_accounted_covariance(model):
    """Monte Carlo over 6000 releases of one context set: the empirical covariance of each released
    channel equals sigma^2 (K_lambda + jitter I); signal and density noises are uncorrelated.
    An entry's standard error is at most sigma^2 sqrt(2 / n); we allow 6 of them."""
    xc, yc = np.array([-0.5, 0.2, 0.9]), np.array([0.4, -3.0, 1.1])
    n = 6000
    mu = float(gdp_mu(1.5, 1e-3))
    with torch.no_grad():
        ch, info = model.encoder(torch.tensor(xc, dtype=torch.float32).expand(n, 3),
                                 torch.tensor(yc, dtype=torch.float32).expand(n, 3),
                                 torch.full((n,), mu), torch.Generator().manual_seed(1))
    ch = ch.double().numpy()
    lam = float(model.encoder.lengthscale.detach())
    clip, s_sig, s_den = (float(info[k][0]) for k in ("clip", "sigma_signal", "sigma_density"))
    K = rbf(SMALL.grid(), lam) + SMALL.jitter * np.eye(SMALL.grid_size)
    for c, s in ((0, s_sig), (1, s_den)):
        emp = np.cov(ch[:, c, :].T) / s**2
        assert np.max(np.abs(emp - K)) < 6 * math.sqrt(2 / n)
    cross = (ch[:, 0] - ch[:, 0].mean(0)).T @ (ch[:, 1] - ch[:, 1].mean(0)) / (n - 1) / (s_sig * s_den)
    assert np.max(np.abs(cross)) < 6 * math.sqrt(2 / n)
    # the mean is the clipped SetConv of Eq. 10 (Alg. 3, lines 1 and 4-5)
    w = np.exp(-0.5 * (SMALL.grid()[:, None] - xc[None]) ** 2 / lam**2)
    ytil = np.clip(yc, -clip, clip)
    assert np.max(np.abs(ch[:, 0].mean(0) - w @ ytil)) < 6 * s_sig / math.sqrt(n)
    assert np.max(np.abs(ch[:, 1].mean(0) - w.sum(1))) < 6 * s_den / math.sqrt(n)


@pytest.mark.parametrize("eps,delta", [(0.9, 1e-3), (1.0, 1e-3), (4.0, 1e-3), (2.0, 1e-5)])
def test_accounting_of_a_release(model, eps, delta):
    """mu = gdp_mu(eps, delta) and Eq. 12's split: Delta_s^2/s_s^2 + Delta_d^2/s_d^2 = mu^2 (Thm 4.2)
    with Delta_s^2 = 4 C^2, Delta_d^2 = 2."""
    rep, event = model.release([0.0, 1.0], [1.0, 2.0], eps, delta, generator=torch.Generator().manual_seed(0))
    target = float(gdp_mu(eps, delta))
    assert event.mu <= target and event.mu == pytest.approx(target, rel=1e-10)
    assert rep.event == event
    mu2 = 4 * rep.clip**2 / rep.sigma_signal**2 + 2 / rep.sigma_density**2
    assert mu2 == pytest.approx(event.mu**2, rel=1e-5)
    assert 0 < rep.split < 1 and rep.clip > 0


def test_paper_noise_scales_at_fixed_C_and_t():
    """Digest §6: C = 2, t = 0.5, delta = 1e-3: eps = 1 -> s_s = 14.564459, s_d = 5.149314."""
    m = DPConvCNP(ModelConfig(**{**SMALL.to_dict(), "window": (-2.0, 2.0), "channels": (4, 4), "amortise": False}))
    rep, _ = m.release([0.0], [0.0], 1.0, 1e-3, generator=torch.Generator().manual_seed(0))
    assert rep.clip == pytest.approx(2.0) and rep.split == pytest.approx(0.5)
    assert rep.sigma_signal == pytest.approx(14.564459, rel=1e-5)
    assert rep.sigma_density == pytest.approx(5.149314, rel=1e-5)


def test_clip_and_split_see_only_public_mu_and_n(model):
    """C and t depend on (mu, N) only: equal for different private data of the same size, with no
    autograd path from the data; they change with N (the amortisation input)."""
    g = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    a, _ = model.release([0.1, 0.2, 0.3], [5.0, -1.0, 0.0], 2.0, 1e-3, generator=g())
    b, _ = model.release([-1.0, 1.5, 0.0], [0.0, 0.0, 9.0], 2.0, 1e-3, generator=g())
    c, _ = model.release([-1.0, 1.5], [0.0, 0.0], 2.0, 1e-3, generator=g())
    assert (a.clip, a.split, a.sigma_signal, a.sigma_density) == (b.clip, b.split, b.sigma_signal, b.sigma_density)
    assert a.clip != c.clip
    xc = torch.tensor([[0.1, 0.2, 0.3]], requires_grad=True)
    yc = torch.tensor([[5.0, -1.0, 0.0]], requires_grad=True)
    _, info = model.encoder(xc, yc, torch.tensor([0.7]), torch.Generator().manual_seed(0))
    for key in ("clip", "split", "sigma_signal", "sigma_density"):
        grads = torch.autograd.grad(info[key].sum(), [xc, yc], allow_unused=True)
        assert all(gr is None for gr in grads), key


def test_outputs_beyond_C_are_clipped(model):
    """Responses beyond +-C give the same release as +-C (same noise seed): the sensitivity bound holds."""
    g = lambda: torch.Generator().manual_seed(5)  # noqa: E731
    ref, _ = model.release([0.0, 0.5], [0.0, 0.0], 1.0, 1e-3, generator=g())
    C = ref.clip
    a, _ = model.release([0.0, 0.5], [C, -C], 1.0, 1e-3, generator=g())
    b, _ = model.release([0.0, 0.5], [1e6, -1e6], 1.0, 1e-3, generator=g())
    torch.testing.assert_close(a.channels, b.channels)


def test_bad_input_is_rejected_before_any_noise(model):
    g = torch.Generator().manual_seed(0)
    state = g.get_state()
    for args in [([0.0], [1.0], 0.0, 1e-3), ([0.0], [1.0], 1.0, 1.0), ([0.0, 1.0], [1.0], 1.0, 1e-3),
                 ([np.nan], [1.0], 1.0, 1e-3), ([], [], 1.0, 1e-3)]:
        with pytest.raises(InvalidParameterError):
            model.release(*args, generator=g)
    assert torch.equal(g.get_state(), state)


def test_unseeded_releases_use_fresh_noise_and_predict_is_post_processing(model):
    a, _ = model.release([0.0], [1.0], 1.0, 1e-3)
    b, _ = model.release([0.0], [1.0], 1.0, 1e-3)
    assert not torch.equal(a.channels, b.channels)
    m1, s1 = model.predict(a, [0.0, 0.3])
    m2, s2 = model.predict(a, [0.0, 0.3])
    np.testing.assert_array_equal(m1, m2)
    assert np.all(s1 > 0)
    with pytest.raises(InvalidParameterError):
        model.predict((a.channels,), [0.0])
