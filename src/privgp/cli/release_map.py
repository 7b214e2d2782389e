"""The interactive map of report.html (``privgp release --map``; off by default).

A 2-D release's released function(s) drawn in the page itself, on a ``<canvas>``: drag to pan, the
mouse wheel or the + / - buttons to zoom, and pointing at the map shows the released value there (on
the model scale and in the response's own units), the coordinates and the side of the threshold.
Several released functions (e.g. L posterior paths) are layers to choose from.

Offline by construction: the values are in the page (a ``<script type="application/json">`` block,
six significant digits, the same grid as field.csv / paths.csv), the drawing code is one inline script
whose sha256 is the only script source the page's Content-Security-Policy allows, and there are no
tiles, fonts or libraries: the page still loads nothing (``default-src 'none'``). Post-processing of
released values only. This module writes nothing; :func:`interactive_map` returns the HTML section and
the CSP source for :func:`privgp.cli.release_report.render`.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms.interface import PictureContext, ReleasedField

#: at most this many released functions become layers, and at most this many values in all
MAX_LAYERS = 4
MAX_VALUES = 250_000
#: zoom limits (factor of the whole box)
MAX_ZOOM = 64

SCRIPT = r"""(() => {
  const data = JSON.parse(document.getElementById('map-data').textContent);
  const canvas = document.getElementById('release-map');
  const readout = document.getElementById('map-readout');
  const select = document.getElementById('map-layer');
  const nx = data.x.length, ny = data.y.length, view = {s: 1, u: 0, v: 0};
  const off = document.createElement('canvas');
  off.width = nx; off.height = ny;
  let layer = 0, drag = null;
  const fmt = (t) => (t === null ? 'no value' : Number(t).toPrecision(4));
  function colour(t, span) {
    if (t === null) return [200, 200, 200, 255];
    const a = Math.min(Math.abs(t) / span, 1), c = t < 0 ? [33, 102, 172] : [178, 24, 43];
    return [0, 1, 2].map((k) => Math.round(255 + (c[k] - 255) * a)).concat([255]);
  }
  function paint() {
    const g = off.getContext('2d'), img = g.createImageData(nx, ny), vals = data.layers[layer].values;
    const span = vals.reduce((m, t) => (t === null ? m : Math.max(m, Math.abs(t))), 0) || 1;
    for (let i = 0; i < nx; i++) {
      for (let j = 0; j < ny; j++) img.data.set(colour(vals[i * ny + j], span), 4 * ((ny - 1 - j) * nx + i));
    }
    g.putImageData(img, 0, 0);
    canvas.dataset.layer = String(layer);
    draw();
  }
  function draw() {
    const g = canvas.getContext('2d'), w = 1 / view.s;
    g.imageSmoothingEnabled = false;
    g.clearRect(0, 0, canvas.width, canvas.height);
    g.drawImage(off, view.u * nx, view.v * ny, w * nx, w * ny, 0, 0, canvas.width, canvas.height);
    canvas.dataset.scale = String(view.s);
    canvas.dataset.view = [view.u, view.v].join(',');
  }
  function fit() {
    const r = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(canvas.clientWidth * r));
    canvas.height = Math.max(1, Math.round(canvas.clientHeight * r));
    draw();
  }
  function clampView() {
    const w = 1 / view.s;
    view.u = Math.min(Math.max(view.u, 0), 1 - w);
    view.v = Math.min(Math.max(view.v, 0), 1 - w);
  }
  function zoom(f, fx, fy) {
    const w0 = 1 / view.s, px = view.u + fx * w0, py = view.v + fy * w0;
    view.s = Math.min(Math.max(view.s * f, 1), data.max_zoom);
    const w1 = 1 / view.s;
    view.u = px - fx * w1; view.v = py - fy * w1;
    clampView(); draw();
  }
  function at(ev) {
    const r = canvas.getBoundingClientRect();
    return [(ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height];
  }
  function show(fx, fy) {
    if (!(fx >= 0 && fx <= 1 && fy >= 0 && fy <= 1)) return;
    const w = 1 / view.s;
    const i = Math.min(nx - 1, Math.floor((view.u + fx * w) * nx));
    const j = ny - 1 - Math.min(ny - 1, Math.floor((view.v + fy * w) * ny));
    const val = data.layers[layer].values[i * ny + j];
    readout.dataset.i = String(i); readout.dataset.j = String(j);
    readout.dataset.value = val === null ? '' : String(val);
    let text = data.labels[0] + ' = ' + fmt(data.x[i]) + ', ' + data.labels[1] + ' = ' + fmt(data.y[j]) + ': ';
    if (val === null) {
      text += 'no released value';
    } else {
      const u = data.centre + data.clip * val, resp = data.log ? Math.exp(u) : u;
      text += data.layers[layer].name + ' ' + fmt(val) + ' on the model scale (' + data.response + ' ' +
        fmt(resp) + (Math.abs(val) > 1 ? ', beyond the clipping range' : '') + '), ' +
        (val > 0 ? 'above' : val < 0 ? 'below' : 'at') + ' the threshold';
    }
    readout.textContent = text;
  }
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const [fx, fy] = at(ev);
    zoom(ev.deltaY < 0 ? 1.25 : 0.8, fx, fy);
  }, {passive: false});
  canvas.addEventListener('pointerdown', (ev) => {
    drag = {x: ev.clientX, y: ev.clientY, u: view.u, v: view.v};
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener('pointerup', () => { drag = null; });
  canvas.addEventListener('pointermove', (ev) => {
    if (drag) {
      const r = canvas.getBoundingClientRect();
      view.u = drag.u - (ev.clientX - drag.x) / r.width / view.s;
      view.v = drag.v - (ev.clientY - drag.y) / r.height / view.s;
      clampView(); draw();
    }
    show(...at(ev));
  });
  document.getElementById('map-zoom-in').addEventListener('click', () => zoom(1.5, 0.5, 0.5));
  document.getElementById('map-zoom-out').addEventListener('click', () => zoom(1 / 1.5, 0.5, 0.5));
  document.getElementById('map-reset').addEventListener('click', () => { view.s = 1; view.u = 0; view.v = 0; draw(); });
  if (select) select.addEventListener('change', () => { layer = Number(select.value); paint(); });
  window.addEventListener('resize', fit);
  fit(); paint();
  canvas.dataset.ready = 'true';
})();"""

#: the CSP source that allows exactly :data:`SCRIPT` (and no other script)
SCRIPT_SOURCE = "'sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii") + "'"

STYLE = """#map .map-tools { display: flex; flex-wrap: wrap; gap: 0.4rem; align-items: center; margin: 0.5rem 0; }
#map button, #map select { font: inherit; padding: 0.15rem 0.6rem; }
#release-map { display: block; width: 100%; height: auto; border: 1px solid var(--line); touch-action: none;
               cursor: crosshair; background: var(--soft); }
