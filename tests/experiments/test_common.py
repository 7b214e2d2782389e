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


def test_markdown_tables_round_bounds_to_their_safe_side():
    """Red team 25: fig1.md printed certified epsilons rounded to nearest, below the CSV's (4.575e+10 for
    45753879214.45). Bounds round up, lower bounds down, exact and measured values and other columns to nearest."""
    import pandas as pd

    from privgp.experiments.common import markdown_table

    df = pd.DataFrame({"epsilon": [45753879214.45], "rdp": [0.10004], "eps_lower": [2.37199],
                       "eps_exact_pair": [7.28666], "r": [0.123456]})
    row = markdown_table(df).splitlines()[2].strip("| ").split(" | ")
    assert row == ["4.576e+10", "0.1001", "2.371", "7.287", "0.1235"], row


def test_named_upper_bound_columns_are_rounded_up_and_unknown_names_refused():
    """Red team 26: seed002-audit's dpsetconv_profile.md printed the certified GDP mu 0.388401248 as 0.388401 (below
    the bound: its name says "mu", not "epsilon"); a table names such columns, and a name it does not have is an
    error rather than a silent fall back to nearest."""
    import pytest

    df = pd.DataFrame({"mu_exact": [0.3473971], "mu_bound": [0.388401248], "bound": [19.99999999]})
    assert markdown_table(df, ".6g").splitlines()[2] == "| 0.347397 | 0.388401 | 20 |"
    assert markdown_table(df, ".6g", upper=("mu_bound", "bound")).splitlines()[2] == "| 0.347397 | 0.388402 | 20 |"
    with pytest.raises(ValueError, match="mu_bnd"):
        markdown_table(df, ".6g", upper=("mu_bnd",))


def test_the_committed_audit_tables_print_their_bounds_rounded_up():
    from pathlib import Path

    from privgp.experiments.seed002.figures import MEAN_SENSITIVITY_UPPER, PROFILE_UPPER

    run = Path(__file__).resolve().parents[2] / "docs" / "runs" / "seed002-audit"
    for stem, fmt, upper in [("dpsetconv_profile", ".6g", PROFILE_UPPER), ("mean_sensitivity", ".5g",
                                                                          MEAN_SENSITIVITY_UPPER)]:
        assert (run / f"{stem}.md").read_text() == markdown_table(pd.read_csv(run / f"{stem}.csv"), fmt, upper) + "\n"


def test_epsilon_and_sensitivity_columns_of_any_spelling_are_rounded_up():
    """Red team 18d: table1's settings column "eps*" printed the certified 917.835 as 917.8 (the word was "eps*"),
    its results table the same; fig2_bound.md's "Delta_n" (a sensitivity bound) 100.237 as 100.2."""
    from privgp.experiments.seed000.excursion_1d import _fmt

    df = pd.DataFrame({"eps*": [917.8351358920122], "Delta_n": [100.23744672545445], "Delta_found": [100.23744672545445],
                       "sigma*": [0.123456]})
    assert markdown_table(df).splitlines()[2] == "| 917.9 | 100.3 | 100.2 | 0.1235 |"
    assert _fmt(917.8351358920122, "eps") == "917.9" and _fmt(45753879214.45, "eps") == "4.6e10"
