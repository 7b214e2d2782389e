"""DPConvCNP vs DP-SVGP paired on the tasks both were scored on (seed 002, Figure 6 protocol, reduced).

`docs/runs/seed002-nll` scores the DPConvCNP on 256 tasks per point and the DP-SVGP on the first 64
of them, and keeps only each method's mean and 95 % interval (nll.csv). This script re-evaluates both
methods task by task exactly as that run did (the same task generators and release seeds, imported
from their one home ``privgp.experiments.seed002.nn``: ``nll_points``, ``nll_task_generator``; the
shipped checkpoint and the shipped tuned DP-SVGP settings), checks the re-evaluation against the
committed run (the DPConvCNP's 256-task mean and the DP-SVGP's 64-task mean, each to 1e-9; it stops
otherwise), and writes to ``--out``:

* ``paired.csv``: the per-task NLL of both methods on the 64 shared tasks of every point;
* ``paired.md``: per point, both means on the shared tasks and the mean paired difference
  (DPConvCNP - DP-SVGP) ± its standard error (sd of the 64 differences / 8); "DPConvCNP better" /
  "DP-SVGP better" when the difference is more than 1.96 standard errors from 0, else "not resolved";
* ``run.json``: the command, configuration, versions, wall time and the same numbers.

Needs the optional extra ``nn`` (torch). The DP-SVGP refits (DP-SGD, 64 tasks x 14 points) take
minutes of CPU.

    python scripts/seed002_shared_tasks.py --run docs/runs/seed002-nll --out docs/runs/seed002-paired
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

TOL = 1e-9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default="docs/runs/seed002-nll")
    ap.add_argument("--out", default="docs/runs/seed002-paired")
    args = ap.parse_args()
    run, out = Path(args.run), Path(args.out)
    import torch

    from privgp.experiments.common import write_run_record
    from privgp.experiments.seed002.nn import _model, _settings, _spec, nll_points, nll_task_generator
    from privgp.nn.evaluate import dpconvcnp_nll, dpsvgp_nll, mean_ci, paired_mean_se
    from privgp.nn.tasks import TaskBatch, sample_batch

    torch.set_num_threads(1)
    rec = json.loads((run / "run.json").read_text())
    cfg = rec["config"]
    if cfg["checkpoint"] != "shipped" or cfg["tuned"] != "shipped":
        raise SystemExit(f"{run}: not the shipped checkpoint and settings ({cfg['checkpoint']}, {cfg['tuned']})")
    committed = pd.DataFrame(rec["summary"]["nll"])
    out.mkdir(parents=True, exist_ok=True)
    model = _model(None)
    seed, k_sv = cfg["seed"], cfg["dpsvgp_tasks"]
    t0 = time.perf_counter()
    per_task, rows, summary = [], [], []
    for fam in cfg["families"]:
        spec = _spec(fam, cfg["eq_lengthscale"], cfg["sawtooth_frequency"])
        settings = _settings(fam, None)
        if json.dumps(settings.to_dict(), sort_keys=True) != json.dumps(cfg["dpsvgp_settings"][fam], sort_keys=True):
            raise SystemExit(f"{fam}: the shipped DP-SVGP settings differ from those of {run}")
        points = nll_points(cfg["n_values"], cfg["eps_for_n"], cfg["eps_values"], cfg["n_for_eps"])
        for k, (sweep, n, eps) in enumerate(points):
            b = sample_batch(spec.fixed(epsilon=eps), cfg["tasks"], n, cfg["n_target"],
                             nll_task_generator(seed, k, fam))
            cnp = dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1))
            sub = TaskBatch(b.xc[:k_sv], b.yc[:k_sv], b.xt[:k_sv], b.yt[:k_sv], b.epsilon[:k_sv], b.delta,
                            b.mu[:k_sv], b.family)
            svgp = dpsvgp_nll(settings, sub, torch.Generator().manual_seed(seed + 2))
            sel = committed[(committed.family == fam) & (committed.sweep == sweep) & (committed.N == n)
                            & (committed.epsilon == eps)].set_index("method")
            for method, vals in (("DPConvCNP", cnp), ("DP-SVGP", svgp)):
                got, want = mean_ci(vals)[0], float(sel.loc[method, "nll"])
                if len(vals) != int(sel.loc[method, "tasks"]) or abs(got - want) > TOL:
                    raise SystemExit(f"{fam} {sweep} N={n} eps={eps} {method}: re-evaluated mean {got} over "
                                     f"{len(vals)} tasks != committed {want} over {sel.loc[method, 'tasks']}")
            md, se = paired_mean_se(cnp[:k_sv], svgp)
            reading = ("DPConvCNP better" if md + 1.96 * se < 0 else "DP-SVGP better" if md - 1.96 * se > 0
                       else "not resolved")
            per_task += [{"family": fam, "sweep": sweep, "N": n, "epsilon": eps, "task": i,
                          "DPConvCNP": float(cnp[i]), "DP-SVGP": float(svgp[i])} for i in range(k_sv)]
            summary.append({"family": fam, "sweep": sweep, "N": n, "epsilon": eps, "tasks": k_sv,
                            "dpconvcnp": float(cnp[:k_sv].mean()), "dpsvgp": float(svgp.mean()),
                            "difference": md, "se": se, "reading": reading})
            rows.append({"family": fam, "sweep": sweep, "N": n, "ε": f"{eps:g}",
                         f"DPConvCNP ({k_sv} shared tasks)": f"{cnp[:k_sv].mean():.3f}",
                         f"DP-SVGP ({k_sv} shared tasks)": f"{svgp.mean():.3f}",
                         "paired difference ± SE": f"{md:+.3f} ± {se:.3f}", "reading": reading})
            print(rows[-1], f"{time.perf_counter() - t0:.0f} s", flush=True)
    pd.DataFrame(per_task).to_csv(out / "paired.csv", index=False)
    df = pd.DataFrame(rows)
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    (out / "paired.md").write_text("\n".join(lines) + "\n")
    config = {"nll_run": str(run), "nll_run_commit": rec.get("commit"), "shared_tasks": k_sv,
              "checked_against_nll_run": f"both methods' means to {TOL:g}", "threads": 1}
    write_run_record(out, "seed002-paired", config, {"points": summary}, seconds=time.perf_counter() - t0)


if __name__ == "__main__":
    main()
