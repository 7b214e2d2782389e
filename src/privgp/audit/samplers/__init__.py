"""Approximate samplers and what they leak (seed 004): SGLD on the linear-regression
counterexample, the paper's bounds, iterative samplers of the seed-000 posterior."""
