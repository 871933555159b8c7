"""Verifier rewards for analysis questions: plain functions the GRPO trainer calls.

A completion is one reply holding one ```python block; it runs as one fresh sandbox task
on the question's table (single-turn rollouts). Three rewards read that one run:

- `outcome_reward` — 1.0 when the run submits exactly one answer, computed from the table,
  that matches the question's answer or an alternative by the strict comparison of
  `teacher.loop.judge`; else 0.0.
- `partial_reward` — 1.0 for a correct answer; otherwise capped credit, at most
  `PARTIAL_CAP` (< 1, so no partial credit equals a correct answer):
  `FORMAT_CREDIT` for one python block that ran without error *and* read the table,
  `SUBMIT_CREDIT` for exactly one computed submission that fits the answer schema, and up
  to `HOOK_CREDIT` for distinct hooks grounded in an executed line that computes from the
  table (`HOOK_TARGET` such hooks earn it all).
- `process_reward` — in [0, 1]: the share of the reference program's hooks that the run
  reproduced (same name, same value hash, grounded in a table-computing line), each
  reference hook weighted by 1 + the number of reference hooks downstream of it along
  `depends_on`, so an intermediate that feeds the answer counts more than a side value.

Anti-gaming, checked on the code before the run counts (`screen_code`):
- no file, network or process access: imports are limited to `ALLOWED_IMPORTS`, and the
  names/attributes in `FORBIDDEN_NAMES`/`FORBIDDEN_ATTRS` (open, exec, `read_*`, dunders,
  ...) are refused — the sandbox jail also has no lake mounted, this is the second wall;
- "submitting without computing": every `submit(...)` argument must depend (by a static
  data-flow over assignments and function bodies) on the table `df`, and no numeric
  literal of the program may equal the submitted answer (`|x| >= LITERAL_MIN` or a
  non-integer, so ordinary constants such as `0`, `1`, `2` never trigger it);
- printed answers earn nothing (only `submit` counts), hooks on lines that never ran or
  that compute nothing from the table earn nothing, and a crash (even after a correct
  submission or correct hooks) earns 0 in all three rewards.
Known limit: an answer encoded arithmetically from table-derived zeros passes the static
check; the held-out evaluation (fresh tables) is what catches a memorising policy.

Multi-turn rollouts (`grpo.multi_turn`, the environment in `analysis/grpo.py`):
`score_trace` scores a finished student-loop episode with the same rules as one
single-turn run: the cells form one program (a cell with a forbidden construct zeroes the
episode; cells that do not parse ran nothing and are left out), the episode's answer is its
submission, and a crash counts only in the cell that ended the episode — an agent that
fixes an error in its next cell is doing its job.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.grounding import ground_hooks, normalize_line
from verilearn_assets.analysis.rollout.loop import Trace, judge
from verilearn_assets.analysis.rollout.parse import FormatError, parse_reply
from verilearn_assets.core.answers import AnswerError, parse_answer, validate_answer
from verilearn_assets.core.records import HookRecord
from verilearn_assets.core.sandbox.pool import TaskResult

FORMAT_CREDIT = 0.05
SUBMIT_CREDIT = 0.05
HOOK_CREDIT = 0.15
HOOK_TARGET = 3
PARTIAL_CAP = FORMAT_CREDIT + SUBMIT_CREDIT + HOOK_CREDIT  # 0.25
LITERAL_MIN = 10.0
TABLE = "df"

ALLOWED_IMPORTS = frozenset(
    {
        "pandas",
        "numpy",
        "scipy",
        "math",
        "statistics",
        "collections",
        "itertools",
        "functools",
        "re",
        "datetime",
        "decimal",
        "fractions",
    }
)
FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "exec",
        "eval",
        "compile",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "help",
        "memoryview",
    }
)
FORBIDDEN_ATTRS = frozenset(
    {
        "io",  # pd.io / scipy.io: readers and raw file handles
        "open",
        "get_handle",
        "load",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "fromregex",
        "memmap",
        "open_memmap",
        "DataSource",
        "HDFStore",
        "ExcelFile",
        "ExcelWriter",
        "system",
        "popen",
        "urlopen",
    }
)


# --- the static screen ---------------------------------------------------------------------
@dataclass(frozen=True)
class Screen:
    """What the code may earn before it runs: `reason` is set when it earns nothing."""

    reason: str | None
    reads_table: bool = False
    submits_computed: bool = False
    computed_lines: frozenset[str] = frozenset()  # normalised lines computing from `df`
    literals: tuple[float, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reason is None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _targets(node: ast.AST) -> set[str]:
    stores = (n for n in ast.walk(node) if isinstance(n, ast.Name))
    return {n.id for n in stores if isinstance(n.ctx, ast.Store)}


def _forbidden(tree: ast.AST) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:  # `from scipy import io` imports scipy.io
                mods = [f"{node.module or ''}.{a.name}" for a in node.names]
            for mod in mods:
                parts = mod.split(".")
                if parts[0] not in ALLOWED_IMPORTS or FORBIDDEN_ATTRS & set(parts[1:]):
                    return f"forbidden_import: {mod}"
        elif isinstance(node, ast.Name) and (
            node.id in FORBIDDEN_NAMES or node.id.startswith("__")
        ):
            return f"forbidden_name: {node.id}"
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") or node.attr in FORBIDDEN_ATTRS:
                return f"forbidden_attribute: {node.attr}"
            if node.attr.startswith("read_"):  # pd.read_csv, pd.read_parquet, ...
                return f"forbidden_attribute: {node.attr} (reads a file)"
    return None


def _tainted(tree: ast.Module) -> set[str]:
    """Names whose value depends on the table: a fixpoint over assignments, loop targets,
    comprehension variables and functions whose body reads a tainted name."""
    tainted = {TABLE}
    while True:
        before = len(tainted)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
                value = node.value
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if value is not None and _names(value) & tainted:
                    for t in targets:
                        tainted |= _targets(t)
            elif isinstance(node, ast.For | ast.comprehension) and _names(node.iter) & tainted:
                tainted |= _targets(node.target)
            elif isinstance(node, ast.FunctionDef) and _names(node) & tainted:
                tainted.add(node.name)
        if len(tainted) == before:
            return tainted


def _numeric_literals(tree: ast.AST) -> tuple[float, ...]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            if not isinstance(node.value, bool):
                out.append(float(node.value))
    return tuple(out)


def screen_code(code: str) -> Screen:
    """Static verdict on a program before its run counts (see the module doc)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return Screen(f"syntax_error: line {exc.lineno}: {exc.msg}")
    bad = _forbidden(tree)
    if bad:
        return Screen(bad)
    tainted = _tainted(tree)
    lines = code.splitlines()
    computed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.ClassDef):
            assign = isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
            reads = _names(node.value) if assign and node.value is not None else _names(node)
            if node.lineno == node.end_lineno and reads & tainted:
                computed.add(normalize_line(lines[node.lineno - 1]))
    submits = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "submit"
    ]
    computed_submit = bool(submits) and all(
        any(_names(a) & tainted for a in [*s.args, *(k.value for k in s.keywords)]) for s in submits
    )
    return Screen(
        None,
        reads_table=TABLE in _names(tree),
        submits_computed=computed_submit,
        computed_lines=frozenset(computed),
        literals=_numeric_literals(tree),
    )


