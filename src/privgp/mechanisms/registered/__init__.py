"""The mechanisms of ``privgp release``, one module each.

Every module of this package is imported by :func:`privgp.mechanisms.interface.registry`, and every
:class:`~privgp.mechanisms.interface.Mechanism` subclass defined in one is registered under its
``name``: adding a module here adds a mechanism to the command, ``privgp verify``, ``privgp account
--mechanism``, the Python writers (:mod:`privgp.publish`), the release forecast and the utility study.
Keep these modules light at import time (``privgp --help`` imports them): import scipy, pandas and
the like inside the methods that need them.
"""
