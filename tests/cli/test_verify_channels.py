"""Red team 16: channels for private data through files that passed `privgp verify --strict`.

G4: the zip member dates of a released .npz (verify took them from the file under test; 41 bytes per file).
G6: certificate.json's `dataset` block (extra keys, free text in the projection, a fingerprint of any length), the
certificate's words (assumptions, warnings, lemmas of any length, or removed) and the other free text a certificate
holds (versions, the ledger block's ids, notes, randomness, an optimize run's status)."""
from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import verify_files
from privgp.cli.main import main
from tests.cli_scratch import rehash_and_verify, run_quiet

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = "".join(f"{a:.6f},{b:.6f},{c:.4f}\n" for a, b, c in np.random.default_rng(7).uniform(0, 10, (1500, 3)))


def _quiet(argv) -> None:
    code, err = run_quiet(*argv)
    assert code == 0, err


def _csv(path: Path, lonlat: bool = False) -> Path:
    rng = np.random.default_rng(0)
    if lonlat:
        x = np.column_stack([rng.uniform(8.4, 8.6, 400), rng.uniform(47.3, 47.45, 400)])
        z = 40 + 10 * np.exp(-((x[:, 0] - 8.5) ** 2 + (x[:, 1] - 47.37) ** 2) / 0.002) + rng.normal(0, 3, 400)
        head = "lon,lat,no2"
    else:
        x = rng.uniform(0, 10, (300, 2))
        z = np.sin(x[:, 0]) + 0.1 * rng.standard_normal(300)
        head = "east,north,z"
    path.write_text(head + "\n" + "".join(f"{a:.6f},{b:.6f},{c:.5f}\n" for (a, b), c in zip(x, z)))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("channels")
    out = {"release": tmp / "release", "optimize": tmp / "optimize"}
    _quiet(["release", "--mechanism", "laplace-grid", "--cells", "4", "--data", _csv(tmp / "d.csv"), "--x-col", "east",
            "--y-col", "north", "--response-col", "z", "--box", "0", "10", "0", "10", "--threshold", "0", "--clip", "1",
            "--grid", "21", "--epsilon", "5", "--seed", "1", "--allow-noisy", "--out", out["release"], "--ledger",
            tmp / "l.sqlite", "--json"])
    _quiet(["optimize", "--function", "forrester", "--rounds", "6", "--grid", "41", "--seed", "1", "--objective-seed",
            "1", "--out", out["optimize"], "--ledger", tmp / "o.sqlite", "--json"])
    try:
        import pyproj  # noqa: F401
        import rasterio  # noqa: F401
    except ImportError:
        return out
    out["crs"] = tmp / "crs"
    _quiet(["release", "--mechanism", "laplace-grid", "--data", _csv(tmp / "ll.csv", lonlat=True), "--x-col", "lon",
            "--y-col", "lat", "--response-col", "no2", "--box", "8.4", "8.6", "47.3", "47.45", "--crs", "EPSG:4326",
            "--threshold", "45", "--clip", "20", "--epsilon", "3", "--seed", "1", "--allow-noisy", "--out", out["crs"],
            "--ledger", tmp / "c.sqlite", "--json"])
    return out


def _copy(src: Path, tmp_path: Path, name: str, edit=None) -> Path:
    out = tmp_path / name
    shutil.copytree(src, out)
    if edit is not None:
        doc = json.loads((out / "certificate.json").read_text())
        edit(doc)
        (out / "certificate.json").write_text(json.dumps(doc, indent=2))
    return out


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


# -- G4: zip member dates and flags of a released .npz ---------------------------------------------------------------

