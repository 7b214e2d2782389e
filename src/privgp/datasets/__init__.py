"""Synthetic generators and small shipped real data (no downloads), and CSV loading for releases.

Import the submodules directly (:mod:`.tabular`, :mod:`.baltimore`, :mod:`.synthetic`, :mod:`.plumes`,
:mod:`.images`); nothing is imported here, so that ``privgp --help`` does not load pandas.
"""
__all__: list[str] = []
