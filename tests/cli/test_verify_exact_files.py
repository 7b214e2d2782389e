"""Red team 17: `privgp verify --strict` passes only files that are exactly what privgp writes.

H3: excursion.png (and optimize's queries.png) with the same image data cut into other IDAT chunks (empty ones
included): the same pixels, other bytes.
H4: certificate.json and summary.json with white space after the closing brace (or other spellings of the same
values).
H5: optimize's history.csv with digits below a double's precision.
H7: the certificate's ledger numbers that do not hold together, and a forecast equal only to 1e-9."""
from __future__ import annotations

import hashlib
import json
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import verify_files
from privgp.cli.main import main
from tests.cli_scratch import run_quiet

ROOT = Path(__file__).resolve().parents[2]


def _quiet(argv) -> None:
    code, err = run_quiet(*argv)
    assert code == 0, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("exact")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, (300, 2))
    z = np.sin(x[:, 0]) + 0.1 * rng.standard_normal(300)
    data = tmp / "d.csv"
    data.write_text("east,north,z\n" + "".join(f"{a:.6f},{b:.6f},{c:.5f}\n" for (a, b), c in zip(x, z)))
    out = {"release": tmp / "release", "optimize": tmp / "optimize"}
    _quiet(["release", "--mechanism", "laplace-grid", "--cells", "4", "--data", data, "--x-col", "east",
            "--y-col", "north", "--response-col", "z", "--box", "0", "10", "0", "10", "--threshold", "0", "--clip", "1",
            "--grid", "21", "--epsilon", "5", "--seed", "1", "--allow-noisy", "--out", out["release"], "--ledger",
            tmp / "l.sqlite", "--json"])
    _quiet(["optimize", "--function", "forrester", "--rounds", "6", "--grid", "41", "--seed", "1", "--objective-seed",
            "1", "--out", out["optimize"], "--ledger", tmp / "o.sqlite", "--json"])
    return out


