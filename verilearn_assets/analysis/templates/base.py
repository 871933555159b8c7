"""What every template shares: the table view, the program builder, and the template type.

A template reads the table *profile* to decide whether it applies (eligible numeric and
categorical columns, id-like columns excluded, cardinality bounds). Where its wording
admits several column choices, or a ranking can tie, it enumerates every valid choice
(bounded by ``max_column_choices``) as alternatives instead of silently keeping the first.
Enumerating ties needs the values, so the view loads the table lazily for that alone;
ground truth always comes from the sandbox.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import pandas as pd

from verilearn_assets.analysis.candidate import AlternativeCode, Candidate
from verilearn_assets.analysis.questions_config import QuestionsConfig
from verilearn_assets.contracts import AnswerSchema, ColumnProfile

Difficulty = Literal["easy", "medium", "hard"]

NUMBER = AnswerSchema(kind="number", rel_tol=1e-6, abs_tol=1e-9)
STAT = AnswerSchema(kind="number", rel_tol=1e-4, abs_tol=1e-6)
PVALUE = AnswerSchema(kind="number", rel_tol=1e-3, abs_tol=1e-4)
INTEGER = AnswerSchema(kind="integer")
STRING = AnswerSchema(kind="string")
BOOLEAN = AnswerSchema(kind="boolean")


def mapping(**fields: AnswerSchema) -> AnswerSchema:
    return AnswerSchema(kind="mapping", fields=fields)


class NotApplicable(Exception):
    """The template does not fit this table; the message says why."""


@dataclass
class TableView:
    """A table's profile with the column sets templates may draw from."""

    columns: list[ColumnProfile]
    n_rows: int
    path: str
    cfg: QuestionsConfig
    _frame: pd.DataFrame | None = field(default=None, repr=False)

    @cached_property
    def by_name(self) -> dict[str, ColumnProfile]:
        return {c.name: c for c in self.columns}

    def _usable(self, c: ColumnProfile) -> bool:
        return (not c.id_like and c.kind != "empty"
                and c.missing_pct <= self.cfg.eligibility.max_missing_pct)

    @cached_property
    def numeric(self) -> list[str]:
        """Continuous-enough numeric columns, most complete and most varied first."""
        el = self.cfg.eligibility
        cols = [c for c in self.columns if self._usable(c) and c.kind in ("numeric", "integer")
                and c.n_unique >= el.min_numeric_unique]
        cols.sort(key=lambda c: (c.missing_pct > 0, -min(c.n_unique, 1000), c.name))
        return [c.name for c in cols]

    @cached_property
    def categorical(self) -> list[str]:
        el = self.cfg.eligibility
        cols = [c for c in self.columns if self._usable(c) and c.kind == "categorical"
                and el.min_categories <= c.n_unique <= el.max_categories]
        cols.sort(key=lambda c: (c.missing_pct > 0, c.n_unique, c.name))
        return [c.name for c in cols]

    @cached_property
    def binary(self) -> list[str]:
        return [c for c in self.categorical if self.by_name[c].n_unique == 2]

    @cached_property
    def with_missing(self) -> list[str]:
        return [c for c in self.numeric if self.by_name[c].missing_pct > 0]

    @cached_property
    def positive(self) -> list[str]:
        return [c for c in self.numeric
                if self.by_name[c].min is not None and self.by_name[c].min > 0]

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = pd.read_parquet(self.path)
        return self._frame

    def require(self, ok: bool, reason: str) -> None:
        if not ok:
            raise NotApplicable(reason)

    def need_numeric(self, k: int) -> list[str]:
        self.require(len(self.numeric) >= k, f"needs {k} eligible numeric column(s), "
                                             f"found {len(self.numeric)}")
        return self.numeric

    def viable_groups(self, cat: str, num: str | None, min_groups: int,
                      max_groups: int | None = None) -> list[str]:
        """Levels of `cat` holding at least `min_group_size` rows with `num` present."""
        df = self.frame()
        sub = df[[cat] + ([num] if num else [])].dropna()
        counts = sub[cat].astype(str).value_counts()
        levels = sorted(counts[counts >= self.cfg.eligibility.min_group_size].index)
        if len(levels) < min_groups or (max_groups is not None and len(levels) > max_groups):
            return []
        return levels

    def ties(self, scores: pd.Series, largest: bool = True) -> list[Any]:
        """Labels sharing the best score (to `tie_digits` significant digits), in order."""
        s = scores.dropna()
        if s.empty:
            return []
        digits = self.cfg.template.tie_digits
        rounded = s.map(lambda v: float(f"{float(v):.{digits}g}"))
        best = rounded.max() if largest else rounded.min()
        return list(rounded[rounded == best].index)

    def limit(self, choices: Sequence[Any]) -> list[Any]:
        return list(choices)[: self.cfg.template.max_column_choices]

    def per_template(self, choices: Sequence[Any]) -> list[Any]:
        return list(choices)[: self.cfg.template.questions_per_template]


class Program:
    """Builds a notebook-like reference program with a `hook` after each computed step.

    `step("x = expr", "name")` appends the line and ``hook(x, "x = expr", name="name")``,
    so the hook's code_line is always the exact line that computed the value.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.hooked: list[str] = []

    def line(self, stmt: str) -> Program:
        self.lines.extend(stmt.splitlines())
        return self

    def comment(self, text: str) -> Program:
        self.lines.append(f"# {text}")
        return self

    def step(self, stmt: str, name: str, depends_on: Sequence[str] = ()) -> Program:
        if "\n" in stmt or " = " not in stmt:
            raise ValueError(f"a hooked step is one assignment line, got {stmt!r}")
        target = stmt.split(" = ", 1)[0].strip()
        if "," in target:
            target = f"({target})"
        self.lines.append(stmt)
        deps = f", depends_on={list(depends_on)!r}" if depends_on else ""
        self.lines.append(f"hook({target}, {stmt!r}, name={name!r}{deps})")
        self.hooked.append(name)
        return self

    def submit(self, expr: str) -> str:
        self.lines.append(f"submit({expr})")
        return "\n".join(self.lines) + "\n"

    @property
    def n_steps(self) -> int:
        return len(self.hooked) + 1


@dataclass(frozen=True)
class Template:
    """A named question template: `build` returns candidates or raises NotApplicable."""

    name: str
    family: str
    difficulty: Difficulty
    build: Callable[[TableView], list[Candidate]]
    variant_of: str | None = None


def candidate(tpl_name: str, family: str, difficulty: Difficulty, question: str,
              mechanical: str, schema: AnswerSchema, program: Program, code: str,
              alternatives: Sequence[tuple[str, str]] = (),
              ops: Sequence[str] = ()) -> Candidate:
    # The question heads the program as a comment, as in a notebook; it also keeps the
    # ids of wordings that share a computation (template variants) distinct.
    head = "".join(f"# {line}\n" for line in textwrap.wrap(question, 96))
    code = head + code
    seen = {code}
    alts = []
    for desc, alt_code in alternatives:
        if alt_code not in seen:
            seen.add(alt_code)
            alts.append(AlternativeCode(description=desc, code=alt_code))
    return Candidate(source="template", template=tpl_name, question=question,
                     question_mechanical=mechanical, answer_schema=schema, code=code,
                     alternatives=alts, n_steps=program.n_steps, difficulty=difficulty,
                     program_ops=list(ops), op_families=[family])


def q(name: str) -> str:
    """A column reference as Python source (`df[q(c)]`), safe for any column name."""
    return repr(name)
