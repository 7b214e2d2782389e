"""Releasing from Python (issue 27): privgp.records, privgp.Budget, privgp.release and the writers of
privgp.publish do what `privgp release` does, with the same defaults, the same files and the same ledger."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import privgp
from privgp.cli.main import main
from privgp.datasets import baltimore
from privgp.errors import BudgetExceededError, DataError, InvalidParameterError
from privgp.mechanisms.posterior_release import DEFAULT_GRID, DEFAULT_SIGMA, DEFAULT_SNAP
from privgp.publish import write_certificate, write_picture, write_release, write_report

RMAP = privgp.ResponseMap(threshold=baltimore.THRESHOLD, clip=baltimore.CLIP, transform=baltimore.TRANSFORM)


def baltimore_records():
    df = pd.read_csv(baltimore.csv_path())
    return privgp.records(df, baltimore.RESPONSE, coordinates=list(baltimore.COORDINATES))


def plan_for(data, **kw):
    return privgp.plan_posterior_sample(data.n, baltimore.PUBLIC_BOX, RMAP, target_epsilon=5.0, **kw)


def test_records_from_arrays_and_frames_match_the_cli_digest():
    data = baltimore_records()
    table = baltimore.csv_path()
    from privgp.datasets.tabular import load_table

    assert data.content_digest == load_table(table, baltimore.COORDINATES, baltimore.RESPONSE).content_digest
    assert privgp.records(data.X, data.response).content_digest == data.content_digest
    one_d = privgp.records(np.linspace(0, 1, 5), [1, 2, 3, 4, 5])
    assert one_d.X.shape == (5, 1) and one_d.coordinates == ("x1",)
    for bad, match in [((None, [1.0]), "X must be"), (([1.0, 2.0], [1.0]), "one value per record"),
                       (([1.0, np.nan], [1.0, 2.0]), "NaN"), (([1.0, 2.0], ["a", "b"]), "numbers"),
                       ((pd.DataFrame({"a": [1.0]}), "b"), "not found"), (([1.0], "y"), "DataFrame")]:
        with pytest.raises(DataError, match=match):
            privgp.records(*bad)


def test_library_defaults_are_the_commands(tmp_path, monkeypatch, capsys):
    data = baltimore_records()
    plan = plan_for(data)
    assert (plan.sigma, plan.grid[0], plan.snap, plan.kernel) == (DEFAULT_SIGMA, DEFAULT_GRID[2], DEFAULT_SNAP[2] or None,
                                                                  "exponential")
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "cli.sqlite"))
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--seed", "3", "--out",
                 str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    cli_doc = json.loads((tmp_path / "cli" / "certificate.json").read_text())
    ours = json.loads(json.dumps(privgp.publish.certificate_document(
        privgp.release(plan, data, privgp.Budget(tmp_path / "py.sqlite"), np.random.default_rng(3)))))
    assert ours["public_settings"] == cli_doc["public_settings"]
    assert ours["certificate"]["epsilon"] == cli_doc["certificate"]["epsilon"]


def test_a_python_release_writes_what_the_command_writes(tmp_path, monkeypatch, capsys):
    data = baltimore_records()
    ledger = tmp_path / "ledger.sqlite"
    budget = privgp.Budget(ledger, epsilon=10.0)
    result = privgp.release(plan_for(data), data, budget, np.random.default_rng(5),
                            randomness={"source": "fixed seed (test)"})
    files = write_release(result, tmp_path / "py")
    assert set(files) == {"paths.npz", "paths.csv", "excursion.png", "certificate.json", "report.html"}
    # the command with the same seed and ledger: the same released paths, one dataset charged twice
    monkeypatch.setenv("PRIVGP_LEDGER", str(ledger))
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--seed", "5", "--out",
                 str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    np.testing.assert_array_equal(np.load(tmp_path / "py" / "paths.npz")["paths"],
                                  np.load(tmp_path / "cli" / "paths.npz")["paths"])
    spent = budget.spent(data)
    assert spent.spent.entries == 2
    assert all(e.status == "completed" for e in privgp.Ledger(ledger).entries())
    assert main(["verify", str(tmp_path / "py" / "certificate.json")]) == 0
    capsys.readouterr()
    # one output at a time, anywhere
    write_picture(result, tmp_path / "map.png")
    write_report(result, tmp_path / "page.html", files=["map.png"])
    write_certificate(result, tmp_path / "cert.json", files=["map.png"])
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"
    assert "<html" in (tmp_path / "page.html").read_text().lower()
    doc = json.loads((tmp_path / "cert.json").read_text())
    assert set(doc["sha256"]) == {"map.png"} and doc["ledger"]["entry_id"] == result.charge.entry_id


def test_wrong_inputs_are_clear_errors_and_charge_nothing(tmp_path):
    data = baltimore_records()
    plan = plan_for(data)
    budget = privgp.Budget(tmp_path / "ledger.sqlite", epsilon=6.0)
    with pytest.raises(InvalidParameterError, match="privgp.records"):
        privgp.release(plan, object(), budget)
    with pytest.raises(InvalidParameterError, match="privgp.records"):
        privgp.release(plan, (1, 2, 3), budget)
    with pytest.raises(DataError):
        privgp.release(plan, (1, 2), budget)             # a pair of scalars is not records
    with pytest.raises(InvalidParameterError, match="Budget"):
        privgp.release(plan, data, str(tmp_path / "ledger.sqlite"))
    with pytest.raises(InvalidParameterError, match="rows"):
        privgp.release(plan, (data.X[:10], data.response[:10]), budget)
    with pytest.raises(InvalidParameterError, match="result"):
        write_release("not a result", tmp_path / "out")
    assert budget.spent(data) is None
    privgp.release(plan, data, budget)                   # 5 of 6
    with pytest.raises(BudgetExceededError):
        privgp.release(plan, data, budget)
    assert budget.spent(data).spent.entries == 1
    with pytest.raises(InvalidParameterError, match="epsilon"):
        privgp.Budget(tmp_path / "x.sqlite", epsilon=-1.0)
    with pytest.raises(InvalidParameterError, match="data"):
        budget.charge(object(), plan.event)


@pytest.mark.parametrize("mechanism", ["grid", "laplace-grid", "posterior-sample", "sparse-gp"])
def test_a_plan_changed_after_planning_is_refused_before_the_charge(mechanism, tmp_path):
    """plan.scaled(k) is a forecast's simulation plan (another n, or the noise of another n) that keeps the
    planned event: released, the ledger would charge the planned epsilon for a draw with far less privacy.
    privgp.release rebuilds the plan from its public settings and refuses it; nothing is charged or created."""
    import dataclasses

    box = privgp.Box((0.0, 0.0), (1.0, 1.0))
    rmap = privgp.ResponseMap(threshold=0.0, clip=1.0)
    plan = privgp.plan(mechanism, 400, box, rmap, epsilon=2.0)
    rng = np.random.default_rng(1)
    data = privgp.records(rng.uniform(0.0, 1.0, (400, 2)), rng.uniform(-1.0, 1.0, 400))
    ledger = tmp_path / "ledger.sqlite"
    changed = [plan.scaled(100)]
    noise = {"grid": "noise_std", "discretised-gaussian": "noise_std", "laplace-grid": "scale"}.get(mechanism)
    if noise is not None:   # the privacy noise itself, a tenth of the planned one
        changed.append(dataclasses.replace(plan, **{noise: getattr(plan, noise) / 10}))
    if mechanism == "sparse-gp":   # a plan drawing the exact noise's float twin (a forecast's, or .simulation())
        changed.append(plan.simulation())
    for bad in changed:
        # (the sparse GP's scaled and simulation plans draw float noise: refused as such, red team 21a L1)
        with pytest.raises(InvalidParameterError, match="changed after planning|drawing float noise"):
            privgp.release(bad, data, privgp.Budget(ledger, epsilon=10.0))
        assert not ledger.exists()
    sub = type("Mine", (type(plan),), {})   # a subclass of the plan's class: its event cannot be rebuilt
    with pytest.raises(InvalidParameterError, match="not a subclass"):
        privgp.release(sub(**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}), data,
                       privgp.Budget(ledger, epsilon=10.0))
    assert not ledger.exists()
    res = privgp.release(plan, data, privgp.Budget(ledger, epsilon=10.0), np.random.default_rng(2))
    assert res.charge.spent_after.epsilon == pytest.approx(plan.certificate.epsilon)


def _numeric_leaves(obj, path=()):
    """(path, value) of every number and float array inside a plan, through dataclass fields, tuples and
    dicts: the fields draw may read whether or not the public settings name them."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _numeric_leaves(getattr(obj, f.name), path + (f.name,))
    elif isinstance(obj, (tuple, list)):
        for i, x in enumerate(obj):
            yield from _numeric_leaves(x, path + (i,))
    elif isinstance(obj, dict):
        for k, x in obj.items():
            yield from _numeric_leaves(x, path + (k,))
    elif isinstance(obj, np.ndarray) and obj.dtype.kind == "f" and obj.size:
        yield path, obj
    elif isinstance(obj, (int, float, np.number)) and not isinstance(obj, (bool, np.bool_)):
        yield path, obj


