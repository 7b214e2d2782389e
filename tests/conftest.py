import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

# numpy may already be imported (by plugins) before the variables above take effect: pin the
# BLAS pools of this process to one thread as well; tests run in parallel with pytest-xdist.
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(1)

from hypothesis import HealthCheck, settings  # noqa: E402

# The default profile is derandomised: the suite CI runs draws the same examples every time,
# so a red run is a reproducible failure rather than a rare draw. The "explore" profile draws
# fresh random examples, many more of them:  python -m pytest --hypothesis-profile=explore
settings.register_profile("ci", deadline=None, max_examples=60, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, max_examples=600,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")
