"""The picture of a release: what a data holder publishes, drawn from public quantities only.

Shared by every mechanism of ``privgp release``. A mechanism supplies its released function(s) on
the public grid as a :class:`ReleasedField` (model units: the scale of the response map, on which
the threshold is 0); the command supplies the public facts (:class:`PictureContext`: domain, axis
labels, the response's name and units, the response map, epsilon and delta). :func:`draw` returns
the PNG bytes and a caption in plain words (the report reuses it). It never sees the data: no
training point can be drawn.

* 2-D, one released function: the function as a colour field in the response's original units
  (g^-1(g(T) + B f), the un-centred scale; perceptually uniform colormap, logarithmic colour scale
  for ``transform = log``), colours saturating outside the public clipping range
  [g^-1(g(T) - B), g^-1(g(T) + B)], the threshold marked on the colorbar, the excursion boundary
  {response = T} drawn over it, and the public domain's box.
* 2-D, K > 1 released functions (e.g. L posterior paths): the vote map, the fraction of the K
  functions above the threshold at each grid point, and its 1/2 contour.
* 1-D: the K functions as lines in response units (clipped to the clipping range for display),
  the threshold, and the excursion intervals shaded (darker where more functions agree); an
  optional band (e.g. +-2 sd of a predictive mean).

Everything here is post-processing of the released object and public settings. Plotting lives in
the CLI layer (the library does no plotting).
"""
from __future__ import annotations

import io
import math
import struct
from dataclasses import dataclass

import numpy as np

from ..formatting import format_upper
from ..mechanisms.interface import PictureContext, ReleasedField, ResponseDisplay  # noqa: F401 (re-exported)
from ..mechanisms.release import ResponseMap
from ..models.domain import Box

#: at most this many 1-D lines are drawn (all of them enter the shading)
MAX_LINES = 50
DPI = 110
DOMAIN_1D = (0, (1, 2))


def epsilon_delta_text(epsilon: float, delta: float) -> str:
    """'ε = 5, δ = 0.00278' with both rounded up."""
    return f"\u03b5 = {format_upper(epsilon)}, \u03b4 = {format_upper(delta)}"


@dataclass(frozen=True)
class Picture:
    png: bytes
    caption: str
    alt: str
    width: int
    height: int


def _style_line(color="white", edge="black", lw=2.0):
    from matplotlib import patheffects

    return dict(colors=[color], linewidths=lw, path_effects=[patheffects.withStroke(linewidth=lw + 1.6, foreground=edge)])


def _nice_log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    ratio = hi / lo
    mantissas = (1, 2, 3, 5) if ratio > 4 else (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8) if ratio > 1.5 else \
        tuple(np.round(np.arange(1.0, 10.0, 0.1), 1))
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in mantissas:
            t = m * 10.0 ** k
            if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9):
                ticks.append(t)
    return ticks


class _Figures:
    """The three pyplot calls the pictures use, on matplotlib's object API with the Agg canvas: importing
    matplotlib.pyplot (its backend machinery) cost about half a second of every release."""

    @staticmethod
    def subplots(figsize, layout=None):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize, layout=layout, dpi=DPI)   # the PNG's: text is measured once, at its size
        FigureCanvasAgg(fig)
        return fig, fig.add_subplot()

    @staticmethod
    def get_cmap(name, lut=None):
        import matplotlib

        cmap = matplotlib.colormaps[name]
        return cmap if lut is None else cmap.resampled(lut)

    @staticmethod
    def close(fig) -> None:
        """Nothing to close: the figure is not registered with pyplot."""


#: the picture's format: 2 (2026-11-26) says in the legend that the hatching covers the privacy noise only, and
#: draws a 1-D grid map's 2-sd band and hatching; 1 is what earlier privgp drew (``privgp verify`` redraws an older
#: release's picture in its format and says so)
PICTURE_FORMAT = 2
PICTURE_FORMATS = (1, 2)


