"""Column profiles: what a question generator needs to know before it asks anything.

Kinds follow the typed dtype (see ingest/read_table.py); text columns are split into
`categorical` (few distinct values) and `text`. `id_like` marks row keys, which make
poor targets for aggregation questions.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from verilearn_assets.core.records import ColumnProfile

TOP_VALUES = 5
CATEGORICAL_MAX_UNIQUE = 50
CATEGORICAL_MAX_RATIO = 0.5  # distinct / present values
_ID_NAME = re.compile(
    r"(?:^|[_\s.\-])(?:id|uuid|key|code)$|^(?:id|uuid|key|code)$|[a-z]Id$", re.IGNORECASE
)


def profile_frame(df: pd.DataFrame) -> list[ColumnProfile]:
    """One ColumnProfile per column, in column order."""
    return [profile_column(str(name), df[name]) for name in df.columns]


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def column_kind(series: pd.Series, n_present: int, n_unique: int) -> str:
    if n_present == 0:
        return "empty"
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_integer_dtype(series):
        return "integer"
    if pd.api.types.is_numeric_dtype(series):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    if n_unique <= CATEGORICAL_MAX_UNIQUE and n_unique <= max(2, CATEGORICAL_MAX_RATIO * n_present):
        return "categorical"
    return "text"


def is_id_like(name: str, series: pd.Series, kind: str, n_present: int, n_unique: int) -> bool:
    """A row key: every row has a distinct value, and the name or the values say so.

    Text keys need only be unique; integers must also be named like an id or run as a
    consecutive sequence (a count that happens to be unique is not a key); floats only
    with an id-like name.
    """
    n = len(series)
    if n < 2 or n_present != n or n_unique != n:
        return False
    named = bool(_ID_NAME.search(name))
    if kind in ("text", "categorical"):
        return True
    if kind == "integer":
        values = series.astype("int64")
        consecutive = int(values.max()) - int(values.min()) == n - 1
        return named or consecutive
    if kind == "numeric":
        return named
    return False


def profile_column(name: str, series: pd.Series) -> ColumnProfile:
    n = len(series)
    present = series.dropna()
    n_present = len(present)
    n_unique = int(present.nunique())
    kind = column_kind(series, n_present, n_unique)
    profile = {
        "name": name,
        "kind": kind,
        "dtype": str(series.dtype),
        "missing_pct": round(100.0 * (n - n_present) / n, 4) if n else 0.0,
        "n_unique": n_unique,
        "id_like": is_id_like(name, series, kind, n_present, n_unique),
    }
    if kind in ("integer", "numeric") and n_present:
        numbers = present.astype("float64")
        with np.errstate(all="ignore"):  # inf in the data: the stats become None below
            profile.update(
                mean=_finite(numbers.mean()),
                min=_finite(numbers.min()),
                max=_finite(numbers.max()),
                median=_finite(numbers.median()),
                std=_finite(numbers.std()) if n_present > 1 else None,
                skew=_finite(numbers.skew()) if n_present > 2 else None,
            )
    if kind in ("categorical", "boolean", "text") and n_present:
        counts = present.astype("str").value_counts()
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        profile["top_values"] = [value for value, _ in ranked[:TOP_VALUES]]
    return ColumnProfile(**profile)