def _with_leaf(obj, path, value):
    """A copy of obj with the leaf at path replaced, the way object.__setattr__ edits a frozen plan (no
    __post_init__ runs)."""
    import copy
    import dataclasses

    if not path:
        return value
    head, rest = path[0], path[1:]
    if dataclasses.is_dataclass(obj):
        out = copy.copy(obj)
        object.__setattr__(out, head, _with_leaf(getattr(obj, head), rest, value))
        return out
    if isinstance(obj, dict):
        return {**obj, head: _with_leaf(obj[head], rest, value)}
    items = list(obj)
    items[head] = _with_leaf(items[head], rest, value)
    return type(obj)(items)


@pytest.mark.parametrize("mechanism, options", [
    ("grid", {}), ("laplace-grid", {}), ("posterior-sample", {"L": 2}),
    ("sparse-gp", {}), ("posterior-sample-tuned", {"lengthscales": [0.1, 0.3]})])
def test_every_number_a_plan_holds_is_checked_against_its_public_settings(mechanism, options):
    """Red team round 10: check_plan compared the certificate, the event and the public settings, so a field
    draw reads that the settings do not name (a candidate's eta, a noise object's scale) could be edited after
    planning and drawn under the planned charge. Every number a plan holds is now compared with the plan its
    public settings rebuild: each edited in turn is refused (memory_limit, a resource bound, aside)."""
    from privgp.mechanisms.release import RESOURCE_FIELDS, check_plan

    box = privgp.Box((0.0, 0.0), (1.0, 1.0))
    plan = privgp.plan(mechanism, 400, box, privgp.ResponseMap(threshold=0.0, clip=1.0), epsilon=2.0, **options)
    check_plan(plan)   # the genuine plan passes
    leaves = [(p, x) for p, x in _numeric_leaves(plan)
              if not RESOURCE_FIELDS & set(map(str, p)) and not np.any(np.isnan(x))]
    assert len(leaves) >= 15
    accepted = []
    for path, value in leaves:
        edited = value + 1 if isinstance(value, (int, np.integer)) else value * 1.5 + 1
        try:
            check_plan(_with_leaf(plan, path, edited))
        except InvalidParameterError:
            continue
        accepted.append(".".join(map(str, path)))
    # what may change: settings the certificate names whose change leaves the event as it is (the edited plan
    # is then the genuine plan of the settings it will publish); never the noise, the number of draws, a
    # calibration, a candidate or the grid
    assert set(accepted) <= {"n", "response_map.threshold", "response_map.clip", "bandwidth", "lengthscale", "snap",
                             "noise_std"}, accepted


