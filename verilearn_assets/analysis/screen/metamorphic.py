"""Metamorphic screens: what a candidate's answer does when the table or the program changes.

Clean re-execution proves an answer reproducible, not meaningful. Three relations catch
answers that are right by construction rather than by the data:

- **data dependence**: the reference re-runs on `k` tables of the same shape (rows drawn
  with replacement from half the rows, then each column's values permuted on their own,
  numbers jittered by a few percent, seeded). A numeric
  answer identical on every one of them is fixed by the shape (1/sqrt(n), a Spearman of a
  column with its own log) → `degenerate_data_independent`. A template declares the
  questions legitimately asked of the shape (`Template.shape_only`);
- **step ablation** (procedural chains): each step whose output has the type of its first
  input is dropped in turn; if the answer is unchanged on the table and on every perturbed
  table, the step is redundant → `redundant_step`. Unlike an adjacent-pair rule this finds
  a step cancelled by one three steps later;
- **construction tautology**: a label answer that equals a value the question itself fixes
  (the only level a filter leaves, or a quoted value of the wording) → `tautology`.

Only answers holding a real number (a float: a mean, a correlation of exactly 1.0) are
judged by data dependence. Labels, booleans and test choices take few values, and counts
(distinct levels, missing values, duplicates) depend on a column's domain, which resampling
and permuting keep: a correct answer of theirs often survives every perturbed table.
Everything runs in-process on our own generated code, where the procedural dry run already
runs it (`programs.dryrun`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.compile import compile_program
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.program import (
    SOURCE,
    Program,
    ProgramError,
    Step,
    validate,
)
from verilearn_assets.analysis.sources.procedural.types import TABLE
from verilearn_assets.core.answers import parse_answer

DATA_INDEPENDENT = "degenerate_data_independent"
REDUNDANT = "redundant_step"
TAUTOLOGY = "tautology"
SCREEN_REASONS = (DATA_INDEPENDENT, REDUNDANT, TAUTOLOGY)
# answer kinds whose sameness on every perturbed table is evidence (when the answer holds
# a float, `_has_float`): real numbers vary with the data; a label, a boolean, a chosen
# test or a count of levels legitimately often does not
JUDGED_KINDS = frozenset({"number", "integer", "mapping"})


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


NOISE = 0.05  # each numeric value is scaled by exp(NOISE * standard normal)


def _jitter(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Numeric values each scaled by its own small random factor: resampled rows keep a
    column's extremes and levels often (so a maximum, a range or an outlier count would
    look fixed), and make ties an untied column never had (so the kurtosis of squared
    percentile ranks, fixed by n without ties, would look data-driven)."""
    return values * np.exp(NOISE * rng.standard_normal(len(values)))


