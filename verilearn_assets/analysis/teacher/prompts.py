"""Everything the model reads: the system prompt, the question, re-prompts, tool output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The truncation marker and `cap_text` live with the context budget (one marker for
# every family); re-exported here for the callers that build tool messages.
from verilearn_assets.core.llm.budget import TRUNCATION_MARK, cap_text  # noqa: F401
from verilearn_assets.core.records import AnswerSchema, ColumnProfile, TableRecord

MAX_TOP_VALUES = 5

SYSTEM_RULES = """\
You are a careful data analyst working in a Python sandbox.
A pandas DataFrame `df` holds the table described below; pandas (as pd) and numpy \
(as np) are available.
Work step by step. Every reply must contain one short line of reasoning followed by \
exactly one ```python code block. The block runs as the next cell; variables persist \
between cells, and you will see its printed output, errors and the value of its last \
expression.
Record important intermediate values on the line right after the one computing them: \
`hook(value, "<that exact line of code>", name="short_name")`.
When you know the answer, call `submit(answer)` exactly once; the episode ends there.
You have at most {max_turns} cells."""


def describe_column(col: ColumnProfile) -> str:
    """One overview line per column: type, missingness, cardinality, range or top values."""
    parts = [
        f"{col.kind}, {col.dtype}",
        f"{col.missing_pct:.1f}% missing",
        f"{col.n_unique} unique",
    ]
    if col.id_like:
        parts.append("identifier-like")
    stats = [(k, getattr(col, k)) for k in ("min", "median", "mean", "max", "std")]
    shown = [f"{k}={v:.6g}" for k, v in stats if v is not None]
    if shown:
        parts.append(" ".join(shown))
    if col.top_values:
        tops = ", ".join(repr(v) for v in col.top_values[:MAX_TOP_VALUES])
        parts.append(f"top values: {tops}")
    return f"- {col.name!r}: " + "; ".join(parts)


def table_head(table: TableRecord) -> str:
    return (
        f"Table {table.name!r} from dataset {table.dataset!r}: "
        f"{table.n_rows} rows × {table.n_columns} columns."
    )


def data_overview(table: TableRecord) -> str:
    """The table's profile as the model sees it; built only from `TableRecord.columns`."""
    return "\n".join([table_head(table), "Columns:", *(describe_column(c) for c in table.columns)])


def system_rules(max_turns: int) -> str:
    return SYSTEM_RULES.format(max_turns=max_turns)


def system_prompt(table: TableRecord, max_turns: int) -> str:
    """Rules, then the table; `context.budget_messages` splits it back along this seam."""
    return system_rules(max_turns) + "\n\n" + data_overview(table)


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


def question_prompt(question: str, schema: AnswerSchema) -> str:
    return f"Question: {question}\n\nSubmit {describe_schema(schema)}."


def reprompt(reason: str, errors_left: int) -> str:
    """Shown after a rejected reply; says what was wrong and how many more are tolerated."""
    return (
        f"Your last reply could not be run: {reason}. Reply with one line of reasoning "
        f"and exactly one ```python code block. ({errors_left} more malformed "
        f"replies end the episode.)"
    )


@dataclass(frozen=True)
class Observation:
    """What one cell produced, in the fields the tool message shows."""

    status: str
    duration_ms: float
    stdout: str
    stderr: str
    value_repr: str | None
    submissions: Sequence[str]


def tool_message(obs: Observation, limit: int) -> str:
    """The tool message for one cell, at most about `limit` characters of body.

    The status header and the submission lines are markers the model (and a reader of the
    trace) relies on, so they are never cut; only stdout, stderr and the value share the
    budget, each truncated in the middle with an explicit marker.
    """
    header = f"[cell {obs.status}, {obs.duration_ms:.0f} ms]"
    markers = [f"submitted: {cap_text(s, limit // 4)}" for s in obs.submissions]
    sections = [("stdout", obs.stdout), ("stderr", obs.stderr), ("value", obs.value_repr or "")]
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
