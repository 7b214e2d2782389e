"""Experiments of seed paper 002 (functional mechanism, DPSetConv, DPConvCNP)."""
