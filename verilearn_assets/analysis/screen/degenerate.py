"""Degenerate answers: questions whose answer a student could give without the data.

Three signs, each a rejection with reason `degenerate: ...`:
- the answer is exactly zero (a scalar, or every number of a mapping): typically a
  difference of tied values, or a count of nothing;
- a field that counts what a step removed (rows removed, rounds, outliers, a shift) is zero,
  so the step was a no-op on this table;
- every number in the answer is unchanged when the table is perturbed (seeded row
  subsamples): the answer does not depend on the values at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.dryrun import AnswerUnusable, run_in_process
from verilearn_assets.core.answers import parse_answer

NOOP_FIELD = re.compile(r"remov|round|outlier|drop|trim|shift|excluded", re.IGNORECASE)


def _numbers(value: Any, path: str = "answer") -> Iterator[tuple[str, float]]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int | float):
        yield path, float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{path}[{i}]")


def zero_reason(answer: Any) -> str | None:
    """Why an answer of zeros is degenerate, or None."""
    nums = list(_numbers(answer))
    if nums and all(v == 0 for _, v in nums):
        return "degenerate: the answer is exactly 0 (ties or nothing to count)"
    if isinstance(answer, dict):
        for name, v in nums:
            if v == 0 and NOOP_FIELD.search(name):
                return f"degenerate: '{name}' is 0, so the step it counts is a no-op here"
    return None


def perturbed(df: pd.DataFrame, k: int, fraction: float, seed: int) -> Iterator[pd.DataFrame]:
    """`k` seeded subsamples keeping `fraction` of the rows, in table order."""
    rng = np.random.default_rng(seed)
    n = max(3, int(round(len(df) * fraction)))
    for _ in range(k):
        keep = np.sort(rng.choice(len(df), size=min(n, len(df)), replace=False))
        yield df.iloc[keep].reset_index(drop=True)


def constant_reason(
    cand: Candidate, df: pd.DataFrame, answer: Any, k: int, fraction: float, seed: int
) -> str | None:
    """Degenerate when every float of the answer is identical on `k` perturbed tables.

    Integers, labels and booleans may legitimately survive a subsample, so only answers
    with at least one non-integral number are judged.
    """
    floats = [(p, v) for p, v in _numbers(answer) if not float(v).is_integer()]
    if not floats:
        return None
    for sub in perturbed(df, k, fraction, seed):
        try:
            got = parse_answer(json.dumps(run_in_process(cand.code, sub)))
        except (AnswerUnusable, ArithmeticError, ValueError, KeyError, IndexError, TypeError):
            return None  # the perturbed table breaks the program: nothing shown constant
        if dict(_numbers(got)) != dict(_numbers(answer)):
            return None
    return (
        f"degenerate: the answer stays {json.dumps(answer)[:80]} on {k} perturbed tables "
        f"({fraction:.0%} row subsamples): it does not depend on the data"
    )
