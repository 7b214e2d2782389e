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
  {response = T} drawn over it, and the public domain's box. With a released sd, where the map is within 2 sd of
  the threshold it is unreliable: veiled and hatched, the boundary dashed through it (picture format 3; formats 1
  and 2, kept for ``privgp verify``, greyed it and drew no boundary there).
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
from dataclasses import dataclass, replace

import numpy as np

from ..formatting import format_upper, short_number
from ..mechanisms.interface import RELIABLE_SD, PictureContext, ReleasedField, ResponseDisplay, reliable_mask  # noqa: F401 (re-exported)
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


#: picture format 5: a log scale labels at most this many round values: where format 4's choice gave more, the next
#: coarser set of mantissas (:data:`LOG_MANTISSAS`), then powers of ten every ``step``-th decade (format 4 labelled
#: every round value: a clipping range of 640 log units gave 2 224 overlapping labels and a minute of drawing)
MOST_LOG_TICKS = 16
#: format 5, where a log scale's ticks were thinned: no tick nearer the threshold than this share of the axis (in log
#: units; a label is about 1/25 of a colour bar's height)
THRESHOLD_GAP = 24
#: the round values of a log axis per decade, finest first (format 4 took the one of the axis's ratio hi / lo)
LOG_MANTISSAS = (tuple(np.round(np.arange(1.0, 10.0, 0.1), 1)), (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8), (1, 2, 3, 5), (1,))


def _nice_log_ticks(lo: float, hi: float, fmt: int = 4) -> list[float]:
    """Round values between ``lo`` and ``hi`` (0 < lo < hi) for a log axis; from picture format 5 at most
    :data:`MOST_LOG_TICKS` of them."""
    ratio = hi / lo
    first = 2 if ratio > 4 else 1 if ratio > 1.5 else 0
    ticks = _round_log_ticks(lo, hi, LOG_MANTISSAS[first])
    if fmt < 5:
        return ticks
    for mantissas in LOG_MANTISSAS[first + 1:]:
        if len(ticks) <= MOST_LOG_TICKS:
            return ticks
        coarser = _round_log_ticks(lo, hi, mantissas)
        if len(coarser) < 2:   # a narrow scale (8.1 to 9.9) has none at the coarser values (red team 18g)
            return _every_kth(ticks)
        ticks = coarser
    if len(ticks) <= MOST_LOG_TICKS:
        return ticks
    return _decade_ticks(lo, hi)   # (17 powers of ten or more: every k-th decade leaves at least two)


