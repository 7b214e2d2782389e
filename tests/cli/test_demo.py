"""``privgp demo``: writes a PNG of exact posterior paths and says where."""
import json

from privgp.cli.main import main


def test_demo_writes_a_png_and_prints_its_path(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--seed", "1"]) == 0
    text = capsys.readouterr().out
    png = out / "demo_posterior_paths.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in text and "seed 1" in text


def test_demo_json(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--seed", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["seed"] == 2 and summary["figure"].endswith("demo_posterior_paths.png")
    assert 0 < summary["epsilon"] < float("inf") and summary["delta"] == 1e-3
