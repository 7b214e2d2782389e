"""The release's picture, format 3 (walk-through 15, findings 7 and 8):

* the excursion boundary is drawn wherever the released map crosses the threshold, also where the map is unreliable
  (dashed there; formats 1 and 2 drew none there, so no boundary showed in any real picture), and the unreliable
  areas are veiled and hatched over a colour map with no grey near the threshold;
* every text and the legend lie inside the figure, also with a ``--crs`` release's long axis labels and domain;
* formats 1 and 2 draw exactly as privgp drew them (the pixels of tests/data/pictures/format_reference.json, drawn
  by the committed release_figure.py of its COMMIT), so ``privgp verify`` still recognises an earlier release's
  picture; a release made now verifies with ``--strict``, one made in format 2 verifies with a note.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import release_figure
from privgp.cli.main import main
from privgp.cli.release_figure import PICTURE_FORMAT, PICTURE_FORMATS, _draw_2d, _Figures, draw

from .picture_cases import cases, pixels_sha256

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "data" / "pictures" / "format_reference.json"


def test_the_format_is_6_and_the_earlier_ones_are_kept():
    assert PICTURE_FORMAT == 6 and PICTURE_FORMATS == (1, 2, 3, 4, 5, 6)


def _lines(ax):
    """The level-0 contour sets that draw a line on the map, dashed or solid: their vertices."""
    from matplotlib.contour import ContourSet

    out = {"dashed": [], "solid": []}
    for cs in ax.collections:
        if isinstance(cs, ContourSet) and not cs.filled and list(cs.levels) == [0.0]:
            verts = [p.vertices for p in cs.get_paths() if len(p.vertices)]
            dashed = any(ls[1] is not None for ls in cs.get_linestyle())
            if verts:   # a masked field's contour may draw nothing
                out["dashed" if dashed else "solid"].append(np.concatenate(verts))
    return out


def _front_x(field, y):
    """Where the case's front crosses the threshold on the row nearest y (linear interpolation)."""
    xs, ys = field.axes
    j = int(np.argmin(np.abs(ys - y)))
    col = field.values[0][:, j]
    i = int(np.flatnonzero(np.diff(np.sign(col)))[0])
    return xs[i] - col[i] * (xs[i + 1] - xs[i]) / (col[i + 1] - col[i]), ys[j]