#map-readout { min-height: 3em; }"""


@dataclass(frozen=True)
class InteractiveMap:
    """The map's HTML section and the Content-Security-Policy script source it needs."""

    html: str
    script_source: str = SCRIPT_SOURCE


def _number(x: float) -> float | None:
    return float(f"{x:.6g}") if math.isfinite(x) else None


def _json_for_html(obj: object) -> str:
    """JSON that cannot end its <script> block or open a tag: <, > and & as \\u escapes."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def map_data(field: ReleasedField, ctx: PictureContext) -> dict | None:
    """What the map's script reads (public: the released values on the public grid), or None when the
    release is not a 2-D field or too large for a page."""
    if len(field.axes) != 2:
        return None
    values = np.asarray(field.values, dtype=float)
    per = int(np.prod(values.shape[1:]))
    k = min(values.shape[0], MAX_LAYERS, MAX_VALUES // max(per, 1))
    if k < 1:
        return None
    plural = values.shape[0] > 1
    layers = [{"name": f"{field.noun} {i + 1}" if plural else field.noun,
               "values": [_number(v) for v in values[i].reshape(-1)]} for i in range(k)]
    rm = ctx.response_map
    return {"x": [_number(v) for v in np.asarray(field.axes[0], float)],
            "y": [_number(v) for v in np.asarray(field.axes[1], float)],
            "labels": list(ctx.axis_labels[:2]), "layers": layers, "response": ctx.response.label,
            "centre": rm.centre, "clip": rm.clip, "log": rm.transform == "log", "max_zoom": MAX_ZOOM,
            "shown": k, "released": int(values.shape[0])}


def interactive_map(field: ReleasedField | None, ctx: PictureContext) -> InteractiveMap | None:
    """The interactive map section for report.html, or None (no field, not 2-D, or too large)."""
    if field is None:
        return None
    data = map_data(field, ctx)
    if data is None:
        return None
    e = html.escape
    dom = ctx.domain
    width, height = float(dom.upper[0] - dom.lower[0]), float(dom.upper[1] - dom.lower[1])
    aspect = min(max(width / height, 0.5), 2.5)
    w = 640 if aspect >= 1 else round(640 * aspect)
    layers = ""
    if len(data["layers"]) > 1:
        options = "".join(f'<option value="{i}">{e(layer["name"])}</option>' for i, layer in enumerate(data["layers"]))
        layers = f'<label>show <select id="map-layer">{options}</select></label>'
    more = ("" if data["shown"] == data["released"] else
            f" The first {data['shown']} of the {data['released']} released {e(field.plural)} are shown.")
    section = f"""<section id="map">
<h2>Explore the map</h2>
<p>The released {e(field.plural if data['released'] > 1 else field.noun)} on the public grid, drawn in this page from the
released values (the numbers of the published data files, to six significant digits): red above the threshold, blue
below, white at it, the strongest colour at the largest distance from it. Drag to move, use the mouse wheel or the
buttons to zoom, and point at the map to read a value. Nothing is loaded from the network.{more}</p>
<div class="map-tools"><button type="button" id="map-zoom-in" aria-label="zoom in">+</button>
<button type="button" id="map-zoom-out" aria-label="zoom out">&minus;</button>
<button type="button" id="map-reset">whole box</button>{layers}</div>
<canvas id="release-map" width="{w}" height="{round(w / aspect)}"
 style="aspect-ratio: {aspect:.4f}" role="img" aria-label="interactive map of the released values; the readout below
 gives the value under the pointer"></canvas>
<p id="map-readout" class="note" aria-live="polite">Point at the map to read the released value there.</p>
<script type="application/json" id="map-data">{_json_for_html(data)}</script>
<script>{SCRIPT}</script>
</section>
"""
    return InteractiveMap(section)


__all__ = ["InteractiveMap", "interactive_map", "map_data", "SCRIPT", "SCRIPT_SOURCE", "STYLE", "MAX_LAYERS",
           "MAX_VALUES"]
