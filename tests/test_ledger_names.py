"""The same records are one data set whatever they are called.

Before: `--dataset-id NAME` (or `Budget(dataset_id=NAME)`) keyed the ledger on the name alone, so README's main
release run three times, once without a name, once as 'mysales' and once as 'other', spent epsilon 5 of 10 on each
of three data sets: 15 on the same 211 records, and every ledger line said 5 of 10. Now a charge under a name links
the records' own key to it (the same records without a name are charged to it), and a name other than the one the
records were charged under, or a name for records charged without one, is refused before anything is charged."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privgp
from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.ledger import Ledger


def _release(tmp_path, capsys, out, *extra):
    code = main(["release", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / out), "--json", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _entries(tmp_path) -> int:
    return sum(d.spent.entries for d in Ledger(tmp_path / "l.sqlite").datasets())


def test_the_same_records_under_a_name_and_without_one_share_one_budget(tmp_path, capsys):
    code, out, _ = _release(tmp_path, capsys, "a", "--dataset-id", "mysales")
    assert code == 0
    named = json.loads(out)["fingerprint"]
    code, out, _ = _release(tmp_path, capsys, "b")   # the same records, no name: the named data set
    assert code == 0 and json.loads(out)["fingerprint"] == named and _entries(tmp_path) == 2
    code, _, err = _release(tmp_path, capsys, "c", "--dataset-id", "other")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--dataset-id must be 'mysales', the name these records were charged under before" in err
    assert not (tmp_path / "c").exists() and _entries(tmp_path) == 2
    assert len(Ledger(tmp_path / "l.sqlite").datasets()) == 1
    # a dry run says the same, and charges nothing either
    code, _, err = _release(tmp_path, capsys, "d", "--dataset-id", "other", "--dry-run")
    assert code == 2 and "must be 'mysales'" in err and _entries(tmp_path) == 2
    # the name in another spelling is the same name
    code, out, _ = _release(tmp_path, capsys, "e", "--dataset-id", "MySales", "--budget-epsilon", "10")
    assert code == 3 and _entries(tmp_path) == 2   # refused by the budget (10 spent of 10), not by the name


def test_records_charged_without_a_name_cannot_be_renamed(tmp_path, capsys):
    assert _release(tmp_path, capsys, "a")[0] == 0
    code, _, err = _release(tmp_path, capsys, "b", "--dataset-id", "mysales")
    assert code == 2
    assert "--dataset-id must be left out for these records, which were charged before without a name" in err
    assert "labelled 'embedded:baltimore'" in err and not (tmp_path / "b").exists() and _entries(tmp_path) == 1


def test_a_name_still_spans_versions_of_the_records(tmp_path, capsys):
    """What names are for: other records (a new version of a file) under the same name share its budget."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 10, 300), rng.uniform(0, 5, 300)
    common = ["--x-col", "x", "--y-col", "y", "--response-col", "v", "--box", "0", "10", "0", "5", "--threshold",
              "0", "--clip", "1", "--allow-noisy", "--epsilon", "3", "--dataset-id", "survey"]
    for version in (1, 2):
        csv = tmp_path / f"v{version}.csv"
        v = np.sin(x) + 0.1 * version
        csv.write_text("x,y,v\n" + "\n".join(f"{a:.17g},{b:.17g},{c:.17g}" for a, b, c in zip(x, y, v)) + "\n")
        assert _release(tmp_path, capsys, f"o{version}", "--data", str(csv), *common)[0] == 0
    (ds,) = Ledger(tmp_path / "l.sqlite").datasets()
    assert ds.spent.entries == 2 and ds.label == "survey"
    # and either version without the name is that data set
    code, out, _ = _release(tmp_path, capsys, "o3", "--data", str(tmp_path / "v1.csv"), *common[:-2])
    assert code == 0 and json.loads(out)["fingerprint"] == ds.fingerprint


def test_python_budgets_follow_the_same_rule(tmp_path):
    rng = np.random.default_rng(1)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0)
    path = tmp_path / "l.sqlite"
    named = privgp.release(plan, (X, z), privgp.Budget(path, dataset_id="clinic A")).fingerprint
    assert privgp.release(plan, (X, z), privgp.Budget(path)).fingerprint == named
    assert privgp.Budget(path).fingerprint((X, z)) == named
    with pytest.raises(InvalidParameterError, match="must be 'clinic A', the name these records were charged under"):
        privgp.release(plan, (X, z), privgp.Budget(path, dataset_id="clinic B"))
    with pytest.raises(InvalidParameterError, match="must be 'clinic A'"):
        privgp.Budget(path, dataset_id="clinic B").charge((X, z), plan.event)
    assert sum(d.spent.entries for d in Ledger(path).datasets()) == 2