def draw(field: ReleasedField, ctx: PictureContext, fmt: int = PICTURE_FORMAT) -> Picture:
    """The release's picture as PNG bytes, with its caption (plain words) and alt text; ``fmt``: the picture
    format (:data:`PICTURE_FORMAT`; an earlier one only to verify an earlier release)."""
    plt = _Figures

    if fmt not in PICTURE_FORMATS:
        raise ValueError(f"picture format {fmt} is none of {PICTURE_FORMATS}")
    if field.dim == 2:
        fig, caption = _draw_2d(plt, field, ctx, fmt)
    elif field.dim == 1:
        fig, caption = _draw_1d(plt, field, ctx, fmt)
    else:  # pragma: no cover - releases are 1-D or 2-D
        raise ValueError(f"no picture for {field.dim}-D releases")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    w, h = struct.unpack(">II", buf.getvalue()[16:24])  # the PNG's own size (IHDR)
    alt = (f"Map of the private release ({field.what()}, {epsilon_delta_text(ctx.epsilon, ctx.delta)}): "
           + caption)
    return Picture(png=buf.getvalue(), caption=caption, alt=alt, width=w, height=h)


def placeholder(message: str, ctx: PictureContext) -> Picture:
    """A picture that says no map was released (e.g. a private selection that accepted nothing)."""
    plt = _Figures

    fig, ax = plt.subplots(figsize=(6.4, 2.4))
    ax.axis("off")
    ax.text(0.5, 0.5, message + "\n" + epsilon_delta_text(ctx.epsilon, ctx.delta), ha="center", va="center",
            fontsize=11, wrap=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    w, h = struct.unpack(">II", buf.getvalue()[16:24])
    return Picture(png=buf.getvalue(), caption=message, alt=message, width=w, height=h)


def _title(field: ReleasedField, ctx: PictureContext) -> str:
    return (f"Private release: where {ctx.threshold_text()} \u2014 {field.what()}\n"
            f"differential privacy {epsilon_delta_text(ctx.epsilon, ctx.delta)}" + (f"\n{ctx.note}" if ctx.note else ""))


def _domain_patch(ax, domain: Box):
    from matplotlib.patches import Rectangle

    (x0, y0), (x1, y1) = domain.lower, domain.upper
    rect = Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="black", lw=1.2, ls=(0, (5, 3)), zorder=4)
    ax.add_patch(rect)
    pad = 0.03 * domain.widths
    ax.set_xlim(x0 - pad[0], x1 + pad[0])
    ax.set_ylim(y0 - pad[1], y1 + pad[1])
    return rect