def _every_kth(ticks: list[float]) -> list[float]:
    """Every k-th of ``ticks``, k the smallest that leaves at most :data:`MOST_LOG_TICKS`."""
    return ticks[::-(-len(ticks) // MOST_LOG_TICKS)]


def _decade_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten between ``lo`` and ``hi``, every ``step``-th decade: the smallest step of 1, 2, 5, 10, 20, ...
    that leaves at most :data:`MOST_LOG_TICKS` of them."""
    first, last = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    step = 1
    while True:
        for k in (step, 2 * step, 5 * step):
            start = -(-first // k) * k   # the first multiple of k from ``first``
            if (last - start) // k + 1 <= MOST_LOG_TICKS:
                return [10.0 ** e for e in range(start, last + 1, k)]
        step *= 10


def _round_log_ticks(lo: float, hi: float, mantissas) -> list[float]:
    ticks = []
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


#: the picture's format: 5 (2026-11-29) labels a log scale of many decades at no more than 16 round values (format 4
#: labelled every one: 2 224 overlapping labels for a clipping range of 640 log units; see :data:`MOST_LOG_TICKS`); 4
#: (2026-11-28, red team 25) states the threshold and the domain exactly (format 3 kept 6 significant digits: a UTM
#: box and its threshold read 4.31234e+06 and 1.23457e+06), labels the colour bar's ticks with the digits that tell
#: them apart, draws a data holder's text literally (a "$" in a column name was read as matplotlib's math text:
#: drawing failed after the charge) and breaks a word longer than a line; 3 (2026-11-26, walk-through 15) draws a 2-D
#: map's excursion boundary everywhere (solid where the map is reliable, dashed through the hatching), on a colour
#: map with no grey near the threshold (viridis), unreliable areas faded and hatched darker, and wraps text that
#: would not fit the figure; 2 (2026-11-26) says in the legend that the hatching covers the privacy noise only, and
#: draws a 1-D grid map's 2-sd band and hatching; 1 is what earlier privgp drew (``privgp verify`` redraws an older
#: release's picture in its format and says so)
PICTURE_FORMAT = 6
PICTURE_FORMATS = (1, 2, 3, 4, 5, 6)

#: picture format 6 (2026-11-29, walk-through 21): a predictive sd (the DP sparse GP's, :attr:`ReleasedField.sd_covers`)
#: is named as such in the legend and caption; formats 2-5 called every released sd the privacy noise's, which the
#: sparse GP's is not (it also holds the model's own uncertainty: about 9x the spread between its draws on the
#: embedded sales). A privacy-noise sd (the noisy grids) is drawn exactly as in format 5.
PREDICTIVE_SD_FORMAT = 6
#: format 6's legend entry of the hatching where the sd is predictive
PREDICTIVE_HATCH_LABEL = ("unreliable: within 2 predictive sd of the threshold\n"
                          "(privacy noise and the model's uncertainty; a model that misfits is not marked)")


def _predictive_sd(field: ReleasedField, fmt: int) -> bool:
    """Whether the picture names the released sd as a model's predictive one (format 6 on)."""
    return fmt >= PREDICTIVE_SD_FORMAT and field.sd_covers == "predictive"


def _sd_sentence(field: ReleasedField, fmt: int) -> str:
    """The 2-D caption's sentence on what the released sd covers."""
    if _predictive_sd(field, fmt):
        return ("The released standard deviation is the model's predictive one: it holds the privacy noise and the "
                "model's own uncertainty (few records near a place, the spacing of its inducing inputs) together, "
                "but not a model that does not fit the field.")
    return ("The released standard deviation is the privacy noise's only: elsewhere the map's resolution and the few "
            "records behind a place can still put it on the wrong side.")


def draw_picture(field, ctx: PictureContext, fmt: int = PICTURE_FORMAT) -> Picture:
    """The picture (PNG bytes, caption, alt text) of :func:`privgp.cli.release_publish.picture_request`'s answer; a
    release without a map gets a picture that says so. The command's picture process
    (:mod:`privgp.cli.picture_process`) imports this module, not the rest of the command's, and calls this.
    ``fmt``: the picture format (an earlier one only to verify an earlier release)."""
    if field is None:
        return placeholder("No map was released (see the report).", ctx)
    return draw(field, ctx, fmt)


def draw(field: ReleasedField, ctx: PictureContext, fmt: int = PICTURE_FORMAT) -> Picture:
    """The release's picture as PNG bytes, with its caption (plain words) and alt text; ``fmt``: the picture
    format (:data:`PICTURE_FORMAT`; an earlier one only to verify an earlier release)."""
    import matplotlib

    plt = _Figures

    if fmt not in PICTURE_FORMATS:
        raise ValueError(f"picture format {fmt} is none of {PICTURE_FORMATS}")
    if fmt < 4:   # 6 significant digits, as earlier pictures stated the domain and the threshold
        ctx = replace(ctx, exact=False)
    # format 4: every text literally ("$" is matplotlib's math-text delimiter)
    with matplotlib.rc_context({"text.parse_math": fmt < 4}):
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

    rm, resp = ctx.response_map, ctx.response
    w = ctx.domain.widths
    aspect = float(w[1] / w[0])
    fig_w = 8.0
    fig, ax = plt.subplots(figsize=(fig_w, min(max(3.4, 0.69 * fig_w * aspect + 1.7), 11.0)))
    X0, X1 = np.meshgrid(*field.axes, indexing="ij")
    thr = ctx.value(rm.threshold)
    handles: list = []   # legend entries: patches and lines
    if field.count == 1:
        span = colour_span(field.values[0])
        lo, hi = (float(v) for v in rm.to_response_units([-span, span]))
        shown = rm.to_response_units(np.clip(field.values[0], -span, span))
        norm = colors.LogNorm(lo, hi) if rm.transform == "log" else colors.Normalize(lo, hi)
        mesh = ax.pcolormesh(X0, X1, shown, cmap="cividis" if fmt < 3 else "viridis", norm=norm, shading="nearest",
                             rasterized=True)
        mesh.set_clip_path(_domain_patch(ax, ctx.domain))  # one cell per grid point, cut at the domain's edge
        saturates = span >= 1.0 and np.abs(field.values[0]).max() > 1.0
        cb = fig.colorbar(mesh, cax=_colorbar_axes(ax), extend="both" if saturates else "neither")
        cb.set_label(f"released {field.noun}: {resp.axis_label()}")
        _value_ticks(cb.ax, "y", lo, hi, ctx, fmt)
        cb.ax.axhline(rm.threshold, color="white", lw=3.0)
        cb.ax.axhline(rm.threshold, color="black", lw=1.2)
        unreliable = None if field.sd is None else ~reliable_mask(field.values[0], field.sd)
        if fmt >= 3:
            caption = _boundary_3(ax, X0, X1, field, ctx, unreliable, handles, saturates, lo, hi, fmt)
        else:
            caption = _boundary_2(ax, X0, X1, field, ctx, unreliable, handles, saturates, lo, hi, fmt)
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
                          label=f"{DOMAIN_LABEL}{ctx.domain_text()}"))
    caption += f" Dashed box: the public domain {ctx.domain_text()}; no data point is shown."
    if field.caveat:
        caption += " " + field.caveat
    ax.set_aspect("equal")
    ax.set_xlabel(ctx.axis_labels[0])
    ax.set_ylabel(ctx.axis_labels[1])
    ax.set_title(_title(field, ctx), fontsize=11)
    _layout(fig, ax, handles, fmt, beside=[cb.ax])
    return fig, caption


