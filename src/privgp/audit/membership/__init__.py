"""Membership inference: the game of seed 000 (sec. 4, App. C), its attacks, density models, LiRA, metrics."""
