"""Run compiled code in-process on the real table to drop programs whose answer is unusable.

This is a cheap pre-filter for our own generated code (NaN answers, empty groups, tests on
too few rows); the authoritative check is the sandboxed re-execution done by verification.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


class AnswerUnusable(ValueError):
    """The program ran but its answer is NaN/inf/empty, or it submitted other than once."""


def load_table(path: str | Path) -> pd.DataFrame:
    """Read a Parquet or CSV table; the error names the file."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: table file not found")
    if p.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(p)
    if p.suffix.lower() in (".csv", ".txt"):
        return pd.read_csv(p)
    raise ValueError(f"{p}: unsupported table format {p.suffix!r} (want .parquet or .csv)")


def check_answer(value: Any) -> None:
    """Raise `AnswerUnusable` unless the value is a finite, non-empty JSON-friendly answer."""
    if isinstance(value, bool) or isinstance(value, str):
        if isinstance(value, str) and not value:
            raise AnswerUnusable("empty string answer")
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AnswerUnusable(f"non-finite answer {value!r}")
        return
    if isinstance(value, dict):
        if not value:
            raise AnswerUnusable("empty mapping answer")
        for v in value.values():
            check_answer(v)
        return
    raise AnswerUnusable(f"answer of unsupported type {type(value).__name__}")


def run_in_process(code: str, df: pd.DataFrame) -> Any:
    """Execute compiled code with a no-op hook and return the single submitted value."""
    submitted: list[Any] = []

    def hook(value: Any, code_line: str, name: str = "", depends_on: list[str] | None = None):
        return value

    env = {
        "df": df.copy(),
        "pd": pd,
        "np": np,
        "stats": stats,
        "hook": hook,
        "submit": submitted.append,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            exec(compile(code, "<procedural>", "exec"), env)
    if len(submitted) != 1:
        raise AnswerUnusable(f"expected one submission, got {len(submitted)}")
    check_answer(submitted[0])
    return submitted[0]
