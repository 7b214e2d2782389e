"""Experiments of seed paper 004 (the exact leak of approximate samplers)."""
