"""Dagster wiring for the Dafny family: `dafny/tasks` and `dafny/trajectories`, per
source × split. Thin: the builders are in `sources/build.py` and `rollout/build.py`.
(No `from __future__ import annotations`: Dagster inspects the annotations.)"""

from collections import Counter

from dagster import (
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.core import lake
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.llm.budget_records import BudgetCounts, write_counts
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.dafny.config import load_dafny_config
from verilearn_assets.dafny.corpus.coverage import LAKE as COVERAGE_LAKE
from verilearn_assets.dafny.corpus.coverage import (
    DafnyCoverageRow,
    coverage_rows,
    reference_verdicts,
)
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.prompts import load_prompt_config
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.resources import DafnyVerifierResource
from verilearn_assets.dafny.rollout.build import run_partition, trajectory_summary
from verilearn_assets.dafny.rollout.teachers import teacher_for
from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher
from verilearn_assets.dafny.sources.build import SourceUnavailableError, build_tasks


@asset(
    name="tasks",
    key_prefix=[FAMILY.name],
    partitions_def=SOURCE_SPLIT,
    op_tags=op_tags_for(["sandbox"]),  # jailed Dafny: a Celery worker with the sandbox
    group_name="dafny",
    description="Dafny writer and annotator tasks for one source × split: template "
    "(pairings from the corpus) and procedural (mutant repairs with their verdicts). Every "
    "gold program is verified by Dafny; rejected tasks are kept with their reason. llm: "
    "programs proposed by the vLLM-served model, kept only when Dafny proves them and no "
    "anti-cheat construct appears (needs configs/vllm.yaml). The corpora (catalog `programs:` "
    "entries) are counted per corpus in dafny/coverage: files, loaded, rewritten, skipped "
    "per reason, reference programs verified.",
)
def tasks(
    context: AssetExecutionContext,
    home: HomeResource,
    dafny: DafnyVerifierResource,
    vllm: VllmResource,
) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    config = load_dafny_config()
    model = None
    if source == "llm" and vllm.configured:
        model = VllmTeacher(vllm.served_config(), load_prompt_config(), seed=config.corpus.seed)
    try:
        with dafny.verifier(home.dir()) as verifier:
            records, report = build_tasks(
                source, split, config, verifier, model.propose if model else None, home.dir()
            )
            verdicts = reference_verdicts(report, verifier)
            versions = verifier.versions
    except SourceUnavailableError as exc:
        raise Failure(description=str(exc)) from exc
    finally:
        if model is not None:
            model.close()
    path = lake.write_records(
        FAMILY.task_lake, records, DafnyTask, home.lake_root(), source=source, split=split
    )
    coverage = coverage_rows(report, verdicts, source, split)  # type: ignore[arg-type]
    lake.write_records(
        COVERAGE_LAKE, coverage, DafnyCoverageRow, home.lake_root(), source=source, split=split
    )
    budget = model.budget_counts if model is not None else BudgetCounts()
    write_counts(budget, FAMILY.name, "tasks", home.lake_root(), source, split)
    accepted = [r for r in records if r.status == "accepted"]
    return MaterializeResult(
        metadata={
            **budget.metadata(),
            "tasks": len(records),
            "accepted": len(accepted),
            "rejected": len(records) - len(accepted),
            "by_role": MetadataValue.json(dict(Counter(r.role for r in accepted))),
            "input_status": MetadataValue.json(dict(Counter(r.input_status for r in records))),
            "rejection_reasons": MetadataValue.json(
                dict(Counter(r.rejection_reason for r in records if r.rejection_reason))
            ),
            "corpus": MetadataValue.json(report.summary()),
            "reference_verified": sum(v == "verified" for v in verdicts.values()),
            "reference_programs": len(verdicts),
            "verifier": MetadataValue.json(versions),
            "path": str(path),
        }
    )


@asset(
    name="trajectories",
    key_prefix=[FAMILY.name],
    partitions_def=SOURCE_SPLIT,
    op_tags=op_tags_for(["sandbox"]),  # jailed Dafny: a Celery worker with the sandbox
    group_name="dafny",
    deps=[tasks],
    description="writer → annotator → verifier cascades on the accepted tasks of the same "
    "partition, with the program teacher (replays gold bodies and annotations) or a vLLM-"
    "served model (teacher: vllm in configs/dafny.yaml); rewards, "
    "failure buckets and per-stage latency recorded.",
)
def trajectories(
    context: AssetExecutionContext,
    home: HomeResource,
    dafny: DafnyVerifierResource,
    vllm: VllmResource,
) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    config = load_dafny_config()
    task_records = [
        t for t in FAMILY.read_tasks(home.dir(), source, split) if isinstance(t, DafnyTask)
    ]
    try:
        if config.teacher == "vllm":
            train = [
                t
                for t in FAMILY.read_tasks(home.dir(), "template", "train")
                if isinstance(t, DafnyTask)
            ]
            teacher = teacher_for("vllm", vllm.served_config(), train)
        else:
            teacher = teacher_for(config.teacher)
    except ValueError as exc:
        raise Failure(description=str(exc)) from exc
    try:
        with dafny.verifier(home.dir()) as verifier:
            records, resumed = run_partition(
                task_records, teacher, verifier, home.dir(), source, split
            )
    finally:
        if isinstance(teacher, VllmTeacher):
            teacher.close()
    if isinstance(teacher, VllmTeacher):  # the run's teacher_metrics.jsonl (issue 28)
        teacher.write_metrics(records, home.dir())
    path = lake.partition_dir(FAMILY.rollout_lake, home.lake_root(), source=source, split=split)
    summary = trajectory_summary(records)
    budget = teacher.budget_counts if isinstance(teacher, VllmTeacher) else BudgetCounts()
    write_counts(budget, FAMILY.name, "trajectories", home.lake_root(), source, split)
    return MaterializeResult(
        metadata={
            **budget.metadata(),
            **{k: v for k, v in summary.items() if not isinstance(v, dict)},
            "failure_buckets": MetadataValue.json(summary["failure_buckets"]),
            "teacher": teacher.name,
            "resumed": resumed,
            "path": str(path),
        }
    )


DAFNY_ASSETS = [tasks, trajectories]
