"""Rewards and the cascade on the real verifier; a scripted teacher stands in for what a
model says (the only double allowed)."""

from __future__ import annotations

import pytest

from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rewards import (
    PARSE_CREDIT,
    PARTIAL_CAP,
    partial_reward,
    score_candidate,
)
from verilearn_assets.dafny.rollout.cascade import ProgramTeacher, cascade_sample
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.results import VerifyResult
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

TWO = """method A(x: int) returns (y: int)
  ensures y == x + 1
{
  y := x + 1;
}

method B(x: int) returns (y: int)
  ensures y == x + 2
{
  y := x + 1;
}
"""


def test_verified_gets_one_and_a_cheat_gets_zero(verifier: DafnyVerifier) -> None:
    gold = TWO.replace(
        "ensures y == x + 2\n{\n  y := x + 1;", "ensures y == x + 2\n{\n  y := x + 2;"
    )
    ok = score_candidate(gold, gold, verifier)
    assert (ok.reward, ok.partial, ok.status) == (1.0, 1.0, "verified")
    for cheat in (
        gold.replace("  y := x + 2;", "  assume false;"),
        gold.replace("method B", "method {:verify false} B"),
        gold + "lemma {:axiom} Anything() ensures false\n",
        gold.replace("ensures y == x + 2", "ensures true"),
    ):
        s = score_candidate(gold, cheat, verifier)
        assert (s.reward, s.partial, s.status) == (0.0, 0.0, "cheat"), cheat
        assert s.result is None  # rejected before the verifier ran


def test_partial_credit_per_method_and_capped(verifier: DafnyVerifier) -> None:
    s = score_candidate(TWO, TWO, verifier)  # B fails, A verifies
    assert s.reward == 0.0 and s.status == "verification_error"
    assert s.partial == pytest.approx(PARSE_CREDIT + 0.4 * 0.5)
    broken = score_candidate(TWO, TWO.replace("y := x + 1;", "y := x +;", 1), verifier)
    assert (broken.status, broken.partial) == ("parse_error", 0.0)
    # a timeout earns nothing (a hard assert that makes z3 give up farmed the cap before)
    assert partial_reward(TWO, VerifyResult(status="timeout")) == 0.0 < PARTIAL_CAP


class Scripted:
    """What a model says, scripted: fixed writer and annotator answers."""

    name = "scripted"

    def __init__(self, body: str | None, annotated: str) -> None:
        self.body, self.annotated = body, annotated

    def write(self, task: DafnyTask) -> str:
        return "Here is the body:\n" + prompts.fenced(self.body or task.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        return prompts.fenced(self.annotated)


@pytest.fixture(scope="module")
def writer_task(verifier: DafnyVerifier) -> DafnyTask:
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    tasks = template_tasks(ex, split_examples(ex), verifier)
    return next(t for t in tasks if t.role == "writer")


def test_cascade_program_teacher_verifies(writer_task: DafnyTask, verifier) -> None:
    result = cascade_sample(writer_task, ProgramTeacher(), verifier)
    assert result.status == "verified" and result.reward == 1.0
    assert [s.stage for s in result.stages] == ["writer", "annotator", "verifier"]
    assert all(s.latency_ms >= 0 for s in result.stages) and result.failure_bucket is None


@pytest.mark.parametrize(
    ("annotated_from_gold", "bucket"),
    [
        (lambda g: g.replace("invariant p == a * i", "invariant p == a * i + 1"), "semantic"),
        (lambda g: g.replace("invariant p == a * i", "invariant p == a ** i"), "syntax"),
        (lambda g: g.replace("p := p + a;", "p := p + ;"), "code_changed"),
        (lambda g: g.replace("p := p + a;", "p := p + a;\n    assume p == a * i;"), "cheat"),
    ],
)
def test_cascade_failure_buckets(writer_task, verifier, annotated_from_gold, bucket) -> None:
    teacher = Scripted(None, annotated_from_gold(writer_task.annotated_body))
    result = cascade_sample(writer_task, teacher, verifier)
    assert result.failure_bucket == bucket, result.status
    assert result.reward < 1.0
    if bucket == "semantic":  # the writer's body resolved: the writer keeps some credit
        assert 0.0 < result.reward < PARSE_CREDIT + 0.4