def _boundary_2(ax, X0, X1, field: ReleasedField, ctx: PictureContext, unreliable, handles: list, saturates: bool,
                lo: float, hi: float, fmt: int) -> str:
    """Picture formats 1 and 2 (kept to verify earlier releases): grey hatching where the map is unreliable, and
    the boundary only where it is reliable. Returns the caption."""
    from matplotlib import colors
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    resp, thr = ctx.response, ctx.value(ctx.response_map.threshold)
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
    caption = _caption_head(field, ctx, lo, hi, saturates)
    if unreliable is not None:
        caption += (f" Grey hatching: where the released {field.noun} is within two released standard deviations "
                    f"of the threshold ({unreliable.mean():.0%} of the map): there the release cannot tell on which "
                    "side of the threshold the response lies, and no boundary is drawn. The released standard "
                    "deviation is the privacy noise's only: elsewhere the map's resolution and the few records "
                    "behind a place can still put it on the wrong side.")
    return caption


#: format 3's unreliable areas: a white veil over the colours (its alpha) and dark hatching
VEIL_ALPHA = 0.6
HATCH_3, HATCH_COLOR_3, HATCH_LW_3 = "///", "0.15", 1.1
#: format 3's boundary: dashed (white, black edge) where it runs through unreliable points
DASHES_3 = (0, (3.0, 2.0))


def _crossings(values, unreliable):
    """Whether the level-0 line crosses between two neighbouring grid points (a sign change) (a) with both reliable,
    (b) with either unreliable: where ``contour`` draws the reliable (masked) line and where it draws only the
    whole line."""
    v = np.asarray(values) > 0.0
    reliable, other = False, False
    for axis in (0, 1):
        a, b = (slice(None, -1), slice(1, None)) if axis == 0 else ((slice(None), slice(None, -1)),
                                                                     (slice(None), slice(1, None)))
        change = v[a] != v[b]
        either = unreliable[a] | unreliable[b]
        reliable |= bool((change & ~either).any())
        other |= bool((change & either).any())
    return reliable, other


