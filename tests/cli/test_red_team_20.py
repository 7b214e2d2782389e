"""Red team 20a (/work/notes/redteam20a.md): release folders crafted to pass ``privgp verify --strict``.

* H2: a ledger block with ``budget_delta`` 0 (which privgp's ledger refuses) skipped the check that the spent epsilon
  is at least the release's own, so "spent 0.5" after a release of epsilon 5 passed ``--strict``.
* M1: the raw records (or anything else unhashed) beside a verified release passed ``--strict`` without a word; every
  entry the certificate does not cover is now a note.
* M2: a look-alike of certificate.json (``CERTIFICATE.JSON``, a Cyrillic ``с``) stating another epsilon beside the
  real one passed; it is refused.
"""
from __future__ import annotations

import json
import shutil

import pytest

from privgp.cli.main import main
from privgp.publish import write_release


def _verify(target, capsys, *extra):
    capsys.readouterr()
    code = main(["verify", str(target), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("rt20") / "out"
    assert main(["release", "--seed", "1", "--no-report", "--out", str(out), "--ledger", str(out.parent / "l.sqlite")]) == 0
    return out


@pytest.fixture
def folder(released, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "out"
    shutil.copytree(released, out)
    assert _verify(out / "certificate.json", capsys, "--strict")[0] == 0
    return out


@pytest.mark.parametrize("budget_delta", [0.0, None, "absent"])
def test_a_budget_delta_of_zero_or_none_is_refused(folder, capsys, budget_delta):
    """(review 20c B1: null, or the key removed, passed the same way.)"""
    doc = json.loads((folder / "certificate.json").read_text())
    led = doc["ledger"]
    led["budget_delta"], led["spent_epsilon_after"], led["remaining_epsilon"] = budget_delta, 0.5, 9.5
    if budget_delta == "absent":
        del led["budget_delta"]
    (folder / "certificate.json").write_text(json.dumps(doc, indent=2) + "\n")
    code, res = _verify(folder / "certificate.json", capsys)
    assert code == 1 and res["field"] == "ledger.budget_delta", res


def test_files_the_certificate_does_not_cover_are_notes(folder, capsys):
    (folder / "records.csv").write_text("x,y,price\n900,550,41.5\n")
    (folder / ".hidden").write_text("900,550,41.5\n")
    (folder / "sub").mkdir()
    code, res = _verify(folder / "certificate.json", capsys)
    assert code == 0, res
    covered = [n for n in res["notes"] if "not covered by the certificate" in n]
    assert [n.split(":")[0] for n in covered] == [".hidden", "records.csv", "sub/"], res["notes"]
    code, res = _verify(folder / "certificate.json", capsys, "--strict")
    assert code == 1 and res["strict_failed"], res


@pytest.mark.parametrize("name", ["CERTIFICATE.JSON", "Certificate.json", "\u0441ertificate.json"])
def test_a_look_alike_of_the_certificate_beside_it_is_refused(folder, capsys, name):
    text = (folder / "certificate.json").read_text()
    (folder / name).write_text(text.replace('"epsilon": 4.99', '"epsilon": 0.00'))
    code, res = _verify(folder / "certificate.json", capsys)
    assert code == 1 and "reads as certificate.json" in res["reason"], res


@pytest.mark.parametrize("mechanism, extra", [("discretised-gaussian", []), ("functional", ["--noise-bound", "0.15"])])
def test_a_float_noise_mechanism_is_not_released_and_its_earlier_releases_are_not_verified(tmp_path, capsys,
                                                                                          monkeypatch, mechanism, extra):
    """H1: discretised-gaussian adds float64 Gaussian noise to the channels it publishes; their low-order bits told a
    record apart (delta(5) >= 0.0185 where 1e-6 was certified). Red team 20f: functional's values are the posterior
    mean plus float noise in one addition (2 000 of 2 000 releases told apart at a certified (5, 1e-6)).
    `privgp release` and `privgp.release` refuse both before anything is read or charged (they stay for
    `privgp account` and the experiments), and a release an earlier privgp made is NOT VERIFIED."""
    import privgp
    from privgp.errors import InvalidParameterError
    from privgp.mechanisms.interface import get

    capsys.readouterr()
    code = main(["release", "--mechanism", mechanism, *extra, "--allow-noisy", "--out", str(tmp_path / "dg"),
                 "--ledger", str(tmp_path / "l.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "whose certificate holds as computed" in err, err
    assert not (tmp_path / "dg").exists() and not (tmp_path / "l.sqlite").exists()
    plan = privgp.plan(mechanism, 211, privgp.Box((850.0, 500.0), (1000.0, 590.0)),
                       privgp.ResponseMap(threshold=40, clip=1, transform="log"), epsilon=5)
    from privgp.datasets import baltimore

    data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=10)
    with pytest.raises(InvalidParameterError, match="whose certificate holds as computed"):
        privgp.release(plan, data, budget)
    assert not (tmp_path / "l.sqlite").exists()
    # as an earlier privgp released it
    monkeypatch.setattr(type(get(mechanism)), "not_publishable", "")
    assert main(["release", "--mechanism", mechanism, *extra, "--allow-noisy", "--no-report", "--seed", "1",
                 "--out", str(tmp_path / "old"), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    result = privgp.release(plan, data, privgp.Budget(tmp_path / "l2.sqlite", epsilon=10), allow_noisy=True)
    monkeypatch.undo()
    with pytest.raises(InvalidParameterError, match="whose certificate holds as computed"):   # review 20c B5
        write_release(result, tmp_path / "written")
    assert not (tmp_path / "written").exists()
    code, res = _verify(tmp_path / "old" / "certificate.json", capsys)
    assert code == 1 and res["field"] == "mechanism" and "low-order bits" in res["reason"], res
    assert "withdraw its files" in res["reason"], res


def test_a_second_certificate_beside_one_verified_under_another_name_is_refused(folder, capsys, tmp_path):
    """Review 20c B2: the look-alike check skipped any file named certificate.json, so a forged certificate.json beside
    the verified real.json passed. Only the verified file and byte-for-byte copies of it are left alone."""
    text = (folder / "certificate.json").read_text()
    (folder / "real.json").write_text(text)
    (folder / "certificate.json").write_text(text.replace('"epsilon": 4.99', '"epsilon": 0.00'))
    code, res = _verify(folder / "real.json", capsys)
    assert code == 1 and "reads as certificate.json" in res["reason"], res
    (folder / "certificate.json").write_text(text)   # a copy: the same certificate, nothing to tell apart
    code, res = _verify(folder / "real.json", capsys, "--strict")
    assert code == 0 and res["notes"] == [], res


def test_with_files_elsewhere_another_certificate_beside_them_is_a_note(folder, capsys, tmp_path):
    """``--files DIR``: the certificate verified lies elsewhere; a different certificate.json among the files is what
    their readers see, which this verify does not vouch for: a note (``--strict`` fails); a byte-for-byte copy is
    none."""
    text = (folder / "certificate.json").read_text()
    outside = tmp_path / "kept.json"
    outside.write_text(text)
    code, res = _verify(outside, capsys, "--files", str(folder), "--strict")
    assert code == 0 and res["notes"] == [], res
    (folder / "certificate.json").write_text(text.replace('"epsilon": 4.99', '"epsilon": 0.00'))
    code, res = _verify(outside, capsys, "--files", str(folder))
    assert code == 0 and any(n.startswith("certificate.json: a certificate beside the files other than the one "
                                          "verified") for n in res["notes"]), res
    assert _verify(outside, capsys, "--files", str(folder), "--strict")[0] == 1


def test_a_python_release_with_its_callers_generator_verifies_strictly(tmp_path, capsys):
    """Red team 20b F5: privgp.release(..., rng=Generator) states privgp's own words for a caller's Generator, which
    verify did not know: --strict failed on a genuine release."""
    import numpy as np

    import privgp
    from privgp.datasets import baltimore
    from privgp.tasks.forecast import forecast

    data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    plan = privgp.plan("auto", data.n, baltimore.PUBLIC_BOX, privgp.ResponseMap(threshold=baltimore.THRESHOLD,
                       clip=baltimore.CLIP, transform=baltimore.TRANSFORM), epsilon=5)
    result = privgp.release(plan, data, privgp.Budget(tmp_path / "l.sqlite", epsilon=10), rng=np.random.default_rng(7))
    assert result.randomness["source"].startswith("a numpy Generator supplied by the caller")
    write_release(result, tmp_path / "out", forecast=forecast(plan))
    code, res = _verify(tmp_path / "out" / "certificate.json", capsys, "--strict")
    assert code == 0 and res["notes"] == [], res


def test_a_sparse_gp_release_verifies_strictly_with_another_blas_thread_count(tmp_path):
    """Red team 20b F4: the sparse GP's prediction (the released prediction.npz, recomputed by verify) depended on BLAS's
    thread count, so a genuine release made with two threads failed --strict on a one-thread verifier (seed 1 of the
    embedded data; and releases made under Dask's one-thread workers on an ordinary verifier). predict_from_released
    runs BLAS on one thread."""
    import os
    import subprocess
    import sys

    def privgp(threads: int, *args) -> subprocess.CompletedProcess:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        return subprocess.run([sys.executable, "-m", "privgp.cli.main", *map(str, args)], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)

    r = privgp(2, "release", "--mechanism", "sparse-gp", "--seed", "1", "--allow-noisy", "--out", "sgp",
               "--ledger", "l.sqlite")
    assert r.returncode == 0, r.stderr
    for threads in (1, 2):
        v = privgp(threads, "verify", "sgp/certificate.json", "--strict")
        assert v.returncode == 0, (threads, v.stdout + v.stderr)


@pytest.mark.parametrize("columns", [("lon", "lat", "lon"), ("lon", "lon", "v")])
def test_a_column_given_twice_is_one_line_for_every_source(tmp_path, capsys, columns):
    """Red team 20b F9: a Parquet source with one column given twice was a KeyError traceback (exit 1); CSV said so in
    one line. Every source now does, before anything is read."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    pd.DataFrame({"lon": rng.uniform(0, 1, 50), "lat": rng.uniform(0, 1, 50), "v": rng.normal(size=50)}).to_parquet(
        tmp_path / "geo.parquet")
    x, y, z = columns
    capsys.readouterr()
    code = main(["release", "--dry-run", "--data", str(tmp_path / "geo.parquet"), "--x-col", x, "--y-col", y,
                 "--response-col", z, "--box", "0", "1", "0", "1", "--threshold", "0", "--clip", "1",
                 "--ledger", str(tmp_path / "l.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "must be distinct" in err, err


def test_write_release_refuses_a_result_whose_plan_is_not_the_one_charged(tmp_path):
    """Red team 20b F6: ``dataclasses.replace(result, plan=plan_at_epsilon_0_5)`` over a draw at epsilon 5 was written
    with a certificate of 0.5 that passed --strict (a posterior path cannot be tied to its epsilon). write_release
    compares the plan's event with the one its ledger entry charged."""
    import dataclasses

    import numpy as np

    import privgp
    from privgp.datasets import baltimore
    from privgp.errors import InvalidParameterError

    data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    rmap = privgp.ResponseMap(threshold=baltimore.THRESHOLD, clip=baltimore.CLIP, transform=baltimore.TRANSFORM)
    plans = {e: privgp.plan("posterior-sample", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=e) for e in (5, 0.5)}
    result = privgp.release(plans[5], data, privgp.Budget(tmp_path / "l.sqlite", epsilon=10),
                            rng=np.random.default_rng(1), allow_noisy=True)
    charge = result.charge
    for forged in (dataclasses.replace(result, plan=plans[0.5]),   # 20b F6; then red team 20d H1's ways round it
                   dataclasses.replace(result, plan=plans[0.5], ledger=None),
                   dataclasses.replace(result, plan=plans[0.5], fingerprint="0" * 64,
                                       charge=dataclasses.replace(charge, fingerprint="0" * 64)),
                   dataclasses.replace(result, plan=plans[0.5], charge=dataclasses.replace(charge, entry_id="f" * 32))):
        with pytest.raises(InvalidParameterError, match="privgp.release returned in this process, unchanged"):
            write_release(forged, tmp_path / "forged")
        assert not (tmp_path / "forged").exists()
    # a field of the issued result swapped in place (review 20e), or a copy, is refused too
    other = privgp.plan("posterior-sample", data.n, baltimore.PUBLIC_BOX, privgp.ResponseMap(
        threshold=60, clip=baltimore.CLIP, transform=baltimore.TRANSFORM), epsilon=5)
    for field, value in (("plan", plans[0.5]), ("plan", other), ("released", object()), ("fingerprint", "0" * 64)):
        kept = getattr(result, field)
        object.__setattr__(result, field, value)
        with pytest.raises(InvalidParameterError, match="the very object privgp.release returned"):
            write_release(result, tmp_path / "forged")
        object.__setattr__(result, field, kept)
    import copy

    with pytest.raises(InvalidParameterError, match="not a copy"):
        write_release(copy.copy(result), tmp_path / "forged")
    assert write_release(result, tmp_path / "genuine")
    code, res = _verify_quiet(tmp_path / "genuine" / "certificate.json")
    assert code == 0, res


def _verify_quiet(cert):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["verify", str(cert), "--json"])
    return code, json.loads(out.getvalue())


def test_write_release_writes_a_release_from_statistics_as_the_command_does(tmp_path):
    """Red team 20d L3: a genuine privgp.release(StatisticsRelease(...)) result could not be written."""
    import numpy as np

    import privgp
    from privgp.datasets import baltimore
    from privgp.mechanisms.registered.grid import cell_statistics
    from privgp.mechanisms.release import StatisticsRelease

    table = baltimore.load_baltimore()
    data = privgp.records(table, "price", coordinates=["x", "y"])
    rmap = privgp.ResponseMap(threshold=baltimore.THRESHOLD, clip=baltimore.CLIP, transform=baltimore.TRANSFORM)
    plan = privgp.plan("laplace-grid", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=5)
    rule = plan.site_rule()
    sums, counts = cell_statistics(rule.domain, rule.cells, np.asarray(data.X, float),
                                   rmap.apply(np.asarray(data.response, float)))
    got = privgp.release(StatisticsRelease(plan, (sums, counts)), data, privgp.Budget(tmp_path / "l.sqlite",
                         epsilon=10), rng=np.random.default_rng(2), allow_noisy=True)
    assert write_release(got, tmp_path / "out")
    code, res = _verify_quiet(tmp_path / "out" / "certificate.json")
    assert code == 0 and res["verified"], res


def test_an_empty_files_folder_is_refused_not_read_as_the_certificates(folder, capsys):
    """Red team 20b F11: ``--files ""`` was silently the certificate's own folder."""
    capsys.readouterr()
    code = main(["verify", str(folder / "certificate.json"), "--files", ""])
    err = capsys.readouterr().err
    assert code == 2 and "--files must be an existing folder" in err and len(err.strip().splitlines()) == 1, err


def test_red_team_20d_a_second_certificate_beside_one_verified_with_files_elsewhere_and_a_big_forecast(folder, capsys,
                                                                                                     tmp_path):
    """Red team 20d M1: with --files DIR elsewhere verify never looked at the certificate's own folder, where a forged
    certificate.json beside the verified real.json passed (now a note naming that folder: --strict fails);
    M2: write_release recorded a forecast of 65 simulated releases a family, which verify then refused."""
    import numpy as np

    import privgp
    from privgp.datasets import baltimore
    from privgp.errors import InvalidParameterError
    from privgp.tasks.forecast import MAX_VERIFIED_REPS, forecast

    kept = tmp_path / "kept"
    kept.mkdir()
    text = (folder / "certificate.json").read_text()
    (kept / "real.json").write_text(text)
    (kept / "certificate.json").write_text(text.replace('"epsilon": 4.99', '"epsilon": 0.00'))
    code, res = _verify(kept / "real.json", capsys, "--files", str(folder))   # review 20e: a note naming the folder
    assert code == 0 and any(n.startswith("certificate.json (in ") and "beside the verified certificate" in n
                             for n in res["notes"]), res
    assert _verify(kept / "real.json", capsys, "--files", str(folder), "--strict")[0] == 1
    data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    plan = privgp.plan("auto", data.n, baltimore.PUBLIC_BOX, privgp.ResponseMap(threshold=baltimore.THRESHOLD,
                       clip=baltimore.CLIP, transform=baltimore.TRANSFORM), epsilon=5)
    result = privgp.release(plan, data, privgp.Budget(tmp_path / "l.sqlite", epsilon=10), rng=np.random.default_rng(1))
    big = forecast(plan, reps=MAX_VERIFIED_REPS + 1, precise_se=0.0)
    assert big.reps_per_family == MAX_VERIFIED_REPS + 1
    with pytest.raises(InvalidParameterError, match="forecast must be a forecast of at most"):
        write_release(result, tmp_path / "written", forecast=big)
    assert not (tmp_path / "written").exists()


def test_a_budget_delta_above_one_over_n_gets_a_note(tmp_path, capsys):
    """Red team 20b F2 / 20d M3: --budget-delta 0.999999 made a budget no release exhausts ("spent epsilon 0 of 10",
    printed "at delta 1"): the delta is printed as it is, and a note says what such a budget bounds."""
    capsys.readouterr()
    assert main(["release", "--seed", "1", "--no-report", "--out", str(tmp_path / "a"), "--ledger",
                 str(tmp_path / "a.sqlite"), "--budget-delta", "0.999999"]) == 0
    out, err = capsys.readouterr()
    assert "(at delta 0.999999)" in out and "budget delta, 0.999999, is above 1/n" in err, (out, err)
    assert main(["release", "--seed", "1", "--no-report", "--out", str(tmp_path / "b"), "--ledger",
                 str(tmp_path / "b.sqlite")]) == 0
    assert "is above 1/n" not in capsys.readouterr().err


@pytest.mark.parametrize("mechanism, extra, leaks", [("sparse-gp", ["--inducing", "1"], False),
                                                     ("sparse-gp", [], False)])
def test_a_release_whose_float_noise_leaks_says_so_and_fails_strict(tmp_path, capsys, mechanism, extra, leaks):
    """Red team 20f: a sparse GP with one inducing point gave delta(5) >= 0.10 at a certified (5, 1e-6). A release
    now draws exact discrete noise on lattice statistics (tests/mechanisms/test_sparse_gp_lattice.py), so neither it
    nor the default warns; a float-noise plan (an earlier privgp's certificate) states that its guarantee holds for
    exact arithmetic only, which verify notes (--strict fails; one point: NOT VERIFIED, the test below).
    (functional, which leaked outright, is refused: the test above.)"""
    import privgp
    from privgp.mechanisms.sparse_gp_release import plan_sparse_gp

    box = privgp.Box((850.0, 500.0), (1000.0, 590.0))
    rm = privgp.ResponseMap(threshold=40, clip=1, transform="log")
    assert plan_sparse_gp(211, box, rm, epsilon=5, _noise="float").float_noise_leak()   # walk-through 21: noted
    assert plan_sparse_gp(211, box, rm, epsilon=5, inducing=1).float_noise_leak() is None
    assert plan_sparse_gp(211, box, rm, epsilon=5).float_noise_leak() is None
    capsys.readouterr()
    code = main(["release", "--mechanism", mechanism, *extra, "--allow-noisy", "--seed", "1", "--no-report",
                 "--out", str(tmp_path / "r"), "--ledger", str(tmp_path / "l.sqlite")])
    out = capsys.readouterr().out
    assert code == 0 and ("warning: FLOAT NOISE:" in out) == leaks, out
    code, res = _verify(tmp_path / "r" / "certificate.json", capsys, "--strict")
    assert (code == 1) == leaks and any(n.startswith("float noise:") for n in res["notes"]) == leaks, res


@pytest.mark.parametrize("extra, verdict", [(["--inducing", "1"], "not verified"), ([], "note")])
def test_an_earlier_float_noise_sparse_gp_release_is_noted_or_not_verified(tmp_path, capsys, monkeypatch, extra,
                                                                          verdict):
    """Walk-through 21 / red team 21a: a sparse-GP release made before 2026-11-29 drew float noise. With one inducing
    point that was measured to leak: NOT VERIFIED (withdraw its files). With more, verify still verifies it but notes
    that its guarantee holds for exact arithmetic only, so --strict fails. Today such a plan is refused for a release
    (``unpublishable``), from the CLI and from Python."""
    import functools

    import privgp
    from privgp.errors import InvalidParameterError
    from privgp.mechanisms.registered import sparse_gp as registered
    from privgp.mechanisms.sparse_gp_release import SparseGpPlan, plan_sparse_gp

    monkeypatch.setattr(registered, "plan_sparse_gp", functools.partial(plan_sparse_gp, _noise="float"))
    monkeypatch.setattr(SparseGpPlan, "unpublishable", lambda self: None)   # as an earlier privgp released it
    capsys.readouterr()
    assert main(["release", "--mechanism", "sparse-gp", *extra, "--allow-noisy", "--seed", "1", "--no-report",
                 "--out", str(tmp_path / "old"), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    monkeypatch.undo()
    assert "noise" not in json.loads((tmp_path / "old" / "certificate.json").read_text())["public_settings"]
    code, res = _verify(tmp_path / "old" / "certificate.json", capsys)
    if verdict == "not verified":
        assert code == 1 and "withdraw its files" in res["reason"] and "one inducing point" in res["reason"], res
    else:
        assert code == 0 and res["verified"] and any("drawn in floating point" in n for n in res["notes"]), res
        assert _verify(tmp_path / "old" / "certificate.json", capsys, "--strict")[0] == 1
    # today: a float-noise plan is refused for a release before the charge
    box = privgp.Box((850.0, 500.0), (1000.0, 590.0))
    rm = privgp.ResponseMap(threshold=40, clip=1, transform="log")
    from privgp.datasets import baltimore

    data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    plan = plan_sparse_gp(211, box, rm, epsilon=5, _noise="float")
    with pytest.raises(InvalidParameterError, match="drawing float noise"):
        privgp.release(plan, data, privgp.Budget(tmp_path / "new.sqlite", epsilon=10))
    assert not (tmp_path / "new.sqlite").exists()


def test_an_account_certificate_of_a_mechanism_never_released_fails_strict(tmp_path, capsys):
    """Red team 21a L2: `privgp account --mechanism functional --json` verified under --strict; it is a planned
    guarantee no release of privgp carries: a note, so --strict fails."""
    assert main(["account", "--mechanism", "functional", "--n", "211", "--box", "0", "1", "0", "1", "--epsilon", "2",
                 "--json"]) == 0
    (tmp_path / "acc.json").write_text(capsys.readouterr().out)
    code, res = _verify(tmp_path / "acc.json", capsys)
    assert code == 0 and any(n.startswith("never released: privgp release refuses") for n in res["notes"]), res
    assert _verify(tmp_path / "acc.json", capsys, "--strict")[0] == 1


@pytest.mark.parametrize("mechanism, extra, dim", [("posterior-sample", ["--snap", "0"], 1),
                                                   ("posterior-sample", ["--snap", "0", "--kernel", "matern32"], 1),
                                                   ("posterior-sample", ["--snap", "0", "--grid", "31"], 2),
                                                   ("posterior-sample-tuned", ["--snap", "0", "--lengthscales", "0.1",
                                                                               "0.3"], 1)])
def test_an_unsnapped_posterior_sample_is_refused_and_its_earlier_releases_are_not_verified(tmp_path, capsys, monkeypatch,
                                                                                          mechanism, extra, dim):
    """Red team 21c: without snapping the samplers release the posterior mean plus noise in one float addition
    (delta(5) = 1 with the dense sampler, >= 0.15 with the 1-D exponential kernel's, at a certified (5, 1e-6)).
    Refused before the charge (a dry run too); 1-D snaps by default now and releases; an earlier unsnapped release
    is NOT VERIFIED."""
    import numpy as np

    from privgp.mechanisms.posterior_release import PosteriorSamplePlan

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, dim))
    y = np.sin(6 * X[:, 0]) + 0.2 * rng.standard_normal(200)
    cols = ["x", "w"][:dim]
    (tmp_path / "d.csv").write_text(",".join(cols) + ",v\n" + "".join(
        ",".join(map(str, row)) + f",{t}\n" for row, t in zip(X, y)))
    args = ["release", "--mechanism", mechanism, "--data", str(tmp_path / "d.csv"), "--x-col", "x",
            *(["--y-col", "w"] if dim == 2 else []), "--response-col", "v", "--box", *(["0", "1"] * dim),
            "--threshold", "0", "--clip", "1", "--allow-noisy", "--seed", "1", "--no-report",
            "--ledger", str(tmp_path / "l.sqlite")]
    for more in ([], ["--dry-run"]):
        capsys.readouterr()
        assert main([*args, *extra, *more, "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert "without snapping" in err and "use --snap 1" in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "r").exists() and not (tmp_path / "l.sqlite").exists()
    if mechanism == "posterior-sample" and dim == 1 and len(extra) == 2:
        assert main([*args, "--out", str(tmp_path / "snapped")]) == 0   # 1-D's default: snapped, released
        assert "snapped to the grid lattice" in json.loads((tmp_path / "snapped" / "certificate.json").read_text())[
            "public_settings"]["preprocessing"]
        assert _verify(tmp_path / "snapped" / "certificate.json", capsys, "--strict")[0] == 0
        monkeypatch.setattr(PosteriorSamplePlan, "unpublishable", lambda self: None)   # as an earlier privgp did
        assert main([*args, *extra, "--out", str(tmp_path / "old")]) == 0
        monkeypatch.undo()
        code, res = _verify(tmp_path / "old" / "certificate.json", capsys)
        assert code == 1 and "withdraw its files" in res["reason"], res


def test_the_posterior_sampler_estimator_is_opt_in(tmp_path):
    """Red team 21c: DPPosteriorSampler's lazy path has the same structure (mean plus float noise): fit refuses
    before any charge unless float_noise=True (research, not publishing)."""
    import numpy as np

    import privgp
    from privgp.errors import InvalidParameterError

    X = np.linspace(-1, 1, 40)[:, None]
    budget = privgp.Budget(tmp_path / "l.sqlite", epsilon=10)
    with pytest.raises(InvalidParameterError, match="float_noise"):
        privgp.DPPosteriorSampler(box=(-1, 1), budget=budget).fit(X, X[:, 0])
    assert not (tmp_path / "l.sqlite").exists()
    assert privgp.DPPosteriorSampler(box=(-1, 1), float_noise=True, random_state=0).fit(X, X[:, 0]).sample_y([[0.0]]).shape == (1,)


def test_snap_is_an_integer_and_a_refused_circulant_grid_points_to_a_coarser_grid(tmp_path, capsys):
    """Red team 21d: privgp.plan's snap="none" or [1] was a raw traceback and 1.5 became 1; a 1-D smooth kernel with a
    long lengthscale, whose circulant embedding fails at the default grid, was pointed to --snap 0, itself refused."""
    import numpy as np

    import privgp
    from privgp.errors import InvalidParameterError

    for bad in ("none", [1], 1.5, -1, True):
        with pytest.raises(InvalidParameterError, match="--snap must be an integer >= 0"):
            privgp.plan("posterior-sample", 100, privgp.Box((0.0,), (1.0,)), privgp.ResponseMap(0.0, 1.0), epsilon=5,
                        snap=bad)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 200)
    (tmp_path / "d.csv").write_text("x,v\n" + "".join(f"{a},{b}\n" for a, b in zip(x, np.sin(6 * x))))
    args = ["release", "--mechanism", "posterior-sample", "--data", str(tmp_path / "d.csv"), "--x-col", "x",
            "--response-col", "v", "--box", "0", "1", "--threshold", "0", "--clip", "1", "--kernel", "matern32",
            "--lengthscale", "2", "--allow-noisy", "--no-report", "--ledger", str(tmp_path / "l.sqlite")]
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "try a coarser grid (--grid)" in err and not (tmp_path / "l.sqlite").exists(), err
    assert main([*args, "--grid", "51", "--out", str(tmp_path / "r")]) == 0
