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
