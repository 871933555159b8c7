"""Everything the model reads: the system prompt, the question, re-prompts, tool output.

The texts are configuration (`teacher_prompts.yaml` `analysis:`, `config.AnalysisPrompts`);
every renderer takes the prompts and falls back to the defaults, which are the prompts
this module always rendered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.config import AnalysisPrompts

# The truncation marker and `cap_text` live with the context budget (one marker for
# every family); re-exported here for the callers that build tool messages.
from verilearn_assets.core.llm.segments import TRUNCATION_MARK, cap_text  # noqa: F401
from verilearn_assets.core.records import AnswerSchema, ColumnProfile, TableRecord, content_hash

MAX_TOP_VALUES = 5
DEFAULT_PROMPTS = AnalysisPrompts()


def describe_column(col: ColumnProfile, hints: bool = True) -> str:
    """One overview line per column: type, missingness, cardinality, and with `hints`
    the value hints (identifier-like, range, top values)."""
    parts = [
        f"{col.kind}, {col.dtype}",
        f"{col.missing_pct:.1f}% missing",
        f"{col.n_unique} unique",
    ]
    if hints and col.id_like:
        parts.append("identifier-like")
    stats = [(k, getattr(col, k)) for k in ("min", "median", "mean", "max", "std")]
    shown = [f"{k}={v:.6g}" for k, v in stats if v is not None]
    if hints and shown:
        parts.append(" ".join(shown))
    if hints and col.top_values:
        tops = ", ".join(repr(v) for v in col.top_values[:MAX_TOP_VALUES])
        parts.append(f"top values: {tops}")
    return f"- {col.name!r}: " + "; ".join(parts)


def table_head(table: TableRecord) -> str:
    return (
        f"Table {table.name!r} from dataset {table.dataset!r}: "
        f"{table.n_rows} rows × {table.n_columns} columns."
    )


def data_overview(table: TableRecord, hints: bool = True) -> str:
    """The table's profile as the model sees it; built only from `TableRecord.columns`."""
    columns = (describe_column(c, hints) for c in table.columns)
    return "\n".join([table_head(table), "Columns:", *columns])


def system_rules(max_turns: int, prompts: AnalysisPrompts | None = None) -> str:
    return (prompts or DEFAULT_PROMPTS).system.format(max_turns=max_turns)


def system_prompt(
    table: TableRecord, max_turns: int, prompts: AnalysisPrompts | None = None
) -> str:
    """Rules, then the table; `context.budget_messages` splits it back along this seam."""
    prompts = prompts or DEFAULT_PROMPTS
    return system_rules(max_turns, prompts) + "\n\n" + data_overview(table, prompts.hints)


def describe_schema(schema: AnswerSchema) -> str:
    """The expected answer shape in words, so the model submits what the checker compares."""
    if schema.kind == "number":
        return f"a number (relative tolerance {schema.rel_tol:g})"
    if schema.kind == "integer":
        return "an integer"
    if schema.kind == "string":
        return "a string"
    if schema.kind == "boolean":
        return "a boolean (True or False)"
    if schema.kind == "list":
        inner = describe_schema(schema.items) if schema.items else "values"
        order = "order matters" if schema.ordered else "order does not matter"
        return f"a list of {inner} ({order})"
    if schema.fields:
        keys = ", ".join(f"{k!r}: {describe_schema(v)}" for k, v in schema.fields.items())
        return f"a dict with exactly these keys: {keys}"
    inner = describe_schema(schema.items) if schema.items else "values"
    return f"a dict mapping keys to {inner}"


def question_prompt(
    question: str, schema: AnswerSchema, prompts: AnalysisPrompts | None = None
) -> str:
    """The question, and with `hints` the expected answer's shape."""
    prompts = prompts or DEFAULT_PROMPTS
    hint = prompts.answer_hint.format(answer_shape=describe_schema(schema))
    return prompts.question.format(question=question, answer_hint=hint if prompts.hints else "")


def few_shot_block(examples: Sequence[QuestionRecord], prompts: AnalysisPrompts) -> str:
    """The solved examples, numbered from 1, under the header."""
    shown = [
        prompts.few_shot_example.format(
            n=i,
            table=q.table,
            dataset=q.dataset,
            question=q.question,
            code=q.code.strip("\n"),
            answer=q.answer,
        )
        for i, q in enumerate(examples, 1)
    ]
    return "\n\n".join([prompts.few_shot_header, *shown])


