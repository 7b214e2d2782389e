"""The opt-in interactive map of report.html (privgp.cli.release_map): its data, limits and escaping.
In a browser: tests/cli/test_release_report_browser.py; in a release: tests/cli/test_release_report.py."""
from __future__ import annotations

import json
import math

import numpy as np

from privgp.cli import release_map
from privgp.cli.release_figure import PictureContext, ReleasedField, ResponseDisplay
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box


def _ctx(dim: int = 2, transform: str = "identity") -> PictureContext:
    return PictureContext(domain=Box((0.0,) * dim, (2.0,) + (1.0,) * (dim - 1)), axis_labels=("x", "y")[:dim],
                          response=ResponseDisplay("price"), response_map=ResponseMap(2.0, 0.5, transform),
                          epsilon=1.0, delta=1e-6)


def _field(k: int, nx: int = 5, ny: int = 3) -> ReleasedField:
    rng = np.random.default_rng(0)
    return ReleasedField(axes=(np.linspace(0, 2, nx), np.linspace(0, 1, ny)), values=rng.normal(size=(k, nx, ny)),
                         noun="path", plural="paths")


def test_layers_values_and_limits():
    f = _field(6)
    f.values[0, 1, 2] = math.nan
    d = release_map.map_data(f, _ctx(transform="log"))
    assert d["shown"] == release_map.MAX_LAYERS == len(d["layers"]) and d["released"] == 6
    assert [layer["name"] for layer in d["layers"]] == ["path 1", "path 2", "path 3", "path 4"]
    flat = d["layers"][2]["values"]
    assert flat[1 * 3 + 2] == float(f"{f.values[2, 1, 2]:.6g}") and d["layers"][0]["values"][5] is None
    assert d["centre"] == math.log(2.0) and d["log"] is True and d["clip"] == 0.5
    one = release_map.map_data(_field(1), _ctx())
    assert [layer["name"] for layer in one["layers"]] == ["path"]
    # a 1-D release, no field, or a field too large for a page: no map
    line = ReleasedField(axes=(np.linspace(0, 2, 7),), values=np.zeros((1, 7)), noun="path", plural="paths")
    assert release_map.map_data(line, _ctx(1)) is None and release_map.interactive_map(None, _ctx()) is None
    big = release_map.MAX_VALUES // 2 + 1
    assert release_map.map_data(_field(3, nx=big, ny=2), _ctx()) is None
    assert release_map.map_data(_field(3, nx=release_map.MAX_VALUES // 3, ny=2), _ctx())["shown"] == 1


def test_the_section_escapes_what_it_embeds_and_lists_layers():
    ctx = PictureContext(domain=Box((0.0, 0.0), (1.0, 3.0)), axis_labels=("a</script>", "b&c"),
                         response=ResponseDisplay("<b>p</b>"), response_map=ResponseMap(0.0, 1.0), epsilon=1.0, delta=1e-6)
    m = release_map.interactive_map(_field(2), ctx)
    html = m.html
    assert "</script>" not in html.split('id="map-data">', 1)[1].split("</script>", 1)[0]
    assert "a</script>" not in html and "<b>p</b>" not in html
    data = json.loads(html.split('id="map-data">', 1)[1].split("</script>", 1)[0])
    assert data["labels"] == ["a</script>", "b&c"] and data["response"] == "<b>p</b>"
    assert '<select id="map-layer"><option value="0">path 1</option><option value="1">path 2</option></select>' in html
    assert f"<script>{release_map.SCRIPT}</script>" in html and m.script_source.startswith("'sha256-")
    assert 'width="320" height="640"' in html  # a tall box (aspect 1/3, shown at the 1/2 limit)
