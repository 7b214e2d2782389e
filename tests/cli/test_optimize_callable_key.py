"""`privgp optimize --callable`: one budget per function, whatever module or alias names it. The ledger key is
that of the function that runs (the file defining its code, that file's sha256, its qualified name and first
line), not that of its spelling (the module named and the name typed after ':'), which was one data set per
spelling: `sensors:reading` (re-exported by the package), `sensors.objectives:reading` and
`sensors.objectives:measure` (`measure = reading`) were three budgets. A ledger charged under the spelling's key
(privgp before this change) keeps its budget: that key is an alias of the new one."""
from __future__ import annotations

import functools
import importlib
import sys
import textwrap

import pytest

from privgp.cli import optimize as optimize_cli
from privgp.cli.main import main
from privgp.ledger import Ledger

OBJECTIVES = textwrap.dedent("""\
    import functools


    def reading(x, scale=0.5):
        return scale * float(x[0])


    measure = reading


    def other(x):
        return 0.25 * float(x[0])


    part = functools.partial(reading, scale=0.25)
    """)

SPELLINGS = ("sensors.objectives:reading", "sensors.objectives:measure", "sensors:reading")


def _forget_sensors() -> None:
    for name in [m for m in sys.modules if m == "sensors" or m.startswith("sensors.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The README's package `sensors/` in the current folder (tmp_path); the ledger file's path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))   # optimize appends the current folder: undone after
    monkeypatch.setattr(sys, "dont_write_bytecode", True)   # an edited file is never read from a stale .pyc
    pkg = tmp_path / "sensors"
    pkg.mkdir()
    (pkg / "objectives.py").write_text(OBJECTIVES)
    (pkg / "__init__.py").write_text("from .objectives import reading\n")
    _forget_sensors()
    yield tmp_path, tmp_path / "l.sqlite"
    _forget_sensors()


def run(capsys, ledger, out, spec, epsilon=8):
    code = main(["optimize", "--callable", spec, "--box", "0", "1", "--grid", "101", "--rounds", "5",
                 "--epsilon", str(epsilon), "--seed", "1", "--out", str(out), "--ledger", str(ledger)])
    return code, capsys.readouterr().err


def charged(ledger) -> tuple[int, int]:
    """(data sets, entries) in the ledger file."""
    led = Ledger(ledger)
    return len(led.datasets()), len(led.entries())


def test_three_spellings_of_one_function_share_one_budget(env, capsys):
    # the reviewer's reproduction: three runs of epsilon 6 were three data sets (18 against budgets of 10)
    tmp, ledger = env
    code, err = run(capsys, ledger, tmp / "o0", SPELLINGS[0], epsilon=6)
    assert code == 0, err
    code, err = run(capsys, ledger, tmp / "o1", SPELLINGS[1], epsilon=6)
    assert code == 0, err   # two runs of 6 compose to 8.56 <= 10 (one data set)
    assert charged(ledger) == (1, 2)
    code, err = run(capsys, ledger, tmp / "o2", SPELLINGS[2], epsilon=6)
    assert code == 3 and "refused" in err and "already spent 8.557 in 2 release(s)" in err, err
    assert not (tmp / "o2").exists()
    assert charged(ledger) == (1, 2)


def test_after_one_run_of_8_every_other_spelling_is_refused(env, capsys):
    tmp, ledger = env
    code, err = run(capsys, ledger, tmp / "o0", SPELLINGS[0])
    assert code == 0, err
    for i, spec in enumerate(SPELLINGS[1:], 1):
        code, err = run(capsys, ledger, tmp / f"o{i}", spec)
        assert code == 3 and "refused" in err, (spec, err)   # two runs of 8 compose to 11.5 > the default 10
        assert not (tmp / f"o{i}").exists()
    assert charged(ledger) == (1, 1)


def test_the_spellings_give_one_key_and_the_old_keys_as_aliases(env):
    keys = [optimize_cli._load_callable(spec)[1] for spec in (*SPELLINGS, "sensors/objectives.py:measure")]
    assert all(isinstance(k, tuple) and len(k) == 3 and k[1] is None for k in keys), keys
    assert len({k[0] for k in keys}) == 1 and keys[0][0].startswith("optimize:callable:code:")
    assert ":reading:" in keys[0][0]   # the function's qualified name, whichever name was typed
    # each spelling's key as privgp computed it before is an alias, so that an old ledger keeps its budget
    module = importlib.import_module("sensors")
    assert keys[2][2][0] == optimize_cli.callable_key(module, "sensors", "reading")
    assert len({k[2][0] for k in keys}) == 3   # sensors/objectives.py:measure: the old key of the same file
    # and the old key of the function's own spelling (its defining module, its name): sensors.objectives:reading
    assert keys[1][2] == (keys[1][2][0], keys[0][2][0]) and keys[0][2] == (keys[0][2][0],)


def test_an_old_ledger_keeps_its_budget(env, capsys, monkeypatch):
    tmp, ledger = env
    with monkeypatch.context() as m:   # privgp before: the spelling's key only
        m.setattr(optimize_cli, "function_key", lambda fn: None)
        assert isinstance(optimize_cli._load_callable("sensors:reading")[1], str)
        code, err = run(capsys, ledger, tmp / "old", "sensors:reading")
        assert code == 0, err
    assert charged(ledger) == (1, 1)
    old = Ledger(ledger).datasets()[0].fingerprint
    code, err = run(capsys, ledger, tmp / "same", "sensors:reading")
    assert code == 3 and "refused" in err, err   # the same spelling finds the old data set through its alias
    assert charged(ledger) == (1, 1)
    # once a charge links the function's key to it, every spelling of the function is that data set
    code, err = run(capsys, ledger, tmp / "small", "sensors:reading", epsilon=1)
    assert code == 0, err
    assert charged(ledger) == (1, 2) and Ledger(ledger).datasets()[0].fingerprint == old
    code, err = run(capsys, ledger, tmp / "alias", "sensors.objectives:measure")
    assert code == 3 and "refused" in err, err
    code, err = run(capsys, ledger, tmp / "alias_small", "sensors.objectives:measure", epsilon=1)
    assert code == 0, err
    assert charged(ledger) == (1, 3)


def test_an_old_ledger_charged_under_the_defining_module_is_found_from_another_spelling(env, capsys, monkeypatch):
    tmp, ledger = env
    with monkeypatch.context() as m:
        m.setattr(optimize_cli, "function_key", lambda fn: None)
        code, err = run(capsys, ledger, tmp / "old", "sensors.objectives:reading")
        assert code == 0, err
    code, err = run(capsys, ledger, tmp / "new", "sensors:reading")   # the package's re-export of that function
    assert code == 3 and "refused" in err, err
    assert charged(ledger) == (1, 1)


def test_another_function_in_the_file_is_another_data_set(env, capsys):
    tmp, ledger = env
    assert run(capsys, ledger, tmp / "o1", "sensors:reading")[0] == 0
    code, err = run(capsys, ledger, tmp / "o2", "sensors.objectives:other")
    assert code == 0, err
    assert charged(ledger) == (2, 2)


def test_an_edited_file_is_another_data_set(env, capsys):
    tmp, ledger = env
    assert run(capsys, ledger, tmp / "o1", "sensors.objectives:reading")[0] == 0
    (tmp / "sensors" / "objectives.py").write_text(OBJECTIVES + "\n# recalibrated\n")
    _forget_sensors()
    key = optimize_cli._load_callable("sensors:reading")[1]
    code, err = run(capsys, ledger, tmp / "o2", "sensors:reading")
    assert code == 0, err
    assert charged(ledger) == (2, 2)
    # the edited version is one data set under all its spellings
    code, err = run(capsys, ledger, tmp / "o3", "sensors.objectives:measure")
    assert code == 3 and "refused" in err, err
    assert optimize_cli._load_callable("sensors.objectives:measure")[1][0] == key[0]
    assert charged(ledger) == (2, 2)


def test_a_partial_keeps_the_key_of_its_spelling(env, capsys):
    tmp, ledger = env
    fn, key = optimize_cli._load_callable("sensors.objectives:part")
    assert isinstance(fn, functools.partial)
    assert key == optimize_cli.callable_key(importlib.import_module("sensors.objectives"), "sensors.objectives",
                                            "part")
    code, err = run(capsys, ledger, tmp / "o1", "sensors.objectives:part")
    assert code == 0, err
    code, err = run(capsys, ledger, tmp / "o2", "sensors.objectives:part")
    assert code == 3 and "refused" in err, err
    assert charged(ledger) == (1, 1)


def test_a_wrapped_function_is_keyed_by_the_function_it_wraps_and_code_off_disk_by_its_spelling(env):
    tmp, _ = env
    (tmp / "wrapped_obj.py").write_text(textwrap.dedent("""\
        import functools

        from sensors.objectives import reading


        @functools.wraps(reading)
        def logged(x):
            return reading(x)


        made = eval("lambda x: 0.0")
        """))
    try:
        wrapped, plain = (optimize_cli._load_callable(spec)[1] for spec in ("wrapped_obj:logged", "sensors:reading"))
        assert isinstance(wrapped, tuple) and isinstance(plain, tuple) and wrapped[0] == plain[0]
        key = optimize_cli._load_callable("wrapped_obj:made")[1]   # code from "<string>": no file to key it by
        assert isinstance(key, str) and key.endswith(":made")
    finally:
        sys.modules.pop("wrapped_obj", None)
