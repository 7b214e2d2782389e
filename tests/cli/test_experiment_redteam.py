"""`privgp experiment`: red-team findings on its flags and --set options (each one ran, crashed with a traceback,
wrote into --out or started far too many processes before it was fixed)."""
import os

import pytest

from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.experiments import run_experiment


def _one_line_error(capsys, args, out):
    code = main(["experiment", *args, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert not out.exists()
    return err


@pytest.mark.parametrize("args,needle", [
    # the local pool forks all its workers at its first task: 100000 processes
    (["fig1", "--quick", "--workers", "100000"], "--workers must be an integer from 1 to"),
    # torch's seeds are derived from it (seed * 1000 + k): a traceback from torch.manual_seed
    (["seed002-train", "--quick", "--seed", str(10**23)], "--seed: expected an integer >= 0 and <= 4294967295"),
    # an unknown conversion drew an empty figure and exited 0
    (["fig2-bound", "--quick", "--set", "conversion=nan"], "--set conversion must be one of"),
    # eps_min > eps_max ran to exit 0 with NaN claims; eps_max=nan was refused as "epsilon"
    (["seed002-fig4", "--quick", "--set", "eps_min=5"], "--set eps_min must be < eps_max"),
    (["seed002-fig4", "--quick", "--set", "eps_max=nan"], "--set eps_max must be a number (not NaN)"),
    (["seed002-fig4", "--quick", "--set", "eps_min=0"], "--set eps_min must be finite and > 0"),
    # alphas=1.5 ran to exit 0; sigmas=-1 was refused in the workers as noise_std
    (["seed001-fig2", "--quick", "--set", "alphas=1.5"], "--set alphas must be in the open interval (0, 1)"),
    (["seed001-fig2", "--quick", "--set", "sigmas=-1"], "--set sigmas must be finite and >= 0"),
])
def test_a_bad_flag_or_option_is_one_line_and_runs_nothing(tmp_path, capsys, args, needle):
    assert needle in _one_line_error(capsys, args, tmp_path / "o")


def test_fig2_checks_its_conversion_before_the_sweep_writes_tables(tmp_path, capsys):
    # the sweep wrote fig2_runs.csv and fig2_summary.csv into --out, then the conversion was refused
    err = _one_line_error(capsys, ["fig2", "--quick", "--workers", "1", "--set", "conversion=bogus"], tmp_path / "o")
    assert "--set conversion must be one of" in err


def test_an_error_under_another_name_names_the_one_option_given(tmp_path, capsys):
    # the library refused eps_min=-1 as "epsilon" (after a numpy warning)
    err = _one_line_error(capsys, ["seed002-fig4", "--quick", "--set", "eps_min=-1"], tmp_path / "o")
    assert err.startswith("privgp: error: --set eps_min must be finite and > 0")


def test_quick_refuses_the_model_widths_it_ignored(tmp_path, capsys):
    # --quick trains its own tiny model: channels=100000,100000 ran to exit 0 with the default widths
    err = _one_line_error(capsys, ["seed002-train", "--quick", "--set", "channels=32,32"], tmp_path / "o")
    assert "--set channels must be left out with --quick" in err


def test_torch_threads_beyond_the_machine_are_refused():
    pytest.importorskip("torch")
    from privgp.experiments.common import import_torch

    with pytest.raises(InvalidParameterError, match="threads must be an integer from 1 to"):
        import_torch("a test", 100 * (os.cpu_count() or 1))   # threads=100000 broke scipy's import (a traceback)


def test_a_missing_file_option_is_named(tmp_path, capsys):
    pytest.importorskip("torch")
    err = _one_line_error(capsys, ["seed002-sim2real", "--quick", "--workers", "1", "--set",
                                   f"checkpoint={tmp_path / 'none.pt'}"], tmp_path / "o")
    assert err.startswith("privgp: error: --set checkpoint must be a value experiment 'seed002-sim2real' can use")


@pytest.mark.parametrize("progress,expect", [(None, ""), ("lines", "privgp: seed002-train: steps: 2/2 (100%)")])
def test_seed002_train_follows_progress(tmp_path, capsys, progress, expect):
    # its tqdm bar was always on: a log (stderr not a terminal) got every step redrawn, and --progress was ignored
    pytest.importorskip("torch")
    run_experiment("seed002-train", tmp_path / "t", quick=True, workers=1, progress=progress, steps=2, val_every=1,
                   val_tasks=8)
    err = capsys.readouterr().err
    assert (expect in err) if expect else "seed002-train" not in err, err
