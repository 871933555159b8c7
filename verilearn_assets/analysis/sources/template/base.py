"""What every template shares: the table view, the program builder, and the template type.

A template reads the table *profile* to decide whether it applies (eligible numeric and
categorical columns, id-like columns excluded, cardinality bounds). Where its wording
admits several column choices, or a ranking can tie, it enumerates every valid choice
(bounded by ``max_column_choices``) as alternatives instead of silently keeping the first.
Enumerating ties needs the values, so the view loads the table lazily for that alone;
ground truth always comes from the sandbox.

A template considers exactly what its words admit (issue 24): no cap, cardinality floor
or type filter on its candidates unless the wording states it (a listed set, "other
numeric column", "values with at least 5 rows", "Identifier columns (...) are not
candidates"); more tied answers than a record accepts means the question is not asked.
`tests/analysis/templates/test_faithfulness.py` checks every template against a reader
of its words alone.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

import pandas as pd

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.sources.candidate import AlternativeCode, Candidate
from verilearn_assets.analysis.sources.id_columns import numeric_id_columns
from verilearn_assets.analysis.sources.procedural.wording import grammar_problems
from verilearn_assets.core.records import AnswerSchema, ColumnProfile

Difficulty = Literal["easy", "medium", "hard"]
ReadingKey = TypeVar("ReadingKey")

NUMBER = AnswerSchema(kind="number", rel_tol=1e-6, abs_tol=1e-9)
STAT = AnswerSchema(kind="number", rel_tol=1e-4, abs_tol=1e-6)
PVALUE = AnswerSchema(kind="number", rel_tol=1e-3, abs_tol=1e-4)
INTEGER = AnswerSchema(kind="integer")
STRING = AnswerSchema(kind="string")
BOOLEAN = AnswerSchema(kind="boolean")


# A question whose answer class is nearly always the same is asked on 1 table in this many
# (issue 24: "at most 1 in 4 of that template's questions").
RATION_ONE_IN = 4


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

    @cached_property
    def id_columns(self) -> list[str]:
        """Numeric row keys: flagged by the profile or found in the values (`id_columns`).
        They are never candidates, and wordings that leave candidates implicit say so."""
        flagged = [c.name for c in self.columns if c.id_like and c.kind in ("numeric", "integer")]
        found = numeric_id_columns(self.frame()) if self.path else []
        return list(dict.fromkeys([*flagged, *found]))

    def id_clause(self) -> str:
        """A sentence for wordings whose candidate columns are implicit ("which column ..."):
        empty when the table has no numeric ID-like column."""
        if not self.id_columns:
            return ""
        return f" Identifier columns ({quoted_list(self.id_columns)}) are not candidates."

    def _usable(self, c: ColumnProfile) -> bool:
        return (
            not c.id_like
            and c.name not in self.id_columns
            and c.kind != "empty"
            and c.missing_pct <= self.cfg.eligibility.max_missing_pct
        )

    @cached_property
    def numeric(self) -> list[str]:
        """Continuous-enough numeric columns, most complete and most varied first."""
        el = self.cfg.eligibility
        cols = [
            c
            for c in self.columns
            if self._usable(c)
            and c.kind in ("numeric", "integer")
            and c.n_unique >= el.min_numeric_unique
        ]
        cols.sort(key=lambda c: (c.missing_pct > 0, -min(c.n_unique, 1000), c.name))
        return [c.name for c in cols]

    @cached_property
    def numeric_any(self) -> list[str]:
        """Every numeric column but the identifiers, in table order, however few distinct
        values or however many gaps it has: the candidates of a wording that asks "which
        (other) numeric column" without naming a narrower set. A column that is constant
        has no correlation and cannot win; no other filter applies (issue 24: a cap or a
        cardinality floor the wording does not state changes the answer)."""
        return [
            c.name
            for c in self.columns
            if c.kind in ("numeric", "integer")
            and not c.id_like
            and c.name not in self.id_columns
            and c.n_unique >= 2
        ]

    @cached_property
    def positive_any(self) -> list[str]:
        """`numeric_any` columns whose every present value is above 0 (a log is defined)."""
        return [c for c in self.numeric_any if (self.by_name[c].min or 0) > 0]

    @cached_property
    def categorical(self) -> list[str]:
        el = self.cfg.eligibility
        cols = [
            c
            for c in self.columns
            if self._usable(c)
            and c.kind == "categorical"
            and el.min_categories <= c.n_unique <= el.max_categories
        ]
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
        return [
            c for c in self.numeric if self.by_name[c].min is not None and self.by_name[c].min > 0
        ]

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = pd.read_parquet(self.path)
        return self._frame

    def require(self, ok: bool, reason: str) -> None:
        if not ok:
            raise NotApplicable(reason)

    def need_numeric(self, k: int) -> list[str]:
        self.require(
            len(self.numeric) >= k,
            f"needs {k} eligible numeric column(s), found {len(self.numeric)}",
        )
        return self.numeric

    def need_numeric_from_second(self) -> list[str]:
        """Numeric columns from the second on (the first if it is the only one).

        A template asking much what a sibling template asks of a column starts here, so the
        two spread over different columns instead of both asking about the first.
        """
        return self.need_numeric(1)[1:] or self.numeric

    def need_categorical(self) -> list[str]:
        self.require(bool(self.categorical), "needs a categorical column")
        return self.categorical

    def need_with_missing(self) -> list[str]:
        self.require(bool(self.with_missing), "needs a numeric column with missing values")
        return self.with_missing

    def viable_groups(
        self, cat: str, num: str | None, min_groups: int, max_groups: int | None = None
    ) -> list[str]:
        """Levels of `cat` holding at least `min_group_size` rows with `num` present."""
        df = self.frame()
        sub = df[[cat] + ([num] if num else [])].dropna()
        counts = sub[cat].astype(str).value_counts()
        levels = sorted(counts[counts >= self.cfg.eligibility.min_group_size].index)
        if len(levels) < min_groups or (max_groups is not None and len(levels) > max_groups):
            return []
        return levels

    def level_rows(self, cat: str, cols: Sequence[str], levels: list[str]) -> pd.DataFrame:
        """Rows with `cat` and `cols` present whose `cat` (as text) is one of `levels`."""
        sub = self.frame()[[cat, *cols]].dropna()
        return sub[sub[cat].astype(str).isin(levels)]

    def rounded(self, scores: pd.Series) -> pd.Series:
        """Scores to `tie_digits` significant digits: equal after rounding counts as a tie."""
        digits = self.cfg.template.tie_digits
        return scores.map(lambda v: float(f"{float(v):.{digits}g}"))

    def ties(self, scores: pd.Series, largest: bool = True) -> list[Any]:
        """Labels sharing the best score (to `tie_digits` significant digits), in order."""
        s = scores.dropna()
        if s.empty:
            return []
        rounded = self.rounded(s)
        best = rounded.max() if largest else rounded.min()
        return list(rounded[rounded == best].index)

    def rationed(self, key: str) -> bool:
        """True for about one table in `RATION_ONE_IN` (a stable hash of `key` and the
        table's file name): a question whose answer class is nearly always the same (a rule
        that always picks one branch) is asked on those tables only, not on every one."""
        digest = hashlib.sha256(f"{key}|{Path(self.path).name}".encode()).digest()
        return digest[0] % RATION_ONE_IN == 0

    def limit(self, choices: Sequence[Any]) -> list[Any]:
        return list(choices)[: self.cfg.template.max_column_choices]

    def per_template(self, choices: Sequence[Any]) -> list[Any]:
        return list(choices)[: self.cfg.template.questions_per_template]

    def supported(self, target: str, cols: Sequence[str]) -> tuple[list[str], str]:
        """(`cols` sharing at least `min_rows` present rows with `target`, the sentence that
        says the others are left out — empty when none is). A correlation over a handful
        of rows wins by chance; leaving such a column out unsaid would be a hidden filter."""
        df = self.frame()
        present = df[target].notna()
        n = self.cfg.eligibility.min_rows
        kept = [c for c in cols if int((df[c].notna() & present).sum()) >= n]
        if len(kept) == len(cols):
            return list(cols), ""
        return kept, (
            f" Columns present together with '{target}' on fewer than {n} rows are not candidates."
        )

    def listed_ties(self, scores: pd.Series, largest: bool = True) -> list[Any]:
        """`ties`, when every tied label fits in the alternatives (`max_column_choices`);
        otherwise the question has more right answers than its record can accept, so it
        is not asked (a silent cap would reject right answers: issue 24)."""
        tied = self.ties(scores, largest)
        self.require(
            len(tied) <= self.cfg.template.max_column_choices,
            f"{len(tied)} labels tie for the top, more than the "
            f"{self.cfg.template.max_column_choices} a record accepts",
        )
        return tied

    def other_ties(self, scores: pd.Series) -> list[Any]:
        """Labels tied with the best one, which the reference picks: each is an alternative."""
        return self.listed_ties(scores)[1:]

    def reading_ties(
        self, readings: Sequence[tuple[ReadingKey, str, pd.Series]]
    ) -> Iterator[tuple[ReadingKey, str, Any]]:
        """`(reading, description, label)` for each tied label under each reading.

        A reading is one way a person may understand an ambiguous question: a key the
        caller's program builder takes, a description, and the scores it ranks by. The first
        reading is the reference's own, so its top label is the reference, not an alternative.
        """
        for i, (key, desc, scores) in enumerate(readings):
            labels = self.other_ties(scores) if i == 0 else self.listed_ties(scores)
            for label in labels:
                yield key, f"{desc}: '{label}'", label


class ReferenceCode:
    """Builds a notebook-like reference program with a `hook` after each computed step.

    `step("x = expr", "name")` appends the line and ``hook(x, "x = expr", name="name")``,
    so the hook's code_line is always the exact line that computed the value.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.hooked: list[str] = []

    def line(self, stmt: str) -> ReferenceCode:
        self.lines.extend(stmt.splitlines())
        return self

    def comment(self, text: str) -> ReferenceCode:
        self.lines.append(f"# {text}")
        return self

    def choose(
        self, var: str, expr: str, pick: Any, name: str, depends_on: Sequence[str] = ()
    ) -> ReferenceCode:
        """Step `var = expr`, or `var = pick` where a tie alternative pins another label."""
        return self.step(
            f"{var} = {expr}" if pick is None else f"{var} = {pick!r}", name, depends_on
        )

    def step(self, stmt: str, name: str, depends_on: Sequence[str] = ()) -> ReferenceCode:
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
    # A variant carries every alternative of its parent, except a reading its own wording
    # rules out: alternative-description prefix -> the words in the question that exclude it.
    excludes: tuple[tuple[str, str], ...] = ()
    # The answer legitimately depends on the table's shape only (a row count asked as such):
    # a data-dependence screen must not reject it for being the same on perturbed tables
    # of the same shape. No template today is shape-only.
    shape_only: bool = False


