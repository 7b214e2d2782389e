"""privgp: differentially private release of Gaussian-process posterior sample paths.

Layers (imports flow downwards only): kernels/domain -> gp -> sampling; accounting (pure maths);
mechanisms; audit; tasks; datasets; experiments; cli. See DESIGN.md.
"""
from ._version import __version__
