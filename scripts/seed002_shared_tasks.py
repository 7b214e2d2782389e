"""DPConvCNP vs DP-SVGP on the tasks both were scored on (seed 002, Figure 6 protocol, reduced).

`docs/runs/seed002-nll` scores the DPConvCNP on 256 tasks per point and the DP-SVGP on the first 64
of them. The DP-SVGP's per-task NLLs were not kept (only its mean and 95 % interval, in nll.csv), so
a paired comparison cannot be made from the artefacts. What can be made: the DPConvCNP's NLL on the
same 64 tasks. This script re-evaluates the shipped checkpoint on every task exactly as the run did
(same task generators and release seeds, see ``privgp.experiments.seed002.nn.nll``), checks that its
256-task means equal the committed nll.csv (to 1e-9), and writes ``shared_tasks.md`` next to it:
the DPConvCNP's mean ± 95 % interval on the first 64 tasks, the DP-SVGP's (from nll.csv), and their
difference with an *unpaired* interval (1.96 sqrt(se1² + se2²); a paired one would be narrower).

Needs the optional extra ``nn`` (torch); about 30 s of CPU.

    python scripts/seed002_shared_tasks.py [--run docs/runs/seed002-nll]
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default="docs/runs/seed002-nll")
    run = Path(ap.parse_args().run)
    import torch

    from privgp.experiments.seed002.nn import _model, _spec
    from privgp.nn.evaluate import dpconvcnp_nll, mean_ci
    from privgp.nn.tasks import sample_batch

    torch.set_num_threads(1)
    cfg = json.loads((run / "run.json").read_text())["config"]
    assert cfg["checkpoint"] == "shipped", cfg["checkpoint"]
    committed = pd.read_csv(run / "nll.csv")
    model = _model(None)
    seed, k_sv = cfg["seed"], cfg["dpsvgp_tasks"]
    points = [("N", int(n), float(cfg["eps_for_n"])) for n in cfg["n_values"]]
    points += [("epsilon", int(cfg["n_for_eps"]), float(e)) for e in cfg["eps_values"]]
    rows = []
    for fam in cfg["families"]:
        spec = _spec(fam, cfg["eq_lengthscale"], cfg["sawtooth_frequency"])
        for k, (sweep, n, eps) in enumerate(points):
            g = torch.Generator().manual_seed(seed * 1000 + 17 * k + (0 if fam == "eq" else 500))
            b = sample_batch(spec.fixed(epsilon=eps), cfg["tasks"], n, cfg["n_target"], g)
            vals = dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1))
            sel = committed[(committed.family == fam) & (committed.sweep == sweep) & (committed.N == n)
                            & (committed.epsilon == eps)].set_index("method")
            m_all, _ = mean_ci(vals)
            if abs(m_all - sel.loc["DPConvCNP", "nll"]) > 1e-9:
                raise SystemExit(f"{fam} {sweep} N={n} eps={eps}: re-evaluated mean {m_all} != committed "
                                 f"{sel.loc['DPConvCNP', 'nll']} (different checkpoint or code)")
            m_cnp, ci_cnp = mean_ci(vals[:k_sv])
            m_sv, ci_sv = float(sel.loc["DP-SVGP", "nll"]), float(sel.loc["DP-SVGP", "ci95"])
            assert int(sel.loc["DP-SVGP", "tasks"]) == k_sv
            diff, ci_diff = m_cnp - m_sv, math.hypot(ci_cnp, ci_sv)
            verdict = ("DPConvCNP better" if diff + ci_diff < 0 else "DP-SVGP better" if diff - ci_diff > 0
                       else "intervals overlap")
            rows.append({"family": fam, "sweep": sweep, "N": n, "ε": f"{eps:g}",
                         f"DPConvCNP (first {k_sv} tasks)": f"{m_cnp:.3f} ± {ci_cnp:.3f}",
                         f"DP-SVGP ({k_sv} tasks)": f"{m_sv:.3f} ± {ci_sv:.3f}",
                         "difference": f"{diff:+.3f} ± {ci_diff:.3f}", "reading": verdict})
    df = pd.DataFrame(rows)
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    (run / "shared_tasks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
