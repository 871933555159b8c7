"""Dagster wiring for the analysis family: `questions` and `episodes`, per source × split.

Each asset resolves its partition, starts a sandbox pool (and a vLLM client for the `llm`
source or the `vllm` teacher), calls the pure builders, and writes exactly its own lake
partition. (No `from __future__ import annotations`: Dagster inspects the annotations.)
"""

import asyncio
import contextlib
from collections import Counter
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from resources.container_pool import ContainerPoolResource
from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.config import load_teacher_config
from verilearn_assets.analysis.rollout.runner import (
    TeacherUnavailableError,
    compact_partition,
    policy_factory,
    run_partition,
)
from verilearn_assets.analysis.sources.build import (
    PartitionQuestions,
    build_generated,
    markdown_counts,
    readability_markdown,
    summarize,
)
from verilearn_assets.analysis.sources.generation_stats import LAKE as GENERATION_STATS
from verilearn_assets.analysis.sources.generation_stats import (
    SearchRejectionRecord,
    search_rejection_records,
)
from verilearn_assets.analysis.sources.llm import propose_questions
from verilearn_assets.core import lake
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.tables import catalog_table_records, load_table_records
from verilearn_assets.core.llm.budget_records import BudgetCounts, write_counts
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.ingest.assets import tables

BUDGET_KEY = "_context_budget"  # carries the counts from `_llm_questions` to the writer


def write_budget(counts: BudgetCounts, asset: str, root, source: str, split: str) -> None:
    """This run's context-budget losses for one partition, read by `mart_context_budget`."""
    write_counts(counts, FAMILY.name, asset, root, source, split)


LLM_HOWTO = (
    "the llm source needs a vLLM server: set `base_urls` (or `launch: true` with a "
    "local model path) in configs/vllm.yaml"
)


@contextlib.asynccontextmanager
async def _llm_client(vllm: VllmResource, needed: bool):
    """A started client when `needed`, else None; fails fast when none is configured."""
    if not needed:
        yield None
        return
    if not vllm.configured:
        raise Failure(description=f"no vLLM server configured: {LLM_HOWTO}")
    cfg = vllm.vllm_config
    client = vllm.client()
    try:
        await client.start()
    except Exception as exc:
        await client.close()
        raise Failure(
            description=f"vLLM server(s) {cfg.base_urls} not healthy: {exc}. {LLM_HOWTO}"
        ) from exc
    try:
        yield client
    finally:
        await client.close()


async def _llm_questions(
    tables_,
    pool,
    client,
    teacher_cfg,
) -> tuple[PartitionQuestions, dict[str, Any]]:
    """Proposals per table (verified ones accepted, failed ones rejected with their
    failure class), plus the llm-only metadata: malformed proposals, which never become
    records, and what the model cost. `candidates` counts the triangulated proposals.
    """
    cfg = teacher_cfg.model_copy(update={"teacher": "vllm"})
    make_policy = policy_factory(cfg, client)
    out = PartitionQuestions()
    malformed: Counter[str] = Counter()
    rejected = 0
    budget = BudgetCounts()
    for table in tables_:
        proposals = await propose_questions(table, make_policy, pool, cfg)
        budget.merge(proposals.budget)
        out.candidates += len(proposals.outcomes)
        out.records.extend(proposals.records)
        failures = proposals.rejected_records(table)
        out.records.extend(failures)
        rejected += len(failures)
        malformed.update(m.reason.split(":", 1)[0] for m in proposals.malformed)
    usage = client.stats()
    return out, {
        "proposals_malformed": sum(malformed.values()),
        # per failure class: `rejection_reasons`, from the rejected records
        "proposals_failed": rejected,
        "malformed_reasons": MetadataValue.md(markdown_counts(dict(malformed), "reason")),
        "llm_model": client.cfg.model,
        "llm_requests": usage["requests"],
        "llm_failed_requests": usage["failed_requests"],
        "llm_retries": usage["retries"],
        "llm_prompt_tokens": usage["prompt_tokens"],
        "llm_completion_tokens": usage["completion_tokens"],
        **budget.metadata(),
        BUDGET_KEY: budget,
    }


