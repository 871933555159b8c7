"""Verified episodes → chat-format SFT rows (pure), in the shape every family shares.

Only accepted replies and their tool outputs are kept: rejected replies and re-prompts
are how the teacher got there, not what the student should learn to say.
"""

from __future__ import annotations

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
        role = "user" if m.role == "tool" else m.role
        out.append({"role": role, "content": m.content})
    return out


def sft_rows(episodes: Iterable[Episode]) -> list[SftRow]:
    """One row per verified episode."""
    rows = []
    for ep in episodes:
        if not ep.verified:
            continue
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
                template=ep.template,
            )
        )
    return rows
