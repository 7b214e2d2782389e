"""The public option values of private Thompson sampling (:mod:`privgp.tasks.thompson`), in a module of
their own so that the command line can offer them without importing the GP and the samplers."""
from __future__ import annotations

SCHEDULES = ("equal", "early")   # how the per-round budget is split over the rounds
KNOBS = ("r", "eta")              # the per-round knob calibrated to the budget: ridge r or extra noise eta
#: Most rounds one run may plan: the plan composes every prefix of the rounds (memory about
#: PLAN_BYTES_PER_ROUND2 * rounds^2 bytes) and each round conditions on all earlier records, so a longer run
#: cannot finish in reasonable time; it is refused before anything is charged.
MAX_ROUNDS = 2000
PLAN_BYTES_PER_ROUND2 = 800
