"""The command's own process defers numpy sub-packages that no command uses (privgp.cli.startup, issue 30)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from privgp.cli.main import main

#: a deterministic command that imports scipy (the grid mechanism's plan)
ACCOUNT = ["account", "--mechanism", "grid", "--n", "5000", "--box", "0", "10", "0", "5", "--epsilon", "1"]

#: run the console script's main() (no argv) in a fresh process, then report what was imported
CONSOLE = textwrap.dedent("""
    import contextlib, io, json, sys
    from privgp.cli.main import main
    sys.argv = ["privgp", *sys.argv[1:]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main()
    loaded = sorted(m for m in sys.modules if m.startswith(("numpy.f2py.", "numpy.testing.")))
    scipy = "scipy._lib._array_api" in sys.modules
    import numpy.testing, numpy.f2py   # a later use still gets the real modules
    numpy.testing.assert_allclose(1.0, 1.0)
    used = [callable(numpy.f2py.get_include), "numpy.testing._private.utils" in sys.modules]
    print(json.dumps(dict(code=code, out=out.getvalue(), loaded=loaded, scipy=scipy, used=used)))
""")


def _console(argv: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", CONSOLE, *argv], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lazy_numpy():
    """Skip where numpy imports f2py or testing with itself: there is nothing to defer."""
    eager = subprocess.run([sys.executable, "-c", "import sys, numpy; print(sorted(set(sys.modules) & "
                            "{'numpy.f2py', 'numpy.testing'}))"], capture_output=True, text=True, check=True).stdout
    if eager.strip() != "[]":
        pytest.skip(f"this numpy imports {eager.strip()} with itself")


def test_a_console_command_imports_scipy_without_numpys_f2py_and_testing(lazy_numpy, capsys):
    got = _console(ACCOUNT)
    assert got["code"] == 0 and got["scipy"]   # the command used scipy (whose copy of numpy's names reads them all)
    assert got["loaded"] == []                  # ... but neither numpy.f2py's nor numpy.testing's code ran
    assert got["used"] == [True, True]          # and both load when used
    assert main(list(ACCOUNT)) == 0             # the same answer as the command in this process, undeferred
    assert got["out"] == capsys.readouterr().out


def test_deferring_keeps_what_is_already_imported_and_a_later_use_loads_the_module(lazy_numpy):
    script = textwrap.dedent("""
        import json, sys
        import numpy, numpy.testing
        before = sys.modules["numpy.testing"]
        from privgp.cli.startup import defer_unused_numpy_modules
        deferred = defer_unused_numpy_modules()
        again = defer_unused_numpy_modules()
        kept = sys.modules["numpy.testing"] is before and numpy.testing is before
        lazy = "numpy.f2py.f2py2e" not in sys.modules
        from numpy.f2py import get_include
        print(json.dumps(dict(deferred=deferred, again=again, kept=kept, lazy=lazy,
                              loaded="numpy.f2py.f2py2e" in sys.modules, include=bool(get_include()))))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["deferred"] == ["numpy.f2py"] and got["again"] == []
    assert got["kept"] and got["lazy"] and got["loaded"] and got["include"]


def test_main_with_argv_leaves_the_host_process_alone():
    """A Python program calling main(argv) keeps numpy as it is: its sub-packages stay ordinary modules, imported
    as numpy and scipy import them."""
    assert main(list(ACCOUNT)) == 0
    assert all(type(sys.modules[n]) is types.ModuleType for n in ("numpy.f2py", "numpy.testing"))
    np.testing.assert_allclose(1.0, 1.0)


def test_threads_that_first_use_a_deferred_module_together_all_get_it(lazy_numpy):
    script = textwrap.dedent("""
        import json, sys, threading
        from privgp.cli.startup import defer_unused_numpy_modules
        assert defer_unused_numpy_modules() == ("numpy.f2py", "numpy.testing")
        import numpy
        go, got = threading.Barrier(8), []
        def use():
            go.wait()
            try:
                got.append(numpy.testing.assert_allclose.__name__ + " " + str(numpy.testing.IS_PYPY))
            except Exception as e:
                got.append(repr(e))
        threads = [threading.Thread(target=use) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps(got))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == ["assert_allclose False"] * 8
