"""privgp.nn: the DPConvCNP of seed 002 (Räisä, Markou et al., NeurIPS 2024) and its DP-SVGP baseline.

An optional layer: it needs the ``nn`` extra (``pip install "privgp[nn]"``: torch, gpytorch, opacus,
optuna). ``import privgp`` never imports torch; only importing this package (or a module of it) does.

* :mod:`privgp.nn.model`: the DPSetConv encoder (Alg. 3; Thm 4.2; Eq. 12), the 1-D UNet and the
  SetConv decoder (App. F); :class:`DPConvCNP` with ``release`` (the only function that touches the
  private context) and ``predict`` (post-processing).
* :mod:`privgp.nn.tasks`: the simulated task families (EQ GP, Matérn-3/2 GP, sawtooth; App. E).
* :mod:`privgp.nn.train`: meta-training (Alg. 1) with fixed validation tasks and resumable state.
* :mod:`privgp.nn.oracle`: the exact non-private GP predictive with the true hyperparameters.
* :mod:`privgp.nn.dpsvgp`: the DP-SVGP baseline (App. D): gpytorch SVGP + opacus DP-SGD + optuna.
* :mod:`privgp.nn.pretrained`: the shipped, CPU-trained reduced model (in the sdist, not the wheel: see its docstring).
"""
from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # depends on the environment (tests/nn/test_import.py simulates a missing torch)
    from ..errors import MissingExtraError

    raise MissingExtraError("privgp.nn", "torch", "nn") from exc
