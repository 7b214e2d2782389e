"""privgp: differentially private release of Gaussian-process posterior sample paths.

Layers (imports flow downwards only): kernels/domain -> gp -> sampling; accounting (pure maths);
mechanisms; audit; tasks; datasets; experiments; cli. See DESIGN.md.
"""
__version__ = "0.1.0"
