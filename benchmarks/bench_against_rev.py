"""Workloads without an external peer, against the same workload at a named git revision, in the same run
(issue 30).

    python benchmarks/bench_against_rev.py --baseline db32146 --rounds 3 WORKLOAD [WORKLOAD ...]

Each round runs every workload once per side in a fresh process, alternating (this tree first in even
rounds, the baseline first in odd ones); the baseline is the revision's ``src`` exported by ``git archive``
(``_timing.baseline_src``) and put on ``PYTHONPATH``; this tree is ``src`` of the working tree. BLAS and
torch use one thread. Workloads:

* ``sgld-fig1``: seed 004's Figure 1 at the paper's parameters (indicator, P(theta_hat > mu) and the
  Chernoff bound at epochs 0-60 and infinity, 1 149 019 components) -- ``bench_sgld.py``'s first row;
* ``sgld-hs``: the exact hockey-stick epsilon(0.01) at K = 25, both directions (the time is
  their sum) -- its next two rows;
* ``lood-opt``: one LOOD query optimisation, 300 Adam steps, n = 1000 digits, ReLU depth 5 --
  ``bench_lood.py``'s last row (the GP posterior is built untimed);
* ``lira-paper``: ``audit_lira`` of one setting (n = 10, L = 3, r = 0.1, sigma = 0.5, 10^4 + 10^4 datasets,
  ``paper`` attack, seed 0), median of 3 after 1 untimed -- ``bench_audit.py``'s end-to-end row;
* ``eps-one``: 300 calls of one posterior-sample epsilon (n = 10, r = 1, sigma = 5, delta = 0.05, ``exp1d``),
  median of 7 after 1 untimed -- ``bench_accounting.py``'s one-setting row (the time is for 300 calls);
* ``eps-1e5``: epsilon for ``bench_accounting.py``'s 10^5 random settings in one call, the search in one thread,
  median of 5 after 1 untimed -- its "the same in one thread" row;
* ``dpconvcnp``: the shipped DPConvCNP, one task (release + predict, N = 512, 512 targets), median of 20
  tasks after 3 untimed ones -- ``bench_dpconvcnp.py``'s first row;
* ``quick:NAME``: ``privgp experiment NAME --quick --workers 1``, whole process (imports included);
* ``exp:NAME``: ``privgp experiment NAME --workers W`` at full size (``--exp-workers``, default 2), whole
  process.

In-process workloads time the work alone (imports and setup untimed; one untimed warm-up call where
noted) and report its wall and CPU seconds; ``quick:`` and ``exp:`` workloads report the whole process's
wall and CPU (user + system of the child and its worker processes). Prints the machine line (one-thread
DGEMM speed, load) first and last, and per workload the medians over the rounds and the ratio this tree /
baseline. The in-process workloads' outputs (epsilon, the optimised LOOD, the AUC) are printed for both sides so
that equal results can be seen.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _timing import baseline_src  # noqa: E402

_HEAD = """
import json, math, statistics, sys, time
def _run(work, inner, warm=0):
    for _ in range(warm):
        work()
    wall, cpu, out = [], [], None
    for _ in range(inner):
        t0, c0 = time.perf_counter(), time.process_time()
        out = work()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    print(json.dumps({"wall": statistics.median(wall), "cpu": statistics.median(cpu), "out": out}))
"""

SNIPPETS = {
    "sgld-fig1": """
from privgp.audit.samplers.sgld_model import CyclicSGLD
FIG1 = CyclicSGLD(1149019, 0.1, 1.0, 1.8, 1165165.0)
def work():
    rows = []
    for K in list(range(61)) + [math.inf]:
        law = FIG1.law(math.inf if math.isinf(K) else K * FIG1.n)
        rows.append((law.indicator(), law.tail_probability(), law.chernoff_bound()))
    return repr(max(r[0] for r in rows[:-1]))
_run(work, 1)
""",
    "sgld-hs": """
from privgp.accounting.mixtures import hockey_stick_epsilon
from privgp.audit.samplers.sgld_model import CyclicSGLD
FIG1 = CyclicSGLD(1149019, 0.1, 1.0, 1.8, 1165165.0)
law = FIG1.law(25 * FIG1.n)
G, M = law.gaussian(), law.mixture()
def work():
    return [repr(hockey_stick_epsilon(0.01, G, M)), repr(hockey_stick_epsilon(0.01, M, G))]
_run(work, 1)
""",
    "lood-opt": """
import numpy as np
from privgp.audit.lood.models import GPPosterior, centred_one_hot
from privgp.audit.lood.queries import optimize_queries
from privgp.datasets.images import ChannelNormaliser, load_digits_images
from privgp.models.nngp import NNGP
data = load_digits_images()
imgs = data.X.reshape(-1, 8, 8)
shifted = np.roll(imgs[:203], 1, axis=2)
shifted[:, :, 0] = 0.0
X = np.vstack([data.X, shifted.reshape(203, 64)])
labels = np.concatenate([data.labels, data.labels[:203]])
nm = ChannelNormaliser.fit(X, 1)
Z, Y = nm(X), centred_one_hot(labels, 10)
k = NNGP("relu", 5)
rng = np.random.default_rng(0)   # the draws of bench_lood.py, in its order
cand = nm(rng.uniform(0, 16, size=(100, 64)))
ycand = centred_one_hot(rng.integers(0, 10, 100), 10)
rng.uniform(0, 16, size=(100, 64))
sub = rng.choice(2000, size=1000, replace=False)
pair = GPPosterior(k, Z[sub], Y[sub], 0.1).add(cand[:1], ycand[:1])
box = (nm(np.zeros(64)), nm(np.full(64, 16.0)))
def work():
    res = optimize_queries(pair, 1, steps=300, lr=0.05, init="uniform", box=box, rng=np.random.default_rng(1))
    return repr(res.best_value)
