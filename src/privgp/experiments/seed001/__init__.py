"""Experiments of seed paper 001 (DP sparse GP): figures 1-3."""
