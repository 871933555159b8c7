"""Episodes for a whole partition: per-question dispatch, skip-on-rerun, incremental writes.

Template/procedural questions get one trace judged against the ground truth; `llm`
questions get a gold trace plus K consistency traces decided by triangulation. Each
question's episodes are appended to the lake as soon as they finish, so a crash loses at
most the episodes in flight, and a re-run skips every episode id already written (ids
are keyed by question, teacher and sampling config).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.loop import run_episode, run_trace, to_episode
from verilearn_assets.analysis.rollout.policy import Policy, ProgramPolicy, VllmPolicy
from verilearn_assets.analysis.rollout.prompts import FewShotPool, task_prompt
from verilearn_assets.analysis.rollout.triangulate import TraceOutcome, triangulate
from verilearn_assets.core import lake
from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.fit import FAILURE_CLASS
from verilearn_assets.core.llm.teacher_metrics import Attempt, TeacherMetrics
from verilearn_assets.core.records import TableRecord
from verilearn_assets.core.sandbox.pool import SandboxPool

log = logging.getLogger(__name__)

EPISODES_ASSET = "analysis/episodes"  # the asset key path, family first
# make_policy(reference_code, trace_index) -> a fresh policy for one trace
PolicyFactory = Callable[[str | None, int], Policy]


class TeacherUnavailableError(RuntimeError):
    """The configured teacher cannot run here (no server, no reference code)."""


def policy_factory(cfg: TeacherConfig, client: Any | None = None) -> PolicyFactory:
    """Policies for `cfg.teacher`; trace i of a triangulation samples with seed + i."""
    if cfg.teacher == "vllm" and client is None:
        raise TeacherUnavailableError(
            "teacher 'vllm' needs a vLLM server: set base_urls (or launch: true) in "
            "configs/vllm.yaml and start the server, or set teacher: program in "
            "configs/teacher.yaml to replay verified reference code instead"
        )

    def make(code: str | None, index: int) -> Policy:
        if cfg.teacher == "program":
            if code is None:
                raise TeacherUnavailableError(
                    "the program teacher replays reference code, and this task has none "
                    "(llm-source question proposals need teacher: vllm)"
                )
            return ProgramPolicy(code, max_cells=cfg.max_turns)
        return VllmPolicy(client, cfg.sampling, cfg.seed + index)

    return make


def planned_ids(
    question: QuestionRecord, cfg: TeacherConfig, teacher: str | None = None
) -> list[str]:
    """The episode ids a complete run writes for `question` under `cfg`."""
    teacher = teacher or cfg.teacher
    key = cfg.sampling_key(teacher)
    if question.source == "llm":
        return [Episode.make_id(question.id, teacher, key, "gold", 0)] + [
            Episode.make_id(question.id, teacher, key, "consistency", i)
            for i in range(1, cfg.n_traces)
        ]
    return [Episode.make_id(question.id, teacher, key, "single", 0)]


async def triangulated_episodes(
    question: QuestionRecord,
    table: TableRecord,
    make_policy: PolicyFactory,
    pool: SandboxPool,
    cfg: TeacherConfig,
    counts: BudgetCounts | None = None,
    examples: Sequence[QuestionRecord] = (),
) -> list[Episode]:
    """Gold + K consistency traces; triangulation sets `verified` and the failure class.

    Context-budget losses of every trace are added to `counts` when given; every trace
    is shown the same solved `examples` first.
    """
    policies = [make_policy(question.code, i) for i in range(cfg.n_traces)]
    prompt = task_prompt(question, cfg.prompts, examples)
    traces = await asyncio.gather(*(run_trace(prompt, table, p, pool, cfg) for p in policies))
    if counts is not None:
        for t in traces:
            counts.merge(t.budget)
    outcomes = [
        TraceOutcome(t.answer, None if t.answer else t.failure_without_answer()) for t in traces
    ]
    tri = triangulate(outcomes, question.answer_schema, cfg.required_votes)
    key = cfg.sampling_key(policies[0].name)
    episodes = []
    for i, (trace, policy) in enumerate(zip(traces, policies, strict=True)):
        role = "gold" if i == 0 else "consistency"
        ok = tri.in_winning_cluster(i)
        failure = None if ok else (tri.failure_class or "disagreement")
        if not ok and trace.end == FAILURE_CLASS:
            failure = FAILURE_CLASS  # this trace's own reason, whatever the others did
        episodes.append(
            to_episode(
                trace,
                question,
                teacher=policy.name,
                sampling_key=key,
                role=role,
                index=i,
                verified=ok,
                failure_class=failure,
            )
        )
    return episodes


async def question_episodes(
    question: QuestionRecord,
    table: TableRecord,
    make_policy: PolicyFactory,
    pool: SandboxPool,
    cfg: TeacherConfig,
    counts: BudgetCounts | None = None,
    examples: Sequence[QuestionRecord] = (),
) -> list[Episode]:
    if question.source == "llm":
        return await triangulated_episodes(
            question, table, make_policy, pool, cfg, counts, examples
        )
    policy = make_policy(question.code, 0)
    return [await run_episode(question, table, policy, pool, cfg, counts=counts, examples=examples)]


QUESTIONS_ASSET = "analysis/questions"


def load_few_shot_pool(cfg: TeacherConfig, root: Path | None = None) -> FewShotPool:
    """The solved questions `few_shot` draws from: the accepted questions of the
    `few_shot_sources` partitions of the train split (the only split the config allows)."""
    prompts = cfg.prompts
    questions = [
        q
        for source in prompts.few_shot_sources
        for q in lake.read_records(
            QUESTIONS_ASSET, QuestionRecord, root, source=source, split=prompts.few_shot_split
        )
        if isinstance(q, QuestionRecord)
    ]
    pool = FewShotPool(questions, prompts.few_shot_seed)
    if len(pool.questions) < prompts.few_shot:
        raise ValueError(
            f"teacher_prompts.yaml analysis.few_shot is {prompts.few_shot} but the train "
            f"split's {'/'.join(prompts.few_shot_sources)} questions hold only "
            f"{len(pool.questions)} accepted one(s): materialize analysis/questions for "
            "the train split first, or lower few_shot"
        )
    return pool


def episode_attempt(episode: Episode) -> Attempt:
    """An episode as one attempt of the teacher run's metrics."""
    return Attempt(
        source=episode.source,
        split=episode.split,
        verified=episode.verified,
        latency_ms=episode.duration_ms,
        parse_failures=sum(m.kind == "rejected_reply" for m in episode.messages),
        prompt_tokens=episode.prompt_tokens,
        completion_tokens=episode.completion_tokens,
    )