def _boundary_3(ax, X0, X1, field: ReleasedField, ctx: PictureContext, unreliable, handles: list, saturates: bool,
                lo: float, hi: float, fmt: int = PICTURE_FORMAT) -> str:
    """Picture format 3: unreliable areas veiled white and hatched dark (distinct from any colour of the map), and
    the boundary of the released excursion set drawn wherever the released map crosses the threshold: solid where
    the map is reliable, dashed through the hatching. Returns the caption."""
    from matplotlib import colors
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    resp, thr = ctx.response, ctx.value(ctx.response_map.threshold)
    values = field.values[0]
    marked = unreliable is not None and bool(unreliable.any())
    crosses = bool(values.min() < 0.0 < values.max())
    solid, dashed = (crosses, False) if not marked else _crossings(values, unreliable)
    effects = _style_line()["path_effects"]
    label = f"excursion boundary: {resp.label} = {thr} (the threshold)"
    if dashed:
        _boundary(ax, X0, X1, values, 0.0, linestyles=[DASHES_3], zorder=4)
    if solid:
        _boundary(ax, X0, X1, np.ma.masked_where(unreliable, values) if marked else values, 0.0, zorder=4)
    if solid or not dashed:
        handles.append(Line2D([], [], color="white", lw=2.0, path_effects=effects, label=label))
    if dashed and not solid:
        handles.append(Line2D([], [], color="white", lw=2.0, ls=DASHES_3, path_effects=effects,
                              label=f"{label},\ndashed: it runs through unreliable areas"))
    if marked:
        ax.pcolormesh(X0, X1, np.ma.masked_where(~unreliable, np.ones_like(X0)),
                      cmap=colors.ListedColormap(["white"]), alpha=VEIL_ALPHA, shading="nearest", rasterized=True,
                      zorder=2)
        hatch = ax.contourf(X0, X1, unreliable.astype(float), levels=[0.5, 1.5], colors="none",
                            hatches=[HATCH_3], zorder=3)
        hatch.set_hatchcolor(HATCH_COLOR_3)
        hatch.set_hatch_linewidth(HATCH_LW_3)
        # the swatch: the threshold's colour under the veil, as most of the unreliable area looks
        veil = VEIL_ALPHA + (1.0 - VEIL_ALPHA) * np.asarray(_Figures.get_cmap("viridis")(0.5)[:3])
        swatch = Patch(facecolor=tuple(veil), edgecolor=HATCH_COLOR_3, hatch=HATCH_3,
                       label=PREDICTIVE_HATCH_LABEL if _predictive_sd(field, fmt) else
                       "unreliable: within 2 sd of the privacy noise of the threshold\n"
                       "(other errors, e.g. coarse cells, are not marked)")
        swatch.set_hatch_linewidth(HATCH_LW_3)
        handles.append(swatch)
    if dashed and solid:   # the legend's second column (two columns, filled down): beside the solid line
        handles.append(Line2D([], [], color="white", lw=2.0, ls=DASHES_3, path_effects=effects,
                              label="excursion boundary, dashed where unreliable"))
    caption = _caption_head(field, ctx, lo, hi, saturates)
    if dashed:
        caption += (" The line is solid where the map is reliable and dashed" if solid else " The line is dashed") + \
            (" where it runs through the hatching: there it is only the released map's best guess, which the release "
             "cannot place more precisely than the hatched area around it.")
    if unreliable is not None:
        caption += (f" Hatching over faded colours: where the released {field.noun} is within two released standard "
                    f"deviations of the threshold ({unreliable.mean():.0%} of the map): there the release cannot tell "
                    "on which side of the threshold the response lies. " + _sd_sentence(field, fmt))
    return caption


#: the margin around the picture's content, inches
PAD_IN = 0.06
#: the legend's name of the dashed box (format 3 puts the numbers after it on a line of their own if too wide)
DOMAIN_LABEL = "public domain "


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


def _legend(fig, handles, ncols: int = 2):
    return fig.legend(handles=handles, loc="lower center", ncols=ncols, fontsize=9, frameon=False,
                      bbox_to_anchor=(0.5, 0.0), borderaxespad=PAD_IN * 72 / 9)


