"""The DPConvCNP (seed 002: Räisä, Markou et al., "Noise-Aware Differentially Private Regression via
Meta-Learning", NeurIPS 2024): a ConvCNP whose encoder is the DPSetConv, i.e. the functional
mechanism with a Gaussian-DP analysis built into the SetConv.

Pipeline (paper §3.1, §4.2, App. F)::

    release(xc, yc, eps, delta)        the ONLY step that touches the private context set
        mu     = gdp_mu(eps, delta)                          (Eq. 5, solved for mu)
        C, t   = C(mu, N), t(mu, N)                          (§4.3; public inputs only)
        y~     = clip(y, -C, C)                              (Alg. 3, line 1)
        r_d(g) = sum_n psi((g - x_n)/lam)     + s_d g_d(g)   (Eq. 10 + noise, Alg. 3)
        r_s(g) = sum_n y~_n psi((g - x_n)/lam) + s_s g_s(g)
        s_s^2 = 4 C^2 / (t mu^2),  s_d^2 = 2 / ((1 - t) mu^2)    (Eq. 12)
    predict(rep, xt)                   post-processing of the released representation
        UNet([r_s, r_d, s_s, s_d, N/512]) -> SetConv decoder -> mean, std at any targets

Privacy (Thm 4.2): psi is the RBF with sup psi = 1 (C_k = 1), so the RKHS sensitivities under
replace-one neighbours (N public) are Delta_d^2 = 2 and Delta_s^2 = 4 C^2 (Eq. 11); with g_d, g_s
independent GPs whose kernel is *the encoder's own RBF* (same lam, amplitude 1) the release is mu-GDP
with mu^2 = Delta_s^2/s_s^2 + Delta_d^2/s_d^2, which Eq. 12 makes equal to gdp_mu(eps, delta).
The grid and window are fixed public settings. The noise is drawn in float64 as L z with
L = chol(K + jitter I): the jitter adds independent noise (post-processing), never removes any.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import validation as v
from ..accounting.functional_noise import DPSetConvEvent
from ..accounting.gaussian import gdp_mu
from ..errors import InvalidParameterError, NumericalError

N_NORM = 512.0  # the public context size enters the C/t networks and the CNN as N / 512 (repo convention)
Y_CLIP_FLOOR = 0.01  # C = 0.01 + exp(...) (repo form), so C > 0 always
SPLIT_FLOOR = 0.01  # t = 0.01 + 0.98 sigmoid(...) in (0.01, 0.99)


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a DPConvCNP (App. F; defaults: the reduced CPU model of docs/notes/seed002_dpconvcnp.md, sec. 7.2).

    window: the fixed, public discretisation window [lo, hi) (paper: [-7, 7] synthetic); the grid has
    (hi - lo) * points_per_unit points, a multiple of the UNet's downsampling 2^(len(channels) + 1).
    """

    window: tuple[float, float] = (-4.0, 4.0)
    points_per_unit: int = 32
    first_channels: int = 32           # C_in (paper 32)
    channels: tuple[int, ...] = (64, 64, 64, 64, 64)  # paper: 7 x 256
    kernel_size: int = 5
    lengthscale_init: float = 0.2      # encoder (and noise) RBF lengthscale lambda, learnable
    decoder_lengthscale_init: float = 0.2
    amortise: bool = True              # C(mu, N), t(mu, N) by MLPs; else fixed clip_init, split_init
    clip_init: float = 2.0
    split_init: float = 0.5
    mlp_hidden: int = 32
    jitter: float = 1e-6               # added to the unit-amplitude noise Gram matrix (more noise only)
    min_std: float = 1e-3
    input_scale: float = 1.0 / 16.0    # fixed factor on [r_s, r_d, s_s, s_d] before the UNet (post-processing)

    def __post_init__(self):
        lo, hi = (float(a) for a in self.window)
        if not hi > lo:
            raise InvalidParameterError("window", "(lo, hi) with hi > lo", self.window)
        object.__setattr__(self, "window", (lo, hi))
        object.__setattr__(self, "channels", tuple(int(c) for c in self.channels))
        v.integer("points_per_unit", self.points_per_unit, minimum=1)
        size = (hi - lo) * self.points_per_unit
        factor = 2 ** (len(self.channels) + 1)
        if abs(size - round(size)) > 1e-9 or round(size) % factor:
            raise InvalidParameterError("window", f"of a length giving a grid size that is a multiple of {factor}",
                                        self.window)
        v.positive("lengthscale_init", self.lengthscale_init)
        v.positive("decoder_lengthscale_init", self.decoder_lengthscale_init)
        v.greater_than("clip_init", self.clip_init, Y_CLIP_FLOOR)
        v.open_interval("split_init", self.split_init, SPLIT_FLOOR, 1 - SPLIT_FLOOR)
        v.positive("jitter", self.jitter)
        v.positive("input_scale", self.input_scale)

    @property
    def grid_size(self) -> int:
        return int(round((self.window[1] - self.window[0]) * self.points_per_unit))

    def grid(self) -> np.ndarray:
        """The public grid: lo + k / points_per_unit, k = 0 .. G - 1."""
        return self.window[0] + np.arange(self.grid_size) / self.points_per_unit

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["window"] = list(self.window)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        d = dict(d)
        d["window"] = tuple(d["window"])
        d["channels"] = tuple(d["channels"])
        return cls(**d)


