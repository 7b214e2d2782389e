"""Speed of seed 002's meta-test (issue 13): the shipped DPConvCNP against the DP-SVGP baseline.

Run:  python benchmarks/bench_dpconvcnp.py [--repeats 20] [--threads 2] [--svgp-repeats 3]

1. The shipped DPConvCNP, one task = one private release (DPSetConv on the 256-point grid, incl.
   gdp_mu and the float64 noise factor) + predictions at 512 targets, N = 512; target <= 50 ms.
2. The DP-SVGP at the shipped tuned settings (EQ kernel), one task = DP-SGD fit on the N = 512
   context + predictions at 512 targets; the PRV noise multiplier (computed once per (eps, N)) is
   timed separately. No target: the paper's point is that it is orders of magnitude slower.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

from _timing import timings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--svgp-repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from privgp.nn.dpsvgp import fit, noise_multiplier
    from privgp.nn.evaluate import tuned_settings
    from privgp.nn.pretrained import load
    from privgp.nn.tasks import default_specs, sample_batch

    model = load()
    spec = default_specs()["eq"].fixed(lengthscale=0.71, epsilon=1.0)
    b = sample_batch(spec, max(args.repeats, args.svgp_repeats), 512, 512, torch.Generator().manual_seed(0))
    xc, yc, xt = b.xc.numpy(), b.yc.numpy(), b.xt.numpy()
    g = torch.Generator().manual_seed(1)
    it = iter(range(10**9))

    def one_task():
        i = next(it) % len(xc)
        rep, _ = model.release(xc[i], yc[i], 1.0, 1e-3, generator=g)
        return model.predict(rep, xt[i])

    rows = [("DPConvCNP release + predict", "N=512, 512 targets, grid 256", *timings(one_task, args.repeats), 0.050)]
    s = tuned_settings("eq")
    t0 = time.perf_counter()
    noise_multiplier(1.0, 1e-3, s.sample_rate(512), s.steps(512))
    acc = time.perf_counter() - t0
    rows.append(("DP-SVGP: PRV noise multiplier (once per eps, N)", f"q={s.sample_rate(512):.3g}, steps={s.steps(512)}",
                 acc, acc, acc, None))

    def one_fit():
        i = next(it) % len(xc)
        f = fit(xc[i:i + 1].astype(float), yc[i:i + 1].astype(float), 1.0, 1e-3, s, g)
        return f.predict(xt[i:i + 1].astype(float))

    rows.append(("DP-SVGP DP-SGD fit + predict", f"N=512, {s.epochs} epochs, batch {s.batch_size}, M={s.n_inducing}",
                 *timings(one_fit, args.svgp_repeats), None))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"torch {torch.__version__}, threads {args.threads}, load average {os.getloadavg()[0]:.1f}, "
          f"numpy {np.__version__}")
    print("| target | sizes | first call s | best s | median s | limit s | met |")
    print("|---|---|---|---|---|---|---|")
    for name, sizes, first, best, med, limit in rows:
        met = "" if limit is None else ("yes" if med <= limit else "NO")
        lim = "–" if limit is None else f"{limit:g}"
        print(f"| {name} | {sizes} | {first:.4g} | {best:.4g} | {med:.4g} | {lim} | {met} |")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