def test_records_checked_once_cannot_be_changed_before_the_release(tmp_path):
    """Red team round 11: release() drew from a CheckedRecords' arrays unchecked when its plan was the plan, so
    dataclasses.replace(check_records(...), y=z * 1e4) was drawn with sums far beyond |y| <= 1 and charged as
    planned; and records() kept the caller's own arrays, so a change after records() drew from other data
    than the ledger was charged for. A copy of checked records is checked again; the arrays are read-only."""
    import dataclasses

    from privgp.mechanisms.release import check_records

    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (100, 2)), rng.normal(size=100)
    plan = privgp.plan("grid", 100, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0)
    data = privgp.records(X, z)
    X[:] = 5.0                                             # the caller's arrays are not the records'
    assert data.X.max() < 1.0 and not data.X.flags.writeable and not data.response.flags.writeable
    checked = check_records(plan, data)
    with pytest.raises(ValueError, match="read-only"):
        checked.y[:] = 1e4
    forged = dataclasses.replace(checked, y=checked.y * 1e4)
    res = privgp.release(plan, forged, privgp.Budget(tmp_path / "l.sqlite", epsilon=3.0), np.random.default_rng(1))
    again = privgp.release(plan, checked, privgp.Budget(tmp_path / "l.sqlite", epsilon=3.0), np.random.default_rng(1))
    np.testing.assert_array_equal(res.released.statistics["sums"], again.released.statistics["sums"])