def _same_shape_iter(df: pd.DataFrame, k: int, seed: int) -> Iterator[pd.DataFrame]:
    """The tables of `same_shape_tables`, one at a time from one seeded generator. Numeric
    columns are read as float arrays once per table, not once per perturbed table."""
    rng = np.random.default_rng(seed)
    n = len(df)
    numeric = {
        c: df[c].to_numpy(dtype=float, na_value=np.nan)
        for c in df.columns
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
    }
    for _ in range(k):
        half = rng.choice(n, size=max(1, n // 2), replace=False)
        rows = half[rng.integers(0, len(half), size=n)]
        cols: dict[Any, Any] = {}
        for c in df.columns:
            taken = rows[rng.permutation(n)]
            if c in numeric:
                cols[c] = _jitter(numeric[c][taken], rng)
            else:
                cols[c] = df[c].take(taken).reset_index(drop=True)
        yield pd.DataFrame(cols, columns=df.columns)


def same_shape_tables(df: pd.DataFrame, k: int, seed: int) -> list[pd.DataFrame]:
    """`k` seeded tables with `df`'s rows and columns: n rows drawn with replacement from
    a random half of the rows (a single extreme row is left out of about half the tables),
    then each column permuted on its own (marginals move, relations between columns
    break), numeric columns jittered (`_jitter`)."""
    return list(_same_shape_iter(df, k, seed))


class LazyTables(Sequence[pd.DataFrame]):
    """`same_shape_tables(df, k, seed)`, each built when first read: an honest answer
    differs on the first table, so most tables of a table's candidates need only one."""

    def __init__(self, df: pd.DataFrame, k: int, seed: int) -> None:
        self.k = k if len(df) else 0
        self._iter = _same_shape_iter(df, self.k, seed)
        self._built: list[pd.DataFrame] = []

    def __len__(self) -> int:
        return self.k

    def __getitem__(self, i: int) -> pd.DataFrame:  # type: ignore[override]
        if not 0 <= i < self.k:
            raise IndexError(i)
        while len(self._built) <= i:
            self._built.append(next(self._iter))
        return self._built[i]


def _answer(
    code: str,
    df: pd.DataFrame,
    seen: dict[str, Any] | None = None,
    preset: dict[str, Any] | None = None,
) -> Any:
    """The parsed answer, or None when the program cannot answer on this table."""
    try:
        return parse_answer(json.dumps(run_in_process(code, df, seen, preset)))
    except Exception:  # a perturbed table may break a valid program: nothing is shown
        return None


class PerturbedAnswers(Sequence[Any]):
    """The answers of one program on the perturbed tables, each computed when first read:
    an honest answer differs on the first table, so one run usually settles it."""

    def __init__(self, code: str, tables: Sequence[pd.DataFrame]) -> None:
        self.code, self.tables = code, tables
        self._done: list[Any] = []
        # the hooked values of each run: step ablation reruns only the steps from the
        # dropped one on (`redundant_step_reason`); dropped once the candidate is screened
        self.seen: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return len(self.tables)

    def __getitem__(self, i: int) -> Any:  # type: ignore[override]
        if not 0 <= i < len(self.tables):
            raise IndexError(i)
        while len(self._done) <= i:
            seen: dict[str, Any] = {}
            self._done.append(_answer(self.code, self.tables[len(self._done)], seen))
            self.seen.append(seen)
        return self._done[i]


def perturbed_answers(code: str, tables: Sequence[pd.DataFrame]) -> PerturbedAnswers:
    """The answer on each perturbed table (None where the program fails on it), lazily."""
    return PerturbedAnswers(code, tables)


def _body(code: str) -> str:
    """Code without its comment lines: the wordings of one computation share it."""
    return "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith("#"))


def data_independent_reason(
    answer: Any, perturbed: Sequence[Any], kind: str, shape_only: bool = False
) -> str | None:
    """`degenerate_data_independent: ...` when a numeric answer is the same on every
    perturbed table, or None."""
    if shape_only or kind not in JUDGED_KINDS or not _has_float(answer) or not perturbed:
        return None
    if any(p is None or p != answer for p in perturbed):
        return None
    return (
        f"{DATA_INDEPENDENT}: the answer stays {json.dumps(answer)[:80]} on {len(perturbed)} "
        "tables of the same shape with resampled, column-permuted, jittered values"
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


def _suffix(program: Program, i: int, digits: int) -> str:
    """The compiled code of `program` from step `i` on (header and steps before dropped):
    one line and one hook per step, as `compile_program` lays them out."""
    lines = compile_program(program, digits).splitlines()
    return "\n".join(lines[1 + 2 * i :]) + "\n"


def redundant_step_reason(
    program: Program,
    df: pd.DataFrame,
    answer: Any,
    tables: Sequence[pd.DataFrame],
    perturbed: Sequence[Any],
    digits: int = 4,
    seen: dict[str, Any] | None = None,
) -> str | None:
    """`redundant_step: ...` naming the first step whose removal changes the answer on
    neither the table nor any perturbed table, or None. The ablated program runs on the
    table first, from the dropped step on (the steps before it are the original's, run
    once, or given as `seen`: its hooked values); only a step that survives that runs on
    the perturbed tables."""
    if seen is None or any(f"x{j + 1}" not in seen for j in range(len(program.steps))):
        seen = {}
        if _answer(compile_program(program, digits), df, seen) != answer:
            return None  # the program does not reproduce its answer: nothing to compare
    for i, ablated in ablations(program):
        preset = {f"x{j + 1}": seen[f"x{j + 1}"] for j in range(i)}
        got = _answer(_suffix(ablated, i, digits), df, preset=preset)
        if got is None or got != answer:
            continue
        suffix = _suffix(ablated, i, digits)
        if all(
            perturbed[j] is not None
            and _ablated_answer(suffix, ablated, i, digits, t, _seen_of(perturbed, j))
            == perturbed[j]
            for j, t in enumerate(tables)
        ):
            return (
                f"{REDUNDANT}: step {i + 1} ({program.steps[i].op}) can be dropped: the "
                f"answer is the same without it on the table and on {len(tables)} perturbed tables"
            )
    return None


def _seen_of(perturbed: Sequence[Any], j: int) -> dict[str, Any] | None:
    """The hooked values of the run behind `perturbed[j]`, when it kept them."""
    seens = getattr(perturbed, "seen", None)
    return seens[j] if seens is not None and j < len(seens) else None


def _ablated_answer(
    suffix: str,
    ablated: Program,
    i: int,
    digits: int,
    table: pd.DataFrame,
    seen: dict[str, Any] | None,
) -> Any:
    """The answer of `ablated` (the program without step `i`) on `table`: only its steps
    from `i` on run when the original's run on that table hooked every step before `i`
    (they are the same steps on the same table), else the whole program."""
    names = [f"x{j + 1}" for j in range(i)]
    if seen is not None and all(n in seen for n in names):
        return _answer(suffix, table, preset={n: seen[n] for n in names})
    return _answer(compile_program(ablated, digits), table)


_Q = r"""['"`‘“]([^'"`’”]{1,80})['"`’”]"""
QUOTED = re.compile(_Q)
# the sentence that lists the admissible answers quotes them by design
OPTIONS = re.compile(r"\b(answer|one of|either)\b[^?.]*$", re.IGNORECASE)
# quoted values listed together ('a' or 'b'; 'a', 'b' and 'c') are choices, not fixed values
LISTED = re.compile(_Q + r"\s*(?:,\s*(?:or\s+|and\s+)?|or\s+|and\s+)(?=['\"`‘“])")


def _question_values(question: str) -> set[str]:
    """Values the wording fixes: quoted, outside the answer-options sentence and not one
    of a list of choices ("which of 'a' or 'b'")."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[?.])\s+", question):
        if re.match(r"\s*(answer|give|round|reply)\b", sentence, re.IGNORECASE):
            continue
        listed = {m.start() for m in LISTED.finditer(sentence)}
        listed |= {m.end() for m in LISTED.finditer(sentence)}
        for m in QUOTED.finditer(sentence):
            if OPTIONS.search(sentence[: m.start()]) or m.start() in listed:
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
    cand: Candidate,
    answer: Any,
    df: pd.DataFrame,
    program: Program | None = None,
    seen: dict[str, Any] | None = None,
) -> str | None:
    """`tautology: ...` when a label answer equals a value the question fixes, or None."""
    if not isinstance(answer, str):
        return None
    if answer in _question_values(cand.question):
        return f"{TAUTOLOGY}: the answer {answer!r} is a value the question itself names"
    if program is None or not any(BY_NAME[s.op].family == "filter" for s in program.steps):
        return None
    if seen is None:
        seen = {}
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
        self.tables = LazyTables(df, k, seed)
        self._answers: dict[str, PerturbedAnswers] = {}  # by code body: variants share

    def answers(self, code: str) -> PerturbedAnswers:
        """The (lazy) perturbed answers of `code`, shared by every wording of it."""
        key = _body(code)
        if key not in self._answers:
            self._answers[key] = PerturbedAnswers(code, self.tables)
        return self._answers[key]

    def screen(
        self,
        cand: Candidate,
        answer: Any,
        program: Program | None = None,
        shape_only: bool = False,
        digits: int = 4,
        seen: dict[str, Any] | None = None,
    ) -> str | None:
        """The first metamorphic rejection of `cand` (whose reference gave `answer`;
        `seen`: the hooked values of a run of it on the table, when the caller has them)."""
        reason = tautology_reason(cand, answer, self.df, program, seen)
        if reason:
            return reason
        judged = not shape_only and cand.answer_schema.kind in JUDGED_KINDS and _has_float(answer)
        if not judged and program is None:
            return None
        perturbed = self.answers(cand.code)
        reason = data_independent_reason(answer, perturbed, cand.answer_schema.kind, shape_only)
        if reason is None and program is not None:
            reason = redundant_step_reason(
                program, self.df, answer, self.tables, perturbed, digits, seen
            )
        perturbed.seen = [{} for _ in perturbed.seen]  # hooked frames: not kept per table
        return reason
