"""Run compiled code in-process on the real table to drop programs whose answer is unusable.

This is a cheap pre-filter for our own generated code (NaN answers, empty groups, tests on
too few rows); the authoritative check is the sandboxed re-execution done by verification.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from pathlib import Path
from types import CodeType
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
    if isinstance(value, list):  # template answers such as a pair of column names
        if not value:
            raise AnswerUnusable("empty list answer")
        for v in value:
            check_answer(v)
        return
    raise AnswerUnusable(f"answer of unsupported type {type(value).__name__}")


@lru_cache(maxsize=512)
def _compiled(code: str) -> CodeType:
    """Compiled once per code text: the screen runs one program on several tables (the
    convention variants, the perturbed tables, the step ablations)."""
    return compile(code, "<procedural>", "exec")


def run_in_process(
    code: str,
    df: pd.DataFrame,
    seen: dict[str, Any] | None = None,
    preset: dict[str, Any] | None = None,
) -> Any:
    """Execute compiled code and return the single submitted value; `seen`, when given,
    receives every hooked value by hook name. `preset` names values already computed (the
    steps a variant of a program shares with it), so `code` may be the rest only."""
    submitted: list[Any] = []

    def hook(value: Any, code_line: str, name: str = "", depends_on: list[str] | None = None):
        if seen is not None:
            seen[name] = value
        return value

    env = {
        "df": df.copy(),
        "pd": pd,
        "np": np,
        "stats": stats,
        "hook": hook,
        "submit": submitted.append,
        **(preset or {}),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            exec(_compiled(code), env)
    if len(submitted) != 1:
        raise AnswerUnusable(f"expected one submission, got {len(submitted)}")
    check_answer(submitted[0])
    return submitted[0]


def _same_values(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return not isinstance(a, bool) and not isinstance(b, bool) and float(a) == float(b)
    if not isinstance(a, pd.Series) or not isinstance(b, pd.Series) or len(a) != len(b):
        return False
    if not (pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b)):
        return False
    x, y = a.to_numpy(dtype=float, na_value=np.nan), b.to_numpy(dtype=float, na_value=np.nan)
    return bool(np.allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True))


def noop_steps(
    steps: list[tuple[str, str, list[str | None]]], seen: dict[str, Any], n_rows: int
) -> str | None:
    """Why a step did nothing on this table, given `(name, family, input names)` per step
    (None names the table itself) and the hooked values by name. A one-input step whose
    output equals its input (a series or a number) is a `meaningless_chain`; a filter
    that keeps every row of its input is `degenerate`."""
    for name, family, inputs in steps:
        out = seen.get(name)
        src = seen.get(inputs[0]) if inputs and inputs[0] is not None else None
        if family == "filter" and isinstance(out, pd.DataFrame):
            before = n_rows if src is None else len(src)
            if len(out) == before:
                return f"degenerate: filter step {name} keeps every one of its {before} rows"
        if len(inputs) == 1 and family != "filter" and src is not None and _same_values(out, src):
            return f"meaningless_chain: step {name} leaves its input unchanged"
    return None