def _layout(fig, ax, handles, fmt: int, beside=()) -> None:
    """The legend under the map and :func:`_fit`. Format 3 also keeps every text inside the figure: a legend wider
    than the figure gets its long labels wrapped, then one column; an axis label longer than its axis (the colour
    bar's: than the bar), or a title wider than the figure, is wrapped onto more lines, and the map fitted again.
    The figure keeps its size (``privgp verify`` redraws it pixel for pixel)."""
    if fmt < 3:
        _fit(fig, ax, _legend(fig, handles), beside)
        return
    renderer = fig.canvas.get_renderer()
    W, H, pad = fig.bbox.width, fig.bbox.height, PAD_IN * fig.dpi
    legend = _legend(fig, handles)
    for attempt in ("wrap the domain", "one column", "wrap every label"):
        if legend.get_window_extent(renderer).width <= W - 2 * pad:
            break
        legend.remove()
        if attempt == "wrap the domain":   # the public domain's numbers on a line of their own
            for h in handles:
                h.set_label(h.get_label().replace(DOMAIN_LABEL, DOMAIN_LABEL.rstrip() + "\n", 1))
        elif attempt == "wrap every label":
            for h in handles:
                h.set_label("\n".join(_wrap_words(line, LEGEND_CHARS, fmt >= 4) for line in h.get_label().split("\n")))
        legend = _legend(fig, handles, ncols=2 if attempt == "wrap the domain" else 1)
    across = [ax.xaxis.label, ax.title]
    along = [ax.yaxis.label] + [b.yaxis.label for b in beside]   # the colour bar: as tall as the map, beside it
    originals = [t.get_text() for t in across + along]
    for rounds in range(5):   # wrap to the map as placed, place it again: wrapping only shrinks the map
        _place_insets(ax, renderer)
        box = ax.get_window_extent(renderer)
        cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
        # a text centred on the map stays inside the figure; one along its height is at most as tall as the map
        # (or WRAP_SHARE of the figure, if that is more)
        wide = 2 * min(cx - pad, W - pad - cx)
        tall = min(max(box.height, WRAP_SHARE * (H - 2 * pad)), 2 * min(cy - pad, H - pad - cy))
        lengths = [wide] * len(across) + [tall] * len(along)
        if not any([_wrap_to(t, o, n, renderer, fmt >= 4) for t, o, n in zip(across + along, originals, lengths)]) \
                and rounds:
            break
        _fit(fig, ax, legend, beside)


def _place_insets(ax, renderer) -> None:
    """Move the map's inset axes (the colour bar) to where they go beside the map as now placed (matplotlib does
    so when it draws): :func:`_fit` measures them there."""
    ax.apply_aspect()
    for child in ax.child_axes:
        locator = child.get_axes_locator()
        if locator is not None:
            child.apply_aspect(locator(child, renderer))


#: format 3: a text along the map's height is wrapped to the map's height, or to this share of the figure's if longer
WRAP_SHARE = 0.6
#: format 3: a legend still wider than the figure in one column has its labels wrapped at this many characters
LEGEND_CHARS = 60


def _wrap_words(text: str, width: int, breaking: bool = False) -> str:
    """``text`` wrapped at spaces into lines of at most ``width`` characters; longer words stay whole, or are broken
    where ``breaking`` (format 4: a 250-character column name left no room for the map)."""
    import textwrap

    return "\n".join(textwrap.wrap(" ".join(text.split()), width, break_long_words=breaking, break_on_hyphens=False))


