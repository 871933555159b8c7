"""Building one `source × split` partition of tasks and trajectories (pure; the assets
call this). The corpus is loaded and split the same way for every partition, so a
program's split never depends on which partition is built first."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from verilearn_assets.core import lake
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.records import SPLITS
from verilearn_assets.dafny.config import DafnyConfig
from verilearn_assets.dafny.corpus.catalog import Corpus, CorpusSet, catalog_corpora, load_corpora
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.prompts import few_shot_pairs, load_prompt_config
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.rollout.cascade import (
    ProgramTeacher,
    Teacher,
    cascade_sample,
    trajectory,
)
from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher
from verilearn_assets.dafny.sources.llm import Propose, llm_tasks
from verilearn_assets.dafny.sources.template import procedural_tasks, template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


class SourceUnavailableError(RuntimeError):
    """The `llm` source without a model server."""


def load_corpus(config: DafnyConfig, home: Path | None = None) -> CorpusSet:
    """The configured corpora (catalog `programs:` entries, or `corpus.path` alone),
    duplicates dropped across them, cut to `corpus.limit` examples."""
    if config.corpus.path:
        corpora = [Corpus(name="", root=Path(config.corpus.path), origin="path")]
    else:
        corpora = catalog_corpora(config.corpus.corpora, home=home)
    loaded = load_corpora(corpora)
    loaded.limit(config.corpus.limit)
    return loaded


def build_tasks(
    source: str,
    split: str,
    config: DafnyConfig,
    verifier: DafnyVerifier,
    propose: Propose | None = None,
    home: Path | None = None,
) -> tuple[list[DafnyTask], CorpusSet]:
    """Tasks of one partition; `propose` (a model) is needed by the `llm` source only."""
    report = load_corpus(config, home)
    splits = split_examples(
        report.examples, config.corpus.seed, min_eval_tasks=config.corpus.min_eval_tasks
    )
    mine = [e for e in report.examples if splits[e.id] == split]
    if source == "template":
        return template_tasks(mine, splits, verifier), report
    if source == "procedural":
        return procedural_tasks(mine, splits, verifier, config.sources.mutants_per_example), report
    if source == "llm":
        if propose is None:
            raise SourceUnavailableError(
                "the dafny llm source needs a vLLM server: set base_urls (or launch: true) "
                "in configs/vllm.yaml"
            )
        train = [e for e in report.examples if splits[e.id] == "train"]
        shots = [e.gold_program for e in train[: config.sources.llm_shots]]
        # each split asks its own seeds: the same prompts in every split would propose the
        # same programs, which the gate's one-split rule then has to turn away
        seed = config.corpus.seed + SPLITS.index(split) * config.sources.llm_proposals
        tasks = llm_tasks(propose, config.sources.llm_proposals, split, verifier, shots, seed)
        return tasks, report
    raise ValueError(f"unknown dafny source {source!r}")


def teacher_for(
    name: str,
    vllm_config: VllmConfig | None = None,
    train_tasks: Sequence[DafnyTask] = (),
) -> Teacher:
    """`program` (replays gold) or `vllm` (the served model of configs/vllm.yaml, prompted
    per configs/dafny_prompts.yaml with few-shot pairs from `train_tasks`)."""
    if name == "program":
        return ProgramTeacher()
    if name == "vllm":
        if vllm_config is None or not vllm_config.has_server:
            raise ValueError(
                "configs/dafny.yaml: teacher 'vllm' needs a server (configs/vllm.yaml base_urls)"
            )
        cfg = load_prompt_config()
        shots = {
            role: few_shot_pairs(
                [t for t in train_tasks if t.role == role], role, cfg.few_shot, cfg.few_shot_seed
            )
            for role in ("writer", "annotator")
        }
        return VllmTeacher(vllm_config, cfg, shots)
    raise ValueError(f"configs/dafny.yaml: unknown teacher {name!r} (program or vllm)")


def build_trajectories(
    tasks: Sequence[DafnyTask], teacher: Teacher, verifier: DafnyVerifier
) -> list[DafnyTrajectory]:
    out = []
    for task in tasks:
        if task.status == "accepted":
            out.append(trajectory(task, teacher, cascade_sample(task, teacher, verifier)))
    return out


def run_partition(
    tasks: Sequence[DafnyTask],
    teacher: Teacher,
    verifier: DafnyVerifier,
    home: Path,
    source: str,
    split: str,
    chunk: int = 8,
) -> tuple[list[DafnyTrajectory], int]:
    """Trajectories of a partition, written incrementally and resumable.

    Trajectories already in the partition (same task, same teacher) are kept; the rest are
    run `chunk` tasks at a time, each chunk appended as one part, so a crash loses at most
    one chunk and the next run resumes. The partition is then compacted to one part holding
    exactly the current accepted tasks' trajectories (stale ones dropped). Returns the
    records and how many were resumed.
    """
    root = lake.lake_root(home)
    wanted = {
        DafnyTrajectory.make_id(t.id, teacher.name): t for t in tasks if t.status == "accepted"
    }
    existing = lake.read_records(
        FAMILY.rollout_lake, DafnyTrajectory, root, source=source, split=split
    )
    done = {r.id: r for r in existing if r.id in wanted and isinstance(r, DafnyTrajectory)}
    todo = [t for tid, t in wanted.items() if tid not in done]
    for start in range(0, len(todo), chunk):
        part = build_trajectories(todo[start : start + chunk], teacher, verifier)
        lake.append_part(
            FAMILY.rollout_lake, DafnyTrajectory.to_frame(part), root, source=source, split=split
        )
        done.update({r.id: r for r in part})
    records = [done[tid] for tid in wanted]
    lake.write_records(
        FAMILY.rollout_lake, records, DafnyTrajectory, root, source=source, split=split
    )
    return records, len(wanted) - len(todo)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1])


def trajectory_summary(trajs: Sequence[DafnyTrajectory]) -> dict[str, object]:
    lat = [t.latency_ms for t in trajs]
    return {
        "trajectories": len(trajs),
        "verified": sum(t.verified for t in trajs),
        "verify_rate": round(sum(t.verified for t in trajs) / len(trajs), 4) if trajs else 0.0,
        "failure_buckets": dict(Counter(t.failure_bucket for t in trajs if t.failure_bucket)),
        "latency_p50_ms": round(percentile(lat, 50), 2),
        "latency_p95_ms": round(percentile(lat, 95), 2),
    }