def test_the_readme_shows_the_script_before_the_library_section():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[heads.index("## Releasing from Python") + 1] == "## Library"
    block = text.split("## Releasing from Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert "privgp.release(" in block and "write_release(" in block and len(block.splitlines()) <= 18


def test_the_readme_script_runs_and_its_certificate_verifies(tmp_path, monkeypatch, capsys):
    """README's "Releasing from Python" block, executed as it stands (in a scratch folder)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("## Releasing from Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    assert "expected IoU" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "baltimore_release" / "certificate.json")]) == 0


def test_plan_names_a_wrong_domain_or_response_map():
    """privgp.plan with a plain tuple for the box or the response map: a clear error naming the parameter."""
    with pytest.raises(InvalidParameterError, match=r"domain must be a privgp.Box\(lower, upper\)"):
        privgp.plan("auto", 100, (0.0, 1.0, 0.0, 1.0), privgp.ResponseMap(0.0, 1.0))
    with pytest.raises(InvalidParameterError, match="response_map must be a privgp.ResponseMap"):
        privgp.plan("auto", 100, privgp.Box((0.0, 0.0), (1.0, 1.0)), (0.0, 1.0))


def test_a_plan_whose_event_or_candidates_were_swapped_is_refused(tmp_path):
    """Red-team round 10: the ledger is charged plan.event, a field of its own (swapped with object.__setattr__ it
    passed), and a selection plan's candidates' L was in no public setting (40 paths drawn under a 1-path
    certificate). Both compared with the plan rebuilt from its public settings; nothing charged."""
    import dataclasses

    box = privgp.Box((0.0, 0.0), (1.0, 1.0))
    rmap = privgp.ResponseMap(threshold=0.0, clip=1.0)
    rng = np.random.default_rng(1)
    data = privgp.records(rng.uniform(0.0, 1.0, (400, 2)), rng.uniform(-1.0, 1.0, 400))
    ledger = tmp_path / "ledger.sqlite"
    grid, cheap = privgp.plan("grid", 400, box, rmap, epsilon=2.0), privgp.plan("grid", 400, box, rmap, epsilon=0.1)
    object.__setattr__(grid, "event", cheap.event)
    with pytest.raises(InvalidParameterError, match="event.rho differs"):   # the grid's discrete noise: a zCDP event
        privgp.release(grid, data, privgp.Budget(ledger, epsilon=10.0))
    line = privgp.Box((0.0,), (1.0,))
    x = rng.uniform(0.0, 1.0, (400, 1))
    tuned = privgp.plan("posterior-sample-tuned", 400, line, rmap, epsilon=20.0, lengthscales=[0.1, 0.3], grid=41)
    bad = dataclasses.replace(tuned, plans=tuple(dataclasses.replace(p, L=40) for p in tuned.plans))
    with pytest.raises(InvalidParameterError, match="candidate 1"):
        privgp.release(bad, privgp.records(x, np.sin(6 * x[:, 0])), privgp.Budget(ledger, epsilon=25.0))
    assert not ledger.exists()


def test_the_python_api_refuses_the_same_likely_mistakes(tmp_path):
    """privgp.release runs the command's checks too: a box the records fill almost none of, a threshold every
    response is clipped beyond; nothing charged."""
    rng = np.random.default_rng(4)
    lon, lat = rng.uniform(-0.25, 0.05, 300), rng.uniform(51.40, 51.60, 300)
    data = privgp.records(np.column_stack([lon, lat]), 30 + 10 * rng.uniform(size=300))
    ledger = tmp_path / "ledger.sqlite"
    gis_order = privgp.Box((-0.25, 51.40), (0.05, 51.60))        # xmin ymin / xmax ymax read as x and y bounds
    wrong = privgp.Box((gis_order.lower[0], gis_order.upper[0]), (gis_order.lower[1], gis_order.upper[1]))
    with pytest.raises(InvalidParameterError, match="box must be a public box the records fill"):
        privgp.release(privgp.plan("grid", 300, wrong, privgp.ResponseMap(35.0, 5.0), epsilon=2.0), data,
                       privgp.Budget(ledger, epsilon=10.0))
    right = privgp.Box((-0.25, 51.40), (0.05, 51.60))
    with pytest.raises(InvalidParameterError, match="threshold must be a value inside the range"):
        privgp.release(privgp.plan("grid", 300, right, privgp.ResponseMap(400.0, 5.0), epsilon=2.0), data,
                       privgp.Budget(ledger, epsilon=10.0))
    assert not ledger.exists()
    privgp.release(privgp.plan("grid", 300, right, privgp.ResponseMap(35.0, 5.0), epsilon=2.0), data,
                   privgp.Budget(ledger, epsilon=10.0))


def test_a_box_of_three_coordinates_is_named_as_unsupported():
    """Walk-through 11: privgp.plan with a 3-D box failed with a bare KeyError."""
    box = privgp.Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    for mechanism in ("auto", "posterior-sample", "sparse-gp"):
        with pytest.raises(InvalidParameterError, match="a box of 1 or 2 coordinates"):
            privgp.plan(mechanism, 3000, box, privgp.ResponseMap(threshold=0.5, clip=1.0), epsilon=5.0)


def test_a_misspelled_option_names_the_mechanisms_options():
    """Walk-through 12: privgp.plan(..., cels=10) said "--cels must be used with --mechanism (none) only".
    Walk-through 16: in Python's words (the keyword, privgp.plan("NAME", ...)), not the command's flags."""
    with pytest.raises(InvalidParameterError, match=r'^cels must be .*privgp.plan\("laplace-grid", ...\) takes: '
                                                    r"bandwidth, cells"):
        privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0,
                    cels=10)
    with pytest.raises(InvalidParameterError, match=r'^L must be used with privgp.plan\("posterior-sample", ...\)'):
        privgp.plan("grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0, L=3)


def test_tampering_with_a_plan_or_checked_records_in_other_ways_is_refused(tmp_path):
    """Red team round 12: an attribute that is not a field shadowed a method draw calls (exact counts charged as
    epsilon 1); a StatisticsRelease nested in another skipped check_plan; a CheckedRecords edited after
    check_records (object.__setattr__, setflags) was drawn unchecked; records() arrays could be made writable again;
    check_records skipped the map-is-possible checks."""

    from privgp.mechanisms.release import StatisticsRelease, check_records

    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (200, 2)), rng.normal(size=200)
    box, rmap = privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0)
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=50.0)
    plan = privgp.plan("grid", 200, box, rmap, epsilon=1.0)
    shadowed = privgp.plan("grid", 200, box, rmap, epsilon=1.0)
    object.__setattr__(shadowed, "_noise", lambda *a, **k: 0.0)
    with pytest.raises(InvalidParameterError, match="changed after planning"):
        privgp.release(shadowed, (X, z), budget)
    stats = plan.statistics(X, np.clip(z, -1, 1)) if hasattr(plan, "statistics") else None
    if stats is not None:
        with pytest.raises(InvalidParameterError, match="not nested"):
            privgp.release(StatisticsRelease(StatisticsRelease(plan, tuple(stats)), tuple(stats)), (X, z), budget)
    data = privgp.records(X, z)
    checked = check_records(plan, data)
    with pytest.raises(ValueError):
        checked.y.setflags(write=True)
    object.__setattr__(checked, "y", np.asarray(checked.y) * 1e4)     # no longer what check_records issued
    res = privgp.release(plan, checked, budget, np.random.default_rng(1))
    assert np.abs(res.released.statistics["sums"]).max() <= 200 + 1e3   # drawn from the records, checked again
    with pytest.raises(ValueError):
        data.X.setflags(write=True)
    corner = privgp.records(rng.uniform(0, 0.05, (200, 2)), z)
    with pytest.raises(InvalidParameterError, match="under a tenth of every side"):
        check_records(plan, corner)
    check_records(plan, corner, allow_noisy=True)


def test_checked_and_owned_arrays_cannot_be_made_writeable_through_their_base():
    """Red team round 15: the read-only views' ``.base`` owned its memory and could be made writeable again: an
    edit through it was drawn unchecked (|y| = 1000 where the sensitivity assumes 1) or drew other records than
    the ledger was charged for. Every array reachable from them is now over immutable bytes."""
    from privgp.mechanisms.release import check_records

    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (200, 2)), rng.normal(size=200)
    plan = privgp.plan("grid", 200, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0)
    data = privgp.records(X, z)
    checked = check_records(plan, data)
    for a in (checked.X, checked.y, data.X, data.response):
        while isinstance(a, np.ndarray):
            with pytest.raises(ValueError):
                a.setflags(write=True)
            a = a.base
        assert a is None or isinstance(a, bytes)
    X[0, 0], z[0] = 0.5, 1e6          # the caller's arrays stay the caller's
    assert data.X[0, 0] != 0.5 and data.response[0] != 1e6


def test_the_ledger_key_is_that_of_the_records_released_not_a_digest_set_by_hand(tmp_path):
    """Red team round 15: release() keyed the ledger on the records object's own ``content_digest``, so
    dataclasses.replace(rec, content_digest=...) gave the same records a fresh budget each time (5 x epsilon 5 under
    a budget of 10), and replace(rec, X=other) was charged to the first records. A digest privgp did not compute for
    these very records is computed again from them; a projection keeps the digest of the records projected."""
    import dataclasses

    from privgp.datasets.tabular import load_table, verified_digest
    from privgp.errors import BudgetExceededError
    from privgp.geo import project_records
    from privgp.ledger import Ledger

    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    rec = privgp.records(X, z)
    forged = dataclasses.replace(rec, content_digest="0" * 64)
    other_X = rng.uniform(0, 1, (300, 2))
    moved = dataclasses.replace(rec, X=other_X)
    assert verified_digest(rec)[0] == rec.content_digest
    assert verified_digest(forged)[0] == rec.content_digest
    assert verified_digest(moved)[0] == privgp.records(other_X, z).content_digest != rec.content_digest
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=10.0)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    first = privgp.release(plan, rec, budget, np.random.default_rng(1))
    second = privgp.release(plan, forged, budget, np.random.default_rng(2))
    assert first.fingerprint == second.fingerprint
    with pytest.raises(BudgetExceededError):
        privgp.release(plan, dataclasses.replace(rec, content_digest="1" * 64), budget, np.random.default_rng(3))
    led = Ledger(tmp_path / "l.sqlite")
    assert privgp.release(plan, moved, budget, np.random.default_rng(4)).fingerprint == \
        led.fingerprint_of(privgp.records(other_X, z).content_digest)
    lonlat = privgp.records(np.column_stack([-76.6 + 0.1 * X[:, 0], 39.3 + 0.1 * X[:, 1]]), z)
    projected, _, _ = project_records(lonlat, privgp.Box((-76.61, 39.29), (-76.49, 39.41)), "EPSG:4326")
    assert verified_digest(projected)[0] == lonlat.content_digest
    path = tmp_path / "t.csv"
    path.write_text("x,y,v\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, z)) + "\n")
    table = load_table(path, ["x", "y"], "v")
    with pytest.raises(ValueError):
        table.X[0, 0] = 0.5
    assert verified_digest(table)[0] == table.content_digest == rec.content_digest


def test_a_straggler_does_not_hide_records_packed_in_a_corner():
    """Red team round 12: one record in the far corner made the records' extent the whole box, so 1999 records in
    5% x 5% of it passed the tenth-of-the-box check. The check reads the central 98% of the records."""
    from privgp.mechanisms.release import check_map_is_possible

    rng = np.random.default_rng(0)
    X = np.vstack([rng.uniform(0, 0.05, (1999, 2)), [[0.99, 0.99]]])
    box, rmap = privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0)
    with pytest.raises(InvalidParameterError, match="98% of them span"):
        check_map_is_possible(X, rng.normal(size=2000), box, rmap)
    check_map_is_possible(X, rng.normal(size=2000), box, rmap, allow_noisy=True)
    spread = rng.uniform(0, 1, (2000, 2))
    check_map_is_possible(spread, rng.normal(size=2000), box, rmap)     # records over the box pass


def test_records_listed_in_order_are_read_whole_by_the_box_check():
    """Red team round 14: the check read every k-th row, so 10^6 readings of ten stations listed station by
    station put one station in the sample and were refused ("98% of them span 0%")."""
    from privgp.mechanisms.release import check_map_is_possible

    rng = np.random.default_rng(3)
    stations = rng.uniform(0, 1, (10, 2))
    X = np.repeat(stations, 100_001, axis=0)
    check_map_is_possible(X, rng.normal(size=X.shape[0]), privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0))


def test_a_dataset_name_is_the_same_in_either_unicode_form(tmp_path):
    """Red team round 14: "Zürich" typed composed and decomposed gave two budgets."""
    import unicodedata

    a = privgp.Budget(tmp_path / "l.sqlite", dataset_id=unicodedata.normalize("NFC", "Zürich clinic"))
    b = privgp.Budget(tmp_path / "l.sqlite", dataset_id=unicodedata.normalize("NFD", "Zürich clinic"))
    assert a == b and a.fingerprint((np.zeros(3), np.zeros(3))) == b.fingerprint((np.ones(4), np.ones(4)))


def test_a_dataset_name_in_another_width_case_or_spacing_is_the_same_data_set(tmp_path, capsys):
    """Red team round 15: names were only NFC-normalised, so a full-width spelling, a doubled inner space or
    another capital each opened a budget of their own (two epsilon 5 charges under a budget of 6). A ledger that
    charged a name before names were folded keeps its key and its entries."""
    from privgp.cli.main import main
    from privgp.ledger import Ledger, dataset_name_key

    names = ["Zurich clinic", "zurich  clinic", "\uff3aurich clinic", " ZURICH clinic "]
    assert {dataset_name_key(n) for n in names} == {"zurich clinic"}
    fps = {privgp.Budget(tmp_path / "l.sqlite", dataset_id=n).fingerprint((np.zeros(3), np.zeros(3))) for n in names}
    assert len(fps) == 1
    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    privgp.release(plan, (X, z), privgp.Budget(tmp_path / "l.sqlite", epsilon=6.0, dataset_id="Zurich clinic"))
    with pytest.raises(privgp.errors.BudgetExceededError):
        privgp.release(plan, (X, z), privgp.Budget(tmp_path / "l.sqlite", epsilon=6.0, dataset_id="zurich  clinic"))
    csv = tmp_path / "d.csv"
    csv.write_text("x,y,v\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, z)) + "\n")
    code = main(["release", "--data", str(csv), "--x-col", "x", "--y-col", "y", "--response-col", "v", "--box", "0",
                 "1", "0", "1", "--threshold", "0", "--clip", "1", "--ledger", str(tmp_path / "l.sqlite"),
                 "--dataset-id", "\uff3aURICH CLINIC", "--allow-noisy", "--out", str(tmp_path / "o")])
    assert code == 3 and not (tmp_path / "o").exists()
    capsys.readouterr()
    # a ledger written before: the name's key was the NFC name as typed; its entries stay with it
    old = Ledger(tmp_path / "old.sqlite")
    typed = old.fingerprint("dataset-id:Clinic A")
    old.charge(typed, plan.event, epsilon=plan.certificate.epsilon, delta=plan.certificate.delta,
               budget_epsilon=6.0, budget_delta=1e-6, default_budget_delta=1e-6, description="before", settings={})
    assert Ledger(tmp_path / "old.sqlite").named_fingerprint("Clinic A") == typed
    with pytest.raises(privgp.errors.BudgetExceededError):
        privgp.release(plan, (X, z), privgp.Budget(tmp_path / "old.sqlite", dataset_id="Clinic A"))
    # red team 16: another spelling of a name an earlier privgp charged (its label) is that data set too
    old.charge(old.fingerprint("dataset-id:City Sales"), plan.event, epsilon=plan.certificate.epsilon,
               delta=plan.certificate.delta, budget_epsilon=6.0, budget_delta=1e-6, default_budget_delta=1e-6,
               description="before", settings={}, label="City Sales")
    for spelling in ("city sales", "CITY  SALES", "City Sales"):
        assert old.named_fingerprint(spelling) == old.fingerprint("dataset-id:City Sales")
        with pytest.raises(privgp.errors.BudgetExceededError):
            privgp.release(plan, (X, z), privgp.Budget(tmp_path / "old.sqlite", dataset_id=spelling))
    old.charge(old.fingerprint("dataset-id:city sales"), plan.event, epsilon=plan.certificate.epsilon,
               delta=plan.certificate.delta, budget_epsilon=6.0, budget_delta=1e-6, default_budget_delta=1e-6,
               description="before", settings={}, label="city sales")     # two spellings kept apart before
    with pytest.raises(privgp.errors.InvalidParameterError, match="charged under one spelling only"):
        privgp.release(plan, (X, z), privgp.Budget(tmp_path / "old.sqlite", dataset_id="City  sales"))


def test_the_records_drawn_are_the_records_charged_whatever_the_object_holds_later(tmp_path):
    """Red team round 16: release() of a CheckedRecords drew the arrays checked but keyed the ledger on the records
    object as it was at release time: records B checked, then the object's X and response set to throw-away data,
    drew B and charged a fresh data set each time (B released 6 times at epsilon 5 under a budget of 10). The key is
    now that of the arrays read once and checked, for CheckedRecords and for any records object."""
    from privgp.errors import BudgetExceededError
    from privgp.mechanisms.release import check_records

    rng = np.random.default_rng(0)
    XB, zB = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=10.0)

    class Duck:      # any object with X, response and a str content_digest is accepted as records
        pass

    def swapped_after_check():
        r = Duck()
        r.X, r.response, r.content_digest = XB, zB, "whatever"
        checked = check_records(plan, r)
        r.X, r.response = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
        return checked

    rec = privgp.records(XB, zB)
    checked = check_records(plan, rec)
    object.__setattr__(rec, "X", privgp.records(rng.uniform(0, 1, (300, 2)), zB).X)
    keys = {privgp.release(plan, c, budget).fingerprint for c in (swapped_after_check(), checked)}
    assert keys == {budget.fingerprint(privgp.records(XB, zB))}
    with pytest.raises(BudgetExceededError):
        privgp.release(plan, swapped_after_check(), budget)


def test_check_out_refuses_before_the_charge_a_folder_write_release_would_refuse(tmp_path):
    """Walk-through 16: README's Python example run twice charged epsilon 5, then write_release refused the existing
    folder ("pass --overwrite", a CLI flag): the second draw was charged and thrown away. check_out refuses the
    folder first, in Python's words, and the example calls it before the release."""
    from privgp.errors import InvalidParameterError
    from privgp.publish import check_out, write_release

    rng = np.random.default_rng(0)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=50.0)
    out = tmp_path / "release"
    assert check_out(out, ledger=budget) == out
    write_release(privgp.release(plan, (X, z), budget), out)
    with pytest.raises(InvalidParameterError, match=r"out must be a new or empty folder \(or pass overwrite=True\)"):
        check_out(out, ledger=budget)
    assert check_out(out, overwrite=True, ledger=budget) == out          # an earlier privgp output may be replaced
    with pytest.raises(InvalidParameterError, match="does not hold the ledger"):
        check_out(tmp_path, overwrite=True, ledger=budget)
    assert len(budget.ledger.entries()) == 1


def test_records_that_answer_differently_when_converted_again_are_read_once(tmp_path):
    """Red team round 17: read_records kept an attribute that is not a numpy array as the object, which the check
    and the ledger key each converted: an object giving records B on the first conversion and a throw-away set after
    was drawn as B and charged elsewhere (B released 6 times at epsilon 5 under a budget of 10). Every attribute is
    converted to floats once; what is checked, drawn and keyed is that copy."""
    from privgp.errors import BudgetExceededError

    rng = np.random.default_rng(0)
    XB, zB = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)

    class Flip:
        def __init__(self):
            self.calls = 0

        def __array__(self, dtype=None, copy=None):
            self.calls += 1
            a = XB if self.calls == 1 else rng.uniform(0, 1, (300, 2))
            return a if dtype is None else a.astype(dtype)

    class Rec:
        def __init__(self):
            self.X, self.response, self.content_digest = Flip(), list(zB), "x"

    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=10.0)
    keys = {privgp.release(plan, Rec(), budget).fingerprint for _ in range(2)}
    assert keys == {budget.fingerprint(privgp.records(XB, zB))}
    with pytest.raises(BudgetExceededError):
        privgp.release(plan, Rec(), budget)


