"""Auditing: exact divergences between neighbouring posteriors, membership-inference games and
attacks (LiRA), ROC metrics, empirical epsilon lower bounds, tightness audits.

Import the submodules directly (``privgp.audit.divergence``, ``privgp.audit.lira``, ...).
"""
