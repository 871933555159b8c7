"""Partition runs (skip on re-run, incremental parts), triangulated episodes, llm proposals."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from teacher_harness import Sandbox, ScriptedPolicy, cell, make_question

from verilearn_assets.analysis.records import Episode, Message, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.runner import (
    TeacherUnavailableError,
    compact_partition,
    planned_ids,
    policy_factory,
    run_partition,
    triangulated_episodes,
)
from verilearn_assets.analysis.sources.llm import (
    NoServerError,
    parse_proposals,
    proposal_policy_factory,
    propose_questions,
)
from verilearn_assets.core import lake
from verilearn_assets.core.records import AnswerSchema, TableRecord

INT = AnswerSchema(kind="integer")
NUM = AnswerSchema(kind="number", rel_tol=1e-9)


def frame(table: TableRecord) -> pd.DataFrame:
    return pd.read_parquet(table.path)


def test_partition_run_writes_incrementally_and_skips_on_rerun(
    sandbox: Sandbox, table: TableRecord, tmp_path: Path
) -> None:
    df = frame(table)
    codes = {
        "qty_max": (
            "m = int(df['qty'].max())\nhook(m, \"m = int(df['qty'].max())\")\nsubmit(m)",
            int(df["qty"].max()),
            INT,
        ),
        "rows": ("n = len(df)\nsubmit(n)", len(df), INT),
        "wrong": ("submit(-1)", 5, INT),
    }  # the reference answer disagrees: unverified
    questions = [
        make_question(table, code, ans, schema, text=name)
        for name, (code, ans, schema) in codes.items()
    ]
    cfg = TeacherConfig()
    make = policy_factory(cfg)
    tables = {table.id: table}
    first = sandbox.run(
        run_partition(
            questions,
            tables,
            make,
            sandbox.pool,
            cfg,
            source="template",
            split="train",
            root=tmp_path,
        )
    )
    assert (first.written, first.skipped_questions, first.verified) == (3, 0, 2)
    assert first.failures == {"wrong_answer": 1} and first.errors == []
    parts = sorted(
        (tmp_path / "analysis/episodes/source=template/split=train").glob("part-*.parquet")
    )
    assert len(parts) == 3  # one part per finished question: a crash loses only those in flight
    stored = lake.read_records(
        "analysis/episodes", Episode, tmp_path, source="template", split="train"
    )
    assert sorted(e.id for e in stored) == sorted(i for q in questions for i in planned_ids(q, cfg))

    again = sandbox.run(
        run_partition(
            questions,
            tables,
            make,
            sandbox.pool,
            cfg,
            source="template",
            split="train",
            root=tmp_path,
        )
    )
    assert (again.written, again.skipped_questions) == (0, 3)
    compacted = compact_partition("template", "train", tmp_path)
    assert (len(compacted.episodes), compacted.stale) == (3, 0)
    assert (
        len(list((tmp_path / "analysis/episodes/source=template/split=train").glob("*.parquet")))
        == 1
    )

    # a question re-drawn away (its id left the partition) takes its episode with it
    kept_ids = {q.id for q in questions[:2]}
    compacted = compact_partition("template", "train", tmp_path, question_ids=kept_ids)
    assert compacted.stale == 1
    stored = lake.read_records(
        "analysis/episodes", Episode, tmp_path, source="template", split="train"
    )
    assert {e.question_id for e in stored} == kept_ids

    # a different sampling config is a different episode set: nothing is skipped
    other = TeacherConfig(teacher="vllm", model="m")
    assert set(planned_ids(questions[0], other)).isdisjoint(planned_ids(questions[0], cfg))


def test_vllm_teacher_without_a_server_fails_fast() -> None:
    with pytest.raises(TeacherUnavailableError, match="configs/vllm.yaml"):
        policy_factory(TeacherConfig(teacher="vllm"))
    with pytest.raises(TeacherUnavailableError, match="teacher: vllm"):
        policy_factory(TeacherConfig())(None, 0)
    with pytest.raises(NoServerError, match="set base_urls in configs/vllm.yaml"):
        proposal_policy_factory(TeacherConfig(), None)


def _answers_by_index(answers: list[str]) -> object:
    """A factory of scripted policies: trace i submits answers[i] (a python expression)."""

    def make(code: str | None, index: int) -> ScriptedPolicy:
        return ScriptedPolicy([cell(f"r = {answers[index]}"), cell("submit(r)")], name="scripted")

    return make


def test_triangulated_episodes_record_verdicts_per_trace(
    sandbox: Sandbox, table: TableRecord
) -> None:
    mean = float(frame(table)["weight"].mean())
    q = make_question(
        table, "submit(float(df['weight'].mean()))", mean, NUM, source="llm", text="Mean weight?"
    )
    cfg = TeacherConfig(consistency_traces=2)
    make = _answers_by_index(
        [
            "float(df['weight'].mean())",
            "float(df['weight'].sum()) / len(df)",
            "float(df['weight'].median())",
        ]
    )
    eps = sandbox.run(triangulated_episodes(q, table, make, sandbox.pool, cfg))
    assert [(e.role, e.verified, e.failure_class) for e in eps] == [
        ("gold", True, None),
        ("consistency", True, None),
        ("consistency", False, "disagreement"),
    ]
    assert len({e.id for e in eps}) == 3
    assert [e.id for e in eps] == planned_ids(q, cfg, teacher="scripted")

    tie = _answers_by_index(["1", "2", "3"])
    eps = sandbox.run(triangulated_episodes(q, table, tie, sandbox.pool, cfg))
    assert all(not e.verified and e.failure_class == "ambiguous" for e in eps)

    crash = _answers_by_index(["1 / 0", "float(df['weight'].mean())", "float(df['weight'].mean())"])
    two_cells = TeacherConfig(consistency_traces=2, max_turns=2)
    eps = sandbox.run(triangulated_episodes(q, table, crash, sandbox.pool, two_cells))
    assert eps[0].cells[-1].status == "error" and eps[0].answer is None
    assert [e.failure_class for e in eps] == ["execution_failure"] * 3


def test_parse_proposals_counts_every_bad_entry() -> None:
    good = {"question": "How many rows?", "answer_schema": {"kind": "integer"}}
    sub = json.dumps(
        [
            good,
            {"question": "", "answer_schema": {"kind": "integer"}},
            {"question": "Q?", "answer_schema": {"kind": "complex"}},
            {"question": "Q?", "answer_schema": {"kind": "number"}, "x": 1},
            "just text",
            good,
        ]
    )
    props, bad = parse_proposals(sub, limit=1)
    assert [p.question for p in props] == ["How many rows?"]
    assert [b.index for b in bad] == [1, 2, 3, 4, 5]
    assert "over the limit" in bad[-1].reason and "answer_schema" in bad[1].reason
    assert parse_proposals(None)[1][0].reason == "the exploration trace submitted nothing"
    assert "expected a list" in parse_proposals("3")[1][0].reason


def test_llm_questions_become_records_only_when_verified(
    sandbox: Sandbox, table: TableRecord
) -> None:
    df = frame(table)
    proposals = [
        {
            "question": "How many orders come from the north region?",
            "answer_schema": {"kind": "integer"},
        },
        {"question": "Which region is best?", "answer_schema": {"kind": "string"}},
        {"question": "broken", "answer_schema": {"kind": "nope"}},
    ]

    def script(convo: list[Message]) -> str:
        task = convo[1].content
        n_replies = sum(m.role == "assistant" for m in convo)
        if task.startswith("Explore"):
            if n_replies == 0:
                return cell("print(df['region'].value_counts())", "Look at the regions.")
            return cell(f"submit({proposals!r})", "Propose questions.")
        if "north" in task:
            steps = ["north = df[df['region'] == 'north']", "n = int(len(north))\nsubmit(n)"]
            return cell(steps[min(n_replies, 1)])
        # the vague question: each trace reads it differently
        pick = ["'north'", "'south'", "'east'"][len(seen_vague) % 3]
        seen_vague.append(pick)
        return cell(f"submit({pick})")

    seen_vague: list[str] = []
    cfg = TeacherConfig(consistency_traces=2, max_proposals=5)
    result = sandbox.run(
        propose_questions(table, lambda code, i: ScriptedPolicy(script), sandbox.pool, cfg)
    )
    assert [m.index for m in result.malformed] == [2]
    assert len(result.outcomes) == 2
    north, vague = result.outcomes
    assert vague.record is None and vague.failure_class == "ambiguous"
    assert north.failure_class is None and north.record is not None
    rec = north.record
    assert rec.source == "llm" and rec.split == table.split and rec.table == table.id
    assert json.loads(rec.answer) == int((df["region"] == "north").sum())
    assert rec.code == "north = df[df['region'] == 'north']\n\nn = int(len(north))\nsubmit(n)"
    assert rec.n_steps == 2 and len(rec.answer_hashes) == 1
    assert result.records == [rec]
    (rejected,) = result.rejected_records(table)
    assert rejected.status == "rejected" and rejected.question == vague.proposal.question
    assert rejected.rejection_reason.startswith("ambiguous: triangulation")
    assert rejected.answer_hashes == [] and rejected.code.startswith("# proposed: ")
    assert rejected.id == QuestionRecord.make_id("llm", table.dataset, table.id, rejected.code)
