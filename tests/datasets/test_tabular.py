"""CSV loading for releases: checks, one-line errors, and the content digest."""
from __future__ import annotations

import numpy as np
import pytest

from privgp.datasets import baltimore
from privgp.datasets.tabular import load_embedded_baltimore, load_table, records
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


def test_digest_is_of_the_records_used_not_of_the_file(tmp_path):
    """The ledger's fingerprint input: the parsed values of the used columns in canonical order (issue 10)."""
    a = load_table(write(tmp_path, "x,v,w\n1,0.2616,3\n4,5,6\n", "a.csv"), ["x"], "v")
    same = [load_table(write(tmp_path, "w,x,v\n6,4,5\n3,1,0.2616\n", "b.csv"), ["x"], "v"),       # order
            load_table(write(tmp_path, "x,v\n1,0.26160\n4.0,5e0\n", "c.csv"), ["x"], "v"),        # format
            load_table(write(tmp_path, "x,v,w,extra\n1,0.2616,3,z\n4,5,7,q\n", "d.csv"), ["x"], "v"),  # unused
            load_table(write(tmp_path, "x,v\n1,0.2616\n4,5\n", "renamed.csv"), ["x"], "v")]
    for d in same:
        assert d.content_digest == a.content_digest
    different = [load_table(write(tmp_path, "x,v\n1,0.2617\n4,5\n", "e.csv"), ["x"], "v"),
                 load_table(write(tmp_path, "x,v\n1,0.2616\n4,5\n4,5\n", "f.csv"), ["x"], "v"),  # a duplicate
                 load_table(write(tmp_path, "x,v,w\n1,0.2616,3\n4,5,6\n", "g.csv"), ["w"], "v")]
    for d in different:
        assert d.content_digest != a.content_digest
    # the embedded table and the same records from a CSV are the same dataset
    emb = load_embedded_baltimore()
    lines = ["x,y,price"] + [f"{float(x)!r},{float(y)!r},{float(p)!r}" for (x, y), p in zip(emb.X, emb.response)]
    assert load_table(write(tmp_path, "\n".join(lines) + "\n", "copy.csv"), ["x", "y"], "price").content_digest == \
        emb.content_digest


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


def test_a_bad_value_is_named_by_its_column_and_its_data_row_counting_from_1():
    """Walk-through 16: records() said "y ... (first at row 5)" (0-based) of the response column 'no2', where
    privgp release says "data row 6": the column is named and rows count from 1, as everywhere else."""
    import pandas as pd

    from privgp.errors import DataError

    df = pd.DataFrame({"x": np.arange(8.0), "y": np.arange(8.0), "no2": np.arange(8.0)})
    df.loc[5, "no2"] = np.nan
    with pytest.raises(DataError, match=r"response column 'no2' has 1 missing.*first at data row 6"):
        records(df, "no2", coordinates=["x", "y"])
    with pytest.raises(DataError, match=r"^X has 1 missing.*first at data row 1,"):
        records(np.array([[np.inf, 0.0], [1.0, 1.0]]), [1.0, 2.0])
