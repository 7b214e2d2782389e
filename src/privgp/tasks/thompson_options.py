"""The public option values of private Thompson sampling (:mod:`privgp.tasks.thompson`), in a module of
their own so that the command line can offer them without importing the GP and the samplers."""
from __future__ import annotations

SCHEDULES = ("equal", "early")   # how the per-round budget is split over the rounds
KNOBS = ("r", "eta")              # the per-round knob calibrated to the budget: ridge r or extra noise eta
