"""Write the rough synthetic field's table, src/privgp/datasets/data/rough_field.npy (package data).

The table is one exact prior draw of the exponential-kernel GP with a public seed
(privgp.datasets.fields.draw_rough_table); shipping it spares every release and forecast the sampler and its
scipy imports. tests/datasets/test_fields.py checks the shipped table equals a fresh draw.

    python scripts/generate_rough_field.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from privgp.datasets.fields import ROUGH_TABLE, draw_rough_table

OUT = Path(__file__).resolve().parents[1] / "src" / "privgp" / "datasets" / "data" / ROUGH_TABLE

if __name__ == "__main__":
    np.save(OUT, draw_rough_table(), allow_pickle=False)
    print(f"wrote {OUT}")