@asset(
    key_prefix=[FAMILY.name],
    op_tags=op_tags_for(["sandbox"]),  # a Celery worker with the sandbox runs it
    partitions_def=SOURCE_SPLIT,
    # every dataset partition of `tables` feeds every questions partition (the split of a
    # dataset is decided by the catalog, not by the partition key)
    deps=[AssetDep(tables, partition_mapping=AllPartitionMapping())],
    group_name="analysis",
    description="Questions with proven answers for one source × split: generated "
    "(template/procedural) or proposed by a model (llm), then verified by clean "
    "re-execution in the sandbox. Rejected candidates are kept with their reason.",
)
def questions(
    context: AssetExecutionContext,
    container_pool: ContainerPoolResource,
    vllm: VllmResource,
    home: HomeResource,
) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    split_tables, left_out = catalog_table_records(load_datasets_config(), home.dir(), split)
    if left_out:
        context.log.warning(
            f"{source}/{split}: tables of datasets not enabled in datasets.yaml are not "
            f"generated from: {', '.join(f'{d} ({n} tables)' for d, n in left_out.items())}"
        )
    qcfg = load_questions_config()
    llm_metadata: dict[str, Any] = {}

    async def run() -> PartitionQuestions:
        async with container_pool.get_pool() as pool:
            context.log.info(f"sandbox backend: {pool.backend}")
            if source == "llm":
                async with _llm_client(vllm, True) as client:
                    built, extra = await _llm_questions(
                        split_tables, pool, client, load_teacher_config()
                    )
                llm_metadata.update(extra)
                context.log.info(
                    f"llm/{split}: {built.candidates} proposals triangulated, "
                    f"{extra['proposals_malformed']} malformed; {extra['llm_requests']} "
                    f"model requests, {extra['llm_completion_tokens']} completion tokens"
                )
                return built
            return await build_generated(split_tables, source, split, qcfg, pool)

    built = asyncio.run(run())
    if BUDGET_KEY in llm_metadata:
        write_budget(llm_metadata.pop(BUDGET_KEY), "questions", home.lake_root(), source, split)
    lake.write_records(
        FAMILY.task_lake,
        built.records,
        QuestionRecord,
        home.lake_root(),
        source=source,
        split=split,
    )
    # search-stage rejections that never became records, for mart_generation_diagnostics
    lake.write_records(
        GENERATION_STATS,
        search_rejection_records(built.search_rejected_by_dataset, source, split),
        SearchRejectionRecord,
        home.lake_root(),
        source=source,
        split=split,
    )
    summary = summarize(built.records)
    context.log.info(
        f"{source}/{split}: {summary['accepted']} accepted, "
        f"{summary['rejected']} rejected from {len(split_tables)} tables"
    )
    return MaterializeResult(
        metadata={
            "tables": len(split_tables),
            "tables_not_in_catalog": sum(left_out.values()),
            "candidates": built.candidates,
            "accepted": summary["accepted"],
            "rejected": summary["rejected"],
            "alternatives_rate": summary["alternatives_rate"],
            "datasets": summary["datasets"],
            "by_template": MetadataValue.md(markdown_counts(summary["by_template"], "template")),
            "by_operator_family": MetadataValue.md(
                markdown_counts(summary["by_operator_family"], "operator family")
            ),
            "rejection_reasons": MetadataValue.md(
                markdown_counts(summary["rejection_reasons"], "reason")
            ),
            "search_rejections": MetadataValue.md(
                markdown_counts(dict(built.search_rejected), "search-stage rejection")
            ),
            "operator_coverage": MetadataValue.md(
                markdown_counts(built.coverage, "operator coverage")
            ),
            "readability_mean": summary["readability_mean"],
            "readability": MetadataValue.md(readability_markdown(summary)),
            "not_applicable": MetadataValue.md(
                markdown_counts(dict(built.not_applicable), "template not applicable (tables)")
            ),
            **llm_metadata,
        }
    )


@asset(
    key_prefix=[FAMILY.name],
    op_tags=op_tags_for(["sandbox"]),  # a Celery worker with the sandbox runs it
    partitions_def=SOURCE_SPLIT,
    deps=[questions],
    group_name="analysis",
    description="Multi-turn teacher traces run cell by cell in the sandbox. "
    "template/procedural: the trace must reach the ground truth; llm: triangulation "
    "decides. Written per question as they finish; a re-run skips finished ones.",
)
def episodes(
    context: AssetExecutionContext,
    container_pool: ContainerPoolResource,
    vllm: VllmResource,
    home: HomeResource,
) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    tcfg = load_teacher_config()
    qs = [q for q in FAMILY.read_tasks(home.dir(), source, split) if q.status == "accepted"]
    tables_by_id = {t.id: t for t in load_table_records(home.dir(), split)}

    async def run():
        async with (
            container_pool.get_pool() as pool,
            _llm_client(vllm, tcfg.teacher == "vllm") as client,
        ):
            try:
                make_policy = policy_factory(tcfg, client)
            except TeacherUnavailableError as exc:
                raise Failure(description=str(exc)) from exc
            return await run_partition(
                qs,
                tables_by_id,
                make_policy,
                pool,
                tcfg,
                source=source,
                split=split,
                root=home.lake_root(),
            )

    stats = asyncio.run(run())
    write_budget(stats.budget, "episodes", home.lake_root(), source, split)
    compacted = compact_partition(source, split, home.lake_root(), question_ids={q.id for q in qs})
    eps = compacted.episodes
    if stats.errors:
        raise Failure(
            description=f"{len(stats.errors)} question(s) could not be run "
            f"(finished episodes are kept; a re-run resumes): " + "; ".join(stats.errors[:10])
        )
    total = len(eps)
    verified = sum(e.verified for e in eps)
    return MaterializeResult(
        metadata={
            "questions": len(qs),
            "episodes": total,
            "written_this_run": stats.written,
            "skipped_questions": stats.skipped_questions,
            "dropped_stale": compacted.stale,
            "verified": verified,
            "pass_rate": round(verified / total, 4) if total else 0.0,
            "teacher": tcfg.teacher,
            "teacher_metrics": str(stats.metrics_path),  # this run's teacher_metrics.jsonl
            **stats.budget.metadata(),
            "failure_classes": MetadataValue.md(
                markdown_counts(dict(stats.failures), "failure class (this run)")
            ),
        }
    )


ANALYSIS_ASSETS = [questions, episodes]
