"""Auditing: what a release leaks in practice and how loose its certificate is.

Import the submodules directly; each holds one job:

* :mod:`.neighbours` -- the neighbour pair, exact divergences between neighbouring posteriors and the
  epsilon of a pair, adversarial worst pairs;
* :mod:`.game`, :mod:`.densities` (the attacks' density models), :mod:`.attacks`, :mod:`.lira`,
  :mod:`.metrics` -- membership-inference games, attacks, ROC metrics and empirical epsilon lower bounds;
* :mod:`.pair_attack` -- the likelihood-ratio test on one neighbouring pair (a lower bound with confidence);
* :mod:`.tightness` -- certified vs exact vs attack, for the membership game and for any setting;
* :mod:`.lood`, :mod:`.lood_queries`, :mod:`.lood_mia`, :mod:`.lood_release` -- leave-one-out
  distinguishability (seed 003);
* :mod:`.sgld_model`, :mod:`.sgld_bounds`, :mod:`.langevin_gp` -- what approximate samplers leak (seed 004);
* :mod:`.functional` -- exact privacy profiles of the functional mechanism (seed 002).

Closed-form Gaussian divergences live in :mod:`privgp.accounting.divergences`.
"""
__all__: list[str] = []  # a namespace of submodules; nothing is re-exported here
