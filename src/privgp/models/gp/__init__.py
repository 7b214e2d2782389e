"""Exact GP posteriors (seed 000, sec. 2): mean, covariance, one-step update, batches, all r."""
from .posterior import SAMPLING_JITTER, EigenPosterior, ExactPosterior, aggregate_duplicates, batched_mean_var, one_step_update

__all__ = ["ExactPosterior", "aggregate_duplicates", "EigenPosterior", "batched_mean_var", "one_step_update", "SAMPLING_JITTER"]
