"""Red team 26, the follow-ups: --out over the current directory, --workers with --scheduler, on/off switches,
fig2-bound's crossings and the training step's memory, each refused or labelled before any work."""
from __future__ import annotations

import json

import pytest

from privgp.cli.main import main


def _one_line_error(capsys, needle: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privgp: error: ") and needle in err, err


@pytest.mark.parametrize("out", [".", ".."])
def test_an_out_that_is_or_holds_the_current_directory_is_refused_before_anything_is_written(tmp_path, monkeypatch,
                                                                                             capsys, out):
    # `cd empty && privgp demo --out .` renamed a new folder into place over the shell's own directory
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["demo", "--out", out, "--seed", "1"]) == 2
    _one_line_error(capsys, "--out must be a folder other than the current directory or one holding it")
    assert list(work.iterdir()) == [] and (tmp_path / "work").is_dir()
    assert main(["demo", "--out", "sub", "--seed", "1"]) == 0   # a folder below it is fine
    assert (work / "sub" / "demo_posterior_paths.png").is_file()


def test_an_experiment_still_writes_into_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # privgp experiment writes into --out, replacing nothing
    assert main(["experiment", "seed002-fig4", "--quick", "--out", ".", "--workers", "1"]) == 0
    assert (tmp_path / "fig4.csv").is_file()


def test_workers_with_a_scheduler_is_refused(tmp_path, capsys):
    assert main(["experiment", "table1", "--quick", "--scheduler", "tcp://127.0.0.1:1", "--workers", "3",
                 "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, "--workers must be left out with --scheduler")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["2", "-1", "0.5"])
def test_an_on_off_switch_takes_only_true_or_false(tmp_path, capsys, value):
    assert main(["experiment", "seed002-sim2real", "--quick", "--set", f"dpsvgp={value}",
                 "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, "--set dpsvgp must be true or false")
    assert not (tmp_path / "o").exists()


def test_fig2_bound_says_its_crossings_rest_on_the_published_constants(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["experiment", "fig2-bound", "--quick", "--constants", "published", "--out", str(out), "--json",
                 "--workers", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["constants"] == "published" and summary["covered"] is False
    header, _, first = (out / "fig2_bound_crossings.md").read_text().splitlines()[:3]
    assert "| constants | covered |" in header and first.endswith("| published | False |")


@pytest.mark.parametrize("option, shown", [("batch_size=1000000000", "batch_size 1000000000"),
                                           ("n_target=1000000000", "n_target 1000000000"),
                                           ("channels=100000,100000", "channels [32, 100000, 100000]")])
def test_a_training_step_beyond_the_memory_limit_is_refused_before_any_model_is_built(tmp_path, capsys, option,
                                                                                     shown):
    # batch_size=10**9 tried to allocate 464 GB, then ended in a traceback (exit 1)
    pytest.importorskip("torch")
    out = tmp_path / "o"
    assert main(["experiment", "seed002-train", "--set", option, "--set", "steps=1", "--out", str(out)]) == 2
    _one_line_error(capsys, "memory must be at most the limit of 4 GiB for the training step")
    assert not out.exists()


def test_the_training_memory_estimate_is_above_what_the_defaults_use_and_admits_the_committed_runs():
    pytest.importorskip("torch")
    from pathlib import Path

    from privgp.nn.model import ModelConfig
    from privgp.nn.train import TrainConfig, training_bytes

    # measured peak RSS growth at the defaults (seed002-train, batch 16 -> 64): 12.5 MB per task
    per_task = training_bytes(ModelConfig(), TrainConfig(batch_size=2)) - training_bytes(ModelConfig(),
                                                                                         TrainConfig(batch_size=1))
    assert per_task >= 12.5e6
    runs = Path(__file__).resolve().parents[2] / "docs" / "runs"
    committed = sorted(runs.glob("seed002-train*/run.json"))
    assert committed
    for run in committed:
        config = json.loads(run.read_text())["config"]
        model = ModelConfig.from_dict(config["model"])
        train = TrainConfig.from_dict(config["train"])
        assert training_bytes(model, train) <= 4 * 2**30, run
