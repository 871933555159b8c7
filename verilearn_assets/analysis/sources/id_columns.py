"""ID-like columns: row keys that must not be read as numeric variables.

A mean of an identifier, or a correlation with a row number, is not an analysis question.
The ingest profile already flags the clearest keys (`ColumnProfile.id_like`); this module
re-derives the judgement from the table itself, with a wider net for names that only say
"key" in data-frame idiom (`index`, `Unnamed: 0`, `row`, `*_no`), so the convention screen
can re-run a question with and without them (see `conventions.py`).
"""

from __future__ import annotations

import re

import pandas as pd

ID_NAME = re.compile(
    r"^(?:id|ids|uuid|key|idx|index|row|rownum|row_?number|unnamed: ?\d+|level_\d+)$"
    r"|(?:^|[_\s.\-])(?:id|uuid|key|idx)$"
    r"|[a-z]Id$",
    re.IGNORECASE,
)


def _evenly_stepped(values: pd.Series) -> bool:
    """Sorted integers with one constant step (0..n-1, 1001, 1002, ...)."""
    steps = values.sort_values().diff().dropna().unique()
    return len(steps) == 1 and steps[0] != 0


def is_id_column(name: str, series: pd.Series) -> bool:
    """Every row has its own value and the name or the values say it is a key.

    Text keys need only be unique per row; integers need a key-like name or an evenly
    stepped sequence (a unique count is not a key by itself); floats need the name.
    """
    n = len(series)
    if n < 2 or series.isna().any() or series.nunique() != n:
        return False
    named = bool(ID_NAME.search(name.strip()))
    if pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_integer_dtype(series):
        return named or _evenly_stepped(series.astype("int64"))
    if pd.api.types.is_float_dtype(series):
        is_whole = bool((series == series.round()).all())
        return named and is_whole
    if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
        return True
    return False


def id_like_columns(df: pd.DataFrame) -> list[str]:
    """Names of the ID-like columns of `df`, in column order."""
    return [str(c) for c in df.columns if is_id_column(str(c), df[c])]


def numeric_id_columns(df: pd.DataFrame) -> list[str]:
    """The ID-like columns a numeric computation could pick up (integers and floats)."""
    return [
        c
        for c in id_like_columns(df)
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
    ]
