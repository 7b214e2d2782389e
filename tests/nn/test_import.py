"""privgp's core never imports torch (the nn extra is optional)."""
import subprocess
import sys


def test_import_privgp_does_not_import_torch():
    code = ("import sys, privgp, privgp.accounting, privgp.mechanisms, privgp.experiments, privgp.cli.main; "
            "bad = [m for m in ('torch', 'gpytorch', 'opacus', 'optuna') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_privgp_nn_without_torch_names_the_extra():
    """Without torch (simulated: ``sys.modules['torch'] = None`` makes ``import torch`` raise
    ImportError, as if it were never installed), ``import privgp.nn`` raises MissingExtraError, an
    ImportError that names the extra to install; ``import privgp`` itself still works."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import privgp\n"
            "from privgp.errors import MissingExtraError, PrivgpError\n"
            "try:\n"
            "    import privgp.nn.pretrained\n"
            "except ImportError as exc:\n"
            "    assert type(exc) is MissingExtraError and isinstance(exc, PrivgpError), type(exc)\n"
            "    assert (exc.feature, exc.package, exc.extra) == ('privgp.nn', 'torch', 'nn')\n"
            "    assert isinstance(exc.__cause__, ImportError)\n"
            "    print(exc)\n"
            "else:\n"
            "    sys.exit('no error')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == ("privgp.nn needs the optional package 'torch', which is not installed: "
                                "pip install 'privgp[nn]'")


def test_the_torch_experiments_without_torch_exit_with_one_line(tmp_path):
    """Every experiment that needs torch, run without it: exit status 2, one line naming the extra, no
    traceback and nothing written (they go through privgp.experiments.common.import_torch or privgp.nn)."""
    # each way in: train, nn._torch, gap (seed003-nn takes the same import_torch; scipy's array-API check
    # trips over this simulation's sys.modules['torch'] = None before it, so it is not run here)
    names = ("seed002-train", "seed002-nll", "seed002-s1")
    code = ("import sys; sys.modules['torch'] = None\n"
            "from privgp.cli.main import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    for name in names:
        out = tmp_path / name
        r = subprocess.run([sys.executable, "-c", code, "experiment", name, "--quick", "--out", str(out)],
                           capture_output=True, text=True)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, (name, r.stderr)
        assert "pip install 'privgp[nn]'" in r.stderr, (name, r.stderr)
        assert not out.exists() or not any(out.iterdir()), name
