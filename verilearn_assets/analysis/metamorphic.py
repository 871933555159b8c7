"""Metamorphic screens: what a candidate's answer does when the table or the program changes.

Clean re-execution proves an answer reproducible, not meaningful. Three relations catch
answers that are right by construction rather than by the data:

- **data dependence**: the reference re-runs on `k` tables of the same shape (rows drawn
  with replacement, then each column's values permuted on their own, seeded). A numeric
  answer identical on every one of them is fixed by the shape (1/sqrt(n), a Spearman of a
  column with its own log) → `degenerate_data_independent`. A template declares the
  questions legitimately asked of the shape (`Template.shape_only`);
- **step ablation** (procedural chains): each step whose output has the type of its first
  input is dropped in turn; if the answer is unchanged on the table and on every perturbed
  table, the step is redundant → `redundant_step`. Unlike an adjacent-pair rule this finds
  a step cancelled by one three steps later;
- **construction tautology**: a label answer that equals a value the question itself fixes
  (the only level a filter leaves, or a quoted value of the wording) → `tautology`.

Labels, booleans and test choices are not judged by data dependence: they take few values,
and a correct answer often survives resampling. Everything runs in-process on our own
generated code, where the procedural dry run already runs it (`programs.dryrun`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from verilearn_assets.analysis.candidate import Candidate
from verilearn_assets.analysis.programs.compile import compile_program
from verilearn_assets.analysis.programs.dryrun import run_in_process
from verilearn_assets.analysis.programs.operators import BY_NAME
from verilearn_assets.analysis.programs.program import (
    SOURCE,
    Program,
    ProgramError,
    Step,
    validate,
)
from verilearn_assets.analysis.programs.types import TABLE
from verilearn_assets.core.answers import parse_answer

DATA_INDEPENDENT = "degenerate_data_independent"
REDUNDANT = "redundant_step"
TAUTOLOGY = "tautology"
SCREEN_REASONS = (DATA_INDEPENDENT, REDUNDANT, TAUTOLOGY)
# answer kinds whose sameness on every perturbed table is evidence: numbers vary with the
# data; a label, a boolean or a chosen test legitimately often does not
JUDGED_KINDS = frozenset({"number", "integer", "mapping"})


def _untie(col: pd.Series) -> pd.Series:
    """A float column with its repeated values nudged apart by 1e-9 of its spread: a draw
    with replacement repeats values, and an answer fixed for untied data (the kurtosis of
    squared percentile ranks) must not move only because the perturbation made ties."""
    if not pd.api.types.is_float_dtype(col):
        return col
    dup = col.duplicated(keep="first") & col.notna()
    if not dup.any():
        return col
    scale = float(col.std()) if col.notna().sum() > 1 and col.std() > 0 else 1.0
    out = col.copy()
    out[dup] = col[dup] + 1e-9 * scale * np.arange(1, int(dup.sum()) + 1)
    return out


def same_shape_tables(df: pd.DataFrame, k: int, seed: int) -> list[pd.DataFrame]:
    """`k` seeded tables with `df`'s rows and columns: rows drawn with replacement, then
    each column permuted on its own (marginals move, relations between columns break);
    float values repeated by the draw are nudged apart (`_untie`)."""
    rng = np.random.default_rng(seed)
    n = len(df)
    out = []
    for _ in range(k):
        rows = df.iloc[rng.integers(0, n, size=n)].reset_index(drop=True)
        out.append(
            pd.DataFrame(
                {
                    c: _untie(rows[c].iloc[rng.permutation(n)].reset_index(drop=True))
                    for c in df.columns
                },
                columns=df.columns,
            )
        )
    return out


def _answer(code: str, df: pd.DataFrame, seen: dict[str, Any] | None = None) -> Any:
    """The parsed answer, or None when the program cannot answer on this table."""
    try:
        return parse_answer(json.dumps(run_in_process(code, df, seen)))
    except Exception:  # a perturbed table may break a valid program: nothing is shown
        return None


def perturbed_answers(code: str, tables: list[pd.DataFrame]) -> list[Any]:
    """The answer on each perturbed table (None where the program fails on it)."""
    return [_answer(code, t) for t in tables]


def data_independent_reason(
    answer: Any, perturbed: list[Any], kind: str, shape_only: bool = False
) -> str | None:
    """`degenerate_data_independent: ...` when a numeric answer is the same on every
    perturbed table, or None."""
    if shape_only or kind not in JUDGED_KINDS or not perturbed:
        return None
    if any(p is None or p != answer for p in perturbed):
        return None
    return (
        f"{DATA_INDEPENDENT}: the answer stays {json.dumps(answer)[:80]} on {len(perturbed)} "
        "tables of the same shape with resampled, column-permuted values"
    )


def ablations(program: Program) -> Iterator[tuple[int, Program]]:
    """(step index, the program without that step) for every step that can be dropped:
    one whose output type is its first input's type, not the answer step, and whose
    removal leaves a valid program (its other inputs still consumed)."""
    steps = program.steps
    for i, step in enumerate(steps[:-1]):
        if not step.inputs:
            continue
        first = step.inputs[0]
        in_type = TABLE if first == SOURCE else BY_NAME[steps[first].op].output
        if BY_NAME[step.op].output != in_type:
            continue

        def remap(ref: int, i: int = i, first: int = first) -> int:
            if ref == i:
                return first
            return ref - 1 if ref > i else ref

        new = tuple(
            Step(s.op, tuple(remap(r) for r in s.inputs), s.cols)
            for j, s in enumerate(steps)
            if j != i
        )
        ablated = Program(new)
        try:
            validate(ablated)
        except ProgramError:
            continue
        yield i, ablated


def redundant_step_reason(
    program: Program,
    df: pd.DataFrame,
    answer: Any,
    tables: list[pd.DataFrame],
    perturbed: list[Any],
    digits: int = 4,
) -> str | None:
    """`redundant_step: ...` naming the first step whose removal changes the answer on
    neither the table nor any perturbed table, or None. The ablated program runs on the
    table first; only a step that survives that runs on the perturbed tables."""
    for i, ablated in ablations(program):
        code = compile_program(ablated, digits)
        got = _answer(code, df)
        if got is None or got != answer:
            continue
        if all(
            p is not None and _answer(code, t) == p for t, p in zip(tables, perturbed, strict=True)
        ):
            return (
                f"{REDUNDANT}: step {i + 1} ({program.steps[i].op}) can be dropped: the "
                f"answer is the same without it on the table and on {len(tables)} perturbed tables"
            )
    return None


QUOTED = re.compile(r"""['"`‘“]([^'"`’”]{1,80})['"`’”]""")
# the sentence that lists the admissible answers quotes them by design
OPTIONS = re.compile(r"\b(answer|one of|either)\b[^?.]*$", re.IGNORECASE)


def _question_values(question: str) -> set[str]:
    """Values the wording quotes, leaving out the answer-options sentence."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[?.])\s+", question):
        if re.match(r"\s*(answer|give|round|reply)\b", sentence, re.IGNORECASE):
            continue
        for m in QUOTED.finditer(sentence):
            if OPTIONS.search(sentence[: m.start()]):
                continue
            out.add(m.group(1).strip())
    return out


def _filter_fixed_values(seen: dict[str, Any], program: Program) -> dict[str, set[str]]:
    """column -> the single value a filter step leaves in it (hooked outputs `xN`)."""
    fixed: dict[str, set[str]] = {}
    for i, step in enumerate(program.steps):
        out = seen.get(f"x{i + 1}")
        if BY_NAME[step.op].family != "filter" or not isinstance(out, pd.DataFrame):
            continue
        for col in step.cols:
            values = out[col].dropna().unique() if col in out else []
            if len(values) == 1:
                fixed.setdefault(col, set()).add(str(values[0]))
    return fixed


def tautology_reason(
    cand: Candidate, answer: Any, df: pd.DataFrame, program: Program | None = None
) -> str | None:
    """`tautology: ...` when a label answer equals a value the question fixes, or None."""
    if not isinstance(answer, str):
        return None
    if answer in _question_values(cand.question):
        return f"{TAUTOLOGY}: the answer {answer!r} is a value the question itself names"
    if program is None or not any(BY_NAME[s.op].family == "filter" for s in program.steps):
        return None
    seen: dict[str, Any] = {}
    _answer(cand.code, df, seen)
    for col, values in _filter_fixed_values(seen, program).items():
        if answer in values:
            return (
                f"{TAUTOLOGY}: the answer {answer!r} is the only value of {col!r} the "
                "question's own filter leaves"
            )
    return None


class TableTrials:
    """The perturbed tables of one table, built once and shared by its candidates."""

    def __init__(self, df: pd.DataFrame, k: int, seed: int) -> None:
        self.df = df
        self.tables = same_shape_tables(df, k, seed) if len(df) else []

    def screen(
        self,
        cand: Candidate,
        answer: Any,
        program: Program | None = None,
        shape_only: bool = False,
        digits: int = 4,
    ) -> str | None:
        """The first metamorphic rejection of `cand` (whose reference gave `answer`)."""
        reason = tautology_reason(cand, answer, self.df, program)
        if reason:
            return reason
        judged = not shape_only and cand.answer_schema.kind in JUDGED_KINDS
        if not judged and program is None:
            return None
        perturbed = perturbed_answers(cand.code, self.tables)
        reason = data_independent_reason(answer, perturbed, cand.answer_schema.kind, shape_only)
        if reason is None and program is not None:
            reason = redundant_step_reason(program, self.df, answer, self.tables, perturbed, digits)
        return reason
