"""The gate's pure rules: each one fails on the defect it exists for."""

from __future__ import annotations

import polars as pl

from verilearn_assets.analysis.records import CellRun, Episode, Message, QuestionRecord
from verilearn_assets.analysis.rules import episodes as episode_rules
from verilearn_assets.analysis.rules import questions as question_rules
from verilearn_assets.core.records import AnswerSchema, HookRecord
from verilearn_assets.gate.drift import drift_verdict


def _episode(**over) -> Episode:
    messages = [
        Message(turn=0, role="system", kind="prompt", content="sys"),
        Message(turn=1, role="user", kind="prompt", content="q?"),
        Message(turn=2, role="assistant", kind="reply", content="```python\nx = 10\n```"),
        Message(turn=3, role="tool", kind="tool_output", content="ok"),
        Message(turn=4, role="assistant", kind="reply", content="```python\nsubmit(x)\n```"),
        Message(turn=5, role="tool", kind="tool_output", content="submitted: 10"),
    ]
    cells = [
        CellRun(
            turn=2, output_turn=3, code="x = 10", status="ok", stdout="", stderr="", duration_ms=1.0
        ),
        CellRun(
            turn=4,
            output_turn=5,
            code="submit(x)",
            status="ok",
            stdout="",
            stderr="",
            duration_ms=1.0,
        ),
    ]
    base = dict(
        id="e1",
        question_id="q1",
        source="template",
        split="train",
        dataset="d",
        teacher="program",
        sampling_key="k",
        messages=messages,
        cells=cells,
        submissions=["10"],
        answer="10",
        hooks=[HookRecord(name="x", code_line="x = 10", value_hash="h")],
        hooks_total=1,
        hooks_grounded=1,
        hooks_malformed=0,
        verified=True,
        n_turns=2,
    )
    return Episode(**(base | over))


def test_sound_trace_passes() -> None:
    assert episode_rules.trace_problems(_episode()) == []
    assert episode_rules.trace_integrity([_episode()]).passed
    assert episode_rules.hooks_grounded([_episode()]).passed


def test_orphan_tool_output_and_gap_fail() -> None:
    ep = _episode()
    ep.cells = ep.cells[:1]  # the second tool output now belongs to no cell
    problems = " ".join(episode_rules.trace_problems(ep))
    assert "orphan tool output at turn 5" in problems
    gap = _episode()
    gap.messages = [m for m in gap.messages if m.turn != 3]
    out = episode_rules.trace_integrity([gap])
    assert not out.passed and "not contiguous" in out.summary()
    assert "output turn 3 is not a tool message" in out.summary()


def test_cell_code_must_come_from_its_turn() -> None:
    ep = _episode()
    ep.cells[0] = ep.cells[0].model_copy(update={"code": "x = 11"})
    assert any("does not appear" in p for p in episode_rules.trace_problems(ep))


def test_hook_grounding_is_strict() -> None:
    ep = _episode(hooks=[HookRecord(name="x", code_line="x = 1", value_hash="h")])
    out = episode_rules.hooks_grounded([ep])  # `x = 1` must not ground against `x = 10`
    assert not out.passed and "0 ground" in out.summary()


def _question(**over) -> QuestionRecord:
    from verilearn_assets.core.answers import answer_hash

    schema = AnswerSchema(kind="number")
    code = "submit(1.5)"
    base = dict(
        id=QuestionRecord.make_id("template", "d", "t", code),
        source="template",
        split="train",
        dataset="d",
        table="t",
        question="q?",
        question_mechanical="q",
        answer_schema=schema,
        answer="1.5",
        answer_hashes=[answer_hash("1.5", schema)],
        code=code,
        n_steps=1,
        difficulty="easy",
        template="mean",
    )
    return QuestionRecord(**(base | over))


def test_question_rules() -> None:
    q = _question()
    frame = QuestionRecord.to_frame([q])
    assert question_rules.schema_contract(frame, "template", "train").passed
    assert not question_rules.schema_contract(frame, "procedural", "train").passed
    forged = QuestionRecord.to_frame([_question(id="0" * 16)])
    assert (
        "not the content hash"
        in question_rules.schema_contract(forged, "template", "train").summary()
    )
    legacy = frame.with_columns(pl.lit("x").alias("_ground_truth"))
    assert "_ground_truth" in question_rules.schema_contract(legacy, "template", "train").summary()
    assert question_rules.answer_hash_present([q]).passed
    assert not question_rules.answer_hash_present([_question(answer_hashes=["zz"])]).passed
    assert not question_rules.datasets_in_one_split([("d", "train"), ("d", "dev")]).passed
    assert question_rules.datasets_in_one_split([("d", "train"), ("e", "dev")]).passed
    assert question_rules.floors([q], {"mean": 1}, {}, 1).passed
    out = question_rules.floors([q], {"mean": 2}, {"filter": 1}, 1)
    assert "template mean: 1 < floor 2" in out.summary()
    assert "operator family filter: 0 < floor 1" in out.summary()


def test_drift_warns_only_past_the_limit() -> None:
    assert drift_verdict("pass rate", 0.80, None, 0.05, worse_when_higher=False).passed
    assert drift_verdict("pass rate", 0.80, 0.84, 0.05, worse_when_higher=False).passed
    assert not drift_verdict("pass rate", 0.70, 0.80, 0.05, worse_when_higher=False).passed
    assert not drift_verdict("alt", 0.40, 0.20, 0.10, worse_when_higher=True).passed