def _copy(src: Path, tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    shutil.copytree(src, out)
    return out


def _verify(folder: Path, capsys, *extra: str, edit=None, tail: str = "") -> tuple[int, dict]:
    """``privgp verify --json`` of ``folder`` after its certificate is edited (``edit``), its sha256 set to the files'
    own and written as privgp writes it (plus ``tail``): what a forger does."""
    doc = json.loads((folder / "certificate.json").read_text())
    if edit is not None:
        edit(doc)
    for k in doc["sha256"]:
        doc["sha256"][k] = hashlib.sha256((folder / k).read_bytes()).hexdigest()
    (folder / "certificate.json").write_text(json.dumps(doc, indent=2) + "\n" + tail)
    capsys.readouterr()
    code = main(["verify", str(folder / "certificate.json"), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _notes(res: dict, name: str) -> list[str]:
    return [n for n in res["notes"] if n.startswith(f"{name}:")]


def test_genuine_runs_pass_strict(runs, tmp_path, capsys):
    for kind in ("release", "optimize"):
        code, res = _verify(_copy(runs[kind], tmp_path, kind), capsys, "--strict")
        assert code == 0 and res["notes"] == [], res


# -- H3: the PNG's bytes --------------------------------------------------------------------------------------------

def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _resplit(png: bytes, sizes: list[int]) -> bytes:
    """``png`` with its image data (the same compressed bytes) cut into IDAT chunks of ``sizes`` (repeated), empty
    ones included."""
    out, pos, idat, at = [png[:8]], 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            idat += png[pos + 8:pos + 8 + length]
            at = len(out) if at is None else at
        else:
            out.append(png[pos:pos + 12 + length])
        pos += 12 + length
    assert at is not None
    parts, i, k = [], 0, 0
    while i < len(idat):
        n = sizes[k % len(sizes)]
        parts.append(_chunk(b"IDAT", idat[i:i + n]))
        i, k = i + n, k + 1
    return b"".join(out[:at] + parts + out[at:])


@pytest.mark.parametrize("kind,name", [("release", "excursion.png"), ("optimize", "queries.png")])
def test_a_png_cut_into_other_chunks_is_checked_in_part(runs, tmp_path, capsys, kind, name):
    out = _copy(runs[kind], tmp_path, kind)
    genuine = (out / name).read_bytes()
    forged = _resplit(genuine, [0, 1, 0, 0, 1, 997])
    assert forged != genuine
    (out / name).write_bytes(forged)
    if (out / "report.html").is_file():   # the report embeds the picture's bytes
        import base64

        html = (out / "report.html").read_text(encoding="utf-8")
        (out / "report.html").write_text(html.replace(base64.b64encode(genuine).decode(),
                                                      base64.b64encode(forged).decode()), encoding="utf-8")
    code, res = _verify(out, capsys)
    assert code == 0 and res["verified"] and _notes(res, name), res   # the same picture: verified, in part
    assert "checked in part" in _notes(res, name)[0]
    code, res = _verify(out, capsys, "--strict")
    assert code == 1 and res["strict_failed"], res


# -- H4: the JSON files' text ---------------------------------------------------------------------------------------

TAIL = " \t\n\r" * 50


def test_white_space_after_the_certificate_is_checked_in_part(runs, tmp_path, capsys):
    for kind in ("release", "optimize"):
        code, res = _verify(_copy(runs[kind], tmp_path, kind), capsys, tail=TAIL)
        assert code == 0 and _notes(res, "certificate.json"), res
        code, res = _verify(_copy(runs[kind], tmp_path, f"{kind}-strict"), capsys, "--strict", tail=TAIL)
        assert code == 1 and res["strict_failed"], res


def test_an_account_certificate_is_held_to_its_text(tmp_path, capsys):
    path = tmp_path / "acc.json"
    capsys.readouterr()
    assert main(["account", "--n", "20", "--kernel", "exponential", "--lengthscale", "0.3", "--r", "1",
                 "--sigma", "1", "--delta", "1e-5", "--json"]) == 0
    path.write_text(capsys.readouterr().out)
    assert main(["verify", str(path), "--strict"]) == 0
    capsys.readouterr()
    path.write_text(json.dumps(json.loads(path.read_text())) + "\n")   # compact: not privgp's text
    assert main(["verify", str(path), "--strict"]) == 1
    assert "acc.json: checked in part" in capsys.readouterr().out


@pytest.mark.parametrize("spelling", [lambda t: t + TAIL, lambda t: t.replace("\n  ", "\n   "),
                                      lambda t: t.replace('"status"', '"\\u0073tatus"'),
                                      lambda t: t.replace(": 6,", ": 6.0000000000000000000001234,", 1)])
def test_another_spelling_of_summary_json_is_checked_in_part(runs, tmp_path, capsys, spelling):
    out = _copy(runs["optimize"], tmp_path, "opt")
    text = (out / "summary.json").read_text()
    forged = spelling(text)
    assert forged != text and json.loads(forged) == json.loads(text)
    (out / "summary.json").write_text(forged)
    code, res = _verify(out, capsys)
    assert code == 0 and _notes(res, "summary.json"), res
    assert _notes(res, "certificate.json") == [], res


def test_the_committed_json_files_are_privgps_text():
    """Every certificate and summary in docs/runs is exactly what privgp writes of it (so they keep verifying)."""
    paths = sorted((ROOT / "docs" / "runs").glob("*/certificate.json")) + \
        sorted((ROOT / "docs" / "runs").glob("*/summary.json"))
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert verify_files.json_text_note(path.name, text, json.loads(text)) is None, path


# -- H5: history.csv's text -----------------------------------------------------------------------------------------

def test_history_csv_is_privgps_text(runs, tmp_path, capsys):
    out = _copy(runs["optimize"], tmp_path, "opt")
    text = (out / "history.csv").read_text()
    head, *rows = text.splitlines(keepends=True)
    cells = rows[1].split(",")
    assert "." in cells[2]
    cells[2] = cells[2] + "0" * 20 + "123456789"   # r: the same double
    forged = head + rows[0] + ",".join(cells) + "".join(rows[2:])
    (out / "history.csv").write_text(forged)
    code, res = _verify(out, capsys)
    assert code == 0 and _notes(res, "history.csv"), res
    code, res = _verify(out, capsys, "--strict")
    assert code == 1 and res["strict_failed"], res
    for other in (text.replace("\n", "\r\n"), text + "\n"):   # other line ends, a blank line
        (out / "history.csv").write_bytes(other.encode())
        code, res = _verify(out, capsys)
        assert code == 0 and _notes(res, "history.csv"), res


# -- H7: the ledger block and the forecast --------------------------------------------------------------------------

def test_the_ledger_numbers_hold_together(runs, tmp_path, capsys):
    for kind in ("release", "optimize"):
        for key, value, field in (("remaining_epsilon", 123456.789, "remaining_epsilon"),
                                  ("remaining_epsilon", 1.0, "remaining_epsilon"),
                                  ("spent_epsilon_before", 1e6, "spent_epsilon_after"),
                                  ("budget_epsilon", -1.0, "budget_epsilon"), ("releases_after", 0, "releases_after")):
            def edit(doc, key=key, value=value):
                if key in doc["ledger"]:
                    doc["ledger"][key] = value
            if key not in json.loads((runs[kind] / "certificate.json").read_text())["ledger"]:
                continue
            code, res = _verify(_copy(runs[kind], tmp_path, f"{kind}-{key}-{value}"), capsys, edit=edit)
            assert code == 1 and res["field"] == f"ledger.{field}", (kind, key, res)


def test_a_forecast_equal_only_to_1e_9_is_checked_in_part(runs, tmp_path, capsys):
    def edit(doc):
        fc = doc["forecast"]
        key = next(k for k, v in fc.items() if isinstance(v, float) and v != 0)
        fc[key] = fc[key] * (1 + 1e-12)

    out = _copy(runs["release"], tmp_path, "fc")
    code, res = _verify(out, capsys, edit=edit)
    assert code == 0 and any(n.startswith("forecast: checked in part") for n in res["notes"]), res
