"""Auditing: membership-inference games and attacks (LiRA), their density models, ROC metrics and
empirical epsilon lower bounds, the adversarial search for the worst neighbouring datasets, and
tightness audits of the certified bound.

Import the submodules directly: ``game`` (the membership game), ``densities`` (the attacks' density
models), ``attacks``, ``metrics``, ``lira`` (one audited setting), ``neighbours`` (exact divergences of
neighbouring posteriors, adversarial search), ``tightness``. Closed-form Gaussian divergences live in
:mod:`privgp.accounting.divergences`.
"""
