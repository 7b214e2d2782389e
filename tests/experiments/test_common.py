"""What the experiments share (privgp.experiments.common)."""
from __future__ import annotations

import pandas as pd

from privgp.experiments.common import markdown_table


def test_a_pipe_inside_a_cell_is_escaped_so_the_columns_stay_aligned():
    """Walk-through 16: "Lemma B.7 (1-D exponential kernel, |y| <= M_Y)" gave each row two extra cells, every
    value after it under the wrong header. A rendered row has as many cells as the header."""
    df = pd.DataFrame({"lemma": ["Lemma B.7 (1-D exponential kernel, |y| <= M_Y)"], "a|b": [0.5], "delta": [1e-3]})
    lines = markdown_table(df).splitlines()
    unescaped = [line.replace("\\|", "") for line in lines]
    assert len({line.count("|") for line in unescaped}) == 1
    assert lines[2] == "| Lemma B.7 (1-D exponential kernel, \\|y\\| <= M_Y) | 0.5 | 0.001 |"
