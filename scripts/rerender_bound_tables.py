"""Re-render the Markdown tables of docs/runs/seed002-audit from their committed CSVs, with the certified upper bounds
(GDP mu bounds, the certified delta, the mean-sensitivity bound) rounded up (red team 26): the same call
experiments.seed002.figures.audit makes, on the same numbers. Run from the repository root."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from privgp.experiments.common import markdown_table
from privgp.experiments.seed002.figures import MEAN_SENSITIVITY_UPPER, PROFILE_UPPER

RUN = Path("docs/runs/seed002-audit")
for stem, floatfmt, upper in [("dpsetconv_profile", ".6g", PROFILE_UPPER), ("mean_sensitivity", ".5g",
                                                                              MEAN_SENSITIVITY_UPPER)]:
    df = pd.read_csv(RUN / f"{stem}.csv")
    (RUN / f"{stem}.md").write_text(markdown_table(df, floatfmt=floatfmt, upper=upper) + "\n")
    print(f"{RUN / stem}.md")