def _balanced(line: str, width: int, breaking: bool = False) -> str:
    """``line`` on the fewest lines of at most ``width`` characters, of about equal length."""
    if len(line) <= width:
        return line
    lines = len(_wrap_words(line, width, breaking).split("\n"))
    even = -(-len(line) // lines)
    while len(_wrap_words(line, even, breaking).split("\n")) > lines:
        even += 1
    return _wrap_words(line, even, breaking)


def _wrap_to(text, original: str, length: float, renderer, breaking: bool = False) -> bool:
    """Set a Text artist to its ``original`` text with each line longer than ``length`` pixels (along the text's
    direction) wrapped onto the fewest lines of about equal length that fit; whether its text changed."""
    def along() -> float:
        ext = text.get_window_extent(renderer)
        return ext.height if abs(text.get_rotation() % 180 - 90) < 1 else ext.width

    before = text.get_text()
    text.set_text(original)
    chars = max(len(line) for line in original.split("\n"))
    if original and along() > length:
        width = max(int(chars * length / along()), 8)
        for _ in range(10):
            text.set_text("\n".join(_balanced(line, width, breaking) for line in original.split("\n")))
            if along() <= length or width <= 8:
                break
            width = max(int(width * 0.9), 8)
    return text.get_text() != before


def colour_span(values) -> float:
    """Half-width of the colour scale in model units: the released field's largest distance from the
    threshold, rounded up to a nice value and capped at 1 (the clipping bound), so that the threshold
    sits at the centre of the colour bar. A function of the released values only (post-processing)."""
    m = float(np.nanmax(np.abs(values))) if np.size(values) else 0.0
    for nice in (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
        if m <= nice:
            return nice
    return 1.0


def _value_ticks(axis, which: str, lo: float, hi: float, ctx: PictureContext, fmt: int = PICTURE_FORMAT) -> None:
    """Ticks in response units with the threshold labelled as such (log axes: round values); where the picture
    states numbers exactly (format 4) the threshold as given and the other ticks in the digits that tell them apart
    (format 3 wrote 6 significant digits: four ticks near 1234567 all read 1.23457e+06)."""
    rm, resp = ctx.response_map, ctx.response
    from matplotlib.ticker import MaxNLocator, NullLocator

    ax = axis.yaxis if which == "y" else axis.xaxis
    if rm.transform == "log":
        ticks = [t for t in _nice_log_ticks(lo, hi, fmt) if not math.isclose(t, rm.threshold, rel_tol=0.08)]
        if fmt >= 5 and len(ticks) < len(_nice_log_ticks(lo, hi, 4)):   # thinned: no label over the threshold's
            gap = (math.log(hi) - math.log(lo)) / THRESHOLD_GAP   # hi / lo may overflow
            ticks = [t for t in ticks if abs(math.log(t / rm.threshold)) > gap]
    if rm.transform != "log" or (fmt >= 5 and not ticks):   # format 5: a log scale too narrow for any round value
        ticks = [t for t in MaxNLocator(6).tick_values(lo, hi) if lo <= t <= hi]   # (clip 1e-9) as a linear one
        width = (hi - lo) or 1.0
        ticks = [t for t in ticks if abs(t - rm.threshold) > 0.08 * width]
    ticks = sorted(ticks + [rm.threshold])
    number = short_number if ctx.exact else None
    labels = [(ctx.value(t) + " (threshold)") if t == rm.threshold else resp.value(t, number) for t in ticks]
    if fmt >= 5 and len(set(labels)) < len(labels):   # ticks nearer than short_number's 1e-9 (a clip of 1e-9)
        rel = max(0.1 * min(b - a for a, b in zip(ticks, ticks[1:])) / max(abs(t) for t in ticks), 1e-17)
        labels = [(ctx.value(t) + " (threshold)") if t == rm.threshold else
                  resp.value(t, lambda x: short_number(x, rel)) for t in ticks]
    ax.set_ticks(ticks, labels=labels)
    ax.set_minor_locator(NullLocator())


def _colorbar_axes(ax):
    """A colour bar exactly as tall as the (equal-aspect) map, just right of it."""
    return ax.inset_axes([1.03, 0.0, 0.035, 1.0])


def _boundary(ax, X0, X1, values, level, **style) -> None:
    """The level-set line, where there is one (a field entirely on one side has no boundary; masked
    points get none); ``style``: more ``contour`` settings (format 3)."""
    if np.ma.count(values) and values.min() < level < values.max():
        ax.contour(X0, X1, values, levels=[level], **_style_line(), **style)


def _sig(x: float) -> float:
    return float(f"{x:.3g}")


def _clip_texts(ctx: PictureContext, lo: float, hi: float) -> tuple[str, str]:
    """The clipping range's ends as the caption states them: 3 significant digits, or (where the picture states
    numbers exactly) the fewest digits from 3 that tell the ends and the threshold apart."""
    resp = ctx.response
    if not ctx.exact:
        return resp.value(_sig(lo)), resp.value(_sig(hi))
    values = (lo, ctx.response_map.threshold, hi)
    for digits in range(3, 18):
        texts = [f"{v:.{digits}g}" for v in values]
        if len(set(texts)) == len(set(values)):
            break
    return resp.value(float(texts[0]), short_number), resp.value(float(texts[2]), short_number)


def _caption_head(field: ReleasedField, ctx: PictureContext, lo: float, hi: float, saturates: bool) -> str:
    """The caption's first sentences of a 2-D map (every picture format): the colours and the white line."""
    resp = ctx.response
    thr = ctx.value(ctx.response_map.threshold)
    low, high = _clip_texts(ctx, lo, hi)
    return (f"Colour: the released {field.noun}, in {resp.axis_label()}"
            + (f"; colours saturate outside the public clipping range {low} to "
               f"{high} (the arrows on the colour bar)" if saturates else
               ", on a scale centred on the threshold") + ". "
            f"White line: the boundary of the released excursion set, where the released {field.noun} crosses "
            f"the threshold {thr} (marked on the colour bar); the side with colours above the mark is where "
            f"{ctx.threshold_text()}.")


def _draw_1d(plt, field: ReleasedField, ctx: PictureContext, fmt: int = PICTURE_FORMAT):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rm, resp = ctx.response_map, ctx.response
    K = field.count
    band, band_label, unreliable = field.band, field.band_label, None
    if field.sd is not None and K == 1 and fmt >= 2:   # a released sd (the grids): its 2-sd band, as the 2-D hatching
        sd2 = RELIABLE_SD * np.asarray(field.sd, dtype=float).reshape(-1)
        unreliable = ~reliable_mask(field.values[0], field.sd.reshape(-1))
        if band is None:
            band = (field.values[0] - sd2, field.values[0] + sd2)
            band_label = "\u00b1 2 sd of the privacy noise only"
    span = colour_span(field.values if band is None else np.concatenate([field.values.ravel(), *band]))
    lo, hi = (float(v) for v in rm.to_response_units([-span, span]))
    x = field.axes[0]
    fig, ax = plt.subplots(figsize=(8.0, 4.6))
    thr = ctx.value(rm.threshold)
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
    _value_ticks(ax, "y", lo, hi, ctx, fmt)
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
    _layout(fig, ax, handles, fmt)
    what = f"the released {field.noun}" if K == 1 else f"the {K} released {field.plural}"
    saturates = span >= 1.0 and np.abs(field.values).max() > 1.0
    low, high = _clip_texts(ctx, lo, hi)
    caption = (f"Line{'s' if K > 1 else ''}: {what}, in {resp.axis_label()}"
               + (f", drawn inside the public clipping range {low} to {high} "
                  "(values beyond it are drawn at its edge)" if saturates else "") + ". Dashed "
               f"line: the threshold {thr}. Shaded: the released excursion set, where {ctx.threshold_text()}"
               + ("" if K == 1 else f" in at least one of the {K} {field.plural}, darker where more of them agree")
               + f". Dotted verticals: the ends of the public domain {ctx.domain_text()}; no data point is shown.")
    if band is not None:
        caption += f" Band: {band_label}."
    if unreliable is not None and unreliable.any():
        sd_words = ("predictive standard deviations (privacy noise and the model's uncertainty together)"
                    if _predictive_sd(field, fmt) else "standard deviations of its privacy noise")
        caption += (f" Hatching: where the released {field.noun} is within two {sd_words} of the threshold "
                    f"({100 * float(unreliable.mean()):.0f}% of the domain): there the release cannot tell on which "
                    "side of the threshold the response lies. Other errors (cells too coarse for a feature) are not "
                    "marked.")
    return fig, caption
