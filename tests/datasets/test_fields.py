"""The synthetic fields of the forecast and the utility study (privgp.datasets.fields)."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.interpolate import RegularGridInterpolator

from privgp.datasets import fields


@given(st.integers(0, 2**32 - 1))
def test_rough_is_scipys_bilinear_interpolation(seed):
    """The rough family's own bilinear interpolation equals scipy's RegularGridInterpolator (linear) to
    rounding, inside the square, on its edges and (clipped) outside it."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(-0.2, 1.2, (500, 2))
    u[:6] = [[0, 0], [1, 1], [0, 1], [1, 0], [0.5, 1.0], [1.0, 0.25]]
    ax = np.linspace(0.0, 1.0, fields._ROUGH_MESH)
    want = RegularGridInterpolator((ax, ax), fields._rough_table())(np.clip(u, 0.0, 1.0))
    np.testing.assert_allclose(fields._rough(u), want, rtol=0, atol=1e-12)


def test_rough_at_the_mesh_nodes_is_the_table():
    ax = np.linspace(0.0, 1.0, fields._ROUGH_MESH)
    i = np.arange(0, fields._ROUGH_MESH, 7)
    pts = np.array([[ax[a], ax[b]] for a in i for b in i])
    np.testing.assert_allclose(fields._rough(pts), fields._rough_table()[np.ix_(i, i)].ravel(), rtol=0, atol=1e-15)


def test_the_shipped_rough_table_is_the_public_draw():
    """src/privgp/datasets/data/rough_field.npy (scripts/generate_rough_field.py) equals a fresh exact draw."""
    np.testing.assert_allclose(fields._rough_table(), fields.draw_rough_table(), rtol=0, atol=1e-12)
