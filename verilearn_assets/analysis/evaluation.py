"""The analysis family's evaluation hook (`Family.evaluation`): the model under test runs the
student loop (pure of Dagster).

The model under test (served by the training side, `training/eval/evaluator.py`) runs the
same `vllm` teacher loop the episodes come from, in the same sandbox, judged by the same
strict answer comparison, and is shown the solved examples the teacher's episodes show.
One `ModelEvalRecord` per question; the training side writes them to the lake.

pass@k: with `job.n_best` > 1 every question is answered n times (the first at the
evaluation's sampling: the verdict the record keeps; the others at the n-best temperature,
seeds `seed + k`); the record's `extra` keeps the counts (`core.evaluation.n_best_counts`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilearn_assets.analysis.grpo import question_shots
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.config import (
    SamplingConfig,
    TeacherConfig,
    load_teacher_config,
)
from verilearn_assets.analysis.rollout.loop import run_episode
from verilearn_assets.analysis.rollout.policy import VllmPolicy
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.core.evaluation import EvalJob, EvalSampling, Progress, n_best_counts
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.llm.client import VllmClient
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.records import SPLITS
from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool

log = logging.getLogger(__name__)

QUESTIONS_ASSET = "analysis/questions"


# --- which questions ------------------------------------------------------------------------
def template_family(q: QuestionRecord) -> str:
    """Same rule as stg_questions.sql: template, else sorted operator families, else '(none)'."""
    if q.template:
        return q.template
    if q.op_families:
        return "+".join(sorted(q.op_families))
    return "(none)"


def split_questions(
    home: Path,
    split: str,
    *,
    question_ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[QuestionRecord]:
    """The split's accepted questions (every source), optionally the named ones, sorted by id."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    root = lake.lake_root(home)
    found: list[QuestionRecord] = []
    for source in ("template", "procedural", "llm"):
        recs = lake.read_records(QUESTIONS_ASSET, QuestionRecord, root, source=source, split=split)
        found.extend(r for r in recs if r.status == "accepted")  # type: ignore[attr-defined]
    questions = sorted({q.id: q for q in found}.values(), key=lambda q: q.id)
    if question_ids is not None:
        wanted = list(dict.fromkeys(question_ids))
        by_id = {q.id: q for q in questions}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise ValueError(
                f"question id(s) {missing} are not accepted questions of split {split!r} "
                f"under {root / QUESTIONS_ASSET}"
            )
        questions = [by_id[i] for i in wanted]
    if not questions:
        raise ValueError(
            f"split {split!r} has no accepted questions under {root / QUESTIONS_ASSET} "
            "(materialize analysis/questions first, e.g. `verilearn demo`)"
        )
    return questions[:limit] if limit is not None else questions


# --- how the student is sampled -------------------------------------------------------------
def student_config(settings: EvalSampling, teacher: TeacherConfig, model: str) -> TeacherConfig:
    """The teacher loop's config with the student's sampling: the same prompts and bounds the
    training episodes saw (`max_turns` is in the system prompt), greedy by default."""
    return teacher.model_copy(
        update={
            "teacher": "vllm",
            "model": model,
            "max_turns": settings.max_turns or teacher.max_turns,
            "seed": settings.seed,
            "concurrency": settings.concurrency,
            "sampling": SamplingConfig(
                temperature=settings.temperature, top_p=1.0, max_tokens=settings.max_tokens
            ),
        }
    )


def sampled_config(
    cfg: TeacherConfig, settings: EvalSampling, k: int, temperature: float
) -> TeacherConfig:
    """The k-th n-best sample's loop config: `temperature`, seed `seed + k` (as the
    single-turn evaluation's sampled completions), the same prompts and bounds."""
    sampling = cfg.sampling.model_copy(update={"temperature": temperature})
    return cfg.model_copy(update={"seed": settings.seed + k, "sampling": sampling})


# --- records --------------------------------------------------------------------------------
def to_record(
    episode: Any, question: QuestionRecord, job: EvalJob, sampling_key: str
) -> ModelEvalRecord:
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(job.model, question.id, question.family),
        model=job.model,
        model_path=job.model_path,
        run_id=job.run_id,
        family=question.family,
        role="default",
        question_id=question.id,
        source=question.source,
        split=question.split,
        dataset=question.dataset,
        template=question.template,
        template_family=template_family(question),
        difficulty=question.difficulty,
        passed=bool(episode.verified),
        failure_class=episode.failure_class,
        format_errors=sum(m.kind == "rejected_reply" for m in episode.messages),
        n_turns=episode.n_turns,
        prompt_tokens=episode.prompt_tokens,
        completion_tokens=episode.completion_tokens,
        latency_ms=round(float(episode.duration_ms), 3),
        answer=episode.answer,
        sampling_key=sampling_key,
    )