def _draw_2d(plt, field: ReleasedField, ctx: PictureContext, fmt: int = PICTURE_FORMAT):
    from matplotlib import colors
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rm, resp = ctx.response_map, ctx.response
    w = ctx.domain.widths
    aspect = float(w[1] / w[0])
    fig_w = 8.0
    fig, ax = plt.subplots(figsize=(fig_w, min(max(3.4, 0.69 * fig_w * aspect + 1.7), 11.0)))
    X0, X1 = np.meshgrid(*field.axes, indexing="ij")
    thr = resp.value(rm.threshold)
    handles: list = []   # legend entries: patches and lines
    if field.count == 1:
        span = colour_span(field.values[0])
        lo, hi = (float(v) for v in rm.to_response_units([-span, span]))
        shown = rm.to_response_units(np.clip(field.values[0], -span, span))
        norm = colors.LogNorm(lo, hi) if rm.transform == "log" else colors.Normalize(lo, hi)
        mesh = ax.pcolormesh(X0, X1, shown, cmap="cividis", norm=norm, shading="nearest", rasterized=True)
        mesh.set_clip_path(_domain_patch(ax, ctx.domain))  # one cell per grid point, cut at the domain's edge
        saturates = span >= 1.0 and np.abs(field.values[0]).max() > 1.0
        cb = fig.colorbar(mesh, cax=_colorbar_axes(ax), extend="both" if saturates else "neither")
        cb.set_label(f"released {field.noun}: {resp.axis_label()}")
        _value_ticks(cb.ax, "y", lo, hi, rm, resp)
        cb.ax.axhline(rm.threshold, color="white", lw=3.0)
        cb.ax.axhline(rm.threshold, color="black", lw=1.2)
        unreliable = None if field.sd is None else ~(np.abs(field.values[0]) > 2.0 * np.asarray(field.sd))
        if unreliable is not None and unreliable.any():
            # where the released map is within 2 released sd of the threshold it cannot tell the sides apart:
            # grey it out and draw no boundary there
            ax.contourf(X0, X1, unreliable.astype(float), levels=[0.5, 1.5], colors="none", hatches=["////"],
                        zorder=3)
            ax.pcolormesh(X0, X1, np.ma.masked_where(~unreliable, np.ones_like(X0)), cmap=colors.ListedColormap(
                ["#d9d9d9"]), alpha=0.55, shading="nearest", rasterized=True, zorder=2)
            handles.append(Patch(facecolor="#d9d9d9", edgecolor="black", hatch="////",
                                 label="unreliable: within 2 sd of the privacy noise of the threshold\n"
                                       "(other errors, e.g. coarse cells, are not marked)" if fmt >= 2 else
                                 "unreliable: within 2 released sd of the threshold"))
        _boundary(ax, X0, X1, field.values[0] if unreliable is None else
                  np.ma.masked_where(unreliable, field.values[0]), 0.0)
        handles.append(Line2D([], [], color="white", lw=2.0, path_effects=_style_line()["path_effects"],
                              label=f"excursion boundary: {resp.label} = {thr} (the threshold)"))
        caption = (f"Colour: the released {field.noun}, in {resp.axis_label()}"
                   + (f"; colours saturate outside the public clipping range {resp.value(_sig(lo))} to "
                      f"{resp.value(_sig(hi))} (the arrows on the colour bar)" if saturates else
                      ", on a scale centred on the threshold") + ". "
                   f"White line: the boundary of the released excursion set, where the released {field.noun} crosses "
                   f"the threshold {thr} (marked on the colour bar); the side with colours above the mark is where "
                   f"{ctx.threshold_text()}.")
        if unreliable is not None:
            caption += (f" Grey hatching: where the released {field.noun} is within two released standard deviations "
                        f"of the threshold ({unreliable.mean():.0%} of the map): there the release cannot tell on which "
                        "side of the threshold the response lies, and no boundary is drawn. The released standard "
                        "deviation is the privacy noise's only: elsewhere the map's resolution and the few records "
                        "behind a place can still put it on the wrong side.")
    else:
        K = field.count
        frac = (field.values >= 0.0).mean(axis=0)
        bounds = (np.arange(K + 2) - 0.5) / K
        cmap = plt.get_cmap("viridis", K + 1)
        norm = colors.BoundaryNorm(bounds, cmap.N)
        mesh = ax.pcolormesh(X0, X1, frac, cmap=cmap, norm=norm, shading="nearest", rasterized=True)
        mesh.set_clip_path(_domain_patch(ax, ctx.domain))  # the cells of the edge points stop at the domain
        cb = fig.colorbar(mesh, cax=_colorbar_axes(ax))
        ticks = np.arange(K + 1) / K if K <= 10 else np.linspace(0, 1, 6)
        cb.set_ticks(ticks, labels=[f"{round(t * K)}/{K}" for t in ticks] if K <= 10 else [f"{t:.0%}" for t in ticks])
        cb.set_label(f"fraction of the {K} released {field.plural}\nwith {ctx.threshold_text()}")
        _boundary(ax, X0, X1, frac, 0.5)
        handles.append(Line2D([], [], color="white", lw=2.0, path_effects=_style_line()["path_effects"],
                              label=f"where half of the {K} {field.plural} are above {thr}"))
        caption = (f"Vote map. Colour: at each location, the fraction of the {K} released {field.plural} in which "
                   f"{ctx.threshold_text()} (1 = all of them, 0 = none). White line: where half of them are "
                   "above the threshold.")
    _domain_patch(ax, ctx.domain)
    handles.append(Line2D([], [], color="black", lw=1.2, ls=(0, (5, 3)),
                          label=f"public domain {ctx.domain_text()}"))
    caption += f" Dashed box: the public domain {ctx.domain_text()}; no data point is shown."
    if field.caveat:
        caption += " " + field.caveat
    ax.set_aspect("equal")
    ax.set_xlabel(ctx.axis_labels[0])
    ax.set_ylabel(ctx.axis_labels[1])
    ax.set_title(_title(field, ctx), fontsize=11)
    _fit(fig, ax, fig.legend(handles=handles, loc="lower center", ncols=2, fontsize=9, frameon=False,
                             bbox_to_anchor=(0.5, 0.0), borderaxespad=PAD_IN * 72 / 9), beside=[cb.ax])
    return fig, caption


#: the margin around the picture's content, inches
PAD_IN = 0.06


