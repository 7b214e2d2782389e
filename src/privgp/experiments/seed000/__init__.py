"""Experiments of seed paper 000 (posterior sampling): tables 1-4, figures, real data, tightness."""
