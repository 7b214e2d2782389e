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

#: the test modules that hold the suite's longest single tests (mypy over the whole package, about 40-55 s; the
#: fresh-venv install, 20-30 s; a plan rebuilt for every number it holds, about 10 s), run first: pytest-xdist hands
#: out tests in collection order, and where these came last one worker ran them alone while the other had nothing
#: left (the packaging test ended a run 21 s after the other worker's last test; issue 30)
RUN_FIRST = ("tests/test_lint.py", "tests/test_packaging.py", "tests/test_publish.py")


def pytest_collection_modifyitems(config, items):
    first = {config.rootpath / name for name in RUN_FIRST}
    items.sort(key=lambda item: item.path not in first)   # a stable sort: the order inside each part is kept