async def run_questions(
    questions: Sequence[QuestionRecord],
    tables: dict[str, Any],
    vllm_cfg: VllmConfig,
    cfg: TeacherConfig,
    sandbox: SandboxConfig,
    job: EvalJob,
    progress: Progress | None = None,
    shots: Callable[[QuestionRecord], Sequence[QuestionRecord]] | None = None,
) -> tuple[list[ModelEvalRecord], list[str]]:
    """Every question through the student loop, shown the solved examples `shots(q)` the
    teacher's episodes show (`analysis.grpo.question_shots`; default none); a question
    whose run raised is an error (named), never a silent pass or fail."""
    records: list[ModelEvalRecord] = []
    errors: list[str] = []
    gate = asyncio.Semaphore(cfg.concurrency)
    key = cfg.sampling_key("vllm")
    done = 0
    async with VllmClient(vllm_cfg) as client, SandboxPool(sandbox) as pool:
        policy = VllmPolicy(client, cfg.sampling, cfg.seed)

        async def one(q: QuestionRecord) -> None:
            nonlocal done
            async with gate:
                try:
                    examples = shots(q) if shots is not None else ()
                    episode = await run_episode(
                        q, tables[q.table], policy, pool, cfg, examples=examples
                    )
                    records.append(to_record(episode, q, job, key))
                except Exception as exc:  # named and counted; the caller decides
                    log.error("question %s: evaluation failed: %s", q.id, exc)
                    errors.append(f"question {q.id}: {type(exc).__name__}: {exc}")
            done += 1
            if progress is not None:
                progress(done, len(questions))

        await asyncio.gather(*(one(q) for q in questions))
    return sorted(records, key=lambda r: r.question_id), errors


# --- the hook -------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudentLoopEvaluation:
    """The split's questions read and checked, ready to run the served student on."""

    job: EvalJob
    questions: list[QuestionRecord]
    tables: dict[str, Any]
    cfg: TeacherConfig
    sandbox: SandboxConfig
    shots: Callable[[QuestionRecord], Sequence[QuestionRecord]]

    def run(self, client: VllmConfig) -> list[ModelEvalRecord]:
        """n passes over the questions (k = 0: the verdict at the evaluation's sampling;
        then the samples); raises when any question could not be run."""
        job = self.job
        runs: list[list[ModelEvalRecord]] = []
        for k in range(job.n_best):
            cfg_k = (
                self.cfg
                if k == 0
                else sampled_config(self.cfg, job.sampling, k, job.n_best_temperature)
            )
            got, errors = asyncio.run(
                run_questions(
                    self.questions,
                    self.tables,
                    client,
                    cfg_k,
                    self.sandbox,
                    job,
                    job.progress if k == 0 else None,
                    self.shots,
                )
            )
            if errors:
                raise RuntimeError(
                    f"evaluation of {job.model} on {job.split} (sample {k}): {len(errors)} "
                    f"question(s) could not be run: {errors[:3]}"
                )
            runs.append(got)
        return n_best_counts(runs, job.n_best, job.n_best_temperature)


def evaluate_student(job: EvalJob) -> StudentLoopEvaluation:
    """`Family.evaluation` of analysis: the split's accepted questions (or `job.task_ids`)
    with their tables, the student's loop config and few-shot examples, checked before
    anything is served. `job.options` may carry `teacher` (a `TeacherConfig`, default
    configs/teacher.yaml) and `sandbox` (a `SandboxConfig`, default configs/sandbox.yaml)."""
    if job.role != "default":
        raise ValueError(f"family analysis has one role, 'default' (got {job.role!r})")
    unknown = sorted(set(job.options) - {"teacher", "sandbox"})
    if unknown:
        raise ValueError(f"analysis evaluation: unknown option(s) {unknown} (teacher, sandbox)")
    home = Path(job.home)
    questions = split_questions(home, job.split, question_ids=job.task_ids, limit=job.limit)
    tables = {t.id: t for t in load_table_records(home, job.split)}
    missing = sorted({q.table for q in questions} - set(tables))
    if missing:
        raise ValueError(
            f"split {job.split!r}: question table(s) {missing} are not in the tables asset "
            f"under {lake.lake_root(home) / 'tables'}"
        )
    teacher = job.options.get("teacher") or load_teacher_config()
    cfg = student_config(job.sampling, teacher, job.model)
    shots = question_shots(home, cfg)  # the SFT rows' examples (teacher_prompts few_shot)
    sandbox = job.options.get("sandbox") or load_sandbox_config()
    return StudentLoopEvaluation(job, questions, tables, cfg, sandbox, shots)