def test_write_release_refuses_odd_arguments_and_a_moved_ledger_before_writing(tmp_path):
    """Red team 26: overwrite="no" (truthy) overwrote, report="yes" and a forecast of the wrong type failed late or
    not at all, out=3 was a TypeError, and a ledger moved after the charge was re-created empty at its old path
    (with a raw SQLite error) after the outputs were written."""
    from privgp.errors import DataError
    from privgp.publish import check_out

    rng = np.random.default_rng(1)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=5.0)
    ledger_file = tmp_path / "l.sqlite"
    result = privgp.release(plan, (X, z), privgp.Budget(ledger_file, epsilon=50.0))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    for kwargs, message in [
        (dict(out=tmp_path / "full", overwrite="no"), r"^overwrite must be True or False; got 'no'"),
        (dict(out=tmp_path / "a", report="yes"), r"^report must be True or False; got 'yes'"),
        (dict(out=tmp_path / "a", interactive_map=1), r"^interactive_map must be True or False; got 1"),
        (dict(out=tmp_path / "a", forecast="x"), r"^forecast must be None or what privgp.tasks.forecast.forecast"),
        (dict(out=3), r"^out must be a folder path \(a str or os.PathLike\); got 'int'"),
    ]:
        with pytest.raises(InvalidParameterError, match=message):
            write_release(result, **kwargs)
    with pytest.raises(InvalidParameterError, match="^overwrite must be True or False"):
        check_out(tmp_path / "a", overwrite="yes")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine" and not (tmp_path / "a").exists()
    ledger_file.rename(tmp_path / "moved.sqlite")
    with pytest.raises(DataError, match=r"l.sqlite no longer exists \(moved or deleted after it was opened\)"):
        write_release(result, tmp_path / "a")
    assert not ledger_file.exists() and not (tmp_path / "a").exists()   # no empty ledger, no outputs
    (tmp_path / "moved.sqlite").rename(ledger_file)
    write_release(result, tmp_path / "a")
    assert [e.status for e in result.ledger.entries()] == ["completed"]
