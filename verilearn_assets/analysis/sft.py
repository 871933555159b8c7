"""Verified episodes → chat-format SFT rows (pure), in the shape every family shares.

Only accepted replies and their tool outputs are kept: rejected replies and re-prompts
are how the teacher got there, not what the student should learn to say. Tool outputs
stay `tool` turns (a student must not learn to speak as the tool). The K consistency
traces of one `llm` question are all kept, each with weight 1/K, so every question weighs
the same in training however many traces verified it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from verilearn_assets.analysis.records import Episode
from verilearn_assets.core.family import SftRow

FAMILY_NAME = "analysis"
_KEEP_KINDS = {"prompt", "reply", "tool_output"}


def sft_messages(ep: Episode) -> list[dict[str, str]]:
    out = []
    for m in ep.messages:
        if m.kind not in _KEEP_KINDS:
            continue
        out.append({"role": m.role, "content": m.content})
    return out


def sft_rows(episodes: Iterable[Episode]) -> list[SftRow]:
    """One row per verified episode."""
    verified = [ep for ep in episodes if ep.verified]
    per_question = Counter(ep.question_id for ep in verified)
    rows = []
    for ep in verified:
        msgs = sft_messages(ep)
        rows.append(
            SftRow(
                id=SftRow.make_id(FAMILY_NAME, ep.id),
                family=FAMILY_NAME,
                task_id=ep.question_id,
                rollout_id=ep.id,
                source=ep.source,
                split=ep.split,
                teacher=ep.teacher,
                messages=msgs,
                n_messages=len(msgs),
                weight=1.0 / per_question[ep.question_id],
                template=ep.template,
            )
        )
    return rows
