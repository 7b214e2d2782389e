"""Red team 26, the follow-ups: --out over the current directory, --workers with --scheduler, on/off switches,
fig2-bound's crossings and the training step's memory, each refused or labelled before any work."""
from __future__ import annotations

import json

import pytest

from privgp.cli.main import main


def _one_line_error(capsys, needle: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privgp: error: ") and needle in err, err
    return err


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


@pytest.mark.parametrize("name, option", [("seed002-sim2real", "dpsvgp"), ("seed002-nll", "dpsvgp"),
                                          ("table1", "shared_target"), ("seed004-fig1", "divergences")])
@pytest.mark.parametrize("value", ["2", "-1", "0.5", "0", "1", "yes"])
def test_an_on_off_switch_takes_only_true_or_false(tmp_path, capsys, name, option, value):
    # --set dpsvgp=2 was taken as on; every experiment option whose default is true or false is a switch
    assert main(["experiment", name, "--quick", "--set", f"{option}={value}", "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, f"--set {option} must be true or false")
    assert not (tmp_path / "o").exists()


def test_true_and_false_still_set_a_switch(tmp_path, capsys):
    # dpsvgp, once an integer option, is a switch like the others: "true" was refused as "not an integer"
    from privgp.cli.experiment import _check_option_names

    for value in (True, False):
        _check_option_names("seed002-sim2real", {"dpsvgp": value})
        _check_option_names("table1", {"shared_target": value})


@pytest.mark.parametrize("value", [2, -1, 0.5, "no", None])
def test_the_python_api_refuses_a_switch_that_is_not_on_or_off(tmp_path, value):
    from privgp.errors import InvalidParameterError
    from privgp.experiments import run_experiment

    pytest.importorskip("torch")
    with pytest.raises(InvalidParameterError, match="dpsvgp must be true or false"):
        run_experiment("seed002-sim2real", tmp_path / "o", quick=True, workers=1, dpsvgp=value, y_scale=0.5)


def test_fig2_bound_says_its_crossings_rest_on_the_published_constants(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["experiment", "fig2-bound", "--quick", "--constants", "published", "--out", str(out), "--json",
                 "--workers", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["constants"] == "published" and summary["covered"] is False
    header, _, first = (out / "fig2_bound_crossings.md").read_text().splitlines()[:3]
    assert "| constants | covered |" in header and first.endswith("| published | False |")


@pytest.mark.parametrize("option, shown", [("batch_size=1000000000", "batch_size"), ("n_target=1000000000", "n_target"),
                                           ("n_target=5000", "n_target"), ("val_tasks=1000000000", "val_tasks"),
                                           ("channels=100000,100000", "channels"),
                                           ("first_channels=10000000", "first_channels")])
def test_a_training_step_beyond_the_memory_limit_is_refused_before_any_model_is_built(tmp_path, capsys, option,
                                                                                     shown):
    # batch_size=10**9 tried to allocate 464 GB, then ended in a traceback (exit 1); n_target=5000 would have drawn
    # 16 tasks' (5512 x 5512) Gram matrices, some 20 GB
    pytest.importorskip("torch")
    out = tmp_path / "o"
    assert main(["experiment", "seed002-train", "--set", option, "--set", "steps=1", "--out", str(out)]) == 2
    _one_line_error(capsys, f"--set {shown} must be at most the limit of 4 GiB for the training step")
    assert not out.exists()


def test_the_quick_training_run_is_checked_too(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "o"
    assert main(["experiment", "seed002-train", "--quick", "--set", "batch_size=1000000000", "--out", str(out)]) == 2
    err = _one_line_error(capsys, "--set batch_size must be at most the limit of 4 GiB for the training step")
    assert "got '1000000000 (an estimated" in err
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
    # measured peak RSS growth of two training steps, the batches drawn by the step (batch size, targets, the one
    # family trained on, 512 contexts): the Matérn-3/2 draw's (B, M, M) Gram matrices dominate for many targets
    for batch, targets, family, measured in [(16, 256, "eq", 319e6), (4, 256, "eq", 158e6),
                                              (4, 2048, "eq", 726e6), (2, 4000, "matern32", 1732e6)]:
        cfg = TrainConfig(batch_size=batch, n_target=targets, n_context=(512, 512), weights={family: 1.0},
                          val_tasks=batch)
        assert training_bytes(ModelConfig(), cfg) >= 1.2 * measured, (batch, targets)
    runs = Path(__file__).resolve().parents[2] / "docs" / "runs"
    committed = sorted(runs.glob("seed002-train*/run.json"))
    assert committed
    for run in committed:
        config = json.loads(run.read_text())["config"]
        model = ModelConfig.from_dict(config["model"])
        train = TrainConfig.from_dict(config["train"])
        assert training_bytes(model, train) <= 4 * 2**30, run


def test_optimize_refuses_the_current_directory_as_its_out_before_the_charge(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    ledger = tmp_path / "l.sqlite"
    assert main(["optimize", "--function", "forrester", "--rounds", "5", "--grid", "65", "--objective-seed", "1",
                 "--seed", "2", "--epsilon", "1", "--budget-epsilon", "1000", "--ledger", str(ledger),
                 "--out", "."]) == 2
    _one_line_error(capsys, "--out must be a folder other than the current directory or one holding it")
    assert not ledger.exists() and list(work.iterdir()) == []


def test_the_recorded_command_keeps_the_out_as_typed_and_the_docs_say_where_to_run_it(tmp_path, monkeypatch):
    # run.json's command reproduces a run from the folder it ran in (the repository root for the committed runs);
    # an absolute --out would put the machine's own folders into a file meant to be published
    import sys
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    argv = ["privgp", "experiment", "seed002-fig4", "--quick", "--out", "rel", "--workers", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    assert main(argv[1:]) == 0
    command = json.loads((tmp_path / "rel" / "run.json").read_text())["command"]
    assert command == " ".join(argv) and str(tmp_path) not in command
    root = Path(__file__).resolve().parents[2]
    results = " ".join((root / "docs" / "results.md").read_text().split())
    assert "relative to the folder it ran in: run the committed commands from the repository root" in results
