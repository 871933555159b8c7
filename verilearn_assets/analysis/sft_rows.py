"""Verified episodes → chat-format SFT rows (pure).

Only accepted replies and their tool outputs are kept: rejected replies and re-prompts
are how the teacher got there, not what the student should learn to say.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import polars as pl

from verilearn_assets.analysis.records import Episode
from verilearn_assets.core.records import content_hash

SFT_SCHEMA = {
    "id": pl.Utf8,
    "episode_id": pl.Utf8,
    "question_id": pl.Utf8,
    "source": pl.Utf8,
    "split": pl.Utf8,
    "teacher": pl.Utf8,
    "messages": pl.Utf8,
    "n_messages": pl.Int64,
}

_KEEP_KINDS = {"prompt", "reply", "tool_output"}


def sft_messages(ep: Episode) -> list[dict[str, str]]:
    out = []
    for m in ep.messages:
        if m.kind not in _KEEP_KINDS:
            continue
        role = "user" if m.role == "tool" else m.role
        out.append({"role": role, "content": m.content})
    return out


def sft_frame(episodes: Iterable[Episode]) -> pl.DataFrame:
    rows = []
    for ep in episodes:
        if not ep.verified:
            continue
        msgs = sft_messages(ep)
        rows.append(
            {
                "id": content_hash("sft", ep.id),
                "episode_id": ep.id,
                "question_id": ep.question_id,
                "source": ep.source,
                "split": ep.split,
                "teacher": ep.teacher,
                "messages": json.dumps(msgs, ensure_ascii=False),
                "n_messages": len(msgs),
            }
        )
    return pl.DataFrame(rows, schema=SFT_SCHEMA, orient="row")