def test_optimize_names_follow_the_same_rule(tmp_path, capsys):
    base = ["optimize", "--function", "forrester", "--rounds", "5", "--epsilon", "5", "--objective-seed", "0",
            "--ledger", str(tmp_path / "l.sqlite"), "--json"]
    assert main([*base, "--dataset-id", "bo", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert main([*base, "--dataset-id", "other", "--out", str(tmp_path / "b")]) == 2
    assert "must be 'bo'" in capsys.readouterr().err and not (tmp_path / "b").exists()


def test_the_same_records_with_their_axes_swapped_are_one_data_set(tmp_path, capsys):
    """Records released as (lon, lat) and again as (lat, lon) -- the mix-up privgp's note about swapped coordinate
    names points out after a charge -- were two data sets with a budget each. The digest of the records with their
    coordinates swapped is now an alias of their key (CSV, Parquet and Python records alike)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from privgp.datasets.fingerprint import swapped_digests

    rng = np.random.default_rng(2)
    lon, lat = rng.uniform(-76.7, -76.5, 400), rng.uniform(39.2, 39.35, 400)
    v = np.sin((lon + 76.6) * 30) + rng.normal(0, 0.3, 400)
    csv = tmp_path / "d.csv"
    csv.write_text("lon,lat,v\n" + "".join(f"{a:.6f},{b:.6f},{c:.6f}\n" for a, b, c in zip(lon, lat, v)))
    pq.write_table(pa.table({"lat": np.round(lat, 6), "lon": np.round(lon, 6), "v": np.round(v, 6)}),
                   tmp_path / "d.parquet")
    common = ["--response-col", "v", "--threshold", "0", "--clip", "1", "--allow-noisy", "--epsilon", "2"]
    as_lon_lat = ["--x-col", "lon", "--y-col", "lat", "--box", "-76.7", "-76.5", "39.2", "39.35"]
    as_lat_lon = ["--x-col", "lat", "--y-col", "lon", "--box", "39.2", "39.35", "-76.7", "-76.5"]
    fps = []
    for out, data, axes in (("a", csv, as_lon_lat), ("b", csv, as_lat_lon), ("c", tmp_path / "d.parquet", as_lat_lon)):
        code, text, _ = _release(tmp_path, capsys, out, "--data", str(data), *axes, *common)
        assert code == 0
        fps.append(json.loads(text)["fingerprint"])
    assert len(set(fps)) == 1 and _entries(tmp_path) == 3 and len(Ledger(tmp_path / "l.sqlite").datasets()) == 1
    X = np.column_stack([np.round(lon, 6), np.round(lat, 6)])
    budget = privgp.Budget(tmp_path / "l.sqlite")
    assert budget.fingerprint((X[:, ::-1], np.round(v, 6))) == budget.fingerprint((X, np.round(v, 6))) == fps[0]
    assert swapped_digests(X[:, :1], v) == ()   # 1-D records have no other order


def test_swapped_records_find_a_named_data_set_through_its_link(tmp_path):
    """Records charged under a name are known by a link, not a data set of their own: their swapped alias must
    follow that link (it found only data sets, so the swapped records started a budget of their own)."""
    rng = np.random.default_rng(3)
    X, z = rng.uniform(0, 1, (300, 2)), rng.normal(size=300)
    plan = privgp.plan("laplace-grid", 300, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=1.0)
    path = tmp_path / "l.sqlite"
    named = privgp.release(plan, (X, z), privgp.Budget(path, dataset_id="clinic A")).fingerprint
    assert privgp.release(plan, (X[:, ::-1], z), privgp.Budget(path)).fingerprint == named
    assert privgp.Budget(path).fingerprint((X, z)) == named and len(Ledger(path).datasets()) == 1
    with pytest.raises(InvalidParameterError, match="must be 'clinic A'"):
        privgp.Budget(path, dataset_id="clinic B").fingerprint((X[:, ::-1], z))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, "a", "A ", "b"]), st.booleans()), min_size=1, max_size=6))
def test_any_sequence_of_names_and_axis_orders_charges_one_data_set(ops):
    """The law: charges of the same records, under any sequence of names (or none) and either axis order, either
    land on one data set or are refused before anything is recorded."""
    import tempfile

    rng = np.random.default_rng(4)
    X, z = rng.uniform(0, 1, (50, 2)), rng.normal(size=50)
    plan = privgp.plan("laplace-grid", 50, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=0.5)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "l.sqlite"
        charged, keys = 0, set()
        for name, swap in ops:
            budget = privgp.Budget(path, epsilon=100.0, dataset_id=name)
            try:
                charge = budget.charge((X[:, ::-1] if swap else X, z), plan.event, default_delta=1e-6)
            except InvalidParameterError as exc:
                assert "dataset_id" in str(exc) and name is not None   # only a name is ever refused
                continue
            charged += 1
            keys.add(charge.fingerprint)
        assert charged >= 1 and len(keys) == 1
        (ds,) = Ledger(path).datasets()
        assert ds.spent.entries == charged


# -- two processes at once (red team 17) ------------------------------------------------------------------------------
# The aliases, links and name checks were decided when a key was found, outside the charge's transaction: two
# releases of the same records started together (axes swapped, or one under a name) each found no data set and
# opened one, and the records kept two budgets for good. The charge now finds the key again in its transaction.

def _two_handles(path: Path, create: bool):
    """Two ledger objects on one file, as two processes hold them (``create``: the file does not exist yet)."""
    return Ledger(path, create_on_charge=create), Ledger(path, create_on_charge=create)


def _race_data():
    from privgp.ledger import _record_key

    rng = np.random.default_rng(5)
    X, z = rng.uniform(0, 1, (80, 2)), rng.normal(size=80)
    plan = privgp.plan("laplace-grid", 80, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0), epsilon=3.0)
    return _record_key((X, z)), _record_key((X[:, ::-1], z)), plan.event


@pytest.mark.parametrize("create", [False, True])
def test_two_processes_charging_the_records_and_their_swap_at_once_find_one_data_set(tmp_path, create):
    records, swapped, event = _race_data()
    path = tmp_path / "l.sqlite"
    a, b = _two_handles(path, create)
    key_a, key_b = a.fingerprint_of(*records), b.fingerprint_of(*swapped)   # both before either charges
    first = a.charge(key_a, event, budget_epsilon=10, default_budget_delta=1e-6)
    second = b.charge(key_b, event, budget_epsilon=10, default_budget_delta=1e-6)
    assert second.fingerprint == first.fingerprint
    (ds,) = Ledger(path).datasets()
    assert ds.spent.entries == 2
    with pytest.raises(privgp.errors.BudgetExceededError):   # 3 + 3 + 6 > 10: the one budget holds
        Ledger(path).charge(Ledger(path).fingerprint_of(*swapped),
                            privgp.plan("laplace-grid", 80, privgp.Box((0, 0), (1, 1)), privgp.ResponseMap(0.0, 1.0),
                                        epsilon=6.0).event)


@pytest.mark.parametrize("create", [False, True])
def test_a_name_found_while_the_records_were_charged_without_one_is_refused_in_the_charge(tmp_path, create):
    records, _, event = _race_data()
    path = tmp_path / "l.sqlite"
    a, b = _two_handles(path, create)
    key_a, key_b = a.fingerprint_of(*records), b.named_fingerprint("sales", records=records)
    a.charge(key_a, event, default_budget_delta=1e-6)
    with pytest.raises(InvalidParameterError, match="left out for these records, which were charged before without"):
        b.charge(key_b, event, default_budget_delta=1e-6)
    (ds,) = Ledger(path).datasets()
    assert ds.spent.entries == 1


def test_records_charged_under_a_name_meanwhile_are_charged_to_it(tmp_path):
    records, swapped, event = _race_data()
    path = tmp_path / "l.sqlite"
    a, b = _two_handles(path, False)
    key_a, key_b = a.fingerprint_of(*swapped), b.named_fingerprint("sales", records=records)
    named = b.charge(key_b, event, default_budget_delta=1e-6)
    assert a.charge(key_a, event, default_budget_delta=1e-6).fingerprint == named.fingerprint
    (ds,) = Ledger(path).datasets()
    assert ds.spent.entries == 2 and ds.label == ""
