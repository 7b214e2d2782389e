"""Experiments of seed paper 003 (leave-one-out distinguishability)."""
