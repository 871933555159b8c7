"""The cascade with a real served model (the tiny random-weight model on vLLM CPU): its
answers are noise, so the point is the wiring — prompts out, text back, verdict and
failure bucket recorded — not the verify rate."""

from __future__ import annotations

import pytest

from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.rollout.cascade import BUCKETS, cascade_sample, trajectory
from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


def test_cascade_with_a_served_model(vllm_server, verifier: DafnyVerifier) -> None:
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    task = next(t for t in template_tasks(ex, split_examples(ex), verifier) if t.role == "writer")
    with VllmTeacher(vllm_server.config(sampling={"max_tokens": 24})) as teacher:
        result = cascade_sample(task, teacher, verifier)
        assert len(teacher.usage) == 2  # one writer and one annotator request
        assert all(u["completion_tokens"] > 0 for u in teacher.usage)
    assert [s.stage for s in result.stages] == ["writer", "annotator", "verifier"]
    assert result.status in BUCKETS or result.status == "verified"
    assert result.stages[0].latency_ms > 0 and result.stages[1].latency_ms > 0
    record = trajectory(task, teacher, result)
    assert record.teacher == "vllm" and record.verified == (result.status == "verified")


def test_teacher_refuses_without_a_server() -> None:
    from verilearn_assets.core.llm.config import VllmConfig

    with pytest.raises(ValueError, match="no server configured"):
        VllmTeacher(VllmConfig(model="m"))


def test_llm_source_with_a_served_model(vllm_server, verifier: DafnyVerifier) -> None:
    from verilearn_assets.dafny.sources.llm import llm_tasks

    with VllmTeacher(vllm_server.config(sampling={"max_tokens": 24})) as model:
        tasks = llm_tasks(model.propose, 2, "test", verifier)
        assert len(model.usage) == 2
    # a random-weight model proves nothing: every proposal is kept, rejected, with a reason
    assert tasks and all(t.source == "llm" and t.rejection_reason for t in tasks)