def test_the_boundary_is_drawn_where_the_map_is_unreliable():
    """Everywhere near the front the released map is within 2 sd of the threshold: format 3 draws the boundary
    there (dashed, through the hatching, on the front itself); format 2 drew none."""
    field, ctx = cases()["unreliable"]
    sd2 = 2.0 * field.sd
    xs, ys = field.axes
    fig, caption = _draw_2d(_Figures, field, ctx, 3)
    ax = fig.axes[0]
    lines = _lines(ax)
    assert lines["solid"] == [] and len(lines["dashed"]) == 1, lines
    verts = lines["dashed"][0]
    assert len(verts) > 20
    # the line runs along the front: at every drawn point the map is ~0 (the threshold) and unreliable
    for y in (ys[5], ys[len(ys) // 2], ys[-5]):
        x0, y0 = _front_x(field, y)
        near = verts[np.abs(verts[:, 1] - y0) < 0.6 * (ys[1] - ys[0])]
        assert len(near) and np.min(np.abs(near[:, 0] - x0)) < xs[1] - xs[0], (y, near, x0)
        i = int(np.argmin(np.abs(xs - x0)))
        assert abs(field.values[0][i, int(np.argmin(np.abs(ys - y0)))]) <= sd2[i, 0]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("excursion boundary" in t and "dashed" in t for t in labels), labels
    assert "The line is dashed where it runs through the hatching" in caption
    assert "no boundary is drawn" not in caption
    # format 2: no boundary at all (what the walk-through saw)
    old, old_caption = _draw_2d(_Figures, field, ctx, 2)
    assert _lines(old.axes[0]) == {"dashed": [], "solid": []}
    assert "no boundary is drawn" in old_caption


def test_the_boundary_is_solid_where_reliable_and_dashed_where_not():
    field, ctx = cases()["partial"]
    fig, caption = _draw_2d(_Figures, field, ctx, 3)
    lines = _lines(fig.axes[0])
    assert len(lines["solid"]) == 1 and len(lines["dashed"]) == 1
    solid, dashed = lines["solid"][0], lines["dashed"][0]
    assert solid[:, 1].max() < 546.0 < dashed[:, 1].max()   # the solid line only in the reliable south
    assert dashed[:, 1].min() < 510.0                          # the dashed one: the whole boundary, under it
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "excursion boundary: sale price = $50k (the threshold)" in labels
    assert "excursion boundary, dashed where unreliable" in labels
    assert "The line is solid where the map is reliable and dashed where it runs through the hatching" in caption


def test_a_map_without_released_sd_gets_a_solid_boundary_only():
    field, ctx = cases()["plain"]
    fig, caption = _draw_2d(_Figures, field, ctx, 3)
    lines = _lines(fig.axes[0])
    assert len(lines["solid"]) == 1 and lines["dashed"] == []
    assert "dashed" not in caption and "hatching" not in caption.lower()


def test_unreliable_areas_are_veiled_and_hatched_and_near_threshold_colours_are_not_grey():
    """A reliable place just above the threshold and an unreliable one look different whatever the colour: the
    colour map's middle is saturated (not grey), and the unreliable area is veiled white and hatched dark."""
    from matplotlib import colors

    cmap = _Figures.get_cmap("viridis")
    for t in (0.45, 0.5, 0.55):   # near the threshold (the colour scale's centre)
        h, s, v = colors.rgb_to_hsv(cmap(t)[:3])
        assert s > 0.4, (t, s)
    field, ctx = cases()["unreliable"]
    fig, _ = _draw_2d(_Figures, field, ctx, 3)
    hatched = [c for c in fig.axes[0].collections if any(getattr(c, "hatches", None) or [c.get_hatch()])]
    assert len(hatched) == 1 and colors.to_hex(hatched[0].get_hatchcolor()[0]) == colors.to_hex(release_figure.HATCH_COLOR_3)
    swatch = [h for h in fig.legends[0].legend_handles if getattr(h, "get_hatch", lambda: None)()]
    assert len(swatch) == 1


def _outside(fig, tolerance=0.5):
    """What leaves the figure: any axes with its drawn ticks, labels and title (the map, the colour bar), one of
    their labels or titles, or the legend."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    out = []
    axes = [a for ax in fig.axes for a in (ax, *ax.child_axes)]
    named = [(a, a.get_tightbbox(renderer)) for a in axes] + [(lg, lg.get_window_extent(renderer))
                                                              for lg in fig.legends]
    named += [(t, t.get_window_extent(renderer)) for a in axes for t in (a.title, a.xaxis.label, a.yaxis.label)
              if t.get_text()]
    for a, b in named:
        if b.x0 < -tolerance or b.y0 < -tolerance or b.x1 > W + tolerance or b.y1 > H + tolerance:
            out.append((a.get_text() if hasattr(a, "get_text") else type(a).__name__,
                        tuple(round(v) for v in b.extents)))
    return out


@pytest.mark.parametrize("name", ["crs", "unreliable", "partial", "plain", "vote"])
def test_every_text_lies_inside_the_figure(name):
    """Walk-through 15, finding 8: with --crs's long labels and domain the y label ran off the top, the legend's
    swatches off the left and the domain's closing bracket off the right (format 2, checked here too); format 3
    wraps them. The colour bar's label stays within the bar's height (it touched the top edge)."""
    field, ctx = cases()[name]
    fig, _ = _draw_2d(_Figures, field, ctx, 3)
    assert _outside(fig) == []
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    label = ax.child_axes[0].yaxis.label.get_window_extent(renderer)   # the colour bar's
    assert label.height <= box.height + 1.0
    assert ax.yaxis.label.get_window_extent(renderer).height <= box.height + 1.0
    if name == "crs":
        old, _ = _draw_2d(_Figures, field, ctx, 2)   # format 2: the legend cut at both sides, the y label at the top
        assert [t for t, _ in _outside(old)] == ["Legend"]
        top = old.axes[0].yaxis.label.get_window_extent(old.canvas.get_renderer()).y1
        assert top > old.bbox.height - 4.0 > ax.yaxis.label.get_window_extent(renderer).y1 + 20
        assert "11112.9] m" in "".join(t.get_text() for t in fig.legends[0].get_texts()).replace("\n", " ")


@pytest.mark.parametrize("upper", [(4.0, 2.0), (20.0, 1.0), (1.0, 20.0)])
def test_long_labels_fit_in_wide_and_tall_boxes(upper):
    from privgp.cli.release_figure import ResponseDisplay
    from privgp.models.domain import Box

    from .picture_cases import CRS_LABEL, context, front

    box = Box((0.0, 0.0), upper)
    ctx = context(box, (CRS_LABEL.format("x"), CRS_LABEL.format("y")), unit="m",
                  response=ResponseDisplay("assessed value of the dwelling per square metre", "thousand dollars"))
    fig, _ = _draw_2d(_Figures, front(box, (41, 41), sd=0.25), ctx, 3)
    assert _outside(fig) == []
    ax = fig.axes[0]
    ax.apply_aspect()
    W, H = fig.bbox.width, fig.bbox.height
    mapbox = ax.get_window_extent(fig.canvas.get_renderer())
    assert max(mapbox.width / W, mapbox.height / H) > 0.3


def test_one_dimensional_text_lies_inside_the_figure():
    field, ctx = cases()["oned"]
    fig, _ = release_figure._draw_1d(_Figures, field, ctx, 3)
    assert _outside(fig) == []


@pytest.mark.skipif(not REFERENCE.exists(), reason="no reference pixels")
@pytest.mark.parametrize("fmt", [1, 2, 3, 4, 5])
def test_earlier_formats_draw_the_same_pixels_as_before(fmt):
    """Formats 1 to 5 as the privgp of format_reference.json's commits drew them (same matplotlib only: another
    one renders text differently)."""
    import matplotlib

    ref = json.loads(REFERENCE.read_text())
    if matplotlib.__version__ != ref["matplotlib"]:
        pytest.skip(f"reference pixels drawn by matplotlib {ref['matplotlib']}, not {matplotlib.__version__}")
    for name, (field, ctx) in cases().items():
        pic = draw(field, ctx, fmt)
        want = ref["pictures"][f"{name}-{fmt}"]
        assert [pic.width, pic.height] == want["size"], name
        assert pixels_sha256(pic.png) == want["pixels_sha256"], f"{name} in format {fmt} is drawn differently"


def test_format_3_differs_from_format_2_where_it_should():
    for name in ("unreliable", "crs"):
        field, ctx = cases()[name]
        assert pixels_sha256(draw(field, ctx, 3).png) != pixels_sha256(draw(field, ctx, 2).png)


def _release(out: Path, tmp_path: Path, capsys) -> None:
    assert main(["release", "--seed", "1", "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "100",
                 "--out", str(out), "--json"]) == 0
    capsys.readouterr()


def _verify(out: Path, capsys, *flags) -> tuple[int, dict]:
    code = main(["verify", str(out), "--json", *flags])
    return code, json.loads(capsys.readouterr().out)


def test_a_release_now_verifies_strictly_and_one_in_format_2_with_a_note(tmp_path, capsys, monkeypatch):
    """A release made now: its picture (format 5) is redrawn the same, --strict exits 0. A release whose picture is
    format 2 (as privgp drew it until now; made here by drawing in format 2): VERIFIED, its picture redrawn in
    format 2 the same (and its report, with format 2's caption, word for word), with the note that says so."""
    monkeypatch.setenv("PRIVGP_PICTURE_PROCESS", "0")
    now = tmp_path / "now"
    _release(now, tmp_path, capsys)
    code, res = _verify(now, capsys, "--strict")
    assert code == 0 and res["verified"] and res["notes"] == [], res

    real = release_figure.draw
    monkeypatch.setattr(release_figure, "draw", lambda field, ctx, fmt=None: real(field, ctx, 2))
    before = tmp_path / "format2"
    _release(before, tmp_path, capsys)
    monkeypatch.setattr(release_figure, "draw", real)
    assert "no boundary is drawn" in (before / "report.html").read_text()
    code, res = _verify(before, capsys)
    assert code == 0 and res["verified"], res
    assert res["notes"] == ["excursion.png: checked in part: drawn in privgp's earlier picture format 2, not the "
                            f"installed {PICTURE_FORMAT} (redrawn in format 2, the same)"], res
    assert os.environ["PRIVGP_PICTURE_PROCESS"] == "0"