def _numbers(value: Any) -> Iterable[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)


def answer_literal(screen: Screen, answer: str) -> bool:
    """Does a distinctive number of the submitted answer appear as a literal in the code?"""
    try:
        value = parse_answer(answer)
    except AnswerError:
        return False
    for x in _numbers(value):
        if not math.isfinite(x) or (abs(x) < LITERAL_MIN and float(x).is_integer()):
            continue
        if any(math.isclose(x, lit, rel_tol=1e-9, abs_tol=1e-12) for lit in screen.literals):
            return True
    return False


# --- one scored run ------------------------------------------------------------------------
@dataclass(frozen=True)
class Scored:
    """Every reward of one completion, and why the outcome is what it is."""

    outcome: float
    partial: float
    process: float
    reason: str  # "correct", or the first reason the answer earned nothing
    hooks_credited: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


def extract_code(completion: str) -> str | FormatError:
    """The one python block of a reply, or the format error (same rule as the teacher)."""
    parsed = parse_reply(completion)
    return parsed if isinstance(parsed, FormatError) else parsed.code


def credited_hooks(code: str, result: TaskResult, screen: Screen) -> list[HookRecord]:
    """Hooks grounded in an executed line that computes from the table (first per name)."""
    grounded, _, _ = ground_hooks(result.hooks, [code])
    seen: dict[str, HookRecord] = {}
    for h in grounded:
        if normalize_line(h.code_line) in screen.computed_lines:
            seen.setdefault(h.name, h)
    return list(seen.values())


def outcome_verdict(question: QuestionRecord, screen: Screen, result: TaskResult) -> str:
    """ "correct" or the reason the outcome is 0."""
    if not screen.ok:
        return screen.reason or "screened"
    if result.status != "ok":
        return f"crash: {result.status}"
    if not result.submissions:
        return "no_submission"
    if len(result.submissions) > 1:
        return "several_submissions"
    if not screen.submits_computed:
        return "not_computed: submit() does not depend on the table"
    answer = result.submissions[0]
    if answer_literal(screen, answer):
        return "not_computed: the submitted number is a literal of the code"
    return "correct" if judge(answer, question) else "wrong_answer"


