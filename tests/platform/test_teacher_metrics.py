"""`<home>/runs/<id>/teacher_metrics.jsonl`: every teacher/actor run writes its precision,
parse failures, latency percentiles and tokens, per source × split and for the whole run.

Known answers come from scripted policies (the one allowed double: what a model says)
driving the real loops: the analysis partition run in a real sandbox, the refactor actor
in a real jail; the Dafny vLLM teacher asks the real tiny model and Dafny judges.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from verilearn_assets.analysis.records import Episode, Message, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.policy import PolicyReply
from verilearn_assets.analysis.rollout.runner import run_partition
from verilearn_assets.core import lake
from verilearn_assets.core.answers import answer_hash
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.llm.teacher_metrics import (
    ALL,
    Attempt,
    TeacherMetrics,
    find_teacher_metrics,
    percentile,
    read_teacher_metrics,
)
from verilearn_assets.core.records import AnswerSchema, TableRecord, canonical_json
from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.pool import SandboxPool

INT = AnswerSchema(kind="integer")


def test_percentiles_are_measured_values_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert [percentile(values, q) for q in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    three = [30.0, 10.0, 20.0]
    assert [percentile(three, q) for q in (50, 90, 99)] == [20.0, 30.0, 30.0]
    assert percentile([], 50) == 0.0


def test_rows_per_source_and_split_then_the_run(tmp_path: Path) -> None:
    metrics = TeacherMetrics("toy", "scripted", "m")
    metrics.add(Attempt("template", "train", True, 10.0, 0, 5, 1))
    metrics.add(Attempt("template", "train", False, 30.0, 2, 7, 3))
    metrics.add(Attempt("llm", "dev", True, 20.0, 1, 11, 4))
    path = metrics.write(tmp_path)
    assert path == tmp_path / "runs" / metrics.run_id / "teacher_metrics.jsonl"
    assert list(find_teacher_metrics(tmp_path, "toy")) == [path]
    rows = read_teacher_metrics(path)
    got = [(r.source, r.split, r.attempted, r.verified, r.parse_failures) for r in rows]
    assert got == [("llm", "dev", 1, 1, 1), ("template", "train", 2, 1, 2), (ALL, ALL, 3, 2, 3)]
    whole = rows[-1]
    assert whole.precision == round(2 / 3, 6)
    assert (whole.prompt_tokens, whole.completion_tokens) == (5 + 7 + 11, 1 + 3 + 4)
    assert (whole.latency_ms_p50, whole.latency_ms_p99) == (20.0, 30.0)
    path.write_text(path.read_text() + '{"run_id": "x"}\n')
    with pytest.raises(ValueError, match=rf"{path}: line 4: not a teacher metrics row"):
        read_teacher_metrics(path)


# --- analysis: a scripted teacher through the real partition run --------------------
class Scripted:
    """What a model says, reply by reply; each reply costs (100, 10) tokens."""

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        return PolicyReply(self.replies.pop(0), 100, 10)


def block(code: str) -> str:
    return f"Compute it.\n\n```python\n{code}\n```"


def test_analysis_teacher_run_writes_known_counts(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6, 7]})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    path.chmod(0o644)
    table = TableRecord(
        id="tbl",
        dataset="d",
        name="t",
        split="train",
        path=str(path),
        n_rows=len(frame),
        n_columns=1,
        sha256="0" * 64,
        columns=profile_frame(frame),
    )

    def q(code: str, answer: int) -> QuestionRecord:
        answer_json = canonical_json(answer)
        return QuestionRecord(
            id=QuestionRecord.make_id("template", "d", table.id, code),
            source="template",
            split="train",
            dataset="d",
            table=table.id,
            question="What is asked?",
            question_mechanical="What is asked?",
            answer_schema=INT,
            answer=answer_json,
            answer_hashes=[answer_hash(answer_json, INT)],
            code=code,
            n_steps=1,
            difficulty="easy",
            template="scripted",
        )

    questions = [q("submit(len(df))", 7), q("submit(int(df['x'].sum()))", 28), q("submit(0)", 5)]
    scripts = {
        questions[0].code: [block("submit(len(df))")],  # verified at once
        # one reply the parser rejects (no code block), then the right one
        questions[1].code: ["It is 28, I think.", block("submit(int(df['x'].sum()))")],
        questions[2].code: [block("submit(-1)")],  # a wrong answer
    }
    home = tmp_path / "home"
    cfg = TeacherConfig(concurrency=1)
    sandbox = SandboxConfig(backend="bwrap", slots=1, memory_mb=512, pids=48)

    async def run():
        async with SandboxPool(sandbox) as pool:
            return await run_partition(
                questions,
                {table.id: table},
                lambda code, _index: Scripted(scripts[code]),
                pool,
                cfg,
                source="template",
                split="train",
                root=lake.lake_root(home),
                teacher="scripted",
            )

    stats = asyncio.run(run())
    assert stats.errors == [] and stats.metrics_path is not None
    assert stats.metrics_path.parent.parent == home / "runs"
    assert stats.metrics_path.parent.name.startswith("teacher-analysis-")
    rows = read_teacher_metrics(stats.metrics_path)
    assert [(r.source, r.split) for r in rows] == [("template", "train"), (ALL, ALL)]
    episodes = lake.read_records(
        "analysis/episodes", Episode, lake.lake_root(home), source="template", split="train"
    )
    durations = sorted(e.duration_ms for e in episodes)
    for row in rows:
        assert (row.family, row.teacher, row.attempted, row.verified) == (
            "analysis",
            "scripted",
            3,
            2,
        )
        assert row.parse_failures == 1 and row.precision == round(2 / 3, 6)
        assert (row.prompt_tokens, row.completion_tokens) == (4 * 100, 4 * 10)  # 4 replies
        # nearest rank of 3 values: p50 the middle one, p90 and p99 the slowest
        assert row.latency_ms_p50 == round(durations[1], 3)
        assert row.latency_ms_p90 == row.latency_ms_p99 == round(durations[2], 3)


# --- refactor: a scripted actor through the real jail --------------------------------
def test_refactor_actor_run_writes_known_counts(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "refactor"))
    from refactor_support import refactor_config

    from verilearn_assets.refactor.rollout.actor import Actor
    from verilearn_assets.refactor.rollout.prompts import load_prompts
    from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
    from verilearn_assets.refactor.sources.partition import generate_tasks

    config = refactor_config("bwrap", tmp_path, action_timeout_s=10, test_timeout_s=20, pids=48)
    repos = [r for r in load_corpus() if r.name == "pathconf"]
    rules = [r for r in load_rules() if r.id == "eq-none-to-is"]
    tasks = generate_tasks("template", repos[0].split, config, repos, rules, max_pairs_per_repo=1)
    task = next(t for t in tasks if t.status == "accepted" and len(t.reference_actions) == 1)
    action = json.dumps(task.reference_actions[0])

    class ScriptedActor:
        """Step 1 says no action (a parse failure), step 2 the reference action."""

        name = "scripted"
        model = "script"

        def __init__(self) -> None:
            self.usage: dict[tuple[str, int], tuple[int, int]] = {}

        async def respond(self, messages, task, step, state, seed) -> str:  # noqa: ANN001
            self.usage[(task.id, step)] = (50 * step, 5 * step)  # as the vLLM teacher keeps it
            if step == 1:
                return "I would edit the file by hand."
            return f"<think>t</think><action>{action}</action><state_update>{{}}</state_update>"

    home = tmp_path / "home"
    actor = Actor(
        home=home,
        teacher=ScriptedActor(),
        config=config,
        prompts=load_prompts(),
        repos={r.name: r for r in repos},
    )
    try:
        summary = asyncio.run(actor.run([task], task.source, task.split))
    finally:
        actor.close()
    path = Path(summary.metadata()["teacher_metrics"])
    assert path.parent.parent == home / "runs" and path.parent.name.startswith("teacher-refactor-")
    whole = read_teacher_metrics(path)[-1]
    assert (whole.attempted, whole.verified, whole.parse_failures) == (2, 1, 1)
    assert (whole.prompt_tokens, whole.completion_tokens) == (50 + 100, 5 + 10)
    assert whole.precision == summary.metadata()["precision"] == 0.5
    assert whole.latency_ms_p99 == round(max(summary.latencies_ms), 3)


# --- dafny: the vLLM teacher on the real tiny model, Dafny's verdict -----------------
def test_dafny_vllm_teacher_writes_its_run(vllm_server, tmp_path: Path) -> None:
    from verilearn_assets.dafny.corpus.loader import load_bundled
    from verilearn_assets.dafny.corpus.splits import split_examples
    from verilearn_assets.dafny.rollout.cascade import cascade_sample, trajectory
    from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher
    from verilearn_assets.dafny.sources.template import template_tasks
    from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig

    class Recording(VllmTeacher):
        """The real teacher, keeping the model's raw replies to count the blockless ones."""

        def _chat(self, messages, task_id=None):  # noqa: ANN001, ANN202
            text = super()._chat(messages, task_id)
            self.replies.append(text)
            return text

    examples = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    with DafnyVerifier(VerifierConfig(processes=1, vc_time_limit_s=10), cache_dir=tmp_path) as v:
        task = next(
            t for t in template_tasks(examples, split_examples(examples), v) if t.role == "writer"
        )
        with Recording(vllm_server.config(sampling={"max_tokens": 24})) as teacher:
            teacher.replies = []
            record = trajectory(task, teacher, cascade_sample(task, teacher, v))
    # a trajectory resumed from an earlier run was not asked in this one: not counted
    resumed = record.model_copy(update={"task_id": "earlier", "verified": True})
    path = teacher.write_metrics([record, resumed], tmp_path / "home")
    whole = read_teacher_metrics(path)[-1]
    assert (whole.family, whole.attempted, whole.verified) == ("dafny", 1, int(record.verified))
    assert whole.parse_failures == sum("```" not in text for text in teacher.replies)
    assert len(teacher.replies) == 2  # writer and annotator
    assert whole.prompt_tokens == sum(u["prompt_tokens"] for u in teacher.usage) > 0
    assert whole.completion_tokens == sum(u["completion_tokens"] for u in teacher.usage) > 0
    assert math.isclose(whole.latency_ms_p50, round(record.latency_ms, 3))