def noise_scales(mu: torch.Tensor, clip: torch.Tensor, split: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 12: s_s = 2 C / (mu sqrt(t)), s_d = sqrt(2) / (mu sqrt(1 - t)), so that
    Delta_s^2 / s_s^2 + Delta_d^2 / s_d^2 = t mu^2 + (1 - t) mu^2 = mu^2 (Thm 4.2)."""
    return 2.0 * clip / (mu * torch.sqrt(split)), math.sqrt(2.0) / (mu * torch.sqrt(1.0 - split))


def rbf_weights(x: torch.Tensor, centres: torch.Tensor, lengthscale: torch.Tensor) -> torch.Tensor:
    """psi((x_i - c_j) / lam) = exp(-(x_i - c_j)^2 / (2 lam^2)) for x (..., I), centres (..., J) -> (..., I, J)."""
    d = x[..., :, None] - centres[..., None, :]
    return torch.exp(-0.5 * (d / lengthscale) ** 2)


class _PublicMLP(nn.Module):
    """Two hidden layers of 32 ReLU units on the public inputs [mu, N / 512] (App. F); the output is
    divided by 10 (repo) and added to a fixed offset so the initial value is the hand-picked one."""

    def __init__(self, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, mu: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return self.net(torch.stack([mu, n / N_NORM], dim=-1))[..., 0] / 10.0


class DPSetConv(nn.Module):
    """The DPSetConv encoder (Alg. 3) on a fixed public grid, with learnable log lambda and C, t either
    fixed or amortised by MLPs of the public (mu, N) only (§4.3).

    :meth:`forward` returns the CNN input channels [r_s, r_d, s_s, s_d, N/512] of shape (B, 5, G) and
    the per-task (C, t, s_s, s_d).
    """

    grid: torch.Tensor      # a buffer (moves with the module, saved in its state)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("grid", torch.as_tensor(cfg.grid(), dtype=torch.float32))
        self.log_lengthscale = nn.Parameter(torch.tensor(math.log(cfg.lengthscale_init)))
        self._clip_offset = math.log(cfg.clip_init - Y_CLIP_FLOOR)
        p = (cfg.split_init - SPLIT_FLOOR) / (1 - 2 * SPLIT_FLOOR)
        self._split_offset = math.log(p / (1 - p))
        if cfg.amortise:
            self.clip_net = _PublicMLP(cfg.mlp_hidden)
            self.split_net = _PublicMLP(cfg.mlp_hidden)

    @property
    def lengthscale(self) -> torch.Tensor:
        return self.log_lengthscale.exp()

    def clip_and_split(self, mu: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """C(mu, N) and t(mu, N) (§4.3; repo forms C = 0.01 + exp(.), t = 0.01 + 0.98 sigmoid(.)).
        Their only inputs are the public mu and N."""
        if self.cfg.amortise:
            a, b = self.clip_net(mu, n), self.split_net(mu, n)
        else:
            a = b = torch.zeros_like(mu)
        clip = Y_CLIP_FLOOR + torch.exp(self._clip_offset + a)
        split = SPLIT_FLOOR + (1 - 2 * SPLIT_FLOOR) * torch.sigmoid(self._split_offset + b)
        return clip, split

    def noise_factor(self) -> torch.Tensor:
        """L with L L^T = K + jitter I, K_ij = psi((g_i - g_j) / lam): the encoder's own RBF on the grid,
        amplitude 1 (C_k = 1), float64. Outside autograd the factor is cached for the current lam (it
        depends on public settings only)."""
        lam = self.log_lengthscale.detach().clone()
        cache = getattr(self, "_factor_cache", None)
        if not torch.is_grad_enabled() and cache is not None and torch.equal(cache[0], lam):
            return cache[1]
        g = self.grid.double()
        K = rbf_weights(g, g, self.lengthscale.double())
        K = K + self.cfg.jitter * torch.eye(len(g), dtype=torch.float64, device=g.device)
        L = torch.linalg.cholesky(K)
        if not torch.is_grad_enabled():
            self._factor_cache = (lam, L)
        return L

    def sample_noise(self, batch: int, generator: torch.Generator | None) -> torch.Tensor:
        """Two independent unit-amplitude GP draws per task on the grid: shape (batch, 2, G), float64.
        The standard normals come from ``generator`` on the CPU (the same stream on any device), then
        move to the model's device."""
        L = self.noise_factor()
        z = torch.randn(batch, 2, L.shape[0], dtype=torch.float64, generator=generator)
        return z.to(L.device) @ L.T

    def forward(self, xc: torch.Tensor, yc: torch.Tensor, mu: torch.Tensor,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        B, N = xc.shape
        n = torch.full((B,), float(N), dtype=xc.dtype, device=xc.device)
        clip, split = self.clip_and_split(mu.to(xc.dtype), n)
        # noise scales in float64 from the float32 C actually used for clipping (mu lowered by 1e-12
        # relative, so that rounding can only add noise; release() re-derives and checks mu)
        s_sig, s_den = noise_scales(mu.double() * (1 - 1e-12), clip.double(), split.double())
        ytil = torch.maximum(torch.minimum(yc, clip[:, None]), -clip[:, None])  # clip before the SetConv
        w = rbf_weights(self.grid, xc, self.lengthscale)  # (B, G, N)
        density = w.sum(-1)
        signal = (w @ ytil[..., None])[..., 0]
        noise = self.sample_noise(B, generator)
        signal = signal + (s_sig.double()[:, None] * noise[:, 0]).to(signal.dtype)
        density = density + (s_den.double()[:, None] * noise[:, 1]).to(density.dtype)
        G = self.grid.shape[0]
        const = torch.stack([s_sig.to(signal.dtype), s_den.to(signal.dtype), n / N_NORM], dim=1)[:, :, None].expand(B, 3, G)
        channels = torch.cat([signal[:, None], density[:, None], const.to(signal.dtype)], dim=1)
        return channels, {"clip": clip, "split": split, "sigma_signal": s_sig, "sigma_density": s_den}


class UNet1d(nn.Module):
    """UNet of App. F / the repo: a first stride-2 conv to C_in channels, len(channels) stride-2 convs,
    matching stride-2 transpose convs whose outputs are concatenated with the input of the matching
    conv (skip), and a last stride-2 transpose conv to 2 channels. ReLU after every layer but the last."""

    def __init__(self, in_channels: int, first_channels: int, channels: tuple[int, ...], kernel_size: int):
        super().__init__()
        k, p = kernel_size, kernel_size // 2
        self.first = nn.Conv1d(in_channels, first_channels, k, stride=2, padding=p)
        widths = (first_channels,) + tuple(channels)
        self.downs = nn.ModuleList(nn.Conv1d(widths[i], widths[i + 1], k, stride=2, padding=p)
                                   for i in range(len(channels)))
        ups = []
        for i in reversed(range(len(channels))):
            cin = widths[i + 1] if i == len(channels) - 1 else widths[i + 1] + widths[i + 1]
            ups.append(nn.ConvTranspose1d(cin, widths[i + 1], k, stride=2, padding=p, output_padding=1))
        self.ups = nn.ModuleList(ups)
        self.last = nn.ConvTranspose1d(widths[1] + widths[0], 2, k, stride=2, padding=p, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.first(x))
        skips = []
        for down in self.downs:
            skips.append(h)
            h = F.relu(down(h))
        for up, skip in zip(self.ups, reversed(skips)):
            h = torch.cat([F.relu(up(h)), skip], dim=1)
        return self.last(h)


class SetConvDecoder(nn.Module):
    """z(x_t) = sum_g psi((x_t - g) / lam_dec) z_g / ppu (repo), then mean = z_0,
    std = sqrt(softplus(z_1)) + min_std (repo's head; the paper says "(log) standard deviation")."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ppu = float(cfg.points_per_unit)
        self.min_std = cfg.min_std
        self.log_lengthscale = nn.Parameter(torch.tensor(math.log(cfg.decoder_lengthscale_init)))

    def forward(self, z: torch.Tensor, grid: torch.Tensor, xt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w = rbf_weights(xt, grid, self.log_lengthscale.exp())  # (B, T, G)
        out = w @ z.transpose(1, 2) / self.ppu  # (B, T, 2)
        return out[..., 0], torch.sqrt(F.softplus(out[..., 1])) + self.min_std


@dataclass(frozen=True)
class NoisyRepresentation:
    """The released object: the noisy grid channels and the public settings that produced them.
    Everything here is (eps, delta)-DP w.r.t. the context set (Cor. 4.3); ``event`` is its privacy event."""

    grid: np.ndarray
    channels: torch.Tensor = field(repr=False)  # (5, G): [r_s, r_d, s_s, s_d, N/512]
    n_context: int
    epsilon: float
    delta: float
    mu: float
    clip: float
    split: float
    sigma_signal: float
    sigma_density: float
    lengthscale: float
    event: DPSetConvEvent


class DPConvCNP(nn.Module):
    """DPConvCNP: DPSetConv encoder -> UNet -> SetConv decoder (paper §4, App. F)."""

    def __init__(self, cfg: ModelConfig | None = None):
        super().__init__()
        self.cfg = cfg or ModelConfig()
        self.encoder = DPSetConv(self.cfg)
        self.unet = UNet1d(5, self.cfg.first_channels, self.cfg.channels, self.cfg.kernel_size)
        self.decoder = SetConvDecoder(self.cfg)

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- meta-training path: the mechanism runs inside the forward pass (seed 002, sec. 1; docs/notes/seed002_dpconvcnp.md, sec. 2.3)
    def forward(self, xc: torch.Tensor, yc: torch.Tensor, xt: torch.Tensor, mu: torch.Tensor,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        channels, _ = self.encoder(xc, yc, mu, generator)
        return self.decode(channels, xt)

    def decode(self, channels: torch.Tensor, xt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Post-processing of released channels (B, 5, G): a fixed rescaling of the first four (they
        reach O(100) at N = 512; the paper feeds them raw), the UNet, the SetConv decoder."""
        scale = torch.tensor([self.cfg.input_scale] * 4 + [1.0], dtype=channels.dtype, device=channels.device)[None, :, None]
        return self.decoder(self.unet(channels * scale), self.encoder.grid, xt)

    def loss(self, xc, yc, xt, yt, mu, generator=None) -> torch.Tensor:
        """Eq. 2 as a loss: the NLL per target point, averaged over the batch."""
        mean, std = self(xc, yc, xt, mu, generator)
        return gaussian_nll(yt, mean, std).mean()

    # -- deployment: one private release, then free post-processing ------------------------------
    def release(self, xc, yc, epsilon: float, delta: float, *,
                generator: torch.Generator | None = None) -> tuple[NoisyRepresentation, DPSetConvEvent]:
        """Release the DPSetConv representation of one private context set (Alg. 3; Cor. 4.3).

        The only function that reads the private (xc, yc). All inputs are checked before any noise is
        drawn. N = len(xc) is treated as public (replace-one neighbours). Without a ``generator`` the
        noise comes from fresh OS entropy. Returns the representation and its privacy event
        (mu-GDP, mu = gdp_mu(epsilon, delta)); each call is a new release that spends its own budget.
        """
        x = v.finite_array("xc", xc, ndim=1)
        y = v.responses("yc", yc, x.shape[0])
        eps = v.positive("epsilon", epsilon)
        dl = v.probability("delta", delta)
        if generator is None:
            generator = torch.Generator()
            generator.seed()  # fresh, non-deterministic seed
        elif not isinstance(generator, torch.Generator):
            raise InvalidParameterError("generator", "a torch.Generator or None", type(generator).__name__)
        mu = float(gdp_mu(eps, dl))
        with torch.no_grad():
            mu_t = torch.tensor([mu], dtype=torch.float64)  # the noise scales use mu in float64
            channels, info = self.encoder(torch.as_tensor(x, dtype=torch.float32)[None],
                                          torch.as_tensor(y, dtype=torch.float32)[None], mu_t, generator)
        clip, split = float(info["clip"][0]), float(info["split"][0])
        s_s, s_d = float(info["sigma_signal"][0]), float(info["sigma_density"][0])
        # the event of the noise actually added (Thm 4.2, C_k = 1): never above the target mu
        event = DPSetConvEvent(clip=clip, sigma_signal=s_s, sigma_density=s_d)
        mu_used = event.mu
        if not mu_used <= mu:
            raise NumericalError(f"DPSetConv release: mu of the noise used ({mu_used!r}) exceeds the target {mu!r}")
        return NoisyRepresentation(grid=self.cfg.grid(), channels=channels[0].detach().clone(), n_context=x.shape[0],
                                   epsilon=eps, delta=dl, mu=mu_used, clip=clip, split=split, sigma_signal=s_s,
                                   sigma_density=s_d, lengthscale=float(self.encoder.lengthscale.detach()), event=event), event

    def predict(self, rep: NoisyRepresentation, xt) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and standard deviation at targets xt: post-processing of ``rep`` only."""
        if not isinstance(rep, NoisyRepresentation):
            raise InvalidParameterError("rep", "a NoisyRepresentation from DPConvCNP.release", type(rep).__name__)
        t = v.finite_array("xt", xt, ndim=1)
        with torch.no_grad():
            mean, std = self.decode(rep.channels[None], torch.as_tensor(t, dtype=torch.float32)[None])
        return mean[0].numpy().astype(float), std[0].numpy().astype(float)

    # -- persistence -------------------------------------------------------------------------------
    def export(self) -> dict[str, Any]:
        return {"config": self.cfg.to_dict(), "state_dict": self.state_dict()}

    @classmethod
    def from_export(cls, d: dict[str, Any]) -> DPConvCNP:
        model = cls(ModelConfig.from_dict(d["config"]))
        model.load_state_dict(d["state_dict"])
        model.eval()
        return model


def gaussian_nll(y, mean, std):
    """-log N(y | mean, std^2), elementwise (torch tensors or numpy arrays)."""
    log = torch.log if isinstance(std, torch.Tensor) else np.log
    return 0.5 * math.log(2 * math.pi) + log(std) + 0.5 * ((y - mean) / std) ** 2