# Wordings of one computation: the base question (its alternatives accept every reading a
# person may take), one saying the target is not a candidate, one naming the exact method.
VARIANTS = ("base", "exclude_target", "method_explicit")


def variant_name(base: str, variant: str) -> str:
    return base if variant == "base" else f"{base}__{variant}"


def variant_template(
    base: str,
    variant: str,
    family: str,
    difficulty: Difficulty,
    build: Callable[[TableView], list[Candidate]],
    excludes: tuple[tuple[str, str], ...] = (),
    shape_only: bool = False,
) -> Template:
    """`excludes` applies to the `method_explicit` wording only: it names the method."""
    return Template(
        variant_name(base, variant),
        family,
        difficulty,
        build,
        variant_of=None if variant == "base" else base,
        excludes=excludes if variant == "method_explicit" else (),
        shape_only=shape_only,
    )


def candidate(
    tpl_name: str,
    family: str,
    difficulty: Difficulty,
    question: str,
    mechanical: str,
    schema: AnswerSchema,
    program: ReferenceCode,
    code: str,
    alternatives: Sequence[tuple[str, str]] = (),
    ops: Sequence[str] = (),
) -> Candidate:
    problems = grammar_problems(question)
    if problems:  # a template's wording is code: a bad sentence is a bug to fix there
        raise ValueError(f"template {tpl_name}: wording {question!r}: {'; '.join(problems)}")
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
    return Candidate(
        source="template",
        template=tpl_name,
        question=question,
        question_mechanical=mechanical,
        answer_schema=schema,
        code=code,
        alternatives=alts,
        n_steps=program.n_steps,
        difficulty=difficulty,
        program_ops=list(ops),
        op_families=[family],
    )


def q(name: str) -> str:
    """A column reference as Python source (`df[q(c)]`), safe for any column name."""
    return repr(name)


def text_col(name: str) -> str:
    """`df[name]` as text, missing values kept missing (not 'nan'), as Python source."""
    return f"df[{q(name)}].astype(str).where(df[{q(name)}].notna())"


def quoted_list(cols: Sequence[str]) -> str:
    """Column names for question text: `'a', 'b', 'c'`."""
    return ", ".join(f"'{c}'" for c in cols)
