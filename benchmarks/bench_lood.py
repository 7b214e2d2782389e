"""Speed targets of seed 003 (LOOD).

Run:  python benchmarks/bench_lood.py [--repeats 3] [--threads N] [--refits 10]
Prints a table: target, sizes, first-call, best and median wall seconds, median CPU seconds, limit.

1. NNGP kernel (FC ReLU, depth 5) on n = 2000 digit images + the Cholesky factorisation of
   K + noise I (constructing :class:`privgp.audit.lood.models.GPPosterior`): <= 3 s. scikit-learn's digits
   have 1797 images; 203 of them shifted by one pixel to the right complete the 2000 (all distinct).
2. LOOD (KL) of 100 candidate differing records x 100 single queries by rank-1 updates
   (:meth:`GPPosterior.add_each`, D factorised once): <= 1 s; against refitting the GP on D u S for
   each candidate (``--refits`` of the 100 timed, scaled to 100), and -- the fair baselines (issue 30) --
   against a refit that reuses the kernel matrix (the NNGP kernel of D, the candidates and the queries
   computed once; per candidate only the Cholesky factor of the n + 1 records and the solves at the
   queries) and against a one-row Cholesky append (D's factor extended by the candidate's row, all 100
   candidates, kernel rows of the candidates included in the time). All three are checked to agree.
3. One query optimisation, 300 Adam steps, single query, n = 1000 (ReLU depth 5): <= 20 s.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

from _timing import timings


def cpu_seconds(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads (set before numpy is imported)")
    ap.add_argument("--refits", type=int, default=10, help="refits timed for the comparison (scaled to 100)")
    args = ap.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
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
    assert np.unique(X, axis=0).shape[0] == 2000
    nm = ChannelNormaliser.fit(X, 1)
    Z, Y = nm(X), centred_one_hot(labels, 10)
    k = NNGP("relu", 5)
    noise = 0.1
    rng = np.random.default_rng(0)
    rows = []

    def fit():
        return GPPosterior(k, Z, Y, noise)

    rows.append(("NNGP ReLU depth 5 + Cholesky", "n=2000 digits, d=64, C=10", *timings(fit, args.repeats),
                 cpu_seconds(fit), 3.0))
    from scipy.linalg import cho_factor as _cho

    gram = k(Z, Z) + noise * np.eye(Z.shape[0])

    def chol_only():
        return _cho(gram, lower=True)

    rows.append(("baseline: the Cholesky factor alone", "n=2000 (the same K + noise I)",
                 *timings(chol_only, args.repeats), cpu_seconds(chol_only), None))

    P = fit()
    cand = nm(rng.uniform(0, 16, size=(100, 64)))
    ycand = centred_one_hot(rng.integers(0, 10, 100), 10)
    Q = nm(rng.uniform(0, 16, size=(100, 64)))

    def rank1():
        return P.add_each(Q, cand, ycand, "kl")

    rows.append(("LOOD 100 candidates x 100 queries, rank-1", "n=2000 (D factorised)", *timings(rank1, args.repeats),
                 cpu_seconds(rank1), 1.0))

    def refits():
        out = np.empty((100, args.refits))
        for j in range(args.refits):
            big = GPPosterior(k, np.vstack([Z, cand[j:j + 1]]), np.vstack([Y, ycand[j:j + 1]]), noise)
            mu0, mu1 = P.mean(Q), big.mean(Q)
            v0, v1 = P.var(Q), big.var(Q)
            out[:, j] = 0.5 * (10 * (v0 / v1 - 1 - np.log(v0 / v1)) + ((mu0 - mu1) ** 2).sum(1) / v1)
        return out

    c0 = time.process_time()
    t_ref = timings(refits, 0)[0]
    c_ref = time.process_time() - c0
    scale = 100 / args.refits
    rows.append((f"same by refitting ({args.refits} timed, x{scale:g})", "n=2001 per refit",
                 t_ref * scale, t_ref * scale, t_ref * scale, c_ref * scale, None))
    check = rank1()
    assert np.allclose(check[:, :args.refits], refits(), rtol=1e-6), "rank-1 LOOD differs from the refits"

    # fair baselines: the kernel matrix computed once (not timed), then per candidate a Cholesky refit
    from scipy.linalg import cho_factor, cho_solve, solve_triangular

    A = np.vstack([Z, cand])
    K_all, K_aq, k_qq = k(A, A), k(A, Q), k.diag(Q)
    mu0, v0 = P.mean(Q), P.var(Q)
    n = Z.shape[0]

    def lood(mu1, v1):
        return 0.5 * (10 * (v0 / v1 - 1 - np.log(v0 / v1)) + ((mu0 - mu1) ** 2).sum(-1) / v1)

    def refits_reusing_kernel():
        out = np.empty((100, args.refits))
        for j in range(args.refits):
            idx = np.r_[0:n, n + j]
            c = cho_factor(K_all[np.ix_(idx, idx)] + noise * np.eye(n + 1), lower=True)
            mu1 = K_aq[idx].T @ cho_solve(c, np.vstack([Y, ycand[j:j + 1]]))
            W = solve_triangular(c[0], K_aq[idx], lower=True)
            out[:, j] = lood(mu1, k_qq - np.einsum("ij,ij->j", W, W))
        return out

    c0 = time.process_time()
    t_reuse = timings(refits_reusing_kernel, 0)[0]
    c_reuse = time.process_time() - c0
    rows.append((f"same by refits reusing the kernel ({args.refits} timed, x{scale:g})", "n=2001 per Cholesky",
                 t_reuse * scale, t_reuse * scale, t_reuse * scale, c_reuse * scale, None))
    assert np.allclose(check[:, :args.refits], refits_reusing_kernel(), rtol=1e-6), "kernel-reusing refits differ"
    L = np.tril(P._chol[0])

    def append():
        """D's Cholesky factor extended by one row per candidate: l = L^-1 k_D(x*), d = sqrt(k(x*, x*) + noise
        - |l|^2); the new posterior at Q is the old one plus the appended row's term (no refactorising)."""
        W0 = solve_triangular(L, k(Z, Q), lower=True)
        a0 = solve_triangular(L, Y, lower=True)
        lc = solve_triangular(L, k(Z, cand), lower=True)                   # (n, 100)
        d = np.sqrt(k.diag(cand) + noise - np.einsum("ij,ij->j", lc, lc))  # (100,)
        row = (k(cand, Q) - lc.T @ W0) / d[:, None]                        # (100, q)
        a_new = (ycand - lc.T @ a0) / d[:, None]                           # (100, C)
        mu1 = mu0[None, :, :] + row[:, :, None] * a_new[:, None, :]
        return lood(mu1, v0[None, :] - row ** 2).T                         # (q, 100)

    rows.append(("same by one-row Cholesky appends", "n=2000 (D factorised)", *timings(append, args.repeats),
                 cpu_seconds(append), None))
    assert np.allclose(check, append(), rtol=1e-6), "Cholesky-append LOOD differs from the rank-1 updates"

    sub = rng.choice(2000, size=1000, replace=False)
    P1000 = GPPosterior(k, Z[sub], Y[sub], noise)
    pair = P1000.add(cand[:1], ycand[:1])
    box = (nm(np.zeros(64)), nm(np.full(64, 16.0)))

    def opt():
        return optimize_queries(pair, 1, steps=300, lr=0.05, init="uniform", box=box, rng=np.random.default_rng(1))

    rows.append(("query optimisation, 300 Adam steps", "n=1000, q=1, ReLU depth 5", *timings(opt, args.repeats),
                 cpu_seconds(opt), 20.0))

    print(f"# bench_lood on {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"threads={args.threads or 'default'}")
    print("| target | sizes | first s | best s | median s | CPU s | limit s | met |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name, size, first, best, med, cpu, limit in rows:
        met = "" if limit is None else ("yes" if med <= limit else "NO")
        lim = "" if limit is None else f"{limit:g}"
        print(f"| {name} | {size} | {first:.3f} | {best:.3f} | {med:.3f} | {cpu:.3f} | {lim} | {met} |")
    r1, ref, reuse, app = (rows[i] for i in (2, 3, 4, 5))
    print(f"speed-up of rank-1 updates over refits: {ref[4] / r1[4]:.0f}x, over refits reusing the kernel: "
          f"{reuse[4] / r1[4]:.0f}x, over one-row Cholesky appends: {app[4] / r1[4]:.2f}x (median wall); "
          f"CPU: {ref[5] / r1[5]:.0f}x, {reuse[5] / r1[5]:.0f}x, {app[5] / r1[5]:.2f}x")
    print(f"NNGP kernel + Cholesky / the Cholesky alone: {rows[0][4] / rows[1][4]:.1f}x (median wall)")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
