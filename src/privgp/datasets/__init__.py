"""Synthetic generators and small shipped real data (no downloads)."""
