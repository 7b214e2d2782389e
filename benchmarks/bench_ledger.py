"""Speed of the ledger: the spent epsilon of a dataset with 10^3 entries, exact over the order alpha.

Run:  python benchmarks/bench_ledger.py [--entries 1000] [--repeat 7]
Target (issue 9): <= 50 ms for 10^3 entries (composition of their events, minimised over alpha).

The entries are a realistic mix: posterior-sample releases with different n, r, sigma, L (each a
distinct event), Gaussian mechanisms and zCDP events. Reported: the median wall time of
``Ledger.dataset(fp)`` (parses every entry's event JSON, builds the ComposedEvent, one accountant
call) and, separately, of the accountant call alone on the already-built composition.

Peer in the same run (issue 30): Google's dp_accounting (the ``dp-accounting`` extra), its RDP accountant
composing as many Gaussian events (noise multipliers drawn like the Gaussian entries'; it has no posterior-
sampling event) one by one and converting at delta = 1e-6 with its default orders; the ratio is printed.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from privgp.accounting import ComposedEvent, GaussianEvent, PosteriorSampleEvent, ZcdpEvent
from privgp.accounting import epsilon as account_epsilon
from privgp.ledger import Ledger


def make_events(k: int, rng: np.random.Generator):
    out = []
    for i in range(k):
        u = i % 3
        if u == 0:
            out.append(PosteriorSampleEvent(n=int(rng.integers(50, 5000)), r=float(rng.uniform(20, 200)),
                                            sigma=float(rng.uniform(0.1, 1)), L=int(rng.integers(1, 4)),
                                            kappa=0.3, dim=2, kernel="matern32"))
        elif u == 1:
            out.append(GaussianEvent(1.0, float(rng.uniform(50, 500))))
        else:
            out.append(ZcdpEvent(float(rng.uniform(1e-6, 1e-4))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    events = make_events(args.entries, np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "l.sqlite")
        fp = led.fingerprint("bench")
        for ev in events:
            led.charge(fp, ev, budget_epsilon=1e9, budget_delta=1e-6)
        times, cpu = [], []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            spent = led.dataset(fp).spent
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        comp = ComposedEvent.of(events)
        acc = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            account_epsilon(comp, 1e-6)
            acc.append(time.perf_counter() - t0)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"| {args.entries} entries: Ledger.dataset (parse + compose + accountant) | "
          f"median {1e3 * statistics.median(times):.1f} ms wall (best {1e3 * min(times):.1f}), "
          f"{1e3 * statistics.median(cpu):.1f} ms CPU | <= 50 ms |")
    print(f"load average: {' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")
    print(f"| accountant alone on the composed event | median {1e3 * statistics.median(acc):.1f} ms |")
    print(f"spent epsilon {spent.epsilon:.6g} at delta 1e-6 (alpha {spent.alpha})")
    try:
        import dp_accounting
        from dp_accounting.rdp import RdpAccountant
    except ImportError:
        return
    sigmas = np.random.default_rng(1).uniform(50, 500, args.entries)
    peer = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        acc_ = RdpAccountant()
        for s_ in sigmas:
            acc_.compose(dp_accounting.GaussianDpEvent(float(s_)))
        acc_.get_epsilon(1e-6)
        peer.append(time.perf_counter() - t0)
    print(f"| peer: dp_accounting RdpAccountant, {args.entries} Gaussian events composed + epsilon | "
          f"median {1e3 * statistics.median(peer):.1f} ms wall | ratio Ledger.dataset / peer "
          f"{statistics.median(times) / statistics.median(peer):.2f} |")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
