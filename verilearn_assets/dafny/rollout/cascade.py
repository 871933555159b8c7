"""`cascade_sample`: writer → annotator → verifier on one task, with latency per stage.

Teachers say what the model would say: `ProgramTeacher` replays the gold body and gold
annotations (the embedded default: the graph runs without a model); tests script other
answers through the same `Teacher` protocol. Annotator tasks skip the writer stage.
Failure buckets: `syntax` (parse/resolution, or an answer that is no `{ … }` block),
`timeout`, `semantic` (a verification error or a crash), `cheat` (an anti-cheat rule
fired on the writer's body or the annotation), `code_changed` (the annotator did not keep
the body it was given: a writer body the annotator had to replace is a failed cascade,
never a verified writer trajectory), `context_overflow` (a model stage's prompt did not
fit the window even compressed: that stage failed, nothing was verified).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextOverflow
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory, StageRecord
from verilearn_assets.dafny.rewards import cascade_reward
from verilearn_assets.dafny.verify.anticheat import screen
from verilearn_assets.dafny.verify.scoring import CODE_CHANGED, NO_BODY, refused, score_annotation
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

BUCKETS = {
    "parse_error": "syntax",
    "resolution_error": "syntax",
    "timeout": "timeout",
    "verification_error": "semantic",
    "crash": "semantic",
    "cheat": "cheat",
    NO_BODY: "syntax",
    CODE_CHANGED: "code_changed",
}


class Teacher(Protocol):
    name: str

    def write(self, task: DafnyTask) -> str: ...

    def annotate(self, task: DafnyTask, body: str) -> str: ...


class ProgramTeacher:
    """Replays the verified reference: the writer's gold body, the gold annotations."""

    name = "program"

    def write(self, task: DafnyTask) -> str:
        return prompts.fenced(task.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        return prompts.fenced(task.annotated_body)


@dataclass
class CascadeResult:
    stages: list[StageRecord] = field(default_factory=list)
    writer_output: str | None = None
    annotator_output: str = ""
    final_program: str = ""
    status: str = ""
    failure_bucket: str | None = None
    reward: float = 0.0
    partial_reward: float = 0.0
    cheats: list[str] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    verifier_ms: float = 0.0
    cached: bool = False

    @property
    def latency_ms(self) -> float:
        return round(sum(s.latency_ms for s in self.stages), 2)


def _timed(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return out, round((time.perf_counter() - started) * 1000, 2)


def _overflowed(out: CascadeResult, stage: str, given: str, exc: ContextOverflow) -> CascadeResult:
    """The model stage whose prompt cannot fit the window: failed with class
    `context_overflow` and its reason; the cascade ends there (the partition goes on)."""
    reason = str(exc) if str(exc).startswith(FAILURE_CLASS) else f"{FAILURE_CLASS}: {exc}"
    out.stages.append(
        StageRecord(
            stage=stage,
            input=given,
            output=reason,
            status=FAILURE_CLASS,
            failure_bucket=FAILURE_CLASS,
        )
    )
    out.status = out.failure_bucket = FAILURE_CLASS
    return out


def cascade_sample(task: DafnyTask, teacher: Teacher, verifier: DafnyVerifier) -> CascadeResult:
    out = CascadeResult()
    body = task.body
    if task.role == "writer":
        try:
            said, ms = _timed(teacher.write, task)
        except ContextOverflow as exc:
            return _overflowed(out, "writer", task.spec, exc)
        body = prompts.answer(said)
        out.writer_output = body
        out.stages.append(StageRecord(stage="writer", input=task.spec, output=body, latency_ms=ms))
    try:
        said, ms = _timed(teacher.annotate, task, body)
    except ContextOverflow as exc:
        return _overflowed(out, "annotator", body, exc)
    annotated = prompts.answer(said)
    out.annotator_output = annotated
    out.stages.append(StageRecord(stage="annotator", input=body, output=annotated, latency_ms=ms))
    program = task.assemble(annotated)
    out.final_program = program
    # the writer's body screened (a refused body fails the cascade whatever the annotator
    # said), then the annotation: screened, `code_changed` unless it keeps `body`, verified
    writer_cheats = screen(body, "writer") if task.role == "writer" else []
    if writer_cheats:
        scored, ms = _timed(refused, writer_cheats)
    else:
        scored, ms = _timed(score_annotation, task, body, annotated, verifier)
    out.status = scored.status
    out.failure_bucket = None if scored.status == "verified" else BUCKETS[scored.status]
    out.reward = cascade_reward(scored) if task.role == "writer" else scored.reward
    out.partial_reward = scored.partial
    out.cheats = [c.cheat for c in scored.cheats]
    if scored.result is not None:
        out.errors = [e.model_dump() for e in scored.result.errors]
        out.verifier_ms = scored.result.duration_ms
        out.cached = scored.result.cached
    out.stages.append(
        StageRecord(
            stage="verifier",
            input=program,
            output=(
                scored.result.output
                if scored.result
                else "; ".join(f"{c.cheat}: {c.detail}" for c in scored.cheats) or scored.status
            ),
            status=scored.status,
            failure_bucket=out.failure_bucket,
            latency_ms=ms,
        )
    )
    return out


def trajectory(task: DafnyTask, teacher: Teacher, result: CascadeResult) -> DafnyTrajectory:
    stage_ms = {s.stage: s.latency_ms for s in result.stages}
    return DafnyTrajectory(
        id=DafnyTrajectory.make_id(task.id, teacher.name),
        source=task.source,
        split=task.split,
        verified=result.status == "verified",
        task_id=task.id,
        role=task.role,
        teacher=teacher.name,
        status=result.status,
        failure_bucket=result.failure_bucket,
        cheats=result.cheats,
        errors=result.errors,
        stages=[s.model_dump() for s in result.stages],
        writer_output=result.writer_output,
        annotator_output=result.annotator_output,
        final_program=result.final_program,
        reward=result.reward,
        partial_reward=result.partial_reward,
        latency_ms=result.latency_ms,
        writer_ms=stage_ms.get("writer", 0.0),
        annotator_ms=stage_ms.get("annotator", 0.0),
        verify_stage_ms=stage_ms.get("verifier", 0.0),
        verifier_ms=result.verifier_ms,
        cached=result.cached,
        constructs=task.constructs,
        name=task.name,
        mutation=task.mutation,
        prefix=task.prefix,
        suffix=task.suffix,
        spec=task.spec,
        body=task.body,
    )
