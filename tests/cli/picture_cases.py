"""Public-only fields and contexts the picture tests draw (tests/cli/test_release_figure_format3.py) and the
reference hashes of earlier picture formats were drawn from (tests/data/pictures/make_reference.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from privgp.cli.release_figure import PictureContext, ReleasedField, ResponseDisplay
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

PRICE = ResponseDisplay("sale price", "$1,000", "${:g}k")
#: the long axis labels and metric domain of a ``--crs EPSG:4326`` release (walk-through 15)
CRS_LABEL = "{}_m (metres, local azimuthal equidistant projection centred on lon -76.6, lat 39.3)"


def context(box: Box, labels=("east", "north"), transform: str = "log", unit: str = "", note: str = "",
            response: ResponseDisplay = PRICE) -> PictureContext:
    rm = ResponseMap(threshold=50.0 if transform == "log" else 0.0, clip=1.0, transform=transform)
    return PictureContext(domain=box, axis_labels=tuple(labels)[: box.dim], response=response, response_map=rm,
                          epsilon=5.0, delta=1e-6, note=note, domain_unit=unit)


def grid(box: Box, shape) -> tuple[np.ndarray, ...]:
    return tuple(np.linspace(lo, hi, m) for lo, hi, m in zip(box.lower, box.upper, shape))


def front(box: Box, shape=(61, 41), sd=None, noun="smoothed Laplace noisy-grid map") -> ReleasedField:
    """A map crossing the threshold along a wavy north-south front; ``sd``: a number, an array or None."""
    axes = grid(box, shape)
    X, Y = np.meshgrid(*axes, indexing="ij")
    u = (X - box.lower[0]) / box.widths[0] - 0.5 - 0.15 * np.sin(2 * np.pi * (Y - box.lower[1]) / box.widths[1])
    values = 0.6 * np.tanh(4.0 * u)
    sd_grid = None if sd is None else np.broadcast_to(np.asarray(sd, dtype=float), values.shape).copy()
    return ReleasedField(axes=axes, values=values, noun=noun, plural=noun + "s", sd=sd_grid)


def cases() -> dict:
    """name -> (field, context)."""
    box = Box((850.0, 500.0), (1000.0, 590.0))
    crs = Box((-12957.3, -11102.0), (12957.3, 11112.9))
    axes = grid(box, (61, 41))
    _, Y = np.meshgrid(*axes, indexing="ij")
    vote_axes = grid(Box((0.0, 0.0), (4.0, 2.0)), (41, 21))
    VX, VY = np.meshgrid(*vote_axes, indexing="ij")
    x = np.linspace(0.0, 10.0, 201)
    return {
        # reliable in the south (sd 0.001), unreliable in the north (sd 0.2): the boundary runs through both
        "partial": (front(box, sd=np.where(Y > 545.0, 0.2, 0.001)), context(box, ("x", "y"))),
        # every point within 2 sd of the threshold near the front: the boundary only in unreliable areas
        "unreliable": (front(box, sd=0.25), context(box, ("x (Maryland grid; unit not documented)",
                                                          "y (Maryland grid; unit not documented)"))),
        "crs": (front(crs, (61, 52), sd=0.25), context(crs, (CRS_LABEL.format("x"), CRS_LABEL.format("y")),
                                                        unit="m", response=ResponseDisplay("price"))),
        "plain": (front(Box((0.0, 0.0), (4.0, 2.0)), (41, 21), noun="posterior sample path"),
                  context(Box((0.0, 0.0), (4.0, 2.0)), transform="identity",
                          note="MOSTLY NOISE by its forecast (expected IoU 0.28 < 0.5): released anyway")),
        "vote": (ReleasedField(axes=vote_axes, values=np.stack([0.5 * np.sin(VX + k) + 0.2 * np.cos(2 * VY)
                                                                 for k in range(3)]),
                               noun="posterior sample path", plural="posterior sample paths"),
                 context(Box((0.0, 0.0), (4.0, 2.0)))),
        "oned": (ReleasedField(axes=(x,), values=(0.5 * np.sin(x))[None], noun="noisy-grid map",
                               plural="noisy-grid maps", sd=np.full(201, 0.15)), context(Box((0.0,), (10.0,)))),
        # the DP sparse GP's: a predictive mean whose sd is the model's predictive one (picture format 6 says so)
        "predictive": (replace(front(box, sd=np.where(Y > 545.0, 0.3, 0.05), noun="predictive mean"),
                               sd_covers="predictive"), context(box, ("x", "y"))),
        "predictive-oned": (ReleasedField(axes=(x,), values=(0.5 * np.sin(x))[None], noun="predictive mean",
                                          plural="predictive means", sd=np.full(201, 0.15), sd_covers="predictive"),
                            context(Box((0.0,), (10.0,)))),
    }


def pixels_sha256(png: bytes) -> str:
    """sha256 of the decoded RGBA pixels (with the size): the same picture whatever the PNG encoder's filters."""
    import hashlib
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGBA")
    return hashlib.sha256(f"{img.width}x{img.height}:".encode() + img.tobytes()).hexdigest()