def _fit(fig, ax, legend, beside=()) -> None:
    """Place the axes so that they, with their ticks, labels and title, the axes ``beside`` them (the colour bar:
    their width only; a label taller than the map overflows, as it did under constrained layout) and the legend
    under them fill the figure with a PAD_IN margin: the text's extents measured once on the Agg renderer
    (matplotlib's constrained layout measures twice and cost about a fifth of the picture's time). The axes keep
    their equal aspect (2-D): they shrink inside the box and stay centred."""
    renderer = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    pad = PAD_IN * fig.dpi
    ax.apply_aspect()
    box, tight = ax.get_window_extent(renderer), ax.get_tightbbox(renderer, bbox_extra_artists=[])
    right = max([tight.x1] + [b.get_tightbbox(renderer).x1 for b in beside]) - box.x1
    below = legend.get_window_extent(renderer).height + pad
    x0, x1 = pad + (box.x0 - tight.x0), W - pad - right
    y0, y1 = pad + below + (box.y0 - tight.y0), H - pad - (tight.y1 - box.y1)
    ax.set_position([x0 / W, y0 / H, max(x1 - x0, 1.0) / W, max(y1 - y0, 1.0) / H])


def colour_span(values) -> float:
    """Half-width of the colour scale in model units: the released field's largest distance from the
    threshold, rounded up to a nice value and capped at 1 (the clipping bound), so that the threshold
    sits at the centre of the colour bar. A function of the released values only (post-processing)."""
    m = float(np.nanmax(np.abs(values))) if np.size(values) else 0.0
    for nice in (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
        if m <= nice:
            return nice
    return 1.0


def _value_ticks(axis, which: str, lo: float, hi: float, rm: ResponseMap, resp: ResponseDisplay) -> None:
    """Ticks in response units with the threshold labelled as such (log axes: round values)."""
    from matplotlib.ticker import MaxNLocator, NullLocator

    ax = axis.yaxis if which == "y" else axis.xaxis
    if rm.transform == "log":
        ticks = [t for t in _nice_log_ticks(lo, hi) if not math.isclose(t, rm.threshold, rel_tol=0.08)]
    else:
        ticks = [t for t in MaxNLocator(6).tick_values(lo, hi) if lo <= t <= hi]
        width = (hi - lo) or 1.0
        ticks = [t for t in ticks if abs(t - rm.threshold) > 0.08 * width]
    ticks = sorted(ticks + [rm.threshold])
    ax.set_ticks(ticks, labels=[resp.value(t) + (" (threshold)" if t == rm.threshold else "") for t in ticks])
    ax.set_minor_locator(NullLocator())


def _colorbar_axes(ax):
    """A colour bar exactly as tall as the (equal-aspect) map, just right of it."""
    return ax.inset_axes([1.03, 0.0, 0.035, 1.0])


def _boundary(ax, X0, X1, values, level) -> None:
    """The level-set line, where there is one (a field entirely on one side has no boundary; masked
    points get none)."""
    if np.ma.count(values) and values.min() < level < values.max():
        ax.contour(X0, X1, values, levels=[level], **_style_line())


def _sig(x: float) -> float:
    return float(f"{x:.3g}")


def _draw_1d(plt, field: ReleasedField, ctx: PictureContext, fmt: int = PICTURE_FORMAT):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rm, resp = ctx.response_map, ctx.response
    K = field.count
    band, band_label, unreliable = field.band, field.band_label, None
    if field.sd is not None and K == 1 and fmt >= 2:   # a released sd (the grids): its 2-sd band, as the 2-D hatching
        sd2 = 2.0 * np.asarray(field.sd, dtype=float).reshape(-1)
        unreliable = ~(np.abs(field.values[0]) > sd2)
        if band is None:
            band = (field.values[0] - sd2, field.values[0] + sd2)
            band_label = "\u00b1 2 sd of the privacy noise only"
    span = colour_span(field.values if band is None else np.concatenate([field.values.ravel(), *band]))
    lo, hi = (float(v) for v in rm.to_response_units([-span, span]))
    x = field.axes[0]
    fig, ax = plt.subplots(figsize=(8.0, 4.6))
    thr = resp.value(rm.threshold)
    above = field.values >= 0.0
    frac = above.mean(axis=0)
    shade = "#e8a33d"
    levels = range(1, K + 1) if K <= 10 else np.linspace(1, K, 10).round().astype(int)
    alpha = 0.6 / len(list(levels))
    for k in levels:
        ax.fill_between(x, 0, 1, where=frac >= k / K - 1e-12, transform=ax.get_xaxis_transform(), color=shade,
                        alpha=alpha if K > 1 else 0.3, lw=0, step="mid")
    if band is not None:
        blo, bhi = (rm.to_response_units(np.clip(b, -span, span)) for b in band)
        ax.fill_between(x, blo, bhi, color="C0", alpha=0.2, lw=0)
    if unreliable is not None and unreliable.any():
        ax.fill_between(x, 0, 1, where=unreliable, transform=ax.get_xaxis_transform(), facecolor="none",
                        edgecolor="0.45", hatch="////", lw=0, step="mid")
    cmap = plt.get_cmap("viridis")
    shown = min(K, MAX_LINES)
    for i in range(shown):
        y = rm.to_response_units(np.clip(field.values[i], -span, span))
        ax.plot(x, y, color=cmap(i / max(shown - 1, 1) * 0.85) if K > 1 else "C0", lw=1.4 if K <= 5 else 0.8,
                alpha=1.0 if K <= 5 else 0.7)
    ax.axhline(rm.threshold, color="black", lw=1.2, ls="--")
    if rm.transform == "log":
        ax.set_yscale("log")
    pad = 0.02 * float(ctx.domain.widths[0])
    d0, d1 = float(ctx.domain.lower[0]), float(ctx.domain.upper[0])
    ax.set_xlim(d0 - pad, d1 + pad)
    ax.set_ylim(lo, hi)
    _value_ticks(ax, "y", lo, hi, rm, resp)
    for d in (d0, d1):
        ax.axvline(d, color="0.3", lw=1.2, ls=DOMAIN_1D)
    ax.set_xlabel(ctx.axis_labels[0])
    ax.set_ylabel(f"released {field.plural if K > 1 else field.noun}: {resp.axis_label()}")
    ax.set_title(_title(field, ctx), fontsize=11)
    handles = [Line2D([], [], color="C0" if K == 1 else cmap(0.4), lw=1.4,
                      label=f"released {field.noun}" if K == 1 else
                      f"released {field.plural} ({K}{'' if K <= MAX_LINES else f', first {MAX_LINES} drawn'})"),
               Line2D([], [], color="black", lw=1.2, ls="--", label=f"threshold {thr}"),
               Patch(color=shade, alpha=0.35, label=(f"excursion set: {ctx.threshold_text()}" if K == 1 else
                                                     f"{ctx.threshold_text()} in at least one {field.noun}; "
                                                     "darker: in more of them")),
               Line2D([], [], color="0.3", lw=1.2, ls=DOMAIN_1D, label=f"ends of the public domain {ctx.domain_text()}")]
    if band is not None:
        handles.insert(1, Patch(color="C0", alpha=0.2, label=band_label))
    if unreliable is not None and unreliable.any():
        handles.append(Patch(facecolor="none", edgecolor="0.45", hatch="////",
                             label="unreliable: within 2 sd of the threshold"))
    _fit(fig, ax, fig.legend(handles=handles, loc="lower center", ncols=2, fontsize=9, frameon=False,
                             bbox_to_anchor=(0.5, 0.0), borderaxespad=PAD_IN * 72 / 9))
    what = f"the released {field.noun}" if K == 1 else f"the {K} released {field.plural}"
    saturates = span >= 1.0 and np.abs(field.values).max() > 1.0
    caption = (f"Line{'s' if K > 1 else ''}: {what}, in {resp.axis_label()}"
               + (f", drawn inside the public clipping range {resp.value(_sig(lo))} to {resp.value(_sig(hi))} "
                  "(values beyond it are drawn at its edge)" if saturates else "") + ". Dashed "
               f"line: the threshold {thr}. Shaded: the released excursion set, where {ctx.threshold_text()}"
               + ("" if K == 1 else f" in at least one of the {K} {field.plural}, darker where more of them agree")
               + f". Dotted verticals: the ends of the public domain {ctx.domain_text()}; no data point is shown.")
    if band is not None:
        caption += f" Band: {band_label}."
    if unreliable is not None and unreliable.any():
        caption += (f" Hatching: where the released {field.noun} is within two standard deviations of its privacy "
                    f"noise of the threshold ({100 * float(unreliable.mean()):.0f}% of the domain): there the release "
                    "cannot tell on which side of the threshold the response lies. Other errors (cells too coarse "
                    "for a feature) are not marked.")
    return fig, caption