@dataclass
class PartitionRun:
    written: int = 0
    skipped_questions: int = 0
    verified: int = 0
    failures: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    budget: BudgetCounts = field(default_factory=BudgetCounts)  # context-budget losses
    metrics_path: Path | None = None  # this run's teacher_metrics.jsonl


def existing_episode_ids(source: str, split: str, root: Path | None = None) -> set[str]:
    frame = lake.read_partition(
        EPISODES_ASSET, root, schema=Episode.polars_schema(), source=source, split=split
    )
    return set(frame["id"].to_list()) if "id" in frame.columns else set()


async def run_partition(
    questions: Sequence[QuestionRecord],
    tables: Mapping[str, TableRecord],
    make_policy: PolicyFactory,
    pool: SandboxPool,
    cfg: TeacherConfig,
    *,
    source: str,
    split: str,
    root: Path | None = None,
    teacher: str | None = None,
    few_shot: FewShotPool | None = None,
) -> PartitionRun:
    """Run every question of one partition that is not already done; append as they end.

    A failing question (the sandbox or server erred) is recorded in `errors` and the run
    goes on; the caller decides whether any error fails the materialization. With
    `cfg.prompts.few_shot`, examples come from `few_shot` (default: the train split's
    questions in the lake). The run's metrics go to `<home>/runs/<id>/teacher_metrics.jsonl`.
    """
    if cfg.prompts.few_shot and few_shot is None:
        few_shot = load_few_shot_pool(cfg, root)
    done = existing_episode_ids(source, split, root)
    stats = PartitionRun()
    metrics = TeacherMetrics("analysis", teacher or cfg.teacher, cfg.model)
    todo = []
    for q in questions:
        if (q.source, q.split) != (source, split):
            raise ValueError(f"question {q.id} is {q.source}/{q.split}, not {source}/{split}")
        if q.table not in tables:
            raise ValueError(f"question {q.id}: table {q.table!r} is not in the tables asset")
        if set(planned_ids(q, cfg, teacher)) <= done:
            stats.skipped_questions += 1
        else:
            todo.append(q)
    gate = asyncio.Semaphore(cfg.concurrency)
    write_lock = asyncio.Lock()

    async def one(q: QuestionRecord) -> None:
        async with gate:
            try:
                shots = few_shot.examples(q, cfg.prompts.few_shot) if few_shot else []
                episodes = await question_episodes(
                    q, tables[q.table], make_policy, pool, cfg, stats.budget, shots
                )
            except Exception as exc:  # recorded with the question named; the caller decides
                log.error("question %s: episode run failed: %s", q.id, exc)
                stats.errors.append(f"question {q.id}: {type(exc).__name__}: {exc}")
                return
        async with write_lock:
            lake.append_part(
                EPISODES_ASSET, Episode.to_frame(episodes), root, source=source, split=split
            )
        stats.written += len(episodes)
        for e in episodes:
            metrics.add(episode_attempt(e))
            stats.verified += e.verified
            if e.failure_class:
                stats.failures[e.failure_class] += 1

    await asyncio.gather(*(one(q) for q in todo))
    stats.metrics_path = metrics.write((root or lake.lake_root()).parent)
    return stats


@dataclass
class Compacted:
    episodes: list[Episode]
    stale: int  # episodes dropped because their question left the partition


def compact_partition(
    source: str, split: str, root: Path | None = None, *, question_ids: set[str] | None = None
) -> Compacted:
    """Rewrite a partition's parts as one, keeping the last record of each id.

    With `question_ids`, episodes of questions no longer in the question partition (a config
    change re-drew its ids) are dropped: they can never be re-run or checked against an
    answer, and keeping them would fail `episodes_verified_match` for good.
    """
    records = lake.read_records(EPISODES_ASSET, Episode, root, source=source, split=split)
    unique = list({r.id: r for r in records}.values())
    kept = unique if question_ids is None else [r for r in unique if r.question_id in question_ids]
    stale = len(unique) - len(kept)
    if stale:
        log.warning(
            "%s/%s: dropping %d episode(s) of questions no longer in the partition",
            source,
            split,
            stale,
        )
    lake.write_records(EPISODES_ASSET, kept, Episode, root, source=source, split=split)
    return Compacted(kept, stale)