def task_prompt(
    question: QuestionRecord,
    prompts: AnalysisPrompts | None = None,
    examples: Sequence[QuestionRecord] = (),
) -> str:
    """An episode's first user message: the solved examples (if any), then the question."""
    prompts = prompts or DEFAULT_PROMPTS
    text = question_prompt(question.question, question.answer_schema, prompts)
    return few_shot_block(examples, prompts) + "\n\n" + text if examples else text


class FewShotPool:
    """Solved questions a prompt may show: accepted ones of the train split, nothing else.

    A question of another split is an error naming it, never filtered away quietly: a pool
    holding dev/test questions is a bug upstream that would leak evaluation answers.
    """

    def __init__(self, questions: Sequence[QuestionRecord], seed: int = 0) -> None:
        leaked = [q for q in questions if q.split != "train"]
        if leaked:
            named = ", ".join(f"{q.id} (split {q.split})" for q in leaked[:5])
            raise ValueError(
                f"few-shot pool: {len(leaked)} question(s) not of the train split: {named}"
            )
        self.questions = [q for q in questions if q.status == "accepted"]
        self.seed = seed

    def examples(self, question: QuestionRecord, n: int) -> list[QuestionRecord]:
        """`n` examples for `question`, never from its own table; the same ones on every
        run (ordered by a hash of the seed and both ids)."""
        if n == 0:
            return []
        others = [q for q in self.questions if q.table != question.table]
        if len(others) < n:
            raise ValueError(
                f"question {question.id}: few_shot is {n} but the train pool holds only "
                f"{len(others)} accepted question(s) on tables other than {question.table!r}"
            )
        others.sort(key=lambda q: content_hash("few-shot", self.seed, question.id, q.id))
        return others[:n]


def reprompt(reason: str, errors_left: int, prompts: AnalysisPrompts | None = None) -> str:
    """Shown after a rejected reply; says what was wrong and how many more are tolerated."""
    return (prompts or DEFAULT_PROMPTS).reprompt.format(reason=reason, errors_left=errors_left)


@dataclass(frozen=True)
class Observation:
    """What one cell produced; the tool message shows all of it but the run time."""

    status: str
    duration_ms: float  # kept by the episode's `CellRun`; never shown to the model
    stdout: str
    stderr: str
    value_repr: str | None
    submissions: Sequence[str]


# A cell's run time and the memory address in a printed object's repr (`<Fit object at
# 0x7f3a…>`) differ on every execution. The model sees neither, so one demo renders the same
# tool messages on every run: teacher episodes, SFT rows and evaluation rollouts alike (and
# the middle cut of a long output, whose budget counts the header, falls in the same place).
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
ADDRESS_SHOWN = " at 0x…>"


def status_line(obs: Observation) -> str:
    """The tool message's first line: the cell's status (`[cell ok]`, `[cell error]`)."""
    return f"[cell {obs.status}]"


def steady(text: str) -> str:
    """`text` as the model sees it: object addresses replaced by one fixed form."""
    return _ADDRESS.sub(ADDRESS_SHOWN, text)


def tool_message(obs: Observation, limit: int) -> str:
    """The tool message for one cell, at most about `limit` characters of body.

    The status header and the submission lines are markers the model (and a reader of the
    trace) relies on, so they are never cut; only stdout, stderr and the value share the
    budget, each truncated in the middle with an explicit marker.
    """
    header = status_line(obs)
    markers = [f"submitted: {cap_text(s, limit // 4)}" for s in obs.submissions]
    sections = [
        ("stdout", steady(obs.stdout)),
        ("stderr", steady(obs.stderr)),
        ("value", steady(obs.value_repr or "")),
    ]
    present = [(name, body) for name, body in sections if body]
    fixed = len(header) + sum(len(m) + 1 for m in markers)
    budget = max(limit - fixed, 100 * max(len(present), 1))
    lines = [header]
    remaining = budget
    for i, (name, body) in enumerate(present):
        share = remaining // (len(present) - i)
        shown = cap_text(body.rstrip("\n"), max(share - len(name) - 2, 50))
        remaining -= len(shown) + len(name) + 2
        lines.append(f"{name}:\n{shown}")
    if not present and not markers:
        lines.append("(no output)")
    lines.extend(markers)
    return "\n".join(lines)
