"""verify compares a released CSV byte for byte (red team 19: read as text, "\\r\\n" and "\\r" line endings were
turned into "\\n" first, so each line's ending carried a bit past --strict)."""
from __future__ import annotations

from privgp.cli.main import main
from tests.cli_scratch import rehash_and_verify


def test_a_csv_whose_line_endings_differ_is_not_privgps(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["release", "--epsilon", "5", "--seed", "1", "--ledger", str(tmp_path / "l.sqlite"),
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert rehash_and_verify(out, capsys, "--strict")[0] == 0
    lines = (out / "field.csv").read_bytes().split(b"\n")
    forged = b"\n".join(line + (b"\r" if i % 2 else b"") for i, line in enumerate(lines[:-1])) + b"\n"
    (out / "field.csv").write_bytes(forged)
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code != 0 and ("field.csv" in str(res.get("notes")) or res.get("field") == "field.csv"), res