_run(work, 1)
""",
    "lira-paper": """
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from privgp.audit.membership.game import MembershipGame
from privgp.audit.membership.lira import audit_lira
game = MembershipGame(n=10, x0=0.5, lengthscale=1.0, r=0.1, sigma=0.5, L=3)
def work():
    res = audit_lira(game, attacks=("paper",), n_shadow=10_000, n_eval=10_000, seed=0)
    return repr(res["paper"].roc.auc)
_run(work, 3, warm=1)
""",
    "eps-one": """
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
def work():   # 300 calls: the time per call is this workload's time / 300
    for _ in range(300):
        res = epsilon_posterior_sampling(10, 1.0, 5.0, 0.05, sensitivity="exp1d")
    return repr(float(res.epsilon))
_run(work, 7, warm=1)
""",
    "eps-1e5": f"""
import numpy as np
sys.path.insert(0, {str(HERE)!r})
from _settings import epsilon_of_settings, random_settings
from privgp.accounting import order_search
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
from privgp.models.domain import Box
order_search.__dict__["MAX_THREADS"] = 1     # CPU time of the search in one thread
settings = random_settings(np.random.default_rng(0))   # bench_accounting.py's 10^5 settings
def work():
    return repr(float(np.sum(epsilon_of_settings(epsilon_posterior_sampling, Box, settings).epsilon)))
_run(work, 5, warm=1)
""",
    "dpconvcnp": """
import torch
torch.set_num_threads(1)
from privgp.nn.pretrained import load
from privgp.nn.tasks import default_specs, sample_batch
model = load()
spec = default_specs()["eq"].fixed(lengthscale=0.71, epsilon=1.0)
b = sample_batch(spec, 23, 512, 512, torch.Generator().manual_seed(0))
xc, yc, xt = b.xc.numpy(), b.yc.numpy(), b.xt.numpy()
g = torch.Generator().manual_seed(1)
it = iter(range(10**9))
def work():
    i = next(it) % len(xc)
    rep, _ = model.release(xc[i], yc[i], 1.0, 1e-3, generator=g)
    model.predict(rep, xt[i])
_run(work, 20, warm=3)   # no result printed: each task is a fresh random release
""",
}


def _child_times(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout


def run_one(name: str, env: dict[str, str], tmp: Path, exp_workers: int = 2) -> tuple[float, float, str]:
    if name.startswith(("quick:", "exp:")):
        kind, exp = name.split(":", 1)
        size = ["--quick", "--workers", "1"] if kind == "quick" else ["--workers", str(exp_workers)]
        cmd = [sys.executable, "-m", "privgp.cli.main", "experiment", exp, *size, "--out", str(tmp / "out"),
               "--overwrite"]
        wall, cpu, _ = _child_times(cmd, env, tmp)
        return wall, cpu, ""
    _, _, stdout = _child_times([sys.executable, "-c", _HEAD + SNIPPETS[name]], env, tmp)
    res = json.loads(stdout.strip().splitlines()[-1])
    return res["wall"], res["cpu"], str(res["out"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--baseline", required=True, help="git revision timed beside this tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exp-workers", type=int, default=2, help="worker processes of the exp: workloads")
    a = ap.parse_args()
    for w in a.workloads:
        if w not in SNIPPETS and not w.startswith(("quick:", "exp:")):
            ap.error(f"unknown workload {w!r}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(machine_line(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sides = {"this tree": dict(env, PYTHONPATH=str(ROOT / "src"), PRIVGP_LEDGER=str(tmp / "ledger.sqlite")),
                 a.baseline: dict(env, PYTHONPATH=str(baseline_src(a.baseline, tmp / "base")),
                                  PRIVGP_LEDGER=str(tmp / "ledger.sqlite"))}
        print(f"{'workload':<18} {'this tree wall / CPU s':>24} {a.baseline + ' wall / CPU s':>24} "
              f"{'ratio wall (CPU)':>18}  load")
        for w in a.workloads:
            res: dict[str, list[tuple[float, float, str]]] = {s: [] for s in sides}
            loads = [os.getloadavg()[0]]
            for rnd in range(a.rounds):
                for side in (list(sides) if rnd % 2 == 0 else list(sides)[::-1]):
                    res[side].append(run_one(w, sides[side], tmp, a.exp_workers))
                loads.append(os.getloadavg()[0])
            med = {s: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for s, v in res.items()}
            (tw, tc), (bw, bc) = med["this tree"], med[a.baseline]
            print(f"{w:<18} {tw:>11.4g} / {tc:<10.4g} {bw:>11.4g} / {bc:<10.4g} {tw / bw:>8.2f} ({tc / bc:.2f})"
                  f"  {min(loads):.2f}..{max(loads):.2f}", flush=True)
            outs = {s: sorted({r[2] for r in v}) for s, v in res.items()}
            if any(o for v in outs.values() for o in v):
                print(f"{'':<18} results: this tree {outs['this tree']}; {a.baseline} {outs[a.baseline]}", flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
