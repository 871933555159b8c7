"""Analysis episodes → SFT rows: what is kept, which role each turn has, and the weights."""

from __future__ import annotations

from verilearn_assets.analysis.records import Episode, Message
from verilearn_assets.analysis.sft import sft_rows
from verilearn_assets.core.family import SftRow


def _episode(eid: str, question: str, verified: bool = True) -> Episode:
    return Episode(
        id=eid,
        question_id=question,
        source="llm",
        split="train",
        dataset="iris",
        template=None,
        teacher="vllm",
        sampling_key=eid,
        messages=[
            Message(turn=0, role="system", kind="prompt", content="you are an analyst"),
            Message(turn=1, role="user", kind="prompt", content="mean of x?"),
            Message(turn=2, role="assistant", kind="rejected_reply", content="no cell here"),
            Message(turn=3, role="user", kind="reprompt", content="write one cell"),
            Message(turn=4, role="assistant", kind="reply", content="df.x.mean()"),
            Message(turn=5, role="tool", kind="tool_output", content="[ok] 2.5"),
            Message(turn=6, role="assistant", kind="reply", content="submit(2.5)"),
        ],
        cells=[],
        submissions=["2.5"],
        answer="2.5",
        hooks=[],
        hooks_total=0,
        hooks_grounded=0,
        hooks_malformed=0,
        verified=verified,
        failure_class=None if verified else "wrong_answer",
        n_turns=7,
    )


def test_rows_keep_accepted_turns_and_the_tool_role() -> None:
    (row,) = sft_rows([_episode("e1", "q1"), _episode("e2", "q1", verified=False)])
    assert isinstance(row, SftRow) and row.family == "analysis" and row.rollout_id == "e1"
    assert [m["role"] for m in row.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert row.messages[3] == {"role": "tool", "content": "[ok] 2.5"}
    assert "no cell here" not in str(row.messages) and "write one cell" not in str(row.messages)
    assert row.n_messages == 5 and row.weight == 1.0


def test_k_traces_of_one_question_share_one_unit_of_weight() -> None:
    rows = sft_rows([_episode(f"e{i}", "q1") for i in range(4)] + [_episode("e9", "q2")])
    by_question: dict[str, float] = {}
    for r in rows:
        by_question[r.task_id] = by_question.get(r.task_id, 0.0) + r.weight
    assert by_question == {"q1": 1.0, "q2": 1.0}
    assert len({r.id for r in rows}) == 5  # every trace kept, each with its own id