def test_numpy_savez_dates_every_member_1980():
    """The claim G4's fix rests on: numpy.savez (as installed) dates each member 1980-01-01 00:00:00 and sets the
    UTF-8 flag exactly for names that are not ASCII; the committed release's field.npz holds the same dates."""
    buf = io.BytesIO()
    np.savez(buf, a=np.zeros(3), **{"axis_\u00e4": np.ones(2)})
    with zipfile.ZipFile(buf) as zf:
        infos = zf.infolist()
    assert {i.date_time for i in infos} == {verify_files.ZIP_EPOCH}
    assert [i.flag_bits for i in infos] == [0, 0x800]
    for path in sorted((ROOT / "docs" / "runs").glob("*/*.npz")):
        with zipfile.ZipFile(path) as zf:
            assert {i.date_time for i in zf.infolist()} == {verify_files.ZIP_EPOCH}, path


def _rezip(path: Path, arrays: dict[str, np.ndarray], dates, flags=None) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for i, (k, a) in enumerate(arrays.items()):
            info = zipfile.ZipInfo(f"{k}.npy", date_time=dates[i])
            if flags is not None:
                info.flag_bits = flags[i]
            with zf.open(info, "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, a, allow_pickle=False)
    if flags is not None:   # zipfile recomputes the UTF-8 flag on writing: set it in the headers by hand
        data = bytearray(path.read_bytes())
        for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            pos = data.find(sig)
            while pos != -1:
                data[pos + at:pos + at + 2] = (flags[0]).to_bytes(2, "little")
                pos = data.find(sig, pos + 4)
        path.write_bytes(bytes(data))


def test_member_dates_are_no_channel(runs, tmp_path, capsys):
    arrays = _arrays(runs["release"] / "field.npz")
    secret = [(1980 + k, 1 + k % 12, 1 + k, k % 24, k, 2 * k) for k in range(len(arrays))]   # 30 bits a member
    out = _copy(runs["release"], tmp_path, "dated")
    _rezip(out / "field.npz", arrays, secret)
    code, res = rehash_and_verify(out, capsys)
    assert code == 1 and res["verified"] is False and res["field"] == "field.npz", res
    assert "1980-01-01" in res["reason"], res["reason"]
    # one member dated otherwise, or every member one other date: the same
    for name, dates in (("one", [verify_files.ZIP_EPOCH] * (len(arrays) - 1) + [(2020, 2, 2, 2, 2, 2)]),
                        ("shared", [(2024, 5, 17, 12, 30, 8)] * len(arrays))):
        out = _copy(runs["release"], tmp_path, name)
        _rezip(out / "field.npz", arrays, dates)
        code, res = rehash_and_verify(out, capsys)
        assert code == 1 and res["field"] == "field.npz", (name, res)
    # numpy's dates: byte for byte savez, verified with no note
    out = _copy(runs["release"], tmp_path, "epoch")
    _rezip(out / "field.npz", arrays, [verify_files.ZIP_EPOCH] * len(arrays))
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code == 0 and not [n for n in res["notes"] if n.startswith("field.npz")], res


def test_the_utf8_flag_is_no_channel(runs, tmp_path, capsys):
    arrays = _arrays(runs["release"] / "field.npz")
    out = _copy(runs["release"], tmp_path, "flag")
    _rezip(out / "field.npz", arrays, [verify_files.ZIP_EPOCH] * len(arrays), flags=[0x800] * len(arrays))
    code, res = rehash_and_verify(out, capsys)
    assert code == 1 and res["field"] == "field.npz" and "flags" in res["reason"], res


# -- G6: the dataset block -------------------------------------------------------------------------------------------

def _verify(folder: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", str(folder / "certificate.json"), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_genuine_certificates_verify_strictly_with_no_note(runs, capsys):
    for name, folder in runs.items():
        code, res = _verify(folder, capsys, "--strict")
        assert code == 0 and res["verified"] and res["words_differ"] == [], (name, res)
        assert not [n for n in res["notes"] if n.startswith(("certificate words", "notes", "randomness", "dataset"))]


@pytest.mark.parametrize("edit,field", [
    (lambda d: d["dataset"].__setitem__("extra", PRIVATE), "dataset.extra"),
    (lambda d: d["dataset"].__setitem__("fingerprint", PRIVATE), "dataset.fingerprint"),
    (lambda d: d["dataset"].__setitem__("fingerprint", "ab" * 32), "dataset.fingerprint"),   # not the ledger's
    (lambda d: d["dataset"].pop("source"), "dataset.source"),
    (lambda d: d["dataset"].__setitem__("n", 300.0), "dataset.n"),
    (lambda d: d["dataset"].__setitem__("projection", {"input_crs": "EPSG:4326"}), "dataset.projection.metric_crs"),
    (lambda d: d["ledger"].__setitem__("entry_id", PRIVATE[:40]), "ledger.entry_id"),
    (lambda d: d["ledger"].__setitem__("memo", "x"), "ledger.memo"),
    (lambda d: d.__setitem__("privgp_version", "0.1.0+" + PRIVATE[:200]), "privgp_version"),
    (lambda d: d["certificate"].__setitem__("privgp_version", PRIVATE[:100]), "certificate.privgp_version"),
    # (one line: a newline alone is refused first, as text that could rewrite the terminal)
    (lambda d: d["certificate"]["assumptions"].append(PRIVATE[:30000].replace("\n", " ")), "certificate.assumptions"),
    (lambda d: d["certificate"]["assumptions"].append(PRIVATE[:300]), "certificate.assumptions.3"),
    (lambda d: d["certificate"].__setitem__("warnings", PRIVATE.splitlines()[:100]), "certificate.warnings"),
])
def test_free_text_in_a_release_certificate_fails(runs, tmp_path, capsys, edit, field):
    out = _copy(runs["release"], tmp_path, "t", edit)
    code, res = _verify(out, capsys)
    assert code == 1 and res["verified"] is False and res["field"] == field, res


def test_the_projection_is_what_privgp_records(runs, tmp_path, capsys):
    if "crs" not in runs:
        pytest.skip("privgp's GIS extra (pyproj, rasterio) is not installed")

    def proj(d):
        return d["dataset"]["projection"]

    for edit, field in ((lambda d: proj(d).__setitem__("appendix", PRIVATE), "dataset.projection.appendix"),
                        (lambda d: proj(d).__setitem__("rule", proj(d)["rule"] + " " + PRIVATE[:20000]),
                         "dataset.projection.rule"),
                        (lambda d: proj(d).__setitem__("public", "x"), "dataset.projection.public"),
                        (lambda d: proj(d).__setitem__("metric_crs", proj(d)["metric_crs"] + " +title=" + PRIVATE[:50]),
                         "dataset.projection.metric_crs"),
                        (lambda d: proj(d).__setitem__("metric_crs", proj(d)["metric_crs"].replace(
                            "+lat_0=47.375", "+lat_0=47.3750")), "dataset.projection.metric_crs"),
                        (lambda d: proj(d).__setitem__("input_crs", PRIVATE[:2000]), "dataset.projection.input_crs"),
                        (lambda d: proj(d).pop("public"), "dataset.projection.public")):
        out = _copy(runs["crs"], tmp_path, f"p{len(list(tmp_path.iterdir()))}", edit)
        code, res = _verify(out, capsys)
        assert code == 1 and res["verified"] is False and res["field"] == field, (field, res)


# -- G6: the certificate's words and the other fixed words -----------------------------------------------------------

@pytest.mark.parametrize("edit,note", [
    (lambda d: d["certificate"].__setitem__("assumptions", []), "certificate words: the assumptions"),
    (lambda d: d["certificate"].__setitem__("assumptions", ["none: this release is safe for any data"]),
     "certificate words: the assumptions"),
    (lambda d: d["certificate"].__setitem__("lemmas", []), "certificate words: the lemmas"),
    (lambda d: d["notes"].__setitem__(0, "Nothing to add."), "notes:"),
    (lambda d: d["dataset"].__setitem__("source", "the 2024 patient register"), "dataset.source:"),
])
def test_other_words_in_a_release_certificate_fail_strict(runs, tmp_path, capsys, edit, note):
    out = _copy(runs["release"], tmp_path, "w", edit)
    code, res = _verify(out, capsys)
    assert code == 0 and res["verified"], res
    assert any(n.startswith(note) for n in res["notes"]), res["notes"]
    code, res = _verify(out, capsys, "--strict")
    assert code == 1 and res["strict_failed"], res


def test_other_randomness_words_fail_strict(runs, tmp_path, capsys):
    """The report repeats the randomness block (its page then differs from privgp's); the certificate's own check
    says so too."""
    from privgp.cli.verify_files import statement_notes

    doc = json.loads((runs["release"] / "certificate.json").read_text())
    assert statement_notes(doc, "release", None)[1] == []
    doc["randomness"] = {"source": "dice"}
    assert [n for n in statement_notes(doc, "release", None)[1] if n.startswith("randomness:")]
    out = _copy(runs["release"], tmp_path, "r", lambda d: d.__setitem__("randomness", {"source": "dice"}))
    assert _verify(out, capsys, "--strict")[0] == 1


def test_an_optimize_certificate_and_its_words(runs, tmp_path, capsys):
    folder = runs["optimize"]
    for edit, field in ((lambda d: d.__setitem__("status", "completed " + PRIVATE[:500]), "status"),
                        (lambda d: d.__setitem__("kind", PRIVATE[:500]), "kind"),
                        (lambda d: d["ledger"].__setitem__("charged", PRIVATE[:500]), "ledger.charged"),
                        (lambda d: d["certificate"]["assumptions"].extend(PRIVATE.splitlines()[:200]),
                         "certificate.assumptions")):
        code, res = _verify(_copy(folder, tmp_path, f"o{len(list(tmp_path.iterdir()))}", edit), capsys)
        assert code == 1 and res["field"] == field, (field, res)
    for edit, note in ((lambda d: d["certificate"].__setitem__("warnings", ["none"]), "certificate words"),
                       (lambda d: d["notes"].pop(), "notes:")):
        out = _copy(folder, tmp_path, f"o{len(list(tmp_path.iterdir()))}", edit)
        code, res = _verify(out, capsys)
        assert code == 0 and any(n.startswith(note) for n in res["notes"]), res
        assert _verify(out, capsys, "--strict")[0] == 1


def test_committed_certificates_still_verify_at_least_in_part(capsys):
    """docs/runs and the older-format fixtures (privgp 0.1.0): verified; an earlier privgp's wording is a note."""
    paths = [*sorted((ROOT / "docs" / "runs").glob("*/certificate.json")),
             *sorted((ROOT / "tests" / "data" / "older_certificates").glob("*.json"))]
    assert len(paths) >= 6   # readme-functional's went on 2026-11-29: functional releases are refused
    for path in paths:
        capsys.readouterr()
        code = main(["verify", str(path), "--json"])
        res = json.loads(capsys.readouterr().out)
        assert code == 0 and res["verified"], (path, res)
        words = [n for n in res["notes"] if n.startswith(("certificate words", "notes:", "randomness:", "dataset."))]
        assert bool(words) == bool(res["words_differ"]), (path, res["notes"])


def test_summary_json_words_are_privgps(runs, tmp_path, capsys):
    """summary.json's words (the output folder, the objective) are names privgp writes, not free text: other words
    are a note (--strict fails), and more than 1000 characters fail."""
    folder = runs["optimize"]

    def edited(name: str, key: str, value: str) -> Path:
        out = _copy(folder, tmp_path, name)
        s = json.loads((out / "summary.json").read_text())
        s[key] = value
        (out / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
        return out

    for name, key, value in (("out", "out", "/home/me/" + PRIVATE[:80]),
                             ("obj", "objective", "simulated forrester + N(0, 0.1^2) noise; " + PRIVATE[:80])):
        code, res = rehash_and_verify(edited(name, key, value), capsys)
        assert code == 0 and any(n.startswith(f"summary.json.{key}") for n in res["notes"]), res
        assert rehash_and_verify(tmp_path / name, capsys, "--strict")[0] == 1
    code, res = rehash_and_verify(edited("long", "objective", "simulated forrester " + PRIVATE[:5000]), capsys)
    assert code == 1 and res["field"] == "summary.json.objective", res
