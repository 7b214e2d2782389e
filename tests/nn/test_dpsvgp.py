"""The DP-SVGP baseline (seed 002, App. D): the closed-form SVGP agrees with gpytorch, per-example
gradients with autograd, and the DP-SGD step with Opacus's DPOptimizer. privgp.nn.dpsvgp needs torch;
a test that also needs gpytorch or opacus (the references, and opacus's noise multiplier in ``fit``) skips
without it, the others run."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgp.nn import dpsvgp as D  # noqa: E402


def random_params(kind, M=6, T=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = D.init_params(D.DpsvgpSettings(kernel=kind, n_inducing=M, lengthscale=0.6, period=1.3, noise=0.3), T)
    p["z"] = p["z"] + 0.1 * torch.randn(p["z"].shape, generator=g, dtype=torch.float64)
    p["m"] = torch.randn(p["m"].shape, generator=g, dtype=torch.float64)
    p["chol_raw"] = 0.3 * torch.randn(p["chol_raw"].shape, generator=g, dtype=torch.float64)
    p["log_scale"] = p["log_scale"] + 0.2
    return p


def _gpytorch_svgp(gpytorch, z, kernel):
    """gpytorch's SVGP (whitened VariationalStrategy, Cholesky variational distribution) with inducing inputs z."""

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self):
            vd = gpytorch.variational.CholeskyVariationalDistribution(z.shape[0])
            super().__init__(gpytorch.variational.VariationalStrategy(self, z, vd, learn_inducing_locations=True,
                                                                     jitter_val=D.JITTER))
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(kernel)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    return SVGP()


@pytest.mark.parametrize("kind", ["eq", "matern32", "periodic"])
def test_closed_form_svgp_matches_gpytorch(kind):
    gpytorch = pytest.importorskip("gpytorch")
    p = {k: v[0] for k, v in random_params(kind).items()}
    base = {"eq": gpytorch.kernels.RBFKernel(), "matern32": gpytorch.kernels.MaternKernel(nu=1.5),
            "periodic": gpytorch.kernels.PeriodicKernel()}[kind]
    model = _gpytorch_svgp(gpytorch, p["z"][:, None].clone(), base).double()
    lik = gpytorch.likelihoods.GaussianLikelihood().double()
    with torch.no_grad():
        model.covar_module.outputscale = float((2 * p["log_scale"]).exp())
        base.lengthscale = float(p["log_lengthscale"].exp())
        if kind == "periodic":
            base.period_length = float(p["log_period"].exp())
        lik.noise = float((2 * p["log_noise"]).exp())
        vd = model.variational_strategy._variational_distribution
        vd.variational_mean.copy_(p["m"])
        vd.chol_variational_covar.copy_(D._variational_chol(p))
        model.variational_strategy.variational_params_initialized.fill_(1)
    x = torch.linspace(-2.3, 2.1, 40, dtype=torch.float64)
    y = torch.sin(2 * x)
    with gpytorch.settings.fast_computations(False):
        model.train()
        lik.train()
        ref_elbo = gpytorch.mlls.VariationalELBO(lik, model, num_data=len(x))(model(x[:, None]), y) * len(x)
        model.eval()
        q = model(x[:, None])
    mean, var = D.marginals(kind, p, x)
    np.testing.assert_allclose(mean.detach().numpy(), q.mean.detach().numpy(), atol=1e-6)
    # gpytorch's predictive adds its jitter (1e-5 here) to k(x, x)
    np.testing.assert_allclose(var.detach().numpy() + D.JITTER, q.variance.detach().numpy(), atol=1e-6)
    # ... and so its expected log-likelihood carries -jitter / (2 s_n^2) per point
    jitter_term = -0.5 * len(x) * D.JITTER / float((2 * p["log_noise"]).exp())
    assert float(D.elbo(kind, p, x, y)) + jitter_term == pytest.approx(float(ref_elbo.detach()), rel=1e-7)


