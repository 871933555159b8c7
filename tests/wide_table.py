"""A wide profiled table (the context budget's hardest table prompt), shared by the
budget policy tests and the GRPO prompt-budget tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.records import TableRecord


def wide_table(n_cols: int = 500, path: str = "/nonexistent/wide.parquet") -> TableRecord:
    """`n_cols` numeric columns; every fifth one is 90% missing (the "rare" ones)."""
    rng = np.random.default_rng(3)
    data = {}
    for i in range(n_cols):
        col = np.round(rng.normal(size=20), 3)
        if i % 5 == 4:
            col[:18] = np.nan
        data[f"c{i}"] = col
    df = pd.DataFrame(data)
    return TableRecord(
        id="wide",
        dataset="toy",
        name="wide",
        split="dev",
        path=path,
        n_rows=len(df),
        n_columns=n_cols,
        sha256="0" * 64,
        columns=profile_frame(df),
    )
