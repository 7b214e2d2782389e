"""The paper-width DPConvCNP trained on a GPU, set beside the shipped CPU model (seed 002).

The model was trained with ``privgp experiment seed002-train --set device=cuda ...`` on a lent H200
(command and log in ``docs/runs/seed002-train-gpu/``). Two steps:

``half SRC DEST``
    writes the checkpoint SRC (float32, 25 MB: too large for the repository) with its floating
    tensors rounded to float16 (12.6 MB) to DEST; every number below is of that committed file.

``compare --checkpoint DEST --out DIR [--fp32 SRC]``
    scores the shipped checkpoint and DEST on the same tasks with the same noise draws:

    * the fixed validation tasks of the training schedule (512 tasks, the tasks both runs were
      validated on: it checks that the two schedules draw them alike, and that the shipped model's
      score equals its training record to 1e-9) -- per task, paired;
    * the Figure 6 points of ``docs/runs/seed002-nll`` (the same generators and release seeds,
      imported from ``privgp.experiments.seed002.nn``; 256 tasks per point; the shipped model's mean
      is checked against the committed ``nll.csv`` to 1e-9), paired task by task against the shipped
      model, and against the tuned DP-SVGP on the 64 shared tasks whose per-task NLLs are committed in
      ``docs/runs/seed002-paired/paired.csv`` (no refit);
    * with ``--fp32``, the validation score of the unrounded weights (the rounding's effect).

    It writes ``validation.md``, ``curves.md`` (both runs' validation NLL by step, from their
    history.csv: the GPU run's beside the checkpoint), ``points.csv``, ``points.md``, ``per_task.csv`` and ``run.json``.
    "better" means more than 1.96 standard errors of the paired difference from 0.

    python scripts/seed002_gpu_model.py compare \\
        --checkpoint docs/runs/seed002-train-gpu/dpconvcnp_paper_width_fp16.pt --out docs/runs/seed002-gpu-compare
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from privgp.experiments.common import markdown_table
from privgp.nn.evaluate import paired_mean_se

TOL = 1e-9
NLL_RUN = Path("docs/runs/seed002-nll")
PAIRED_RUN = Path("docs/runs/seed002-paired")
SHIPPED_RUN = Path("docs/runs/seed002-train")   # the shipped model's training record (history.csv)


def half(src: Path, dest: Path) -> None:
    import torch

    from privgp.nn.model import DPConvCNP, ModelConfig
    from privgp.nn.pretrained import _sha256, load_checkpoint

    d = load_checkpoint(src)
    params = {k for k, _ in DPConvCNP(ModelConfig.from_dict(d["config"])).named_parameters()}  # not the grid buffer
    d["state_dict"] = {k: t.half() if k in params else t for k, t in d["state_dict"].items()}
    d["training"] = {**d["training"], "rounded_to_float16_from_sha256": _sha256(src)}
    dest.parent.mkdir(parents=True, exist_ok=True)
    torch.save(d, dest)
    print(f"{dest}: {dest.stat().st_size} bytes, sha256 {_sha256(dest)}")


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, str, str]:
    """Mean of a - b over paired tasks, its standard error, the reading ("first better": a lower by more
    than 1.96 SE) and the text "+d ± se"."""
    md, se = paired_mean_se(a, b)
    reading = "first better" if md + 1.96 * se < 0 else "second better" if md - 1.96 * se > 0 else "not resolved"
    return md, se, reading, f"{md:+.3f} ± {se:.3f}"


def _read(reading: str, first: str, second: str) -> str:
    return {"first better": f"{first} better", "second better": f"{second} better"}.get(reading, reading)


def _md(df: pd.DataFrame) -> str:
    return markdown_table(df) + "\n"


def compare(checkpoint: Path, out: Path, fp32: Path | None) -> None:
    import torch

    from privgp.experiments.common import write_run_record
    from privgp.experiments.seed002.nn import _spec, nll_points, nll_task_generator
    from privgp.nn.evaluate import dpconvcnp_nll
    from privgp.nn.pretrained import _sha256, load, training_record
    from privgp.nn.tasks import sample_batch
    from privgp.nn.train import TrainConfig, validation_nll

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    shipped, wide = load(None), load(checkpoint)
    rec_s, rec_w = training_record(None), training_record(checkpoint)
    out.mkdir(parents=True, exist_ok=True)

    # -- the validation tasks both runs were scored on ------------------------------------------
    same = {k: v for k, v in rec_s["train_config"].items() if k not in ("steps", "val_every")}
    other = {k: v for k, v in rec_w["train_config"].items() if k not in ("steps", "val_every", "stream")}
    if same != other:
        raise SystemExit(f"the two schedules draw different validation tasks: {same} != {other}")
    cfg = TrainConfig.from_dict(rec_s["train_config"])
    g = torch.Generator().manual_seed(cfg.seed + 1)
    sampler = cfg.sampler()
    batches = [sampler.sample(g) for _ in range(max(1, math.ceil(cfg.val_tasks / cfg.batch_size)))]
    v_s, v_w = validation_nll(shipped, batches, cfg.seed), validation_nll(wide, batches, cfg.seed)
    if abs(v_s.mean() - rec_s["best_val_nll"]) > TOL:
        raise SystemExit(f"shipped model: validation NLL {v_s.mean()} != its training record {rec_s['best_val_nll']}")
    md, se, reading, text = _paired(v_w, v_s)
    val = {"tasks": len(v_s), "shipped": float(v_s.mean()), "paper_width": float(v_w.mean()),
           "paper_width_on_its_gpu": rec_w["best_val_nll"], "difference": md, "se": se,
           "reading": _read(reading, "paper width", "shipped")}
    if fp32 is not None:
        v_f = validation_nll(load(fp32), batches, cfg.seed)
        val |= {"paper_width_fp32": float(v_f.mean()), "fp32_sha256": _sha256(fp32),
                "rounding_effect_max_per_task": float(np.abs(v_f - v_w).max())}
    vrows = pd.DataFrame([{"tasks": val["tasks"], "shipped (5 × 64, 20,000 CPU steps)": f"{val['shipped']:.4f}",
                           f"paper width (7 × 256, step {rec_w['best_step']:,} on a GPU)": f"{val['paper_width']:.4f}",
                           "paired difference ± SE": text, "reading": val["reading"]}])
    (out / "validation.md").write_text(_md(vrows))
    curves = pd.read_csv(SHIPPED_RUN / "history.csv")[["step", "val_nll"]].merge(
        pd.read_csv(checkpoint.parent / "history.csv")[["step", "val_nll"]], on="step", how="outer",
        suffixes=("_shipped", "_paper_width"))
    curves = curves.astype(object).where(curves.notna(), "—")
    (out / "curves.md").write_text(_md(pd.DataFrame(
        {"step": curves["step"], "shipped": [v if v == "—" else f"{v:.3f}" for v in curves["val_nll_shipped"]],
         "paper width": [v if v == "—" else f"{v:.3f}" for v in curves["val_nll_paper_width"]]})))
    print(vrows.to_dict("records"), f"{time.perf_counter() - t0:.0f} s", flush=True)

    # -- the Figure 6 points ----------------------------------------------------------------------
    rec = json.loads((NLL_RUN / "run.json").read_text())
    c = rec["config"]
    if c["checkpoint"] != "shipped":
        raise SystemExit(f"{NLL_RUN}: not the shipped checkpoint")
    committed = pd.DataFrame(rec["summary"]["nll"])
    sv = pd.read_csv(PAIRED_RUN / "paired.csv")
    per_task, points, rows = [], [], []
    for fam in c["families"]:
        spec = _spec(fam, c["eq_lengthscale"], c["sawtooth_frequency"])
        for k, (sweep, n, eps) in enumerate(nll_points(c["n_values"], c["eps_for_n"], c["eps_values"], c["n_for_eps"])):
            b = sample_batch(spec.fixed(epsilon=eps), c["tasks"], n, c["n_target"], nll_task_generator(c["seed"], k, fam))
            s = dpconvcnp_nll(shipped, b, torch.Generator().manual_seed(c["seed"] + 1))
            w = dpconvcnp_nll(wide, b, torch.Generator().manual_seed(c["seed"] + 1))
            sel = committed[(committed.family == fam) & (committed.sweep == sweep) & (committed.N == n)
                            & (committed.epsilon == eps)].set_index("method")
            if abs(s.mean() - float(sel.loc["DPConvCNP", "nll"])) > TOL:
                raise SystemExit(f"{fam} {sweep} N={n} eps={eps}: shipped mean {s.mean()} != committed "
                                 f"{sel.loc['DPConvCNP', 'nll']}")
            svgp = sv[(sv.family == fam) & (sv.sweep == sweep) & (sv.N == n) & (sv.epsilon == eps)].sort_values("task")
            if not np.allclose(svgp["DPConvCNP"].to_numpy(), s[:len(svgp)], rtol=0, atol=TOL):
                raise SystemExit(f"{fam} {sweep} N={n} eps={eps}: {PAIRED_RUN}/paired.csv holds other tasks")
            k_sv = len(svgp)
            d1, se1, r1, t1 = _paired(w, s)
            d2, se2, r2, t2 = _paired(w[:k_sv], svgp["DP-SVGP"].to_numpy())
            oracle = float(sel.loc["oracle", "nll"])
            points.append({"family": fam, "sweep": sweep, "N": n, "epsilon": eps, "tasks": len(s),
                           "shipped": float(s.mean()), "paper_width": float(w.mean()), "oracle": oracle,
                           "vs_shipped": d1, "vs_shipped_se": se1, "vs_shipped_reading": _read(r1, "paper width", "shipped"),
                           "shared_tasks": k_sv, "paper_width_shared": float(w[:k_sv].mean()),
                           "dpsvgp_shared": float(svgp["DP-SVGP"].mean()), "vs_dpsvgp": d2, "vs_dpsvgp_se": se2,
                           "vs_dpsvgp_reading": _read(r2, "paper width", "DP-SVGP")})
            rows.append({"family": fam, "sweep": sweep, "N": n, "ε": f"{eps:g}",
                         f"shipped ({len(s)} tasks)": f"{s.mean():.3f}", f"paper width ({len(s)} tasks)": f"{w.mean():.3f}",
                         "paper width − shipped ± SE": t1, "reading": _read(r1, "paper width", "shipped"),
                         f"paper width − DP-SVGP ({k_sv} shared tasks) ± SE": t2,
                         "reading vs DP-SVGP": _read(r2, "paper width", "DP-SVGP"),
                         "oracle": "−0.1905 (noise floor)" if fam == "sawtooth" else f"{oracle:.3f}"})
            per_task += [{"family": fam, "sweep": sweep, "N": n, "epsilon": eps, "task": i, "shipped": float(s[i]),
                          "paper_width": float(w[i])} for i in range(len(s))]
            print(rows[-1], f"{time.perf_counter() - t0:.0f} s", flush=True)
    pd.DataFrame(per_task).to_csv(out / "per_task.csv", index=False)
    pd.DataFrame(points).to_csv(out / "points.csv", index=False)
    (out / "points.md").write_text(_md(pd.DataFrame(rows)))
    config = {"checkpoint": str(checkpoint), "checkpoint_sha256": _sha256(checkpoint), "nll_run": str(NLL_RUN),
              "paired_run": str(PAIRED_RUN), "checked": f"shipped model against its training record and {NLL_RUN} "
              f"to {TOL:g}; {PAIRED_RUN}'s tasks by the shipped model's per-task NLL", "threads": 1,
              "training": {k: v for k, v in rec_w.items() if k != "train_config"}}
    write_run_record(out, "seed002-gpu-compare", config, {"validation": val, "points": points},
                     seconds=time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("half")
    h.add_argument("src", type=Path)
    h.add_argument("dest", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("--checkpoint", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--fp32", type=Path, default=None)
    args = ap.parse_args()
    if args.cmd == "half":
        half(args.src, args.dest)
    else:
        compare(args.checkpoint, args.out, args.fp32)


if __name__ == "__main__":
    main()