def test_per_example_gradients_match_autograd():
    kind = "eq"
    p = random_params(kind, T=2)
    names = ["z", "m", "chol_raw", "log_lengthscale", "log_scale", "log_noise"]
    x = torch.tensor([[0.3, -1.0, 1.7], [0.0, 0.5, -0.4]], dtype=torch.float64)
    y = torch.tensor([[1.0, -0.2, 0.3], [0.1, 0.9, -1.2]], dtype=torch.float64)
    grads = D.per_example_grads(kind, p, names, x, y, n=50)
    for t in range(2):
        for j in range(3):
            q = {k: v[t].clone().requires_grad_(k in names) for k, v in p.items()}
            loss = -D.expected_loglik(kind, q, x[t, j:j + 1], y[t, j:j + 1])[0] + D.kl_divergence(q) / 50
            ref = torch.autograd.grad(loss, [q[k] for k in names])
            for k, r in zip(names, ref):
                torch.testing.assert_close(grads[k][t, j], r, rtol=1e-10, atol=1e-12)


def test_dp_sgd_gradient_matches_opacus_clipping_and_noise_scale():
    DPOptimizer = pytest.importorskip("opacus.optimizers").DPOptimizer

    g = torch.Generator().manual_seed(0)
    K, C, B = 7, 1.5, 5.0
    grads = {"a": 3 * torch.randn(1, K, 4, generator=g, dtype=torch.float64),
             "b": torch.randn(1, K, 2, 3, generator=g, dtype=torch.float64)}
    valid = torch.ones(1, K, dtype=torch.bool)
    ours = D.dp_sgd_gradient(grads, valid, C, torch.zeros(1, dtype=torch.float64), B, g)
    pa = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
    pb = torch.nn.Parameter(torch.zeros(2, 3, dtype=torch.float64))
    pa.grad_sample, pb.grad_sample = grads["a"][0], grads["b"][0]
    opt = DPOptimizer(torch.optim.SGD([pa, pb], lr=1.0), noise_multiplier=0.0, max_grad_norm=C, expected_batch_size=int(B))
    opt.pre_step()
    torch.testing.assert_close(ours["a"][0], pa.grad)
    torch.testing.assert_close(ours["b"][0], pb.grad)
    # noise: with zero gradients the output is N(0, (sigma C / B)^2) per coordinate
    zero = {"a": torch.zeros(4000, 1, 5, dtype=torch.float64)}
    out = D.dp_sgd_gradient(zero, torch.ones(4000, 1, dtype=torch.bool), C, torch.full((4000,), 2.0, dtype=torch.float64), B, g)
    sd = float(out["a"].std())
    assert sd == pytest.approx(2.0 * C / B, rel=5 * math.sqrt(1 / (2 * 20000)))


def test_fit_runs_and_reports_its_accounting():
    PRVAccountant = pytest.importorskip("opacus.accountants").PRVAccountant   # fit calibrates with opacus too
    g = torch.Generator().manual_seed(1)
    x = torch.rand(2, 20, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.sin(x)
    # batch 2 of 20 (rate 0.1): opacus's PRV calibration, most of this test's time, takes half as long as at 0.4
    s = D.DpsvgpSettings(epochs=3, batch_size=2, n_inducing=5)
    f = D.fit(x.numpy(), y.numpy(), [1.0, 4.0], 1e-3, s, g)
    assert f.steps == round(3 / (2 / 20)) and f.sample_rate == pytest.approx(0.1)
    assert f.noise_multipliers[0] > f.noise_multipliers[1] > 0
    acc = PRVAccountant()
    acc.history = [(f.noise_multipliers[0], f.sample_rate, f.steps)]
    assert acc.get_epsilon(delta=1e-3) <= 1.0 + 1e-2  # the PRV accountant's estimate; its own error bound aside
    m, sd = f.predict(x.numpy())
    assert m.shape == (2, 20) and np.all(sd > 0)