def outcome_reward(question: QuestionRecord, code: str, result: TaskResult) -> float:
    return 1.0 if outcome_verdict(question, screen_code(code), result) == "correct" else 0.0


def partial_reward(question: QuestionRecord, code: str, result: TaskResult) -> float:
    """1.0 when correct, else the capped credit of the module doc (never above PARTIAL_CAP)."""
    screen = screen_code(code)
    verdict = outcome_verdict(question, screen, result)
    return 1.0 if verdict == "correct" else _partial(question, code, result, screen, verdict)


def _partial(
    question: QuestionRecord, code: str, result: TaskResult, screen: Screen, verdict: str
) -> float:
    if not screen.ok or result.status != "ok" or not screen.reads_table:
        return 0.0
    credit = FORMAT_CREDIT
    if verdict == "wrong_answer":  # one computed submission; does it fit the schema?
        try:
            if validate_answer(parse_answer(result.submissions[0]), question.answer_schema) is None:
                credit += SUBMIT_CREDIT
        except AnswerError:
            pass
    n = len(credited_hooks(code, result, screen))
    credit += HOOK_CREDIT * min(n, HOOK_TARGET) / HOOK_TARGET
    return min(PARTIAL_CAP, credit)


def hook_weights(reference: Sequence[HookRecord]) -> dict[str, float]:
    """1 + the number of reference hooks downstream of each one along `depends_on`."""
    users: dict[str, set[str]] = {h.name: set() for h in reference}
    for h in reference:
        for dep in h.depends_on:
            users.setdefault(dep, set()).add(h.name)
    weights = {}
    for h in reference:
        seen: set[str] = set()
        stack = list(users.get(h.name, ()))
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(users.get(n, ()))
        seen.discard(h.name)
        weights[h.name] = 1.0 + len(seen)
    return weights


def process_reward(
    question: QuestionRecord, code: str, result: TaskResult, reference: Sequence[HookRecord] = ()
) -> float:
    """Weighted share of the reference hooks reproduced (module doc); 0 when screened out
    or when the reference has no hooks. `reference` defaults to the question's own hooks."""
    ref = list(reference or question.hooks)
    screen = screen_code(code)
    if not ref or not screen.ok or result.status != "ok":
        return 0.0
    return _process(ref, credited_hooks(code, result, screen))


def _process(ref: Sequence[HookRecord], credited: Sequence[HookRecord]) -> float:
    weights = hook_weights(ref)
    want = {h.name: h.value_hash for h in ref}
    got = {h.name: h.value_hash for h in credited}
    matched = sum(w for name, w in weights.items() if got.get(name) == want[name])
    return matched / sum(weights.values())


def score_run(question: QuestionRecord, code: str, result: TaskResult) -> Scored:
    """All three rewards from one run (one static screen, one grounding pass)."""
    screen = screen_code(code)
    verdict = outcome_verdict(question, screen, result)
    correct = verdict == "correct"
    ran = screen.ok and result.status == "ok"  # a crash earns nothing, hooks included
    credited = credited_hooks(code, result, screen) if ran else []
    return Scored(
        outcome=1.0 if correct else 0.0,
        partial=1.0 if correct else _partial(question, code, result, screen, verdict),
        process=_process(question.hooks, credited) if (question.hooks and ran) else 0.0,
        reason=verdict,
        hooks_credited=tuple(h.name for h in credited),
    )


def format_failure(reason: str) -> Scored:
    """The score of a completion with no runnable python block: nothing."""
    return Scored(0.0, 0.0, 0.0, f"format_error: {reason}")


def score_trace(question: QuestionRecord, trace: Trace) -> Scored:
    """Every reward of one multi-turn episode (module doc): the executed cells as one
    program and one run, scored by `score_run`."""
    if not trace.cells:
        return format_failure(f"no cell ran (episode ended: {trace.end})")
    codes = []
    for cell in trace.cells:
        screen = screen_code(cell.code)
        if screen.reason and screen.reason.startswith("syntax_error"):
            continue  # it ran nothing; its error was the tool message the model saw
        if not screen.ok:
            return Scored(0.0, 0.0, 0.0, f"cell at turn {cell.turn}: {screen.reason}")
        codes.append(cell.code.rstrip("\n"))
    last = trace.cells[-1]
    result = TaskResult(
        status=last.status,  # the cell that ended the episode; earlier errors were fixed
        stdout="".join(c.stdout for c in trace.cells),
        stderr="".join(c.stderr for c in trace.cells),
        answer=trace.answer,
        submissions=list(trace.submissions),
        hooks=list(trace.hooks),
        duration_ms=sum(c.duration_ms for c in trace.cells),
        cells=[],
    )
    return score_run(question, "\n".join(codes), result)
