"""privgp's core never imports torch (the nn extra is optional)."""
import subprocess
import sys


def test_import_privgp_does_not_import_torch():
    code = ("import sys, privgp, privgp.accounting, privgp.mechanisms, privgp.experiments, privgp.cli.main; "
            "bad = [m for m in ('torch', 'gpytorch', 'opacus', 'optuna') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
