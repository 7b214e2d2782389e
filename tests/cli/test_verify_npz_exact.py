"""privgp verify reads a released .npz as exactly what privgp writes (red team 15): its coordinate names come from
the certificate, never from the file (F4: axis names holding every private record passed --strict), and its bytes
are numpy.savez's of its arrays, nothing outside them (F5: bytes after the zip's end record or in zip extra fields
carried the whole private CSV past --strict)."""
from __future__ import annotations

import io
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import verify_files
from privgp.cli.main import main
from tests.cli_scratch import rehash_and_verify

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("npz")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, (300, 2))
    y = np.sin(x[:, 0]) + 0.1 * rng.standard_normal(300)
    (tmp / "d.csv").write_text("east,north,z\n" + "".join(f"{a:.5f},{b:.5f},{c:.5f}\n" for (a, b), c in zip(x, y)))
    out = tmp / "out"
    assert main(["release", "--mechanism", "laplace-grid", "--cells", "4", "--data", str(tmp / "d.csv"), "--x-col",
                 "east", "--y-col", "north", "--response-col", "z", "--box", "0", "10", "0", "10", "--threshold", "0",
                 "--clip", "1", "--grid", "21", "--epsilon", "5", "--seed", "1", "--allow-noisy", "--out", str(out),
                 "--ledger", str(tmp / "l.sqlite"), "--json"]) == 0
    return out




def _copy(release: Path, tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    shutil.copytree(release, out)
    return out


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_a_genuine_release_verifies_strictly_with_no_note(release, tmp_path, capsys):
    code, res = rehash_and_verify(_copy(release, tmp_path, "genuine"), capsys, "--strict")
    assert code == 0 and res["verified"] is True, res
    assert not [n for n in res["notes"] if n.startswith(("field.npz", "field.csv"))], res["notes"]


def test_coordinate_names_come_from_the_certificate_not_the_file(release, tmp_path, capsys):
    secret = "_".join(f"{v:.3f}" for v in np.random.default_rng(2).uniform(0, 10, 300))   # "private records"
    # F4: both axis keys and the CSV header renamed consistently (the forger's replay)
    out = _copy(release, tmp_path, "names")
    arrays = _arrays(out / "field.npz")
    renamed = {("axis_east" + secret if k == "axis_east" else k): v for k, v in arrays.items()}
    np.savez(out / "field.npz", **renamed)
    head, body = (out / "field.csv").read_text().split("\n", 1)
    (out / "field.csv").write_text(head.replace("east", "east" + secret, 1) + "\n" + body)
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code == 1 and res["verified"] is False and res["field"] == "field.npz", res
    assert "east, north" in res["reason"] and secret[:60] not in res["reason"], res["reason"]
    # the axes in another order (their values swapped with them: the box is square), or the CSV header alone
    out = _copy(release, tmp_path, "order")
    keys = list(arrays)
    i, j = keys.index("axis_east"), keys.index("axis_north")
    keys[i], keys[j] = keys[j], keys[i]
    np.savez(out / "field.npz", **{k: arrays[k] for k in keys})
    code, res = rehash_and_verify(out, capsys)
    assert code == 1 and res["field"] == "field.npz", res
    out = _copy(release, tmp_path, "header")
    head, body = (out / "field.csv").read_text().split("\n", 1)
    (out / "field.csv").write_text(head.replace("east", "x" + secret, 1) + "\n" + body)
    code, res = rehash_and_verify(out, capsys)
    assert code == 1 and res["field"] == "field.csv", res


def _write_zip(path: Path, arrays: dict[str, np.ndarray], order=None, date=(1980, 1, 1, 0, 0, 0), extra=b"",
               comment=b"") -> None:
    """What numpy.savez writes, with a member date, an extra field or a member comment of one's choice."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for k in order or arrays:
            info = zipfile.ZipInfo(f"{k}.npy", date_time=date)
            info.extra, info.comment = extra, comment
            with zf.open(info, "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, arrays[k], allow_pickle=False)


def test_bytes_outside_the_arrays_fail(release, tmp_path, capsys):
    arrays = _arrays(release / "field.npz")
    payload = b"PRIVATE" + bytes(range(256)) * 40

    def forged(name, write):
        out = _copy(release, tmp_path, name)
        write(out / "field.npz")
        code, res = rehash_and_verify(out, capsys)
        assert code == 1 and res["verified"] is False and res["field"] == "field.npz", (name, res)
        return res["reason"]

    def appended(p):
        p.write_bytes(p.read_bytes() + payload)

    def extra_field(p):   # F5 (b): a private-use extra field on each member
        _write_zip(p, arrays, extra=struct.pack("<HH", 0xCAFE, 200) + payload[:200])

    def gap(p):   # bytes between the first member and the second, the offsets moved to match
        data = p.read_bytes()
        with zipfile.ZipFile(p) as zf:
            infos = zf.infolist()
        second = infos[1].header_offset
        shift = len(payload)
        body = data[:second] + payload + data[second:]
        out = bytearray(body)
        cd = body.find(b"PK\x01\x02")
        while cd != -1:
            off = struct.unpack_from("<I", out, cd + 42)[0]
            if off >= second and off != 0xFFFFFFFF:
                struct.pack_into("<I", out, cd + 42, off + shift)
            cd = body.find(b"PK\x01\x02", cd + 4)
        end = body.rfind(b"PK\x05\x06")
        struct.pack_into("<I", out, end + 16, struct.unpack_from("<I", out, end + 16)[0] + shift)
        p.write_bytes(bytes(out))

    def archive_comment(p):
        with zipfile.ZipFile(p, "a") as zf:
            zf.comment = payload[:100]

    def header_padding(p):   # the .npy header's padding of spaces used for other bytes
        data = bytearray(p.read_bytes())
        at = data.index(b"}", data.index(b"\x93NUMPY")) + 1
        data[at:at + 8] = b"PRIVATE!"
        p.write_bytes(bytes(data))

    assert "after" in forged("appended", appended)
    assert "extra field" in forged("extra", extra_field)
    forged("gap", gap)
    forged("comment", archive_comment)
    forged("padding", header_padding)


def test_genuine_files_of_another_writer_verify_exactly_or_in_part(release, tmp_path, capsys):
    arrays = _arrays(release / "field.npz")
    # every numpy privgp runs with dates each member 1980-01-01 00:00:00: another date is not privgp's file (red team
    # 16, G4: the dates are a channel), see tests/cli/test_verify_channels.py
    out = _copy(release, tmp_path, "dated")
    _write_zip(out / "field.npz", arrays, date=(2024, 5, 17, 12, 30, 8))
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code == 1 and res["verified"] is False and res["field"] == "field.npz", res
    # members in another order, the axes still in theirs (nothing outside the arrays): checked in part, --strict fails
    out = _copy(release, tmp_path, "reordered")
    keys = list(arrays)
    _write_zip(out / "field.npz", arrays, order=[keys[-1], *keys[:-1]])
    code, res = rehash_and_verify(out, capsys)
    assert code == 0 and res["verified"] is True, res
    assert any(n.startswith("field.npz: checked in part") for n in res["notes"]), res["notes"]
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code == 1, res


def test_the_committed_release_is_byte_for_byte_what_the_writer_makes():
    """docs/runs/release-default/field.npz (written by an earlier privgp) is savez's bytes of its arrays."""
    path = ROOT / "docs" / "runs" / "release-default" / "field.npz"
    arrays = _arrays(path)
    assert verify_files._npz_bytes(path, "field.npz", arrays, list(arrays)) is None
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    assert buf.getvalue() == path.read_bytes()
