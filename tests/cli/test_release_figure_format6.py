"""Picture format 6 (walk-through 21): the DP sparse GP's released sd is a model's predictive sd, not the privacy
noise's alone, and its picture says so; every other picture is drawn exactly as in format 5."""
from __future__ import annotations

import numpy as np
import pytest

from privgp.cli import release_figure
from privgp.cli.release_figure import PREDICTIVE_HATCH_LABEL, draw
from privgp.errors import InvalidParameterError
from privgp.mechanisms.interface import ReleasedField

from .picture_cases import cases, pixels_sha256

PREDICTIVE = ("predictive", "predictive-oned")


def _legend_and_caption(monkeypatch, field, ctx, fmt):
    kept = []
    monkeypatch.setattr(release_figure._Figures, "close", staticmethod(kept.append))
    pic = draw(field, ctx, fmt)
    labels = [t.get_text() for ax in kept[0].axes for leg in [ax.get_legend(), *kept[0].legends] if leg
              for t in leg.get_texts()]
    return labels, pic.caption


def test_format_6_draws_every_privacy_noise_case_as_format_5():
    for name, (field, ctx) in cases().items():
        if name not in PREDICTIVE:
            assert pixels_sha256(draw(field, ctx, 6).png) == pixels_sha256(draw(field, ctx, 5).png), name


@pytest.mark.parametrize("name", PREDICTIVE)
def test_a_predictive_sd_is_named_as_such(monkeypatch, name):
    field, ctx = cases()[name]
    labels, caption = _legend_and_caption(monkeypatch, field, ctx, 6)
    old_labels, old_caption = _legend_and_caption(monkeypatch, field, ctx, 5)
    assert "privacy noise's only" not in caption and "its privacy noise" not in caption
    assert "predictive" in caption and "model's" in caption
    assert "privacy noise's only" in old_caption or "its privacy noise" in old_caption   # what format 5 said
    if field.dim == 2:
        assert PREDICTIVE_HATCH_LABEL in labels and not any("sd of the privacy noise" in t for t in labels)
        assert any("sd of the privacy noise" in t for t in old_labels)
        assert pixels_sha256(draw(field, ctx, 6).png) != pixels_sha256(draw(field, ctx, 5).png)


def test_sd_covers_is_checked():
    with pytest.raises(InvalidParameterError, match="sd_covers"):
        ReleasedField(axes=(np.linspace(0, 1, 3),), values=np.zeros(3), noun="map", plural="maps",
                      sd=np.ones(3), sd_covers="model")


def test_a_sparse_gp_release_verifies_strictly_and_one_drawn_in_format_5_with_a_note(tmp_path, capsys, monkeypatch):
    """A sparse-GP release made now verifies with --strict; one whose picture is format 5 (as privgp drew it until
    format 6, made here by drawing in format 5) is VERIFIED, redrawn in format 5, with the note saying so."""
    import json

    from privgp.cli.main import main

    monkeypatch.setenv("PRIVGP_PICTURE_PROCESS", "0")

    def release(out):
        assert main(["release", "--mechanism", "sparse-gp", "--allow-noisy", "--seed", "1", "--ledger",
                     str(tmp_path / "l.sqlite"), "--budget-epsilon", "100", "--out", str(out), "--json"]) == 0
        capsys.readouterr()

    def verify(out, *flags):
        code = main(["verify", str(out), "--json", *flags])
        return code, json.loads(capsys.readouterr().out)

    release(tmp_path / "now")
    code, res = verify(tmp_path / "now", "--strict")
    assert code == 0 and res["verified"] and res["notes"] == [], res
    real = release_figure.draw
    monkeypatch.setattr(release_figure, "draw", lambda field, ctx, fmt=None: real(field, ctx, 5))
    release(tmp_path / "format5")
    monkeypatch.setattr(release_figure, "draw", real)
    code, res = verify(tmp_path / "format5")
    assert code == 0 and res["verified"], res
    assert res["notes"] == ["prediction.png: checked in part: drawn in privgp's earlier picture format 5, not the "
                            "installed 6 (redrawn in format 5, the same)"], res
    assert verify(tmp_path / "format5", "--strict")[0] == 1
