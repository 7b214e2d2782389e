"""CSV loading for releases: checks, one-line errors, and the content digest."""
from __future__ import annotations

import numpy as np
import pytest

from privgp.datasets import baltimore
from privgp.datasets.tabular import load_embedded_baltimore, load_table
from privgp.errors import DataError


def write(tmp_path, text, name="d.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_load_2d_and_1d(tmp_path):
    p = write(tmp_path, "a,b,val,other\n0.5,1.5,3,x\n0.25, 2,-1,y\n")
    d = load_table(p, ["a", "b"], "val")
    np.testing.assert_array_equal(d.X, [[0.5, 1.5], [0.25, 2.0]])
    np.testing.assert_array_equal(d.response, [3.0, -1.0])
    assert (d.n, d.dim) == (2, 2)
    d1 = load_table(p, ["b"], "val")
    assert d1.X.shape == (2, 1)


def test_digest_ignores_row_and_column_order_but_not_content(tmp_path):
    a = load_table(write(tmp_path, "x,v,w\n1,2,3\n4,5,6\n", "a.csv"), ["x"], "v")
    b = load_table(write(tmp_path, "w,x,v\n6,4,5\n3,1,2\n", "b.csv"), ["x"], "v")
    c = load_table(write(tmp_path, "x,v,w\n1,2,3\n4,5,7\n", "c.csv"), ["x"], "v")  # other column changed
    assert a.content_digest == b.content_digest
    assert a.content_digest != c.content_digest


@pytest.mark.parametrize("text, cols, resp, match", [
    ("x,v\n1,2\n", ["x"], "response", "not found"),
    ("x,v\n1,abc\n", ["x"], "v", "non-numeric"),
    ("x,v\n1,\n2,3\n", ["x"], "v", "missing"),
    ("x,v\n1,nan\n", ["x"], "v", "non-numeric"),
    ("x,v\n1,inf\n", ["x"], "v", "non-numeric"),
    ("x,v\n", ["x"], "v", "no data rows"),
    ("", ["x"], "v", "empty"),
    ('x,v\n1,"2\n', ["x"], "v", "cannot parse"),
    ("x,x\n1,2\n", ["x"], "v", "repeated|not found"),
    ("x,v\n1,2\n", ["x", "v"], "v", "distinct"),
    ("x,y,z,v\n1,2,3,4\n", ["x", "y", "z"], "v", "1 or 2"),
])
def test_bad_tables(tmp_path, text, cols, resp, match):
    with pytest.raises(DataError, match=match) as e:
        load_table(write(tmp_path, text), cols, resp)
    assert "\n" not in str(e.value)


def test_missing_unreadable_and_binary(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_table(tmp_path / "nope.csv", ["x"], "v")
    with pytest.raises(DataError, match="not a file"):
        load_table(tmp_path, ["x"], "v")
    p = tmp_path / "bin.csv"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match="UTF-8"):
        load_table(p, ["x"], "v")


def test_embedded_baltimore():
    d = load_embedded_baltimore()
    assert d.n == 211 and d.coordinates == ("x", "y") and d.response_name == "price"
    assert np.all(baltimore.PUBLIC_BOX.contains(d.X))
    assert np.all(d.response > 0)
