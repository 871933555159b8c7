"""Real tables for the procedural-source tests, and a profile built from a DataFrame.

The profile here is deliberately small and independent of the project's profiler: the
generator must work from any honest `ColumnProfile`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd

from verilearn_assets.core.records import ColumnProfile

# statsmodels datasets shipped inside the statsmodels wheel (no download)
STATSMODELS_TABLES = (
    "fair",
    "star98",
    "macrodata",
    "grunfeld",
    "anes96",
    "statecrime",
    "modechoice",
)


def statsmodels_table(name: str) -> pd.DataFrame:
    return importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data


def profile(df: pd.DataFrame) -> list[ColumnProfile]:
    out = []
    for name in df.columns:
        s = df[name]
        n_unique = int(s.nunique())
        if len(s) and s.isna().all():
            kind = "empty"
        elif pd.api.types.is_bool_dtype(s):
            kind = "boolean"
        elif pd.api.types.is_datetime64_any_dtype(s):
            kind = "datetime"
        elif pd.api.types.is_integer_dtype(s):
            kind = "integer"
        elif pd.api.types.is_float_dtype(s):
            kind = "numeric"
        else:
            kind = "categorical" if n_unique <= 50 else "text"
        id_like = kind in ("integer", "text", "categorical") and n_unique == len(s) > 20
        numeric = kind in ("numeric", "integer")
        out.append(
            ColumnProfile(
                name=str(name),
                kind=kind,
                dtype=str(s.dtype),
                missing_pct=float(s.isna().mean() * 100),
                n_unique=n_unique,
                id_like=id_like,
                mean=float(s.mean()) if numeric else None,
                std=float(s.std()) if numeric else None,
                top_values=[str(v) for v in s.value_counts().index[:3]],
            )
        )
    return out


def write_parquet(df: pd.DataFrame, directory: Path, name: str) -> str:
    path = directory / f"{name}.parquet"
    df.to_parquet(path)
    return str(path)


def mixed_table(n: int = 120, seed: int = 7) -> pd.DataFrame:
    """A small table with every column kind, missing values and an id column."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10, 0.5, n)
    income[::17] = np.nan
    return pd.DataFrame(
        {
            "customer_id": np.arange(1000, 1000 + n),
            "region": rng.choice(["north", "south", "east", "west"], n),
            "plan": rng.choice(["basic", "plus"], n),
            "age": rng.integers(18, 80, n),
            "income": income,
            "score": rng.normal(50, 12, n),
            "active": rng.random(n) > 0.4,
            "signup": pd.date_range("2020-01-01", periods=n, freq="D"),
            "note": [f"free text {i}" for i in range(n)],
        }
    )


def numeric_profile(n_columns: int) -> list[ColumnProfile]:
    """A wide all-numeric profile, for counting search work against the column count."""
    return [
        ColumnProfile(
            name=f"c{i:03d}",
            kind="numeric",
            dtype="float64",
            missing_pct=0.0,
            n_unique=100,
            mean=0.0,
            std=1.0,
        )
        for i in range(n_columns)
    ]
