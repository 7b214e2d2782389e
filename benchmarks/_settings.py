"""The 10^5 random posterior-sample settings the accountant's benchmarks time (``bench_accounting.py``,
``bench_accounting_ab.py``, ``bench_against_rev.py``'s ``eps-1e5``): one definition, drawn in one order from the
generator given (numpy only, so that any privgp tree can be timed on them)."""
from __future__ import annotations

import resource
import time

import numpy as np


def random_settings(rng: np.random.Generator, size: int = 10**5) -> dict[str, np.ndarray]:
    """n, r, sigma, lengthscale, L and eta of ``size`` settings, log-uniform where they span decades; half with
    eta = 0."""
    n = rng.integers(2, 2000, size)
    r = np.exp(rng.uniform(np.log(0.05), np.log(50), size))
    sigma = np.exp(rng.uniform(np.log(0.01), np.log(10), size))
    ell = np.exp(rng.uniform(np.log(0.05), np.log(2), size))
    L = rng.integers(1, 100, size)
    eta = np.where(rng.random(size) < 0.5, 0.0, rng.uniform(0, 2, size))
    return {"n": n, "r": r, "sigma": sigma, "lengthscale": ell, "L": L, "eta": eta}


def epsilon_of_settings(epsilon_posterior_sampling, box, s: dict[str, np.ndarray]):
    """The one vectorised call the benchmarks time: Matérn-3/2 on the unit square, delta = 1e-5."""
    return epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], 1e-5, lengthscale=s["lengthscale"], L=s["L"],
                                      eta=s["eta"], kernel="matern32", domain=box.unit(2))


def timed_epsilon(epsilon_posterior_sampling, box, s: dict[str, np.ndarray],
                  counter: str = "ru_minflt") -> tuple[float, float, int, bytes]:
    """One :func:`epsilon_of_settings` call: its CPU seconds (``time.process_time``, all threads), wall seconds, the
    change of ``resource.getrusage``'s ``counter`` (minor page faults by default) and epsilon's bytes."""
    before = getattr(resource.getrusage(resource.RUSAGE_SELF), counter)
    c, w = time.process_time(), time.perf_counter()
    eps = epsilon_of_settings(epsilon_posterior_sampling, box, s).epsilon
    cpu, wall = time.process_time() - c, time.perf_counter() - w
    return cpu, wall, getattr(resource.getrusage(resource.RUSAGE_SELF), counter) - before, np.asarray(eps).tobytes()
