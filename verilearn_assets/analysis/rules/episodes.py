"""Gate rules over episode traces: integrity, strict hook grounding, honest verification.

A trace is corrupt when its turns skip or repeat, when a cell is not paired with the
assistant turn that wrote it and the tool turn that answered it, or when a tool output
belongs to no cell. One such trace is a critical failure: it fails the whole partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.rollout.grounding import ground_hooks
from verilearn_assets.analysis.rollout.loop import judge
from verilearn_assets.core.contract import RuleOutcome


def trace_problems(ep: Episode) -> list[str]:
    """Every integrity problem of one trace (empty when the trace is sound)."""
    problems: list[str] = []
    turns = [m.turn for m in ep.messages]
    if turns != list(range(len(turns))):
        problems.append(f"turn indices not contiguous from 0: {turns[:12]}")
    by_turn = {m.turn: m for m in ep.messages}
    if ep.messages and ep.messages[0].role != "system":
        problems.append("first message is not the system prompt")
    n_assistant = sum(m.role == "assistant" for m in ep.messages)
    if ep.n_turns != n_assistant:
        problems.append(f"n_turns={ep.n_turns} but {n_assistant} assistant messages")
    used_outputs: set[int] = set()
    for i, cell in enumerate(ep.cells):
        src = by_turn.get(cell.turn)
        out = by_turn.get(cell.output_turn)
        if src is None or src.role != "assistant" or src.kind != "reply":
            problems.append(f"cell {i}: turn {cell.turn} is not an accepted assistant reply")
        elif cell.code.strip() and cell.code.strip() not in src.content:
            problems.append(f"cell {i}: code does not appear in assistant turn {cell.turn}")
        if out is None or out.role != "tool":
            problems.append(f"cell {i}: output turn {cell.output_turn} is not a tool message")
        elif cell.output_turn != cell.turn + 1:
            problems.append(
                f"cell {i}: output turn {cell.output_turn} does not follow turn {cell.turn}"
            )
        if cell.output_turn in used_outputs:
            problems.append(f"cell {i}: tool turn {cell.output_turn} is claimed twice")
        used_outputs.add(cell.output_turn)
    for m in ep.messages:
        if m.role == "tool" and m.kind == "tool_output" and m.turn not in used_outputs:
            problems.append(f"orphan tool output at turn {m.turn}")
    if ep.verified and ep.failure_class is not None:
        problems.append(f"verified but failure_class={ep.failure_class}")
    if not ep.verified and ep.failure_class is None:
        problems.append("unverified without a failure_class")
    return problems


def trace_integrity(episodes: Iterable[Episode]) -> RuleOutcome:
    eps = list(episodes)
    failures = [
        f"episode {ep.id} (question {ep.question_id}): {p}"
        for ep in eps
        for p in trace_problems(ep)
    ]
    return RuleOutcome(rule="trace_integrity", checked=len(eps), failures=failures)


def hooks_grounded(episodes: Iterable[Episode]) -> RuleOutcome:
    """Recompute grounding from the executed cells; the stored counts must agree."""
    eps = list(episodes)
    failures: list[str] = []
    total = grounded = 0
    for ep in eps:
        g, malformed, _ = ground_hooks(ep.hooks, [c.code for c in ep.cells if c.status != "killed"])
        total += len(ep.hooks)
        grounded += len(g)
        if len(g) != ep.hooks_grounded:
            failures.append(
                f"episode {ep.id}: stored hooks_grounded={ep.hooks_grounded} "
                f"but {len(g)} ground against executed lines"
            )
        if ep.verified and len(g) < len(ep.hooks):
            failures.append(
                f"episode {ep.id}: verified with {len(ep.hooks) - len(g)} ungrounded hook(s)"
            )
    rate = grounded / total if total else 1.0
    return RuleOutcome(
        rule="hooks_grounded",
        checked=len(eps),
        failures=failures,
        stats={"hooks": total, "grounded": grounded, "rate": round(rate, 4)},
    )


def verified_match_question(
    episodes: Iterable[Episode], questions: Mapping[str, QuestionRecord]
) -> RuleOutcome:
    """A verified episode's answer must match its question's accepted answers."""
    eps = [e for e in episodes if e.verified]
    failures: list[str] = []
    for ep in eps:
        q = questions.get(ep.question_id)
        if q is None:
            failures.append(f"episode {ep.id}: question {ep.question_id} not in the partition")
        elif ep.source != "llm" and not judge(ep.answer, q):
            failures.append(
                f"episode {ep.id}: verified but answer {ep.answer!r} does not match question {q.id}"
            )
    return RuleOutcome(rule="verified_match_question", checked=len(eps), failures=failures)
